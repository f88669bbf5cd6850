//! `GOAL_NET_CC`: goal's connections take the TCP congestion control they
//! are given, both ends, and carry data with it; a name the kernel refuses
//! fails at bind, saying which and why; without one the system's stays.

mod common;

use common::*;
use goal_net::{NetConfig, NetNode};
use std::time::Duration;

fn system_default() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").expect("the system's congestion control").trim().to_string()
}

/// A congestion control this process may choose other than the system's, if
/// there is one (reno otherwise: built into every kernel, always allowed).
fn another() -> String {
    let sys = system_default();
    let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control").unwrap_or_default();
    allowed.split_whitespace().find(|&c| c != sys).unwrap_or("reno").to_string()
}

fn with_cc(rank: u32, cc: Option<&str>) -> NetConfig {
    let mut c = cfg(rank, 2, 1);
    c.congestion = cc.map(str::to_string);
    c
}

/// A message of `len` bytes from a to b, checked byte for byte.
fn carries(a: &mut NetNode, b: &mut NetNode, len: usize) {
    let data = pattern(3, len);
    a.send_am(1, H_DATA, b"", &[&data]).expect("send");
    let mut logs = [Log::default(), Log::default()];
    let ok = pump(&mut [a, b], &mut logs, Duration::from_secs(20), |l| !l[1].ams.is_empty());
    assert!(ok, "the message did not arrive: {:?}", logs);
    assert_eq!(checksum(&logs[1].ams[0].3), checksum(&data));
}

#[test]
fn connections_take_the_congestion_control_they_are_given() {
    let cc = another();
    let mut g = group(vec![with_cc(0, Some(&cc)), with_cc(1, Some(&cc))]);
    let (mut b, mut a) = (g.pop().unwrap(), g.pop().unwrap());
    assert_eq!(a.test_congestion(1, 0), Some(cc.clone()), "the connecting side (system default {})", system_default());
    assert_eq!(b.test_congestion(0, 0), Some(cc), "the accepting side");
    carries(&mut a, &mut b, 512 << 10);
}

#[test]
fn without_one_the_system_default_stays() {
    let mut g = group(vec![with_cc(0, None), with_cc(1, None)]);
    let (b, a) = (g.pop().unwrap(), g.pop().unwrap());
    let sys = system_default();
    assert_eq!(a.test_congestion(1, 0), Some(sys.clone()));
    assert_eq!(b.test_congestion(0, 0), Some(sys));
}

#[test]
fn a_name_the_kernel_does_not_have_fails_at_bind() {
    let e = NetNode::bind(with_cc(0, Some("no_such_cc"))).err().expect("bind must refuse it");
    let m = e.to_string();
    assert!(m.contains("\"no_such_cc\"") && m.contains("GOAL_NET_CC") && m.contains("tcp_available_congestion_control"), "{m}");
}

#[test]
fn a_malformed_name_fails_at_bind() {
    for bad in ["", "reno cubic", "a/b", "much_too_long_a_name"] {
        let e = NetNode::bind(with_cc(0, Some(bad))).err().unwrap_or_else(|| panic!("bind accepted {bad:?}"));
        assert!(e.to_string().contains("GOAL_NET_CC"), "{bad:?}: {e}");
    }
}

#[test]
fn the_environment_sets_it() {
    let env = |k: &str| (k == "GOAL_NET_CC").then(|| " reno\n".to_string());
    let c = cfg(0, 2, 1).with_overrides(env).expect("overrides");
    assert_eq!(c.congestion.as_deref(), Some("reno"));
    assert_eq!(cfg(0, 2, 1).with_overrides(|_| None).expect("overrides").congestion, None);
}
