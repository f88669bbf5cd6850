//! goal under Slurm across machines: the emulated cluster of multihost.rs
//! (4 hosts, 1 Gbit/s rails, see goal-netns) with a real Slurm on it
//! (`goal_netns::Slurm`: slurmctld on host 0, one slurmd per host, munge),
//! and jobs started the way users start them:
//! `srun -N 4 -n 8 --ntasks-per-node=2 --mpi=pmix|pmi2 PROGRAM`.
//!
//! Each job is this test binary's ring exchange (in two progress modes) or
//! one of the C acceptance programs that run at 8 ranks, plus `t_coll` (every
//! collective and algorithm). Every rank must succeed, and every rank reports
//! the hostname it ran on: ranks 2h and 2h+1 on host h, 4 hosts in all.
//! With 1 rail goal boots through PMIx (`--mpi=pmix`), with 2 rails through
//! PMI-2 (`--mpi=pmi2`); `t_coll` runs under both, and the ring also with
//! `--mpi=none` and goal's TCP store (`GOAL_STORE` on host 0, rank and size from `SLURM_PROCID` and
//! `SLURM_NTASKS`).
//!
//! Needs root (namespaces, Slurm's daemons) and Debian's slurmd, slurmctld,
//! slurm-client and munge (scripts/install-deps.sh installs them); without
//! them the test says "skipped" and passes.

mod util;

use goal_netns::{Cluster, Slurm, Spec};
use std::process::Output;
use std::time::{Duration, Instant};
use util::in_job;

const HOSTS: usize = 4;
const PER_HOST: usize = 2;
const RANKS: usize = HOSTS * PER_HOST;

/// How long one job may run before it is killed and the test fails.
const JOB_LIMIT: Duration = Duration::from_secs(120);

/// Set for the ranks of a `--mpi=none` job, which have no launcher variable
/// `in_job` knows (a batch script has `SLURM_PROCID` too).
const STORE_RANK: &str = "GOAL_TEST_SLURM_STORE_RANK";

/// The hostname this process sees (its UTS namespace's).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").expect("reading the hostname").trim().to_owned()
}

/// `srun -N 4 -n 8 --ntasks-per-node=2 --mpi=MPI PROGRAM...` on host 0 with
/// goal using `rails` rails; returns its output (killed after JOB_LIMIT).
fn srun(slurm: &Slurm, rails: usize, mpi: &str, env: &[(&str, &str)], program: &[&str]) -> Output {
    let rail_names: Vec<String> = (0..rails).map(|r| format!("rail{r}")).collect();
    let mut cmd = slurm.srun();
    cmd.args(["-N", &HOSTS.to_string(), "-n", &RANKS.to_string()])
        .arg(format!("--ntasks-per-node={PER_HOST}"))
        .arg(format!("--mpi={mpi}"))
        // One failed rank ends the step at once instead of leaving the
        // others waiting for it until the time limit.
        .arg("--kill-on-bad-exit=1")
        .args(program)
        .env("GOAL_RAILS", rail_names.join(","));
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Its tasks end with the Slurm value when it is killed.
    util::output_within(cmd, JOB_LIMIT)
}

/// Asserts that the job succeeded and that its lines holding `prefix`
/// say rank r ran on host r / PER_HOST, one line per rank, 4 hosts in all.
/// Such a line reads `... PREFIX rank=R host=H node=N` (N: Slurm's name
/// of the node).
fn check(out: &Output, slurm: &Slurm, prefix: &str, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let job = || format!("{what}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- Slurm's logs\n{}", slurm.logs());
    assert!(out.status.success(), "{}: {}", out.status, job());
    let mut placed: Vec<(usize, String, String)> = stdout
        .lines()
        // The test harness of a ring rank writes "test NAME ... " first.
        .filter_map(|l| l.find(prefix).map(|i| &l[i + prefix.len()..]))
        .map(|l| {
            let field = |k: &str| {
                l.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or_else(|| panic!("no {k} in {l:?}: {}", job())).to_owned()
            };
            (field("rank=").parse().expect("a rank"), field("host="), field("node="))
        })
        .collect();
    placed.sort();
    let want: Vec<(usize, String, String)> = (0..RANKS)
        .map(|r| {
            let host = format!("host{}", r / PER_HOST);
            (r, host.clone(), host)
        })
        .collect();
    assert_eq!(placed, want, "ranks and their hosts: {}", job());
}

/// A directory removed when the test ends, also by a panic.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn srun_across_hosts() {
    if in_job() || std::env::var_os(STORE_RANK).is_some() {
        let (me, n) = util::ring_exchange_rank();
        assert_eq!(n, RANKS);
        let procid = std::env::var("SLURM_PROCID").unwrap_or_default();
        assert_eq!(procid, me.to_string(), "goal's rank against srun's");
        let node = std::env::var("SLURMD_NODENAME").unwrap_or_default();
        println!("ring ok rank={me} host={} node={node}", hostname());
        return;
    }
    if let Err(why) = goal_netns::available().and_then(|()| goal_netns::slurm::available()) {
        println!("skipped: {why}");
        return;
    }
    let started = Instant::now();
    let (out_dir, bins) = util::build_acceptance_programs(RANKS, "srun-ctests", &["t_coll"]);
    let _remove = RemoveOnDrop(out_dir);
    let exe = std::env::current_exe().expect("test binary");
    let exe = exe.to_str().expect("a UTF-8 path");
    // Each C program runs through a shell that reports where it is, then
    // becomes the program (same pid, same PMI connection).
    let report = r#"printf 'ran rank=%s host=%s node=%s\n' "$SLURM_PROCID" "$(hostname)" "$SLURMD_NODENAME"; exec "$0" "$@""#;
    for (rails, mpi) in [(1, "pmix"), (2, "pmi2")] {
        let c = Cluster::create(&Spec::new(HOSTS, rails).rate("1gbit".parse().expect("rate"))).expect("creating the emulated cluster");
        let t = Instant::now();
        let slurm = Slurm::start(&c).unwrap_or_else(|e| panic!("starting Slurm: {e}"));
        eprintln!("{rails} rail(s): Slurm up in {:.1?}", t.elapsed());
        let ring = [exe, "srun_across_hosts", "--exact", "--nocapture", "--test-threads=1"];
        for mode in ["thread", "manual"] {
            let t = Instant::now();
            let out = srun(&slurm, rails, mpi, &[("GOAL_PROGRESS", mode)], &ring);
            check(&out, &slurm, "ring ok ", &format!("ring exchange, --mpi={mpi}, {rails} rail(s), GOAL_PROGRESS={mode}"));
            eprintln!("  ring, --mpi={mpi}, {mode}: {:.1?}", t.elapsed());
        }
        if rails == 1 {
            // Rank 0 (on host 0) serves the store; any port is free there.
            let store = format!("{}:29811", c.host(0).addr(0));
            let secret: String = (0..32).map(|i| format!("{:02x}", (std::process::id() as usize * 31 + i * 7) as u8)).collect();
            let env = [("GOAL_STORE", store.as_str()), ("GOAL_SECRET", &secret), (STORE_RANK, "1")];
            let t = Instant::now();
            let out = srun(&slurm, rails, "none", &env, &ring);
            check(&out, &slurm, "ring ok ", &format!("ring exchange, --mpi=none and GOAL_STORE={store}, {rails} rail(s)"));
            eprintln!("  ring, --mpi=none, GOAL_STORE: {:.1?}", t.elapsed());
        }
        for bin in &bins {
            let coll = bin.ends_with("t_coll");
            let mpis: &[&str] = if coll { &["pmix", "pmi2"] } else { &[mpi] };
            let bin = bin.to_str().expect("a UTF-8 path");
            for mpi in mpis {
                let t = Instant::now();
                let out = srun(&slurm, rails, mpi, &[], &["sh", "-c", report, bin, &RANKS.to_string()]);
                check(&out, &slurm, "ran ", &format!("{bin} under srun --mpi={mpi}, {HOSTS} hosts x {PER_HOST} ranks, {rails} rail(s)"));
                eprintln!("  {bin}, --mpi={mpi}: {:.1?}", t.elapsed());
            }
        }
        if rails == 1 {
            // `goal run` of a Schedgen file of 8 ranks, one part per rank.
            let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/goal-corpus/schedgen-schedule.goal");
            let t = Instant::now();
            let out = srun(&slurm, rails, mpi, &[], &["sh", "-c", report, env!("CARGO_BIN_EXE_goal"), "run", file]);
            check(&out, &slurm, "ran ", &format!("goal run {file} under srun --mpi={mpi}"));
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains(": 8 ranks, ") && stdout.contains("bytes checked on"), "goal run's report:\n{stdout}");
            eprintln!("  goal run, --mpi={mpi}: {:.1?}", t.elapsed());
        }
        let t = Instant::now();
        slurm.stop().expect("stopping Slurm");
        eprintln!("{rails} rail(s): Slurm stopped in {:.1?}", t.elapsed());
    }
    eprintln!("all jobs in {:.1?}", started.elapsed());
}
