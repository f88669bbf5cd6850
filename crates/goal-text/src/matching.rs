//! Across ranks: is every send received somewhere, and every receive sent to?
//!
//! Counting, in memory bounded by what is unbalanced: one counter per
//! (source, destination, tag) triple, up by a send, down by a receive that
//! names both source and tag, removed when it returns to zero. Wildcard
//! receives (`from -1`, `tag -1`) are counted per destination and kind;
//! at the end they absorb the sends left over, by a maximum flow per
//! destination, so that a send is reported only if no assignment of
//! receives could take it.
//!
//! This is the count, not the order: that a schedule which balances also
//! matches at run time (a wildcard receive taking a message another
//! receive needed) is for `goal sim` and `goal run` to find.

use crate::hash::FxMap;
use crate::{Op, OpKind, Pos};

/// An unbalanced count, and where the last operation that unbalanced it is.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    /// Sends minus receives (receives only, for a wildcard).
    n: i64,
    line: u64,
    col: u32,
}

impl Count {
    fn bump(&mut self, by: i64, pos: Pos) {
        if self.n == 0 || (self.n > 0) == (by > 0) {
            self.line = pos.line;
            self.col = pos.col.min(u32::MAX as u64) as u32;
        }
        self.n += by;
    }
    fn pos(&self) -> Pos {
        Pos { line: self.line, col: self.col as u64 }
    }
}

/// A group of operations of one destination: two of (source, tag,
/// destination) and their count.
type Group = ((u32, u32), Count);

/// The counters.
#[derive(Default)]
pub(crate) struct Matcher {
    /// (source, destination, tag): sends minus exact receives.
    exact: FxMap<(u32, u32, u32), Count>,
    /// (destination, tag): receives `from -1` with that tag.
    any_src: FxMap<(u32, u32), Count>,
    /// (source, destination): receives from that source with `tag -1`.
    any_tag: FxMap<(u32, u32), Count>,
    /// destination: receives `from -1 tag -1`.
    any_both: FxMap<u32, Count>,
}

impl Matcher {
    /// Counts operation `op` of rank `rank`.
    pub fn add(&mut self, rank: u32, op: &Op) {
        match op.kind {
            OpKind::Send { to, tag, .. } => self.bump_exact((rank, to, tag), 1, op.pos),
            OpKind::Recv { from: Some(src), tag: Some(tag), .. } => self.bump_exact((src, rank, tag), -1, op.pos),
            OpKind::Recv { from: None, tag: Some(tag), .. } => self.any_src.entry((rank, tag)).or_default().bump(1, op.pos),
            OpKind::Recv { from: Some(src), tag: None, .. } => self.any_tag.entry((src, rank)).or_default().bump(1, op.pos),
            OpKind::Recv { from: None, tag: None, .. } => self.any_both.entry(rank).or_default().bump(1, op.pos),
            OpKind::Calc { .. } => {}
        }
    }

    fn bump_exact(&mut self, key: (u32, u32, u32), by: i64, pos: Pos) {
        use std::collections::hash_map::Entry;
        // One lookup: most counts return to zero at their first partner.
        match self.exact.entry(key) {
            Entry::Occupied(mut o) => {
                o.get_mut().bump(by, pos);
                if o.get().n == 0 {
                    o.remove();
                }
            }
            Entry::Vacant(v) => {
                v.insert(Count::default()).bump(by, pos);
            }
        }
    }

    /// The sends and receives left unmatched, in the order of the file:
    /// the first `max` as (where, message), and how many in all.
    pub fn finish(self, max: usize) -> (Vec<(Pos, String)>, u64) {
        let mut out = Vec::new();
        let Matcher { exact, any_src, any_tag, any_both } = self;
        let mut dests: Vec<u32> = any_src.keys().map(|k| k.0).chain(any_tag.keys().map(|k| k.1)).chain(any_both.keys().copied()).collect();
        dests.sort_unstable();
        dests.dedup();
        // Leftover sends to destinations with wildcard receives, by destination.
        let mut left: FxMap<u32, Vec<Group>> = FxMap::default();
        for (&(src, dst, tag), c) in &exact {
            if c.n < 0 {
                out.push((c.pos(), Unmatched::Recv { src: Some(src), dst, tag: Some(tag), n: -c.n }));
            } else if dests.binary_search(&dst).is_ok() {
                left.entry(dst).or_default().push(((src, tag), *c));
            } else {
                out.push((c.pos(), Unmatched::Send { src, dst, tag, n: c.n }));
            }
        }
        for dst in dests {
            let mut sends = left.remove(&dst).unwrap_or_default();
            sends.sort_by_key(|s| (s.1.line, s.1.col));
            let mut by_src: Vec<Group> = any_tag.iter().filter(|(k, _)| k.1 == dst).map(|(k, c)| (*k, *c)).collect();
            let mut by_tag: Vec<Group> = any_src.iter().filter(|(k, _)| k.0 == dst).map(|(k, c)| (*k, *c)).collect();
            by_src.sort_by_key(|s| (s.1.line, s.1.col));
            by_tag.sort_by_key(|s| (s.1.line, s.1.col));
            let flows = max_flow(&sends, &by_src, &by_tag);
            let mut both = any_both.get(&dst).copied().unwrap_or_default();
            for (i, ((src, tag), c)) in sends.iter().enumerate() {
                let mut rest = c.n - flows.sent[i];
                let take = rest.min(both.n);
                both.n -= take;
                rest -= take;
                if rest > 0 {
                    out.push((c.pos(), Unmatched::Send { src: *src, dst, tag: *tag, n: rest }));
                }
            }
            for (k, ((src, _), c)) in by_src.iter().enumerate() {
                let rest = c.n - flows.by_src[k];
                if rest > 0 {
                    out.push((c.pos(), Unmatched::Recv { src: Some(*src), dst, tag: None, n: rest }));
                }
            }
            for (k, ((_, tag), c)) in by_tag.iter().enumerate() {
                let rest = c.n - flows.by_tag[k];
                if rest > 0 {
                    out.push((c.pos(), Unmatched::Recv { src: None, dst, tag: Some(*tag), n: rest }));
                }
            }
            if both.n > 0 {
                out.push((both.pos(), Unmatched::Recv { src: None, dst, tag: None, n: both.n }));
            }
        }
        out.sort_by_key(|(p, _)| (p.line, p.col));
        let total = out.len() as u64;
        (out.into_iter().take(max).map(|(p, u)| (p, u.message())).collect(), total)
    }
}

/// A count left unbalanced.
enum Unmatched {
    /// `n` sends from `src` to `dst` with `tag`.
    Send { src: u32, dst: u32, tag: u32, n: i64 },
    /// `n` receives at `dst` from `src` with `tag` (`None`: -1).
    Recv { src: Option<u32>, dst: u32, tag: Option<u32>, n: i64 },
}

impl Unmatched {
    fn message(&self) -> String {
        match *self {
            Unmatched::Send { src, dst, tag, n } => format!(
                "rank {src} sends to rank {dst} with tag {tag} but no receive matches it ({n} such send(s) unmatched): expected a 'recv ... from {src} tag {tag}' (or -1 for either) in rank {dst}"
            ),
            Unmatched::Recv { src, dst, tag, n } => {
                let from = src.map_or("any rank".to_string(), |s| format!("rank {s}"));
                let with = tag.map_or("any tag".to_string(), |t| format!("tag {t}"));
                let send = match tag {
                    Some(t) => format!("'send ... to {dst} tag {t}'"),
                    None => format!("'send ... to {dst}'"),
                };
                let in_rank = src.map_or("some rank".to_string(), |s| format!("rank {s}"));
                format!("rank {dst} receives from {from} with {with} but no send is left to match it ({n} such receive(s) unmatched): expected a {send} in {in_rank}")
            }
        }
    }
}

/// How much of each group the flow used.
struct Flows {
    sent: Vec<i64>,
    by_src: Vec<i64>,
    by_tag: Vec<i64>,
}

/// Maximum flow from the send groups (source, tag) to the receive groups
/// that take them: "from source, any tag" and "from anyone, this tag".
/// Augmenting paths (Edmonds-Karp) on a graph of a few nodes per group.
fn max_flow(sends: &[Group], by_src: &[Group], by_tag: &[Group]) -> Flows {
    let (ns, na, nb) = (sends.len(), by_src.len(), by_tag.len());
    // Nodes: 0 source, 1..=ns sends, then by_src, then by_tag, then sink.
    let sink = 1 + ns + na + nb;
    let mut cap: Vec<Vec<(usize, i64, usize)>> = vec![Vec::new(); sink + 1]; // (to, capacity, index of reverse)
    let add = |cap: &mut Vec<Vec<(usize, i64, usize)>>, a: usize, b: usize, c: i64| {
        let (ra, rb) = (cap[b].len(), cap[a].len());
        cap[a].push((b, c, ra));
        cap[b].push((a, 0, rb));
    };
    for (i, ((src, tag), c)) in sends.iter().enumerate() {
        add(&mut cap, 0, 1 + i, c.n);
        for (k, ((s, _), _)) in by_src.iter().enumerate() {
            if s == src {
                add(&mut cap, 1 + i, 1 + ns + k, c.n);
            }
        }
        for (k, ((_, t), _)) in by_tag.iter().enumerate() {
            if t == tag {
                add(&mut cap, 1 + i, 1 + ns + na + k, c.n);
            }
        }
    }
    for (k, (_, c)) in by_src.iter().chain(by_tag).enumerate() {
        add(&mut cap, 1 + ns + k, sink, c.n);
    }
    loop {
        // Breadth-first search for a path with room.
        let mut prev: Vec<Option<(usize, usize)>> = vec![None; sink + 1];
        let mut queue = std::collections::VecDeque::from([0usize]);
        while let Some(u) = queue.pop_front() {
            for (e, &(v, c, _)) in cap[u].iter().enumerate() {
                if c > 0 && v != 0 && prev[v].is_none() {
                    prev[v] = Some((u, e));
                    queue.push_back(v);
                }
            }
        }
        if prev[sink].is_none() {
            break;
        }
        let mut push = i64::MAX;
        let mut v = sink;
        while let Some((u, e)) = prev[v] {
            push = push.min(cap[u][e].1);
            v = u;
        }
        let mut v = sink;
        while let Some((u, e)) = prev[v] {
            cap[u][e].1 -= push;
            let (to, _, r) = cap[u][e];
            cap[to][r].1 += push;
            v = u;
        }
    }
    // Flow on an edge is its reverse edge's capacity.
    let used = |cap: &Vec<Vec<(usize, i64, usize)>>, a: usize, b: usize| -> i64 {
        cap[b].iter().filter(|e| e.0 == a).map(|e| e.1).sum()
    };
    Flows {
        sent: (0..ns).map(|i| used(&cap, 0, 1 + i)).collect(),
        by_src: (0..na).map(|k| used(&cap, 1 + ns + k, sink)).collect(),
        by_tag: (0..nb).map(|k| used(&cap, 1 + ns + na + k, sink)).collect(),
    }
}
