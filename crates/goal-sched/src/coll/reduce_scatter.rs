//! Reduce_scatter (MPI's `MPI_Reduce_scatter`): every rank contributes a
//! vector of `sum(rcounts)` elements at `sbuf`; rank `r` receives block `r`
//! of their element-wise reduction, `rcounts[r]` elements from element
//! `rcounts[0] + ... + rcounts[r-1]`, in `rbuf`. Every rank gives the same
//! `rcounts`; any of them may be zero. In place (`sbuf == rbuf`) `rbuf`
//! holds the input and the result goes to its start.

use super::blocks::{check_len, resolve_v, total};
use super::butterfly::at;
use super::reduce::tree;
use super::{scr, user, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, Reduction};
use crate::graph::{Buf, Graph, VertexId};

/// Appends a reduce_scatter with `rcounts[r]` elements for rank `r`.
///
/// Algorithms: binomial reduce to rank 0 + linear scatterv
/// ([`Algorithm::Linear`]), ring.
///
/// Order of operations (see [`reduce()`](super::reduce())): reduce +
/// scatterv computes the whole vector as the binomial reduce to root 0
/// does, `T(0)`, in rank order; the ring computes block `b` as the left
/// fold over ranks `b+1, b+2, ..., b` (mod size), as
/// [`reduce_scatter_block()`](super::reduce_scatter_block()) does.
pub fn reduce_scatter(g: &mut Graph, grp: Group, at: Placement, sbuf: u64, rbuf: u64, rcounts: &[u64], red: Reduction, alg: Algorithm) -> Result<Piece, CollError> {
    let esz = red.check()?;
    check_len("rcounts", rcounts, grp.size)?;
    let n = total("rcounts", rcounts, esz)?;
    let largest = rcounts.iter().copied().max().unwrap_or(0);
    // An operator that does not commute: the reduce + scatterv, whose
    // binomial reduce to rank 0 combines in rank order (see `keeps_order`).
    let ordered = !red.commutative() && grp.size > 1;
    let alg = resolve_v(Coll::ReduceScatter, if ordered && alg == Algorithm::Auto { Algorithm::Linear } else { alg }, grp.size, n * esz, largest * esz)?;
    if ordered && !super::keeps_order(Coll::ReduceScatter, alg) {
        return Err(CollError::Unsupported(format!(
            "{} does not combine the ranks in rank order, and {} does not commute: for reduce_scatter use GOAL_ALG_LINEAR or GOAL_ALG_AUTO",
            alg.c_name(),
            red.op.name()
        )));
    }
    let mut b = Builder::new(g, grp, at)?;
    let blocks = Blocks::new(rcounts);
    let (input, out) = (user(sbuf), user(rbuf));
    if n > 0 {
        if grp.size == 1 {
            if sbuf != rbuf {
                b.copy(input, out, n * esz, &[]);
            }
        } else if alg == Algorithm::Ring {
            ring(&mut b, &red, esz, &blocks, input, out, sbuf == rbuf);
        } else {
            reduce_then_scatter(&mut b, &red, esz, &blocks, input, out, sbuf == rbuf);
        }
    }
    Ok(b.finish())
}

/// The blocks of the vector, in elements: block `i` is `len[i]` at `off[i]`.
pub(crate) struct Blocks {
    pub off: Vec<u64>,
    pub len: Vec<u64>,
}

impl Blocks {
    /// Blocks of `counts[i]` elements each, one after the other.
    pub fn new(counts: &[u64]) -> Blocks {
        let off = counts.iter().scan(0u64, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
        Blocks { off, len: counts.to_vec() }
    }
}

/// Binomial reduce + linear scatterv, for short vectors and for uneven
/// blocks: the whole vector is reduced to rank 0 along the binomial tree
/// (reduce's, into a scratchpad *accumulator* there), which copies its own
/// block to `rbuf` and sends every other non-empty block to its rank. In
/// place, a rank's receive of its block waits for its part of the reduce,
/// which reads the input it overwrites.
fn reduce_then_scatter(b: &mut Builder, red: &Reduction, esz: u64, blocks: &Blocks, input: Buf, rbuf: Buf, in_place: bool) {
    const SCATTER: u32 = 1;
    let n: u64 = blocks.len.iter().sum();
    let r = b.rank as usize;
    let acc = if r == 0 { scr(b.scratch(n * esz)) } else { input };
    let reduced = tree(b, red, esz, n, input, acc, 0, false);
    if r != 0 {
        if blocks.len[r] > 0 {
            let after = if in_place { vec![reduced] } else { vec![] };
            b.recv(rbuf, blocks.len[r] * esz, 0, SCATTER, &after);
        }
        return;
    }
    for i in (1..b.size).filter(|&i| blocks.len[i as usize] > 0) {
        b.send(at(acc, blocks.off[i as usize], esz), blocks.len[i as usize] * esz, i, SCATTER, &[reduced]);
    }
    if blocks.len[0] > 0 {
        b.copy(acc, rbuf, blocks.len[0] * esz, &[reduced]);
    }
}

/// Ring, for long vectors with blocks of similar size: the reduce-scatter
/// half of the ring allreduce.
///
/// In step `k` (`0 .. size-1`) rank `r` sends its partial of block `(r - k
/// - 1) mod size` to its *next* `r + 1`, receives the partial of block `(r
/// - k - 2) mod size` from its *previous* `r - 1` and combines it with its
/// own input in place (`received = received op own`); that is what it
/// sends in the next step. Two receive buffers, each as long as the largest
/// block, take turns. The last step's block is `r` itself, and its combine
/// writes straight into `rbuf`. An empty block is neither sent, received
/// nor combined (every rank knows every count). Each step costs the time
/// of its largest block, so `size - 1` times the largest block in all.
///
/// Order of operations: block `b` is the left fold over the ranks in ring
/// order starting after it, `(((x_(b+1) op x_(b+2)) op ...) op x_(b-1)) op
/// x_b` (indices mod size).
pub(crate) fn ring(b: &mut Builder, red: &Reduction, esz: u64, blocks: &Blocks, input: Buf, rbuf: Buf, in_place: bool) {
    let (p, r) = (b.size, b.rank);
    let (next, prev_rank) = ((r + 1) % p, (r + p - 1) % p);
    let largest = blocks.len.iter().copied().max().unwrap_or(0) * esz;
    let partial = [scr(b.scratch(largest)), scr(b.scratch(largest))];
    // The last send that read each receive buffer: the next receive into it waits for it.
    let mut reader: [Option<VertexId>; 2] = [None, None];
    let mut sum: Option<VertexId> = None;
    let mut all: Vec<VertexId> = Vec::new();
    for k in 0..p - 1 {
        let tag = k % 4096;
        let (out, inc) = (((r + 2 * p - k - 1) % p) as usize, ((r + 2 * p - k - 2) % p) as usize);
        if blocks.len[out] > 0 {
            let sent = if k == 0 {
                b.send(at(input, blocks.off[out], esz), blocks.len[out] * esz, next, tag, &[])
            } else {
                // Block `out` is the one received and combined in step k - 1.
                let buf = ((k - 1) % 2) as usize;
                let s = b.send(partial[buf], blocks.len[out] * esz, next, tag, sum.as_slice());
                reader[buf] = Some(s);
                s
            };
            all.push(sent);
        }
        sum = None;
        if blocks.len[inc] == 0 {
            continue;
        }
        let reuse: Vec<VertexId> = reader[(k % 2) as usize].into_iter().collect();
        let theirs = partial[(k % 2) as usize];
        let len = blocks.len[inc];
        let got = b.recv(theirs, len * esz, prev_rank, tag, &reuse);
        let own = at(input, blocks.off[inc], esz);
        let combined = if k + 2 < p {
            b.combine(red, len, theirs, own, theirs, &[got])
        } else {
            // In place, the result overwrites the input's start: wait for
            // every reader. Where it would overlap the own block it reads
            // (not exactly), it is combined in the receive buffer and copied.
            let mut after = vec![got];
            if in_place {
                after.extend(&all);
            }
            let after = b.join(&after);
            let off = blocks.off[r as usize];
            if in_place && off > 0 && off < len {
                let c = b.combine(red, len, theirs, own, theirs, &after);
                b.copy(theirs, rbuf, len * esz, &[c])
            } else {
                b.combine(red, len, theirs, own, rbuf, &after)
            }
        };
        sum = Some(combined);
        // The combine stands for its receive (see the ring allreduce).
        all.push(combined);
    }
}
