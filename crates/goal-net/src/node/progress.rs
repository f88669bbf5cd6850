//! Progress: [`NetNode::poll`] and its helpers, the direct-read mode for
//! few connections, the timer and the periodic duties (pings, link health,
//! handshake deadlines). Apart from reading and writing because it decides
//! *when* they run (which connection, how often, what the timer wakes
//! for), not how.

use super::{NetNode, DIRECT_EPOLL_EVERY, DIRECT_MAX, LISTEN_TAG, TIMER_TAG};
use crate::conn::{Phase, TxItem};
use crate::event::{drain, Event};
use crate::sys::{self, ev};
use crate::wire::{self, Frame};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};


impl NetNode {
    /// Does everything that can be done now without waiting: accepts and
    /// handshakes, reads and dispatches, writes what is queued, checks links.
    /// Calls `on` for each event; returns how many.
    pub fn poll(&mut self, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = self.drain_pending(on);
        if self.direct_mode() {
            // Read each connection directly (a read that finds nothing
            // costs what an empty epoll_wait does); epoll now and then.
            // The connection that last had data every poll, the other one
            // every fourth.
            for i in 0..self.direct.len() {
                let c = self.direct[i];
                if (i == self.direct_hot || self.since_epoll.is_multiple_of(4)) && self.live(c) {
                    let got = self.read_conn(c, on);
                    if got > 0 {
                        self.direct_hot = i;
                    }
                    n += got;
                }
            }
            self.since_epoll += 1;
            if self.since_epoll < DIRECT_EPOLL_EVERY {
                self.ready.clear();
            } else {
                self.since_epoll = 0;
                if self.epoll.wait(&mut self.ready, 64, Some(Duration::ZERO)).is_err() {
                    self.ready.clear();
                }
            }
        } else if self.epoll.wait(&mut self.ready, 64, Some(Duration::ZERO)).is_err() {
            self.ready.clear();
        }
        let ready = std::mem::take(&mut self.ready);
        for &(tag, evs) in &ready {
            n += self.on_ready(tag, evs, on);
        }
        self.ready = ready;
        if !self.backlog.is_empty() {
            for c in std::mem::take(&mut self.backlog) {
                if self.live(c) {
                    n += self.consume(c, on);
                    self.send_frag_acks(c);
                }
            }
        }
        let now = Instant::now();
        if now >= self.next_tick {
            self.tick(now);
        }
        self.send_due_acks(now);
        n += self.drain_pending(on);
        self.arm_timer(now);
        n
    }

    /// Polls until `done()` holds or `timeout` passes, sleeping in the
    /// kernel on the epoll descriptor between polls. Returns whether `done()`
    /// held. For tests, benchmarks and shutdown; the executor sleeps on
    /// [`as_raw_fd`](Self::as_raw_fd) together with its other sources instead.
    pub fn poll_until(&mut self, timeout: Duration, on: &mut dyn FnMut(Event<'_>), mut done: impl FnMut(&NetNode) -> bool) -> bool {
        let end = Instant::now() + timeout;
        loop {
            self.poll(on);
            if done(self) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            if !self.wants_poll() {
                let mut ready = std::mem::take(&mut self.ready);
                let _ = self.epoll.wait(&mut ready, 1, Some((end - now).min(Duration::from_millis(50))));
                // The readiness is re-reported to the next poll (level-triggered).
                ready.clear();
                self.ready = ready;
            }
        }
    }

    /// Whether `poll` reads the connections directly: all are established,
    /// there are at most [`DIRECT_MAX`], and none waits to write (its
    /// writability comes from epoll).
    fn direct_mode(&mut self) -> bool {
        if !self.connected || self.handshaking > 0 || self.blocked > 0 {
            return false;
        }
        if self.direct_stale {
            self.direct_stale = false;
            self.direct.clear();
            self.direct_hot = 0;
            let mut up = self.peers.iter().flat_map(|p| p.up.iter().copied());
            self.direct.extend(up.by_ref().take(DIRECT_MAX + 1));
            if self.direct.len() > DIRECT_MAX {
                self.direct.clear();
            }
        }
        !self.direct.is_empty()
    }

    /// True when calling [`poll`](Self::poll) again at once has work: events
    /// wait for delivery, or data waits to be written.
    pub fn wants_poll(&self) -> bool {
        !self.pending.is_empty() || !self.backlog.is_empty() || self.blocked > 0
    }

    /// True when everything sent has been acknowledged by its receiver (or
    /// the receiver is lost): closing now loses nothing. A rank that
    /// finishes polls until this holds before it leaves, since its sends
    /// finish as soon as their bytes are queued.
    pub fn is_quiet(&self) -> bool {
        self.peers.iter().all(|p| p.lost.is_some() || (p.rel.am_out.is_empty() && p.rel.bulk_out.is_empty())) && !self.wants_poll()
    }

    /// An epoll descriptor that is readable whenever `poll` has something to
    /// do: a socket is readable, a full socket became writable, or a timed
    /// duty is due. Watch it for readability beside other sources.
    pub fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    fn drain_pending(&mut self, on: &mut dyn FnMut(Event<'_>)) -> usize {
        drain(&mut self.pending, on)
    }

    pub(super) fn on_ready(&mut self, tag: u64, evs: u32, on: &mut dyn FnMut(Event<'_>)) -> usize {
        if tag == TIMER_TAG {
            self.timer.clear();
            self.timer_armed = None;
            return 0;
        }
        if tag & LISTEN_TAG != 0 {
            self.accept_all((tag & !LISTEN_TAG) as usize);
            return 0;
        }
        let c = tag as usize;
        if !self.live(c) {
            return 0;
        }
        let mut n = 0;
        if matches!(self.conn(c).phase, Phase::Connecting) {
            if evs & (ev::OUT | ev::ERR | ev::HUP) != 0 {
                self.connect_finished(c);
            }
            return 0;
        }
        if !self.connected && self.conn(c).is_up() && evs & (ev::ERR | ev::HUP) != 0 {
            self.fail_conn(c, "closed while connecting".into());
            return 0;
        }
        if evs & (ev::IN | ev::ERR | ev::HUP | ev::RDHUP) != 0 {
            n += self.read_conn(c, on);
        }
        if evs & ev::OUT != 0 && self.live(c) {
            self.flush(c);
        }
        n
    }

    fn arm_timer(&mut self, now: Instant) {
        let mut due = if self.conns.iter().flatten().next().is_some() { Some(self.next_tick) } else { None };
        for &p in &self.owed {
            if self.body_coming(p as usize) {
                continue;
            }
            if let Some(t) = self.peers[p as usize].ack_due {
                due = Some(due.map_or(t, |d| d.min(t)));
            }
        }
        let Some(due) = due else { return };
        if self.timer_armed.is_none_or(|a| due < a) && self.timer.arm(due.saturating_duration_since(now)).is_ok() {
            self.timer_armed = Some(due);
        }
    }

    fn tick_interval(&self) -> Duration {
        (self.cfg.dead_after / 6).clamp(Duration::from_millis(20), Duration::from_millis(500))
    }

    /// The periodic duties: handshake deadlines, pings, link health.
    fn tick(&mut self, now: Instant) {
        self.next_tick = now + self.tick_interval();
        self.handshake_timeouts(now);
        let ping_after = self.cfg.dead_after / 3;
        let dead_ms = self.cfg.dead_after.as_millis() as u32;
        for c in 0..self.conns.len() {
            let Some(conn) = &mut self.conns[c] else { continue };
            if !conn.is_up() {
                continue;
            }
            if now.duration_since(conn.last_send) >= ping_after && conn.tx.is_empty() {
                let mut b = Vec::new();
                wire::encode(&Frame::Ping, &mut b);
                conn.push(TxItem::Own(b));
                self.flush(c);
                if !self.live(c) {
                    continue;
                }
            }
            // Dead: data in flight, the retransmission timer has fired
            // (so the data is overdue, not just sent), and nothing at all
            // has been acknowledged for `dead_after`. A live peer's kernel
            // acknowledges even when its application does not poll (or
            // advertises a zero window, which leaves nothing unacknowledged),
            // so a slow peer never looks dead.
            match sys::tcp_health(self.conn(c).fd()) {
                Ok(h) if h.unacked > 0 && h.retransmits > 0 && h.last_ack_recv_ms >= dead_ms => {
                    let why = format!("the link acknowledged nothing for {} ms with data in flight (link down?)", h.last_ack_recv_ms);
                    self.fail_conn(c, why);
                }
                Ok(_) => {}
                Err(e) => self.fail_conn(c, format!("TCP_INFO: {e}")),
            }
        }
    }

    pub(super) fn handshake_timeouts(&mut self, now: Instant) {
        for c in 0..self.conns.len() {
            let Some(conn) = &self.conns[c] else { continue };
            if conn.is_up() || conn.deadline > now {
                continue;
            }
            let why = format!("no handshake within {:?}", self.handshake_timeout());
            self.fail_conn(c, why);
        }
    }
}
