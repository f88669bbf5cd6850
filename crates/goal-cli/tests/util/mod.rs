//! Runs a test function as the ranks of a real job.
//!
//! A test calls [`ranks`] with a body: launched normally, it starts
//! `goalrun -n N` on this very test binary filtered to this one test; inside
//! goalrun (GOAL_RANK is set) the same call runs the body as one rank. So every
//! multi-rank test is honest: separate processes, shared memory, real bytes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What a launched job did.
pub struct Job {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Job {
    fn from(o: Output) -> Job {
        Job {
            status: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Whether this process is a rank of a job (rather than the test driver):
/// goalrun's, Open MPI's, a PMI-1 launcher's (MPICH, srun --mpi=pmi2) or a
/// PMIx server's (srun --mpi=pmix).
pub fn in_job() -> bool {
    ["GOAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// Launches `test` (its full path name in the harness) as `n` ranks with
/// the given extra env. The ranks get a fresh [`open_gate`]/[`wait_gate`]
/// pair.
pub fn launch(test: &str, n: usize, env: &[(&str, &str)]) -> Job {
    launch_under(&[], test, n, env)
}

/// As [`launch`], goalrun started by the command `wrapper` (empty: none),
/// such as `taskset -c 0`.
pub fn launch_under(wrapper: &[&str], test: &str, n: usize, env: &[(&str, &str)]) -> Job {
    let exe = std::env::current_exe().unwrap();
    let gate = Gate::new();
    let goalrun = env!("CARGO_BIN_EXE_goalrun");
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(goalrun);
            c
        }
        None => Command::new(goalrun),
    };
    cmd.args(["-n", &n.to_string(), "--timeout", "120", "--"]).arg(exe).args([test, "--exact", "--nocapture", "--test-threads=1"]);
    cmd.env("TEST_GATE", gate.var());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Job::from(cmd.output().expect("goalrun could not be started"))
}

/// As [`launch`], with goalrun and its ranks under `ulimit -v KIB` (a
/// batch system's limit on address space).
pub fn launch_limited(test: &str, n: usize, kib: u64, env: &[(&str, &str)]) -> Job {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_goalrun"))
        .args(["-n", &n.to_string(), "--timeout", "120", "--"])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Job::from(cmd.output().expect("sh could not be started"))
}

/// Runs `body` as each rank of jobs of the given sizes and progress modes;
/// in the driver, asserts every job succeeded.
pub fn ranks(test: &str, sizes: &[usize], modes: &[&str], body: impl Fn()) {
    if in_job() {
        body();
        return;
    }
    for &n in sizes {
        for &m in modes {
            let job = launch(test, n, &[("GOAL_PROGRESS", m)]);
            assert!(
                job.status == 0,
                "{test} with {n} ranks, GOAL_PROGRESS={m}: exit {}\n--- stdout\n{}\n--- stderr\n{}",
                job.status,
                job.stdout,
                job.stderr
            );
        }
    }
}

/// A small deterministic generator (xorshift64*), identical on every rank.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The byte at position `i` of message `m`: every message's content is known everywhere.
pub fn pattern(m: u64, i: usize) -> u8 {
    (m.wrapping_mul(131).wrapping_add(i as u64 * 7) ^ (i as u64 >> 8)) as u8
}

/// One rank of the unexpected-bound check: rank 0 sends 512 x 1 KiB eagerly
/// sized messages to rank 1, which posts its receives only once rank 0
/// opens the gate ([`open_gate`]: the job needs a `TEST_GATE`). With
/// `GOAL_UNEXPECTED_BYTES=64K` the sender must not finish within `hold`
/// (past its credit it switches to rendezvous and waits); then it opens the
/// gate, and all arrives. (Rank 1 used to sleep a fixed time instead; a
/// rank 0 slower than that on a loaded machine saw the receives posted
/// during its `hold`, and rightly finished.)
pub fn unexpected_bound_rank(hold: std::time::Duration) {
    use goal_sched::{Buf, Graph};
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    let k = 512usize; // 512 x 1 KiB = 512 KiB, far past the 64 KiB bound
    let mut buf = vec![0u8; k * 1024];
    let mut g = Graph::new();
    for i in 0..k {
        let b = Buf::user(buf[i * 1024..].as_mut_ptr() as u64);
        if me == 0 {
            g.send(b, 1024, 1, i as i64);
        } else {
            g.recv(b, 1024, 0, i as i64);
        }
    }
    if me == 0 {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern(1, i);
        }
    }
    let s = rt.compile(&g).unwrap();
    // SAFETY: buf outlives the execution (waited for below).
    let h = if me == 0 { unsafe { rt.run(&s) }.unwrap() } else { wait_gate(); unsafe { rt.run(&s) }.unwrap() };
    if me == 0 {
        let t = std::time::Instant::now();
        while t.elapsed() < hold {
            assert!(!h.test().unwrap(), "all 512 KiB went out although the receiver buffers at most 64 KiB");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        open_gate();
    }
    h.wait().unwrap();
    if me == 1 {
        assert!(buf.iter().enumerate().all(|(i, &b)| b == pattern(1, i)), "wrong data");
    }
    goal_rt::finalize().unwrap();
}

/// One rank of the ring exchange across hosts: every rank sends to rank+1
/// and receives from rank-1 (neighbours on the same host and across hosts
/// alike), every size from one byte to 16 MiB, eager and rendezvous, each
/// schedule run twice; panics on a wrong byte. Returns (rank, size).
pub fn ring_exchange_rank() -> (usize, usize) {
    use goal_sched::{Buf, Graph};
    let rt = goal_rt::init().expect("GOAL_Init");
    let (me, n) = (rt.rank() as usize, rt.size() as usize);
    let (to, from) = ((me + 1) % n, (me + n - 1) % n);
    for len in [0usize, 1, 8, 4096, 65536, 1 << 20, 16 << 20] {
        let mut sb = vec![0u8; len];
        for (i, b) in sb.iter_mut().enumerate() {
            *b = pattern(me as u64, i);
        }
        let mut rb = vec![0u8; len];
        let mut g = Graph::new();
        g.send(Buf::user(sb.as_mut_ptr() as u64), len as i64, to as i64, 5);
        g.recv(Buf::user(rb.as_mut_ptr() as u64), len as i64, from as i64, 5);
        let s = rt.compile(&g).unwrap();
        for run in 0..2 {
            // SAFETY: the buffers outlive the execution.
            unsafe { rt.run(&s) }.unwrap().wait().unwrap_or_else(|e| panic!("rank {me} len {len} run {run}: {e}"));
            if let Some(i) = rb.iter().enumerate().position(|(i, &b)| b != pattern(from as u64, i)) {
                panic!("rank {me}: len {len}: byte {i} from rank {from} is wrong");
            }
        }
    }
    goal_rt::finalize().unwrap();
    (me, n)
}

/// The C acceptance programs of `ctests/` that run at `ranks` ranks and
/// expect success (see [`acceptance_programs`]), plus those named in `also`,
/// built against this build's library into a fresh directory named after
/// `what` and this process. Returns the directory (the caller removes it)
/// and the programs.
pub fn build_acceptance_programs(ranks: usize, what: &str, also: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let (repo, lib) = build_library();
    let mut progs = acceptance_programs(&repo.join("ctests"), ranks);
    assert!(progs.len() >= 10, "found only {progs:?}");
    for name in also {
        let src = repo.join("ctests").join(format!("{name}.c"));
        assert!(src.is_file(), "{} is missing", src.display());
        if !progs.contains(&src) {
            progs.push(src);
        }
    }
    build_c_programs(&repo, &lib, what, &progs)
}

/// `ctests/NAME.c` built against this build's library (see
/// [`build_acceptance_programs`]): the directory (the caller removes it)
/// and the program.
pub fn build_c_program(name: &str, what: &str) -> (PathBuf, PathBuf) {
    let (repo, lib) = build_library();
    let src = repo.join("ctests").join(format!("{name}.c"));
    assert!(src.is_file(), "{} is missing", src.display());
    let (dir, mut bins) = build_c_programs(&repo, &lib, what, &[src]);
    (dir, bins.remove(0))
}

/// The repository and the target directory holding libgoal, built now:
/// `cargo test` builds the crates the tests link, not the C library, so
/// it is built into the same target directory, as this version.
pub fn build_library() -> (PathBuf, PathBuf) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = std::env::current_exe().expect("exe").parent().and_then(Path::parent).expect("target dir").to_path_buf();
    let release = lib.ends_with("release");
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.current_dir(&repo).args(["build", "-q", "-p", "goal-ffi"]);
    if release {
        build.arg("--release");
    }
    let b = build.output().expect("running cargo build -p goal-ffi");
    assert!(b.status.success(), "cargo build -p goal-ffi: {}", String::from_utf8_lossy(&b.stderr));
    (repo, lib)
}

/// Compiles `progs` against the library in `lib` into a fresh directory
/// named after `what` and this process.
fn build_c_programs(repo: &Path, lib: &Path, what: &str, progs: &[PathBuf]) -> (PathBuf, Vec<PathBuf>) {
    let out_dir = std::env::temp_dir().join(format!("goal-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut bins = Vec::new();
    for src in progs {
        let bin = out_dir.join(src.file_stem().unwrap());
        let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-O2", "-std=c11", "-D_GNU_SOURCE"])
            .arg(src)
            .arg(format!("-I{}", repo.join("include").display()))
            .arg(format!("-I{}", repo.join("ctests").display()))
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .args(["-lgoal", "-lm", "-o"])
            .arg(&bin)
            .output()
            .expect("running cc");
        assert!(cc.status.success(), "cc {}: {}", src.display(), String::from_utf8_lossy(&cc.stderr));
        bins.push(bin);
    }
    (out_dir, bins)
}

/// `ctests/t_*.c` whose `// ranks:` directive (if any) allows `ranks` ranks
/// and that have no `// expect-fail:`, sorted.
pub fn acceptance_programs(dir: &Path, ranks: usize) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("ctests/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("t_") && n.ends_with(".c")))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let head: Vec<&str> = text.lines().take(40).collect();
            let fails = head.iter().any(|l| l.starts_with("// expect-fail:"));
            let ranks_ok = head
                .iter()
                .find_map(|l| l.strip_prefix("// ranks:"))
                .is_none_or(|r| r.split_whitespace().any(|n| n == ranks.to_string()));
            !fails && ranks_ok
        })
        .collect();
    v.sort();
    v
}

/// One rank of a job in which each `(sender, receiver)` pair sends a large
/// message and then an 8-byte one with the same tag, while the receiver
/// starts late, so that both wait for it unread; the receiver checks that
/// each receive got its own message. Other ranks take no part.
pub fn no_overtaking_rank(pairs: &[(u32, u32)]) {
    use goal_sched::{Buf, Graph};
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    for (round, large) in [256usize << 10, 4 << 20].into_iter().enumerate() {
        let big: Vec<u8> = (0..large).map(|k| pattern(round as u64, k)).collect();
        let small = [0xa5u8; 8];
        let mut got_big = vec![0u8; large];
        let mut got_small = [0u8; 8];
        let mut g = Graph::new();
        let mut receiver = None;
        for &(from, to) in pairs {
            if me == from {
                g.send(Buf::user(big.as_ptr() as u64), large as i64, to as i64, 9);
                g.send(Buf::user(small.as_ptr() as u64), 8, to as i64, 9);
            } else if me == to {
                g.recv(Buf::user(got_big.as_mut_ptr() as u64), large as i64, from as i64, 9);
                g.recv(Buf::user(got_small.as_mut_ptr() as u64), 8, from as i64, 9);
                receiver = Some(from);
            }
        }
        let s = rt.compile(&g).unwrap();
        if receiver.is_some() {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        // SAFETY: the buffers live until the execution has ended, below.
        unsafe { rt.run(&s) }.and_then(|h| h.wait()).unwrap_or_else(|e| panic!("rank {me}, {large} B then 8 B: {e}"));
        if let Some(from) = receiver {
            assert!(got_big == big, "rank {me}: the {large}-byte receive did not get rank {from}'s {large}-byte message");
            assert_eq!(got_small, small, "rank {me}: the 8-byte receive did not get rank {from}'s 8-byte message");
        }
    }
    goal_rt::finalize().unwrap();
}

/// Runs test `name` as 2 ranks with `vars` and returns the line of rank 0's
/// report, from `key` on; `what` names the run in a failure. The ranks get
/// a fresh [`open_gate`]/[`wait_gate`] pair (from [`launch`]).
pub fn report(name: &str, vars: &[(&str, &str)], key: &str, what: &str) -> String {
    let job = launch(name, 2, vars);
    assert!(job.status == 0, "{what}: exit {}\n--- stdout\n{}\n--- stderr\n{}", job.status, job.stdout, job.stderr);
    // (the other rank's harness output may share the line)
    job.stdout
        .lines()
        .find_map(|l| l.find(key).map(|i| l[i..].to_string()))
        .unwrap_or_else(|| panic!("{what}: no report\n{}", job.stdout))
}

/// A job's gate (see [`open_gate`]): a file name no other job uses, whose
/// file is removed when the gate is dropped. [`launch`] makes one for each
/// job; a test that starts its ranks otherwise passes [`Gate::var`] to them
/// as `TEST_GATE`.
pub struct Gate(PathBuf);

impl Gate {
    pub fn new() -> Gate {
        static GATES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = GATES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("goal-test-gate-{}-{n}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Gate(path)
    }

    /// The value of `TEST_GATE` for the ranks.
    pub fn var(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary directory")
    }

    /// In the test driver: returns once a rank has opened the gate; panics
    /// after 30 s.
    pub fn wait(&self) {
        wait_for(&self.0);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn gate() -> PathBuf {
    PathBuf::from(std::env::var("TEST_GATE").expect("TEST_GATE: start the job with launch() or pass it a Gate"))
}

/// Lets the ranks blocked in [`wait_gate`] (or the driver, in
/// [`Gate::wait`]) go on: a signal between the processes of a job that does
/// not go through goal, for tests that must not assume how long anything
/// takes.
pub fn open_gate() {
    std::fs::write(gate(), b"").expect("create the gate file");
}

/// Returns once some rank has called [`open_gate`]; panics after 30 s.
pub fn wait_gate() {
    wait_for(&gate());
}

fn wait_for(gate: &Path) {
    let t = std::time::Instant::now();
    while !gate.exists() {
        assert!(t.elapsed().as_secs() < 30, "the gate {} was never opened", gate.display());
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Opens the gate from a thread of its own once the calling thread sleeps
/// in the kernel ([`until_asleep`]): for a rank whose next sleep can only
/// be in Wait, so that its peer acts only once it waits. Join the handle
/// after the Wait.
pub fn open_gate_once_asleep() -> std::thread::JoinHandle<()> {
    // SAFETY: gettid has no arguments.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    std::thread::spawn(move || {
        until_asleep(tid);
        open_gate();
    })
}

/// Waits (up to 10 s) until thread `tid` of this process sleeps in the kernel.
pub fn until_asleep(tid: i32) {
    let stat = format!("/proc/self/task/{tid}/stat");
    let t = std::time::Instant::now();
    // The state follows the parenthesised command name.
    let state = || std::fs::read_to_string(&stat).ok().and_then(|s| s.rsplit_once(") ").and_then(|(_, r)| r.chars().next()));
    while state() != Some('S') && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `/proc/self/task/<tid>` of this process' helper thread, if it has one.
/// The helper names itself once it runs, maybe after GOAL_Init returned:
/// look for up to 10 s (a new thread of a loaded machine may wait a while
/// for a CPU; every caller expects a helper).
pub fn helper_task() -> Option<std::path::PathBuf> {
    let find = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "goal-progress"))
            .map(|e| e.path())
    };
    let t = std::time::Instant::now();
    loop {
        match find() {
            Some(task) => return Some(task),
            None if t.elapsed().as_secs() >= 10 => return None,
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

/// The voluntary context switches of this process' helper thread so far:
/// one per sleep it came out of.
pub fn helper_switches() -> u64 {
    let task = helper_task().expect("a goal-progress thread");
    let status = std::fs::read_to_string(task.join("status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")).unwrap().trim().parse().unwrap()
}

/// A count from the ranks' debug lines: the number just before `what`
/// ("...; K <what>..." or "... (K <what>..."), the largest of the lines
/// that say it.
pub fn debug_count(stderr: &str, what: &str) -> u64 {
    let number = |t: &str| t.split_once(what)?.0.rsplit([' ', '(']).next()?.parse().ok();
    stderr.split("; ").filter_map(number).max().unwrap_or(0)
}

/// The operations each rank reports to have run in the kernel (kernel mode,
/// `GOAL_DEBUG=1`), one number per rank that reported (the ranks' lines may
/// interleave: each occurrence is parsed).
pub fn kernel_ops(stderr: &str) -> Vec<u64> {
    stderr.split("offer(s) declined; ").skip(1).filter_map(|t| t.split_once(" operation(s) in ")?.0.trim().parse().ok()).collect()
}

/// The GOAL text corpus: the repository's `tests/goal-corpus/` (public
/// inputs, its README says where each comes from), or `GOAL_CORPUS` if set.
pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("GOAL_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/goal-corpus"));
    assert!(dir.join("README.md").is_file(), "the GOAL text corpus is not at {} (set GOAL_CORPUS)", dir.display());
    dir
}

/// A fresh directory for a test's files, removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    /// `$TMPDIR/goal-test-TAG-PID`.
    pub fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("goal-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    /// Writes `text` to the file `name` in it; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
    /// The path of `name` in it.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Rewrites the calibration cache under `dir` (an `XDG_CACHE_HOME` a job
/// has calibrated into: the cache is keyed by the machine), each line that
/// starts with an edit's key ("eager", "cma", "shared") replaced by the
/// edit's whole line: the thresholds a job started with that cache uses,
/// whatever this machine measures.
pub fn edit_calibration(dir: &Dir, edits: &[&str]) {
    let file = dir.0.join("goal/calibration");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("no calibration cache at {}: {e}", file.display()));
    let key = |l: &str| l.split(' ').next().unwrap_or("").to_string();
    let edited: Vec<String> = text.lines().map(|l| edits.iter().find(|e| key(e) == key(l)).map_or(l.to_string(), |e| e.to_string())).collect();
    for e in edits {
        assert!(edited.iter().any(|l| l == e), "no line {:?} to replace in the cache: {text}", key(e));
    }
    std::fs::write(&file, edited.join("\n") + "\n").unwrap();
}

/// Runs `cmd` with its output piped (stdin from /dev/null), killing it
/// after `limit`; returns its output, with a line saying so at the end of
/// stderr when it was killed.
pub fn output_within(cmd: Command, limit: std::time::Duration) -> Output {
    output_within_or(cmd, limit, String::new)
}

/// [`output_within`], and a command past `limit` first gets `report()`
/// (what its processes are doing, say) appended to its stderr, before it
/// is killed.
pub fn output_within_or(mut cmd: Command, limit: std::time::Duration, report: impl FnOnce() -> String) -> Output {
    use std::process::Stdio;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let t = std::time::Instant::now();
    let mut timed_out = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if t.elapsed() > limit {
            timed_out = Some(report());
            let _ = child.kill();
            break child.wait().expect("waiting for a child");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = stderr.join().expect("stderr reader");
    if let Some(report) = timed_out {
        stderr.extend_from_slice(format!("\n(the test killed it after {limit:?})\n{report}").as_bytes());
    }
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr }
}
