//! The executor: executions, matching and the message protocols, behind
//! the runtime's one engine lock, reaching each peer through its link.
//!
//! # Files
//!
//! * `mod.rs`: [`Engine`] and its `State`, and one progress pass (poll the
//!   rings and the network, reap the kernel's completions, drain the ready
//!   queue, retry queued sends, move transfers, publish credit, flush).
//! * [`exec`]: the executions core: schedules as the runtime holds them,
//!   executions in slots, dependency counters, the ready queue. No
//!   transport.
//! * [`matching`]: the matching core: posted receives against arriving
//!   messages, the unexpected queues, stale, stray and mismatched
//!   messages. No transport.
//! * [`link`]: the per-peer link, the one seam between the protocols and
//!   the transports, and the only code that knows which peers are local
//!   (goal-transport) and which remote (goal-net); the network handlers.
//! * [`inflight`]: the records of transfers in flight (a message waiting
//!   for ring space, a rendezvous send, a stream, a read, a write, a
//!   split). Data only.
//! * [`run`]: Run: starting an execution, with its fast paths.
//! * [`ops`]: starting an operation by kind, finishing it, failing and
//!   completing executions.
//! * [`recv`]: receives: posting, stashing what came early, the mismatch
//!   and stale checks, delivering a matched message.
//! * [`local`]: local operations and `calc`; long ones in pieces.
//! * [`pieces`]: where an operation's bytes are, and the copies between
//!   pieces, rings and streams. No engine state.
//! * [`eager`]: sends: eager through the link or an RTS, eager credit,
//!   control messages, the queue of messages waiting for ring space.
//! * [`rdv`]: rendezvous tokens, exchanges, and carrying out a fetch.
//! * [`policy`]: the decisions of a rendezvous between local ranks: what
//!   the sender offers (`Offer`) and how the receiver fetches (`Fetch`),
//!   with the push, split and cold-write heuristics.
//! * [`stream`]: rendezvous through the pair's pipelined stream.
//! * [`cma`]: rendezvous by reading the sender's memory (CMA) or shared
//!   heap, in pieces.
//! * [`push`]: rendezvous by the sender writing into the receiver's
//!   memory: a push, or its part of a split message.
//! * [`fusion`]: receives combined with their reduction as they come.
//! * [`arrive`]: what a poll brings in, and what each message kind does.
//! * [`failure`]: liveness, and a lost peer failing what needs it.
//! * [`record`]: `GOAL_TRACE_FILE`'s records of what each operation did.
//! * [`report`]: `GOAL_DEBUG` and `GOAL_TRACE` output, descriptions of
//!   operations for errors.
//! * [`kernel`]: the engine's half of the `kernel` progress mode (offers,
//!   answers, submitting runs, reaping completions).
//! * [`kpath`]: the `kernel` mode's channels and io_uring runs.
//!
//! # Executions
//!
//! An execution owns its dependency counters, scratchpad and posted
//! receives, from a per-schedule pool, and its ready operations drain from
//! one FIFO queue in a loop (see [`exec`]). Run starts the independent
//! operations in the order they were added, before anything they make
//! ready.
//!
//! # Matching
//!
//! A message matches the first posted receive of its execution (schedule
//! id, execution number) whose source and tag fit, else waits in that
//! execution's unexpected queue in arrival order (see [`matching`]). An
//! eager message whose receive is posted is copied into it during the
//! poll, unless an earlier message of its sender that may match still
//! waits for the poll's end ([`arrive`]).
//!
//! # Schedule ids
//!
//! A schedule's id is its compile number, the same on every rank (compile
//! order is the ranks' one agreement; freeing is local and needs none: no
//! later schedule takes a freed id, until the 32-bit ids wrap). The engine
//! holds the live schedules in a table by id (`exec::SchedTable`) that
//! arriving messages are looked up in; a schedule enters it at compile and
//! leaves it when freed (at once, or when its last running execution ends),
//! taking the keys of its failed executions with it. Everything per
//! execution lives in the schedule (`SchedInner::active`, its `runs`), so
//! Run and completion reach it without a lookup, and nothing outlives a
//! freed schedule: compile/run/free loops run in flat memory (issue 39; the
//! per-id vectors this replaced grew by ~74 bytes per schedule, and pinned
//! the freed memory of later schedules in the heap, 200+ MB on 4 ranks).
//!
//! # Protocols
//!
//! The envelope and its kinds are `crate::proto`'s.
//!
//! * Small messages go eagerly through the link (a ring write, or an active
//!   message to another machine). The receiver buffers at most
//!   `unexpected_bytes` of them (split as credit per sender); a sender past
//!   its credit switches to rendezvous, so it waits instead of the
//!   receiver buffering without bound.
//! * Large messages send an RTS whose mode is the sender's offer: its
//!   shared heap (`GOAL_Alloc`), Cross Memory Attach, the stream (chosen
//!   per message from measurements, see `crate::adapt`), or, to another
//!   machine, a network bulk transfer. The receiver then fetches
//!   ([`policy`]): a bulk transfer after a CTS; a heap copy or a CMA read
//!   answered by FIN; a push (`CTS` in `MODE_PUSH`, answered `PUSHED`) or a
//!   split (`CTS` in `MODE_SPLIT`: the receiver's part ends with `FIN` in
//!   `FIN_PART`, the sender's with `PUSHED`); or the stream after a CTS,
//!   where the sender is done when its last byte is in the stream.
//! * Messages to oneself are copied locally.
//!
//! An execution that fails (truncation, division by zero, a lost peer) is
//! reported at once; anything still in flight for it is recognised by the
//! slot's generation number and finished harmlessly (stream bytes are still
//! consumed or produced, so the pair's stream stays in step). One whose
//! receive a sender is still writing into ends only once that sender has
//! answered, so that its buffers are the application's again when Wait
//! returns.

mod arrive;
mod cma;
mod eager;
mod exec;
mod failure;
mod fusion;
mod history;
mod inflight;
mod kernel;
mod link;
pub(crate) mod kpath;
mod local;
mod matching;
mod ops;
mod pieces;
mod policy;
pub(crate) mod record;
mod push;
mod rdv;
mod recv;
mod report;
mod run;
mod stage;
mod stream;

pub(crate) use exec::{ExecShared, SchedInner, DONE, FAILED, RUNNING};
pub(crate) use policy::cma_range_found;
pub(crate) use kernel::mark_carrier;
pub(crate) use link::net_handlers;
pub(crate) use link::Links;

use self::{exec::*, history::*, inflight::*, matching::*};
use crate::adapt;
use crate::error::{Error, ErrorKind};
use self::kpath::{Chan, KPath, KRec, IN_KERNEL};
use crate::localop::{self, KernelError};
use crate::proto::{self, Head, Kind, SchedId};
use goal_sched::{OpKind, OpRec, ReduceOp};
use goal_net::{Event, NetNode};
use goal_transport::kchain::{KOp, KOpKind, KRing, Link, SockType};
use goal_transport::shm::{ShmNode, StreamWindow, CLAIM_SLOTS};
use goal_transport::PeerLost;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Copies of at least this many bytes take long enough (10 us and more; a
/// 4 MiB copy about 300 us here) to count as work of their own: a local
/// operation this long first wakes the peers that messages were just
/// written to, and the progress heuristics note when one ended (see
/// [`Engine::long_end`]).
const LONG_COPY_BYTES: usize = 64 << 10;

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
    /// One CMA read costs less CPU time than the stream's two copies
    /// (calibrated between two cores): the path of exchanges when ranks
    /// share cores, where what a message costs is its copies' CPU time,
    /// not its latency (see `Engine::share_cores`).
    pub cma_shared: bool,
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
    /// Sends above `eager` up to this size go eagerly or by rendezvous as
    /// measurements decide (`eagerness`); 0: never.
    pub eager_adapt: usize,
}

/// Everything the progress engine owns; one thread at a time.
pub(crate) struct Engine {
    pub rank: u32,
    pub size: u32,
    /// How each peer is reached: shared memory or the network (see [`link`]).
    pub link: Links,
    pub thresholds: Thresholds,
    state: State,
    /// The kernel mode's channels and ring, when it is on.
    kernel: Option<KPath>,
    /// Stream or CMA, per large message (see `adapt`).
    adapt: adapt::Adapt,
    /// Eager or rendezvous for sends of 16 to 64 KiB.
    eagerness: crate::eagerness::Eagerness,
    /// For a receive that could be combined as it comes (from
    /// `FUSE_CMA_MAX` on): through the stream, or read by CMA and then
    /// combined, from what each took (see `fusion`).
    fuse_paths: adapt::Adapt,
    /// The window of a long lone message (see `window`).
    windows: crate::window::Windows,
    /// Whether a busy receiver may ask its senders to write (see [`Write`]).
    pushes: bool,
    /// A sender's write here slower than this percentage of this rank's
    /// own copy is cold (see `COLD_WRITES` in `policy.rs`).
    cold_writes: u64,
    /// Whether an idle receiver may ask its senders to write part of a
    /// message (see [`SPLIT_MIN`]): not with more ranks than cores.
    splits: bool,
    /// More ranks than cores on this machine (see [`Engine::share_cores`]).
    cores_shared: bool,
    /// How many application threads of this process wait in Wait (the
    /// runtime's count): a sender writes part of a split message only then.
    app_waiting: Option<Arc<AtomicU32>>,
    /// Set while an application thread polls from Wait (before it counts
    /// among `app_waiting`): a sender may take on part of a split message.
    pub in_wait: bool,
    /// Set while the helper moves the engine, behind the application's
    /// back. Large messages to local peers then go by one CMA read of the
    /// receiver's (see `choose_offer`, `choose_fetch`). Not for a Run
    /// after a computation, though its application computes next: its
    /// sends and its inline poll then read whole messages in the Run,
    /// before the computation (2 ranks, 1 MiB allreduce started before
    /// 110-120 us of computation: Run 65 us, t_ovrl 274-295 us against
    /// 220-228 us with the Run's usual choices).
    pub background: bool,
    /// Whether anything moves, for the stall probes (see
    /// [`Engine::probe_if_stalled`]): kept out of `State`, whose layout
    /// the arrival path is compiled against.
    stall: StallWatch,
    /// `GOAL_TRACE_FILE`: what each operation did (see [`record`]).
    recorder: Option<Box<record::Recorder>>,
    /// Messages copied into this rank's heap for a peer on its CPU (see
    /// [`stage`]); kept out of `State` as `stall` is.
    stage: stage::Stage,
}

struct State {
    rank: u32,
    /// Executions in flight and the ready queue (the core, see [`exec`]).
    execs: Execs,
    /// Unexpected messages and what finished executions left (the core,
    /// see [`matching`]).
    matcher: Matcher,
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
    /// Receiver: messages split with their senders (`CTS` in `MODE_SPLIT`),
    /// by (sender, its token).
    split_in: HashMap<(u32, u32), SplitIn>,
    /// Receiver: per sender, the claim words of its pair block free for
    /// another split message (bit `i`: word `i`, see `CLAIM_SLOTS`).
    claims_free: Vec<u64>,
    /// Sender: split messages this rank writes its part of, by token, with
    /// how many of the two parts (its write, the receiver's read) are left
    /// and the longest time (ns) one of them took so far.
    split_out: HashMap<u32, (u8, u64)>,
    /// A CMA read of a peer's memory has succeeded here (a split is asked
    /// only then: a receiver refused the read would want the stream).
    cma_reads_work: bool,
    /// Receives that their senders wrote here (see [`Write`]), for the debug line.
    pushed: u64,
    /// Sends above the calibrated eager limit sent eagerly (see
    /// [`Engine::eager_limit`]), for the debug line.
    eager_beyond: u64,
    /// Sends within the eager limit that went by rendezvous instead of
    /// queueing behind a full ring (see [`Engine::backed_up`]).
    eager_backed_up: u64,
    /// Messages received through the stream's narrow window, for the debug line.
    narrow_streams: u64,
    /// Messages received through the stream's long window, for the debug line.
    long_streams: u64,
    /// Messages split with their senders, and how many of those the
    /// senders declined (see [`SPLIT_MIN`]), for the debug line.
    split: [u64; 2],
    /// Bytes of the split messages, and of those the bytes this rank read,
    /// for the debug line.
    split_bytes: [u64; 2],
    /// Failed executions whose buffers senders still write into (see
    /// [`Engine::complete_slow`]), by slot, with the error to report.
    draining: HashMap<u32, Error>,
    /// Executions of this rank that failed, for a peer that asks about a
    /// send of one (see [`failure::FailedLog`]).
    failed: failure::FailedLog,
    /// While a Run starts its execution's independent operations: how many
    /// are still to start after the current one.
    run_left: u32,
    /// Per peer: a streamed exchange's send still to be timed.
    exchange_timing: Vec<Option<ExchangeTiming>>,
    /// Streams in and out, and reads, not finished.
    streams_active: u32,
    /// Peers known to be gone.
    lost: Vec<Option<String>>,
    /// The first peer seen to die (not to finalize), as "rank R <cause>":
    /// a peer that finalizes afterwards may have ended because of it.
    first_death: Option<String>,
    /// When (in `ticks`) the last copy of at least [`LONG_COPY_BYTES`]
    /// ended: see [`Engine::long_end`].
    long_end: u64,
    /// Bytes of self-sends copied aside and not yet received.
    self_buffered: u64,
    passes: u32,
    last_check: Instant,
    discard: Vec<u8>,
    /// Reused between polls: what arrived, handled after the poll.
    arrived: Vec<Arrival>,
    /// A poll is handling what arrived: a local operation started from it
    /// runs whole, since polling again in its pauses would handle later
    /// messages before the earlier ones still in `arrived` (seen: wrong
    /// data with several collectives in flight at once).
    in_poll: bool,
    /// A local operation runs in pieces: those started in its pauses run whole.
    in_pieces: bool,
    /// Where fused receives combine their message from (see [`FUSE_CHUNK`]).
    bounce: Vec<u8>,
    /// Receives combined with their local operation as they came (from
    /// the stream, or eager from the ring).
    fused: u64,
    /// Receives whose bytes arrive by network bulk transfer, by (source, token).
    net_in: KeyMap<(u32, u32), OpRef>,
    /// Peers the network lost in a poll (rank, why, whether the peer
    /// closed its connections itself), handled after its messages and
    /// transfers.
    net_lost: Vec<(u32, String, bool)>,
    /// Eager credit, per peer both ways (see [`history::Credit`]).
    credit: Credit,
    /// Per source: the length and copy time (ns) of the last eager message
    /// of at least `exec::EAGER_EXCHANGE_MIN` bytes copied out of its ring
    /// straight into its receive, taken by the next exchange send to it
    /// that `eagerness` times (see `Engine::eager_exchange_ns`).
    eager_out: Vec<(u32, u32)>,
    /// Inline copies out of this many bytes or more are timed for
    /// `eager_out`: the sizes `eagerness` chooses the way of (`usize::MAX`
    /// where it chooses none).
    eager_out_from: usize,
    /// Per source: the length and copy time (ns) of the last eager message
    /// timed for `eager_out` (into a posted receive, combined into one, or
    /// kept aside for a receive not yet posted), which its sender reads
    /// for its lone sends (see `Engine::publish_copy_out`); and the
    /// sources with one not yet published (which marks the credits due,
    /// so that the pass that publishes those publishes these, with no
    /// check of its own on the path of small messages).
    copy_out: Vec<(u32, u32)>,
    copy_out_due: Vec<u32>,
    /// What each peer's writes and this rank's reads showed (see
    /// [`history::PeerPaths`]).
    paths: PeerPaths,
}


impl Engine {
    pub fn new(rank: u32, size: u32, shm: ShmNode, thresholds: Thresholds) -> Engine {
        let lines = std::env::var_os("GOAL_TRACE").is_some_and(|v| v != "0");
        TRACE_LINES.store(lines, Ordering::Relaxed);
        TRACE.store(lines, Ordering::Relaxed);
        let n = size as usize;
        let eagerness = crate::eagerness::Eagerness::new(n, thresholds.eager, thresholds.eager_adapt);
        let state = State {
            rank,
            execs: Execs::default(),
            matcher: Matcher::new(n),
            credit: Credit::new(n, thresholds.credit),
            eager_out: vec![(0, 0); n],
            eager_out_from: eagerness.from().max(exec::EAGER_EXCHANGE_MIN as usize),
            copy_out: vec![(0, 0); n],
            copy_out_due: Vec::new(),
            paths: PeerPaths::new(n),
            outq: (0..n).map(|_| VecDeque::new()).collect(),
            outq_peers: Vec::new(),
            rdv: Vec::new(),
            rdv_free: Vec::new(),
            stream_out: (0..n).map(|_| VecDeque::new()).collect(),
            stream_in: (0..n).map(|_| VecDeque::new()).collect(),
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            pushes_in: HashMap::new(),
            split_in: HashMap::new(),
            claims_free: vec![u64::MAX >> (64 - CLAIM_SLOTS); n],
            split_out: HashMap::new(),
            cma_reads_work: false,
            run_left: 0,
            pushed: 0,
            eager_beyond: 0,
            eager_backed_up: 0,
            narrow_streams: 0,
            long_streams: 0,
            split: [0, 0],
            split_bytes: [0, 0],
            draining: HashMap::new(),
            failed: failure::FailedLog::default(),
            exchange_timing: (0..n).map(|_| None).collect(),
            streams_active: 0,
            lost: vec![None; n],
            first_death: None,
            long_end: 0,
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
        Engine { rank, size, link: Links::new(shm, n), thresholds, state, kernel: None, adapt: adapt::Adapt::new(n, thresholds.adapt_from), eagerness, fuse_paths: adapt::Adapt::new(n, if thresholds.adapt_from == usize::MAX { usize::MAX } else { fusion::FUSE_CMA_MAX }).with_margin(fusion::FUSE_MARGIN), windows: crate::window::Windows::new(n), pushes: false, cold_writes: policy::COLD_WRITES, splits: false, cores_shared: false, app_waiting: None, in_wait: false, background: false, stall: StallWatch::new(), recorder: None, stage: stage::Stage::default() }
    }

    /// Reaches the peers marked in `remote` through `net`.
    pub fn attach_net(&mut self, net: NetNode, remote: Vec<bool>) {
        self.link.attach_net(net, remote);
    }

    /// One pass over everything that can move; returns the operations finished.
    #[inline]
    pub fn progress(&mut self) -> usize {
        if self.quiet() && !self.link.shm.pending() {
            // Nothing to move and nothing arrived: the pass of a Wait that
            // polls for a message, cut from some 200 instructions to the
            // loads above (the message that arrives meanwhile is found
            // that much sooner), inline in the caller's loop.
            self.link.flush();
            self.count_pass();
            return 0;
        }
        self.pass()
    }

    /// [`progress`](Self::progress) with something to do.
    #[inline(never)]
    fn pass(&mut self) -> usize {
        let before = self.state.execs.finished_ops;
        self.poll_messages();
        self.reap_kernel();
        if self.kernel.as_ref().is_some_and(|k| !k.deferred.is_empty()) {
            self.submit_deferred();
        }
        self.drain_ready();
        if !self.state.outq_peers.is_empty() {
            self.retry_outq();
        }
        if self.state.streams_active > 0 {
            self.pump_transfers();
            self.drain_ready();
        } else if self.adapt.bursts.waiting() {
            self.bursts_drained();
        }
        self.publish_credits();
        self.link.flush();
        self.count_pass();
        self.state.execs.finished_ops - before
    }

    /// Whether a pass has nothing to do but look for arrivals in the rings:
    /// no network or kernel ring to poll, nothing queued to start or send,
    /// no stream moving and no credit to publish.
    #[inline]
    fn quiet(&self) -> bool {
        let state = &self.state;
        self.link.net.is_none() && self.kernel.is_none() && state.execs.ready.is_empty() && state.outq_peers.is_empty() && state.streams_active == 0 && !state.credit.due
    }

    /// Counts a pass; every 1024th looks at the peers' liveness if due.
    #[inline]
    fn count_pass(&mut self) {
        self.state.passes = self.state.passes.wrapping_add(1);
        if self.state.passes.is_multiple_of(1024) {
            self.check_peers_if_due();
        }
    }

    /// A progress pass as a poller sees it: the operations finished, or 1
    /// if none did but a large message is being read from its sender's
    /// memory in pieces (see [`READ_LATER`]). Nobody rings for the next
    /// piece, so a poller counts it as news and does not go to sleep.
    #[inline]
    pub fn poll(&mut self) -> usize {
        self.progress().max((!self.state.reads.is_empty() || !self.state.writes.is_empty()) as usize)
    }

    /// [`poll`](Self::poll) as the helper makes it, behind the
    /// application's back (see `background`).
    pub fn poll_background(&mut self) -> usize {
        self.background = true;
        let n = self.poll();
        self.background = false;
        n
    }

    /// Who last waited on the CPU this thread runs on, as a Wait for an
    /// execution with `peers` (job ranks) asks: a peer
    /// ([`CpuMates::Waiting`]), or another rank of this machine, which it
    /// cannot use while this thread polls ([`CpuMates::Others`], or
    /// [`CpuMates::Hold`] when every peer last waited on a lower-numbered
    /// CPU); first publishes that CPU for the peers that wait for this
    /// rank. `Waiting` when the CPU is unknown. Costs a `sched_getcpu`
    /// (glibc reads it from the rseq area) and a read of each peer's header
    /// line (with no peer here, every rank's), which changes only when that
    /// rank moves.
    pub fn cpu_mates(&self, peers: &[u32]) -> CpuMates {
        let Some(cpu) = current_cpu() else {
            return CpuMates::Waiting;
        };
        let shm = &self.link.shm;
        shm.note_cpu(cpu);
        let peer_cpus = peers.iter().map(|&p| shm.cpu_of(p as usize));
        CpuMates::of(cpu, peer_cpus, || (0..self.size as usize).any(|p| shm.on_cpu(p, cpu)))
    }

    /// Whether messages wait for ring space: the peer will not ring for
    /// that, so a sleeper must come back soon.
    pub fn must_poll(&self) -> bool {
        !self.state.outq_peers.is_empty()
    }

    /// When the last long copy (a large message read by CMA, a stream
    /// chunk, a long local operation) ended, in `ticks`: a Run or Wait that
    /// did one itself took long for that, not because the application
    /// computed (see `progress::AppMark`). One clock read per long copy.
    pub fn long_end(&self) -> u64 {
        self.state.long_end
    }

    /// Notes a copy of `bytes` that just ended (see [`long_end`](Self::long_end)).
    #[inline]
    fn copied(&mut self, bytes: usize) {
        if bytes >= LONG_COPY_BYTES {
            self.state.long_end = crate::ticks::now();
        }
    }

    /// Whether any execution is in flight.
    pub fn busy(&self) -> bool {
        self.state.execs.busy()
    }

}

/// Whether every operation is to be seen at its start and end: for
/// `GOAL_TRACE`'s lines or `GOAL_TRACE_FILE`'s records (see [`record`]).
/// Also turns off the fast paths that finish operations without the hooks.
#[inline(always)]
fn trace_on() -> bool {
    TRACE.load(Ordering::Relaxed)
}

/// Whether `GOAL_TRACE` asks for a line per operation started and finished
/// (and for the lines about channels and rails).
#[inline]
fn trace_lines() -> bool {
    TRACE_LINES.load(Ordering::Relaxed)
}

/// `GOAL_TRACE` or `GOAL_TRACE_FILE`, set once by the engine's constructor
/// (and [`Engine::record`]): a plain load on the path of every operation
/// (a `OnceLock` cost a check of its state too).
static TRACE: AtomicBool = AtomicBool::new(false);

/// `GOAL_TRACE` alone.
static TRACE_LINES: AtomicBool = AtomicBool::new(false);

/// What [`Engine::cpu_mates`] found on this thread's CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuMates {
    /// No rank that this thread's polling keeps from running.
    None,
    /// A peer of this execution last waited on this CPU (or the CPU is
    /// unknown): it cannot answer while this thread polls.
    Waiting,
    /// Ranks that are no peers of this execution wait for this CPU, and
    /// some peer last waited on a higher-numbered CPU (or none was seen).
    Others,
    /// Ranks of other executions wait for this CPU, and every peer of this
    /// one last waited on a lower-numbered CPU: of two Waits on two CPUs
    /// whose peers are each behind the other's CPU-mate, this is the one
    /// that holds its CPU (see `progress::batch`).
    Hold,
}

impl CpuMates {
    /// The case of a Wait on `cpu` whose execution's peers last waited on
    /// `peer_cpus` (`None`: not yet, or not on this machine); `others_here`
    /// says whether another rank of this machine that counts last waited
    /// on `cpu`, and is asked only when no peer did.
    fn of(cpu: u32, mut peer_cpus: impl Iterator<Item = Option<u32>> + Clone, others_here: impl FnOnce() -> bool) -> CpuMates {
        if peer_cpus.clone().any(|c| c == Some(cpu)) {
            return CpuMates::Waiting;
        }
        if !others_here() {
            return CpuMates::None;
        }
        let mut any = false;
        let all_below = peer_cpus.all(|c| {
            any = true;
            c.is_some_and(|c| c < cpu)
        });
        if any && all_below {
            CpuMates::Hold
        } else {
            CpuMates::Others
        }
    }
}

/// The CPU the calling thread runs on, if the kernel says (a
/// `sched_getcpu`, which glibc reads from the rseq area).
#[inline]
pub(super) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    u32::try_from(unsafe { libc::sched_getcpu() }).ok()
}

#[cfg(test)]
mod tests {
    use super::CpuMates;

    fn of(cpu: u32, peers: &[Option<u32>], others_here: bool) -> CpuMates {
        CpuMates::of(cpu, peers.iter().copied(), || others_here)
    }

    #[test]
    fn a_peer_on_this_cpu_makes_the_wait_yield_whatever_else() {
        assert_eq!(of(1, &[Some(0), Some(1)], false), CpuMates::Waiting);
        assert_eq!(of(0, &[Some(0)], true), CpuMates::Waiting);
    }

    #[test]
    fn without_others_on_this_cpu_nothing_is_kept_from_running() {
        assert_eq!(of(1, &[Some(0)], false), CpuMates::None);
        assert_eq!(of(0, &[], false), CpuMates::None);
    }

    #[test]
    fn of_a_standoff_the_higher_cpu_holds_and_the_lower_yields() {
        // Two pairs split over CPUs 0 and 1, each CPU shared with the other pair.
        assert_eq!(of(1, &[Some(0)], true), CpuMates::Hold);
        assert_eq!(of(0, &[Some(1)], true), CpuMates::Others);
        // Every peer must be below: one above, or one not yet seen, and it yields.
        assert_eq!(of(2, &[Some(0), Some(1)], true), CpuMates::Hold);
        assert_eq!(of(2, &[Some(0), Some(3)], true), CpuMates::Others);
        assert_eq!(of(2, &[Some(0), None], true), CpuMates::Others);
        // No peer at all (an execution that only computes): nothing to hold for.
        assert_eq!(of(1, &[], true), CpuMates::Others);
    }

    #[test]
    fn the_others_are_looked_at_only_when_no_peer_shares_the_cpu() {
        let asked = std::cell::Cell::new(false);
        let got = CpuMates::of(3, [Some(3)].into_iter(), || {
            asked.set(true);
            true
        });
        assert_eq!(got, CpuMates::Waiting);
        assert!(!asked.get());
    }
}
