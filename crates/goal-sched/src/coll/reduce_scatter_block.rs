//! Reduce_scatter_block: every rank contributes `size * count` elements at
//! `sbuf`; rank `r` receives block `r` (`count` elements) of their
//! element-wise reduction in `rbuf`. In place (`sbuf == rbuf`) `rbuf` holds
//! the input and the result goes to its start.

use super::butterfly::{at, fold_in, recursive_halving};
use super::reduce_scatter::{ring, Blocks};
use super::{check_total, resolve_for, scr, user, Algorithm, Builder, Coll, CollError, Fold, Group, Piece, Placement, Reduction};
use crate::graph::{Buf, Graph, VertexId};

/// Appends a reduce_scatter_block of `count` elements per rank.
///
/// Algorithms: linear, recursive halving ([`Algorithm::RecursiveDoubling`]), ring.
///
/// Order of operations (see [`allreduce()`](super::allreduce()) for the terms): recursive
/// halving computes every block as Rabenseifner's allreduce does (the
/// fold, then butterfly steps `d = p2/2, ..., 1`); the ring computes block
/// `b` as the left fold over ranks `b+1, b+2, ..., b` (mod size); linear
/// computes it as the left fold in rank order, `((x_0 op x_1) op ...) op
/// x_(size-1)`, the only one of the three for an operator that does not
/// commute.
pub fn reduce_scatter_block(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    rbuf: u64,
    count: u64,
    red: Reduction,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let esz = red.check()?;
    let alg = resolve_for(Coll::ReduceScatterBlock, alg, grp.size, count.saturating_mul(esz), &red)?;
    check_total("the reduction vector", count.saturating_mul(grp.size as u64), esz)?;
    let mut b = Builder::new(g, grp, at)?;
    let input = user(sbuf);
    if count > 0 {
        if grp.size == 1 {
            if sbuf != rbuf {
                b.copy(input, user(rbuf), count * esz, &[]);
            }
        } else if alg == Algorithm::Ring {
            // The ring of reduce_scatter, with equal blocks.
            let blocks = Blocks::new(&vec![count; grp.size as usize]);
            ring(&mut b, &red, esz, &blocks, input, user(rbuf), sbuf == rbuf);
        } else if alg == Algorithm::Linear {
            linear(&mut b, &red, esz, count, input, user(rbuf), sbuf == rbuf);
        } else {
            recursive_halving_rs(&mut b, &red, esz, count, input, user(rbuf));
        }
    }
    Ok(b.finish())
}

/// Linear: every rank sends block `j` of its input straight to rank `j`
/// (all at once, each into a receive slot of its own), and combines the
/// blocks it receives with its own in rank order into `rbuf`: `rbuf = x_0
/// op x_1`, then `rbuf = rbuf op x_j` for `j = 2, ..., size - 1`. Each rank
/// sends and receives `size - 1` blocks, as the ring does, in one round
/// instead of `size - 1`, and needs `size - 1` blocks of scratchpad.
///
/// Order of operations: block `b` is `((x_0 op x_1) op ...) op x_(size-1)`
/// in rank order, computed on rank `b`.
fn linear(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf, in_place: bool) {
    let (p, r) = (b.size, b.rank);
    let block = n * esz;
    let mut sends: Vec<Option<VertexId>> = vec![None; p as usize];
    for j in (0..p).filter(|&j| j != r) {
        sends[j as usize] = Some(b.send(at(input, j as u64 * n, esz), block, j, 0, &[]));
    }
    // Rank j's block `r`, and what reading it waits for.
    let operand = |b: &mut Builder, j: u32| -> (Buf, Vec<VertexId>) {
        if j == r {
            return (at(input, r as u64 * n, esz), vec![]);
        }
        let slot = scr(b.scratch(block));
        (slot, vec![b.recv(slot, block, j, 0, &[])])
    };
    let (x0, mut after) = operand(b, 0);
    let (x1, got) = operand(b, 1);
    after.extend(got);
    // In place, `rbuf` is input block 0, which goes to rank 0 first.
    if in_place {
        after.extend(sends[0]);
    }
    let mut last = b.combine(red, n, x0, x1, rbuf, &after);
    for j in 2..p {
        let (xj, mut after) = operand(b, j);
        after.push(last);
        last = b.combine(red, n, rbuf, xj, rbuf, &after);
    }
}

/// Recursive halving, for short to medium blocks.
///
/// The group is folded onto the largest power of two `p2` ([`fold_in`]);
/// virtual rank `v` then stands for the blocks of the one or two ranks it
/// folded (its *unit*, contiguous in the vector). Recursive halving
/// ([`recursive_halving`]) over these units leaves unit `v` reduced on
/// virtual rank `v`, in a scratchpad *accumulator*; it copies its own block
/// to `rbuf` and sends its partner's block (if it has one) to the partner.
///
/// Order of operations: as Rabenseifner's allreduce: pairs `x_2i op
/// x_2i+1`, then for `d = p2/2, ..., 2, 1`: `y_v, y_(v^d) <- y_lower op
/// y_higher`.
fn recursive_halving_rs(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf) {
    const FOLD_IN: u32 = 0;
    const FOLD_OUT: u32 = 1;
    const HALVING: u32 = 2; // + step
    let (p, r) = (b.size, b.rank);
    let fold = Fold::new(p);
    let block = n * esz;
    let acc = scr(b.scratch(p as u64 * block));
    let f = fold_in(b, fold, red, esz, p as u64 * n, input, acc, FOLD_IN);
    let Some(v) = f.v else {
        b.recv(rbuf, block, r + 1, FOLD_OUT, &f.ops);
        return;
    };
    let mut units: Vec<u64> = (0..fold.p2).map(|u| fold.ranks_of(u).0 as u64 * n).collect();
    units.push(p as u64 * n);
    let h = recursive_halving(b, fold, v, &units, red, esz, f.cur, acc, f.ready, HALVING);
    let mut all = f.ops;
    all.extend(&h.ops);
    let halved = b.join(&all);
    b.copy(at(h.result, r as u64 * n, esz), rbuf, block, &halved);
    if v < fold.extras {
        b.send(at(h.result, (r - 1) as u64 * n, esz), block, r - 1, FOLD_OUT, &h.ready);
    }
}
