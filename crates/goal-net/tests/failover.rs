//! Rails that fail mid-transfer: the transfer finishes on the others,
//! messages are neither lost nor duplicated nor reordered; with no rail
//! left the peer is reported lost within seconds.

mod common;

use common::*;
use goal_net::NetNode;
use std::time::{Duration, Instant};

fn survive(nrails: usize, after: u64, sender_losses: usize, cut: impl Fn(&mut NetNode, &mut NetNode, &mut [Log; 2])) -> [Log; 2] {
    let (a, b) = pair(nrails);
    survive_cut(a, b, after, sender_losses, cut)
}

#[test]
fn one_of_three_rails_shut_down_by_the_sender() {
    let logs = survive(3, 16 << 20, 1, |a, _, _| assert!(a.test_shutdown_rail(1, 1)));
    assert_eq!(logs[0].rail_lost.len(), 1, "{:?}", logs[0].rail_lost);
    assert_eq!(logs[0].rail_lost[0].1, "lo2");
    assert_eq!(logs[1].rail_lost.len(), 1, "the receiver sees it too");
}

#[test]
fn one_of_three_rails_shut_down_by_the_receiver() {
    let logs = survive(3, 8 << 20, 1, |_, b, _| assert!(b.test_shutdown_rail(0, 2)));
    assert_eq!(logs[0].rail_lost.len(), 1);
    assert_eq!(logs[1].rail_lost.len(), 1);
}

#[test]
fn two_of_three_rails_at_different_times() {
    let logs = survive(3, 4 << 20, 2, |a, b, logs| {
        assert!(a.test_shutdown_rail(1, 0));
        // A second failure while the first one's fragments are being resent.
        for _ in 0..50 {
            a.poll(&mut |e| logs[0].record(e));
            b.poll(&mut |e| logs[1].record(e));
        }
        assert!(b.test_shutdown_rail(0, 2));
    });
    assert_eq!(logs[0].rail_lost.len(), 2);
}

/// While rails share a peer's traffic each connection's kernel queue is
/// kept short (`notsent_lowat`), so that fragments go to the rail that
/// drains first; a sole connection may hold two fragments, so that each
/// goes into the socket in one write. When one of two rails dies mid-
/// transfer the survivor is sole from then on: it gets the longer queue,
/// and every byte still arrives.
#[test]
fn a_sole_connection_queues_two_fragments() {
    let sole = 2 * cfg(0, 2, 1).frag_size;
    let (a, b) = pair(1);
    assert_eq!(a.test_notsent_lowat(1, 0), Some(sole));
    assert_eq!(b.test_notsent_lowat(0, 0), Some(sole));
    drop((a, b));
    let (a, b) = pair(2);
    let shared = a.config().notsent_lowat;
    assert!(shared < sole);
    for r in 0..2 {
        assert_eq!(a.test_notsent_lowat(1, r), Some(shared), "rail {r} of two");
        assert_eq!(b.test_notsent_lowat(0, r), Some(shared), "rail {r} of two");
    }
    let lowat = std::cell::Cell::new(None);
    survive_cut(a, b, 8 << 20, 1, |a, b, logs| {
        assert!(a.test_shutdown_rail(1, 1));
        // Until the sender has seen its rail go.
        let end = Instant::now() + Duration::from_secs(10);
        while logs[0].rail_lost.is_empty() {
            assert!(Instant::now() < end, "the sender did not see its rail fail");
            a.poll(&mut |e| logs[0].record(e));
            b.poll(&mut |e| logs[1].record(e));
        }
        lowat.set(a.test_notsent_lowat(1, 0));
    });
    assert_eq!(lowat.get(), Some(sole), "the surviving rail");
}

#[test]
fn all_rails_dead_loses_the_peer_within_seconds() {
    let (mut a, mut b) = pair(2);
    let size = 32 << 20;
    let src = pattern(4, size);
    let mut dst = vec![0u8; size];
    // SAFETY: both buffers outlive the node's use of them: PeerLost ends it.
    unsafe {
        b.expect_bulk(0, 1, vec![(dst.as_mut_ptr(), size)]).unwrap();
        a.send_bulk(1, 1, vec![(src.as_ptr(), size)]).unwrap();
    }
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(10), |_| true));
    let t = Instant::now();
    assert!(a.test_shutdown_rail(1, 0));
    assert!(a.test_shutdown_rail(1, 1));
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l.iter().all(|x| !x.peer_lost.is_empty())), "{logs:?}");
    for l in &logs {
        let (_, why, at) = &l.peer_lost[0];
        assert!(why.contains("no rail left"), "{why}");
        assert!(at.duration_since(t) < Duration::from_secs(5));
        assert_eq!(l.rail_lost.len(), 2, "{:?}", l.rail_lost);
    }
    assert!(logs[0].sent.is_empty() && logs[1].done.is_empty());
    let e = a.send_am(1, H_DATA, b"", &[]).unwrap_err();
    assert!(e.to_string().contains("lost"), "{e}");
}

#[test]
fn a_node_that_is_dropped_says_goodbye() {
    let (mut a, b) = pair(2);
    drop(b);
    let mut logs = [Log::default()];
    assert!(pump(&mut [&mut a], &mut logs, Duration::from_secs(5), |l| !l[0].peer_lost.is_empty()));
    let log = &logs[0];
    assert_eq!(log.peer_lost.len(), 1, "{log:?}");
    assert!(log.peer_lost[0].1.contains("closed its connections"), "{:?}", log.peer_lost);
    assert!(log.rail_lost.is_empty(), "a goodbye is not a failure: {:?}", log.rail_lost);
}
