//! Arrivals: what a poll of the rings and the network brings in, and what
//! each message kind does on arrival (eager data, RTS, CTS, FIN, the
//! push/split answers, network bulk completions).
//!
//! An eager message whose receive is posted is copied straight out of the
//! ring (or goal-net's read buffer) into it during the poll
//! ([`st_arrive`]); everything else waits in `State::arrived` for the
//! poll's end and is handled by
//! [`Engine::on_message`] in arrival order, so same-source messages never
//! overtake (see `Matcher::queued_in`).

use super::*;
use super::link::{net_head};
use super::pieces::{operand};
use super::fusion::{st_fuse_inline, FUSE_EAGER_MIN};
use super::recv::{short_message};
use super::record::Path;
use super::stage::STAGED_TOKEN;

impl Engine {
    pub(super) fn poll_messages(&mut self) {
        let shm = &self.link.shm;
        let mut arrived = std::mem::take(&mut self.state.arrived);
        let state = &mut self.state;
        state.matcher.poll_no += 1;
        let poll = state.matcher.poll_no;
        // Without kernel channels a finished execution completes without the
        // transports (see `State::completed`): at once, inside the poll
        // (unless one is to end with an earlier execution's mismatch).
        let now = self.kernel.is_none() && !trace_on() && state.matcher.poisoned.is_empty();
        shm.poll(&mut |src, env, payload| st_arrive(state, &mut arrived, poll, now, src as u32, Head::decode(env), payload));
        if let Some(net) = self.link.net.as_mut() {
            let state = &mut self.state;
            net.poll(&mut |ev| match ev {
                Event::Am { src, handler, head, payload } => {
                    if let Some(h) = net_head(handler, head) {
                        st_arrive(state, &mut arrived, poll, now, src, h, payload);
                    }
                }
                // In line with the messages, in the order goal-net reports
                // them: a sender reuses a token once its transfer is
                // acknowledged, so the RTS that reuses it can arrive in the
                // same poll as the completion of the transfer before. Handled
                // after it, that completion would finish the new receive and
                // leave the old one waiting forever (seen: t_coll hung in an
                // allgather, 8 ranks on 2 rails, about 1 run in 30 under load).
                Event::BulkDone { src, token } => arrived.push(Arrival::BulkDone { src, token: token as u32 }),
                Event::BulkSent { token, .. } => arrived.push(Arrival::BulkSent { token: token as u32 }),
                Event::PeerLost { peer, why, orderly } => state.net_lost.push((peer, why, orderly)),
                Event::RailLost { peer, rail, why } => {
                    if trace_lines() {
                        say!("goal: rail {rail} to rank {peer} lost: {why}");
                    }
                }
            });
        }
        // Mostly empty: an inline delivery leaves nothing here, and setting
        // up the drain cost as much as a quarter of the poll.
        if !arrived.is_empty() {
            self.state.in_poll = true;
            for a in arrived.drain(..) {
                match a {
                    Arrival::Message { src, head, data } => self.on_message(src, head, data),
                    Arrival::Delivered { src, r, len, fit } => self.delivered(src, r, len, fit),
                    Arrival::BulkDone { src, token } => {
                        if let Some(r) = self.state.net_in.remove(&(src, token)) {
                            self.finish(r);
                        }
                        self.drain_ready();
                    }
                    Arrival::BulkSent { token } => {
                        if let Some(s) = self.take_token(token) {
                            self.finish(s.r);
                        }
                        self.drain_ready();
                    }
                }
            }
            self.state.in_poll = false;
        }
        self.state.arrived = arrived;
        if !self.state.matcher.stray_keys.is_empty() {
            // (Executions finished inside the poll.)
            self.strays();
        }
        if !self.state.net_lost.is_empty() {
            // Losses last: goal-net may report a peer's departure in the same
            // poll before a transfer of its that had completed (the peer
            // left because we acknowledged it); that transfer did arrive.
            for (peer, why, orderly) in std::mem::take(&mut self.state.net_lost) {
                // A peer that closed its connections itself most likely
                // finished: not a death to blame later losses on.
                self.peer_lost(PeerLost { rank: peer as usize, cause: format!("is unreachable: {why}"), finalized: None }, !orderly);
            }
            self.drain_ready();
        }
    }

    /// An eager message of `len` bytes from `src` that the poll delivered
    /// into receive `r` (or found not to fit it): finishes (fails) `r`.
    fn delivered(&mut self, src: u32, r: OpRef, len: u32, fit: Fit) {
        if trace_on() {
            self.trace_from(r, src, len);
        }
        match fit {
            Fit::Ok => self.finish(r),
            Fit::Truncated => {
                let msg = format!("{}: message of {len} bytes from rank {src} is larger than the receive (truncation)", self.describe(r));
                self.fail(r, Error::new(ErrorKind::Truncated, msg));
            }
            Fit::Short => {
                let cap = self.rec(r).map_or(0, |o| o.len);
                self.fail(r, short_message(self.describe(r), len, src, cap));
            }
        }
        self.drain_ready();
    }

    pub(super) fn on_message(&mut self, src: u32, h: Head, data: Option<Vec<u8>>) {
        match h.kind {
            Kind::Eager => {
                if let Some(d) = data {
                    let (op, nonce) = h.offer();
                    let ctl = matches!(h.mode, proto::MODE_OFFER | proto::MODE_SWITCH).then_some(Ctl { mode: h.mode, fd: h.token, op, sched: h.sched, nonce });
                    let u = Unexp { src, tag: h.tag, len: h.len, kind: UnexpKind::Eager(d, ctl) };
                    match self.match_posted(h.sched, h.seq, src, h.tag) {
                        Some(r) => self.deliver(r, u),
                        None => self.stash(h.sched, h.seq, u),
                    }
                }
                // (Always with data: one delivered inline comes as `Arrival::Delivered`.)
            }
            Kind::Rts => {
                let (mode, exchange) = h.rts_mode();
                if self.eagerness.covers(h.len as usize) {
                    // (The higher rank of an exchange follows the lower one's way.)
                    self.eagerness.heard_rts(src as usize, h.len as usize, src < self.rank);
                }
                if mode == proto::MODE_CMA || mode == proto::MODE_STREAM {
                    let path = if mode == proto::MODE_CMA { adapt::Path::Cma } else { adapt::Path::Stream };
                    self.adapt.arrived(src as usize, h.len as usize, path);
                    if src < self.rank {
                        // The pair's lower rank chose: our sends in the
                        // same situation follow (see `adapt`).
                        self.adapt.heard(src as usize, h.len as usize, path, exchange);
                    }
                }
                // The mode as sent, `RTS_EXCHANGE` included (see `fetch`).
                let u = Unexp { src, tag: h.tag, len: h.len, kind: UnexpKind::Rts { mode: h.mode, token: h.token, addr: h.buffer() } };
                match self.match_posted(h.sched, h.seq, src, h.tag) {
                    Some(r) => self.deliver(r, u),
                    None => self.stash(h.sched, h.seq, u),
                }
            }
            Kind::Cts if h.mode == proto::MODE_PUSH => {
                if let Some(s) = self.state.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    let w = Write { token: h.token, peer: s.peer, len: s.len, addr: h.buffer(), done: 0, claim: None, ns: 0 };
                    let r = s.r;
                    self.state.writes.push_back(w);
                    self.state.streams_active += 1;
                    if trace_on() {
                        self.trace_path(r, Path::Push);
                    }
                }
            }
            Kind::Cts if h.mode == proto::MODE_SPLIT => {
                if let Some(s) = self.state.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    // Only a sender with nothing else to do: its application
                    // waits, and no operation of its own is ready or running
                    // (a scatter's root copying its own block would make
                    // the receiver wait for that copy too). Its writes of
                    // earlier messages' halves may be queued: in a burst it
                    // writes them one after the other while the receiver
                    // reads its halves (2 ranks, windows of 1 MiB messages
                    // by CMA: 5.8 GB/s declining those, 12.9 queueing them).
                    let waits = self.in_wait || self.app_waiting.as_ref().is_some_and(|w| w.load(Ordering::Relaxed) > 0);
                    let idle = !self.has_own_work() && self.state.reads.is_empty();
                    // The CTS names the claim word by which the two take
                    // the message's chunks, and the chunk.
                    let (slot, chunk) = h.split_claim();
                    if waits && idle && slot < CLAIM_SLOTS && chunk > 0 {
                        let w = Write { token: h.token, peer: s.peer, len: s.len, addr: h.buffer(), done: 0, claim: Some((slot as u8, chunk)), ns: 0 };
                        let r = s.r;
                        self.state.split_out.insert(h.token, (2, 0));
                        self.state.writes.push_back(w);
                        self.state.streams_active += 1;
                        if trace_on() {
                            self.trace_path(r, Path::Split);
                        }
                    } else {
                        self.post_message(src as usize, Head::control(Kind::Pushed, h.token).mode(proto::PUSH_DECLINED));
                    }
                }
            }
            Kind::Pushed => self.pushed(src, h.token, h.mode, h.nanos()),
            Kind::Cts => {
                if let Some(s) = self.state.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    // From the record, not the operation: an execution that
                    // failed here still owes a local receiver its bytes
                    // (zeros, see `pump_streams`), or the receiver waits for
                    // ever. (Over the network there is no buffer left to
                    // send from: the send just ends, as it did before.)
                    let peer = s.peer as usize;
                    let gone = self.exec(s.r).is_none();
                    let len = if gone && self.link.is_remote(peer) { 0 } else { s.len };
                    if len > 0 && self.link.is_remote(peer) {
                        let r = s.r;
                        let src: Vec<(*const u8, usize)> = self.pieces(r).map(|p| p.as_slice().iter().map(|&(p, l)| (p as *const u8, l)).collect()).unwrap_or_default();
                        let res = match self.link.net.as_mut() {
                            // SAFETY: the send buffer stays valid and unmodified until
                            // the execution ends (API contract); it ends only after
                            // BulkSent or the peer's loss.
                            Some(n) => unsafe { n.send_bulk(peer as u32, h.token as u64, src) },
                            None => Err(std::io::Error::other("no network")),
                        };
                        if let Err(e) = res {
                            self.take_token(h.token);
                            let msg = format!("{}: sending {len} bytes to rank {peer}: {e}", self.describe(r));
                            self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                        }
                    } else if len == 0 {
                        if let Some(s) = self.take_token(h.token) {
                            self.finish(s.r);
                        }
                    } else {
                        if s.mode == proto::MODE_CMA && !h.this_one_only() {
                            // The receiver may not read our memory.
                            self.adapt.deny_cma();
                        }
                        let r = s.r;
                        let window = proto::cts_window(h.mode);
                        self.state.stream_out[peer].push_back(StreamOut { token: h.token, pos: 0, len, since: None, tail_ns: 0, window });
                        self.state.streams_active += 1;
                        if trace_on() {
                            self.trace_path(r, Path::Stream);
                        }
                    }
                }
            }
            Kind::Fin if h.mode == proto::FIN_PART && self.state.split_out.contains_key(&h.token) => self.part_done(h.token, h.nanos()),
            // A sender that declined its part waits for the plain FIN.
            Kind::Fin if h.mode == proto::FIN_PART => {}
            Kind::Fin if h.token & STAGED_TOKEN != 0 => self.unstage(h.token),
            Kind::Fin => {
                if self.state.split_out.remove(&h.token).is_some() {
                    // A split message whose receiver's execution failed
                    // before its part was read: the send ends here, and
                    // its token may serve another send at once, so its
                    // write must not go on (into the old buffer, with the
                    // new send's bytes). The receiver waits for PUSHED.
                    let before = self.state.writes.len();
                    self.state.writes.retain(|w| w.token != h.token);
                    let dropped = before - self.state.writes.len();
                    if dropped > 0 {
                        self.state.streams_active -= dropped as u32;
                        self.post_message(src as usize, Head::control(Kind::Pushed, h.token).mode(proto::PUSH_BY_STREAM));
                    }
                }
                if let Some(s) = self.take_token(h.token) {
                    // The receiver's read time rides in the FIN.
                    let read_ns = if s.mode == proto::MODE_CMA { h.nanos() } else { 0 };
                    if s.mode == proto::MODE_CMA {
                        let len = self.rec(s.r).map_or(0, |o| o.len as usize);
                        self.adapt.record(src as usize, len, adapt::Path::Cma, s.exchange, read_ns);
                    }
                    self.rdv_sent(s, read_ns);
                }
            }
            Kind::Credit => {
                let r = &mut self.state.credit.eager_returned[src as usize];
                *r = (*r).max(h.credits());
            }
            Kind::Accept | Kind::Decline => self.channel_answer(h.kind == Kind::Accept, src, h.sched, h.token),
            Kind::Probe => self.answer_probe(src, h),
            Kind::NoSend => self.no_send(src, h),
            // Goal-net refuses unknown handlers; a ring holds what a runtime wrote.
            Kind::Invalid => {}
        }
        self.drain_ready();
    }

}

/// A message arriving during poll number `poll`, from the rings or from
/// goal-net alike. An eager message whose receive is posted is copied
/// straight into it (without the copy that would wait for the poll's end;
/// measured over the network: a third of a helper's user-space time
/// receiving a 1 MiB broadcast in 64 KiB segments). Everything else waits
/// in `arrived` for the poll's end: an envelope about a channel, and a
/// message behind one of its sender's that may match and is still queued
/// (see `State::queued_in`). A receive filled inline is finished at once
/// if `finish_now`, else (kernel mode, tracing, truncation) by a DELIVERED
/// note at the poll's end.
pub(super) fn st_arrive(state: &mut State, arrived: &mut Vec<Arrival>, poll: u64, finish_now: bool, src: u32, h: Head, payload: &[u8]) {
    if h.kind != Kind::Eager {
        if h.kind == Kind::Rts {
            state.matcher.queued_in[src as usize] = poll;
        }
        arrived.push(Arrival::Message { src, head: h, data: None });
        return;
    }
    if let Some(r) = (h.mode == 0 && state.matcher.queued_in[src as usize] != poll).then(|| match_posted(&mut state.execs, h.sched, h.seq, src, h.tag)).flatten() {
        // SAFETY: `r` was just returned by `match_posted`: its slot is an
        // index of `slots`, holding the execution.
        let fuses = || !unsafe { state.execs.slots.get_unchecked(r.slot as usize) }.as_ref().is_none_or(|e| e.sched.fuse.is_empty());
        if finish_now && payload.len() >= FUSE_EAGER_MIN && fuses() {
            if let Some(op) = st_fuse_inline(state, r, src, payload) {
                for r in [r, OpRef { op, ..r }] {
                    if let Some(slot) = state.execs.finish(r) {
                        state.completed(slot);
                    }
                }
                return;
            }
        }
        let fit = st_deliver_inline(state, r, src, payload);
        if finish_now && fit == Fit::Ok {
            if let Some(slot) = state.execs.finish(r) {
                state.completed(slot);
            }
        } else {
            arrived.push(Arrival::Delivered { src, r, len: payload.len() as u32, fit });
        }
        return;
    }
    state.matcher.queued_in[src as usize] = poll;
    let mut data = state.matcher.spare_bufs.pop().unwrap_or_default();
    data.clear();
    data.reserve(payload.len());
    let since = copy_out_starts(state.eager_out_from, payload.len());
    // SAFETY: `reserve` made room for `payload.len()` bytes past the empty
    // vector's start; they are written (goal's copy, see
    // `goal_transport::copy_bytes`) before the length covers them.
    unsafe {
        goal_transport::copy_bytes(payload.as_ptr(), data.as_mut_ptr(), payload.len());
        data.set_len(payload.len());
    }
    if since != 0 {
        st_copied_out(state, src, payload.len(), since);
    }
    arrived.push(Arrival::Message { src, head: h, data: Some(data) });
}

/// Copies an eager payload from the ring into posted receive `r` if it
/// fits (returns whether it did).
#[inline(always)]
pub(super) fn st_deliver_inline(state: &mut State, r: OpRef, src: u32, payload: &[u8]) -> Fit {
    // SAFETY: `r` was just returned by `match_posted`: its slot is an index
    // of `slots`, holding the execution.
    let e = unsafe { state.execs.slots.get_unchecked(r.slot as usize) }.as_ref().unwrap_or_else(|| unreachable!());
    let s = &e.sched.s;
    // SAFETY: and its op is a posted receive of that execution's schedule,
    // an index of the schedule's operations.
    let o = unsafe { s.ops.get_unchecked(r.op as usize) };
    let base = e.bufs.bases();
    let fit = fit(payload.len() as u64, o.len as u64, o.exact());
    // Timed where `eagerness` may want it (see `State::eager_out`).
    let since = copy_out_starts(state.eager_out_from, payload.len());
    if fit == Fit::Ok {
        let resolve = |addr: u64| operand(base, addr, o.relative());
        match o.kind() {
            OpKind::Recv => {
                // SAFETY: the receive buffer is valid for o.len >= payload.len() bytes
                // (API contract, or the checked scratchpad), and does not overlap the ring.
                unsafe { goal_transport::copy_bytes(payload.as_ptr(), resolve(o.addr), payload.len()) };
            }
            _ => {
                let v = s.vecs[o.addr as usize];
                let mut off = 0;
                for p in s.pieces_of(v) {
                    if off >= payload.len() {
                        break;
                    }
                    let n = (p.len as usize).min(payload.len() - off);
                    // SAFETY: as above, per piece.
                    unsafe { goal_transport::copy_bytes(payload.as_ptr().add(off), resolve(p.addr), n) };
                    off += n;
                }
            }
        }
    }
    if src != state.rank {
        state.credit.release(src, payload.len() as u64);
    }
    if since != 0 {
        st_timed_out(state, src, payload.len(), since);
    }
    fit
}

/// An eager message of `len` bytes from `src` was copied out of its ring
/// into its posted receive from `since` (ns) to now: for `eagerness`, here
/// and at its sender. Out of line: the path of small messages, which it
/// is not for, stays short.
#[inline(never)]
fn st_timed_out(state: &mut State, src: u32, len: usize, since: u64) {
    let ns = st_copied_out(state, src, len, since);
    state.eager_out[src as usize] = (len as u32, ns);
}

/// When a copy out of the ring of a message of `len` bytes starts, if it
/// is timed (from `State::eager_out_from`, the sizes `eagerness` chooses
/// the way of); 0 if not.
#[inline(always)]
pub(super) fn copy_out_starts(from: usize, len: usize) -> u64 {
    if len >= from { crate::localop::monotonic_ns() } else { 0 }
}

/// Notes that an eager message of `len` bytes from `src` was copied out of
/// its ring from `since` (ns, [`copy_out_starts`]) to now, for its
/// sender (see `State::copy_out`); returns the ns it took.
#[inline]
pub(super) fn st_copied_out(state: &mut State, src: u32, len: usize, since: u64) -> u32 {
    let ns = crate::localop::monotonic_ns().saturating_sub(since) as u32;
    if src == state.rank {
        return ns;
    }
    state.copy_out[src as usize] = (len as u32, ns);
    if !state.copy_out_due.contains(&src) {
        state.copy_out_due.push(src);
    }
    state.credit.due = true;
    ns
}
