//! What a drawing shows, before any geometry: the ranks drawn (all of them
//! up to a limit, else the first and last few and a note for the ones
//! folded between), their operations with a column each (the dependency
//! depth), their requires and irequires edges, and the messages between
//! drawn ranks, sends paired with receives.
//!
//! Pairing, as a schedule runs when messages come in order: a receive
//! that names its source and tag takes the sends of that source to it
//! with that tag one by one, in the order of their columns (and of the
//! file among equals), the earliest unpaired first; receives with `-1`
//! then take, in their order, the earliest unpaired send that fits. At run
//! time a wildcard can take another message where timing decides; the
//! drawing shows the order the file implies.
//!
//! Columns: an operation's column is one past the largest of its
//! prerequisites' (requires and irequires alike) and, for a receive, its
//! send's: read left to right, every arrow points right. A file whose
//! messages and dependencies together form a cycle (it could not finish)
//! is drawn with each rank's own dependencies only.

use std::collections::{BTreeMap, HashMap, VecDeque};

use goal_text::{OpKind, RankGraph};

/// One operation as drawn.
#[derive(Debug, Clone)]
pub(crate) struct DrawOp {
    pub kind: OpKind,
    /// Its label in the file, or `#i`.
    pub label: String,
    /// Its column (see the module's doc).
    pub col: u32,
    /// Its row within its rank's lane (operations of one column stack).
    pub row: u32,
}

/// One rank drawn.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    pub rank: u32,
    pub ops: Vec<DrawOp>,
    /// (prerequisite, target, irequires).
    pub deps: Vec<(u32, u32, bool)>,
    /// Rows its lane needs.
    pub rows: u32,
}

/// An operation: (lane index, op index).
pub(crate) type At = (usize, usize);

/// A drawing's content.
#[derive(Debug, Clone, Default)]
pub(crate) struct Model {
    /// `num_ranks` (or the ranks read).
    pub num_ranks: u32,
    pub lanes: Vec<Lane>,
    /// Messages between drawn ranks: (send, receive).
    pub messages: Vec<(At, At)>,
    /// Ranks not drawn, as a range, with their operation count, if any.
    pub folded: Option<(u32, u32, u64)>,
    /// Messages to or from a folded rank (not drawn as arrows).
    pub folded_messages: u64,
    /// The columns: one past the largest.
    pub cols: u32,
    /// Drawn with each rank's own dependencies only (see the module doc).
    pub local_columns: bool,
}

/// Collects the ranks of a file as they are read (see [`Collector::rank`]),
/// keeping only those to draw.
pub(crate) struct Collector {
    /// Draw every rank up to this many, else half of this from each end.
    max_ranks: u32,
    num_ranks: Option<u32>,
    lanes: Vec<Lane>,
    /// Sends from folded ranks to drawn ones, (source, destination, tag),
    /// and operations of folded ranks.
    folded_sends: Vec<(u32, u32, u32)>,
    folded_ops: u64,
    folded_ranks: Vec<u32>,
}

impl Collector {
    /// A collector for a file of `num_ranks` (if declared) that draws at most `max_ranks`.
    pub(crate) fn new(num_ranks: Option<u32>, max_ranks: u32) -> Collector {
        Collector { max_ranks: max_ranks.max(2), num_ranks, lanes: Vec::new(), folded_sends: Vec::new(), folded_ops: 0, folded_ranks: Vec::new() }
    }

    /// Whether rank `r` is drawn.
    fn drawn(&self, r: u32) -> bool {
        let n = self.num_ranks.unwrap_or(0);
        n <= self.max_ranks || r < self.max_ranks / 2 || r >= n - self.max_ranks / 2
    }

    /// One rank of the file, as goal-text hands it over.
    pub(crate) fn rank(&mut self, g: &RankGraph) {
        if !self.drawn(g.rank) {
            self.folded_ops += g.ops.len() as u64;
            self.folded_ranks.push(g.rank);
            for op in &g.ops {
                if let OpKind::Send { to, tag, .. } = op.kind {
                    if self.drawn(to) {
                        self.folded_sends.push((g.rank, to, tag));
                    }
                }
            }
            return;
        }
        let ops = (0..g.ops.len()).map(|i| DrawOp { kind: g.ops[i].kind, label: g.name(i), col: 0, row: 0 }).collect();
        let deps = g.deps.iter().map(|d| (d.prereq, d.target, d.on_start)).collect();
        self.lanes.push(Lane { rank: g.rank, ops, deps, rows: 1 });
    }

    /// The model: messages paired, columns and rows laid out.
    pub(crate) fn finish(self) -> Model {
        let mut m = Model { num_ranks: self.num_ranks.unwrap_or(self.lanes.len() as u32), lanes: self.lanes, ..Model::default() };
        if let (Some(&lo), Some(&hi)) = (self.folded_ranks.iter().min(), self.folded_ranks.iter().max()) {
            m.folded = Some((lo, hi, self.folded_ops));
        }
        let local = local_columns(&m.lanes);
        let (messages, to_folded) = pair(&m.lanes, &local, &self.folded_sends, |r| m.folded.is_some_and(|(lo, hi, _)| (lo..=hi).contains(&r)));
        m.messages = messages;
        m.folded_messages = to_folded;
        let cols = match global_columns(&m.lanes, &m.messages) {
            Some(c) => c,
            None => {
                m.local_columns = true;
                local
            }
        };
        for (lane, cols) in m.lanes.iter_mut().zip(cols) {
            let mut used: HashMap<u32, u32> = HashMap::new();
            for (op, c) in lane.ops.iter_mut().zip(cols) {
                op.col = c;
                let row = used.entry(c).or_insert(0);
                op.row = *row;
                *row += 1;
                m.cols = m.cols.max(c + 1);
            }
            lane.rows = used.values().copied().max().unwrap_or(1).max(1);
        }
        m
    }
}

/// Each lane's columns by its own dependencies (a rank's graph is acyclic:
/// goal-text checked it).
fn local_columns(lanes: &[Lane]) -> Vec<Vec<u32>> {
    lanes.iter().map(|l| longest_paths(l.ops.len(), l.deps.iter().map(|&(p, t, _)| (p as usize, t as usize)), &[]).unwrap_or_else(|| vec![0; l.ops.len()])).collect()
}

/// Columns over every drawn operation, messages included; `None` on a cycle.
fn global_columns(lanes: &[Lane], messages: &[(At, At)]) -> Option<Vec<Vec<u32>>> {
    let base: Vec<usize> = lanes.iter().scan(0, |n, l| {
        let b = *n;
        *n += l.ops.len();
        Some(b)
    }).collect();
    let n = lanes.iter().map(|l| l.ops.len()).sum();
    let edges = lanes.iter().zip(&base).flat_map(|(l, &b)| l.deps.iter().map(move |&(p, t, _)| (b + p as usize, b + t as usize)));
    let msgs: Vec<(usize, usize)> = messages.iter().map(|&((sl, so), (rl, ro))| (base[sl] + so, base[rl] + ro)).collect();
    let flat = longest_paths(n, edges, &msgs)?;
    Some(lanes.iter().zip(&base).map(|(l, &b)| flat[b..b + l.ops.len()].to_vec()).collect())
}

/// Longest path from a root to each of `n` nodes over `edges` and `more`
/// (Kahn's order); `None` if they hold a cycle.
fn longest_paths(n: usize, edges: impl Iterator<Item = (usize, usize)>, more: &[(usize, usize)]) -> Option<Vec<u32>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0u32; n];
    for (p, t) in edges.chain(more.iter().copied()) {
        out[p].push(t);
        indeg[t] += 1;
    }
    let mut depth = vec![0u32; n];
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop_front() {
        seen += 1;
        for &t in &out[i] {
            depth[t] = depth[t].max(depth[i] + 1);
            indeg[t] -= 1;
            if indeg[t] == 0 {
                ready.push_back(t);
            }
        }
    }
    (seen == n).then_some(depth)
}

/// A message's (source, destination, tag).
type Key = (u32, u32, u32);

/// A send waiting for its receive: its column, and where it is drawn
/// (`None`: a folded rank's).
type Waiting = (u32, Option<At>);

/// A receive to pair: column, where, source and tag (`None`: -1), rank.
type Receive = (u32, At, Option<u32>, Option<u32>, u32);

/// Pairs the sends and receives of the drawn lanes (see the module doc),
/// ordered by `cols`; returns the pairs and how many messages go to or
/// come from folded ranks (`folded(rank)`).
fn pair(lanes: &[Lane], cols: &[Vec<u32>], folded_sends: &[Key], folded: impl Fn(u32) -> bool) -> (Vec<(At, At)>, u64) {
    // Sends by (source, destination, tag), in order: Some(at) for a drawn
    // one, None for a folded rank's.
    let mut sends: BTreeMap<Key, Vec<Waiting>> = BTreeMap::new();
    let mut to_folded = 0u64;
    for (li, l) in lanes.iter().enumerate() {
        for (oi, op) in l.ops.iter().enumerate() {
            if let OpKind::Send { to, tag, .. } = op.kind {
                if folded(to) {
                    to_folded += 1;
                } else {
                    sends.entry((l.rank, to, tag)).or_default().push((cols[li][oi], Some((li, oi))));
                }
            }
        }
    }
    for &(s, d, t) in folded_sends {
        sends.entry((s, d, t)).or_default().push((0, None));
    }
    let mut queues: BTreeMap<Key, VecDeque<Waiting>> = sends
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by_key(|&(c, at)| (c, at));
            (k, v.into())
        })
        .collect();
    let mut recvs: Vec<Receive> = Vec::new();
    for (li, l) in lanes.iter().enumerate() {
        for (oi, op) in l.ops.iter().enumerate() {
            if let OpKind::Recv { from, tag, .. } = op.kind {
                recvs.push((cols[li][oi], (li, oi), from, tag, l.rank));
            }
        }
    }
    recvs.sort_by_key(|r| (r.0, r.1));
    let mut pairs = Vec::new();
    let mut take = |sent: Option<At>, at: At, pairs: &mut Vec<(At, At)>| match sent {
        Some(s) => pairs.push((s, at)),
        None => to_folded += 1,
    };
    // Exact receives first, then the wildcards take what is left.
    for &(_, at, from, tag, me) in recvs.iter().filter(|r| r.2.is_some() && r.3.is_some()) {
        if let Some((_, sent)) = queues.get_mut(&(from.unwrap_or(0), me, tag.unwrap_or(0))).and_then(|q| q.pop_front()) {
            take(sent, at, &mut pairs);
        }
    }
    for &(_, at, from, tag, me) in recvs.iter().filter(|r| r.2.is_none() || r.3.is_none()) {
        let best = queues
            .iter()
            .filter(|(&(s, d, t), q)| d == me && from.is_none_or(|f| f == s) && tag.is_none_or(|g| g == t) && !q.is_empty())
            .min_by_key(|(_, q)| q.front().map(|&(c, _)| c))
            .map(|(&k, _)| k);
        if let Some((_, sent)) = best.and_then(|k| queues.get_mut(&k)).and_then(|q| q.pop_front()) {
            take(sent, at, &mut pairs);
        }
    }
    pairs.sort();
    (pairs, to_folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str, max_ranks: u32) -> Model {
        let mut c: Option<Collector> = None;
        let header = goal_text::parse(
            text.as_bytes(),
            "t",
            |g| c.get_or_insert_with(|| Collector::new(text.split_whitespace().nth(1).and_then(|n| n.parse().ok()), max_ranks)).rank(g),
            |e| panic!("{e}"),
        );
        assert!(header.num_ranks.is_some());
        c.unwrap().finish()
    }

    #[test]
    fn a_receive_is_placed_after_its_send_and_paired_with_it() {
        let m = model("num_ranks 2\nrank 0 {\nl1: calc 5\nl2: send 8b to 1 tag 3\nl2 requires l1\n}\nrank 1 {\nl1: recv 8b from 0 tag 3\n}\n", 32);
        assert_eq!(m.messages, vec![((0, 1), (1, 0))]);
        assert_eq!((m.lanes[0].ops[1].col, m.lanes[1].ops[0].col), (1, 2));
        assert_eq!(m.cols, 3);
        assert!(!m.local_columns);
    }

    #[test]
    fn sends_pair_in_order_and_wildcards_take_what_is_left() {
        let text = "num_ranks 3\nrank 0 {\nl1: send 1b to 2 tag 1\nl2: send 2b to 2 tag 1\nl2 requires l1\n}\nrank 1 {\nl1: send 3b to 2 tag 9\n}\nrank 2 {\nl1: recv 1b from 0 tag 1\nl2: recv 2b from 0 tag 1\nl3: recv 3b from -1 tag -1\nl2 requires l1\n}\n";
        let m = model(text, 32);
        assert_eq!(m.messages, vec![((0, 0), (2, 0)), ((0, 1), (2, 1)), ((1, 0), (2, 2))]);
    }

    #[test]
    fn beyond_the_limit_the_middle_ranks_fold() {
        let mut text = String::new();
        goal_text::generate::dissemination(64, 0..64, &mut text);
        let m = model(&text, 8);
        let drawn: Vec<u32> = m.lanes.iter().map(|l| l.rank).collect();
        assert_eq!(drawn, [0, 1, 2, 3, 60, 61, 62, 63]);
        assert_eq!(m.folded.map(|f| (f.0, f.1)), Some((4, 59)));
        assert!(m.folded_messages > 0);
        // Every drawn send is paired or goes to a folded rank.
        let sends: usize = m.lanes.iter().flat_map(|l| &l.ops).filter(|o| matches!(o.kind, OpKind::Send { .. })).count();
        let recvs: usize = m.lanes.iter().flat_map(|l| &l.ops).filter(|o| matches!(o.kind, OpKind::Recv { .. })).count();
        assert_eq!((sends + recvs) as u64, 2 * m.messages.len() as u64 + m.folded_messages);
    }

    #[test]
    fn a_cycle_through_messages_falls_back_to_each_ranks_own_columns() {
        let text = "num_ranks 2\nrank 0 {\nl1: recv 1b from 1 tag 0\nl2: send 1b to 1 tag 0\nl2 requires l1\n}\nrank 1 {\nl1: recv 1b from 0 tag 0\nl2: send 1b to 0 tag 0\nl2 requires l1\n}\n";
        let m = model(text, 32);
        assert!(m.local_columns);
        assert_eq!(m.messages.len(), 2);
        assert_eq!(m.cols, 2);
    }
}
