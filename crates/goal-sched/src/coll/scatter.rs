//! Scatter: rank `r` receives block `r` (`bytes` at `sbuf + r * bytes` on
//! the root) into `rbuf`. In place (`sbuf == rbuf` on the root) the root's
//! block stays where it is, in `sbuf`.

use super::gather::first_segment;
use super::{
    check_root, check_total, children, parent, rank_pieces, real, resolve, scr, subtree, user, vrank, Algorithm, Builder, Coll, CollError,
    Group, Piece, Placement, USER,
};
use crate::graph::{Graph, VertexId};

/// Appends a scatter of `bytes` per rank from `root`.
///
/// Algorithms: linear, linear_sync, binomial tree.
pub fn scatter(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    bytes: u64,
    rbuf: u64,
    root: u32,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Scatter, alg, grp.size, bytes)?;
    check_root(root, grp.size)?;
    check_total("the scatter buffer", grp.size as u64, bytes)?;
    let mut b = Builder::new(g, grp, at)?;
    if bytes > 0 {
        if grp.size > 1 {
            match alg {
                Algorithm::Linear => linear(&mut b, sbuf, bytes, rbuf, root),
                Algorithm::LinearSync => linear_sync(&mut b, sbuf, bytes, rbuf, root),
                _ => binomial(&mut b, sbuf, bytes, rbuf, root),
            }
        }
        // The root's own block last: an execution starts its independent
        // operations in order, so the other ranks' blocks are on their way
        // (and are fetched by their receivers, on other cores) while the
        // root copies its own. First, the copy held them back: 2 ranks,
        // 4 MiB, the receiver began only after the root's 4 MiB memcpy.
        if grp.rank == root && sbuf != rbuf {
            b.copy(user(sbuf + root as u64 * bytes), user(rbuf), bytes, &[]);
        }
    }
    Ok(b.finish())
}

/// Linear: the root sends every rank its block directly.
fn linear(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    if b.rank != root {
        b.recv(user(rbuf), bytes, root, 0, &[]);
        return;
    }
    for p in (0..b.size).filter(|&p| p != root) {
        b.send(user(sbuf + p as u64 * bytes), bytes, p, 0, &[]);
    }
}

/// linear_sync, the mirror image of gather's: the root serves one rank at a time.
///
/// A non-root posts the receive of its *first segment*, then (once that is
/// posted: an "irequires" edge) sends the root an empty *sync* message, and
/// posts the receive of the *rest*. For each rank `p` in turn the root waits
/// for `p`'s sync, sends the first segment, then the rest; it serves the
/// next rank once the first segment's send has finished. So no data
/// reaches a rank before its receive is posted, and the root never has more
/// than one rank's first segment in flight. Segment sizes as in gather
/// ([`first_segment`]).
fn linear_sync(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    const SYNC: u32 = 0;
    const FIRST: u32 = 1;
    const REST: u32 = 2;
    let first = first_segment(bytes).min(bytes);
    let rest = bytes - first;
    if b.rank != root {
        let seg = b.recv(user(rbuf), first, root, FIRST, &[]);
        let sync = b.send(user(rbuf), 0, root, SYNC, &[]);
        b.dep_start(seg, sync);
        if rest > 0 {
            b.recv(user(rbuf + first), rest, root, REST, &[]);
        }
        return;
    }
    let mut previous: Vec<VertexId> = Vec::new();
    for p in (0..b.size).filter(|&p| p != root) {
        let at = sbuf + p as u64 * bytes;
        let sync = b.recv(user(at), 0, p, SYNC, &[]);
        let mut after = previous.clone();
        after.push(sync);
        let seg = b.send(user(at), first, p, FIRST, &after);
        if rest > 0 {
            b.send(user(at + first), rest, p, REST, &[seg]);
        }
        previous = vec![seg];
    }
}

/// In-order binomial tree (thesis 5.3), on relative ranks: gather's tree run
/// backwards.
///
/// The root sends each child `c` the blocks of `c`'s *subtree* `c .. c +
/// subtree(c)` straight from `sbuf` (two pieces, one vector send, when the
/// subtree's ranks wrap around past the last rank), farthest child first.
/// An inner relative rank `v` receives its subtree's blocks into a
/// *staging* buffer of the scratchpad, copies its own (the first) to
/// `rbuf` and forwards each child's part from the staging buffer. A leaf
/// receives its block straight into `rbuf`.
fn binomial(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, root: u32) {
    let p = b.size;
    let v = vrank(b.rank, root, p);
    let kids = children(v, p);
    if v == 0 {
        for c in kids.into_iter().rev() {
            let pieces = rank_pieces(sbuf, bytes, c, subtree(c, p), root, p);
            b.send_vec(USER, &pieces, real(c, root, p), 0, &[]);
        }
        return;
    }
    let father = real(parent(v), root, p);
    if kids.is_empty() {
        b.recv(user(rbuf), bytes, father, 0, &[]);
        return;
    }
    let mine = subtree(v, p) as u64;
    let staging = b.scratch(mine * bytes);
    let have = b.recv(scr(staging), mine * bytes, father, 0, &[]);
    b.copy(scr(staging), user(rbuf), bytes, &[have]);
    for c in kids.into_iter().rev() {
        let at = staging + (c - v) as u64 * bytes;
        b.send(scr(at), subtree(c, p) as u64 * bytes, real(c, root, p), 0, &[have]);
    }
}
