//! Every collective, every algorithm, group sizes 1..9, through the simulator.
//!
//! Each case fills every rank's memory with random bytes, builds the
//! collective on every rank (with a non-zero tag base), simulates it with a
//! random schedule, and compares *all* of every rank's memory with what a
//! sequential model says it must be: the result where results go, the
//! initial bytes everywhere else (so a stray write anywhere fails the case).
//! Reductions are modelled with the order of operations each algorithm
//! documents, so floats are compared bit for bit too.

use goal_sched::coll::{
    algorithms, allgather, allgatherv, allreduce, alltoall, alltoallv, auto, barrier, bcast, bcast_pipeline, describe, gather, gatherv,
    reduce, reduce_scatter, reduce_scatter_block, scatter, scatterv, Algorithm, Coll, CollError, Group, Piece, Placement, Reduction, TAG_SPAN,
};
use goal_sched::sim::{simulate_with, SimError, SimOptions};
use goal_sched::{Buf, DataType, Graph, ReduceOp, Vertex};
use std::collections::{HashMap, VecDeque};

mod common;
use common::*;

fn seeds(bytes: u64) -> &'static [u64] {
    if bytes <= 4 * KIB {
        &[1, 2, 3]
    } else {
        &[7]
    }
}

/// Byte sizes of the data-moving tests: one element, an odd size, 64 KiB,
/// and 1 MiB on a few group sizes only.
fn sizes(p: u32, big_on: &[u32]) -> Vec<u64> {
    let mut s = vec![1, 1001, 64 * KIB];
    if big_on.contains(&p) {
        s.push(1024 * KIB);
    }
    s
}

// ---------------------------------------------------------------------------
// Barrier

/// In the union of all ranks' graphs plus one edge per matched message,
/// every rank's `entry` must reach every rank's `done`.
fn check_barrier_order(graphs: &[Graph], pieces: &[Piece], ctx: &str) {
    let p = graphs.len();
    let id = |r: usize, v: u64| (r, v);
    let mut succ: HashMap<(usize, u64), Vec<(usize, u64)>> = HashMap::new();
    let mut sends: HashMap<(usize, i64, i64), VecDeque<u64>> = HashMap::new();
    let mut recvs: HashMap<(i64, usize, i64), VecDeque<u64>> = HashMap::new();
    for (r, g) in graphs.iter().enumerate() {
        for &(a, b) in g.edges() {
            succ.entry(id(r, a as u64)).or_default().push(id(r, b as u64));
        }
        for (v, vert) in g.vertices().iter().enumerate() {
            match vert {
                Vertex::Send { peer, tag, .. } => sends.entry((r, *peer, *tag)).or_default().push_back(v as u64),
                Vertex::Recv { peer, tag, .. } => recvs.entry((*peer, r, *tag)).or_default().push_back(v as u64),
                _ => {}
            }
        }
    }
    for ((src, dst, tag), mut ss) in sends {
        let rr = recvs.get_mut(&(src as i64, dst as usize, tag)).unwrap_or_else(|| panic!("{ctx}: unmatched send"));
        while let Some(s) = ss.pop_front() {
            let v = rr.pop_front().unwrap_or_else(|| panic!("{ctx}: unmatched send"));
            succ.entry(id(src, s)).or_default().push(id(dst as usize, v));
        }
    }
    for r in 0..p {
        let mut seen = std::collections::HashSet::new();
        let mut q = vec![id(r, pieces[r].entry)];
        while let Some(x) = q.pop() {
            if seen.insert(x) {
                q.extend(succ.get(&x).into_iter().flatten().copied());
            }
        }
        for (j, piece) in pieces.iter().enumerate() {
            assert!(seen.contains(&id(j, piece.done)), "{ctx}: rank {j} may finish before rank {r} entered");
        }
    }
}

#[test]
fn barrier_orders_every_entry_before_every_done() {
    for p in 1..=17 {
        for &alg in algorithms(Coll::Barrier) {
            let ctx = format!("barrier {} p={p}", describe(Coll::Barrier, alg));
            let mut pieces = Vec::new();
            let graphs: Vec<Graph> = (0..p)
                .map(|rank| {
                    let mut g = Graph::new();
                    pieces.push(barrier(&mut g, Group { rank, size: p }, place(), alg).unwrap());
                    check_tags(&g, &ctx);
                    g
                })
                .collect();
            check_barrier_order(&graphs, &pieces, &ctx);
            for seed in 0..4 {
                let mut mem = vec![vec![0u8; 8]; p as usize];
                let st =
                    simulate_with(&graphs, &mut mem, &SimOptions { seed, ..Default::default() }).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let log = 32 - (p - 1).leading_zeros() as u64; // ceil(log2 p)
                match alg {
                    Algorithm::Bruck => assert_eq!(st.rounds, log, "{ctx}: rounds"),
                    Algorithm::Linear => assert_eq!(st.rounds, 2 * u64::from(p > 1), "{ctx}: rounds"),
                    _ => assert!(st.rounds >= log && st.rounds <= log + 1, "{ctx}: {} rounds", st.rounds),
                }
            }
        }
    }
}

#[test]
fn the_recursive_doubling_barrier_gates_the_first_receive_on_the_extra_rank() {
    // Regression (thesis 5.4 listing): with 3 ranks, rank 0 must not vouch
    // for rank 2 before rank 2's report arrived.
    let mut g = Graph::new();
    let piece = barrier(&mut g, Group { rank: 0, size: 3 }, place(), Algorithm::RecursiveDoubling).unwrap();
    let report = g.vertices().iter().position(|v| matches!(v, Vertex::Recv { peer: 2, .. })).unwrap() as u32;
    for (i, v) in g.vertices().iter().enumerate() {
        if matches!(v, Vertex::Send { peer: 1, .. } | Vertex::Recv { peer: 1, .. }) {
            assert!(g.edges().contains(&(report, i as u32)), "round 0 op {i} does not wait for the report");
        }
    }
    assert!(piece.done > piece.entry);
}

#[test]
fn the_own_block_is_copied_after_the_messages_start() {
    // An execution starts its independent operations in the order they
    // were added: a root that copied its own block first (4 MiB: ~300 us)
    // held every other rank's block back until the copy was done.
    let first_local_after_first_send = |g: &Graph, what: &str| {
        let v = g.vertices();
        let send = v.iter().position(|v| matches!(v, Vertex::Send { .. })).unwrap_or_else(|| panic!("{what}: no send"));
        let local = v.iter().position(|v| matches!(v, Vertex::Local { .. })).unwrap_or_else(|| panic!("{what}: no copy"));
        assert!(send < local, "{what}: the own block's copy (vertex {local}) comes before the first send (vertex {send})");
    };
    let big = 4 << 20;
    for alg in [Algorithm::Linear, Algorithm::LinearSync, Algorithm::Binomial] {
        let mut g = Graph::new();
        scatter(&mut g, Group { rank: 0, size: 4 }, place(), 0, big, 16 * big, 0, alg).unwrap();
        first_local_after_first_send(&g, &format!("scatter {alg:?}"));
    }
    for alg in [Algorithm::Linear, Algorithm::LinearSync] {
        let mut g = Graph::new();
        alltoall(&mut g, Group { rank: 1, size: 4 }, place(), 0, big, 16 * big, alg).unwrap();
        first_local_after_first_send(&g, &format!("alltoall {alg:?}"));
    }
    // Allgather's first send reads the own block from sbuf: with 2 ranks
    // the copy then overlaps the peer's message instead of delaying ours.
    for size in [2, 5] {
        for alg in [Algorithm::Ring, Algorithm::Bruck, Algorithm::RecursiveDoubling] {
            let mut g = Graph::new();
            allgather(&mut g, Group { rank: 1, size }, place(), 0, 8, 1 << 20, alg).unwrap();
            first_local_after_first_send(&g, &format!("allgather {alg:?}, {size} ranks"));
        }
    }
    // A gather's root posts its receives first: a sender's stream no
    // longer stands full while the root copies its own block.
    for alg in [Algorithm::Linear, Algorithm::LinearSync, Algorithm::Binomial] {
        let mut g = Graph::new();
        gather(&mut g, Group { rank: 0, size: 4 }, place(), 0, big, 16 * big, 0, alg).unwrap();
        let v = g.vertices();
        let recv = v.iter().position(|v| matches!(v, Vertex::Recv { .. } | Vertex::RecvVec { .. })).unwrap_or_else(|| panic!("gather {alg:?}: no receive"));
        let local = v.iter().position(|v| matches!(v, Vertex::Local { .. })).unwrap_or_else(|| panic!("gather {alg:?}: no copy"));
        assert!(recv < local, "gather {alg:?}: the root's own copy (vertex {local}) comes before its first receive (vertex {recv})");
    }
}

// ---------------------------------------------------------------------------
// Data-moving collectives: one function per case, then the loops

/// (sbuf, rbuf, memory length) for a collective with `s` bytes to send and `r` to receive.
fn layout(s: u64, r: u64, in_place: bool) -> (u64, u64, u64) {
    if in_place {
        (BASE, BASE, BASE + s.max(r) + GUARD)
    } else {
        let rbuf = BASE + s + GUARD;
        (BASE, rbuf, rbuf + r + GUARD)
    }
}

/// A broadcast; `segment > 0` runs the pipeline with that segment size.
fn bcast_case(alg: Algorithm, segment: u64, p: u32, bytes: u64, root: u32, seed: u64) {
    let ctx = format!("bcast {} segment={segment} p={p} bytes={bytes} root={root} seed={seed}", describe(Coll::Bcast, alg));
    let mut mem = memories(p, BASE + bytes + GUARD, seed);
    let mut want = mem.clone();
    let data = at(&mem[root as usize], BASE, bytes).to_vec();
    want.iter_mut().for_each(|m| put(m, BASE, &data));
    let st = run(&ctx, p, seed, &mut mem, &|g, grp| {
        if segment > 0 {
            bcast_pipeline(g, grp, place(), BASE, bytes, root, segment)
        } else {
            bcast(g, grp, place(), BASE, bytes, root, alg)
        }
    });
    compare(&ctx, &mem, &want);
    if alg == Algorithm::Binomial {
        // The depth of the in-order binomial tree.
        assert_eq!(st.rounds, (0..p).map(|v| v.count_ones() as u64).max().unwrap(), "{ctx}: rounds");
        assert_eq!(st.messages, p as u64 - 1, "{ctx}: messages");
    }
    if alg == Algorithm::Ring && p > 2 {
        // Every rank sends less than two buffers' worth.
        assert!(st.max_rank_bytes < 2 * bytes + p as u64, "{ctx}: {} bytes from one rank", st.max_rank_bytes);
    }
}

fn gather_case(alg: Algorithm, p: u32, bytes: u64, root: u32, in_place: bool, seed: u64) {
    let ctx = format!("gather {} p={p} bytes={bytes} root={root} in_place={in_place} seed={seed}", describe(Coll::Gather, alg));
    let (sbuf, rbuf, len) = layout(bytes, p as u64 * bytes, in_place);
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for r in 0..p {
        let from = if in_place && r == root { rbuf + r as u64 * bytes } else { sbuf };
        let data = at(&mem[r as usize], from, bytes).to_vec();
        put(&mut want[root as usize], rbuf + r as u64 * bytes, &data);
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| gather(g, grp, place(), sbuf, bytes, rbuf, root, alg));
    compare(&ctx, &mem, &want);
}

fn scatter_case(alg: Algorithm, p: u32, bytes: u64, root: u32, in_place: bool, seed: u64) {
    let ctx = format!("scatter {} p={p} bytes={bytes} root={root} in_place={in_place} seed={seed}", describe(Coll::Scatter, alg));
    let (sbuf, rbuf, len) = layout(p as u64 * bytes, bytes, in_place);
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for r in (0..p).filter(|&r| !(in_place && r == root)) {
        let data = at(&mem[root as usize], sbuf + r as u64 * bytes, bytes).to_vec();
        put(&mut want[r as usize], rbuf, &data);
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| scatter(g, grp, place(), sbuf, bytes, rbuf, root, alg));
    compare(&ctx, &mem, &want);
}

fn allgather_case(alg: Algorithm, p: u32, bytes: u64, in_place: bool, seed: u64) {
    let ctx = format!("allgather {} p={p} bytes={bytes} in_place={in_place} seed={seed}", describe(Coll::Allgather, alg));
    let (sbuf, rbuf, len) = layout(bytes, p as u64 * bytes, in_place);
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for r in 0..p {
        let from = if in_place { rbuf + r as u64 * bytes } else { sbuf };
        let data = at(&mem[r as usize], from, bytes).to_vec();
        want.iter_mut().for_each(|w| put(w, rbuf + r as u64 * bytes, &data));
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| allgather(g, grp, place(), sbuf, bytes, rbuf, alg));
    compare(&ctx, &mem, &want);
}

fn alltoall_case(alg: Algorithm, p: u32, bytes: u64, in_place: bool, seed: u64) {
    let ctx = format!("alltoall {} p={p} bytes={bytes} in_place={in_place} seed={seed}", describe(Coll::Alltoall, alg));
    let total = p as u64 * bytes;
    let (sbuf, rbuf, len) = layout(total, total, in_place);
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for i in 0..p {
        for j in 0..p {
            let data = at(&mem[i as usize], sbuf + j as u64 * bytes, bytes).to_vec();
            put(&mut want[j as usize], rbuf + i as u64 * bytes, &data);
        }
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| alltoall(g, grp, place(), sbuf, bytes, rbuf, alg));
    compare(&ctx, &mem, &want);
}

/// The algorithms of `coll`, and Auto.
fn with_auto(coll: Coll) -> Vec<Algorithm> {
    let mut a = algorithms(coll).to_vec();
    a.push(Algorithm::Auto);
    a
}

#[test]
fn bcast_every_algorithm() {
    let mut cases = 0;
    for p in 1..=9u32 {
        for bytes in sizes(p, &[2, 5, 9]) {
            for root in roots(p) {
                let mut algs: Vec<(Algorithm, u64)> = with_auto(Coll::Bcast).into_iter().map(|a| (a, 0)).collect();
                algs.push((Algorithm::Pipeline, 1000));
                for (alg, segment) in algs {
                    for &seed in seeds(bytes) {
                        bcast_case(alg, segment, p, bytes, root, seed);
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("bcast: {cases} cases");
}

#[test]
fn gather_and_scatter_every_algorithm() {
    let mut cases = 0;
    for p in 1..=9u32 {
        for bytes in sizes(p, &[3, 8]) {
            for root in roots(p) {
                for in_place in [false, true] {
                    for coll in [Coll::Gather, Coll::Scatter] {
                        for alg in with_auto(coll) {
                            for &seed in seeds(bytes) {
                                if coll == Coll::Gather {
                                    gather_case(alg, p, bytes, root, in_place, seed);
                                } else {
                                    scatter_case(alg, p, bytes, root, in_place, seed);
                                }
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("gather and scatter: {cases} cases");
}

#[test]
fn linear_sync_follows_open_mpi_segment_rules() {
    // 100000 bytes per rank: a 32 KiB first segment; 7000: 1 KiB; 5000: whole.
    for (bytes, first) in [(100_000u64, 32 * KIB), (7000, KIB), (5000, 5000)] {
        let mut g = Graph::new();
        gather(&mut g, Group { rank: 1, size: 3 }, place(), BASE, bytes, BASE, 0, Algorithm::LinearSync).unwrap();
        let lens: Vec<i64> = g.vertices().iter().filter_map(|v| if let Vertex::Send { len, .. } = v { Some(*len) } else { None }).collect();
        let want: Vec<i64> = if first < bytes { vec![first as i64, (bytes - first) as i64] } else { vec![bytes as i64] };
        assert_eq!(lens, want, "bytes {bytes}");
    }
}

#[test]
fn allgather_every_algorithm() {
    let mut cases = 0;
    for p in 1..=9u32 {
        for bytes in sizes(p, &[3, 6]) {
            for in_place in [false, true] {
                for alg in with_auto(Coll::Allgather) {
                    for &seed in seeds(bytes) {
                        allgather_case(alg, p, bytes, in_place, seed);
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("allgather: {cases} cases");
}

#[test]
fn alltoall_every_algorithm() {
    let mut cases = 0;
    for p in 1..=9u32 {
        // Every rank holds size^2 blocks in all: keep the large blocks to few ranks.
        let mut s = vec![1u64, 1001, 8 * KIB];
        if p <= 4 {
            s.push(64 * KIB);
        }
        if p == 3 {
            s.push(1024 * KIB);
        }
        for bytes in s {
            for in_place in [false, true] {
                for alg in with_auto(Coll::Alltoall) {
                    for &seed in seeds(bytes) {
                        alltoall_case(alg, p, bytes, in_place, seed);
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("alltoall: {cases} cases");
}

/// Group sizes past 9: deeper trees, more folded ranks, wrap-around at every root.
const LARGER: [u32; 6] = [12, 16, 17, 31, 32, 33];

#[test]
fn every_collective_on_larger_groups() {
    let mut cases = 0;
    for p in LARGER {
        for bytes in [1u64, 37] {
            let seed = p as u64;
            for root in roots(p) {
                for alg in algorithms(Coll::Bcast) {
                    bcast_case(*alg, 0, p, bytes, root, seed);
                }
                for in_place in [false, true] {
                    for alg in algorithms(Coll::Gather) {
                        gather_case(*alg, p, bytes, root, in_place, seed);
                        scatter_case(*alg, p, bytes, root, in_place, seed);
                    }
                }
                cases += 1;
            }
            for in_place in [false, true] {
                for alg in algorithms(Coll::Allgather) {
                    allgather_case(*alg, p, bytes, in_place, seed);
                }
                for alg in algorithms(Coll::Alltoall) {
                    alltoall_case(*alg, p, bytes, in_place, seed);
                }
            }
            let red = Reduction::new(ReduceOp::Add, DataType::Float, 32);
            for coll in REDUCTIONS {
                for &alg in algorithms(coll) {
                    for root in if coll == Coll::Reduce { roots(p) } else { vec![0] } {
                        reduction_case(coll, alg, red, p, bytes * 3, root, bytes == 1, seed);
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("larger groups: {cases} case groups");
}

// ---------------------------------------------------------------------------
// Reductions: the model

/// The element-wise operation, as the runtime's kernels compute it.
fn kernel(red: Reduction, a: &[u8], b: &[u8]) -> Vec<u8> {
    let op = red.op.builtin().expect("a built-in operator");
    macro_rules! each {
        ($t:ty, |$x:ident, $y:ident| $e:expr) => {{
            const W: usize = std::mem::size_of::<$t>();
            a.chunks_exact(W)
                .zip(b.chunks_exact(W))
                .flat_map(|(x, y)| {
                    let $x = <$t>::from_ne_bytes(x.try_into().unwrap());
                    let $y = <$t>::from_ne_bytes(y.try_into().unwrap());
                    let z: $t = $e;
                    z.to_ne_bytes()
                })
                .collect()
        }};
    }
    macro_rules! int {
        ($t:ty) => {
            match op {
                ReduceOp::Max => each!($t, |x, y| if x > y { x } else { y }),
                ReduceOp::Min => each!($t, |x, y| if x < y { x } else { y }),
                ReduceOp::Add => each!($t, |x, y| x.wrapping_add(y)),
                ReduceOp::Mul => each!($t, |x, y| x.wrapping_mul(y)),
                ReduceOp::And => each!($t, |x, y| x & y),
                ReduceOp::Or => each!($t, |x, y| x | y),
                ReduceOp::Xor => each!($t, |x, y| x ^ y),
                _ => unreachable!(),
            }
        };
    }
    macro_rules! float {
        ($t:ty) => {
            match op {
                ReduceOp::Max => each!($t, |x, y| x.max(y)),
                ReduceOp::Min => each!($t, |x, y| x.min(y)),
                ReduceOp::Add => each!($t, |x, y| x + y),
                ReduceOp::Mul => each!($t, |x, y| x * y),
                _ => unreachable!(),
            }
        };
    }
    // 16-bit floats: the scalar reference of the rounding rule, tested on
    // its own against the definitions in goal_sched::half.
    macro_rules! half {
        ($combine:path) => {
            each!(u16, |x, y| $combine(op, x, y))
        };
    }
    match (red.dt, red.width) {
        (DataType::SInt, 8) => int!(i8),
        (DataType::SInt, 16) => int!(i16),
        (DataType::SInt, 32) => int!(i32),
        (DataType::SInt, 64) => int!(i64),
        (DataType::UInt, 8) => int!(u8),
        (DataType::UInt, 16) => int!(u16),
        (DataType::UInt, 32) => int!(u32),
        (DataType::UInt, 64) => int!(u64),
        (DataType::Float, 32) => float!(f32),
        (DataType::Float, 64) => float!(f64),
        (DataType::Float, 16) => half!(goal_sched::half::combine_f16),
        (DataType::BFloat, 16) => half!(goal_sched::half::combine_bf16),
        _ => unreachable!(),
    }
}

/// Every reduction the collectives accept.
fn all_reductions() -> Vec<Reduction> {
    let mut v = Vec::new();
    for dt in [DataType::SInt, DataType::UInt] {
        for width in [8, 16, 32, 64] {
            for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Mul, ReduceOp::And, ReduceOp::Or, ReduceOp::Xor] {
                v.push(Reduction::new(op, dt, width));
            }
        }
    }
    for (dt, width) in [(DataType::Float, 16), (DataType::BFloat, 16), (DataType::Float, 32), (DataType::Float, 64)] {
        for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Mul] {
            v.push(Reduction::new(op, dt, width));
        }
    }
    v
}

/// `n` random elements; floats are finite, of mixed magnitude, so that the
/// order of additions shows in the last bits.
fn elements(red: Reduction, n: u64, rng: &mut Rng) -> Vec<u8> {
    match (red.dt, red.width) {
        (DataType::Float, 32) => (0..n).flat_map(|_| ((rng.next() % 20001) as f32 / 997.0 - 10.0 + 1e-3).to_ne_bytes()).collect(),
        (DataType::Float, 64) => (0..n).flat_map(|_| ((rng.next() % 2_000_001) as f64 / 99_991.0 - 10.0 + 1e-9).to_ne_bytes()).collect(),
        // 16-bit floats: one in four any bit pattern (NaNs, infinities,
        // subnormals, huge values), the others of mixed magnitude around 1.
        (_, 16) => (0..n)
            .flat_map(|_| {
                let r = rng.next();
                let h = if r.is_multiple_of(4) {
                    (r >> 8) as u16
                } else {
                    let x = ((r >> 8) % 20001) as f32 / 997.0 - 10.0 + 1e-3;
                    if red.dt == DataType::BFloat {
                        goal_sched::half::f32_to_bf16(x)
                    } else {
                        goal_sched::half::f32_to_f16(x)
                    }
                };
                h.to_ne_bytes()
            })
            .collect(),
        _ => rng.bytes((n * red.width as u64 / 8) as usize),
    }
}

/// How an algorithm orders its operations (see each algorithm's documentation).
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Binomial tree on ranks relative to the root, nearest child first.
    Binomial(u32),
    /// The left fold over ranks relative to the root: root, root + 1, ...
    Linear(u32),
    /// Fold pairs (2i, 2i+1), then the butterfly with distances ascending (recursive doubling).
    Doubling,
    /// Fold pairs, then distances descending (recursive halving).
    Halving,
    /// Per block b (of `blocks` elements each, or split evenly when 0): the
    /// left fold over ranks b+1, b+2, ..., b (mod p).
    Ring,
}

fn fold(red: Reduction, xs: &[Vec<u8>]) -> Vec<u8> {
    let mut acc = xs[0].clone();
    for x in &xs[1..] {
        acc = kernel(red, &acc, x);
    }
    acc
}

/// The reduction of `xs` (one vector per rank) in `order`; `blocks[b]` is
/// the element range of block b for the ring order.
fn model(red: Reduction, order: Order, xs: &[Vec<u8>], blocks: &[(u64, u64)]) -> Vec<u8> {
    let p = xs.len() as u32;
    let esz = red.width as usize / 8;
    match order {
        Order::Binomial(root) => {
            fn tree(red: Reduction, xs: &[Vec<u8>], v: u32, root: u32) -> Vec<u8> {
                let p = xs.len() as u32;
                let mut acc = xs[((v + root) % p) as usize].clone();
                let limit = if v == 0 { u32::MAX } else { 1 << v.trailing_zeros() };
                let mut m = 1u32;
                while m < limit && v + m < p {
                    acc = kernel(red, &acc, &tree(red, xs, v + m, root));
                    m <<= 1;
                }
                acc
            }
            tree(red, xs, 0, root)
        }
        Order::Linear(root) => {
            let relative: Vec<Vec<u8>> = (0..p).map(|v| xs[((v + root) % p) as usize].clone()).collect();
            fold(red, &relative)
        }
        Order::Doubling | Order::Halving => {
            let p2 = 1u32 << (31 - p.leading_zeros());
            let e = p - p2;
            let mut y: Vec<Vec<u8>> = (0..p2)
                .map(|v| if v < e { kernel(red, &xs[2 * v as usize], &xs[2 * v as usize + 1]) } else { xs[(v + e) as usize].clone() })
                .collect();
            let mut ds: Vec<u32> = (0..p2.trailing_zeros()).map(|k| 1 << k).collect();
            if matches!(order, Order::Halving) {
                ds.reverse();
            }
            for d in ds {
                for v in (0..p2).filter(|v| v & d == 0) {
                    let z = kernel(red, &y[v as usize], &y[(v + d) as usize]);
                    y[v as usize] = z.clone();
                    y[(v + d) as usize] = z;
                }
            }
            y.swap_remove(0)
        }
        Order::Ring => {
            let mut out = xs[0].clone();
            for (b, &(off, len)) in blocks.iter().enumerate() {
                let (lo, hi) = (off as usize * esz, (off + len) as usize * esz);
                let parts: Vec<Vec<u8>> = (1..=p).map(|k| xs[((b as u32 + k) % p) as usize][lo..hi].to_vec()).collect();
                out[lo..hi].copy_from_slice(&fold(red, &parts));
            }
            out
        }
    }
}

fn even_blocks(n: u64, p: u32) -> Vec<(u64, u64)> {
    (0..p as u64).map(|i| (i * (n / p as u64) + i.min(n % p as u64), n / p as u64 + u64::from(i < n % p as u64))).collect()
}

fn order_of(coll: Coll, alg: Algorithm, root: u32) -> Order {
    match (coll, alg) {
        (Coll::Reduce, Algorithm::Binomial) => Order::Binomial(root),
        (Coll::Reduce, Algorithm::Linear) => Order::Linear(root),
        (Coll::ReduceScatterBlock, Algorithm::Linear) => Order::Linear(0),
        (_, Algorithm::RecursiveDoubling) if coll == Coll::Allreduce => Order::Doubling,
        (_, Algorithm::Ring) => Order::Ring,
        _ => Order::Halving,
    }
}

#[allow(clippy::too_many_arguments)]
/// One reduction case: `coll` with `alg` on `p` ranks, `n` elements (per rank for reduce_scatter_block).
fn reduction_case(coll: Coll, alg: Algorithm, red: Reduction, p: u32, n: u64, root: u32, in_place: bool, seed: u64) {
    let esz = red.width as u64 / 8;
    let (in_elems, out_elems) = if coll == Coll::ReduceScatterBlock { (p as u64 * n, n) } else { (n, n) };
    let (sbuf, rbuf, len) = layout(in_elems * esz, out_elems * esz, in_place);
    let ctx = format!("{} {} {red:?} p={p} n={n} root={root} in_place={in_place} seed={seed}", coll.name(), describe(coll, alg));
    let mut mem = memories(p, len, seed);
    let mut rng = Rng::new(seed ^ n ^ (p as u64) << 20);
    let xs: Vec<Vec<u8>> = (0..p).map(|_| elements(red, in_elems, &mut rng)).collect();
    for (m, x) in mem.iter_mut().zip(&xs) {
        put(m, sbuf, x);
    }
    let mut want = mem.clone();
    let blocks = if coll == Coll::ReduceScatterBlock { (0..p as u64).map(|i| (i * n, n)).collect() } else { even_blocks(n, p) };
    let resolved = if alg == Algorithm::Auto { auto(coll, p, n * esz) } else { alg };
    let result = model(red, order_of(coll, resolved, root), &xs, &blocks);
    match coll {
        Coll::Reduce => put(&mut want[root as usize], rbuf, &result),
        Coll::Allreduce => want.iter_mut().for_each(|w| put(w, rbuf, &result)),
        _ => {
            for (r, w) in want.iter_mut().enumerate() {
                put(w, rbuf, &result[(r as u64 * n * esz) as usize..((r as u64 + 1) * n * esz) as usize]);
            }
        }
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| match coll {
        Coll::Reduce => reduce(g, grp, place(), sbuf, rbuf, n, red, root, alg),
        Coll::Allreduce => allreduce(g, grp, place(), sbuf, rbuf, n, red, alg),
        _ => reduce_scatter_block(g, grp, place(), sbuf, rbuf, n, red, alg),
    });
    if coll == Coll::Allreduce {
        let first = at(&mem[0], rbuf, n * esz);
        assert!(mem.iter().all(|m| at(m, rbuf, n * esz) == first), "{ctx}: ranks disagree");
    }
    compare(&ctx, &mem, &want);
}

const REDUCTIONS: [Coll; 3] = [Coll::Reduce, Coll::Allreduce, Coll::ReduceScatterBlock];

#[test]
fn reductions_every_type_and_operator() {
    let mut cases = 0;
    for coll in REDUCTIONS {
        for &alg in algorithms(coll) {
            for red in all_reductions() {
                for p in 1..=9u32 {
                    for n in [1u64, 37] {
                        let root = if coll == Coll::Reduce { (p * 2 / 3) % p } else { 0 };
                        reduction_case(coll, alg, red, p, n, root, (p + n as u32) & 1 == 0, p as u64);
                        cases += 1;
                    }
                }
            }
        }
    }
    eprintln!("reductions by type and operator: {cases} cases");
}

#[test]
fn reductions_every_size_root_and_seed() {
    let f64_add = Reduction::new(ReduceOp::Add, DataType::Float, 64);
    let f32_mul = Reduction::new(ReduceOp::Mul, DataType::Float, 32);
    let i32_add = Reduction::new(ReduceOp::Add, DataType::SInt, 32);
    let mut cases = 0;
    for coll in REDUCTIONS {
        for alg in with_auto(coll) {
            for p in 1..=9u32 {
                let mut ns = vec![0u64, 1, 3, 9, 1001];
                ns.push(64 * KIB / 8);
                if [3, 8].contains(&p) {
                    ns.push(1024 * KIB / 8);
                }
                for n in ns {
                    let n = if coll == Coll::ReduceScatterBlock { n.div_ceil(p as u64) } else { n };
                    let rs = if coll == Coll::Reduce { roots(p) } else { vec![0] };
                    for root in rs {
                        for in_place in [false, true] {
                            for &seed in seeds(n * 8) {
                                let red = match seed % 3 {
                                    0 => i32_add,
                                    1 => f64_add,
                                    _ => f32_mul,
                                };
                                reduction_case(coll, alg, red, p, n, root, in_place, seed);
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("reductions by size: {cases} cases");
}

#[test]
fn non_associative_operators_are_refused() {
    for op in [ReduceOp::Sub, ReduceOp::Div, ReduceOp::Copy, ReduceOp::Wtime] {
        let red = Reduction::new(op, DataType::Float, 64);
        let e = allreduce(&mut Graph::new(), Group { rank: 0, size: 2 }, place(), 0, 0, 4, red, Algorithm::Auto).unwrap_err();
        assert!(matches!(&e, CollError::BadArgument(m) if m.contains(op.name()) && m.contains("associative")), "{e}");
    }
    let red = Reduction::new(ReduceOp::Xor, DataType::Float, 64);
    let e = reduce(&mut Graph::new(), Group { rank: 0, size: 2 }, place(), 0, 0, 4, red, 0, Algorithm::Auto).unwrap_err();
    assert!(e.to_string().contains("GOAL_XOR is not defined on GOAL_FLOAT"), "{e}");
    // 16-bit floats: the bitwise operators and SUB/DIV are refused, naming operator, type and width.
    for (dt, ty) in [(DataType::Float, "GOAL_FLOAT"), (DataType::BFloat, "GOAL_BFLOAT")] {
        for op in [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor] {
            let red = Reduction::new(op, dt, 16);
            let e = allreduce(&mut Graph::new(), Group { rank: 0, size: 2 }, place(), 0, 0, 4, red, Algorithm::Auto).unwrap_err();
            assert!(e.to_string().contains(&format!("{} is not defined on {ty} of width 16", op.name())), "{e}");
            let e = Reduction::from_raw(op as i64, dt as i64, 16).unwrap_err();
            assert!(e.to_string().contains(&format!("{} is not defined on {ty} of width 16", op.name())), "{e}");
        }
        for op in [ReduceOp::Sub, ReduceOp::Div] {
            let e = Reduction::from_raw(op as i64, dt as i64, 16).unwrap_err();
            assert!(e.to_string().contains(op.name()) && e.to_string().contains("associative"), "{e}");
        }
        for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Mul] {
            assert_eq!(Reduction::from_raw(op as i64, dt as i64, 16).unwrap().check().unwrap(), 2);
        }
    }
    let e = Reduction::from_raw(ReduceOp::Add as i64, DataType::BFloat as i64, 32).unwrap_err();
    assert!(e.to_string().contains("element width 32 bits does not exist for GOAL_BFLOAT"), "{e}");
}

// ---------------------------------------------------------------------------
// Algorithm choice, errors, composition

#[test]
fn an_algorithm_that_does_not_apply_is_unsupported_with_a_clear_message() {
    let e = barrier(&mut Graph::new(), Group { rank: 0, size: 4 }, place(), Algorithm::Ring).unwrap_err();
    assert_eq!(
        e,
        CollError::Unsupported(
            "GOAL_ALG_RING does not apply to barrier (it has: linear, recursive doubling, Bruck (dissemination))".into()
        )
    );
    let grp = Group { rank: 1, size: 4 };
    let red = Reduction::new(ReduceOp::Add, DataType::UInt, 32);
    for coll in Coll::ALL {
        for alg in Algorithm::ALL.into_iter().filter(|a| *a != Algorithm::Auto && !algorithms(coll).contains(a)) {
            let mut g = Graph::new();
            let r = match coll {
                Coll::Barrier => barrier(&mut g, grp, place(), alg),
                Coll::Bcast => bcast(&mut g, grp, place(), 64, 8, 0, alg),
                Coll::Gather => gather(&mut g, grp, place(), 64, 8, 128, 0, alg),
                Coll::Scatter => scatter(&mut g, grp, place(), 64, 8, 128, 0, alg),
                Coll::Allgather => allgather(&mut g, grp, place(), 64, 8, 128, alg),
                Coll::Alltoall => alltoall(&mut g, grp, place(), 64, 8, 128, alg),
                Coll::Reduce => reduce(&mut g, grp, place(), 64, 128, 2, red, 0, alg),
                Coll::Allreduce => allreduce(&mut g, grp, place(), 64, 128, 2, red, alg),
                Coll::ReduceScatterBlock => reduce_scatter_block(&mut g, grp, place(), 64, 128, 2, red, alg),
                Coll::Gatherv => gatherv(&mut g, grp, place(), 64, 8, 128, &[8; 4], &[0, 8, 16, 24], 0, alg),
                Coll::Scatterv => scatterv(&mut g, grp, place(), 64, &[8; 4], &[0, 8, 16, 24], 128, 8, 0, alg),
                Coll::Allgatherv => allgatherv(&mut g, grp, place(), 64, 8, 128, &[8; 4], &[0, 8, 16, 24], alg),
                Coll::Alltoallv => alltoallv(&mut g, grp, place(), 64, &[8; 4], &[0, 8, 16, 24], 128, &[8; 4], &[0, 8, 16, 24], alg),
                Coll::ReduceScatter => reduce_scatter(&mut g, grp, place(), 64, 128, &[2; 4], red, alg),
            };
            let e = r.unwrap_err();
            let want = format!("{} does not apply to {} (it has: ", alg.c_name(), coll.name());
            assert!(matches!(&e, CollError::Unsupported(m) if m.starts_with(&want)), "{e}");
        }
    }
}

#[test]
fn auto_picks_an_algorithm_that_applies() {
    for coll in Coll::ALL {
        for p in [1, 2, 3, 4, 7, 8, 11, 16, 61, 64, 1000] {
            for bytes in [0, 1, 100, 1000, 5000, 7000, 64 * KIB, 100 * KIB, 600 * KIB, 2048 * KIB] {
                let a = auto(coll, p, bytes);
                assert!(algorithms(coll).contains(&a), "{} p={p} bytes={bytes}: {a:?}", coll.name());
            }
        }
    }
    assert_eq!(Algorithm::from_raw(6), Some(Algorithm::Ring));
    assert_eq!(Algorithm::from_raw(9), None);
}

#[test]
fn bad_arguments_are_refused() {
    let red = Reduction::new(ReduceOp::Add, DataType::UInt, 32);
    let bad = |r: Result<Piece, CollError>, needle: &str| {
        let e = r.unwrap_err();
        assert!(matches!(&e, CollError::BadArgument(m) if m.contains(needle)), "{e} lacks {needle}");
    };
    let mut g = Graph::new();
    bad(bcast(&mut g, Group { rank: 0, size: 4 }, place(), 0, 8, 4, Algorithm::Binomial), "root 4 is outside the group of 4");
    bad(barrier(&mut g, Group { rank: 4, size: 4 }, place(), Algorithm::Auto), "rank 4 is outside the group of 4");
    bad(barrier(&mut g, Group { rank: 0, size: 4 }, Placement { tag_base: -1 }, Algorithm::Auto), "tag base -1");
    bad(barrier(&mut g, Group { rank: 0, size: 4 }, Placement { tag_base: i32::MAX as i64 }, Algorithm::Auto), "tag base");
    bad(gather(&mut g, Group { rank: 0, size: 4 }, place(), 0, 1 << 31, 0, 0, Algorithm::Linear), "larger than 4 GiB");
    bad(reduce(&mut g, Group { rank: 0, size: 4 }, place(), 0, 0, 1 << 31, red, 0, Algorithm::Binomial), "larger than 4 GiB");
    bad(bcast_pipeline(&mut g, Group { rank: 0, size: 4 }, place(), 0, 8, 0, 0), "segment");
    // The largest tag base that fits.
    assert!(barrier(&mut g, Group { rank: 0, size: 4 }, Placement { tag_base: i32::MAX as i64 + 1 - TAG_SPAN }, Algorithm::Auto).is_ok());
}

#[test]
fn collectives_compose_with_each_other_and_with_user_operations() {
    // On every rank, in one graph:
    //   user COPY (scratchpad [0, 64) -> x)      writes the bcast root's input
    //   bcast x from root 2 (tags 0..)           requires the copy
    //   allreduce x -> y, u64 ADD (tags 4096..)  requires the bcast
    //   alltoall of z, concurrently (tags 8192..)
    //   user COPY y -> w                          requires the allreduce
    // and a user receive into the scratchpad's [0, 64) range running
    // alongside, which the simulator's race check would flag if a
    // collective's scratchpad overlapped it.
    let p = 5u32;
    let (x, y, z, zr, w) = (64u64, 128, 192, 256, 320);
    let n = 8u64; // u64 elements: 64 bytes
    let red = Reduction::new(ReduceOp::Add, DataType::UInt, 64);
    for seed in 0..8 {
        let mut mem = memories(p, 512, seed);
        let zs: Vec<Vec<u8>> = mem.iter().map(|m| at(m, z, 5 * 8).to_vec()).collect();
        let graphs: Vec<Graph> = (0..p)
            .map(|rank| {
                let grp = Group { rank, size: p };
                let mut g = Graph::new();
                g.set_scratchpad(64);
                let fill = g.local(ReduceOp::Copy as i64, 1, 8, 64, Buf::user(448), Buf::user(448), Buf::scratch(0));
                let put_x = g.local(ReduceOp::Copy as i64, 1, 8, 64, Buf::scratch(0), Buf::scratch(0), Buf::user(x));
                g.requires(fill, put_x).unwrap();
                let b = bcast(&mut g, grp, Placement { tag_base: 0 }, x, 64, 2, Algorithm::Binomial).unwrap();
                g.requires(put_x, b.entry).unwrap();
                let a = allreduce(&mut g, grp, Placement { tag_base: TAG_SPAN }, x, y, n, red, Algorithm::Rabenseifner).unwrap();
                g.requires(b.done, a.entry).unwrap();
                alltoall(&mut g, grp, Placement { tag_base: 2 * TAG_SPAN }, z, 8, zr, Algorithm::Bruck).unwrap();
                let out = g.local(ReduceOp::Copy as i64, 1, 8, 64, Buf::user(y), Buf::user(y), Buf::user(w));
                g.requires(a.done, out).unwrap();
                // A user message into scratchpad [0, 64), after the copy read it.
                g.send(Buf::user(448), 64, ((rank + 1) % p) as i64, 3 * TAG_SPAN);
                let r = g.recv(Buf::scratch(0), 64, ((rank + p - 1) % p) as i64, 3 * TAG_SPAN);
                g.requires(put_x, r).unwrap();
                assert!(g.scratchpad() > 64);
                g
            })
            .collect();
        let source = at(&mem[2], 448, 64).to_vec();
        simulate_with(&graphs, &mut mem, &SimOptions { seed, ..Default::default() }).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let words = |b: &[u8]| -> Vec<u64> { b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect() };
        let sum: Vec<u64> = words(&source).iter().map(|v| v.wrapping_mul(p as u64)).collect();
        for (r, m) in mem.iter().enumerate() {
            assert_eq!(at(m, x, 64), &source[..], "seed {seed} rank {r}: bcast");
            assert_eq!(words(at(m, y, 64)), sum, "seed {seed} rank {r}: allreduce");
            assert_eq!(at(m, w, 64), at(m, y, 64), "seed {seed} rank {r}: user op after done");
            for (i, z) in zs.iter().enumerate() {
                assert_eq!(at(m, zr + i as u64 * 8, 8), &z[r * 8..r * 8 + 8], "seed {seed} rank {r}: alltoall");
            }
        }
    }
}

#[test]
fn messages_that_share_a_tag_match_in_order() {
    // 5000 segments of 2 bytes: segments s and s + 4096 share a tag, so the
    // builder must order their sends and receives.
    let (p, bytes) = (4u32, 10_000u64);
    for seed in 0..4 {
        let ctx = format!("pipeline of 5000 segments seed={seed}");
        let mut mem = memories(p, BASE + bytes + GUARD, seed);
        let mut want = mem.clone();
        let data = at(&mem[1], BASE, bytes).to_vec();
        want.iter_mut().for_each(|m| put(m, BASE, &data));
        let st = run(&ctx, p, seed, &mut mem, &|g, grp| bcast_pipeline(g, grp, place(), BASE, bytes, 1, 2));
        compare(&ctx, &mem, &want);
        assert_eq!(st.messages, 3 * 5000);
    }
}

#[test]
fn reductions_from_c_numbers() {
    assert_eq!(Reduction::from_raw(2, 2, 64), Ok(Reduction::new(ReduceOp::Add, DataType::Float, 64)));
    assert!(matches!(Reduction::from_raw(42, 0, 8), Err(CollError::BadArgument(m)) if m.contains("operator 42")));
    assert!(matches!(Reduction::from_raw(3, 0, 8), Err(CollError::BadArgument(m)) if m.contains("GOAL_SUB cannot reduce")));
}

#[test]
fn the_simulator_finds_a_collective_that_reuses_a_buffer_too_early() {
    // A hand-made "allgather" that forwards from the buffer it receives
    // into: rank r receives block r-1 into the same place it is sending
    // from. The race check reports it for some seed.
    let p = 3u32;
    let graphs: Vec<Graph> = (0..p)
        .map(|r| {
            let mut g = Graph::new();
            g.send(Buf::user(0), 8, ((r + 1) % p) as i64, 0);
            g.recv(Buf::user(0), 8, ((r + p - 1) % p) as i64, 0);
            g
        })
        .collect();
    let found = (0..16).any(|seed| {
        let mut mem = memories(p, 16, seed);
        matches!(simulate_with(&graphs, &mut mem, &SimOptions { seed, ..Default::default() }), Err(SimError::Race { .. }))
    });
    assert!(found);
}
