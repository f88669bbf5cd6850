//! The eager message ring between two nodes of one process (ranks as threads).

mod common;

use common::*;
use goal_transport::shm::{ShmConfig, ShmNode};
use goal_transport::Envelope;
use std::time::Duration;

const MESSAGES: u64 = 100_000;

/// One side of the exchange: sends `MESSAGES` to `peer` while draining what
/// `peer` sends, checking order, sizes and every byte.
fn exchange(node: ShmNode, me: usize, peer: usize) -> (u64, u64) {
    let max = node.max_eager();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ me as u64);
    let mut buf = vec![0u8; max];
    let (mut sent, mut received, mut full, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut pending: Option<(Envelope, usize)> = None;
    let start = std::time::Instant::now();
    while sent < MESSAGES || received < MESSAGES {
        if sent < MESSAGES {
            let (env, len) = *pending.get_or_insert_with(|| {
                // Mostly random sizes, with the edges (0, max) now and then.
                let len = match rng.below(16) {
                    0 => 0,
                    1 => max,
                    _ => rng.below(max + 1),
                };
                fill(sent, &mut buf[..len]);
                ([sent, len as u64, me as u64, !sent], len)
            });
            // Gather from up to three slices to exercise the gather path.
            let (a, rest) = buf[..len].split_at(len / 3);
            let (b, c) = rest.split_at(rest.len() / 2);
            if node.try_send(peer, &env, &[a, b, c]).unwrap() {
                node.flush();
                sent += 1;
                bytes += len as u64;
                pending = None;
            } else {
                full += 1;
            }
        }
        let polled = node.poll(&mut |src, env, payload| {
            assert_eq!(src, peer);
            assert_eq!(env[0], received, "out of order");
            assert_eq!(env[1] as usize, payload.len());
            assert_eq!(env[2], peer as u64);
            assert_eq!(env[3], !received);
            check(received, payload);
            received += 1;
        });
        if polled == 0 && pending.is_some() {
            // No progress either way: let the peer run (matters on 2 busy cores).
            std::thread::yield_now();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "exchange stuck: sent {sent} received {received}"
        );
    }
    (full, bytes)
}

#[test]
fn ring_threads_exchange_100k_messages_in_order() {
    let cfg = small_cfg();
    let (a, b) = pair(&cfg);
    let t = std::thread::spawn(move || exchange(b, 1, 0));
    let (full_a, bytes_a) = exchange(a, 0, 1);
    let (full_b, bytes_b) = t.join().unwrap();
    // Many wrap-arounds happened in each direction.
    assert!(bytes_a > 100 * cfg.ring_bytes as u64 && bytes_b > 100 * cfg.ring_bytes as u64);
    eprintln!("ring: {bytes_a}+{bytes_b} payload bytes, back-pressure hits {full_a}/{full_b}");
}

#[test]
fn ring_backpressure_returns_false_then_recovers() {
    let cfg = small_cfg();
    let (a, b) = pair(&cfg);
    let max = a.max_eager();
    assert_eq!(max, cfg.ring_bytes / 4, "the largest payload: a quarter of the ring, a whole power of two");
    let payload = vec![7u8; 1000];
    let mut seq = 0u64;
    let mut next_rx = 0u64;
    // Fill, drain, several times over, so the ring wraps with padding.
    for round in 0..20 {
        let mut n = 0;
        while a
            .try_send(
                1,
                &[seq, 0, 0, 0],
                &[&payload[..(seq as usize * 37) % 1000]],
            )
            .unwrap()
        {
            seq += 1;
            n += 1;
            assert!(n < 1000, "ring never filled");
        }
        assert!(n >= 8, "round {round}: only {n} messages fit");
        // Still full: no silent loss.
        assert!(!a.try_send(1, &[u64::MAX; 4], &[&payload]).unwrap());
        // Free one message: a large-enough one fits again eventually.
        let got = b.poll(&mut |_, env, p| {
            assert_eq!(env[0], next_rx);
            assert_eq!(p.len(), (next_rx as usize * 37) % 1000);
            assert!(p.iter().all(|&x| x == 7));
            next_rx += 1;
        });
        assert_eq!(got, n);
        assert_eq!(next_rx, seq);
    }
    // Edges: empty payload, exactly max_eager, one more is refused.
    let big = vec![1u8; max];
    assert!(a.try_send(1, &[1, 2, 3, 4], &[]).unwrap());
    assert!(a.try_send(1, &[5, 6, 7, 8], &[&big]).unwrap());
    assert!(a.try_send(1, &[0; 4], &[&big, &[1]]).is_err());
    let mut seen = Vec::new();
    b.poll(&mut |src, env, p| seen.push((src, *env, p.len())));
    assert_eq!(seen, vec![(0, [1, 2, 3, 4], 0), (0, [5, 6, 7, 8], max)]);
    // Nothing left; polling an empty ring is harmless.
    assert_eq!(b.poll(&mut |_, _, _| panic!("no message expected")), 0);
    // An empty ring takes a largest record wherever the last one left off,
    // padding included: lap after lap, and after odd sizes that move the
    // wrap point.
    for i in 0..40u64 {
        let odd = vec![2u8; (i as usize * 4099) % max];
        assert!(a.try_send(1, &[i, 0, 0, 0], &[&odd]).unwrap(), "message {i} ({} B) into an empty ring", odd.len());
        assert!(a.try_send(1, &[i, 1, 0, 0], &[&big]).unwrap(), "a largest message after {} B into a ring holding only that", odd.len());
        let mut lens = Vec::new();
        b.poll(&mut |_, env, p| {
            assert_eq!(env[0], i);
            lens.push(p.len());
        });
        assert_eq!(lens, [odd.len(), max]);
    }
}

#[test]
fn ring_messages_from_several_sources_keep_per_source_order() {
    let cfg = small_cfg();
    let size = 4;
    let mut nodes: Vec<ShmNode> = (0..size)
        .map(|r| ShmNode::create(r, size, &cfg).unwrap())
        .collect();
    let addrs: Vec<Vec<u8>> = nodes.iter().map(|n| n.address()).collect();
    for (r, n) in nodes.iter_mut().enumerate() {
        for (p, a) in addrs.iter().enumerate() {
            if p != r {
                n.connect(p, a).unwrap();
            }
        }
    }
    for i in 0..50u64 {
        for (src, node) in nodes.iter().enumerate().skip(1) {
            assert!(node
                .try_send(0, &[i, src as u64, 0, 0], &[&i.to_le_bytes()])
                .unwrap());
        }
    }
    let mut next = [0u64; 4];
    let n = nodes[0].poll(&mut |src, env, p| {
        assert_eq!(env[1], src as u64);
        assert_eq!(env[0], next[src]);
        assert_eq!(p, &next[src].to_le_bytes());
        next[src] += 1;
    });
    assert_eq!(n, 150);
    assert_eq!(&next[1..], &[50, 50, 50]);
}

#[test]
fn ring_poll_inside_poll_returns_nothing() {
    let (a, b) = pair(&small_cfg());
    assert!(a.try_send(1, &[1; 4], &[]).unwrap());
    assert!(a.try_send(1, &[2; 4], &[]).unwrap());
    let mut order = Vec::new();
    let b_ref = &b;
    b.poll(&mut |_, env, _| {
        assert_eq!(b_ref.poll(&mut |_, _, _| panic!("nested delivery")), 0);
        // A callback may send (a reply, say).
        assert!(b_ref.try_send(0, &[env[0] + 10; 4], &[]).unwrap());
        order.push(env[0]);
    });
    assert_eq!(order, vec![1, 2]);
    let mut replies = Vec::new();
    a.poll(&mut |_, env, _| replies.push(env[0]));
    assert_eq!(replies, vec![11, 12]);
}

#[test]
fn ring_send_to_unconnected_peer_is_an_error() {
    let cfg = small_cfg();
    let a = ShmNode::create(0, 3, &cfg).unwrap();
    assert_eq!(
        a.try_send(2, &[0; 4], &[]).unwrap_err().kind(),
        std::io::ErrorKind::NotConnected
    );
    assert_eq!(
        a.try_send(0, &[0; 4], &[]).unwrap_err().kind(),
        std::io::ErrorKind::NotConnected
    );
}

#[test]
fn connect_rejects_wrong_rank_and_mismatched_sizes() {
    let cfg = small_cfg();
    let mut a = ShmNode::create(0, 3, &cfg).unwrap();
    let b = ShmNode::create(1, 3, &cfg).unwrap();
    assert!(
        a.connect(2, &b.address()).is_err(),
        "address of rank 1 used for rank 2"
    );
    assert!(a.connect(1, b"garbage").is_err());
    let other = ShmNode::create(
        1,
        3,
        &ShmConfig {
            ring_bytes: 32 << 10,
            ..cfg.clone()
        },
    )
    .unwrap();
    let e = a.connect(1, &other.address()).unwrap_err();
    assert!(e.to_string().contains("GOAL_SHM_RING_BYTES"), "{e}");
    a.connect(1, &b.address()).unwrap();
}

#[test]
fn credits_travel_from_receiver_to_sender() {
    let (a, b) = pair(&small_cfg());
    assert_eq!(a.credits_returned(1), 0);
    b.return_credits(0, 4096);
    assert_eq!(a.credits_returned(1), 4096);
    b.return_credits(0, 1 << 40);
    assert_eq!(a.credits_returned(1), 1 << 40);
    // The other direction is a separate word.
    assert_eq!(b.credits_returned(0), 0);
    a.return_credits(1, 77);
    assert_eq!(b.credits_returned(0), 77);
    assert_eq!(a.credits_returned(1), 1 << 40);
}

#[test]
fn a_receivers_copy_out_reaches_its_sender_only() {
    let (a, b) = pair(&small_cfg());
    assert_eq!(a.copy_out(1), (0, 0), "nothing published yet");
    b.publish_copy_out(0, 65536, 6_500);
    assert_eq!(a.copy_out(1), (65536, 6_500));
    b.publish_copy_out(0, 16384, u32::MAX);
    assert_eq!(a.copy_out(1), (16384, u32::MAX), "the latest, whole");
    // The other direction is a separate word, and apart from the credits.
    assert_eq!(b.copy_out(0), (0, 0));
    assert_eq!(a.credits_returned(1), 0);
    a.publish_copy_out(1, 8192, 900);
    assert_eq!(b.copy_out(0), (8192, 900));
    assert_eq!(a.copy_out(1), (16384, u32::MAX));
}

#[test]
fn config_from_env_rounds_and_rejects_nonsense() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let c = ShmConfig::from_lookup(env(&[])).unwrap();
    assert_eq!(
        (c.ring_bytes, c.stream_bytes, c.heap_bytes),
        (1 << 20, 1 << 20, 64 << 30)
    );
    // The default ring shrinks for large jobs, so that an inbox's rings stay within 32 MiB.
    assert_eq!(ShmConfig::ring_bytes_for(2), 1 << 20);
    assert_eq!(ShmConfig::ring_bytes_for(32), 1 << 20);
    assert_eq!(ShmConfig::ring_bytes_for(33), 512 << 10);
    assert_eq!(ShmConfig::ring_bytes_for(64), 512 << 10);
    assert_eq!(ShmConfig::ring_bytes_for(65), 256 << 10);
    assert_eq!(ShmConfig::ring_bytes_for(100_000), 256 << 10);
    let c = ShmConfig::from_lookup(env(&[
        ("GOAL_SHM_RING_BYTES", "100000"),
        ("GOAL_SHM_STREAM_BYTES", "4M"),
        ("GOAL_HEAP_BYTES", "1GiB"),
    ]))
    .unwrap();
    assert_eq!(
        (c.ring_bytes, c.stream_bytes, c.heap_bytes),
        (131072, 4 << 20, 1 << 30)
    );
    for (k, v) in [
        ("GOAL_SHM_RING_BYTES", "lots"),
        ("GOAL_SHM_RING_BYTES", "0"),
        ("GOAL_SHM_STREAM_BYTES", "-5"),
        ("GOAL_SHM_STREAM_BYTES", "4Q"),
        ("GOAL_SHM_STREAM_BYTES", "2G"),
        ("GOAL_HEAP_BYTES", ""),
        ("GOAL_HEAP_BYTES", "99999999999T"),
    ] {
        let e = ShmConfig::from_lookup(|n| (n == k).then(|| v.to_string())).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            e.to_string().contains(k),
            "error for {k}={v} does not name it: {e}"
        );
    }
    // Invalid configs are refused by create, too.
    let bad = ShmConfig {
        ring_bytes: 5000,
        ..small_cfg()
    };
    assert!(ShmNode::create(0, 2, &bad).is_err());
}

#[test]
fn a_peer_sees_the_cpu_a_rank_last_waited_on() {
    let cfg = small_cfg();
    let (a, b) = pair(&cfg);
    // Nothing published yet: no CPU matches.
    assert!(!b.on_cpu(0, 0));
    assert_eq!(b.cpu_of(0), None);
    a.note_cpu(1);
    assert!(b.on_cpu(0, 1));
    assert!(!b.on_cpu(0, 0));
    assert_eq!(b.cpu_of(0), Some(1));
    a.note_cpu(0);
    assert!(b.on_cpu(0, 0) && !b.on_cpu(0, 1));
    assert_eq!(b.cpu_of(0), Some(0));
    // Itself and ranks it does not reach are on no CPU it knows of.
    assert!(!b.on_cpu(1, 0) && !b.on_cpu(7, 0));
    assert_eq!((b.cpu_of(1), b.cpu_of(7)), (None, None));
}

/// Sends message `seq` of `len` bytes from `from` to `to` and receives it
/// there, checking every byte.
fn hop(from: &ShmNode, to: &ShmNode, src: usize, seq: u64, len: usize) {
    let mut buf = vec![0u8; len];
    fill(seq, &mut buf);
    assert!(from.try_send(1 - src, &[seq, len as u64, src as u64, !seq], &[&buf]).unwrap());
    from.flush();
    let mut got = 0;
    to.poll(&mut |s, env, payload| {
        assert_eq!((s, env[0], env[1] as usize), (src, seq, len));
        check(seq, payload);
        got += 1;
    });
    assert_eq!(got, 1, "message {seq} did not arrive in one poll");
}

/// Sends up to `n` messages of `len` bytes from a to b without b polling,
/// until the ring is full, then drains them at b, checking order and
/// bytes; returns how many went and the next `seq`.
fn window(a: &ShmNode, b: &ShmNode, seq: u64, n: u64, len: usize) -> (u64, u64) {
    let mut buf = vec![0u8; len];
    let mut sent = 0;
    while sent < n {
        fill(seq + sent, &mut buf);
        if !a.try_send(1, &[seq + sent, len as u64, 0, !(seq + sent)], &[&buf]).unwrap() {
            break;
        }
        sent += 1;
    }
    a.flush();
    let mut next = seq;
    b.poll(&mut |_, env, payload| {
        assert_eq!(env[0], next, "out of order");
        check(next, payload);
        next += 1;
    });
    assert_eq!(next, seq + sent);
    (sent, next)
}

#[test]
fn an_emptied_ring_is_rewound_and_a_busy_one_is_not() {
    // The default ring (256 KiB), far longer than the rewinding distance.
    let cfg = ShmConfig::default();
    let (a, b) = pair(&cfg);
    let near = 16 << 10;
    // A ping-pong of 1 KiB (and of 0 and 4 KiB now and then) keeps to the
    // ring's first KiB in both directions, across many times its size.
    let mut seq = 0;
    for i in 0..2000u64 {
        let len = match i % 50 {
            0 => 0,
            1 => 4 << 10,
            _ => 1 << 10,
        };
        hop(&a, &b, 0, seq, len);
        hop(&b, &a, 1, seq + 1, len);
        seq += 2;
        assert!(a.ring_position(1).unwrap() < near && b.ring_position(0).unwrap() < near, "round trip {i}: not rewound");
    }
    // Messages the consumer has not taken yet are never overwritten: a
    // window of 1 KiB messages goes on through the ring until it is full
    // (a rewind leaves room only up to where it was made, until the
    // consumer has passed it), and every message arrives intact.
    let mut most = 0;
    for _ in 0..20 {
        let (sent, next) = window(&a, &b, seq, 300, 1 << 10);
        assert!(sent >= 7, "only {sent} messages fit");
        most = most.max(sent);
        seq = next;
    }
    assert!(most >= 200, "at most {most} messages fit in 256 KiB");
    // Emptied, the ring is rewound within a few more messages.
    for _ in 0..16 {
        hop(&a, &b, 0, seq, 1 << 10);
        seq += 1;
    }
    assert!(a.ring_position(1).unwrap() < near);
    // Turned off (more ranks than cores), a ping-pong walks the ring.
    a.rewind_rings(false);
    let mut far = 0;
    for _ in 0..300 {
        hop(&a, &b, 0, seq, 1 << 10);
        seq += 1;
        far = far.max(a.ring_position(1).unwrap());
    }
    assert!(far > 128 << 10, "went only {far} bytes into the ring");
}

/// Sends one message of each length through a to b, checking the bytes,
/// that a long payload starts on a line, and how many bytes of the ring
/// each record took: `took(len, bytes)` judges it.
fn records_of_every_length(a: &ShmNode, b: &ShmNode, took: impl Fn(usize, usize)) {
    let max = a.max_eager();
    let mut seq = 0;
    for _ in 0..8 {
        for len in [0, 1, 8, 24, 25, 100, 256, 1000, 4096, 4097, 8191, 8192, 8193, 20_000, 65_535, max] {
            let mut buf = vec![0u8; len];
            fill(seq, &mut buf);
            let before = a.ring_position(1).unwrap();
            assert!(a.try_send(1, &[seq, len as u64, 0, !seq], &[&buf]).unwrap());
            a.flush();
            let mut got = 0;
            b.poll(&mut |_, env, payload| {
                assert_eq!((env[0], payload.len()), (seq, len));
                check(seq, payload);
                // The ring's data starts on a page: a payload of 8 KiB or
                // more starts on a line, whatever the place of its record.
                if len >= 8192 {
                    let at = payload.as_ptr() as usize % 64;
                    assert_eq!(at, 0, "payload of {len} bytes at {at} bytes into a line");
                }
                got += 1;
            });
            assert_eq!(got, 1);
            let after = a.ring_position(1).unwrap();
            if after > before {
                took(len, after - before);
            }
            seq += 1;
        }
    }
}

#[test]
fn payloads_of_8_kib_and_more_start_on_a_line_and_shorter_records_stay_packed() {
    let cfg = ShmConfig::default();
    let (a, b) = pair(&cfg);
    // Behind their 40 bytes of header and envelope, records padded to 8
    // bytes; one of 8 KiB or more with a gap of at most 96 bytes before its
    // payload. Rewinding or not (with more ranks than cores).
    for rewind in [true, false] {
        a.rewind_rings(rewind);
        records_of_every_length(&a, &b, |len, took| {
            let padded = (len + 7) & !7;
            if len < 8192 {
                assert_eq!(took, 40 + padded, "a record of {len} bytes took {took}");
            } else {
                assert!((40..=96).contains(&(took - padded)), "a record of {len} bytes took {took}");
            }
        });
    }
}
