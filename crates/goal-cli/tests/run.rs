//! `goal run` as users run it: `goalrun -n N goal run FILE` on the corpus
//! files that fit this machine (every receive's bytes checked by goal run
//! itself against the senders' pattern where the file names source and
//! tag), in two progress modes; the refusals (a wrong number of processes,
//! the broken htsim file); and a hand-written ring whose figures are read
//! back from the table and the JSON.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;

use util::corpus;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// `goalrun -n N goal run ARGS` with `GOAL_PROGRESS=mode`.
fn goal_run(n: usize, mode: &str, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_goalrun"))
        .args(["-n", &n.to_string(), "--timeout", "60", "--", env!("CARGO_BIN_EXE_goal"), "run"])
        .args(args)
        .env("GOAL_PROGRESS", mode)
        .output()
        .expect("goalrun could not be started");
    Run { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into(), stderr: String::from_utf8_lossy(&out.stderr).into() }
}

fn num_ranks(p: &Path) -> usize {
    let text = std::fs::read_to_string(p).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("num_ranks")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Parses "bytes checked on X of Y receive(s)".
fn coverage(stdout: &str) -> (u64, u64) {
    let rest = stdout.split("bytes checked on ").nth(1).expect("no coverage in the table");
    let words: Vec<&str> = rest.split_whitespace().collect();
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

/// A trace-derived file of 4 ranks with about 2.9 s of calc per rank and
/// receives from -1 with tag -1 that can take each other's messages when
/// run for real: see `a_racy_trace_file_ends_either_way`.
const RACY: &str = "loggopsim2-src_schedgen_schedule.goal";

#[test]
fn every_corpus_file_of_at_most_8_ranks_runs_in_two_progress_modes() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "goal" || x == "g2"))
        .filter(|p| !p.ends_with(RACY) && num_ranks(p) <= 8)
        .collect();
    files.sort();
    assert_eq!(files.len(), 12, "{files:?}");
    for f in &files {
        let n = num_ranks(f);
        let wildcards = std::fs::read_to_string(f).unwrap().contains("-1");
        for mode in ["manual", "thread"] {
            let r = goal_run(n, mode, &["--iterations", "2", "--warmup", "1", f.to_str().unwrap()]);
            let what = format!("{} at {n} ranks, GOAL_PROGRESS={mode}", f.display());
            assert_eq!(r.code, Some(0), "{what}: {r}");
            assert!(r.stdout.contains(&format!("{n} ranks, 2 iteration(s) after 1 warmup, progress {mode}")), "{what}: {r}");
            let rows = r.stdout.lines().filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<u32>().is_ok())).count();
            assert_eq!(rows, n, "{what}: one row per rank: {r}");
            assert!(r.stdout.contains("makespan (us"), "{what}: {r}");
            let (checked, recvs) = coverage(&r.stdout);
            assert!(recvs > 0, "{what}: {r}");
            if !wildcards {
                assert_eq!(checked, recvs, "{what}: every receive names its source and tag: {r}");
            }
        }
    }
}

#[test]
fn a_racy_trace_file_ends_either_way() {
    // Run for real, a receive from -1 with tag -1 takes whichever matching
    // message comes first; in this file that can be a message meant for a
    // later receive (a 1-byte one into an 8-byte receive, then the later
    // receive waits forever). goal run either finishes or says so within
    // its --timeout: never a hang, never silence.
    let f = corpus().join(RACY);
    let r = goal_run(4, "thread", &["--iterations", "1", "--warmup", "0", "--timeout", "10", f.to_str().unwrap()]);
    match r.code {
        Some(0) => assert!(r.stdout.contains("makespan"), "{r}"),
        _ => assert!(r.stderr.contains("not finished after 10 s (--timeout)") || r.stderr.contains("receives from -1"), "{r}"),
    }
}

#[test]
fn a_file_for_another_number_of_ranks_is_refused_on_rank_0() {
    let f = corpus().join("schedgen-schedule.goal");
    let r = goal_run(2, "manual", &[f.to_str().unwrap()]);
    assert_eq!(r.code, Some(1), "{r}");
    let said = "is written for 8 ranks (num_ranks 8) but this job has 2 process(es)";
    assert_eq!(r.stderr.matches(said).count(), 1, "once, by rank 0: {r}");
    assert!(r.stderr.contains("(--ranks-per-host) is not implemented"), "{r}");
    assert!(r.stdout.is_empty(), "{r}");
}

#[test]
fn the_broken_htsim_file_is_refused_with_goal_checks_errors() {
    let f = corpus().join("htsim-chained_1.goal");
    let path = f.to_str().unwrap();
    let r = goal_run(4, "manual", &[path]);
    assert_eq!(r.code, Some(1), "{r}");
    let line = format!("{path}:20:17: error: rank 0 sends to rank 9999999, outside num_ranks 32");
    assert_eq!(r.stderr.matches(&line).count(), 1, "once, by rank 0: {r}");
    // Word for word what goal check says.
    let check = Command::new(env!("CARGO_BIN_EXE_goal")).args(["check", path]).output().unwrap();
    let check = String::from_utf8_lossy(&check.stderr);
    let ours: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with(path)).collect();
    assert_eq!(ours, check.lines().collect::<Vec<_>>(), "{r}");
}

#[test]
fn a_ring_runs_its_iterations_and_reports_them_as_json() {
    let dir = std::env::temp_dir().join(format!("goal-run-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 4;
    let mut text = format!("num_ranks {n}\n");
    for r in 0..n {
        // Each rank passes 3000 bytes on and computes 20 us once it has
        // what its left neighbour sent.
        text += &format!(
            "rank {r} {{\n  s: send 3000b to {} tag 7\n  r: recv 3000b from {} tag 7\n  c: calc 20000\n  c requires r\n}}\n",
            (r + 1) % n,
            (r + n - 1) % n
        );
    }
    let file = dir.join("ring.goal");
    std::fs::write(&file, text).unwrap();
    let json = dir.join("ring.json");
    let r = goal_run(n, "thread", &["--iterations", "5", "--warmup", "2", "--json", json.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.stdout.contains("4 ranks, 5 iteration(s) after 2 warmup"), "{r}");
    assert_eq!(coverage(&r.stdout), (4, 4), "{r}");
    let j = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(j.starts_with('{') && j.trim_end().ends_with('}'), "{j}");
    assert!(j.contains("\"iterations\":5,\"warmup\":2"), "{j}");
    // Every rank's five finish times, each at least its 20 us of calc.
    for rank in 0..n {
        let at = j.find(&format!("{{\"rank\":{rank},")).unwrap_or_else(|| panic!("rank {rank} missing: {j}"));
        let list = &j[at..];
        let list = &list[list.find("\"finish\":[").unwrap() + 10..];
        let list = &list[..list.find(']').unwrap()];
        let times: Vec<f64> = list.split(',').map(|x| x.parse().unwrap()).collect();
        assert_eq!(times.len(), 5, "{j}");
        assert!(times.iter().all(|t| (20e-6..10.0).contains(t)), "rank {rank}: {times:?}");
    }
    assert!(j.contains("\"makespan\":{\"all\":["), "{j}");
}
