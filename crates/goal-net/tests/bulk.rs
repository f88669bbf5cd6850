//! Bulk transfers of 0 B to 64 MiB over 1, 2 and 3 rails arrive whole,
//! read from and written to the callers' buffers (including scattered ones).

mod common;

use common::*;
use goal_net::NetNode;
use std::time::Duration;

/// Sends `src` from `a` to `b` as one transfer into `dst_pieces` (lengths of
/// the receiver's pieces); returns the received bytes, concatenated.
fn transfer(a: &mut NetNode, b: &mut NetNode, token: u64, src: &[u8], src_split: &[usize], dst_split: &[usize]) -> Vec<u8> {
    let mut dst: Vec<Vec<u8>> = dst_split.iter().map(|&n| vec![0u8; n]).collect();
    let dst_list: Vec<(*mut u8, usize)> = dst.iter_mut().map(|d| (d.as_mut_ptr(), d.len())).collect();
    // SAFETY: `dst` lives until the end of this function, after BulkDone.
    unsafe { b.expect_bulk(0, token, dst_list).unwrap() };
    let mut src_list = Vec::new();
    let mut at = 0;
    for &n in src_split {
        src_list.push((src[at..].as_ptr(), n));
        at += n;
    }
    assert_eq!(at, src.len());
    // SAFETY: `src` outlives the transfer: we wait for BulkSent below.
    unsafe { a.send_bulk(1, token, src_list).unwrap() };
    let mut logs = [Log::default(), Log::default()];
    let ok = pump(&mut [a, b], &mut logs, Duration::from_secs(60), |l| l[0].sent.contains(&(1, token)) && l[1].done.contains(&(0, token)));
    assert!(ok, "transfer of {} bytes did not finish: {:?}", src.len(), logs);
    assert!(logs.iter().all(|l| l.rail_lost.is_empty() && l.peer_lost.is_empty()));
    dst.concat()
}

fn sizes_over(nrails: usize) {
    let (mut a, mut b) = pair(nrails);
    for (i, &size) in [0usize, 1, 1 << 20, 64 << 20].iter().enumerate() {
        let src = pattern(i as u64, size);
        let got = transfer(&mut a, &mut b, 100 + i as u64, &src, &[size], &[size]);
        assert_eq!(checksum(&got), checksum(&src), "{size} bytes over {nrails} rails");
        assert!(got == src);
    }
    if nrails > 1 {
        let st = a.rail_stats();
        assert!(st.iter().all(|r| r.counters.frags_out > 0), "every rail carries fragments: {st:?}");
    }
}

#[test]
fn sizes_over_one_rail() {
    sizes_over(1);
}

#[test]
fn sizes_over_two_rails() {
    sizes_over(2);
}

#[test]
fn sizes_over_three_rails() {
    sizes_over(3);
}

#[test]
fn scattered_buffers_and_a_longer_destination() {
    let (mut a, mut b) = pair(3);
    let src = pattern(9, 3 << 20);
    // Source in uneven pieces, destination in other uneven pieces, the last
    // one longer than needed.
    let got = transfer(&mut a, &mut b, 1, &src, &[1, 1 << 20, 77, (3 << 20) - (1 << 20) - 78], &[5000, 1 << 21, 1 << 21]);
    assert_eq!(&got[..src.len()], &src[..]);
    assert!(got[src.len()..].iter().all(|&x| x == 0));
}

#[test]
fn many_transfers_at_once_both_ways() {
    let (mut a, mut b) = pair(2);
    let n = 16u64;
    let srcs_a: Vec<Vec<u8>> = (0..n).map(|i| pattern(i, 100_000 * i as usize + 3)).collect();
    let srcs_b: Vec<Vec<u8>> = (0..n).map(|i| pattern(i + 50, 70_000 * i as usize + 1)).collect();
    let mut dst_b: Vec<Vec<u8>> = srcs_a.iter().map(|s| vec![0; s.len()]).collect();
    let mut dst_a: Vec<Vec<u8>> = srcs_b.iter().map(|s| vec![0; s.len()]).collect();
    for i in 0..n as usize {
        // SAFETY: all buffers live until the end of the test, after completion.
        unsafe {
            b.expect_bulk(0, i as u64, vec![(dst_b[i].as_mut_ptr(), dst_b[i].len())]).unwrap();
            a.expect_bulk(1, i as u64, vec![(dst_a[i].as_mut_ptr(), dst_a[i].len())]).unwrap();
            a.send_bulk(1, i as u64, vec![(srcs_a[i].as_ptr(), srcs_a[i].len())]).unwrap();
            b.send_bulk(0, i as u64, vec![(srcs_b[i].as_ptr(), srcs_b[i].len())]).unwrap();
        }
        a.send_am(1, H_DATA, &(i as u64).to_le_bytes(), &[]).unwrap();
    }
    let mut logs = [Log::default(), Log::default()];
    let ok = pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(60), |l| {
        l.iter().all(|x| x.sent.len() == n as usize && x.done.len() == n as usize) && l[1].ams.len() == n as usize
    });
    assert!(ok, "{logs:?}");
    assert_eq!(dst_b, srcs_a);
    assert_eq!(dst_a, srcs_b);
}

#[test]
fn duplicate_token_is_refused_and_cancel_works() {
    let (mut a, mut b) = pair(1);
    let mut d = vec![0u8; 10];
    // SAFETY: `d` lives until the end of the test; the registration is
    // cancelled before that and nothing is sent to it.
    unsafe {
        b.expect_bulk(0, 5, vec![(d.as_mut_ptr(), 10)]).unwrap();
        assert!(b.expect_bulk(0, 5, vec![(d.as_mut_ptr(), 10)]).is_err());
    }
    assert!(b.cancel_expect(0, 5));
    // A transfer into a cancelled registration is read and dropped.
    let src = pattern(1, 10);
    // SAFETY: `src` outlives the transfer (we wait for BulkSent).
    unsafe { a.send_bulk(1, 5, vec![(src.as_ptr(), 10)]).unwrap() };
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(10), |l| l[0].sent.len() == 1));
    assert!(logs[1].done.is_empty());
    assert_eq!(d, vec![0; 10]);
    assert!(!b.cancel_expect(0, 5), "finished registrations are gone");
}

#[test]
fn crossover_is_measured_and_other_traffic_is_kept() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (mut a, mut b) = pair(2);
    let stop = AtomicBool::new(false);
    let c = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..5u64 {
                b.send_am(0, H_DATA, &i.to_le_bytes(), &[]).unwrap();
            }
            while !stop.load(Ordering::Relaxed) {
                b.poll(&mut |_| {});
            }
        });
        let c = a.measure_crossover(1, &[1024, 65536, 262144], 3).unwrap();
        stop.store(true, Ordering::Relaxed);
        c
    });
    assert_eq!(c.points.len(), 3);
    assert!(c.points.iter().all(|p| p.eager_us > 0.0 && p.rndv_us > 0.0), "{c:?}");
    // The messages that came in meanwhile are delivered, in order.
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l[0].ams.len() == 5));
    for (i, m) in logs[0].ams.iter().enumerate() {
        assert_eq!(m.2, (i as u64).to_le_bytes());
    }
}

#[test]
fn hundreds_of_pieces_on_both_sides() {
    // More pieces than one readv/sendmsg takes (64 iovecs), of odd sizes.
    let (mut a, mut b) = pair(2);
    let src = pattern(11, 300 * 997);
    let src_split: Vec<usize> = (0..300).map(|_| 997).collect();
    let mut dst_split: Vec<usize> = (0..400).map(|i| 500 + i % 300).collect();
    let have: usize = dst_split.iter().sum();
    dst_split.push(src.len().saturating_sub(have) + 1);
    let got = transfer(&mut a, &mut b, 3, &src, &src_split, &dst_split);
    assert!(got[..src.len()] == src[..]);
}

/// A receiver that sleeps on the node's descriptor between polls, as the
/// runtime's helper does, is woken for whole fragment bodies rather than
/// for each piece of one that arrives (`SO_RCVLOWAT`), and is still woken at
/// once for what follows them: the rest of the transfer, and a message.
#[test]
fn a_sleeping_receiver_wakes_per_body_and_for_the_message_after_it() {
    const SIZE: usize = 8 << 20;
    const TOKEN: u64 = 9;
    let (a, mut b) = pair(1);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let finished = done.clone();
    let sender = std::thread::spawn(move || {
        let mut a = a;
        let src = pattern(7, SIZE);
        // SAFETY: `src` lives in this thread until the transfer is sent.
        unsafe { a.send_bulk(1, TOKEN, vec![(src.as_ptr(), SIZE)]).unwrap() };
        let mut log = Log::default();
        let mut told = false;
        // Slowly, so that bodies arrive in pieces: a poll every 200 us.
        while !finished.load(std::sync::atomic::Ordering::Acquire) {
            a.poll(&mut |e| log.record(e));
            if !told && log.sent.contains(&(1, TOKEN)) {
                a.send_am(1, H_CTL, b"after", &[]).unwrap();
                told = true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(told, "the transfer was never acknowledged: {log:?}");
    });
    let mut dst = vec![0u8; SIZE];
    // SAFETY: `dst` outlives the transfer: we wait for BulkDone below.
    unsafe { b.expect_bulk(0, TOKEN, vec![(dst.as_mut_ptr(), SIZE)]).unwrap() };
    let mut log = Log::default();
    let (mut wakes, mut wakes_in_body) = (0, 0);
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while log.ams.is_empty() && std::time::Instant::now() < end {
        let mut p = libc::pollfd { fd: b.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut p, 1, 5000) };
        assert!(rc >= 0, "poll: {}", std::io::Error::last_os_error());
        if rc == 0 {
            panic!("asleep 5 s with the transfer at {} of {SIZE} bytes and no message: {log:?}", b.rail_stats()[0].counters.bytes_in);
        }
        wakes += 1;
        if log.done.is_empty() {
            wakes_in_body += 1;
        }
        b.poll(&mut |e| log.record(e));
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    sender.join().unwrap();
    assert_eq!(log.done, vec![(0, TOKEN)], "{log:?}");
    assert_eq!(log.ams.len(), 1, "{log:?}");
    assert!(dst == pattern(7, SIZE), "the bytes arrived whole");
    let fragments = SIZE / (512 << 10);
    eprintln!("{wakes} wake-ups, {wakes_in_body} before the transfer was whole ({fragments} fragments)");
    assert!(wakes_in_body <= 3 * fragments, "{wakes_in_body} wake-ups for {fragments} fragment bodies");
}

/// Over a single rail nothing could be sent again (a connection that dies
/// loses the peer), so a receiver acknowledges neither messages nor
/// fragments: it writes nothing at all while data flows one way, and the
/// sender's transfer finishes, and the sender is quiet, once the bytes are
/// written. Over two rails the receiver acknowledges, since a rail that
/// dies must not lose what it carried (`failover.rs`).
#[test]
fn a_receiver_over_one_rail_writes_nothing_back() {
    const SIZE: usize = 4 << 20;
    for nrails in [1, 2] {
        let (mut a, mut b) = pair(nrails);
        let before = bytes_out(&b);
        let src = pattern(3, SIZE);
        let mut dst = vec![0u8; SIZE];
        // SAFETY: `dst` and `src` outlive the transfer: we wait for BulkDone and BulkSent below.
        unsafe { b.expect_bulk(0, 5, vec![(dst.as_mut_ptr(), SIZE)]).unwrap() };
        for i in 0..100u32 {
            a.send_am(1, H_DATA, &i.to_le_bytes(), &[b"payload"]).unwrap();
        }
        // SAFETY: as above.
        unsafe { a.send_bulk(1, 5, vec![(src.as_ptr(), SIZE)]).unwrap() };
        let mut logs = [Log::default(), Log::default()];
        let ok = pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(30), |l| l[0].sent == [(1, 5)] && l[1].done == [(0, 5)] && l[1].ams.len() == 100);
        assert!(ok, "over {nrails} rail(s): {logs:?}");
        assert!(dst == src, "the bytes arrived whole");
        let delivered: Vec<u32> = logs[1].ams.iter().map(|m| u32::from_le_bytes(m.2[..4].try_into().unwrap())).collect();
        assert_eq!(delivered, (0..100).collect::<Vec<_>>(), "in order");
        // Long enough for a delayed acknowledgement (2 ms) to fall due.
        pump(&mut [&mut a, &mut b], &mut logs, Duration::from_millis(20), |_| false);
        let written = bytes_out(&b) - before;
        if nrails == 1 {
            assert_eq!(written, 0, "the receiver wrote {written} bytes over one rail");
            assert!(a.is_quiet(), "the sender keeps nothing once its bytes are written");
        } else {
            assert!(written > 0, "over two rails the receiver acknowledges");
        }
    }
}
