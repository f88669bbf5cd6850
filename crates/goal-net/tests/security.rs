//! Strangers, garbage and liars: a wrong secret is refused at the handshake,
//! garbage to a listening port is closed, and an authenticated peer that
//! sends a lying header loses its connection. In every case the node keeps
//! serving its good peers, and nothing panics.

mod common;

use common::*;
use goal_net::rails::{Blob, RemoteRail};
use goal_net::wire::{self, Challenge, FragHead, Frame, Header, Hello, Limits, Parsed};
use goal_net::NetNode;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Reads one whole frame (not FRAG) from a blocking stream.
fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut b = vec![0u8; wire::HEADER_LEN];
    s.read_exact(&mut b)?;
    let h_len = b[1] as usize;
    let body = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; h_len + body];
    s.read_exact(&mut rest)?;
    b.extend_from_slice(&rest);
    Ok(b)
}

fn lim() -> Limits {
    Limits { max_am_payload: 1 << 20, handlers: wire::HandlerSet::all() }
}

/// Performs the connector's side of the handshake by hand. Returns the
/// acceptor's verdict: Ok(()) on WELCOME, Err(reason) on REJECT or close.
fn handshake(s: &mut TcpStream, secret: &[u8; 32], rank: u32, size: u32, from_rail: u32) -> Result<(), String> {
    let b = read_frame(s).map_err(|e| e.to_string())?;
    let Ok(Parsed::Frame(Frame::Challenge(ch), _)) = wire::parse(&b, &lim()) else { return Err("no challenge".into()) };
    let mut h = Hello { rank, size, from_rail, to_rail: ch.rail, nonce: [3; 32], mac: [0; 32] };
    h.mac = wire::hello_mac(secret, &ch, &h);
    let mut out = Vec::new();
    wire::encode(&Frame::Hello(h), &mut out);
    s.write_all(&out).map_err(|e| e.to_string())?;
    let b = read_frame(s).map_err(|e| e.to_string())?;
    match wire::parse(&b, &lim()) {
        Ok(Parsed::Frame(Frame::Welcome { mac }, _)) => {
            assert_eq!(mac, wire::welcome_mac(secret, &ch, &h), "the acceptor proves it knows the secret");
            Ok(())
        }
        Ok(Parsed::Frame(Frame::Reject { reason }, _)) => Err(String::from_utf8_lossy(reason).into_owned()),
        other => Err(format!("{other:?}")),
    }
}

/// A group of three where rank 0 is this test, by hand, over one rail:
/// returns ranks 1 and 2 (connected to each other) and rank 0's stream to
/// rank 1, authenticated.
fn group_with_a_hand_made_rank0(before: impl FnOnce(SocketAddr)) -> (NetNode, NetNode, TcpStream) {
    let (n1, n2, mut s) = hand_made_rank0(1, before);
    (n1, n2, s.pop().unwrap())
}

/// The same over `nrails` rails: one authenticated stream per rail.
fn hand_made_rank0(nrails: usize, before: impl FnOnce(SocketAddr)) -> (NetNode, NetNode, Vec<TcpStream>) {
    let (n1, b1) = NetNode::bind(cfg(1, 3, nrails)).unwrap();
    let (n2, b2) = NetNode::bind(cfg(2, 3, nrails)).unwrap();
    let addrs = n1.listen_addrs().to_vec();
    let rails = (0..nrails)
        .map(|k| RemoteRail { name: format!("hand{k}"), addr: format!("127.0.0.{}:9", k + 1).parse().unwrap(), prefix_len: 8 })
        .collect();
    let b0 = Blob { rank: 0, rails }.encode();
    let blobs = vec![b0, b1, b2];
    let (bl1, bl2) = (blobs.clone(), blobs);
    let t1 = std::thread::spawn(move || {
        let mut n1 = n1;
        n1.connect(&bl1, &[true, true, true]).map(|_| n1)
    });
    let t2 = std::thread::spawn(move || {
        let mut n2 = n2;
        n2.connect(&bl2, &[false, true, true]).map(|_| n2)
    });
    before(addrs[0]);
    let streams = (0..nrails)
        .map(|k| {
            let mut s = TcpStream::connect(addrs[k]).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            handshake(&mut s, &SECRET, 0, 3, k as u32).expect("the hand-made rank 0 is accepted");
            s
        })
        .collect();
    (t1.join().unwrap().unwrap(), t2.join().unwrap().unwrap(), streams)
}

/// Sends `lie` as the hand-made rank 0 and checks that rank 1 drops it
/// (PeerLost naming a protocol error) and still talks to rank 2.
fn liar_is_cut_off(lie: &[u8], expect_in_why: &str, prepare: impl FnOnce(&mut NetNode)) {
    let (mut n1, mut n2, mut s) = group_with_a_hand_made_rank0(|_| {});
    prepare(&mut n1);
    s.write_all(lie).unwrap();
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_secs(5), |l| !l[0].peer_lost.is_empty()), "{logs:?}");
    let why = &logs[0].rail_lost[0].2;
    assert!(why.contains(expect_in_why), "{why}");
    assert!(logs[0].peer_lost[0].1.contains("no rail left"));
    // The liar's socket is closed.
    let mut buf = [0u8; 64];
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => assert!(Instant::now() < end, "still open"),
        }
    }
    // The good pair still works.
    n1.send_am(2, H_DATA, b"still", &[b"here"]).unwrap();
    assert!(pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_secs(5), |l| l[1].ams.len() == 1));
    assert_eq!(logs[1].ams[0].3, b"here");
}

fn header(kind: u8, head_len: u8, body_len: u32, arg: u64) -> Vec<u8> {
    Header { kind, head_len, body_len, arg, flags: 0 }.encode().to_vec()
}

#[test]
fn unknown_handler() {
    let mut lie = Vec::new();
    wire::am(&mut lie, 99, 0, b"", &[b"x"], false);
    liar_is_cut_off(&lie, "unknown handler 99", |_| {});
}

#[test]
fn unknown_internal_kind() {
    liar_is_cut_off(&header(12, 0, 0, 0), "unknown frame kind 12", |_| {});
}

#[test]
fn length_past_the_limit() {
    liar_is_cut_off(&header(H_DATA, 0, u32::MAX, 0), "body", |_| {});
}

#[test]
fn head_too_long() {
    liar_is_cut_off(&header(H_DATA, 200, 0, 0), "head", |_| {});
}

#[test]
fn reserved_bits() {
    // Bit 0 is FLAG_UNACKED, allowed on a user message; bit 1 is not.
    let mut h = header(H_DATA, 0, 0, 0);
    h[2] = 2;
    liar_is_cut_off(&h, "reserved", |_| {});
}

#[test]
fn the_unacked_flag_on_a_control_frame() {
    let mut h = header(wire::kind::PING, 0, 0, 0);
    h[2] = wire::FLAG_UNACKED as u8;
    liar_is_cut_off(&h, "reserved", |_| {});
}

#[test]
fn token_nobody_expects() {
    let f = wire::frag_header(&FragHead { xid: 0, token: 42, offset: 0, total: 10, len: 10, unacked: false });
    let mut lie = f.to_vec();
    lie.extend_from_slice(&[1; 10]);
    liar_is_cut_off(&lie, "no transfer expects", |_| {});
}

#[test]
fn fragment_outside_its_destination() {
    let f = wire::frag_header(&FragHead { xid: 0, token: 5, offset: 1 << 30, total: 2 << 30, len: 16, unacked: false });
    liar_is_cut_off(&f, "destination", |n1| {
        let dst = Box::leak(vec![0u8; 100].into_boxed_slice());
        // SAFETY: leaked, so valid forever.
        unsafe { n1.expect_bulk(0, 5, vec![(dst.as_mut_ptr(), dst.len())]).unwrap() };
    });
}

#[test]
fn fragment_range_past_its_total() {
    let f = wire::frag_header(&FragHead { xid: 0, token: 5, offset: 90, total: 100, len: 20, unacked: false });
    liar_is_cut_off(&f, "outside its", |_| {});
}

#[test]
fn acknowledgement_for_nothing() {
    let mut lie = Vec::new();
    wire::ack(&mut lie, 0, &[(7, 0)]);
    liar_is_cut_off(&lie, "never started", |_| {});
}

#[test]
fn acknowledging_messages_never_sent() {
    let mut lie = Vec::new();
    wire::ack(&mut lie, 1000, &[]);
    liar_is_cut_off(&lie, "acknowledged", |_| {});
}

#[test]
fn sequence_number_far_ahead() {
    let mut lie = Vec::new();
    wire::am(&mut lie, H_DATA, 1 << 40, b"", &[], false);
    liar_is_cut_off(&lie, "far ahead", |_| {});
}

#[test]
fn handshake_frame_after_the_handshake() {
    let mut lie = Vec::new();
    wire::encode(&Frame::Challenge(Challenge { rank: 0, size: 3, rail: 0, nonce: [0; 32] }), &mut lie);
    liar_is_cut_off(&lie, "out of place", |_| {});
}

#[test]
fn rank_outside_the_group_is_refused_at_the_handshake() {
    group_with_a_hand_made_rank0(|addr| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let e = handshake(&mut s, &SECRET, 9, 3, 0).unwrap_err();
        assert!(e.contains("not a peer"), "{e}");
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let e = handshake(&mut s, &SECRET, 0, 4, 0).unwrap_err();
        assert!(e.contains("group size"), "{e}");
    });
}

/// Runs `a` and `b` in a helper thread (polling) while `f` runs here.
fn while_serving(a: &mut NetNode, b: &mut NetNode, f: impl FnOnce()) -> [Log; 2] {
    let stop = AtomicBool::new(false);
    let mut logs = [Log::default(), Log::default()];
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            pump(&mut [a, b], &mut logs, Duration::from_secs(60), |_| stop.load(Ordering::Relaxed));
        });
        f();
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
    });
    logs
}

#[test]
fn wrong_secret_is_refused_and_good_peers_keep_working() {
    let (mut a, mut b) = pair(2);
    let addr = b.listen_addrs()[0];
    let logs = while_serving(&mut a, &mut b, || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let e = handshake(&mut s, &[8; 32], 0, 2, 0).unwrap_err();
        assert!(e.contains("wrong job secret"), "{e}");
    });
    assert_eq!(b.rejected(), 1);
    assert!(logs.iter().all(|l| l.rail_lost.is_empty() && l.peer_lost.is_empty()));
    // A whole node with the wrong secret cannot join either; it is told why, at once.
    let mut bad = cfg(0, 2, 1);
    bad.secret = [9; 32];
    let (mut intruder, blob0) = NetNode::bind(bad).unwrap();
    let (_, blob1) = NetNode::bind(cfg(1, 2, 1)).unwrap(); // only for its shape
    let mut blob1 = Blob::decode(&blob1).unwrap();
    blob1.rails[0].addr = b.listen_addrs()[0];
    let t = Instant::now();
    let mut res = None;
    while_serving(&mut a, &mut b, || res = Some(intruder.connect(&[blob0, blob1.encode()], &[false, true])));
    let e = res.unwrap().unwrap_err();
    assert!(e.to_string().contains("wrong job secret") && e.to_string().contains("refused"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(b.rejected(), 2);
    // a and b still talk.
    a.send_am(1, H_DATA, b"", &[b"ok"]).unwrap();
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l[1].ams.len() == 1));
}

#[test]
fn garbage_to_a_listening_port_is_closed() {
    let (mut a, mut b) = pair(1);
    let addr = b.listen_addrs()[0];
    let logs = while_serving(&mut a, &mut b, || {
        for garbage in [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), pattern(5, 100_000), vec![0u8; 16], vec![0xff; 3]] {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = s.write_all(&garbage);
            let _ = s.shutdown(std::net::Shutdown::Write);
            let mut sink = Vec::new();
            // The node answers with its challenge and then closes (or resets).
            let t = Instant::now();
            let r = s.read_to_end(&mut sink);
            assert!(t.elapsed() < Duration::from_secs(4), "closed at once: {r:?}");
        }
    });
    assert!(b.rejected() >= 3, "{}", b.rejected());
    assert!(logs.iter().all(|l| l.rail_lost.is_empty() && l.peer_lost.is_empty()));
    a.send_am(1, H_DATA, b"", &[b"ok"]).unwrap();
    let mut logs = [Log::default(), Log::default()];
    assert!(pump(&mut [&mut a, &mut b], &mut logs, Duration::from_secs(5), |l| l[1].ams.len() == 1));
}

#[test]
fn a_silent_connection_is_closed_after_the_handshake_timeout() {
    let mut g = group(vec![
        { let mut c = cfg(0, 2, 1); c.connect_timeout = Duration::from_secs(1); c },
        { let mut c = cfg(1, 2, 1); c.connect_timeout = Duration::from_secs(1); c },
    ]);
    let mut b = g.pop().unwrap();
    let mut a = g.pop().unwrap();
    let addr = b.listen_addrs()[0];
    while_serving(&mut a, &mut b, || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = Instant::now();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        assert!(t.elapsed() < Duration::from_secs(4), "closed within the handshake timeout");
    });
}

/// A fragment copy still being read on one rail when another copy completes
/// the transfer, and the token is registered again for a new transfer: the
/// rest of the stale copy must be dropped, never written into the new
/// destination.
#[test]
fn a_late_copy_never_lands_in_a_reused_token() {
    let (mut n1, mut n2, mut s) = hand_made_rank0(2, |_| {});
    let mut logs = [Log::default(), Log::default()];
    let mut old = vec![0u8; 100];
    let mut new = vec![0u8; 100];
    // SAFETY: both buffers live until the end of the test.
    unsafe { n1.expect_bulk(0, 5, vec![(old.as_mut_ptr(), 100)]).unwrap() };
    let frag = |xid, fill: u8| {
        let mut f = wire::frag_header(&FragHead { xid, token: 5, offset: 0, total: 100, len: 100, unacked: false }).to_vec();
        f.extend_from_slice(&[fill; 100]);
        f
    };
    let stale = frag(0, 0xaa);
    // Half of a copy on rail 0...
    s[0].write_all(&stale[..48 + 50]).unwrap();
    pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_millis(200), |_| false);
    // ... the whole copy on rail 1 finishes the transfer.
    s[1].write_all(&frag(0, 0xaa)).unwrap();
    assert!(pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_secs(5), |l| l[0].done.len() == 1));
    // The token is reused for the next transfer; the stale rest arrives.
    // SAFETY: as above.
    unsafe { n1.expect_bulk(0, 5, vec![(new.as_mut_ptr(), 100)]).unwrap() };
    s[0].write_all(&[0xee; 50]).unwrap();
    pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_millis(200), |_| false);
    assert_eq!(new, vec![0; 100], "the stale rest went nowhere");
    s[0].write_all(&frag(1, 0x11)).unwrap();
    assert!(pump(&mut [&mut n1, &mut n2], &mut logs, Duration::from_secs(5), |l| l[0].done.len() == 2), "{logs:?}");
    assert_eq!(old, vec![0xaa; 100]);
    assert_eq!(new, vec![0x11; 100], "only transfer 1's bytes");
    assert!(logs[0].rail_lost.is_empty(), "{logs:?}");
}
