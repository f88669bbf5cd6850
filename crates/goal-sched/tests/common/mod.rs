//! The harness the collective tests share: random memories, building a
//! collective on every rank, simulating it with a seeded random schedule,
//! and comparing every byte of every rank's memory with a model.

#![allow(dead_code)] // each test file uses its own part

use goal_sched::coll::{CollError, Group, Piece, Placement, TAG_SPAN};
use goal_sched::sim::{simulate_with, SendMode, SimOptions, SimStats};
use goal_sched::{compile, CompileOptions, Graph, OpKind, Vertex};

pub const TAG_BASE: i64 = 3 * TAG_SPAN;
pub const BASE: u64 = 72;
pub const GUARD: u64 = 24;
pub const KIB: u64 = 1024;

// ---------------------------------------------------------------------------
// Harness

/// A small seeded generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x1234_5678)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v: Vec<u8> = (0..n.div_ceil(8)).flat_map(|_| self.next().to_ne_bytes()).collect();
        v.truncate(n);
        v
    }
}

/// Random memories of `len` bytes, one per rank.
pub fn memories(p: u32, len: u64, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed ^ (p as u64) << 32 ^ len);
    (0..p).map(|_| rng.bytes(len as usize)).collect()
}

pub fn at(m: &[u8], addr: u64, len: u64) -> &[u8] {
    &m[addr as usize..(addr + len) as usize]
}

pub fn put(m: &mut [u8], addr: u64, data: &[u8]) {
    m[addr as usize..addr as usize + data.len()].copy_from_slice(data);
}

pub fn place() -> Placement {
    Placement { tag_base: TAG_BASE }
}

/// Every message tag of `g` lies in the collective's range.
pub fn check_tags(g: &Graph, ctx: &str) {
    for v in g.vertices() {
        let tag = match v {
            Vertex::Send { tag, .. } | Vertex::Recv { tag, .. } | Vertex::SendVec { tag, .. } | Vertex::RecvVec { tag, .. } => *tag,
            _ => continue,
        };
        assert!((TAG_BASE..TAG_BASE + TAG_SPAN).contains(&tag), "{ctx}: tag {tag} outside the collective's range");
    }
}

/// Every receive of the compiled collective takes only a message of
/// exactly its length (so the simulation below, which fails a shorter one,
/// checks that every message of every case is exactly as long).
pub fn check_exact(g: &Graph, p: u32, ctx: &str) {
    let s = compile(g, &CompileOptions { group_size: p }).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    for (i, o) in s.ops.iter().enumerate() {
        if matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) {
            assert!(o.exact(), "{ctx}: receive {i} (from {}, {} bytes) is not marked exact", o.peer, o.len);
        }
    }
}

/// Builds the collective on every rank and simulates it; panics with `ctx` on any error.
pub fn run(ctx: &str, p: u32, seed: u64, mem: &mut [Vec<u8>], build: &dyn Fn(&mut Graph, Group) -> Result<Piece, CollError>) -> SimStats {
    let graphs: Vec<Graph> = (0..p)
        .map(|rank| {
            let mut g = Graph::new();
            build(&mut g, Group { rank, size: p }).unwrap_or_else(|e| panic!("{ctx}: rank {rank}: {e}"));
            check_tags(&g, ctx);
            check_exact(&g, p, ctx);
            g
        })
        .collect();
    // Seeds 1, 2, 3 (the small cases) cover random, all-eager and all-rendezvous sends.
    let sends = match seed % 3 {
        0 => SendMode::Rendezvous,
        2 => SendMode::Eager,
        _ => SendMode::Random,
    };
    simulate_with(&graphs, mem, &SimOptions { seed, sends, ..Default::default() })
        .unwrap_or_else(|e| panic!("{ctx} ({sends:?} sends): {e}"))
}

pub fn compare(ctx: &str, got: &[Vec<u8>], want: &[Vec<u8>]) {
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let i = g.iter().zip(w).position(|(a, b)| a != b).unwrap();
            panic!("{ctx}: rank {r} differs first at byte {i} (got {}, want {})", g[i], w[i]);
        }
    }
}

pub fn roots(p: u32) -> Vec<u32> {
    let mut r = vec![0, p - 1, p / 2];
    r.sort();
    r.dedup();
    r
}

