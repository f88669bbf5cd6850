//! Validation of a whole file: what [`parse`](crate::parse) checks line by
//! line, plus what needs a rank or the file as a whole.
//!
//! Per rank, the checks of `GOAL_Compile` that apply to a text schedule: no
//! dependency cycle (requires and irequires edges together, as the compiler
//! orders them), peers inside the group and tags in goal's range (the parser
//! refuses those where they are written). Across ranks, every send must be
//! received somewhere and every receive sent to ([`crate::matching`]).
//!
//! Memory: one rank's graph at a time, plus the matcher's counters, which
//! hold only the (source, destination, tag) triples still unbalanced.

use std::io::BufRead;
use std::sync::mpsc;
use std::time::Instant;

use crate::matching::Matcher;
use crate::{Op, OpKind, Pos, RankGraph, TextError};

/// Operations per batch handed to the matcher.
const BATCH: usize = 1 << 14;

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// `num_ranks`, if declared.
    pub num_ranks: Option<u32>,
    /// Ranks read.
    pub ranks: u64,
    /// Operations: sends, receives, calcs.
    pub sends: u64,
    /// Receives.
    pub recvs: u64,
    /// Calcs.
    pub calcs: u64,
    /// Dependencies (requires and irequires).
    pub deps: u64,
    /// Bytes sent, summed over every send.
    pub bytes: u64,
    /// Lines and bytes of text read.
    pub lines: u64,
    /// Bytes of text read.
    pub text_bytes: u64,
    /// The first errors, in the order found (at most the limit given).
    pub errors: Vec<TextError>,
    /// Every error found, including those not kept.
    pub error_count: u64,
    /// Sends and receives were not balanced, because of errors found
    /// before (an operation that could not be read would be blamed on its
    /// peer).
    pub unbalanced_unknown: bool,
    /// Seconds taken.
    pub seconds: f64,
}

impl Summary {
    /// Operations of every kind.
    pub fn ops(&self) -> u64 {
        self.sends + self.recvs + self.calcs
    }
    /// Whether the file is valid.
    pub fn is_valid(&self) -> bool {
        self.error_count == 0
    }
}

/// Parses and validates `input` (called `file` in errors), keeping at most
/// `max_errors` errors (all are counted); `on_rank` sees each rank's graph
/// after it was checked.
pub fn check<R: BufRead>(input: R, file: &str, max_errors: usize, mut on_rank: impl FnMut(&RankGraph)) -> Summary {
    let start = Instant::now();
    let mut s = Summary::default();
    let mut cycles = Cycles::default();
    // Each kind of error is found in the order of the file; keep the first
    // `max_errors` of each, count the rest, merge by position at the end.
    let (mut rank_errors, mut parse_errors) = (Bounded::new(max_errors), Bounded::new(max_errors));
    // The matcher runs beside the parser, fed batches of (rank, operation)
    // in the order of the file: at scale its map costs as much as the
    // parsing (a cache miss per message), and the two overlap. A file of
    // less than one batch is matched here, without a thread.
    let (header, matcher) = std::thread::scope(|scope| {
        let mut worker = None;
        let mut batch: Vec<(u32, Op)> = Vec::new();
        let header = crate::parse(
            input,
            file,
            |g| {
                s.ranks += 1;
                s.deps += g.deps.len() as u64;
                for op in &g.ops {
                    match op.kind {
                        OpKind::Send { bytes, .. } => {
                            s.sends += 1;
                            s.bytes = s.bytes.saturating_add(bytes);
                        }
                        OpKind::Recv { .. } => s.recvs += 1,
                        OpKind::Calc { .. } => continue,
                    }
                    batch.push((g.rank, *op));
                }
                s.calcs += g.ops.len() as u64;
                if batch.len() >= BATCH {
                    let (to_matcher, spare, _) = worker.get_or_insert_with(|| spawn_matcher(scope));
                    let next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    // The matcher ends only when this side hangs up, or by a
                    // panic that the join below passes on.
                    let _ = to_matcher.send(std::mem::replace(&mut batch, next));
                }
                if let Some((pos, message)) = cycles.find(g) {
                    rank_errors.push(TextError { file: file.into(), line: pos.line, col: pos.col, message });
                }
                on_rank(g);
            },
            |e| parse_errors.push(e),
        );
        let matcher = match worker {
            Some((to_matcher, _, matching)) => {
                let _ = to_matcher.send(batch);
                drop(to_matcher);
                matching.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            }
            None => {
                let mut m = Matcher::default();
                for (rank, op) in &batch {
                    m.add(*rank, op);
                }
                m
            }
        };
        (header, matcher)
    });
    s.calcs -= s.sends + s.recvs;
    let mut errors = Bounded::new(max_errors);
    let mut all = parse_errors.kept;
    all.append(&mut rank_errors.kept);
    all.sort_by_key(|e| (e.line, e.col));
    for e in all {
        errors.push(e);
    }
    let mut count = parse_errors.count + rank_errors.count;
    let parse_count = parse_errors.count;
    // After a mistake in a statement the counts would blame its peer for
    // the operation that could not be read: balance only a clean file.
    s.unbalanced_unknown = parse_count > 0;
    if parse_count == 0 {
        let file: std::sync::Arc<str> = file.into();
        let (unmatched, total) = matcher.finish(max_errors);
        count += total;
        for (p, message) in unmatched {
            errors.push(TextError { file: file.clone(), line: p.line, col: p.col, message });
        }
    }
    let errors = errors.kept;
    s.error_count = count;
    s.errors = errors;
    s.num_ranks = header.num_ranks;
    s.lines = header.lines;
    s.text_bytes = header.bytes;
    s.seconds = start.elapsed().as_secs_f64();
    s
}

type Batch = Vec<(u32, Op)>;

/// Starts the matcher's thread: where to send batches, where the emptied
/// ones come back, and the thread, which returns the matcher.
fn spawn_matcher<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
) -> (mpsc::SyncSender<Batch>, mpsc::Receiver<Batch>, std::thread::ScopedJoinHandle<'s, Matcher>) {
    let (to_matcher, batches) = mpsc::sync_channel::<Batch>(4);
    let (give_back, spare) = mpsc::channel::<Batch>();
    let matching = scope.spawn(move || {
        let mut matcher = Matcher::default();
        for mut batch in batches {
            for (rank, op) in &batch {
                matcher.add(*rank, op);
            }
            batch.clear();
            let _ = give_back.send(batch);
        }
        matcher
    });
    (to_matcher, spare, matching)
}

/// The first errors of a kind, and how many there were.
struct Bounded {
    kept: Vec<TextError>,
    count: u64,
    max: usize,
}

impl Bounded {
    fn new(max: usize) -> Bounded {
        Bounded { kept: Vec::new(), count: 0, max }
    }
    fn push(&mut self, e: TextError) {
        self.count += 1;
        if self.kept.len() < self.max {
            self.kept.push(e);
        }
    }
}

/// Cycle search over one rank, its buffers reused from rank to rank.
#[derive(Default)]
struct Cycles {
    indeg: Vec<u32>,
    index: Vec<u32>,
    targets: Vec<u32>,
    queue: Vec<u32>,
}

impl Cycles {
    /// Kahn's algorithm over both kinds of edges; on a cycle, where its
    /// first operation is and a message naming the cycle's labels.
    fn find(&mut self, g: &RankGraph) -> Option<(Pos, String)> {
        let n = g.ops.len();
        self.indeg.clear();
        self.indeg.resize(n, 0);
        self.index.clear();
        self.index.resize(n + 1, 0);
        for d in &g.deps {
            self.indeg[d.target as usize] += 1;
            self.index[d.prereq as usize + 1] += 1;
        }
        for i in 0..n {
            self.index[i + 1] += self.index[i];
        }
        self.targets.clear();
        self.targets.resize(g.deps.len(), 0);
        let mut fill = std::mem::take(&mut self.queue);
        fill.clear();
        fill.extend_from_slice(&self.index[..n]);
        for d in &g.deps {
            let f = &mut fill[d.prereq as usize];
            self.targets[*f as usize] = d.target;
            *f += 1;
        }
        fill.clear();
        let mut queue = fill;
        queue.extend((0..n as u32).filter(|&v| self.indeg[v as usize] == 0));
        let mut done = 0;
        while let Some(v) = queue.pop() {
            done += 1;
            let (a, b) = (self.index[v as usize] as usize, self.index[v as usize + 1] as usize);
            for &t in &self.targets[a..b] {
                let r = &mut self.indeg[t as usize];
                *r -= 1;
                if *r == 0 {
                    queue.push(t);
                }
            }
        }
        self.queue = queue;
        if done == n {
            return None;
        }
        // Every op left has a prerequisite left: walk back until a repeat.
        let mut pred = vec![u32::MAX; n];
        for d in &g.deps {
            if self.indeg[d.target as usize] > 0 && self.indeg[d.prereq as usize] > 0 && pred[d.target as usize] == u32::MAX {
                pred[d.target as usize] = d.prereq;
            }
        }
        let start = self.indeg.iter().position(|&r| r > 0)?;
        let mut seen = vec![usize::MAX; n];
        let mut walk = Vec::new();
        let mut v = start;
        while seen[v] == usize::MAX && pred[v] != u32::MAX {
            seen[v] = walk.len();
            walk.push(v);
            v = pred[v] as usize;
        }
        let from = if seen[v] == usize::MAX { 0 } else { seen[v] };
        let mut cycle: Vec<usize> = walk[from..].to_vec();
        cycle.reverse();
        let first = *cycle.iter().min()?;
        let rot = cycle.iter().position(|&x| x == first).unwrap_or(0);
        cycle.rotate_left(rot);
        cycle.push(first);
        let path: Vec<String> = cycle.iter().map(|&x| g.name(x)).collect();
        let msg = format!(
            "rank {}: {} is on a dependency cycle ({}, each requiring the one before): expected dependencies without a cycle",
            g.rank,
            g.name(first),
            path.join(" -> ")
        );
        Some((g.ops[first].pos, msg))
    }
}
