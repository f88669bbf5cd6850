//! A cheap clock for the coarse timing decisions on the Run and Wait path.
//!
//! Run and Wait read a clock two or three times per call: how long since
//! the previous Run, whether the application computed between a Run and
//! its Wait, how long a Wait has polled. None of these needs more than
//! microsecond accuracy, and the clock was a sixth of an 8-byte barrier
//! between two ranks (perf: `clock_gettime` 23 ns per call in this VM's
//! vDSO, against 9.6 ns for `rdtsc` and a 290 ns barrier). So on x86-64,
//! where the kernel itself keeps time with the TSC, ticks are TSC cycles,
//! converted with a rate measured once against `CLOCK_MONOTONIC`;
//! elsewhere, or when the kernel's clock source is not the TSC (whose
//! rate may then not be constant), they are nanoseconds of
//! `CLOCK_MONOTONIC`. A wrong reading can only make a heuristic guess
//! wrong (a helper rung or not, a poll a little longer); nothing waits for
//! a tick deadline without also sleeping in the kernel with a real one.

use std::sync::OnceLock;
use std::time::Duration;

/// Ticks per microsecond, and whether ticks are TSC cycles.
struct Rate {
    per_us: f64,
    tsc: bool,
}

static RATE: OnceLock<Rate> = OnceLock::new();

#[inline]
fn rate() -> &'static Rate {
    RATE.get_or_init(measure)
}

#[cfg(target_arch = "x86_64")]
fn measure() -> Rate {
    let source = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap_or_default();
    if source.trim() != "tsc" {
        return Rate { per_us: 1000.0, tsc: false };
    }
    // 200 us against CLOCK_MONOTONIC: the rate to well under 1 %.
    let (n0, c0) = (crate::localop::monotonic_ns(), tsc());
    let mut n1 = n0;
    while n1 - n0 < 200_000 {
        n1 = crate::localop::monotonic_ns();
    }
    let c1 = tsc();
    let per_us = (c1.wrapping_sub(c0)) as f64 / ((n1 - n0) as f64 / 1000.0);
    if per_us.is_finite() && per_us > 1.0 {
        Rate { per_us, tsc: true }
    } else {
        Rate { per_us: 1000.0, tsc: false }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn measure() -> Rate {
    Rate { per_us: 1000.0, tsc: false }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Measures the rate now (about 200 us), so that no Run pays for it.
pub(crate) fn init() {
    let _ = rate();
}

/// The current time in ticks.
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if rate().tsc {
        return tsc();
    }
    crate::localop::monotonic_ns()
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`,
/// a system call: no vDSO serves it), or 0 if the kernel refuses it.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// A number that tells the calling thread from the others while it lives
/// (the address of a thread-local), without a system call.
pub(crate) fn thread_key() -> usize {
    thread_local!(static KEY: u8 = const { 0 });
    KEY.with(|k| k as *const u8 as usize)
}

/// `d` in ticks.
pub(crate) fn of(d: Duration) -> u64 {
    (d.as_secs_f64() * 1e6 * rate().per_us).min(u64::MAX as f64) as u64
}

/// `ticks` as a duration (for tests: the paths that read ticks compare
/// them with limits converted by [`of`]).
#[cfg(test)]
pub(crate) fn duration(ticks: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / rate().per_us / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_follow_the_monotonic_clock() {
        init();
        let (t0, n0) = (now(), crate::localop::monotonic_ns());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, n1) = (now(), crate::localop::monotonic_ns());
        let measured = duration(t1 - t0).as_secs_f64();
        let real = (n1 - n0) as f64 / 1e9;
        assert!((measured / real - 1.0).abs() < 0.05, "ticks say {measured} s, CLOCK_MONOTONIC {real} s");
        let back = duration(of(Duration::from_millis(1))).as_secs_f64();
        assert!((back / 1e-3 - 1.0).abs() < 0.01, "1 ms in ticks and back: {back} s");
    }
}
