//! Tests across a process boundary: a peer process that is killed, the log
//! line a refused stranger leaves, and (as root, in a private network
//! namespace) a rail that goes silent without any socket error.
//!
//! The child processes are this test binary itself, re-run with
//! `GOAL_NET_TEST_CHILD` set, talking to the parent over stdin/stdout.

mod common;

use common::*;
use goal_net::NetNode;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "GOAL_NET_TEST_CHILD";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Entry point of the child processes (ignored in normal runs).
#[test]
#[ignore]
fn child() {
    match std::env::var(CHILD).as_deref() {
        Ok("peer") => peer_child(),
        Ok("netns") => netns_child(),
        _ => {}
    }
}

/// Rank 1 of 2 over 2 rails: prints its blob, reads rank 0's, connects,
/// then echoes every message back until killed.
fn peer_child() {
    let (mut node, blob) = NetNode::bind(cfg(1, 2, 2)).unwrap();
    println!("BLOB {}", hex(&blob));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let b0 = unhex(line.trim().strip_prefix("BLOB ").expect("BLOB line"));
    node.connect(&[b0, blob], &[true, false]).unwrap();
    println!("UP");
    loop {
        let mut got = Vec::new();
        node.poll_until(Duration::from_millis(100), &mut |e| {
            if let goal_net::Event::Am { payload, .. } = e {
                got.push(payload.to_vec());
            }
        }, |_| false);
        for p in got {
            node.send_am(0, H_DATA, b"", &[&p]).unwrap();
        }
    }
}

fn spawn_child(mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(c.stdout.take().unwrap());
    (c, out)
}

fn read_tagged(out: &mut BufReader<ChildStdout>, tag: &str) -> String {
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended before {tag}");
        // The harness may print "test child ... " on the same line.
        if let Some(i) = line.find(tag) {
            return line[i + tag.len()..].trim().to_owned();
        }
    }
}

#[test]
fn a_killed_peer_process_is_lost_within_seconds() {
    let (mut child, mut out) = spawn_child("peer");
    let b1 = unhex(&read_tagged(&mut out, "BLOB"));
    let (mut node, b0) = NetNode::bind(cfg(0, 2, 2)).unwrap();
    writeln!(child.stdin.as_mut().unwrap(), "BLOB {}", hex(&b0)).unwrap();
    node.connect(&[b0, b1], &[false, true]).unwrap();
    read_tagged(&mut out, "UP");
    // Alive: it echoes.
    node.send_am(1, H_DATA, b"", &[b"ping"]).unwrap();
    let mut logs = [Log::default()];
    assert!(pump(&mut [&mut node], &mut logs, Duration::from_secs(10), |l| l[0].ams.len() == 1));
    assert_eq!(logs[0].ams[0].3, b"ping");
    child.kill().unwrap();
    let t = Instant::now();
    child.wait().unwrap();
    assert!(pump(&mut [&mut node], &mut logs, Duration::from_secs(10), |l| !l[0].peer_lost.is_empty()), "{:?}", logs[0]);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let why = &logs[0].peer_lost[0].1;
    assert!(why.contains("no rail left to rank 1"), "{why}");
    assert!(node.send_am(1, H_DATA, b"", &[]).is_err());
}

#[test]
fn a_refused_stranger_is_logged_with_its_address() {
    let (mut child, mut out) = spawn_child("peer");
    let b1 = goal_net::rails::Blob::decode(&unhex(&read_tagged(&mut out, "BLOB"))).unwrap();
    // The child waits in `connect` for rank 0 (which never comes); a
    // stranger gets there first.
    let (_rank0, b0) = NetNode::bind(cfg(0, 2, 2)).unwrap();
    writeln!(child.stdin.as_mut().unwrap(), "BLOB {}", hex(&b0)).unwrap();
    let mut s = TcpStream::connect(b1.rails[0].addr).unwrap();
    let me = s.local_addr().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut ch = vec![0u8; 16 + goal_net::wire::CHALLENGE_HEAD];
    s.read_exact(&mut ch).unwrap();
    let lim = goal_net::wire::Limits { max_am_payload: 0, handlers: Default::default() };
    let Ok(goal_net::wire::Parsed::Frame(goal_net::wire::Frame::Challenge(c), _)) = goal_net::wire::parse(&ch, &lim) else { panic!() };
    let mut h = goal_net::wire::Hello { rank: 0, size: 2, from_rail: 0, to_rail: 0, nonce: [1; 32], mac: [0; 32] };
    h.mac = goal_net::wire::hello_mac(&[0xee; 32], &c, &h);
    let mut b = Vec::new();
    goal_net::wire::encode(&goal_net::wire::Frame::Hello(h), &mut b);
    s.write_all(&b).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    child.kill().unwrap();
    child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let want = format!("refused a connection from {me}");
    assert!(err.contains(&want) && err.contains("wrong job secret"), "stderr: {err}");
}

fn can_use_netns() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = |c: &str, a: &[&str]| Command::new(c).args(a).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    // The black hole needs htb and the u32 classifier, which not every kernel has.
    root && ok("unshare", &["-n", "sh", "-c", &format!("ip link set lo up && {BLACKHOLE}")])
}

/// A rail whose link silently stops delivering (no error from any socket):
/// detected from the kernel's missing acknowledgements within seconds, its
/// fragments and messages finish on the other rails.
#[test]
fn a_silent_rail_is_detected_without_socket_errors() {
    if !can_use_netns() {
        eprintln!("skipped: needs root, unshare, ip and tc");
        return;
    }
    let out = Command::new("unshare")
        .args(["-n", std::env::current_exe().unwrap().to_str().unwrap(), "--ignored", "--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "netns")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("NETNS OK"), "stdout:\n{stdout}\nstderr:\n{stderr}");
    println!("{}", stdout.lines().filter(|l| l.contains("NETNS")).collect::<Vec<_>>().join("\n"));
}

/// Makes 127.0.0.2 a black hole: its packets go to an htb class of 8 bit/s
/// (held, never refused), everything else to a fast one.
const BLACKHOLE: &str = "tc qdisc add dev lo root handle 1: htb default 1 r2q 1 2>/dev/null && \
    tc class add dev lo parent 1: classid 1:1 htb rate 40gbit quantum 60000 2>/dev/null && \
    tc class add dev lo parent 1: classid 1:2 htb rate 8bit ceil 8bit burst 1 cburst 1 quantum 1000 2>/dev/null && \
    tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dst 127.0.0.2/32 flowid 1:2";

fn sh(cmd: &str) {
    let st = Command::new("sh").args(["-c", cmd]).status().unwrap();
    assert!(st.success(), "{cmd}");
}

/// Inside a private network namespace: three loopback rails, a 64 MiB
/// transfer and a message stream; then 127.0.0.2 becomes a black hole
/// (an htb class of 8 bit/s: packets are held, nothing is refused).
fn netns_child() {
    sh("ip link set lo up");
    let mk = |r| {
        let mut c = cfg(r, 2, 3);
        c.kernel_timeouts = false; // no ETIMEDOUT from the kernel: our detection only
        c
    };
    let mut g = group(vec![mk(0), mk(1)]);
    let b = g.pop().unwrap();
    let a = g.pop().unwrap();
    let cut_at = std::cell::Cell::new(None);
    let logs = survive_cut(a, b, 4 << 20, 1, |_, _, _| {
        sh(BLACKHOLE);
        cut_at.set(Some(Instant::now()));
    });
    let took = cut_at.get().expect("cut").elapsed();
    let lost: Vec<_> = logs[0].rail_lost.iter().filter(|r| r.1 == "lo2").collect();
    assert_eq!(lost.len(), 1, "{logs:?}");
    assert!(lost[0].2.contains("acknowledged nothing"), "{:?}", lost[0]);
    println!("NETNS OK: finished {took:?} after the cut; sender saw: {}", lost[0].2);
}
