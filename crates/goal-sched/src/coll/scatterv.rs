//! Scatterv: rank `r` receives `rcount` bytes into `rbuf`, the root's
//! `scounts[r]` bytes at `sbuf + sdispls[r]` (`scounts[r]` equals rank `r`'s
//! `rcount`). In place (`sbuf == rbuf` on the root) the root's block stays
//! where it is. The blocks the root sends may overlap (they are only read).
//!
//! As in MPI, `sdispls` matters at the root only, and so do `scounts` for
//! the linear algorithm; the binomial tree and [`Algorithm::Auto`] need
//! `scounts` on every rank (see [`gatherv`](super::gatherv())).

use super::blocks::{check_count, check_layout, check_own, relative_pieces, relative_sum};
use super::gatherv::v_algorithm;
use super::{check_root, children, parent, real, scr, subtree, user, vrank, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, USER};
use crate::graph::Graph;

/// Appends a scatterv from `root`.
///
/// Algorithms: linear, binomial tree.
pub fn scatterv(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    scounts: &[u64],
    sdispls: &[u64],
    rbuf: u64,
    rcount: u64,
    root: u32,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    check_root(root, grp.size)?;
    let alg = v_algorithm(Coll::Scatterv, "scounts", scounts, grp, root, alg)?;
    let in_place = grp.rank == root && sbuf == rbuf;
    if grp.rank == root {
        check_layout("scounts", "sdispls", scounts, sdispls, 1, grp.size, false)?;
    }
    if !in_place {
        check_own("rcount", rcount, "scounts", scounts, grp.rank)?;
    }
    check_count("rcount", rcount)?;
    let mut b = Builder::new(g, grp, at)?;
    if grp.size > 1 {
        match alg {
            Algorithm::Binomial => binomial(&mut b, sbuf, scounts, sdispls, rbuf, rcount, root),
            _ => linear(&mut b, sbuf, scounts, sdispls, rbuf, rcount, root),
        }
    }
    // The root's own block last (see scatter).
    if grp.rank == root && !in_place && rcount > 0 {
        b.copy(user(sbuf + sdispls[root as usize]), user(rbuf), rcount, &[]);
    }
    Ok(b.finish())
}

/// Linear: the root sends every rank with a non-empty block its block directly.
fn linear(b: &mut Builder, sbuf: u64, scounts: &[u64], sdispls: &[u64], rbuf: u64, rcount: u64, root: u32) {
    if b.rank != root {
        if rcount > 0 {
            b.recv(user(rbuf), rcount, root, 0, &[]);
        }
        return;
    }
    for p in (0..b.size).filter(|&p| p != root && scounts[p as usize] > 0) {
        b.send(user(sbuf + sdispls[p as usize]), scounts[p as usize], p, 0, &[]);
    }
}

/// In-order binomial tree on relative ranks, gatherv's run backwards: the
/// root sends each child the blocks of the child's *subtree*, gathered
/// from their places in `sbuf` (one vector send), farthest child first;
/// an inner rank receives its subtree's blocks packed in relative rank
/// order into a *staging* buffer of the scratchpad, copies its own (the
/// first) to `rbuf` and forwards each child's part. Empty subtrees get no
/// message; a rank whose children's subtrees are all empty receives
/// straight into `rbuf`.
fn binomial(b: &mut Builder, sbuf: u64, scounts: &[u64], sdispls: &[u64], rbuf: u64, rcount: u64, root: u32) {
    let p = b.size;
    let v = vrank(b.rank, root, p);
    let kids = children(v, p);
    if v == 0 {
        for c in kids.into_iter().rev() {
            let pieces = relative_pieces(sbuf, scounts, sdispls, c, subtree(c, p), root);
            if !pieces.is_empty() {
                b.send_vec(USER, &pieces, real(c, root, p), 0, &[]);
            }
        }
        return;
    }
    let father = real(parent(v), root, p);
    let mine = relative_sum(scounts, v, subtree(v, p), root);
    if mine == rcount {
        if rcount > 0 {
            b.recv(user(rbuf), rcount, father, 0, &[]);
        }
        return;
    }
    let staging = b.scratch(mine);
    let have = b.recv(scr(staging), mine, father, 0, &[]);
    if rcount > 0 {
        b.copy(scr(staging), user(rbuf), rcount, &[have]);
    }
    for c in kids.into_iter().rev() {
        let (at, len) = (staging + relative_sum(scounts, v, c - v, root), relative_sum(scounts, c, subtree(c, p), root));
        if len > 0 {
            b.send(scr(at), len, real(c, root, p), 0, &[have]);
        }
    }
}
