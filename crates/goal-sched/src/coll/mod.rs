//! Collective operations as GOAL graph builders.
//!
//! Every collective of the C API (`GOAL_Barrier_init` ... ) is a function
//! here that *appends* one rank's part of the collective to a caller's
//! [`Graph`]: sends, receives and local operations joined by "requires"
//! edges, never anything else. Nothing here touches a transport, so every
//! algorithm can be checked against a sequential model with the simulator
//! ([`crate::sim`]) for any group size, root and seed.
//!
//! # Composition
//!
//! A builder returns a [`Piece`]: an `entry` vertex that every first
//! operation of the collective requires, and a `done` vertex that requires
//! every last one (both `Calc 0`, which does nothing). To run the collective
//! after an operation of your own, make `entry` require it; to run something
//! after the collective, make it require `done`. The scratchpad the
//! collective needs is allocated past the graph's current scratchpad (which
//! is grown), and its messages use only tags in
//! `[tag_base, tag_base + TAG_SPAN)`, so several collectives can live in one
//! graph as long as their tag ranges are disjoint.
//!
//! # Conventions
//!
//! * Buffers are user addresses. `sbuf == rbuf` means in place: for gather,
//!   allgather and alltoall the rank's own block is already in `rbuf`; for
//!   reduce, allreduce and reduce_scatter_block `rbuf` holds the input; for
//!   scatter the root's own block stays in `sbuf`. In place matters only on
//!   the root for gather, scatter and reduce: at a non-root of gather and
//!   reduce `rbuf` is never written, at a non-root of scatter `sbuf` is
//!   never read.
//! * A collective moving no data (zero bytes or zero elements) is an empty
//!   piece: `entry` followed by `done`.
//! * Every algorithm works for every group size (powers of two or not) and
//!   every root. Blocks that do not divide evenly are split as evenly as
//!   possible: the first `n % parts` blocks have one element more.
//! * Within one collective, two messages between the same pair of ranks with
//!   the same tag are always ordered by dependencies on both sides (the
//!   builder adds an edge from the previous such send or receive), so
//!   matching never depends on timing.
//! * Reductions combine the *lower* part (in the algorithm's rank order) as
//!   the first operand, always. The order of operations of each algorithm is
//!   documented with its collective; in particular every allreduce gives
//!   bit-identical results on every rank (see [`allreduce()`]).
//! * A user operator that does not commute gets only the algorithms that
//!   combine in the ranks' own order ([`keeps_order`]): `GOAL_ALG_AUTO`
//!   picks among them, and asking for another is refused. The operand
//!   convention is MPI's: `inout = in op inout`, `in` the lower part.
//!
//! # Limits
//!
//! A message of a schedule holds at most 4 GiB − 1 bytes, so the largest
//! buffer of a collective (for example `size * bytes_per_rank` of a gather)
//! must stay below 4 GiB; larger ones are refused with
//! [`CollError::BadArgument`].

#![allow(clippy::too_many_arguments)]

mod allgather;
mod allgatherv;
mod allreduce;
mod alltoall;
mod alltoallv;
mod barrier;
mod bcast;
mod blocks;
mod butterfly;
mod gather;
mod gatherv;
mod reduce;
mod reduce_scatter;
mod reduce_scatter_block;
mod scatter;
mod scatterv;
mod world;

mod arith;
mod auto_table;
mod reduction;

pub(crate) use arith::*;

pub use allgather::allgather;
pub use allgatherv::allgatherv;
pub use allreduce::allreduce;
pub use alltoall::alltoall;
pub use alltoallv::alltoallv;
pub use barrier::barrier;
pub use bcast::{bcast, bcast_pipeline, DEFAULT_SEGMENT};
pub use blocks::auto_v;
pub use gather::gather;
pub use gatherv::gatherv;
pub use reduce::reduce;
pub use reduce_scatter::reduce_scatter;
pub use reduce_scatter_block::reduce_scatter_block;
pub use scatter::scatter;
pub use scatterv::scatterv;
pub use world::World;
pub use reduction::{keeps_order, Reduction};
pub(crate) use reduction::resolve_for;

use crate::graph::{Buf, Graph, Vertex, VertexId};
use crate::{DataType, ReduceOp};
use std::collections::HashMap;
use std::fmt;

/// Number of tags a collective may use, from its [`Placement::tag_base`].
pub const TAG_SPAN: i64 = 4096;

/// A collective algorithm, with the C API's numbering (`GOAL_ALG_AUTO` = 0 ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Algorithm {
    /// Pick one from the group and message size ([`auto`]).
    Auto = 0,
    /// Direct messages between the root and everyone (alltoall: every message at once).
    Linear = 1,
    /// Linear, with a synchronisation message and a first segment (Open
    /// MPI's linear_sync; alltoall: pairwise exchange, one peer at a time).
    LinearSync = 2,
    /// Binomial (in-order) tree.
    Binomial = 3,
    /// Recursive doubling (reduce_scatter_block: recursive halving).
    RecursiveDoubling = 4,
    /// Bruck's algorithm (barrier: dissemination).
    Bruck = 5,
    /// Ring (bcast: scatter + ring allgather).
    Ring = 6,
    /// Pipelined chain of segments.
    Pipeline = 7,
    /// Reduce-scatter by recursive halving, then gather or allgather.
    Rabenseifner = 8,
}

impl Algorithm {
    /// All algorithms, in C API order.
    pub const ALL: [Algorithm; 9] = [
        Algorithm::Auto,
        Algorithm::Linear,
        Algorithm::LinearSync,
        Algorithm::Binomial,
        Algorithm::RecursiveDoubling,
        Algorithm::Bruck,
        Algorithm::Ring,
        Algorithm::Pipeline,
        Algorithm::Rabenseifner,
    ];

    /// The algorithm with C API number `v`.
    pub fn from_raw(v: i64) -> Option<Algorithm> {
        usize::try_from(v).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// The C name ("GOAL_ALG_RING").
    pub fn c_name(self) -> &'static str {
        match self {
            Algorithm::Auto => "GOAL_ALG_AUTO",
            Algorithm::Linear => "GOAL_ALG_LINEAR",
            Algorithm::LinearSync => "GOAL_ALG_LINEAR_SYNC",
            Algorithm::Binomial => "GOAL_ALG_BINOMIAL",
            Algorithm::RecursiveDoubling => "GOAL_ALG_RECURSIVE_DOUBLING",
            Algorithm::Bruck => "GOAL_ALG_BRUCK",
            Algorithm::Ring => "GOAL_ALG_RING",
            Algorithm::Pipeline => "GOAL_ALG_PIPELINE",
            Algorithm::Rabenseifner => "GOAL_ALG_RABENSEIFNER",
        }
    }
}

/// A collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coll {
    /// [`barrier()`]
    Barrier,
    /// [`bcast()`]
    Bcast,
    /// [`gather()`]
    Gather,
    /// [`scatter()`]
    Scatter,
    /// [`allgather()`]
    Allgather,
    /// [`alltoall()`]
    Alltoall,
    /// [`reduce()`]
    Reduce,
    /// [`allreduce()`]
    Allreduce,
    /// [`reduce_scatter_block()`]
    ReduceScatterBlock,
    /// [`gatherv()`]
    Gatherv,
    /// [`scatterv()`]
    Scatterv,
    /// [`allgatherv()`]
    Allgatherv,
    /// [`alltoallv()`]
    Alltoallv,
    /// [`reduce_scatter()`]
    ReduceScatter,
}

impl Coll {
    /// All collectives.
    pub const ALL: [Coll; 14] = [
        Coll::Barrier,
        Coll::Bcast,
        Coll::Gather,
        Coll::Scatter,
        Coll::Allgather,
        Coll::Alltoall,
        Coll::Reduce,
        Coll::Allreduce,
        Coll::ReduceScatterBlock,
        Coll::Gatherv,
        Coll::Scatterv,
        Coll::Allgatherv,
        Coll::Alltoallv,
        Coll::ReduceScatter,
    ];

    /// The name used in messages ("barrier").
    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast => "bcast",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::Allgather => "allgather",
            Coll::Alltoall => "alltoall",
            Coll::Reduce => "reduce",
            Coll::Allreduce => "allreduce",
            Coll::ReduceScatterBlock => "reduce_scatter_block",
            Coll::Gatherv => "gatherv",
            Coll::Scatterv => "scatterv",
            Coll::Allgatherv => "allgatherv",
            Coll::Alltoallv => "alltoallv",
            Coll::ReduceScatter => "reduce_scatter",
        }
    }
}

/// The algorithms that apply to `coll`, in C API order.
pub fn algorithms(coll: Coll) -> &'static [Algorithm] {
    use Algorithm::*;
    match coll {
        Coll::Barrier => &[Linear, RecursiveDoubling, Bruck],
        Coll::Bcast => &[Linear, Binomial, Ring, Pipeline],
        Coll::Gather | Coll::Scatter => &[Linear, LinearSync, Binomial],
        Coll::Allgather => &[RecursiveDoubling, Bruck, Ring],
        Coll::Alltoall => &[Linear, LinearSync, Bruck],
        Coll::Reduce => &[Linear, Binomial, Rabenseifner],
        Coll::Allreduce => &[RecursiveDoubling, Ring, Rabenseifner],
        Coll::ReduceScatterBlock => &[Linear, RecursiveDoubling, Ring],
        Coll::Gatherv | Coll::Scatterv => &[Linear, Binomial],
        Coll::Allgatherv | Coll::ReduceScatter => &[Linear, Ring],
        Coll::Alltoallv => &[Linear, LinearSync],
    }
}

/// What `alg` is called when it implements `coll` ("scatter + ring allgather").
pub fn describe(coll: Coll, alg: Algorithm) -> &'static str {
    use Algorithm::*;
    match (coll, alg) {
        (_, Auto) => "automatic choice",
        (Coll::Alltoall | Coll::Alltoallv | Coll::Allgatherv, Linear) => "linear (every message at once)",
        (Coll::Alltoall | Coll::Alltoallv, LinearSync) => "pairwise exchange",
        (Coll::ReduceScatter, Linear) => "binomial reduce + linear scatterv",
        (Coll::ReduceScatterBlock, Linear) => "linear (every block straight to its rank)",
        (_, Linear) => "linear",
        (_, LinearSync) => "linear_sync",
        (_, Binomial) => "binomial tree",
        (Coll::ReduceScatterBlock, RecursiveDoubling) => "recursive halving",
        (_, RecursiveDoubling) => "recursive doubling",
        (Coll::Barrier, Bruck) => "Bruck (dissemination)",
        (_, Bruck) => "Bruck",
        (Coll::Bcast, Ring) => "scatter + ring allgather",
        (_, Ring) => "ring",
        (_, Pipeline) => "pipeline",
        (_, Rabenseifner) => "Rabenseifner",
    }
}

/// The algorithm `GOAL_ALG_AUTO` picks for `coll` on `size` ranks.
///
/// `bytes` is the size of one rank's contribution: the message for bcast,
/// one block for gather, scatter, allgather, alltoall and
/// reduce_scatter_block, the vector for reduce and allreduce (0 for barrier).
///
/// The table measured on this machine (`auto_table`, regenerated by
/// `bench/tune.py`) decides first. It covers the group sizes that were
/// measured (2 to 4 ranks on one machine); elsewhere the built-in rules
/// below decide. Where they cite Open MPI they follow
/// `coll_tuned_decision_fixed.c` (1.6). Both are keyed on group size and
/// message size only: a group whose ranks sit on several machines gets the
/// same choices as one on a single machine.
///
/// | collective | built-in choice |
/// |---|---|
/// | barrier | recursive doubling for powers of two, else Bruck (Open MPI) |
/// | bcast | binomial up to 12 KiB or on 2 ranks; scatter + ring allgather up to 512 KiB; pipeline above |
/// | gather | linear_sync above 6000 bytes; binomial above 60 ranks, or above 10 ranks below 1 KiB; else linear (Open MPI) |
/// | scatter | binomial above 10 ranks below 300 bytes; else linear (Open MPI) |
/// | allgather | total (size × bytes) below 50000: recursive doubling for powers of two, else Bruck; above: ring (Open MPI) |
/// | alltoall | Bruck up to 256 bytes from 8 ranks up; else pairwise exchange (one peer at a time) |
/// | reduce | binomial up to 64 KiB or when the vector has fewer bytes than ranks; else Rabenseifner |
/// | allreduce | recursive doubling up to 16 KiB or fewer bytes than ranks; Rabenseifner up to 1 MiB; ring above |
/// | reduce_scatter_block | recursive halving up to 12 KiB in total, up to 256 KiB on powers of two, or when `size >= 0.0012 * total + 8`; else ring (Open MPI) |
///
/// The collectives with per-rank counts (gatherv ... reduce_scatter) take
/// `bytes` as their total and decide by [`auto_v`], as if the blocks were
/// equal.
pub fn auto(coll: Coll, size: u32, bytes: u64) -> Algorithm {
    // The table measured on this machine (`bench/tune.py`) first; the rules
    // below cover what it does not.
    auto_table::lookup(coll, size, bytes).unwrap_or_else(|| builtin(coll, size, bytes))
}

/// The built-in choices (Open MPI's rules and textbook costs) for group and
/// message sizes the measured table does not cover.
fn builtin(coll: Coll, size: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let p = size.max(1) as u64;
    match coll {
        Coll::Barrier => {
            if p.is_power_of_two() {
                RecursiveDoubling
            } else {
                Bruck
            }
        }
        Coll::Bcast => {
            if bytes <= 12 << 10 || p <= 2 {
                Binomial
            } else if bytes <= 512 << 10 {
                Ring
            } else {
                Pipeline
            }
        }
        Coll::Gather => {
            if bytes > 6000 {
                LinearSync
            } else if p > 60 || (p > 10 && bytes < 1024) {
                Binomial
            } else {
                Linear
            }
        }
        Coll::Scatter => {
            if p > 10 && bytes < 300 {
                Binomial
            } else {
                Linear
            }
        }
        Coll::Allgather => {
            if p * bytes < 50000 {
                if p.is_power_of_two() {
                    RecursiveDoubling
                } else {
                    Bruck
                }
            } else {
                Ring
            }
        }
        Coll::Alltoall => {
            if bytes <= 256 && p >= 8 {
                Bruck
            } else {
                LinearSync
            }
        }
        Coll::Reduce => {
            if bytes <= 64 << 10 || bytes < p {
                Binomial
            } else {
                Rabenseifner
            }
        }
        Coll::Allreduce => {
            if bytes <= 16 << 10 || bytes < p {
                RecursiveDoubling
            } else if bytes <= 1 << 20 {
                Rabenseifner
            } else {
                Ring
            }
        }
        Coll::Gatherv | Coll::Scatterv | Coll::Allgatherv | Coll::Alltoallv | Coll::ReduceScatter => {
            auto_v(coll, size, bytes, bytes.div_ceil(p))
        }
        Coll::ReduceScatterBlock => {
            let total = p.saturating_mul(bytes);
            if total <= 12 << 10 || (total <= 256 << 10 && p.is_power_of_two()) || p as f64 >= 0.0012 * total as f64 + 8.0 {
                RecursiveDoubling
            } else {
                Ring
            }
        }
    }
}

/// This rank's place in the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// This rank, `< size`.
    pub rank: u32,
    /// Number of ranks, `>= 1`.
    pub size: u32,
}

/// Where a collective's messages live in a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The collective uses tags `tag_base .. tag_base + TAG_SPAN`.
    pub tag_base: i64,
}

/// The two vertices through which a collective connects to the rest of its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// A no-op that every first operation of the collective requires.
    pub entry: VertexId,
    /// A no-op that requires every last operation of the collective.
    pub done: VertexId,
}

/// Why a collective could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollError {
    /// The algorithm does not implement this collective.
    Unsupported(String),
    /// An argument is out of range (rank, root, size, tag range, operator, too large a buffer).
    BadArgument(String),
}

impl fmt::Display for CollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollError::Unsupported(m) | CollError::BadArgument(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CollError {}

/// `alg`, with [`Algorithm::Auto`] resolved, if it applies to `coll`.
fn resolve(coll: Coll, alg: Algorithm, size: u32, bytes: u64) -> Result<Algorithm, CollError> {
    let alg = if alg == Algorithm::Auto { auto(coll, size, bytes) } else { alg };
    if algorithms(coll).contains(&alg) {
        return Ok(alg);
    }
    let has: Vec<&str> = algorithms(coll).iter().map(|&a| describe(coll, a)).collect();
    Err(CollError::Unsupported(format!("{} does not apply to {} (it has: {})", alg.c_name(), coll.name(), has.join(", "))))
}

fn check_root(root: u32, size: u32) -> Result<(), CollError> {
    if root >= size {
        return Err(CollError::BadArgument(format!("root {root} is outside the group of {size} ranks")));
    }
    Ok(())
}

/// Refuses a buffer of `n * bytes` that a message could not hold.
fn check_total(what: &str, n: u64, bytes: u64) -> Result<u64, CollError> {
    match n.checked_mul(bytes) {
        Some(t) if t <= u32::MAX as u64 => Ok(t),
        _ => Err(CollError::BadArgument(format!(
            "{what} of {n} x {bytes} bytes is larger than 4 GiB - 1, the largest message of a schedule"
        ))),
    }
}

// ---------------------------------------------------------------------------
// The builder every algorithm emits through.

/// Appends one collective to a graph, keeping the bookkeeping that makes a
/// [`Piece`]: which vertices have prerequisites and dependents inside the
/// collective, the scratchpad it took, and the order of messages per
/// (peer, tag).
pub(crate) struct Builder<'g> {
    g: &'g mut Graph,
    pub rank: u32,
    pub size: u32,
    tag_base: i64,
    scratch_start: u64,
    scratch_end: u64,
    entry: VertexId,
    /// Vertex id of `has_pred[0]`.
    first: VertexId,
    has_pred: Vec<bool>,
    has_succ: Vec<bool>,
    /// Last send (true) or receive (false) per (peer, tag offset).
    channel: HashMap<(bool, u32, u32), VertexId>,
}

impl<'g> Builder<'g> {
    pub fn new(g: &'g mut Graph, grp: Group, at: Placement) -> Result<Builder<'g>, CollError> {
        if grp.size == 0 || grp.rank >= grp.size {
            return Err(CollError::BadArgument(format!("rank {} is outside the group of {} ranks", grp.rank, grp.size)));
        }
        if at.tag_base < 0 || at.tag_base > i32::MAX as i64 + 1 - TAG_SPAN {
            return Err(CollError::BadArgument(format!(
                "tag base {} is invalid: a collective uses tags tag_base .. tag_base + {TAG_SPAN}, within 0 ..= 2^31-1",
                at.tag_base
            )));
        }
        let scratch_end = g.scratchpad().div_ceil(64) * 64;
        let entry = g.add(Vertex::Calc { units: 0 });
        Ok(Builder {
            first: entry + 1,
            g,
            rank: grp.rank,
            size: grp.size,
            tag_base: at.tag_base,
            scratch_start: scratch_end,
            scratch_end,
            entry,
            has_pred: Vec::new(),
            has_succ: Vec::new(),
            channel: HashMap::new(),
        })
    }

    /// `bytes` of scratchpad (64-byte aligned) for this collective alone.
    pub fn scratch(&mut self, bytes: u64) -> u64 {
        let at = self.scratch_end;
        self.scratch_end = (at + bytes).div_ceil(64) * 64;
        at
    }

    fn add(&mut self, v: Vertex, after: &[VertexId]) -> VertexId {
        let id = self.g.add(v);
        self.has_pred.push(false);
        self.has_succ.push(false);
        for &p in after {
            self.dep(p, id);
        }
        id
    }

    /// `post` starts after `pre` finished.
    pub fn dep(&mut self, pre: VertexId, post: VertexId) {
        self.g.requires(pre, post).expect("both vertices were added by this builder");
        self.has_succ[(pre - self.first) as usize] = true;
        self.has_pred[(post - self.first) as usize] = true;
    }

    /// `post` starts after `pre` started.
    pub fn dep_start(&mut self, pre: VertexId, post: VertexId) {
        self.g.requires_start(pre, post).expect("both vertices were added by this builder");
        self.has_pred[(post - self.first) as usize] = true;
    }

    fn tag(&self, off: u32) -> i64 {
        debug_assert!((off as i64) < TAG_SPAN);
        self.tag_base + off as i64
    }

    /// Orders a message after the previous one on the same (direction, peer, tag).
    fn order(&mut self, send: bool, peer: u32, tag: u32, v: VertexId) {
        if let Some(prev) = self.channel.insert((send, peer, tag), v) {
            self.dep(prev, v);
        }
    }

    pub fn send(&mut self, buf: Buf, len: u64, peer: u32, tag: u32, after: &[VertexId]) -> VertexId {
        let v = self.add(Vertex::Send { buf, len: len as i64, peer: peer as i64, tag: self.tag(tag) }, after);
        self.order(true, peer, tag, v);
        v
    }

    pub fn recv(&mut self, buf: Buf, len: u64, peer: u32, tag: u32, after: &[VertexId]) -> VertexId {
        let v = self.add(Vertex::Recv { buf, len: len as i64, peer: peer as i64, tag: self.tag(tag) }, after);
        self.order(false, peer, tag, v);
        self.g.require_exact(v).expect("the builder added it");
        v
    }

    /// A send of the pieces (address or offset, bytes) of memory `mem`, as one message.
    pub fn send_vec(&mut self, mem: i64, pieces: &[(u64, u64)], peer: u32, tag: u32, after: &[VertexId]) -> VertexId {
        match pieces {
            [(a, l)] => self.send(Buf { mem, addr: *a }, *l, peer, tag, after),
            _ => {
                let pieces = pieces.iter().map(|&(a, l)| (a, l as i64)).collect();
                let v = self.add(Vertex::SendVec { mem, pieces, peer: peer as i64, tag: self.tag(tag) }, after);
                self.order(true, peer, tag, v);
                v
            }
        }
    }

    /// A receive scattered over the pieces of memory `mem`.
    pub fn recv_vec(&mut self, mem: i64, pieces: &[(u64, u64)], peer: u32, tag: u32, after: &[VertexId]) -> VertexId {
        match pieces {
            [(a, l)] => self.recv(Buf { mem, addr: *a }, *l, peer, tag, after),
            _ => {
                let pieces = pieces.iter().map(|&(a, l)| (a, l as i64)).collect();
                let v = self.add(Vertex::RecvVec { mem, pieces, peer: peer as i64, tag: self.tag(tag) }, after);
                self.order(false, peer, tag, v);
                self.g.require_exact(v).expect("the builder added it");
                v
            }
        }
    }

    /// `b3[i] = b1[i] op b2[i]` for `count` elements.
    pub fn combine(&mut self, red: &Reduction, count: u64, b1: Buf, b2: Buf, b3: Buf, after: &[VertexId]) -> VertexId {
        let v = Vertex::Local { op: red.op.raw(), dt: red.dt as i64, width: red.width as i64, count: count as i64, b1, b2, b3 };
        self.add(v, after)
    }

    /// Copies `bytes` from `src` to `dst`.
    pub fn copy(&mut self, src: Buf, dst: Buf, bytes: u64, after: &[VertexId]) -> VertexId {
        let v = Vertex::Local {
            op: ReduceOp::Copy as i64,
            dt: DataType::UInt as i64,
            width: 8,
            count: bytes as i64,
            b1: src,
            b2: src,
            b3: dst,
        };
        self.add(v, after)
    }

    /// Copies the pieces of `src` (in order) into the pieces of `dst` (in order).
    pub fn copy_vec(&mut self, src: (i64, Vec<(u64, u64)>), dst: (i64, Vec<(u64, u64)>), after: &[VertexId]) -> VertexId {
        let list = |(m, p): (i64, Vec<(u64, u64)>)| (m, p.into_iter().map(|(a, l)| (a, l as i64)).collect());
        let v = Vertex::LocalVec {
            op: ReduceOp::Copy as i64,
            dt: DataType::UInt as i64,
            width: 8,
            lists: [list(src), (0, Vec::new()), list(dst)],
        };
        self.add(v, after)
    }

    /// One vertex standing for all of `after` (itself if there is one, none if none).
    pub fn join(&mut self, after: &[VertexId]) -> Vec<VertexId> {
        match after {
            [] | [_] => after.to_vec(),
            _ => vec![self.add(Vertex::Calc { units: 0 }, after)],
        }
    }

    /// Closes the collective: connects `entry` and `done`, grows the scratchpad.
    pub fn finish(self) -> Piece {
        let done = self.g.add(Vertex::Calc { units: 0 });
        let (entry, first) = (self.entry, self.first);
        for (i, (&p, &s)) in self.has_pred.iter().zip(&self.has_succ).enumerate() {
            let v = first + i as u64;
            if !p {
                self.g.requires(entry, v).expect("valid vertex");
            }
            if !s {
                self.g.requires(v, done).expect("valid vertex");
            }
        }
        if self.has_pred.is_empty() {
            self.g.requires(entry, done).expect("valid vertex");
        }
        if self.scratch_end > self.scratch_start {
            self.g.set_scratchpad(self.scratch_end.max(self.g.scratchpad()));
        }
        Piece { entry, done }
    }
}

/// A user buffer.
pub(crate) fn user(addr: u64) -> Buf {
    Buf::user(addr)
}

/// A scratchpad buffer.
pub(crate) fn scr(off: u64) -> Buf {
    Buf::scratch(off)
}

/// Memory type numbers for vector operations.
pub(crate) const USER: i64 = 0;
pub(crate) const SCRATCH: i64 = 1;
