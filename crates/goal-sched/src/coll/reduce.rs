//! Reduce: `rbuf` on the root receives the element-wise reduction of every
//! rank's `count` elements at `sbuf`. In place (`sbuf == rbuf` on the root)
//! the root's input is in `rbuf`. `rbuf` of a non-root is never touched.

use super::butterfly::{at, even_units, fold_in, recursive_halving};
use super::{
    check_root, check_total, children, parent, real, resolve_for, scr, user, vrank, Algorithm, Builder, Coll, CollError, Fold, Group, Piece,
    Placement, Reduction,
};
use crate::graph::{Buf, Graph, VertexId};

/// Appends a reduction of `count` elements to `root`.
///
/// Algorithms: linear, binomial tree, Rabenseifner.
///
/// # Order of operations
///
/// The result is a fixed expression of the inputs `x_i` for a given
/// algorithm, group size and root (integers agree across algorithms;
/// floats may differ in the last bits):
///
/// * linear, on relative ranks `v = (i - root) mod size`:
///   `(((x_0 op x_1) op x_2) op ...) op x_(size-1)`;
/// * binomial tree, on relative ranks `v = (i - root) mod size`:
///   `T(v) = (((x_v op T(c1)) op T(c2)) op ...)` over the children `c1 <
///   c2 < ...` of `v` in the in-order binomial tree (`v + 1, v + 2, v + 4,
///   ...` below `v`'s lowest set bit); the result is `T(0)`;
/// * Rabenseifner: as [`allreduce()`](super::allreduce())'s Rabenseifner (the fold, then
///   butterfly steps `d = p2/2, ..., 1`), independent of the root.
///
/// For an operator that does not commute, linear and binomial run on the
/// ranks themselves (`v = i`, rooted at rank 0, which then sends the result
/// to the root: see `in_rank_order`); Rabenseifner is refused.
pub fn reduce(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    rbuf: u64,
    count: u64,
    red: Reduction,
    root: u32,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let esz = red.check()?;
    let alg = resolve_for(Coll::Reduce, alg, grp.size, count.saturating_mul(esz), &red)?;
    check_root(root, grp.size)?;
    check_total("the reduction vector", count, esz)?;
    let mut b = Builder::new(g, grp, at)?;
    let input = user(sbuf);
    if count > 0 {
        if grp.size == 1 {
            if sbuf != rbuf {
                b.copy(input, user(rbuf), count * esz, &[]);
            }
        } else if (alg == Algorithm::Binomial || alg == Algorithm::Linear) && (root == 0 || red.commutative()) {
            tree(&mut b, &red, esz, count, input, user(rbuf), root, alg == Algorithm::Linear);
        } else if alg == Algorithm::Binomial || alg == Algorithm::Linear {
            in_rank_order(&mut b, &red, esz, count, input, rbuf, root, alg == Algorithm::Linear);
        } else {
            rabenseifner(&mut b, &red, esz, count, input, rbuf, root);
        }
    }
    Ok(b.finish())
}

/// Scratchpad for the binomial reduce's receive slots below which every child gets its own.
pub(crate) const SLOT_BUDGET: u64 = 1 << 20;

/// Binomial tree on relative ranks (the mirror image of the binomial
/// broadcast), or with `flat` the linear reduce (Open MPI's basic linear):
/// every other rank is a child of the root and sends its vector there, so
/// no rank waits for another to combine and forward (with more ranks than
/// cores, a rank that has to forward may not be running), and the root
/// combines every vector itself.
///
/// Relative rank `v` receives the partial result of each child's subtree
/// into a receive *slot* and folds them into its *accumulator* nearest
/// child first: `acc = own op child(v+1)`, then `acc = acc op child(v+2)`,
/// `acc op child(v+4)`, ..., so the lower relative ranks are always the
/// first operand. Then it sends `acc` to its parent. The root's
/// accumulator is `rbuf`; leaves send `sbuf` directly. Up to
/// [`SLOT_BUDGET`] of scratchpad every child has its own slot and all
/// receives are posted at once; beyond, two slots take turns (child `j`'s
/// receive waits for the combine of child `j - 2`), so a long vector costs
/// three vectors of scratchpad whatever the group size. A root with one
/// child (2 ranks) that does not reduce in place receives straight into
/// `rbuf` and combines there, `rbuf = sbuf op rbuf`: the combine then
/// reads two vectors instead of three, and the runtime may still combine
/// the message as it comes (see the runtime's receive-reduce fusion).
///
/// Order of operations: `T(v) = (((x_v op T(c1)) op T(c2)) op ...)` over
/// the children `c1 < c2 < ...` of `v`; the result is `T(0)`, in relative
/// rank order starting at the root.
///
/// `rbuf` is where the root's result goes (a user buffer for reduce, the
/// scratchpad for reduce_scatter's reduce + scatterv). Returns the last
/// operation: the root's last combine, another rank's send.
#[allow(clippy::too_many_arguments)] // the reduction's operands, and the tree's shape
pub(crate) fn tree(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: Buf, root: u32, flat: bool) -> VertexId {
    let p = b.size;
    let v = vrank(b.rank, root, p);
    let kids = match (flat, v) {
        (false, _) => children(v, p),
        (true, 0) => (1..p).collect(),
        (true, _) => vec![],
    };
    let up = if flat || v == 0 { 0 } else { parent(v) };
    let bytes = n * esz;
    if kids.is_empty() {
        return b.send(input, bytes, real(up, root, p), 0, &[]);
    }
    let acc = if v == 0 { rbuf } else { scr(b.scratch(bytes)) };
    let slots: Vec<Buf> = if v == 0 && kids.len() == 1 && input != acc {
        vec![acc]
    } else if bytes * kids.len() as u64 <= SLOT_BUDGET {
        kids.iter().map(|_| scr(b.scratch(bytes))).collect()
    } else {
        vec![scr(b.scratch(bytes)), scr(b.scratch(bytes))]
    };
    let mut so_far = input;
    let mut combines: Vec<VertexId> = vec![];
    for (j, c) in kids.into_iter().enumerate() {
        let theirs = slots[j % slots.len()];
        let reuse: Vec<VertexId> = if j >= slots.len() { vec![combines[j - slots.len()]] } else { vec![] };
        let got = b.recv(theirs, bytes, real(c, root, p), 0, &reuse);
        let mut after = vec![got];
        after.extend(combines.last());
        combines.push(b.combine(red, n, so_far, theirs, acc, &after));
        so_far = acc;
    }
    let last = *combines.last().expect("a rank with children combines");
    if v != 0 {
        return b.send(acc, bytes, real(up, root, p), 0, &[last]);
    }
    last
}

/// The tree (binomial, or with `flat` linear) for an operator that does
/// not commute and a root other than rank 0: [`tree`] over the ranks
/// themselves, rooted at rank 0, whose relative order is the ranks' own;
/// rank 0 then hands the result to the root. One message more than the
/// commutative tree (whose relative ranks start at the root, out of rank
/// order), the price of the order.
///
/// Order of operations: [`tree`]'s, rooted at 0: `T(0)` over `x_0, x_1,
/// ..., x_(size-1)` in rank order.
#[allow(clippy::too_many_arguments)] // as `tree`
fn in_rank_order(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: u64, root: u32, flat: bool) {
    const HANDOVER: u32 = 1;
    let bytes = n * esz;
    let top = if b.rank == 0 { scr(b.scratch(bytes)) } else { input };
    let last = tree(b, red, esz, n, input, top, 0, flat);
    if b.rank == 0 {
        b.send(top, bytes, root, HANDOVER, &[last]);
    } else if b.rank == root {
        // After this rank's own part, which reads `input` (`rbuf` in place).
        b.recv(user(rbuf), bytes, 0, HANDOVER, &[last]);
    }
}

/// Rabenseifner: reduce-scatter by recursive halving, then a binomial gather.
///
/// 1. *Fold* the group onto the largest power of two `p2` ([`fold_in`]).
/// 2. *Recursive halving* ([`recursive_halving`]) over `p2` units of the
///    vector: virtual rank `v` ends up with unit `v` fully reduced.
/// 3. *Gather* the units to the virtual root (the root's virtual rank, or
///    its odd partner's if the root folded away) along a binomial tree
///    relabelled by `w = v ^ vroot`: in step `d = 1, 2, 4, ...` a virtual
///    rank with `w & d != 0` sends everything it holds (the `d` units of
///    its aligned block `v & !(d-1) ..`, one contiguous range) to `v ^ d`
///    and stops, the others receive. A root that folded away receives the
///    whole result from its partner at the end.
///
/// Each rank sends less than two vectors in total, against `log2(size)`
/// vectors for the binomial tree's root: the choice for long vectors.
///
/// Order of operations: the fold pairs ranks `(2i, 2i+1)`, `x_2i op
/// x_2i+1`; then for `d = p2/2, ..., 2, 1` virtual ranks `v` and `v ^ d`
/// are combined lower first (see [`recursive_halving`]). It does not
/// depend on the root.
fn rabenseifner(b: &mut Builder, red: &Reduction, esz: u64, n: u64, input: Buf, rbuf: u64, root: u32) {
    const FOLD: u32 = 0;
    const HALVING: u32 = 1; // + step, < 32 steps
    const GATHER: u32 = 40; // + step
    const HANDOVER: u32 = 80;
    let fold = Fold::new(b.size);
    let r = b.rank;
    let root_folds = fold.virt(root).is_none();
    let vroot = fold.virt(root).unwrap_or(root / 2);
    let acc = match fold.virt(r) {
        // Hands its vector away: no accumulator (this one is never used).
        None => input,
        Some(_) if r == root => user(rbuf),
        Some(_) => scr(b.scratch(n * esz)),
    };
    let f = fold_in(b, fold, red, esz, n, input, acc, FOLD);
    let Some(v) = f.v else {
        if r == root {
            b.recv(user(rbuf), n * esz, r + 1, HANDOVER, &f.ops);
        }
        return;
    };
    let units = even_units(n, fold.p2);
    let h = recursive_halving(b, fold, v, &units, red, esz, f.cur, acc, f.ready, HALVING);
    let mut all = f.ops;
    all.extend(&h.ops);
    let halved = b.join(&all);
    let result = h.result;
    let mut have = h.ready;
    let w = v ^ vroot;
    let (mut d, mut s) = (1u32, 0u32);
    while d < fold.p2 {
        let partner = fold.rank_of(v ^ d);
        if w & d != 0 {
            let first = v & !(d - 1);
            let (lo, hi) = (units[first as usize], units[(first + d) as usize]);
            b.send(at(result, lo, esz), (hi - lo) * esz, partner, GATHER + s, &have);
            return;
        }
        let first = (v ^ d) & !(d - 1);
        let (lo, hi) = (units[first as usize], units[(first + d) as usize]);
        have.push(b.recv(at(result, lo, esz), (hi - lo) * esz, partner, GATHER + s, &halved));
        d <<= 1;
        s += 1;
    }
    if root_folds && v == vroot {
        let all = b.join(&have);
        b.send(result, n * esz, root, HANDOVER, &all);
    }
}
