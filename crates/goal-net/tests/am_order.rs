//! Active messages between a pair arrive in the order sent, exactly once,
//! with their heads and payloads intact, when spread over 1-3 rails.

mod common;

use common::*;
use goal_net::AmRails;
use std::time::Duration;

fn stream_both_ways(nrails: usize, policy: AmRails, count: u64) {
    let mut g = group(vec![
        { let mut c = cfg(0, 2, nrails); c.am_rails = policy; c },
        { let mut c = cfg(1, 2, nrails); c.am_rails = policy; c },
    ]);
    let mut b = g.pop().unwrap();
    let mut a = g.pop().unwrap();
    let mut logs = [Log::default(), Log::default()];
    let mut sent = 0u64;
    // Send in bursts, polling between them, so that queues build up and
    // messages race each other across rails.
    while sent < count {
        for _ in 0..200.min(count - sent) {
            let len = (sent * 37 % 3000) as usize;
            let head = sent.to_le_bytes();
            a.send_am(1, H_DATA, &head, &[&pattern(sent, len)]).unwrap();
            b.send_am(0, H_CTL, &head, &[&pattern(sent + 1_000_000, len / 2), b"tail"]).unwrap();
            sent += 1;
        }
        a.poll(&mut |e| logs[0].record(e));
        b.poll(&mut |e| logs[1].record(e));
    }
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(30), |l| l[0].ams.len() as u64 == count && l[1].ams.len() as u64 == count));
    for (i, (src, h, head, payload)) in logs[1].ams.iter().enumerate() {
        let i = i as u64;
        assert_eq!((*src, *h), (0, H_DATA));
        assert_eq!(head, &i.to_le_bytes(), "message {i} out of order");
        assert_eq!(payload, &pattern(i, (i * 37 % 3000) as usize));
    }
    for (i, (src, h, head, payload)) in logs[0].ams.iter().enumerate() {
        let i = i as u64;
        assert_eq!((*src, *h), (1, H_CTL));
        assert_eq!(head, &i.to_le_bytes(), "message {i} out of order");
        let mut want = pattern(i + 1_000_000, (i * 37 % 3000) as usize / 2);
        want.extend_from_slice(b"tail");
        assert_eq!(payload, &want);
    }
    if nrails == 1 {
        // Written once each, from the connection's own buffers (a sole rail
        // keeps no copy to send again).
        assert_eq!(a.rail_stats()[0].counters.ams_out, count);
        assert_eq!(b.rail_stats()[0].counters.ams_out, count);
    }
    if nrails > 1 && policy == AmRails::RoundRobin {
        // Every rail carried some of them.
        let st = a.rail_stats();
        assert_eq!(st.len(), nrails);
        assert!(st.iter().all(|r| r.counters.ams_out > 0), "{st:?}");
    }
}

#[test]
fn order_one_rail() {
    stream_both_ways(1, AmRails::RoundRobin, 5000);
}

#[test]
fn order_across_two_rails_round_robin() {
    stream_both_ways(2, AmRails::RoundRobin, 20000);
}

#[test]
fn order_across_three_rails_round_robin() {
    stream_both_ways(3, AmRails::RoundRobin, 20000);
}

#[test]
fn order_across_three_rails_least_queued() {
    stream_both_ways(3, AmRails::LeastQueued, 20000);
}

#[test]
fn ping_pong_latency_is_sane() {
    let (mut a, mut b) = pair(2);
    let mut logs = [Log::default(), Log::default()];
    for i in 0..1000u64 {
        a.send_am(1, H_DATA, &i.to_le_bytes(), &[]).unwrap();
        assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l[1].ams.len() as u64 == i + 1));
        b.send_am(0, H_DATA, &i.to_le_bytes(), &[]).unwrap();
        assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l[0].ams.len() as u64 == i + 1));
    }
}

#[test]
fn rejects_bad_sends() {
    let (mut a, _b) = pair(1);
    assert!(a.send_am(1, 99, b"", &[]).is_err(), "undeclared handler");
    assert!(a.send_am(1, H_DATA, &[0; 65], &[]).is_err(), "head too long");
    assert!(a.send_am(1, H_DATA, b"", &[&vec![0; 2 << 20]]).is_err(), "payload too long");
    assert!(a.send_am(5, H_DATA, b"", &[]).is_err(), "rank outside the group");
    assert!(a.send_am(0, H_DATA, b"", &[]).is_err(), "ourselves");
}
