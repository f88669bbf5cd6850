//! Misuse a new user tried (issue 39): each ends with an error naming its
//! cause, within seconds, instead of a hang or silence.

mod util;

use util::{in_job, launch};

/// A rank's body: `goal_rt::init`, printing what it said; exits 3 on error.
fn init_and_report() {
    match goal_rt::init() {
        Ok(_) => {
            println!("init ok");
            let _ = goal_rt::finalize();
        }
        Err(e) => {
            println!("init error: {}", e.message);
            std::process::exit(3);
        }
    }
}

#[test]
fn a_bad_goal_calibrate_value_is_refused_at_init() {
    if in_job() {
        init_and_report();
        return;
    }
    let job = launch(
        "a_bad_goal_calibrate_value_is_refused_at_init",
        1,
        &[("GOAL_CALIBRATE", "maybe")],
    );
    assert_eq!(job.status, 3, "{}\n{}", job.stdout, job.stderr);
    assert!(
        job.stdout.contains("GOAL_CALIBRATE=maybe")
            && job.stdout.contains("expected 0, off or force"),
        "{}",
        job.stdout
    );
    // The values it knows are still accepted.
    let job = launch(
        "a_bad_goal_calibrate_value_is_refused_at_init",
        1,
        &[("GOAL_CALIBRATE", "off")],
    );
    assert_eq!(job.status, 0, "{}\n{}", job.stdout, job.stderr);
    assert!(job.stdout.contains("init ok"), "{}", job.stdout);
}

/// [`launch`], which must end within `secs` seconds.
fn launch_within(secs: u64, test: &str, n: usize, env: &[(&str, &str)]) -> util::Job {
    let t0 = std::time::Instant::now();
    let job = launch(test, n, env);
    assert!(t0.elapsed().as_secs() < secs, "{test} took {:?}:\n{}", t0.elapsed(), job.stderr);
    job
}

/// A fresh directory under the system's temporary directory.
fn scratch(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("goal-hardening-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A rank's body: init, print the thresholds in force, finalize.
fn print_thresholds() {
    let rt = goal_rt::init().unwrap();
    let (eager, cma) = rt.thresholds();
    println!("thresholds: eager {eager} cma {cma:?}");
    drop(rt);
    goal_rt::finalize().unwrap();
}

/// How many ranks measured (`GOAL_DEBUG=1` says so once per measurement),
/// after asserting that the job succeeded and its ranks agree.
fn measured_once_and_agreed(job: &util::Job, ranks: usize) -> usize {
    assert_eq!(job.status, 0, "{}\n{}", job.stdout, job.stderr);
    // (The harness' "test ... " may come first on the line.)
    let lines: Vec<&str> = job
        .stdout
        .lines()
        .filter_map(|l| l.find("thresholds: ").map(|i| &l[i..]))
        .collect();
    assert_eq!(lines.len(), ranks, "{}", job.stdout);
    assert!(
        lines.iter().all(|l| *l == lines[0]),
        "the ranks of one machine use different thresholds:\n{}",
        job.stdout
    );
    job.stderr.matches("goal: calibrated in").count()
}

#[test]
fn without_a_writable_calibration_cache_one_rank_measures_and_all_agree() {
    if in_job() {
        print_thresholds();
        return;
    }
    const TEST: &str = "without_a_writable_calibration_cache_one_rank_measures_and_all_agree";
    // A directory where the cache file goes.
    let dir = scratch("cache-is-a-directory");
    std::fs::create_dir_all(dir.join("goal/calibration")).unwrap();
    let cache = dir.to_str().unwrap();
    for round in 0..2 {
        let job = launch(
            TEST,
            3,
            &[
                ("XDG_CACHE_HOME", cache),
                ("GOAL_DEBUG", "1"),
                ("GOAL_CALIBRATE", ""),
            ],
        );
        assert_eq!(
            measured_once_and_agreed(&job, 3),
            1,
            "round {round}: not exactly one rank measured:\n{}",
            job.stderr
        );
        let warned: Vec<&str> = job
            .stderr
            .lines()
            .filter(|l| l.contains("warning: cannot write the calibration cache"))
            .collect();
        assert_eq!(warned.len(), 1, "round {round}:\n{}", job.stderr);
        assert!(
            warned[0].contains(&format!("{cache}/goal/calibration"))
                && warned[0].contains("directory"),
            "{}",
            warned[0]
        );
    }
    // A file where the cache's directory goes.
    let file = scratch("cache-dir-is-a-file");
    std::fs::write(file.join("goal"), b"not a directory").unwrap();
    let job = launch(
        TEST,
        3,
        &[
            ("XDG_CACHE_HOME", file.to_str().unwrap()),
            ("GOAL_DEBUG", "1"),
            ("GOAL_CALIBRATE", ""),
        ],
    );
    assert_eq!(measured_once_and_agreed(&job, 3), 1, "{}", job.stderr);
    assert!(
        job.stderr
            .contains("warning: cannot create the calibration cache's directory"),
        "{}",
        job.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&file);
}

#[test]
fn the_calibration_cache_outlives_a_change_of_host_name() {
    if in_job() {
        print_thresholds();
        return;
    }
    const TEST: &str = "the_calibration_cache_outlives_a_change_of_host_name";
    let dir = scratch("cache-host-name");
    let cache = dir.to_str().unwrap();
    let env = [
        ("XDG_CACHE_HOME", cache),
        ("GOAL_DEBUG", "1"),
        ("GOAL_CALIBRATE", ""),
    ];
    let job = launch(TEST, 2, &env);
    assert_eq!(
        measured_once_and_agreed(&job, 2),
        1,
        "the first job did not measure:\n{}",
        job.stderr
    );
    assert!(!job.stderr.contains("warning:"), "{}", job.stderr);
    // The same machine under another host name (a UTS namespace, as an
    // emulated host or a container has): the cache still holds.
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new("unshare");
    cmd.args([
        "-u",
        "sh",
        "-c",
        "hostname goal-other-name && exec \"$0\" \"$@\"",
    ])
    .arg(env!("CARGO_BIN_EXE_goalrun"))
    .args(["-n", "2", "--timeout", "60", "--"])
    .arg(exe)
    .args([TEST, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("unshare could not be started");
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("unshare failed") {
        eprintln!(
            "skipped: no UTS namespace here ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let job = util::Job {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    };
    assert_eq!(
        measured_once_and_agreed(&job, 2),
        0,
        "a new host name measured again:\n{}",
        job.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rank 2 is killed; rank 0, which received from it, gives up (finalizes
/// and exits); rank 1, which never exchanged a byte with rank 2, waits for
/// rank 0. Each survivor prints what its Wait said.
fn killed_rank_then_a_finalize() {
    let rt = goal_rt::init().unwrap();
    let rank = rt.rank();
    let mut buf = [0u8; 8];
    let user = |b: &mut [u8; 8]| goal_sched::Buf::user(b.as_mut_ptr() as u64);
    // A: rank 0 receives from rank 2 (which never sends).
    let mut a = goal_sched::Graph::new();
    if rank == 0 {
        a.recv(user(&mut buf), 8, 2, 0);
    }
    let a = rt.compile(&a).unwrap();
    // B: rank 0 sends to rank 1 after A.
    let mut b = goal_sched::Graph::new();
    match rank {
        0 => {
            b.send(user(&mut buf), 8, 1, 0);
        }
        1 => {
            b.recv(user(&mut buf), 8, 0, 0);
        }
        _ => {}
    }
    let b = rt.compile(&b).unwrap();
    if rank == 2 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: kill and getpid have no preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        unreachable!("SIGKILL returned");
    }
    let first = if rank == 0 { &a } else { &b };
    // SAFETY: `buf` outlives the execution, which is waited for.
    let r = unsafe { rt.run(first) }.unwrap().wait();
    match r {
        Ok(()) => println!("rank {rank}: execution succeeded"),
        Err(e) => println!("rank {rank}: error: {}", e.message),
    }
    drop((a, b, rt));
    let _ = goal_rt::finalize();
    std::process::exit(1);
}

#[test]
fn a_rank_that_finalizes_after_another_died_is_not_blamed_for_a_programming_error() {
    if in_job() {
        killed_rank_then_a_finalize();
        return;
    }
    let job = launch_within(30, "a_rank_that_finalizes_after_another_died_is_not_blamed_for_a_programming_error", 3, &[]);
    assert_ne!(job.status, 0, "{}\n{}", job.stdout, job.stderr);
    assert!(job.stderr.contains("goalrun: rank 2 (pid"), "goalrun blamed another rank:\n{}", job.stderr);
    let said = |r: u32| job.stdout.lines().find_map(|l| l.split_once(&format!("rank {r}: error: ")).map(|x| x.1.to_string()));
    let zero = said(0).unwrap_or_else(|| panic!("rank 0's Wait did not fail:\n{}\n{}", job.stdout, job.stderr));
    assert!(zero.contains("rank 2 killed by signal 9"), "{zero}");
    let one = said(1).unwrap_or_else(|| panic!("rank 1's Wait did not fail:\n{}\n{}", job.stdout, job.stderr));
    // The first death is the cause, as goalrun says; not a disagreement
    // between the programs.
    assert!(one.contains("rank 2 killed by signal 9") && one.contains("rank 0"), "{one}");
    assert!(!one.contains("as often") && !one.contains("never compiled"), "{one}");
}

/// Every rank calls a reduction with itself as the root and waits for it
/// (nobody sends: each waits for the others' data), giving up after 12 s.
fn reduce_with_a_root_per_rank() {
    use goal_sched::coll::{self, Algorithm, Group, Placement, Reduction};
    let rt = goal_rt::init().unwrap();
    let rank = rt.rank();
    let (send, mut got) = ([rank as u64 + 1; 4], [0u64; 4]);
    let mut g = goal_sched::Graph::new();
    let red = Reduction::from_raw(2, 1, 64).unwrap(); // GOAL_ADD, GOAL_UINT, 64 bits
    let grp = Group { rank, size: rt.size() };
    coll::reduce(&mut g, grp, Placement { tag_base: 1 << 30 }, send.as_ptr() as u64, got.as_mut_ptr() as u64, 4, red, rank, Algorithm::Auto).unwrap();
    let s = rt.compile(&g).unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(12));
        println!("rank {rank}: still waiting after 12 s");
        std::process::exit(0);
    });
    let t0 = std::time::Instant::now();
    // SAFETY: `send` and `got` outlive the execution, which ends in this Wait
    // (or the process exits inside it).
    let r = unsafe { rt.run(&s) }.unwrap().wait();
    let e = r.err().map(|e| format!("{:?}: {}", e.kind, e.message));
    println!("rank {rank}: Wait returned after {} ms: {e:?}", t0.elapsed().as_millis());
    // The peer's probe may still be on its way: the helper answers it
    // meanwhile (a rank that exits at once leaves its peer a PeerLost
    // error instead, within seconds too).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::process::exit(0);
}

/// Issue 39, point 3: ranks that disagree on a reduction's root, each its
/// own root, only wait (nobody sends, so no message shows the
/// disagreement). A receive that has waited a second with nothing moving
/// asks its peer whether its schedule holds a send to it at all; the peer
/// that holds none says so, and the Wait fails with a mismatch naming it.
#[test]
fn a_collective_with_a_different_root_on_every_rank_fails_with_a_mismatch_within_seconds() {
    if in_job() {
        reduce_with_a_root_per_rank();
        return;
    }
    let job = launch_within(60, "a_collective_with_a_different_root_on_every_rank_fails_with_a_mismatch_within_seconds", 2, &[]);
    assert!(!job.stdout.contains("still waiting"), "a rank hung:\n{}\n{}", job.stdout, job.stderr);
    for rank in 0..2 {
        let other = 1 - rank;
        let line = job
            .stdout
            .lines()
            // (The test harness's own "test ... " may start the line.)
            .find_map(|l| l.find(&format!("rank {rank}: Wait returned")).map(|i| &l[i..]))
            .unwrap_or_else(|| panic!("rank {rank} said nothing:\n{}\n{}", job.stdout, job.stderr));
        assert!(line.contains("Mismatch") && line.contains(&format!("rank {other}'s schedule 0 has no send to this rank")), "{line}");
        let ms: u64 = line.split("after ").nth(1).and_then(|x| x.split(' ').next()).and_then(|x| x.parse().ok()).unwrap();
        assert!(ms < 5000, "rank {rank} took {ms} ms to see the mismatch: {line}");
    }
}
