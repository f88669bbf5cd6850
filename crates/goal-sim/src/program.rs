//! Every rank's operations and dependencies, held compactly for the
//! simulator: struct-of-arrays with `u32` indices, no object per operation.
//!
//! Per operation the program keeps 16 bytes: the peer, an index into a
//! table of distinct attributes (kind, size, tag, cpu, nic: a Schedgen file
//! has a handful, so they are shared), the end of its successor list and
//! its number of prerequisites; plus 4 bytes per dependency. Operations are
//! numbered globally (`op_base[rank] + index in the rank`); a rank's
//! successor lists are stored in that rank's slice of `edges`, each list in
//! the order the dependencies were written, with `irequires` successors
//! flagged by [`START`]. That order matters: LogGOPSim releases successors
//! in it, and the order of release decides ties.
//!
//! [`ProgramBuilder`] takes one rank at a time, in order; the text reader
//! ([`crate::text`]) and the collective converter ([`crate::coll`]) feed it.

use std::collections::HashMap;
use std::fmt;

/// Flag of an edge whose target waits for the start (not the end) of the
/// operation whose list holds it (`irequires`).
pub const START: u32 = 1 << 31;

/// A peer that matches any source or tag (`-1` in the text).
pub const ANY: u32 = u32::MAX;

/// What an operation is. The numeric order is LogGOPSim's (`OP_SEND` 1,
/// `OP_RECV` 2, `OP_LOCOP` 3): operations that become ready together are
/// ordered by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Kind {
    /// A send.
    Send = 1,
    /// A receive.
    Recv = 2,
    /// Local work (`calc`).
    #[default]
    Calc = 3,
}

impl Kind {
    /// "send", "recv" or "calc".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Send => "send",
            Kind::Recv => "recv",
            Kind::Calc => "calc",
        }
    }
}

/// The attributes of an operation other than its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Attr {
    /// Send, receive or calc.
    pub kind: Kind,
    /// Bytes (send, receive) or units of work (calc).
    pub size: u64,
    /// Tag; [`ANY`] for a receive of any tag.
    pub tag: u32,
    /// The cpu it runs on.
    pub cpu: u8,
    /// The nic it uses.
    pub nic: u8,
}

/// One operation, as a builder takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSpec {
    /// Kind, size, tag, cpu, nic.
    pub attr: Attr,
    /// Destination (send), source or [`ANY`] (receive), 0 (calc).
    pub peer: u32,
}

/// Why a program could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// Every rank's operations and dependencies.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub(crate) num_ranks: u32,
    /// Global index of each rank's first operation; `num_ranks + 1` entries.
    pub(crate) op_base: Vec<u32>,
    /// Start of each rank's edges in `edges`; `num_ranks + 1` entries.
    pub(crate) edge_base: Vec<u64>,
    /// Per operation: destination, source or [`ANY`].
    pub(crate) peer: Vec<u32>,
    /// Per operation: index in `attrs`.
    pub(crate) attr: Vec<u32>,
    /// Per operation: end of its successor list, relative to its rank's
    /// `edge_base` (the list starts where the previous operation's ends).
    pub(crate) succ_end: Vec<u32>,
    /// Per operation: how many prerequisites (requires and irequires).
    pub(crate) npre: Vec<u32>,
    /// Successors: local index in the rank, [`START`] for irequires.
    pub(crate) edges: Vec<u32>,
    /// The distinct attributes.
    pub(crate) attrs: Vec<Attr>,
    /// Largest cpu and nic used, plus one.
    pub(crate) ncpus: u32,
    pub(crate) nnics: u32,
}

impl Program {
    /// Number of ranks.
    pub fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    /// Number of operations of every rank.
    pub fn num_ops(&self) -> u64 {
        self.peer.len() as u64
    }
    /// Number of dependencies.
    pub fn num_deps(&self) -> u64 {
        self.edges.len() as u64
    }
    /// CPUs per host (largest cpu used plus one), as LogGOPSim counts them.
    pub fn cpus(&self) -> u32 {
        self.ncpus
    }
    /// NICs per host.
    pub fn nics(&self) -> u32 {
        self.nnics
    }
    /// Operations of `rank`.
    pub fn ops_of(&self, rank: u32) -> u32 {
        self.op_base[rank as usize + 1] - self.op_base[rank as usize]
    }
    /// Operation `op` of `rank`: its attributes and peer.
    pub fn op(&self, rank: u32, op: u32) -> OpSpec {
        let g = (self.op_base[rank as usize] + op) as usize;
        OpSpec { attr: self.attrs[self.attr[g] as usize], peer: self.peer[g] }
    }
    /// The successors of operation `op` of `rank`: (local index, waits
    /// only for the start).
    pub fn successors(&self, rank: u32, op: u32) -> impl Iterator<Item = (u32, bool)> + '_ {
        let (a, b) = self.succ_range(rank, op);
        self.edges[a..b].iter().map(|&e| (e & !START, e & START != 0))
    }
    /// Bytes the program's operations and dependencies take (what is
    /// filled; room reserved and never written takes no memory).
    pub fn memory(&self) -> u64 {
        let v = |n: usize, s: usize| (n * s) as u64;
        v(self.op_base.len(), 4)
            + v(self.edge_base.len(), 8)
            + v(self.peer.len() + self.attr.len() + self.succ_end.len() + self.npre.len() + self.edges.len(), 4)
            + v(self.attrs.len(), std::mem::size_of::<Attr>())
    }

    #[inline]
    pub(crate) fn succ_range(&self, rank: u32, op: u32) -> (usize, usize) {
        let base = self.edge_base[rank as usize] as usize;
        let g = (self.op_base[rank as usize] + op) as usize;
        let start = if op == 0 { 0 } else { self.succ_end[g - 1] as usize };
        (base + start, base + self.succ_end[g] as usize)
    }
}

/// Builds a [`Program`] one rank at a time, ranks in order.
#[derive(Debug, Default)]
pub struct ProgramBuilder {
    p: Program,
    interned: HashMap<Attr, u32>,
    /// The attributes used last, most recent first: a rank alternates
    /// between a few, so most operations find theirs here.
    recent: [(Attr, u32); 4],
    nrecent: usize,
    /// This rank's dependencies: (prerequisite, target | START).
    deps: Vec<(u32, u32)>,
    /// Counting-sort buffers.
    count: Vec<u32>,
    open: bool,
}

impl ProgramBuilder {
    /// A builder for `num_ranks` ranks.
    pub fn new(num_ranks: u32) -> ProgramBuilder {
        let mut b = ProgramBuilder::default();
        b.p.num_ranks = num_ranks;
        b.p.op_base.reserve(num_ranks as usize + 1);
        b.p.edge_base.reserve(num_ranks as usize + 1);
        b.p.op_base.push(0);
        b.p.edge_base.push(0);
        b.p.ncpus = 1;
        b.p.nnics = 1;
        b
    }

    /// Reserves room for about `ops` operations and `deps` dependencies.
    pub fn reserve(&mut self, ops: usize, deps: usize) {
        for v in [&mut self.p.peer, &mut self.p.attr, &mut self.p.succ_end, &mut self.p.npre] {
            v.reserve(ops);
        }
        self.p.edges.reserve(deps);
    }

    /// The rank the next [`begin_rank`](Self::begin_rank) opens.
    pub fn next_rank(&self) -> u32 {
        (self.p.op_base.len() - 1) as u32
    }

    /// Opens the next rank.
    pub fn begin_rank(&mut self) {
        debug_assert!(!self.open);
        self.open = true;
        self.deps.clear();
    }

    /// Adds an operation to the open rank; returns its index in the rank.
    pub fn op(&mut self, spec: OpSpec) -> Result<u32, BuildError> {
        let index = self.p.peer.len() as u64 - *self.p.op_base.last().unwrap_or(&0) as u64;
        if self.p.peer.len() as u64 >= u32::MAX as u64 {
            return Err(BuildError("the schedule has more than 2^32 - 1 operations in all, more than goal sim holds".into()));
        }
        let id = self.intern(spec.attr);
        self.p.peer.push(spec.peer);
        self.p.attr.push(id);
        self.p.succ_end.push(0);
        self.p.npre.push(0);
        Ok(index as u32)
    }

    /// The index of `a` in the table of distinct attributes.
    fn intern(&mut self, a: Attr) -> u32 {
        match self.recent[..self.nrecent].iter().position(|r| r.0 == a) {
            Some(k) => {
                let hit = self.recent[k];
                self.recent.copy_within(0..k, 1);
                self.recent[0] = hit;
                hit.1
            }
            None => {
                let next = self.p.attrs.len() as u32;
                let id = *self.interned.entry(a).or_insert(next);
                if id == next {
                    self.p.attrs.push(a);
                    self.p.ncpus = self.p.ncpus.max(a.cpu as u32 + 1);
                    self.p.nnics = self.p.nnics.max(a.nic as u32 + 1);
                }
                self.recent.copy_within(0..3, 1);
                self.recent[0] = (a, id);
                self.nrecent = (self.nrecent + 1).min(4);
                id
            }
        }
    }

    /// Appends the ranks of `other` (built separately, for the ranks that
    /// follow this builder's) after this builder's.
    pub fn append(&mut self, other: ProgramBuilder) -> Result<(), BuildError> {
        let q = other.p;
        let ops = self.p.peer.len() as u64 + q.peer.len() as u64;
        if ops >= u32::MAX as u64 {
            return Err(BuildError("the schedule has more than 2^32 - 1 operations in all, more than goal sim holds".into()));
        }
        let map: Vec<u32> = q.attrs.iter().map(|&a| self.intern(a)).collect();
        let (op0, e0) = (self.p.peer.len() as u32, self.p.edges.len() as u64);
        self.p.peer.extend_from_slice(&q.peer);
        self.p.attr.extend(q.attr.iter().map(|&i| map[i as usize]));
        self.p.succ_end.extend_from_slice(&q.succ_end);
        self.p.npre.extend_from_slice(&q.npre);
        self.p.edges.extend_from_slice(&q.edges);
        self.p.op_base.extend(q.op_base[1..].iter().map(|&b| b + op0));
        self.p.edge_base.extend(q.edge_base[1..].iter().map(|&b| b + e0));
        Ok(())
    }

    /// `target` (an index in the open rank) waits for `prereq` to finish,
    /// or only to start (`on_start`, irequires).
    pub fn dep(&mut self, target: u32, prereq: u32, on_start: bool) {
        self.deps.push((prereq, target | if on_start { START } else { 0 }));
    }

    /// Closes the open rank: lays out its successor lists.
    pub fn end_rank(&mut self) -> Result<(), BuildError> {
        self.open = false;
        let base = *self.p.op_base.last().unwrap_or(&0) as usize;
        let n = self.p.peer.len() - base;
        if self.deps.len() as u64 > (START - 1) as u64 {
            return Err(BuildError(format!("rank {} has more than 2^31 dependencies", self.next_rank())));
        }
        // A stable counting sort by prerequisite keeps each list in the
        // order the dependencies were written.
        self.count.clear();
        self.count.resize(n + 1, 0);
        for &(pre, tgt) in &self.deps {
            if pre as usize >= n || (tgt & !START) as usize >= n {
                return Err(BuildError(format!("rank {}: a dependency names an operation that does not exist", self.next_rank())));
            }
            self.count[pre as usize + 1] += 1;
            self.p.npre[base + (tgt & !START) as usize] += 1;
        }
        for i in 0..n {
            self.count[i + 1] += self.count[i];
            self.p.succ_end[base + i] = self.count[i + 1];
        }
        let e0 = self.p.edges.len();
        self.p.edges.resize(e0 + self.deps.len(), 0);
        for &(pre, tgt) in &self.deps {
            let slot = &mut self.count[pre as usize];
            self.p.edges[e0 + *slot as usize] = tgt;
            *slot += 1;
        }
        self.p.op_base.push(self.p.peer.len() as u32);
        self.p.edge_base.push(self.p.edges.len() as u64);
        Ok(())
    }

    /// Sets the number of ranks (when it is known only after they were read).
    pub fn set_num_ranks(&mut self, n: u32) {
        self.p.num_ranks = n;
    }

    /// The program, once every rank was added.
    pub fn finish(mut self) -> Result<Program, BuildError> {
        let have = self.next_rank();
        if have != self.p.num_ranks {
            return Err(BuildError(format!("the program has {have} ranks of the {} declared", self.p.num_ranks)));
        }
        for v in [&mut self.p.peer, &mut self.p.attr, &mut self.p.succ_end, &mut self.p.npre, &mut self.p.edges] {
            v.shrink_to_fit();
        }
        Ok(self.p)
    }
}
