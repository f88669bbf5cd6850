//! Runs a test function as the ranks of a real job.
//!
//! A test calls [`ranks`] with a body: launched normally, it starts
//! `goalrun -n N` on this very test binary filtered to this one test; inside
//! goalrun (GOAL_RANK is set) the same call runs the body as one rank. So every
//! multi-rank test is honest: separate processes, shared memory, real bytes.

#![allow(dead_code)]

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

/// Whether this process is a rank of a job (rather than the test driver).
pub fn in_job() -> bool {
    ["GOAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"].iter().any(|v| std::env::var_os(v).is_some())
}

/// Launches `test` (its full path name in the harness) as `n` ranks with the given extra env.
pub fn launch(test: &str, n: usize, env: &[(&str, &str)]) -> Job {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goalrun"));
    cmd.args(["-n", &n.to_string(), "--timeout", "120", "--"]).arg(exe).args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Job::from(cmd.output().expect("goalrun could not be started"))
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
/// sized messages to rank 1, which posts its receives only after `late`.
/// With `GOAL_UNEXPECTED_BYTES=64K` the sender must not finish within `hold`
/// (past its credit it switches to rendezvous and waits); then all arrives.
pub fn unexpected_bound_rank(hold: std::time::Duration, late: std::time::Duration) {
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
    let h = if me == 0 { unsafe { rt.run(&s) }.unwrap() } else { std::thread::sleep(late); unsafe { rt.run(&s) }.unwrap() };
    if me == 0 {
        let t = std::time::Instant::now();
        while t.elapsed() < hold {
            assert!(!h.test().unwrap(), "all 512 KiB went out although the receiver buffers at most 64 KiB");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    h.wait().unwrap();
    if me == 1 {
        assert!(buf.iter().enumerate().all(|(i, &b)| b == pattern(1, i)), "wrong data");
    }
    goal_rt::finalize().unwrap();
}
