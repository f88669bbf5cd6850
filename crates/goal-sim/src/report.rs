//! What a simulation reports beyond the finish times: what was left when
//! no event remained ([`Left`]), and the critical path ([`CriticalStep`]).
//!
//! When the event queue runs dry every operation that became ready has
//! started, so what is left is exactly: receives posted and never matched
//! (the posted queues), messages that arrived and were never received (the
//! unexpected queues; their sends are unfinished too if they went by
//! rendezvous), and operations whose prerequisites never all finished. The
//! last are counted, and those that wait on an operation that started (the
//! edge of what is stuck) are named with the prerequisites they wait for.

use std::collections::HashSet;
use std::fmt::Write;

use crate::engine::{Engine, Trail, NONE};
use crate::program::{Kind, Program, ANY, START};

/// What could not finish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Left {
    /// Receives posted and never matched.
    pub unmatched_recvs: u64,
    /// Messages that arrived and were never received.
    pub unreceived_msgs: u64,
    /// Operations that never started (a prerequisite never finished).
    pub blocked: u64,
    /// The first leftovers of each kind, in that order.
    pub items: Vec<LeftItem>,
}

/// One leftover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftItem {
    /// Receive `op` of `rank` was posted and no message matched it.
    Posted {
        /// Its rank.
        rank: u32,
        /// Its index in the rank.
        op: u32,
    },
    /// A message from send `op` of `from` arrived at `rank` and no receive
    /// took it; `rendezvous`: the send waits for it.
    Unreceived {
        /// Where it arrived.
        rank: u32,
        /// Its sender.
        from: u32,
        /// The send, on `from`.
        op: u32,
        /// Above S bytes: the send is unfinished too.
        rendezvous: bool,
    },
    /// Operation `op` of `rank` never started: it waits for `on` (index,
    /// and whether it waits for the start only) of the same rank, at least
    /// one of which started and never finished.
    Blocked {
        /// Its rank.
        rank: u32,
        /// Its index in the rank.
        op: u32,
        /// What it waits for.
        on: Vec<(u32, bool)>,
    },
}

/// A name for operation (rank, index), such as its label in the file.
pub type Names<'a> = &'a dyn Fn(u32, u32) -> Option<String>;

impl Left {
    /// The report: a summary line, then one line per item (`rank R: ...`),
    /// operations named by `names` where it knows them, by index otherwise.
    pub fn render(&self, p: &Program, names: Names<'_>) -> String {
        let mut out = format!(
            "the schedule cannot finish: {} receive(s) never matched, {} message(s) never received, {} operation(s) never started\n",
            self.unmatched_recvs, self.unreceived_msgs, self.blocked
        );
        let d = |rank: u32, op: u32| describe(p, rank, op, names(rank, op).as_deref());
        for it in &self.items {
            let _ = match it {
                LeftItem::Posted { rank, op } => writeln!(out, "  rank {rank}: {} was posted and no message matched it", d(*rank, *op)),
                LeftItem::Unreceived { rank, from, op, rendezvous } => {
                    let a = p.op(*from, *op).attr;
                    let waits = if *rendezvous { " (a rendezvous: the send waits for it)" } else { "" };
                    writeln!(out, "  rank {rank}: a message of {}b {} from rank {from} ({} there) arrived and no receive took it{waits}", a.size, tag(a.tag), d(*from, *op))
                }
                LeftItem::Blocked { rank, op, on } => {
                    let list: Vec<String> = on.iter().map(|&(u, st)| format!("{} {}", d(*rank, u), if st { "to start" } else { "to finish" })).collect();
                    writeln!(out, "  rank {rank}: {} never started: it waits for {}", d(*rank, *op), list.join(", "))
                }
            };
        }
        let all = self.unmatched_recvs + self.unreceived_msgs + self.blocked;
        if all > self.items.len() as u64 {
            let _ = writeln!(out, "  ... and {} more", all - self.items.len() as u64);
        }
        out
    }

    /// Every operation the items name: (rank, index).
    pub fn ops(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for it in &self.items {
            match it {
                LeftItem::Posted { rank, op } => v.push((*rank, *op)),
                LeftItem::Unreceived { from, op, .. } => v.push((*from, *op)),
                LeftItem::Blocked { rank, op, on } => {
                    v.push((*rank, *op));
                    v.extend(on.iter().map(|&(u, _)| (*rank, u)));
                }
            }
        }
        v
    }
}

fn peer(p: u32) -> String {
    if p == ANY {
        "any rank".into()
    } else {
        format!("rank {p}")
    }
}

fn tag(t: u32) -> String {
    if t == ANY {
        "any tag".into()
    } else {
        format!("tag {t}")
    }
}

/// `l3 (send 8b to rank 3 tag 0)` with a name, `op #2 (send ...)` without.
pub fn describe(p: &Program, rank: u32, op: u32, name: Option<&str>) -> String {
    let s = p.op(rank, op);
    let a = s.attr;
    let who = name.map_or_else(|| format!("op #{op}"), str::to_string);
    match a.kind {
        Kind::Send => format!("{who} (send {}b to rank {} {})", a.size, s.peer, tag(a.tag)),
        Kind::Recv => format!("{who} (recv {}b from {} {})", a.size, peer(s.peer), tag(a.tag)),
        Kind::Calc => format!("{who} (calc {})", a.size),
    }
}

pub(crate) fn leftover<O: crate::Observer>(e: &Engine<'_, O>, max: usize) -> Left {
    let p = e.p;
    let mut left = Left::default();
    // Started and unfinished: posted receives, rendezvous sends unmatched.
    let mut open: HashSet<(u32, u32)> = HashSet::new();
    let mut items = (Vec::new(), Vec::new(), Vec::new());
    for h in 0..p.num_ranks {
        for m in e.rq.iter(h) {
            left.unmatched_recvs += 1;
            open.insert((h, m.op));
            if items.0.len() < max {
                items.0.push(LeftItem::Posted { rank: h, op: m.op });
            }
        }
        for m in e.uq.iter(h) {
            left.unreceived_msgs += 1;
            let rendezvous = p.op(m.src, m.op).attr.size > e.prm.s;
            if rendezvous {
                open.insert((m.src, m.op));
            }
            if items.1.len() < max {
                items.1.push(LeftItem::Unreceived { rank: h, from: m.src, op: m.op, rendezvous });
            }
        }
    }
    let finished = |h: u32, op: u32| e.pending[(p.op_base[h as usize] + op) as usize] == 0 && !open.contains(&(h, op));
    let started = |h: u32, op: u32| e.pending[(p.op_base[h as usize] + op) as usize] == 0;
    let mut waits: Vec<(u32, Vec<(u32, bool)>)> = Vec::new();
    for h in 0..p.num_ranks {
        let (a, b) = (p.op_base[h as usize], p.op_base[h as usize + 1]);
        if (a..b).all(|g| e.pending[g as usize] == 0) {
            continue;
        }
        waits.clear();
        for u in 0..b - a {
            let (x, y) = p.succ_range(h, u);
            for &edge in &p.edges[x..y] {
                let (v, on_start) = (edge & !START, edge & START != 0);
                let ok = if on_start { started(h, u) } else { finished(h, u) };
                if e.pending[(a + v) as usize] > 0 && !ok {
                    match waits.iter_mut().find(|(w, _)| *w == v) {
                        Some((_, l)) => l.push((u, on_start)),
                        None => waits.push((v, vec![(u, on_start)])),
                    }
                }
            }
        }
        for v in 0..b - a {
            if e.pending[(a + v) as usize] == 0 {
                continue;
            }
            left.blocked += 1;
            // Name only the operations waiting on one that started (the
            // edge of what is stuck); those behind them are counted.
            let on = waits.iter().find(|(w, _)| *w == v).map(|(_, l)| l.clone()).unwrap_or_default();
            if on.iter().any(|&(u, _)| started(h, u)) && items.2.len() < max {
                items.2.push(LeftItem::Blocked { rank: h, op: v, on });
            }
        }
    }
    left.items = items.0;
    left.items.append(&mut items.1);
    left.items.append(&mut items.2);
    left
}

/// One operation on the critical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalStep {
    /// Its rank.
    pub rank: u32,
    /// Its index in the rank ([`describe`] says what it is).
    pub op: u32,
    /// When it started and finished, in ns.
    pub start: u64,
    /// When it finished.
    pub end: u64,
}

/// The chain of operations that decided when `host` finished: from the
/// operation that last occupied its latest cpu, back through whatever
/// decided each one's time (the prerequisite that released it, the message
/// that completed it, or the operation that held the resource it waited
/// for), latest first.
/// `cpus` are the host's cpu times, its first cpu slot at `slot`.
pub(crate) fn critical_path(p: &Program, tr: &Trail, cpus: &[u64], slot: usize) -> Vec<CriticalStep> {
    let best = (0..cpus.len()).max_by_key(|&c| (cpus[c], std::cmp::Reverse(c))).unwrap_or(0);
    let mut g = tr.cpu_holder[slot + best];
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    while g != NONE && seen.insert(g) {
        let rank = (p.op_base.partition_point(|&b| b <= g) - 1) as u32;
        let op = g - p.op_base[rank as usize];
        out.push(CriticalStep { rank, op, start: tr.start[g as usize], end: tr.end[g as usize] });
        g = tr.why[g as usize];
    }
    out
}
