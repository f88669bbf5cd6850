//! Sleeping on the doorbell: wake-ups arrive, and none is lost.

mod common;

use common::*;
use goal_transport::shm::ShmNode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Long enough never to expire when the wake-up works, short enough that a
/// lost wake-up fails the test instead of hanging it.
const SLEEP: Duration = Duration::from_secs(2);

/// Waits for the next message the way the runtime does: register, re-check,
/// sleep. Panics if a sleep runs to its timeout (a lost wake-up).
fn wait_message(node: &ShmNode, mut on: impl FnMut(&[u64; 4])) -> u32 {
    let bell = node.doorbell();
    let mut sleeps = 0;
    loop {
        if node.poll(&mut |_, env, _| on(env)) > 0 {
            return sleeps;
        }
        let guard = bell.prepare();
        if node.poll(&mut |_, env, _| on(env)) > 0 {
            drop(guard);
            return sleeps;
        }
        let t = Instant::now();
        guard.sleep(SLEEP);
        assert!(t.elapsed() < SLEEP, "lost wake-up: slept the whole timeout");
        sleeps += 1;
    }
}

#[test]
fn doorbell_no_lost_wakeup_in_10k_ping_pongs() {
    let (a, b) = pair(&small_cfg());
    const ROUNDS: u64 = 10_000;
    let t = std::thread::spawn(move || {
        let mut sleeps = 0;
        for i in 0..ROUNDS {
            let mut got = None;
            sleeps += wait_message(&b, |env| got = Some(env[0]));
            assert_eq!(got, Some(i));
            assert!(b.try_send(0, &[i; 4], &[]).unwrap());
            b.flush();
        }
        sleeps
    });
    let mut sleeps = 0;
    for i in 0..ROUNDS {
        assert!(a.try_send(1, &[i; 4], &[]).unwrap());
        a.flush();
        let mut got = None;
        sleeps += wait_message(&a, |env| got = Some(env[0]));
        assert_eq!(got, Some(i));
    }
    let sleeps_b = t.join().unwrap();
    // Both sides really slept (otherwise the test proves nothing).
    eprintln!("doorbell ping-pong: {sleeps} + {sleeps_b} sleeps in {ROUNDS} rounds");
    assert!(
        u64::from(sleeps + sleeps_b) > ROUNDS / 10,
        "hardly anyone slept: {sleeps} + {sleeps_b}"
    );
}

#[test]
fn doorbell_peer_write_and_flush_wakes_a_sleeper_quickly() {
    let (a, b) = pair(&small_cfg());
    let bell = b.doorbell();
    let asleep = Arc::new(AtomicBool::new(false));
    let asleep2 = asleep.clone();
    let t = std::thread::spawn(move || {
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            let guard = bell.prepare();
            asleep2.store(true, Ordering::SeqCst);
            let t0 = Instant::now();
            guard.sleep(SLEEP);
            let waited = t0.elapsed();
            assert!(waited < SLEEP, "not woken");
            worst = worst.max(waited);
            let n = b.poll(&mut |_, _, _| {});
            assert_eq!(n, 1, "woken without a message");
        }
        worst
    });
    let mut latencies = Vec::new();
    for i in 0..20u64 {
        while !asleep.swap(false, Ordering::SeqCst) {
            assert!(!t.is_finished(), "the sleeper thread stopped early");
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(5)); // let it reach the futex
        let t0 = Instant::now();
        assert!(a.try_send(1, &[i; 4], &[]).unwrap());
        a.flush();
        latencies.push(t0.elapsed());
    }
    let worst = t.join().unwrap();
    eprintln!(
        "doorbell: flush took at most {:?}; sleeps lasted at most {worst:?}",
        latencies.iter().max()
    );
    // 5 ms of deliberate delay + the wake-up itself; generous for loaded CI.
    assert!(worst < Duration::from_millis(500), "wake-up took {worst:?}");
}

#[test]
fn doorbell_ring_wakes_own_threads_and_unused_guards_unregister() {
    let (a, _b) = pair(&small_cfg());
    let bell = a.doorbell();
    // A dropped guard must not leave a phantom sleeper behind, nor wake anything.
    for _ in 0..100 {
        drop(bell.prepare());
    }
    // Sleeping with nothing to wake us times out (the timeout works).
    let t0 = Instant::now();
    bell.prepare().sleep(Duration::from_millis(30));
    assert!(t0.elapsed() >= Duration::from_millis(25));
    // Another thread of the process rings.
    let bell2 = bell.clone();
    let t = std::thread::spawn(move || {
        for _ in 0..200 {
            let g = bell2.prepare();
            let t0 = Instant::now();
            g.sleep(SLEEP);
            assert!(t0.elapsed() < SLEEP, "ring() lost");
        }
    });
    let start = Instant::now();
    while !t.is_finished() {
        bell.ring();
        std::thread::sleep(Duration::from_micros(200));
        assert!(start.elapsed() < Duration::from_secs(20));
    }
    t.join().unwrap();
}

#[test]
fn doorbell_stream_pop_and_credits_wake_the_producer() {
    let (a, b) = pair(&small_cfg());
    let cap = small_cfg().stream_bytes;
    // Fill the stream a -> b completely.
    let data = vec![3u8; cap];
    assert_eq!(a.stream_push(1, &data), cap);
    assert_eq!(a.stream_push(1, &[1]), 0);
    let t = std::thread::spawn(move || {
        let bell = a.doorbell();
        // Wait for space (freed by b's pop), then for credits.
        loop {
            let g = bell.prepare();
            if a.stream_push(1, &[9u8; 100]) > 0 {
                break;
            }
            let t0 = Instant::now();
            g.sleep(SLEEP);
            assert!(
                t0.elapsed() < SLEEP,
                "stream_pop + flush did not wake the producer"
            );
        }
        loop {
            let g = bell.prepare();
            if a.credits_returned(1) == 42 {
                break;
            }
            let t0 = Instant::now();
            g.sleep(SLEEP);
            assert!(
                t0.elapsed() < SLEEP,
                "return_credits + flush did not wake the sender"
            );
        }
    });
    std::thread::sleep(Duration::from_millis(20));
    let mut buf = vec![0u8; 4096];
    assert_eq!(b.stream_pop(0, &mut buf), 4096);
    b.flush();
    std::thread::sleep(Duration::from_millis(20));
    b.return_credits(0, 42);
    b.flush();
    t.join().unwrap();
}
