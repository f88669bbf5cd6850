//! `goal check` as users run it: every file of the shared corpus (real
//! schedules from LogGOPSim, Schedgen, llamp and htsim), generated files
//! in a temporary directory, and broken ones.
//!
//! The corpus is the repository's `tests/goal-corpus/` (public inputs, its
//! README says where each comes from), or `GOAL_CORPUS` if set.

mod util;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use util::{corpus, Dir};

const GOAL: &str = env!("CARGO_BIN_EXE_goal");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn goal(args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(GOAL)
        .arg("check")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("goal could not be started");
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Run { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into(), stderr: String::from_utf8_lossy(&out.stderr).into() }
}

#[test]
fn every_corpus_file_is_valid_but_the_broken_htsim_one() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "goal" || x == "g2"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 18, "{files:?}");
    let mut refused = Vec::new();
    for f in &files {
        let path = f.to_string_lossy();
        let r = goal(&[&path], None);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        match r.code {
            Some(0) => {
                assert!(r.stdout.starts_with(&format!("{path}: valid: ")), "{name}: {}", r.stdout);
                assert!(r.stderr.is_empty(), "{name}: {}", r.stderr);
            }
            Some(1) => refused.push((name, r.stderr)),
            other => panic!("{name}: status {other:?}: {}", r.stderr),
        }
    }
    assert_eq!(refused.len(), 1, "{refused:#?}");
    let (name, stderr) = &refused[0];
    assert_eq!(name, "htsim-chained_1.goal");
    // Its last send per rank goes to rank 9999999: line 20 is rank 0's.
    let first = stderr.lines().next().unwrap();
    assert!(
        first.ends_with("htsim-chained_1.goal:20:17: error: rank 0 sends to rank 9999999, outside num_ranks 32: expected the destination rank from 0 to 31"),
        "{stderr}"
    );
    assert!(stderr.contains("... and 12 more error(s)") && stderr.ends_with("invalid: 32 error(s)\n"), "{stderr}");
}

#[test]
fn corpus_files_are_read_as_the_tools_that_wrote_them_meant() {
    let dir = corpus();
    let summary = |f: &str| goal(&[&dir.join(f).to_string_lossy()], None).stdout;
    let s = summary("loggopsim2-src_schedgen_schedule.goal");
    assert!(s.contains(": valid: 4 ranks, 224 ops (59 sends, 59 recvs, 106 calcs), 264 deps, 607288 bytes sent"), "{s}");
    let s = summary("loggopsim2-tests_network_binomialtreebcast_128_1024.goal");
    assert!(s.contains(": valid: 128 ranks, 254 ops (127 sends, 127 recvs, 0 calcs), 120 deps, 130048 bytes sent"), "{s}");
    let s = summary("loggopsim2-tests_goal_test-nbc-notest_rndvz-async.g2");
    assert!(s.contains(": valid: 2 ranks, 10 ops"), "{s}");
}

#[test]
fn a_generated_barrier_in_a_temporary_file_is_valid() {
    let d = Dir::new("check-gen");
    let mut text = String::new();
    goal_text::generate::dissemination(1024, 0..1024, &mut text);
    let f = d.file("barrier.goal", &text);
    let r = goal(&[&f, &f], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let want = format!("{f}: valid: 1024 ranks, 20480 ops (10240 sends, 10240 recvs, 0 calcs), 18432 deps, 10240 bytes sent; checked in ");
    assert_eq!(r.stdout.lines().filter(|l| l.starts_with(&want)).count(), 2, "{}", r.stdout);
}

#[test]
fn mistakes_are_listed_with_file_line_and_column_and_bounded() {
    let d = Dir::new("check-bad");
    let f = d.file("bad.goal", "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 3\nl2: calc 5\nl1 requires l2\nl2 requires l1\n}\nrank 1 {\nrecv 8b from 0 tag 4\n}\n");
    let r = goal(&[&f], None);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stderr);
    assert!(lines[0].starts_with(&format!("{f}:3:1: error: rank 0: l1 is on a dependency cycle (l1 -> l2 -> l1")), "{}", r.stderr);
    assert!(lines[1].starts_with(&format!("{f}:3:1: error: rank 0 sends to rank 1 with tag 3 but no receive matches it")), "{}", r.stderr);
    assert!(lines[2].starts_with(&format!("{f}:9:1: error: rank 1 receives from rank 0 with tag 4")), "{}", r.stderr);
    assert_eq!(lines[3], format!("{f}: invalid: 3 error(s)"));
    let r = goal(&["--max-errors", "1", &f], None);
    assert!(r.stderr.contains(&format!("{f}: ... and 2 more error(s)")), "{}", r.stderr);
    // One bad file among good ones: status 1, the good one still summarised.
    let good = d.file("good.goal", "num_ranks 1\nrank 0 {\n}\n");
    let r = goal(&[&good, &f], None);
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.starts_with(&format!("{good}: valid: 1 ranks, 0 ops")), "{}", r.stdout);
}

#[test]
fn standard_input_missing_files_and_usage() {
    let r = goal(&["-"], Some("num_ranks 2\nrank 0 {\nsend 1b to 1\n}\nrank 1 {\nrecv 1b from -1 tag -1\n}\n"));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.starts_with("<stdin>: valid: 2 ranks, 2 ops"), "{}", r.stdout);
    let r = goal(&["/nonexistent/x.goal"], None);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.starts_with("/nonexistent/x.goal: error: cannot open the file: "), "{}", r.stderr);
    let r = goal(&[], None);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.starts_with("goal: no file given\nUsage: goal check"), "{}", r.stderr);
    let r = goal(&["--max-errors", "many", "x"], None);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("--max-errors takes a number, not 'many'"), "{}", r.stderr);
    let r = goal(&["--help"], None);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.starts_with("Usage: goal check [--max-errors N] FILE..."), "{}", r.stdout);
}
