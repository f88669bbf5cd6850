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
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {line}: {e}"));
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let mut stderr = Vec::new();
    let _ = err.read_to_end(&mut stderr);
    let deadline = Instant::now() + limit;
    let status = loop {
        match child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for {line}: {e}"))
        {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{line} ran longer than {limit:?}; stderr:\n{}",
                    String::from_utf8_lossy(&stderr)
                );
            }
            None => thread::sleep(Duration::from_millis(20)),
        }
    };
    Output {
        status,
        stdout: reader.join().expect("reader thread"),
        stderr,
    }
}

/// Runs `cmd` (at most 30 s), insists on success, returns its stdout.
pub fn stdout_of(cmd: &mut Command) -> String {
    let line = format!("{cmd:?}");
    let out = run_with_limit(cmd, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{line} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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
