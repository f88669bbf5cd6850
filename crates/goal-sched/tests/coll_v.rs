//! The collectives with per-rank counts (gatherv, scatterv, allgatherv,
//! alltoallv, reduce_scatter), every algorithm and AUTO, group sizes 1..9,
//! through the simulator, against a sequential model.
//!
//! Counts come in four patterns: random with about a third of them zero,
//! one rank holding everything, all zero, and all equal. Displacements
//! place the blocks in a shuffled order with random gaps (and, where MPI
//! allows it, the blocks a rank only sends may overlap). As in
//! `tests/coll.rs`, every byte of every rank's memory is compared with the
//! model, so a stray write anywhere fails the case.

use goal_sched::coll::{
    algorithms, allgather, allgatherv, alltoallv, auto_v, describe, gatherv, reduce_scatter, scatterv, Algorithm, Coll, CollError, Group, Piece,
    Reduction,
};
use goal_sched::{DataType, Graph, ReduceOp};

mod common;
use common::*;

/// How the counts of a case are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pattern {
    /// Random in `0..=max`, about a third of them zero.
    Random,
    /// Rank `p / 2` has `max`, every other rank zero.
    OneHoldsAll,
    /// Every count zero.
    Zero,
    /// Every count `max`.
    Equal,
}

const PATTERNS: [Pattern; 4] = [Pattern::Random, Pattern::OneHoldsAll, Pattern::Zero, Pattern::Equal];

fn counts(pattern: Pattern, p: u32, max: u64, rng: &mut Rng) -> Vec<u64> {
    (0..p)
        .map(|r| match pattern {
            Pattern::Random if rng.next().is_multiple_of(3) => 0,
            Pattern::Random => rng.next() % (max + 1),
            Pattern::OneHoldsAll => u64::from(r == p / 2) * max,
            Pattern::Zero => 0,
            Pattern::Equal => max,
        })
        .collect()
}

/// Displacements for `counts`: the blocks in a shuffled order with random
/// gaps, disjoint unless `overlap` (then every block starts at random
/// within the others' extent). Returns them and the extent.
fn displs(counts: &[u64], overlap: bool, rng: &mut Rng) -> (Vec<u64>, u64) {
    let p = counts.len();
    let mut order: Vec<usize> = (0..p).collect();
    for i in (1..p).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut d = vec![0u64; p];
    let mut end = 0u64;
    for &r in &order {
        d[r] = end + rng.next() % 9;
        end = d[r] + counts[r];
    }
    if overlap {
        for (r, x) in d.iter_mut().enumerate() {
            *x = rng.next() % (end.saturating_sub(counts[r]) + 1);
        }
    }
    (d, end)
}

fn with_auto(coll: Coll) -> Vec<Algorithm> {
    let mut a = algorithms(coll).to_vec();
    a.push(Algorithm::Auto);
    a
}

/// The maxima of the counts (bytes, or elements for reduce_scatter) to test on `p` ranks.
fn maxima(p: u32) -> Vec<u64> {
    let mut m = vec![1, 37, 3000];
    if [3, 8].contains(&p) {
        m.push(70 * KIB);
    }
    m
}

fn seeds(max: u64) -> &'static [u64] {
    if max <= 4 * KIB {
        &[1, 2, 3]
    } else {
        &[4]
    }
}

/// Runs `case` for every group size, pattern, maximum and seed.
fn sweep(name: &str, case: &mut dyn FnMut(u32, Pattern, u64, u64)) {
    let mut cases = 0;
    for p in 1..=9u32 {
        for max in maxima(p) {
            for pattern in PATTERNS {
                if pattern == Pattern::Zero && max != 1 {
                    continue;
                }
                for &seed in seeds(max) {
                    case(p, pattern, max, seed);
                    cases += 1;
                }
            }
        }
    }
    eprintln!("{name}: {cases} case groups");
}

// ---------------------------------------------------------------------------
// Gatherv and scatterv

/// One gatherv or scatterv; `everywhere`: non-roots get the counts too.
#[allow(clippy::too_many_arguments)]
fn rooted_case(coll: Coll, alg: Algorithm, cs: &[u64], ds: &[u64], extent: u64, root: u32, in_place: bool, everywhere: bool, seed: u64) {
    let p = cs.len() as u32;
    let ctx = format!("{} {} counts={cs:?} displs={ds:?} root={root} in_place={in_place} everywhere={everywhere} seed={seed}", coll.name(), describe(coll, alg));
    let largest = cs.iter().copied().max().unwrap_or(0);
    // gatherv: sbuf holds one block, rbuf the layout; scatterv the other way round.
    let (single, layout) = (largest, extent);
    let (sbuf, rbuf, len) = if in_place {
        (BASE, BASE, BASE + single.max(layout) + GUARD)
    } else if coll == Coll::Gatherv {
        (BASE, BASE + single + GUARD, BASE + single + GUARD + layout + GUARD)
    } else {
        (BASE, BASE + layout + GUARD, BASE + layout + GUARD + single + GUARD)
    };
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for r in 0..p as usize {
        if in_place && r == root as usize {
            continue;
        }
        if coll == Coll::Gatherv {
            let data = at(&mem[r], sbuf, cs[r]).to_vec();
            put(&mut want[root as usize], rbuf + ds[r], &data);
        } else {
            let data = at(&mem[root as usize], sbuf + ds[r], cs[r]).to_vec();
            put(&mut want[r], rbuf, &data);
        }
    }
    run(&ctx, p, seed, &mut mem, &|g: &mut Graph, grp: Group| -> Result<Piece, CollError> {
        let me = grp.rank as usize;
        let c: &[u64] = if everywhere || grp.rank == root { cs } else { &[] };
        let d: &[u64] = if grp.rank == root { ds } else { &[] };
        if coll == Coll::Gatherv {
            gatherv(g, grp, place(), sbuf, cs[me], rbuf, c, d, root, alg)
        } else {
            scatterv(g, grp, place(), sbuf, c, d, rbuf, cs[me], root, alg)
        }
    });
    compare(&ctx, &mem, &want);
}

#[test]
fn gatherv_and_scatterv_every_algorithm() {
    sweep("gatherv and scatterv", &mut |p, pattern, max, seed| {
        let mut rng = Rng::new(seed ^ (p as u64) << 8 ^ max << 16);
        let cs = counts(pattern, p, max, &mut rng);
        for coll in [Coll::Gatherv, Coll::Scatterv] {
            let (ds, extent) = displs(&cs, coll == Coll::Scatterv && seed == 2, &mut rng);
            for root in roots(p) {
                for in_place in [false, true] {
                    for alg in with_auto(coll) {
                        rooted_case(coll, alg, &cs, &ds, extent, root, in_place, true, seed);
                    }
                    // As MPI calls them: counts at the root only.
                    rooted_case(coll, Algorithm::Linear, &cs, &ds, extent, root, in_place, false, seed);
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Allgatherv and alltoallv

fn allgatherv_case(alg: Algorithm, cs: &[u64], ds: &[u64], extent: u64, in_place: bool, seed: u64) {
    let p = cs.len() as u32;
    let ctx = format!("allgatherv {} counts={cs:?} displs={ds:?} in_place={in_place} seed={seed}", describe(Coll::Allgatherv, alg));
    let largest = cs.iter().copied().max().unwrap_or(0);
    let (sbuf, rbuf, len) =
        if in_place { (BASE, BASE, BASE + extent + GUARD) } else { (BASE, BASE + largest + GUARD, BASE + largest + GUARD + extent + GUARD) };
    let mut mem = memories(p, len, seed);
    let mut want = mem.clone();
    for r in 0..p as usize {
        let from = if in_place { rbuf + ds[r] } else { sbuf };
        let data = at(&mem[r], from, cs[r]).to_vec();
        want.iter_mut().for_each(|w| put(w, rbuf + ds[r], &data));
    }
    run(&ctx, p, seed, &mut mem, &|g, grp| allgatherv(g, grp, place(), sbuf, cs[grp.rank as usize], rbuf, cs, ds, alg));
    compare(&ctx, &mem, &want);
}

#[test]
fn allgatherv_every_algorithm() {
    sweep("allgatherv", &mut |p, pattern, max, seed| {
        let mut rng = Rng::new(seed ^ (p as u64) << 8 ^ max << 16);
        let cs = counts(pattern, p, max, &mut rng);
        let (ds, extent) = displs(&cs, false, &mut rng);
        for in_place in [false, true] {
            for alg in with_auto(Coll::Allgatherv) {
                allgatherv_case(alg, &cs, &ds, extent, in_place, seed);
            }
        }
    });
}

/// With AUTO and an allgather's layout (counts alike, block `r` at `r`
/// counts) an allgatherv is the allgather AUTO picks, in place or not, on
/// 1-9 ranks, and moves every byte as the model says; any other layout,
/// or an algorithm named, keeps the allgatherv's own.
#[test]
fn allgatherv_with_an_allgathers_layout_is_that_allgather() {
    let graph = |f: &dyn Fn(&mut Graph) -> Result<Piece, CollError>| {
        let mut g = Graph::new();
        f(&mut g).unwrap();
        format!("{g:?}")
    };
    for p in 1..=9u32 {
        for c in [1u64, 100, 4096] {
            let cs = vec![c; p as usize];
            let ds: Vec<u64> = (0..p as u64).map(|r| r * c).collect();
            for in_place in [false, true] {
                allgatherv_case(Algorithm::Auto, &cs, &ds, c * p as u64, in_place, 7);
                let grp = Group { rank: p / 2, size: p };
                let (sbuf, rbuf) = if in_place { (1 << 20, 1 << 20) } else { (0, 1 << 20) };
                let v = graph(&|g| allgatherv(g, grp, place(), sbuf, c, rbuf, &cs, &ds, Algorithm::Auto));
                let a = graph(&|g| allgather(g, grp, place(), sbuf, c, rbuf, Algorithm::Auto));
                assert_eq!(v, a, "{p} ranks, {c} bytes, in place {in_place}: not the allgather's graph");
                if p > 2 {
                    let linear = graph(&|g| allgatherv(g, grp, place(), sbuf, c, rbuf, &cs, &ds, Algorithm::Linear));
                    assert_ne!(linear, a, "{p} ranks, {c} bytes: LINEAR named is the allgatherv's own");
                    let mut gap = ds.clone();
                    gap[p as usize - 1] += 1;
                    let gapped = graph(&|g| allgatherv(g, grp, place(), sbuf, c, rbuf, &cs, &gap, Algorithm::Auto));
                    let gapped_linear = graph(&|g| allgatherv(g, grp, place(), sbuf, c, rbuf, &cs, &gap, Algorithm::Linear));
                    assert_eq!(gapped, gapped_linear, "{p} ranks, {c} bytes: a gap before the last block is no allgather");
                }
            }
        }
    }
}

/// One alltoallv: `m[i][j]` bytes go from rank `i` to rank `j`; every rank
/// has its own displacements on both sides.
fn alltoallv_case(alg: Algorithm, m: &[Vec<u64>], in_place: bool, seed: u64) {
    let p = m.len();
    let mut rng = Rng::new(seed ^ 0xa11);
    let sc: Vec<Vec<u64>> = m.to_vec();
    let rc: Vec<Vec<u64>> = (0..p).map(|j| (0..p).map(|i| m[i][j]).collect()).collect();
    let sd: Vec<(Vec<u64>, u64)> = sc.iter().map(|c| displs(c, seed == 2, &mut rng)).collect();
    let rd: Vec<(Vec<u64>, u64)> = rc.iter().map(|c| displs(c, false, &mut rng)).collect();
    let (sext, rext) = (sd.iter().map(|x| x.1).max().unwrap(), rd.iter().map(|x| x.1).max().unwrap());
    let ctx = format!("alltoallv {} matrix={m:?} in_place={in_place} seed={seed}", describe(Coll::Alltoallv, alg));
    let (sbuf, rbuf, len) = if in_place { (BASE, BASE, BASE + rext + GUARD) } else { (BASE, BASE + sext + GUARD, BASE + sext + GUARD + rext + GUARD) };
    let mut mem = memories(p as u32, len, seed);
    let mut want = mem.clone();
    for i in 0..p {
        for j in 0..p {
            // In place, rank i sends the block that rbuf holds for rank j.
            let from = if in_place { rbuf + rd[i].0[j] } else { sbuf + sd[i].0[j] };
            let data = at(&mem[i], from, m[i][j]).to_vec();
            put(&mut want[j], rbuf + rd[j].0[i], &data);
        }
    }
    run(&ctx, p as u32, seed, &mut mem, &|g, grp| {
        let r = grp.rank as usize;
        let (s, d): (&[u64], &[u64]) = if in_place { (&[], &[]) } else { (&sc[r], &sd[r].0) };
        alltoallv(g, grp, place(), sbuf, s, d, rbuf, &rc[r], &rd[r].0, alg)
    });
    compare(&ctx, &mem, &want);
}

#[test]
fn alltoallv_every_algorithm() {
    sweep("alltoallv", &mut |p, pattern, max, seed| {
        let mut rng = Rng::new(seed ^ (p as u64) << 8 ^ max << 16);
        // Row i: what rank i sends; one rank holding all sends and receives everything.
        let mut m: Vec<Vec<u64>> = (0..p).map(|_| counts(pattern, p, max, &mut rng)).collect();
        if pattern == Pattern::OneHoldsAll {
            let h = (p / 2) as usize;
            for (i, row) in m.iter_mut().enumerate() {
                for (j, c) in row.iter_mut().enumerate() {
                    *c = if i == h || j == h { max } else { 0 };
                }
            }
        }
        // In place a rank's send layout is its receive layout: the matrix must be symmetric.
        let sym: Vec<Vec<u64>> = (0..p as usize).map(|i| (0..p as usize).map(|j| m[i.min(j)][i.max(j)]).collect()).collect();
        for alg in with_auto(Coll::Alltoallv) {
            alltoallv_case(alg, &m, false, seed);
            alltoallv_case(alg, &sym, true, seed);
        }
    });
}

// ---------------------------------------------------------------------------
// Reduce_scatter

/// `f` applied lane by lane to two vectors of `W`-byte elements.
fn lanes<T, const W: usize>(a: &[u8], b: &[u8], from: fn([u8; W]) -> T, to: fn(T) -> [u8; W], f: fn(T, T) -> T) -> Vec<u8> {
    let lane = |c: &[u8]| from(c.try_into().unwrap());
    a.chunks_exact(W).zip(b.chunks_exact(W)).flat_map(|(x, y)| to(f(lane(x), lane(y)))).collect()
}

/// The element-wise operation, for the reductions tested here.
fn kernel(red: Reduction, a: &[u8], b: &[u8]) -> Vec<u8> {
    let goal_sched::Op::Builtin(op) = red.op else { unreachable!("{red:?} is not modelled here") };
    match (op, red.dt, red.width) {
        (ReduceOp::Add, DataType::SInt, 32) => lanes(a, b, i32::from_ne_bytes, i32::to_ne_bytes, i32::wrapping_add),
        (ReduceOp::Xor, DataType::UInt, 8) => lanes(a, b, u8::from_ne_bytes, u8::to_ne_bytes, |x, y| x ^ y),
        (ReduceOp::Add, DataType::Float, 64) => lanes(a, b, f64::from_ne_bytes, f64::to_ne_bytes, |x, y| x + y),
        (ReduceOp::Mul, DataType::Float, 32) => lanes(a, b, f32::from_ne_bytes, f32::to_ne_bytes, |x, y| x * y),
        (ReduceOp::Max, DataType::Float, 32) => lanes(a, b, f32::from_ne_bytes, f32::to_ne_bytes, f32::max),
        _ => unreachable!("{red:?} is not modelled here"),
    }
}

const REDUCTIONS: [Reduction; 5] = [
    Reduction { op: goal_sched::Op::Builtin(ReduceOp::Add), dt: DataType::SInt, width: 32 },
    Reduction { op: goal_sched::Op::Builtin(ReduceOp::Xor), dt: DataType::UInt, width: 8 },
    Reduction { op: goal_sched::Op::Builtin(ReduceOp::Add), dt: DataType::Float, width: 64 },
    Reduction { op: goal_sched::Op::Builtin(ReduceOp::Mul), dt: DataType::Float, width: 32 },
    Reduction { op: goal_sched::Op::Builtin(ReduceOp::Max), dt: DataType::Float, width: 32 },
];

/// `n` elements; floats finite, of mixed magnitude, so that the order of
/// operations shows in the last bits.
fn elements(red: Reduction, n: u64, rng: &mut Rng) -> Vec<u8> {
    match (red.dt, red.width) {
        (DataType::Float, 32) => (0..n).flat_map(|_| ((rng.next() % 20001) as f32 / 997.0 - 10.0 + 1e-3).to_ne_bytes()).collect(),
        (DataType::Float, 64) => (0..n).flat_map(|_| ((rng.next() % 2_000_001) as f64 / 99_991.0 - 10.0 + 1e-9).to_ne_bytes()).collect(),
        _ => rng.bytes((n * red.width as u64 / 8) as usize),
    }
}

/// The binomial reduce to rank 0: `T(v) = ((x_v op T(v+1)) op T(v+2)) op T(v+4) ...`.
fn binomial(red: Reduction, xs: &[Vec<u8>], v: usize) -> Vec<u8> {
    let limit = if v == 0 { usize::MAX } else { 1 << v.trailing_zeros() };
    let mut acc = xs[v].clone();
    let mut m = 1;
    while m < limit && v + m < xs.len() {
        acc = kernel(red, &acc, &binomial(red, xs, v + m));
        m <<= 1;
    }
    acc
}

fn reduce_scatter_case(alg: Algorithm, red: Reduction, cs: &[u64], in_place: bool, seed: u64) {
    let p = cs.len();
    let esz = red.width as u64 / 8;
    let n: u64 = cs.iter().sum();
    let largest = cs.iter().copied().max().unwrap_or(0);
    let ctx = format!("reduce_scatter {} {red:?} counts={cs:?} in_place={in_place} seed={seed}", describe(Coll::ReduceScatter, alg));
    let (sbuf, rbuf, len) = if in_place { (BASE, BASE, BASE + n * esz + GUARD) } else { (BASE, BASE + n * esz + GUARD, BASE + (n + largest) * esz + 2 * GUARD) };
    let mut mem = memories(p as u32, len, seed);
    let mut rng = Rng::new(seed ^ n << 4);
    let xs: Vec<Vec<u8>> = (0..p).map(|_| elements(red, n, &mut rng)).collect();
    for (m, x) in mem.iter_mut().zip(&xs) {
        put(m, sbuf, x);
    }
    let mut want = mem.clone();
    let resolved = if alg == Algorithm::Auto { auto_v(Coll::ReduceScatter, p as u32, n * esz, largest * esz) } else { alg };
    let whole = if resolved == Algorithm::Ring || p == 1 { None } else { Some(binomial(red, &xs, 0)) };
    let mut off = 0u64;
    for (b, &c) in cs.iter().enumerate() {
        let (lo, hi) = ((off * esz) as usize, ((off + c) * esz) as usize);
        let block = match &whole {
            Some(w) => w[lo..hi].to_vec(),
            // The ring: the left fold over ranks b+1, b+2, ..., b.
            None => (2..=p).fold(xs[(b + 1) % p][lo..hi].to_vec(), |acc, k| kernel(red, &acc, &xs[(b + k) % p][lo..hi])),
        };
        put(&mut want[b], rbuf, &block);
        off += c;
    }
    run(&ctx, p as u32, seed, &mut mem, &|g, grp| reduce_scatter(g, grp, place(), sbuf, rbuf, cs, red, alg));
    compare(&ctx, &mem, &want);
}

#[test]
fn reduce_scatter_every_algorithm() {
    sweep("reduce_scatter", &mut |p, pattern, max, seed| {
        let mut rng = Rng::new(seed ^ (p as u64) << 8 ^ max << 16);
        // Elements: a quarter of the byte maxima, so 70 KiB stays 70 KiB of f32.
        let cs = counts(pattern, p, max.div_ceil(4), &mut rng);
        for (i, red) in REDUCTIONS.into_iter().enumerate() {
            if max > 4 * KIB && i > 0 {
                continue;
            }
            for in_place in [false, true] {
                for alg in with_auto(Coll::ReduceScatter) {
                    reduce_scatter_case(alg, red, &cs, in_place, seed + i as u64);
                }
            }
        }
    });
}

#[test]
fn every_v_collective_on_larger_groups() {
    // Deeper trees, wrap-around at every root; AUTO takes the binomial trees here.
    for p in [12u32, 16, 17, 33] {
        let seed = p as u64;
        let mut rng = Rng::new(seed);
        for pattern in [Pattern::Random, Pattern::OneHoldsAll] {
            let cs = counts(pattern, p, 50, &mut rng);
            let (ds, extent) = displs(&cs, false, &mut rng);
            for root in roots(p) {
                for coll in [Coll::Gatherv, Coll::Scatterv] {
                    for alg in with_auto(coll) {
                        rooted_case(coll, alg, &cs, &ds, extent, root, root == 0, true, seed);
                    }
                }
            }
            for alg in with_auto(Coll::Allgatherv) {
                allgatherv_case(alg, &cs, &ds, extent, false, seed);
            }
            let m: Vec<Vec<u64>> = (0..p).map(|_| counts(pattern, p, 20, &mut rng)).collect();
            for alg in with_auto(Coll::Alltoallv) {
                alltoallv_case(alg, &m, false, seed);
            }
            for alg in with_auto(Coll::ReduceScatter) {
                reduce_scatter_case(alg, REDUCTIONS[2], &cs, false, seed);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Choices and errors

#[test]
fn auto_v_chooses_by_total_and_group_size() {
    use Algorithm::*;
    assert_eq!(auto_v(Coll::Allgatherv, 4, 1 << 20, 1 << 18), Linear);
    assert_eq!(auto_v(Coll::Allgatherv, 16, 1 << 20, 1 << 16), Ring);
    assert_eq!(auto_v(Coll::Allgatherv, 16, 1000, 100), Linear);
    assert_eq!(auto_v(Coll::Alltoallv, 16, 16 * 1024, 1024), LinearSync);
    assert_eq!(auto_v(Coll::Alltoallv, 4, 1 << 20, 1 << 18), Linear);
    assert_eq!(auto_v(Coll::Gatherv, 16, 16 * 100, 100), Binomial);
    assert_eq!(auto_v(Coll::Gatherv, 4, 400, 100), Linear);
    assert_eq!(auto_v(Coll::Scatterv, 16, 16 * 100, 100), Binomial);
    // Balanced and long: the ring; one rank holding all: reduce + scatterv.
    assert_eq!(auto_v(Coll::ReduceScatter, 8, 1 << 20, 1 << 17), Ring);
    assert_eq!(auto_v(Coll::ReduceScatter, 8, 1 << 20, 1 << 20), Linear);
    assert_eq!(auto_v(Coll::ReduceScatter, 8, 1 << 10, 1 << 7), Linear);
    for coll in [Coll::Gatherv, Coll::Scatterv, Coll::Allgatherv, Coll::Alltoallv, Coll::ReduceScatter] {
        for p in [1, 2, 3, 9, 11, 64, 1000] {
            for total in [0, 1, 1000, 100_000, 1 << 30] {
                let a = auto_v(coll, p, total, total);
                assert!(algorithms(coll).contains(&a), "{} p={p} total={total}: {a:?}", coll.name());
            }
        }
    }
}

#[test]
fn bad_layouts_are_refused_with_what_is_wrong() {
    let grp = Group { rank: 1, size: 3 };
    let root = Group { rank: 0, size: 3 };
    let red = Reduction { op: goal_sched::Op::Builtin(ReduceOp::Add), dt: DataType::SInt, width: 32 };
    let bad = |r: Result<Piece, CollError>, needle: &str| {
        let e = r.unwrap_err();
        assert!(e.to_string().contains(needle), "{e} lacks {needle}");
    };
    let mut g = Graph::new();
    bad(allgatherv(&mut g, grp, place(), 0, 8, 64, &[8, 8], &[0, 8], Algorithm::Auto), "rcounts has 2 entries for a group of 3 ranks");
    bad(allgatherv(&mut g, grp, place(), 0, 8, 64, &[8, 8, 8], &[0, 4, 16], Algorithm::Ring), "the blocks of ranks 0");
    bad(allgatherv(&mut g, grp, place(), 0, 8, 64, &[8, 8, 8], &[0, 8, u32::MAX as u64], Algorithm::Ring), "past 4 GiB - 1");
    bad(allgatherv(&mut g, grp, place(), 0, 7, 64, &[8, 8, 8], &[0, 8, 16], Algorithm::Ring), "scount 7 differs from rcounts[1] = 8");
    bad(gatherv(&mut g, grp, place(), 0, 8, 64, &[], &[], 0, Algorithm::Binomial), "GOAL_ALG_BINOMIAL needs rcounts on every rank");
    bad(gatherv(&mut g, grp, place(), 0, 8, 64, &[], &[], 0, Algorithm::Auto), "GOAL_ALG_AUTO needs rcounts on every rank");
    bad(gatherv(&mut g, root, place(), 0, 8, 64, &[], &[], 0, Algorithm::Linear), "rcounts has 0 entries");
    bad(gatherv(&mut g, root, place(), 0, 8, 64, &[8, 8, 8], &[0, 8], 0, Algorithm::Linear), "rdispls has 2 entries");
    bad(scatterv(&mut g, grp, place(), 0, &[], &[], 64, 8, 0, Algorithm::Ring), "GOAL_ALG_RING does not apply to scatterv");
    bad(alltoallv(&mut g, grp, place(), 0, &[1, 2, 3], &[0, 0, 0], 64, &[1, 3, 3], &[0, 1, 4], Algorithm::Auto), "scounts[1] = 2 differs from rcounts[1] = 3");
    bad(reduce_scatter(&mut g, grp, place(), 0, 64, &[1 << 30, 1 << 30, 0], red, Algorithm::Auto), "more than 4 GiB - 1");
    bad(reduce_scatter(&mut g, grp, place(), 0, 64, &[1, 2], red, Algorithm::Auto), "rcounts has 2 entries");
    bad(scatterv(&mut g, grp, place(), 0, &[], &[], 64, 1 << 32, 0, Algorithm::Linear), "rcount 4294967296 is larger than 4 GiB - 1");
    // Linear needs no counts off the root, as in MPI; scatterv's blocks may overlap.
    assert!(gatherv(&mut g, grp, place(), 0, 8, 64, &[], &[], 0, Algorithm::Linear).is_ok());
    assert!(scatterv(&mut g, root, place(), 0, &[8, 8, 8], &[0, 4, 0], 64, 8, 0, Algorithm::Linear).is_ok());
}
