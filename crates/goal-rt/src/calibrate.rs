//! Protocol thresholds measured on the machine goal runs on.
//!
//! Which path a large message takes between local ranks depends on numbers
//! that differ from machine to machine: how fast memcpy is at each size, how
//! fast Cross Memory Attach (`process_vm_readv`) is, and what a hand-over
//! between two cores costs. On the machine goal was developed on, CMA reads
//! at a quarter of memcpy's speed, so a pipelined two-copy path (sender and
//! receiver copying chunks at the same time) beats it; elsewhere it may not.
//!
//! So at the first `GOAL_Init` on a machine, one rank measures (a few tens of
//! milliseconds; the others wait on a file lock rather than disturb it) and
//! writes the result to `$XDG_CACHE_HOME/goal/calibration` (or
//! `~/.cache/goal/`, else `/tmp`), keyed by host, CPU model, kernel and core
//! count. The model, with `h` the one-way hand-over time and `copy(n)`,
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
//! for the sizes where `cma < stream`. Buffers from `GOAL_Alloc` above the
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
const DEFAULT: Thresholds = Thresholds { eager: 8 << 10, heap_eager: 4 << 10, cma: (usize::MAX, 0), credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX };

/// The measured (or cached) thresholds; `credit` is filled in by the caller.
pub(crate) fn thresholds(debug: bool, cpus: &[usize]) -> Thresholds {
    use crate::config::{calibrate_mode, Calibrate};
    // `Config::from_env` has refused a bad value already.
    let mode = calibrate_mode().unwrap_or(Calibrate::Cached);
    if mode == Calibrate::Off {
        return DEFAULT;
    }
    let key = machine_key(cpus.len());
    let Some(dir) = cache_dir() else { return measure(debug, cpus) };
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("calibration");
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("calibration.lock"));
    let _guard = lock.ok().map(FileLock::new);
    if mode != Calibrate::Force {
        if let Some(t) = read_cache(&path, &key) {
            return t;
        }
    }
    let t = measure(debug, cpus);
    let text = format!("{key}\neager {} {}\ncma {} {}\n", t.eager, t.heap_eager, t.cma.0, t.cma.1);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes())).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
    t
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

fn machine_key(cores: usize) -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo").lines().find(|l| l.starts_with("model name")).unwrap_or("").to_string();
    let host = read("/proc/sys/kernel/hostname").trim().to_string();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    format!("v2|{host}|{}|{kernel}|{cores}", cpu.split(':').nth(1).unwrap_or("").trim())
}

fn read_cache(path: &std::path::Path, key: &str) -> Option<Thresholds> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != key {
        return None;
    }
    let mut e = lines.next()?.strip_prefix("eager ")?.split(' ');
    let eager: usize = e.next()?.parse().ok()?;
    let heap_eager: usize = e.next()?.parse().ok()?;
    let mut cma = lines.next()?.strip_prefix("cma ")?.split(' ');
    let lo: usize = cma.next()?.parse().ok()?;
    let hi: usize = cma.next()?.parse().ok()?;
    Some(Thresholds { eager, heap_eager, cma: (lo, hi), credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX })
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
/// says nothing about the hardware).
fn handover() -> f64 {
    let word = Arc::new(AtomicU64::new(0));
    let w = word.clone();
    let (batches, rounds) = (20u64, 50u64);
    let total = batches * rounds;
    let t = std::thread::spawn(move || {
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
    if best.is_finite() {
        best
    } else {
        DEFAULT_HANDOVER
    }
}

fn measure(debug: bool, cpus: &[usize]) -> Thresholds {
    let t0 = Instant::now();
    let h = handover();
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
        } else {
            log.push(format!("{n}: copy {:.2}us cma {:.2}us", copy * 1e6, cma * 1e6));
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
    if debug {
        say!("goal: calibrated in {:?}: hand-over {:.0} ns; {}", t0.elapsed(), h * 1e9, log.join("; "));
        say!("goal: eager limit {eager} B ({heap_eager} B from the shared heap), CMA range {cma:?}");
    }
    Thresholds { eager, heap_eager, cma, credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX }
}

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
