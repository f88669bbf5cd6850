//! Run: starting an execution, with its fast paths (a schedule that
//! finishes within Run, an eager send written before the execution is set
//! up, receives posted and small copies made without the general dispatch).

use super::*;
use super::local::{copy_small, is_small_copy};
use super::ops::{failed_done, failed_with};
use super::pieces::{byte_slice, operand, split, BASES};

impl Engine {
    /// Starts an execution of `sched` with run-time buffer `i` at address
    /// `run[i]` (the caller checked that `run` holds each one the schedule
    /// has, large enough; see `Runtime::run_with`); returns its shared
    /// state, or `None` if it finished within (see
    /// [`start_done`](Self::start_done)).
    pub fn start(&mut self, sched: &Arc<SchedInner>, rt: &Arc<crate::Runtime>, run: &[usize]) -> Option<Arc<ExecShared>> {
        // Both counters change only here and in `complete`, under the lock.
        let seq = sched.runs.load(Ordering::Relaxed);
        sched.runs.store(seq.wrapping_add(1), Ordering::Relaxed);
        sched.running.store(sched.running.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                let s = &sched.s;
        let n = s.ops.len();
        let plain = self.kernel.is_none() && s.start_index.is_empty() && !trace_on();
        // (Messages waiting for it, or a mismatch to report: the general path.)
        let quiet = self.state.matcher.stale.is_empty() && (self.state.matcher.unexp.is_empty() || !self.state.matcher.unexp.contains_key(&key(sched.id, seq)));
        if plain && quiet && sched.done_shape {
            if let Some(done) = self.start_done(sched, rt, seq, run) {
                return done;
            }
        }
        let early = plain && s.independent > 0 && self.send_early(&s.ops[0], sched.id, seq, run);
        let mut bufs = self.state.pool(sched).pop().unwrap_or_else(|| {
            let scratch = vec![Line([0; 64]); (s.scratch as usize).div_ceil(64)];
            let mut bases = [0; BASES];
            bases[0] = scratch.as_ptr() as usize;
            Box::new(ExecBufs { counters: Vec::with_capacity(n), scratch, bases, posted: Vec::new(), shared: ExecShared::new(rt, sched.id, sched.peers.clone(), sched.rhythm.clone(), sched.sends_large) })
        });
        if !run.is_empty() {
            for (b, &at) in bufs.bases[1..].iter_mut().zip(run) {
                *b = at;
            }
        }
        // Without edges nothing is ever counted (every counter starts and
        // stays at 0; only dependents, fused receives' operations and
        // kernel chains' followers are counted): a barrier's Run copies
        // none. (Kernel mode keeps them all, for its chains.)
        if !s.edges.is_empty() || !s.start_index.is_empty() || self.kernel.is_some() {
            bufs.counters.clear();
            bufs.counters.extend_from_slice(&sched.deps);
        }
        bufs.posted.clear();
        // A handle of an earlier execution may still hold the state (it was
        // not waited for yet); only an unshared one can be reset. Counted
        // rather than `Arc::get_mut`, whose compare-and-swap is a locked
        // instruction on every Run; no `Weak` of it is ever made.
        if Arc::strong_count(&bufs.shared) == 1 {
            // Pairs with the release of the last handle's drop: its reads
            // of the state are over before the state is reset.
            std::sync::atomic::fence(Ordering::Acquire);
            if bufs.shared.state.load(Ordering::Relaxed) == FAILED {
                *bufs.shared.error.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            bufs.shared.state.store(RUNNING, Ordering::Relaxed);
        } else {
            bufs.shared = ExecShared::new(rt, sched.id, sched.peers.clone(), sched.rhythm.clone(), sched.sends_large);
        }
        let shared = bufs.shared.clone();
        if n == 0 {
            sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
            self.state.recycle(sched, bufs);
            if let Some(err) = (!quiet).then(|| self.take_stale(sched.id)).flatten() {
                return Some(failed_with(rt, sched.id, err));
            }
            shared.state.store(DONE, Ordering::Release);
            return Some(shared);
        }
        // The early send is over: unless something depends on it (or it
        // was the only operation), it is counted as finished here rather
        // than found again by its slot in the loop below (some 20
        // instructions of a barrier's Run).
        let early_done = early && n > 1 && s.dependents(0).is_empty();
        let (slot, gen) = self.state.execs.insert(SchedRef::new(sched), seq, bufs, (n - early_done as usize) as u32);
        self.state.execs.finished_ops += early_done as usize;
        // Kernel mode: one execution of a schedule at a time (see `kpath`).
        let hold = match self.kernel.as_mut() {
            Some(kernel) => {
                kernel.prepare(sched);
                if seq == 1 {
                    // The schedule runs again: worth channels (made in one
                    // go, off the path of any message).
                    let (me, eager, net_eager, link) = (self.rank, self.thresholds.eager, self.thresholds.net_eager, &self.link);
                    let ip = self.link.net.as_ref().and_then(|n| n.listen_addrs().first()).map(|a| a.ip());
                    kernel.make_channels(sched.id, s, |o| {
                        let (peer, len) = (o.peer as u32, o.len as usize);
                        match ip {
                            _ if peer == me => None,
                            Some(ip) if link.is_remote(peer as usize) => (len <= net_eager).then_some(kpath::Route::Tcp(ip)),
                            _ => (len <= eager).then_some(kpath::Route::Local),
                        }
                    });
                }
                // (Its own entry is there already.)
                let hold = self.state.execs.active(sched).len() > 1;
                if hold {
                    if let Some(k) = kernel.scheds.get_mut(&sched.id) {
                        k.held.push_back(slot);
                    }
                }
                hold
            }
            None => false,
        };
        let fail_now = !quiet && self.check_waiting(sched.id, seq, slot, gen);
        if !hold {
            // Started at once, in order; the operations they make ready
            // queue behind them (the order of pushing them all first).
            // With nothing to trace, hand to the kernel or start with an
            // operation, a receive with nothing waiting for it and an eager
            // send to a peer on this machine that fits its ring now are
            // started here: `start_op`'s general path cost a 2-rank
            // barrier's receive some 150 instructions.
            // Each call builds its own `OpRef`: with one `r` for all three,
            // the compiler stored it to the stack as three u32 and loaded
            // slot and gen back as one u64, a store-forwarding failure that
            // cost a posted receive some 180 cycles (sampled: 60 % of
            // `start`; a Run of an 8-byte scatter's root 289 -> 204 ns).
            for op in 0..s.independent {
                self.state.run_left = s.independent - op - 1;
                if early && op == 0 {
                    if !early_done {
                        self.finish(OpRef { slot, gen, op });
                    }
                    continue;
                }
                if plain {
                    let o = &s.ops[op as usize];
                    if self.post_plain(OpRef { slot, gen, op }, o)
                        || self.send_plain(OpRef { slot, gen, op }, o, sched.id, seq)
                        || self.copy_plain(OpRef { slot, gen, op }, o)
                    {
                        continue;
                    }
                }
                self.start_op(OpRef { slot, gen, op });
            }
            self.state.run_left = 0;
        }
        self.drain_ready();
        // (A held execution, kernel mode's next in line, ends with its
        // poison when it has run: failing it here would start the
        // execution behind it in its place.)
        if fail_now && !hold {
            if let Some(err) = self.state.matcher.poisoned.remove(&slot) {
                self.fail(OpRef { slot, gen, op: u32::MAX }, err);
            }
        }
        self.link.flush();
        if !self.state.reads.is_empty() {
            // Receives that found their RTS waiting read now, after the
            // sends above have left (see READ_LATER), as Run did before:
            // left for Wait, a helper would take them in between, on a CPU
            // that another rank may be using (2 ranks, bcast of 64 KiB:
            // 4.85 against 4.20 us).
            while !self.state.reads.is_empty() {
                self.pump_reads();
            }
            self.drain_ready();
            self.link.flush();
        }
        Some(shared)
    }

    /// Posts receive `o` of `r` if nothing more is to be done to start it
    /// (see `start`): no unexpected message waits, its peer is not lost.
    /// Whether it did.
    #[inline(always)]
    pub(super) fn post_plain(&mut self, r: OpRef, o: &OpRec) -> bool {
        if !matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) || !self.state.matcher.unexp.is_empty() {
            return false;
        }
        if o.peer >= 0 && self.state.lost[o.peer as usize].is_some() {
            return false;
        }
        self.post(r, o);
        true
    }

    /// Adds receive `o` of `r` to its execution's posted receives; none if
    /// an earlier operation failed the execution (`start_op` then does
    /// nothing either).
    #[inline(always)]
    pub(super) fn post(&mut self, r: OpRef, o: &OpRec) {
        if let Some(e) = self.exec_mut(r) {
            e.bufs.posted.push(Posted { op: r.op, peer: o.peer, tag: o.tag });
        }
    }

    /// Copies a small local copy (see [`copy_small`]) at once from
    /// `start`'s loop, as `send_plain` sends; `start_local` takes the same
    /// path first. Whether it did.
    #[inline(always)]
    pub(super) fn copy_plain(&mut self, r: OpRef, o: &OpRec) -> bool {
        if o.kind() != OpKind::Local {
            return false;
        }
        let Some(e) = self.exec(r) else { return false };
        // SAFETY: `o` is an operation of `r`'s execution, whose bases are
        // given.
        if unsafe { copy_small(&e.sched.s.locals[o.addr as usize], e.bufs.bases()) } {
            self.finish(r);
            return true;
        }
        false
    }

    /// Run of a schedule that finishes within it: every operation
    /// independent, each an eager send from a user buffer that fits its
    /// peer's ring now (one per peer) or a small copy between user buffers
    /// (a gather's or a reduce's leaf, a 2-rank bcast's or scatter's root).
    /// `None`, having done nothing, if the schedule is not one.
    ///
    /// No execution is set up, and the handle has no state to count (see
    /// [`Handle`](crate::Handle)): the messages are written, then the
    /// copies made, in a few stores. A core's stores reach their cache lines in program
    /// order, and the ring's line sits in the receiving core, which polls
    /// it: every store after the ring's waits in the store buffer until
    /// that line has come over (25-85 ns here), and some 50 stores fill
    /// the buffer, after which the sender stalls. The general path set up
    /// and took down an execution after its early send (an 8-byte
    /// gather's leaf: Run and Wait 400-450 cycles, the receiving root's
    /// Run 200; Open MPI's leaf returns some 100 ns sooner than goal's
    /// did).
    #[inline]
    pub(super) fn start_done(&mut self, sched: &Arc<SchedInner>, rt: &Arc<crate::Runtime>, seq: u32, run: &[usize]) -> Option<Option<Arc<ExecShared>>> {
        let s = &sched.s;
        let mut peers = 0u64;
        // With one message, its write tells whether it fits (nothing is
        // done before it); with more, each must fit before the first goes.
        let one = s.ops.iter().filter(|o| o.kind() == OpKind::Send).count() <= 1;
        for o in &s.ops {
            match o.kind() {
                OpKind::Send => {
                    let p = o.peer as usize;
                    let bound = early_operand(o.addr, o.relative(), run).is_some();
                    if !bound || p >= 64 || peers & 1 << p != 0 || !self.ring_ready(o) || !(one || self.link.shm.fits(p, o.len as usize)) {
                        return None;
                    }
                    peers |= 1 << p;
                }
                OpKind::Local => {
                    let l = &s.locals[o.addr as usize];
                    let bound = |a: u64, bit: u8| early_operand(a, l.mem & bit != 0, run).is_some();
                    if !is_small_copy(l) || !bound(l.b1, 1) || !bound(l.b3, 4) {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        let mut broken = None;
        for o in &s.ops {
            let at = |o: &OpRec| early_operand(o.addr, o.relative(), run).unwrap_or(std::ptr::null_mut());
            if o.kind() == OpKind::Send && !self.ring_write(o, sched.id, seq, at(o)) {
                if one {
                    // Full: the general path queues it.
                    return None;
                }
                broken = Some(o.peer);
            }
        }
        for o in &s.ops {
            if o.kind() == OpKind::Local {
                let l = &s.locals[o.addr as usize];
                let at = |a: u64, bit: u8| early_operand(a, l.mem & bit != 0, run).unwrap_or(std::ptr::null_mut());
                // SAFETY: a small copy (checked above) between buffers of
                // the application, given with the schedule or by this Run,
                // valid by the API contract for the copy's length (compiled
                // ranges of run-time buffers were checked by `run_with`); a
                // copy's result may be its operand exactly (`move_bytes`).
                unsafe { goal_transport::move_bytes(at(l.b1, 1) as *const u8, at(l.b3, 4), l.count as usize * l.width as usize / 8) };
            }
        }
        self.state.execs.finished_ops += s.ops.len();
        sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
        self.link.flush();
        // `fits` said every message would go: only a broken ring gets here.
        Some(broken.map(|p| failed_done(rt, sched.id, p)))
    }

    /// Run's first move for a schedule whose first operation is an eager
    /// send from a user buffer to a peer on this machine (`send_plain`'s
    /// conditions): the message goes into the ring before the execution's
    /// state is set up, and `start` finishes the send once it is: the
    /// receiver has it that much sooner. (A schedule of nothing but such
    /// sends and small copies takes [`start_done`](Self::start_done) instead.)
    #[inline]
    pub(super) fn send_early(&mut self, o: &OpRec, sched: SchedId, seq: u32, run: &[usize]) -> bool {
        match early_operand(o.addr, o.relative(), run) {
            Some(at) => self.ring_ready(o) && self.ring_write(o, sched, seq, at),
            None => false,
        }
    }

    /// Whether `o` is an eager send that can go through the ring at once:
    /// to a live peer on this machine, no larger than the heap's eager
    /// limit, with credit and nothing queued before it.
    #[inline(always)]
    pub(super) fn ring_ready(&mut self, o: &OpRec) -> bool {
        let (p, len) = (o.peer as usize, o.len as usize);
        o.kind() == OpKind::Send
            && p != self.rank as usize
            && !self.link.is_remote(p)
            && len <= self.thresholds.heap_eager.min(self.thresholds.eager)
            && self.state.lost[p].is_none()
            && self.state.outq[p].is_empty()
            && self.eager_credit(p, len as u64)
    }

    /// Writes `o` ([`ring_ready`](Self::ring_ready)), whose buffer starts at
    /// `ptr`, into its peer's ring if there is room; whether it did.
    #[inline(always)]
    pub(super) fn ring_write(&mut self, o: &OpRec, sched: SchedId, seq: u32, ptr: *const u8) -> bool {
        let (p, len) = (o.peer as usize, o.len as usize);
        let head = Head::eager(o, sched, seq);
        // SAFETY: the callers pass a send buffer's start, valid for its
        // length (API contract for user buffers, or the checked scratchpad).
        if let Ok(true) = self.link.shm.try_send_one(p, &head.encode(), unsafe { byte_slice(ptr, len) }) {
            self.state.credit.eager_sent[p] += len as u64;
            return true;
        }
        false
    }

    /// Sends `o` of `r` eagerly through the ring if that is all its start
    /// takes (see `start` and [`ring_ready`](Self::ring_ready)), room in
    /// the ring included. Whether it did; if not, `start_op` starts it from
    /// the beginning (a full ring or an error included).
    #[inline(always)]
    pub(super) fn send_plain(&mut self, r: OpRef, o: &OpRec, sched: SchedId, seq: u32) -> bool {
        if !self.ring_ready(o) {
            return false;
        }
        // An earlier operation may have failed the execution: `start_op`
        // then does nothing, and nor does this.
        let Some(e) = self.exec(r) else { return true };
        let ptr = operand(e.bufs.bases(), o.addr, o.relative());
        if self.ring_write(o, sched, seq, ptr) {
            self.finish(r);
            return true;
        }
        false
    }

}

/// The address of an operand of an operation that Run starts before its
/// execution has a table of bases ([`Engine::start_done`],
/// [`Engine::send_early`]): an address of the application, given with the
/// schedule or by this Run in `run`; `None` for the scratchpad, which the
/// execution does not have yet.
#[inline(always)]
fn early_operand(addr: u64, rel: bool, run: &[usize]) -> Option<*mut u8> {
    if !rel {
        return Some(addr as usize as *mut u8);
    }
    let (entry, off) = split(addr);
    Some((*run.get(entry.checked_sub(1)?)? as *mut u8).wrapping_add(off))
}

/// The most operations [`Engine::start_done`] takes a schedule of.
pub(super) const DONE_AT_ONCE: usize = 8;
