//! The executor: dependency counters, the ready queue, matching, and the
//! message protocols, behind one lock.
//!
//! # Executions
//!
//! An execution of a schedule owns only what changes: one dependency counter
//! per operation (copied from the schedule's `deps`), its scratchpad, and the
//! receives it has posted. Buffers for both come from a per-schedule pool, so
//! running a schedule again allocates nothing. Operations whose counter
//! reaches zero go on one FIFO ready queue, drained in a loop (never by
//! recursion: a chain of a million operations that each finish at once keeps
//! the stack flat, as in the thesis' section 4.2.3).
//!
//! # Matching
//!
//! A message carries (schedule id, execution number, tag) and comes from a
//! source. It is matched against the posted receives of that execution in
//! posting order; if none matches (or the execution has not started here
//! yet) it waits in the unexpected queue of that execution key, in arrival
//! order. A receive that starts searches that queue first. Messages between
//! two ranks travel in order, so same-tag messages cannot overtake.
//!
//! # Protocols
//!
//! * Small messages go eagerly through the pair's ring. The receiver can
//!   buffer at most `unexpected_bytes` of them (split as credit per sender);
//!   a sender past its credit switches to rendezvous, so it waits instead of
//!   the receiver buffering without bound.
//! * Large messages send an RTS. If the sender's buffer lies in its shared
//!   heap (`GOAL_Alloc`), the receiver copies straight out of it (one copy, no
//!   kernel); if its size is in the CMA range, the receiver reads it with
//!   `process_vm_readv`; otherwise the receiver answers CTS and both sides copy
//!   through the pair's stream at the same time (a pipelined two-copy path).
//!   In all three the receiver then answers FIN (stream: the sender finishes
//!   when its last byte is in the stream).
//! * Messages to oneself are copied locally.
//!
//! An execution that fails (truncation, division by zero, a lost peer) is
//! reported at once; anything still in flight for it is recognised by the
//! slot's generation number and finished harmlessly (stream bytes are still
//! consumed or produced, so the pair's stream stays in step).

use crate::adapt;
use crate::error::{Error, ErrorKind};
use crate::fuse;
use crate::kpath::{self, Chan, KPath, KRec, IN_KERNEL};
use crate::localop::{self, KernelError};
use crate::proto::{self, Head};
use goal_sched::{OpKind, OpRec, ReduceOp};
use goal_net::{Event, NetNode};
use goal_transport::kchain::{KOp, KOpKind, KRing, Link, SockType};
use goal_transport::shm::ShmNode;
use goal_transport::PeerLost;
use std::collections::{HashMap, VecDeque};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Copies of at least this many bytes take long enough (10 us and more; a
/// 4 MiB copy about 300 us here) to count as work of their own: a local
/// operation this long first wakes the peers that messages were just
/// written to, and the progress heuristics note when one ended (see
/// [`Engine::long_end`]).
const LONG_COPY_BYTES: usize = 64 << 10;

/// A local operation of at least twice this many bytes runs in pieces of
/// this size (some shorter copies in four, see [`LOCAL_PIECES_FROM`]), and
/// between pieces the engine moves what is waiting: arrived messages,
/// stream bytes, queued sends. Run whole, a gather's 4 MiB copy at the
/// root (some 120 us here) held the peers' next messages for its whole
/// length; in pieces the copy overlaps them (2 ranks, gather 1 MiB per
/// rank: 36-48 us whole, 29 us in pieces).
const LOCAL_PIECE_BYTES: usize = 64 << 10;

/// Copies from this size on (up to twice [`LOCAL_PIECE_BYTES`]) run in four
/// pieces too while receives of their execution wait: a gather's root
/// copying its own 64 KiB block was done before its peer's request came,
/// and read the block after it (2 ranks, 64 KiB: 6.2-7.3 us); in pieces the
/// request finds it busy and the peer writes its block during the copy
/// (see [`Write`]).
const LOCAL_PIECES_FROM: usize = 64 << 10;

/// A fused receive (see [`fuse`]) copies its message out of the stream this
/// much at a time into a buffer that stays in the cache, and combines it
/// from there.
const FUSE_CHUNK: usize = 16 << 10;

/// Local copies up to this size are copied at once, without the general
/// path's checks (see [`copy_small`]).
const SMALL_COPY: usize = 256;

/// From this size a receive that could be combined as it comes (see
/// [`fuse`]) answers an offer of Cross Memory Attach with a CTS that asks
/// for the stream, for this message only: there the sender's copy into the
/// stream overlaps the receiver's combining, where by CMA the receiver
/// alone reads, then combines (2 ranks, reduce 1 MiB: 87-112 us fused
/// through the stream, 154 us by CMA). Below it the data stays in the
/// cache between the read and the operation, and CMA's early FIN frees
/// the sender sooner (256 KiB: 16 us for the sender, 20 for the root).
const FUSE_CMA_MAX: usize = 512 << 10;
/// A message read from the sender's memory (CMA, the shared heap) from
/// this size on is read after the pass that matched it, in pieces of
/// [`READ_PIECE`] per pass, not at once where its RTS met its receive.
/// Read at once, a receive that started with its execution and found its
/// RTS waiting held back the sends that start after it: 2 ranks, allgather
/// of 4 MiB, both reading by CMA, took 1000-1700 us in a third to half of
/// the iterations (the peer waited for this rank's RTS until the read was
/// over) and 640-720 us in the rest, where MPICH and Open MPI took 680-740
/// every time. MPICH reads in pieces of 512 KiB too.
const READ_LATER: usize = 64 << 10;
/// See [`READ_LATER`].
const READ_PIECE: usize = 512 << 10;

/// A compiled schedule as the runtime holds it.
pub(crate) struct SchedInner {
    /// Position in this process' compile order: the same on every rank.
    pub id: u32,
    /// The compiled form.
    pub s: goal_sched::Schedule,
    /// Executions started so far (the next execution's number). Written
    /// only with the engine lock held, so a load and a store suffice: a
    /// locked read-modify-write would wait for the send just written to a
    /// peer's ring to leave the store buffer.
    pub runs: AtomicU32,
    /// Executions not yet finished (written as `runs` is, read by anyone).
    pub running: AtomicU32,
    /// Counter and scratchpad buffers of finished executions, for reuse.
    pool: LockedPool,
    /// Each operation's initial dependency counter, in one array that a
    /// Run copies as a block.
    deps: Box<[u32]>,
    /// Receives that may be combined as they come, by receive index.
    fuse: Box<[fuse::Plan]>,
    /// Sources of the receives of at least [`EXCHANGE_MIN`] bytes that
    /// start with the execution, sorted: a large send that starts with it
    /// too, to one of them, is half of an exchange (see `adapt`).
    opening_recvs: Box<[u32]>,
    /// (source, tag) of every receive, sorted, wildcards as -1: whether a
    /// message that no posted receive took may still be taken by one (see
    /// [`Engine::stash`]).
    recv_keys: Box<[(i32, i32)]>,
}

/// Receives from this size on count for [`SchedInner::opening_recvs`]
/// (adapt's smallest size class).
const EXCHANGE_MIN: u64 = 64 << 10;

/// How long making a kernel-mode channel to another machine may take
/// (connecting, or taking the connection and its hello). On a failure
/// the operation stays on goal-net's path.
const CHANNEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

impl SchedInner {
    pub fn new(id: u32, s: goal_sched::Schedule) -> SchedInner {
        let deps = s.ops.iter().map(|o| o.deps).collect();
        let fuse = fuse::plan(&s).into_boxed_slice();
        let mut opening_recvs: Vec<u32> = s.ops[..s.independent as usize]
            .iter()
            .filter(|o| matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) && o.peer >= 0 && o.len as u64 >= EXCHANGE_MIN)
            .map(|o| o.peer as u32)
            .collect();
        opening_recvs.sort_unstable();
        opening_recvs.dedup();
        let opening_recvs = opening_recvs.into_boxed_slice();
        let mut recv_keys: Vec<(i32, i32)> =
            s.ops.iter().filter(|o| matches!(o.kind(), OpKind::Recv | OpKind::RecvVec)).map(|o| (o.peer, o.tag)).collect();
        recv_keys.sort_unstable();
        recv_keys.dedup();
        let recv_keys = recv_keys.into_boxed_slice();
        SchedInner { id, s, runs: AtomicU32::new(0), running: AtomicU32::new(0), pool: LockedPool(UnsafeCell::new(Vec::new())), deps, fuse, opening_recvs, recv_keys }
    }

    /// Whether some receive of the schedule could take a message from
    /// `src` with `tag` (a wildcard receive takes any).
    fn may_receive(&self, src: u32, tag: i32) -> bool {
        let has = |k: (i32, i32)| self.recv_keys.binary_search(&k).is_ok();
        let src = src as i32;
        has((src, tag)) || has((src, -1)) || has((-1, tag)) || has((-1, -1))
    }

    /// The fusion plan of receive `op`, if it has one.
    fn fusable(&self, op: u32) -> Option<fuse::Plan> {
        self.fuse.binary_search_by_key(&op, |p| p.recv).ok().map(|i| self.fuse[i])
    }
}

/// A schedule's pool of execution buffers, touched only by the engine, that
/// is with the engine lock held. A mutex of its own cost two locked
/// instructions per Run and two per completion, on the path of an 8-byte
/// collective.
// Boxed buffers: a Run and a completion move one pointer each, not 80 bytes.
#[allow(clippy::vec_box)]
struct LockedPool(UnsafeCell<Vec<Box<ExecBufs>>>);

// SAFETY: the pool is only reached through `Engine::pool`, which takes
// `&mut Engine`: the caller holds the process' one engine lock, so no two
// threads touch a pool at once.
unsafe impl Sync for LockedPool {}

/// An execution's schedule, by pointer: an `Arc` clone and drop per
/// execution were two of the fourteen locked instructions of a 2-rank
/// barrier's Run and Wait.
///
/// Valid while an execution holding it exists: a schedule with executions
/// in flight is kept by its [`Schedule`](crate::Schedule) handles and, once
/// the last of those is dropped, by the engine ([`Engine::orphan`]) until
/// `running` reaches zero. A copy taken out of an `Exec` must not be used
/// after that execution completes.
#[derive(Clone, Copy)]
struct SchedRef(std::ptr::NonNull<SchedInner>);

impl SchedRef {
    fn new(s: &Arc<SchedInner>) -> SchedRef {
        SchedRef(std::ptr::NonNull::from(&**s))
    }
}

impl std::ops::Deref for SchedRef {
    type Target = SchedInner;
    fn deref(&self) -> &SchedInner {
        // SAFETY: the schedule outlives every execution of it (see the type's
        // comment), and only executions hold a `SchedRef`; `SchedInner` is
        // only read through shared references (its mutable parts are atomics
        // and the engine-locked pool).
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `SchedRef` stands for a shared `&SchedInner`, and `SchedInner` is
// `Sync` (it is shared through `Arc` between threads already).
unsafe impl Send for SchedRef {}

/// A 64-byte aligned block, so scratchpads are aligned for any element type.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// What an execution owns, kept between executions so that a rerun
/// allocates nothing.
struct ExecBufs {
    counters: Vec<u32>,
    scratch: Vec<Line>,
    /// Posted receives, in posting order.
    posted: Vec<Posted>,
    /// The state the handle watches; reused once no handle holds it.
    shared: Arc<ExecShared>,
}

impl ExecShared {
    fn new(rt: &Arc<crate::Runtime>, sched_id: u32) -> Arc<ExecShared> {
        Arc::new(ExecShared { state: AtomicI32::new(RUNNING), error: Mutex::new(None), rt: rt.clone(), sched_id, run_at: AtomicU64::new(0) })
    }
}

/// The state of an execution that its handle observes: all a handle is
/// (see [`Handle`](crate::Handle)).
pub struct ExecShared {
    /// 0 running, 1 finished, -1 failed.
    pub state: AtomicI32,
    /// Why it failed.
    pub error: Mutex<Option<Error>>,
    /// The runtime, for the handle: held here, with the reused state,
    /// rather than cloned into every handle (a locked increment in Run and
    /// a decrement in Wait). Schedules hold their pooled states, so a
    /// schedule kept past `finalize` keeps the runtime's memory until it
    /// is dropped.
    pub rt: Arc<crate::Runtime>,
    /// The schedule's id: with `run_at`, Wait learns from them whether the
    /// application computes after this schedule's Runs (see
    /// `progress::AppMark`).
    pub sched_id: u32,
    /// The time of this execution's Run (`ticks`), written by Run before
    /// the handle exists; only in modes with a helper, whose Wait reads it.
    pub run_at: AtomicU64,
}

/// Execution running, finished, failed.
pub const RUNNING: i32 = 0;
/// See [`RUNNING`].
pub const DONE: i32 = 1;
/// See [`RUNNING`].
pub const FAILED: i32 = -1;

/// An operation of an execution: slot, generation of the slot, op index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpRef {
    slot: u32,
    gen: u32,
    op: u32,
}

struct Posted {
    op: u32,
    peer: i32,
    tag: i32,
}

struct Exec {
    sched: SchedRef,
    seq: u32,
    gen: u32,
    /// Boxed: an execution's buffers move from the pool into its slot and
    /// back on every Run, as one pointer rather than 80 bytes.
    bufs: Box<ExecBufs>,
    remaining: u32,
}

enum UnexpKind {
    /// Eager data, copied out of the ring, and what its envelope says about
    /// the send's channel (kernel mode), if anything.
    Eager(Vec<u8>, Option<Ctl>),
    /// A large message waiting at its sender.
    Rts { mode: u8, token: u32, addr: u64 },
    /// A message from this rank to itself, still in the sender's buffer.
    SelfSend(OpRef),
}

/// What an EAGER envelope says about the send's channel (kernel mode).
#[derive(Clone, Copy)]
struct Ctl {
    /// `MODE_OFFER` or `MODE_SWITCH`.
    mode: u8,
    /// The sender's descriptor (offer), or its port (offer over TCP).
    fd: u32,
    /// The sender's operation and schedule.
    op: u32,
    sched: u32,
    /// The offer's nonce (over TCP).
    nonce: u32,
}

struct Unexp {
    src: u32,
    tag: i32,
    len: u32,
    kind: UnexpKind,
}

/// A message waiting for room in a peer's ring.
struct Out {
    head: Head,
    /// For EAGER: the send whose data goes with it (finished once written).
    send: Option<OpRef>,
}

/// A rendezvous send waiting for its CTS or FIN.
struct RdvSend {
    r: OpRef,
    peer: u32,
    /// The message's length: what the receiver waits for, even once the
    /// send's execution has failed here.
    len: usize,
    /// How the receiver was told to fetch it (RTS mode).
    mode: u8,
    /// A large message came from the peer at the same time (see `adapt`).
    exchange: bool,
}

/// A send being copied into a pair's stream.
struct StreamOut {
    token: u32,
    pos: usize,
    len: usize,
    /// When its first push began (the transfer's time goes to `adapt`; time
    /// queued behind earlier sends is not the path's).
    since: Option<Instant>,
    /// What the receiver still has to copy out after the latest push that
    /// moved bytes (see [`adapt::stream_trail_ns`]); `adapt` adds it to the
    /// pushes' time.
    tail_ns: u64,
}

/// A receive reading its message from the sender's memory (see [`READ_LATER`]).
struct Read {
    r: OpRef,
    src: u32,
    len: usize,
    /// `proto::MODE_CMA` or `proto::MODE_HEAP`.
    mode: u8,
    token: u32,
    /// Where the message starts in the sender's memory (CMA) or heap.
    addr: u64,
    /// Bytes read so far.
    done: usize,
    /// Time spent reading them, for the FIN (see `adapt`).
    ns: u64,
    /// The whole message, not a part of a split one.
    whole: bool,
}

/// A rendezvous send that writes its message into the receiver's memory
/// (Cross Memory Attach, `process_vm_writev`) because the receiver asked
/// it to (`CTS` in `MODE_PUSH`): the receiver had work of its own queued
/// (a gather's root copies its own block), so the sender's core makes the
/// copy that the receiver's would otherwise make after that work. A 2-rank
/// gather's root then spends the time of one copy, not two.
struct Write {
    token: u32,
    peer: u32,
    len: usize,
    /// Where the receive buffer starts in the receiver's memory.
    addr: u64,
    /// Bytes written so far (from `start`).
    done: usize,
    /// Where the write began: 0, or the receiver's part of a split message.
    start: usize,
    /// Time spent writing so far, for `PUSHED` (see [`COLD_WRITES`]).
    ns: u64,
}

/// CMA messages from this size on, whose receiver is idle and whose sender
/// waits in Wait, are copied by both: the receiver reads the first half
/// while the sender writes the second (`CTS` in `MODE_SPLIT`). One core
/// reading the whole message leaves the other idle; two processes on the
/// two CPUs here, medians of 300: 64 KiB 8.1 -> 6.3 us, 256 KiB 25.5 ->
/// 21.2, 1 MiB 99.7 -> 63.2, 4 MiB 488 -> 287.
const SPLIT_MIN: usize = 64 << 10;

/// [`SPLIT_MIN`] for a message from the sender's shared heap, which the
/// receiver reads with a plain `memcpy`: only there does the extra control
/// message and the sender's `process_vm_writev` pay (see the measurements
/// in `docs/design.md`).
const HEAP_SPLIT_MIN: usize = 512 << 10;

/// The receiver's side of a split message (see [`SPLIT_MIN`]).
struct SplitIn {
    /// The receiver's part: bytes `0..half`.
    half: usize,
    /// The message's start in the sender's memory.
    addr: u64,
    /// How the receiver reads its part: `proto::MODE_CMA` or `proto::MODE_HEAP`.
    mode: u8,
    /// The receiver's part is read.
    read: bool,
    /// The sender's part is written.
    written: bool,
    /// Whether the sender's write is to be judged (see `written_to`).
    judge: bool,
    /// How long the receiver's read of its part took, and the sender's
    /// write of its own (see [`COLD_WRITES`]).
    read_ns: u64,
    write_ns: u64,
}

/// A few receive buffers (their start addresses) that a peer's latest long
/// messages went to, the oldest replaced first: an application may cycle
/// through several buffers (double buffering, a collective's blocks).
#[derive(Clone, Default)]
struct Recent {
    /// Start addresses (0: a free place), and when each was put.
    at: [u64; 4],
    when: [u32; 4],
    clock: u32,
}

impl Recent {
    /// Whether `at` is among them; removes it.
    fn take(&mut self, at: u64) -> bool {
        match self.at.iter_mut().find(|a| **a == at && at != 0) {
            Some(a) => {
                *a = 0;
                true
            }
            None => false,
        }
    }

    /// Adds `at` (0: nothing), in a free place or the oldest's.
    fn put(&mut self, at: u64) {
        if at == 0 || self.at.contains(&at) {
            return;
        }
        let i = match self.at.iter().position(|&a| a == 0) {
            Some(i) => i,
            None => (0..self.at.len()).min_by_key(|&i| self.when[i]).unwrap_or(0),
        };
        self.clock = self.clock.wrapping_add(1);
        self.at[i] = at;
        self.when[i] = self.clock;
    }
}

/// Messages at least this long may be pushed (below, the extra message
/// costs more than the copy it moves to the sender).
const PUSH_MIN: usize = 64 << 10;

/// A sender's write into this rank's memory (a push, or its part of a split
/// message) counts as cold when it took this many percent of the time this
/// rank's own copy of as much took, or more (its part of the same split
/// message, which is cut so that both parts take as long; its fastest
/// whole read of a message from the same sender, for a push).
///
/// Where the write lands decides. An application that reads what it
/// receives leaves the receive buffer in its own core's cache; the other
/// core's write must then take each line from there, and the application's
/// next read takes it back. In a loop that never reads its results (the
/// thesis' benchmark, 6.5) the lines stay with the writing core, and the
/// write is the faster copy. Two ranks, bcast by splits, the sender's write
/// against the receiver's read of its half, per byte: 0.8x at 64 KiB to
/// 1 MiB without reading, 1.25-2.0x with every rank reading its result
/// after each bcast; and reading, the whole iteration (bcast and read)
/// took 12-15 us at 64 KiB with splits against 7-9 without, 256 KiB 39-50
/// against 23-36, 1 MiB 116-171 against 104-175. A push (a gather's root
/// copies its own block meanwhile), against the root's own read: 1.3-1.4x
/// at 64 and 256 KiB even without reading, where the root's own reads were
/// the faster gather too (4.0-4.3 against 5.0-5.4 us at 64 KiB), 2.7-3.1x
/// reading (gather and read 15-17 against 21-31 us).
const COLD_WRITES: u64 = 130;

/// Writes from this size on are not judged (see [`COLD_WRITES`]): from
/// 1 MiB on, whether the application reads its results changed the
/// writes' speed less than the host's noise did (2 ranks, bcast of 1 MiB,
/// sender's write against receiver's read: 0.75-1.0x without reading,
/// 1.2-2.2x reading; a run of outliers then stopped the splits of a loop
/// that read nothing, 30 -> 62 us), and the whole iteration gained less.
const COLD_MAX: usize = 1 << 20;

/// Cold writes in a row (see [`COLD_WRITES`]) after which this rank takes
/// a sender's messages without its writes for a while: one slow write is
/// as likely a preempted writer on this shared machine (a run of bcasts
/// that read nothing judged 8 of 22 writes cold one at a time).
const COLD_VOTES: u8 = 3;

/// Messages from a sender whose writes were cold (see [`COLD_VOTES`]) that
/// this rank then takes without them, doubled each time the writes are
/// still cold when it tries again, up to [`COLD_SKIP_MAX`].
const COLD_SKIP: u32 = 32;
const COLD_SKIP_MAX: u32 = 1024;

/// A streamed send that was half of an exchange, waiting to be timed.
///
/// By the stream, each rank of an exchange copies its message in and its
/// peer's out, one after the other on its core; the sender's pushes alone
/// (the lone message's measure) left out the copy out, and an exchange by
/// the stream looked as fast as by CMA where it took 1.7-2x as long (2
/// ranks, allgather of 256 KiB: 37-40 us against 20-24 by CMA, in a third
/// of the runs). So the send is timed from its first push until the
/// messages then in the stream from the peer are copied out as well; by
/// CMA the receiver's read is this core's whole share already.
struct ExchangeTiming {
    since: Instant,
    len: usize,
    /// Receives from the peer's stream still to finish.
    incoming: usize,
}

/// A receive being filled from a pair's stream.
struct StreamIn {
    r: OpRef,
    pos: usize,
    len: usize,
    /// Combined with its local operation as it comes (see [`fuse`]).
    fused: Option<Box<Fused>>,
}

/// A receive being combined with its local operation as it comes.
struct Fused {
    /// The local operation, and its parameters.
    op: u32,
    l: goal_sched::LocalRec,
    /// The message is the operation's first operand (else its second).
    first: bool,
    /// Elements combined so far.
    elems: usize,
    /// The start of an element split between two pops.
    carry: [u8; 8],
    carry_len: usize,
    /// The first element divided by zero.
    err: Option<usize>,
}

/// Sizes that pick a protocol.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Largest eager message.
    pub eager: usize,
    /// Largest eager message from a shared-heap buffer (larger ones are
    /// read straight out of the heap).
    pub heap_eager: usize,
    /// Sizes read by CMA (inclusive); others of non-heap buffers use the stream.
    pub cma: (usize, usize),
    /// Eager credit per sender.
    pub credit: u64,
    /// Largest eager message to a peer on another machine, reached over
    /// several rails.
    pub net_eager: usize,
    /// The same to a peer reached over a single rail.
    pub net_eager_one_rail: usize,
    /// Rendezvous sizes from which stream or CMA is chosen per message
    /// from measurements (`adapt`); `usize::MAX`: the `cma` range decides.
    pub adapt_from: usize,
}

/// Everything the progress engine owns; one thread at a time.
pub(crate) struct Engine {
    pub rank: u32,
    pub size: u32,
    pub shm: ShmNode,
    /// The network, when some peers are on other machines.
    pub net: Option<NetNode>,
    /// Per peer: reached through `net` rather than `shm`.
    remote: Vec<bool>,
    pub th: Thresholds,
    st: State,
    /// The kernel mode's channels and ring, when it is on.
    kp: Option<KPath>,
    /// Stream or CMA, per large message (see `adapt`).
    adapt: adapt::Adapt,
    /// Whether a busy receiver may ask its senders to write (see [`Write`]).
    pushes: bool,
    /// Whether an idle receiver may ask its senders to write part of a
    /// message (see [`SPLIT_MIN`]): not with more ranks than cores.
    splits: bool,
    /// How many application threads of this process wait in Wait (the
    /// runtime's count): a sender writes part of a split message only then.
    app_waiting: Option<Arc<AtomicU32>>,
    /// Set while an application thread polls from Wait (before it counts
    /// among `app_waiting`): a sender may take on part of a split message.
    pub in_wait: bool,
}

struct State {
    rank: u32,
    execs: Vec<Option<Exec>>,
    gens: Vec<u32>,
    free_slots: Vec<u32>,
    /// Active executions per schedule id: (execution number, slot).
    active: Vec<Vec<(u32, u32)>>,
    /// Executions started so far per schedule id (its `runs`, by id): a
    /// message for an earlier one that is not active came for an execution
    /// that finished without it (see [`Engine::stash`]).
    started: Vec<u32>,
    /// Per schedule id, what such a message showed: the schedule's next
    /// execution here fails with it (see [`Engine::stale`]).
    stale: HashMap<u32, Error>,
    /// Executions (by slot) that end with an earlier one's mismatch.
    poisoned: HashMap<u32, Error>,
    /// Keys of executions that finished while messages waited for them.
    stray_keys: Vec<u64>,
    /// Schedules dropped by the application with executions still running,
    /// kept until those finish (see `SchedRef`).
    orphans: Vec<Arc<SchedInner>>,
    unexp: KeyMap<u64, VecDeque<Unexp>>,
    /// Emptied queues of `unexp`, and payload buffers of unexpected eager
    /// messages already delivered, for the next ones: an unexpected message
    /// cost a malloc and a free for each (callgrind: 130 instructions of
    /// 500 on its path).
    spare_queues: Vec<VecDeque<Unexp>>,
    spare_bufs: Vec<Vec<u8>>,
    /// Keys of executions that failed here: what still arrives for them is released at once.
    dead: std::collections::HashSet<u64, KeyHash>,
    ready: VecDeque<OpRef>,
    /// Per peer: messages waiting for ring space, in order.
    outq: Vec<VecDeque<Out>>,
    outq_peers: Vec<u32>,
    rdv: Vec<Option<RdvSend>>,
    rdv_free: Vec<u32>,
    stream_out: Vec<VecDeque<StreamOut>>,
    stream_in: Vec<VecDeque<StreamIn>>,
    /// Receives reading from their senders' memory, in order of arrival.
    reads: VecDeque<Read>,
    /// Sends writing into their receivers' memory (see [`Write`]).
    writes: VecDeque<Write>,
    /// Receives whose senders write them (`CTS` in `MODE_PUSH`), by (sender, its token).
    /// With the receive, its length and whether the write is to be judged
    /// (see `written_to`).
    pushes_in: HashMap<(u32, u32), (OpRef, usize, bool)>,
    /// Per peer: it was not allowed to write into this process (ask no more).
    push_refused: Vec<bool>,
    /// Per peer: messages still to take without its writes, since its last
    /// writes here were cold (see [`COLD_WRITES`]).
    cold: Vec<u32>,
    /// Per peer: its cold writes in a row, and how many messages the last
    /// cold spell skipped (0: none since a warm write).
    cold_votes: Vec<u8>,
    cold_skip: Vec<u32>,
    /// Per peer: picoseconds per byte of this rank's fastest whole read of a
    /// long message from its memory into the buffer its previous read went
    /// to (0: none yet), what its pushes are judged by.
    read_ps: Vec<u64>,
    /// Per peer: the buffers its latest long messages went to that it
    /// wrote itself (all or part). Only a write into a buffer it wrote the
    /// time before is judged: the first finds the lines where this rank's
    /// own copy left them.
    written_to: Vec<Recent>,
    /// Per peer: the buffers its latest long messages went to that this
    /// rank read whole.
    read_to: Vec<Recent>,
    /// Writes judged cold, for `GOAL_DEBUG`'s summary.
    cold_writes: u64,
    /// Receiver: messages split with their senders (`CTS` in `MODE_SPLIT`),
    /// by (sender, its token).
    split_in: HashMap<(u32, u32), SplitIn>,
    /// Sender: split messages this rank writes its part of, by token, with
    /// how many of the two parts (its write, the receiver's read) are left
    /// and the longest time (ns) one of them took so far.
    split_out: HashMap<u32, (u8, u64)>,
    /// A CMA read of a peer's memory has succeeded here (a split is asked
    /// only then: a receiver refused the read would want the stream).
    cma_reads_work: bool,
    /// Receives that their senders wrote here (see [`Write`]), for the debug line.
    pushed: u64,
    /// Messages split with their senders, and how many of those the
    /// senders declined (see [`SPLIT_MIN`]), for the debug line.
    split: [u64; 2],
    /// Failed executions whose buffers senders still write into (see
    /// [`Engine::complete_slow`]), by slot, with the error to report.
    draining: HashMap<u32, Error>,
    /// While a Run starts its execution's independent operations: how many
    /// are still to start after the current one.
    run_left: u32,
    /// Per peer: a streamed exchange's send still to be timed.
    exchange_timing: Vec<Option<ExchangeTiming>>,
    /// Streams in and out, and reads, not finished.
    streams_active: u32,
    /// Eager bytes sent to each peer (credit accounting).
    eager_sent: Vec<u64>,
    /// Cached credits each peer has returned.
    eager_returned: Vec<u64>,
    /// Eager bytes I have released per source, and what I published.
    released: Vec<u64>,
    /// Per source: the number of the last poll in which a message of it
    /// that may match a receive (an RTS, or an eager message not copied
    /// straight into a posted receive) was queued for the poll's end. A
    /// later eager message of that source in the same poll must not take
    /// the fast path: it would take the receive the queued one is owed.
    queued_in: Vec<u64>,
    /// Polls made (`poll_messages`), numbering them for `queued_in`.
    poll_no: u64,
    published: Vec<u64>,
    /// Peers known to be gone.
    lost: Vec<Option<String>>,
    finished_ops: usize,
    /// When (in `ticks`) the last copy of at least [`LONG_COPY_BYTES`]
    /// ended: see [`Engine::long_end`].
    long_end: u64,
    /// Some peer's released credit reached `credit_step` unpublished bytes.
    credit_due: bool,
    /// Released credit is published in steps of a quarter of the credit.
    credit_step: u64,
    /// Bytes of self-sends copied aside and not yet received.
    self_buffered: u64,
    passes: u32,
    last_check: Instant,
    discard: Vec<u8>,
    /// Reused between polls: what arrived, handled after the poll.
    arrived: Vec<(u32, Head, Option<Vec<u8>>)>,
    /// A poll is handling what arrived: a local operation started from it
    /// runs whole, since polling again in its pauses would handle later
    /// messages before the earlier ones still in `arrived` (seen: wrong
    /// data with several collectives in flight at once).
    in_poll: bool,
    /// A local operation runs in pieces: those started in its pauses run whole.
    in_pieces: bool,
    /// Where fused receives combine their message from (see [`FUSE_CHUNK`]).
    bounce: Vec<u8>,
    /// Stream receives combined with their local operation as they came.
    fused: u64,
    /// Receives whose bytes arrive by network bulk transfer, by (source, token).
    net_in: KeyMap<(u32, u32), OpRef>,
    /// Peers the network lost in a poll (rank, why), handled after its
    /// messages and transfers.
    net_lost: Vec<(u32, String)>,
}

#[inline]
fn key(sched: u32, seq: u32) -> u64 {
    (sched as u64) << 32 | seq as u64
}

/// The hasher of the engine's maps, whose keys are small integers from the
/// group's own ranks (execution keys, transfer tokens): a rotate, a xor and
/// a multiply per word (the multiply spreads the key into the high bits
/// hashbrown's control bytes use). SipHash cost 210 instructions per
/// unexpected message, in three lookups.
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type KeyHash = std::hash::BuildHasherDefault<KeyHasher>;
type KeyMap<K, V> = HashMap<K, V, KeyHash>;

/// Most spare buffers and queues kept (see `State::spare_bufs`), and the
/// largest buffer kept.
const SPARES: usize = 32;
const SPARE_BUF_BYTES: usize = 64 << 10;

/// Where an operation's bytes are: one or more (pointer, length) pieces.
enum Pieces {
    One([(*mut u8, usize); 1]),
    Many(Vec<(*mut u8, usize)>),
}

impl Pieces {
    fn as_slice(&self) -> &[(*mut u8, usize)] {
        match self {
            Pieces::One(a) => a,
            Pieces::Many(v) => v,
        }
    }
}

impl Engine {
    pub fn new(rank: u32, size: u32, shm: ShmNode, th: Thresholds) -> Engine {
        TRACE.store(std::env::var_os("GOAL_TRACE").is_some_and(|v| v != "0"), Ordering::Relaxed);
        let n = size as usize;
        let st = State {
            rank,
            execs: Vec::new(),
            gens: Vec::new(),
            free_slots: Vec::new(),
            active: Vec::new(),
            started: Vec::new(),
            stale: HashMap::new(),
            poisoned: HashMap::new(),
            stray_keys: Vec::new(),
            orphans: Vec::new(),
            unexp: KeyMap::default(),
            spare_queues: Vec::new(),
            spare_bufs: Vec::new(),
            dead: Default::default(),
            ready: VecDeque::new(),
            outq: (0..n).map(|_| VecDeque::new()).collect(),
            outq_peers: Vec::new(),
            rdv: Vec::new(),
            rdv_free: Vec::new(),
            stream_out: (0..n).map(|_| VecDeque::new()).collect(),
            stream_in: (0..n).map(|_| VecDeque::new()).collect(),
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            pushes_in: HashMap::new(),
            push_refused: vec![false; n],
            cold: vec![0; n],
            cold_votes: vec![0; n],
            cold_skip: vec![0; n],
            read_ps: vec![0; n],
            written_to: vec![Recent::default(); n],
            read_to: vec![Recent::default(); n],
            cold_writes: 0,
            split_in: HashMap::new(),
            split_out: HashMap::new(),
            cma_reads_work: false,
            run_left: 0,
            pushed: 0,
            split: [0, 0],
            draining: HashMap::new(),
            exchange_timing: (0..n).map(|_| None).collect(),
            streams_active: 0,
            eager_sent: vec![0; n],
            eager_returned: vec![0; n],
            released: vec![0; n],
            queued_in: vec![0; n],
            poll_no: 0,
            published: vec![0; n],
            lost: vec![None; n],
            finished_ops: 0,
            long_end: 0,
            credit_due: false,
            credit_step: (th.credit / 4).max(1),
            self_buffered: 0,
            passes: 0,
            last_check: Instant::now(),
            discard: Vec::new(),
            arrived: Vec::new(),
            in_poll: false,
            in_pieces: false,
            bounce: Vec::new(),
            fused: 0,
            net_in: KeyMap::default(),
            net_lost: Vec::new(),
        };
        Engine { rank, size, shm, net: None, remote: vec![false; n], th, st, kp: None, adapt: adapt::Adapt::new(n, th.adapt_from), pushes: false, splits: false, app_waiting: None, in_wait: false }
    }

    /// Reaches the peers marked in `remote` through `net`.
    pub fn attach_net(&mut self, net: NetNode, remote: Vec<bool>) {
        self.net = Some(net);
        self.remote = remote;
    }

    /// Starts an execution of `sched`; returns its shared state, or
    /// `None` if it finished within (see [`start_done`](Self::start_done)).
    pub fn start(&mut self, sched: &Arc<SchedInner>, rt: &Arc<crate::Runtime>) -> Option<Arc<ExecShared>> {
        // Both counters change only here and in `complete`, under the lock.
        let seq = sched.runs.load(Ordering::Relaxed);
        sched.runs.store(seq.wrapping_add(1), Ordering::Relaxed);
        sched.running.store(sched.running.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let id = sched.id as usize;
        match self.st.started.get_mut(id) {
            Some(n) => *n = seq.wrapping_add(1),
            None => {
                self.st.started.resize(id + 1, 0);
                self.st.started[id] = seq.wrapping_add(1);
            }
        }
        let s = &sched.s;
        let n = s.ops.len();
        let plain = self.kp.is_none() && s.start_index.is_empty() && !trace_on();
        // (Messages waiting for it, or a mismatch to report: the general path.)
        let quiet = self.st.stale.is_empty() && (self.st.unexp.is_empty() || !self.st.unexp.contains_key(&key(sched.id, seq)));
        if plain && quiet && s.independent as usize == n && n <= DONE_AT_ONCE {
            if let Some(done) = self.start_done(sched, rt, seq) {
                return done;
            }
        }
        let early = plain && s.independent > 0 && self.send_early(&s.ops[0], sched.id, seq);
        let mut bufs = self.st.pool(sched).pop().unwrap_or_else(|| Box::new(ExecBufs {
            counters: Vec::with_capacity(n),
            scratch: vec![Line([0; 64]); (s.scratch as usize).div_ceil(64)],
            posted: Vec::new(),
            shared: ExecShared::new(rt, sched.id),
        }));
        bufs.counters.clear();
        bufs.counters.extend_from_slice(&sched.deps);
        bufs.posted.clear();
        // A handle of an earlier execution may still hold the state (it was
        // not waited for yet); only an unshared one can be reset. Counted
        // rather than `Arc::get_mut`, whose compare-and-swap is a locked
        // instruction on every Run; no `Weak` of it is ever made.
        if Arc::strong_count(&bufs.shared) == 1 {
            // Pairs with the release of the last handle's drop: its reads
            // of the state are over before the state is reset.
            std::sync::atomic::fence(Ordering::Acquire);
            if bufs.shared.state.load(Ordering::Relaxed) == FAILED {
                *bufs.shared.error.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            bufs.shared.state.store(RUNNING, Ordering::Relaxed);
        } else {
            bufs.shared = ExecShared::new(rt, sched.id);
        }
        let shared = bufs.shared.clone();
        if n == 0 {
            sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
            self.st.recycle(sched, bufs);
            if let Some(err) = (!quiet).then(|| self.take_stale(sched.id)).flatten() {
                return Some(failed_with(rt, sched.id, err));
            }
            shared.state.store(DONE, Ordering::Release);
            return Some(shared);
        }
        let slot = match self.st.free_slots.pop() {
            Some(s) => s,
            None => {
                self.st.execs.push(None);
                self.st.gens.push(0);
                (self.st.execs.len() - 1) as u32
            }
        };
        let gen = self.st.gens[slot as usize].wrapping_add(1);
        self.st.gens[slot as usize] = gen;
        self.st.execs[slot as usize] = Some(Exec {
            sched: SchedRef::new(sched),
            seq,
            gen,
            bufs,
            remaining: n as u32,
        });
        if self.st.active.len() <= id {
            self.st.active.resize_with(id + 1, Vec::new);
        }
        // Kernel mode: one execution of a schedule at a time (see `kpath`).
        let hold = match self.kp.as_mut() {
            Some(kp) => {
                kp.prepare(sched);
                if seq == 1 {
                    // The schedule runs again: worth channels (made in one
                    // go, off the path of any message).
                    let (me, eager, net_eager, remote) = (self.rank, self.th.eager, self.th.net_eager, &self.remote);
                    let ip = self.net.as_ref().and_then(|n| n.listen_addrs().first()).map(|a| a.ip());
                    kp.make_channels(sched.id, s, |o| {
                        let (peer, len) = (o.peer as u32, o.len as usize);
                        match ip {
                            _ if peer == me => None,
                            Some(ip) if remote[peer as usize] => (len <= net_eager).then_some(kpath::Route::Tcp(ip)),
                            _ => (len <= eager).then_some(kpath::Route::Local),
                        }
                    });
                }
                let hold = !self.st.active[id].is_empty();
                if hold {
                    kp.held[id].push_back(slot);
                }
                hold
            }
            None => false,
        };
        self.st.active[id].push((seq, slot));
        let fail_now = !quiet && self.check_waiting(sched.id, seq, slot, gen);
        if !hold {
            // Started at once, in order; the operations they make ready
            // queue behind them (the order of pushing them all first).
            // With nothing to trace, hand to the kernel or start with an
            // operation, a receive with nothing waiting for it and an eager
            // send to a peer on this machine that fits its ring now are
            // started here: `start_op`'s general path cost a 2-rank
            // barrier's receive some 150 instructions.
            // Each call builds its own `OpRef`: with one `r` for all three,
            // the compiler stored it to the stack as three u32 and loaded
            // slot and gen back as one u64, a store-forwarding failure that
            // cost a posted receive some 180 cycles (sampled: 60 % of
            // `start`; a Run of an 8-byte scatter's root 289 -> 204 ns).
            for op in 0..s.independent {
                self.st.run_left = s.independent - op - 1;
                if early && op == 0 {
                    self.finish(OpRef { slot, gen, op });
                    continue;
                }
                if plain {
                    let o = &s.ops[op as usize];
                    if self.post_plain(OpRef { slot, gen, op }, o)
                        || self.send_plain(OpRef { slot, gen, op }, o, sched.id, seq)
                        || self.copy_plain(OpRef { slot, gen, op }, o)
                    {
                        continue;
                    }
                }
                self.start_op(OpRef { slot, gen, op });
            }
            self.st.run_left = 0;
        }
        self.drain_ready();
        // (A held execution, kernel mode's next in line, ends with its
        // poison when it has run: failing it here would start the
        // execution behind it in its place.)
        if fail_now && !hold {
            if let Some(err) = self.st.poisoned.remove(&slot) {
                self.fail(OpRef { slot, gen, op: u32::MAX }, err);
            }
        }
        self.shm.flush();
        if !self.st.reads.is_empty() {
            // Receives that found their RTS waiting read now, after the
            // sends above have left (see READ_LATER), as Run did before:
            // left for Wait, a helper would take them in between, on a CPU
            // that another rank may be using (2 ranks, bcast of 64 KiB:
            // 4.85 against 4.20 us).
            while !self.st.reads.is_empty() {
                self.pump_reads();
            }
            self.drain_ready();
            self.shm.flush();
        }
        Some(shared)
    }

    /// One pass over everything that can move; returns the operations finished.
    #[inline]
    pub fn progress(&mut self) -> usize {
        if self.quiet() && !self.shm.pending() {
            // Nothing to move and nothing arrived: the pass of a Wait that
            // polls for a message, cut from some 200 instructions to the
            // loads above (the message that arrives meanwhile is found
            // that much sooner), inline in the caller's loop.
            self.shm.flush();
            self.count_pass();
            return 0;
        }
        self.pass()
    }

    /// [`progress`](Self::progress) with something to do.
    #[inline(never)]
    fn pass(&mut self) -> usize {
        let before = self.st.finished_ops;
        self.poll_messages();
        self.reap_kernel();
        self.drain_ready();
        if !self.st.outq_peers.is_empty() {
            self.retry_outq();
        }
        if self.st.streams_active > 0 {
            self.pump_transfers();
            self.drain_ready();
        }
        self.publish_credits();
        self.shm.flush();
        self.count_pass();
        self.st.finished_ops - before
    }

    /// Whether a pass has nothing to do but look for arrivals in the rings:
    /// no network or kernel ring to poll, nothing queued to start or send,
    /// no stream moving and no credit to publish.
    #[inline]
    fn quiet(&self) -> bool {
        let st = &self.st;
        self.net.is_none() && self.kp.is_none() && st.ready.is_empty() && st.outq_peers.is_empty() && st.streams_active == 0 && !st.credit_due
    }

    /// Counts a pass; every 1024th looks at the peers' liveness if due.
    #[inline]
    fn count_pass(&mut self) {
        self.st.passes = self.st.passes.wrapping_add(1);
        if self.st.passes.is_multiple_of(1024) {
            self.check_peers_if_due();
        }
    }

    /// A progress pass as a poller sees it: the operations finished, or 1
    /// if none did but a large message is being read from its sender's
    /// memory in pieces (see [`READ_LATER`]). Nobody rings for the next
    /// piece, so a poller counts it as news and does not go to sleep.
    #[inline]
    pub fn poll(&mut self) -> usize {
        self.progress().max((!self.st.reads.is_empty() || !self.st.writes.is_empty()) as usize)
    }

    /// Whether messages wait for ring space: the peer will not ring for
    /// that, so a sleeper must come back soon.
    pub fn must_poll(&self) -> bool {
        !self.st.outq_peers.is_empty()
    }


    /// When the last long copy (a large message read by CMA, a stream
    /// chunk, a long local operation) ended, in `ticks`: a Run or Wait that
    /// did one itself took long for that, not because the application
    /// computed (see `progress::AppMark`). One clock read per long copy.
    pub fn long_end(&self) -> u64 {
        self.st.long_end
    }

    /// Notes a copy of `bytes` that just ended (see [`long_end`](Self::long_end)).
    #[inline]
    fn copied(&mut self, bytes: usize) {
        if bytes >= LONG_COPY_BYTES {
            self.st.long_end = crate::ticks::now();
        }
    }

    /// Whether any execution is in flight.
    pub fn busy(&self) -> bool {
        self.st.execs.len() > self.st.free_slots.len()
    }

    /// What every running execution waits for, in lines, for a report on
    /// an execution that does not finish (`GOAL_DEBUG=1`): receives posted
    /// and not matched, sends waiting for their receiver, transfers in
    /// flight, unexpected messages, and the network's state per peer.
    pub fn stall_report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (slot, e) in self.st.execs.iter().enumerate() {
            let Some(e) = e else { continue };
            let r = OpRef { slot: slot as u32, gen: e.gen, op: u32::MAX };
            let posted: Vec<String> = e.bufs.posted.iter().map(|p| self.describe(OpRef { op: p.op, ..r })).collect();
            lines.push(format!(
                "{}: {} of {} operation(s) not finished; receives posted and unmatched: [{}]",
                self.describe(r),
                e.remaining,
                e.sched.s.ops.len(),
                posted.join(", ")
            ));
        }
        for s in self.st.rdv.iter().flatten() {
            lines.push(format!("{}: waiting for rank {}'s answer (rendezvous mode {})", self.describe(s.r), s.peer, s.mode));
        }
        for (&(src, token), &r) in &self.st.net_in {
            lines.push(format!("{}: bytes from rank {src} arriving by network transfer (token {token})", self.describe(r)));
        }
        for x in &self.st.reads {
            lines.push(format!("{}: reading {} B from rank {}'s memory, {} done", self.describe(x.r), x.len, x.src, x.done));
        }
        for (&k, q) in &self.st.unexp {
            let what: Vec<String> = q.iter().map(|u| format!("from rank {} tag {} ({} B)", u.src, u.tag, u.len)).collect();
            lines.push(format!("unexpected for schedule {} execution {}: [{}]", k >> 32, k & 0xffff_ffff, what.join(", ")));
        }
        for (p, (o, i)) in self.st.stream_out.iter().zip(&self.st.stream_in).enumerate() {
            if let Some(s) = o.front() {
                lines.push(format!("stream to rank {p}: {} send(s), the first at {} of {} B", o.len(), s.pos, s.len));
            }
            if let Some(s) = i.front() {
                lines.push(format!("stream from rank {p}: {} receive(s), the first ({}) at {} of {} B", i.len(), self.describe(s.r), s.pos, s.len));
            }
        }
        for (p, q) in self.st.outq.iter().enumerate() {
            if !q.is_empty() {
                lines.push(format!("{} message(s) to rank {p} wait for ring space", q.len()));
            }
        }
        if let Some(net) = self.net.as_ref() {
            for p in 0..self.size {
                if self.remote[p as usize] {
                    lines.push(net.describe_peer(p));
                }
            }
        }
        lines
    }

    /// Checks peer liveness now if 100 ms have passed since the last check.
    #[cold]
    pub fn check_peers_if_due(&mut self) {
        if self.st.last_check.elapsed().as_millis() < 100 {
            return;
        }
        self.st.last_check = Instant::now();
        while let Err(lost) = self.shm.check_peers() {
            self.peer_lost(lost);
        }
        for (peer, msg) in self.kp.as_mut().map(|k| k.overdue()).unwrap_or_default() {
            let slots = self.kp.as_ref().map(|k| k.slots_with_peer(peer)).unwrap_or_default();
            for slot in slots {
                self.fail_slot(slot, Error::new(ErrorKind::PeerLost, msg.clone()));
            }
        }
    }

    fn peer_lost(&mut self, lost: PeerLost) {
        let r = lost.rank;
        if self.st.lost[r].is_some() {
            return;
        }
        // Take in whatever the peer left in my inbox before it went away: its
        // ring messages and stream bytes live in my memory and survive it (a
        // streamed send finishes once its last byte is in the stream, so a
        // sender may rightly finish and exit while I still copy). A few
        // passes, since each may start receives that take more of it.
        for _ in 0..64 {
            let before = self.st.finished_ops;
            self.poll_messages();
            self.drain_ready();
            if self.st.streams_active > 0 {
                self.pump_transfers();
                self.drain_ready();
            }
            if self.st.finished_ops == before {
                break;
            }
        }
        self.st.lost[r] = Some(lost.cause.clone());
        let msg = format!("rank {r} {} while this execution still needed it", lost.cause);
        // A wildcard receive fails only once no other peer is left to send it.
        let others_left = (0..self.size as usize).any(|p| p != self.rank as usize && self.st.lost[p].is_none());
        // Fail every execution that still waits on that peer.
        let mut victims = Vec::new();
        for (slot, e) in self.st.execs.iter().enumerate() {
            let Some(e) = e else { continue };
            let waits_recv = e.bufs.posted.iter().any(|p| p.peer == r as i32 || (p.peer == -1 && !others_left));
            if waits_recv {
                victims.push(slot as u32);
            }
        }
        for q in self.st.outq[r].iter() {
            if let Some(s) = q.send {
                victims.push(s.slot);
            }
        }
        for x in self.st.rdv.iter().flatten() {
            if x.peer as usize == r {
                victims.push(x.r.slot);
            }
        }
        for s in self.st.stream_in[r].iter() {
            victims.push(s.r.slot);
        }
        for x in self.st.reads.iter().filter(|x| x.src as usize == r) {
            victims.push(x.r.slot);
        }
        // Receives the peer was to write, and sends writing into it.
        self.st.pushes_in.retain(|&(src, _), &mut (x, _, _)| {
            if src as usize == r {
                victims.push(x.slot);
            }
            src as usize != r
        });
        let writes = self.st.writes.len();
        for w in self.st.writes.iter().filter(|w| w.peer as usize == r) {
            if let Some(s) = self.st.rdv.get(w.token as usize).and_then(|s| s.as_ref()) {
                victims.push(s.r.slot);
            }
        }
        self.st.writes.retain(|w| w.peer as usize != r);
        self.st.streams_active -= (writes - self.st.writes.len()) as u32;
        if let Some(kp) = self.kp.as_mut() {
            if self.remote[r] {
                if !kp.slots_with_peer(r as u32).is_empty() {
                    kp.watch_lost(r as u32, msg.clone());
                }
            } else {
                victims.extend(kp.slots_with_peer(r as u32));
            }
        }
        for (&(src, _), x) in self.st.net_in.iter() {
            if src as usize == r {
                victims.push(x.slot);
            }
        }
        self.st.net_in.retain(|&(src, _), _| src as usize != r);
        self.st.outq[r].clear();
        let reads = self.st.reads.len();
        self.st.reads.retain(|x| x.src as usize != r);
        let cleared = self.st.stream_in[r].len() + self.st.stream_out[r].len() + reads - self.st.reads.len();
        self.st.streams_active -= cleared as u32;
        self.st.stream_in[r].clear();
        self.st.stream_out[r].clear();
        self.st.exchange_timing[r] = None;
        victims.sort_unstable();
        victims.dedup();
        for slot in victims {
            let hint = match (lost.finalized, self.st.execs.get(slot as usize).and_then(|e| e.as_ref())) {
                // The peer's program ended normally: the ranks' programs
                // disagree on what to run.
                (Some(n), Some(e)) if e.sched.id as u64 >= n => format!(
                    "; rank {r} never compiled this schedule (number {} here): every rank must compile the same schedules in the same order",
                    e.sched.id
                ),
                (Some(_), Some(e)) => format!(
                    "; this is execution {} of schedule {} here, which rank {r} did not run as often: every rank must run each schedule as often",
                    e.seq, e.sched.id
                ),
                _ => String::new(),
            };
            self.fail_slot(slot, Error::new(ErrorKind::PeerLost, format!("{msg}{hint}")));
        }
    }

    // ---- operations -------------------------------------------------------

    fn drain_ready(&mut self) {
        while let Some(r) = self.st.ready.pop_front() {
            self.start_op(r);
        }
    }

    fn exec(&self, r: OpRef) -> Option<&Exec> {
        self.st.execs.get(r.slot as usize)?.as_ref().filter(|e| e.gen == r.gen)
    }

    fn exec_mut(&mut self, r: OpRef) -> Option<&mut Exec> {
        self.st.execs.get_mut(r.slot as usize)?.as_mut().filter(|e| e.gen == r.gen)
    }

    fn rec(&self, r: OpRef) -> Option<OpRec> {
        self.exec(r).map(|e| e.sched.s.ops[r.op as usize])
    }

    /// The buffer pieces of op `r` (its scratchpad offsets resolved).
    fn pieces(&self, r: OpRef) -> Option<Pieces> {
        let e = self.exec(r)?;
        let s = &e.sched.s;
        let o = &s.ops[r.op as usize];
        let base = e.bufs.scratch.as_ptr() as *mut u8;
        let resolve = |addr: u64, scratch: bool| operand(base, addr, scratch);
        Some(match o.kind() {
            OpKind::Send | OpKind::Recv => Pieces::One([(resolve(o.addr, o.in_scratch()), o.len as usize)]),
            OpKind::SendVec | OpKind::RecvVec => {
                let v = s.vecs[o.addr as usize];
                Pieces::Many(s.pieces_of(v).iter().map(|p| (resolve(p.addr, o.in_scratch()), p.len as usize)).collect())
            }
            _ => Pieces::Many(Vec::new()),
        })
    }

    fn describe(&self, r: OpRef) -> String {
        let Some(e) = self.exec(r) else { return String::from("a finished execution") };
        let s = &e.sched.s;
        if r.op == u32::MAX {
            return format!("schedule {} execution {}", e.sched.id, e.seq);
        }
        let o = &s.ops[r.op as usize];
        let v = s.origin[r.op as usize];
        let what = match o.kind() {
            OpKind::Send => format!("Send to {}, tag {}", o.peer, o.tag),
            OpKind::Recv => format!("Recv from {}, tag {}", o.peer, o.tag),
            OpKind::SendVec => format!("SendVec to {}, tag {}", o.peer, o.tag),
            OpKind::RecvVec => format!("RecvVec from {}, tag {}", o.peer, o.tag),
            OpKind::Local | OpKind::LocalVec => "LocalOp".to_string(),
            OpKind::Calc => "Calc".to_string(),
        };
        format!("vertex {v} ({what})")
    }

    fn start_op(&mut self, r: OpRef) {
        let Some(e) = self.exec(r) else { return };
        if trace_on() {
            self.trace_start(r);
        }
        let (id, seq) = (e.sched.id, e.seq);
        let o = e.sched.s.ops[r.op as usize];
        if !e.sched.s.start_index.is_empty() {
            let sched = e.sched;
            for &d in sched.s.start_dependents(r.op as usize) {
                self.dec(OpRef { op: d, ..r });
            }
        }
        if self.kp.is_some() && self.on_channel(id, r.op) {
            return self.ksubmit(r);
        }
        match o.kind() {
            OpKind::Send | OpKind::SendVec => self.start_send(r, &o, id, seq),
            OpKind::Recv | OpKind::RecvVec => self.start_recv(r, &o, id, seq),
            OpKind::Local | OpKind::LocalVec => self.start_local(r, &o),
            OpKind::Calc => {
                let until = localop::wtime() + o.addr as f64 * 1e-9;
                while localop::wtime() < until {
                    std::hint::spin_loop();
                }
                self.finish(r);
            }
        }
    }

    /// A local operation (copy or reduction), run at once. Out of
    /// `start_op`, whose hot path for messages it would otherwise weigh
    /// down with its registers.
    #[inline(never)]
    fn start_local(&mut self, r: OpRef, o: &OpRec) {
        // Borrowed, not cloned (the borrow ends before `finish`).
        let Some(e) = self.exec(r) else { return };
        let mut bytes = 0;
        let res = if o.kind() == OpKind::LocalVec {
            self.local_vec(r, &e.sched, o)
        } else {
            let l = e.sched.s.locals[o.addr as usize];
            // SAFETY: `l` is an operation of `r`'s execution, whose
            // scratchpad starts at the base given.
            if unsafe { copy_small(&l, e.bufs.scratch.as_ptr() as *mut u8) } {
                return self.finish(r);
            }
            bytes = (l.count as u64 * l.width as u64 / 8) as usize;
            // Below twice a piece, only a copy while receives of its
            // execution wait, which may let a peer write (see
            // `LOCAL_PIECES_FROM`); otherwise the pauses are only a cost (a
            // lone 64 KiB addition: 2.9-3.4 us whole, 3.8-3.9 in four pieces).
            let long = bytes >= 2 * LOCAL_PIECE_BYTES || (l.op() == ReduceOp::Copy && !e.bufs.posted.is_empty());
            if bytes >= LOCAL_PIECES_FROM && long && !self.st.in_pieces && !self.st.in_poll && l.op() != ReduceOp::Wtime {
                return self.local_in_pieces(r, l);
            }
            if bytes >= LONG_COPY_BYTES {
                // Wake the peers written to so far before a long copy
                // or reduction, not after it.
                self.shm.flush();
            }
            let base = e.bufs.scratch.as_ptr() as *mut u8;
            let at = |i: u8, a: u64| operand(base, a, l.mem & (1 << i) != 0);
            // SAFETY: user buffers are valid for the operation's extent by the API
            // contract; scratchpad ranges were checked at compile time.
            unsafe { localop::apply(l.op(), l.dt(), l.width, at(0, l.b1), at(1, l.b2), at(2, l.b3), l.count as usize) }
        };
        self.copied(bytes);
        self.local_done(r, res);
    }

    /// Local operation `r` has run (whole, in pieces, or fused with its
    /// receive): it finishes, or fails naming the element divided by zero.
    fn local_done(&mut self, r: OpRef, res: Result<(), KernelError>) {
        match res {
            Ok(()) => self.finish(r),
            Err(KernelError::DivByZero(i)) => {
                let msg = format!("{}: integer division by zero at element {i}", self.describe(r));
                self.fail(r, Error::new(ErrorKind::DivByZero, msg));
            }
        }
    }

    /// A long local operation (see [`LOCAL_PIECE_BYTES`]), a piece at a
    /// time, moving messages in the pauses. Elements are independent, so
    /// the pieces in order compute what the whole would.
    fn local_in_pieces(&mut self, r: OpRef, l: goal_sched::LocalRec) {
        self.shm.flush();
        let esize = (l.width as usize / 8).max(1);
        let step = (l.count as usize * esize / 4).clamp(esize, LOCAL_PIECE_BYTES) / esize;
        let count = l.count as usize;
        let mut done = 0usize;
        self.st.in_pieces = true;
        let res = loop {
            // The execution may have failed in a pause (its buffers went back
            // to the pool): then there is nothing more to compute.
            let Some(e) = self.exec(r) else { break Ok(()) };
            let n = step.min(count - done);
            let base = e.bufs.scratch.as_ptr() as *mut u8;
            let off = done * esize;
            // SAFETY: `operand` resolves to the operation's buffers, valid for
            // `count` elements (API contract for user buffers, compile-time
            // checks for the scratchpad); `done + n <= count`.
            let at = |i: u8, a: u64| unsafe { operand(base, a, l.mem & (1 << i) != 0).add(off) };
            // SAFETY: as above, for elements `done..done + n`.
            let res = unsafe { localop::apply(l.op(), l.dt(), l.width, at(0, l.b1), at(1, l.b2), at(2, l.b3), n) };
            if let Err(KernelError::DivByZero(i)) = res {
                break Err(KernelError::DivByZero(done + i));
            }
            done += n;
            if done == count {
                break Ok(());
            }
            self.between_pieces();
        };
        self.st.in_pieces = false;
        self.copied(count * esize);
        if self.exec(r).is_none() {
            return;
        }
        self.local_done(r, res);
    }

    /// What a pause in a long local operation moves: arrived messages,
    /// stream bytes, sends waiting for ring space.
    fn between_pieces(&mut self) {
        if self.net.is_some() || self.shm.pending() {
            self.poll_messages();
        }
        if self.st.streams_active > 0 {
            self.pump_transfers();
        }
        if !self.st.outq_peers.is_empty() {
            self.retry_outq();
        }
        self.drain_ready();
        self.shm.flush();
    }

    #[cold]
    fn trace_start(&self, r: OpRef) {
        if let Some(e) = self.exec(r) {
            say!("goal-trace {:.6} rank {} start sched {} exec {} {}", localop::wtime(), self.rank, e.sched.id, e.seq, self.describe(r));
        }
    }

    #[cold]
    fn trace_finish(&self, r: OpRef) {
        if let Some(e) = self.exec(r) {
            let v = e.sched.s.origin[r.op as usize];
            say!("goal-trace {:.6} rank {} finish sched {} exec {} vertex {v}", localop::wtime(), self.rank, e.sched.id, e.seq);
        }
    }

    fn local_vec(&self, r: OpRef, sched: &SchedInner, o: &OpRec) -> Result<(), KernelError> {
        let s = &sched.s;
        let l = s.lvecs[o.addr as usize];
        let op = ReduceOp::ALL[l.op as usize];
        let dt = goal_sched::DataType::from_raw(l.dt as i64).unwrap_or(goal_sched::DataType::UInt);
        let base = self.exec(r).map_or(std::ptr::null_mut(), |e| e.bufs.scratch.as_ptr() as *mut u8);
        let list = |i: usize| -> Vec<(*mut u8, usize)> {
            s.pieces_of(l.lists[i])
                .iter()
                .map(|p| (operand(base, p.addr, l.mem & (1 << i) != 0), p.len as usize))
                .collect()
        };
        let (a, b, c) = (list(0), list(1), list(2));
        if op == ReduceOp::Wtime {
            let mut t = localop::wtime().to_ne_bytes().to_vec();
            scatter(&mut t, &c);
            return Ok(());
        }
        let esize = l.width as usize / 8;
        // Walk the three lists in step, a run of whole elements at a time.
        let (mut ia, mut ib, mut ic) = (0usize, 0usize, 0usize);
        let (mut oa, mut ob, mut oc) = (0usize, 0usize, 0usize);
        let mut done = 0usize;
        while ic < c.len() {
            if c[ic].1 == oc {
                ic += 1;
                oc = 0;
                continue;
            }
            while ia < a.len() && a[ia].1 == oa {
                ia += 1;
                oa = 0;
            }
            if op.is_binary() {
                while ib < b.len() && b[ib].1 == ob {
                    ib += 1;
                    ob = 0;
                }
            }
            let mut run = (c[ic].1 - oc).min(a[ia].1 - oa);
            if op.is_binary() {
                run = run.min(b[ib].1 - ob);
            }
            let n = run / esize;
            // SAFETY: each pointer plus offset stays within its piece, which the
            // user guarantees valid; the compiler checked the lists' totals agree.
            unsafe {
                let pb = if op.is_binary() { b[ib].0.add(ob) } else { a[ia].0.add(oa) };
                localop::apply(op, dt, l.width, a[ia].0.add(oa), pb, c[ic].0.add(oc), n)
                    .map_err(|KernelError::DivByZero(i)| KernelError::DivByZero(done + i))?;
            }
            done += n;
            oa += run;
            oc += run;
            if op.is_binary() {
                ob += run;
            }
        }
        Ok(())
    }

    fn dec(&mut self, r: OpRef) {
        let Some(e) = self.exec_mut(r) else { return };
        let c = &mut e.bufs.counters[r.op as usize];
        *c -= 1;
        if *c == 0 {
            self.st.ready.push_back(r);
        }
    }

    /// Operation `r` has finished: release its dependents.
    #[inline(always)]
    fn finish(&mut self, r: OpRef) {
        if trace_on() {
            self.trace_finish(r);
        }
        if let Some(slot) = self.st.finish(r) {
            self.complete(slot, Ok(()));
        }
    }

    /// The execution in `slot`, if any, failed with `err`.
    fn fail_slot(&mut self, slot: u32, err: Error) {
        if let Some(gen) = self.st.execs.get(slot as usize).and_then(|e| e.as_ref()).map(|e| e.gen) {
            self.fail(OpRef { slot, gen, op: u32::MAX }, err);
        }
    }

    /// Execution `r` failed with `err` (reported at once).
    fn fail(&mut self, r: OpRef, err: Error) {
        if self.exec(r).is_none() {
            return;
        }
        self.complete(r.slot, Err(err));
    }

    fn complete(&mut self, slot: u32, res: Result<(), Error>) {
        if res.is_ok() && self.kp.is_none() && self.st.draining.is_empty() && self.st.poisoned.is_empty() {
            self.st.completed(slot);
            if !self.st.stray_keys.is_empty() {
                self.strays();
            }
            return;
        }
        self.complete_slow(slot, res)
    }

    /// Keeps a schedule whose last [`Schedule`](crate::Schedule) handle is
    /// going while executions of it still run (they hold `SchedRef`s to it).
    pub fn orphan(&mut self, sched: Arc<SchedInner>) {
        if sched.running.load(Ordering::Relaxed) > 0 {
            self.st.orphans.push(sched);
        }
    }


    #[inline(never)]
    fn complete_slow(&mut self, slot: u32, res: Result<(), Error>) {
        // A failed execution that senders still write into (pushes it
        // asked for) ends only once they have: its Wait would return, and
        // its buffers be reused, while a peer's core still copied into
        // them. Meanwhile none of its operations starts, and messages for
        // it wait unmatched (dropped when it ends).
        let res = match self.st.draining.remove(&slot) {
            Some(err) => Err(err),
            None => res,
        };
        // (An execution that ends with an earlier one's mismatch took all
        // its messages: a later one for it is stray, as for the earlier
        // one, so its key is not marked dead below.)
        let (res, poisoned) = match self.st.poisoned.remove(&slot) {
            Some(err) if res.is_ok() => (Err(err), true),
            _ => (res, false),
        };
        if let Err(err) = &res {
            if self.st.pushes_in.values().any(|(x, _, _)| x.slot == slot) {
                if let Some(e) = self.st.execs.get_mut(slot as usize).and_then(|e| e.as_mut()) {
                    for c in e.bufs.counters.iter_mut() {
                        *c = c.saturating_add(IN_KERNEL);
                    }
                    e.bufs.posted.clear();
                }
                self.st.draining.insert(slot, err.clone());
                return;
            }
        }
        let Some(e) = self.st.vacate(slot) else { return };
        let id = e.sched.id as usize;
        let k = key(e.sched.id, e.seq);
        let mut in_kernel = false;
        if let Some(kp) = self.kp.as_mut() {
            // The next held execution of this schedule may start.
            if let Some(next) = kp.held.get_mut(id).and_then(|h| h.pop_front()) {
                if let Some(n) = self.st.execs[next as usize].as_ref() {
                    for op in 0..n.sched.s.independent {
                        self.st.ready.push_back(OpRef { slot: next, gen: n.gen, op });
                    }
                }
            }
            if res.is_err() {
                let mine = kp.of_slot(slot);
                in_kernel = !mine.is_empty();
                for ud in mine {
                    let _ = kp.ring.cancel(ud);
                }
            }
        }
        if let Err(err) = &res {
            if !self.st.net_in.is_empty() {
                let mine: Vec<(u32, u32)> = self.st.net_in.iter().filter(|(_, x)| x.slot == slot).map(|(&k, _)| k).collect();
                for (src, token) in mine {
                    self.st.net_in.remove(&(src, token));
                    if let Some(n) = self.net.as_mut() {
                        n.cancel_expect(src, token as u64);
                    }
                }
            }
            if !poisoned {
                self.st.dead.insert(k);
                // Messages that already arrived for it will never be received.
                if let Some(q) = self.st.unexp.remove(&k) {
                    for u in q {
                        self.drop_unexpected(u);
                    }
                }
            }
            *e.bufs.shared.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(err.clone());
        }
        if (res.is_ok() || poisoned) && !self.st.unexp.is_empty() {
            // It took all its messages: any left for it are strays.
            self.st.note_strays(k);
        }
        e.bufs.shared.state.store(if res.is_ok() { DONE } else { FAILED }, Ordering::Release);
        let Exec { sched, bufs, .. } = e;
        if in_kernel {
            // The kernel may still write its scratchpad until the
            // cancellations land: never reuse or free it.
            std::mem::forget(bufs);
        } else {
            self.st.recycle(&sched, bufs);
        }
        sched_done(sched);
        self.st.release_orphans();
        if !self.st.stray_keys.is_empty() {
            self.strays();
        }
    }

    /// Reports what waits for executions that finished with all their
    /// receives taken (`State::stray_keys`): strays (see [`stale`](Self::stale)).
    #[cold]
    fn strays(&mut self) {
        while let Some(k) = self.st.stray_keys.pop() {
            if let Some(q) = self.st.unexp.remove(&k) {
                for u in q {
                    self.stale((k >> 32) as u32, k as u32, u);
                }
            }
        }
    }

    /// An unexpected message whose execution is gone: release its sender.
    fn drop_unexpected(&mut self, u: Unexp) {
        match u.kind {
            UnexpKind::Eager(d, ctl) => {
                self.release_credit(u.src, d.len() as u64);
                self.st.spare_buf(d);
                if let Some(ctl) = ctl.filter(|c| c.mode == proto::MODE_OFFER) {
                    self.answer_offer(u.src, ctl, false);
                }
            }
            UnexpKind::Rts { token, .. } => self.send_control(u.src, proto::FIN, token),
            UnexpKind::SelfSend(s) => self.finish(s),
        }
    }

    // ---- sends ------------------------------------------------------------

    fn start_send(&mut self, r: OpRef, o: &OpRec, sched: u32, seq: u32) {
        let peer = o.peer as u32;
        let len = o.len as usize;
        let mut head = Head::eager(o, sched, seq);
        if peer == self.rank {
            return self.self_send(r, head);
        }
        if let Some(cause) = &self.st.lost[peer as usize] {
            let msg = format!("{}: rank {peer} {cause}", self.describe(r));
            return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
        }
        let p = peer as usize;
        let pieces = if o.kind() == OpKind::Send {
            // One buffer: resolved here, without the general `pieces`.
            let base = self.exec(r).map_or(std::ptr::null_mut(), |e| e.bufs.scratch.as_ptr() as *mut u8);
            Some(Pieces::One([(operand(base, o.addr, o.in_scratch()), len)]))
        } else {
            self.pieces(r)
        };
        if self.remote[p] {
            return self.net_send(r, peer, head, pieces);
        }
        let ptr = match pieces {
            Some(Pieces::One([(ptr, _)])) => ptr,
            _ => std::ptr::null_mut(),
        };
        let heap_off = if len > self.th.heap_eager && !ptr.is_null() { self.shm.heap().offset_of(ptr, len) } else { None };
        if heap_off.is_none() && len <= self.th.eager && self.eager_credit(p, len as u64) {
            self.st.eager_sent[p] += len as u64;
            if self.kp.is_some() {
                self.offer_or_switch(r, &mut head);
            }
            if self.st.outq[p].is_empty() {
                if let Some(pieces) = &pieces {
                    let res = match pieces {
                        // SAFETY: send buffers are valid for their lengths by the API contract.
                        Pieces::One([(ptr, len)]) => self.shm.try_send_one(p, &head.encode(), unsafe { byte_slice(*ptr, *len) }),
                        Pieces::Many(_) => self.shm.try_send(p, &head.encode(), &slices_of(pieces)),
                    };
                    match res {
                        Ok(true) => return self.finish(r),
                        Ok(false) => {}
                        Err(e) => return self.fail(r, Error::new(ErrorKind::System, format!("{}: {e}", self.describe(r)))),
                    }
                }
            }
            return self.enqueue(p, Out { head, send: Some(r) });
        }
        // Rendezvous: pick how the receiver will fetch the bytes.
        let token = self.new_token(RdvSend { r, peer, len, mode: proto::MODE_STREAM, exchange: false });
        head.kind = proto::RTS;
        head.token = token;
        head.mode = proto::MODE_STREAM;
        if let Some(off) = heap_off {
            head.mode = proto::MODE_HEAP;
            head.addr = off;
        } else if !ptr.is_null() {
            let calibrated = len >= self.th.cma.0 && len <= self.th.cma.1;
            // Another large send to this peer still in flight: a burst
            // (looked for only where adapt chooses).
            let burst = len >= self.th.adapt_from
                && self.st.rdv.iter().flatten().filter(|s| s.peer as usize == p && s.mode != proto::MODE_HEAP).nth(1).is_some();
            let exchange = len >= self.th.adapt_from && !burst && self.exchanging(r, p);
            if let Some(s) = self.st.rdv[token as usize].as_mut() {
                s.exchange = exchange;
            }
            let situation = if burst {
                adapt::Situation::Burst
            } else if exchange {
                adapt::Situation::Exchange
            } else {
                adapt::Situation::Lone
            };
            // Calibration timed lone messages, where the stream's two
            // copies run on two cores. In an exchange both cores copy
            // anyway, and CMA copies once where the stream copies twice: it
            // is the default there above calibration's range too, left
            // only for a stream measured `MARGIN` (adapt.rs) times faster (2
            // ranks, alltoall of 4 MiB after 1 MiB: 1.21-1.26 ms by the
            // stream, CMA measured 1.2 times faster per byte and not taken).
            let default = calibrated || (exchange && len >= self.th.cma.0);
            let cma = match self.adapt.pick(p, len, if default { adapt::Path::Cma } else { adapt::Path::Stream }, situation) {
                Some(path) => path == adapt::Path::Cma,
                None => calibrated,
            };
            if cma {
                head.mode = proto::MODE_CMA;
                head.addr = ptr as u64;
            }
        }
        if let Some(s) = self.st.rdv[token as usize].as_mut() {
            s.mode = head.mode;
        }
        self.post_message(p, head);
    }

    /// Whether a large send of `r` to the local peer `p` is half of an
    /// exchange: a large message from `p` comes at the same time (a stream
    /// from it is being received, a receive of this execution from it is
    /// posted, or one starts with the execution as this send does).
    fn exchanging(&self, r: OpRef, p: usize) -> bool {
        if !self.st.stream_in[p].is_empty() {
            return true;
        }
        let Some(e) = self.exec(r) else { return false };
        let s: &SchedInner = &e.sched;
        (r.op < s.s.independent && s.opening_recvs.binary_search(&(p as u32)).is_ok())
            || e.bufs.posted.iter().any(|q| q.peer == p as i32 && s.s.ops[q.op as usize].len as u64 >= EXCHANGE_MIN)
    }

    /// A send to a peer on another machine: eager as one active message
    /// (copied into the network's queue, so it finishes at once), else RTS;
    /// the bytes then flow, once the receiver has answered CTS, as a bulk
    /// transfer straight from this buffer into the receive's (no FIN: the
    /// network's acknowledgement of the last fragment finishes the send).
    fn net_send(&mut self, r: OpRef, peer: u32, mut head: Head, pieces: Option<Pieces>) {
        let len = head.len as usize;
        let one_rail = self.net.as_ref().is_some_and(|n| n.rails_up(peer) == 1);
        let limit = if one_rail { self.th.net_eager_one_rail } else { self.th.net_eager };
        let res = if len <= limit && self.eager_credit(peer as usize, len as u64) {
            self.st.eager_sent[peer as usize] += len as u64;
            if self.kp.is_some() {
                self.offer_or_switch(r, &mut head);
            }
            let slices: Vec<&[u8]> = match &pieces {
                // SAFETY: a send buffer is valid for its length (API contract).
                Some(p) => p.as_slice().iter().map(|&(ptr, l)| unsafe { std::slice::from_raw_parts(ptr as *const u8, l) }).collect(),
                None => Vec::new(),
            };
            self.net_am(peer, &head, &slices).map(|_| true)
        } else {
            head.kind = proto::RTS;
            head.mode = proto::MODE_NET;
            head.token = self.new_token(RdvSend { r, peer, len: head.len as usize, mode: proto::MODE_NET, exchange: false });
            self.net_am(peer, &head, &[]).map(|_| false)
        };
        match res {
            Ok(true) => self.finish(r),
            Ok(false) => {}
            Err(e) => {
                let msg = format!("{}: sending to rank {peer} over the network: {e}", self.describe(r));
                self.fail(r, Error::new(ErrorKind::PeerLost, msg));
            }
        }
    }

    /// Sends one protocol message to a peer on another machine; its handler is `16 + kind`.
    fn net_am(&mut self, peer: u32, head: &Head, payload: &[&[u8]]) -> std::io::Result<()> {
        match self.net.as_mut() {
            Some(n) => n.send_am(peer, NET_HANDLER_BASE + head.kind, &head.to_bytes(), payload),
            None => Err(std::io::Error::other("no network")),
        }
    }

    #[inline(always)]
    fn eager_credit(&mut self, p: usize, len: u64) -> bool {
        let st = &mut self.st;
        if st.eager_sent[p] + len - st.eager_returned[p] <= self.th.credit {
            return true;
        }
        if self.remote[p] {
            // Refreshed by CREDIT messages as they arrive.
            return false;
        }
        st.eager_returned[p] = self.shm.credits_returned(p);
        st.eager_sent[p] + len - st.eager_returned[p] <= self.th.credit
    }

    fn new_token(&mut self, s: RdvSend) -> u32 {
        match self.st.rdv_free.pop() {
            Some(t) => {
                self.st.rdv[t as usize] = Some(s);
                t
            }
            None => {
                self.st.rdv.push(Some(s));
                (self.st.rdv.len() - 1) as u32
            }
        }
    }

    /// Whether the rendezvous send of `token` is half of an exchange (see
    /// `adapt`); false once its record is gone.
    fn in_exchange(&self, token: u32) -> bool {
        self.st.rdv.get(token as usize).and_then(|s| s.as_ref()).is_some_and(|s| s.exchange)
    }

    fn take_token(&mut self, t: u32) -> Option<RdvSend> {
        let s = self.st.rdv.get_mut(t as usize)?.take()?;
        self.st.rdv_free.push(t);
        Some(s)
    }

    /// Sends a message without payload (RTS, CTS, FIN), in order behind any queued ones.
    fn post_message(&mut self, p: usize, head: Head) {
        if self.remote[p] {
            // A lost peer is reported by the network itself.
            let _ = self.net_am(p as u32, &head, &[]);
            return;
        }
        if self.st.outq[p].is_empty() {
            match self.shm.try_send(p, &head.encode(), &[]) {
                Ok(true) => return,
                Ok(false) => {}
                Err(_) => return, // the peer is unreachable; liveness will report it
            }
        }
        self.enqueue(p, Out { head, send: None });
    }

    fn send_control(&mut self, p: u32, kind: u8, token: u32) {
        self.post_message(p as usize, Head::control(kind, token));
    }

    fn enqueue(&mut self, p: usize, out: Out) {
        if self.st.outq[p].is_empty() {
            self.st.outq_peers.push(p as u32);
        }
        self.st.outq[p].push_back(out);
    }

    fn retry_outq(&mut self) {
        let peers = std::mem::take(&mut self.st.outq_peers);
        let mut still = Vec::new();
        for p in peers {
            let p = p as usize;
            while let Some(out) = self.st.outq[p].front() {
                let head = out.head;
                let send = out.send;
                let ok = match send {
                    Some(r) => match self.pieces(r) {
                        Some(pieces) => self.shm.try_send(p, &head.encode(), &slices_of(&pieces)).unwrap_or(true),
                        None => true, // its execution failed: drop it
                    },
                    None => self.shm.try_send(p, &head.encode(), &[]).unwrap_or(true),
                };
                if !ok {
                    break;
                }
                self.st.outq[p].pop_front();
                if let Some(r) = send {
                    self.finish(r);
                }
            }
            if !self.st.outq[p].is_empty() {
                still.push(p as u32);
            }
        }
        self.st.outq_peers.extend(still);
        self.drain_ready();
    }

    fn self_send(&mut self, r: OpRef, head: Head) {
        let u = Unexp { src: self.rank, tag: head.tag, len: head.len, kind: UnexpKind::SelfSend(r) };
        if let Some(target) = self.match_posted(head.sched, head.seq, self.rank, head.tag) {
            return self.deliver(target, u);
        }
        // Copied aside (so the send finishes at once, even if its receive
        // depends on it) while under the unexpected-data bound; past it, the
        // send waits for its receive like any rendezvous.
        if self.st.self_buffered + head.len as u64 <= self.th.credit {
            self.st.self_buffered += head.len as u64;
            let mut data = vec![0u8; head.len as usize];
            if let Some(p) = self.pieces(r) {
                gather(&p, &mut data);
            }
            self.copied(data.len());
            self.stash(head.sched, head.seq, Unexp { kind: UnexpKind::Eager(data, None), ..u });
            return self.finish(r);
        }
        self.stash(head.sched, head.seq, u);
    }

    // ---- receives ---------------------------------------------------------

    /// Posts receive `o` of `r` if nothing more is to be done to start it
    /// (see `start`): no unexpected message waits, its peer is not lost.
    /// Whether it did.
    #[inline(always)]
    fn post_plain(&mut self, r: OpRef, o: &OpRec) -> bool {
        if !matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) || !self.st.unexp.is_empty() {
            return false;
        }
        if o.peer >= 0 && self.st.lost[o.peer as usize].is_some() {
            return false;
        }
        self.post(r, o);
        true
    }

    /// Adds receive `o` of `r` to its execution's posted receives; none if
    /// an earlier operation failed the execution (`start_op` then does
    /// nothing either).
    #[inline(always)]
    fn post(&mut self, r: OpRef, o: &OpRec) {
        if let Some(e) = self.exec_mut(r) {
            e.bufs.posted.push(Posted { op: r.op, peer: o.peer, tag: o.tag });
        }
    }

    /// Copies a small local copy (see [`copy_small`]) at once from
    /// `start`'s loop, as `send_plain` sends; `start_local` takes the same
    /// path first. Whether it did.
    #[inline(always)]
    fn copy_plain(&mut self, r: OpRef, o: &OpRec) -> bool {
        if o.kind() != OpKind::Local {
            return false;
        }
        let Some(e) = self.exec(r) else { return false };
        // SAFETY: `o` is an operation of `r`'s execution, whose scratchpad
        // starts at the base given.
        if unsafe { copy_small(&e.sched.s.locals[o.addr as usize], e.bufs.scratch.as_ptr() as *mut u8) } {
            self.finish(r);
            return true;
        }
        false
    }

    /// Run of a schedule that finishes within it: every operation
    /// independent, each an eager send from a user buffer that fits its
    /// peer's ring now (one per peer) or a small copy between user buffers
    /// (a gather's or a reduce's leaf, a 2-rank bcast's or scatter's root).
    /// `None`, having done nothing, if the schedule is not one.
    ///
    /// No execution is set up, and the handle has no state to count (see
    /// [`Handle`](crate::Handle)): the messages are written, then the
    /// copies made, in a few stores. A core's stores reach their cache lines in program
    /// order, and the ring's line sits in the receiving core, which polls
    /// it: every store after the ring's waits in the store buffer until
    /// that line has come over (25-85 ns here), and some 50 stores fill
    /// the buffer, after which the sender stalls. The general path set up
    /// and took down an execution after its early send (an 8-byte
    /// gather's leaf: Run and Wait 400-450 cycles, the receiving root's
    /// Run 200; Open MPI's leaf returns some 100 ns sooner than goal's
    /// did).
    #[inline]
    fn start_done(&mut self, sched: &Arc<SchedInner>, rt: &Arc<crate::Runtime>, seq: u32) -> Option<Option<Arc<ExecShared>>> {
        let s = &sched.s;
        let mut peers = 0u64;
        // With one message, its write tells whether it fits (nothing is
        // done before it); with more, each must fit before the first goes.
        let one = s.ops.iter().filter(|o| o.kind() == OpKind::Send).count() <= 1;
        for o in &s.ops {
            match o.kind() {
                OpKind::Send => {
                    let p = o.peer as usize;
                    if o.in_scratch() || p >= 64 || peers & 1 << p != 0 || !self.ring_ready(o) || !(one || self.shm.fits(p, o.len as usize)) {
                        return None;
                    }
                    peers |= 1 << p;
                }
                OpKind::Local => {
                    let l = &s.locals[o.addr as usize];
                    if !is_small_copy(l) || l.mem & 5 != 0 {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        let mut broken = None;
        for o in &s.ops {
            if o.kind() == OpKind::Send && !self.ring_write(o, sched.id, seq, o.addr as usize as *const u8) {
                if one {
                    // Full: the general path queues it.
                    return None;
                }
                broken = Some(o.peer);
            }
        }
        for o in &s.ops {
            if o.kind() == OpKind::Local {
                // SAFETY: both operands are user buffers (checked above),
                // valid by the API contract; no scratchpad is read.
                unsafe { copy_small(&s.locals[o.addr as usize], std::ptr::null_mut()) };
            }
        }
        self.st.finished_ops += s.ops.len();
        sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
        self.shm.flush();
        // `fits` said every message would go: only a broken ring gets here.
        Some(broken.map(|p| failed_done(rt, sched.id, p)))
    }

    /// Run's first move for a schedule whose first operation is an eager
    /// send from a user buffer to a peer on this machine (`send_plain`'s
    /// conditions): the message goes into the ring before the execution's
    /// state is set up, and `start` finishes the send once it is: the
    /// receiver has it that much sooner. (A schedule of nothing but such
    /// sends and small copies takes [`start_done`](Self::start_done) instead.)
    #[inline]
    fn send_early(&mut self, o: &OpRec, sched: u32, seq: u32) -> bool {
        !o.in_scratch() && self.ring_ready(o) && self.ring_write(o, sched, seq, o.addr as usize as *const u8)
    }

    /// Whether `o` is an eager send that can go through the ring at once:
    /// to a live peer on this machine, no larger than the heap's eager
    /// limit, with credit and nothing queued before it.
    #[inline(always)]
    fn ring_ready(&mut self, o: &OpRec) -> bool {
        let (p, len) = (o.peer as usize, o.len as usize);
        o.kind() == OpKind::Send
            && p != self.rank as usize
            && !self.remote[p]
            && len <= self.th.heap_eager.min(self.th.eager)
            && self.st.lost[p].is_none()
            && self.st.outq[p].is_empty()
            && self.eager_credit(p, len as u64)
    }

    /// Writes `o` ([`ring_ready`](Self::ring_ready)), whose buffer starts at
    /// `ptr`, into its peer's ring if there is room; whether it did.
    #[inline(always)]
    fn ring_write(&mut self, o: &OpRec, sched: u32, seq: u32, ptr: *const u8) -> bool {
        let (p, len) = (o.peer as usize, o.len as usize);
        let head = Head::eager(o, sched, seq);
        // SAFETY: the callers pass a send buffer's start, valid for its
        // length (API contract for user buffers, or the checked scratchpad).
        if let Ok(true) = self.shm.try_send_one(p, &head.encode(), unsafe { byte_slice(ptr, len) }) {
            self.st.eager_sent[p] += len as u64;
            return true;
        }
        false
    }

    /// Sends `o` of `r` eagerly through the ring if that is all its start
    /// takes (see `start` and [`ring_ready`](Self::ring_ready)), room in
    /// the ring included. Whether it did; if not, `start_op` starts it from
    /// the beginning (a full ring or an error included).
    #[inline(always)]
    fn send_plain(&mut self, r: OpRef, o: &OpRec, sched: u32, seq: u32) -> bool {
        if !self.ring_ready(o) {
            return false;
        }
        // An earlier operation may have failed the execution: `start_op`
        // then does nothing, and nor does this.
        let Some(e) = self.exec(r) else { return true };
        let ptr = operand(e.bufs.scratch.as_ptr() as *mut u8, o.addr, o.in_scratch());
        if self.ring_write(o, sched, seq, ptr) {
            self.finish(r);
            return true;
        }
        false
    }

    fn start_recv(&mut self, r: OpRef, o: &OpRec, sched: u32, seq: u32) {
        let k = key(sched, seq);
        if self.st.unexp.is_empty() {
            // (the common case: skip hashing)
        } else if let Some(q) = self.st.unexp.get_mut(&k) {
            let hit = q.iter().position(|u| (o.peer == -1 || o.peer as u32 == u.src) && (o.tag == -1 || o.tag == u.tag));
            if let Some(i) = hit {
                let u = q.remove(i).unwrap_or_else(|| unreachable!());
                if q.is_empty() {
                    if let Some(q) = self.st.unexp.remove(&k) {
                        if self.st.spare_queues.len() < SPARES {
                            self.st.spare_queues.push(q);
                        }
                    }
                }
                return self.deliver(r, u);
            }
        }
        if o.peer >= 0 && o.peer as u32 != self.rank {
            if let Some(cause) = &self.st.lost[o.peer as usize] {
                let msg = format!("{}: rank {} {cause}", self.describe(r), o.peer);
                return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
            }
        }
        self.post(r, o);
    }

    /// Finds and removes the first posted receive of execution (sched, seq) matching src/tag.
    fn match_posted(&mut self, sched: u32, seq: u32, src: u32, tag: i32) -> Option<OpRef> {
        st_match_posted(&mut self.st, sched, seq, src, tag)
    }

    /// Keeps message `u`, which no posted receive took, until a receive of
    /// execution (sched, seq) starts. The ranks' schedules do not pair up
    /// if that execution runs here already and no receive of its schedule
    /// could ever take the message (it fails, see
    /// [`mismatch`](Self::mismatch)), or if it finished here already (see
    /// [`stale`](Self::stale)).
    fn stash(&mut self, sched: u32, seq: u32, u: Unexp) {
        if self.st.dead.contains(&key(sched, seq)) {
            return self.drop_unexpected(u);
        }
        if let Some(slot) = self.st.active.get(sched as usize).and_then(|a| a.iter().find(|&&(q, _)| q == seq)).map(|&(_, slot)| slot) {
            let e = self.st.execs[slot as usize].as_ref().unwrap_or_else(|| unreachable!("active executions have slots"));
            if !e.sched.may_receive(u.src, u.tag) {
                let r = OpRef { slot, gen: e.gen, op: u32::MAX };
                return self.mismatch(r, u);
            }
        } else if self.st.started.get(sched as usize).is_some_and(|&n| seq.wrapping_sub(n) >= 1 << 31) {
            // Before the next execution here, and none active: one that
            // finished, all its receives taken.
            return self.stale(sched, seq, u);
        }
        let st = &mut self.st;
        st.unexp.entry(key(sched, seq)).or_insert_with(|| st.spare_queues.pop().unwrap_or_default()).push_back(u);
    }

    /// Fails execution `r` (an `OpRef` of the execution) for message `u`,
    /// which no receive of its schedule takes, and releases the sender.
    fn mismatch(&mut self, r: OpRef, u: Unexp) {
        let Some(err) = self.mismatch_error(r, &u) else { return self.drop_unexpected(u) };
        self.drop_unexpected(u);
        self.fail(r, err);
    }

    /// The error of execution `r` for message `u`, which no receive of its
    /// schedule takes (`None` if `r` is over).
    fn mismatch_error(&self, r: OpRef, u: &Unexp) -> Option<Error> {
        let e = self.exec(r)?;
        let id = e.sched.id;
        let msg = format!(
            "{}: rank {} sent it a message with {} ({} bytes), and schedule {id} has no receive from rank {} with that tag here: {DISAGREE}",
            self.describe(r), u.src, tag_words(u.tag), u.len, u.src
        );
        Some(Error::new(ErrorKind::Mismatch, msg))
    }

    /// Message `u` came for execution `seq` of schedule `sched`, which
    /// finished here without it: no execution is left to fail, so the
    /// schedule's next execution here fails with the news (a mismatch
    /// whose executions all finish, say a broadcast whose ranks disagree on
    /// the root, would otherwise go unseen), and the sender is released.
    #[cold]
    fn stale(&mut self, sched: u32, seq: u32, u: Unexp) {
        let msg = format!(
            "schedule {sched} execution {seq} had finished here when rank {} sent it a message with {} ({} bytes) \
             that none of its receives took: {DISAGREE}",
            u.src, tag_words(u.tag), u.len
        );
        self.drop_unexpected(u);
        self.st.stale.entry(sched).or_insert_with(|| Error::new(ErrorKind::Mismatch, msg));
    }

    /// The news [`stale`](Self::stale) kept for schedule `sched`, for its
    /// next execution to end with.
    fn take_stale(&mut self, sched: u32) -> Option<Error> {
        let mut err = self.st.stale.remove(&sched)?;
        err.message.push_str("; reported by the schedule's next execution, this one");
        Some(err)
    }

    /// Before execution (sched, seq) in `slot` starts its operations:
    /// marks it to end with a mismatch (see `State::poisoned`) if an
    /// earlier execution's stray message was seen (see [`stale`](Self::stale)),
    /// or if a message waits for it that no receive of its schedule takes
    /// (one that came before the execution started here), releasing that
    /// message's sender. The operations still start, so that what this rank
    /// sends at once reaches its peers. Returns whether to fail it as soon
    /// as they have (the latter case: its receives may wait for messages
    /// that never come, as when the message comes while it runs, see
    /// [`stash`](Self::stash)); with an earlier execution's news it runs
    /// to its end.
    #[cold]
    fn check_waiting(&mut self, sched: u32, seq: u32, slot: u32, gen: u32) -> bool {
        if let Some(err) = self.take_stale(sched) {
            self.st.poisoned.insert(slot, err);
            return false;
        }
        let r = OpRef { slot, gen, op: u32::MAX };
        let Some(e) = self.exec(r) else { return false };
        let sr = e.sched;
        let k = key(sched, seq);
        let Some(q) = self.st.unexp.get_mut(&k) else { return false };
        let Some(i) = q.iter().position(|u| !sr.may_receive(u.src, u.tag)) else { return false };
        let u = q.remove(i).unwrap_or_else(|| unreachable!());
        if q.is_empty() {
            self.st.unexp.remove(&k);
        }
        if let Some(err) = self.mismatch_error(r, &u) {
            self.st.poisoned.insert(slot, err);
        }
        self.drop_unexpected(u);
        true
    }

    /// Delivers message `u` into receive `r`.
    fn deliver(&mut self, r: OpRef, u: Unexp) {
        let cap = self.rec(r).map_or(0, |o| o.len);
        if u.len > cap {
            let msg = format!("{}: message of {} bytes from rank {} is larger than the receive of {cap} bytes (truncation)", self.describe(r), u.len, u.src);
            self.drop_unexpected(u);
            return self.fail(r, Error::new(ErrorKind::Truncated, msg));
        }
        if u.len < cap && self.rec(r).is_some_and(|o| o.exact()) {
            let err = short_message(self.describe(r), u.len, u.src, cap);
            self.drop_unexpected(u);
            return self.fail(r, err);
        }
        let Some(dst) = self.pieces(r) else { return self.drop_unexpected(u) };
        match u.kind {
            UnexpKind::Eager(mut d, ctl) => {
                scatter(&mut d, dst.as_slice());
                self.copied(d.len());
                self.release_credit(u.src, d.len() as u64);
                self.st.spare_buf(d);
                if let Some(ctl) = ctl {
                    if let Err(e) = self.channel_note(r, u.src, ctl, u.len) {
                        return self.fail(r, e);
                    }
                }
                self.finish(r);
            }
            UnexpKind::SelfSend(s) => {
                if let Some(src) = self.pieces(s) {
                    copy_pieces(&src, &dst, u.len as usize);
                }
                self.copied(u.len as usize);
                self.finish(s);
                self.finish(r);
            }
            UnexpKind::Rts { mode, token, addr } => self.fetch(r, u.src, u.len, mode, token, addr, &dst),
        }
    }

    #[allow(clippy::too_many_arguments)] // the fields of an RTS, as the protocol names them
    fn fetch(&mut self, r: OpRef, src: u32, len: u32, mode: u8, token: u32, addr: u64, dst: &Pieces) {
        // Whether the sender may write this message here (see COLD_WRITES),
        // and whether it wrote the last one, into the same buffer.
        let long = matches!(mode, proto::MODE_CMA | proto::MODE_HEAP) && len as usize >= PUSH_MIN.min(SPLIT_MIN);
        let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
        let again = long && self.st.written_to[src as usize].take(at) && (len as usize) < COLD_MAX;
        let warm = long && ((len as usize) >= COLD_MAX || self.writes_warm(src));
        match mode {
            proto::MODE_NET => {
                if len > 0 {
                    let mut left = len as usize;
                    let mut cut = Vec::new();
                    for &(p, l) in dst.as_slice() {
                        if left == 0 {
                            break;
                        }
                        cut.push((p, l.min(left)));
                        left -= l.min(left);
                    }
                    let res = match self.net.as_mut() {
                        // SAFETY: the receive buffer stays valid until the execution
                        // ends; an execution that fails first cancels this (`complete`).
                        Some(n) => unsafe { n.expect_bulk(src, token as u64, cut) },
                        None => Err(std::io::Error::other("no network")),
                    };
                    if let Err(e) = res {
                        let msg = format!("{}: receiving {len} bytes from rank {src}: {e}", self.describe(r));
                        return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                    }
                    self.st.net_in.insert((src, token), r);
                }
                self.send_control(src, proto::CTS, token);
                if len == 0 {
                    self.finish(r);
                }
            }
            proto::MODE_CMA
                if self.st.lost[src as usize].is_none()
                    && len as usize >= FUSE_CMA_MAX
                    && self.fusable(r, len as usize) =>
            {
                // Combined as it comes through the stream instead (see
                // FUSE_CMA_MAX); CMA stays allowed for later messages.
                self.post_message(src as usize, Head { addr: proto::CTS_THIS_ONE, ..Head::control(proto::CTS, token) });
                self.stream_receive(r, src, len as usize);
            }
            proto::MODE_CMA if warm && self.push_pays(src, len as usize, dst) => {
                self.st.pushes_in.insert((src, token), (r, len as usize, again));
                self.post_message(src as usize, Head { mode: proto::MODE_PUSH, addr: at, ..Head::control(proto::CTS, token) });
            }
            proto::MODE_HEAP | proto::MODE_CMA if warm && self.split_pays(r, src, mode, len as usize, dst) => {
                // Page-aligned, so that neither side's copy shares a page.
                // From the heap the receiver's `memcpy` outruns the
                // sender's CMA write: it takes three fifths (2 ranks, bcast
                // from the heap, six alternations: 1 MiB 23.4 -> 19.3 us,
                // 4 MiB 202 -> 194 against halves; 70 % lost at 4 MiB).
                let part = if mode == proto::MODE_HEAP { len as usize / 5 * 3 } else { len as usize / 2 };
                let half = part & !4095;
                self.st.pushes_in.insert((src, token), (r, len as usize, again));
                self.st.split_in.insert((src, token), SplitIn { half, addr, mode, read: false, written: false, judge: again, read_ns: 0, write_ns: 0 });
                self.st.split[0] += 1;
                self.post_message(src as usize, Head { mode: proto::MODE_SPLIT, addr: at, len: half as u32, ..Head::control(proto::CTS, token) });
                self.st.reads.push_back(Read { r, src, len: half, mode, token, addr, done: 0, ns: 0, whole: false });
                self.st.streams_active += 1;
            }
            proto::MODE_HEAP | proto::MODE_CMA => {
                let rd = Read { r, src, len: len as usize, mode, token, addr, done: 0, ns: 0, whole: true };
                if rd.len >= READ_LATER {
                    self.st.reads.push_back(rd);
                    self.st.streams_active += 1;
                } else {
                    self.read_step(rd, dst, usize::MAX);
                }
            }
            _ => {
                if let Some(cause) = &self.st.lost[src as usize] {
                    let msg = format!("{}: rank {src} {cause} before sending its {len} bytes", self.describe(r));
                    return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                }
                self.send_control(src, proto::CTS, token);
                if len == 0 {
                    return self.finish(r);
                }
                self.stream_receive(r, src, len as usize);
            }
        }
    }

    /// Receive `r` takes its `len` bytes from `src`'s stream.
    fn stream_receive(&mut self, r: OpRef, src: u32, len: usize) {
        let fused = self.fusion(r, len);
        self.st.stream_in[src as usize].push_back(StreamIn { r, pos: 0, len, fused });
        self.st.streams_active += 1;
    }

    /// Whether receive `r`, a message of `len` bytes, is combined with its
    /// local operation as it comes (see [`fuse`]): planned so, filled
    /// exactly, and the operation waits for nothing else. The operation's
    /// counter is raised so that the receive's completion does not start
    /// it again; [`fused_done`](Self::fused_done) finishes it.
    fn fusion(&mut self, r: OpRef, len: usize) -> Option<Box<Fused>> {
        if !self.fusable(r, len) {
            return None;
        }
        let e = self.exec_mut(r)?;
        let sched = e.sched;
        let plan = sched.fusable(r.op)?;
        e.bufs.counters[plan.op as usize] += 1;
        let l = sched.s.locals[sched.s.ops[plan.op as usize].addr as usize];
        Some(Box::new(Fused { op: plan.op, l, first: plan.first, elems: 0, carry: [0; 8], carry_len: 0, err: None }))
    }

    /// Whether [`fusion`](Self::fusion) would fuse receive `r` of `len` bytes.
    fn fusable(&self, r: OpRef, len: usize) -> bool {
        if trace_on() {
            return false;
        }
        let Some(e) = self.exec(r) else { return false };
        let sched = e.sched;
        let Some(plan) = sched.fusable(r.op) else { return false };
        sched.s.ops[r.op as usize].len as usize == len && e.bufs.counters[plan.op as usize] == 1
    }

    /// Pops up to `max` bytes of the front receive from `p`, a fused one,
    /// and combines them (whole elements; a split one waits in `carry`).
    fn pop_fused(&mut self, p: usize, max: usize) -> usize {
        let Some(si) = self.st.stream_in[p].front_mut() else { return 0 };
        let (r, want) = (si.r, max.min(si.len - si.pos));
        let Some(mut f) = si.fused.take() else { return 0 };
        let mut bounce = std::mem::take(&mut self.st.bounce);
        bounce.resize(FUSE_CHUNK + 8, 0);
        let esize = f.l.width as usize / 8;
        let mut moved = 0;
        while moved < want {
            let c = f.carry_len;
            bounce[..c].copy_from_slice(&f.carry[..c]);
            let n = self.shm.stream_pop(p, &mut bounce[c..c + (want - moved).min(FUSE_CHUNK)]);
            if n == 0 {
                break;
            }
            moved += n;
            let whole = (c + n) / esize;
            self.combine(r, &mut f, &bounce[..whole * esize]);
            let (done, end) = (whole * esize, c + n);
            f.carry[..end - done].copy_from_slice(&bounce[done..end]);
            f.carry_len = end - done;
        }
        self.st.bounce = bounce;
        if let Some(si) = self.st.stream_in[p].front_mut() {
            si.fused = Some(f);
        }
        moved
    }

    /// Combines `theirs`, the next whole elements of fused receive `r`'s
    /// message, into its operation's result (nothing once the execution has
    /// ended or an element divided by zero).
    fn combine(&self, r: OpRef, f: &mut Fused, theirs: &[u8]) {
        let l = f.l;
        let esize = l.width as usize / 8;
        let whole = theirs.len() / esize;
        if let (Some(e), None) = (self.exec(r), f.err) {
            let base = e.bufs.scratch.as_ptr() as *mut u8;
            let off = f.elems * esize;
            // SAFETY: the operation's other operand and result hold
            // `count` elements (API contract, compile-time checks for the
            // scratchpad), and `elems + whole <= count` since the message
            // fills the operation exactly.
            let at = |bit: u8, a: u64| unsafe { operand(base, a, l.mem & (1 << bit) != 0).add(off) };
            let (a, b) = if f.first { (theirs.as_ptr(), at(1, l.b2) as *const u8) } else { (at(0, l.b1) as *const u8, theirs.as_ptr()) };
            // SAFETY: as above; `theirs` holds `whole` elements.
            if let Err(KernelError::DivByZero(i)) = unsafe { localop::apply(l.op(), l.dt(), l.width, a, b, at(2, l.b3), whole) } {
                f.err = Some(f.elems + i);
            }
        }
        f.elems += whole;
    }

    /// Fused receive `r` has all its bytes: it and its operation finish.
    fn fused_done(&mut self, r: OpRef, f: &Fused) {
        self.copied(f.elems * f.l.width as usize / 8);
        if self.exec(r).is_none() {
            return;
        }
        self.st.fused += 1;
        let op = OpRef { op: f.op, ..r };
        match f.err {
            Some(i) => self.local_done(op, Err(KernelError::DivByZero(i))),
            None => {
                self.finish(r);
                self.finish(op);
            }
        }
    }

    fn release_credit(&mut self, src: u32, n: u64) {
        if src != self.rank {
            self.st.release(src, n);
        } else {
            self.st.self_buffered -= n;
        }
    }

    /// Publishes returned eager credit, lazily: a sender only looks at it
    /// when it nears its limit (and then falls back to rendezvous rather than
    /// wait), so publishing every quarter of the credit keeps the store and
    /// the wake-up check off the per-message path.
    fn publish_credits(&mut self) {
        if !self.st.credit_due {
            return;
        }
        self.st.credit_due = false;
        for p in 0..self.size as usize {
            if self.st.released[p] - self.st.published[p] >= self.st.credit_step {
                self.st.published[p] = self.st.released[p];
                if self.remote[p] {
                    let mut h = Head::control(proto::CREDIT, 0);
                    h.addr = self.st.released[p];
                    let _ = self.net_am(p as u32, &h, &[]);
                } else {
                    self.shm.return_credits(p, self.st.released[p]);
                }
            }
        }
    }

    // ---- arrivals ---------------------------------------------------------

    fn poll_messages(&mut self) {
        let shm = &self.shm;
        let mut arrived = std::mem::take(&mut self.st.arrived);
        let st = &mut self.st;
        st.poll_no += 1;
        let poll = st.poll_no;
        // Without kernel channels a finished execution completes without the
        // transports (see `State::completed`): at once, inside the poll
        // (unless one is to end with an earlier execution's mismatch).
        let now = self.kp.is_none() && !trace_on() && st.poisoned.is_empty();
        shm.poll(&mut |src, env, payload| st_arrive(st, &mut arrived, poll, now, src as u32, Head::decode(env), payload));
        if let Some(net) = self.net.as_mut() {
            let st = &mut self.st;
            net.poll(&mut |ev| match ev {
                Event::Am { src, handler, head, payload } => {
                    if let Some(h) = net_head(handler, head) {
                        st_arrive(st, &mut arrived, poll, now, src, h, payload);
                    }
                }
                // In line with the messages, in the order goal-net reports
                // them: a sender reuses a token once its transfer is
                // acknowledged, so the RTS that reuses it can arrive in the
                // same poll as the completion of the transfer before. Handled
                // after it, that completion would finish the new receive and
                // leave the old one waiting forever (seen: t_coll hung in an
                // allgather, 8 ranks on 2 rails, about 1 run in 30 under load).
                Event::BulkDone { src, token } => arrived.push((src, Head::control(NET_BULK_DONE, token as u32), None)),
                Event::BulkSent { dst, token } => arrived.push((dst, Head::control(NET_BULK_SENT, token as u32), None)),
                Event::PeerLost { peer, why } => st.net_lost.push((peer, why)),
                Event::RailLost { peer, rail, why } => {
                    if trace_on() {
                        say!("goal: rail {rail} to rank {peer} lost: {why}");
                    }
                }
            });
        }
        // Mostly empty: an inline delivery leaves nothing here, and setting
        // up the drain cost as much as a quarter of the poll.
        if !arrived.is_empty() {
            self.st.in_poll = true;
            for (src, h, data) in arrived.drain(..) {
                self.on_message(src, h, data);
            }
            self.st.in_poll = false;
        }
        self.st.arrived = arrived;
        if !self.st.stray_keys.is_empty() {
            // (Executions finished inside the poll.)
            self.strays();
        }
        if !self.st.net_lost.is_empty() {
            // Losses last: goal-net may report a peer's departure in the same
            // poll before a transfer of its that had completed (the peer
            // left because we acknowledged it); that transfer did arrive.
            for (peer, why) in std::mem::take(&mut self.st.net_lost) {
                self.peer_lost(PeerLost { rank: peer as usize, cause: format!("is unreachable: {why}"), finalized: None });
            }
            self.drain_ready();
        }
    }

    fn on_message(&mut self, src: u32, h: Head, data: Option<Vec<u8>>) {
        match h.kind {
            proto::EAGER => {
                if let Some(d) = data {
                    let ctl = matches!(h.mode, proto::MODE_OFFER | proto::MODE_SWITCH)
                        .then_some(Ctl { mode: h.mode, fd: h.token, op: h.addr as u32, sched: h.sched, nonce: (h.addr >> 32) as u32 });
                    let u = Unexp { src, tag: h.tag, len: h.len, kind: UnexpKind::Eager(d, ctl) };
                    match self.match_posted(h.sched, h.seq, src, h.tag) {
                        Some(r) => self.deliver(r, u),
                        None => self.stash(h.sched, h.seq, u),
                    }
                }
                // (Always with data: one delivered inline comes as DELIVERED.)
            }
            NET_BULK_DONE => {
                if let Some(r) = self.st.net_in.remove(&(src, h.token)) {
                    self.finish(r);
                }
            }
            NET_BULK_SENT => {
                if let Some(s) = self.take_token(h.token) {
                    self.finish(s.r);
                }
            }
            DELIVERED => {
                let r = OpRef { slot: h.sched, gen: h.seq, op: h.token };
                if h.mode == DELIVERED_TRUNCATED {
                    let msg = format!("{}: message of {} bytes from rank {src} is larger than the receive (truncation)", self.describe(r), h.len);
                    self.fail(r, Error::new(ErrorKind::Truncated, msg));
                } else if h.mode == DELIVERED_SHORT {
                    let cap = self.rec(r).map_or(0, |o| o.len);
                    self.fail(r, short_message(self.describe(r), h.len, src, cap));
                } else {
                    self.finish(r);
                }
            }
            proto::RTS => {
                if h.mode == proto::MODE_CMA || h.mode == proto::MODE_STREAM {
                    let path = if h.mode == proto::MODE_CMA { adapt::Path::Cma } else { adapt::Path::Stream };
                    self.adapt.arrived(src as usize, h.len as usize, path);
                    if src < self.rank {
                        // The pair's lower rank chose: our sends follow (see `adapt`).
                        self.adapt.heard(src as usize, h.len as usize, path);
                    }
                }
                let u = Unexp { src, tag: h.tag, len: h.len, kind: UnexpKind::Rts { mode: h.mode, token: h.token, addr: h.addr } };
                match self.match_posted(h.sched, h.seq, src, h.tag) {
                    Some(r) => self.deliver(r, u),
                    None => self.stash(h.sched, h.seq, u),
                }
            }
            proto::CTS if h.mode == proto::MODE_PUSH => {
                if let Some(s) = self.st.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    let w = Write { token: h.token, peer: s.peer, len: s.len, addr: h.addr, done: 0, start: 0, ns: 0 };
                    self.st.writes.push_back(w);
                    self.st.streams_active += 1;
                }
            }
            proto::CTS if h.mode == proto::MODE_SPLIT => {
                if let Some(s) = self.st.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    // Only a sender with nothing else to do: its application
                    // waits, and no operation of its own is ready or running
                    // (a scatter's root copying its own block would make
                    // the receiver wait for that copy too). Its writes of
                    // earlier messages' halves may be queued: in a burst it
                    // writes them one after the other while the receiver
                    // reads its halves (2 ranks, windows of 1 MiB messages
                    // by CMA: 5.8 GB/s declining those, 12.9 queueing them).
                    let waits = self.in_wait || self.app_waiting.as_ref().is_some_and(|w| w.load(Ordering::Relaxed) > 0);
                    let idle = !self.has_own_work() && self.st.reads.is_empty();
                    if waits && idle && (h.len as usize) < s.len {
                        let half = h.len as usize;
                        let w = Write { token: h.token, peer: s.peer, len: s.len, addr: h.addr, done: half, start: half, ns: 0 };
                        self.st.split_out.insert(h.token, (2, 0));
                        self.st.writes.push_back(w);
                        self.st.streams_active += 1;
                    } else {
                        self.post_message(src as usize, Head { mode: proto::PUSH_DECLINED, ..Head::control(proto::PUSHED, h.token) });
                    }
                }
            }
            proto::PUSHED => self.pushed(src, h.token, h.mode, h.addr),
            proto::CTS => {
                if let Some(s) = self.st.rdv.get(h.token as usize).and_then(|s| s.as_ref()) {
                    // From the record, not the operation: an execution that
                    // failed here still owes a local receiver its bytes
                    // (zeros, see `pump_streams`), or the receiver waits for
                    // ever. (Over the network there is no buffer left to
                    // send from: the send just ends, as it did before.)
                    let peer = s.peer as usize;
                    let gone = self.exec(s.r).is_none();
                    let len = if gone && self.remote[peer] { 0 } else { s.len };
                    if len > 0 && self.remote[peer] {
                        let r = s.r;
                        let src: Vec<(*const u8, usize)> = self.pieces(r).map(|p| p.as_slice().iter().map(|&(p, l)| (p as *const u8, l)).collect()).unwrap_or_default();
                        let res = match self.net.as_mut() {
                            // SAFETY: the send buffer stays valid and unmodified until
                            // the execution ends (API contract); it ends only after
                            // BulkSent or the peer's loss.
                            Some(n) => unsafe { n.send_bulk(peer as u32, h.token as u64, src) },
                            None => Err(std::io::Error::other("no network")),
                        };
                        if let Err(e) = res {
                            self.take_token(h.token);
                            let msg = format!("{}: sending {len} bytes to rank {peer}: {e}", self.describe(r));
                            self.fail(r, Error::new(ErrorKind::PeerLost, msg));
                        }
                    } else if len == 0 {
                        if let Some(s) = self.take_token(h.token) {
                            self.finish(s.r);
                        }
                    } else {
                        if s.mode == proto::MODE_CMA && h.addr != proto::CTS_THIS_ONE {
                            // The receiver may not read our memory.
                            self.adapt.deny_cma();
                        }
                        self.st.stream_out[peer].push_back(StreamOut { token: h.token, pos: 0, len, since: None, tail_ns: 0 });
                        self.st.streams_active += 1;
                    }
                }
            }
            proto::FIN if h.mode == proto::FIN_PART && self.st.split_out.contains_key(&h.token) => self.part_done(h.token, h.addr),
            // A sender that declined its part waits for the plain FIN.
            proto::FIN if h.mode == proto::FIN_PART => {}
            proto::FIN => {
                if self.st.split_out.remove(&h.token).is_some() {
                    // A split message whose receiver's execution failed
                    // before its part was read: the send ends here, and
                    // its token may serve another send at once, so its
                    // write must not go on (into the old buffer, with the
                    // new send's bytes). The receiver waits for PUSHED.
                    let before = self.st.writes.len();
                    self.st.writes.retain(|w| w.token != h.token);
                    let dropped = before - self.st.writes.len();
                    if dropped > 0 {
                        self.st.streams_active -= dropped as u32;
                        self.post_message(src as usize, Head { mode: proto::PUSH_BY_STREAM, ..Head::control(proto::PUSHED, h.token) });
                    }
                }
                if let Some(s) = self.take_token(h.token) {
                    if s.mode == proto::MODE_CMA {
                        // The receiver's read time rides in `addr`.
                        let len = self.rec(s.r).map_or(0, |o| o.len as usize);
                        self.adapt.record(src as usize, len, adapt::Path::Cma, s.exchange, h.addr);
                    }
                    self.finish(s.r);
                }
            }
            proto::CREDIT => {
                let r = &mut self.st.eager_returned[src as usize];
                *r = (*r).max(h.addr);
            }
            proto::ACCEPT | proto::DECLINE => self.channel_answer(h.kind == proto::ACCEPT, src, h.sched, h.token),
            _ => {}
        }
        self.drain_ready();
    }

    /// Moves every transfer in flight along: streams in and out, reads.
    fn pump_transfers(&mut self) {
        self.pump_streams();
        if !self.st.reads.is_empty() {
            self.pump_reads();
        }
        if !self.st.writes.is_empty() {
            self.pump_writes();
        }
    }

    /// Receiver: whether to ask the sender of a CMA message of `len` bytes
    /// into `dst` to write it here itself: a long message, while this rank
    /// has operations of its own to run (which the read would otherwise
    /// wait behind or delay), from a sender that may
    /// ([`may_write_here`](Self::may_write_here)).
    fn push_pays(&self, src: u32, len: usize, dst: &Pieces) -> bool {
        // Not before this rank has read one such message from `src` itself:
        // its time is what the pushes are judged by (see COLD_WRITES).
        self.pushes && len >= PUSH_MIN && (len >= COLD_MAX || self.st.read_ps[src as usize] != 0) && self.has_own_work() && self.may_write_here(src, dst)
    }

    /// Receiver: `src` wrote a message here, or its part of a split one, in
    /// `write_ns`, where this rank's own copy of as much took `read_ns` (its
    /// part of the same message; its fastest read of a whole one; 0:
    /// unknown). [`COLD_VOTES`] cold writes in a row (see [`COLD_WRITES`])
    /// keep the next messages from `src` to this rank's own copies.
    fn judge_write(&mut self, src: u32, judge: bool, write_ns: u64, read_ns: u64) {
        if !judge || read_ns == 0 {
            return;
        }
        let p = src as usize;
        if write_ns * 100 < read_ns * COLD_WRITES {
            self.st.cold_votes[p] = 0;
            self.st.cold_skip[p] = 0;
            return;
        }
        self.st.cold_writes += 1;
        self.cold_vote(p);
    }

    /// Receiver: one more reason not to have `p` write here (a cold write,
    /// or a split it declined); [`COLD_VOTES`] in a row start a pause.
    fn cold_vote(&mut self, p: usize) {
        self.st.cold_votes[p] += 1;
        if self.st.cold_votes[p] >= COLD_VOTES {
            let skip = if self.st.cold_skip[p] == 0 { COLD_SKIP } else { (self.st.cold_skip[p] * 2).min(COLD_SKIP_MAX) };
            self.st.cold_skip[p] = skip;
            self.st.cold[p] = skip;
            self.st.cold_votes[p] = 0;
            self.st.written_to[p] = Recent::default();
        }
    }

    /// Receiver: whether `src` may write (all or part of) its next long
    /// message here, counting down the messages taken without its writes
    /// since its last cold one (see [`COLD_WRITES`]).
    fn writes_warm(&mut self, src: u32) -> bool {
        let c = &mut self.st.cold[src as usize];
        if *c == 0 {
            return true;
        }
        *c -= 1;
        false
    }

    /// Whether this rank has operations of its own starting (a Run), ready
    /// to run, or running in pieces.
    fn has_own_work(&self) -> bool {
        self.st.run_left > 0 || !self.st.ready.is_empty() || self.st.in_pieces
    }

    /// Receiver: whether `src` may be asked to write (all or part of) a
    /// message into `dst` (see [`Write`]): one piece, a sender allowed to
    /// write here and alive, that waits for nothing of this rank's (in an
    /// exchange both cores are busy: pulling is as good, with one message
    /// less).
    fn may_write_here(&self, src: u32, dst: &Pieces) -> bool {
        matches!(dst, Pieces::One(_))
            && !self.st.push_refused[src as usize]
            && self.st.lost[src as usize].is_none()
            && !self.st.rdv.iter().flatten().any(|s| s.peer == src)
    }

    /// Receiver: whether to split a CMA or shared-heap message (`mode`) of
    /// `len` bytes into `dst` with its sender (see [`SPLIT_MIN`],
    /// [`HEAP_SPLIT_MIN`]): as for a push, but for a receiver with nothing
    /// else to do, where CMA reads have worked (a heap message: the
    /// sender's write tells, see `PUSH_REFUSED`), not with more ranks than
    /// cores (the sender's core is another rank's then, and the receiver
    /// would wait for it), and not for a receive that a local operation
    /// combines next (`fusable`): that one reads the message, from this
    /// core's cache when this core copied it (2 ranks, reduce of 64 KiB:
    /// 5.5-7.2 us read here, 8.2-9.9 split).
    fn split_pays(&self, r: OpRef, src: u32, mode: u8, len: usize, dst: &Pieces) -> bool {
        let long = if mode == proto::MODE_HEAP { len >= HEAP_SPLIT_MIN } else { len >= SPLIT_MIN && self.st.cma_reads_work };
        self.splits
            && long
            && !self.fusable(r, len)
            && self.may_write_here(src, dst)
    }

    /// Sender: one part of rendezvous `token` is over (its write, or a
    /// split message's read by the receiver), after `ns`; the send ends
    /// with its last. A split message's two parts are copied at once, on
    /// two cores: the longer one is CMA's time for the whole message. Not
    /// counted, a sender whose receivers always split (an idle receiver: a
    /// broadcast's) never measured CMA, and an unmeasured path keeps
    /// calibration's choice: 2 ranks, bcast of 1 MiB went by split CMA in
    /// 86-91 us, where the stream, measured at 0.08 ns per byte against
    /// split CMA's 0.12 once both were, takes 50.
    fn part_done(&mut self, token: u32, ns: u64) {
        if let Some((left, longest)) = self.st.split_out.get_mut(&token) {
            *left -= 1;
            *longest = (*longest).max(ns);
            if *left > 0 {
                return;
            }
            let longest = *longest;
            self.st.split_out.remove(&token);
            if let Some(s) = self.st.rdv.get(token as usize).and_then(|s| s.as_ref()).filter(|s| s.mode == proto::MODE_CMA) {
                let (peer, len, exchange) = (s.peer as usize, s.len, s.exchange);
                self.adapt.record(peer, len, adapt::Path::Cma, exchange, longest);
            }
        }
        if let Some(s) = self.take_token(token) {
            self.finish(s.r);
        }
    }

    /// Sender: writes the next piece of the first pushed message.
    fn pump_writes(&mut self) {
        let Some(mut w) = self.st.writes.pop_front() else { return };
        self.st.streams_active -= 1;
        let (peer, token) = (w.peer, w.token);
        let r = self.st.rdv.get(token as usize).and_then(|s| s.as_ref()).map(|s| s.r);
        let Some(src) = r.and_then(|r| self.pieces(r)) else {
            // Its execution failed here: nothing to write from. As a stream
            // whose sender failed, the receiver gets zeros by the stream
            // (the record stays for its CTS).
            return self.post_message(peer as usize, Head { mode: proto::PUSH_BY_STREAM, ..Head::control(proto::PUSHED, token) });
        };
        let r = r.unwrap_or_else(|| unreachable!());
        let end = w.len.min(w.done + READ_PIECE);
        let pid = self.shm.peer_pid(peer as usize);
        let t0 = Instant::now();
        let res = each_span(&src, w.done, end, |p, from, n| {
            // SAFETY: `each_span` gives a part of a send buffer piece, valid
            // for `n` bytes and unmodified until the execution ends (API
            // contract).
            let d = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
            goal_transport::sys::cma_write(pid, w.addr + from as u64, d)
        });
        w.ns += t0.elapsed().as_nanos() as u64;
        match res {
            Ok(()) => {
                self.copied(end - w.done);
                w.done = end;
                if end < w.len {
                    self.st.writes.push_front(w);
                    self.st.streams_active += 1;
                    return;
                }
                // With the write's time, for the receiver (see COLD_WRITES).
                self.post_message(peer as usize, Head { mode: proto::PUSH_DONE, addr: w.ns, ..Head::control(proto::PUSHED, token) });
                if w.start == 0 {
                    // A whole message written is CMA's time for `adapt`, as a
                    // read's would be: a receiver that always asks its sender
                    // to write (a gather's root, busy with its own block) left
                    // CMA unmeasured, and the chooser kept it, at twice the
                    // stream's time (2 ranks, gather of 1 MiB: 139 us, 71 by
                    // the stream).
                    let exchange = self.in_exchange(token);
                    self.adapt.record(peer as usize, w.len, adapt::Path::Cma, exchange, w.ns);
                }
                self.part_done(token, w.ns);
            }
            // Not allowed (ptrace rules): the receiver asks for the stream
            // (or reads the rest of a split message), this send stays.
            Err(e) if w.done == w.start && e.kind() == std::io::ErrorKind::PermissionDenied => {
                self.st.split_out.remove(&token);
                self.post_message(peer as usize, Head { mode: proto::PUSH_REFUSED, ..Head::control(proto::PUSHED, token) });
            }
            Err(e) => {
                self.st.split_out.remove(&token);
                self.take_token(token);
                let (kind, msg) = if e.raw_os_error() == Some(libc::ESRCH) {
                    (ErrorKind::PeerLost, format!("{}: rank {peer} exited before its {} bytes were written (at byte {})", self.describe(r), w.len, w.done))
                } else {
                    self.post_message(peer as usize, Head { mode: proto::PUSH_FAILED, ..Head::control(proto::PUSHED, token) });
                    (ErrorKind::System, format!("{}: writing {} bytes into rank {peer} by Cross Memory Attach failed at byte {}: {e}", self.describe(r), w.len, w.done))
                };
                self.fail(r, Error::new(kind, msg));
            }
        }
    }

    /// Receiver: the sender of the message of its rendezvous `token` says
    /// how writing it here went (`proto::PUSHED`).
    fn pushed(&mut self, src: u32, token: u32, how: u8, write_ns: u64) {
        let Some((r, len, judge)) = self.st.pushes_in.remove(&(src, token)) else { return };
        let split = self.st.split_in.remove(&(src, token));
        if self.st.draining.contains_key(&r.slot) {
            // Its execution failed meanwhile: it ends once nothing more is written.
            if !self.st.pushes_in.values().any(|(x, _, _)| x.slot == r.slot) {
                self.complete_slow(r.slot, Ok(()));
            }
            return;
        }
        if how == proto::PUSH_DONE {
            // Its bytes are in this buffer's lines now (see `written_to`).
            let at = self.pieces(r).and_then(|d| d.as_slice().first().map(|&(p, _)| p as u64)).unwrap_or(0);
            self.st.written_to[src as usize].put(at);
            self.st.read_to[src as usize].take(at);
        }
        match (how, split) {
            (proto::PUSH_DONE, Some(mut sp)) if !sp.read => {
                self.st.pushed += 1;
                sp.written = true;
                sp.write_ns = write_ns;
                self.st.split_in.insert((src, token), sp);
            }
            (proto::PUSH_DONE, Some(sp)) => {
                self.st.pushed += 1;
                self.judge_write(src, sp.judge, write_ns, sp.read_ns);
                self.finish(r);
            }
            (proto::PUSH_DONE, None) => {
                self.st.pushed += 1;
                self.judge_write(src, judge, write_ns, self.st.read_ps[src as usize] * len as u64 / 1000);
                self.finish(r);
            }
            (proto::PUSH_REFUSED | proto::PUSH_DECLINED | proto::PUSH_BY_STREAM, Some(sp)) => {
                // The sender writes nothing: this rank reads the rest too
                // (its read goes on to the end, or takes up where it
                // stopped), then frees the sender with a plain FIN.
                if how == proto::PUSH_REFUSED {
                    self.st.push_refused[src as usize] = true;
                }
                self.st.split[1] += 1;
                if how == proto::PUSH_DECLINED {
                    // A sender busy with its own work (a scatter's root
                    // copies its block) or computing declines every time,
                    // and each request left this rank waiting for the
                    // answer after its half (2 ranks, scatter of 256 KiB:
                    // 17.5 us, 985 of 1003 requests declined, against 12.5
                    // in manual mode).
                    self.cold_vote(src as usize);
                }
                // Its FIN carries the whole read's time: the half read
                // already counts (timed from the second half alone, CMA
                // looked twice as fast as it was: 2 ranks, scatter of 1 MiB,
                // 75 us a read against the 145 us iterations it made, where
                // the stream took 96 and was not chosen).
                match self.st.reads.iter_mut().find(|rd| rd.src == src && rd.token == token) {
                    Some(rd) => rd.len = len,
                    None => {
                        self.st.reads.push_back(Read { r, src, len, mode: sp.mode, token, addr: sp.addr, done: sp.half, ns: sp.read_ns, whole: false });
                        self.st.streams_active += 1;
                    }
                }
            }
            (proto::PUSH_REFUSED | proto::PUSH_BY_STREAM, None) => {
                if how == proto::PUSH_REFUSED {
                    self.st.push_refused[src as usize] = true;
                }
                self.post_message(src as usize, Head { addr: proto::CTS_THIS_ONE, ..Head::control(proto::CTS, token) });
                self.stream_receive(r, src, len);
            }
            _ => {
                let msg = format!("{}: rank {src} could not write its message here", self.describe(r));
                self.fail(r, Error::new(ErrorKind::System, msg));
            }
        }
    }

    /// Reads the next piece of the first message read from its sender's
    /// memory (see [`READ_LATER`]).
    fn pump_reads(&mut self) {
        let Some(rd) = self.st.reads.pop_front() else { return };
        self.st.streams_active -= 1;
        let Some(dst) = self.pieces(rd.r) else {
            // Its execution failed here: the sender still waits for FIN.
            self.post_message(rd.src as usize, Head { addr: 0, ..Head::control(proto::FIN, rd.token) });
            return;
        };
        if let Some(rd) = self.read_step(rd, &dst, READ_PIECE) {
            self.st.reads.push_front(rd);
            self.st.streams_active += 1;
        }
    }

    /// Reads up to `piece` more bytes of message `rd` from its sender's
    /// memory into `dst`, the receive's buffer; returns it if bytes are
    /// left. At its end (or on an error) frees the sender with FIN and
    /// finishes (fails) the receive; a receiver not allowed to read the
    /// sender's memory (ptrace rules) asks for the stream instead.
    fn read_step(&mut self, mut rd: Read, dst: &Pieces, piece: usize) -> Option<Read> {
        let (src, len, mode) = (rd.src, rd.len, rd.mode);
        let end = len.min(rd.done.saturating_add(piece));
        let t0 = Instant::now();
        let res = each_span(dst, rd.done, end, |p, from, n| {
            // SAFETY: `each_span` gives a part of a receive buffer piece,
            // valid for writes for `n` bytes (API contract).
            let d = unsafe { std::slice::from_raw_parts_mut(p, n) };
            if mode == proto::MODE_HEAP {
                self.shm.read_peer_heap(src as usize, rd.addr + from as u64, d)
            } else {
                goal_transport::sys::cma_read(self.shm.peer_pid(src as usize), rd.addr + from as u64, d)
            }
        });
        let ns = t0.elapsed().as_nanos() as u64;
        let denied = res.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        if mode == proto::MODE_CMA && rd.done == 0 && denied && self.st.lost[src as usize].is_none() {
            self.send_control(src, proto::CTS, rd.token);
            self.stream_receive(rd.r, src, len);
            return None;
        }
        if res.is_ok() {
            self.copied(end - rd.done);
            rd.done = end;
            rd.ns += ns;
            if end < len {
                return Some(rd);
            }
            if mode == proto::MODE_CMA {
                self.st.cma_reads_work = true;
            }
            if let Some(sp) = self.st.split_in.get_mut(&(src, rd.token)) {
                // The receiver's part of a split message: the sender's
                // buffer is free once its own part is written too.
                sp.read = true;
                sp.read_ns = rd.ns;
                let (written, write_ns, judge) = (sp.written, sp.write_ns, sp.judge);
                self.post_message(src as usize, Head { mode: proto::FIN_PART, addr: rd.ns, ..Head::control(proto::FIN, rd.token) });
                if written {
                    self.st.split_in.remove(&(src, rd.token));
                    self.judge_write(src, judge, write_ns, rd.ns);
                    self.finish(rd.r);
                }
                return None;
            }
            // The second of two reads into one buffer: where this rank's
            // own copy leaves the lines, as a push into it finds them
            // when the application reads nothing.
            let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
            let again = self.st.read_to[src as usize].take(at);
            self.st.read_to[src as usize].put(at);
            if mode == proto::MODE_CMA && len >= PUSH_MIN && rd.whole && again {
                let ps = rd.ns * 1000 / len as u64;
                let best = &mut self.st.read_ps[src as usize];
                if *best == 0 || ps < *best {
                    *best = ps.max(1);
                }
            }
        }
        // FIN carries the read's time, for the sender's choice of path.
        let ns = if mode == proto::MODE_CMA && res.is_ok() { rd.ns } else { 0 };
        self.post_message(src as usize, Head { addr: ns, ..Head::control(proto::FIN, rd.token) });
        match res {
            Ok(()) => self.finish(rd.r),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                let msg = format!("{}: rank {src} exited before its {len} bytes were read (at byte {})", self.describe(rd.r), rd.done);
                self.fail(rd.r, Error::new(ErrorKind::PeerLost, msg));
            }
            Err(e) => {
                let how = if mode == proto::MODE_HEAP { "shared heap" } else { "Cross Memory Attach" };
                let msg = format!("{}: reading {len} bytes from rank {src} by {how} failed at byte {}: {e}", self.describe(rd.r), rd.done);
                self.fail(rd.r, Error::new(ErrorKind::System, msg));
            }
        }
        None
    }

    fn pump_streams(&mut self) {
        for p in 0..self.size as usize {
            // Outgoing: copy the front send's next bytes into the stream.
            while let Some(so) = self.st.stream_out[p].front() {
                let (token, pos, len) = (so.token, so.pos, so.len);
                let r = self.st.rdv.get(token as usize).and_then(|s| s.as_ref()).map(|s| s.r);
                let pieces = r.and_then(|r| self.pieces(r));
                let began = Instant::now();
                let moved = match &pieces {
                    Some(pc) => push_from(&self.shm, p, pc, pos, len),
                    None => {
                        // Its execution failed: keep the stream in step with zeros.
                        let z = vec![0u8; (len - pos).min(1 << 20)];
                        self.shm.stream_push(p, &z)
                    }
                };
                self.copied(moved);
                let so = self.st.stream_out[p].front_mut().unwrap_or_else(|| unreachable!());
                if so.since.is_none() {
                    so.since = Some(began);
                }
                if moved > 0 {
                    so.tail_ns = adapt::stream_trail_ns(began.elapsed().as_nanos() as u64, moved);
                }
                so.pos += moved;
                if so.pos < so.len {
                    break;
                }
                let done = self.st.stream_out[p].pop_front().unwrap_or_else(|| unreachable!());
                self.st.streams_active -= 1;
                if let Some(t) = done.since {
                    let exchange = self.in_exchange(token);
                    let incoming = self.st.stream_in[p].len();
                    if exchange && incoming > 0 {
                        // Half of an exchange: timed until the messages
                        // coming the other way that are in the stream now
                        // are copied out too (see `ExchangeTiming`).
                        self.st.exchange_timing[p] = Some(ExchangeTiming { since: t, len: done.len, incoming });
                    } else {
                        let ns = t.elapsed().as_nanos() as u64 + if exchange { 0 } else { done.tail_ns };
                        self.adapt.record(p, done.len, adapt::Path::Stream, exchange, ns);
                    }
                }
                if let Some(s) = self.take_token(token) {
                    self.finish(s.r);
                }
            }
            // Incoming: copy what has arrived into the front receive. A
            // fused one takes only what was there at the start: popping on
            // while the sender keeps pushing held this rank here for as
            // long as the message lasted, its own sends waiting.
            let mut avail = usize::MAX;
            while let Some(si) = self.st.stream_in[p].front() {
                let (r, pos, len, fused) = (si.r, si.pos, si.len, si.fused.is_some());
                let moved = if fused {
                    if avail == usize::MAX {
                        avail = self.shm.stream_available(p);
                    }
                    let n = self.pop_fused(p, avail);
                    avail -= n;
                    n
                } else {
                    let n = match self.pieces(r) {
                        Some(pc) => pop_into(&self.shm, p, &pc, pos, len),
                        None => {
                            let n = (len - pos).min(1 << 20);
                            self.st.discard.resize(n, 0);
                            self.shm.stream_pop(p, &mut self.st.discard[..n])
                        }
                    };
                    self.copied(n);
                    n
                };
                let si = self.st.stream_in[p].front_mut().unwrap_or_else(|| unreachable!());
                si.pos += moved;
                if si.pos < si.len {
                    break;
                }
                let si = self.st.stream_in[p].pop_front().unwrap_or_else(|| unreachable!());
                self.st.streams_active -= 1;
                if let Some(x) = self.st.exchange_timing[p].as_mut() {
                    x.incoming -= 1;
                    if x.incoming == 0 {
                        let (since, len) = (x.since, x.len);
                        self.st.exchange_timing[p] = None;
                        self.adapt.record(p, len, adapt::Path::Stream, true, since.elapsed().as_nanos() as u64);
                    }
                }
                match si.fused {
                    Some(f) => self.fused_done(r, &f),
                    None => self.finish(r),
                }
            }
        }
    }

    // ---- kernel mode (see `kpath`) ------------------------------------------

    /// Lets a busy receiver ask its senders to write their large messages
    /// into its memory (see [`Write`]). Only where senders have a helper:
    /// a sender in `manual` mode would write only when its application
    /// next calls goal, where the receiver could have read without it.
    /// (Peers are taken to run in this rank's mode, as a job's ranks do.)
    pub fn allow_pushes(&mut self, on: bool) {
        self.pushes = on;
    }

    /// Lets an idle receiver share the copy of a large message with its
    /// sender (see [`SPLIT_MIN`]), a sender whose application threads wait
    /// in Wait (`app_waiting`, the runtime's count) agreeing.
    pub fn allow_splits(&mut self, on: bool, app_waiting: Arc<AtomicU32>) {
        self.splits = on;
        self.adapt.burst_by_cma(on);
        self.app_waiting = Some(app_waiting);
    }

    /// Turns the kernel mode on: channels to peers, chains in `ring`.
    pub fn enable_kernel(&mut self, ring: KRing) {
        self.kp = Some(KPath::new(ring));
    }

    /// The kernel ring's descriptor (readable while completions wait).
    pub fn kernel_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.kp.as_ref().map(|k| k.ring.fd().as_raw_fd())
    }

    /// At finalize: what the ranks' schedules disagreed on that no
    /// execution reported. Messages that came after their execution had
    /// finished, whose schedule never ran again (see [`stale`](Self::stale)),
    /// and messages for executions this rank never started: in a program
    /// whose ranks agree, every message is received by the time its ranks
    /// finalize.
    pub fn unreported(&mut self) -> Vec<String> {
        self.poll_messages();
        let mut out: Vec<(u32, String)> =
            self.st.stale.drain().map(|(id, e)| (id, format!("{}; no later execution of schedule {id} ran here to report it", e.message))).collect();
        let mut keys: Vec<u64> = self.st.unexp.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let (sched, seq) = ((k >> 32) as u32, k as u32);
            if self.st.active.get(sched as usize).is_some_and(|a| a.iter().any(|&(q, _)| q == seq)) {
                continue; // (its Wait will say)
            }
            let q = &self.st.unexp[&k];
            let u = &q[0];
            out.push((
                sched,
                format!(
                    "{} message(s) for schedule {sched} execution {seq} found no receive here (the first from rank {}, {}, {} bytes): \
                     this rank never ran that execution; the ranks' programs disagree on what to compile or run",
                    q.len(),
                    u.src,
                    tag_words(u.tag),
                    u.len
                ),
            ));
        }
        out.sort_by_key(|x| x.0);
        out.into_iter().map(|x| x.1).collect()
    }

    /// What the kernel mode did, for the debug line at the end.
    pub fn kernel_summary(&self) -> Option<String> {
        let s = self.kp.as_ref()?.stats;
        Some(format!(
            "kernel mode: {} channel(s) out, {} in ({} and {} of them over TCP), {} offer(s) declined; {} operation(s) in {} chain(s) ran in the kernel, {} completion(s) reached user space",
            s.channels_out, s.channels_in, s.tcp_out, s.tcp_in, s.declined, s.kernel_ops, s.runs, s.completions
        ))
    }

    /// How many large messages took each path, when chosen per message.
    pub fn path_summary(&self) -> Option<String> {
        let [stream, cma] = self.adapt.taken;
        let [x_stream, x_cma] = self.adapt.taken_in_exchange;
        let (fused, pushed, [split, declined], cold) = (self.st.fused, self.st.pushed, self.st.split, self.st.cold_writes);
        (stream + cma + fused + pushed + split > 0).then(|| {
            format!(
                "large messages chosen per message: {stream} by stream, {cma} by CMA (in exchanges: {x_stream} by stream, {x_cma} by CMA); \
                 {fused} receive(s) combined with their local operation as they came; {pushed} written here by their senders while this rank was busy; \
                 {split} copied half by this rank, half by their senders ({declined} of them declined by a sender whose application did not wait); \
                 {cold} of their senders' writes slower than this rank's own copy (the application reads what it receives: this rank then copies for a while); \
                 ns per byte measured: {}",
                self.adapt.measured()
            )
        })
    }

    /// Whether op `op` of schedule `id` travels on its channel now.
    fn on_channel(&self, id: u32, op: u32) -> bool {
        self.kp.as_ref().is_some_and(|k| matches!(k.chan(id, op), Some(Chan::Sending { .. } | Chan::Receiving { .. })))
    }

    /// Sender, eager message of op `r`: offers its channel (made by
    /// `KPath::make_channels`) or announces the switch to it, in `head`.
    fn offer_or_switch(&mut self, r: OpRef, head: &mut Head) {
        let Some(kp) = self.kp.as_mut() else { return };
        let Some(e) = self.st.execs.get(r.slot as usize).and_then(|e| e.as_ref()) else { return };
        let Some(ch) = kp.chan_mut(e.sched.id, r.op) else { return };
        use std::os::fd::AsRawFd;
        match std::mem::replace(ch, Chan::Never) {
            Chan::Ready { mine, theirs } => {
                head.mode = proto::MODE_OFFER;
                head.token = theirs.as_raw_fd() as u32;
                head.addr = r.op as u64;
                *ch = Chan::Offered { mine, theirs };
            }
            Chan::Listening { listener, port, nonce } => {
                head.mode = proto::MODE_OFFER;
                head.token = port as u32;
                head.addr = r.op as u64 | (nonce as u64) << 32;
                *ch = Chan::ListenOffered { listener, nonce };
            }
            Chan::Accepted { mine, theirs } => {
                head.mode = proto::MODE_SWITCH;
                head.addr = r.op as u64;
                let tcp = u64::from(theirs.is_none());
                *ch = Chan::Sending { mine, _theirs: theirs };
                kp.stats.channels_out += 1;
                kp.stats.tcp_out += tcp;
            }
            other => *ch = other,
        }
    }

    /// Sender: the receiver's answer to an offer.
    fn channel_answer(&mut self, accept: bool, src: u32, sched: u32, op: u32) {
        let secret = self.net.as_ref().map(|n| n.config().secret);
        let me = self.rank;
        let Some(kp) = self.kp.as_mut() else { return };
        let Some(ch) = kp.chan_mut(sched, op) else { return };
        let declined = |kp: &mut KPath, fds: usize| {
            kp.stats.declined += 1;
            kp.fds -= fds;
            if trace_on() {
                say!("goal: rank {src} declined the channel of schedule {sched} op {op}");
            }
        };
        match std::mem::replace(ch, Chan::Never) {
            Chan::Offered { mine, theirs } if accept => *ch = Chan::Accepted { mine, theirs: Some(theirs) },
            Chan::Offered { .. } => declined(kp, 2),
            Chan::ListenOffered { listener, nonce } if accept => {
                // The receiver connected before it answered: the connection
                // waits in the listener's queue (a moment more at most).
                let want = secret.map(|k| kpath::hello(&k, me, src, sched, op, nonce));
                let got = goal_transport::kchain::tcp_channel_accept(&listener, kpath::HELLO_LEN, CHANNEL_TIMEOUT);
                match (got, want) {
                    (Ok((mine, hello)), Some(want)) if goal_auth::ct_eq(&hello, &want) => *ch = Chan::Accepted { mine, theirs: None },
                    (got, _) => {
                        // Left on the path through goal-net: the receiver,
                        // bound in vain, keeps receiving there too, since no
                        // switch ever comes.
                        kp.fds -= 1;
                        if trace_on() {
                            let why = got.err().map_or_else(|| "a hello without the job's MAC".to_string(), |e| e.to_string());
                            say!("goal: rank {me}: no channel to rank {src} for schedule {sched} op {op}: {why}");
                        }
                    }
                }
            }
            Chan::ListenOffered { .. } => declined(kp, 1),
            other => *ch = other,
        }
    }

    /// Receiver: answers an offer.
    fn answer_offer(&mut self, src: u32, ctl: Ctl, accept: bool) {
        let kind = if accept { proto::ACCEPT } else { proto::DECLINE };
        self.post_message(src as usize, Head { kind, mode: 0, tag: 0, sched: ctl.sched, seq: 0, len: 0, token: ctl.op, addr: 0 });
    }

    /// Receiver: receive `r` took a message whose envelope offers a channel
    /// or switches to it.
    fn channel_note(&mut self, r: OpRef, src: u32, ctl: Ctl, len: u32) -> Result<(), Error> {
        let Some(e) = self.exec(r) else { return Ok(()) };
        let sched = e.sched;
        let (id, op) = (sched.id, r.op);
        if ctl.mode == proto::MODE_SWITCH {
            let Some(ch) = self.kp.as_mut().and_then(|k| k.chan_mut(id, op)) else {
                return Err(Error::new(ErrorKind::System, format!("{}: rank {src} switched to a channel this rank never accepted", self.describe(r))));
            };
            return match std::mem::replace(ch, Chan::Never) {
                Chan::Bound { fd, len: bound, sock } if bound == len => {
                    *ch = Chan::Receiving { fd, len, sock };
                    Ok(())
                }
                _ => Err(Error::new(ErrorKind::System, format!("{}: rank {src} switched to a channel this receive is not bound to", self.describe(r)))),
            };
        }
        // An offer.
        let o = sched.s.ops[op as usize];
        let eligible = o.kind() == OpKind::Recv
            && self.kp.as_ref().is_some_and(|k| {
                k.room_for(1) && matches!(k.chan(id, op), Some(Chan::Untried)) && k.info.get(id as usize).and_then(|i| i.as_ref()).is_some_and(|i| i.deterministic(&sched.s, op as usize))
            });
        if !eligible {
            self.answer_offer(src, ctl, false);
            return Ok(());
        }
        let taken = if self.remote[src as usize] {
            // Over TCP: connect to the port offered and say who we are.
            let (net, sock) = (self.net.as_ref(), SockType::Stream);
            match net.and_then(|n| Some((n.peer_ip(src)?, n.config().secret))) {
                Some((ip, secret)) => {
                    let hello = kpath::hello(&secret, src, self.rank, ctl.sched, ctl.op, ctl.nonce);
                    let to = std::net::SocketAddr::new(ip, ctl.fd as u16);
                    goal_transport::kchain::tcp_channel_connect(to, &hello, CHANNEL_TIMEOUT).map(|fd| (fd, sock))
                }
                None => Err(std::io::Error::other("no connection to it is up")),
            }
        } else {
            self.shm.take_peer_fd(src as usize, ctl.fd as i32).map(|fd| (fd, SockType::Seqpacket))
        };
        match taken {
            Ok((fd, sock)) => {
                if let Some(kp) = self.kp.as_mut() {
                    if let Some(ch) = kp.chan_mut(id, op) {
                        *ch = Chan::Bound { fd, len, sock };
                    }
                    kp.stats.channels_in += 1;
                    kp.stats.tcp_in += u64::from(sock == SockType::Stream);
                    kp.fds += 1;
                }
                self.answer_offer(src, ctl, true);
            }
            Err(e) => {
                if trace_on() {
                    say!("goal: rank {}: not taking the channel of rank {src}: {e}", self.rank);
                }
                if let Some(ch) = self.kp.as_mut().and_then(|k| k.chan_mut(id, op)) {
                    *ch = Chan::Never;
                }
                self.answer_offer(src, ctl, false);
            }
        }
        Ok(())
    }

    /// Hands op `r` (on its channel) to the kernel, with the operations
    /// after it on its chain that travel on channels too, linked.
    fn ksubmit(&mut self, r: OpRef) {
        let Some(e) = self.exec(r) else { return };
        let sched = e.sched;
        let id = sched.id;
        let s = &sched.s;
        let Some(kp) = self.kp.as_ref() else { return };
        let Some(info) = kp.info.get(id as usize).and_then(|i| i.clone()) else { return };
        let max = kp.ring.max_chain();
        let mut run = vec![r.op];
        if let Some((c, pos)) = info.plan.place[r.op as usize] {
            for &next in &info.plan.chains[c as usize][pos as usize + 1..] {
                if run.len() >= max || !self.on_channel(id, next) {
                    break;
                }
                run.push(next);
            }
        }
        // A peer known to be gone fails the run at once, as in user space
        // (a send would otherwise land in the dead peer's socket). Not one
        // on another machine: what it sent before it left may still be on
        // the way in its TCP channel, which reports its end by itself
        // (and the run fails after a grace if it does not; see
        // `KPath::watch_lost`).
        let remote = &self.remote;
        if let Some(&op) = run.iter().find(|&&op| {
            let p = s.ops[op as usize].peer as usize;
            self.st.lost[p].is_some() && !remote[p]
        }) {
            let (rr, peer) = (OpRef { op, ..r }, s.ops[op as usize].peer as usize);
            let cause = self.st.lost[peer].clone().unwrap_or_default();
            let msg = format!("{}: rank {peer} {cause}", self.describe(rr));
            return self.fail(rr, Error::new(ErrorKind::PeerLost, msg));
        }
        let mut recs = Vec::with_capacity(run.len());
        let mut kinds = Vec::with_capacity(run.len());
        for &op in &run {
            let o = s.ops[op as usize];
            let ptr = match self.pieces(OpRef { op, ..r }) {
                Some(Pieces::One([(p, _)])) => p,
                _ => std::ptr::null_mut(),
            };
            use std::os::fd::AsRawFd;
            // A stream has no empty messages: an empty one (a barrier's)
            // travels as one byte, from and into bytes nobody reads.
            let Some(kp) = self.kp.as_ref() else { return };
            let (kind, len) = match kp.chan(id, op) {
                Some(Chan::Sending { mine, _theirs: None }) if o.len == 0 => (KOpKind::Send { fd: mine.as_raw_fd(), buf: kpath::ONE_BYTE.as_ptr(), len: 1 }, 1),
                Some(Chan::Sending { mine, .. }) => (KOpKind::Send { fd: mine.as_raw_fd(), buf: ptr, len: o.len }, o.len),
                Some(Chan::Receiving { fd, len: 0, sock: SockType::Stream }) => (KOpKind::Recv { fd: fd.as_raw_fd(), buf: kp.sink(), len: 1, sock: SockType::Stream }, 1),
                Some(Chan::Receiving { fd, len, sock }) => (KOpKind::Recv { fd: fd.as_raw_fd(), buf: ptr, len: *len, sock: *sock }, *len),
                _ => unreachable!("only channel operations join a run"),
            };
            kinds.push(kind);
            recs.push(KRec { slot: r.slot, gen: r.gen, op, run: 0, pos: 0, peer: o.peer as u32, len });
        }
        // Followers wait in the kernel, not on their counters.
        if let Some(e) = self.exec_mut(r) {
            for &op in &run[1..] {
                e.bufs.counters[op as usize] += IN_KERNEL;
            }
        }
        let Some(kp) = self.kp.as_mut() else { return };
        let (run_id, uds) = kp.add_run(&recs);
        let kops: Vec<KOp> = kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| {
                // Quiet unless something outside the rest of the run waits for it.
                let rest = &run[i + 1..];
                let quiet = !rest.is_empty() && s.dependents(run[i] as usize).iter().all(|d| rest.contains(d));
                KOp { user_data: uds[i], kind, link: Link::Soft, quiet }
            })
            .collect();
        if trace_on() {
            let quiet = kops.iter().filter(|k| k.quiet).count();
            say!("goal-trace {:.6} rank {} kernel run of {} op(s) ({quiet} quiet) from op {}", localop::wtime(), self.rank, kops.len(), r.op);
        }
        // SAFETY: send and receive buffers stay valid and untouched by user
        // code until their execution ends (the API contract; scratchpads are
        // the execution's own), and an execution ends only once each of its
        // kernel operations has completed, or, if it fails first, its
        // scratchpad is leaked rather than reused (`complete`). A channel's
        // descriptors live in `kp.chans` until its schedule is freed, which
        // cannot happen while an execution of it runs.
        match unsafe { kp.ring.submit_chain(&kops) } {
            Ok(()) => {
                kp.stats.kernel_ops += kops.len() as u64;
                kp.stats.runs += 1;
                for rec in &recs {
                    if let Some(why) = &self.st.lost[rec.peer as usize] {
                        kp.watch_lost(rec.peer, format!("rank {} {why} while this execution still needed it", rec.peer));
                    }
                }
            }
            Err(err) => {
                kp.drop_run(run_id);
                let msg = format!("{}: handing {} operation(s) to io_uring: {err}", self.describe(r), kops.len());
                self.fail(r, Error::new(ErrorKind::System, msg));
            }
        }
    }

    /// Takes in the kernel's completions.
    fn reap_kernel(&mut self) {
        let Some(kp) = self.kp.as_mut() else { return };
        if kp.ring.in_flight() == 0 {
            return;
        }
        let mut got = std::mem::take(&mut kp.reaped);
        if kp.ring.reap(&mut got) == 0 {
            kp.reaped = got;
            return;
        }
        kp.stats.completions += got.len() as u64;
        for &(ud, res) in &got {
            self.kernel_done(ud, res);
        }
        got.clear();
        if let Some(kp) = self.kp.as_mut() {
            kp.reaped = got;
        }
        self.drain_ready();
    }

    /// Operation `ud` completed with `res`; a success also vouches for the
    /// quiet operations before it in its run.
    fn kernel_done(&mut self, ud: u64, res: i32) {
        let Some(kp) = self.kp.as_mut() else { return };
        let Some(rec) = kp.ops.get(ud as usize).copied().flatten() else { return };
        let Some(run) = kp.runs[rec.run as usize].as_mut() else { return };
        let upto: Vec<u64> = run.ops[run.next.min(rec.pos as usize + 1)..=rec.pos as usize].to_vec();
        run.next = run.next.max(rec.pos as usize + 1);
        let ok = res >= 0 && res as u32 == rec.len;
        let mut done = Vec::with_capacity(upto.len());
        for u in upto {
            if let Some(x) = kp.ops[u as usize] {
                done.push(OpRef { slot: x.slot, gen: x.gen, op: x.op });
            }
            kp.retire(u);
        }
        if ok {
            for r in done {
                self.finish(r);
            }
            return;
        }
        let r = OpRef { slot: rec.slot, gen: rec.gen, op: rec.op };
        if self.exec(r).is_some() {
            let send = self.rec(r).is_some_and(|o| o.kind() == OpKind::Send);
            let err = kpath::failure(&self.describe(r), rec.peer, send, res, rec.len);
            self.fail(r, err);
        }
    }
}

/// Whether `GOAL_TRACE` asks for a line per operation started and finished.
fn trace_on() -> bool {
    TRACE.load(Ordering::Relaxed)
}

/// `GOAL_TRACE`, read once by the engine's constructor: a plain load on the
/// path of every operation (a `OnceLock` cost a check of its state too).
static TRACE: AtomicBool = AtomicBool::new(false);

/// Pseudo-kind used inside `poll_messages`: an eager message was already
/// copied into its posted receive while still in the ring; finish it now.
const DELIVERED: u8 = 0xF0;

/// Pseudo-kinds used inside `poll_messages`: goal-net finished receiving
/// (sending) the bulk transfer `token` from (to) the rank.
const NET_BULK_DONE: u8 = 0xF1;
const NET_BULK_SENT: u8 = 0xF2;

/// A message arriving during poll number `poll`, from the rings or from
/// goal-net alike. An eager message whose receive is posted is copied
/// straight into it (without the copy that would wait for the poll's end;
/// measured over the network: a third of a helper's user-space time
/// receiving a 1 MiB broadcast in 64 KiB segments). Everything else waits
/// in `arrived` for the poll's end: an envelope about a channel, and a
/// message behind one of its sender's that may match and is still queued
/// (see `State::queued_in`). A receive filled inline is finished at once
/// if `finish_now`, else (kernel mode, tracing, truncation) by a DELIVERED
/// note at the poll's end.
fn st_arrive(st: &mut State, arrived: &mut Vec<(u32, Head, Option<Vec<u8>>)>, poll: u64, finish_now: bool, src: u32, h: Head, payload: &[u8]) {
    if h.kind != proto::EAGER {
        if h.kind == proto::RTS {
            st.queued_in[src as usize] = poll;
        }
        arrived.push((src, h, None));
        return;
    }
    if let Some(r) = (h.mode == 0 && st.queued_in[src as usize] != poll).then(|| st_match_posted(st, h.sched, h.seq, src, h.tag)).flatten() {
        let bad = st_deliver_inline(st, r, src, payload);
        if finish_now && bad == 0 {
            if let Some(slot) = st.finish(r) {
                st.completed(slot);
            }
        } else {
            let note = Head { kind: DELIVERED, mode: bad, tag: 0, sched: r.slot, seq: r.gen, len: payload.len() as u32, token: r.op, addr: 0 };
            arrived.push((src, note, None));
        }
        return;
    }
    st.queued_in[src as usize] = poll;
    let mut data = st.spare_bufs.pop().unwrap_or_default();
    data.clear();
    data.extend_from_slice(payload);
    arrived.push((src, h, Some(data)));
}

impl State {
    #[inline]
    fn recycle(&mut self, sched: &SchedInner, bufs: Box<ExecBufs>) {
        let pool = self.pool(sched);
        if pool.len() < 8 {
            pool.push(bufs);
        }
    }

    /// `sched`'s pool of execution buffers.
    #[allow(clippy::mut_from_ref)]
    #[allow(clippy::vec_box)] // see LockedPool
    fn pool<'a>(&'a mut self, sched: &'a SchedInner) -> &'a mut Vec<Box<ExecBufs>> {
        // SAFETY: `&mut self` means the engine lock is held (the state is
        // only reached through the engine). There is one engine per
        // process, and a schedule runs only on the runtime that compiled
        // it, so every access to this pool goes through this engine; the
        // returned borrow ends before the lock can be released.
        unsafe { &mut *sched.pool.0.get() }
    }

    /// Operation `r` has finished: releases its dependents, and returns its
    /// slot if that was its execution's last operation.
    #[inline(always)]
    fn finish(&mut self, r: OpRef) -> Option<u32> {
        let e = self.execs.get_mut(r.slot as usize).and_then(|e| e.as_mut()).filter(|e| e.gen == r.gen)?;
        self.finished_ops += 1;
        let s = &e.sched.s;
        for &d in s.dependents(r.op as usize) {
            let c = &mut e.bufs.counters[d as usize];
            *c -= 1;
            if *c == 0 {
                self.ready.push_back(OpRef { op: d, ..r });
            }
        }
        e.remaining -= 1;
        (e.remaining == 0).then_some(r.slot)
    }

    /// [`Engine::complete`] of a successful execution outside the kernel
    /// mode: the path of every Run and Wait, kept apart from the failure
    /// and kernel cases (their registers and checks cost every execution
    /// about 40 instructions), and free of the transports (an inline
    /// delivery completes an execution during the poll).
    fn completed(&mut self, slot: u32) {
        let Some(e) = self.vacate(slot) else { return };
        if !self.unexp.is_empty() {
            self.note_strays(key(e.sched.id, e.seq));
        }
        e.bufs.shared.state.store(DONE, Ordering::Release);
        let Exec { sched, bufs, .. } = e;
        self.recycle(&sched, bufs);
        sched_done(sched);
        if !self.orphans.is_empty() {
            self.release_orphans();
        }
    }

    /// Execution `k` finished with all its receives taken: messages that
    /// wait for it are strays, for the engine to report (see
    /// `Engine::strays`).
    #[cold]
    fn note_strays(&mut self, k: u64) {
        if self.unexp.contains_key(&k) {
            self.stray_keys.push(k);
        }
    }

    /// Drops the kept schedules that have no execution left.
    #[cold]
    fn release_orphans(&mut self) {
        self.orphans.retain(|s| s.running.load(Ordering::Relaxed) > 0);
    }

    /// Takes the execution out of `slot`, frees the slot and drops the
    /// execution from its schedule's active list.
    #[inline(always)]
    fn vacate(&mut self, slot: u32) -> Option<Exec> {
        let e = self.execs[slot as usize].take()?;
        self.free_slots.push(slot);
        if let Some(list) = self.active.get_mut(e.sched.id as usize) {
            if let Some(i) = list.iter().position(|&(q, s)| q == e.seq && s == slot) {
                list.swap_remove(i);
            }
        }
        Some(e)
    }

    /// Notes `n` eager bytes of `src` released; publishing becomes due
    /// once a step of them is unpublished (see `publish_credits`).
    #[inline]
    fn release(&mut self, src: u32, n: u64) {
        let p = src as usize;
        self.released[p] += n;
        if self.released[p] - self.published[p] >= self.credit_step {
            self.credit_due = true;
        }
    }

    /// Keeps `d`, an unexpected message's payload that was delivered or
    /// dropped, for the next one (see `spare_bufs`).
    fn spare_buf(&mut self, d: Vec<u8>) {
        if self.spare_bufs.len() < SPARES && d.capacity() <= SPARE_BUF_BYTES {
            self.spare_bufs.push(d);
        }
    }
}

/// Finds and removes the first posted receive of execution (sched, seq)
/// matching src/tag (a free function so the poll callback can use it while
/// the transport is borrowed).
#[inline]
fn st_match_posted(st: &mut State, sched: u32, seq: u32, src: u32, tag: i32) -> Option<OpRef> {
    let slot = st.active.get(sched as usize)?.iter().find(|&&(q, _)| q == seq)?.1;
    let e = st.execs[slot as usize].as_mut()?;
    let i = e.bufs.posted.iter().position(|p| (p.peer == -1 || p.peer as u32 == src) && (p.tag == -1 || p.tag == tag))?;
    // Mostly the only one, or the last: no shifting (nor a call).
    let p = if i + 1 == e.bufs.posted.len() { e.bufs.posted.pop()? } else { e.bufs.posted.remove(i) };
    Some(OpRef { slot, gen: e.gen, op: p.op })
}

/// Copies an eager payload from the ring into posted receive `r`, unless
/// it is larger than the receive (returns whether it was).
fn st_deliver_inline(st: &mut State, r: OpRef, src: u32, payload: &[u8]) -> u8 {
    let e = st.execs[r.slot as usize].as_ref().unwrap_or_else(|| unreachable!());
    let s = &e.sched.s;
    let o = &s.ops[r.op as usize];
    let base = e.bufs.scratch.as_ptr() as *mut u8;
    let bad = if payload.len() > o.len as usize {
        DELIVERED_TRUNCATED
    } else if o.exact() && payload.len() != o.len as usize {
        DELIVERED_SHORT
    } else {
        0
    };
    if bad == 0 {
        let resolve = |addr: u64| operand(base, addr, o.in_scratch());
        match o.kind() {
            OpKind::Recv => {
                // SAFETY: the receive buffer is valid for o.len >= payload.len() bytes
                // (API contract, or the checked scratchpad), and does not overlap the ring.
                unsafe { goal_transport::copy_bytes(payload.as_ptr(), resolve(o.addr), payload.len()) };
            }
            _ => {
                let v = s.vecs[o.addr as usize];
                let mut off = 0;
                for p in s.pieces_of(v) {
                    if off >= payload.len() {
                        break;
                    }
                    let n = (p.len as usize).min(payload.len() - off);
                    // SAFETY: as above, per piece.
                    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr().add(off), resolve(p.addr), n) };
                    off += n;
                }
            }
        }
    }
    if src != st.rank {
        st.release(src, payload.len() as u64);
    }
    bad
}

/// `DELIVERED`'s mode for a message larger than its receive.
const DELIVERED_TRUNCATED: u8 = 1;
/// `DELIVERED`'s mode for a message shorter than its exact-length receive.
const DELIVERED_SHORT: u8 = 2;

/// Counts one execution of `sched` as over: the last use of its
/// `SchedRef`. A `Schedule` dropped without the engine lock frees the
/// schedule, its pool included, once it reads `running == 0`; so the
/// decrement comes after the execution's buffers are back in that pool
/// (decremented first, a drop in between freed the pool under `recycle`).
#[inline(always)]
fn sched_done(sched: SchedRef) {
    sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
}

/// The state of a [`Engine::start_done`] whose message to `peer` did not go.
#[cold]
fn failed_done(rt: &Arc<crate::Runtime>, sched: u32, peer: i32) -> Arc<ExecShared> {
    let msg = format!("goal: a send to rank {peer} found its ring full after it fit (please report)");
    failed_with(rt, sched, Error::new(ErrorKind::System, msg))
}

/// The error of exact-length receive `what` (of `cap` bytes) for a
/// message of `len` bytes from `src`.
#[cold]
fn short_message(what: String, len: u32, src: u32, cap: u32) -> Error {
    Error::new(
        ErrorKind::Mismatch,
        format!(
            "{what}: message of {len} bytes from rank {src}, where this collective's receive takes exactly {cap}: \
             the ranks called the collective with different counts, types or sizes"
        ),
    )
}

/// The end of a mismatch's message: what the ranks must agree on.
const DISAGREE: &str = "the ranks' schedules do not pair up (every rank must compile the same schedules in the same order, \
     call each collective with the same root, sizes and algorithm, and pair each send with a receive of the peer's graph)";

/// A message's tag for an error message: collectives that goal builds
/// from C use tags from `GOAL_COLL_TAG_BASE` (2^30) on.
fn tag_words(tag: i32) -> String {
    if tag >= 1 << 30 {
        format!("tag {tag} (GOAL_COLL_TAG_BASE + {}: a collective's)", tag - (1 << 30))
    } else {
        format!("tag {tag}")
    }
}

/// The state of an execution that ended in Run with `err`.
fn failed_with(rt: &Arc<crate::Runtime>, sched: u32, err: Error) -> Arc<ExecShared> {
    let shared = ExecShared::new(rt, sched);
    *shared.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err);
    shared.state.store(FAILED, Ordering::Release);
    shared
}

/// The most operations [`Engine::start_done`] takes a schedule of.
const DONE_AT_ONCE: usize = 8;

/// Whether `l` is a `Copy` of at most [`SMALL_COPY`] bytes.
#[inline(always)]
fn is_small_copy(l: &goal_sched::LocalRec) -> bool {
    l.op() == ReduceOp::Copy && l.count as usize * l.width as usize / 8 <= SMALL_COPY
}

/// Copies `l` at once if it is a `Copy` of at most [`SMALL_COPY`] bytes;
/// whether it did. The general path (`start_op`'s dispatch, the checks for
/// long operations, the operator's and type's) cost a copy of 8 bytes more
/// than the copy (2 ranks, 8 B, five alternations: allgather 0.51 -> 0.43
/// us, scatter 0.40 -> 0.33).
///
/// # Safety
/// `l` is an operation of an execution whose scratchpad starts at `base`.
#[inline(always)]
unsafe fn copy_small(l: &goal_sched::LocalRec, base: *mut u8) -> bool {
    if !is_small_copy(l) {
        return false;
    }
    let bytes = l.count as usize * l.width as usize / 8;
    let (from, to) = (operand(base, l.b1, l.mem & 1 != 0), operand(base, l.b3, l.mem & 4 != 0));
    // SAFETY: user buffers are valid for the operation's extent by the API
    // contract, scratchpad ranges were checked at compile time (against
    // `base`, the caller's); a copy's result may be its operand exactly
    // (`ptr::copy` allows it).
    unsafe { std::ptr::copy(from as *const u8, to, bytes) };
    true
}

/// An operand's address: `addr` itself, or, with `scratch`, an offset into
/// the execution's scratchpad that starts at `base`.
#[inline(always)]
fn operand(base: *mut u8, addr: u64, scratch: bool) -> *mut u8 {
    if scratch {
        // SAFETY: `base` is the start of the execution's scratchpad, and the
        // compiler checked that scratchpad ranges lie inside it.
        unsafe { base.add(addr as usize) }
    } else {
        addr as usize as *mut u8
    }
}

/// `len` bytes at `ptr` (none when `len` is 0, whatever `ptr`).
///
/// # Safety
/// With `len > 0`, `ptr` must be valid for reads of `len` bytes while the
/// slice lives.
unsafe fn byte_slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: valid for `len` bytes (caller).
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The send buffer pieces as slices (a single piece needs no allocation).
fn slices_of(p: &Pieces) -> smallvec_like::Slices<'_> {
    smallvec_like::Slices::new(p.as_slice())
}

mod smallvec_like {
    /// Up to four slices on the stack, more on the heap.
    pub enum Slices<'a> {
        Few([&'a [u8]; 4], usize),
        Many(Vec<&'a [u8]>),
    }

    impl<'a> Slices<'a> {
        pub fn new(pieces: &'a [(*mut u8, usize)]) -> Slices<'a> {
            // SAFETY: send buffers are valid for their lengths by the API contract.
            let slice = |&(ptr, len): &(*mut u8, usize)| -> &'a [u8] { unsafe { super::byte_slice(ptr, len) } };
            if pieces.len() <= 4 {
                let mut a: [&[u8]; 4] = [&[]; 4];
                for (i, p) in pieces.iter().enumerate() {
                    a[i] = slice(p);
                }
                Slices::Few(a, pieces.len())
            } else {
                Slices::Many(pieces.iter().map(slice).collect())
            }
        }
    }

    impl<'a> std::ops::Deref for Slices<'a> {
        type Target = [&'a [u8]];
        fn deref(&self) -> &Self::Target {
            match self {
                Slices::Few(a, n) => &a[..*n],
                Slices::Many(v) => v,
            }
        }
    }
}

/// Copies the concatenation of `p` into `out`.
fn gather(p: &Pieces, out: &mut [u8]) {
    let mut off = 0;
    for &(ptr, len) in p.as_slice() {
        let n = len.min(out.len() - off);
        // SAFETY: send buffers are valid for their lengths by the API contract.
        unsafe { std::ptr::copy_nonoverlapping(ptr, out.as_mut_ptr().add(off), n) };
        off += n;
    }
}

/// Copies `data` over the pieces, in order.
/// Calls `f(ptr, offset, len)` for each part of bytes `from..to` of a
/// message laid out in `pieces` (`offset` counted from the message's
/// start), in order, and stops at the first error: a read or write of a
/// large message a piece at a time, wherever its buffer's pieces begin.
fn each_span(pieces: &Pieces, from: usize, to: usize, mut f: impl FnMut(*mut u8, usize, usize) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut at = 0usize;
    for &(p, l) in pieces.as_slice() {
        let (a, b) = (from.max(at), to.min(at + l));
        if a < b {
            // Within the piece: a - at < l.
            f(p.wrapping_add(a - at), a, b - a)?;
        }
        at += l;
        if at >= to {
            break;
        }
    }
    Ok(())
}

fn scatter(data: &mut [u8], dst: &[(*mut u8, usize)]) {
    let mut off = 0;
    for &(ptr, len) in dst {
        if off >= data.len() {
            break;
        }
        let n = len.min(data.len() - off);
        // SAFETY: receive buffers are valid for their lengths by the API contract.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr().add(off), ptr, n) };
        off += n;
    }
}

/// Copies `len` bytes from the concatenation of `src` to that of `dst`.
fn copy_pieces(src: &Pieces, dst: &Pieces, len: usize) {
    let (s, d) = (src.as_slice(), dst.as_slice());
    let (mut i, mut j, mut oi, mut oj, mut left) = (0, 0, 0, 0, len);
    while left > 0 && i < s.len() && j < d.len() {
        let n = (s[i].1 - oi).min(d[j].1 - oj).min(left);
        // SAFETY: both buffers are valid for their lengths; `copy` tolerates overlap.
        unsafe { std::ptr::copy(s[i].0.add(oi), d[j].0.add(oj), n) };
        oi += n;
        oj += n;
        left -= n;
        if oi == s[i].1 {
            i += 1;
            oi = 0;
        }
        if oj == d[j].1 {
            j += 1;
            oj = 0;
        }
    }
}

/// Walks bytes `pos..len` of the pieces' concatenation, one contiguous run
/// per call of `step(pointer, bytes)`, which returns how many it moved; stops
/// at the first short step. Returns the bytes moved.
fn walk_pieces(pc: &Pieces, pos: usize, len: usize, mut step: impl FnMut(*mut u8, usize) -> usize) -> usize {
    let mut moved = 0;
    let mut skip = pos;
    for &(ptr, l) in pc.as_slice() {
        if skip >= l {
            skip -= l;
            continue;
        }
        let n = (l - skip).min(len - pos - moved);
        // SAFETY: `skip < l`, so the run stays inside this piece.
        let m = step(unsafe { ptr.add(skip) }, n);
        moved += m;
        if m < n || pos + moved >= len {
            break;
        }
        skip = 0;
    }
    moved
}

/// Pushes bytes `pos..len` of the pieces' concatenation into the stream to `p`.
fn push_from(shm: &ShmNode, p: usize, pc: &Pieces, pos: usize, len: usize) -> usize {
    walk_pieces(pc, pos, len, |ptr, n| {
        // SAFETY: the send buffer is valid for its length by the API contract.
        shm.stream_push(p, unsafe { std::slice::from_raw_parts(ptr as *const u8, n) })
    })
}

/// Pops stream bytes from `p` into bytes `pos..len` of the pieces' concatenation.
fn pop_into(shm: &ShmNode, p: usize, pc: &Pieces, pos: usize, len: usize) -> usize {
    walk_pieces(pc, pos, len, |ptr, n| {
        // SAFETY: the receive buffer is valid for its length by the API contract.
        shm.stream_pop(p, unsafe { std::slice::from_raw_parts_mut(ptr, n) })
    })
}

/// Network handlers are `NET_HANDLER_BASE + kind` (goal-net reserves 0..=15).
pub(crate) const NET_HANDLER_BASE: u8 = 16;

/// The handler ids the executor accepts from the network.
pub(crate) fn net_handlers() -> Vec<u8> {
    [proto::EAGER, proto::RTS, proto::CTS, proto::FIN, proto::CREDIT, proto::ACCEPT, proto::DECLINE].iter().map(|k| NET_HANDLER_BASE + k).collect()
}

/// Decodes a protocol message from the network; `None` if it does not fit
/// (goal-net already refused unknown handlers and oversized headers).
fn net_head(handler: u8, head: &[u8]) -> Option<Head> {
    Head::from_bytes(head).filter(|h| handler == NET_HANDLER_BASE + h.kind)
}

#[cfg(test)]
mod tests {
    use super::Recent;

    #[test]
    fn recent_buffers_are_taken_once_and_the_oldest_goes_first() {
        let mut r = Recent::default();
        assert!(!r.take(0x1000), "empty");
        for at in [0x1000, 0x2000, 0x3000, 0x4000] {
            r.put(at);
        }
        r.put(0x2000); // already there: nothing moves
        assert!(r.take(0x3000));
        assert!(!r.take(0x3000), "taken once");
        r.put(0x5000); // into the place 0x3000 left
        assert!(r.take(0x1000) && r.take(0x5000));
        r.put(0x6000);
        r.put(0x7000);
        r.put(0x8000); // full: the oldest (0x2000) goes
        assert!(!r.take(0x2000));
        assert!(r.take(0x4000) && r.take(0x8000));
        r.put(0);
        assert!(!r.take(0), "0 is no buffer");
    }
}
