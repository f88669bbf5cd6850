//! Allgatherv: every rank's `rbuf + rdispls[r]` receives rank `r`'s
//! `scount` bytes at `sbuf` (`rcounts[r]` bytes, equal to rank `r`'s
//! `scount`). Every rank gives the same `rcounts` and `rdispls`. In place
//! (`sbuf == rbuf`) a rank's own block is already at `rbuf + rdispls[rank]`.

use super::blocks::{check_layout, check_own, resolve_v, Layout};
use super::{user, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, TAG_SPAN};
use crate::graph::{Buf, Graph, VertexId};

/// Appends an allgatherv.
///
/// Algorithms: linear (every message at once), ring. With `Auto` and the
/// layout of an allgather (every count alike, block `r` at `r` counts),
/// the allgather that `Auto` picks: the same bytes in the same places,
/// and the measured choice of the collective users call most. 4 ranks on
/// 2 CPUs, 1 MiB: the allgather's recursive doubling 0.48x Open MPI's
/// time (paired), linear allgatherv 1.06x; at 64 and 256 KiB 0.68 and
/// 0.60x against 0.84 and 0.61x (docs/measurements/shared-work-2026-12-06;
/// at 512 KiB-1 MiB the allgather now takes Bruck there, see `auto_table`).
pub fn allgatherv(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    scount: u64,
    rbuf: u64,
    rcounts: &[u64],
    rdispls: &[u64],
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let total = check_layout("rcounts", "rdispls", rcounts, rdispls, 1, grp.size, true)?;
    let in_place = sbuf == rbuf;
    if !in_place {
        check_own("scount", scount, "rcounts", rcounts, grp.rank)?;
    }
    if let Some(bytes) = allgather_layout(rcounts, rdispls).filter(|_| alg == Algorithm::Auto) {
        return super::allgather::allgather(g, grp, at, sbuf, bytes, rbuf, Algorithm::Auto);
    }
    let largest = rcounts.iter().copied().max().unwrap_or(0);
    let alg = resolve_v(Coll::Allgatherv, alg, grp.size, total, largest)?;
    let mut b = Builder::new(g, grp, at)?;
    let r = grp.rank as usize;
    let blocks = Layout { base: rbuf, counts: rcounts, displs: rdispls };
    // A send of the own block reads it from `sbuf`, so it need not wait for
    // the copy into `rbuf`, which comes last (see allgather's `Own`).
    let own = user(if in_place { rbuf + rdispls[r] } else { sbuf });
    if grp.size > 1 {
        match alg {
            Algorithm::Ring => ring(&mut b, &blocks, own),
            _ => linear(&mut b, &blocks, own),
        }
    }
    if !in_place && rcounts[r] > 0 {
        b.copy(user(sbuf), user(blocks.at(grp.rank)), rcounts[r], &[]);
    }
    Ok(b.finish())
}

/// The block size when `counts` and `displs` lay the blocks out as an
/// allgather does: every count alike and not zero, block `r` at `r` counts.
fn allgather_layout(counts: &[u64], displs: &[u64]) -> Option<u64> {
    let c = *counts.first()?;
    let regular = c > 0 && counts.iter().zip(displs).enumerate().all(|(r, (&n, &d))| n == c && Some(d) == (r as u64).checked_mul(c));
    regular.then_some(c)
}

/// Linear: in the pairwise order (step `k` sends to `r + k`, receives from
/// `r - k`) but every send and receive at once: each rank sends its block
/// to every other rank and receives every other block straight into
/// place. One step of latency; each rank sends `size - 1` copies of its
/// block, as the ring does.
fn linear(b: &mut Builder, blocks: &Layout, own: Buf) {
    let (p, r) = (b.size, b.rank);
    for k in 1..p {
        let (to, from) = ((r + k) % p, (r + p - k) % p);
        if blocks.len(r) > 0 {
            b.send(own, blocks.len(r), to, 0, &[]);
        }
        if blocks.len(from) > 0 {
            b.recv(user(blocks.at(from)), blocks.len(from), from, 0, &[]);
        }
    }
}

/// Ring: in step `k` (`0 .. size-1`) rank `r` sends block `(r - k) mod
/// size` to its *next* `r + 1` and receives block `(r - k - 1) mod size`
/// from its *previous* `r - 1` straight into place; the block sent in step
/// `k > 0` is the one received in step `k - 1`. An empty block is neither
/// sent nor received (every rank knows every count), and the step after
/// it has nothing to wait for.
fn ring(b: &mut Builder, blocks: &Layout, own: Buf) {
    let (p, r) = (b.size, b.rank);
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    let mut have: Vec<VertexId> = vec![];
    for k in 0..p - 1 {
        let tag = k % TAG_SPAN as u32;
        let (out, inc) = ((r + p - k) % p, (r + 2 * p - k - 1) % p);
        if blocks.len(out) > 0 {
            let data = if k == 0 { own } else { user(blocks.at(out)) };
            b.send(data, blocks.len(out), next, tag, &have);
        }
        have = if blocks.len(inc) > 0 { vec![b.recv(user(blocks.at(inc)), blocks.len(inc), prev, tag, &[])] } else { vec![] };
    }
}
