//! The simulation loop: LogGOPSim's, event for event.
//!
//! Each host has, per cpu, the time its cpu is next free (`nexto`), and per
//! nic the time it may next send (`nextgs`) and receive (`nextgr`). Events
//! are taken in (time, stamp) order ([`crate::queue`]):
//!
//! * a **calc** of N units starts when its cpu is free and holds it N ns;
//! * a **send** of s bytes starts when its cpu and its nic are free; it
//!   holds the cpu `o + (s-1)O` and the nic `g + (s-1)G`, and its message
//!   arrives at the destination `o + L` after the start. Up to S bytes it is
//!   eager: it finishes at once. Above S it is a rendezvous: it finishes
//!   when the message meets its receive;
//! * a **message** is taken by the destination when the cpu (the number the
//!   *send* named: LogGOPSim's) and the nic there are free, holding the cpu
//!   `o + max((s-1)O, (s-1)G)` and the nic `g + (s-1)G`; it then completes
//!   the oldest matching posted receive, or waits in the unexpected queue;
//! * a **receive** starts when it is ready (it takes no resource) and
//!   completes at once from the unexpected queue, or is posted.
//!
//! When a rendezvous completes, the sender's cpu and nic are moved up to
//! the time of the match. Arithmetic is LogGOPSim's: unsigned 64-bit,
//! wrapping (so a 0-byte message charges `(0-1)*G`, as it does there).
//!
//! After each event, the operations it made ready are queued host by host
//! (lowest host first), sends before receives before calcs, and otherwise
//! in the order they were released: LogGOPSim sorts them by kind with
//! `std::sort`, which keeps that order for up to 16 operations and not
//! beyond; goal keeps it always (docs/sim.md).

use crate::program::{Kind, Program, START};
use crate::queue::{Event, Queue, MSG};
use crate::matchq::Lists;
use crate::{Activity, Params, Resource, What};

/// No operation (global index).
pub(crate) const NONE: u32 = u32::MAX;

/// What the critical path needs, kept only on request.
#[derive(Debug, Default)]
pub(crate) struct Trail {
    /// Per operation (global index): the operation whose event decided when
    /// it started or finished, last.
    pub why: Vec<u32>,
    /// Per send: what decided when its message was taken (the send, or the
    /// operation holding the destination's cpu or nic).
    pub msg_why: Vec<u32>,
    /// Per operation: when it started and finished.
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// Per cpu slot: the operation that last set its `nexto`.
    pub cpu_holder: Vec<u32>,
    /// Per nic slot: the operations that last set `nextgs` and `nextgr`.
    pub nic_send_holder: Vec<u32>,
    pub nic_recv_holder: Vec<u32>,
}

/// The state of a simulation.
pub(crate) struct Engine<'p, O: crate::Observer> {
    pub p: &'p Program,
    pub prm: Params,
    pub obs: O,
    pub pending: Vec<u32>,
    /// Per host, one slot of `stride` times, so that a host's clocks share
    /// a cache line: each cpu's next free time (`nexto`), then each nic's
    /// next send (`nextgs`), then each nic's next receive (`nextgr`).
    pub clock: Vec<u64>,
    pub stride: usize,
    pub rq: Lists,
    pub uq: Lists,
    pub queue: Queue,
    stamp: u64,
    /// Operations released by the current event: (host, op).
    ready: Vec<(u32, u32)>,
    /// The operations without prerequisites, queued lazily (see `start`).
    init: Initial,
    pub events: u64,
    pub done: u64,
    pub trail: Option<Trail>,
}

impl<'p, O: crate::Observer> Engine<'p, O> {
    pub fn new(p: &'p Program, prm: Params, obs: O, trail: bool) -> Engine<'p, O> {
        let hosts = p.num_ranks as usize;
        let (nc, nn) = (p.ncpus as usize, p.nnics as usize);
        let trail = trail.then(|| Trail {
            why: vec![NONE; p.peer.len()],
            msg_why: vec![NONE; p.peer.len()],
            start: vec![0; p.peer.len()],
            end: vec![0; p.peer.len()],
            cpu_holder: vec![NONE; hosts * (nc + 2 * nn)],
            nic_send_holder: vec![NONE; hosts * (nc + 2 * nn)],
            nic_recv_holder: vec![NONE; hosts * (nc + 2 * nn)],
        });
        Engine {
            p,
            prm,
            obs,
            pending: p.npre.clone(),
            clock: vec![0; hosts * (nc + 2 * nn)],
            stride: nc + 2 * nn,
            rq: Lists::new(p.num_ranks),
            uq: Lists::new(p.num_ranks),
            queue: Queue::default(),
            stamp: 0,
            ready: Vec::new(),
            init: Initial::default(),
            events: 0,
            done: 0,
            trail,
        }
    }

    #[inline]
    fn global(&self, host: u32, op: u32) -> u32 {
        self.p.op_base[host as usize] + op
    }

    #[inline]
    fn attr(&self, host: u32, op: u32) -> crate::program::Attr {
        let g = self.global(host, op) as usize;
        self.p.attrs[self.p.attr[g] as usize]
    }

    #[inline]
    fn cpu(&self, host: u32, cpu: u8) -> usize {
        host as usize * self.stride + cpu as usize
    }

    /// The receive side of nic slot `n` (`nic` gives the send side).
    #[inline]
    fn gr(&self, n: usize) -> usize {
        n + self.p.nnics as usize
    }

    /// The times each cpu of `host` is next free.
    pub fn cpu_times(&self, host: u32) -> &[u64] {
        let a = host as usize * self.stride;
        &self.clock[a..a + self.p.ncpus as usize]
    }

    #[inline]
    fn nic(&self, host: u32, nic: u8) -> usize {
        host as usize * self.stride + self.p.ncpus as usize + nic as usize
    }

    /// Releases the successors of `op` that wait for its start (`start`)
    /// or its end.
    #[inline]
    fn release(&mut self, host: u32, op: u32, start: bool) {
        let (a, b) = self.p.succ_range(host, op);
        let base = self.p.op_base[host as usize] as usize;
        for k in a..b {
            let e = self.p.edges[k];
            if (e & START != 0) != start {
                continue;
            }
            let t = e & !START;
            let c = &mut self.pending[base + t as usize];
            *c -= 1;
            if *c == 0 {
                self.ready.push((host, t));
                if let Some(tr) = &mut self.trail {
                    tr.why[base + t as usize] = (base as u32).wrapping_add(op);
                }
            }
        }
    }

    fn started(&mut self, host: u32, op: u32, t: u64) {
        if let Some(tr) = &mut self.trail {
            let g = (self.p.op_base[host as usize] + op) as usize;
            tr.start[g] = t;
            tr.end[g] = t;
        }
        self.release(host, op, true);
    }

    fn finished(&mut self, host: u32, op: u32, t: u64, cause: Option<u32>) {
        if let Some(tr) = &mut self.trail {
            let g = (self.p.op_base[host as usize] + op) as usize;
            tr.end[g] = t;
            if let Some(c) = cause {
                tr.why[g] = c;
            }
        }
        self.done += 1;
        self.release(host, op, false);
    }

    pub(crate) fn next_stamp(&mut self) -> u64 {
        let s = self.stamp;
        self.stamp += 1;
        s
    }

    /// Counts the operations without prerequisites: LogGOPSim queues them
    /// all at time 0 before the first event, host by host, and numbers
    /// them first. Here they are handed out host by host as the loop asks
    /// (`next`), with those numbers, and never held all at once: a
    /// Schedgen file has most of its receives among them (twenty million
    /// at a million ranks).
    pub fn start(&mut self) {
        let roots = self.pending.iter().filter(|&&c| c == 0).count() as u64;
        self.stamp = roots;
    }

    /// The next event: the next initial operation while there are some
    /// (time 0 and the smallest stamps: they come before anything queued),
    /// then the queue's.
    #[inline]
    fn next(&mut self) -> Option<Event> {
        if self.init.host < self.p.num_ranks || self.init.pos < self.init.ops.len() {
            if let Some(e) = self.next_initial() {
                return Some(e);
            }
        }
        self.queue.pop()
    }

    fn next_initial(&mut self) -> Option<Event> {
        while self.init.pos == self.init.ops.len() {
            if self.init.host >= self.p.num_ranks {
                return None;
            }
            let h = self.init.host;
            self.init.host += 1;
            self.init.ops.clear();
            self.init.pos = 0;
            let (a, b) = (self.p.op_base[h as usize], self.p.op_base[h as usize + 1]);
            let mut ops = std::mem::take(&mut self.init.ops);
            ops.extend((a..b).filter(|&g| self.p.npre[g as usize] == 0).map(|g| g - a));
            ops.sort_by_key(|&op| self.attr(h, op).kind);
            self.init.ops = ops;
            self.init.cur = h;
        }
        let op = self.init.ops[self.init.pos];
        self.init.pos += 1;
        let ts = self.init.stamp;
        self.init.stamp += 1;
        Some(Event { time: 0, ts, host: self.init.cur, op })
    }

    /// Queues the operations released by the last event.
    fn flush(&mut self) {
        if self.ready.is_empty() {
            return;
        }
        let mut ready = std::mem::take(&mut self.ready);
        if ready.len() > 1 {
            // Stable: within a host and kind, the order of release.
            ready.sort_by_key(|&(h, op)| (h, self.attr(h, op).kind));
        }
        for &(h, op) in &ready {
            let a = self.attr(h, op);
            let c = self.clock[self.cpu(h, a.cpu)];
            let time = match a.kind {
                Kind::Send => c.max(self.clock[self.nic(h, a.nic)]),
                Kind::Recv | Kind::Calc => c,
            };
            let ts = self.next_stamp();
            self.queue.push(Event { time, ts, host: h, op });
        }
        ready.clear();
        self.ready = ready;
    }

    /// Runs until no event is left.
    pub fn run(&mut self) {
        while let Some(e) = self.next() {
            self.events += 1;
            if e.is_msg() {
                self.message(e);
            } else {
                match self.attr(e.host, e.op).kind {
                    Kind::Calc => self.calc(e),
                    Kind::Send => self.send(e),
                    Kind::Recv => self.recv(e),
                }
            }
            self.flush();
        }
    }

    /// Puts `e` back for `time`, keeping its stamp; `blocker` held the
    /// resource it waits for.
    fn retry(&mut self, mut e: Event, time: u64, blocker: u32) {
        e.time = time;
        if blocker != NONE {
            let g = self.global(e.host, e.op) as usize;
            if let Some(tr) = &mut self.trail {
                if e.is_msg() {
                    tr.msg_why[g] = blocker;
                } else {
                    tr.why[g] = blocker;
                }
            }
        }
        self.queue.push(e);
    }

    fn calc(&mut self, e: Event) {
        let (h, t) = (e.host, e.time);
        let a = self.attr(h, e.op);
        let c = self.cpu(h, a.cpu);
        if self.clock[c] > t {
            let blocker = self.trail.as_ref().map_or(NONE, |tr| tr.cpu_holder[c]);
            return self.retry(e, self.clock[c], blocker);
        }
        let end = t.wrapping_add(a.size);
        self.clock[c] = end;
        self.hold_cpu(c, h, e.op);
        self.started(h, e.op, t);
        self.finished(h, e.op, end, None);
        self.obs.activity(&Activity { rank: h, op: e.op, what: What::Calc, start: t, end, peer: None, bytes: a.size, resource: Resource::Cpu(a.cpu as u32) });
    }

    fn hold_cpu(&mut self, c: usize, h: u32, op: u32) {
        if self.trail.is_some() {
            let g = self.global(h, op);
            if let Some(tr) = &mut self.trail {
                tr.cpu_holder[c] = g;
            }
        }
    }

    fn send(&mut self, e: Event) {
        let (h, t) = (e.host, e.time);
        let a = self.attr(h, e.op);
        let (c, n) = (self.cpu(h, a.cpu), self.nic(h, a.nic));
        let free = self.clock[c].max(self.clock[n]);
        if free > t {
            let blocker = self.trail.as_ref().map_or(NONE, |tr| if self.clock[c] >= self.clock[n] { tr.cpu_holder[c] } else { tr.nic_send_holder[n] });
            return self.retry(e, free, blocker);
        }
        let prm = self.prm;
        let s1 = a.size.wrapping_sub(1);
        let g = self.global(h, e.op);
        let peer = self.p.peer[g as usize];
        self.started(h, e.op, t);
        let cpu_end = t.wrapping_add(prm.o).wrapping_add(per_byte(s1, prm.big_o_ps));
        let nic_end = t.wrapping_add(prm.g).wrapping_add(per_byte(s1, prm.big_g_ps));
        self.clock[c] = cpu_end;
        self.clock[n] = nic_end;
        self.hold_cpu(c, h, e.op);
        if let Some(tr) = &mut self.trail {
            tr.nic_send_holder[n] = g;
            tr.msg_why[g as usize] = g;
        }
        let arrive = t.wrapping_add(prm.o).wrapping_add(prm.l);
        let ts = self.next_stamp() | MSG;
        self.queue.push(Event { time: arrive, ts, host: h, op: e.op });
        if a.size <= prm.s {
            self.finished(h, e.op, t, None);
        }
        let o = &mut self.obs;
        o.activity(&Activity { rank: h, op: e.op, what: What::Send, start: t, end: cpu_end.max(t), peer: Some(peer), bytes: a.size, resource: Resource::Cpu(a.cpu as u32) });
        o.activity(&Activity { rank: h, op: e.op, what: What::Send, start: t, end: nic_end.max(t), peer: Some(peer), bytes: a.size, resource: Resource::Nic(a.nic as u32) });
        let wire = t.wrapping_add(prm.o);
        o.activity(&Activity { rank: h, op: e.op, what: What::Transfer, start: wire, end: arrive.max(wire), peer: Some(peer), bytes: a.size, resource: Resource::Network });
    }

    /// A rendezvous send (`op` of `host`) meets its receive at `t`: it
    /// finishes, and the sender's cpu and nic are moved up to `t`.
    fn rendezvous(&mut self, host: u32, op: u32, cpu: u8, nic: u8, t: u64, cause: u32) {
        let (c, n) = (self.cpu(host, cpu), self.nic(host, nic));
        self.finished(host, op, t, Some(cause));
        if self.clock[c] < t {
            self.clock[c] = t;
        }
        if self.clock[n] < t {
            self.clock[n] = t;
        }
    }

    fn recv(&mut self, e: Event) {
        let (h, t) = (e.host, e.time);
        let a = self.attr(h, e.op);
        let g = self.global(h, e.op);
        let src = self.p.peer[g as usize];
        self.started(h, e.op, t);
        match self.uq.take(h, src, a.tag) {
            Some(m) => {
                if a.size > self.prm.s {
                    // LogGOPSim moves the sender's cpu and nic named by the *receive*.
                    self.rendezvous(m.src, m.op, a.cpu, a.nic, t, g);
                }
                self.finished(h, e.op, t, None);
                self.obs.activity(&Activity { rank: h, op: e.op, what: What::Recv, start: t, end: t, peer: Some(m.src), bytes: a.size, resource: Resource::Cpu(a.cpu as u32) });
            }
            None => self.rq.push(h, src, a.tag, e.op),
        }
    }

    fn message(&mut self, e: Event) {
        let (from, t) = (e.host, e.time);
        let sg = self.global(from, e.op);
        let h = self.p.peer[sg as usize];
        let a = self.attr(from, e.op);
        let (c, n) = (self.cpu(h, a.cpu), self.nic(h, a.nic));
        let free = self.clock[c].max(self.clock[self.gr(n)]);
        if free > t {
            let blocker = self.trail.as_ref().map_or(NONE, |tr| if self.clock[c] >= self.clock[self.gr(n)] { tr.cpu_holder[c] } else { tr.nic_recv_holder[n] });
            return self.retry(e, free, blocker);
        }
        let prm = self.prm;
        let s1 = a.size.wrapping_sub(1);
        let cpu_end = t.wrapping_add(prm.o).wrapping_add(per_byte(s1, prm.big_o_ps).max(per_byte(s1, prm.big_g_ps)));
        let nic_end = t.wrapping_add(prm.g).wrapping_add(per_byte(s1, prm.big_g_ps));
        self.clock[c] = cpu_end;
        let r = self.gr(n);
        self.clock[r] = nic_end;
        let matched = self.rq.take(h, from, a.tag);
        let holder = match matched {
            Some(m) => self.global(h, m.op),
            None => self.global(from, e.op),
        };
        if let Some(tr) = &mut self.trail {
            tr.cpu_holder[c] = holder;
            tr.nic_recv_holder[n] = holder;
        }
        let op = match matched {
            Some(m) => {
                if a.size > prm.s {
                    self.rendezvous(from, e.op, a.cpu, a.nic, t, holder);
                }
                let why = self.trail.as_ref().map_or(NONE, |tr| tr.msg_why[sg as usize]);
                self.finished(h, m.op, cpu_end, Some(why));
                m.op
            }
            None => {
                self.uq.push(h, from, a.tag, e.op);
                u32::MAX
            }
        };
        let o = &mut self.obs;
        o.activity(&Activity { rank: h, op, what: What::Recv, start: t, end: cpu_end.max(t), peer: Some(from), bytes: a.size, resource: Resource::Cpu(a.cpu as u32) });
        o.activity(&Activity { rank: h, op, what: What::Recv, start: t, end: nic_end.max(t), peer: Some(from), bytes: a.size, resource: Resource::Nic(a.nic as u32) });
    }
}

/// The operations without prerequisites not yet handed out: hosts from
/// `host` on, and `ops[pos..]` of host `cur`, numbered from `stamp`.
#[derive(Debug, Default)]
struct Initial {
    host: u32,
    cur: u32,
    ops: Vec<u32>,
    pos: usize,
    stamp: u64,
}

/// `s1` bytes at `ps` picoseconds each, in whole ns: exactly LogGOPSim's
/// wrapping `s1 * G` for a whole number of ns per byte (`s1` is `size - 1`,
/// all ones for an empty message), rounded down otherwise.
#[inline]
fn per_byte(s1: u64, ps: u64) -> u64 {
    if ps.is_multiple_of(1000) {
        s1.wrapping_mul(ps / 1000)
    } else if s1 == u64::MAX {
        // An empty message: LogGOPSim's -G, whole ns.
        (ps / 1000).wrapping_neg()
    } else {
        (s1 as u128 * ps as u128 / 1000) as u64
    }
}
