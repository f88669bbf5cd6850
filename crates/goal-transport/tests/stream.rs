//! The bulk stream between two nodes of one process (ranks as threads).

mod common;

use goal_transport::shm::StreamWindow;
use common::*;
use std::time::{Duration, Instant};

const TOTAL: usize = 64 << 20;

/// The byte at absolute stream position `i`: not periodic in the ring size,
/// so a chunk landing at the wrong offset is caught.
fn stream_byte(i: usize) -> u8 {
    (i as u64).wrapping_mul(0x9E37_79B9).wrapping_shr(7) as u8 ^ (i / 4093) as u8
}

#[test]
fn stream_moves_64mib_through_a_1mib_stream_concurrently() {
    let cfg = small_cfg();
    assert_eq!(cfg.stream_bytes, 1 << 20);
    let (a, b) = pair(&cfg);
    let src: Vec<u8> = (0..TOTAL).map(stream_byte).collect();
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        let mut rng = Rng(7);
        let mut off = 0;
        let mut short = 0u64;
        while off < TOTAL {
            // Random push sizes: tiny, odd, bigger than the stream.
            let want = [1, 4093, 65536, 300_000, 3 << 20][rng.below(5)].min(TOTAL - off);
            let n = a.stream_push(1, &src[off..off + want]);
            if n < want {
                short += 1;
            }
            off += n;
            if n == 0 {
                std::thread::yield_now();
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "producer stuck at {off}"
            );
        }
        short
    });
    let mut dst = vec![0u8; TOTAL];
    let mut rng = Rng(11);
    let mut off = 0;
    while off < TOTAL {
        let want = [7, 65536, 1 << 20, 2 << 20][rng.below(4)].min(TOTAL - off);
        let n = b.stream_pop(0, &mut dst[off..off + want]);
        if n == 0 {
            std::thread::yield_now();
        }
        off += n;
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "consumer stuck at {off}"
        );
    }
    let elapsed = start.elapsed();
    let short = producer.join().unwrap();
    // Nothing more than was pushed.
    assert_eq!(b.stream_pop(0, &mut [0u8; 16]), 0);
    if let Some(i) = (0..TOTAL).find(|&i| dst[i] != stream_byte(i)) {
        panic!("stream byte {i} wrong: {} != {}", dst[i], stream_byte(i));
    }
    assert!(short > 0, "the stream never filled: back-pressure untested");
    eprintln!(
        "stream: 64 MiB through 1 MiB in {elapsed:?} = {:.2} GB/s (short pushes: {short})",
        TOTAL as f64 / elapsed.as_secs_f64() / 1e9
    );
}

#[test]
fn stream_push_pop_partial_and_wrapping() {
    let (a, b) = pair(&small_cfg());
    let cap = small_cfg().stream_bytes;
    let mut pos = 0usize; // bytes pushed
    let mut got = 0usize; // bytes popped
    let mut rng = Rng(3);
    for _ in 0..200 {
        let want = rng.below(cap + cap / 2);
        let chunk: Vec<u8> = (pos..pos + want).map(stream_byte).collect();
        let n = a.stream_push(1, &chunk);
        assert_eq!(n, want.min(cap - (pos - got)), "push took the wrong amount");
        pos += n;
        let mut out = vec![0u8; rng.below(cap + 1)];
        let m = b.stream_pop(0, &mut out);
        assert_eq!(m, out.len().min(pos - got));
        for (k, &x) in out[..m].iter().enumerate() {
            assert_eq!(x, stream_byte(got + k), "byte {}", got + k);
        }
        got += m;
    }
    assert!(pos > 20 * cap, "too few wraps");
}

/// Page faults this thread has taken so far (minor ones: pages mapped in).
fn thread_faults() -> i64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD counts the calling thread only, so
    // tests running beside this one do not count.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    u.ru_minflt
}

/// A stream's first copy maps all its pages in (on each side), so the
/// first megabyte through it does not fault page by page: goal-rt times
/// each path of a large message, and a first megabyte that took ten times
/// as long made the stream lose to Cross Memory Attach where it was
/// twice as fast.
#[test]
fn a_streams_first_copy_maps_all_of_it_in() {
    let cfg = small_cfg();
    let (a, b) = pair(&cfg);
    let cap = cfg.stream_bytes;
    assert_eq!(a.stream_push(1, &[7]), 1);
    let mut one = [0u8; 1];
    assert_eq!(b.stream_pop(0, &mut one), 1);
    let data: Vec<u8> = (1..cap).map(stream_byte).collect();
    // Written once, so that its own pages are in before the count.
    let mut out = std::hint::black_box(vec![0xffu8; cap - 1]);
    let before = thread_faults();
    let (mut pushed, mut popped) = (0, 0);
    while popped < data.len() {
        pushed += a.stream_push(1, &data[pushed..]);
        popped += b.stream_pop(0, &mut out[popped..]);
    }
    let faults = thread_faults() - before;
    assert_eq!(out, data, "bytes through the stream");
    // 4 KiB pages: 256 for the producer's side and 256 for the consumer's
    // without populating; a few allowed for the test's own bookkeeping.
    assert!(faults < 32, "{faults} page faults moving {} bytes through a stream already used", cap - 1);
}

/// Messages of random lengths, each through the stream's narrow window,
/// the stream or its long window as a die decides (the same for both
/// sides, as the receiver's CTS tells the sender), the producer on a
/// thread of its own: every byte arrives in place, and a producer whose
/// window changes pushes nothing until the consumer has taken every byte
/// before.
#[test]
fn messages_switch_between_the_narrow_window_the_stream_and_the_long_window() {
    let cfg = small_cfg();
    assert!(cfg.stream_bytes > goal_transport::shm::STREAM_NARROW);
    let (a, b) = pair(&cfg);
    let mut rng = Rng(5);
    let windows = [StreamWindow::Narrow, StreamWindow::Stream, StreamWindow::Long];
    let msgs: Vec<(usize, StreamWindow)> =
        (0..200).map(|_| ([1, 4093, 65536, 300_000, 1 << 20, 3 << 20][rng.below(6)], windows[rng.below(3)])).collect();
    let total: usize = msgs.iter().map(|m| m.0).sum();
    let src: Vec<u8> = (0..total).map(stream_byte).collect();
    let start = Instant::now();
    let plan = msgs.clone();
    let producer = std::thread::spawn(move || {
        let mut off = 0;
        for (len, narrow) in plan {
            a.stream_push_window(1, narrow);
            let end = off + len;
            while off < end {
                let n = a.stream_push(1, &src[off..end]);
                off += n;
                if n == 0 {
                    std::thread::yield_now();
                }
                assert!(start.elapsed() < Duration::from_secs(60), "producer stuck at {off}");
            }
        }
    });
    let mut dst = vec![0u8; total];
    let mut off = 0;
    for (i, &(len, narrow)) in msgs.iter().enumerate() {
        b.stream_pop_window(0, narrow);
        let end = off + len;
        while off < end {
            let n = b.stream_pop(0, &mut dst[off..end]);
            off += n;
            if n == 0 {
                std::thread::yield_now();
            }
            assert!(start.elapsed() < Duration::from_secs(60), "consumer stuck at {off}, message {i}");
        }
        if let Some(k) = (end - len..end).find(|&k| dst[k] != stream_byte(k)) {
            panic!("message {i} ({len} B, window {narrow:?}): byte {k} wrong");
        }
    }
    producer.join().unwrap();

    // A change of window waits for the consumer to empty the stream.
    let (a, b) = pair(&cfg);
    a.stream_push_window(1, StreamWindow::Stream);
    assert_eq!(a.stream_push(1, &[1u8; 1000]), 1000);
    a.stream_push_window(1, StreamWindow::Narrow);
    assert_eq!(a.stream_push(1, &[2u8; 10]), 0, "pushed through a new window over bytes still in the stream");
    let mut got = [0u8; 1000];
    b.stream_pop_window(0, StreamWindow::Stream);
    assert_eq!(b.stream_pop(0, &mut got), 1000);
    assert_eq!(a.stream_push(1, &[2u8; 10]), 10);
    b.stream_pop_window(0, StreamWindow::Narrow);
    assert_eq!(b.stream_pop(0, &mut got[..10]), 10);
    assert_eq!(&got[..10], &[2u8; 10]);

    // Each window holds its size and no more while nobody reads: the
    // narrow one 256 KiB, the stream its size, the long one twice that.
    for (w, room) in [
        (StreamWindow::Narrow, goal_transport::shm::STREAM_NARROW),
        (StreamWindow::Stream, cfg.stream_bytes),
        (StreamWindow::Long, 2 * cfg.stream_bytes),
        (StreamWindow::Stream, cfg.stream_bytes),
    ] {
        let big = vec![3u8; 3 * cfg.stream_bytes];
        a.stream_push_window(1, w);
        assert_eq!(a.stream_push(1, &big), room, "room of the {w:?} window");
        b.stream_pop_window(0, w);
        let mut out = vec![0u8; room];
        assert_eq!(b.stream_pop(0, &mut out), room);
        assert!(out.iter().all(|&x| x == 3));
    }
}
