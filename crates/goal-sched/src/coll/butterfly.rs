//! The pieces the reductions share: folding a group onto a power of two,
//! and reduce-scatter by recursive halving.
//!
//! Vectors are counted in elements of `esz` bytes; a `Buf` names the start
//! of a whole vector (user memory or scratchpad), and `at(buf, e)` the
//! element `e` in it.

use super::{scr, Builder, Fold, Reduction};
use crate::graph::{Buf, VertexId};

/// Element `e` of the vector at `base`.
pub(crate) fn at(base: Buf, e: u64, esz: u64) -> Buf {
    Buf { mem: base.mem, addr: base.addr + e * esz }
}

/// How one rank comes out of [`fold_in`].
pub(crate) struct Folded {
    /// The rank's virtual rank, `None` if it handed its vector away.
    pub v: Option<u32>,
    /// Where the rank's (possibly combined) vector is now.
    pub cur: Buf,
    /// What a reader of `cur` must wait for.
    pub ready: Vec<VertexId>,
    /// Every operation of the fold on this rank, a receive represented by
    /// the combine that waits for it: with no other dependent, a receive
    /// can be reduced as it arrives (the runtime's fusion).
    pub ops: Vec<VertexId>,
}

/// Folds the group onto the largest power of two (see [`Fold`]): each even
/// rank among the first `2 * extras` sends its vector (`n` elements at
/// `input`) to the odd rank after it, which combines `acc = received op
/// own` (the even rank is the lower one) and carries on as virtual rank
/// `rank / 2`.
pub(crate) fn fold_in(b: &mut Builder, fold: Fold, red: &Reduction, esz: u64, n: u64, input: Buf, acc: Buf, tag: u32) -> Folded {
    let r = b.rank;
    match fold.virt(r) {
        None => {
            let handed = b.send(input, n * esz, r + 1, tag, &[]);
            Folded { v: None, cur: input, ready: vec![], ops: vec![handed] }
        }
        Some(v) if v < fold.extras => {
            let lower = scr(b.scratch(n * esz));
            let got = b.recv(lower, n * esz, r - 1, tag, &[]);
            let sum = b.combine(red, n, lower, input, acc, &[got]);
            Folded { v: Some(v), cur: acc, ready: vec![sum], ops: vec![sum] }
        }
        Some(v) => Folded { v: Some(v), cur: input, ready: vec![], ops: vec![] },
    }
}

/// How one virtual rank comes out of [`recursive_halving`].
pub(crate) struct Halved {
    /// The vector holding this virtual rank's reduced unit (`acc`, or
    /// `cur` when there was no step).
    pub result: Buf,
    /// What a reader of the reduced unit must wait for.
    pub ready: Vec<VertexId>,
    /// Every operation of the halving on this rank (receives represented
    /// by their combines, as in [`Folded::ops`]).
    pub ops: Vec<VertexId>,
}

/// Reduce-scatter by recursive halving over the `p2` virtual ranks of `fold`.
///
/// The vector is cut into `p2` *units*; unit `u` is elements `units[u] ..
/// units[u + 1]`. Every virtual rank starts with its whole vector at `cur`
/// and a *range* of all units. In step `s` (distance `d = p2 / 2^(s+1)`,
/// halving) virtual rank `v` and its partner `v ^ d` split their range: the
/// *lower* one (`v & d == 0`) keeps the lower half, the other the upper
/// half; each sends the half it gives away and receives the partner's part
/// of the half it keeps into a fresh buffer, then combines
/// `acc[kept] = lower's part op higher's part`. After `log2(p2)` steps
/// virtual rank `v` holds unit `v`, reduced over the whole group, at
/// `acc[units[v] ..]`. Every step sends half as much as the one before, so
/// a rank sends less than one vector in total.
///
/// The order of operations is the same for every element: with `y` the
/// values after the fold, step `d` replaces `y[v]` and `y[v ^ d]` by
/// `y[lower] op y[higher]`, for `d = p2/2, p2/4, ..., 1`.
pub(crate) fn recursive_halving(
    b: &mut Builder,
    fold: Fold,
    v: u32,
    units: &[u64],
    red: &Reduction,
    esz: u64,
    cur: Buf,
    acc: Buf,
    ready: Vec<VertexId>,
    tag: u32,
) -> Halved {
    let (mut lo, mut hi) = (0u32, fold.p2);
    let mut prev = ready;
    let mut ops = Vec::new();
    let mut src = cur;
    let mut s = 0u32;
    let mut d = fold.p2 / 2;
    while d >= 1 {
        let mid = lo + d;
        let lower = v & d == 0;
        let (keep, give) = if lower { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
        let partner = fold.rank_of(v ^ d);
        let (ks, kn) = (units[keep.0 as usize], units[keep.1 as usize] - units[keep.0 as usize]);
        let (gs, gn) = (units[give.0 as usize], units[give.1 as usize] - units[give.0 as usize]);
        let sent = b.send(at(src, gs, esz), gn * esz, partner, tag + s, &prev);
        let theirs = scr(b.scratch(kn * esz));
        let got = b.recv(theirs, kn * esz, partner, tag + s, &[]);
        let mut after = vec![got];
        after.extend(&prev);
        let (x, y) = if lower { (at(src, ks, esz), theirs) } else { (theirs, at(src, ks, esz)) };
        let sum = b.combine(red, kn, x, y, at(acc, ks, esz), &after);
        ops.extend([sent, sum]);
        prev = vec![sum];
        (lo, hi) = keep;
        src = acc;
        s += 1;
        d /= 2;
    }
    Halved { result: src, ready: prev, ops }
}

/// Unit boundaries for `n` elements split evenly into `parts` units
/// (`parts + 1` offsets).
pub(crate) fn even_units(n: u64, parts: u32) -> Vec<u64> {
    let mut u: Vec<u64> = (0..parts).map(|i| super::split(n, parts, i).0).collect();
    u.push(n);
    u
}
