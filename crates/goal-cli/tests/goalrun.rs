//! goalrun as users run it: the real binary, in a fresh directory (also its
//! TMPDIR, so cleanup can be checked), with small shell programs as ranks,
//! or this test binary re-run as a rank where the bootstrap is exercised.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const GOALRUN: &str = env!("CARGO_BIN_EXE_goalrun");

/// A fresh directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "goalrun-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn goalrun(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(GOALRUN);
        cmd.args(args)
            .current_dir(&self.0)
            .env("TMPDIR", &self.0)
            .env_remove("GOAL_ABORT_GRACE");
        cmd
    }

    /// The temporary directories goalruns have left here.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("goalrun-"))
            .collect()
    }

    /// goalrun left no temporary directory behind.
    fn assert_clean(&self) {
        let left = self.leftovers();
        assert!(left.is_empty(), "goalrun left {left:?} behind");
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(mut cmd: Command) -> Run {
    let start = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.stdin(Stdio::null()).output().unwrap();
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        took: start.elapsed(),
    }
}

#[test]
fn every_rank_gets_its_goal_variables() {
    for n in [1usize, 3, 7] {
        let dir = Dir::new();
        let r = run(dir.goalrun(&[
            "-n",
            &n.to_string(),
            "--progress",
            "thread",
            "sh",
            "-c",
            "echo \"$GOAL_RANK $GOAL_SIZE $GOAL_JOB $GOAL_BOOTSTRAP $GOAL_PROGRESS\"",
        ]));
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let mut lines: Vec<Vec<&str>> = r.stdout.lines().map(|l| l.split(' ').collect()).collect();
        lines.sort_by_key(|f| f[0].parse::<usize>().unwrap());
        assert_eq!(lines.len(), n, "{}", r.stdout);
        for (rank, f) in lines.iter().enumerate() {
            assert_eq!(f[0], rank.to_string());
            assert_eq!(f[1], n.to_string());
            assert!(
                !f[2].is_empty() && f[2] == lines[0][2],
                "one job id: {}",
                r.stdout
            );
            assert!(
                f[3].starts_with(dir.0.to_str().unwrap()) && f[3].ends_with("/boot.sock"),
                "{}",
                f[3]
            );
            assert_eq!(f[4], "thread");
        }
        dir.assert_clean();
    }
}

#[test]
fn every_rank_gets_torchruns_variables() {
    let echo = "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT\"";
    // goalrun picks MASTER_ADDR and a free MASTER_PORT; an inherited RANK
    // (another job's) is replaced.
    let dir = Dir::new();
    let mut cmd = dir.goalrun(&["-n", "3", "sh", "-c", echo]);
    cmd.env_remove("MASTER_ADDR").env_remove("MASTER_PORT").env("RANK", "9").env("WORLD_SIZE", "9");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut lines: Vec<Vec<&str>> = r.stdout.lines().map(|l| l.split(' ').collect()).collect();
    lines.sort_by_key(|f| f[0].parse::<usize>().unwrap());
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    for (rank, f) in lines.iter().enumerate() {
        let want = [rank.to_string(), "3".into(), rank.to_string(), "3".into(), "127.0.0.1".into()];
        assert_eq!(f[..5], want, "{}", r.stdout);
        assert!(f[5].parse::<u16>().is_ok_and(|p| p > 0) && f[5] == lines[0][5], "one port: {}", r.stdout);
    }
    // The caller's store is kept.
    let mut cmd = dir.goalrun(&["-n", "2", "sh", "-c", echo]);
    cmd.env("MASTER_ADDR", "10.1.2.3").env("MASTER_PORT", "4567");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.lines().all(|l| l.ends_with(" 10.1.2.3 4567")), "{}", r.stdout);
    // Half of it is a usage error naming the other half.
    let mut cmd = dir.goalrun(&["-n", "2", "true"]);
    cmd.env("MASTER_PORT", "4567").env_remove("MASTER_ADDR");
    let r = run(cmd);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("MASTER_PORT is set but MASTER_ADDR is not"), "{}", r.stderr);
    dir.assert_clean();
}

#[test]
fn a_failing_rank_exit_status_is_goalruns() {
    let dir = Dir::new();
    let r = run(dir.goalrun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "[ $GOAL_RANK = 1 ] && exit 3; exit 0",
    ]));
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(r.stderr.contains("goalrun: rank 1 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains(") exited with status 3"), "{}", r.stderr);
    dir.assert_clean();
}

#[test]
fn a_killed_rank_ends_the_job_after_the_grace_period() {
    let dir = Dir::new();
    let r = run(dir.goalrun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $GOAL_RANK = 2 ]; then sleep 0.2; kill -9 $$; fi; exec sleep 100",
    ]));
    assert_eq!(r.code, Some(128 + 9), "{}", r.stderr);
    assert!(r.took < Duration::from_secs(6), "took {:?}", r.took);
    assert!(
        r.took >= Duration::from_secs(3),
        "the default grace is 3 s, took {:?}",
        r.took
    );
    assert!(
        r.stderr.contains("goalrun: rank 2 (pid ")
            && r.stderr.contains("was killed by signal 9 (SIGKILL)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("sending SIGTERM"), "{}", r.stderr);
    // The survivors died of goalrun's SIGTERM: not reported as failures.
    assert_eq!(
        r.stderr.matches("was killed by signal").count(),
        1,
        "{}",
        r.stderr
    );
    dir.assert_clean();
}

/// Rank 0 fails only once rank 1 ignores SIGTERM (it says so with a file):
/// with a grace of 0.2 s, a rank 1 that a loaded machine started late was
/// still without its trap when SIGTERM came, and died of it. The time is
/// taken from rank 0's failure (the mtime of a file it writes just before),
/// not from goalrun's start, for the same reason.
#[test]
fn survivors_that_ignore_sigterm_get_sigkill() {
    let dir = Dir::new();
    let mut cmd = dir.goalrun(&[
        "-n",
        "2",
        "--timeout",
        "60",
        "sh",
        "-c",
        "trap '' TERM; if [ $GOAL_RANK = 0 ]; then \
           while [ ! -e trapped ]; do sleep 0.01; done; touch failed; exit 4; fi; \
         touch trapped; while :; do sleep 0.05; done",
    ]);
    cmd.env("GOAL_ABORT_GRACE", "0.2");
    let r = run(cmd);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr.contains("survived SIGTERM; sending SIGKILL"),
        "{}",
        r.stderr
    );
    let failed = std::fs::metadata(dir.0.join("failed"))
        .and_then(|m| m.modified())
        .expect("rank 0 wrote 'failed'");
    let took = failed.elapsed().unwrap_or_default();
    assert!(
        took < Duration::from_secs(3),
        "took {took:?} after rank 0 failed"
    );
}

#[test]
fn timeout_kills_every_rank_with_124() {
    let dir = Dir::new();
    let r = run(dir.goalrun(&["-n", "2", "--timeout", "0.5", "sh", "-c", "exec sleep 100"]));
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("goalrun: timeout after 0.5 s; killed ranks [0, 1]"),
        "{}",
        r.stderr
    );
    assert!(r.took < Duration::from_secs(3), "took {:?}", r.took);
    dir.assert_clean();
}

#[test]
fn tag_output_prefixes_every_line_with_the_rank() {
    let dir = Dir::new();
    let r = run(dir.goalrun(&[
        "-n",
        "3",
        "--tag-output",
        "sh",
        "-c",
        "echo one $GOAL_RANK; echo two $GOAL_RANK; printf 'no newline %s' $GOAL_RANK >&2",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for rank in 0..3 {
        for word in ["one", "two"] {
            let want = format!("[{rank}] {word} {rank}\n");
            assert!(r.stdout.contains(&want), "{want:?} not in {:?}", r.stdout);
        }
        let want = format!("[{rank}] no newline {rank}\n");
        assert!(r.stderr.contains(&want), "{want:?} not in {:?}", r.stderr);
    }
    assert_eq!(r.stdout.lines().count(), 6);
    assert!(r.stdout.lines().all(|l| l.starts_with('[')));
}

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = Dir::new();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--bogus", "true"], 2, "goalrun: unknown option '--bogus'"),
        (&["-n", "0", "true"], 2, "-n must be at least 1 (got 0)"),
        (&["-n", "x", "true"], 2, "-n expects a number of ranks"),
        (&["true"], 2, "missing -n"),
        (&["-n", "2"], 2, "no program to run"),
        (
            &["-n", "2", "--progress", "fast", "true"],
            2,
            "--progress must be one of",
        ),
        (
            &["-n", "2", "--timeout", "0", "true"],
            2,
            "--timeout expects a positive number of seconds",
        ),
        (
            &["-n", "2", "--timeout"],
            2,
            "option '--timeout' needs a value",
        ),
        (
            &["-n", "2", "no-such-program-goal"],
            127,
            "goalrun: cannot execute 'no-such-program-goal': No such file or directory",
        ),
        (
            &["-n", "2", "./missing"],
            127,
            "cannot execute './missing': No such file or directory",
        ),
    ];
    for (args, code, message) in cases {
        let r = run(dir.goalrun(args));
        assert_eq!(r.code, Some(*code), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
    }
    let mut cmd = dir.goalrun(&["-n", "1", "true"]);
    cmd.env("GOAL_ABORT_GRACE", "later");
    let r = run(cmd);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("GOAL_ABORT_GRACE='later'"),
        "{}",
        r.stderr
    );

    let r = run(dir.goalrun(&["--help"]));
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("Usage: goalrun -n N") && r.stdout.contains("GOAL_ABORT_GRACE"));
    dir.assert_clean();
}

fn alive(pid: i32) -> bool {
    // A zombie (reparented, not yet reaped by init) counts as dead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn wait_for_files(paths: &[PathBuf], limit: Duration) {
    let start = Instant::now();
    while !paths.iter().all(|p| p.exists()) {
        assert!(start.elapsed() < limit, "ranks did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
}

fn rank_pids(dir: &Path, n: usize) -> Vec<i32> {
    (0..n)
        .map(|r| {
            std::fs::read_to_string(dir.join(format!("pid.{r}")))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect()
}

const RECORD_PID_AND_SLEEP: &str =
    "echo $$ > pid.tmp.$GOAL_RANK; mv pid.tmp.$GOAL_RANK pid.$GOAL_RANK; exec sleep 100";

/// Starts goalrun with 2 sleeping ranks in `dir`, SIGKILLs it once they
/// run, and asserts that they die within `limit`; returns their pid files.
fn kill_goalrun_under_its_ranks(dir: &Dir, limit: Duration) -> Vec<PathBuf> {
    let mut child = dir
        .goalrun(&["-n", "2", "sh", "-c", RECORD_PID_AND_SLEEP])
        .spawn()
        .unwrap();
    let files: Vec<PathBuf> = (0..2).map(|r| dir.0.join(format!("pid.{r}"))).collect();
    wait_for_files(&files, Duration::from_secs(10));
    let pids = rank_pids(&dir.0, 2);
    child.kill().unwrap(); // SIGKILL: goalrun cannot clean up, the kernel must.
    child.wait().unwrap();
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(start.elapsed() < limit, "ranks {pids:?} outlived goalrun");
        std::thread::sleep(Duration::from_millis(20));
    }
    files
}

#[test]
fn ranks_never_outlive_a_killed_goalrun() {
    kill_goalrun_under_its_ranks(&Dir::new(), Duration::from_secs(2));
}

#[test]
fn sigterm_to_goalrun_is_forwarded_to_the_ranks() {
    let dir = Dir::new();
    let child = dir
        .goalrun(&["-n", "2", "sh", "-c", RECORD_PID_AND_SLEEP])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let files: Vec<PathBuf> = (0..2).map(|r| dir.0.join(format!("pid.{r}"))).collect();
    wait_for_files(&files, Duration::from_secs(10));
    let start = Instant::now();
    // Sent from here, not by kill(1): the time bound below is goalrun's,
    // and starting a process on a loaded machine can take much of it.
    // SAFETY: kill takes plain integers; the pid is goalrun's, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(128 + 15),
        "{stderr} {:?}",
        out.status.signal()
    );
    assert!(
        stderr.contains("goalrun: received SIGTERM; forwarding it to the ranks"),
        "{stderr}"
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    dir.assert_clean();
}

// ---- ranks that use the bootstrap: this binary, re-run under goalrun ----

/// Not a test on its own: the body of a rank started by the tests below
/// (which set GOALRUN_TEST_RANK); passes trivially when run directly.
#[test]
fn rank_entry() {
    let Some(mode) = std::env::var_os("GOALRUN_TEST_RANK") else {
        return;
    };
    let mut boot = match goal_boot::from_env() {
        Ok(b) => b,
        Err(e) => {
            println!("rank: bootstrap failed: {e}");
            std::process::exit(20);
        }
    };
    let (rank, size) = (boot.rank(), boot.size());
    for round in 0..3u8 {
        let mine = format!("{}:{rank}:{round}", boot.job_id());
        let all = match boot.allgather(mine.as_bytes()) {
            Ok(all) => all,
            Err(e) => {
                println!("rank {rank} error: {e}");
                std::process::exit(8);
            }
        };
        for (r, blob) in all.iter().enumerate() {
            assert_eq!(blob, format!("{}:{r}:{round}", boot.job_id()).as_bytes());
        }
        assert_eq!(all.len(), size);
    }
    if mode == "die" {
        if rank == 0 {
            std::process::exit(5);
        }
        // The others go on to a round rank 0 never joins: it must fail
        // promptly, and the rank ends with its own error.
        match boot.allgather(b"again") {
            Ok(_) => std::process::exit(21),
            Err(e) => {
                println!("rank {rank} error: {e}");
                std::process::exit(7);
            }
        }
    }
    println!("rank {rank} of {size} ok");
}

/// `goalrun GOALRUN_ARGS -- WRAP... <this binary as rank_entry in MODE>`.
fn rank_job(dir: &Dir, goalrun_args: &[&str], wrap: &[&str], mode: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut args = goalrun_args.to_vec();
    args.push("--");
    args.extend_from_slice(wrap);
    args.extend([
        exe.to_str().unwrap(),
        "--exact",
        "rank_entry",
        "--nocapture",
        "--test-threads=1",
        "--quiet",
    ]);
    let mut cmd = dir.goalrun(&args);
    cmd.env("GOALRUN_TEST_RANK", mode);
    cmd
}

fn rank_command(dir: &Dir, n: &str, mode: &str) -> Command {
    rank_job(dir, &["-n", n], &[], mode)
}

/// How many lines of `text` contain both `a` and `b`.
fn lines_with(text: &str, a: &str, b: &str) -> usize {
    text.lines()
        .filter(|l| l.contains(a) && l.contains(b))
        .count()
}

#[test]
fn ranks_bootstrap_through_goalrun() {
    let dir = Dir::new();
    let r = run(rank_command(&dir, "4", "ok"));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    for rank in 0..4 {
        assert!(
            r.stdout.contains(&format!("rank {rank} of 4 ok")),
            "{}",
            r.stdout
        );
    }
    dir.assert_clean();
}

#[test]
fn a_dead_rank_makes_the_others_fail_on_their_own_before_the_grace_ends() {
    let dir = Dir::new();
    let r = run(rank_command(&dir, "3", "die"));
    assert_eq!(r.code, Some(5), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("goalrun: rank 0 (pid ") && r.stderr.contains("exited with status 5"),
        "{}",
        r.stderr
    );
    for rank in 1..3 {
        assert!(
            r.stdout.contains(&format!("rank {rank} error: ")),
            "{}",
            r.stdout
        );
    }
    assert!(
        r.stdout.contains("rank 0"),
        "the error names the dead rank: {}",
        r.stdout
    );
    assert!(!r.stderr.contains("sending SIGTERM"), "{}", r.stderr);
    assert!(r.took < Duration::from_secs(3), "took {:?}", r.took);
}

/// goalrun of `n` ranks where rank 1 only runs `exit STATUS` and the others,
/// after `delay` (seconds, for sleep(1)), run the bootstrap as `rank_entry`.
fn one_rank_leaves_before_joining(dir: &Dir, n: &str, status: u8, delay: &str) -> Command {
    let script = format!(
        "if [ \"$GOAL_RANK\" = 1 ]; then exit {status}; fi; sleep {delay}; exec \"$0\" \"$@\""
    );
    rank_job(
        dir,
        &["-n", n, "--timeout", "30"],
        &["sh", "-c", &script],
        "ok",
    )
}

#[test]
fn a_rank_that_exits_0_before_joining_fails_the_job_instead_of_hanging() {
    // Delay 0: the others join while rank 1 leaves (either order); 0.5 s:
    // rank 1 is gone before anyone joins.
    for (n, delay) in [("2", "0"), ("4", "0"), ("2", "0.5"), ("4", "0.5")] {
        let dir = Dir::new();
        let r = run(one_rank_leaves_before_joining(&dir, n, 0, delay));
        let all = format!("{}\n{}", r.stdout, r.stderr);
        assert!(
            r.code != Some(0) && r.code != Some(124),
            "n={n} delay={delay}: exit {:?}\n{all}",
            r.code
        );
        assert!(
            r.stderr.contains("goalrun: rank 1 (pid ")
                && r.stderr
                    .contains("exited with status 0 before it joined the job's bootstrap"),
            "n={n} delay={delay}: goalrun does not name the rank that left\n{all}"
        );
        let others = n.parse::<usize>().unwrap() - 1;
        let told = lines_with(&r.stdout, "rank 1 (pid ", "before it joined");
        assert_eq!(
            told, others,
            "n={n} delay={delay}: every other rank is told why\n{all}"
        );
        assert!(
            r.took < Duration::from_secs(5),
            "n={n} delay={delay}: took {:?}",
            r.took
        );
        dir.assert_clean();
    }
    // Ranks that never use the bootstrap may end as they like.
    let dir = Dir::new();
    let r = run(dir.goalrun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "[ \"$GOAL_RANK\" = 1 ] && exit 0; sleep 0.2",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn a_rank_that_exits_1_before_joining_is_named_to_ranks_that_connect_later() {
    // The others connect after goalrun has seen rank 1 fail (and aborted
    // the bootstrap), within the grace period: they are told why, rather
    // than finding the socket gone.
    for n in ["2", "3"] {
        let dir = Dir::new();
        let r = run(one_rank_leaves_before_joining(&dir, n, 1, "0.5"));
        let all = format!("{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.code, Some(1), "n={n}: {all}");
        assert!(!all.contains("cannot connect"), "n={n}: {all}");
        let others = n.parse::<usize>().unwrap() - 1;
        let told = lines_with(&r.stdout, "rank 1 (pid ", "exited with status 1");
        assert_eq!(told, others, "n={n}: every other rank names rank 1\n{all}");
        assert!(!r.stderr.contains("sending SIGTERM"), "{all}");
        dir.assert_clean();
    }
}

#[test]
fn a_killed_goalruns_directory_is_removed_by_the_next_goalrun() {
    let dir = Dir::new();
    let files = kill_goalrun_under_its_ranks(&dir, Duration::from_secs(5));
    let left = dir.leftovers();
    assert_eq!(left.len(), 1, "the killed goalrun's directory: {left:?}");
    for f in &files {
        let _ = std::fs::remove_file(f);
    }

    // A live goalrun's directory is left alone by the next one...
    let mut live = dir
        .goalrun(&["-n", "1", "sh", "-c", RECORD_PID_AND_SLEEP])
        .spawn()
        .unwrap();
    wait_for_files(&files[..1], Duration::from_secs(10));
    let r = run(dir.goalrun(&["-n", "1", "true"]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // ... while the dead one's is gone.
    let now = dir.leftovers();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, left, "the killed goalrun's directory is still there");
    // SAFETY: kill takes plain integers; the pid is goalrun's, not yet reaped.
    assert_eq!(unsafe { libc::kill(live.id() as i32, libc::SIGTERM) }, 0);
    live.wait().unwrap();
    dir.assert_clean();
}
