//! The engine's half of the `kernel` progress mode (the other half, the
//! channels and io_uring chains, is [`kpath`](super::kpath), next to it):
//! offering, accepting and switching channels in message envelopes,
//! submitting runs of channel operations to the kernel, and reaping their
//! completions.

use super::*;
use super::pieces::{Pieces};
use super::recv::{tag_words};

/// How long making a kernel-mode channel to another machine may take
/// (connecting, or taking the connection and its hello). On a failure
/// the operation stays on goal-net's path.
pub(super) const CHANNEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

thread_local! {
    /// Whether this thread may hand chains to the kernel (see [`carrier`]).
    static CARRIER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the calling thread a carrier of chains: the thread that called
/// `init` and the helper, which both live until `finalize`.
///
/// A chain runs as task work of the thread that submitted it, and when
/// that thread exits the kernel cancels what is left of it (see
/// goal-transport's `kchain`): an application thread that progressed the
/// engine, submitting a chain for another thread's execution, and then
/// ended, failed that execution with `ECANCELED`. So only carriers
/// submit; another thread leaves the operation to them ([`Engine::defer`]).
pub(crate) fn mark_carrier() {
    CARRIER.with(|c| c.set(true));
}

fn carrier() -> bool {
    CARRIER.with(|c| c.get())
}

impl Engine {
    /// Turns the kernel mode on: channels to peers, chains in `ring`;
    /// `deferred` is raised while operations wait for a carrier thread
    /// (see [`mark_carrier`]), for the helper to see without the lock.
    pub fn enable_kernel(&mut self, ring: KRing, deferred: Arc<AtomicBool>) {
        self.kernel = Some(KPath::new(ring, deferred));
    }

    /// Op `r`, ready for the kernel on a thread that may not submit: kept
    /// for the next carrier to take the engine, whom it wakes (the helper,
    /// asleep on the doorbell or parked while application threads wait).
    fn defer(&mut self, r: OpRef) {
        let Some(kernel) = self.kernel.as_mut() else { return };
        kernel.deferred.push_back(r);
        kernel.deferred_flag.store(true, Ordering::SeqCst);
        self.link.shm.doorbell().ring();
        if let Some(w) = &self.app_waiting {
            let _ = goal_transport::sys::futex_wake(w, 1);
        }
    }

    /// Submits the operations other threads left (see [`defer`](Self::defer)),
    /// if this thread is a carrier.
    pub fn submit_deferred(&mut self) {
        if !carrier() {
            return;
        }
        let Some(kernel) = self.kernel.as_mut() else { return };
        let ops: Vec<OpRef> = kernel.deferred.drain(..).collect();
        kernel.deferred_flag.store(false, Ordering::Release);
        for r in ops {
            self.ksubmit(r);
        }
    }

    /// The kernel ring's descriptor (readable while completions wait).
    pub fn kernel_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.kernel.as_ref().map(|k| k.ring.fd().as_raw_fd())
    }

    /// At finalize: what the ranks' schedules disagreed on that no
    /// execution reported. Messages that came after their execution had
    /// finished, whose schedule never ran again (see [`stale`](Self::stale)),
    /// and messages for executions this rank never started: in a program
    /// whose ranks agree, every message is received by the time its ranks
    /// finalize.
    pub fn unreported(&mut self) -> Vec<String> {
        self.poll_messages();
        let mut out: Vec<(SchedId, String)> =
            self.state.matcher.stale.drain().map(|(id, e)| (id, format!("{}; no later execution of schedule {} ran here to report it", e.message, proto::Named(id)))).collect();
        let mut keys: Vec<ExecKey> = self.state.matcher.unexp.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let (sched, seq) = ((k >> 32) as SchedId, k as u32);
            if self.state.execs.active_slot(sched, seq).is_some() {
                continue; // (its Wait will say)
            }
            let q = &self.state.matcher.unexp[&k];
            let u = &q[0];
            out.push((
                sched,
                format!(
                    "{} message(s) for schedule {} execution {seq} found no receive here (the first from rank {}, {}, {} bytes): \
                     this rank never ran that execution; the ranks' programs disagree on what to compile or run",
                    q.len(),
                    proto::Named(sched),
                    u.src,
                    tag_words(u.tag),
                    u.len
                ),
            ));
        }
        out.sort_by_key(|x| x.0);
        out.into_iter().map(|x| x.1).collect()
    }

    /// What the kernel mode did, for the debug line at the end.
    pub fn kernel_summary(&self) -> Option<String> {
        let s = self.kernel.as_ref()?.stats;
        Some(format!(
            "kernel mode: {} channel(s) out, {} in ({} and {} of them over TCP), {} offer(s) declined; {} operation(s) in {} chain(s) ran in the kernel, {} completion(s) reached user space",
            s.channels_out, s.channels_in, s.tcp_out, s.tcp_in, s.declined, s.kernel_ops, s.runs, s.completions
        ))
    }

    /// Whether op `op` of schedule `id` travels on its channel now.
    pub(super) fn on_channel(&self, id: SchedId, op: u32) -> bool {
        self.kernel.as_ref().is_some_and(|k| matches!(k.chan(id, op), Some(Chan::Sending { .. } | Chan::Receiving { .. })))
    }

    /// Sender, eager message of op `r`: offers its channel (made by
    /// `KPath::make_channels`) or announces the switch to it, in `head`.
    pub(super) fn offer_or_switch(&mut self, r: OpRef, head: &mut Head) {
        let Some(kernel) = self.kernel.as_mut() else { return };
        let Some(e) = self.state.execs.slots.get(r.slot as usize).and_then(|e| e.as_ref()) else { return };
        let Some(ch) = kernel.chan_mut(e.sched.id, r.op) else { return };
        use std::os::fd::AsRawFd;
        match std::mem::replace(ch, Chan::Never) {
            Chan::Ready { mine, theirs } => {
                head.mode = proto::MODE_OFFER;
                head.token = theirs.as_raw_fd() as u32;
                *head = head.with_offer(r.op, 0);
                *ch = Chan::Offered { mine, theirs };
            }
            Chan::Listening { listener, port, nonce } => {
                head.mode = proto::MODE_OFFER;
                head.token = port as u32;
                *head = head.with_offer(r.op, nonce);
                *ch = Chan::ListenOffered { listener, nonce };
            }
            Chan::Accepted { mine, theirs } => {
                head.mode = proto::MODE_SWITCH;
                *head = head.with_offer(r.op, 0);
                let tcp = u64::from(theirs.is_none());
                *ch = Chan::Sending { mine, _theirs: theirs };
                kernel.stats.channels_out += 1;
                kernel.stats.tcp_out += tcp;
            }
            other => *ch = other,
        }
    }

    /// Sender: the receiver's answer to an offer.
    pub(super) fn channel_answer(&mut self, accept: bool, src: u32, sched: SchedId, op: u32) {
        let secret = self.link.net.as_ref().map(|n| n.config().secret);
        let me = self.rank;
        let Some(kernel) = self.kernel.as_mut() else { return };
        let Some(ch) = kernel.chan_mut(sched, op) else { return };
        let declined = |kernel: &mut KPath, fds: usize| {
            kernel.stats.declined += 1;
            kernel.fds -= fds;
            if trace_lines() {
                say!("goal: rank {src} declined the channel of schedule {} op {op}", proto::Named(sched));
            }
        };
        match std::mem::replace(ch, Chan::Never) {
            Chan::Offered { mine, theirs } if accept => *ch = Chan::Accepted { mine, theirs: Some(theirs) },
            Chan::Offered { .. } => declined(kernel, 2),
            Chan::ListenOffered { listener, nonce } if accept => {
                // The receiver connected before it answered: the connection
                // waits in the listener's queue (a moment more at most).
                let want = secret.map(|k| kpath::hello(&k, me, src, sched, op, nonce));
                let got = goal_transport::kchain::tcp_channel_accept(&listener, kpath::HELLO_LEN, CHANNEL_TIMEOUT);
                match (got, want) {
                    (Ok((mine, hello)), Some(want)) if goal_auth::ct_eq(&hello, &want) => *ch = Chan::Accepted { mine, theirs: None },
                    (got, _) => {
                        // Left on the path through goal-net: the receiver,
                        // bound in vain, keeps receiving there too, since no
                        // switch ever comes.
                        kernel.fds -= 1;
                        if trace_lines() {
                            let why = got.err().map_or_else(|| "a hello without the job's MAC".to_string(), |e| e.to_string());
                            say!("goal: rank {me}: no channel to rank {src} for schedule {} op {op}: {why}", proto::Named(sched));
                        }
                    }
                }
            }
            Chan::ListenOffered { .. } => declined(kernel, 1),
            other => *ch = other,
        }
    }

    /// Receiver: answers an offer.
    pub(super) fn answer_offer(&mut self, src: u32, ctl: Ctl, accept: bool) {
        let kind = if accept { Kind::Accept } else { Kind::Decline };
        let mut answer = Head::control(kind, ctl.op);
        answer.sched = ctl.sched;
        self.post_message(src as usize, answer);
    }

    /// Receiver: receive `r` took a message whose envelope offers a channel
    /// or switches to it.
    pub(super) fn channel_note(&mut self, r: OpRef, src: u32, ctl: Ctl, len: u32) -> Result<(), Error> {
        let Some(e) = self.exec(r) else { return Ok(()) };
        let sched = e.sched;
        let (id, op) = (sched.id, r.op);
        if ctl.mode == proto::MODE_SWITCH {
            let Some(ch) = self.kernel.as_mut().and_then(|k| k.chan_mut(id, op)) else {
                return Err(Error::new(ErrorKind::System, format!("{}: rank {src} switched to a channel this rank never accepted", self.describe(r))));
            };
            return match std::mem::replace(ch, Chan::Never) {
                Chan::Bound { fd, len: bound, sock } if bound == len => {
                    *ch = Chan::Receiving { fd, len, sock };
                    Ok(())
                }
                _ => Err(Error::new(ErrorKind::System, format!("{}: rank {src} switched to a channel this receive is not bound to", self.describe(r)))),
            };
        }
        // An offer.
        let o = sched.s.ops[op as usize];
        let eligible = o.kind() == OpKind::Recv
            && self.kernel.as_ref().is_some_and(|k| {
                k.room_for(1) && matches!(k.chan(id, op), Some(Chan::Untried)) && k.scheds.get(&id).is_some_and(|k| k.info.deterministic(&sched.s, op as usize))
            });
        if !eligible {
            self.answer_offer(src, ctl, false);
            return Ok(());
        }
        let taken = if self.link.is_remote(src as usize) {
            // Over TCP: connect to the port offered and say who we are.
            let (net, sock) = (self.link.net.as_ref(), SockType::Stream);
            match net.and_then(|n| Some((n.peer_ip(src)?, n.config().secret))) {
                Some((ip, secret)) => {
                    let hello = kpath::hello(&secret, src, self.rank, ctl.sched, ctl.op, ctl.nonce);
                    let to = std::net::SocketAddr::new(ip, ctl.fd as u16);
                    goal_transport::kchain::tcp_channel_connect(to, &hello, CHANNEL_TIMEOUT).map(|fd| (fd, sock))
                }
                None => Err(std::io::Error::other("no connection to it is up")),
            }
        } else {
            self.link.shm.take_peer_fd(src as usize, ctl.fd as i32).map(|fd| (fd, SockType::Seqpacket))
        };
        match taken {
            Ok((fd, sock)) => {
                if let Some(kernel) = self.kernel.as_mut() {
                    if let Some(ch) = kernel.chan_mut(id, op) {
                        *ch = Chan::Bound { fd, len, sock };
                    }
                    kernel.stats.channels_in += 1;
                    kernel.stats.tcp_in += u64::from(sock == SockType::Stream);
                    kernel.fds += 1;
                }
                self.answer_offer(src, ctl, true);
            }
            Err(e) => {
                if trace_lines() {
                    say!("goal: rank {}: not taking the channel of rank {src}: {e}", self.rank);
                }
                if let Some(ch) = self.kernel.as_mut().and_then(|k| k.chan_mut(id, op)) {
                    *ch = Chan::Never;
                }
                self.answer_offer(src, ctl, false);
            }
        }
        Ok(())
    }

    /// Hands op `r` (on its channel) to the kernel, with the operations
    /// after it on its chain that travel on channels too, linked.
    pub(super) fn ksubmit(&mut self, r: OpRef) {
        if !carrier() {
            return self.defer(r);
        }
        let Some(e) = self.exec(r) else { return };
        let sched = e.sched;
        let id = sched.id;
        let s = &sched.s;
        let Some(kernel) = self.kernel.as_ref() else { return };
        let Some(info) = kernel.info(id) else { return };
        let max = kernel.ring.max_chain();
        let mut run = vec![r.op];
        if let Some((c, pos)) = info.plan.place[r.op as usize] {
            for &next in &info.plan.chains[c as usize][pos as usize + 1..] {
                if run.len() >= max || !self.on_channel(id, next) {
                    break;
                }
                run.push(next);
            }
        }
        // A peer known to be gone fails the run at once, as in user space
        // (a send would otherwise land in the dead peer's socket). Not one
        // on another machine: what it sent before it left may still be on
        // the way in its TCP channel, which reports its end by itself
        // (and the run fails after a grace if it does not; see
        // `KPath::watch_lost`).
        let link = &self.link;
        if let Some(&op) = run.iter().find(|&&op| {
            let p = s.ops[op as usize].peer as usize;
            self.state.lost[p].is_some() && !link.is_remote(p)
        }) {
            let (rr, peer) = (OpRef { op, ..r }, s.ops[op as usize].peer as usize);
            let cause = self.state.lost[peer].clone().unwrap_or_default();
            let msg = format!("{}: rank {peer} {cause}", self.describe(rr));
            return self.fail(rr, Error::new(ErrorKind::PeerLost, msg));
        }
        let mut recs = Vec::with_capacity(run.len());
        let mut kinds = Vec::with_capacity(run.len());
        for &op in &run {
            let o = s.ops[op as usize];
            let ptr = match self.pieces(OpRef { op, ..r }) {
                Some(Pieces::One([(p, _)])) => p,
                _ => std::ptr::null_mut(),
            };
            use std::os::fd::AsRawFd;
            // A stream has no empty messages: an empty one (a barrier's)
            // travels as one byte, from and into bytes nobody reads.
            let Some(kernel) = self.kernel.as_ref() else { return };
            let (kind, len) = match kernel.chan(id, op) {
                Some(Chan::Sending { mine, _theirs: None }) if o.len == 0 => (KOpKind::Send { fd: mine.as_raw_fd(), buf: kpath::ONE_BYTE.as_ptr(), len: 1 }, 1),
                Some(Chan::Sending { mine, .. }) => (KOpKind::Send { fd: mine.as_raw_fd(), buf: ptr, len: o.len }, o.len),
                Some(Chan::Receiving { fd, len: 0, sock: SockType::Stream }) => (KOpKind::Recv { fd: fd.as_raw_fd(), buf: kernel.sink(), len: 1, sock: SockType::Stream }, 1),
                Some(Chan::Receiving { fd, len, sock }) => (KOpKind::Recv { fd: fd.as_raw_fd(), buf: ptr, len: *len, sock: *sock }, *len),
                _ => unreachable!("only channel operations join a run"),
            };
            kinds.push(kind);
            recs.push(KRec { slot: r.slot, gen: r.gen, op, run: 0, pos: 0, peer: o.peer as u32, len });
        }
        // Followers wait in the kernel, not on their counters.
        if let Some(e) = self.exec_mut(r) {
            for &op in &run[1..] {
                e.bufs.counters[op as usize] += IN_KERNEL;
            }
        }
        if trace_on() {
            self.trace_kernel_run(r, &run);
        }
        let Some(kernel) = self.kernel.as_mut() else { return };
        let (run_id, uds) = kernel.add_run(&recs);
        let kops: Vec<KOp> = kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| {
                // Quiet unless something outside the rest of the run waits for it.
                let rest = &run[i + 1..];
                let quiet = !rest.is_empty() && s.dependents(run[i] as usize).iter().all(|d| rest.contains(d));
                KOp { user_data: uds[i], kind, link: Link::Soft, quiet }
            })
            .collect();
        if trace_lines() {
            let quiet = kops.iter().filter(|k| k.quiet).count();
            say!("goal-trace {:.6} rank {} kernel run of {} op(s) ({quiet} quiet) from op {}", localop::wtime(), self.rank, kops.len(), r.op);
        }
        // SAFETY: send and receive buffers stay valid and untouched by user
        // code until their execution ends (the API contract; scratchpads are
        // the execution's own), and an execution ends only once each of its
        // kernel operations has completed, or, if it fails first, its
        // scratchpad is leaked rather than reused (`complete`). A channel's
        // descriptors live in `kernel.chans` until its schedule is freed, which
        // cannot happen while an execution of it runs.
        match unsafe { kernel.ring.submit_chain(&kops) } {
            Ok(()) => {
                kernel.stats.kernel_ops += kops.len() as u64;
                kernel.stats.runs += 1;
                for rec in &recs {
                    if let Some(why) = &self.state.lost[rec.peer as usize] {
                        kernel.watch_lost(rec.peer, format!("rank {} {why} while this execution still needed it", rec.peer));
                    }
                }
            }
            Err(err) => {
                kernel.drop_run(run_id);
                let msg = format!("{}: handing {} operation(s) to io_uring: {err}", self.describe(r), kops.len());
                self.fail(r, Error::new(ErrorKind::System, msg));
            }
        }
    }

    /// Takes in the kernel's completions.
    pub(super) fn reap_kernel(&mut self) {
        let Some(kernel) = self.kernel.as_mut() else { return };
        if kernel.ring.in_flight() == 0 {
            return;
        }
        let mut got = std::mem::take(&mut kernel.reaped);
        if kernel.ring.reap(&mut got) == 0 {
            kernel.reaped = got;
            return;
        }
        kernel.stats.completions += got.len() as u64;
        for &(ud, res) in &got {
            self.kernel_done(ud, res);
        }
        got.clear();
        if let Some(kernel) = self.kernel.as_mut() {
            kernel.reaped = got;
        }
        self.drain_ready();
    }

    /// Operation `ud` completed with `res`; a success also vouches for the
    /// quiet operations before it in its run.
    pub(super) fn kernel_done(&mut self, ud: u64, res: i32) {
        let Some(kernel) = self.kernel.as_mut() else { return };
        let Some(rec) = kernel.ops.get(ud as usize).copied().flatten() else { return };
        let Some(run) = kernel.runs[rec.run as usize].as_mut() else { return };
        let upto: Vec<u64> = run.ops[run.next.min(rec.pos as usize + 1)..=rec.pos as usize].to_vec();
        run.next = run.next.max(rec.pos as usize + 1);
        let ok = res >= 0 && res as u32 == rec.len;
        let mut done = Vec::with_capacity(upto.len());
        for u in upto {
            if let Some(x) = kernel.ops[u as usize] {
                done.push(OpRef { slot: x.slot, gen: x.gen, op: x.op });
            }
            kernel.retire(u);
        }
        if ok {
            for r in done {
                self.finish(r);
            }
            return;
        }
        let r = OpRef { slot: rec.slot, gen: rec.gen, op: rec.op };
        if self.exec(r).is_some() {
            let send = self.rec(r).is_some_and(|o| o.kind() == OpKind::Send);
            let err = kpath::failure(&self.describe(r), rec.peer, send, res, rec.len);
            self.fail(r, err);
        }
    }

}
