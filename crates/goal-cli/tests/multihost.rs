//! goal across machines: an emulated cluster of 4 hosts (network
//! namespaces, 1 Gbit/s rails, see goal-netns) with 2 ranks each, launched by
//! Open MPI's `mpirun` across the hosts, with 1 and 2 rails. Ranks on one host
//! talk through shared memory, ranks on different hosts over TCP.
//!
//! Needs root (namespaces) and Open MPI; without them every test says
//! "skipped" and passes.

mod util;

use goal_netns::{Cluster, Spec};
use goal_sched::{Buf, Graph};
use std::ops::Deref;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};
use util::{in_job, pattern};

const HOSTS: usize = 4;
const PER_HOST: usize = 2;

/// The cluster, or why there is none (then the test is skipped).
fn cluster(rails: usize) -> Option<Held<Shared>> {
    if Command::new("mpirun.openmpi").arg("--version").output().is_err() {
        eprintln!("skipped: mpirun.openmpi not found (scripts/install-deps.sh installs it)");
        return None;
    }
    cluster_of(HOSTS, rails)
}

fn rail_names(rails: usize) -> String {
    (0..rails).map(|r| format!("rail{r}")).collect::<Vec<_>>().join(",")
}

/// Runs `program args` as HOSTS x PER_HOST ranks under mpirun on `c`, with
/// goal using `rails` rails; returns the output (killed after `limit`).
fn mpirun(c: &Cluster, rails: usize, env: &[(&str, &str)], program: &Path, args: &[&str], limit: Duration) -> Output {
    let mut a: Vec<String> = vec!["-x".into(), format!("GOAL_RAILS={}", rail_names(rails))];
    for (k, v) in env {
        a.push("-x".into());
        a.push(format!("{k}={v}"));
    }
    a.push(program.display().to_string());
    a.extend(args.iter().map(|s| s.to_string()));
    let rails_idx: Vec<usize> = (0..rails).collect();
    let mut cmd = c.mpirun_openmpi(HOSTS * PER_HOST, PER_HOST, Some(&rails_idx), &a).expect("mpirun command");
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("starting mpirun");
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let watchdog = std::thread::spawn(move || {
        let t = Instant::now();
        while t.elapsed() < limit {
            if d2.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill on a pid we started; at worst it is already gone.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().expect("waiting for mpirun");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watchdog.join();
    out
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs this test binary's test `name` as the ranks of a job on the cluster.
fn run_self(c: &Cluster, rails: usize, name: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary");
    mpirun(c, rails, env, &exe, &[name, "--exact", "--nocapture", "--test-threads=1"], Duration::from_secs(120))
}

/// Every rank sends to rank+1 and receives from rank-1 (neighbours on the
/// same host and across hosts alike), every size from one byte to 16 MiB:
/// eager and rendezvous, shared memory and TCP.
#[test]
fn ring_exchange_across_hosts() {
    if in_job() {
        util::ring_exchange_rank();
        return;
    }
    for rails in [1, 2] {
        let Some(c) = cluster(rails) else { return };
        for mode in ["manual", "thread"] {
            let out = run_self(&c, rails, "ring_exchange_across_hosts", &[("GOAL_PROGRESS", mode)]);
            check(&out, &format!("ring exchange, {rails} rail(s), {mode}"));
        }
    }
}

/// `GOAL_NET_CC` across hosts: with a congestion control the kernel has, the
/// ring exchange runs on it; with one it does not have, every rank's
/// `GOAL_Init` fails saying so, and the job ends instead of hanging.
#[test]
fn a_congestion_control_from_the_environment_carries_the_job_or_fails_init() {
    if in_job() {
        util::ring_exchange_rank();
        return;
    }
    let Some(c) = cluster(1) else { return };
    let name = "a_congestion_control_from_the_environment_carries_the_job_or_fails_init";
    let out = run_self(&c, 1, name, &[("GOAL_NET_CC", "reno")]);
    check(&out, "ring exchange with GOAL_NET_CC=reno");
    let out = run_self(&c, 1, name, &[("GOAL_NET_CC", "no_such_cc")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "GOAL_NET_CC=no_such_cc: the job succeeded\n{err}");
    assert!(err.contains("no_such_cc") && err.contains("(GOAL_NET_CC): not in this kernel"), "GOAL_NET_CC=no_such_cc: no reason given\n{err}");
}

/// `goal run` of a Schedgen file of 8 ranks, across the 4 hosts under
/// mpirun: every rank reads its part of the file, and every byte the file
/// says who sends is checked at its receiver.
#[test]
fn goal_run_of_a_text_schedule_across_hosts() {
    let Some(c) = cluster(1) else { return };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/goal-corpus/schedgen-schedule.goal");
    let file = file.to_str().expect("a UTF-8 path");
    let goal = Path::new(env!("CARGO_BIN_EXE_goal"));
    let out = mpirun(&c, 1, &[], goal, &["run", file, "--iterations", "3"], Duration::from_secs(120));
    check(&out, "goal run schedgen-schedule.goal under mpirun, 4 hosts x 2 ranks");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(": 8 ranks, 3 iteration(s)") && stdout.contains("bytes checked on"), "goal run's report:\n{stdout}");
}

/// A small message does not overtake a large one with the same tag, from
/// one host to another, when both wait unread for a receiver that starts
/// late (see the local test of the same name in `runtime.rs`).
#[test]
fn a_small_message_does_not_overtake_a_large_one_across_hosts() {
    if in_job() {
        // Ranks 2h and 2h+1 run on host h: 0 -> 2 and 4 -> 6 cross hosts.
        util::no_overtaking_rank(&[(0, 2), (4, 6)]);
        return;
    }
    let Some(c) = cluster(1) else { return };
    for mode in ["manual", "thread"] {
        let out = run_self(&c, 1, "a_small_message_does_not_overtake_a_large_one_across_hosts", &[("GOAL_PROGRESS", mode)]);
        check(&out, &format!("no overtaking across hosts, {mode}"));
    }
}

/// Kernel mode across hosts: a chain that receives and forwards through
/// all 8 ranks (crossing hosts at 1 -> 2, 3 -> 4 and 5 -> 6), a barrier of
/// empty messages and a ring exchange, each run 40 times with new data.
/// From their fourth execution the sends travel on channels of their own,
/// TCP connections between hosts, and run as linked io_uring operations:
/// every rank checks every execution's bytes, and the ranks' debug lines
/// must report channels over TCP.
#[test]
fn kernel_chains_cross_hosts() {
    if in_job() {
        kernel_chains_rank();
        return;
    }
    let Some(c) = cluster(1) else { return };
    let exe = std::env::current_exe().expect("test binary");
    let args = ["kernel_chains_cross_hosts", "--exact", "--nocapture", "--test-threads=1"];
    let out = mpirun(&c, 1, &[("GOAL_PROGRESS", "kernel"), ("GOAL_DEBUG", "1")], &exe, &args, Duration::from_secs(120));
    check(&out, "kernel chains across hosts");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("running as 'thread'") {
        eprintln!("skipped: no io_uring here, the job ran as 'thread'");
        return;
    }
    // "N channel(s) out, M in (T and U of them over TCP)", per rank (lines may interleave).
    let tcp: Vec<(u64, u64)> = err
        .split(" in (")
        .skip(1)
        .filter_map(|t| {
            let (a, rest) = t.split_once(" and ")?;
            let (b, _) = rest.split_once(" of them over TCP")?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(tcp.len(), HOSTS * PER_HOST, "a kernel-mode line per rank expected:\n{err}");
    assert!(tcp.iter().any(|&(o, i)| o > 0 && i > 0), "no rank used channels over TCP both ways:\n{err}");
    // Without io_uring the same job runs as 'thread', says so, and gets the same bytes.
    let off = [("GOAL_PROGRESS", "kernel"), ("GOAL_DEBUG", "1"), ("GOAL_IO_URING", "0")];
    let out = mpirun(&c, 1, &off, &exe, &args, Duration::from_secs(120));
    check(&out, "kernel chains across hosts, io_uring off");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("running as 'thread'"), "GOAL_IO_URING=0 should fall back to 'thread' and say so:\n{err}");
}

fn kernel_chains_rank() {
    let rt = goal_rt::init().expect("GOAL_Init");
    let (me, n) = (rt.rank() as i64, rt.size() as i64);
    const LEN: usize = 200;
    // The chain: 0 -> 1 -> ... -> n-1.
    let mut chain_buf = vec![0u8; LEN];
    let mut g = Graph::new();
    let at = Buf::user(chain_buf.as_mut_ptr() as u64);
    let recv = (me > 0).then(|| g.recv(at, LEN as i64, me - 1, 7));
    if me + 1 < n {
        let send = g.send(at, LEN as i64, me + 1, 7);
        if let Some(r) = recv {
            g.requires(r, send).unwrap();
        }
    }
    let chain = rt.compile(&g).unwrap();
    let barrier = rt.compile(&barrier_graph(&rt)).unwrap();
    // The ring: 8 bytes to the right (from word 0), 8 from the left (into word 1).
    let mut words = vec![0u64; 2];
    let mut g = Graph::new();
    g.send(Buf::user(words.as_mut_ptr() as u64), 8, (me + 1) % n, 9);
    g.recv(Buf::user(words[1..].as_mut_ptr() as u64), 8, (me + n - 1) % n, 9);
    let ring = rt.compile(&g).unwrap();
    for round in 0..40u64 {
        if me == 0 {
            for (i, b) in chain_buf.iter_mut().enumerate() {
                *b = pattern(round, i);
            }
        } else {
            chain_buf.fill(0);
        }
        // SAFETY: the buffers outlive each execution, waited for at once.
        unsafe { rt.run(&chain) }.unwrap().wait().unwrap_or_else(|e| panic!("rank {me}: chain, round {round}: {e}"));
        if let Some(i) = (0..LEN).find(|&i| chain_buf[i] != pattern(round, i)) {
            panic!("rank {me}: chain, round {round}: byte {i} is wrong");
        }
        // SAFETY: a barrier has no buffers.
        unsafe { rt.run(&barrier) }.unwrap().wait().unwrap_or_else(|e| panic!("rank {me}: barrier, round {round}: {e}"));
        words[0] = round << 8 | me as u64;
        // SAFETY: as for the chain.
        unsafe { rt.run(&ring) }.unwrap().wait().unwrap_or_else(|e| panic!("rank {me}: ring, round {round}: {e}"));
        assert_eq!(words[1], round << 8 | ((me + n - 1) % n) as u64, "rank {me}: ring, round {round}");
    }
    goal_rt::finalize().unwrap();
}

/// The C acceptance programs of `ctests/` that run at 8 ranks and expect
/// success, `t_coll` and `t_vcoll` (every collective and algorithm, with
/// per-rank counts too; their `ranks:` directives stop at 7 for the local
/// suite's time), `t_groups` (groups of one host and across hosts),
/// `t_threads` (seven threads per rank at once), `t_runbuf` (buffers given
/// at each run, resolved on the TCP paths too) and `t_userop` (user
/// reductions, commutative and not, combining what came over TCP), built
/// against this build's library, across the hosts, on 1 and 2 rails.
#[test]
fn c_acceptance_programs_across_hosts() {
    if in_job() {
        return;
    }
    let (out_dir, bins) = util::build_acceptance_programs(HOSTS * PER_HOST, "multihost", &["t_coll", "t_groups", "t_vcoll", "t_threads", "t_runbuf", "t_userop"]);
    for rails in [1, 2] {
        let Some(c) = cluster(rails) else { break };
        for bin in &bins {
            let out = mpirun(&c, rails, &[], bin, &[], Duration::from_secs(120));
            check(&out, &format!("{} on {HOSTS} hosts x {PER_HOST} ranks, {rails} rail(s)", bin.display()));
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Starts this test binary's test `name` as one rank per host, through the
/// TCP store (rank 0 serves it on its rail 0), with `env`.
fn spawn_per_host(c: &Cluster, name: &str, rails: usize, port: u16, env: &[(&str, &str)]) -> Vec<std::process::Child> {
    let exe = std::env::current_exe().expect("test binary");
    spawn_program_per_host(c, &exe, &[name, "--exact", "--nocapture", "--test-threads=1"], rails, port, env)
}

/// Starts `program args` as one rank per host, as [`spawn_per_host`] does.
fn spawn_program_per_host(c: &Cluster, program: &Path, args: &[&str], rails: usize, port: u16, env: &[(&str, &str)]) -> Vec<std::process::Child> {
    let secret: String = (0..32).map(|i| format!("{:02x}", (std::process::id() as usize * 31 + i * 7) as u8)).collect();
    (0..c.hosts())
        .map(|h| {
            let mut cmd = c.host(h).command(program);
            cmd.args(args)
                .env("GOAL_STORE", format!("{}:{port}", c.host(0).addr(0)))
                .env("GOAL_RANK", h.to_string())
                .env("GOAL_SIZE", c.hosts().to_string())
                .env("GOAL_SECRET", &secret)
                .env("GOAL_RAILS", rail_names(rails))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd.spawn().expect("starting a rank")
        })
        .collect()
}

/// Waits for every child, at most `limit` in all; returns (status, stderr).
fn wait_all(children: Vec<std::process::Child>, limit: Duration) -> Vec<(Option<i32>, String)> {
    let t = Instant::now();
    children
        .into_iter()
        .map(|mut ch| loop {
            if let Some(st) = ch.try_wait().expect("try_wait") {
                let mut err = String::new();
                if let Some(mut e) = ch.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                break (st.code(), err);
            }
            if t.elapsed() > limit {
                let _ = ch.kill();
                let _ = ch.wait();
                break (None, "timed out".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        })
        .collect()
}

/// Rank 0 streams 5 x 64 MiB to rank 1 over two rails; one rail of host 1
/// goes down in the middle. Its fragments are sent again on the other rail:
/// every byte arrives, the executions finish.
#[test]
fn a_rail_that_goes_down_mid_transfer_loses_nothing() {
    const LEN: usize = 64 << 20;
    if in_job() {
        let rt = goal_rt::init().expect("GOAL_Init");
        let me = rt.rank();
        let mut buf = vec![0u8; LEN];
        if me == 0 {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = pattern(9, i);
            }
        }
        let mut g = Graph::new();
        if me == 0 {
            g.send(Buf::user(buf.as_mut_ptr() as u64), LEN as i64, 1, 1);
        } else {
            g.recv(Buf::user(buf.as_mut_ptr() as u64), LEN as i64, 0, 1);
        }
        let s = rt.compile(&g).unwrap();
        for run in 0..5 {
            // SAFETY: the buffer outlives the execution.
            unsafe { rt.run(&s) }.unwrap().wait().unwrap_or_else(|e| panic!("rank {me} run {run}: {e}"));
            if me == 1 {
                if let Some(i) = buf.iter().enumerate().position(|(i, &b)| b != pattern(9, i)) {
                    panic!("run {run}: byte {i} is wrong");
                }
                buf.fill(0);
                if run == 0 {
                    util::open_gate();
                }
            }
        }
        goal_rt::finalize().unwrap();
        return;
    }
    let Some(c) = cluster_of(2, 2) else { return };
    // The rail goes down once rank 1 has the first 64 MiB (so both rails
    // are connected and 256 MiB are still to come), not after a fixed time:
    // on a loaded machine the ranks could still be connecting by then, and
    // a rail that is down while they connect fails GOAL_Init.
    let gate = util::Gate::new();
    let ranks = spawn_per_host(&c, "a_rail_that_goes_down_mid_transfer_loses_nothing", 2, 29701, &[("GOAL_NET_DEAD_AFTER", "1"), ("TEST_GATE", gate.var())]);
    gate.wait();
    c.set_rail(1, 1, false).expect("taking rail 1 of host 1 down");
    let res = wait_all(ranks, Duration::from_secs(60));
    for (r, (code, err)) in res.iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {err}");
    }
}

/// Four hosts in a loop of barriers; rank 2 is killed. Every other rank
/// ends with an error within seconds, the first to notice naming rank 2.
#[test]
fn a_rank_killed_on_another_host_fails_the_others_quickly() {
    if in_job() {
        let rt = goal_rt::init().expect("GOAL_Init");
        let s = rt.compile(&barrier_graph(&rt)).unwrap();
        for round in 0.. {
            // SAFETY: a barrier has no buffers.
            if let Err(e) = unsafe { rt.run(&s) }.unwrap().wait() {
                eprintln!("rank {}: {e}", rt.rank());
                std::process::exit(3);
            }
            if round == 10 && rt.rank() == 2 {
                util::open_gate();
            }
        }
    }
    let Some(c) = cluster_of(4, 1) else { return };
    // In kernel mode the barrier's messages travel on TCP channels from
    // its fourth round: the survivors wait on rank 2's in the kernel.
    for (mode, port) in [("thread", 29702), ("kernel", 29714)] {
        killed_rank_fails_the_others(&c, mode, port);
    }
}

fn killed_rank_fails_the_others(c: &Cluster, mode: &str, port: u16) {
    // Rank 2 is killed once it has passed a barrier, so every rank is past
    // GOAL_Init and in the loop: after a fixed time, a loaded machine could
    // still have ranks starting, which would fail in GOAL_Init instead.
    let gate = util::Gate::new();
    let env = [("TEST_GATE", gate.var()), ("GOAL_PROGRESS", mode)];
    let mut ranks = spawn_per_host(c, "a_rank_killed_on_another_host_fails_the_others_quickly", 1, port, &env);
    gate.wait();
    ranks[2].kill().expect("killing rank 2");
    let t = Instant::now();
    let res = wait_all(ranks, Duration::from_secs(30));
    let took = t.elapsed();
    // Survivors that stop in turn may name the one that left before them;
    // whoever noticed first names rank 2.
    for (r, (code, err)) in res.iter().enumerate() {
        if r == 2 {
            continue;
        }
        assert_eq!(*code, Some(3), "{mode}: rank {r} did not end with an error: {err}");
    }
    assert!(res.iter().enumerate().any(|(r, (_, err))| r != 2 && err.contains("rank 2")), "{mode}: no survivor names rank 2: {res:?}");
    assert!(took < Duration::from_secs(15), "{mode}: the survivors took {took:?}");
}

/// A dissemination barrier over the whole group, written directly.
fn barrier_graph(rt: &goal_rt::Runtime) -> Graph {
    let (me, n) = (rt.rank() as i64, rt.size() as i64);
    let mut g = Graph::new();
    let mut prev: Option<u64> = None;
    let mut d = 1;
    while d < n {
        let s = g.send(Buf::user(0), 0, (me + d) % n, d);
        let r = g.recv(Buf::user(0), 0, (me - d + n) % n, d);
        if let Some(p) = prev {
            g.requires(p, s).unwrap();
            g.requires(p, r).unwrap();
        }
        let join = g.add(goal_sched::Vertex::Calc { units: 0 });
        g.requires(s, join).unwrap();
        g.requires(r, join).unwrap();
        prev = Some(join);
        d *= 2;
    }
    g
}

/// The machine: shared by the tests of this file that run jobs, held alone
/// by the one that measures (`goal calibrate`). Beside the test that moves
/// 7.5 GiB between two hosts, the calibration's receives of 512 B and 2 KiB
/// took 68 us and 1.2 ms (CI, 2026-12-01; 1-1.3 us alone), and the fit left
/// the two ends no overhead at all.
static MACHINE: RwLock<()> = RwLock::new(());

type Shared = RwLockReadGuard<'static, ()>;

/// A test's share of the machine.
fn shared() -> Shared {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// An emulated cluster, with the test's hold on the machine (released
/// after the cluster is taken down).
struct Held<G> {
    cluster: Cluster,
    _machine: G,
}

impl<G> Deref for Held<G> {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

/// A cluster of `hosts` hosts with `rails` 1 Gbit/s rails (no MPI needed),
/// or None (skipped); `machine` is the test's hold, taken first.
fn cluster_with<G>(hosts: usize, rails: usize, machine: impl FnOnce() -> G) -> Option<Held<G>> {
    if let Err(why) = goal_netns::available() {
        eprintln!("skipped: {why}");
        return None;
    }
    let machine = machine();
    let spec = Spec::new(hosts, rails).rate("1gbit".parse().expect("rate"));
    Some(Held { cluster: Cluster::create(&spec).expect("creating the emulated cluster"), _machine: machine })
}

/// `cluster_with`, the machine shared with the file's other jobs.
fn cluster_of(hosts: usize, rails: usize) -> Option<Held<Shared>> {
    cluster_with(hosts, rails, shared)
}

/// `cluster_with`, the machine to this test alone (a measurement).
fn quiet_cluster_of(hosts: usize, rails: usize) -> Option<Held<RwLockWriteGuard<'static, ()>>> {
    cluster_with(hosts, rails, || MACHINE.write().unwrap_or_else(|e| e.into_inner()))
}

/// Eager data a receiver on another machine must buffer is bounded too: past
/// its credit (GOAL_UNEXPECTED_BYTES) a sender switches to rendezvous and
/// waits for the receiver, here 512 x 1 KiB against a 64 KiB bound.
#[test]
fn senders_to_another_host_wait_past_the_unexpected_bound() {
    if in_job() {
        util::unexpected_bound_rank(Duration::from_millis(500));
        return;
    }
    let Some(c) = cluster_of(2, 1) else { return };
    let gate = util::Gate::new();
    let ranks = spawn_per_host(&c, "senders_to_another_host_wait_past_the_unexpected_bound", 1, 29703, &[("GOAL_UNEXPECTED_BYTES", "64K"), ("TEST_GATE", gate.var())]);
    for (r, (code, err)) in wait_all(ranks, Duration::from_secs(60)).iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {err}");
    }
}

/// Two emulated hosts on this machine, one rank each: the ranks share its
/// cores, but reach each other over TCP, and their helpers do not share a
/// CPU (that only pays between ranks of one machine's shared memory: here
/// it lowered a 1 MiB allreduce's overlap from 91 to 84 %). The core count
/// is the union of both ranks' CPUs.
#[test]
fn helpers_of_ranks_on_different_hosts_do_not_share_a_cpu() {
    if in_job() {
        let rt = goal_rt::init().expect("GOAL_Init");
        let s = rt.compile(&barrier_graph(&rt)).expect("compile");
        // SAFETY: the barrier has no buffers.
        unsafe { rt.run(&s) }.and_then(|h| h.wait()).expect("barrier");
        goal_rt::finalize().unwrap();
        return;
    }
    let Some(c) = cluster_of(2, 1) else { return };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ranks = spawn_per_host(&c, "helpers_of_ranks_on_different_hosts_do_not_share_a_cpu", 1, 29707, &[("GOAL_DEBUG", "1"), ("GOAL_PROGRESS", "auto")]);
    let results = wait_all(ranks, Duration::from_secs(60));
    for (r, (code, err)) in results.iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {err}");
    }
    let err = &results[0].1;
    let line = err.lines().find(|l| l.contains("progress mode")).unwrap_or_else(|| panic!("no progress line:\n{err}"));
    assert!(line.contains(&format!("2 rank(s) on this machine's {cpus} core(s)")), "{line}");
    assert!(!line.contains("share CPU"), "ranks on different hosts share a helper CPU: {line}");
    if cpus >= 2 {
        assert!(!err.contains("more ranks than cores"), "2 ranks on {cpus} cores taken as oversubscribed:\n{err}");
    }
}

/// Ranks of emulated hosts compute on this machine's cores too: one rank
/// on each of one more host than there are cores is more ranks than cores,
/// though none of them has a shared-memory peer. Their waits must then
/// yield between polls (a Wait that spun 50 us without yielding held the
/// core its peers needed: 4 hosts on 2 cores took 1.1 ms per barrier, not
/// 0.12).
#[test]
fn ranks_of_emulated_hosts_count_against_the_cores() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if in_job() {
        let rt = goal_rt::init().expect("GOAL_Init");
        let s = rt.compile(&barrier_graph(&rt)).expect("compile");
        for _ in 0..50 {
            // SAFETY: the barrier has no buffers.
            unsafe { rt.run(&s) }.and_then(|h| h.wait()).expect("barrier");
        }
        goal_rt::finalize().unwrap();
        return;
    }
    if cpus > 7 {
        eprintln!("skipped: {cpus} cores would need {} emulated hosts", cpus + 1);
        return;
    }
    let Some(c) = cluster_of(cpus + 1, 1) else { return };
    let ranks = spawn_per_host(&c, "ranks_of_emulated_hosts_count_against_the_cores", 1, 29713, &[("GOAL_DEBUG", "1")]);
    let results = wait_all(ranks, Duration::from_secs(60));
    for (r, (code, err)) in results.iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {err}");
    }
    let err = &results[0].1;
    let want = format!("{} rank(s) on this machine's {cpus} core(s): more ranks than cores", cpus + 1);
    assert!(err.contains(&want), "expected \"{want}\" in:\n{err}");
}

/// A message of 2.5 GiB from one emulated host to another, over TCP
/// (rendezvous, striped over two unlimited rails): `ctests/t_large` (the
/// large-count calls, every byte checked, and the refusals past 4 GiB - 1)
/// with one rank per host. 5 GiB of memory while it runs.
///
/// Optimised builds only: in a test build the runtime moves the 7.5 GiB in
/// about 106 s of `t_large`'s 140 s watchdog when this test runs alone, and
/// beside the file's other tests it ran out once.
#[test]
#[cfg_attr(debug_assertions, ignore = "7.5 GiB through an unoptimised runtime: cargo test --release (make test) runs it")]
fn a_message_past_2_gib_crosses_hosts() {
    if in_job() {
        return;
    }
    if let Err(why) = goal_netns::available() {
        eprintln!("skipped: {why}");
        return;
    }
    let _machine = shared();
    let c = Cluster::create(&Spec::new(2, 2)).expect("creating the emulated cluster");
    let (dir, prog) = util::build_c_program("t_large", "large-across-hosts");
    let t = Instant::now();
    let ranks = spawn_program_per_host(&c, &prog, &[], 2, 29705, &[]);
    // (t_large's own watchdog ends it after 140 s.)
    for (r, (code, err)) in wait_all(ranks, Duration::from_secs(170)).iter().enumerate() {
        assert_eq!(*code, Some(0), "rank {r}: {err}");
    }
    eprintln!("2.5 GiB across hosts, three ways: {:.1} s", t.elapsed().as_secs_f64());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `goal calibrate --loggops` between two emulated hosts (TCP over one
/// rail): it says it measured the network, its S is the eager limit goal's
/// TCP path uses to that peer (`GOAL_NET_EAGER`'s one-rail default, or the
/// variable's value), it measures every eager size up to S and no further,
/// and L is what the two ends' overheads leave of the half round trip.
#[test]
fn calibrating_across_hosts_measures_the_tcp_path_goal_uses() {
    if in_job() {
        return;
    }
    let Some(c) = quiet_cluster_of(2, 1) else { return };
    let dir = std::env::temp_dir().join(format!("goal-calibrate-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let goal = Path::new(env!("CARGO_BIN_EXE_goal"));
    for (port, env, want_s) in [(29717, vec![], 65536.0), (29721, vec![("GOAL_NET_EAGER", "4096")], 4096.0)] {
        let out = dir.join(format!("net-{port}.json"));
        let args = ["calibrate", "--loggops", "--reps", "20", "--out", out.to_str().unwrap()];
        let ranks = spawn_program_per_host(&c, goal, &args, 1, port, &env);
        for (r, (code, err)) in wait_all(ranks, Duration::from_secs(120)).iter().enumerate() {
            assert_eq!(*code, Some(0), "rank {r} ({env:?}): {err}");
        }
        let json = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        let num = |key: &str, from: usize| -> f64 {
            let at = json[from..].find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {json}")) + from + key.len() + 4;
            let end = json[at..].find([',', '\n', '}']).unwrap() + at;
            json[at..end].trim().parse().unwrap_or_else(|e| panic!("{key}: {e} in {json}"))
        };
        assert!(json.contains("\"path\": \"network\""), "{json}");
        assert_eq!(num("S", 0), want_s, "{env:?}: {json}");
        let sizes: Vec<f64> = json.match_indices("\"bytes\": ").map(|(i, _)| num("bytes", i)).collect();
        assert!(sizes[0] == 1.0 && *sizes.last().unwrap() <= want_s && *sizes.last().unwrap() * 4.0 > want_s, "sizes {sizes:?} for S = {want_s}");
        let (l, o, o_s, o_r) = (num("L", 0), num("o", 0), num("o_send", 0), num("o_recv", 0));
        let half = num("prtt1_ns", 0) / 2.0;
        assert!(o_s > 0.0 && o_r > 0.0 && (o - (o_s + o_r) / 2.0).abs() < 0.1, "{json}");
        assert!((l - (half - o_s - o_r).max(0.0)).abs() < 0.2, "L {l}, half round trip {half}: {json}");
        // Across hosts the receiver's train would put rank 0 to sleep (its
        // wake-up in the train's time): every receive is timed on its own.
        assert_eq!(json.matches("\"recv_timed\": \"alone\"").count(), sizes.len(), "{json}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
