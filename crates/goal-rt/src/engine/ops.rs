//! Operations of an execution: starting one by kind, finishing it
//! (releasing its dependents), failing its execution, and completing an
//! execution (the slow path: failures, draining, kernel mode, strays).

use super::*;
use super::pieces::{Pieces, operand};

impl Engine {
    pub(super) fn drain_ready(&mut self) {
        while let Some(r) = self.state.execs.ready.pop_front() {
            self.start_op(r);
        }
    }

    pub(super) fn exec(&self, r: OpRef) -> Option<&Exec> {
        self.state.execs.get(r)
    }

    pub(super) fn exec_mut(&mut self, r: OpRef) -> Option<&mut Exec> {
        self.state.execs.get_mut(r)
    }

    pub(super) fn rec(&self, r: OpRef) -> Option<OpRec> {
        self.exec(r).map(|e| e.sched.s.ops[r.op as usize])
    }

    /// The buffer pieces of op `r` (its relative addresses resolved).
    pub(super) fn pieces(&self, r: OpRef) -> Option<Pieces> {
        let e = self.exec(r)?;
        let s = &e.sched.s;
        let o = &s.ops[r.op as usize];
        let base = e.bufs.bases();
        let resolve = |addr: u64| operand(base, addr, o.relative());
        Some(match o.kind() {
            OpKind::Send | OpKind::Recv => Pieces::One([(resolve(o.addr), o.len as usize)]),
            OpKind::SendVec | OpKind::RecvVec => {
                let v = s.vecs[o.addr as usize];
                Pieces::Many(s.pieces_of(v).iter().map(|p| (resolve(p.addr), p.len as usize)).collect())
            }
            _ => Pieces::Many(Vec::new()),
        })
    }

    pub(super) fn start_op(&mut self, r: OpRef) {
        if trace_on() {
            self.trace_start(r);
        }
        let Some(e) = self.exec(r) else { return };
        let (id, seq) = (e.sched.id, e.seq);
        let o = e.sched.s.ops[r.op as usize];
        if !e.sched.s.start_index.is_empty() {
            let sched = e.sched;
            for &d in sched.s.start_dependents(r.op as usize) {
                self.dec(OpRef { op: d, ..r });
            }
        }
        if self.kernel.is_some() && self.on_channel(id, r.op) {
            return self.ksubmit(r);
        }
        match o.kind() {
            OpKind::Send | OpKind::SendVec => self.start_send(r, &o, id, seq),
            OpKind::Recv | OpKind::RecvVec => self.start_recv(r, &o, id, seq),
            OpKind::Local | OpKind::LocalVec => self.start_local(r, &o),
            OpKind::Calc => {
                let until = localop::wtime() + o.addr as f64 * 1e-9;
                while localop::wtime() < until {
                    std::hint::spin_loop();
                }
                self.finish(r);
            }
        }
    }

    pub(super) fn dec(&mut self, r: OpRef) {
        self.state.execs.dec(r)
    }

    /// Operation `r` has finished: release its dependents.
    #[inline(always)]
    pub(super) fn finish(&mut self, r: OpRef) {
        if trace_on() {
            self.trace_finish(r);
        }
        if let Some(slot) = self.state.execs.finish(r) {
            self.complete(slot, Ok(()));
        }
    }

    /// The execution in `slot`, if any, failed with `err`.
    pub(super) fn fail_slot(&mut self, slot: u32, err: Error) {
        if let Some(gen) = self.state.execs.slots.get(slot as usize).and_then(|e| e.as_ref()).map(|e| e.gen) {
            self.fail(OpRef { slot, gen, op: u32::MAX }, err);
        }
    }

    /// Execution `r` failed with `err` (reported at once).
    pub(super) fn fail(&mut self, r: OpRef, err: Error) {
        if self.exec(r).is_none() {
            return;
        }
        self.complete(r.slot, Err(err));
    }

    pub(super) fn complete(&mut self, slot: u32, res: Result<(), Error>) {
        if res.is_ok() && self.kernel.is_none() && self.state.draining.is_empty() && self.state.matcher.poisoned.is_empty() {
            self.state.completed(slot);
            if !self.state.matcher.stray_keys.is_empty() {
                self.strays();
            }
            return;
        }
        self.complete_slow(slot, res)
    }

    /// A newly compiled schedule: from now on, messages for its id are
    /// its own (see [`SchedTable`](super::exec::SchedTable)). False if a
    /// live schedule holds the id still (the ids wrapped around it).
    pub fn adopt(&mut self, sched: Arc<SchedInner>) -> bool {
        self.state.execs.scheds.add(sched)
    }

    /// The last [`Schedule`](crate::Schedule) handle of `sched` is going:
    /// the engine forgets it at once (see `State::forget`), or keeps it
    /// while executions of it still run (they hold `SchedRef`s to it) and
    /// forgets it when the last one ends.
    pub fn free(&mut self, sched: &Arc<SchedInner>) {
        if sched.running.load(Ordering::Relaxed) > 0 {
            self.state.execs.orphans.push(sched.clone());
        } else {
            self.state.forget(sched.id);
        }
    }

    /// At finalize: the engine lets go of the schedules with no execution
    /// running (those that have one can never finish, and stay), so that
    /// freeing them afterwards, without an engine, frees them.
    pub fn release_idle(&mut self) {
        self.state.execs.scheds.retain(|s| s.running.load(Ordering::Relaxed) > 0);
    }

    #[inline(never)]
    pub(super) fn complete_slow(&mut self, slot: u32, res: Result<(), Error>) {
        // A failed execution that senders still write into (pushes it
        // asked for) ends only once they have: its Wait would return, and
        // its buffers be reused, while a peer's core still copied into
        // them. Meanwhile none of its operations starts, and messages for
        // it wait unmatched (dropped when it ends).
        let res = match self.state.draining.remove(&slot) {
            Some(err) => Err(err),
            None => res,
        };
        // (An execution that ends with an earlier one's mismatch took all
        // its messages: a later one for it is stray, as for the earlier
        // one, so its key is not marked dead below.)
        let (res, poisoned) = match self.state.matcher.poisoned.remove(&slot) {
            Some(err) if res.is_ok() => (Err(err), true),
            _ => (res, false),
        };
        if let Err(err) = &res {
            if self.state.pushes_in.values().any(|(x, _, _)| x.slot == slot) {
                if let Some(e) = self.state.execs.slots.get_mut(slot as usize).and_then(|e| e.as_mut()) {
                    for c in e.bufs.counters.iter_mut() {
                        *c = c.saturating_add(IN_KERNEL);
                    }
                    e.bufs.posted.clear();
                }
                self.state.draining.insert(slot, err.clone());
                return;
            }
        }
        let Some(e) = self.state.execs.vacate(slot) else { return };
        let k = key(e.sched.id, e.seq);
        if let Err(err) = &res {
            self.state.failed.record(slot, e.sched.id, e.seq, self.rank, err.kind);
        }
        let mut in_kernel = false;
        if let Some(kernel) = self.kernel.as_mut() {
            // The next held execution of this schedule may start.
            if let Some(next) = kernel.scheds.get_mut(&e.sched.id).and_then(|k| k.held.pop_front()) {
                if let Some(n) = self.state.execs.slots[next as usize].as_ref() {
                    for op in 0..n.sched.s.independent {
                        self.state.execs.ready.push_back(OpRef { slot: next, gen: n.gen, op });
                    }
                }
            }
            if res.is_err() {
                let mine = kernel.of_slot(slot);
                in_kernel = !mine.is_empty();
                for ud in mine {
                    let _ = kernel.ring.cancel(ud);
                }
            }
        }
        if let Err(err) = &res {
            if !self.state.net_in.is_empty() {
                let mine: Vec<(u32, u32)> = self.state.net_in.iter().filter(|(_, x)| x.slot == slot).map(|(&k, _)| k).collect();
                for (src, token) in mine {
                    self.state.net_in.remove(&(src, token));
                    if let Some(n) = self.link.net.as_mut() {
                        n.cancel_expect(src, token as u64);
                    }
                }
            }
            if !poisoned {
                // Messages that already arrived for it will never be received.
                for u in self.state.matcher.bury(k) {
                    self.drop_unexpected(u);
                }
            }
            *e.bufs.shared.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(err.clone());
        }
        if (res.is_ok() || poisoned) && !self.state.matcher.unexp.is_empty() {
            // It took all its messages: any left for it are strays.
            self.state.matcher.note_strays(k);
        }
        e.bufs.shared.publish(if res.is_ok() { DONE } else { FAILED });
        let Exec { sched, bufs, .. } = e;
        if in_kernel {
            // The kernel may still write its scratchpad until the
            // cancellations land: never reuse or free it.
            std::mem::forget(bufs);
        } else {
            self.state.recycle(&sched, bufs);
        }
        sched_done(sched);
        self.state.release_orphans();
        if !self.state.matcher.stray_keys.is_empty() {
            self.strays();
        }
    }

}

/// The state of a [`Engine::start_done`] whose message to `peer` did not go.
#[cold]
pub(super) fn failed_done(rt: &Arc<crate::Runtime>, sched: SchedId, peer: i32) -> Arc<ExecShared> {
    let msg = format!("goal: a send to rank {peer} found its ring full after it fit (please report)");
    failed_with(rt, sched, Error::new(ErrorKind::System, msg))
}

/// The state of an execution that ended in Run with `err`.
pub(super) fn failed_with(rt: &Arc<crate::Runtime>, sched: SchedId, err: Error) -> Arc<ExecShared> {
    let shared = ExecShared::new(rt, sched, Arc::from([]), Default::default(), false);
    *shared.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err);
    shared.state.store(FAILED, Ordering::Release);
    shared
}

impl State {
    #[inline]
    pub(super) fn recycle(&mut self, sched: &SchedInner, bufs: Box<ExecBufs>) {
        let pool = self.pool(sched);
        if pool.len() < 8 {
            pool.push(bufs);
        }
    }

    /// `sched`'s pool of execution buffers.
    #[allow(clippy::mut_from_ref)]
    #[allow(clippy::vec_box)] // see LockedPool
    pub(super) fn pool<'a>(&'a mut self, sched: &'a SchedInner) -> &'a mut Vec<Box<ExecBufs>> {
        // SAFETY: `&mut self` means the engine lock is held (the state is
        // only reached through the engine). There is one engine per
        // process, and a schedule runs only on the runtime that compiled
        // it, so every access to this pool goes through this engine; the
        // returned borrow ends before the lock can be released.
        unsafe { &mut *sched.pool.0.get() }
    }

    /// [`Engine::complete`] of a successful execution outside the kernel
    /// mode: the path of every Run and Wait, kept apart from the failure
    /// and kernel cases (their registers and checks cost every execution
    /// about 40 instructions), and free of the transports (an inline
    /// delivery completes an execution during the poll).
    pub(super) fn completed(&mut self, slot: u32) {
        let Some(e) = self.execs.vacate(slot) else { return };
        if !self.matcher.unexp.is_empty() {
            self.matcher.note_strays(key(e.sched.id, e.seq));
        }
        e.bufs.shared.publish(DONE);
        let Exec { sched, bufs, .. } = e;
        self.recycle(&sched, bufs);
        sched_done(sched);
        if !self.execs.orphans.is_empty() {
            self.release_orphans();
        }
    }

    /// Drops the kept schedules that have no execution left, forgetting
    /// those freed by it (see [`forget`](Self::forget)).
    #[cold]
    pub(super) fn release_orphans(&mut self) {
        for id in self.execs.release_orphans() {
            self.forget(id);
        }
    }

    /// Schedule `id` was freed: it leaves the table of live schedules, and
    /// the keys of its failed executions go (what arrives for them now
    /// finds no schedule, and waits to be reported at finalize like any
    /// message no schedule here takes). What was said about it and not yet
    /// reported (`stale`) stays for the report at finalize.
    pub(super) fn forget(&mut self, id: SchedId) {
        self.execs.scheds.remove(id);
        self.failed.forget(id);
        if !self.matcher.dead.is_empty() {
            self.matcher.dead.retain(|&k| (k >> 32) as SchedId != id);
        }
    }
}

