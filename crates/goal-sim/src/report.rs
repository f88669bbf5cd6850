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
    /// One line per leftover, the first of each kind: `rank R: ...`.
    pub lines: Vec<String>,
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "the schedule cannot finish: {} receive(s) never matched, {} message(s) never received, {} operation(s) never started",
            self.unmatched_recvs, self.unreceived_msgs, self.blocked
        )?;
        for l in &self.lines {
            writeln!(f, "  {l}")?;
        }
        let named = self.lines.len() as u64;
        let all = self.unmatched_recvs + self.unreceived_msgs + self.blocked;
        if all > named {
            writeln!(f, "  ... and {} more", all - named)?;
        }
        Ok(())
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

/// `op #i (send 8b to rank 3 tag 0)`.
pub(crate) fn describe(p: &Program, rank: u32, op: u32) -> String {
    let s = p.op(rank, op);
    let a = s.attr;
    match a.kind {
        Kind::Send => format!("op #{op} (send {}b to rank {} {})", a.size, s.peer, tag(a.tag)),
        Kind::Recv => format!("op #{op} (recv {}b from {} {})", a.size, peer(s.peer), tag(a.tag)),
        Kind::Calc => format!("op #{op} (calc {})", a.size),
    }
}

pub(crate) fn leftover<O: crate::Observer>(e: &Engine<'_, O>, max: usize) -> Left {
    let p = e.p;
    let mut left = Left::default();
    // Started and unfinished: posted receives, rendezvous sends unmatched.
    let mut open: HashSet<(u32, u32)> = HashSet::new();
    let mut lines = (Vec::new(), Vec::new(), Vec::new());
    for h in 0..p.num_ranks {
        for m in e.rq.iter(h) {
            left.unmatched_recvs += 1;
            open.insert((h, m.op));
            if lines.0.len() < max {
                lines.0.push(format!("rank {h}: {} was posted and no message matched it", describe(p, h, m.op)));
            }
        }
        for m in e.uq.iter(h) {
            left.unreceived_msgs += 1;
            let a = p.op(m.src, m.op).attr;
            let rndv = a.size > e.prm.s;
            if rndv {
                open.insert((m.src, m.op));
            }
            if lines.1.len() < max {
                let waits = if rndv { " (a rendezvous: the send waits for it)" } else { "" };
                lines.1.push(format!(
                    "rank {h}: a message of {}b {} from rank {} ({} there) arrived and no receive took it{waits}",
                    a.size,
                    tag(a.tag),
                    m.src,
                    describe(p, m.src, m.op)
                ));
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
            let edge = waits.iter().find(|(w, _)| *w == v).is_some_and(|(_, l)| l.iter().any(|&(u, _)| started(h, u)));
            if edge && lines.2.len() < max {
                let mut on = String::new();
                if let Some((_, l)) = waits.iter().find(|(w, _)| *w == v) {
                    for (k, &(u, st)) in l.iter().enumerate() {
                        let sep = if k == 0 { "" } else { ", " };
                        let what = if st { "to start" } else { "to finish" };
                        let _ = write!(on, "{sep}{} {what}", describe(p, h, u));
                    }
                }
                lines.2.push(format!("rank {h}: {} never started: it waits for {on}", describe(p, h, v)));
            }
        }
    }
    left.lines = lines.0;
    left.lines.append(&mut lines.1);
    left.lines.append(&mut lines.2);
    left
}

/// One operation on the critical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalStep {
    /// Its rank.
    pub rank: u32,
    /// Its index in the rank.
    pub op: u32,
    /// What it is (`op #i (send 8b to rank 3 tag 0)`).
    pub what: String,
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
        out.push(CriticalStep { rank, op, what: describe(p, rank, op), start: tr.start[g as usize], end: tr.end[g as usize] });
        g = tr.why[g as usize];
    }
    out
}
