//! Protocol thresholds measured on the machine goal runs on.
//!
//! Which path a large message takes between local ranks depends on numbers
//! that differ from machine to machine: how fast memcpy is at each size, how
//! fast Cross Memory Attach (`process_vm_readv`) is, and what a hand-over
//! between two cores costs. On the machine goal was developed on, CMA reads
//! at a quarter of memcpy's speed, so a pipelined two-copy path (sender and
//! receiver copying chunks at the same time) beats it; elsewhere it may not.
//!
//! So at the first start on a machine, one rank of the job's ranks there
//! measures (a few tens of milliseconds; the others wait in the bootstrap's
//! exchange rather than disturb it, and other jobs on a file lock) and
//! writes the result to `$XDG_CACHE_HOME/goal/calibration` (or
//! `~/.cache/goal/`, else `/tmp`), keyed by what identifies the hardware
//! (see [`machine_key`]). The ranks there take that rank's result, cache or
//! no cache, so they all use the same thresholds; where the cache cannot be
//! written it says why, and every start measures again. The model, with `h` the one-way hand-over time and `copy(n)`,
//! `cma(n)` the measured copy times:
//!
//! ```text
//! eager(n)  = h + 2 copy(n)                 sender copies in, receiver out
//! stream(n) = 3h + copy(n) + copy(chunk)    RTS, CTS, then both copy at once
//! cma(n)    = 2h + cma(n)                   RTS, then one kernel copy
//! ```
//!
//! The eager limit is the largest size where `eager <= stream` (for heap
//! buffers, where `eager <= 2h + copy(n)`); CMA is used
//! for the sizes where `cma < stream`. With more ranks than cores a
//! message's cost is its copies' CPU time, not its latency, so there the
//! measure is the sizes' majority from [`SHARED_FROM`] (see
//! [`cma_saves_copies`]) at which `cma(n) < 1.5 * 2 copy(n)`, both between
//! two cores (the stream's turns there cost more than its copies). Buffers from `GOAL_Alloc` above the
//! eager limit always take the heap's single user-space copy, which costs no
//! more than `stream`. `GOAL_EAGER_LIMIT`, `GOAL_CMA_MIN`/`GOAL_CMA_MAX`
//! override the results; `GOAL_CALIBRATE=0` skips measuring (built-in
//! defaults) and `GOAL_CALIBRATE=force` measures again.

use crate::affinity;
use crate::engine::Thresholds;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Chunk the stream publishes at (its producer's granularity).
const CHUNK: usize = 64 << 10;
/// Built-in values when nothing is measured.
const DEFAULT: Thresholds = Thresholds { eager: 8 << 10, heap_eager: 4 << 10, cma: (usize::MAX, 0), cma_shared: false, credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX, eager_adapt: 0 };

/// The measured (or cached) thresholds, measured by the calling rank (one
/// per machine: see `Runtime::start`, which hands them to the others);
/// `credit` is filled in by the caller. With them, why the cache could not
/// be used, when it could not: then every start measures again.
pub(crate) fn thresholds(debug: bool, cpus: &[usize]) -> (Thresholds, Option<String>) {
    use crate::config::{calibrate_mode, Calibrate};
    // `Config::from_env` has refused a bad value already.
    let mode = calibrate_mode().unwrap_or(Calibrate::Cached);
    if mode == Calibrate::Off {
        return (DEFAULT, None);
    }
    let key = machine_key();
    let Some(dir) = cache_dir() else { return (measure(debug, cpus), None) };
    let path = dir.join("calibration");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return (measure(debug, cpus), Some(format!("cannot create the calibration cache's directory {}: {e}", dir.display())));
    }
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("calibration.lock"));
    let _guard = lock.ok().map(FileLock::new);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if mode != Calibrate::Force {
        if let Some(t) = read_cache(&old, &key) {
            return (t, None);
        }
    }
    let t = measure(debug, cpus);
    let text = write_cache(&old, &key, &t);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes())).and_then(|_| std::fs::rename(&tmp, &path));
    let why = written.err().map(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write the calibration cache {}: {e}", path.display())
    });
    (t, why)
}

/// Bytes of [`encode`]d thresholds.
const ENCODED: usize = 40;

/// The measured thresholds as the calibrating rank hands them to the
/// others on its machine.
pub(crate) fn encode(t: &Thresholds) -> Vec<u8> {
    [t.eager, t.heap_eager, t.cma.0, t.cma.1, t.cma_shared as usize].iter().flat_map(|&v| (v as u64).to_le_bytes()).collect()
}

/// The thresholds from [`encode`]; `None` if `b` is not such a blob.
pub(crate) fn decode(b: &[u8]) -> Option<Thresholds> {
    if b.len() != ENCODED {
        return None;
    }
    let v: Vec<usize> = b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()) as usize).collect();
    Some(Thresholds { eager: v[0], heap_eager: v[1], cma: (v[2], v[3]), cma_shared: v[4] != 0, ..DEFAULT })
}

/// An exclusive `flock` held for the guard's life.
struct FileLock(std::fs::File);

impl FileLock {
    fn new(f: std::fs::File) -> FileLock {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on an open descriptor we own; failure only means no lock.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        FileLock(f)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn cache_dir() -> Option<std::path::PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Some(std::path::PathBuf::from(x).join("goal"));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return Some(std::path::PathBuf::from(h).join(".cache/goal"));
    }
    Some(std::env::temp_dir().join("goal-cache"))
}

/// What the measurement depends on, and nothing else: the CPU model and
/// how many CPUs the machine has online (copy speeds, the hand-over between
/// cores), its memory in GiB (another machine with the same CPU), the
/// kernel release and command line (Cross Memory Attach is a system call:
/// its cost moves with the kernel and its mitigations). Not the host name:
/// containers and network namespaces (the test suite's emulated hosts)
/// give one machine several, and with it in the key each of them measured
/// again and replaced the others' entry. Not the boot id either: a reboot
/// changes no hardware. Machines of one kind that share a home directory
/// share an entry; the cache keeps one per kind (up to [`MAX_ENTRIES`]).
fn machine_key() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).unwrap_or("").trim().to_string();
    let online = affinity::parse_list(read("/sys/devices/system/cpu/online").trim()).map_or(0, |l| l.len());
    let cpus = if online == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { online };
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    // Rounded: the kernel's own reservations move the last digits.
    let mem_gib = (mem_kib + (1 << 19)) >> 20;
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let cmdline = fnv(read("/proc/cmdline").trim().as_bytes());
    format!("{KEY_VERSION}{cpu}|{cpus} cpus|{mem_gib} GiB|{kernel}|{cmdline:016x}")
}

/// The start of this format's keys; entries of other versions are dropped
/// (v4 added the `shared` line).
const KEY_VERSION: &str = "v4|";

/// FNV-1a: a short, stable digest of the kernel command line for the key.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| (h ^ c as u64).wrapping_mul(0x100_0000_01b3))
}

/// Entries the cache keeps, the most recently measured first (machines of
/// several kinds sharing a home directory).
const MAX_ENTRIES: usize = 16;

/// The cache's entries: a key line, an `eager` line, a `cma` line and a
/// `shared` line each (`shared cma` or `shared stream`: the path of
/// exchanges with cores shared).
fn entries(text: &str) -> Vec<[&str; 4]> {
    let lines: Vec<&str> = text.lines().collect();
    lines.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect()
}

fn read_cache(text: &str, key: &str) -> Option<Thresholds> {
    let [_, eager, cma, shared] = entries(text).into_iter().find(|e| e[0] == key)?;
    let mut e = eager.strip_prefix("eager ")?.split(' ');
    let eager: usize = e.next()?.parse().ok()?;
    let heap_eager: usize = e.next()?.parse().ok()?;
    let mut cma = cma.strip_prefix("cma ")?.split(' ');
    let lo: usize = cma.next()?.parse().ok()?;
    let hi: usize = cma.next()?.parse().ok()?;
    let cma_shared = match shared.strip_prefix("shared ")? {
        "cma" => true,
        "stream" => false,
        _ => return None,
    };
    Some(Thresholds { eager, heap_eager, cma: (lo, hi), cma_shared, ..DEFAULT })
}

/// The cache's new text: `t` under `key`, then the other keys' entries.
fn write_cache(old: &str, key: &str, t: &Thresholds) -> String {
    let shared = if t.cma_shared { "cma" } else { "stream" };
    let mut text = format!("{key}\neager {} {}\ncma {} {}\nshared {shared}\n", t.eager, t.heap_eager, t.cma.0, t.cma.1);
    for e in entries(old).into_iter().filter(|e| e[0] != key && e[0].starts_with(KEY_VERSION)).take(MAX_ENTRIES - 1) {
        text.push_str(&(e.join("\n") + "\n"));
    }
    text
}

/// The fastest of `reps` timings of `f`, in seconds: on a shared, noisy
/// machine interference only ever adds time, so the minimum is the estimate.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// What a hand-over is taken to cost when no second core answers.
const DEFAULT_HANDOVER: f64 = 0.2e-6;

/// One-way hand-over between two threads through a shared word: the best of
/// several short batches (a batch in which the other thread was descheduled
/// says nothing about the hardware). Measured between the first two of
/// `cpus`, each thread pinned to one, as [`cross_core`] measures: a rank
/// that its launcher bound to one core gave its mask to the thread it
/// spawned, and the two threads then took turns on that core until the
/// batch's time-out: 50 ms lost, and the default 200 ns taken instead of
/// the 30-140 ns this machine measures, which widened the margin eager
/// messages keep against CMA (see [`RDV_EXTRA_HANDOVERS`]): on a 2-vCPU
/// AMD EPYC, 7 of 7 forced calibrations of bound ranks put the eager limit
/// at 32 or 64 KiB, and with the hand-over measured 5 of 8 put it at 8 or
/// 16 KiB (the host moves between states where a 64 KiB copy between the
/// two vCPUs takes 6 or 12 us, so the rest still say 64). The default
/// where fewer than two CPUs are there to measure between.
fn handover(cpus: &[usize]) -> f64 {
    let (Some(before), [mine, theirs, ..]) = (affinity::current(), cpus) else { return DEFAULT_HANDOVER };
    if affinity::pin(*mine).is_err() {
        return DEFAULT_HANDOVER;
    }
    let theirs = *theirs;
    let word = Arc::new(AtomicU64::new(0));
    let w = word.clone();
    let (batches, rounds) = (20u64, 50u64);
    let total = batches * rounds;
    let t = std::thread::spawn(move || {
        if affinity::pin(theirs).is_err() {
            return;
        }
        for i in 0..total {
            let start = Instant::now();
            while w.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
                if start.elapsed().as_millis() > 50 {
                    return;
                }
            }
            w.store(2 * i + 2, Ordering::Release);
        }
    });
    let mut best = f64::INFINITY;
    'outer: for b in 0..batches {
        let start = Instant::now();
        for j in 0..rounds {
            let i = b * rounds + j;
            word.store(2 * i + 1, Ordering::Release);
            while word.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
                if start.elapsed().as_millis() > 50 {
                    break 'outer;
                }
            }
        }
        best = best.min(start.elapsed().as_secs_f64() / (2 * rounds) as f64);
    }
    let _ = t.join();
    let _ = affinity::set(&before);
    if best.is_finite() {
        best
    } else {
        DEFAULT_HANDOVER
    }
}

fn measure(debug: bool, cpus: &[usize]) -> Thresholds {
    let t0 = Instant::now();
    let h = handover(cpus);
    let max = 16usize << 20;
    let src = vec![1u8; max];
    let mut dst = vec![0u8; max];
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut eager = 1024usize;
    let mut heap_eager = 1024usize;
    let mut cma_sizes = Vec::new();
    let mut n = 1024usize;
    let mut log = Vec::new();
    let cross = cross_core(pid, cpus);
    let mut eager_ok = true;
    // (size, the stream's two copies, one CMA read) for `cma_saves_copies`.
    let mut work = Vec::new();
    while n <= max {
        let reps = if n <= 64 << 10 { 15 } else { 5 };
        let copy = time(reps, || dst[..n].copy_from_slice(&src[..n]));
        let chunk = time(reps, || dst[..n.min(CHUNK)].copy_from_slice(&src[..n.min(CHUNK)]));
        let cma = time(reps, || {
            let _ = goal_transport::sys::cma_read(pid, src.as_ptr() as u64, &mut dst[..n]);
        });
        let mut eager_t = h + 2.0 * copy;
        let mut stream_t = 3.0 * h + copy + chunk;
        let mut cma_t = 2.0 * h + cma;
        // From the heap the receiver copies once, after the RTS.
        if eager_t <= 2.0 * h + copy {
            heap_eager = n;
        }
        // Between two cores, where the ranks run, when that can be measured.
        let at = n.min(CROSS_MAX);
        if let Some(x) = cross.as_ref().and_then(|c| c.iter().find(|p| p.0 == at)) {
            let chunk_x = cross.as_ref().and_then(|c| c.iter().find(|p| p.0 == at.min(CHUNK))).map_or(x.1, |p| p.1);
            let scale = n as f64 / at as f64;
            eager_t = x.1 * scale;
            cma_t = x.2 * scale;
            // RTS and CTS, then the two copies overlap but for one chunk.
            stream_t = 2.0 * h + (eager_t + chunk_x) / 2.0;
            log.push(format!("{n}: copy {:.2}us cma {:.2}us; between cores: eager {:.2}us cma {:.2}us", copy * 1e6, cma * 1e6, eager_t * 1e6, cma_t * 1e6));
            // The eager path's time is its two copies, one after the other.
            work.push((n, eager_t, cma_t));
        } else {
            log.push(format!("{n}: copy {:.2}us cma {:.2}us", copy * 1e6, cma * 1e6));
            work.push((n, 2.0 * copy, cma));
        }
        if cross.is_none() {
            if eager_t <= stream_t {
                eager = n;
            }
        } else if eager_ok && eager_t <= stream_t && eager_t <= cma_t + RDV_EXTRA_HANDOVERS * h {
            eager = n;
        } else {
            // Between cores the eager range ends at the first size another
            // path beats.
            eager_ok = false;
        }
        if cma_t < stream_t {
            cma_sizes.push(n);
        }
        n *= 2;
    }
    cma_sizes.retain(|&n| n > eager);
    let cma = match (cma_sizes.first(), cma_sizes.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi),
        _ => (usize::MAX, 0),
    };
    let cma_shared = cma_saves_copies(&work);
    if debug {
        say!("goal: calibrated in {:?}: hand-over {:.0} ns; {}", t0.elapsed(), h * 1e9, log.join("; "));
        say!(
            "goal: eager limit {eager} B ({heap_eager} B from the shared heap), CMA range {cma:?}; with cores shared, exchanges by {}",
            if cma_shared { "CMA" } else { "the stream" }
        );
    }
    Thresholds { eager, heap_eager, cma, cma_shared, credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX, eager_adapt: 0 }
}

/// Sizes from which [`cma_saves_copies`] judges: those of the messages whose
/// path it decides (exchanges above the eager limit, which calibrates at
/// 8-64 KiB) and at which one copy's time is more than a system call's.
const SHARED_FROM: usize = 128 << 10;

/// Whether exchanges with cores shared go by CMA: whether one CMA read
/// costs less than [`SHARED_SLACK`] times the stream's two copies, from
/// `(size, two copies, CMA)` timings, at most of the sizes from
/// [`SHARED_FROM`] up to [`CROSS_MAX`] (larger ones are scaled from it).
/// A majority, for one size's timing can be off: on a 2-vCPU AMD EPYC,
/// one calibration had CMA lose at 2 MiB alone, another at 1, 2 and 4 MiB
/// by 3-16 %, the read costing 0.6-1.3 times the two copies there.
/// Ties go to the stream.
fn cma_saves_copies(work: &[(usize, f64, f64)]) -> bool {
    let judged: Vec<_> = work.iter().filter(|w| (SHARED_FROM..=CROSS_MAX).contains(&w.0)).collect();
    let wins = judged.iter().filter(|w| w.2 < SHARED_SLACK * w.1).count();
    2 * wins > judged.len()
}

/// How much more than the stream's two copies (measured between two
/// cores, one after the other) one CMA read may cost and still carry
/// exchanges with cores shared. The copies are not all the stream costs
/// there: it moves only while sender and receiver are both on a CPU, a
/// window at a time, and two ranks sharing a CPU take turns for each.
/// On the AMD EPYC whose calibrations put one CMA read at 0.6-1.3 times
/// the two copies, 4 ranks on 2 CPUs took 1.2-1.4x as long by the stream
/// for allgather of 1 MiB (three runs; alltoall's moved either way); on the same host
/// two days before, where a CMA read of a MiB took 85-100 us against
/// `memcpy`'s 18-20, the stream was the faster, 0.59-0.70x (its copies
/// between cores were not recorded: the slack keeps the stream where
/// they cost less than two thirds of the read;
/// docs/measurements/shared-stream-2026-12-04, shared-work-2026-12-06).
/// Known weak: on that host in a state like the second (a read of a MiB
/// 91-96 us, `memcpy` 23-24), the read measured 0.65-1.38 times the two
/// copies from one calibration to the next and the rule took CMA in 10
/// of 11, where the stream carried every exchange of 4 MiB 0.74-0.95x as
/// long and allgather of 1 MiB 1.12-1.53x (shared-slack-2026-12-06): no
/// threshold on this timing tells the two states apart.
const SHARED_SLACK: f64 = 1.5;

/// Between cores, eager messages stay eager unless CMA is faster by this
/// many hand-overs: the measurement's rendezvous is a bare hand-over and a
/// kernel copy, a real one also sends an RTS and a FIN through the rings
/// (several cache lines each way), matches the RTS and enters the kernel.
/// Here (hand-over 61 ns) the measurement put eager 0.2-0.4 us behind CMA
/// at 4 KiB and 0.8-1.0 us at 8 KiB, while in the collectives 4 KiB went
/// faster eager (2 ranks, five alternations: allgather and alltoall 1.2 us
/// eager against 1.5, allreduce 1.4 against 1.5, bcast 1.0 against 1.1)
/// and 8 KiB slower (1.9 against 1.6). The earlier rule, CMA 1.25 times
/// faster, drew the line at 2 KiB.
const RDV_EXTRA_HANDOVERS: f64 = 10.0;

/// Sizes measured between two cores reach this far; larger ones scale it.
const CROSS_MAX: usize = 4 << 20;

/// One-way times between two threads on two different CPUs, as the ranks
/// of a job run, for sizes from 1 KiB to [`CROSS_MAX`]: `(bytes, eager,
/// cma)` in seconds, each with its hand-over. *eager*: the sender copies
/// into a shared buffer that moves on like a ring, the receiver copies out;
/// *cma*: the receiver reads the sender's buffer with `process_vm_readv`.
/// The two threads ping-pong, so a round trip is two messages, and the
/// data stay as they are between messages, as in the benchmarks that MPI
/// libraries are compared by (OSU, IMB, and goal's own).
///
/// Measured within one thread (as before this), a copy's source and
/// destination sit in one core's cache, and on a machine whose cores are
/// far apart (60-80 ns for a cache line) the two-copy eager path looked
/// faster than CMA up to 64 KiB, where between cores it takes twice as long
/// from 8 KiB on (16 KiB: 4.2 against 1.7 us). When the sender rewrites its
/// data before every message, CMA loses instead (16 KiB: 6.1 against 4.6
/// us; its reads leave the data shared with the receiver's cache, and the
/// rewrite must take it back): from 64 KiB the choice between stream and
/// CMA is made per message from what transfers take (`adapt`), below it
/// this is the choice, for unchanged data as Open MPI makes it too.
/// `cpus` are the CPUs of the ranks here (the union of their masks: a
/// rank bound to one core still measures between two). `None` when they
/// have only one, or the partner does not answer (then the ranks share
/// cores and the in-thread figures are the right ones).
fn cross_core(pid: i32, cpus: &[usize]) -> Option<Vec<(usize, f64, f64)>> {
    let before = affinity::current()?;
    if cpus.len() < 2 {
        return None;
    }
    let (mine, theirs) = (cpus[0], cpus[1]);
    affinity::pin(mine).ok()?;
    let ring = (2 * CROSS_MAX).max(256 << 10);
    // Per direction (to the partner, back): the sender's data, the ring,
    // the receiver's buffer. Filled now, so that no page is first touched
    // while timing.
    let mut bufs: Vec<Vec<u8>> = (0..6).map(|i| vec![i as u8 + 1; if i % 3 == 1 { ring } else { CROSS_MAX }]).collect();
    let ptrs: Vec<usize> = bufs.iter_mut().map(|b| b.as_mut_ptr() as usize).collect();
    let word = Arc::new(AtomicU64::new(0));
    let cmd = Arc::new(AtomicU64::new(0));
    let (w, c) = (word.clone(), cmd.clone());
    let p = ptrs.clone();
    let partner = std::thread::spawn(move || {
        if affinity::pin(theirs).is_err() {
            return;
        }
        let mut seen = 0u64;
        loop {
            let Some(v) = wait_for(&w, |v| v != seen && v % 2 == 1) else { return };
            let c = c.load(Ordering::Acquire);
            if c == 0 {
                return;
            }
            // SAFETY: storing `v` handed this thread the first direction's
            // buffers to read and the second's to write, until it stores
            // `v + 1`; message `v - 1` came, message `v` goes.
            unsafe { one_way(pid, c, &p[..3], &p[3..], ring, v as usize - 1) };
            seen = v + 1;
            w.store(v + 1, Ordering::Release);
        }
    });
    let mut out = Vec::new();
    let mut k = 0u64;
    let mut n = 1024usize;
    'sizes: while n <= CROSS_MAX {
        let reps = if n <= 64 << 10 { 15 } else { 4 };
        let mut best = [f64::INFINITY; 2];
        for (mode, b) in best.iter_mut().enumerate() {
            cmd.store((n as u64) << 1 | mode as u64, Ordering::Release);
            for _ in 0..reps + 1 {
                let t = Instant::now();
                word.store(2 * k + 1, Ordering::Release);
                if wait_for(&word, |v| v == 2 * k + 2).is_none() {
                    out.clear();
                    break 'sizes;
                }
                // SAFETY: the partner handed the buffers back (it stored
                // `2k + 2`); this thread reads the second direction's and
                // writes the first's until the next hand-over.
                unsafe { one_way(pid, (n as u64) << 1 | mode as u64, &ptrs[3..], &ptrs[..3], ring, 2 * k as usize + 1) };
                k += 1;
                *b = b.min(t.elapsed().as_secs_f64() / 2.0);
            }
        }
        out.push((n, best[0], best[1]));
        n *= 2;
    }
    cmd.store(0, Ordering::Release);
    word.store(2 * k + 1, Ordering::Release);
    let _ = partner.join();
    let _ = affinity::set(&before);
    drop(bufs);
    (!out.is_empty()).then_some(out)
}

/// Spins until `ok` holds for `w` (returned), or 200 ms pass (`None`).
fn wait_for(w: &AtomicU64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    let start = Instant::now();
    loop {
        for _ in 0..1024 {
            let v = w.load(Ordering::Acquire);
            if ok(v) {
                return Some(v);
            }
            std::hint::spin_loop();
        }
        if start.elapsed().as_millis() > 200 {
            return None;
        }
    }
}

/// Message `seq` of [`cross_core`] arrives, and message `seq + 1` leaves:
/// `cmd` is `bytes << 1 | cma`; `from` are the incoming direction's
/// sender data, ring and receiver buffer, `to` the outgoing one's.
///
/// # Safety
/// The buffers are live, data and receiver buffers `CROSS_MAX` bytes and
/// rings `ring`, and no other thread touches `from`'s ring and receiver
/// buffer or `to`'s data and ring until the next hand-over.
unsafe fn one_way(pid: i32, cmd: u64, from: &[usize], to: &[usize], ring: usize, seq: usize) {
    let n = (cmd >> 1) as usize;
    let cma = cmd & 1 == 1;
    let slot = |s: usize| if n <= ring / 4 { (s % (ring / n)) * n } else { 0 };
    // SAFETY: the caller's guarantees; `slot(_) + n <= ring`, `n <= CROSS_MAX`.
    unsafe {
        let dst = std::slice::from_raw_parts_mut(from[2] as *mut u8, n);
        if cma {
            let _ = goal_transport::sys::cma_read(pid, from[0] as u64, dst);
        } else {
            dst.copy_from_slice(std::slice::from_raw_parts((from[1] as *const u8).add(slot(seq)), n));
        }
        if !cma {
            let data = std::slice::from_raw_parts(to[0] as *const u8, n);
            std::slice::from_raw_parts_mut((to[1] as *mut u8).add(slot(seq + 1)), n).copy_from_slice(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_names_the_hardware_not_the_host_name() {
        let key = machine_key();
        assert!(key.starts_with(KEY_VERSION) && key.contains(" cpus|") && key.contains(" GiB|"), "{key}");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let host = host.trim();
        // (A host name may happen to be a word of the CPU's model.)
        if host.len() > 3 {
            assert!(!key.contains(host), "{key} names the host {host}");
        }
        assert_eq!(key, machine_key());
    }

    #[test]
    fn the_cache_keeps_an_entry_per_kind_of_machine() {
        let t = |e: usize| Thresholds { eager: e, heap_eager: e / 2, cma: (1 << 20, 4 << 20), cma_shared: e > 4096, ..DEFAULT };
        let text = write_cache("v3|vm|old format|2\neager 1 1\ncma 1 1\n", "v4|a", &t(4096));
        let text = write_cache(&text, "v4|b", &t(65536));
        let text = write_cache(&text, "v4|a", &t(8192));
        assert_eq!(entries(&text).len(), 2, "{text}");
        assert_eq!(read_cache(&text, "v4|a").map(|t| (t.eager, t.heap_eager, t.cma, t.cma_shared)), Some((8192, 4096, (1 << 20, 4 << 20), true)));
        assert_eq!(read_cache(&text, "v4|b").map(|t| t.eager), Some(65536));
        assert!(read_cache(&text, "v3|vm|old format|2").is_none());
        let stream = write_cache("", "v4|c", &t(4096));
        assert!(stream.contains("\nshared stream\n"), "{stream}");
        assert_eq!(read_cache(&stream, "v4|c").map(|t| t.cma_shared), Some(false));
        assert!(read_cache(&stream.replace("shared stream", "shared both"), "v4|c").is_none(), "an unknown path is no entry");
        let mut many = String::new();
        for i in 0..40 {
            many = write_cache(&many, &format!("v4|{i}"), &t(i));
        }
        assert_eq!(entries(&many).len(), MAX_ENTRIES);
        assert_eq!(read_cache(&many, "v4|39").map(|t| t.eager), Some(39));
    }

    /// A rank bound to one core (goalrun's default) still measures the
    /// hand-over between two, and keeps its binding.
    #[test]
    fn a_bound_rank_measures_the_hand_over_between_two_cpus() {
        let Some(before) = affinity::current() else { return };
        let online = affinity::cpus(&before);
        if online.len() < 2 {
            return;
        }
        affinity::pin(online[0]).unwrap();
        let h = handover(&online[..2]);
        let after = affinity::current().map(|s| affinity::cpus(&s));
        affinity::set(&before).unwrap();
        assert!(h != DEFAULT_HANDOVER && h < 20e-6, "hand-over {h} s: not measured between CPUs {:?}", &online[..2]);
        assert_eq!(after, Some(vec![online[0]]), "the calibrating thread's binding changed");
        assert_eq!(handover(&online[..1]), DEFAULT_HANDOVER, "one CPU has nothing to measure between");
    }

    #[test]
    fn measured_thresholds_cross_the_bootstrap_unchanged() {
        for cma_shared in [false, true] {
            let t = Thresholds { eager: 65536, heap_eager: 2048, cma: (usize::MAX, 0), cma_shared, ..DEFAULT };
            let back = decode(&encode(&t)).unwrap();
            assert_eq!((back.eager, back.heap_eager, back.cma, back.cma_shared), (t.eager, t.heap_eager, t.cma, cma_shared));
        }
        assert!(decode(&[]).is_none());
    }

    /// With cores shared the copies' CPU time decides, by a majority of the
    /// sizes from 128 KiB to 4 MiB, CMA given its slack: a calibration of a
    /// 2-vCPU AMD EPYC (us between the vCPUs: the eager path's two copies,
    /// one CMA read) takes CMA, though CMA's latency lost at every size but
    /// 32 KiB, and so does one where CMA lost by 3-16 % at three sizes.
    #[test]
    fn with_cores_shared_the_cheaper_copies_decide_by_a_majority_of_sizes() {
        let epyc = [
            (32 << 10, 5.09, 4.39),
            (64 << 10, 6.70, 6.95),
            (128 << 10, 12.50, 12.23),
            (256 << 10, 38.80, 23.82),
            (512 << 10, 53.80, 49.45),
            (1 << 20, 132.81, 99.00),
            (2 << 20, 157.10, 201.90),
            (4 << 20, 905.39, 855.96),
            (8 << 20, 1810.78, 1711.93),
        ];
        assert!(cma_saves_copies(&epyc));
        let close = [(128 << 10, 13.17, 12.23), (256 << 10, 32.79, 29.32), (512 << 10, 49.23, 47.49), (1 << 20, 81.47, 92.27), (2 << 20, 180.12, 208.36), (4 << 20, 984.92, 1016.57)];
        assert!(cma_saves_copies(&close));
        // Where a CMA read costs more than two copies at most sizes (one
        // noisy win at 1 MiB, the small sizes ignored): the stream.
        let slow: Vec<_> = epyc.iter().map(|&(n, two, cma)| (n, two, if n == 1 << 20 || n < SHARED_FROM { cma / 4.0 } else { 1.6 * two })).collect();
        assert!(!cma_saves_copies(&slow));
        // Half the judged sizes at the slack or beyond, and nothing measured:
        // the stream.
        let tie: Vec<_> = epyc.iter().map(|&(n, two, _)| (n, two, if n < 1 << 20 { two } else { SHARED_SLACK * two })).collect();
        assert!(!cma_saves_copies(&tie) && !cma_saves_copies(&[]));
    }
}
