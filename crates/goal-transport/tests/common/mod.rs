//! Helpers shared by the transport's integration tests.
#![allow(dead_code)]

use goal_transport::shm::{ShmConfig, ShmNode};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A small config: rings wrap often, tests stay fast.
pub fn small_cfg() -> ShmConfig {
    ShmConfig {
        ring_bytes: 16 << 10,
        stream_bytes: 1 << 20,
        heap_bytes: 1 << 30,
        ..ShmConfig::default()
    }
}

/// Ranks 0 and 1 of a group of 2, created in this process and connected to each other.
pub fn pair(cfg: &ShmConfig) -> (ShmNode, ShmNode) {
    let mut a = ShmNode::create(0, 2, cfg).unwrap();
    let mut b = ShmNode::create(1, 2, cfg).unwrap();
    let (aa, ba) = (a.address(), b.address());
    a.connect(1, &ba).unwrap();
    b.connect(0, &aa).unwrap();
    (a, b)
}

/// xorshift64*: deterministic, dependency-free randomness.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pseudo-random bytes that message payloads are cut from: filling and
/// checking a payload is then a `memcpy`/`memcmp`, fast even unoptimised.
fn pool() -> &'static [u8] {
    static POOL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let mut rng = Rng(0x5eed);
        (0..(8 << 20) + 4096).map(|_| rng.next() as u8).collect()
    })
}

/// Where the bytes of message `seq` start in the pool (differs per message,
/// so a stale or misplaced payload is caught).
fn pool_start(seq: u64) -> usize {
    (seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize
}

/// Fills `buf` with the pattern of message `seq` (at most 8 MiB).
pub fn fill(seq: u64, buf: &mut [u8]) {
    let s = pool_start(seq);
    buf.copy_from_slice(&pool()[s..s + buf.len()]);
}

/// Checks `buf` against the pattern of message `seq`.
pub fn check(seq: u64, buf: &[u8]) {
    let s = pool_start(seq);
    let want = &pool()[s..s + buf.len()];
    if buf != want {
        let i = (0..buf.len()).find(|&i| buf[i] != want[i]).unwrap();
        panic!(
            "message {seq}: byte {i} of {} is {} not {}",
            buf.len(),
            buf[i],
            want[i]
        );
    }
}

/// Variable telling a re-executed test binary which child role to play.
pub const CHILD_ENV: &str = "GOAL_TRANSPORT_TEST_CHILD";

/// The child role this process plays, if it is a child.
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// A copy of this test binary running test `name` in child role `role`,
/// talking to us over its stdin/stdout lines.
pub struct ChildProc {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub stdout: BufReader<ChildStdout>,
}

impl ChildProc {
    pub fn spawn(name: &str, role: &str) -> ChildProc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        ChildProc {
            child,
            stdin,
            stdout,
        }
    }

    /// The next line the child sent with `tag` (harness lines are skipped).
    pub fn recv(&mut self, tag: &str) -> String {
        recv_tagged(&mut self.stdout, tag)
    }

    pub fn send(&mut self, tag: &str, value: &str) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "@@{tag} {value}").unwrap();
        w.flush().unwrap();
    }

    /// Waits for the child to exit, at most `limit`; panics if it failed or hangs.
    pub fn wait_ok(mut self, limit: Duration) {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "child failed: {st}");
                return;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("child did not finish within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ChildProc {
    /// A failing test must not leave its child behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads lines until one holds `@@tag `; returns the rest of it.
pub fn recv_tagged(r: &mut impl BufRead, tag: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = r.read_line(&mut line).unwrap();
        assert!(n != 0, "peer closed its pipe before sending {tag}");
        let marker = format!("@@{tag} ");
        if let Some(at) = line.find(&marker) {
            return line[at + marker.len()..].trim_end().to_string();
        }
    }
}

/// In the child: send a tagged line to the parent.
pub fn child_send(tag: &str, value: &str) {
    let mut out = std::io::stdout().lock();
    // Own line: the harness may have printed "test name ... " without a newline.
    writeln!(out, "\n@@{tag} {value}").unwrap();
    out.flush().unwrap();
}

/// In the child: the next tagged line from the parent.
pub fn child_recv(tag: &str) -> String {
    recv_tagged(&mut std::io::stdin().lock(), tag)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs `f` until it returns true or `limit` passes; panics on timeout.
pub fn spin_until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::hint::spin_loop();
    }
}

/// Parent side of a two-process group: rank 0 here, rank 1 in a child
/// running test `name` in role `role`; both connected.
pub fn parent_pair(name: &str, role: &str, cfg: &ShmConfig) -> (ShmNode, ChildProc) {
    let mut node = ShmNode::create(0, 2, cfg).unwrap();
    let mut child = ChildProc::spawn(name, role);
    let theirs = unhex(&child.recv("ADDR"));
    child.send("ADDR", &hex(&node.address()));
    node.connect(1, &theirs).unwrap();
    (node, child)
}

/// Child side of [`parent_pair`]: rank 1, connected to the parent.
pub fn child_node(cfg: &ShmConfig) -> ShmNode {
    let mut node = ShmNode::create(1, 2, cfg).unwrap();
    child_send("ADDR", &hex(&node.address()));
    let theirs = unhex(&child_recv("ADDR"));
    node.connect(0, &theirs).unwrap();
    node
}

/// What `ShmNode::poll` calls for each message.
pub type Handler<'a> = dyn FnMut(usize, &[u64; 4], &[u8]) + 'a;

/// Polls until at least one message arrives, sleeping on the doorbell in
/// between (panics after `limit`).
pub fn poll_sleeping(node: &ShmNode, limit: Duration, f: &mut Handler<'_>) -> usize {
    let bell = node.doorbell();
    let start = Instant::now();
    loop {
        let n = node.poll(f);
        if n > 0 {
            return n;
        }
        let g = bell.prepare();
        let n = node.poll(f);
        if n > 0 {
            return n;
        }
        assert!(start.elapsed() < limit, "no message within {limit:?}");
        let t = Instant::now();
        g.sleep(Duration::from_millis(100));
        if t.elapsed() >= Duration::from_millis(100) {
            eprintln!(
                "[pid {}] poll_sleeping: full 100 ms sleep",
                std::process::id()
            );
        }
    }
}
