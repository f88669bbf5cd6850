//! Alltoallv: rank `i` sends `scounts[j]` bytes at `sbuf + sdispls[j]` to
//! rank `j`, which receives them into `rbuf + rdispls[i]` (`rcounts[i]`
//! bytes, equal to rank `i`'s `scounts[j]`). The blocks a rank sends may
//! overlap; those it receives may not. In place (`sbuf == rbuf`) `scounts`
//! and `sdispls` are ignored (and may be empty): `rbuf`'s blocks, laid out
//! by `rcounts` and `rdispls`, hold what is sent and are overwritten with
//! what is received, as MPI's `MPI_IN_PLACE` does.

use super::blocks::{check_layout, resolve_v, Layout};
use super::{merge, scr, user, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, SCRATCH, USER};
use crate::graph::{Buf, Graph, VertexId};

/// Appends an alltoallv.
///
/// Algorithms: every message at once ([`Algorithm::Linear`]), pairwise
/// exchange one peer at a time ([`Algorithm::LinearSync`]). Both send the
/// same messages with the same tag, so ranks may choose differently, and
/// [`Algorithm::Auto`] decides on each rank from the bytes it sends and
/// receives ([`auto_v`](super::auto_v)).
pub fn alltoallv(
    g: &mut Graph,
    grp: Group,
    at: Placement,
    sbuf: u64,
    scounts: &[u64],
    sdispls: &[u64],
    rbuf: u64,
    rcounts: &[u64],
    rdispls: &[u64],
    alg: Algorithm,
) -> Result<Piece, CollError> {
    let in_place = sbuf == rbuf;
    let received = check_layout("rcounts", "rdispls", rcounts, rdispls, 1, grp.size, true)?;
    let (scounts, sdispls) = if in_place { (rcounts, rdispls) } else { (scounts, sdispls) };
    let sent = check_layout("scounts", "sdispls", scounts, sdispls, 1, grp.size, false)?;
    let largest = scounts.iter().chain(rcounts).copied().max().unwrap_or(0);
    let alg = resolve_v(Coll::Alltoallv, alg, grp.size, sent.max(received), largest)?;
    let r = grp.rank as usize;
    if let (Some(s), Some(rc)) = (scounts.get(r), rcounts.get(r)) {
        if s != rc {
            return Err(CollError::BadArgument(format!(
                "scounts[{r}] = {s} differs from rcounts[{r}] = {rc}: the block a rank sends itself has one size"
            )));
        }
    }
    let mut b = Builder::new(g, grp, at)?;
    let out = Layout { base: sbuf, counts: scounts, displs: sdispls };
    let inc = Layout { base: rbuf, counts: rcounts, displs: rdispls };
    pairwise(&mut b, out, inc, in_place, alg == Algorithm::LinearSync);
    Ok(b.finish())
}

/// Pairwise exchange, as alltoall's: in step `k` (`1 .. size`) rank `r`
/// sends its block for `r + k` and receives the block from `r - k`; an
/// empty block is neither sent nor received. With `sync` (pairwise
/// exchange) a step starts once the previous one's messages have finished;
/// without (linear) every send and receive starts at once, in that order.
/// The own block is a local copy, last. In place, the blocks to send are
/// first packed into an *outbox* in the scratchpad (one vector copy),
/// since the receives overwrite them in `rbuf`.
fn pairwise(b: &mut Builder, out: Layout, inc: Layout, in_place: bool, sync: bool) {
    let (p, r) = (b.size, b.rank);
    let peers: Vec<u32> = (1..p).map(|k| (r + k) % p).filter(|&j| out.len(j) > 0).collect();
    // Where each peer's block is read from.
    let mut source: Vec<Buf> = (0..p).map(|j| user(out.at(j))).collect();
    let mut step: Vec<VertexId> = vec![];
    if in_place && !peers.is_empty() {
        let packed: u64 = peers.iter().map(|&j| out.len(j)).sum();
        let outbox = b.scratch(packed);
        let mut at = outbox;
        for &j in &peers {
            source[j as usize] = scr(at);
            at += out.len(j);
        }
        let from = merge(peers.iter().map(|&j| (out.at(j), out.len(j))).collect());
        step.push(b.copy_vec((USER, from), (SCRATCH, vec![(outbox, packed)]), &[]));
    }
    for k in 1..p {
        let (to, from) = ((r + k) % p, (r + p - k) % p);
        let mut this = vec![];
        if out.len(to) > 0 {
            this.push(b.send(source[to as usize], out.len(to), to, 0, &step));
        }
        if inc.len(from) > 0 {
            this.push(b.recv(user(inc.at(from)), inc.len(from), from, 0, &step));
        }
        if sync && !this.is_empty() {
            step = this;
        }
    }
    if !in_place && out.len(r) > 0 {
        b.copy(user(out.at(r)), user(inc.at(r)), out.len(r), &[]);
    }
}
