//! Reading: bytes from a socket into the receive buffer (or straight into a
//! registered bulk destination), frames out of the buffer, and each frame
//! to its handler: active messages to the caller in order, fragments to
//! their transfer, acknowledgements to what they acknowledge. Everything
//! here comes from the network: lengths and offsets are checked (by `wire`
//! and `reliable`) before they index memory, which is what the `SAFETY`
//! comments of its direct reads and copies lean on.

use super::{NetNode, Peer, ACK_DELAY, MAX_IOV, READS_PER_POLL};
use crate::bulk::Pieces;
use crate::conn::{Body, Phase, TAIL};
use crate::event::{drain, Event, Queued};
use crate::reliable::{Arrival, FragFate};
use crate::sys;
use crate::wire::{self, Challenge, Frame, Hello, Parsed};
use std::collections::VecDeque;
use std::io;
use std::time::Instant;

/// Bodies with at least this much left to read wake a sleeper only once
/// they are whole (see [`NetNode::body_lowat`]).
const BODY_LOWAT_MIN: u32 = 64 << 10;

impl NetNode {
    /// Reads what the socket has (a bounded number of times) and handles it.
    pub(super) fn read_conn(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        for _ in 0..READS_PER_POLL {
            n += self.consume(c, on);
            if !self.live(c) {
                return n;
            }
            if !self.connected && self.conn(c).is_up() {
                // Handshake done during `connect`: the rest waits.
                return n;
            }
            let (got, asked) = match self.read_some(c) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.fail_conn(c, format!("read: {e}"));
                    return n;
                }
            };
            if got == 0 {
                let why = if self.conn(c).is_up() { "the peer closed the connection" } else { "closed during the handshake" };
                self.fail_conn(c, why.into());
                return n;
            }
            self.conn(c).counters.bytes_in += got as u64;
            if got < asked {
                n += self.consume(c, on);
                break;
            }
        }
        if self.live(c) {
            self.send_frag_acks(c);
            self.body_lowat(c);
        }
        n
    }

    /// Sets the socket's `SO_RCVLOWAT` to the rest of a long fragment body
    /// being read (back to 1 otherwise), so that a thread asleep on the
    /// node's descriptor is woken once the body is there, not for each
    /// segment of it.
    ///
    /// At 1 Gbit/s a 512 KiB body arrives over 4 ms in 64 KiB segments, and
    /// the helper, woken for each, took its rank's CPU from a computation
    /// eight times per body, some 20-60 us each (2 emulated hosts, 1 MiB
    /// Iallreduce: 8.1 -> 6.4 % of a 20 ms computation lost, medians of 7
    /// alternated pairs of runs). Reads stay non-blocking: a poller in direct mode
    /// (at most [`DIRECT_MAX`](super::DIRECT_MAX) connections, which read
    /// without asking epoll) still takes each segment as it comes, while
    /// one that asks epoll sees the body once whole, as a sleeper does.
    /// The kernel reports the socket readable below the mark when its
    /// buffer or the window runs short, or the peer closes, so a body never
    /// waits on the mark for bytes the peer cannot send.
    fn body_lowat(&mut self, c: usize) {
        // (Writing the acknowledgements may have failed the connection.)
        let Some(conn) = self.conns.get_mut(c).and_then(|x| x.as_mut()) else { return };
        let want = match conn.body {
            Some(b) if conn.rx_pending() == 0 && b.remaining() >= BODY_LOWAT_MIN => b.remaining(),
            _ => 1,
        };
        if want != conn.rcvlowat && sys::set_int_opt(conn.fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, want.min(i32::MAX as u32) as i32).is_ok() {
            conn.rcvlowat = want;
        }
    }

    /// One read: into the fragment destination (plus a tail into the buffer)
    /// when a body is being read and nothing is buffered, else into the
    /// buffer. Returns (bytes read, bytes asked for).
    fn read_some(&mut self, c: usize) -> io::Result<(usize, usize)> {
        let NetNode { conns, peers, scratch, iov, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        iov.clear();
        if let (Some(body), 0) = (conn.body, conn.rx_pending()) {
            let rest = body.remaining() as u64;
            let p = conn.peer.expect("bodies only on established connections") as usize;
            // Body bytes this read can take: the destination may be cut into
            // more pieces than one readv takes, so possibly fewer than `rest`.
            let covered = match body_dst(&peers[p], &body) {
                Some(dst) => dst.iovecs(body.off + body.done as u64, rest, iov, MAX_IOV) as usize,
                None => {
                    conn.body.as_mut().expect("checked above").discard = true;
                    let n = scratch.len().min(rest as usize);
                    iov.push(sys::iov(scratch.as_mut_ptr(), n));
                    n
                }
            };
            conn.rx_lo = 0;
            conn.rx_hi = 0;
            let tail = TAIL.min(conn.rx.len());
            iov.push(sys::iov(conn.rx.as_mut_ptr(), tail));
            let asked: usize = iov.iter().map(|v| v.iov_len).sum();
            // SAFETY: (1) the destination iovecs cover a range of the
            // registration, checked against its size when the fragment header
            // was accepted; the caller of `expect_bulk` promised that memory
            // is valid and not otherwise used until BulkDone or PeerLost.
            // (2) the scratch and tail iovecs point into buffers we own,
            // which nothing else borrows during the call.
            let got = unsafe { sys::read_vectored(conn.fd(), iov) }?;
            let body_part = got.min(covered);
            conn.body.as_mut().expect("checked above").done += body_part as u32;
            conn.rx_hi = got - body_part;
            return Ok((got, asked));
        }
        if conn.rx_hi == conn.rx.len() {
            conn.rx_make_room(conn.rx.len() - conn.rx_lo + 1);
        }
        let free = &mut conn.rx[conn.rx_hi..];
        let asked = free.len();
        iov.push(sys::iov(free.as_mut_ptr(), asked));
        // SAFETY: the iovec covers the unused end of our own buffer.
        let got = unsafe { sys::read_vectored(conn.fd(), iov) }?;
        conn.rx_hi += got;
        Ok((got, asked))
    }

    /// Handles everything buffered: whole frames, and fragment bytes that
    /// arrived in the buffer. Returns events delivered.
    pub(super) fn consume(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        loop {
            if !self.live(c) {
                return n;
            }
            if let Some(body) = self.conn(c).body {
                if body.done == body.len {
                    self.body_finished(c, body);
                    continue;
                }
                if self.conn(c).rx_pending() == 0 {
                    return n;
                }
                self.body_from_buffer(c, body);
                continue;
            }
            if !self.connected && self.conn(c).is_up() {
                return n;
            }
            // Nothing buffered: no frame to parse (a poll that finds the
            // socket empty, and the end of every read, come here).
            let conn = self.conn(c);
            if conn.rx_lo == conn.rx_hi {
                conn.rx_lo = 0;
                conn.rx_hi = 0;
                return n;
            }
            match self.next_frame(c, on, &mut n) {
                Ok(None) => return n,
                Ok(Some(None)) => {}
                Ok(Some(Some(f))) => self.handle_owned(c, f),
                Err(why) => {
                    let conn = self.conn(c);
                    if conn.is_up() {
                        self.fail_conn(c, why);
                    } else {
                        self.refuse_or_fail(c, &why);
                    }
                    return n;
                }
            }
        }
    }

    /// A handshake-phase error: an accepted connection is refused (and
    /// logged), one we made fails.
    fn refuse_or_fail(&mut self, c: usize, why: &str) {
        if self.conn(c).accepted {
            self.refuse(c, why);
        } else {
            self.fail_conn(c, why.to_owned());
        }
    }

    /// Copies fragment bytes that arrived in the buffer to their place.
    fn body_from_buffer(&mut self, c: usize, body: Body) {
        let NetNode { conns, peers, iov, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        let k = conn.rx_pending().min(body.remaining() as usize);
        let p = conn.peer.expect("established") as usize;
        if let Some(dst) = body_dst(&peers[p], &body) {
            iov.clear();
            dst.iovecs(body.off + body.done as u64, k as u64, iov, usize::MAX);
            let mut from = conn.rx_lo;
            for v in iov.iter() {
                // SAFETY: (1) the target lies in the registration, checked
                // when the fragment header was accepted; the caller of
                // `expect_bulk` vouched for that memory. (2) the source is
                // our own buffer, which cannot overlap user memory.
                unsafe { std::ptr::copy_nonoverlapping(conn.rx.as_ptr().add(from), v.iov_base as *mut u8, v.iov_len) };
                from += v.iov_len;
            }
        }
        conn.rx_lo += k;
        let b = conn.body.as_mut().expect("body");
        b.done += k as u32;
        b.discard |= body_dst(&peers[p], &body).is_none();
    }

    /// Parses the next frame. `Ok(None)`: need more bytes; `Ok(Some(None))`:
    /// handled in place; `Ok(Some(Some(f)))`: for [`handle_owned`](Self::handle_owned).
    fn next_frame(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>), n: &mut usize) -> Result<Option<Option<Owned>>, String> {
        let NetNode { conns, peers, pending, lim, owed, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        let up = conn.is_up();
        let parsed = wire::parse(&conn.rx[conn.rx_lo..conn.rx_hi], lim).map_err(|e| format!("protocol error: {e}"))?;
        let (frame, used) = match parsed {
            Parsed::Incomplete { need } => {
                conn.rx_make_room(need);
                return Ok(None);
            }
            Parsed::Frame(f, used) => (f, used),
        };
        let out = match frame {
            Frame::Am { handler, seq, head, payload, unacked } if up => {
                let p = conn.peer.expect("established");
                let r = deliver_am(&mut peers[p as usize], owed, pending, p, handler, seq, unacked, head, payload, on, n);
                conn.rx_lo += used;
                r?;
                return Ok(Some(None));
            }
            Frame::Frag(h) if up => {
                conn.rx_lo += used;
                let p = conn.peer.expect("established");
                let fate = peers[p as usize].rel.accept_frag(&h)?;
                conn.body = Some(Body { xid: h.xid, token: h.token, off: h.offset, len: h.len, done: 0, discard: fate == FragFate::Discard, unacked: h.unacked });
                return Ok(Some(None));
            }
            Frame::Ack { delivered, frags } if up => {
                let p = conn.peer.expect("established");
                let r = peers[p as usize].rel.on_ack(delivered, frags.iter(), |token| pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token })));
                conn.rx_lo += used;
                r?;
                return Ok(Some(None));
            }
            Frame::Challenge(x) => Owned::Challenge(x),
            Frame::Hello(x) => Owned::Hello(x),
            Frame::Welcome { mac } => Owned::Welcome(mac),
            Frame::Reject { reason } => Owned::Reject(String::from_utf8_lossy(reason).into_owned()),
            Frame::Ping if up => Owned::Ping,
            Frame::Bye if up => Owned::Bye,
            Frame::Probe { op, id, size, body } if up => Owned::Probe { op, id, size, body: body.to_vec() },
            _ => return Err("protocol error: a data frame before the handshake finished".into()),
        };
        conn.rx_lo += used;
        Ok(Some(Some(out)))
    }

    /// Handles a frame that needs the whole node.
    fn handle_owned(&mut self, c: usize, f: Owned) {
        let phase = self.conn(c).phase.clone();
        match (f, phase) {
            (Owned::Challenge(ch), Phase::AwaitChallenge) => self.on_challenge(c, ch),
            (Owned::Hello(h), Phase::AwaitHello { challenge }) => self.on_hello(c, challenge, h),
            (Owned::Welcome(mac), Phase::AwaitWelcome { challenge, hello }) => self.on_welcome(c, challenge, hello, mac),
            (Owned::Reject(why), Phase::AwaitWelcome { .. } | Phase::AwaitChallenge) => {
                let me = self.cfg.rank;
                let conn = self.conn(c);
                let msg = format!("goal-net: rank {me}: rank {} at {} refused the connection: {why}", conn.peer.unwrap_or(u32::MAX), conn.remote);
                self.fatal = Some(msg.clone());
                self.fail_conn(c, msg);
            }
            (Owned::Ping, Phase::Up) => {}
            (Owned::Bye, Phase::Up) => self.close_conn(c, None),
            (Owned::Probe { op, id, size, body }, Phase::Up) => {
                let p = self.conn(c).peer.expect("established");
                if let Err(why) = self.on_probe(p, op, id, size, &body) {
                    self.fail_conn(c, why);
                }
            }
            (_, Phase::Up) => self.fail_conn(c, "protocol error: a handshake frame out of place".into()),
            _ => self.refuse_or_fail(c, "protocol error: a frame out of place in the handshake"),
        }
    }

    /// The fragment body is complete: acknowledge it (unless its sender
    /// wants no acknowledgement), record it, report the transfer if it is
    /// whole.
    fn body_finished(&mut self, c: usize, body: Body) {
        let conn = self.conn(c);
        conn.body = None;
        conn.counters.frags_in += 1;
        if !body.unacked {
            conn.frag_acks.push((body.xid, body.off));
        }
        let p = conn.peer.expect("established");
        let Some(b) = self.peers[p as usize].rel.frag_received(body.xid, body.token, body.off, body.len) else { return };
        if b.internal {
            self.probe_bulk_done(p, body.token);
        } else if !b.discard {
            self.pending.push_back(Queued::Ev(Event::BulkDone { src: p, token: body.token }));
        }
    }
}

/// A frame copied out of the receive buffer, for handling with the whole node.
enum Owned {
    Challenge(Challenge),
    Hello(Hello),
    Welcome([u8; 32]),
    Reject(String),
    Ping,
    Bye,
    Probe { op: u32, id: u64, size: u64, body: Vec<u8> },
}

/// Delivers (or holds, or drops) an active message from `p`.
#[allow(clippy::too_many_arguments)]
fn deliver_am(
    peer: &mut Peer,
    owed: &mut Vec<u32>,
    pending: &mut VecDeque<Queued>,
    p: u32,
    handler: u8,
    seq: u64,
    unacked: bool,
    head: &[u8],
    payload: &[u8],
    on: &mut dyn FnMut(Event<'_>),
    n: &mut usize,
) -> Result<(), String> {
    if peer.rel.arrive(seq, handler, head, payload, unacked)? != Arrival::Next {
        return Ok(()); // held for its predecessors, or a copy sent again after a rail failed
    }
    *n += drain(pending, on);
    on(Event::Am { src: p, handler, head, payload });
    *n += 1;
    peer.rel.delivered(unacked);
    while let Some(s) = peer.rel.release() {
        on(Event::Am { src: p, handler: s.handler, head: &s.head, payload: &s.payload });
        *n += 1;
    }
    if peer.ack_due.is_none() && peer.rel.acks_owed() > 0 {
        peer.ack_due = Some(Instant::now() + ACK_DELAY);
        owed.push(p);
    }
    Ok(())
}

/// Where a fragment body goes (see
/// [`Reliability::body_dst`](crate::reliable::Reliability::body_dst));
/// `None` once the body is to be dropped.
fn body_dst<'a>(peer: &'a Peer, body: &Body) -> Option<&'a Pieces> {
    if body.discard {
        return None;
    }
    peer.rel.body_dst(body.token, body.xid)
}
