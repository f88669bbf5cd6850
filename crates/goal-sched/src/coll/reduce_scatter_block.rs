//! Reduce_scatter_block: every rank contributes `size * count` elements at
//! `sbuf`; rank `r` receives block `r` (`count` elements) of their
//! element-wise reduction in `rbuf`. In place (`sbuf == rbuf`) `rbuf` holds
//! the input and the result goes to its start.

use super::butterfly::{at, fold_in, recursive_halving};
use super::reduce_scatter::{ring, Blocks};
use super::{check_total, resolve, scr, user, Algorithm, Builder, Coll, CollError, Fold, Group, Piece, Placement, Reduction};
use crate::graph::{Buf, Graph};

/// Appends a reduce_scatter_block of `count` elements per rank.
///
/// Algorithms: recursive halving ([`Algorithm::RecursiveDoubling`]), ring.
///
/// Order of operations (see [`allreduce()`](super::allreduce()) for the terms): recursive
/// halving computes every block as Rabenseifner's allreduce does (the
/// fold, then butterfly steps `d = p2/2, ..., 1`); the ring computes block
/// `b` as the left fold over ranks `b+1, b+2, ..., b` (mod size).
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
    let alg = resolve(Coll::ReduceScatterBlock, alg, grp.size, count.saturating_mul(esz))?;
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
        } else {
            recursive_halving_rs(&mut b, &red, esz, count, input, user(rbuf));
        }
    }
    Ok(b.finish())
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
