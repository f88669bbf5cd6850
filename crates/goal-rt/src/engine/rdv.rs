//! Rendezvous bookkeeping: tokens for sends waiting for their answer, and
//! the receiver's fetch of a message whose RTS matched ([`Engine::fetch`]
//! carries out the path `policy::choose_fetch` decides: network bulk
//! transfer, heap or CMA read, push, split, or the stream).

use super::*;
use super::cma::{READ_LATER};
use super::pieces::{Pieces};
use super::policy::{claim_chunk, Fetch};
use super::record::Path;

impl Engine {
    /// Whether a large send of `r` to the local peer `p` is half of an
    /// exchange: a large message from `p` comes at the same time (a stream
    /// from it is being received, a receive of this execution from it is
    /// posted, or one starts with the execution as this send does).
    pub(super) fn exchanging(&self, r: OpRef, p: usize) -> bool {
        self.exchanging_from(r, p, EXCHANGE_MIN)
    }

    /// [`exchanging`](Self::exchanging), a message of at least `min` bytes
    /// from `p` making an exchange.
    pub(super) fn exchanging_from(&self, r: OpRef, p: usize, min: u64) -> bool {
        if !self.state.stream_in[p].is_empty() {
            return true;
        }
        let Some(e) = self.exec(r) else { return false };
        let s: &SchedInner = &e.sched;
        (r.op < s.s.independent && s.opening_recvs.binary_search_by_key(&(p as u32), |o| o.0).is_ok_and(|i| s.opening_recvs[i].1 >= min))
            || e.bufs.posted.iter().any(|q| q.peer == p as i32 && s.s.ops[q.op as usize].len as u64 >= min)
    }

    pub(super) fn new_token(&mut self, s: RdvSend) -> u32 {
        match self.state.rdv_free.pop() {
            Some(t) => {
                self.state.rdv[t as usize] = Some(s);
                t
            }
            None => {
                self.state.rdv.push(Some(s));
                (self.state.rdv.len() - 1) as u32
            }
        }
    }

    /// Whether the rendezvous send of `token` is half of an exchange (see
    /// `adapt`); false once its record is gone.
    pub(super) fn in_exchange(&self, token: u32) -> bool {
        self.state.rdv.get(token as usize).and_then(|s| s.as_ref()).is_some_and(|s| s.exchange)
    }

    pub(super) fn take_token(&mut self, t: u32) -> Option<RdvSend> {
        let s = self.state.rdv.get_mut(t as usize)?.take()?;
        self.state.rdv_free.push(t);
        Some(s)
    }

    /// Ends rendezvous send `s`, whose receiver has its bytes (its token
    /// taken), noting its time where `eagerness` chose its way: from the
    /// RTS, or in an exchange the receiver's read (`read_ns`, which its FIN
    /// carries; 0 where it carries none).
    ///
    /// In an exchange each rank waits for its peer's message whichever way
    /// the two go, so the peer's lateness costs both ways alike; timed from
    /// the RTS it counted against rendezvous alone, where the eager way's
    /// time is its two copies (`Engine::eager_exchange_ns`). With a busy
    /// process beside a 2-rank job on an Intel Xeon VM, the rendezvous
    /// exchanges of 64 KiB measured 0.23-0.44 ns per byte from the RTS
    /// against the eager way's 0.11-0.18, and most went eagerly at 10-12 us
    /// an iteration where Open MPI's single copy took 6.5-6.9
    /// (docs/measurements/exchange-lateness-2026-12-08).
    pub(super) fn rdv_sent(&mut self, s: RdvSend, read_ns: u64) {
        if s.burst {
            self.adapt.bursts.sent(s.peer as usize);
        }
        if s.since != 0 {
            let ns = if s.chosen_exchange && read_ns > 0 { read_ns } else { crate::localop::monotonic_ns().saturating_sub(s.since) };
            self.eagerness.rendezvous_took(s.peer as usize, s.len, s.chosen_exchange, ns);
        }
        self.finish(s.r);
    }

    /// Fetches the message whose RTS matched receive `r` into `dst`, by
    /// the path [`choose_fetch`](Self::choose_fetch) decides.
    #[allow(clippy::too_many_arguments)] // the fields of an RTS, as the protocol names them
    pub(super) fn fetch(&mut self, r: OpRef, src: u32, len: u32, rts_mode: u8, token: u32, addr: u64, dst: &Pieces) {
        // Half of an exchange, as the sender saw it: the stream's long
        // window is not for it (see `stream_window`).
        let (mode, exchange) = proto::split_rts_mode(rts_mode);
        let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
        let fetch = match self.choose_fetch(r, src, len as usize, mode, dst) {
            // Read whole, as the sender asked (see `RTS_READ`).
            Fetch::Push { .. } | Fetch::Split { .. } if rts_mode & proto::RTS_READ != 0 => Fetch::Read,
            fetch => fetch,
        };
        if trace_on() {
            self.trace_path(r, match fetch {
                Fetch::Bulk => Path::NetBulk,
                Fetch::FusedStream | Fetch::Stream => Path::Stream,
                Fetch::Push { .. } => Path::Push,
                Fetch::Split { .. } => Path::Split,
                Fetch::Read if mode == proto::MODE_HEAP => Path::Heap,
                Fetch::Read | Fetch::FusableRead => Path::Cma,
            });
        }
        match fetch {
            Fetch::Bulk => {
                if len > 0 {
                    let mut left = len as usize;
                    let mut cut = Vec::new();
                    for &(p, l) in dst.as_slice() {
                        if left == 0 {
                            break;
                        }
                        cut.push((p, l.min(left)));
                        left -= l.min(left);
                    }
                    let res = match self.link.net.as_mut() {
                        // SAFETY: the receive buffer stays valid until the execution
                        // ends; an execution that fails first cancels this (`complete`).
                        Some(n) => unsafe { n.expect_bulk(src, token as u64, cut) },
                        None => Err(std::io::Error::other("no network")),
                    };
                    if let Err(e) = res {
                        let msg = format!("{}: receiving {len} bytes from rank {src}: {e}", self.describe(r));
                        return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                    }
                    self.state.net_in.insert((src, token), r);
                }
                self.send_control(src, Kind::Cts, token);
                if len == 0 {
                    self.finish(r);
                }
            }
            Fetch::FusedStream => {
                // Combined as it comes through the stream instead (see
                // FUSE_CMA_MAX); CMA stays allowed for later messages.
                self.stream_receive(r, src, len as usize, exchange, Head::control(Kind::Cts, token).for_this_one_only());
            }
            Fetch::Push { judge } => {
                self.state.pushes_in.insert((src, token), (r, len as usize, judge));
                self.post_message(src as usize, Head::control(Kind::Cts, token).mode(proto::MODE_PUSH).with_buffer(at));
            }
            Fetch::Split { judge } => {
                // A free claim word (`split_pays` saw one), set for this
                // message before the sender hears of it.
                let free = &mut self.state.claims_free[src as usize];
                let slot = free.trailing_zeros() as u8;
                *free &= !(1 << slot);
                let chunk = claim_chunk(len as usize, mode);
                let chunks = (len as usize).div_ceil(chunk);
                self.link.claim(src as usize, slot as usize, false).start(token, chunks as u32);
                self.state.pushes_in.insert((src, token), (r, len as usize, judge));
                self.state.split_in.insert((src, token), SplitIn { slot, addr, mode, read: false, written: false, judge, read_ns: 0, write_ns: 0, read_bytes: 0 });
                self.state.split[0] += 1;
                self.state.split_bytes[0] += len as u64;
                self.post_message(src as usize, Head::control(Kind::Cts, token).mode(proto::MODE_SPLIT).with_buffer(at).with_split_claim(slot, chunk));
                self.state.reads.push_back(Read { r, src, len: len as usize, mode, token, addr, done: 0, ns: 0, whole: false, claim: Some(slot), fusable: false });
                self.state.streams_active += 1;
            }
            Fetch::Read | Fetch::FusableRead => {
                let fusable = matches!(fetch, Fetch::FusableRead);
                let read = Read { r, src, len: len as usize, mode, token, addr, done: 0, ns: 0, whole: true, claim: None, fusable };
                if read.len >= READ_LATER {
                    self.state.reads.push_back(read);
                    self.state.streams_active += 1;
                } else {
                    self.read_step(read, dst, usize::MAX);
                }
            }
            Fetch::Stream => {
                if let Some(cause) = &self.state.lost[src as usize] {
                    let msg = format!("{}: rank {src} {cause} before sending its {len} bytes", self.describe(r));
                    return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                }
                if len == 0 {
                    self.send_control(src, Kind::Cts, token);
                    return self.finish(r);
                }
                self.stream_receive(r, src, len as usize, exchange, Head::control(Kind::Cts, token));
            }
        }
    }

}
