//! What the integration tests share: building a cluster or skipping, and
//! running a command with a time limit and a readable failure.
//!
//! Every test needs root and a kernel with network namespaces; without them
//! it prints `skipped: <reason>` and passes, so `cargo test` stays green on
//! a developer's laptop and still means something as root in CI.

#![allow(dead_code)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use goal_netns::{Cluster, Spec};

/// The `goal-cluster` binary: the probe for `measure_tcp`, and the CLI.
pub const GOAL_CLUSTER: &str = env!("CARGO_BIN_EXE_goal-cluster");

/// Whether clusters can be built here; prints why not.
pub fn can_build(test: &str) -> bool {
    match goal_netns::available() {
        Ok(()) => true,
        Err(why) => {
            println!("skipped: {test}: {why}");
            false
        }
    }
}

/// The cluster of `spec`, or `None` (after printing why) when this machine
/// cannot build one.
pub fn cluster(test: &str, spec: &Spec) -> Option<Cluster> {
    can_build(test).then(|| {
        Cluster::create(spec).unwrap_or_else(|e| panic!("{test}: creating the cluster: {e}"))
    })
}

/// The probe binary as a path.
pub fn probe() -> &'static Path {
    Path::new(GOAL_CLUSTER)
}

/// Runs `cmd` with no stdin, killing it after `limit`; returns its output.
pub fn run_with_limit(cmd: &mut Command, limit: Duration) -> Output {
    let line = format!("{cmd:?}");
    match run_until(cmd, limit) {
        Ran::Exited(out) => out,
        Ran::Killed(out) => panic!(
            "{line} ran longer than {limit:?}; stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// How a command run by [`run_until`] ended.
pub enum Ran {
    /// By itself: its status and everything it wrote.
    Exited(Output),
    /// Killed at the limit: what it had written by then (the status is the kill's).
    Killed(Output),
}

/// Runs `cmd` with no stdin, killing it after `limit`.
///
/// Both pipes are read on threads of their own, which are not waited for
/// once the command is killed: a process it started (an MPI launcher's
/// proxies, the ranks) may hold them open for as long as it lives, and
/// reading them to their end first, as this did before, let a job that
/// never exited hold the test past any limit (an MPICH rank spinning in
/// `MPI_Finalize` for eight minutes, until killed by hand).
pub fn run_until(cmd: &mut Command, limit: Duration) -> Ran {
    let line = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {line}: {e}"));
    let collect = |mut pipe: Box<dyn Read + Send>| {
        let got = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&got);
        let done = thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&chunk[..n]);
            }
        });
        (got, done)
    };
    let (stdout, out_done) = collect(Box::new(child.stdout.take().expect("piped")));
    let (stderr, err_done) = collect(Box::new(child.stderr.take().expect("piped")));
    let taken = |v: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *v.lock().unwrap_or_else(|e| e.into_inner()));
    let deadline = Instant::now() + limit;
    loop {
        match child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for {line}: {e}"))
        {
            Some(status) => {
                // Exited: the pipes end once its own children are gone too;
                // give them a moment, then take what came.
                let until = Instant::now() + Duration::from_secs(5);
                while !(out_done.is_finished() && err_done.is_finished()) && Instant::now() < until {
                    thread::sleep(Duration::from_millis(10));
                }
                return Ran::Exited(Output { status, stdout: taken(&stdout), stderr: taken(&stderr) });
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let status = child.wait().unwrap_or_else(|e| panic!("waiting for {line}: {e}"));
                thread::sleep(Duration::from_millis(100));
                return Ran::Killed(Output { status, stdout: taken(&stdout), stderr: taken(&stderr) });
            }
            None => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Runs `cmd` (at most 30 s), insists on success, returns its stdout.
pub fn stdout_of(cmd: &mut Command) -> String {
    let line = format!("{cmd:?}");
    let out = run_with_limit(cmd, Duration::from_secs(30));
    assert_ran(&line, &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails, with both outputs, unless the command `line` exited successfully.
pub fn assert_ran(line: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{line} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The named network namespaces.
pub fn namespaces() -> Vec<String> {
    let out = stdout_of(Command::new("ip").args(["netns", "list"]));
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The interfaces of the root namespace.
pub fn root_links() -> Vec<String> {
    let out = stdout_of(Command::new("ip").args(["-o", "link", "show"]));
    out.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(str::to_owned)
        .collect()
}
