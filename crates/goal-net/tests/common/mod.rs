//! Shared helpers: groups of nodes on loopback rails, event logs, a pump
//! that drives several nodes from one thread.
//!
//! Several NICs are emulated with 127.0.0.1, 127.0.0.2, ...: all of 127/8 is
//! loopback on Linux, so each rail is a distinct address with its own
//! sockets, and no privileges are needed.

#![allow(dead_code)]

use goal_net::{AmRails, Event, NetConfig, NetNode, RailSpec};
use std::time::{Duration, Instant};

/// Bytes `n` has written on all its connections.
pub fn bytes_out(n: &NetNode) -> u64 {
    n.rail_stats().iter().map(|r| r.counters.bytes_out).sum()
}

pub const SECRET: [u8; 32] = [7; 32];
pub const H_DATA: u8 = 16;
pub const H_CTL: u8 = 17;

/// `n` loopback rails, 127.0.0.1/8 ... 127.0.0.n/8.
pub fn rails(n: usize) -> Vec<RailSpec> {
    (1..=n).map(|i| RailSpec { name: format!("lo{i}"), addr: format!("127.0.0.{i}").parse().unwrap(), prefix_len: 8 }).collect()
}

/// A test configuration: short timeouts, messages spread round robin.
pub fn cfg(rank: u32, size: u32, nrails: usize) -> NetConfig {
    let mut c = NetConfig::new(rank, size, SECRET, rails(nrails), vec![H_DATA, H_CTL]);
    c.am_rails = AmRails::RoundRobin;
    c.connect_timeout = Duration::from_secs(10);
    c.dead_after = Duration::from_secs(1);
    c
}

/// Binds every configuration, exchanges blobs, connects all pairs (each
/// node in its own thread, as `connect` blocks), returns the nodes by rank.
pub fn group(cfgs: Vec<NetConfig>) -> Vec<NetNode> {
    let n = cfgs.len();
    let (nodes, blobs): (Vec<_>, Vec<_>) = cfgs.into_iter().map(|c| NetNode::bind(c).expect("bind")).unzip();
    let handles: Vec<_> = nodes
        .into_iter()
        .enumerate()
        .map(|(r, mut node)| {
            let blobs = blobs.clone();
            std::thread::spawn(move || {
                let remote: Vec<bool> = (0..n).map(|p| p != r).collect();
                node.connect(&blobs, &remote).expect("connect");
                node
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("connect thread")).collect()
}

/// Two nodes over `nrails` rails.
pub fn pair(nrails: usize) -> (NetNode, NetNode) {
    let mut g = group(vec![cfg(0, 2, nrails), cfg(1, 2, nrails)]);
    let b = g.pop().unwrap();
    let a = g.pop().unwrap();
    (a, b)
}

/// Everything one node reported.
#[derive(Default)]
pub struct Log {
    pub ams: Vec<(u32, u8, Vec<u8>, Vec<u8>)>,
    pub done: Vec<(u32, u64)>,
    pub sent: Vec<(u32, u64)>,
    pub peer_lost: Vec<(u32, String, Instant)>,
    pub rail_lost: Vec<(u32, String, String)>,
}

impl std::fmt::Debug for Log {
    /// Counts, and the failures in full (messages would drown the output).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Log {{ ams: {}, done: {:?}, sent: {:?}, peer_lost: {:?}, rail_lost: {:?} }}",
            self.ams.len(),
            self.done,
            self.sent,
            self.peer_lost.iter().map(|(p, w, _)| (p, w)).collect::<Vec<_>>(),
            self.rail_lost
        )
    }
}

impl Log {
    pub fn record(&mut self, e: Event<'_>) {
        match e {
            Event::Am { src, handler, head, payload } => self.ams.push((src, handler, head.to_vec(), payload.to_vec())),
            Event::BulkDone { src, token } => self.done.push((src, token)),
            Event::BulkSent { dst, token } => self.sent.push((dst, token)),
            Event::PeerLost { peer, why, .. } => self.peer_lost.push((peer, why, Instant::now())),
            Event::RailLost { peer, rail, why } => self.rail_lost.push((peer, rail, why)),
        }
    }
}

/// Polls every node (recording into its log) until `done` holds; false on timeout.
pub fn pump(nodes: &mut [&mut NetNode], logs: &mut [Log], timeout: Duration, mut done: impl FnMut(&[Log]) -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        for (node, log) in nodes.iter_mut().zip(logs.iter_mut()) {
            node.poll(&mut |e| log.record(e));
        }
        if done(logs) {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
    }
}

/// A deterministic byte pattern for message `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// FNV-1a, for comparing large buffers in messages.
pub fn checksum(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100000001b3))
}

/// 64 MiB from `a` (rank 0) to `b` (rank 1) plus 2000 messages; `cut` runs
/// once `after` bytes are out (to break rails). Checks that the transfer and
/// every message arrive exactly once, in order, and nobody is lost; returns
/// the logs.
pub fn survive_cut(mut a: NetNode, mut b: NetNode, after: u64, sender_losses: usize, cut: impl Fn(&mut NetNode, &mut NetNode, &mut [Log; 2])) -> [Log; 2] {
    let size = 64 << 20;
    let src = pattern(3, size);
    let mut dst = vec![0u8; size];
    // SAFETY: both buffers outlive the transfer (we wait for both events).
    unsafe {
        b.expect_bulk(0, 1, vec![(dst.as_mut_ptr(), size)]).unwrap();
        a.send_bulk(1, 1, vec![(src.as_ptr(), size)]).unwrap();
    }
    let mut logs = [Log::default(), Log::default()];
    let mut sent = 0u64;
    let mut cut_done = false;
    let end = Instant::now() + Duration::from_secs(60);
    // Until the transfer is done and the sender has seen `sender_losses`
    // rails fail: a rail cut late may go idle, its failure read only after
    // the last fragment's acknowledgement.
    while !(logs[0].sent.len() == 1 && logs[1].done.len() == 1 && logs[1].ams.len() as u64 == sent && cut_done && logs[0].rail_lost.len() >= sender_losses) {
        assert!(Instant::now() < end, "did not finish: {logs:?}");
        if sent < 2000 {
            a.send_am(1, H_DATA, &sent.to_le_bytes(), &[&pattern(sent, (sent % 500) as usize)]).unwrap();
            sent += 1;
        }
        if !cut_done && bytes_out(&a) >= after {
            cut(&mut a, &mut b, &mut logs);
            cut_done = true;
        }
        a.poll(&mut |e| logs[0].record(e));
        b.poll(&mut |e| logs[1].record(e));
    }
    assert!(dst == src, "bulk data intact");
    for (i, m) in logs[1].ams.iter().enumerate() {
        assert_eq!(m.2, (i as u64).to_le_bytes(), "message {i}");
        assert_eq!(m.3, pattern(i as u64, i % 500));
    }
    assert!(logs.iter().all(|l| l.peer_lost.is_empty()), "{logs:?}");
    logs
}
