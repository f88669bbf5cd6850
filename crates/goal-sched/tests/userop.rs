//! User operators in the reducing collectives, through the simulator.
//!
//! The operator is not commutative: the Heisenberg group's product on
//! 12-byte opaque elements (upper unitriangular 3x3 matrices of wrapping
//! u32, `(a, b, c)`), whose `c` part shows any swap of two operands. Each
//! case fills every rank's memory with random bytes, builds the collective,
//! simulates it with random timing and compares all of every rank's memory
//! with the sequential model `x_0 op x_1 op ... op x_(size-1)`, for every
//! algorithm that keeps rank order, group sizes 1 to 9, every root, in place
//! and not. A commutative user operator goes through every algorithm; one
//! that does not is refused by the others with a message that says why.

use goal_sched::coll::{
    algorithms, allreduce, keeps_order, reduce, reduce_scatter_block, Algorithm, Coll, CollError, Group, Piece, Placement, Reduction,
};
use goal_sched::sim::{simulate_user, SendMode, SimOptions};
use goal_sched::{DataType, Graph, Op, UserOp};

/// The non-commutative operator, on opaque elements.
const HEIS: UserOp = UserOp { id: 7, commutative: false };
/// A commutative one (wrapping u32 addition), on a built-in type.
const SUM: UserOp = UserOp { id: 8, commutative: true };

fn words(x: &[u8]) -> Vec<u32> {
    x.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// `inout = input op inout` for `count` elements.
fn apply(op: UserOp, input: &[u8], inout: &mut [u8], count: usize) {
    let (x, y) = (words(input), words(inout));
    let z: Vec<u32> = if op == HEIS {
        assert_eq!(x.len(), 3 * count, "count is a number of 12-byte elements");
        (0..count)
            .flat_map(|i| {
                let (a, b) = (&x[3 * i..3 * i + 3], &y[3 * i..3 * i + 3]);
                [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1]), a[2].wrapping_add(b[2]).wrapping_add(a[0].wrapping_mul(b[1]))]
            })
            .collect()
    } else {
        assert_eq!(x.len(), count);
        x.iter().zip(&y).map(|(a, b)| a.wrapping_add(*b)).collect()
    };
    inout.copy_from_slice(&z.iter().flat_map(|w| w.to_ne_bytes()).collect::<Vec<u8>>());
}

fn reduction(op: UserOp) -> Reduction {
    if op == HEIS {
        Reduction::new(Op::User(op), DataType::Bytes, 96)
    } else {
        Reduction::new(Op::User(op), DataType::UInt, 32)
    }
}

fn rng_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

/// One case; `coll` with `alg` on `p` ranks, `n` elements (per rank for
/// reduce_scatter_block).
#[allow(clippy::too_many_arguments)]
fn case(coll: Coll, alg: Algorithm, op: UserOp, p: u32, n: u64, root: u32, in_place: bool, seed: u64) {
    let red = reduction(op);
    let esz = red.width as u64 / 8;
    let ctx = format!("{coll:?} {alg:?} {op:?} p={p} n={n} root={root} in_place={in_place} seed={seed}");
    let in_elems = if coll == Coll::ReduceScatterBlock { p as u64 * n } else { n };
    let (sbuf, rbuf) = (64u64, if in_place { 64 } else { 128 + in_elems * esz });
    let len = (rbuf + in_elems * esz + 64) as usize;
    let mut mem: Vec<Vec<u8>> = (0..p).map(|r| rng_bytes(seed * 131 + r as u64 + 1, len)).collect();
    let xs: Vec<Vec<u8>> = mem.iter().map(|m| m[sbuf as usize..(sbuf + in_elems * esz) as usize].to_vec()).collect();
    // The sequential model: a left fold in rank order.
    let mut result = xs[0].clone();
    for x in &xs[1..] {
        let mut acc = x.clone();
        apply(op, &result, &mut acc, in_elems as usize);
        result = acc;
    }
    let mut want = mem.clone();
    let put = |w: &mut Vec<u8>, data: &[u8]| w[rbuf as usize..rbuf as usize + data.len()].copy_from_slice(data);
    match coll {
        Coll::Reduce => put(&mut want[root as usize], &result),
        Coll::Allreduce => want.iter_mut().for_each(|w| put(w, &result)),
        _ => want.iter_mut().enumerate().for_each(|(r, w)| put(w, &result[(r as u64 * n * esz) as usize..((r as u64 + 1) * n * esz) as usize])),
    }
    let graphs: Vec<Graph> = (0..p)
        .map(|rank| {
            let mut g = Graph::new();
            let (grp, at) = (Group { rank, size: p }, Placement { tag_base: 0 });
            let built: Result<Piece, CollError> = match coll {
                Coll::Reduce => reduce(&mut g, grp, at, sbuf, rbuf, n, red, root, alg),
                Coll::Allreduce => allreduce(&mut g, grp, at, sbuf, rbuf, n, red, alg),
                _ => reduce_scatter_block(&mut g, grp, at, sbuf, rbuf, n, red, alg),
            };
            built.unwrap_or_else(|e| panic!("{ctx}: {e}"));
            g
        })
        .collect();
    let sends = [SendMode::Random, SendMode::Eager, SendMode::Rendezvous][(seed % 3) as usize];
    let opts = SimOptions { seed, sends, ..Default::default() };
    simulate_user(&graphs, &mut mem, &opts, &|u, i, io, c| apply(u, i, io, c)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    for r in 0..p as usize {
        assert!(mem[r] == want[r], "{ctx}: rank {r} differs from the sequential model");
    }
}

const REDUCING: [Coll; 3] = [Coll::Reduce, Coll::Allreduce, Coll::ReduceScatterBlock];

#[test]
fn a_non_commutative_operator_reduces_in_rank_order() {
    for coll in REDUCING {
        let ordered: Vec<Algorithm> = algorithms(coll).iter().copied().filter(|&a| keeps_order(coll, a)).collect();
        assert!(!ordered.is_empty(), "{coll:?} has an algorithm for a non-commutative operator");
        for alg in std::iter::once(Algorithm::Auto).chain(ordered) {
            for p in 1..=9u32 {
                let roots: Vec<u32> = if coll == Coll::Reduce { (0..p).collect() } else { vec![0] };
                for root in roots {
                    for (n, in_place) in [(1, false), (5, true), (37, false)] {
                        case(coll, alg, HEIS, p, n, root, in_place, p as u64 * 10 + root as u64 + n);
                    }
                }
            }
        }
    }
}

#[test]
fn a_commutative_user_operator_takes_every_algorithm() {
    for coll in REDUCING {
        for &alg in std::iter::once(&Algorithm::Auto).chain(algorithms(coll)) {
            for p in [1, 2, 3, 5, 8, 9] {
                for (n, in_place) in [(1, true), (19, false), (300, true)] {
                    case(coll, alg, SUM, p, n, p / 2, in_place, p as u64 + n);
                }
            }
        }
    }
}

#[test]
fn algorithms_that_reorder_are_refused_for_a_non_commutative_operator() {
    let red = reduction(HEIS);
    for coll in REDUCING {
        for &alg in algorithms(coll).iter().filter(|&&a| !keeps_order(coll, a)) {
            let mut g = Graph::new();
            let (grp, at) = (Group { rank: 0, size: 4 }, Placement { tag_base: 0 });
            let e = match coll {
                Coll::Reduce => reduce(&mut g, grp, at, 0, 64, 1, red, 0, alg),
                Coll::Allreduce => allreduce(&mut g, grp, at, 0, 64, 1, red, alg),
                _ => reduce_scatter_block(&mut g, grp, at, 0, 64, 1, red, alg),
            }
            .unwrap_err();
            let CollError::Unsupported(m) = e else { panic!("{coll:?} {alg:?}: {e:?}") };
            assert!(m.contains(alg.c_name()) && m.contains("does not commute") && m.contains("rank order"), "{m}");
        }
    }
    // A single rank has nothing to reorder: any algorithm is fine there.
    let mut g = Graph::new();
    allreduce(&mut g, Group { rank: 0, size: 1 }, Placement { tag_base: 0 }, 0, 64, 1, red, Algorithm::Ring).unwrap();
}

#[test]
fn opaque_elements_take_only_user_operators_and_copy() {
    let bytes = |op: i64| Reduction::from_raw(op, DataType::Bytes as i64, 96);
    assert_eq!(bytes(HEIS.raw()).map(|r| r.op), Ok(Op::User(HEIS)));
    for op in [0, 2, 5, 7] {
        let e = bytes(op).unwrap_err();
        assert!(e.to_string().contains("GOAL_BYTES"), "{e}");
    }
    assert!(Reduction::from_raw(SUM.raw(), DataType::Bytes as i64, 12).is_err(), "12 bits is not a whole number of bytes");
    assert!(Reduction::from_raw(SUM.raw(), DataType::Float as i64, 64).is_ok(), "a user operator takes the built-in types");
}
