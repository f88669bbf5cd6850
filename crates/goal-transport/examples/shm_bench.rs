//! Two-process micro-benchmarks of the shared-memory transport:
//! `cargo run --release -p goal-transport --example shm_bench`.
//!
//! Rank 0 (this process) re-executes itself as rank 1; both spin (no
//! doorbell sleeps), so the numbers are the transport's own costs:
//!
//! * one-way latency of an empty message (ping-pong round trip / 2),
//! * message rate of 64-byte messages, one way,
//! * stream bandwidth, 1 GiB through the default 1 MiB stream.

use goal_transport::shm::{ShmConfig, ShmNode};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

const PINGS: u64 = 200_000;
const MESSAGES: u64 = 2_000_000;
const STREAM: usize = 1 << 30;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn main() {
    let cfg = ShmConfig::from_env().unwrap();
    if std::env::var("SHM_BENCH_CHILD").is_ok() {
        let mut node = ShmNode::create(1, 2, &cfg).unwrap();
        println!("{}", hex(&node.address()));
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        node.connect(0, &unhex(line.trim())).unwrap();
        child(&node);
        return;
    }
    let mut node = ShmNode::create(0, 2, &cfg).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("SHM_BENCH_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    writeln!(child.stdin.as_mut().unwrap(), "{}", hex(&node.address())).unwrap();
    node.connect(1, &unhex(line.trim())).unwrap();

    // Latency.
    let t = Instant::now();
    for i in 0..PINGS {
        while !node.try_send(1, &[i; 4], &[]).unwrap() {}
        let mut seen = false;
        while !seen {
            node.poll(&mut |_, _, _| seen = true);
        }
    }
    let lat = t.elapsed().as_nanos() as f64 / PINGS as f64 / 2.0;

    // Message rate.
    let payload = [0u8; 64];
    let t = Instant::now();
    for i in 0..MESSAGES {
        while !node.try_send(1, &[i; 4], &[&payload]).unwrap() {
            std::hint::spin_loop();
        }
    }
    let mut done = false;
    while !done {
        node.poll(&mut |_, _, _| done = true);
    }
    let rate = MESSAGES as f64 / t.elapsed().as_secs_f64() / 1e6;

    // Stream bandwidth.
    let data = vec![0x5au8; 4 << 20];
    let t = Instant::now();
    let mut sent = 0;
    while sent < STREAM {
        let k = data.len().min(STREAM - sent);
        sent += node.stream_push(1, &data[..k]);
    }
    let mut done = false;
    while !done {
        node.poll(&mut |_, _, _| done = true);
    }
    let gbs = STREAM as f64 / t.elapsed().as_secs_f64() / 1e9;
    child.wait().unwrap();
    println!("one-way latency (empty message, both spinning): {lat:.0} ns");
    println!("message rate (64 B payload, one way):            {rate:.2} M msg/s");
    println!(
        "stream bandwidth (1 GiB, {} KiB stream):       {gbs:.2} GB/s",
        cfg.stream_bytes >> 10
    );
}

fn child(node: &ShmNode) {
    for i in 0..PINGS {
        let mut seen = false;
        while !seen {
            node.poll(&mut |_, _, _| seen = true);
        }
        while !node.try_send(0, &[i; 4], &[]).unwrap() {}
    }
    let mut got = 0;
    while got < MESSAGES {
        got += node.poll(&mut |_, _, _| {}) as u64;
    }
    assert!(node.try_send(0, &[0; 4], &[]).unwrap());
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0;
    while got < STREAM {
        got += node.stream_pop(0, &mut buf);
    }
    assert!(node.try_send(0, &[0; 4], &[]).unwrap());
}
