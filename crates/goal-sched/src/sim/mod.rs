//! An in-memory multi-rank executor: the reference model of the runtime.
//!
//! [`simulate`] runs one graph per rank, rank `r`'s against `mem[r]` (a user
//! address is a byte offset into that vector), with the runtime's semantics:
//!
//! * every graph is compiled first with [`compile`], so a graph the runtime
//!   would refuse is refused here with the same message;
//! * an operation starts once all its prerequisites have finished (and its
//!   "irequires" prerequisites have started);
//! * a receive matches the earliest unmatched message from its source with
//!   its tag ([`ANY_SOURCE`](crate::ANY_SOURCE) and [`ANY_TAG`](crate::ANY_TAG)
//!   match anything); messages with the same (source, destination, tag) never
//!   overtake each other, all others may; a message may arrive before its
//!   receive starts and waits for it; a message larger than its receive is an
//!   error (truncation), a smaller one completes it;
//! * local operations compute exactly what the runtime's kernels compute
//!   (wrapping integers, IEEE floats, integer division by zero an error,
//!   `WTIME` writes some 8 bytes); `Calc` does nothing. A user operator runs
//!   the function given to [`simulate_user`] as the runtime runs the
//!   application's: `inout = in op inout`, the first operand as `in`.
//!
//! # Time and order
//!
//! The model is a discrete-event simulation with a virtual clock. Everything
//! that the runtime leaves open is decided by a seeded random generator
//! ([`SimOptions::seed`]): how long a ready operation waits before it starts
//! (so ready operations start in random order), how long each message travels
//! (so messages on different tags or from different sources arrive in random
//! order), how long a local operation takes, and whether a send is *eager*
//! (finishes soon after it starts, whether or not the receive is posted) or
//! *rendezvous* (finishes only once its receive has taken the data). The
//! runtime may turn any send into a rendezvous when the receiver's buffer
//! space runs out, so a graph that relies on buffering deadlocks here, as it
//! could there.
//!
//! # Races
//!
//! An operation uses its buffers from the moment it starts until it
//! finishes. With [`SimOptions::check_races`] (the default), two operations
//! of one rank that are running at the same time and touch overlapping bytes
//! of the same memory, at least one of them writing (a receive writes its
//! whole capacity), are reported as a [`SimError::Race`]: the runtime would
//! give such a graph an undefined result. Random timing makes such overlaps
//! happen; several seeds make them likely. A local operation whose result
//! partially overlaps one of its operands is always an error
//! ([`SimError::Overlap`]); exact aliasing (`res == a`) is allowed.
//!
//! # Errors at the end
//!
//! If operations remain but nothing can progress, the result is a
//! [`SimError::Deadlock`] naming, per rank, the operations that started and
//! are stuck (receives without a message, rendezvous sends without a
//! receive). A message nobody received is a [`SimError::Unmatched`].

use crate::graph::Graph;
use crate::schedule::{compile, CompileOptions, OpKind, Schedule};
use crate::{DataType, Op, ReduceOp, UserOp};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

mod error;
mod kernel;

pub use error::{SimError, StuckRank};
use kernel::kernel;

/// How the simulator decides the protocol of each send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// Each send is eager or rendezvous at random (the default).
    Random,
    /// Every send finishes soon after it starts (unbounded buffering).
    Eager,
    /// Every send finishes only once its receive has taken the data.
    Rendezvous,
}

/// Options of [`simulate_with`].
#[derive(Debug, Clone, Copy)]
pub struct SimOptions {
    /// Seed of every random decision.
    pub seed: u64,
    /// Protocol of the sends.
    pub sends: SendMode,
    /// Report operations that run at the same time on overlapping bytes.
    pub check_races: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { seed: 0, sends: SendMode::Random, check_races: true }
    }
}

/// What a simulation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Operations executed, over all ranks.
    pub ops: u64,
    /// Messages sent, over all ranks.
    pub messages: u64,
    /// Bytes sent, over all ranks.
    pub bytes: u64,
    /// Local operations executed, over all ranks.
    pub local_ops: u64,
    /// Most messages sent by one rank.
    pub max_rank_messages: u64,
    /// Most bytes sent by one rank.
    pub max_rank_bytes: u64,
    /// Length of the critical path in message hops: the largest number of
    /// messages on any chain of dependencies (a receive comes one hop after
    /// its send).
    pub rounds: u64,
}


/// Runs `graphs[r]` as rank `r` against `mem[r]` with the default options
/// (seed 0, random protocols, races checked). See the module documentation.
pub fn simulate(graphs: &[Graph], mem: &mut [Vec<u8>]) -> Result<SimStats, SimError> {
    simulate_with(graphs, mem, &SimOptions::default())
}

/// A user operator's function for [`simulate_user`]: `f(op, input, inout,
/// count)` sets `inout[i] = input[i] op inout[i]` for `count` elements
/// (`input` is the first operand, `inout` holds the second).
pub type UserFn<'a> = &'a dyn Fn(UserOp, &[u8], &mut [u8], usize);

/// [`simulate`] with explicit options.
pub fn simulate_with(graphs: &[Graph], mem: &mut [Vec<u8>], opts: &SimOptions) -> Result<SimStats, SimError> {
    run_sim(graphs, mem, opts, None)
}

/// [`simulate_with`] for graphs with user operators, computed by `user`.
pub fn simulate_user(graphs: &[Graph], mem: &mut [Vec<u8>], opts: &SimOptions, user: UserFn<'_>) -> Result<SimStats, SimError> {
    run_sim(graphs, mem, opts, Some(user))
}

fn run_sim(graphs: &[Graph], mem: &mut [Vec<u8>], opts: &SimOptions, user: Option<UserFn<'_>>) -> Result<SimStats, SimError> {
    if graphs.is_empty() || graphs.len() != mem.len() {
        return Err(SimError::Setup(format!(
            "{} graphs and {} memories: give one of each per rank, at least one",
            graphs.len(),
            mem.len()
        )));
    }
    let n = graphs.len() as u32;
    let mut rng = Rng(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut ranks = Vec::with_capacity(graphs.len());
    for (r, g) in graphs.iter().enumerate() {
        let s = compile(g, &CompileOptions { group_size: n }).map_err(|error| SimError::Compile { rank: r as u32, error })?;
        if !s.run.is_empty() {
            return Err(SimError::Setup(format!(
                "rank {r}'s graph leaves {} run-time buffer(s) open: the model runs graphs whose buffers are all bound",
                s.run.len()
            )));
        }
        ranks.push(RankState::new(s, &mut rng));
    }
    let sim = Sim {
        graphs,
        mem,
        ranks,
        msgs: Vec::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        now: 0,
        rng,
        opts: *opts,
        user,
        stats: SimStats::default(),
        channel: HashMap::new(),
    };
    sim.run()
}

// ---------------------------------------------------------------------------

/// splitmix64: small, seedable, good enough to shuffle timings.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Start(u32, u32),
    Finish(u32, u32),
    Arrive(usize),
}

/// A byte range an operation uses while it runs.
#[derive(Debug, Clone, Copy)]
struct Access {
    op: u32,
    scratch: bool,
    lo: u64,
    hi: u64,
    write: bool,
}

struct Msg {
    src: u32,
    dst: u32,
    tag: i32,
    data: Vec<u8>,
    send_op: u32,
    rendezvous: bool,
    hop: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

struct RankState {
    s: Schedule,
    counters: Vec<u32>,
    state: Vec<State>,
    /// Hops of the longest message chain that ends at this op.
    hop: Vec<u64>,
    scratch: Vec<u8>,
    /// Posted, unmatched receives, in posting order.
    posted: Vec<u32>,
    /// Arrived, unmatched messages, in arrival order.
    unexpected: Vec<usize>,
    active: Vec<Access>,
    remaining: usize,
    sent_msgs: u64,
    sent_bytes: u64,
}

impl RankState {
    fn new(s: Schedule, rng: &mut Rng) -> RankState {
        let n = s.ops.len();
        // The runtime does not clear a scratchpad: start from garbage.
        let mut scratch: Vec<u8> = (0..s.scratch.div_ceil(8)).flat_map(|_| rng.next().to_ne_bytes()).collect();
        scratch.truncate(s.scratch as usize);
        RankState {
            counters: s.ops.iter().map(|o| o.deps).collect(),
            state: vec![State::Waiting; n],
            hop: vec![0; n],
            scratch,
            posted: Vec::new(),
            unexpected: Vec::new(),
            active: Vec::new(),
            remaining: n,
            sent_msgs: 0,
            sent_bytes: 0,
            s,
        }
    }
}

struct Sim<'a> {
    graphs: &'a [Graph],
    mem: &'a mut [Vec<u8>],
    ranks: Vec<RankState>,
    msgs: Vec<Option<Msg>>,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: u64,
    rng: Rng,
    opts: SimOptions,
    /// The user operators' function, if given.
    user: Option<UserFn<'a>>,
    stats: SimStats,
    /// Last arrival time per (source, destination, tag): same-tag messages do not overtake.
    channel: HashMap<(u32, u32, i32), u64>,
}

impl Sim<'_> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn vertex(&self, r: u32, op: u32) -> u64 {
        self.ranks[r as usize].s.origin[op as usize] as u64
    }

    fn describe(&self, r: u32, op: u32) -> String {
        let v = self.vertex(r, op) as usize;
        self.graphs[r as usize].vertices()[v].describe()
    }

    fn run(mut self) -> Result<SimStats, SimError> {
        for r in 0..self.ranks.len() as u32 {
            for op in 0..self.ranks[r as usize].s.independent {
                let t = self.rng.range(0, 8);
                self.push(t, Ev::Start(r, op));
            }
        }
        while let Some(Reverse((t, _, ev))) = self.heap.pop() {
            self.now = t;
            match ev {
                Ev::Start(r, op) => self.start(r, op)?,
                Ev::Finish(r, op) => self.finish(r, op)?,
                Ev::Arrive(m) => self.arrive(m)?,
            }
        }
        let stuck: Vec<StuckRank> = (0..self.ranks.len() as u32)
            .filter(|&r| self.ranks[r as usize].remaining > 0)
            .map(|r| {
                let rs = &self.ranks[r as usize];
                let blocked = (0..rs.s.ops.len() as u32)
                    .filter(|&op| rs.state[op as usize] == State::Running)
                    .map(|op| (self.vertex(r, op), self.describe(r, op)))
                    .collect();
                let waiting = rs.state.iter().filter(|&&s| s == State::Waiting).count();
                StuckRank { rank: r, blocked, waiting }
            })
            .collect();
        if !stuck.is_empty() {
            return Err(SimError::Deadlock { stuck });
        }
        let left: Vec<String> = self
            .ranks
            .iter()
            .flat_map(|rs| rs.unexpected.iter())
            .filter_map(|&m| self.msgs[m].as_ref())
            .map(|m| format!("rank {} -> rank {}, tag {}, {} bytes", m.src, m.dst, m.tag, m.data.len()))
            .collect();
        if !left.is_empty() {
            return Err(SimError::Unmatched { messages: left });
        }
        for rs in &self.ranks {
            self.stats.max_rank_messages = self.stats.max_rank_messages.max(rs.sent_msgs);
            self.stats.max_rank_bytes = self.stats.max_rank_bytes.max(rs.sent_bytes);
        }
        Ok(self.stats)
    }

    /// The byte ranges op `op` of rank `r` uses, each (scratch, lo, hi, write).
    fn accesses(&self, r: u32, op: u32) -> Vec<Access> {
        let s = &self.ranks[r as usize].s;
        let o = s.ops[op as usize];
        let mut v = Vec::new();
        let mut add = |scratch: bool, lo: u64, len: u64, write: bool| {
            if len > 0 {
                v.push(Access { op, scratch, lo, hi: lo + len, write });
            }
        };
        match o.kind() {
            OpKind::Send | OpKind::Recv => add(o.relative(), o.addr, o.len as u64, o.kind() == OpKind::Recv),
            OpKind::SendVec | OpKind::RecvVec => {
                for p in s.pieces_of(s.vecs[o.addr as usize]) {
                    add(o.relative(), p.addr, p.len as u64, o.kind() == OpKind::RecvVec);
                }
            }
            OpKind::Local => {
                let l = s.locals[o.addr as usize];
                let bytes = l.count as u64 * (l.width as u64 / 8);
                let op = l.op();
                if op == ReduceOp::Wtime {
                    add(l.mem & 4 != 0, l.b3, 8, true);
                } else {
                    add(l.mem & 1 != 0, l.b1, bytes, false);
                    if op.is_binary() {
                        add(l.mem & 2 != 0, l.b2, bytes, false);
                    }
                    add(l.mem & 4 != 0, l.b3, bytes, true);
                }
            }
            OpKind::LocalVec => {
                let l = s.lvecs[o.addr as usize];
                let op = l.op();
                for (i, list) in l.lists.iter().enumerate() {
                    let used = match op {
                        Op::Builtin(ReduceOp::Wtime) => i == 2,
                        Op::Builtin(ReduceOp::Copy) => i != 1,
                        _ => true,
                    };
                    if used {
                        for p in s.pieces_of(*list) {
                            add(l.mem & (1 << i) != 0, p.addr, p.len as u64, i == 2);
                        }
                    }
                }
            }
            OpKind::Calc => {}
        }
        v
    }

    fn start(&mut self, r: u32, op: u32) -> Result<(), SimError> {
        let ri = r as usize;
        self.ranks[ri].state[op as usize] = State::Running;
        let hop = self.ranks[ri].hop[op as usize];
        let sdeps: Vec<u32> = self.ranks[ri].s.start_dependents(op as usize).to_vec();
        for d in sdeps {
            self.release(r, d, hop);
        }
        let acc = self.accesses(r, op);
        self.check_bounds(r, op, &acc)?;
        self.check_self_overlap(r, op)?;
        if self.opts.check_races {
            for a in &acc {
                for b in &self.ranks[ri].active {
                    if a.scratch == b.scratch && a.lo < b.hi && b.lo < a.hi && (a.write || b.write) && a.op != b.op {
                        let space = if a.scratch { "scratchpad" } else { "user memory" };
                        let (first, second) = (self.vertex(r, b.op), self.vertex(r, op));
                        let message = format!(
                            "race: vertex {second} ({}) {} {space} [{}, {}) while vertex {first} ({}) {} [{}, {})",
                            self.describe(r, op),
                            if a.write { "writes" } else { "reads" },
                            a.lo,
                            a.hi,
                            self.describe(r, b.op),
                            if b.write { "writes" } else { "reads" },
                            b.lo,
                            b.hi
                        );
                        return Err(SimError::Race { rank: r, first, second, message });
                    }
                }
            }
        }
        self.ranks[ri].active.extend(acc);
        let o = self.ranks[ri].s.ops[op as usize];
        match o.kind() {
            OpKind::Send | OpKind::SendVec => {
                let data = self.gather_send(r, op);
                let rendezvous = match self.opts.sends {
                    SendMode::Random => self.rng.next() & 1 == 1,
                    SendMode::Eager => false,
                    SendMode::Rendezvous => true,
                };
                let dst = o.peer as u32;
                self.stats.messages += 1;
                self.stats.bytes += data.len() as u64;
                self.ranks[ri].sent_msgs += 1;
                self.ranks[ri].sent_bytes += data.len() as u64;
                let m = self.msgs.len();
                self.msgs.push(Some(Msg { src: r, dst, tag: o.tag, data, send_op: op, rendezvous, hop }));
                let key = (r, dst, o.tag);
                let at = (self.now + self.rng.range(1, 32)).max(self.channel.get(&key).copied().unwrap_or(0));
                self.channel.insert(key, at);
                self.push(at, Ev::Arrive(m));
                if !rendezvous {
                    let t = self.now + self.rng.range(0, 8);
                    self.push(t, Ev::Finish(r, op));
                }
            }
            OpKind::Recv | OpKind::RecvVec => {
                let rs = &self.ranks[ri];
                let hit = rs.unexpected.iter().position(|&m| self.msgs[m].as_ref().is_some_and(|msg| accepts(o.peer, o.tag, msg)));
                match hit {
                    Some(i) => {
                        let m = self.ranks[ri].unexpected.remove(i);
                        self.deliver(m, r, op)?;
                    }
                    None => self.ranks[ri].posted.push(op),
                }
            }
            OpKind::Local | OpKind::LocalVec | OpKind::Calc => {
                let t = self.now + self.rng.range(1, 8);
                self.push(t, Ev::Finish(r, op));
            }
        }
        Ok(())
    }

    fn check_bounds(&self, r: u32, op: u32, acc: &[Access]) -> Result<(), SimError> {
        let size = self.mem[r as usize].len() as u64;
        for a in acc.iter().filter(|a| !a.scratch) {
            if a.hi > size {
                return Err(SimError::OutOfBounds {
                    rank: r,
                    vertex: self.vertex(r, op),
                    message: format!(
                        "vertex {} ({}): user range [{}, {}) reaches past the rank's memory of {size} bytes",
                        self.vertex(r, op),
                        self.describe(r, op),
                        a.lo,
                        a.hi
                    ),
                });
            }
        }
        Ok(())
    }

    /// A local operation's result may alias an operand exactly, never partially.
    fn check_self_overlap(&self, r: u32, op: u32) -> Result<(), SimError> {
        let s = &self.ranks[r as usize].s;
        let o = s.ops[op as usize];
        type List = Vec<(bool, u64, u64)>;
        let (rop, lists): (Op, [List; 3]) = match o.kind() {
            OpKind::Local => {
                let l = s.locals[o.addr as usize];
                let bytes = l.count as u64 * (l.width as u64 / 8);
                let one = |i: u8, a: u64| vec![(l.mem & (1 << i) != 0, a, a + bytes)];
                (l.op(), [one(0, l.b1), one(1, l.b2), one(2, l.b3)])
            }
            OpKind::LocalVec => {
                let l = s.lvecs[o.addr as usize];
                let list =
                    |i: usize| s.pieces_of(l.lists[i]).iter().map(|p| (l.mem & (1 << i) != 0, p.addr, p.addr + p.len as u64)).collect();
                (l.op(), [list(0), list(1), list(2)])
            }
            _ => return Ok(()),
        };
        if rop == ReduceOp::Wtime {
            return Ok(());
        }
        let operands = if rop.is_binary() { &lists[..2] } else { &lists[..1] };
        for operand in operands {
            // Exactly the result's ranges (in place), or none of them.
            if *operand == lists[2] {
                continue;
            }
            for x in &lists[2] {
                if let Some(y) = operand.iter().find(|y| x.0 == y.0 && x.1 < y.2 && y.1 < x.2) {
                    return Err(SimError::Overlap {
                        rank: r,
                        vertex: self.vertex(r, op),
                        message: format!(
                            "vertex {} ({}): the result [{}, {}) partially overlaps an operand [{}, {}) (only exact aliasing is allowed)",
                            self.vertex(r, op),
                            self.describe(r, op),
                            x.1,
                            x.2,
                            y.1,
                            y.2
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    fn bytes_at(&self, r: u32, scratch: bool, addr: u64, len: u64) -> &[u8] {
        let (a, b) = (addr as usize, (addr + len) as usize);
        if scratch {
            &self.ranks[r as usize].scratch[a..b]
        } else {
            &self.mem[r as usize][a..b]
        }
    }

    fn bytes_at_mut(&mut self, r: u32, scratch: bool, addr: u64, len: u64) -> &mut [u8] {
        let (a, b) = (addr as usize, (addr + len) as usize);
        if scratch {
            &mut self.ranks[r as usize].scratch[a..b]
        } else {
            &mut self.mem[r as usize][a..b]
        }
    }

    fn gather_send(&self, r: u32, op: u32) -> Vec<u8> {
        let s = &self.ranks[r as usize].s;
        let o = s.ops[op as usize];
        match o.kind() {
            OpKind::Send => self.bytes_at(r, o.relative(), o.addr, o.len as u64).to_vec(),
            _ => {
                let mut data = Vec::with_capacity(o.len as usize);
                for p in s.pieces_of(s.vecs[o.addr as usize]) {
                    data.extend_from_slice(self.bytes_at(r, o.relative(), p.addr, p.len as u64));
                }
                data
            }
        }
    }

    fn arrive(&mut self, m: usize) -> Result<(), SimError> {
        let msg = self.msgs[m].as_ref().expect("a message arrives once");
        let dst = msg.dst;
        let rs = &self.ranks[dst as usize];
        let hit = rs.posted.iter().position(|&op| {
            let o = rs.s.ops[op as usize];
            accepts(o.peer, o.tag, msg)
        });
        match hit {
            Some(i) => {
                let op = self.ranks[dst as usize].posted.remove(i);
                self.deliver(m, dst, op)
            }
            None => {
                self.ranks[dst as usize].unexpected.push(m);
                Ok(())
            }
        }
    }

    /// Message `m` matched receive `op` of rank `r`: copy the data, schedule both ends' completion.
    fn deliver(&mut self, m: usize, r: u32, op: u32) -> Result<(), SimError> {
        let msg = self.msgs[m].take().expect("a message is delivered once");
        let o = self.ranks[r as usize].s.ops[op as usize];
        let (bytes, capacity) = (msg.data.len() as u64, o.len as u64);
        if bytes > capacity || (o.exact() && bytes < capacity) {
            let (rank, vertex, source) = (r, self.vertex(r, op), msg.src);
            return Err(if bytes > capacity {
                SimError::Truncation { rank, vertex, source, bytes, capacity }
            } else {
                SimError::Short { rank, vertex, source, bytes, capacity }
            });
        }
        if o.kind() == OpKind::Recv {
            let n = msg.data.len() as u64;
            self.bytes_at_mut(r, o.relative(), o.addr, n).copy_from_slice(&msg.data);
        } else {
            let s = &self.ranks[r as usize].s;
            let pieces: Vec<(u64, u64)> = s.pieces_of(s.vecs[o.addr as usize]).iter().map(|p| (p.addr, p.len as u64)).collect();
            let mut at = 0usize;
            for (addr, len) in pieces {
                let take = (len as usize).min(msg.data.len() - at);
                self.bytes_at_mut(r, o.relative(), addr, take as u64).copy_from_slice(&msg.data[at..at + take]);
                at += take;
            }
        }
        let h = &mut self.ranks[r as usize].hop[op as usize];
        *h = (*h).max(msg.hop + 1);
        let t = self.now + self.rng.range(0, 4);
        self.push(t, Ev::Finish(r, op));
        if msg.rendezvous {
            let t = self.now + self.rng.range(0, 4);
            self.push(t, Ev::Finish(msg.src, msg.send_op));
        }
        Ok(())
    }

    fn finish(&mut self, r: u32, op: u32) -> Result<(), SimError> {
        let ri = r as usize;
        let o = self.ranks[ri].s.ops[op as usize];
        match o.kind() {
            OpKind::Local | OpKind::LocalVec => {
                self.stats.local_ops += 1;
                self.compute(r, op)?;
            }
            _ => {}
        }
        let rs = &mut self.ranks[ri];
        rs.state[op as usize] = State::Done;
        rs.remaining -= 1;
        rs.active.retain(|a| a.op != op);
        self.stats.ops += 1;
        let hop = rs.hop[op as usize];
        self.stats.rounds = self.stats.rounds.max(hop);
        let deps: Vec<u32> = rs.s.dependents(op as usize).to_vec();
        for d in deps {
            self.release(r, d, hop);
        }
        Ok(())
    }

    /// One prerequisite of op `d` is satisfied.
    fn release(&mut self, r: u32, d: u32, hop: u64) {
        let rs = &mut self.ranks[r as usize];
        let h = &mut rs.hop[d as usize];
        *h = (*h).max(hop);
        let c = &mut rs.counters[d as usize];
        *c -= 1;
        if *c == 0 {
            let t = self.now + self.rng.range(0, 8);
            self.push(t, Ev::Start(r, d));
        }
    }

    /// Executes local operation `op` of rank `r`.
    fn compute(&mut self, r: u32, op: u32) -> Result<(), SimError> {
        let s = &self.ranks[r as usize].s;
        let o = s.ops[op as usize];
        type List = Vec<(bool, u64, u64)>;
        let (rop, dt, width, lists): (Op, DataType, u32, [List; 3]) = if o.kind() == OpKind::Local {
            let l = s.locals[o.addr as usize];
            let bytes = l.count as u64 * (l.width as u64 / 8);
            let one = |i: u8, a: u64| vec![(l.mem & (1 << i) != 0, a, bytes)];
            (l.op(), l.dt(), l.width, [one(0, l.b1), one(1, l.b2), one(2, l.b3)])
        } else {
            let l = s.lvecs[o.addr as usize];
            let list = |i: usize| s.pieces_of(l.lists[i]).iter().map(|p| (l.mem & (1 << i) != 0, p.addr, p.len as u64)).collect();
            (l.op(), l.dt(), l.width, [list(0), list(1), list(2)])
        };
        if rop == ReduceOp::Wtime {
            let t = (self.now as f64 * 1e-9).to_ne_bytes();
            let mut at = 0usize;
            for &(sc, addr, len) in &lists[2] {
                let take = (len as usize).min(8 - at);
                self.bytes_at_mut(r, sc, addr, take as u64).copy_from_slice(&t[at..at + take]);
                at += take;
            }
            return Ok(());
        }
        let gather = |this: &Self, l: &List| -> Vec<u8> {
            let mut v = Vec::new();
            for &(sc, addr, len) in l {
                v.extend_from_slice(this.bytes_at(r, sc, addr, len));
            }
            v
        };
        let a = gather(self, &lists[0]);
        let b = if rop.is_binary() { gather(self, &lists[1]) } else { Vec::new() };
        let mut out = vec![0u8; a.len()];
        let res = match rop {
            Op::Builtin(o) => kernel(o, dt, width, &a, &b, &mut out),
            Op::User(u) => {
                let Some(f) = self.user else {
                    return Err(SimError::Setup(format!(
                        "rank {r}: vertex {} applies {}, and no function was given for it (simulate_user)",
                        self.vertex(r, op),
                        rop.name()
                    )));
                };
                out.copy_from_slice(&b);
                f(u, &a, &mut out, a.len() / (width as usize / 8));
                Ok(())
            }
        };
        let written = match res {
            Ok(()) => out.len(),
            Err(i) => i * (width as usize / 8),
        };
        let mut at = 0usize;
        for &(sc, addr, len) in &lists[2] {
            if at >= written {
                break;
            }
            let take = (len as usize).min(written - at);
            self.bytes_at_mut(r, sc, addr, take as u64).copy_from_slice(&out[at..at + take]);
            at += take;
        }
        match res {
            Ok(()) => Ok(()),
            Err(i) => Err(SimError::DivByZero { rank: r, vertex: self.vertex(r, op), element: i as u64 }),
        }
    }
}

fn accepts(peer: i32, tag: i32, m: &Msg) -> bool {
    (peer == -1 || peer as u32 == m.src) && (tag == -1 || tag == m.tag)
}

#[cfg(test)]
mod tests;
