//! `goal noise` injects what it says: the real binary, started as the
//! benchmark drivers start it, stopped by SIGTERM, its CPU time read from
//! `/proc/PID/stat` by this test (not only from its own report) and set
//! against what the kind promises, its detour threads' CPUs read from
//! `/proc/PID/task/*/status`.
//!
//! The bounds are wide, so that a busy 2-core machine passes (its other
//! work takes CPU from the noise as from anything else, and delays the
//! noise's wake-ups), and still fail what matters: noise that does not
//! run, that runs on every CPU when it should run on one, that spins whole
//! periods instead of detours, drifts, or does not stop when told.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GOAL: &str = env!("CARGO_BIN_EXE_goal");

/// A field of a one-line JSON object, as text (numbers and flat lists).
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let at = line.find(&format!("\"{name}\": ")).unwrap_or_else(|| panic!("no {name} in {line}")) + name.len() + 4;
    let rest = &line[at..];
    let end = if rest.starts_with('[') { rest.find(']').unwrap() + 1 } else { rest.find([',', '}']).unwrap() };
    &rest[..end]
}

fn num(line: &str, name: &str) -> f64 {
    field(line, name).trim_matches('"').parse().unwrap_or_else(|_| panic!("{name} of {line}"))
}

/// The process' user + system CPU time, from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis: utime is the 14th
    // field of the line, the 12th after it.
    let after: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    // SAFETY: sysconf takes a constant and has no other effect.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (after[11].parse::<f64>().unwrap() + after[12].parse::<f64>().unwrap()) / hz
}

/// Starts `goal noise KIND` and waits for its ready line.
fn start(kind: &str) -> (Child, BufReader<std::process::ChildStdout>, String) {
    let mut child = Command::new(GOAL).args(["noise", kind]).stdout(Stdio::piped()).spawn().expect("start goal noise");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert!(ready.contains("\"ready\": true"), "{kind}: {ready}");
    (child, out, ready)
}

/// Lets it run `secs`, reads its CPU time, stops it with SIGTERM; returns
/// (the CPU time read from /proc, its final report).
fn stop_after(mut child: Child, mut out: BufReader<std::process::ChildStdout>, secs: f64) -> (f64, String) {
    std::thread::sleep(Duration::from_secs_f64(secs));
    let cpu = cpu_seconds(child.id());
    // SAFETY: kill takes a pid of our unreaped child and a signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "goal noise took {:?} to stop", t.elapsed());
    assert!(status.success(), "{status}");
    let mut report = String::new();
    out.read_line(&mut report).unwrap();
    (cpu, report)
}

/// The CPUs of the process' threads named `goal-noise-*`, by name.
fn thread_cpus(pid: u32) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap_or_default();
        let get = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).unwrap_or("").trim().to_string();
        let name = get("Name:");
        if name.starts_with("goal-noise-") {
            found.push((name, get("Cpus_allowed_list:")));
        }
    }
    found.sort();
    found
}

#[test]
fn periodic_detours_take_their_share_of_every_cpu_and_no_more() {
    for (kind, detour, period) in [("detour:100us/1ms", 100e-6, 1e-3), ("detour:25us/250us", 25e-6, 250e-6)] {
        let (child, out, ready) = start(kind);
        let cpus = field(&ready, "cpus").trim_matches(['[', ']']).split(", ").count();
        // One thread per CPU, each pinned to its own.
        let threads = thread_cpus(child.id());
        assert_eq!(threads.len(), cpus, "{kind}: {threads:?}");
        for (name, list) in &threads {
            assert_eq!(name.strip_prefix("goal-noise-").unwrap(), list, "{kind}: thread {name} may run on {list}");
        }
        let (cpu, report) = stop_after(child, out, 1.5);
        let secs = num(&report, "seconds");
        let expected = detour / period * secs * cpus as f64;
        assert!((num(&report, "expected_cpu_s") - expected).abs() < 0.01 * expected + 1e-3, "{kind}: {report}");
        // Its CPU time, as the kernel counts it: its share, not nothing
        // and not whole periods (10x); a busy machine delays wake-ups, and
        // each wake-up costs CPU of its own: on a VM whose host made timer
        // wake-ups dear, 34 us per period of 250 us (0.71 s of CPU for
        // 0.30 s of detours, 2026-12-02; the benchmarks report what was
        // injected beside what was asked).
        assert!(cpu > 0.25 * expected && cpu < 4.0 * expected + 0.1, "{kind}: {cpu:.3} s of CPU in {secs:.2} s on {cpus} CPUs, expected {expected:.3}: {report}");
        // No drift: every period of the run is either run or counted missed.
        let due = secs / period * cpus as f64;
        let (periods, missed) = (num(&report, "periods"), num(&report, "missed"));
        assert!((periods + missed - due).abs() < 0.05 * due + 2.0 * cpus as f64, "{kind}: {periods} run + {missed} missed periods, {due:.0} due: {report}");
        assert!(periods > 0.25 * due, "{kind}: most periods missed: {report}");
        // Each run period spun its detour, measured from its wake-up.
        let spun = num(&report, "spun_s");
        assert!(spun >= periods * detour * 0.999 && spun < periods * detour * 3.0 + 0.05, "{kind}: spun {spun} s in {periods} periods: {report}");
    }
}

#[test]
fn busy_is_one_cpu_bound_thread() {
    let (child, out, _) = start("busy");
    assert_eq!(thread_cpus(child.id()).len(), 1);
    let (cpu, report) = stop_after(child, out, 1.5);
    let secs = num(&report, "seconds");
    assert!(cpu > 0.25 * secs && cpu < 1.2 * secs + 0.1, "busy: {cpu:.3} s of CPU in {secs:.2} s: {report}");
}

#[test]
fn a_duration_ends_it_and_bad_kinds_are_named() {
    let t = Instant::now();
    let out = Command::new(GOAL).args(["noise", "detour:10us/1ms", "--duration", "0.3", "--cpus", "0"]).output().unwrap();
    assert!(out.status.success() && t.elapsed() < Duration::from_secs(5), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() == 2 && text.contains("\"cpus\": [0]"), "{text}");
    for (bad, says) in [("oversub", "more ranks than the CPUs"), ("detour:1ms/1ms", "shorter than its period"), ("hum", "unknown noise 'hum'")] {
        let out = Command::new(GOAL).args(["noise", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{bad}: {out:?}");
    }
}
