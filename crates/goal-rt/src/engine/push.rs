//! Rendezvous by the sender writing into the receiver's memory
//! (`process_vm_writev`): a push (the receiver is busy with work of its
//! own), or the sender's chunks of a split message (the receiver reads the
//! others at the same time).

use super::*;
use super::cma::{copy_claimed, READ_PIECE};
use super::pieces::{each_span};
use super::policy::{claim_chunk};

impl Engine {
    /// Sender: one part of rendezvous `token` is over (its write, or a
    /// split message's read by the receiver), after `ns`; the send ends
    /// with its last. A split message's two parts are copied at once, on
    /// two cores: the longer one is CMA's time for the whole message. Not
    /// counted, a sender whose receivers always split (an idle receiver: a
    /// broadcast's) never measured CMA, and an unmeasured path keeps
    /// calibration's choice: 2 ranks, bcast of 1 MiB went by split CMA in
    /// 86-91 us, where the stream, measured at 0.08 ns per byte against
    /// split CMA's 0.12 once both were, takes 50.
    pub(super) fn part_done(&mut self, token: u32, ns: u64) {
        if let Some((left, longest)) = self.state.split_out.get_mut(&token) {
            *left -= 1;
            *longest = (*longest).max(ns);
            if *left > 0 {
                return;
            }
            let longest = *longest;
            self.state.split_out.remove(&token);
            if let Some(s) = self.state.rdv.get(token as usize).and_then(|s| s.as_ref()).filter(|s| s.mode == proto::MODE_CMA) {
                let (peer, len, exchange) = (s.peer as usize, s.len, s.exchange);
                self.adapt.record(peer, len, adapt::Path::Cma, exchange, longest);
            }
        }
        if let Some(s) = self.take_token(token) {
            self.rdv_sent(s, 0);
        }
    }

    /// Sender: writes the next piece of the first pushed message.
    pub(super) fn pump_writes(&mut self) {
        let Some(mut w) = self.state.writes.pop_front() else { return };
        self.state.streams_active -= 1;
        let (peer, token) = (w.peer, w.token);
        let r = self.state.rdv.get(token as usize).and_then(|s| s.as_ref()).map(|s| s.r);
        let Some(src) = r.and_then(|r| self.pieces(r)) else {
            // Its execution failed here: nothing to write from. As a stream
            // whose sender failed, the receiver gets zeros by the stream
            // (the record stays for its CTS).
            return self.post_message(peer as usize, Head::control(Kind::Pushed, token).mode(proto::PUSH_BY_STREAM));
        };
        let r = r.unwrap_or_else(|| unreachable!());
        let link = &self.link;
        let t0 = Instant::now();
        let write = |from: usize, to: usize| {
            each_span(&src, from, to, |p, at, n| {
                // SAFETY: `each_span` gives a part of a send buffer piece,
                // valid for `n` bytes and unmodified until the execution
                // ends (API contract).
                let d = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
                link.cma_write(peer as usize, w.addr + at as u64, d)
            })
        };
        // The next piece of a push; of a split message, the chunks this
        // rank takes from the back, while there are any (see `Claim`).
        let (step, res, more) = match w.claim {
            None => {
                let end = w.len.min(w.done + READ_PIECE);
                (end - w.done, write(w.done, end), end < w.len)
            }
            Some((slot, chunk)) => {
                let claim = link.claim(peer as usize, slot as usize, true);
                copy_claimed(|| claim.take_back(token), || claim.left(token), w.len, chunk, READ_PIECE, write)
            }
        };
        w.ns += t0.elapsed().as_nanos() as u64;
        match res {
            Ok(()) => {
                self.copied(step);
                w.done += step;
                if more {
                    self.state.writes.push_front(w);
                    self.state.streams_active += 1;
                    return;
                }
                // With the write's time, for the receiver (see COLD_WRITES).
                self.post_message(peer as usize, Head::control(Kind::Pushed, token).mode(proto::PUSH_DONE).with_nanos(w.ns));
                if w.claim.is_none() {
                    // A whole message written is CMA's time for `adapt`, as a
                    // read's would be: a receiver that always asks its sender
                    // to write (a gather's root, busy with its own block) left
                    // CMA unmeasured, and the chooser kept it, at twice the
                    // stream's time (2 ranks, gather of 1 MiB: 139 us, 71 by
                    // the stream).
                    let exchange = self.in_exchange(token);
                    self.adapt.record(peer as usize, w.len, adapt::Path::Cma, exchange, w.ns);
                }
                self.part_done(token, w.ns);
            }
            // Not allowed (ptrace rules): the receiver asks for the stream
            // (or reads the rest of a split message), this send stays. Also
            // after a part was written: capabilities are per thread, so the
            // helper (started before an application dropped
            // CAP_SYS_PTRACE) may write where the application thread may
            // not (seen: t_split_refused, EPERM at byte 2.5 MiB of 4). What
            // was written is written again, with the same bytes.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                self.state.split_out.remove(&token);
                self.post_message(peer as usize, Head::control(Kind::Pushed, token).mode(proto::PUSH_REFUSED));
            }
            Err(e) => {
                self.state.split_out.remove(&token);
                self.take_token(token);
                let (kind, msg) = if e.raw_os_error() == Some(libc::ESRCH) {
                    (ErrorKind::PeerLost, format!("{}: rank {peer} exited before its {} bytes were written (at byte {})", self.describe(r), w.len, w.done))
                } else {
                    self.post_message(peer as usize, Head::control(Kind::Pushed, token).mode(proto::PUSH_FAILED));
                    (ErrorKind::System, format!("{}: writing {} bytes into rank {peer} by Cross Memory Attach failed at byte {}: {e}", self.describe(r), w.len, w.done))
                };
                self.fail(r, Error::new(kind, msg));
            }
        }
    }

    /// Receiver: the sender of the message of its rendezvous `token` says
    /// how writing it here went (`Kind::Pushed`).
    pub(super) fn pushed(&mut self, src: u32, token: u32, how: u8, write_ns: u64) {
        let Some((r, len, judge)) = self.state.pushes_in.remove(&(src, token)) else { return };
        let split = self.state.split_in.remove(&(src, token));
        if self.state.draining.contains_key(&r.slot) {
            if let Some(split) = &split {
                self.close_split(src, token, split.slot);
            }
            // Its execution failed meanwhile: it ends once nothing more is written.
            if !self.state.pushes_in.values().any(|(x, _, _)| x.slot == r.slot) {
                self.complete_slow(r.slot, Ok(()));
            }
            return;
        }
        if how == proto::PUSH_DONE {
            // Its bytes are in this buffer's lines now (see `written_to`).
            let at = self.pieces(r).and_then(|d| d.as_slice().first().map(|&(p, _)| p as u64)).unwrap_or(0);
            self.state.paths.written_to[src as usize].put(at);
            self.state.paths.read_to[src as usize].take(at);
        }
        match (how, split) {
            (proto::PUSH_DONE, Some(mut split)) => {
                self.state.pushed += 1;
                split.written = true;
                split.write_ns = write_ns;
                if split.read {
                    self.split_over(src, &split, len);
                    self.finish(r);
                } else {
                    self.state.split_in.insert((src, token), split);
                }
            }
            (proto::PUSH_DONE, None) => {
                self.state.pushed += 1;
                self.judge_write(src, judge, write_ns, self.state.paths.read_ps[src as usize] * len as u64 / 1000);
                self.finish(r);
            }
            (proto::PUSH_REFUSED | proto::PUSH_DECLINED | proto::PUSH_BY_STREAM, Some(split)) => {
                // The sender writes no more: this rank reads the rest too,
                // every chunk from the first it had not taken (those the
                // sender took may be half written), then frees the sender
                // with a plain FIN.
                let from = (self.close_split(src, token, split.slot) as usize * claim_chunk(len, split.mode)).min(len);
                if how == proto::PUSH_REFUSED {
                    self.state.paths.push_refused[src as usize] = true;
                }
                self.state.split[1] += 1;
                if how == proto::PUSH_DECLINED {
                    // A sender busy with its own work (a scatter's root
                    // copies its block) or computing declines every time,
                    // and each request left this rank waiting for the
                    // answer after its half (2 ranks, scatter of 256 KiB:
                    // 17.5 us, 985 of 1003 requests declined, against 12.5
                    // in manual mode).
                    self.cold_vote(src as usize);
                }
                // Its FIN carries the whole read's time: the half read
                // already counts (timed from the second half alone, CMA
                // looked twice as fast as it was: 2 ranks, scatter of 1 MiB,
                // 75 us a read against the 145 us iterations it made, where
                // the stream took 96 and was not chosen).
                match self.state.reads.iter_mut().find(|read| read.src == src && read.token == token) {
                    Some(read) => (read.claim, read.done) = (None, from),
                    None => {
                        self.state.reads.push_back(Read { r, src, len, mode: split.mode, token, addr: split.addr, done: from, ns: split.read_ns, whole: false, claim: None, fusable: false });
                        self.state.streams_active += 1;
                    }
                }
            }
            (proto::PUSH_REFUSED | proto::PUSH_BY_STREAM, None) => {
                if how == proto::PUSH_REFUSED {
                    self.state.paths.push_refused[src as usize] = true;
                }
                self.stream_receive(r, src, len, false, Head::control(Kind::Cts, token).for_this_one_only());
            }
            (_, split) => {
                if let Some(split) = split {
                    self.close_split(src, token, split.slot);
                }
                let msg = format!("{}: rank {src} could not write its message here", self.describe(r));
                self.fail(r, Error::new(ErrorKind::System, msg));
            }
        }
    }


    /// Receiver: no more chunks of split message `token` from `src` are
    /// taken (the sender gave up, or this rank's execution failed); frees
    /// its claim word `slot`. Returns the first chunk this rank had not
    /// taken.
    fn close_split(&mut self, src: u32, token: u32, slot: u8) -> u32 {
        let front = self.link.claim(src as usize, slot as usize, false).close(token).unwrap_or(0);
        self.state.claims_free[src as usize] |= 1 << slot;
        front
    }
}
