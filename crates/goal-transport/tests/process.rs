//! Two real processes: rings, streams, the heap, CMA and liveness across a
//! process boundary. Each test re-executes this binary as its peer (see
//! `common::ChildProc`).

mod common;

use common::*;
use goal_transport::shm::{ShmConfig, ShmNode};
use goal_transport::sys;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);
const MESSAGES: u64 = 20_000;
const STREAM_BYTES: usize = 16 << 20;
const PINGS: u32 = 20_000;

/// The stream carries message 0's pattern, 8 MiB long, twice over.
fn stream_data() -> Vec<u8> {
    let mut half = vec![0u8; STREAM_BYTES / 2];
    fill(0, &mut half);
    [&half[..], &half[..]].concat()
}

#[test]
fn process_ring_stream_and_latency() {
    let cfg = small_cfg();
    if child_role().as_deref() == Some("ring") {
        let node = child_node(&cfg);
        // 1. Echo every message back, checking it first; sleep when idle.
        let mut next = 0u64;
        while next < MESSAGES {
            poll_sleeping(&node, LIMIT, &mut |src, env, p| {
                assert_eq!((src, env[0], env[1] as usize), (0, next, p.len()));
                check(next, p);
                while !node.try_send(0, env, &[p]).unwrap() {
                    node.flush();
                    std::hint::spin_loop();
                }
                next += 1;
            });
            node.flush();
        }
        // 2. Pop the stream, checking every byte.
        let want = stream_data();
        let mut buf = vec![0u8; 200_000];
        let mut got = 0;
        let start = Instant::now();
        while got < STREAM_BYTES {
            let n = node.stream_pop(0, &mut buf);
            assert!(
                buf[..n] == want[got..got + n],
                "stream bytes {got}..{} wrong",
                got + n
            );
            got += n;
            node.flush();
            assert!(start.elapsed() < LIMIT, "stream stuck at {got}");
        }
        assert!(node
            .try_send(0, &[u64::MAX, got as u64, 0, 0], &[])
            .unwrap());
        node.flush();
        // 3. Ping-pong, spinning.
        for i in 0..PINGS {
            let mut seen = false;
            while !seen {
                node.poll(&mut |_, env, _| {
                    assert_eq!(env[0], i as u64);
                    seen = true;
                });
            }
            assert!(node.try_send(0, &[i as u64; 4], &[]).unwrap());
        }
        child_recv("BYE");
        return;
    }
    let (node, child) = parent_pair("process_ring_stream_and_latency", "ring", &cfg);
    // 1. Messages out and their echoes back, random sizes.
    let max = node.max_eager();
    let mut rng = Rng(99);
    let mut buf = vec![0u8; max];
    let (mut sent, mut echoed) = (0u64, 0u64);
    let start = Instant::now();
    while echoed < MESSAGES {
        if sent < MESSAGES && sent - echoed < 64 {
            let len = rng.below(max + 1);
            fill(sent, &mut buf[..len]);
            if node
                .try_send(1, &[sent, len as u64, 0, 0], &[&buf[..len]])
                .unwrap()
            {
                sent += 1;
                node.flush();
                continue;
            }
        }
        let must_wait = sent == MESSAGES || sent - echoed >= 64;
        let mut on = |src: usize, env: &[u64; 4], p: &[u8]| {
            assert_eq!((src, env[0], env[1] as usize), (1, echoed, p.len()));
            check(echoed, p);
            echoed += 1;
        };
        if must_wait {
            poll_sleeping(&node, LIMIT, &mut on);
        } else {
            node.poll(&mut on);
        }
    }
    let ring_time = start.elapsed();
    // 2. Stream out.
    let data = stream_data();
    let start = Instant::now();
    let mut off = 0;
    while off < STREAM_BYTES {
        off += node.stream_push(1, &data[off..(off + 300_000).min(STREAM_BYTES)]);
        node.flush();
        assert!(start.elapsed() < LIMIT, "stream stuck at {off}");
    }
    let mut done = None;
    poll_sleeping(&node, LIMIT, &mut |_, env, _| done = Some(*env));
    let stream_time = start.elapsed();
    assert_eq!(done, Some([u64::MAX, STREAM_BYTES as u64, 0, 0]));
    // 3. Ping-pong, both sides spinning: one-way latency = round trip / 2.
    let start = Instant::now();
    for i in 0..PINGS {
        assert!(node.try_send(1, &[i as u64; 4], &[]).unwrap());
        let mut seen = false;
        while !seen {
            node.poll(&mut |_, env, _| {
                assert_eq!(env[0], i as u64);
                seen = true;
            });
            assert!(start.elapsed() < LIMIT, "ping-pong stuck at {i}");
        }
    }
    let pp = start.elapsed();
    eprintln!(
        "two processes: {MESSAGES} echoed messages in {ring_time:?}; 16 MiB stream in {stream_time:?} ({:.2} GB/s); \
         one-way latency {:.0} ns (both spinning)",
        STREAM_BYTES as f64 / stream_time.as_secs_f64() / 1e9,
        pp.as_nanos() as f64 / PINGS as f64 / 2.0
    );
    let mut child = child;
    child.send("BYE", "");
    child.wait_ok(LIMIT);
}

#[test]
fn process_peer_reads_child_heap() {
    let cfg = small_cfg();
    if child_role().as_deref() == Some("heap") {
        let node = child_node(&cfg);
        let heap = node.heap();
        let size = 5 << 20;
        let p = heap.alloc(size).unwrap().as_ptr();
        // SAFETY: fresh block of `size` bytes.
        fill(7, unsafe { std::slice::from_raw_parts_mut(p, size) });
        let off = heap.offset_of(p, size).unwrap();
        assert!(node.try_send(0, &[off, size as u64, 0, 0], &[]).unwrap());
        node.flush();
        child_recv("BYE");
        return;
    }
    let (node, child) = parent_pair("process_peer_reads_child_heap", "heap", &cfg);
    let mut at = None;
    poll_sleeping(&node, LIMIT, &mut |_, env, _| {
        at = Some((env[0], env[1] as usize))
    });
    let (off, size) = at.unwrap();
    let mut dst = vec![0u8; size];
    node.read_peer_heap(1, off, &mut dst).unwrap();
    check(7, &dst);
    let mut mid = vec![0u8; 777];
    node.read_peer_heap(1, off + 4_000_000, &mut mid).unwrap();
    assert_eq!(&mid[..], &dst[4_000_000..4_000_777]);
    let mut child = child;
    child.send("BYE", "");
    child.wait_ok(LIMIT);
}

#[test]
fn process_cma_read_from_child() {
    if child_role().as_deref() == Some("cma") {
        let _node = ShmNode::create(0, 1, &small_cfg()).unwrap(); // sets PR_SET_PTRACER
        let mut buf = vec![0u8; 4 << 20];
        fill(3, &mut buf);
        child_send(
            "BUF",
            &format!("{} {}", std::process::id(), buf.as_ptr() as u64),
        );
        child_recv("BYE");
        drop(buf);
        return;
    }
    let mut child = ChildProc::spawn("process_cma_read_from_child", "cma");
    let line = child.recv("BUF");
    let (pid, addr) = line.split_once(' ').unwrap();
    let (pid, addr): (i32, u64) = (pid.parse().unwrap(), addr.parse().unwrap());
    assert_eq!(pid as u32, child.child.id());
    let mut dst = vec![0u8; 4 << 20];
    sys::cma_read(pid, addr, &mut dst).unwrap();
    check(3, &dst);
    // An unaligned sub-range.
    let mut part = vec![0u8; 10_001];
    sys::cma_read(pid, addr + 4097, &mut part).unwrap();
    assert_eq!(&part[..], &dst[4097..14098]);
    // Unmapped remote memory is an error (EFAULT), not garbage.
    assert!(sys::cma_read(pid, 8, &mut [0u8; 16]).is_err());
    assert!(sys::cma_read(pid, addr, &mut []).is_ok());
    child.send("BYE", "");
    child.wait_ok(LIMIT);
    // A process that is gone is an error too.
    assert!(sys::cma_read(pid, addr, &mut [0u8; 8]).is_err());
}

#[test]
fn process_check_peers_reports_a_killed_child() {
    let cfg = small_cfg();
    if let Some(role) = child_role() {
        let _node = child_node(&cfg);
        if role == "exit3" {
            child_recv("GO");
            std::process::exit(3);
        }
        // Wait to be killed (or for the parent to go away).
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    // pidfd: false watches through /proc/<pid>/stat (the unreaped child's
    // exit status is there until the wait below).
    for (role, expected, pidfd) in [
        ("kill", "killed by signal 9", true),
        ("exit3", "exited with status 3", true),
        ("kill", "killed by signal 9", false),
        ("exit3", "exited with status 3", false),
    ] {
        let pcfg = ShmConfig { pidfd, ..cfg.clone() };
        let (node, mut child) =
            parent_pair("process_check_peers_reports_a_killed_child", role, &pcfg);
        assert_eq!(node.watch_note().is_some(), !pidfd);
        assert_eq!(node.check_peers(), Ok(()));
        assert_eq!(node.peer_pid(1) as u32, child.child.id());
        if role == "kill" {
            child.child.kill().unwrap(); // SIGKILL
        } else {
            child.send("GO", "");
        }
        let start = Instant::now();
        let lost = loop {
            match node.check_peers() {
                Ok(()) => {
                    assert!(
                        start.elapsed() < Duration::from_secs(5),
                        "death of the child not reported"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(lost) => break lost,
            }
        };
        assert_eq!(lost.rank, 1);
        assert_eq!(lost.cause, expected);
        // Checking is cheap enough to run every ~100 ms.
        let t = Instant::now();
        for _ in 0..1000 {
            let _ = node.check_peers();
        }
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "check_peers is slow: {:?}/1000",
            t.elapsed()
        );
        child.child.wait().unwrap();
        if !pidfd {
            // Reaped (and its pid free for reuse): still reported once only.
            assert_eq!(node.check_peers(), Ok(()));
        }
        // The dead peer's inbox stays mapped: writing to it is harmless.
        let _ = node.try_send(1, &[0; 4], &[]);
    }
}
