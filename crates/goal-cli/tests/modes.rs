//! Every progress mode gives the same results.
//!
//! One body runs in jobs of 2 and 3 ranks (3 is more ranks than cores on a
//! 2-core machine) under every setting of `GOAL_PROGRESS` and the helper's
//! knobs, including io_uring forced off: a ring exchange of every protocol's
//! sizes, 200 dependent ping-pongs in one schedule, a barrier, a 1 MiB
//! broadcast and float allreduces of 1 and 64 Ki elements. Each rank checks
//! its bytes against a direct computation, and rank 0 prints a digest of
//! everything it received; the driver asserts the digests agree across
//! modes (float sums included, bit for bit). It also checks that `auto`
//! says which mode it chose, and that the choice fits the machine.

mod util;

use goal_sched::coll::{self, Algorithm, Group, Placement, Reduction, TAG_SPAN};
use goal_sched::{Buf, DataType, Graph, ReduceOp};
use std::sync::Arc;
use util::{helper_switches, helper_task, in_job, kernel_ops, launch, open_gate, pattern, report, until_asleep, wait_gate};

type Rt = Arc<goal_rt::Runtime>;

const NAME: &str = "every_mode_gives_the_same_results";

/// The settings compared: `GOAL_PROGRESS` and the knobs of the helper.
const SETTINGS: &[&[(&str, &str)]] = &[
    &[("GOAL_PROGRESS", "manual")],
    &[("GOAL_PROGRESS", "thread")],
    &[("GOAL_PROGRESS", "spin")],
    &[("GOAL_PROGRESS", "auto")],
    &[("GOAL_PROGRESS", "kernel")],
    &[("GOAL_PROGRESS", "kernel"), ("GOAL_IO_URING", "0")],
    // Few descriptors: channels stop at half of them, the rest stays in user space.
    &[("GOAL_PROGRESS", "kernel"), ("MODES_TEST_NOFILE", "128")],
    &[("GOAL_PROGRESS", "thread"), ("GOAL_IO_URING", "0")],
    &[("GOAL_PROGRESS", "thread"), ("GOAL_PROGRESS_RT", "1"), ("GOAL_PROGRESS_CPU", "0"), ("GOAL_HELPER_SPIN_US", "30")],
    &[("GOAL_PROGRESS", "thread"), ("GOAL_SLICE_US", "0")],
];

/// FNV-1a over everything rank 0 received.
struct Digest(u64);

impl Digest {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn run(rt: &Rt, g: &Graph, what: &str) {
    let s = rt.compile(g).unwrap_or_else(|e| panic!("{what}: compile: {e}"));
    // Four: in kernel mode a schedule's second execution offers channels,
    // its third switches to them, and the fourth runs on them.
    for _ in 0..4 {
        // SAFETY: every caller keeps the graph's buffers alive and untouched until this returns.
        unsafe { rt.run(&s) }.and_then(|h| h.wait()).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

fn body() {
    if let Some(n) = std::env::var("MODES_TEST_NOFILE").ok().and_then(|v| v.parse::<u64>().ok()) {
        let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
        // SAFETY: setrlimit reads the struct it is given.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0, "setrlimit");
    }
    let rt = goal_rt::init().expect("GOAL_Init");
    let (me, n) = (rt.rank() as usize, rt.size() as usize);
    let grp = Group { rank: me as u32, size: n as u32 };
    let at = |k: i64| Placement { tag_base: (1 << 30) + k * TAG_SPAN };
    let mut digest = Digest(0xcbf2_9ce4_8422_2325);

    // Ring exchange: eager, pipelined stream, single copy.
    let (to, from) = ((me + 1) % n, (me + n - 1) % n);
    for (i, len) in [8usize, 4099, 64 << 10, 1 << 20].into_iter().enumerate() {
        let sb: Vec<u8> = (0..len).map(|k| pattern(me as u64 * 31 + i as u64, k)).collect();
        let mut rb = vec![0u8; len];
        let mut g = Graph::new();
        g.send(Buf::user(sb.as_ptr() as u64), len as i64, to as i64, i as i64);
        g.recv(Buf::user(rb.as_mut_ptr() as u64), len as i64, from as i64, i as i64);
        run(&rt, &g, &format!("rank {me}: ring exchange of {len} B"));
        let want: Vec<u8> = (0..len).map(|k| pattern(from as u64 * 31 + i as u64, k)).collect();
        assert!(rb == want, "rank {me}: ring exchange of {len} B: wrong bytes from rank {from}");
        digest.add(&rb);
    }

    // 200 dependent ping-pongs between ranks 0 and 1, one schedule. The
    // other ranks compile and run an empty one: schedules pair up by their
    // compile order.
    if me >= 2 {
        run(&rt, &Graph::new(), &format!("rank {me}: empty schedule"));
    } else {
        let peer = 1 - me;
        let mut vals = vec![0u64; 400];
        let base = vals.as_mut_ptr();
        let mut g = Graph::new();
        let mut prev = None;
        for k in 0..400usize {
            // SAFETY: k < 400, inside `vals`.
            let slot = unsafe { base.add(k) } as u64;
            let v = if (k % 2 == 0) == (me == 0) {
                g.send(Buf::user(slot), 8, peer as i64, 7)
            } else {
                g.recv(Buf::user(slot), 8, peer as i64, 7)
            };
            if let Some(p) = prev {
                g.requires(p, v).unwrap();
            }
            prev = Some(v);
        }
        // Every slot holds its index: what is received must be what the
        // peer holds at that index, which is the same number.
        for (k, v) in vals.iter_mut().enumerate() {
            *v = if (k % 2 == 0) == (me == 0) { k as u64 } else { u64::MAX };
        }
        run(&rt, &g, &format!("rank {me}: 200 ping-pongs"));
        for (k, v) in vals.iter().enumerate() {
            assert_eq!(*v, k as u64, "rank {me}: ping-pong message {k}");
        }
        digest.add(&vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    }

    // Barrier.
    let mut g = Graph::new();
    coll::barrier(&mut g, grp, at(0), Algorithm::Auto).unwrap();
    run(&rt, &g, &format!("rank {me}: barrier"));

    // 1 MiB broadcast from the last rank.
    let len = 1usize << 20;
    let root = n - 1;
    let mut buf: Vec<u8> = if me == root { (0..len).map(|k| pattern(99, k)).collect() } else { vec![0; len] };
    let mut g = Graph::new();
    coll::bcast(&mut g, grp, at(1), buf.as_mut_ptr() as u64, len as u64, root as u32, Algorithm::Auto).unwrap();
    run(&rt, &g, &format!("rank {me}: bcast 1 MiB"));
    assert!(buf.iter().enumerate().all(|(k, &b)| b == pattern(99, k)), "rank {me}: bcast 1 MiB: wrong bytes");
    digest.add(&buf);

    // Float allreduce (sum), 1 and 64 Ki elements: every rank the same bits.
    let red = Reduction::new(ReduceOp::Add, DataType::Float, 64);
    for (i, count) in [1usize, 64 << 10].into_iter().enumerate() {
        let sb: Vec<f64> = (0..count).map(|k| 0.1 * (k + 1) as f64 + me as f64 / 3.0).collect();
        let mut rb = vec![0f64; count];
        let mut g = Graph::new();
        coll::allreduce(&mut g, grp, at(2 + i as i64), sb.as_ptr() as u64, rb.as_mut_ptr() as u64, count as u64, red, Algorithm::Auto).unwrap();
        run(&rt, &g, &format!("rank {me}: allreduce of {count} doubles"));
        for (k, &got) in rb.iter().enumerate() {
            let exact: f64 = (0..n).map(|r| 0.1 * (k + 1) as f64 + r as f64 / 3.0).sum();
            assert!((got - exact).abs() <= 1e-9 * exact.abs(), "rank {me}: allreduce element {k}: {got} against {exact}");
        }
        digest.add(&rb.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect::<Vec<u8>>());
    }

    if me == 0 {
        // On a line of its own: the test harness' "test ... " has no newline yet.
        println!("\ndigest={:016x}", digest.0);
    }
    goal_rt::finalize().unwrap();
}

/// The mode `auto` must pick for `ranks` ranks on this machine.
fn auto_choice(ranks: usize) -> &'static str {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // goalrun binds 2 and more ranks, up to the physical cores, to a core
    // each: a rank may then run on that core's hardware threads only, and
    // a polling helper needs a second one there.
    let physical = {
        let topo = |cpu: usize, what: &str| std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}")).unwrap_or_else(|_| cpu.to_string());
        let ids: std::collections::BTreeSet<(String, String)> = (0..cores).map(|c| (topo(c, "physical_package_id"), topo(c, "core_id"))).collect();
        ids.len().max(1)
    };
    let own = if (2..=physical).contains(&ranks) { cores / physical } else { cores };
    if ranks * 2 <= cores && own >= 2 {
        "spin"
    } else {
        "thread"
    }
}

#[test]
fn every_mode_gives_the_same_results() {
    if in_job() {
        body();
        return;
    }
    for n in [2usize, 3] {
        let mut first: Option<(String, String)> = None;
        for setting in SETTINGS {
            let mut env = setting.to_vec();
            env.push(("GOAL_DEBUG", "1"));
            let what = format!("{n} ranks, {}", setting.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
            let job = launch(NAME, n, &env);
            assert!(job.status == 0, "{what}: exit {}\n--- stdout\n{}\n--- stderr\n{}", job.status, job.stdout, job.stderr);
            let digest = job
                .stdout
                .lines()
                .find_map(|l| l.split_once("digest=").map(|(_, d)| d.get(..16).unwrap_or(d)))
                .unwrap_or_else(|| panic!("{what}: rank 0 printed no digest\n--- stdout\n{}", job.stdout))
                .to_string();
            match &first {
                None => first = Some((what.clone(), digest)),
                Some((w0, d0)) => assert_eq!(&digest, d0, "{what} received other bytes than {w0}"),
            }
            let mode = setting[0].1;
            let uring_off = setting.contains(&("GOAL_IO_URING", "0"));
            let expect = match mode {
                "auto" => auto_choice(n),
                "kernel" if uring_off => "thread",
                m => m,
            };
            assert!(
                job.stderr.contains(&format!("progress mode '{expect}'")),
                "{what}: the debug line should say the mode is '{expect}'\n--- stderr\n{}",
                job.stderr
            );
            if expect == "kernel" {
                let ran = kernel_ops(&job.stderr);
                // Ranks 0 and 1 certainly: in their ping-pong each ACCEPT
                // travels ahead of the reply that ends the offering
                // execution, so the next execution switches. Elsewhere the
                // switch may come an execution later, depending on timing.
                assert!(
                    ran.len() == n && ran.iter().filter(|&&k| k > 0).count() >= 2,
                    "{what}: ranks 0 and 1 should report operations run in the kernel\n--- stderr\n{}",
                    job.stderr
                );
            }
        }
    }
}

/// The kernel's `struct sched_attr`, for reading a thread's time slice.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Thread `tid`'s scheduling attributes (0: the calling thread).
fn sched_attr(tid: i32) -> SchedAttr {
    let mut a = SchedAttr::default();
    // SAFETY: `a` is writable and as long as the size passed.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut a as *mut SchedAttr, std::mem::size_of::<SchedAttr>() as u32, 0u32) };
    assert_eq!(rc, 0, "sched_getattr({tid}): {}", std::io::Error::last_os_error());
    a
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

const SLICE_NAME: &str = "goal_threads_ask_for_a_short_slice_and_the_application_keeps_its_own";

/// Rank 0 of a 2-rank job: the helper's slice, the application thread's
/// slice while it sleeps in Wait (read by a thread of the test), and its
/// attributes after Wait, printed for the driver.
///
/// No timing is assumed: rank 1 sends only once rank 0's watcher has taken
/// its reading and opened the gate, so the reading is always made while
/// rank 0 is still inside Wait.
fn slice_body() {
    let before = sched_attr(0);
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    let mut word = [0u8; 8];
    let mut g = Graph::new();
    if me == 1 {
        wait_gate();
        g.send(Buf::user(word.as_ptr() as u64), 8, 0, 1);
    } else {
        g.recv(Buf::user(word.as_mut_ptr() as u64), 8, 1, 1);
    }
    let s = rt.compile(&g).expect("compile");
    let main_tid = gettid();
    let watcher = (me == 0).then(|| {
        std::thread::spawn(move || {
            // The receive cannot finish before the gate opens, so once the
            // thread sleeps it sleeps in Wait: read its slice until it
            // changes, or for a second (it may rightly stay the kernel's).
            until_asleep(main_tid);
            let t = std::time::Instant::now();
            let mut during = sched_attr(main_tid);
            while during.runtime == before.runtime && t.elapsed().as_millis() < 1000 {
                std::thread::sleep(std::time::Duration::from_millis(2));
                during = sched_attr(main_tid);
            }
            open_gate();
            during
        })
    });
    // SAFETY: `word` outlives the execution, which ends in this statement.
    unsafe { rt.run(&s) }.and_then(|h| h.wait()).expect("run");
    if let Some(w) = watcher {
        let during = w.join().unwrap();
        let after = sched_attr(0);
        // The helper asks for its slice as it starts, which a loaded
        // machine may delay past this point (once in a CI run it still had
        // the kernel's): read until it changes, or for a second.
        let helper = helper_task().map(|t| {
            let tid = t.file_name().unwrap().to_str().unwrap().parse().unwrap();
            let t = std::time::Instant::now();
            let mut a = sched_attr(tid);
            while a.runtime == before.runtime && t.elapsed().as_millis() < 1000 {
                std::thread::sleep(std::time::Duration::from_millis(2));
                a = sched_attr(tid);
            }
            a
        });
        println!(
            "\nslices: before={} during={} after={} helper={} same_after={}",
            before.runtime,
            during.runtime,
            after.runtime,
            helper.map_or(-1, |h| h.runtime as i64),
            after == before
        );
    }
    goal_rt::finalize().unwrap();
}

/// goal's sleeping threads ask the scheduler for a short time slice, so
/// that with more computing threads than cores a message wakes them at
/// once (`GOAL_SLICE_US`, default 100 us): the helper for good, an
/// application thread only while it sleeps in Wait. The application thread
/// must come out of Wait with exactly the attributes it went in with.
#[test]
fn goal_threads_ask_for_a_short_slice_and_the_application_keeps_its_own() {
    if in_job() {
        slice_body();
        return;
    }
    // Kernels before 6.12 ignore the slice: nothing to check there.
    let probe = std::thread::spawn(|| {
        let mut a = sched_attr(0);
        a.runtime = 150_000;
        a.size = std::mem::size_of::<SchedAttr>() as u32;
        // SAFETY: `a` is a valid sched_attr for this (scratch) thread.
        let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0u32) };
        rc == 0 && sched_attr(0).runtime == 150_000
    })
    .join()
    .unwrap();
    if !probe {
        eprintln!("this kernel does not keep a thread's own time slice (before Linux 6.12): nothing to check");
        return;
    }
    for (env, want) in [(None, Some(100_000u64)), (Some("250"), Some(250_000)), (Some("0"), None)] {
        let mut vars = vec![("GOAL_PROGRESS", "thread")];
        if let Some(v) = env {
            vars.push(("GOAL_SLICE_US", v));
        }
        let what = format!("GOAL_SLICE_US={}", env.unwrap_or("(unset)"));
        let line = report(SLICE_NAME, &vars, "slices: ", &what);
        let line = line.as_str();
        let field = |k: &str| -> String {
            line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("{what}: no {k} in {line}")).to_string()
        };
        let before: i64 = field("before").parse().unwrap();
        assert_eq!(field("same_after"), "true", "{what}: the application thread left Wait with other attributes than it entered with: {line}");
        let (during, helper): (i64, i64) = (field("during").parse().unwrap(), field("helper").parse().unwrap());
        match want {
            Some(w) => {
                assert_eq!(during, w as i64, "{what}: the application thread's slice while it slept in Wait: {line}");
                assert_eq!(helper, w as i64, "{what}: the helper's slice: {line}");
            }
            None => {
                assert_eq!(during, before, "{what}: the application thread's slice should stay the kernel's: {line}");
                assert_eq!(helper, before, "{what}: the helper's slice should stay the kernel's: {line}");
            }
        }
    }
}

const NICE_NAME: &str = "the_helper_takes_the_nice_value_asked_for_and_the_application_keeps_its_own";

/// The nice value of thread `task` (`/proc/self/task/<tid>`): field 19 of
/// its `stat`, counted after the command name's closing parenthesis.
fn nice_of(task: &std::path::Path) -> i64 {
    let stat = std::fs::read_to_string(task.join("stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// Rank 0 of a 2-rank job: its own thread's and its helper's nice values,
/// printed for the driver (the helper sets its own as it starts: read
/// until it moves, or for a second).
fn nice_body() {
    let rt = goal_rt::init().expect("GOAL_Init");
    if rt.rank() == 0 {
        let app = nice_of(&std::path::PathBuf::from(format!("/proc/self/task/{}", gettid())));
        let task = helper_task().expect("a helper thread");
        let t = std::time::Instant::now();
        let mut helper = nice_of(&task);
        while helper == app && t.elapsed().as_millis() < 1000 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            helper = nice_of(&task);
        }
        println!("\nnice: app={app} helper={helper}");
    }
    goal_rt::finalize().unwrap();
}

/// `GOAL_PROGRESS_NICE` sets the helper thread's nice value and no other
/// thread's: positive values for anyone, negative ones where the process
/// may raise its priority (root here; elsewhere the helper keeps its value
/// and a line says so). Unset, the helper keeps the application's.
#[test]
fn the_helper_takes_the_nice_value_asked_for_and_the_application_keeps_its_own() {
    if in_job() {
        nice_body();
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for (env, want) in [(None, 0i64), (Some("5"), 5), (Some("-5"), if root { -5 } else { 0 })] {
        let mut vars = vec![("GOAL_PROGRESS", "thread")];
        if let Some(v) = env {
            vars.push(("GOAL_PROGRESS_NICE", v));
        }
        let what = format!("GOAL_PROGRESS_NICE={}", env.unwrap_or("(unset)"));
        let line = report(NICE_NAME, &vars, "nice: ", &what);
        let field = |k: &str| -> i64 { line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{k}="))).unwrap().parse().unwrap() };
        assert_eq!(field("app"), 0, "{what}: the application thread's nice value changed: {line}");
        assert_eq!(field("helper"), want, "{what}: the helper's nice value: {line}");
    }
}

const PARK_NAME: &str = "the_helper_sleeps_through_rings_meant_for_a_waiting_application_thread";

/// Messages rank 1 sends while rank 0 waits for something else.
const PARK_RINGS: usize = 200;

/// Rank 0 waits for one message of schedule 0 while rank 1 sends
/// [`PARK_RINGS`] messages of schedule 1, 300 us apart: each finds rank 0's
/// application thread asleep in Wait and rings its doorbell. Rank 0 prints
/// how often its helper woke meanwhile, then receives the early messages.
fn park_body() {
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    let mut word = [0u8; 8];
    let (mut g0, mut g1) = (Graph::new(), Graph::new());
    if me == 1 {
        g0.send(Buf::user(word.as_ptr() as u64), 8, 0, 0);
        g1.send(Buf::user(word.as_ptr() as u64), 8, 0, 1);
    } else {
        g0.recv(Buf::user(word.as_mut_ptr() as u64), 8, 1, 0);
        g1.recv(Buf::user(word.as_mut_ptr() as u64), 8, 1, 1);
    }
    let (s0, s1) = (rt.compile(&g0).expect("compile"), rt.compile(&g1).expect("compile"));
    // SAFETY (every Run below): `word` outlives the execution, which ends in the same statement.
    if me == 1 {
        // Rank 0 opens the gate once it sleeps in Wait.
        wait_gate();
        for _ in 0..PARK_RINGS {
            unsafe { rt.run(&s1) }.and_then(|h| h.wait()).expect("send");
            std::thread::sleep(std::time::Duration::from_micros(300));
        }
        unsafe { rt.run(&s0) }.and_then(|h| h.wait()).expect("send");
    } else {
        let before = helper_switches();
        let main_tid = gettid();
        let watcher = std::thread::spawn(move || {
            until_asleep(main_tid);
            open_gate();
        });
        unsafe { rt.run(&s0) }.and_then(|h| h.wait()).expect("recv");
        let woke = helper_switches() - before;
        watcher.join().unwrap();
        for _ in 0..PARK_RINGS {
            unsafe { rt.run(&s1) }.and_then(|h| h.wait()).expect("recv");
        }
        println!("\nparked: helper_woke={woke} rings={PARK_RINGS}");
    }
    goal_rt::finalize().unwrap();
}

/// While an application thread sleeps in Wait, the doorbell's rings are
/// for it: the helper, which has nothing to do then, must not wake with
/// each of them and take the CPU from it (see `progress::park`). It may
/// still look in every few milliseconds, for the application's lingering
/// polling mark.
#[test]
fn the_helper_sleeps_through_rings_meant_for_a_waiting_application_thread() {
    if in_job() {
        park_body();
        return;
    }
    let line = report(PARK_NAME, &[("GOAL_PROGRESS", "thread")], "parked: ", "GOAL_PROGRESS=thread");
    let woke: usize = line.split_whitespace().find_map(|w| w.strip_prefix("helper_woke=")).unwrap().parse().unwrap();
    eprintln!("{line}");
    // Parked, the helper wakes about every 3 ms of the ~70 ms wait; woken
    // by the rings, it would wake about PARK_RINGS times.
    assert!(woke < PARK_RINGS / 2, "the helper woke {woke} times while the application thread waited through {PARK_RINGS} rings: {line}");
}


const SHARE_NAME: &str = "without_a_spare_core_the_helpers_carry_background_messages_from_one_cpu";

/// Dependent ping-pongs in the schedule of [`share_body`]: enough to keep
/// the helpers busy for a while after the application went computing.
const SHARE_PINGPONGS: usize = 4000;

/// Jobs run before `without_a_spare_core_the_helpers_carry_background_messages_from_one_cpu`
/// decides that a helper never moved (see there).
const SHARE_TRIES: usize = 3;

/// The CPUs the helper thread may run on now, as the kernel lists them.
fn helper_cpus() -> String {
    let task = helper_task().expect("a goal-progress thread");
    let status = std::fs::read_to_string(task.join("status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string()
}

/// Both ranks run a schedule of [`SHARE_PINGPONGS`] dependent 8-byte
/// ping-pongs and compute (no goal call) while it runs; rank 0 watches
/// where its helper may run meanwhile, then waits and checks every byte.
fn share_body() {
    if std::env::var_os("TEST_BIND_BEFORE_INIT").is_some() {
        // As `mpirun --bind-to core` or `srun --cpu-bind=cores` would: this
        // rank may run on one CPU only, from before GOAL_Init on.
        // (goalrun binds each rank to a core of its own by default: the
        // machine's CPUs are the online ones, not this rank's.)
        let rank: usize = std::env::var("GOAL_RANK").unwrap().parse().unwrap();
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        let cpus = goal_boot::cpulist::parse_list(&online).map_or(1, |c| c.len().max(1));
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within it.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(rank % cpus, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        assert_eq!(rc, 0, "binding rank {rank} to CPU {}", rank % cpus);
    }
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    let peer = 1 - me;
    let mut bufs = vec![[0u8; 8]; SHARE_PINGPONGS];
    let mut g = Graph::new();
    let mut prev = None;
    for (i, b) in bufs.iter_mut().enumerate() {
        // Rank 0 sends on even steps, rank 1 on odd ones; each step waits for the last.
        let v = if (i % 2 == 0) == (me == 0) {
            b.copy_from_slice(&(i as u64).to_le_bytes());
            g.send(Buf::user(b.as_ptr() as u64), 8, peer as i64, i as i64 % TAG_SPAN)
        } else {
            g.recv(Buf::user(b.as_mut_ptr() as u64), 8, peer as i64, i as i64 % TAG_SPAN)
        };
        if let Some(p) = prev {
            g.requires(p, v).unwrap();
        }
        prev = Some(v);
    }
    let s = rt.compile(&g).expect("compile");
    let mut bar = Graph::new();
    coll::barrier(&mut bar, Group { rank: me, size: 2 }, Placement { tag_base: 0 }, Algorithm::Auto).expect("barrier");
    let bar = rt.compile(&bar).expect("compile the barrier");
    let before = if me == 0 { helper_cpus() } else { String::new() };
    // As an application does: a collective it waits for, then one that runs
    // behind its computation. SAFETY: `bufs` outlives the execution, which
    // ends before they are read; the barrier has no buffers.
    unsafe { rt.run(&bar) }.and_then(|h| h.wait()).expect("barrier");
    let h = unsafe { rt.run(&s) }.expect("run");
    // Compute for 300 ms without calling goal (a call would bring the
    // helper back), looking where the helper may run every millisecond.
    let (t, mut seen) = (std::time::Instant::now(), std::collections::BTreeSet::new());
    let mut x = 1u64;
    while t.elapsed().as_millis() < 300 {
        let c = std::time::Instant::now();
        while c.elapsed().as_micros() < 1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        if me == 0 {
            seen.insert(helper_cpus());
        }
    }
    h.wait().expect("wait");
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(u64::from_le_bytes(*b), i as u64, "step {i}");
    }
    if me == 0 {
        let seen: Vec<String> = seen.into_iter().collect();
        println!("\nshared: before={before} during={}", seen.join("|"));
    }
    goal_rt::finalize().unwrap();
}

/// Without a spare core (here: 2 ranks, and fewer than 4 CPUs), a helper
/// carries its rank's messages from the highest CPU while the application
/// computes, where the other rank's helper is too (see
/// `progress::Placement`); with a spare core, or `GOAL_PROGRESS_CPU=any`,
/// it stays where it was. In every case the bytes arrive.
#[test]
fn without_a_spare_core_the_helpers_carry_background_messages_from_one_cpu() {
    if in_job() {
        share_body();
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let highest = online.trim().split(',').filter_map(|r| r.rsplit('-').next()?.parse::<usize>().ok()).max().unwrap();
    let parse = |line: &str, key: &str| line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap().to_string();
    // Where a thread may run is the scheduler's business too: a job in
    // which the helper was never seen on the shared CPU is run again, up
    // to `SHARE_TRIES` times in all, before the test fails (one run in a
    // full local suite missed it once, beside this binary's other jobs).
    let on_highest = |line: &str| parse(line, "during=").split('|').any(|c| c == highest.to_string());
    let mut line = String::new();
    for _ in 0..SHARE_TRIES {
        line = report(SHARE_NAME, &[("GOAL_PROGRESS", "thread")], "shared: ", "GOAL_PROGRESS=thread");
        eprintln!("{line}");
        if !(2..4).contains(&cpus) || on_highest(&line) {
            break;
        }
    }
    let (before, during) = (parse(&line, "before="), parse(&line, "during="));
    if (2..4).contains(&cpus) {
        assert!(on_highest(&line), "the helper never ran on CPU {highest} alone in {SHARE_TRIES} jobs: {line}");
    } else {
        assert!(during.split('|').all(|c| c == before), "with a spare core the helper moved: {line}");
    }
    let line = report(SHARE_NAME, &[("GOAL_PROGRESS", "thread"), ("GOAL_PROGRESS_CPU", "any")], "shared: ", "GOAL_PROGRESS_CPU=any");
    let (before, during) = (parse(&line, "before="), parse(&line, "during="));
    assert!(during.split('|').all(|c| c == before), "GOAL_PROGRESS_CPU=any, yet the helper moved: {line}");
    // Ranks a launcher bound to one CPU each before GOAL_Init: goal still
    // counts the machine's CPUs from the union of the ranks' masks (before,
    // each rank saw one CPU: "2 ranks on 1 core", no shared CPU, and no
    // calibration between cores).
    if (2..4).contains(&cpus) {
        let vars = [("GOAL_PROGRESS", "auto"), ("TEST_BIND_BEFORE_INIT", "1"), ("GOAL_DEBUG", "1")];
        for attempt in 1..=SHARE_TRIES {
            let job = launch(SHARE_NAME, 2, &vars);
            assert!(job.status == 0, "bound ranks: exit {}\n--- stdout\n{}\n--- stderr\n{}", job.status, job.stdout, job.stderr);
            let machine = format!("2 rank(s) on this machine's {cpus} core(s)");
            assert!(job.stderr.contains(&machine), "bound ranks: the debug line should say '{machine}'\n--- stderr\n{}", job.stderr);
            assert!(job.stderr.contains(&format!("share CPU {highest}")), "bound ranks: no shared CPU\n--- stderr\n{}", job.stderr);
            let line = job.stdout.lines().find_map(|l| l.find("shared: ").map(|i| l[i..].to_string())).expect("a report");
            assert_eq!(parse(&line, "before="), "0", "rank 0's helper should start on rank 0's CPU: {line}");
            if on_highest(&line) {
                break;
            }
            assert!(attempt < SHARE_TRIES, "bound ranks: the helper never ran on CPU {highest} alone in {SHARE_TRIES} jobs: {line}");
        }
    }
}
