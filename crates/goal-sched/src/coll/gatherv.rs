//! Gatherv: the root receives rank `r`'s `scount` bytes at `sbuf` into
//! `rbuf + rdispls[r]`, `rcounts[r]` bytes (which equals rank `r`'s
//! `scount`). In place (`sbuf == rbuf` on the root) the root's own block is
//! already at `rbuf + rdispls[root]`.
//!
//! As in MPI, `rdispls` matters at the root only, and so do `rcounts` for
//! the linear algorithm: a non-root may give none (an empty slice). The
//! binomial tree forwards other ranks' blocks, so it (and
//! [`Algorithm::Auto`], whose choice must be the same on every rank) needs
//! `rcounts` on every rank.

use super::blocks::{check_count, check_layout, check_len, check_own, relative_pieces, relative_sum, resolve_v, total};
use super::{check_root, children, parent, real, scr, subtree, user, vrank, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, SCRATCH, USER};
use crate::graph::Graph;

/// Appends a gatherv to `root`.
///
/// Algorithms: linear, binomial tree.
pub fn gatherv(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    scount: u64,
    rbuf: u64,
    rcounts: &[u64],
    rdispls: &[u64],
    root: u32,
    alg: Algorithm,
) -> Result<Piece, CollError> {
    check_root(root, grp.size)?;
    let alg = v_algorithm(Coll::Gatherv, "rcounts", rcounts, grp, root, alg)?;
    let in_place = grp.rank == root && sbuf == rbuf;
    if grp.rank == root {
        check_layout("rcounts", "rdispls", rcounts, rdispls, 1, grp.size, true)?;
    }
    if !in_place {
        check_own("scount", scount, "rcounts", rcounts, grp.rank)?;
    }
    check_count("scount", scount)?;
    let mut b = Builder::new(g, grp, at)?;
    if grp.size > 1 {
        match alg {
            Algorithm::Binomial => binomial(&mut b, sbuf, scount, rbuf, rcounts, rdispls, root),
            _ => linear(&mut b, sbuf, scount, rbuf, rcounts, rdispls, root),
        }
    }
    // The root's own block last (see gather).
    if grp.rank == root && !in_place && scount > 0 {
        b.copy(user(sbuf), user(rbuf + rdispls[root as usize]), scount, &[]);
    }
    Ok(b.finish())
}

/// The algorithm of a rooted v-collective whose `counts` (named `name`) may
/// be missing on non-roots: resolved from the counts where every rank has
/// them; without them only linear applies.
pub(crate) fn v_algorithm(coll: Coll, name: &str, counts: &[u64], grp: Group, root: u32, alg: Algorithm) -> Result<Algorithm, CollError> {
    if counts.is_empty() && grp.rank != root {
        if alg == Algorithm::Linear {
            return Ok(alg);
        }
        // An algorithm that does not apply at all says so first.
        resolve_v(coll, alg, grp.size, 0, 0)?;
        return Err(CollError::BadArgument(format!(
            "{} needs {name} on every rank (the binomial tree forwards other ranks' blocks, and AUTO must choose alike everywhere); without them, as MPI gives them (at the root only), use GOAL_ALG_LINEAR",
            alg.c_name()
        )));
    }
    check_len(name, counts, grp.size)?;
    let sum = total(name, counts, 1)?;
    let largest = counts.iter().copied().max().unwrap_or(0);
    resolve_v(coll, alg, grp.size, sum, largest)
}

/// Linear: every rank with a non-empty block sends it to the root, which
/// receives each straight into its place.
fn linear(b: &mut Builder, sbuf: u64, scount: u64, rbuf: u64, rcounts: &[u64], rdispls: &[u64], root: u32) {
    if b.rank != root {
        if scount > 0 {
            b.send(user(sbuf), scount, root, 0, &[]);
        }
        return;
    }
    for p in (0..b.size).filter(|&p| p != root && rcounts[p as usize] > 0) {
        b.recv(user(rbuf + rdispls[p as usize]), rcounts[p as usize], p, 0, &[]);
    }
}

/// In-order binomial tree on relative ranks, as gather's: relative rank `v`
/// collects the blocks of its *subtree* `v .. v + subtree(v)`, packed in
/// relative rank order, in a *staging* buffer of the scratchpad (its own
/// block first, then each child's subtree right behind), and sends it to
/// its parent. A subtree whose blocks are all empty sends nothing; a rank
/// whose children's subtrees are all empty sends `sbuf` directly. The root
/// receives each child's subtree scattered straight into the children's
/// places in `rbuf` (one vector receive).
fn binomial(b: &mut Builder, sbuf: u64, scount: u64, rbuf: u64, rcounts: &[u64], rdispls: &[u64], root: u32) {
    let p = b.size;
    let v = vrank(b.rank, root, p);
    let kids = children(v, p);
    if v == 0 {
        for c in kids {
            let pieces = relative_pieces(rbuf, rcounts, rdispls, c, subtree(c, p), root);
            if !pieces.is_empty() {
                b.recv_vec(USER, &pieces, real(c, root, p), 0, &[]);
            }
        }
        return;
    }
    let father = real(parent(v), root, p);
    let mine = relative_sum(rcounts, v, subtree(v, p), root);
    if mine == scount {
        // A leaf, or children with nothing to send.
        if scount > 0 {
            b.send(user(sbuf), scount, father, 0, &[]);
        }
        return;
    }
    let staging = b.scratch(mine);
    let mut parts = Vec::new();
    if scount > 0 {
        parts.push(b.copy(user(sbuf), scr(staging), scount, &[]));
    }
    for c in kids {
        let (at, len) = (staging + relative_sum(rcounts, v, c - v, root), relative_sum(rcounts, c, subtree(c, p), root));
        if len > 0 {
            parts.push(b.recv_vec(SCRATCH, &[(at, len)], real(c, root, p), 0, &[]));
        }
    }
    b.send(scr(staging), mine, father, 0, &parts);
}
