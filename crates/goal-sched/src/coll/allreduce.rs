//! Allreduce: `rbuf` on every rank receives the element-wise reduction of
//! every rank's `count` elements at `sbuf`. In place (`sbuf == rbuf`) the
//! input is in `rbuf`.

use super::butterfly::{at, even_units, fold_in, recursive_halving};
use super::{
    check_total, resolve_for, scr, split, user, Algorithm, Builder, Coll, CollError, Fold, Group, Piece, Placement, Reduction, TAG_SPAN,
};
use crate::graph::{Buf, Graph, VertexId};

/// Appends an allreduce of `count` elements.
///
/// Algorithms: recursive doubling, ring, Rabenseifner.
///
/// # Bit-identical results
///
/// Every algorithm gives *exactly* the same bits on every rank, floats
/// included, because each element of the result is computed by one fixed
/// expression of the inputs, evaluated the same way wherever it is
/// evaluated:
///
/// * recursive doubling: the two partners of a step combine the same two
///   operands in the same order (the lower virtual rank's first), so they
///   end the step with the same bits, and by induction all ranks do; the
///   ranks folded away receive a copy;
/// * ring and Rabenseifner: each block is reduced once, on one rank, and
///   then only copied to the others.
///
/// # Order of operations
///
/// With `x_i` rank `i`'s input, `p2` the largest power of two not above
/// the size, and `e = size - p2`, the *fold* is `y_v = x_2v op x_2v+1` for
/// `v < e` and `y_v = x_(v+e)` for the others (`v < p2`). A *butterfly
/// step* of distance `d` replaces `y_v` and `y_(v^d)` by `y_lower op
/// y_higher`.
///
/// * recursive doubling: the fold, then butterfly steps `d = 1, 2, ...,
///   p2/2`; the result is `y_0`;
/// * Rabenseifner: the fold, then butterfly steps `d = p2/2, ..., 2, 1`;
/// * ring: block `b` (of `size` blocks, the first `count % size` one
///   element longer) is the left fold `(((x_(b+1) op x_(b+2)) op ...) op
///   x_(b-1)) op x_b`, indices mod size.
///
/// Different algorithms (or group sizes) may differ in the last bits of a
/// float; one algorithm on one group size always gives the same result.
pub fn allreduce(
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
    let alg = resolve_for(Coll::Allreduce, alg, grp.size, count.saturating_mul(esz), &red)?;
    check_total("the reduction vector", count, esz)?;
    let mut b = Builder::new(g, grp, at)?;
    let input = user(sbuf);
    if count > 0 {
        if grp.size == 1 {
            if sbuf != rbuf {
                b.copy(input, user(rbuf), count * esz, &[]);
            }
        } else {
            match alg {
                Algorithm::RecursiveDoubling => recursive_doubling(&mut b, &red, esz, count, input, user(rbuf)),
                Algorithm::Ring => ring(&mut b, &red, esz, count, input, user(rbuf)),
                _ => rabenseifner(&mut b, &red, esz, count, input, user(rbuf)),
            }
        }
    }
    Ok(b.finish())
}

const FOLD_IN: u32 = 0;
const FOLD_OUT: u32 = 1;

/// Hands the result to the rank that folded away (the fold's last step).
fn fold_out(b: &mut Builder, fold: Fold, v: Option<u32>, bytes: u64, rbuf: Buf, handed: &[VertexId], result: &[VertexId]) {
    let r = b.rank;
    match v {
        None => {
            b.recv(rbuf, bytes, r + 1, FOLD_OUT, handed);
        }
        Some(v) if v < fold.extras => {
            let all = b.join(result);
            b.send(rbuf, bytes, r - 1, FOLD_OUT, &all);
        }
        Some(_) => {}
    }
}

/// Recursive doubling, for short vectors: `log2(size)` steps (two more if
/// the size is not a power of two), each moving the whole vector.
///
/// The group is folded onto the largest power of two `p2` ([`fold_in`]);
/// then in step `k` (distance `d = 2^k`) virtual rank `v` swaps its whole
/// partial vector with `v ^ d` and both compute `rbuf = lower's op
/// higher's`. The received vectors alternate between two buffers so a
/// receive can be posted one step ahead. Finally the odd ranks of the fold
/// send the result to their even partners.
///
/// Order of operations: `y_i = x_2i op x_2i+1` for the folded pairs, the
/// other ranks as they are; then for `d = 1, 2, ..., p2/2`: `y_v, y_(v^d) <-
/// y_lower op y_higher`.
fn recursive_doubling(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf) {
    const STEP: u32 = 2; // + step, < 32 steps
    let fold = Fold::new(b.size);
    let bytes = n * esz;
    let f = fold_in(b, fold, red, esz, n, input, rbuf, FOLD_IN);
    let Some(v) = f.v else {
        fold_out(b, fold, None, bytes, rbuf, &f.ops, &[]);
        return;
    };
    let incoming = [scr(b.scratch(bytes)), scr(b.scratch(bytes))];
    let mut src = f.cur;
    let mut prev = f.ready.clone();
    let mut sums: Vec<VertexId> = Vec::new();
    let (mut d, mut k) = (1u32, 0u32);
    while d < fold.p2 {
        let partner = fold.rank_of(v ^ d);
        let sent = b.send(src, bytes, partner, STEP + k, &prev);
        // The buffer was last read by the combine two steps back.
        let reuse: Vec<VertexId> = if k >= 2 { vec![sums[k as usize - 2]] } else { vec![] };
        let theirs = incoming[(k % 2) as usize];
        let got = b.recv(theirs, bytes, partner, STEP + k, &reuse);
        let (x, y) = if v & d == 0 { (src, theirs) } else { (theirs, src) };
        let mut after = vec![got, sent];
        after.extend(&prev);
        let sum = b.combine(red, n, x, y, rbuf, &after);
        sums.push(sum);
        prev = vec![sum];
        src = rbuf;
        d <<= 1;
        k += 1;
    }
    fold_out(b, fold, Some(v), bytes, rbuf, &[], &prev);
}

/// Ring, for long vectors: a ring reduce-scatter, then a ring allgather;
/// each rank sends about two vectors in total whatever the group size.
///
/// The vector is cut into `size` *blocks* (the first `count % size` one
/// element longer). *Reduce-scatter*: in step `k` (`0 .. size-1`) rank `r`
/// sends its partial of block `(r - k - 1) mod size` to its *next* `r + 1`
/// and receives the partial of block `(r - k - 2) mod size` from its
/// *previous* `r - 1`, and combines `rbuf[block] = received op own`; the
/// partial it sends in step `k > 0` is the one it computed in step `k - 1`.
/// After `size - 1` steps rank `r` holds block `r` fully reduced.
/// *Allgather*: the ring again, now passing the reduced blocks along.
///
/// Order of operations: block `b` is the left fold over the ranks in ring
/// order starting after it, `(((x_(b+1) op x_(b+2)) op ...) op x_(b-1)) op
/// x_b` (indices mod size), computed on rank `b` alone.
fn ring(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf) {
    const SCATTER: u32 = 2; // + step mod 2047
    const GATHER: u32 = 2049; // + step mod 2047
    let (p, r) = (b.size, b.rank);
    let (next, prev_rank) = ((r + 1) % p, (r + p - 1) % p);
    let block = |i: u32| split(n, p, i);
    let largest = block(0).1;
    let incoming = [scr(b.scratch(largest * esz)), scr(b.scratch(largest * esz))];
    let mut all: Vec<VertexId> = Vec::new();
    let mut sums: Vec<VertexId> = Vec::new();
    for k in 0..p - 1 {
        let tag = SCATTER + k % 2047;
        let (out, inc) = ((r + 2 * p - k - 1) % p, (r + 2 * p - k - 2) % p);
        let (o, on) = block(out);
        let sent = if k == 0 {
            b.send(at(input, o, esz), on * esz, next, tag, &[])
        } else {
            b.send(at(rbuf, o, esz), on * esz, next, tag, &[sums[k as usize - 1]])
        };
        let reuse: Vec<VertexId> = if k >= 2 { vec![sums[k as usize - 2]] } else { vec![] };
        let theirs = incoming[(k % 2) as usize];
        let (i, len) = block(inc);
        let got = b.recv(theirs, len * esz, prev_rank, tag, &reuse);
        let sum = b.combine(red, len, theirs, at(input, i, esz), at(rbuf, i, esz), &[got]);
        sums.push(sum);
        // The combine, not also its receive: a receive whose only dependent
        // is its combine can be reduced as it arrives (the runtime's fusion).
        all.extend([sent, sum]);
    }
    let reduced = b.join(&all);
    let mut have = reduced.clone();
    for k in 0..p - 1 {
        let tag = GATHER + k % 2047;
        let (out, inc) = ((r + p - k) % p, (r + 2 * p - k - 1) % p);
        let (o, on) = block(out);
        b.send(at(rbuf, o, esz), on * esz, next, tag, &have);
        let (i, len) = block(inc);
        have = vec![b.recv(at(rbuf, i, esz), len * esz, prev_rank, tag, &reduced)];
    }
    debug_assert!(GATHER + 2047 <= TAG_SPAN as u32);
}

/// Rabenseifner, for long vectors on few ranks: reduce-scatter by recursive
/// halving, then allgather by recursive doubling.
///
/// 1. *Fold* onto the largest power of two `p2` ([`fold_in`]).
/// 2. *Recursive halving* ([`recursive_halving`]) over `p2` units: virtual
///    rank `v` ends up with unit `v` reduced, in `rbuf`.
/// 3. *Recursive doubling allgather*: in step `d = 1, 2, ..., p2/2`
///    virtual rank `v` swaps the `d` units of its aligned block `v &
///    !(d-1) ..` (one contiguous range) with `v ^ d`.
/// 4. *Unfold*: odd ranks of the fold send the result to their partners.
///
/// Order of operations: as recursive doubling, but with the distances in
/// the opposite order: pairs `x_2i op x_2i+1`, then for `d = p2/2, ...,
/// 2, 1`: `y_v, y_(v^d) <- y_lower op y_higher`.
fn rabenseifner(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf) {
    const HALVING: u32 = 2; // + step
    const DOUBLING: u32 = 40; // + step
    let fold = Fold::new(b.size);
    let bytes = n * esz;
    let f = fold_in(b, fold, red, esz, n, input, rbuf, FOLD_IN);
    let Some(v) = f.v else {
        fold_out(b, fold, None, bytes, rbuf, &f.ops, &[]);
        return;
    };
    let units = even_units(n, fold.p2);
    let h = recursive_halving(b, fold, v, &units, red, esz, f.cur, rbuf, f.ready, HALVING);
    let mut all = f.ops;
    all.extend(&h.ops);
    let halved = b.join(&all);
    let mut have = h.ready;
    let (mut d, mut s) = (1u32, 0u32);
    while d < fold.p2 {
        let partner = fold.rank_of(v ^ d);
        let mine = v & !(d - 1);
        let (lo, hi) = (units[mine as usize], units[(mine + d) as usize]);
        b.send(at(rbuf, lo, esz), (hi - lo) * esz, partner, DOUBLING + s, &have);
        let theirs = (v ^ d) & !(d - 1);
        let (lo, hi) = (units[theirs as usize], units[(theirs + d) as usize]);
        have.push(b.recv(at(rbuf, lo, esz), (hi - lo) * esz, partner, DOUBLING + s, &halved));
        d <<= 1;
        s += 1;
    }
    fold_out(b, fold, Some(v), bytes, rbuf, &[], &have);
}
