//! `goal sim` and `goal export` as users run them, through the real `goal`
//! binary: LogGOPSim's output and options on corpus files (the reference
//! times themselves are checked in goal-sim's `tests/reference.rs`), the
//! model against hand-computed times, the report of a schedule that cannot
//! finish, and goal's collectives exported to text and simulated again.

mod util;

use std::process::Command;

use util::{corpus, Dir};

const GOAL: &str = env!("CARGO_BIN_EXE_goal");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn goal(args: &[&str]) -> Run {
    let out = Command::new(GOAL).args(args).output().expect("goal could not be started");
    Run { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into(), stderr: String::from_utf8_lossy(&out.stderr).into() }
}

/// The `Host i: t` lines, as (i, t).
fn hosts(stdout: &str) -> Vec<(u32, u64)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Host "))
        .map(|l| {
            let (h, t) = l.split_once(": ").unwrap();
            (h.parse().unwrap(), t.parse().unwrap())
        })
        .collect()
}

fn reference(file: &str) -> Vec<(u32, u64)> {
    let tsv = std::fs::read_to_string(corpus().join("loggopsim-reference.tsv")).unwrap();
    tsv.lines()
        .filter(|l| l.starts_with(&format!("{file}\t")))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn corpus_files_print_loggopsims_lines_and_times() {
    for file in ["loggopsim-binary_tree_32.goal", "loggopsim2-tests_goal_test-nbc-notest_rndvz-async.g2", "htsim-perm64.goal", "schedgen-schedule.goal"] {
        let path = corpus().join(file);
        let r = goal(&["sim", path.to_str().unwrap()]);
        assert_eq!(r.code, Some(0), "{file}: {}", r.stderr);
        let want = reference(file);
        assert_eq!(hosts(&r.stdout), want, "{file}");
        let (h, max) = want.iter().fold((0, 0), |b, &(h, t)| if t > b.1 { (h, t) } else { b });
        assert!(r.stdout.contains(&format!("Maximum finishing time at host {h}: {max} (")), "{file}: {}", r.stdout);
        assert!(r.stdout.starts_with(&format!("LogGP network backend; size: {} (", want.len())), "{}", r.stdout);
        assert!(r.stdout.contains("L=2500, o=1500 g=1000, G=6, O=0"), "{}", r.stdout);
    }
    // LogGOPSim's -f and -b: the maximum only.
    let path = corpus().join("loggopsim-binary_tree_32.goal");
    let r = goal(&["sim", "-b", "-f", path.to_str().unwrap()]);
    assert_eq!(r.code, Some(0));
    assert!(hosts(&r.stdout).is_empty(), "{}", r.stdout);
    assert!(r.stdout.contains("Maximum finishing time at host 31: 27500 (2.75e-05 s)"), "{}", r.stdout);
}

/// A message of s bytes from rank 0 to rank 1: the receiver finishes at
/// `o + L` (arrival) `+ o + (s-1)G`, the sender at `o + (s-1)O`.
#[test]
fn the_model_gives_the_hand_computed_times_for_every_parameter() {
    let d = Dir::new("sim-model");
    let f = d.file("pp.goal", "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\nl2: calc 50\nl2 requires l1\n}\n");
    let r = goal(&["sim", "-o", "100", "-L1000", "-G", "2", "-O", "3", "-g", "7", &f]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Receiver: arrival 1100, cpu busy o + max(7*3, 7*2) = 121: 1221, then calc 50.
    assert_eq!(hosts(&r.stdout), vec![(0, 100 + 7 * 3), (1, 1221 + 50)]);
    // Above S the send is a rendezvous: it finishes when the message is taken,
    // which moves the sender's cpu up to that time.
    let r = goal(&["sim", "--LogGOPS_S=4", "-o", "100", "-L", "1000", "-G", "2", "-O", "0", &f]);
    assert_eq!(hosts(&r.stdout), vec![(0, 1100), (1, 1100 + 100 + 14 + 50)], "{}", r.stdout);
}

#[test]
fn a_schedule_that_cannot_finish_says_what_is_left() {
    let d = Dir::new("sim-left");
    let f = d.file(
        "stuck.goal",
        "num_ranks 3\nrank 0 {\nl1: send 8b to 1 tag 4\nl2: recv 8b from 2\n}\nrank 1 {\nl1: recv 8b from 0 tag 5\nl2: send 8b to 2\nl2 requires l1\nl3: calc 10\nl3 requires l2\n}\nrank 2 {\nl1: recv 8b from 1\n}\n",
    );
    let r = goal(&["sim", "--json", &d.path("out.json"), &f]);
    assert_eq!(r.code, Some(1), "{} {}", r.stdout, r.stderr);
    let e = &r.stderr;
    assert!(e.contains("the schedule cannot finish: 3 receive(s) never matched, 1 message(s) never received, 2 operation(s) never started"), "{e}");
    assert!(e.contains("rank 0: l2 (recv 8b from rank 2 tag 0) was posted and no message matched it"), "{e}");
    assert!(e.contains("rank 1: a message of 8b tag 4 from rank 0 (l1 (send 8b to rank 1 tag 4) there) arrived and no receive took it"), "{e}");
    assert!(e.contains("rank 1: l2 (send 8b to rank 2 tag 0) never started: it waits for l1 (recv 8b from rank 0 tag 5) to finish"), "{e}");
    // The calc behind it is counted, not named.
    assert!(!e.contains("(calc 10) never started"), "{e}");
    // Read from standard input, the file is not read again for labels:
    // operations go by their index.
    let mut child = Command::new(GOAL).args(["sim", "-"]).stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), std::fs::read(&f).unwrap().as_slice()).unwrap();
    let o = child.wait_with_output().unwrap();
    let e2 = String::from_utf8_lossy(&o.stderr);
    assert!(e2.contains("rank 0: op #1 (recv 8b from rank 2 tag 0) was posted"), "{e2}");
    // Times are still printed (each host's last event), and the JSON says so too.
    assert_eq!(hosts(&r.stdout).len(), 3);
    let j = std::fs::read_to_string(d.path("out.json")).unwrap();
    assert!(j.contains("\"complete\":false") && j.contains("\"unmatched_recvs\":3"), "{j}");
}

/// The collectives, exported and read back, simulate as built directly;
/// the export is valid for `goal check` and the same bytes every time.
#[test]
fn exported_collectives_check_and_simulate_as_the_collective_itself() {
    let d = Dir::new("sim-export");
    let cases: &[&[&str]] = &[
        &["--coll", "allreduce", "--alg", "ring", "--ranks", "8", "--bytes", "1K"],
        &["--coll", "allreduce", "--alg", "rabenseifner", "--ranks", "6", "--bytes", "64K"],
        &["--coll", "bcast", "--alg", "binomial", "--ranks", "13", "--bytes", "100", "--root", "5"],
        &["--coll", "barrier", "--alg", "dissemination", "--ranks", "7"],
        &["--coll", "alltoall", "--alg", "bruck", "--ranks", "9", "--bytes", "16"],
        &["--coll", "gatherv", "--ranks", "5", "--bytes", "80K"],
    ];
    for (i, c) in cases.iter().enumerate() {
        let file = d.path(&format!("c{i}.goal"));
        let mut args = vec!["export", "-o", &file];
        args.extend_from_slice(c);
        let r = goal(&args);
        assert_eq!(r.code, Some(0), "{c:?}: {}", r.stderr);
        let again = goal(&[&["export"][..], c].concat());
        assert_eq!(again.stdout, std::fs::read_to_string(&file).unwrap(), "{c:?}: export is not deterministic");
        let check = goal(&["check", &file]);
        assert_eq!(check.code, Some(0), "{c:?}: {}", check.stderr);
        let direct = goal(&[&["sim"][..], c].concat());
        let text = goal(&["sim", &file]);
        assert_eq!(direct.code, Some(0), "{c:?}: {}", direct.stderr);
        assert_eq!(text.code, Some(0), "{c:?}: {}", text.stderr);
        let (a, b) = (hosts(&direct.stdout), hosts(&text.stdout));
        assert!(!a.is_empty() && a.iter().any(|&(_, t)| t > 0), "{c:?}: {}", direct.stdout);
        assert_eq!(a, b, "{c:?}");
    }
}

#[test]
fn mistakes_on_the_command_line_and_in_the_file_are_named() {
    let r = goal(&["sim", "--bogus", "x"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("unknown option '--bogus'"), "{}", r.stderr);
    let r = goal(&["sim", "--coll", "allreduce", "--alg", "binomial", "--ranks", "4", "--bytes", "8"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("allreduce has no algorithm 'binomial'"), "{}", r.stderr);
    let r = goal(&["sim", "-L", "x", "f"]);
    assert_eq!(r.code, Some(2));
    let r = goal(&["sim", "--network-type=simple", "f"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("the 'simple' network is LogGOPSim's; goal sim does not model it"), "{}", r.stderr);
    // LogGOPSim's options that change nothing are taken.
    let path = corpus().join("llamp-blocking.goal");
    let r = goal(&["sim", "-n", "LogGP", "--save-mem", "--progress", "-v", path.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let path = corpus().join("htsim-chained_1.goal");
    let r = goal(&["sim", path.to_str().unwrap()]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("htsim-chained_1.goal:20:17: error: rank 0 sends to rank 9999999"), "{}", r.stderr);
    // Too large to hold: refused before building, saying why.
    let r = goal(&["sim", "--coll", "allreduce", "--alg", "ring", "--ranks", "65536", "--bytes", "1M"]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(r.stderr.contains("use fewer ranks"), "{}", r.stderr);
}

#[test]
fn the_critical_path_follows_the_tree_to_the_last_leaf() {
    let path = corpus().join("loggopsim-binary_tree_32.goal");
    let r = goal(&["sim", "-b", "--critical-path", path.to_str().unwrap()]);
    assert_eq!(r.code, Some(0));
    let steps: Vec<&str> = r.stdout.lines().skip_while(|l| !l.starts_with("Critical path")).skip(1).collect();
    let ranks: Vec<&str> = steps.iter().map(|l| l.trim().split(' ').nth(1).unwrap()).collect();
    assert_eq!(ranks, ["31", "15", "15", "7", "7", "3", "3", "1", "1", "0"], "{}", r.stdout);
    assert!(steps[0].contains("recv 1b from rank 15") && steps[0].ends_with("27500"), "{}", r.stdout);
}
