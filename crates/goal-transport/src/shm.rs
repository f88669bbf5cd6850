//! Shared-memory backend: the ranks of one machine.
//!
//! CONTRACT (the runtime is written against exactly this surface; the
//! implementation behind it is free):
//!
//! * Each rank creates one *inbox* segment (a memfd) with, for every sender
//!   `s`, a lock-free single-producer/single-consumer message ring `s -> me`,
//!   a bulk byte stream `s -> me`, a credit word, and one doorbell word.
//! * Peers attach to each other's inbox through `/proc/<pid>/fd/<fd>` (no
//!   file names, nothing to clean up after a crash) and watch each other
//!   with pidfds, or through `/proc/<pid>/stat` where `pidfd_open` is
//!   missing or refused (kernels before 5.3, container seccomp profiles of
//!   before 2020, valgrind 3.19) or `GOAL_PIDFD=0`.
//! * Sending to `p` writes into `p`'s inbox; receiving reads my own inbox.
//! * `flush` wakes the peers written to since the last flush, if they sleep.
//!
//! # Implementation
//!
//! * `layout`: where everything sits in an inbox segment.
//! * `ring`: the eager message ring (records lent out in place).
//! * `stream`: the bulk byte ring, published in chunks for pipelining.
//! * `doorbell`: the futex-based sleep/wake protocol (no lost wake-ups).
//! * `heap`: the shared heap peers copy from (`GOAL_Alloc`).
//! * `claim`: the words by which a receiver and its sender share the copy
//!   of one large message, chunk by chunk.
//! * `map`: an owned shared mapping, which every pointer above keeps alive.
//!
//! All state a node keeps for itself (cached counters, the dirty set) is in
//! `Cell`s: a node is used by one thread at a time, so no local
//! synchronisation is needed, and the node is `Send` but not `Sync`.

mod claim;
mod doorbell;
mod heap;
mod layout;
mod map;
mod ring;
mod stream;

pub use claim::{Claim, CLAIM_SLOTS};
pub use doorbell::{Doorbell, PollGuard, SleepGuard};
pub use heap::Heap;

use crate::sync::{light_fence, Ordering};
use crate::{sys, Envelope, PeerLost};
use doorbell::RemoteBell;
use layout::Layout;
use map::Mapping;
use ring::{RingConsumer, RingProducer};
use std::cell::{Cell, OnceCell};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use stream::{StreamConsumer, StreamProducer};

/// Bytes a stream push copies before it publishes them (and a pop before it
/// releases them): a receiver copying out trails its sender by about this much.
pub use stream::CHUNK as STREAM_CHUNK;
/// The prefixes of a stream a message may go through, their sizes, and the
/// narrow one's (see `shm/stream.rs`).
pub use stream::{window_bytes as stream_window_bytes, Window as StreamWindow, NARROW as STREAM_NARROW};

/// Sizes of the shared-memory structures, per ordered pair of ranks.
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// Bytes of each message ring (a power of two). `GOAL_SHM_RING_BYTES`;
    /// without it, [`ShmConfig::ring_bytes_for`] the job's size.
    pub ring_bytes: usize,
    /// Bytes of each bulk stream (a power of two). `GOAL_SHM_STREAM_BYTES`.
    pub stream_bytes: usize,
    /// Virtual bytes reserved for this rank's shared heap. `GOAL_HEAP_BYTES`.
    pub heap_bytes: usize,
    /// Where the address space does not allow `heap_bytes` (a `ulimit -v`,
    /// valgrind), the reserve is halved down to this; equal to `heap_bytes`
    /// when `GOAL_HEAP_BYTES` is set.
    pub heap_min_bytes: usize,
    /// Watch peers with pidfds when the kernel allows (`GOAL_PIDFD=0`: never,
    /// always through `/proc`).
    pub pidfd: bool,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            ring_bytes: RING_BYTES,
            stream_bytes: 1 << 20,
            heap_bytes: 64 << 30,
            heap_min_bytes: 64 << 20,
            pidfd: true,
        }
    }
}

/// Bytes of each message ring by default, in jobs of up to [`RING_BUDGET`] /
/// `RING_BYTES` ranks. A quarter of it is the largest eager payload, so a
/// 64 KiB eager record takes a sixteenth of the ring: the sender's copy then
/// writes lines the receiver last read 15 records ago, no longer in that
/// core's nearest caches. Through a 256 KiB ring (the default before), whose
/// lines the receiver had read four records before, 2-rank ping-pongs of
/// 64 KiB took 9-12 us one-way against 5.2-5.4 through this one, 16 KiB
/// 2.4-3.1 against 1.6-2.0, and windows of 64 KiB sends streamed at 5.6-8
/// GB/s against 13-27 (AMD EPYC VM, a cache line 26-30 ns between the
/// vCPUs; docs/measurements/ring-1m-2026-12-06/). Its pages are touched
/// only as far as traffic reaches: small messages rewind to its start
/// when the consumer has emptied it, but where it has not, they walk on,
/// so a pair that exchanges often touches all of it in the end (32 local
/// ranks: 1 GiB of rings, as much as their streams).
pub const RING_BYTES: usize = 1 << 20;

/// Bytes of ring one rank's inbox reserves for its peers at most by
/// default (one ring per peer, remote ranks included): beyond
/// `RING_BUDGET / RING_BYTES` ranks the default ring shrinks, to
/// [`RING_BYTES_MIN`] at the least.
const RING_BUDGET: usize = 32 << 20;

/// The smallest default ring (a 64 KiB eager record still fits).
const RING_BYTES_MIN: usize = 256 << 10;

/// Smallest ring or stream accepted (one page).
const MIN_RING_BYTES: usize = 4096;
/// Largest ring or stream accepted (record lengths are 32-bit).
const MAX_RING_BYTES: usize = 1 << 30;

impl ShmConfig {
    /// The defaults, overridden by `GOAL_SHM_RING_BYTES`,
    /// `GOAL_SHM_STREAM_BYTES` and `GOAL_HEAP_BYTES` when set.
    ///
    /// Values are byte counts with an optional `K`, `M`, `G` (or `KiB`,
    /// `MiB`, `GiB`) suffix, powers of 1024. Ring and stream sizes are
    /// rounded up to powers of two (4 KiB to 1 GiB); the heap to whole pages.
    /// Anything else is an `InvalidInput` error naming the variable.
    pub fn from_env() -> io::Result<ShmConfig> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// [`ShmConfig::from_env`] over any variable lookup (for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> io::Result<ShmConfig> {
        let mut cfg = ShmConfig::default();
        if let Some(v) = get("GOAL_SHM_RING_BYTES") {
            cfg.ring_bytes = parse_pow2("GOAL_SHM_RING_BYTES", &v)?;
        }
        if let Some(v) = get("GOAL_SHM_STREAM_BYTES") {
            cfg.stream_bytes = parse_pow2("GOAL_SHM_STREAM_BYTES", &v)?;
        }
        if let Some(v) = get("GOAL_HEAP_BYTES") {
            let n = parse_bytes("GOAL_HEAP_BYTES", &v)?;
            if n == 0 || n > 1 << 46 {
                return Err(bad_var(
                    "GOAL_HEAP_BYTES",
                    &v,
                    "must be between 1 byte and 64 TiB",
                ));
            }
            let page = sys::page_size() as u64;
            cfg.heap_bytes = n.div_ceil(page).saturating_mul(page) as usize;
            cfg.heap_min_bytes = cfg.heap_bytes;
        }
        match get("GOAL_PIDFD").as_deref() {
            None | Some("1") => {}
            Some("0") => cfg.pidfd = false,
            Some(v) => return Err(bad_var("GOAL_PIDFD", v, "must be 0 or 1")),
        }
        Ok(cfg)
    }

    /// The default ring for a job of `size` ranks: [`RING_BYTES`], halved
    /// while `size` rings would take more than 32 MiB of each inbox, down to
    /// 256 KiB. What a caller gives `ring_bytes` when `GOAL_SHM_RING_BYTES`
    /// is not set.
    pub fn ring_bytes_for(size: usize) -> usize {
        let mut ring = RING_BYTES;
        while ring > RING_BYTES_MIN && ring.saturating_mul(size) > RING_BUDGET {
            ring /= 2;
        }
        ring
    }

    /// Checks the sizes `create` relies on.
    fn validate(&self) -> io::Result<()> {
        for (name, v) in [
            ("ring_bytes", self.ring_bytes),
            ("stream_bytes", self.stream_bytes),
        ] {
            if !v.is_power_of_two() || !(MIN_RING_BYTES..=MAX_RING_BYTES).contains(&v) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "ShmConfig::{name} = {v}: must be a power of two between 4 KiB and 1 GiB"
                    ),
                ));
            }
        }
        if self.heap_bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ShmConfig::heap_bytes must not be 0",
            ));
        }
        Ok(())
    }
}

fn bad_var(name: &str, value: &str, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{name}={value:?}: {why}"),
    )
}

/// Parses `123`, `64K`, `1M`, `2GiB`, ... into bytes.
fn parse_bytes(name: &str, value: &str) -> io::Result<u64> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, suffix) = v.split_at(split);
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(bad_var(
                name,
                value,
                "expected a byte count such as 262144, 256K or 1M",
            ))
        }
    };
    let n: u64 = digits.parse().map_err(|_| {
        bad_var(
            name,
            value,
            "expected a byte count such as 262144, 256K or 1M",
        )
    })?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| bad_var(name, value, "too large"))
}

/// Parses a ring or stream size and rounds it up to a power of two.
fn parse_pow2(name: &str, value: &str) -> io::Result<usize> {
    let n = parse_bytes(name, value)?;
    if n == 0 || n > MAX_RING_BYTES as u64 {
        return Err(bad_var(name, value, "must be between 1 byte and 1 GiB"));
    }
    Ok((n as usize).next_power_of_two().max(MIN_RING_BYTES))
}

/// What `address()` encodes, in this order, as little-endian u64 words.
struct Address {
    pid: i32,
    inbox_fd: RawFd,
    inbox_len: u64,
    heap_fd: RawFd,
    heap_bytes: u64,
    size: u64,
    rank: u64,
    ring_bytes: u64,
    stream_bytes: u64,
}

impl Address {
    const WORDS: usize = 10;

    fn encode(&self) -> Vec<u8> {
        let words = [
            layout::MAGIC,
            self.pid as u64,
            self.inbox_fd as u64,
            self.inbox_len,
            self.heap_fd as u64,
            self.heap_bytes,
            self.size,
            self.rank,
            self.ring_bytes,
            self.stream_bytes,
        ];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn decode(b: &[u8]) -> io::Result<Address> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "not a goal shm address");
        if b.len() != Self::WORDS * 8 {
            return Err(bad());
        }
        let w: Vec<u64> = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        if w[0] != layout::MAGIC {
            return Err(bad());
        }
        let int = |x: u64| i32::try_from(x).map_err(|_| bad());
        Ok(Address {
            pid: int(w[1])?,
            inbox_fd: int(w[2])?,
            inbox_len: w[3],
            heap_fd: int(w[4])?,
            heap_bytes: w[5],
            size: w[6],
            rank: w[7],
            ring_bytes: w[8],
            stream_bytes: w[9],
        })
    }
}

/// The default heap reserve under valgrind.
const VALGRIND_HEAP_BYTES: usize = 256 << 20;

/// The shared heap: `heap_bytes` of address space, or, where that cannot
/// be had (`ulimit -v`, `ulimit -f`, valgrind), the largest power-of-two
/// fraction of it down to `heap_min_bytes`, with a note saying so.
///
/// Under valgrind it is 256 MiB. Under a limit on address space, every
/// rank also maps the heaps of its local peers (up to `size` heaps in all),
/// so the reserve is first brought under half the limit shared among them.
fn create_heap(cfg: &ShmConfig, size: usize) -> io::Result<(Heap, Option<String>)> {
    let mut bytes = cfg.heap_bytes;
    // Valgrind cannot map the default reserve, and its leak check at exit
    // reads every page of what it did map (a 32 GiB heap took 4 GiB of
    // memory per rank before the kernel killed it).
    let valgrind = std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("vgpreload"));
    if valgrind && cfg.heap_min_bytes < cfg.heap_bytes {
        bytes = VALGRIND_HEAP_BYTES.max(cfg.heap_min_bytes);
    }
    if let Some(limit) = sys::address_space_limit() {
        let share = limit / 2 / size.max(1) as u64;
        while bytes as u64 > share && bytes / 2 >= cfg.heap_min_bytes {
            bytes /= 2;
        }
    }
    loop {
        match Heap::create(bytes) {
            Ok(h) if bytes == cfg.heap_bytes => return Ok((h, None)),
            Ok(h) => {
                let why = if valgrind { "under valgrind" } else { "which this process may not map" };
                let note = format!("the shared heap reserves {} MiB of address space, not {} MiB, {why}", bytes >> 20, cfg.heap_bytes >> 20);
                return Ok((h, Some(note)));
            }
            Err(_) if bytes / 2 >= cfg.heap_min_bytes => bytes /= 2,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("reserving {} MiB of address space for the shared heap (GOAL_HEAP_BYTES): {e}", bytes >> 20),
                ))
            }
        }
    }
}

/// How a peer's exit is noticed.
enum Watch {
    /// A pidfd: readable once the peer has exited.
    Pidfd(OwnedFd),
    /// No pidfds here: `/proc/<pid>/stat` is read, and the peer has exited
    /// when it is gone, a zombie, or another process (a later `start`).
    Proc { start: u64 },
}

/// Why the peer watched through `/proc` (pid `pid`, started at `start`)
/// has ended, or `None` while it runs.
fn proc_exit(pid: i32, start: u64) -> Option<String> {
    match sys::proc_stat(pid) {
        Ok(st) if st.start == start && !st.ended => None,
        Ok(st) if st.start == start => Some(st.status.map_or_else(|| "exited".to_string(), |w| describe_exit(sys::exit_cause(w)))),
        Ok(_) => Some("exited".to_string()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some("exited".to_string()),
        // Cannot tell (out of descriptors, say): ask again next time.
        Err(_) => None,
    }
}

/// `cause` in the words of a lost-peer error.
fn describe_exit(cause: sys::ExitCause) -> String {
    match cause {
        sys::ExitCause::Exited(code) => format!("exited with status {code}"),
        sys::ExitCause::Killed { signal, dumped } => {
            format!("killed by signal {signal}{}", if dumped { " (core dumped)" } else { "" })
        }
    }
}

/// What I hold of a connected peer.
struct Peer {
    /// The peer's process id (the pid its address gave, checked against its inbox header).
    pid: i32,
    /// How we learn that the peer exited.
    watch: Watch,
    /// Ring `me -> peer`, in the peer's inbox.
    ring: RingProducer,
    /// Stream `me -> peer`, in the peer's inbox.
    stream: StreamProducer,
    /// The peer's doorbell.
    bell: RemoteBell,
    /// The peer's inbox (for the credit word it publishes for me).
    inbox: Arc<Mapping>,
    /// The peer's heap memfd, as a descriptor number in the peer, to map it on first use.
    heap_fd: RawFd,
    /// Bytes of the peer's heap reserve (the length of that mapping).
    heap_bytes: u64,
    /// The peer's heap, mapped read-only on first `read_peer_heap`.
    heap: OnceCell<Mapping>,
}

/// My inbox's pair block for one sender.
struct Incoming {
    /// Ring `sender -> me`.
    ring: RingConsumer,
    /// Stream `sender -> me`.
    stream: StreamConsumer,
}

/// This rank's view of the shared-memory transport.
pub struct ShmNode {
    /// My rank, `< size`.
    rank: usize,
    /// Ranks in the group.
    size: usize,
    /// Geometry of every inbox of the group (all ranks agree; `connect` checks).
    layout: Layout,
    /// My inbox segment, mapped read-write.
    inbox: Arc<Mapping>,
    /// The inbox memfd; stays open so that peers can reopen it through /proc.
    inbox_fd: OwnedFd,
    /// The doorbell in my inbox's header.
    doorbell: Arc<Doorbell>,
    /// My shared heap.
    heap: Arc<Heap>,
    /// Indexed by rank; `None` for myself and unconnected peers.
    peers: Vec<Option<Peer>>,
    /// Indexed by sender rank; `None` for myself.
    incoming: Vec<Option<Incoming>>,
    /// Bit `p` set: I wrote something peer `p` may be waiting for since the
    /// last `flush`.
    dirty: Vec<Cell<u64>>,
    /// Peers whose death `check_peers` has already reported.
    reported: Vec<Cell<bool>>,
    /// Why peers are watched through `/proc`, if they are (`None`: new
    /// peers get a pidfd).
    watch_note: Option<String>,
    /// Why the heap is smaller than configured, if it is.
    heap_note: Option<String>,
    /// True while `poll` runs callbacks (a nested `poll` returns 0).
    polling: Cell<bool>,
    /// Whether emptied rings to peers are rewound (see [`rewind_rings`](Self::rewind_rings)).
    rewind: Cell<bool>,
}

// SAFETY: a ShmNode owns its mappings and descriptors (all Send) and keeps
// its local state in Cells and raw pointers into its own mappings; nothing
// is tied to the creating thread. It is not Sync: it must be used by one
// thread at a time, which `&self` methods over Cells require and `Send`
// alone does not break.
unsafe impl Send for ShmNode {}

impl ShmNode {
    /// Creates this rank's inbox for a group of `size` ranks.
    pub fn create(rank: usize, size: usize, cfg: &ShmConfig) -> io::Result<ShmNode> {
        cfg.validate()?;
        // Before any peer can write here or be written to (see `sync`).
        crate::sync::enable_asymmetric();
        if rank >= size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rank {rank} >= size {size}"),
            ));
        }
        // Lets peers read our memory with CMA even under Yama; harmless if refused.
        let _ = sys::set_ptracer_any();
        let layout = Layout {
            size,
            ring_bytes: cfg.ring_bytes,
            stream_bytes: cfg.stream_bytes,
        };
        let total = layout
            .total()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "inbox too large"))?;
        let inbox_fd = sys::memfd_create(c"goal-inbox")?;
        sys::ftruncate(inbox_fd.as_fd(), total as u64)?;
        let inbox = Arc::new(Mapping::new(inbox_fd.as_fd(), total, true)?);
        // The header, written before anyone can see the segment (the address
        // is handed out only after `create` returns).
        for (off, v) in [
            (layout::H_SIZE, size as u64),
            (layout::H_RANK, rank as u64),
            (layout::H_RING_BYTES, cfg.ring_bytes as u64),
            (layout::H_STREAM_BYTES, cfg.stream_bytes as u64),
            (layout::H_PID, sys::getpid() as u64),
            (layout::H_MAGIC, layout::MAGIC),
        ] {
            inbox.atomic_u64(off).store(v, Ordering::Release);
        }
        let incoming = (0..size)
            .map(|s| {
                (s != rank).then(|| Incoming {
                    ring: RingConsumer::new(inbox.clone(), &layout, s),
                    stream: StreamConsumer::new(inbox.clone(), &layout, s),
                })
            })
            .collect();
        let (heap, heap_note) = create_heap(cfg, size)?;
        Ok(ShmNode {
            rank,
            size,
            layout,
            doorbell: Arc::new(Doorbell::new(inbox.clone())),
            inbox,
            inbox_fd,
            heap: Arc::new(heap),
            heap_note,
            peers: (0..size).map(|_| None).collect(),
            incoming,
            dirty: (0..size.div_ceil(64)).map(|_| Cell::new(0)).collect(),
            reported: (0..size).map(|_| Cell::new(false)).collect(),
            watch_note: (!cfg.pidfd).then(|| "GOAL_PIDFD=0".to_string()),
            polling: Cell::new(false),
            rewind: Cell::new(true),
        })
    }

    /// What peers need to attach to this rank (opaque bytes).
    pub fn address(&self) -> Vec<u8> {
        Address {
            pid: sys::getpid(),
            inbox_fd: self.inbox_fd.as_raw_fd(),
            inbox_len: self.inbox.len() as u64,
            heap_fd: self.heap.raw_fd(),
            heap_bytes: self.heap.reserve() as u64,
            size: self.size as u64,
            rank: self.rank as u64,
            ring_bytes: self.layout.ring_bytes as u64,
            stream_bytes: self.layout.stream_bytes as u64,
        }
        .encode()
    }

    /// Attaches to `peer`'s inbox and starts watching it.
    pub fn connect(&mut self, peer: usize, address: &[u8]) -> io::Result<()> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        if peer >= self.size || peer == self.rank {
            return Err(invalid(format!(
                "rank {} cannot connect to rank {peer} (size {})",
                self.rank, self.size
            )));
        }
        let a = Address::decode(address)?;
        if a.rank != peer as u64 || a.size != self.size as u64 {
            return Err(invalid(format!(
                "address is rank {} of {}, expected rank {peer} of {}",
                a.rank, a.size, self.size
            )));
        }
        if a.ring_bytes != self.layout.ring_bytes as u64
            || a.stream_bytes != self.layout.stream_bytes as u64
        {
            return Err(invalid(format!(
                "rank {peer} uses ring/stream sizes {}/{}, this rank {}/{}: set GOAL_SHM_RING_BYTES and \
                 GOAL_SHM_STREAM_BYTES alike on every rank",
                a.ring_bytes, a.stream_bytes, self.layout.ring_bytes, self.layout.stream_bytes
            )));
        }
        let total = self.layout.total().unwrap_or(usize::MAX);
        if a.inbox_len != total as u64 {
            return Err(invalid(format!(
                "rank {peer}'s inbox is {} bytes, expected {total}",
                a.inbox_len
            )));
        }
        // Watch first: if the process is gone now, say so rather than maybe
        // opening a recycled pid's descriptor.
        let watch = self.watch(a.pid)?;
        let fd = sys::open_proc_fd(a.pid, a.inbox_fd, true)?;
        if sys::file_size(fd.as_fd())? < total as u64 {
            return Err(invalid(format!(
                "rank {peer}'s inbox file is shorter than its address says"
            )));
        }
        let inbox = Arc::new(Mapping::new(fd.as_fd(), total, true)?);
        let header = |off| inbox.atomic_u64(off).load(Ordering::Acquire);
        if header(layout::H_MAGIC) != layout::MAGIC
            || header(layout::H_RANK) != peer as u64
            || header(layout::H_PID) != a.pid as u64
        {
            return Err(invalid(format!(
                "/proc/{}/fd/{} is not rank {peer}'s inbox",
                a.pid, a.inbox_fd
            )));
        }
        if let Watch::Proc { start } = watch {
            // The inbox is the peer's, so the pid was the peer's when we
            // opened it; it was the same process at the first look if it
            // started at the same time.
            if sys::proc_stat(a.pid).map(|st| st.start).ok() != Some(start) {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("rank {peer} (pid {}) exited while attaching", a.pid),
                ));
            }
        }
        self.peers[peer] = Some(Peer {
            pid: a.pid,
            watch,
            ring: RingProducer::new(inbox.clone(), &self.layout, self.rank, self.rewind.get()),
            stream: StreamProducer::new(inbox.clone(), &self.layout, self.rank),
            bell: RemoteBell::new(inbox.clone()),
            inbox,
            heap_fd: a.heap_fd,
            heap_bytes: a.heap_bytes,
            heap: OnceCell::new(),
        });
        Ok(())
    }

    /// The size of each pair's stream in bytes.
    pub fn stream_bytes(&self) -> usize {
        self.layout.stream_bytes
    }

    /// The size of each pair's stream's narrow window in bytes (see
    /// `shm/stream.rs`).
    pub fn stream_narrow_bytes(&self) -> usize {
        stream::window_bytes(self.layout.stream_bytes as u64, StreamWindow::Narrow) as usize
    }

    /// The largest payload `try_send` accepts.
    pub fn max_eager(&self) -> usize {
        ring::max_payload(self.layout.ring_bytes)
    }

    fn peer(&self, peer: usize) -> &Peer {
        match self.peers.get(peer) {
            Some(Some(p)) => p,
            _ => panic!(
                "goal shm: rank {} is not connected to rank {peer}",
                self.rank
            ),
        }
    }

    fn mark_dirty(&self, peer: usize) {
        let w = &self.dirty[peer / 64];
        w.set(w.get() | 1 << (peer % 64));
    }

    /// Writes one message to `peer`'s ring. `Ok(false)`: the ring is full, try later.
    #[inline]
    pub fn try_send(&self, peer: usize, env: &Envelope, payload: &[&[u8]]) -> io::Result<bool> {
        let len: usize = payload.iter().map(|s| s.len()).sum();
        self.push(peer, env, payload, len)
    }

    /// [`try_send`](Self::try_send) of one slice: the path of every small
    /// message, inline in its caller (a call with the general slices cost
    /// some 140 instructions for an empty message).
    #[inline(always)]
    pub fn try_send_one(&self, peer: usize, env: &Envelope, data: &[u8]) -> io::Result<bool> {
        self.push(peer, env, &[data], data.len())
    }

    #[inline(always)]
    fn push(&self, peer: usize, env: &Envelope, payload: &[&[u8]], len: usize) -> io::Result<bool> {
        let Some(Some(p)) = self.peers.get(peer) else {
            return Err(self.not_connected(peer));
        };
        if len > self.max_eager() {
            return Err(self.too_long(len));
        }
        if !p.ring.try_push(env, payload, len) {
            return Ok(false);
        }
        self.mark_dirty(peer);
        Ok(true)
    }

    /// Whether the rings to peers are rewound to their start when their
    /// consumer has emptied them (the default), so that a latency-bound
    /// exchange keeps to their first few KiB (see the ring's notes). A
    /// rewind leaves the producer only the part of the ring before it until
    /// the consumer has passed it: with more ranks than cores, where the
    /// consumer is often not on a CPU and 64 KiB eager records go to it,
    /// goal-rt turns it off.
    pub fn rewind_rings(&self, on: bool) {
        self.rewind.set(on);
        for p in self.peers.iter().flatten() {
            p.ring.set_rewind(on);
        }
    }

    /// Bytes from the start of the ring to `peer` that messages have been
    /// written to (0 when not connected): a send that moves it wrote pages
    /// of the ring for the first time, so that its copy faulted them in, and
    /// a time taken of it is not the path's.
    pub fn ring_written(&self, peer: usize) -> u64 {
        match self.peers.get(peer) {
            Some(Some(p)) => p.ring.written(),
            _ => 0,
        }
    }

    /// Where in the ring to `peer` the next message goes, in bytes from the
    /// ring's start (`None`: not connected). For tests and diagnostics: an
    /// emptied ring is rewound to its start (see the ring's notes).
    pub fn ring_position(&self, peer: usize) -> Option<usize> {
        let Some(Some(p)) = self.peers.get(peer) else { return None };
        Some(p.ring.position())
    }

    /// Whether a message of `len` payload bytes to `peer` fits its ring
    /// now (see [`try_send`](Self::try_send)): if so, the next send to
    /// `peer` of at most that length succeeds.
    #[inline(always)]
    pub fn fits(&self, peer: usize, len: usize) -> bool {
        match self.peers.get(peer) {
            Some(Some(p)) => len <= self.max_eager() && p.ring.fits(len),
            _ => false,
        }
    }

    #[cold]
    fn not_connected(&self, peer: usize) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotConnected,
            format!("goal shm: rank {} is not connected to rank {peer}", self.rank),
        )
    }

    #[cold]
    fn too_long(&self, len: usize) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("payload of {len} bytes exceeds max_eager {}", self.max_eager()),
        )
    }

    /// Whether any peer's ring holds a message [`poll`](Self::poll) would
    /// hand out: one load per peer, for a progress pass that would
    /// otherwise find nothing at the cost of a whole poll.
    #[inline]
    pub fn pending(&self) -> bool {
        self.incoming.iter().flatten().any(|inc| inc.ring.pending())
    }

    /// Hands every message present to `f` (source rank, envelope, payload in
    /// place), in order per source; returns how many.
    ///
    /// Generic, so that the callback inlines into the ring's loop: this is
    /// the path of every message received.
    pub fn poll<F: FnMut(usize, &Envelope, &[u8]) + ?Sized>(&self, f: &mut F) -> usize {
        if self.polling.replace(true) {
            return 0;
        }
        // Reset the flag even if a callback panics.
        struct Reset<'a>(&'a Cell<bool>);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _reset = Reset(&self.polling);
        let mut n = 0;
        for (s, inc) in self.incoming.iter().enumerate() {
            if let Some(inc) = inc {
                let (k, was_crowded) = inc.ring.drain(&mut |env, payload| f(s, env, payload));
                n += k;
                if was_crowded {
                    // Space freed in a crowded ring: the sender may wait for it.
                    self.mark_dirty(s);
                }
            }
        }
        n
    }

    /// Copies as much of `data` as fits into the stream to `peer`; returns the bytes taken.
    ///
    /// # Panics
    ///
    /// If `peer` is not connected.
    pub fn stream_push(&self, peer: usize, data: &[u8]) -> usize {
        let n = self.peer(peer).stream.push(data);
        if n != 0 {
            self.mark_dirty(peer);
        }
        n
    }

    /// Bytes pushed into the stream to `peer` that it has not copied out yet.
    ///
    /// # Panics
    ///
    /// If `peer` is not connected.
    pub fn stream_unread(&self, peer: usize) -> usize {
        self.peer(peer).stream.unread()
    }

    /// Sets the window of the stream to `peer` for the bytes pushed from
    /// now on (see [`StreamWindow`]). A push after a change takes nothing
    /// until `peer` has popped every byte before.
    pub fn stream_push_window(&self, peer: usize, w: StreamWindow) {
        self.peer(peer).stream.set_window(w);
    }

    /// Sets the window of the stream from `peer` for the bytes popped from
    /// now on: the one `peer` pushed them with.
    pub fn stream_pop_window(&self, peer: usize, w: StreamWindow) {
        if let Some(inc) = self.incoming[peer].as_ref() {
            inc.stream.set_window(w);
        }
    }

    /// Bytes the stream from `peer` holds now, ready to pop.
    pub fn stream_available(&self, peer: usize) -> usize {
        self.incoming[peer].as_ref().map_or(0, |inc| inc.stream.available())
    }

    /// Copies up to `dst.len()` bytes from the stream from `peer`; returns the bytes copied.
    pub fn stream_pop(&self, peer: usize, dst: &mut [u8]) -> usize {
        let inc = self.incoming[peer]
            .as_ref()
            .expect("goal shm: no stream from myself");
        let n = inc.stream.pop(dst);
        if n != 0 {
            // Stream space freed: the sender may wait for it.
            self.mark_dirty(peer);
        }
        n
    }

    /// Total bytes `peer` has released for messages from me (monotonic).
    ///
    /// # Panics
    ///
    /// If `peer` is not connected.
    pub fn credits_returned(&self, peer: usize) -> u64 {
        let pair = self.layout.pair(self.rank);
        self.peer(peer)
            .inbox
            .atomic_u64(pair + layout::P_CREDITS)
            .load(Ordering::Acquire)
    }

    /// Publishes the total bytes I have released for messages from `peer` (monotonic).
    pub fn return_credits(&self, peer: usize, total: u64) {
        assert!(
            peer < self.size && peer != self.rank,
            "goal shm: bad peer {peer}"
        );
        let pair = self.layout.pair(peer);
        self.inbox
            .atomic_u64(pair + layout::P_CREDITS)
            .store(total, Ordering::Release);
        self.mark_dirty(peer);
    }

    /// Publishes, for `peer`, how long this rank took to copy a message of
    /// `len` bytes from it out of the ring (`ns`): the half of an eager
    /// send that its sender does not see, for its choice between the
    /// eager way and a rendezvous (goal-rt's `eagerness`). One store to a
    /// line only `peer` reads, and only when it times an eager send.
    pub fn publish_copy_out(&self, peer: usize, len: u32, ns: u32) {
        assert!(peer < self.size && peer != self.rank, "goal shm: bad peer {peer}");
        let pair = self.layout.pair(peer);
        self.inbox.atomic_u64(pair + layout::P_COPY_OUT).store((u64::from(len) << 32) | u64::from(ns), Ordering::Relaxed);
    }

    /// What `peer` last published with
    /// [`publish_copy_out`](Self::publish_copy_out) of a message from this
    /// rank: (length, ns), zeros before it published any.
    ///
    /// # Panics
    ///
    /// If `peer` is not connected.
    pub fn copy_out(&self, peer: usize) -> (u32, u32) {
        let pair = self.layout.pair(self.rank);
        let word = self.peer(peer).inbox.atomic_u64(pair + layout::P_COPY_OUT).load(Ordering::Relaxed);
        ((word >> 32) as u32, word as u32)
    }

    /// Claim word `slot` (below [`CLAIM_SLOTS`]) for a message `peer`
    /// sends me: in my inbox.
    pub fn claim_in(&self, peer: usize, slot: usize) -> Claim<'_> {
        assert!(peer < self.size && peer != self.rank && slot < CLAIM_SLOTS, "goal shm: bad claim {peer}/{slot}");
        Claim(self.inbox.atomic_u64(self.layout.pair(peer) + layout::P_CLAIMS + slot * 8))
    }

    /// Claim word `slot` for a message I send `peer`: in `peer`'s inbox.
    ///
    /// # Panics
    ///
    /// If `peer` is not connected.
    pub fn claim_out(&self, peer: usize, slot: usize) -> Claim<'_> {
        assert!(slot < CLAIM_SLOTS, "goal shm: bad claim slot {slot}");
        let pair = self.layout.pair(self.rank);
        Claim(self.peer(peer).inbox.atomic_u64(pair + layout::P_CLAIMS + slot * 8))
    }

    /// Wakes the peers written to since the last flush, if they sleep.
    #[inline]
    pub fn flush(&self) {
        // Called after every progress pass, mostly with nothing written.
        if self.dirty.iter().any(|w| w.get() != 0) {
            self.wake_dirty();
        }
    }

    #[inline(never)]
    fn wake_dirty(&self) {
        // Orders every write above before the loads of the peers'
        // `sleepers` (see the doorbell protocol; the sleeper's side of the
        // barrier is the heavy one). Only called with a bit set.
        light_fence();
        for (i, w) in self.dirty.iter().enumerate() {
            let mut bits = w.replace(0);
            while bits != 0 {
                let p = i * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(Some(peer)) = self.peers.get(p) {
                    peer.bell.wake_if_sleeping();
                }
            }
        }
    }

    /// The doorbell this process sleeps on.
    pub fn doorbell(&self) -> Arc<Doorbell> {
        self.doorbell.clone()
    }

    /// Marks this rank as finalizing, having compiled `schedules`: a peer
    /// that then finds it gone says so (see [`PeerLost::finalized`]).
    pub fn mark_finalized(&self, schedules: u64) {
        self.inbox.atomic_u64(layout::H_FINALIZED).store(schedules.saturating_add(1), Ordering::Release);
    }

    /// Peer `rank` is gone, for `cause`: what to report, with what its
    /// inbox says of a finalize (the mapping outlives the process).
    fn lost(&self, rank: usize, cause: String) -> PeerLost {
        let fin = self.peers[rank].as_ref().map_or(0, |p| p.inbox.atomic_u64(layout::H_FINALIZED).load(Ordering::Acquire));
        let finalized = fin.checked_sub(1);
        let cause = match finalized {
            Some(n) => format!("called GOAL_Finalize (having compiled {n} schedule{}) and {cause}", if n == 1 { "" } else { "s" }),
            None => cause,
        };
        PeerLost { rank, cause, finalized }
    }

    /// Non-blocking: the first peer found dead and not reported before, if any.
    /// Each death is reported once: call again for the next one.
    pub fn check_peers(&self) -> Result<(), PeerLost> {
        let mut ranks = Vec::new();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        for (r, p) in self.peers.iter().enumerate() {
            let Some(p) = p.as_ref().filter(|_| !self.reported[r].get()) else { continue };
            match &p.watch {
                Watch::Pidfd(fd) => {
                    ranks.push(r);
                    fds.push(libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                }
                Watch::Proc { start } => {
                    if let Some(cause) = proc_exit(p.pid, *start) {
                        self.reported[r].set(true);
                        return Err(self.lost(r, cause));
                    }
                }
            }
        }
        if fds.is_empty() {
            return Ok(());
        }
        match sys::poll(&mut fds, 0) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            // Cannot tell (out of memory, say): do not invent a death; the
            // next call, ~100 ms later, asks again.
            Err(_) => return Ok(()),
        }
        for (i, fd) in fds.iter().enumerate() {
            if fd.revents != 0 {
                let rank = ranks[i];
                let p = self.peers[rank]
                    .as_ref()
                    .expect("polled peers are connected");
                let Watch::Pidfd(pidfd) = &p.watch else { unreachable!("only pidfds are polled") };
                // Only a parent may `waitid`, and the ranks are siblings:
                // the kernel keeps the status for a pidfd once the process
                // is reaped (Linux 6.15), `/proc` while it is a zombie. A
                // death by a signal must not read as an exit: the peer
                // that reports it names the job's first failure, as the
                // launcher does (see goal-rt's `peer_lost`).
                let status = || sys::pidfd_exit_status(pidfd.as_fd()).or_else(|| sys::proc_stat(p.pid).ok().filter(|st| st.ended).and_then(|st| st.status));
                let cause = match sys::waitid_pidfd(pidfd.as_fd()) {
                    Ok(Some(c)) => describe_exit(c),
                    _ => status().map_or_else(|| "exited".to_string(), |w| describe_exit(sys::exit_cause(w))),
                };
                self.reported[rank].set(true);
                return Err(self.lost(rank, cause));
            }
        }
        Ok(())
    }

    /// How to watch the process `pid`: a pidfd if the kernel gives one,
    /// else its start time in `/proc` (and a note saying why, once).
    fn watch(&mut self, pid: i32) -> io::Result<Watch> {
        if self.watch_note.is_none() {
            match sys::pidfd_open(pid) {
                Ok(fd) => return Ok(Watch::Pidfd(fd)),
                // Missing (ENOSYS) or refused by a seccomp filter (EPERM):
                // fall back, for this peer and every later one.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EACCES)) => {
                    self.watch_note = Some(format!("pidfd_open: {e}"));
                }
                Err(e) => return Err(e),
            }
        }
        let st = sys::proc_stat(pid).map_err(|e| io::Error::new(e.kind(), format!("watching pid {pid}: {e}")))?;
        if st.ended {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("pid {pid} has exited")));
        }
        Ok(Watch::Proc { start: st.start })
    }

    /// Why peers are watched through `/proc/<pid>/stat` rather than pidfds
    /// (`None`: they are not).
    pub fn watch_note(&self) -> Option<&str> {
        self.watch_note.as_deref()
    }

    /// Why the shared heap reserves less than `ShmConfig::heap_bytes`
    /// (`None`: it does not).
    pub fn heap_note(&self) -> Option<&str> {
        self.heap_note.as_deref()
    }

    /// Publishes `cpu` as the CPU this rank waits on, for peers that ask
    /// [`on_cpu`](Self::on_cpu). A store only when it changed: the word
    /// shares the header's first line, which peers read only when they
    /// connect or wait.
    #[inline]
    pub fn note_cpu(&self, cpu: u32) {
        let word = self.inbox.atomic_u64(layout::H_CPU);
        if word.load(Ordering::Relaxed) != cpu as u64 + 1 {
            word.store(cpu as u64 + 1, Ordering::Relaxed);
        }
    }

    /// Whether `peer`, reached through shared memory, last waited on `cpu`
    /// (see [`note_cpu`](Self::note_cpu)); false for a peer elsewhere or
    /// not connected.
    #[inline]
    pub fn on_cpu(&self, peer: usize, cpu: u32) -> bool {
        self.cpu_of(peer) == Some(cpu)
    }

    /// The CPU `peer`, reached through shared memory, last waited on (see
    /// [`note_cpu`](Self::note_cpu)); `None` before it waited, or for a
    /// peer elsewhere or not connected.
    #[inline]
    pub fn cpu_of(&self, peer: usize) -> Option<u32> {
        match self.peers.get(peer) {
            Some(Some(p)) => {
                let word = p.inbox.atomic_u64(layout::H_CPU).load(Ordering::Relaxed);
                word.checked_sub(1).and_then(|c| u32::try_from(c).ok())
            }
            _ => None,
        }
    }

    /// The process id of `peer`.
    ///
    /// # Panics
    ///
    /// If `peer` is neither this rank nor connected.
    pub fn peer_pid(&self, peer: usize) -> i32 {
        if peer == self.rank {
            return sys::getpid();
        }
        self.peer(peer).pid
    }

    /// A duplicate of `peer`'s descriptor `fd`, taken through its pidfd
    /// (`pidfd_getfd`: allowed where Cross Memory Attach is). A descriptor
    /// number alone is meaningless in another process; this is how a
    /// socket made by one rank becomes the other end of a channel here.
    pub fn take_peer_fd(&self, peer: usize, fd: i32) -> io::Result<OwnedFd> {
        let Some(Some(p)) = self.peers.get(peer) else {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("rank {peer} is not attached"),
            ));
        };
        let Watch::Pidfd(pidfd) = &p.watch else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no pidfd for rank {peer} to take its descriptor {fd} with"),
            ));
        };
        sys::pidfd_getfd(pidfd.as_fd(), fd).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "taking descriptor {fd} of rank {peer} (pid {}) with pidfd_getfd: {e}",
                    p.pid
                ),
            )
        })
    }

    /// This rank's shared heap (`GOAL_Alloc`).
    pub fn heap(&self) -> Arc<Heap> {
        self.heap.clone()
    }

    /// Copies `dst.len()` bytes at `offset` of `peer`'s shared heap into `dst`.
    ///
    /// The first call for a peer maps its whole heap read-only (through
    /// `/proc/<pid>/fd/<fd>`); later calls are a bounds check and a `memcpy`.
    /// `peer` may be this rank.
    pub fn read_peer_heap(&self, peer: usize, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        let (base, reserve) = if peer == self.rank {
            (self.heap.base() as *const u8, self.heap.reserve())
        } else {
            let Some(Some(p)) = self.peers.get(peer) else {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!("rank {peer} is not connected"),
                ));
            };
            if p.heap.get().is_none() {
                let fd = sys::open_proc_fd(p.pid, p.heap_fd, false)?;
                let len = usize::try_from(p.heap_bytes)
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
                let map = Mapping::new(fd.as_fd(), len, false).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "mapping rank {peer}'s {} MiB shared heap: {e} (a smaller GOAL_HEAP_BYTES on every rank leaves room)",
                            len >> 20
                        ),
                    )
                })?;
                let _ = p.heap.set(map);
            }
            let map = p.heap.get().expect("mapped above");
            (map.ptr() as *const u8, map.len())
        };
        match (offset as usize).checked_add(dst.len()) {
            Some(end) if offset <= usize::MAX as u64 && end <= reserve => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "range {offset}+{} lies outside rank {peer}'s {reserve}-byte heap",
                        dst.len()
                    ),
                ))
            }
        }
        // SAFETY: (1) `[offset, offset+len)` lies inside a live heap mapping
        // of `reserve` bytes (checked above; the mapping is owned by `self`);
        // (2) `copy` tolerates overlap, should `dst` itself live in my heap;
        // (3) what the owner writes there concurrently is for the runtime's
        // protocol to exclude: the bytes are plain data, any value is valid.
        unsafe { crate::move_bytes(base.add(offset as usize), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}
