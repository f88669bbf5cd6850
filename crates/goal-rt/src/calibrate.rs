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
pub(crate) fn thresholds(debug: bool) -> Thresholds {
    let mode = std::env::var("GOAL_CALIBRATE").unwrap_or_default();
    if mode == "0" || mode == "off" {
        return DEFAULT;
    }
    let key = machine_key();
    let Some(dir) = cache_dir() else { return measure(debug) };
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("calibration");
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("calibration.lock"));
    let _guard = lock.ok().map(FileLock::new);
    if mode != "force" {
        if let Some(t) = read_cache(&path, &key) {
            return t;
        }
    }
    let t = measure(debug);
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

fn machine_key() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo").lines().find(|l| l.starts_with("model name")).unwrap_or("").to_string();
    let host = read("/proc/sys/kernel/hostname").trim().to_string();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("v1|{host}|{}|{kernel}|{cores}", cpu.split(':').nth(1).unwrap_or("").trim())
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

fn measure(debug: bool) -> Thresholds {
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
    while n <= max {
        let reps = if n <= 64 << 10 { 15 } else { 5 };
        let copy = time(reps, || dst[..n].copy_from_slice(&src[..n]));
        let chunk = time(reps, || dst[..n.min(CHUNK)].copy_from_slice(&src[..n.min(CHUNK)]));
        let cma = time(reps, || {
            let _ = goal_transport::sys::cma_read(pid, src.as_ptr() as u64, &mut dst[..n]);
        });
        let eager_t = h + 2.0 * copy;
        let stream_t = 3.0 * h + copy + chunk;
        let cma_t = 2.0 * h + cma;
        if eager_t <= stream_t {
            eager = n;
        }
        // From the heap the receiver copies once, after the RTS.
        if eager_t <= 2.0 * h + copy {
            heap_eager = n;
        }
        if cma_t < stream_t {
            cma_sizes.push(n);
        }
        log.push(format!("{n}: copy {:.2}us cma {:.2}us", copy * 1e6, cma * 1e6));
        n *= 2;
    }
    let cma = match (cma_sizes.first(), cma_sizes.last()) {
        (Some(&lo), Some(&hi)) if lo > eager => (lo, hi),
        _ => (usize::MAX, 0),
    };
    if debug {
        eprintln!("goal: calibrated in {:?}: hand-over {:.0} ns; {}", t0.elapsed(), h * 1e9, log.join("; "));
        eprintln!("goal: eager limit {eager} B ({heap_eager} B from the shared heap), CMA range {cma:?}");
    }
    Thresholds { eager, heap_eager, cma, credit: 0, net_eager: 0, net_eager_one_rail: 0, adapt_from: usize::MAX }
}
