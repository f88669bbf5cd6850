//! Gather: block `r` of `rbuf` on the root receives `bytes` from `sbuf` of
//! rank `r`. In place (`sbuf == rbuf` on the root) the root's own block is
//! already at `rbuf + root * bytes`.

use super::{
    check_root, check_total, children, parent, rank_pieces, real, resolve, scr, subtree, user, vrank, Algorithm, Builder, Coll, CollError,
    Group, Piece, Placement, SCRATCH, USER,
};
use crate::graph::{Graph, VertexId};

/// Above this block size linear_sync sends a 32 KiB first segment (Open MPI's `large_block_size`).
pub(crate) const LARGE_BLOCK: u64 = 92160;
/// Above this block size (and up to [`LARGE_BLOCK`]) the first segment is 1 KiB (`intermediate_block_size`).
pub(crate) const INTERMEDIATE_BLOCK: u64 = 6000;

/// The first segment of linear_sync for blocks of `bytes`, as Open MPI
/// chooses it: 32 KiB above 92160 bytes, 1 KiB above 6000 bytes; smaller
/// blocks (for which Open MPI would not pick linear_sync) go whole.
pub(crate) fn first_segment(bytes: u64) -> u64 {
    if bytes > LARGE_BLOCK {
        32 << 10
    } else if bytes > INTERMEDIATE_BLOCK {
        1 << 10
    } else {
        bytes
    }
}

/// Appends a gather of `bytes` per rank to `root`.
///
/// Algorithms: linear, linear_sync, binomial tree.
pub fn gather(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    bytes: u64,
    rbuf: u64,
    root: u32,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Gather, alg, grp.size, bytes)?;
    check_root(root, grp.size)?;
    check_total("the gather buffer", grp.size as u64, bytes)?;
    let mut b = Builder::new(g, grp, at)?;
    if bytes > 0 {
        if grp.size > 1 {
            match alg {
                Algorithm::Linear => linear(&mut b, sbuf, bytes, rbuf, root),
                Algorithm::LinearSync => linear_sync(&mut b, sbuf, bytes, rbuf, root),
                _ => binomial(&mut b, sbuf, bytes, rbuf, root),
            }
        }
        // The root's own block last, as in scatter: an execution starts its
        // independent operations in order, so the receives are posted (and
        // answered: a stream's sender fills the stream, a CMA read can be
        // made) before the root spends its time on its own copy. First, the
        // copy held them back: 2 ranks, 4 MiB, the sender's stream stood
        // full while the root copied its own block.
        if grp.rank == root && sbuf != rbuf {
            b.copy(user(sbuf), user(rbuf + root as u64 * bytes), bytes, &[]);
        }
    }
    Ok(b.finish())
}

/// Linear: every rank sends its block to the root, which receives each
/// straight into its place (and copies its own).
fn linear(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    if b.rank != root {
        b.send(user(sbuf), bytes, root, 0, &[]);
        return;
    }
    for p in (0..b.size).filter(|&p| p != root) {
        b.recv(user(rbuf + p as u64 * bytes), bytes, p, 0, &[]);
    }
}

/// linear_sync (Open MPI, thesis 5.5): the root admits one rank at a time.
///
/// For each rank `p` in turn the root posts the receive of `p`'s *first
/// segment*, then sends `p` an empty *sync* message (once that receive is
/// posted: an "irequires" edge) and posts the receive of the *rest*; it
/// moves on to the next rank once the first segment has arrived. A
/// non-root sends nothing before the sync, then the first segment, then
/// (after the first segment's send finished) the rest. This keeps the root
/// from being flooded by all ranks at once. The first segment's size is
/// [`first_segment`] of the block size.
fn linear_sync(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    const SYNC: u32 = 0;
    const FIRST: u32 = 1;
    const REST: u32 = 2;
    let first = first_segment(bytes).min(bytes);
    let rest = bytes - first;
    if b.rank != root {
        let sync = b.recv(user(sbuf), 0, root, SYNC, &[]);
        let seg = b.send(user(sbuf), first, root, FIRST, &[sync]);
        if rest > 0 {
            b.send(user(sbuf + first), rest, root, REST, &[seg]);
        }
        return;
    }
    let mut previous: Vec<VertexId> = Vec::new();
    for p in (0..b.size).filter(|&p| p != root) {
        let at = rbuf + p as u64 * bytes;
        let seg = b.recv(user(at), first, p, FIRST, &previous);
        let sync = b.send(user(at), 0, p, SYNC, &previous);
        b.dep_start(seg, sync);
        if rest > 0 {
            b.recv(user(at + first), rest, p, REST, &[sync]);
        }
        previous = vec![seg];
    }
}

/// In-order binomial tree (thesis 5.3), on relative ranks.
///
/// Relative rank `v` gathers the blocks of its *subtree* `v .. v +
/// subtree(v)` in relative rank order in a *staging* buffer of the
/// scratchpad: its own block (a copy) first, then each child's subtree
/// right behind it, since a child `c` covers `c .. c + subtree(c)`. Once
/// all are in, it sends the staging buffer to its parent. Leaves send
/// `sbuf` directly. The root receives each child's subtree straight into
/// `rbuf`; a subtree whose ranks wrap around past the last rank lands in
/// two pieces (one vector receive), so no final rotation is needed.
fn binomial(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    let p = b.size;
    let v = vrank(b.rank, root, p);
    let kids = children(v, p);
    if v == 0 {
        for c in kids {
            let pieces = rank_pieces(rbuf, bytes, c, subtree(c, p), root, p);
            b.recv_vec(USER, &pieces, real(c, root, p), 0, &[]);
        }
        return;
    }
    let father = real(parent(v), root, p);
    if kids.is_empty() {
        b.send(user(sbuf), bytes, father, 0, &[]);
        return;
    }
    let mine = subtree(v, p) as u64;
    let staging = b.scratch(mine * bytes);
    let mut parts = vec![b.copy(user(sbuf), scr(staging), bytes, &[])];
    for c in kids {
        let at = staging + (c - v) as u64 * bytes;
        parts.push(b.recv_vec(SCRATCH, &[(at, subtree(c, p) as u64 * bytes)], real(c, root, p), 0, &[]));
    }
    b.send(scr(staging), mine * bytes, father, 0, &parts);
}
