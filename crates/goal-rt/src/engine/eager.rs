//! Sends and eager messages: starting a send (self-send, eager through the
//! link, or an RTS), eager credit per receiver, control messages, and the
//! per-peer queue of messages waiting for ring space.
//!
//! Credit: a receiver buffers at most `Thresholds::credit` bytes of
//! unexpected eager data per sender; a sender past its credit sends an
//! RTS instead, so it waits rather than the receiver buffering without
//! bound. Receivers return credit in steps of a quarter
//! ([`Engine::publish_credits`]).

use super::*;
use super::policy::Offer;
use super::record::Path;
use super::pieces::{Bases, Pieces, byte_slice, gather, operand, slices_of};

impl Engine {
    pub(super) fn start_send(&mut self, r: OpRef, o: &OpRec, sched: SchedId, seq: u32) {
        let peer = o.peer as u32;
        let len = o.len as usize;
        let mut head = Head::eager(o, sched, seq);
        if peer == self.rank {
            return self.self_send(r, head);
        }
        if let Some(cause) = &self.state.lost[peer as usize] {
            let msg = format!("{}: rank {peer} {cause}", self.describe(r));
            return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
        }
        let p = peer as usize;
        let pieces = if o.kind() == OpKind::Send {
            // One buffer: resolved here, without the general `pieces`.
            let base = self.exec(r).map_or(Bases::none(), |e| e.bufs.bases());
            Some(Pieces::One([(operand(base, o.addr, o.relative()), len)]))
        } else {
            self.pieces(r)
        };
        if self.link.is_remote(p) {
            return self.net_send(r, peer, head, pieces);
        }
        let ptr = match pieces {
            Some(Pieces::One([(ptr, _)])) => ptr,
            _ => std::ptr::null_mut(),
        };
        let heap_off = if len > self.thresholds.heap_eager && !ptr.is_null() { self.link.shm.heap().offset_of(ptr, len) } else { None };
        let backed_up = self.backed_up(p, len);
        // Eagerly (`eager`), and whether `eagerness` chose (`chosen`: the
        // way taken is then timed).
        let (eager, chosen_in) = if heap_off.is_none() && !backed_up { self.eager_way(r, p, len) } else { (false, None) };
        let chosen = chosen_in.is_some();
        if eager && self.eager_credit(p, len as u64) {
            self.state.credit.eager_sent[p] += len as u64;
            self.state.eager_beyond += u64::from(len > self.thresholds.eager && !chosen);
            if self.kernel.is_some() {
                self.offer_or_switch(r, &mut head);
            }
            if self.state.outq[p].is_empty() {
                if let Some(pieces) = &pieces {
                    // Timed when `eagerness` chose (not a copy that faulted
                    // pages of the ring in: one that moved `written`).
                    let (since, written) = if chosen { (crate::localop::monotonic_ns(), self.link.shm.ring_written(p)) } else { (0, 0) };
                    let res = match pieces {
                        // SAFETY: send buffers are valid for their lengths by the API contract.
                        Pieces::One([(ptr, len)]) => self.link.shm.try_send_one(p, &head.encode(), unsafe { byte_slice(*ptr, *len) }),
                        Pieces::Many(_) => self.link.shm.try_send(p, &head.encode(), &slices_of(pieces)),
                    };
                    match res {
                        Ok(true) => {
                            if chosen && self.link.shm.ring_written(p) == written {
                                let copy_ns = crate::localop::monotonic_ns().saturating_sub(since);
                                if chosen_in == Some(true) {
                                    if let Some(ns) = self.eager_exchange_ns(p, len, copy_ns) {
                                        self.eagerness.eager_copied(p, len, true, ns);
                                    }
                                } else {
                                    let ns = copy_ns + self.lone_copy_out_ns(p, len);
                                    self.eagerness.eager_copied(p, len, false, ns);
                                }
                            }
                            return self.finish(r);
                        }
                        Ok(false) => {}
                        Err(e) => return self.fail(r, Error::new(ErrorKind::System, format!("{}: {e}", self.describe(r)))),
                    }
                }
            }
            return self.enqueue(p, Out { head, send: Some(r) });
        }
        // Rendezvous: pick how the receiver will fetch the bytes.
        self.state.eager_backed_up += u64::from(backed_up && len <= self.thresholds.eager);
        let token = self.new_token(RdvSend { r, peer, len, mode: proto::MODE_STREAM, exchange: false, since: 0, chosen_exchange: false, burst: false });
        head.kind = Kind::Rts;
        head.token = token;
        let (offer, exchange, burst) = self.choose_offer(r, p, len, ptr, heap_off, chosen);
        if matches!(offer, Offer::Cma { .. } | Offer::Stream) && !ptr.is_null() && self.may_stage(p, len) {
            if let Some((off, staged)) = self.stage(p, ptr, len) {
                // Copied into the heap for a peer that is not running (see
                // `stage`): the send ends now; the FIN frees the block.
                self.take_token(token);
                if burst {
                    self.adapt.bursts.sent(p);
                }
                head.token = staged;
                head.mode = proto::MODE_HEAP;
                if trace_on() {
                    self.trace_path(r, Path::Staged);
                }
                self.post_message(p, head.with_buffer(off));
                return self.finish(r);
            }
        }
        head.mode = match offer {
            Offer::Heap { off } => {
                head = head.with_buffer(off);
                proto::MODE_HEAP
            }
            Offer::Cma { addr } => {
                head = head.with_buffer(addr);
                proto::MODE_CMA
            }
            Offer::Stream => proto::MODE_STREAM,
        };
        if let Some(s) = self.state.rdv[token as usize].as_mut() {
            (s.exchange, s.mode, s.burst) = (exchange, head.mode, burst);
            // Timed from here when `eagerness` chose this way.
            s.since = if chosen && !eager { crate::localop::monotonic_ns() } else { 0 };
            s.chosen_exchange = chosen_in == Some(true);
        }
        if trace_on() {
            self.trace_path(r, match head.mode {
                proto::MODE_HEAP => Path::Heap,
                proto::MODE_CMA => Path::Cma,
                _ => Path::Stream,
            });
        }
        if exchange {
            head.mode |= proto::RTS_EXCHANGE;
        }
        if chosen_in == Some(true) && head.mode & !proto::RTS_EXCHANGE == proto::MODE_CMA {
            head.mode |= proto::RTS_READ;
        }
        self.post_message(p, head);
    }

    /// A send to a peer on another machine: eager as one active message
    /// (copied into the network's queue, so it finishes at once), else RTS;
    /// the bytes then flow, once the receiver has answered CTS, as a bulk
    /// transfer straight from this buffer into the receive's (no FIN: the
    /// network's acknowledgement of the last fragment finishes the send,
    /// or over a single rail its being written, as goal-net's `BulkSent`).
    pub(super) fn net_send(&mut self, r: OpRef, peer: u32, mut head: Head, pieces: Option<Pieces>) {
        let len = head.len as usize;
        let one_rail = self.link.net.as_ref().is_some_and(|n| n.rails_up(peer) == 1);
        let limit = if one_rail { self.thresholds.net_eager_one_rail } else { self.thresholds.net_eager };
        let res = if len <= limit && self.eager_credit(peer as usize, len as u64) {
            self.state.credit.eager_sent[peer as usize] += len as u64;
            if self.kernel.is_some() {
                self.offer_or_switch(r, &mut head);
            }
            let sent = match &pieces {
                Some(p) => self.net_am(peer, &head, &slices_of(p)),
                None => self.net_am(peer, &head, &[]),
            };
            sent.map(|_| true)
        } else {
            head.kind = Kind::Rts;
            head.mode = proto::MODE_NET;
            if trace_on() {
                self.trace_path(r, Path::NetBulk);
            }
            head.token = self.new_token(RdvSend { r, peer, len: head.len as usize, mode: proto::MODE_NET, exchange: false, since: 0, chosen_exchange: false, burst: false });
            self.net_am(peer, &head, &[]).map(|_| false)
        };
        match res {
            Ok(true) => self.finish(r),
            Ok(false) => {}
            Err(e) => {
                let msg = format!("{}: sending to rank {peer} over the network: {e}", self.describe(r));
                self.fail(r, Error::new(ErrorKind::PeerLost, msg));
            }
        }
    }

    /// Sends one protocol message to a peer on another machine; its handler is `16 + kind`.
    pub(super) fn net_am(&mut self, peer: u32, head: &Head, payload: &[&[u8]]) -> std::io::Result<()> {
        self.link.send_am(peer, head, payload)
    }

    #[inline(always)]
    pub(super) fn eager_credit(&mut self, p: usize, len: u64) -> bool {
        let credit = &mut self.state.credit;
        if credit.allows(p, len, self.thresholds.credit) {
            return true;
        }
        // (Over the network, refreshed by CREDIT messages as they arrive.)
        let Some(returned) = self.link.credits_returned(p) else { return false };
        credit.eager_returned[p] = returned;
        credit.allows(p, len, self.thresholds.credit)
    }

    /// Sends a message without payload (RTS, CTS, FIN), in order behind any queued ones.
    pub(super) fn post_message(&mut self, p: usize, head: Head) {
        // (Only ring messages queue: the network is never full.)
        if self.state.outq[p].is_empty() {
            match self.link.send_control(p, &head) {
                Ok(true) => return,
                Ok(false) => {}
                // The peer is unreachable: liveness (or the network) will report it.
                Err(_) => return,
            }
        }
        self.enqueue(p, Out { head, send: None });
    }

    pub(super) fn send_control(&mut self, p: u32, kind: Kind, token: u32) {
        self.post_message(p as usize, Head::control(kind, token));
    }

    pub(super) fn enqueue(&mut self, p: usize, out: Out) {
        if self.state.outq[p].is_empty() {
            self.state.outq_peers.push(p as u32);
        }
        self.state.outq[p].push_back(out);
    }

    pub(super) fn retry_outq(&mut self) {
        let peers = std::mem::take(&mut self.state.outq_peers);
        let mut still = Vec::new();
        for p in peers {
            let p = p as usize;
            while let Some(out) = self.state.outq[p].front() {
                let head = out.head;
                let send = out.send;
                let ok = match send {
                    Some(r) => match self.pieces(r) {
                        Some(pieces) => self.link.shm.try_send(p, &head.encode(), &slices_of(&pieces)).unwrap_or(true),
                        None => true, // its execution failed: drop it
                    },
                    None => self.link.shm.try_send(p, &head.encode(), &[]).unwrap_or(true),
                };
                if !ok {
                    break;
                }
                self.state.outq[p].pop_front();
                if let Some(r) = send {
                    self.finish(r);
                }
            }
            if !self.state.outq[p].is_empty() {
                still.push(p as u32);
            }
        }
        self.state.outq_peers.extend(still);
        self.drain_ready();
    }

    pub(super) fn self_send(&mut self, r: OpRef, head: Head) {
        let u = Unexp { src: self.rank, tag: head.tag, len: head.len, kind: UnexpKind::SelfSend(r) };
        if let Some(target) = self.match_posted(head.sched, head.seq, self.rank, head.tag) {
            return self.deliver(target, u);
        }
        // Copied aside (so the send finishes at once, even if its receive
        // depends on it) while under the unexpected-data bound; past it, the
        // send waits for its receive like any rendezvous.
        if self.state.self_buffered + head.len as u64 <= self.thresholds.credit {
            self.state.self_buffered += head.len as u64;
            let mut data = vec![0u8; head.len as usize];
            if let Some(p) = self.pieces(r) {
                gather(&p, &mut data);
            }
            self.copied(data.len());
            self.stash(head.sched, head.seq, Unexp { kind: UnexpKind::Eager(data, None), ..u });
            return self.finish(r);
        }
        self.stash(head.sched, head.seq, u);
    }

    pub(super) fn release_credit(&mut self, src: u32, n: u64) {
        if src != self.rank {
            self.state.credit.release(src, n);
        } else {
            self.state.self_buffered -= n;
        }
    }

    /// Publishes returned eager credit, lazily: a sender only looks at it
    /// when it nears its limit (and then falls back to rendezvous rather than
    /// wait), so publishing every quarter of the credit keeps the store and
    /// the wake-up check off the per-message path.
    pub(super) fn publish_credits(&mut self) {
        if !self.state.credit.due {
            return;
        }
        for (p, released) in self.state.credit.take_due() {
            self.link.return_credits(p, released);
        }
        if !self.state.copy_out_due.is_empty() {
            self.publish_copy_out();
        }
    }

    /// Publishes to their senders the copies out of the rings timed since
    /// the last pass (see `State::copy_out`), over shared memory only;
    /// from [`publish_credits`](Self::publish_credits). The list keeps its
    /// allocation from pass to pass.
    fn publish_copy_out(&mut self) {
        let State { copy_out_due, copy_out, .. } = &mut self.state;
        for src in copy_out_due.drain(..) {
            let p = src as usize;
            if !self.link.is_remote(p) {
                let (len, ns) = copy_out[p];
                self.link.shm.publish_copy_out(p, len, ns);
            }
        }
    }

}
