//! Feeds millions of random and mutated byte strings to the wire parser (and
//! the address-blob decoder) and checks that it never panics and never
//! claims more than it read:
//!
//! * a frame it accepts re-encodes to exactly the bytes it consumed;
//! * "incomplete" always asks for more than it was given, and every strict
//!   prefix of an accepted frame is incomplete;
//! * every slice it returns lies inside the input (implied by re-encoding).
//!
//! The same checks run without limit under cargo-fuzz (`fuzz/`).

use goal_net::rails::Blob;
use goal_net::wire::{self, Challenge, FragHead, Frame, HandlerSet, Hello, Limits, Parsed};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let frames = [
        Frame::Challenge(Challenge { rank: 1, size: 4, rail: 2, nonce: [7; 32] }),
        Frame::Hello(Hello { rank: 3, size: 4, from_rail: 0, to_rail: 2, nonce: [9; 32], mac: [1; 32] }),
        Frame::Welcome { mac: [5; 32] },
        Frame::Reject { reason: b"wrong job secret" },
        Frame::Frag(FragHead { xid: 9, token: 77, offset: 4096, total: 1 << 20, len: 8192, unacked: false }),
        Frame::Ping,
        Frame::Bye,
        Frame::Probe { op: 1, id: 5, size: 3, body: b"xyz" },
        Frame::Am { handler: 16, seq: 42, head: b"0123456789abcdef0123456789abcdef", payload: b"hello world", unacked: false },
        Frame::Am { handler: 200, seq: 0, head: b"", payload: b"", unacked: false },
        Frame::Am { handler: 17, seq: 7, head: b"h", payload: b"p", unacked: true },
        Frame::Frag(FragHead { xid: 1, token: 2, offset: 0, total: 64, len: 64, unacked: true }),
    ];
    let mut out: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut b = Vec::new();
            wire::encode(f, &mut b);
            b
        })
        .collect();
    let mut b = Vec::new();
    wire::ack(&mut b, 12, &[(1, 2), (3, 4), (5, 6)]);
    out.push(b);
    out
}

fn lim() -> Limits {
    Limits { max_am_payload: 4096, handlers: HandlerSet::of(&[16, 17, 200]) }
}

/// The properties, for one input.
fn check(buf: &[u8], lim: &Limits) {
    match wire::parse(buf, lim) {
        Err(e) => {
            let _ = e.to_string();
            assert_eq!(wire::parse(buf, lim), Err(e), "deterministic");
        }
        Ok(Parsed::Incomplete { need }) => {
            assert!(need > buf.len(), "incomplete must ask for more: need {need}, have {}", buf.len());
            assert!(need <= wire::HEADER_LEN + 255 + lim.max_am_payload.max(wire::MAX_REASON as u32).max(65536) as usize);
        }
        Ok(Parsed::Frame(f, used)) => {
            assert!(used >= wire::HEADER_LEN && used <= buf.len());
            let mut again = Vec::new();
            wire::encode(&f, &mut again);
            assert_eq!(&again[..], &buf[..used], "re-encodes to the bytes it consumed: {f:?}");
            for cut in [0, used / 2, used - 1] {
                assert!(matches!(wire::parse(&buf[..cut], lim), Ok(Parsed::Incomplete { .. })), "prefix {cut} of {used}");
            }
        }
    }
}

fn mutate(rng: &mut Rng, seed: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(seed);
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len() as u64) as usize;
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len() as u64) as usize;
                out[i] = rng.next() as u8;
            }
            2 => out.truncate(rng.below(out.len() as u64 + 1) as usize),
            3 => {
                for _ in 0..rng.below(64) {
                    out.push(rng.next() as u8);
                }
            }
            4 if out.len() >= 8 => {
                // A length field set to something interesting.
                let at = [1usize, 4, 5, 6, 7][rng.below(5) as usize];
                let v = [0u8, 1, 0x7f, 0x80, 0xff, 64, 65][rng.below(7) as usize];
                out[at] = v;
            }
            5 if out.len() >= wire::HEADER_LEN => {
                // Another kind with this shape.
                out[0] = rng.below(24) as u8;
            }
            _ => {
                let i = rng.below(out.len() as u64 + 1) as usize;
                out.insert(i, rng.next() as u8);
            }
        }
    }
}

#[test]
fn parser_survives_millions_of_random_and_mutated_inputs() {
    let iters: u64 = 3_000_000;
    let seeds = corpus();
    let lims = [lim(), Limits { max_am_payload: 0, handlers: HandlerSet::default() }, Limits { max_am_payload: u32::MAX, handlers: HandlerSet::all() }];
    let mut rng = Rng(0x5eed);
    let mut buf = Vec::with_capacity(8192);
    for i in 0..iters {
        let l = &lims[(i % 3) as usize];
        if i % 4 == 0 {
            // Pure noise, of any length up to a few headers.
            buf.clear();
            for _ in 0..rng.below(80) {
                buf.push(rng.next() as u8);
            }
        } else {
            let seed = &seeds[rng.below(seeds.len() as u64) as usize];
            mutate(&mut rng, seed, &mut buf);
        }
        check(&buf, l);
    }
}

#[test]
fn valid_frames_back_to_back_parse_in_sequence() {
    let seeds = corpus();
    let mut stream = Vec::new();
    for s in &seeds {
        stream.extend_from_slice(s);
    }
    let mut at = 0;
    let mut n = 0;
    while at < stream.len() {
        let Ok(Parsed::Frame(f, used)) = wire::parse(&stream[at..], &lim()) else { panic!("at {at}") };
        at += used;
        if let Frame::Frag(h) = f {
            // Its body is not in the corpus stream: skip nothing.
            let _ = h;
        }
        n += 1;
    }
    assert_eq!(n, seeds.len());
}

#[test]
fn blob_decoder_survives_mutation() {
    let good = Blob {
        rank: 3,
        rails: vec![
            goal_net::rails::RemoteRail { name: "eth0".into(), addr: "10.0.0.1:4000".parse().unwrap(), prefix_len: 24 },
            goal_net::rails::RemoteRail { name: "eth1".into(), addr: "[fd00::1]:4001".parse().unwrap(), prefix_len: 64 },
        ],
    }
    .encode();
    let mut rng = Rng(7);
    let mut buf = Vec::new();
    for _ in 0..200_000 {
        mutate(&mut rng, &good, &mut buf);
        if let Ok(b) = Blob::decode(&buf) {
            assert_eq!(Blob::decode(&b.encode()).unwrap(), b);
        }
    }
}
