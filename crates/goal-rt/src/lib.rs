//! goal-rt: the goal runtime.
//!
//! It joins the pieces: the bootstrap finds the group (goal-boot), the
//! transports connect the ranks (goal-transport on one machine, goal-net
//! between machines), graphs are compiled into schedules (goal-sched), and
//! the `engine` executes them: dependency counters, a ready queue,
//! matching, and the eager / rendezvous protocols, reaching each peer
//! through its link (`engine/link.rs`, the only code that knows which
//! peers are local and which remote). `progress` decides who drives the
//! engine between the application's calls: only the application
//! (`manual`), or a helper thread that sleeps in the kernel until data
//! arrives (`thread`), polls (`spin`), or also hands runs of small messages
//! to the kernel (`kernel`); `auto` picks `spin` or `thread`. `userop`
//! holds the application's reduction functions (user operators), which
//! local operations call wherever the engine runs.
//!
//! In the layer picture of `docs/design.md` this crate is the middle: the
//! application calls it (Rust directly, C through goal-ffi), and it calls
//! everything below.
//!
//! The C API (goal-ffi) is a thin skin over this crate's Rust API:
//!
//! ```no_run
//! let rt = goal_rt::init().unwrap();
//! let mut g = goal_sched::Graph::new();
//! let buf = [0u8; 8];
//! let peer = (rt.rank() + 1) % rt.size();
//! let from = (rt.rank() + rt.size() - 1) % rt.size();
//! g.send(goal_sched::Buf::user(buf.as_ptr() as u64), 8, peer as i64, 0);
//! let mut got = [0u8; 8];
//! g.recv(goal_sched::Buf::user(got.as_mut_ptr() as u64), 8, from as i64, 0);
//! let s = rt.compile(&g).unwrap();
//! // SAFETY: `buf` and `got` outlive the execution.
//! unsafe { rt.run(&s) }.unwrap().wait().unwrap();
//! goal_rt::finalize().unwrap();
//! ```

/// `eprintln!` in one write: the ranks of a job share the launcher's
/// stderr, and `eprintln!` writes a line in pieces, so two ranks' lines
/// came out interleaved mid-line.
macro_rules! say {
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        line.push('\n');
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    }};
}

mod adapt;
mod affinity;
mod burst;
mod calibrate;
mod config;
mod elock;
mod eagerness;
mod engine;
mod fuse;
mod group;

pub mod error;
pub mod localop;
mod progress;
mod runbuf;
pub mod userop;
mod slice;
mod ticks;
mod timeline;
mod window;
pub mod proto;

pub use config::{Config, ProgressMode, Requested};
pub use error::{Error, ErrorKind, Result};
pub use goal_boot::HostAllgather;
pub use group::{Group, CONTEXTS};

use engine::{Engine, ExecShared, SchedInner, Thresholds, DONE, FAILED, RUNNING};
pub use engine::Thresholds as ProtocolThresholds;
use goal_transport::shm::{Doorbell, Heap, ShmNode};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A running goal instance: this process' rank in its group.
pub struct Runtime {
    rank: u32,
    size: u32,
    cfg: Config,
    th: Thresholds,
    engine: elock::EngineLock<Engine>,
    bell: Arc<Doorbell>,
    /// Readable when the network (with peers on other machines) or the
    /// kernel mode's ring has news: sleepers wait for it beside the doorbell.
    pub(crate) wake_fd: Option<std::os::fd::RawFd>,
    /// An epoll set holding both, when there are both.
    _wake_set: Option<goal_net::Epoll>,
    heap: Arc<Heap>,
    /// Every rank of the job: context 0, whose compile count is the one
    /// peers are told at finalize.
    world: Group,
    /// Application threads inside `wait`. The helper sleeps on this word
    /// while it is non-zero (see `progress::park`).
    pub(crate) app_waiting: Arc<AtomicU32>,
    /// The helper sleeps on `app_waiting`: the Wait that brings it to zero
    /// wakes it.
    pub(crate) helper_parked: AtomicBool,
    /// The helper parks longer than 1 ms: the next Run wakes it (see
    /// `progress::park::at_run`).
    pub(crate) helper_deep: AtomicBool,
    /// With more ranks than cores in `thread` mode: what the helper parks
    /// on, which a Run of a long schedule arms (see `progress::park`).
    pub(crate) park_timer: Option<progress::park::ParkTimer>,
    /// The last Wait was for a long schedule's execution (see
    /// `progress::park::park_for`).
    pub(crate) waits_long: AtomicBool,
    /// The helper parks on `park_timer` rather than on `app_waiting` (set
    /// before `helper_parked`).
    pub(crate) helper_on_timer: AtomicBool,
    /// The helper's parks, and those that ended at their timeout with an
    /// application thread still waiting (for `GOAL_DEBUG`).
    pub(crate) parks: std::sync::atomic::AtomicU64,
    pub(crate) park_looks: std::sync::atomic::AtomicU64,
    /// The helper's sleeps on the doorbell: registered with the global
    /// fence, and without it beside the application's mark (see
    /// `progress::helper`), for `GOAL_DEBUG`.
    pub(crate) sleeps_fenced: std::sync::atomic::AtomicU64,
    pub(crate) sleeps_quiet: std::sync::atomic::AtomicU64,
    /// `progress::park::LONG_WAIT` in ticks.
    pub(crate) long_wait: u64,
    /// The helper found the engine held by an application thread and
    /// waits for it: a Run that sees this polls on the helper's behalf
    /// before it lets the engine go (see `progress::helper::await_holder`).
    pub(crate) helper_wants: AtomicBool,
    /// `kernel` mode: operations wait for a thread that may hand chains to
    /// the kernel (see `engine::kernel::mark_carrier`); the helper takes
    /// them even while application threads wait.
    pub(crate) kernel_deferred: Arc<AtomicBool>,
    /// The application's lingering polling mark (see `progress::appmark::AppMark`).
    pub(crate) app_mark: progress::appmark::AppMark,
    pub(crate) shutdown: AtomicBool,
    /// A waiting thread hands the CPU over between batches of polls
    /// without news (see `progress::yields`): there are more ranks on this
    /// machine than cores this process may run on, or another rank may run
    /// on this one's CPUs.
    pub(crate) yield_polls: bool,
    /// More ranks on this machine than cores: a Wait polls once between
    /// yields, not `progress::POLL_BATCH` times, while a rank it waits for
    /// shares its CPU (see `progress::yields`).
    pub(crate) cores_shared: bool,
    /// How long a Wait polls before it sleeps (see `progress::spin::Spin`).
    pub(crate) spin: progress::spin::Spin,
    helper: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A compiled schedule, ready to run any number of times.
pub struct Schedule {
    inner: Arc<SchedInner>,
    /// The group it was compiled on: its context stays taken while the
    /// schedule lives.
    group: Group,
}

impl Clone for Schedule {
    fn clone(&self) -> Schedule {
        self.inner.handles.fetch_add(1, Ordering::Relaxed);
        Schedule { inner: self.inner.clone(), group: self.group.clone() }
    }
}

impl Drop for Schedule {
    fn drop(&mut self) {
        // Only the last handle frees the schedule (counted apart from the
        // `Arc`, which the engine holds too).
        if self.inner.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        match runtime("freeing a schedule") {
            // The engine forgets its id, at once or once its executions
            // in flight end (they point at the compiled schedule without
            // counting, see `engine::SchedRef`): a program that compiles
            // and frees a schedule per step runs in flat memory.
            Ok(rt) => rt.lock_engine().free(&self.inner),
            // Finalized with executions running: they can never finish,
            // and whatever still reaches them must find the schedule, so
            // it is never freed. (Without executions, the engine let go of
            // it at finalize.)
            Err(_) => {
                if self.inner.running.load(Ordering::Acquire) > 0 {
                    std::mem::forget(self.inner.clone());
                }
            }
        }
    }
}

impl Schedule {
    /// Whether any execution of it is still running.
    pub fn is_running(&self) -> bool {
        if self.inner.running.load(Ordering::Acquire) == 0 {
            return false;
        }
        // The thread that completes an execution (the helper, say) marks it
        // done, which ends its Wait, before it counts it out of `running`,
        // all under the engine lock: a Wait that has just returned may see
        // the count one too high until that lock is free. (Seen: a
        // GOAL_FreeSchedule right after its Wait refused with "still has
        // executions running", 6 ranks on 2 cores.)
        match runtime("checking a schedule") {
            Ok(rt) => {
                let _settled = rt.lock_engine();
                self.inner.running.load(Ordering::Acquire) > 0
            }
            Err(_) => true,
        }
    }
    /// The compiled form.
    pub fn compiled(&self) -> &goal_sched::Schedule {
        &self.inner.s
    }
    /// The schedule's number in its group's compile order.
    pub fn id(&self) -> u32 {
        self.inner.id as u32
    }
    /// The group it was compiled on.
    pub fn group(&self) -> &Group {
        &self.group
    }
}

/// One execution of a schedule: a counted reference to its state (which
/// holds the runtime), one pointer wide, so that C's handle is this pointer
/// itself (see [`into_raw`](Self::into_raw)) and Run and Wait allocate
/// nothing. An execution that finished within its Run (its sends all went
/// into their rings at once, see `Engine::start_done`) has no state: its
/// handle is `None`, and Run and Wait skip the count's two locked
/// instructions, which would wait for the messages' cache lines to reach
/// the receiving cores.
pub struct Handle {
    shared: Option<Arc<ExecShared>>,
}

/// The C handle of an execution that finished within its Run: not null,
/// and no `Arc`'s address (those are aligned to 8).
const FINISHED: *const std::ffi::c_void = std::ptr::dangling::<std::ffi::c_void>();

/// Submission queue of the kernel mode's ring: the longest run handed to the
/// kernel at once (a longer chain goes in pieces, each started by the end of
/// the one before).
const KERNEL_RING_ENTRIES: u32 = 1024;

const UNINIT: u8 = 0;
const LIVE: u8 = 1;
const FINALIZED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static RUNTIME: RwLock<Option<Arc<Runtime>>> = RwLock::new(None);
/// The shared heap of a finalized runtime while blocks of it are still
/// allocated (see [`free_after_finalize`]).
static KEPT_HEAP: Mutex<Option<Arc<Heap>>> = Mutex::new(None);

/// Initialises goal for this process: finds the group, connects the ranks.
pub fn init() -> Result<Arc<Runtime>> {
    init_from(None)
}

/// Initialises goal inside a host runtime's job (an MPI library's): rank,
/// size and every address exchange come from the host and its `gather`
/// (see `goal_boot::with_host_allgather`), never from the environment's
/// launcher, whose PMI or PMIx session the host owns.
pub fn init_with_host(rank: usize, size: usize, gather: HostAllgather) -> Result<Arc<Runtime>> {
    init_from(Some(gather_boot(rank, size, gather)))
}

/// The host bootstrap, made only once `init_from` has checked the state:
/// its construction is already an exchange (the secret).
fn gather_boot(rank: usize, size: usize, gather: HostAllgather) -> MakeBoot {
    Box::new(move || goal_boot::with_host_allgather(rank, size, gather).map_err(|e| Error::new(ErrorKind::System, format!("bootstrap: {e}"))))
}

/// Makes the bootstrap `Runtime::start` uses instead of the environment's.
type MakeBoot = Box<dyn FnOnce() -> Result<Box<dyn goal_boot::Bootstrap>>>;

/// `init` with the environment's bootstrap (`None`) or the one `boot` makes.
fn init_from(boot: Option<MakeBoot>) -> Result<Arc<Runtime>> {
    let mut slot = RUNTIME.write().unwrap_or_else(|e| e.into_inner());
    match STATE.load(Ordering::Acquire) {
        LIVE => return Err(Error::new(ErrorKind::AlreadyInitialized, "goal is already initialized in this process")),
        FINALIZED => return Err(Error::new(ErrorKind::AlreadyInitialized, "goal was finalized and cannot be initialized again")),
        _ => {}
    }
    let rt = Runtime::start(boot)?;
    // This thread carries kernel chains (it lives until finalize).
    engine::mark_carrier();
    *slot = Some(rt.clone());
    STATE.store(LIVE, Ordering::Release);
    Ok(rt)
}

/// The running instance, or an error naming `what` was called too early or late.
pub fn runtime(what: &str) -> Result<Arc<Runtime>> {
    // Never called with RUNTIME locked (that would deadlock).
    if let Some(rt) = RUNTIME.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return Ok(rt.clone());
    }
    let why = if STATE.load(Ordering::Acquire) == FINALIZED { "after goal was finalized" } else { "before goal was initialized" };
    Err(Error::new(ErrorKind::NotInitialized, format!("{what}: called {why}")))
}

/// Whether `init` has succeeded and `finalize` not yet been called.
#[inline]
pub fn is_initialized() -> bool {
    STATE.load(Ordering::Acquire) == LIVE
}

/// Whether goal is finalized or not yet initialised (the thesis' definition).
pub fn is_finalized() -> bool {
    STATE.load(Ordering::Acquire) != LIVE
}

/// Frees a block of the shared heap after [`finalize`]: `None` when no
/// heap was kept (nothing was allocated at finalize), else whether `p`
/// was one of its blocks. Blocks still allocated when goal finalizes stay
/// mapped, readable and writable (a program reads its results from them
/// after finalizing, or frees them then, the usual C order); the heap is
/// unmapped when the last of them is freed.
pub fn free_after_finalize(p: *mut u8) -> Option<bool> {
    let mut kept = KEPT_HEAP.lock().unwrap_or_else(|e| e.into_inner());
    let heap = kept.as_ref()?;
    let freed = heap.free(p);
    if freed && heap.allocated_bytes() == 0 {
        *kept = None;
    }
    Some(freed)
}

/// Ends goal in this process: stops the helper, unmaps shared memory (the
/// heap only once its blocks are freed, see [`free_after_finalize`]).
pub fn finalize() -> Result<()> {
    // The timelines first, while the ranks can still talk (`GOAL_TRACE_FILE`).
    // (Its schedules are not the program's: peers are told the count from before.)
    let traced = RUNTIME.read().unwrap_or_else(|e| e.into_inner()).clone().filter(|rt| rt.cfg.trace_file.is_some());
    let compiled = traced.as_ref().map(|rt| rt.world.inner.next_sched.load(Ordering::Relaxed));
    if let Some(rt) = traced {
        timeline::write_at_finalize(&rt);
    }
    let rt = {
        let mut slot = RUNTIME.write().unwrap_or_else(|e| e.into_inner());
        let Some(rt) = slot.take() else {
            let why = if STATE.load(Ordering::Acquire) == FINALIZED { "after goal was finalized" } else { "before goal was initialized" };
            return Err(Error::new(ErrorKind::NotInitialized, format!("called {why}")));
        };
        STATE.store(FINALIZED, Ordering::Release);
        rt
    };
    // Peers that still wait for this rank will say that its program ended
    // (and how many schedules it compiled), not that it died. Mismatches
    // no execution reported are said here: the program's results may be
    // wrong although every Wait succeeded.
    {
        let mut e = rt.lock_engine();
        for line in e.unreported() {
            say!("goal (rank {}): at GOAL_Finalize: {line}", rt.rank);
        }
        e.link.shm.mark_finalized(compiled.unwrap_or_else(|| rt.world.inner.next_sched.load(Ordering::Relaxed)) as u64);
        e.release_idle();
    }
    rt.shutdown.store(true, Ordering::Release);
    rt.bell.ring();
    progress::park::unpark(&rt);
    if let Some(h) = rt.helper.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = h.join();
    }
    if rt.cfg.debug {
        let e = rt.lock_engine();
        for line in [e.kernel_summary(), e.eager_summary(), e.stream_summary(), e.path_summary()].into_iter().flatten() {
            say!("goal: rank {}: {line}", rt.rank);
        }
        if rt.cfg.progress != ProgressMode::Manual {
            say!("goal: rank {}: {}", rt.rank, progress::park::summary(&rt));
            let n = rt.app_mark.computed_runs();
            say!("goal: rank {}: {n} Run(s) found the application computing since its previous call, and handed arriving data to the helper", rt.rank);
        }
    }
    // Sends finish once their bytes are queued; over the network, stay
    // until the receivers have acknowledged them, and messages this rank
    // staged in its heap for peers that were not running (see the engine's
    // `stage`) until they are read from there. Bounded: a receiver that
    // never polls again is not waited for forever, and one that dies is
    // noticed by the liveness check.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut e = rt.lock_engine();
        let quiet = e.link.net.as_ref().is_none_or(|n| n.is_quiet()) && e.staged_unread() == 0;
        if quiet || std::time::Instant::now() >= deadline {
            e.release_stage();
            break;
        }
        e.progress();
        e.check_peers_if_due();
        drop(e);
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    // (After the staged blocks went back: what is left is the application's,
    // or staged blocks no reader came for.)
    if rt.heap.allocated_bytes() > 0 {
        *KEPT_HEAP.lock().unwrap_or_else(|e| e.into_inner()) = Some(rt.heap.clone());
    }
    Ok(())
}

impl Runtime {
    fn start(boot: Option<MakeBoot>) -> Result<Arc<Runtime>> {
        let mut cfg = Config::from_env()?;
        let sys = |what: &str, e: std::io::Error| Error::new(ErrorKind::System, format!("{what}: {e}"));
        let mut boot = match boot {
            Some(make) => make()?,
            None => goal_boot::from_env().map_err(|e| sys("bootstrap", e))?,
        };
        let (rank, size) = (boot.rank(), boot.size());
        if std::env::var_os("GOAL_SHM_RING_BYTES").is_none() {
            cfg.shm.ring_bytes = goal_transport::shm::ShmConfig::ring_bytes_for(size);
        }
        let mut shm = ShmNode::create(rank, size, &cfg.shm).map_err(|e| sys("creating the shared-memory inbox", e))?;
        // Round 1: which machine each rank is on, and its inbox. Ranks on
        // this machine are reached through shared memory, the others by TCP.
        let host = goal_boot::host_id();
        let my_cpus = affinity::current().map(|set| affinity::cpus(&set)).unwrap_or_default();
        let all = boot.allgather(&addr_blob(&host, &affinity::to_list(&my_cpus), &shm.address())).map_err(|e| sys("exchanging addresses", e))?;
        // Per rank: on another machine (reached by TCP, see `engine::Links`).
        let mut elsewhere = vec![false; size];
        for (peer, blob) in all.iter().enumerate() {
            let (their_host, _, addr) = split_blob(blob).ok_or_else(|| sys("exchanging addresses", std::io::Error::other(format!("rank {peer} sent a malformed address"))))?;
            elsewhere[peer] = their_host != host.as_bytes();
            if peer != rank && !elsewhere[peer] {
                shm.connect(peer, addr).map_err(|e| sys(&format!("attaching to rank {peer}"), e))?;
            }
        }
        // Ranks that share these cores: those on this kernel (the boot id
        // after the host name), which is more than the ranks reached
        // through shared memory when hosts are emulated in namespaces of
        // one machine. A polling helper needs a core none of them uses.
        fn kernel(host: &[u8]) -> &[u8] {
            host.rsplit(|&c| c == b'/').next().unwrap_or_default()
        }
        let mine = kernel(host.as_bytes());
        let on_kernel: Vec<_> = all.iter().filter_map(|b| split_blob(b)).filter(|(h, _, _)| kernel(h) == mine).collect();
        let sharing = on_kernel.len();
        let local_ranks = elsewhere.iter().filter(|&&r| !r).count();
        // The CPUs of the ranks that share these cores (see `affinity`).
        let mut cpus: Vec<usize> = on_kernel.iter().filter_map(|(_, c, _)| affinity::parse_list(std::str::from_utf8(c).ok()?)).flatten().collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            cpus = (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        let cores = cpus.len();
        cfg.resolve_progress(local_ranks.max(sharing), local_ranks, &cpus, if my_cpus.is_empty() { cores } else { my_cpus.len() });
        if cfg.debug {
            // Each rank its own line: the binding is per rank, and goal
            // keeps whatever the launcher (or the user) set.
            say!("goal: rank {rank} (pid {}): {}", std::process::id(), affinity::describe(&my_cpus, boot.kind()));
        }
        let kring = if cfg.progress == ProgressMode::Kernel {
            match goal_transport::kchain::KRing::with_entries(KERNEL_RING_ENTRIES) {
                Ok(ring) => Some(ring),
                Err(why) => {
                    cfg.progress = ProgressMode::Thread;
                    cfg.progress_reason = format!("GOAL_PROGRESS=kernel, but {why}: running as 'thread'");
                    None
                }
            }
        } else {
            None
        };
        if rank == 0 && (cfg.debug || cfg.requested == Requested::Mode(ProgressMode::Kernel)) {
            say!("goal: progress mode '{}' ({})", cfg.progress.name(), cfg.progress_reason);
        }
        // Round 2 (only with several machines, which every rank then sees):
        // the network addresses, then the connections.
        let net = if elsewhere.iter().any(|&r| r) {
            let rails = goal_net::discover_rails(cfg.rails.as_deref()).map_err(|e| sys("finding the network interfaces (GOAL_RAILS)", e))?;
            let ncfg = goal_net::NetConfig::new(rank as u32, size as u32, boot.secret(), rails, engine::net_handlers())
                .with_overrides(|k| std::env::var(k).ok())
                .map_err(|e| sys("network settings", e))?;
            let (mut node, blob) = goal_net::NetNode::bind(ncfg).map_err(|e| sys("listening on the network", e))?;
            let blobs = boot.allgather(&blob).map_err(|e| sys("exchanging network addresses", e))?;
            node.connect(&blobs, &elsewhere).map_err(|e| sys("connecting to the ranks on other machines", e))?;
            Some(node)
        } else {
            None
        };
        // Everyone is attached before anyone sends. And one rank per
        // machine (the lowest on this kernel: emulated hosts share its
        // hardware) calibrates while the others wait here, and hands them its
        // result: calibrating each on its own, the ranks disturbed each
        // other's measurements (up to 5 s with 4 ranks where the cache could
        // not be written) and ended with different thresholds.
        let calibrator = all.iter().position(|b| split_blob(b).is_some_and(|(h, _, _)| kernel(h) == mine)).unwrap_or(rank);
        let mut measured = Vec::new();
        if calibrator == rank {
            let (t, cache_unused) = calibrate::thresholds(cfg.debug, &cfg.cpus);
            if let Some(why) = cache_unused {
                say!("goal (rank {rank}): warning: {why}; so the ranks on this machine measure their thresholds again at every start (set XDG_CACHE_HOME to a writable directory, or GOAL_CALIBRATE=0)");
            }
            measured = calibrate::encode(&t);
        }
        let shared = boot.allgather(&measured).map_err(|e| sys("waiting for the group", e))?;
        let measured = calibrate::decode(&shared[calibrator])
            .ok_or_else(|| sys("waiting for the group", std::io::Error::other(format!("rank {calibrator} sent malformed calibration results"))))?;
        let th = progress::thresholds(&cfg, &shm, size, measured);
        // Counted over every rank on this kernel, not only the shared-memory
        // peers: with hosts emulated in namespaces the ranks of other
        // "hosts" compute on these cores too. Counting only the peers, 4
        // emulated hosts on 2 cores spun 50 us per Wait without yielding,
        // and a 4-rank barrier between them took 1.1 ms instead of 0.12.
        let oversubscribed = sharing > cores;
        // Whether another rank on these cores may run on a CPU this rank
        // may run on: then the scheduler may put the rank we wait for on
        // the very CPU our polling holds (see `progress::yields`).
        let cpus_of = |b: &Vec<u8>| split_blob(b).and_then(|(_, c, _)| affinity::parse_list(std::str::from_utf8(c).ok()?));
        let my_cpus = cpus_of(&all[rank]).unwrap_or_default();
        let shares_cpus = all.iter().enumerate().any(|(r, b)| {
            r != rank && split_blob(b).is_some_and(|(h, _, _)| kernel(h) == mine) && cpus_of(b).is_none_or(|c| c.iter().any(|x| my_cpus.contains(x)))
        });
        if cfg.debug && rank == 0 {
            say!(
                "goal: {sharing} rank(s) on this machine's {cores} core(s){}",
                if oversubscribed {
                    ": more ranks than cores, so waits poll briefly and yield between polls"
                } else if shares_cpus {
                    ": ranks not bound to distinct CPUs, so waits yield between polls"
                } else {
                    ""
                }
            );
            say!(
                "goal: {size} ranks, progress={}, spin={:?} (helper {:?}), eager<={} B (heap {} B), cma={:?} (with cores shared, exchanges by {}), stream or cma chosen per message from {} B, credit={} B per sender",
                cfg.progress.name(),
                cfg.spin,
                cfg.helper_spin.unwrap_or_default(),
                th.eager,
                th.heap_eager,
                th.cma,
                if th.cma_shared { "CMA" } else { "the stream" },
                th.adapt_from,
                th.credit
            );
        }
        if let Some(why) = shm.heap_note().filter(|_| cfg.debug && rank == 0) {
            say!("goal: {why} (GOAL_Alloc gives out less)");
        }
        if let Some(why) = shm.watch_note().filter(|_| cfg.debug && rank == 0) {
            // (Kernel mode's local channels need pidfds too: without them
            // every offer is refused and those sends stay eager.)
            say!("goal: rank {rank}: watching local peers through /proc/<pid>/stat, not pidfds ({why})");
        }
        let bell = shm.doorbell();
        if local_ranks == 1 {
            // No other process maps this rank's inbox: a sleeper's heavy
            // fence need not interrupt the other ranks' CPUs (see `Doorbell`).
            bell.rung_from_here_only();
        }
        let heap = shm.heap();
        let net_fd = net.as_ref().map(|n| n.as_raw_fd());
        let mut engine = Engine::new(rank as u32, size as u32, shm, th);
        if let Some(n) = net {
            engine.attach_net(n, elsewhere);
        }
        let kernel_deferred = Arc::new(AtomicBool::new(false));
        if let Some(ring) = kring {
            engine.enable_kernel(ring, kernel_deferred.clone());
        }
        engine.allow_pushes(cfg.progress != ProgressMode::Manual);
        if let Some(p) = cfg.cold_writes {
            engine.judge_writes_at(p);
        }
        engine.report_stalls(cfg.stall_report);
        if cfg.trace_file.is_some() {
            engine.record(cfg.trace_events);
        }
        let app_waiting = Arc::new(AtomicU32::new(0));
        engine.allow_splits(cfg.progress != ProgressMode::Manual && !oversubscribed, app_waiting.clone());
        engine.share_cores(oversubscribed, cfg.shm.stream_bytes);
        let (wake_fd, wake_set) = match (net_fd, engine.kernel_fd()) {
            (Some(a), Some(b)) => {
                let set = epoll_of(&[a, b]).map_err(|e| sys("making an epoll set for the network and the kernel ring", e))?;
                (Some(std::os::fd::AsRawFd::as_raw_fd(&set)), Some(set))
            }
            (a, b) => (a.or(b), None),
        };
        // The clock's rate, before the thresholds are converted to it.
        ticks::init();
        let rt = Arc::new(Runtime {
            rank: rank as u32,
            size: size as u32,
            th,
            engine: elock::EngineLock::new(engine),
            bell,
            wake_fd,
            _wake_set: wake_set,
            heap,
            world: Group::world(size as u32, rank as u32, group::Contexts::new()),
            app_waiting,
            helper_parked: AtomicBool::new(false),
            helper_deep: AtomicBool::new(false),
            // (Not in `kernel` mode, whose deferred operations wake a parked
            // helper on the count of waiting threads.)
            park_timer: if oversubscribed && cfg.progress == ProgressMode::Thread { progress::park::ParkTimer::new() } else { None },
            waits_long: AtomicBool::new(false),
            helper_on_timer: AtomicBool::new(false),
            parks: Default::default(),
            park_looks: Default::default(),
            sleeps_fenced: Default::default(),
            sleeps_quiet: Default::default(),
            long_wait: progress::park::long_wait(),
            helper_wants: AtomicBool::new(false),
            kernel_deferred,
            app_mark: progress::appmark::AppMark::new(oversubscribed),
            shutdown: AtomicBool::new(false),
            yield_polls: oversubscribed || shares_cpus,
            cores_shared: oversubscribed,
            // Adaptive unless fixed by GOAL_SPIN_US or by the spin mode
            // (see `progress::spin::Spin`: with more ranks than cores too).
            spin: progress::spin::Spin::new(cfg.spin, !cfg.spin_given && cfg.progress != config::ProgressMode::Spin),
            helper: Mutex::new(None),
            cfg,
        });
        progress::helper::start_helper(&rt)?;
        Ok(rt)
    }

    /// This process' rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks in the group.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The protocol thresholds in force.
    pub fn thresholds(&self) -> (usize, (usize, usize)) {
        (self.th.eager, self.th.cma)
    }

    /// Checks and compiles `g` on the world group. Collective in the
    /// matching sense: every rank compiles its schedules in the same order.
    pub fn compile(&self, g: &goal_sched::Graph) -> Result<Schedule> {
        self.compile_numbered(&self.world, g, None)
    }

    /// Checks and compiles `g` on `grp`: its peers are ranks of `grp`.
    /// Collective over `grp`'s members, which compile the group's
    /// schedules in the same order.
    pub fn compile_on(&self, grp: &Group, g: &goal_sched::Graph) -> Result<Schedule> {
        self.compile_numbered(grp, g, None)
    }

    /// [`compile_on`](Self::compile_on), numbered `number` in the group if
    /// given (else the group's next number).
    pub(crate) fn compile_numbered(&self, grp: &Group, g: &goal_sched::Graph, number: Option<u32>) -> Result<Schedule> {
        refuse_inside_user_op()?;
        grp.check_live("compiling")?;
        let s = goal_sched::compile(g, &goal_sched::CompileOptions { group_size: grp.size() }).map_err(Error::from)?;
        let users = user_functions(&s)?;
        self.adopt_numbered(grp, s, users, number, true)
    }

    /// A copy of `s`, numbered as the next schedule of its group: what
    /// compiling the same graph on the group now would return, without
    /// compiling it again. Collective in the same sense as compiling (it
    /// takes a number of the group's compile order): for a caller whose
    /// every rank makes one schedule per call, some compiling and some
    /// reusing what their own arguments compiled before (the MPI layer's
    /// v-collectives, whose counts each rank knows only in part).
    pub fn renumber(&self, s: &Schedule) -> Result<Schedule> {
        refuse_inside_user_op()?;
        s.group.check_live("renumbering a schedule")?;
        self.adopt_numbered(&s.group, s.inner.s.clone(), s.inner.users.to_vec(), None, false)
    }

    /// Numbers `s` in `grp` (`number`, else the group's next) and hands it
    /// to the engine; `map_peers`: its peers are still group ranks, to be
    /// made job ranks (a renumbered copy's are job ranks already).
    fn adopt_numbered(&self, grp: &Group, mut s: goal_sched::Schedule, users: Vec<Arc<userop::UserFn>>, number: Option<u32>, map_peers: bool) -> Result<Schedule> {
        if map_peers && grp.inner.ctx != 0 {
            // The engine speaks job ranks: each peer of the group becomes
            // the rank it is in the job (a one-to-one map, so what the
            // compiler derived from peers being equal still holds).
            for o in s.ops.iter_mut().filter(|o| matches!(o.kind(), goal_sched::OpKind::Send | goal_sched::OpKind::Recv | goal_sched::OpKind::SendVec | goal_sched::OpKind::RecvVec) && o.peer >= 0) {
                o.peer = grp.inner.members[o.peer as usize] as i32;
            }
        }
        let n = match number {
            Some(n) => n,
            None => {
                let mut n = grp.next_number();
                if n == u32::MAX {
                    // Skipped on every member alike: compile numbers stay in step.
                    n = grp.next_number();
                }
                n
            }
        };
        let id = proto::sched_id(grp.inner.ctx, n);
        let inner = Arc::new(SchedInner::new(id, s, grp.inner.members.clone(), users));
        if !self.lock_engine().adopt(inner.clone()) {
            // (Dropped without a handle: nothing to free in the engine.)
            return Err(Error::new(
                ErrorKind::Busy,
                format!("schedule number {n} of this group is still held by a live schedule compiled 4,294,967,295 compiles ago (numbers wrap): free it first"),
            ));
        }
        Ok(Schedule { inner, group: grp.clone() })
    }

    /// Starts one execution of `s`, which must have all its buffers (see
    /// [`run_with`](Self::run_with) for one with run-time buffers).
    ///
    /// # Safety
    /// Every user-space buffer named in the schedule must stay valid (and
    /// unaliased by Rust references while it is written) until the execution
    /// has finished.
    #[inline]
    pub unsafe fn run(self: &Arc<Self>, s: &Schedule) -> Result<Handle> {
        if !s.inner.s.run.is_empty() {
            return Err(runbuf::left_open(s));
        }
        // SAFETY: forwarded caller guarantee; no run-time buffer to give.
        unsafe { self.start_run(s, &[]) }
    }

    /// Starts one execution of `s` with run-time buffer `i` at `run[i]`
    /// (each one the schedule has, checked by the caller).
    ///
    /// # Safety
    /// As [`run`](Self::run), for the run-time buffers too, which must
    /// hold the bytes the schedule needs.
    #[inline(always)]
    unsafe fn start_run(self: &Arc<Self>, s: &Schedule, run: &[usize]) -> Result<Handle> {
        refuse_inside_user_op()?;
        if s.group.inner.freed.load(Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("the schedule's group (context {}) was freed", s.group.inner.ctx)));
        }
        if self.cfg.progress == ProgressMode::Manual {
            // (`run_at` is for the helper's heuristics: none here.)
            let shared = self.lock_engine().start(&s.inner, self, run);
            return Ok(Handle { shared });
        }
        // Whether the application computes from here on, and arriving data
        // must wake the helper (see `progress::appmark::AppMark`).
        let (run_at, after_gap) = self.app_mark.at_run(&self.bell, s.inner.id);
        progress::park::at_run(self, &s.inner.rhythm);
        let mut e = self.lock_engine();
        if after_gap {
            // The mark is lifted without a ring: what peers wrote while it
            // was set is read here, not by a helper woken for it (see
            // `AppMark::after_gap`). Before the start, so that no answer to
            // this execution's own requests is decided here, where this
            // thread is neither waiting nor known to compute: a sender
            // asked to write half of a large message declined it, and the
            // Wait that followed at once would have taken it (2 ranks, a
            // burst of 1 MiB sends after 20 ms: 8 of 24 halves declined,
            // `runtime.rs::a_burst_of_large_messages_is_split...`).
            e.poll();
        }
        let long = e.long_end();
        let shared = e.start(&s.inner, self, run);
        if self.helper_wants.load(Ordering::Relaxed) {
            // The helper, woken for data that came during this Run, waits
            // for the engine: take that data in here, as it would have.
            self.helper_wants.store(false, Ordering::Relaxed);
            e.poll_background();
        }
        let long = (e.long_end() != long).then(|| e.long_end());
        drop(e);
        // A Run that copied a large message itself (its data was there)
        // ends long after `run_at`: that time was not the application's.
        let started = run_at;
        let run_at = long.map_or(run_at, |end| self.app_mark.ran_until(end));
        if let Some(shared) = &shared {
            shared.run_at.store(run_at, Ordering::Relaxed);
            progress::park::after_run(self, shared, started, after_gap);
        }
        Ok(Handle { shared })
    }

    /// Advances every running execution as far as it can without blocking;
    /// returns the operations finished.
    pub fn progress(&self) -> usize {
        self.lock_engine().progress()
    }

    #[inline]
    pub(crate) fn lock_engine(&self) -> elock::EngineGuard<'_, Engine> {
        self.engine.lock()
    }

    /// A progress pass if the engine is free, as a poller sees it (see
    /// `Engine::poll`).
    pub(crate) fn try_progress(&self) -> Option<usize> {
        self.try_engine().map(|mut e| e.poll())
    }

    /// [`try_progress`](Self::try_progress) for the helper: behind the
    /// application's back (see `Engine::background`).
    pub(crate) fn try_progress_background(&self) -> Option<usize> {
        self.try_engine().map(|mut e| e.poll_background())
    }

    /// The engine, if nobody holds its lock now.
    pub(crate) fn try_engine(&self) -> Option<elock::EngineGuard<'_, Engine>> {
        self.engine.try_lock()
    }

    /// Memory in this rank's shared heap, which local peers read directly.
    pub fn alloc(&self, bytes: usize) -> Option<std::ptr::NonNull<u8>> {
        self.heap.alloc(bytes.max(1))
    }

    /// Frees memory from [`alloc`](Self::alloc); false if it did not come from there.
    pub fn free(&self, p: *mut u8) -> bool {
        self.heap.free(p)
    }
}

impl Handle {
    /// `Ok(true)` once finished, `Ok(false)` while running, `Err` if it failed.
    pub fn test(&self) -> Result<bool> {
        refuse_inside_user_op()?;
        let Some(shared) = &self.shared else { return Ok(true) };
        if shared.state.load(Ordering::Acquire) == RUNNING {
            shared.rt.try_progress();
        }
        state(shared)
    }

    /// Blocks until the execution has finished.
    #[inline]
    pub fn wait(self) -> Result<()> {
        refuse_inside_user_op()?;
        let Some(shared) = &self.shared else { return Ok(()) };
        progress::wait(shared);
        state(shared).map(|_| ())
    }

    /// Waits as [`wait`](Self::wait) for at most `timeout`: `Ok(true)` once
    /// finished, `Ok(false)` if still running then (the handle stays live),
    /// `Err` if it failed.
    pub fn wait_for(&self, timeout: std::time::Duration) -> Result<bool> {
        refuse_inside_user_op()?;
        let Some(shared) = &self.shared else { return Ok(true) };
        progress::wait_until(shared, Some(std::time::Instant::now() + timeout), None);
        state(shared)
    }

    /// Waits as [`wait`](Self::wait), calling `poke` on this thread after
    /// each batch of polls and at least every `every` while it sleeps (for
    /// a caller that must keep something else moving, such as an MPI
    /// library), without spinning again after a sleep that brought no
    /// news. `Ok(true)` once finished; `Ok(false)` as soon as `poke`
    /// returned `true` with the execution still running (the handle stays
    /// live); `Err` if it failed. `poke` runs with none of goal's locks
    /// held, and may call goal (but not wait for this handle).
    pub fn wait_poking(&self, every: std::time::Duration, poke: &mut dyn FnMut() -> bool) -> Result<bool> {
        refuse_inside_user_op()?;
        let Some(shared) = &self.shared else { return Ok(true) };
        progress::wait_until(shared, None, Some(progress::Poke { f: poke, every }));
        state(shared)
    }

    /// Whether the execution has finished (without progressing).
    pub fn is_finished(&self) -> bool {
        self.shared.as_ref().is_none_or(|s| s.state.load(Ordering::Acquire) != RUNNING)
    }

    /// The handle as one pointer (never null), for a C caller to hold.
    pub fn into_raw(self) -> *const std::ffi::c_void {
        self.shared.map_or(FINISHED, |s| Arc::into_raw(s).cast())
    }

    /// The handle back from [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `p` must come from `into_raw` and not have been turned back before.
    pub unsafe fn from_raw(p: *const std::ffi::c_void) -> Handle {
        if p == FINISHED {
            return Handle { shared: None };
        }
        // SAFETY: `p` is an `Arc<ExecShared>` given up by `into_raw`, taken
        // back once (caller).
        Handle { shared: Some(unsafe { Arc::from_raw(p.cast()) }) }
    }
}

/// `Ok(true)` once finished, `Ok(false)` while running, `Err` if it failed.
#[inline(always)]
fn state(shared: &ExecShared) -> Result<bool> {
    match shared.state.load(Ordering::Acquire) {
        DONE => Ok(true),
        FAILED => Err(failure(shared)),
        _ => Ok(false),
    }
}

/// Why the execution failed.
#[cold]
fn failure(shared: &ExecShared) -> Error {
    shared.error.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(|| Error::new(ErrorKind::System, "execution failed"))
}

/// The functions of the user operators `s` names, each once; an error
/// names the first one that was freed or never created, and its vertex.
fn user_functions(s: &goal_sched::Schedule) -> Result<Vec<Arc<userop::UserFn>>> {
    let mut out: Vec<Arc<userop::UserFn>> = Vec::new();
    for (i, o) in s.ops.iter().enumerate() {
        let op = match o.kind() {
            goal_sched::OpKind::Local => s.locals[o.addr as usize].op(),
            goal_sched::OpKind::LocalVec => s.lvecs[o.addr as usize].op(),
            _ => continue,
        };
        let goal_sched::Op::User(u) = op else { continue };
        if out.iter().any(|f| f.op == u) {
            continue;
        }
        let f = userop::resolve(u).map_err(|mut e| {
            e.message = format!("vertex {} (a local operation): {}", s.origin.get(i).copied().unwrap_or(i as u32), e.message);
            e
        })?;
        out.push(f);
    }
    Ok(out)
}

/// Refuses a call from inside a user operator's function: the engine's
/// lock is held there, by this very thread.
#[inline(always)]
fn refuse_inside_user_op() -> Result<()> {
    if userop::inside() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "called from inside a user operation's function, while goal runs it: a user function must not call goal",
        ));
    }
    Ok(())
}

/// Seconds on the clock `GOAL_WTIME` uses.
pub fn wtime() -> f64 {
    localop::wtime()
}

/// An epoll set that is readable when any of `fds` is.
fn epoll_of(fds: &[std::os::fd::RawFd]) -> std::io::Result<goal_net::Epoll> {
    let set = goal_net::Epoll::new()?;
    for &fd in fds {
        // SAFETY: the caller's descriptors are open for this call (the
        // network node's and the ring's, both alive); the set keeps only
        // their registrations.
        set.add(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }, goal_net::ev::IN, 0)?;
    }
    Ok(set)
}

/// Round 1's blob: this machine's identity, the CPUs this rank may run on
/// (a CPU list, see `affinity`), then the shared-memory address.
fn addr_blob(host: &str, cpus: &str, shm: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + host.len() + cpus.len() + shm.len());
    for part in [host, cpus] {
        b.extend_from_slice(&(part.len() as u32).to_le_bytes());
        b.extend_from_slice(part.as_bytes());
    }
    b.extend_from_slice(shm);
    b
}

/// Splits a round-1 blob into (machine identity, the rank's CPU list,
/// shared-memory address).
fn split_blob(b: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let host = b.get(4..4 + n)?;
    let rest = &b[4 + n..];
    let m = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let cpus = rest.get(4..4 + m)?;
    Some((host, cpus, &rest[4 + m..]))
}
