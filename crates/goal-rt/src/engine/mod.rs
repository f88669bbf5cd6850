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

mod arrive;
mod cma;
mod eager;
mod exec;
mod failure;
mod fusion;
mod inflight;
mod kernel;
mod link;
pub(crate) mod kpath;
mod local;
mod matching;
mod ops;
mod pieces;
mod policy;
mod push;
mod rdv;
mod recv;
mod report;
mod run;
mod stream;

pub(crate) use exec::{ExecShared, SchedInner, DONE, FAILED, RUNNING};
pub(crate) use link::net_handlers;
pub(crate) use link::Links;

use self::{exec::*, inflight::*, matching::*};
use crate::adapt;
use crate::error::{Error, ErrorKind};
use self::kpath::{Chan, KPath, KRec, IN_KERNEL};
use crate::localop::{self, KernelError};
use crate::proto::{self, Head, Kind};
use goal_sched::{OpKind, OpRec, ReduceOp};
use goal_net::{Event, NetNode};
use goal_transport::kchain::{KOp, KOpKind, KRing, Link, SockType};
use goal_transport::shm::ShmNode;
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
    /// How each peer is reached: shared memory or the network (see [`link`]).
    pub link: Links,
    pub thresholds: Thresholds,
    state: State,
    /// The kernel mode's channels and ring, when it is on.
    kernel: Option<KPath>,
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
    published: Vec<u64>,
    /// Peers known to be gone.
    lost: Vec<Option<String>>,
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
    /// Stream receives combined with their local operation as they came.
    fused: u64,
    /// Receives whose bytes arrive by network bulk transfer, by (source, token).
    net_in: KeyMap<(u32, u32), OpRef>,
    /// Peers the network lost in a poll (rank, why), handled after its
    /// messages and transfers.
    net_lost: Vec<(u32, String)>,
}


impl Engine {
    pub fn new(rank: u32, size: u32, shm: ShmNode, thresholds: Thresholds) -> Engine {
        TRACE.store(std::env::var_os("GOAL_TRACE").is_some_and(|v| v != "0"), Ordering::Relaxed);
        let n = size as usize;
        let state = State {
            rank,
            execs: Execs::default(),
            matcher: Matcher::new(n),
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
            published: vec![0; n],
            lost: vec![None; n],
            long_end: 0,
            credit_due: false,
            credit_step: (thresholds.credit / 4).max(1),
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
        Engine { rank, size, link: Links::new(shm, n), thresholds, state, kernel: None, adapt: adapt::Adapt::new(n, thresholds.adapt_from), pushes: false, splits: false, app_waiting: None, in_wait: false }
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
        self.drain_ready();
        if !self.state.outq_peers.is_empty() {
            self.retry_outq();
        }
        if self.state.streams_active > 0 {
            self.pump_transfers();
            self.drain_ready();
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
        self.link.net.is_none() && self.kernel.is_none() && state.execs.ready.is_empty() && state.outq_peers.is_empty() && state.streams_active == 0 && !state.credit_due
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

/// Whether `GOAL_TRACE` asks for a line per operation started and finished.
#[inline(always)]
fn trace_on() -> bool {
    TRACE.load(Ordering::Relaxed)
}

/// `GOAL_TRACE`, read once by the engine's constructor: a plain load on the
/// path of every operation (a `OnceLock` cost a check of its state too).
static TRACE: AtomicBool = AtomicBool::new(false);
