//! Run-time configuration from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GOAL_PROGRESS` | `auto`, `manual`, `thread`, `spin`, `kernel` (see below) | `auto` |
//! | `GOAL_SPIN_US` | how long an application thread in Wait polls before it sleeps; unset, the spin adapts between this default and 1 ms to the waits seen (see `progress::Spin`) | 50 (2000 in `spin`) |
//! | `GOAL_HELPER_SPIN_US` | how long the helper thread polls after the last event before it sleeps | `thread`: 20 with a spare core, else 0; `spin`: 2000 |
//! | `GOAL_PROGRESS_CPU` | CPU number the helper thread is pinned to | not pinned |
//! | `GOAL_PROGRESS_RT` | `1`: run the helper thread as a real-time thread (`SCHED_FIFO`, priority 1) where permitted | off |
//! | `GOAL_PROGRESS_NICE` | the helper thread's nice value, -20 to 19, where permitted (a negative one needs `CAP_SYS_NICE` or `RLIMIT_NICE`); see `progress::helper::place_helper` | 0 (unchanged) |
//! | `GOAL_SLICE_US` | the scheduler time slice goal's sleeping threads ask for (`sched_setattr`, Linux 6.12 and later): the helper always, an application thread while it sleeps in Wait; `0`: the kernel's default | 100 |
//! | `GOAL_EAGER_LIMIT` | largest message sent eagerly through the rings | calibrated |
//! | `GOAL_CMA_MIN`, `GOAL_CMA_MAX` | sizes that go by Cross Memory Attach instead of the pipelined stream (setting either fixes the choice) | chosen per message from 64 KiB (see `adapt`), calibrated below |
//! | `GOAL_CALIBRATE` | `0` or `off`: no measuring, built-in defaults; `force`: measure again (any other value is refused) | cached per machine |
//! | `GOAL_ADAPT` | `0`: no per-message choice between stream and CMA (the calibrated range decides), nor between eager and rendezvous for sends of 16 to 64 KiB | on |
//! | `GOAL_COLD_WRITES` | a percentage: a sender's write into a receiver's buffer (half of a split message, or a push) that takes longer than this share of the receiver's own copy is cold, and three in a row keep the sender's next messages to the receiver's own copies for a while (the application reads what it receives); `0`: every write judged is cold | 130 |
//! | `GOAL_UNEXPECTED_BYTES` | eager bytes a rank buffers for receives not yet started, before senders must wait | 64 MiB |
//! | `GOAL_SHM_RING_BYTES`, `GOAL_SHM_STREAM_BYTES`, `GOAL_HEAP_BYTES`, `GOAL_PIDFD` | shared-memory sizes; `GOAL_PIDFD=0` watches local peers through `/proc` | see goal-transport |
//! | `GOAL_DEBUG` | `1`: print decisions (mode, thresholds) on stderr, and what a Wait stuck for 10 s waits for | off |
//! | `GOAL_TRACE_FILE` | a path: record what every operation did and when, and write the ranks' timelines there at finalize (Chrome trace event format, see `timeline`) | off |
//! | `GOAL_TRACE_EVENTS` | operations each rank records at most for `GOAL_TRACE_FILE` (the buffer is allocated at init: 56 bytes each) | 1048576 |
//!
//! `auto` picks the mode once the runtime knows how many ranks share this
//! machine: `spin` when every rank can have a second core for its helper
//! (the helper's polling then costs the application nothing), `thread`
//! otherwise; `GOAL_DEBUG=1` prints the choice and why. `kernel` runs like
//! `thread` and also hands runs of small sends and receives to the kernel (see `kpath`); where io_uring is missing or turned off
//! (`GOAL_IO_URING=0`) it says so once and runs as `thread`.

use crate::error::{Error, ErrorKind, Result};
use std::time::Duration;

/// How executions advance between the application's calls into goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Only inside Test, Wait and Progress.
    Manual,
    /// A helper thread that sleeps in the kernel until data arrives.
    Thread,
    /// A helper thread that polls (for a spare core), sleeping only after a long idle spell.
    Spin,
    /// `thread`, and small messages on channels of their own (socket pairs
    /// between local ranks, TCP connections to other machines) whose runs
    /// of sends and receives the kernel carries (linked io_uring chains).
    Kernel,
}

impl ProgressMode {
    /// The mode's name as `GOAL_PROGRESS` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ProgressMode::Manual => "manual",
            ProgressMode::Thread => "thread",
            ProgressMode::Spin => "spin",
            ProgressMode::Kernel => "kernel",
        }
    }
}

/// What `GOAL_PROGRESS` asked for, before `auto` is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// Choose from the machine (the default).
    Auto,
    /// Exactly this mode.
    Mode(ProgressMode),
}

/// The runtime's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Progress mode (after `auto` is resolved by [`Config::resolve_progress`]).
    pub progress: ProgressMode,
    /// What `GOAL_PROGRESS` asked for.
    pub requested: Requested,
    /// Why `progress` was chosen, for the debug line.
    pub progress_reason: String,
    /// An application thread in Wait polls this long before sleeping.
    pub spin: Duration,
    /// The helper thread polls this long after the last event (None: by mode and machine).
    pub helper_spin: Option<Duration>,
    /// CPU the helper thread is pinned to.
    pub helper_cpu: Option<usize>,
    /// `GOAL_PROGRESS_CPU` was set (to a CPU, or to `any`: unpinned).
    pub helper_cpu_given: bool,
    /// `helper_cpu` is the CPU that the helpers of all ranks here share
    /// (see [`Config::resolve_progress`]), not one the user named.
    pub helper_shared: bool,
    /// The CPUs of the ranks on this machine, the union of their masks
    /// (see `affinity`); set by [`Config::resolve_progress`].
    pub cpus: Vec<usize>,
    /// Run the helper as a real-time thread.
    pub helper_rt: bool,
    /// The helper's nice value (None: left as it is).
    pub helper_nice: Option<i32>,
    /// The time slice goal's sleeping threads ask for (zero: the default).
    pub slice: Duration,
    /// Largest eager message (None: calibrate).
    pub eager_limit: Option<usize>,
    /// CMA size range (None: calibrate).
    pub cma_range: Option<(usize, usize)>,
    /// Bound on buffered unexpected eager bytes per receiver.
    pub unexpected_bytes: u64,
    /// Shared-memory sizes.
    pub shm: goal_transport::shm::ShmConfig,
    /// Largest eager message to a peer on another machine, reached over
    /// several rails (`GOAL_NET_EAGER`).
    pub net_eager: usize,
    /// The same to a peer reached over a single rail (`GOAL_NET_EAGER` too).
    pub net_eager_one_rail: usize,
    /// Rails to use between machines (`GOAL_RAILS`: interface names; None: every up, non-loopback IPv4 interface).
    pub rails: Option<String>,
    /// Choose stream or CMA per large message, and eager or rendezvous
    /// for sends of 16 to 64 KiB, from measurements (`GOAL_ADAPT`,
    /// default on).
    pub adapt: bool,
    /// `GOAL_COLD_WRITES`: the percentage of a receiver's own copy above
    /// which a sender's write into its buffer is cold (None: the built-in one).
    pub cold_writes: Option<u64>,
    /// Print decisions.
    pub debug: bool,
    /// After how long without any operation finishing, while executions
    /// are in flight, a rank prints what they wait for (`GOAL_STALL_REPORT`
    /// seconds; 10 s with `GOAL_DEBUG=1`; `None`: never).
    pub stall_report: Option<Duration>,
    /// `GOAL_TRACE_FILE`: where the timelines go (see `timeline`).
    pub trace_file: Option<std::path::PathBuf>,
    /// `GOAL_TRACE_EVENTS`: operations recorded at most per rank.
    pub trace_events: usize,
    /// Whether `GOAL_SPIN_US` was set (else `spin` follows the mode).
    pub(crate) spin_given: bool,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// What `GOAL_CALIBRATE` asks of the calibration (see `calibrate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calibrate {
    /// Unset: the cached measurement, measured once if there is none.
    Cached,
    /// `0` or `off`: measure nothing, the built-in defaults.
    Off,
    /// `force`: measure again and replace the cache.
    Force,
}

/// Reads `GOAL_CALIBRATE`; any other value is an error naming it.
pub(crate) fn calibrate_mode() -> Result<Calibrate> {
    match var("GOAL_CALIBRATE").as_deref() {
        None => Ok(Calibrate::Cached),
        Some("0" | "off") => Ok(Calibrate::Off),
        Some("force") => Ok(Calibrate::Force),
        Some(other) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("GOAL_CALIBRATE={other}: expected 0, off or force (or unset: use the cached measurement)"),
        )),
    }
}

fn parse_bytes(name: &str) -> Result<Option<usize>> {
    let Some(v) = var(name) else { return Ok(None) };
    let t = v.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let mult: usize = match mult.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(Error::new(ErrorKind::InvalidArgument, format!("{name}={v}: not a byte count (e.g. 4096, 64K, 1M)"))),
    };
    let n: usize = num
        .parse()
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{name}={v}: not a byte count (e.g. 4096, 64K, 1M)")))?;
    Ok(Some(n * mult))
}

/// `GOAL_STALL_REPORT`: seconds (a positive number) without any operation
/// finishing before a rank prints what its executions wait for; `0` or
/// `off`: never. Unset: 10 s with `GOAL_DEBUG=1`, else never.
fn stall_report(debug: bool) -> Result<Option<Duration>> {
    let Some(v) = var("GOAL_STALL_REPORT") else { return Ok(debug.then_some(DEBUG_STALL_REPORT)) };
    match v.trim() {
        "0" | "off" => Ok(None),
        t => match t.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(Error::new(ErrorKind::InvalidArgument, format!("GOAL_STALL_REPORT={v}: not a positive number of seconds (or 0/off)"))),
        },
    }
}

/// The stall report's delay under `GOAL_DEBUG=1` (see [`Config::stall_report`]).
const DEBUG_STALL_REPORT: Duration = Duration::from_secs(10);

impl Config {
    /// Reads the environment; a malformed variable is an error naming it.
    pub fn from_env() -> Result<Config> {
        let debug = var("GOAL_DEBUG").is_some_and(|v| v != "0");
        let requested = match var("GOAL_PROGRESS").as_deref() {
            None | Some("auto") => Requested::Auto,
            Some("kernel") => Requested::Mode(ProgressMode::Kernel),
            Some("thread") => Requested::Mode(ProgressMode::Thread),
            Some("manual") => Requested::Mode(ProgressMode::Manual),
            Some("spin") => Requested::Mode(ProgressMode::Spin),
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("GOAL_PROGRESS={other}: unknown progress mode (auto, manual, thread, spin, kernel)"),
                ))
            }
        };
        // Resolved for real by `resolve_progress`, once the ranks on this machine are known.
        let progress = match requested {
            Requested::Mode(m) => m,
            Requested::Auto => ProgressMode::Thread,
        };
        let micros = |name: &str| -> Result<Option<Duration>> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map(Duration::from_micros)
                        .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{name}={v}: not a number of microseconds")))
                })
                .transpose()
        };
        let spin = micros("GOAL_SPIN_US")?;
        let helper_cpu_var = var("GOAL_PROGRESS_CPU");
        let helper_cpu = match helper_cpu_var.as_deref().map(str::trim) {
            None | Some("any") => None,
            Some(v) => Some(
                v.parse::<usize>()
                    .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("GOAL_PROGRESS_CPU={v}: not a CPU number (or 'any')")))?,
            ),
        };
        let helper_rt = match var("GOAL_PROGRESS_RT").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => return Err(Error::new(ErrorKind::InvalidArgument, format!("GOAL_PROGRESS_RT={other}: expected 0 or 1"))),
        };
        let helper_nice = match var("GOAL_PROGRESS_NICE").as_deref() {
            None => None,
            Some(v) => match v.parse::<i32>() {
                Ok(n) if (-20..=19).contains(&n) => Some(n),
                _ => return Err(Error::new(ErrorKind::InvalidArgument, format!("GOAL_PROGRESS_NICE={v}: expected a nice value from -20 to 19"))),
            },
        };
        let cma_range = match (parse_bytes("GOAL_CMA_MIN")?, parse_bytes("GOAL_CMA_MAX")?) {
            (None, None) => None,
            (lo, hi) => Some((lo.unwrap_or(0), hi.unwrap_or(usize::MAX))),
        };
        let net_eager = parse_bytes("GOAL_NET_EAGER")?;
        // Read again where it is used (`calibrate`); refused here, at GOAL_Init.
        calibrate_mode()?;
        let shm = goal_transport::shm::ShmConfig::from_env().map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
        Ok(Config {
            progress,
            requested,
            progress_reason: String::new(),
            spin: spin.unwrap_or(Duration::ZERO),
            spin_given: spin.is_some(),
            helper_spin: micros("GOAL_HELPER_SPIN_US")?,
            helper_cpu,
            helper_cpu_given: helper_cpu_var.is_some(),
            cpus: Vec::new(),
            helper_shared: false,
            helper_rt,
            helper_nice,
            slice: micros("GOAL_SLICE_US")?.unwrap_or(SLICE),
            eager_limit: parse_bytes("GOAL_EAGER_LIMIT")?,
            cma_range,
            unexpected_bytes: parse_bytes("GOAL_UNEXPECTED_BYTES")?.unwrap_or(64 << 20) as u64,
            shm,
            net_eager: net_eager.unwrap_or(NET_EAGER_DEFAULT),
            net_eager_one_rail: net_eager.unwrap_or(NET_EAGER_ONE_RAIL),
            rails: var("GOAL_RAILS"),
            adapt: var("GOAL_ADAPT").is_none_or(|v| v != "0"),
            cold_writes: match var("GOAL_COLD_WRITES") {
                None => None,
                Some(v) => Some(v.trim().parse::<u64>().ok().filter(|&p| p <= 100_000).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidArgument, format!("GOAL_COLD_WRITES={v}: not a percentage from 0 to 100000"))
                })?),
            },
            debug,
            stall_report: stall_report(debug)?,
            trace_file: var("GOAL_TRACE_FILE").map(std::path::PathBuf::from),
            trace_events: match var("GOAL_TRACE_EVENTS") {
                None => 1 << 20,
                Some(v) => v.trim().parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidArgument, format!("GOAL_TRACE_EVENTS={v}: not a positive number of operations"))
                })?,
            },
        })
    }
}

impl Config {
    /// Settles the progress mode once the machine is known: `local_ranks`
    /// ranks of this job on this machine (on this kernel: emulated hosts in
    /// namespaces share its cores), `shm_ranks` of them reached through
    /// shared memory (this rank included), `cpus` the CPUs they may run on
    /// (the union of their masks; the helpers share the highest of them),
    /// `own` how many of them this rank may run on (its launcher's binding).
    /// Sets the spins that follow from the mode and records why.
    pub fn resolve_progress(&mut self, local_ranks: usize, shm_ranks: usize, cpus: &[usize], own: usize) {
        let cores = cpus.len().max(1);
        self.cpus = cpus.to_vec();
        // A helper per rank polls on a core of its own only if there are
        // twice as many cores as ranks here, and only if the launcher left
        // this rank more than one CPU: bound to one (`goalrun` with a core
        // per rank, `mpirun --bind-to core`), its helper would poll on the
        // application's own CPU, and goal does not move it out of the
        // binding.
        let spare = local_ranks * 2 <= cores && own >= 2;
        let machine = format!("{local_ranks} rank(s) on this machine's {cores} core(s)");
        let bound = if own < 2 && local_ranks * 2 <= cores { ", but each bound to one CPU by its launcher" } else { "" };
        let (mode, why) = match self.requested {
            Requested::Mode(m) => (m, format!("GOAL_PROGRESS={}", m.name())),
            Requested::Auto if spare => (ProgressMode::Spin, format!("auto: {machine}, a spare core per rank for a polling helper")),
            Requested::Auto if !bound.is_empty() => (ProgressMode::Thread, format!("auto: {machine}{bound}: a helper that sleeps until data arrives")),
            Requested::Auto => (ProgressMode::Thread, format!("auto: {machine}, no spare core: a helper that sleeps until data arrives")),
        };
        self.progress = mode;
        self.progress_reason = why;
        // Without a spare core, the helpers of the ranks here run on one
        // CPU while their applications compute (see `progress::Placement`):
        // a helper woken by a peer's message on its own CPU costs a context
        // switch, from another CPU an inter-processor interrupt as well
        // (8-10 us a side in a VM), and a chain of dependent messages
        // between local ranks is carried by helpers waking each other
        // there. 2 ranks computing on 2 cores, 200 dependent ping-pongs
        // behind a 20 ms computation: 6 % of it lost with each helper
        // beside its rank, 2 % with both on one CPU. Only with a core per
        // rank: with more ranks than cores (4 emulated hosts on 2 cores)
        // the shared CPU carried four ranks' network traffic, and 1 MiB
        // collectives overlapped less (55-75 % against 81-89 % unpinned).
        // And only for ranks that reach each other through shared memory:
        // 2 emulated hosts on 2 cores, one rank each, IMB overlap of a
        // 1 MiB allreduce 84 % with the helpers sharing a CPU against 91 %
        // without, and 1.9 ms of work lost per 1 MiB allreduce against 1.2.
        let shares = !spare && local_ranks <= cores && shm_ranks == local_ranks && (2..=MAX_SHARED_HELPERS).contains(&local_ranks);
        if shares && !self.helper_cpu_given && matches!(mode, ProgressMode::Thread | ProgressMode::Kernel) {
            if let Some(&cpu) = cpus.last() {
                self.helper_cpu = Some(cpu);
                self.helper_shared = true;
                self.progress_reason.push_str(&format!("; the helpers of the {local_ranks} ranks here share CPU {cpu}"));
            }
        }
        if !self.spin_given {
            self.spin = Duration::from_micros(if mode == ProgressMode::Spin { 2000 } else { 50 });
        }
        if self.helper_spin.is_none() {
            // A helper that shares its core with a computing application
            // takes every microsecond it polls from it; with a core to
            // itself, a short poll catches the next message of a burst
            // without a wake-up (15-35 us in a VM, against 65 ns).
            self.helper_spin = Some(Duration::from_micros(match mode {
                ProgressMode::Spin => 2000,
                _ if spare => 20,
                _ => 0,
            }));
        }
    }
}

/// Up to this many ranks on a machine share one CPU for their helpers;
/// beyond it one CPU would carry too many ranks' messages, and each helper
/// runs where the scheduler puts it.
const MAX_SHARED_HELPERS: usize = 8;

/// Default eager limit between machines, from goal-net's crossover
/// measurement between two emulated hosts (`net_bench --crossover`, 1 Gbit/s
/// rail): up to 16 KiB eager takes 20-27 us and rendezvous 44-56 us (one
/// round trip more); from 32 KiB both are bound by the wire and differ by
/// under 10 %, while only rendezvous stripes over several rails (64 KiB on 3
/// rails: 93 us against 276 on one) and lands in the receive buffer without
/// a copy. So: eager up to 16 KiB.
const NET_EAGER_DEFAULT: usize = 16 << 10;

/// Default eager limit to a peer reached over a single rail, where
/// rendezvous has no striping to offer and only costs its extra round trip.
/// Measured between two emulated hosts on one 1 Gbit/s rail, 64 KiB
/// ping-pong, half round trip: 276.3-278.7 us by rendezvous, 274.8-274.9 us
/// eager, Open MPI's TCP transport 275.7-275.9 us (`bench/net_pp.c`).
const NET_EAGER_ONE_RAIL: usize = 64 << 10;

/// The scheduler time slice goal's sleeping threads ask for (see `slice`).
/// Measured across 4 emulated hosts with 4 computing ranks on 2 cores, a
/// barrier started before 300 us of computation (the median Wait after
/// the computation, per rank):
/// * the kernel's default slice: 240-550 us on three or four ranks (the
///   barrier moved only after the computations);
/// * 100 us for the helper alone: 0.2-0.3 us on three ranks, 520 us on the
///   fourth, whose application thread slept in Wait and, woken, waited for
///   the computation of the rank it shares a CPU with;
/// * 100 us for both: 0.1-0.2 us on every rank.
///
/// The threads run a few microseconds per event, so the short slice never
/// cuts their work; the application's computation keeps its own slice.
const SLICE: Duration = Duration::from_micros(100);
