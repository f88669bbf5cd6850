//! Broadcast: `bytes` at `buf` on the root end up at `buf` on every rank.
//!
//! All algorithms work on *relative ranks* `v = (rank - root) mod size`, so
//! the root is `v = 0`.

use super::{
    check_root, check_total, children, parent, real, resolve, split, subtree, user, vrank, Algorithm, Builder, Coll, CollError, Group,
    Piece, Placement, TAG_SPAN,
};
use crate::graph::{Graph, VertexId};

/// Segment size of the pipelined broadcast when none is given: 64 KiB.
pub const DEFAULT_SEGMENT: u64 = 64 << 10;

/// Appends a broadcast of `bytes` at `buf` from `root`.
///
/// Algorithms: linear, binomial tree, scatter + ring allgather
/// ([`Algorithm::Ring`], van de Geijn), pipeline (segments of
/// [`DEFAULT_SEGMENT`]; [`bcast_pipeline`] takes another size).
pub fn bcast(g: &mut Graph, grp: Group, at: Placement, buf: u64, bytes: u64, root: u32, alg: Algorithm) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Bcast, alg, grp.size, bytes)?;
    if alg == Algorithm::Pipeline {
        return bcast_pipeline(g, grp, at, buf, bytes, root, DEFAULT_SEGMENT);
    }
    check_root(root, grp.size)?;
    check_total("the broadcast buffer", 1, bytes)?;
    let mut b = Builder::new(g, grp, at)?;
    if grp.size > 1 && bytes > 0 {
        let v = vrank(grp.rank, root, grp.size);
        match alg {
            Algorithm::Linear => linear(&mut b, v, root, buf, bytes),
            Algorithm::Binomial => binomial(&mut b, v, root, buf, bytes),
            _ => scatter_ring_allgather(&mut b, v, root, buf, bytes),
        }
    }
    Ok(b.finish())
}

/// Appends a pipelined broadcast with segments of `segment` bytes (> 0).
///
/// The ranks form a *chain* in relative rank order `0 -> 1 -> ... ->
/// size-1`. The message is cut into *segments* of `segment` bytes (the last
/// one shorter). The root sends every segment to relative rank 1; every
/// other rank receives segment `s` from its predecessor straight into `buf`
/// and forwards it to its successor as soon as it is in (KACC's pipeline
/// broadcast). Segments travel independently, so with `n` segments the
/// broadcast takes about `n + size - 2` segment times instead of `n *
/// (size - 1)`. Segment `s` uses tag `s mod 4096`.
pub fn bcast_pipeline(g: &mut Graph, grp: Group, at: Placement, buf: u64, bytes: u64, root: u32, segment: u64) -> Result<Piece, CollError> {
    check_root(root, grp.size)?;
    check_total("the broadcast buffer", 1, bytes)?;
    if segment == 0 {
        return Err(CollError::BadArgument("the pipeline's segment size must be positive".into()));
    }
    let mut b = Builder::new(g, grp, at)?;
    let p = grp.size;
    if p > 1 && bytes > 0 {
        let v = vrank(grp.rank, root, p);
        let (predecessor, successor) = (real(v + p - 1, root, p), real(v + 1, root, p));
        let segments = bytes.div_ceil(segment);
        for s in 0..segments {
            let off = s * segment;
            let len = segment.min(bytes - off);
            let tag = (s % TAG_SPAN as u64) as u32;
            let have: Vec<VertexId> = if v == 0 { vec![] } else { vec![b.recv(user(buf + off), len, predecessor, tag, &[])] };
            if v + 1 < p {
                b.send(user(buf + off), len, successor, tag, &have);
            }
        }
    }
    Ok(b.finish())
}

/// Linear: the root sends the whole buffer to every other rank.
fn linear(b: &mut Builder, v: u32, root: u32, buf: u64, bytes: u64) {
    let p = b.size;
    if v == 0 {
        for w in 1..p {
            b.send(user(buf), bytes, real(w, root, p), 0, &[]);
        }
    } else {
        b.recv(user(buf), bytes, root, 0, &[]);
    }
}

/// Binomial tree: relative rank `v` receives the whole buffer from its
/// *parent* `v` without its lowest set bit, then sends it to its
/// *children* `v + 2^j` (for `2^j` below `v`'s lowest set bit), farthest
/// child first because its subtree is the largest. `ceil(log2(size))` rounds.
fn binomial(b: &mut Builder, v: u32, root: u32, buf: u64, bytes: u64) {
    let p = b.size;
    let have: Vec<VertexId> = if v == 0 { vec![] } else { vec![b.recv(user(buf), bytes, real(parent(v), root, p), 0, &[])] };
    for c in children(v, p).into_iter().rev() {
        b.send(user(buf), bytes, real(c, root, p), 0, &have);
    }
}

/// Scatter + ring allgather (van de Geijn), for large messages.
///
/// The buffer is cut into `size` *blocks*, block `i` belonging to relative
/// rank `i`. *Scatter*: a binomial tree hands relative rank `v` the blocks
/// of its whole subtree, `v .. v + subtree(v)` (its *held* blocks, one
/// contiguous range), and `v` passes each child the child's subtree's
/// blocks. *Ring allgather*: in step `k` (`0 .. size-1`) relative rank `v`
/// sends block `(v - k) mod size` to its *next* `v + 1` and receives block
/// `(v - k - 1) mod size` from its *previous* `v - 1`, so every block
/// travels once around the ring. A block the next rank already holds from
/// the scatter is not sent (both ends know the subtree sizes), and a block a
/// rank holds is forwarded as soon as the scatter delivered it: the root
/// holds everything and receives nothing. Each rank sends about
/// `2 * bytes` in total whatever the group size, against `bytes * log2(size)`
/// for the binomial tree at its root.
fn scatter_ring_allgather(b: &mut Builder, v: u32, root: u32, buf: u64, bytes: u64) {
    const SCATTER: u32 = 0;
    const RING: u32 = 1; // step k uses RING + k mod (TAG_SPAN - 1)
    let p = b.size;
    let block = |i: u32| split(bytes, p, i);
    let range = |first: u32, count: u32| -> (u64, u64) {
        let (start, _) = block(first);
        let end = if first + count == p { bytes } else { block(first + count).0 };
        (start, end - start)
    };
    let held = |w: u32, i: u32| i >= w && i < w + subtree(w, p);

    // Scatter.
    let mine = subtree(v, p);
    let scattered: Vec<VertexId> = if v == 0 {
        vec![]
    } else {
        let (off, len) = range(v, mine);
        vec![b.recv(user(buf + off), len, real(parent(v), root, p), SCATTER, &[])]
    };
    for c in children(v, p).into_iter().rev() {
        let (off, len) = range(c, subtree(c, p));
        b.send(user(buf + off), len, real(c, root, p), SCATTER, &scattered);
    }

    // Ring allgather.
    let (next, prev) = ((v + 1) % p, (v + p - 1) % p);
    let mut received: Option<VertexId> = None;
    for k in 0..p - 1 {
        let tag = RING + (k % (TAG_SPAN as u32 - RING));
        let out = (v + p - k % p) % p;
        if !held(next, out) {
            // `out` is held here (scatter) or came in the previous step.
            let have = if held(v, out) { scattered.clone() } else { received.into_iter().collect() };
            let (off, len) = block(out);
            b.send(user(buf + off), len, real(next, root, p), tag, &have);
        }
        let inc = (v + 2 * p - k - 1) % p;
        received = if held(v, inc) {
            None
        } else {
            let (off, len) = block(inc);
            Some(b.recv(user(buf + off), len, real(prev, root, p), tag, &[]))
        };
    }
}
