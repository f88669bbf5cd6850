//! `from_env` under real launchers, as processes: Open MPI's mpirun (PMIx),
//! MPICH's mpiexec (PMI-1 over PMI_FD, and PMI_PORT mode), and goal's TCP
//! store with Slurm-like and hand-set environments, including ranks killed
//! in the middle of an allgather. Every rank is the crate's
//! `goal-boot-check` binary, which checks rank, size, several allgather
//! rounds, the shared secret and the host count, and prints one OK line.
//!
//! A test whose launcher is not installed prints "skipped: ..." and passes
//! (scripts/install-deps.sh installs both MPIs). The srun test uses a Slurm
//! that answers (`SLURM_CONF`, or /etc/slurm/slurm.conf; `tests/slurm-up.sh`
//! starts one on this machine), else starts one itself on a one-host emulated
//! cluster (`goal_netns::Slurm`, as root); with neither it says "skipped".
//! srun across several hosts is crates/goal-cli/tests/slurm.rs.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const CHECK: &str = env!("CARGO_BIN_EXE_goal-boot-check");

/// How long any one job may take before the test kills it and fails.
const JOB_LIMIT: Duration = Duration::from_secs(120);

/// Variable prefixes of launchers, removed from every child's environment so
/// that the test's own environment cannot leak into the job.
const LAUNCHER_PREFIXES: [&str; 8] = [
    "GOAL_", "OMPI_", "PMI_", "PMIX_", "SLURM_", "MASTER_", "PRTE_", "HYDRA_",
];

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

macro_rules! require {
    ($program:expr) => {
        match find($program) {
            Some(p) => p,
            None => {
                println!("skipped: {} not found", $program);
                return;
            }
        }
    };
}

fn command(program: impl Into<PathBuf>) -> Command {
    let mut cmd = Command::new(program.into());
    strip_launcher_env(&mut cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Removes what would tell a child it is a rank of some job already.
fn strip_launcher_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        // SLURM_CONF says where the cluster is, not who this process is.
        if (LAUNCHER_PREFIXES.iter().any(|p| name.starts_with(p)) && name != "SLURM_CONF")
            || ["RANK", "WORLD_SIZE"].contains(&name.as_str())
        {
            cmd.env_remove(&name);
        }
    }
}

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    fn describe(&self) -> String {
        format!(
            "status {}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Waits for `child` until `limit`, then kills it and panics with what it said.
fn finish(mut child: Child, limit: Duration) -> Output {
    // A stream the caller took already reads as empty here.
    fn drain(stream: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
        thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = stream {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    }
    let reader = drain(child.stdout.take());
    let err_reader = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let status = child.wait().unwrap();
            let out = Output {
                status,
                stdout: reader.join().unwrap(),
                stderr: err_reader.join().unwrap(),
            };
            panic!(
                "the job ran over {limit:?} and was killed\n{}",
                out.describe()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// Checks that `out` has an OK line from every rank of `size`, via `kind`,
/// all with the same job id, all on one host.
fn assert_all_ok(out: &Output, size: usize, kind: &str) {
    assert!(out.status.success(), "{}", out.describe());
    let mut jobs = Vec::new();
    for rank in 0..size {
        let prefix = format!("OK rank {rank} of {size} via {kind} job ");
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no '{prefix}...' line\n{}", out.describe()));
        assert!(line.ends_with(" hosts 1"), "{line}");
        jobs.push(line[prefix.len()..].split(' ').next().unwrap().to_owned());
    }
    assert!(
        jobs.iter().all(|j| j == &jobs[0]),
        "job ids differ: {jobs:?}"
    );
}

/// A port free now whose next port is free too (torchrun-style jobs serve
/// goal's store at MASTER_PORT + 1), never one this process handed out or
/// a neighbour of one: tests run in parallel, and one test's MASTER_PORT + 1
/// was another's store port (CI, "Address already in use").
///
/// The port lies below the kernel's ephemeral range: a port the kernel
/// picked for us (`bind(0)`) was free only until the kernel gave it to
/// another socket, such as an outgoing connection or a listener of a job
/// running beside this one, before the store bound it (CI again).
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral.saturating_sub(FIRST + 2).max(1_000);
    // Each test process starts at its own place, and steps by 3 so that a
    // port and its neighbours are handed out once.
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(u32::MAX, (u64::from(std::process::id()) * 7919 % u64::from(span)) as u32, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..span {
        let port = (FIRST + NEXT.fetch_add(3, Ordering::SeqCst) % span) as u16;
        // Free on every address (the torch store binds 0.0.0.0).
        let free = |p: u16| TcpListener::bind(("0.0.0.0", p)).is_ok();
        if free(port) && free(port + 1) {
            return port;
        }
    }
    panic!("no free port pair between {FIRST} and {ephemeral}");
}

fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn open_mpi(np: usize) -> Option<Command> {
    let mpirun = find("mpirun.openmpi")?;
    let mut cmd = command(mpirun);
    // As root Open MPI refuses to run without this; the test machine has 2
    // cores, hence oversubscription and no binding.
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ])
    .args(["-np", &np.to_string()]);
    Some(cmd)
}

#[test]
fn open_mpi_mpirun_exchanges_through_pmix() {
    require!("mpirun.openmpi");
    let mut cmd = open_mpi(3).unwrap();
    cmd.args(["-x", "GOAL_BOOT_CHECK_KIND=pmix", CHECK]);
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 3, "pmix");
}

#[test]
fn open_mpi_mpirun_can_use_the_goal_store_instead() {
    require!("mpirun.openmpi");
    let store = format!("GOAL_STORE=127.0.0.1:{}", free_port());
    let secret = format!("GOAL_SECRET={}", new_secret());
    let mut cmd = open_mpi(3).unwrap();
    cmd.args(["-x", "GOAL_BOOT=store", "-x", &store, "-x", &secret])
        .args(["-x", "GOAL_BOOT_CHECK_KIND=store", CHECK]);
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 3, "store");
}

#[test]
fn without_libpmix_open_mpi_falls_back_to_a_store_or_says_what_is_missing() {
    require!("mpirun.openmpi");
    let missing = "GOAL_PMIX_LIBRARY=/nonexistent/libpmix.so.2";
    let mut cmd = open_mpi(2).unwrap();
    cmd.args(["-x", missing, CHECK]);
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("cannot load /nonexistent/libpmix.so.2")
            && out.stderr.contains("libpmix2")
            && out.stderr.contains("GOAL_STORE"),
        "{}",
        out.describe()
    );

    let store = format!("GOAL_STORE=127.0.0.1:{}", free_port());
    let secret = format!("GOAL_SECRET={}", new_secret());
    let mut cmd = open_mpi(2).unwrap();
    cmd.args(["-x", missing, "-x", &store, "-x", &secret, CHECK]);
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 2, "store");
}

/// Runs `cmd` (a launcher starting goal-boot-check with rank 1 told to
/// stall), kills rank 1 once it stalls, and checks that the launcher's job
/// ends, failed, instead of hanging in the next allgather.
fn killed_rank_ends_the_job(mut cmd: Command) {
    cmd.env("GOAL_BOOT_CHECK_STALL_RANK", "1");
    let mut job = cmd.spawn().unwrap();
    let stdout = job.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(pid) = line.strip_prefix("STALLED rank 1 pid ") {
                let _ = tx.send(pid.trim().parse::<i32>().unwrap());
            }
        }
    });
    let Ok(pid) = rx.recv_timeout(JOB_LIMIT) else {
        let _ = job.kill();
        panic!("rank 1 never stalled");
    };
    thread::sleep(Duration::from_millis(300));
    // SAFETY: kill takes plain integers; `pid` is rank 1, a process this
    // test's job started and that is still waiting to be killed.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let killed_at = Instant::now();
    let out = finish(job, Duration::from_secs(60));
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        killed_at.elapsed() < Duration::from_secs(30),
        "the job took {:?} to end",
        killed_at.elapsed()
    );
}

#[test]
fn open_mpi_ends_the_job_when_a_rank_is_killed_mid_allgather() {
    require!("mpirun.openmpi");
    let mut cmd = open_mpi(3).unwrap();
    cmd.args(["-x", "GOAL_BOOT_CHECK_STALL_RANK=1", CHECK]);
    killed_rank_ends_the_job(cmd);
}

#[test]
fn mpich_ends_the_job_when_a_rank_is_killed_mid_allgather() {
    let mpiexec = require!("mpirun.mpich");
    let mut cmd = command(mpiexec);
    cmd.args(["-np", "3", CHECK]);
    killed_rank_ends_the_job(cmd);
}

#[test]
fn mpich_mpiexec_exchanges_through_pmi_fd() {
    let mpiexec = require!("mpirun.mpich");
    let mut cmd = command(mpiexec);
    cmd.args(["-np", "3", CHECK])
        .env("GOAL_BOOT_CHECK_KIND", "pmi");
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 3, "pmi");
}

#[test]
fn mpich_mpiexec_pmi_port_mode() {
    let mpiexec = require!("mpirun.mpich");
    let mut cmd = command(mpiexec);
    // With GOAL_SECRET, rank 0 publishes it and the others check it.
    cmd.args(["-pmi-port", "-np", "3", CHECK])
        .env("GOAL_BOOT_CHECK_KIND", "pmi")
        .env("GOAL_SECRET", new_secret());
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 3, "pmi");
}

/// One rank of a store job, started by hand with Slurm's variables, the way
/// `srun --mpi=none` would start it.
fn srun_rank(port: u16, secret: &str, rank: usize, size: usize) -> Command {
    let mut cmd = command(CHECK);
    cmd.env("GOAL_STORE", format!("127.0.0.1:{port}"))
        .env("GOAL_SECRET", secret)
        .env("SLURM_PROCID", rank.to_string())
        .env("SLURM_NTASKS", size.to_string())
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_STEP_ID", "7")
        .env("SLURM_LOCALID", rank.to_string())
        .env("GOAL_BOOT_CHECK_KIND", "store");
    cmd
}

fn collect(children: Vec<Child>) -> Output {
    let outs: Vec<Output> = children.into_iter().map(|c| finish(c, JOB_LIMIT)).collect();
    let failed = outs.iter().find(|o| !o.status.success());
    Output {
        status: failed.unwrap_or(&outs[0]).status,
        stdout: outs.iter().map(|o| o.stdout.as_str()).collect(),
        stderr: outs.iter().map(|o| o.stderr.as_str()).collect(),
    }
}

#[test]
fn store_with_an_srun_environment_and_rank_0_starting_last() {
    let (port, secret, size) = (free_port(), new_secret(), 4);
    let mut children: Vec<Child> = (1..size)
        .map(|r| srun_rank(port, &secret, r, size).spawn().unwrap())
        .collect();
    // The others wait for rank 0's store, retrying.
    thread::sleep(Duration::from_millis(700));
    children.insert(0, srun_rank(port, &secret, 0, size).spawn().unwrap());
    let out = collect(children);
    assert_all_ok(&out, size, "store");
    assert!(
        out.stdout.contains("job slurm-4242.7 "),
        "{}",
        out.describe()
    );
}

/// A store job of `size` ranks at `MASTER_ADDR=127.0.0.1`, `MASTER_PORT=port`
/// with a fresh secret, each rank's own variables set by `rank_env`; the
/// ranks' outputs together.
fn master_addr_job(port: u16, size: usize, rank_env: impl Fn(&mut Command, usize)) -> Output {
    let secret = new_secret();
    let children = (0..size)
        .map(|r| {
            let mut cmd = command(CHECK);
            cmd.env("MASTER_ADDR", "127.0.0.1").env("MASTER_PORT", port.to_string()).env("GOAL_SECRET", &secret);
            rank_env(&mut cmd, r);
            cmd.spawn().unwrap()
        })
        .collect();
    collect(children)
}

#[test]
fn store_with_goal_rank_and_size_set_by_hand() {
    let size = 3;
    let out = master_addr_job(free_port(), size, |cmd, r| {
        cmd.env("GOAL_RANK", r.to_string())
            .env("GOAL_SIZE", size.to_string())
            .env("GOAL_JOB", "by-hand");
    });
    assert_all_ok(&out, size, "store");
    assert!(out.stdout.contains("job by-hand "), "{}", out.describe());
}

/// torchrun's environment: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`,
/// `MASTER_PORT`, with torch's own store already listening on MASTER_PORT
/// (as torchrun's agent does). goal's store goes beside it, at
/// MASTER_PORT + 1, so both live.
#[test]
fn torchrun_environment_leaves_master_port_to_torch() {
    let size = 3;
    // A MASTER_PORT whose next port is free too.
    let port = free_port();
    let torch_store = TcpListener::bind(("0.0.0.0", port)).unwrap();
    let out = master_addr_job(port, size, |cmd, r| {
        cmd.env("RANK", r.to_string())
            .env("LOCAL_RANK", r.to_string())
            .env("WORLD_SIZE", size.to_string())
            .env("TORCHELASTIC_RUN_ID", "t1");
    });
    assert_all_ok(&out, size, "store");
    assert!(out.stdout.contains("job torch-t1 "), "{}", out.describe());
    drop(torch_store);
}

/// Starts a store job of `size` in which rank `victim` stalls after the
/// first round; kills it once the others are blocked in the second round;
/// returns the others' outputs and how long they took to end after the kill.
fn kill_mid_allgather(size: usize, victim: usize) -> (Vec<Output>, Duration) {
    let (port, secret) = (free_port(), new_secret());
    let mut children: Vec<Child> = (0..size)
        .map(|r| {
            let mut cmd = srun_rank(port, &secret, r, size);
            cmd.env("GOAL_BOOT_CHECK_STALL_RANK", victim.to_string());
            cmd.spawn().unwrap()
        })
        .collect();
    let mut stalled = children.remove(victim);
    let (tx, rx) = mpsc::channel();
    let stdout = stalled.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("STALLED") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(JOB_LIMIT).is_err() {
        let _ = stalled.kill();
        let out = collect(children);
        panic!("rank {victim} never stalled\n{}", out.describe());
    }
    // The others finish round 0 and block in round 1, waiting for the victim.
    thread::sleep(Duration::from_millis(300));
    stalled.kill().unwrap();
    let killed_at = Instant::now();
    let _ = stalled.wait();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(30)))
        .collect();
    (outs, killed_at.elapsed())
}

#[test]
fn a_rank_killed_mid_allgather_fails_the_others_within_seconds() {
    let (outs, took) = kill_mid_allgather(4, 2);
    for out in &outs {
        assert!(!out.status.success(), "{}", out.describe());
        assert!(
            out.stderr.contains("FAILED rank")
                && out.stderr.contains("rank 2")
                && out.stderr.contains("left the job"),
            "{}",
            out.describe()
        );
    }
    assert!(took < Duration::from_secs(5), "the others took {took:?}");
}

#[test]
fn rank_0_killed_mid_allgather_fails_the_others_within_seconds() {
    let (outs, took) = kill_mid_allgather(3, 0);
    for out in &outs {
        assert!(!out.status.success(), "{}", out.describe());
        assert!(
            out.stderr.contains("the goal store at 127.0.0.1:")
                && out.stderr.contains("closed the connection"),
            "{}",
            out.describe()
        );
    }
    assert!(took < Duration::from_secs(5), "the others took {took:?}");
}

#[test]
fn a_rank_with_another_secret_is_refused_by_the_store() {
    let port = free_port();
    let mut rank0 = srun_rank(port, &new_secret(), 0, 2);
    rank0.env("GOAL_STORE_TIMEOUT", "2");
    let rank0 = rank0.spawn().unwrap();
    let out = finish(
        srun_rank(port, &new_secret(), 1, 2).spawn().unwrap(),
        JOB_LIMIT,
    );
    let mut rank0 = rank0;
    let _ = rank0.kill();
    let _ = rank0.wait();
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("refused this rank")
            && out.stderr.contains("GOAL_SECRET differs from rank 0's"),
        "{}",
        out.describe()
    );
}

#[test]
fn an_unreachable_store_is_an_error_naming_the_address() {
    let port = free_port();
    let mut cmd = srun_rank(port, &new_secret(), 1, 2);
    cmd.env("GOAL_STORE_TIMEOUT", "1");
    let started = Instant::now();
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains(&format!("cannot reach the goal store at 127.0.0.1:{port}"))
            && out.stderr.contains("within 1.0 s")
            && out.stderr.contains("GOAL_STORE_TIMEOUT"),
        "{}",
        out.describe()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn rank_0_of_a_store_gives_up_on_a_rank_that_never_starts() {
    let port = free_port();
    let mut cmd = srun_rank(port, &new_secret(), 0, 3);
    cmd.env("GOAL_STORE_TIMEOUT", "2");
    let started = Instant::now();
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("only 1 of 3 ranks joined the goal store at 127.0.0.1:")
            && out.stderr.contains("within 2.0 s")
            && out.stderr.contains("rank(s) 1, 2 never connected")
            && out.stderr.contains("GOAL_STORE_TIMEOUT"),
        "{}",
        out.describe()
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "took {took:?}"
    );
}

/// Runs one process of `goal-boot-check` with `vars` and returns its stderr,
/// asserting that it failed at start-up.
fn start_up_error(vars: &[(&str, &str)]) -> String {
    let mut cmd = command(CHECK);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr.starts_with("FAILED bootstrap: "),
        "{}",
        out.describe()
    );
    out.stderr
}

#[test]
fn half_set_environments_are_errors_that_name_the_variable() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: [Case; 9] = [
        (&[("SLURM_PROCID", "0")], &["SLURM_NTASKS"]),
        (
            &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")],
            &["--mpi=pmix", "GOAL_STORE"],
        ),
        (&[("PMIX_RANK", "0")], &["PMIX_NAMESPACE"]),
        (
            &[("PMIX_RANK", "0"), ("PMIX_NAMESPACE", "n")],
            &["PMIX_SERVER_URI"],
        ),
        (&[("PMI_FD", "3")], &["PMI_RANK"]),
        (
            &[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")],
            &["PMIX_RANK"],
        ),
        (&[("MASTER_ADDR", "127.0.0.1")], &["MASTER_PORT"]),
        (
            &[("GOAL_STORE", "127.0.0.1:1")],
            &["GOAL_RANK", "GOAL_SIZE"],
        ),
        (
            &[
                ("GOAL_STORE", "127.0.0.1:1"),
                ("GOAL_RANK", "0"),
                ("GOAL_SIZE", "2"),
            ],
            &["needs GOAL_SECRET"],
        ),
    ];
    for (vars, words) in cases {
        let e = start_up_error(vars);
        for w in words {
            assert!(e.contains(w), "{vars:?}: '{w}' not in {e}");
        }
    }
    // Present but garbled: named with the value (GOAL_SECRET never shown).
    let e = start_up_error(&[("PMI_FD", "x"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")]);
    assert!(e.contains("PMI_FD='x'"), "{e}");
    let e = start_up_error(&[("GOAL_SECRET", "not-a-secret")]);
    assert!(
        e.contains("GOAL_SECRET must be 64 hex digits") && !e.contains("not-a-secret"),
        "{e}"
    );
}

#[test]
fn no_launcher_is_a_group_of_one() {
    let out = finish(command(CHECK).spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 1, "single");
    // A one-task srun step too.
    let mut cmd = command(CHECK);
    cmd.env("SLURM_PROCID", "0").env("SLURM_NTASKS", "1");
    assert_all_ok(&finish(cmd.spawn().unwrap(), JOB_LIMIT), 1, "single");
}

/// `srun`, if a Slurm configuration exists and its cluster answers `sinfo`
/// with a usable node. (Without a configuration file sinfo would look for
/// one in DNS; the test does not let it.)
fn slurm() -> Option<PathBuf> {
    let conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"));
    if !conf.is_file() {
        return None;
    }
    let (srun, sinfo) = (find("srun")?, find("sinfo")?);
    let mut cmd = command(sinfo);
    cmd.args(["-h", "-o", "%t"]);
    let out = finish(cmd.spawn().ok()?, Duration::from_secs(30));
    let usable = ["idle", "mix", "alloc"];
    (out.status.success() && usable.iter().any(|s| out.stdout.contains(s))).then_some(srun)
}

#[test]
fn srun_with_pmix_pmi2_and_the_goal_store() {
    if let Some(srun) = slurm() {
        return srun_checks(&|| command(&srun));
    }
    // No Slurm answers: start one on a one-host emulated cluster (root).
    if let Err(why) = goal_netns::available().and_then(|_| goal_netns::slurm::available()) {
        println!("skipped: no Slurm cluster answers, and none can be started here: {why}");
        return;
    }
    let name = format!("gb{}", std::process::id() % 100_000);
    let cluster = goal_netns::Cluster::create(&goal_netns::Spec::new(1, 1).name(&name))
        .expect("a one-host cluster");
    let slurm = goal_netns::Slurm::start(&cluster).expect("Slurm on it");
    srun_checks(&|| {
        let mut cmd = slurm.srun();
        strip_launcher_env(&mut cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    });
}

/// The srun jobs: rank, size and addresses through PMIx, through PMI-2,
/// and through goal's store with `--mpi=none`; and `--mpi=none` alone, which
/// must fail with a message naming what is missing. `srun` gives a fresh
/// `srun` command.
fn srun_checks(srun: &dyn Fn() -> Command) {
    let srun_job = |mpi: &str| {
        let mut cmd = srun();
        // -O: more tasks than the node has cores.
        cmd.args(["-O", "-n", "3", &format!("--mpi={mpi}"), CHECK]);
        cmd
    };
    for (mpi, kind) in [("pmix", "pmix"), ("pmi2", "pmi")] {
        let mut cmd = srun_job(mpi);
        cmd.env("GOAL_BOOT_CHECK_KIND", kind);
        let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
        assert_all_ok(&out, 3, kind);
    }
    let mut cmd = srun_job("none");
    cmd.env("GOAL_STORE", format!("127.0.0.1:{}", free_port()))
        .env("GOAL_SECRET", new_secret())
        .env("GOAL_BOOT_CHECK_KIND", "store");
    let out = finish(cmd.spawn().unwrap(), JOB_LIMIT);
    assert_all_ok(&out, 3, "store");
    assert!(out.stdout.contains("job slurm-"), "{}", out.describe());
    // --mpi=none alone: every rank says what is missing.
    let out = finish(srun_job("none").spawn().unwrap(), JOB_LIMIT);
    assert!(!out.status.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("--mpi=pmix") && out.stderr.contains("GOAL_STORE"),
        "{}",
        out.describe()
    );
}
