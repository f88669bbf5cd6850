//! `goal noise KIND [--duration S] [--cpus LIST]`: makes a machine busy in
//! a known way, for the benchmark drivers' `--noise` (bench/noise.py) and
//! for anyone who wants to see how a job fares beside other work.
//!
//! Kinds:
//!
//! - `busy`: one CPU-bound thread, not pinned: a competing process such as
//!   a monitoring daemon gone wild or a data loader, which the scheduler
//!   puts wherever it likes.
//! - `detour:D/P` (e.g. `detour:100us/1ms`): on every CPU (of `--cpus`,
//!   default every CPU this process may use) a thread pinned there that
//!   wakes every period P and spins for the detour D: periodic OS noise as
//!   Hoefler et al. measured it and LogGOPSim injects it. Wake-ups are
//!   absolute (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` at
//!   start + k*P), so the noise does not drift however late a wake-up is;
//!   a wake-up later than the next period skips the periods it missed
//!   (counted) instead of spinning them back to back. The detour is
//!   measured from the actual wake-up, so each period takes exactly D of
//!   CPU time from whatever else would run there.
//!
//! (`oversub`, the drivers' fourth kind, is no process: the drivers run the
//! job with more ranks than the CPUs it is given.)
//!
//! It runs until SIGTERM or SIGINT, or for `--duration` seconds. Once every
//! thread runs it prints one JSON line, `{"ready": true, ...}`, and at the
//! end one with what it injected: wall time, the CPU time the process used
//! (`getrusage`), the time spent spinning, the periods run and missed, and
//! what the kind promises (`expected_cpu_s`: D/P x seconds x CPUs, or the
//! seconds for `busy`), so a caller can check one against the other. The
//! threads are tasks of one process (their CPU time is the process'
//! `/proc/PID/stat` utime); each detour thread is pinned to its CPU.

use std::ffi::OsString;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Context, Failure};

const HELP: &str = "\
Usage: goal noise KIND [--duration S] [--cpus LIST]

Makes this machine busy in a known way until SIGTERM/SIGINT (or for S
seconds), for the benchmarks' --noise and for trying a job beside other work.

Kinds:
  busy              one CPU-bound thread, not pinned
  detour:D/P        on every CPU: a thread pinned there that wakes every P and
                    spins for D (e.g. detour:100us/1ms, detour:25us/250us;
                    units ns, us, ms, s), on absolute deadlines: no drift

Options:
  --duration S      stop after S seconds (default: at SIGTERM or SIGINT)
  --cpus LIST       the CPUs of detour's threads (default: every CPU this
                    process may use), as 0-3,8
  -h, --help        print this help

Prints a JSON line {\"ready\": true, ...} once every thread runs, and at the
end one with what was injected: seconds, cpu_s (this process' CPU time),
spun_s, periods, missed, expected_cpu_s (D/P x seconds x CPUs; busy: the
seconds). Exit status 0, or 2 for a usage mistake.
";

/// What to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Busy,
    Detour { detour: Duration, period: Duration },
}

/// A duration such as `100us`, `1ms`, `250us`, `2s`, `500ns`.
fn duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    (n.is_finite() && n > 0.0).then(|| Duration::from_secs_f64(n * scale))
}

impl Kind {
    pub(crate) fn parse(text: &str) -> Result<Kind, String> {
        if text == "busy" {
            return Ok(Kind::Busy);
        }
        if text == "oversub" {
            return Err("'oversub' is not a process to start: the bench drivers' --noise oversub runs the job with more ranks than the CPUs it is given".into());
        }
        let Some(spec) = text.strip_prefix("detour:") else {
            return Err(format!("unknown noise '{text}': busy or detour:D/P (e.g. detour:100us/1ms)"));
        };
        let (d, p) = spec.split_once('/').ok_or_else(|| format!("'{text}': detour:D/P wants a detour and a period, as detour:100us/1ms"))?;
        let (detour, period) = match (duration(d), duration(p)) {
            (Some(d), Some(p)) => (d, p),
            _ => return Err(format!("'{text}': D and P are durations with a unit (ns, us, ms, s), as detour:100us/1ms")),
        };
        if detour >= period {
            return Err(format!("'{text}': the detour must be shorter than its period"));
        }
        if period < Duration::from_micros(10) {
            return Err(format!("'{text}': a period under 10 us is more than a timer can keep"));
        }
        Ok(Kind::Detour { detour, period })
    }
}

/// What one thread did.
#[derive(Debug, Default)]
struct Tally {
    spun_ns: AtomicU64,
    periods: AtomicU64,
    missed: AtomicU64,
}

/// Runs `goal noise ARGS`.
pub(crate) fn noise(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let usage = |m: String| Failure::usage(m, "Usage: goal noise KIND [--duration S] [--cpus LIST]\nTry 'goal noise --help' for more information.".into());
    let mut kind = None;
    let mut seconds = None;
    let mut cpus = None;
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = args.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |what: &str| inline.clone().or_else(|| args.next()).ok_or_else(|| usage(format!("{name} needs {what}")));
        match name.as_str() {
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(0);
            }
            "--duration" => {
                let v = value("a number of seconds")?;
                seconds = Some(v.parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0).ok_or_else(|| usage(format!("--duration takes a positive number of seconds, not '{v}'")))?);
            }
            "--cpus" => {
                let v = value("a CPU list")?;
                cpus = Some(goal_boot::cpulist::parse_list(&v).filter(|c| !c.is_empty()).ok_or_else(|| usage(format!("--cpus takes a CPU list such as 0-3,8, not '{v}'")))?);
            }
            s if s.starts_with('-') => return Err(usage(format!("unknown option '{s}'"))),
            _ if kind.is_some() => return Err(usage(format!("one kind of noise at a time (got '{a}' too)"))),
            _ => kind = Some(Kind::parse(&a).map_err(usage)?),
        }
    }
    let kind = kind.ok_or_else(|| usage("no kind of noise given".into()))?;
    let cpus = match cpus {
        Some(c) => c,
        None => allowed().map_err(|e| Failure { code: 1, message: format!("noise: cannot read the CPUs this process may use: {e}"), hint: None })?,
    };
    run(kind, &cpus, seconds.map(Duration::from_secs_f64)).map_err(|e| Failure { code: 1, message: format!("noise: {e}"), hint: None })
}

/// Injects `kind` until a signal or `limit`; prints the ready and the
/// final JSON lines.
fn run(kind: Kind, cpus: &[usize], limit: Option<Duration>) -> io::Result<i32> {
    // Block the stop signals before any thread starts (threads inherit the
    // mask), so they arrive only where sigtimedwait takes them.
    let set = signals()?;
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<usize> = match kind {
        Kind::Busy => vec![usize::MAX],
        Kind::Detour { .. } => cpus.to_vec(),
    };
    let (started, t0) = (Arc::new(AtomicU64::new(0)), Instant::now());
    let mut handles = Vec::new();
    let mut tallies = Vec::new();
    for &cpu in &workers {
        let (stop, started, tally) = (stop.clone(), started.clone(), Arc::new(Tally::default()));
        tallies.push(tally.clone());
        let h = std::thread::Builder::new().name(format!("goal-noise-{cpu}")).spawn(move || -> io::Result<()> {
            if cpu != usize::MAX {
                pin(cpu)?;
            }
            started.fetch_add(1, Ordering::Release);
            match kind {
                Kind::Busy => busy(&stop, &tally),
                Kind::Detour { detour, period } => detours(&stop, &tally, detour, period),
            }
            Ok(())
        })?;
        handles.push(h);
    }
    while started.load(Ordering::Acquire) < workers.len() as u64 && handles.iter().all(|h| !h.is_finished()) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let label = label(kind);
    let shown: Vec<String> = cpus.iter().map(usize::to_string).collect();
    if started.load(Ordering::Acquire) == workers.len() as u64 {
        line(&format!("{{\"ready\": true, \"noise\": \"{label}\", \"pid\": {}, \"cpus\": [{}]}}", std::process::id(), shown.join(", ")));
        wait(&set, limit);
    }
    stop.store(true, Ordering::Release);
    let mut failed = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => failed = failed.or(Some(io::Error::other("a noise thread panicked"))),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let secs = t0.elapsed().as_secs_f64();
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(|t| f(t)).sum::<u64>();
    let expected = match kind {
        Kind::Busy => secs,
        Kind::Detour { detour, period } => detour.as_secs_f64() / period.as_secs_f64() * secs * workers.len() as f64,
    };
    line(&format!(
        "{{\"noise\": \"{label}\", \"cpus\": [{}], \"seconds\": {secs:.4}, \"cpu_s\": {:.4}, \"spun_s\": {:.4}, \"periods\": {}, \"missed\": {}, \"expected_cpu_s\": {expected:.4}}}",
        shown.join(", "),
        cpu_seconds(),
        sum(|t| t.spun_ns.load(Ordering::Relaxed)) as f64 * 1e-9,
        sum(|t| t.periods.load(Ordering::Relaxed)),
        sum(|t| t.missed.load(Ordering::Relaxed)),
    ));
    Ok(0)
}

/// The kind as given on the command line.
fn label(kind: Kind) -> String {
    let us = |d: Duration| {
        let ns = d.as_nanos();
        if ns.is_multiple_of(1_000_000) { format!("{}ms", ns / 1_000_000) } else if ns.is_multiple_of(1000) { format!("{}us", ns / 1000) } else { format!("{ns}ns") }
    };
    match kind {
        Kind::Busy => "busy".into(),
        Kind::Detour { detour, period } => format!("detour:{}/{}", us(detour), us(period)),
    }
}

/// One line to stdout in one write, flushed (the caller reads it at once).
fn line(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(format!("{text}\n").as_bytes());
    let _ = out.flush();
}

/// Spins until told to stop, counting its time.
fn busy(stop: &AtomicBool, tally: &Tally) {
    let t = Instant::now();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            x = x.rotate_left(7) ^ x.wrapping_mul(3);
        }
        std::hint::black_box(x);
    }
    tally.spun_ns.store(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// Every `period`, on absolute deadlines: wake, spin `detour`, sleep.
fn detours(stop: &AtomicBool, tally: &Tally, detour: Duration, period: Duration) {
    let period_ns = period.as_nanos() as u64;
    let mut next = now_ns() + period_ns;
    while !stop.load(Ordering::Relaxed) {
        sleep_until(next);
        let woke = now_ns();
        let end = woke + detour.as_nanos() as u64;
        while now_ns() < end {
            std::hint::spin_loop();
        }
        tally.spun_ns.fetch_add(now_ns() - woke, Ordering::Relaxed);
        tally.periods.fetch_add(1, Ordering::Relaxed);
        // The next deadline after now: late wake-ups skip periods.
        next += period_ns;
        let now = now_ns();
        if now >= next {
            let behind = (now - next) / period_ns + 1;
            tally.missed.fetch_add(behind, Ordering::Relaxed);
            next += behind * period_ns;
        }
    }
}

/// CLOCK_MONOTONIC in ns.
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a live timespec the kernel writes; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reaches `ns` (absolute; EINTR resumes).
fn sleep_until(ns: u64) {
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remainder
    // pointer is unused and may be null.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) } == libc::EINTR {}
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::other(format!("CPU {cpu} is beyond what a cpu_set_t holds")));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; `cpu` is below its
    // capacity (checked); pid 0 is the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("cannot pin a thread to CPU {cpu}: {e}")));
    }
    Ok(())
}

/// The CPUs this process may run on.
pub(super) fn allowed() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and
    // sched_getaffinity(0, ..) writes at most its size into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads inside the set for indices below its capacity.
    Ok((0..8 * std::mem::size_of::<libc::cpu_set_t>()).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// This process' user + system CPU time, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data; all-zero is a valid value, and
    // getrusage writes into the live struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Blocks SIGTERM, SIGINT and SIGHUP in this thread (and the threads it
/// starts); returns their set for [`wait`].
fn signals() -> io::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it, sigaddset
    // and pthread_sigmask take live pointers to it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(set)
    }
}

/// Waits for one of `set`'s signals, or until `limit` has passed.
fn wait(set: &libc::sigset_t, limit: Option<Duration>) {
    let deadline = limit.map(|l| Instant::now() + l);
    loop {
        // Without a limit, wake once a minute anyway (then wait again).
        let left = deadline.map_or(Duration::from_secs(60), |d| d.saturating_duration_since(Instant::now()));
        if deadline.is_some() && left.is_zero() {
            return;
        }
        let ts = libc::timespec { tv_sec: left.as_secs() as libc::time_t, tv_nsec: left.subsec_nanos() as libc::c_long };
        // SAFETY: `set` is an initialised sigset_t, `ts` a valid timespec;
        // the siginfo pointer may be null.
        let rc = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        if rc > 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_parsed_and_bad_ones_named() {
        assert_eq!(Kind::parse("busy"), Ok(Kind::Busy));
        assert_eq!(Kind::parse("detour:100us/1ms"), Ok(Kind::Detour { detour: Duration::from_micros(100), period: Duration::from_millis(1) }));
        assert_eq!(label(Kind::parse("detour:25us/250us").unwrap()), "detour:25us/250us");
        assert!(Kind::parse("detour:1ms/100us").unwrap_err().contains("shorter than its period"));
        assert!(Kind::parse("detour:100/1ms").unwrap_err().contains("with a unit"));
        assert!(Kind::parse("oversub").unwrap_err().contains("more ranks than the CPUs"));
        assert!(Kind::parse("loud").unwrap_err().contains("unknown noise 'loud'"));
    }
}
