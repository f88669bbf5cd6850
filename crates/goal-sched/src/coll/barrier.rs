//! Barrier: no rank's `done` finishes before every rank's `entry` has.
//!
//! All messages are empty: a barrier moves knowledge ("these ranks have
//! arrived"), not data, so it needs no buffer and no scratchpad.

use super::{resolve, Algorithm, Builder, Coll, CollError, Fold, Group, Piece, Placement};
use crate::graph::{Buf, Graph, VertexId};

const NO_DATA: Buf = Buf { mem: 0, addr: 0 };

/// Appends a barrier.
///
/// Algorithms: recursive doubling, Bruck (dissemination), linear.
pub fn barrier(g: &mut Graph, grp: Group, at: Placement, alg: Algorithm) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Barrier, alg, grp.size, 0)?;
    let mut b = Builder::new(g, grp, at)?;
    if grp.size > 1 {
        match alg {
            Algorithm::RecursiveDoubling => recursive_doubling(&mut b),
            Algorithm::Bruck => dissemination(&mut b),
            _ => linear(&mut b),
        }
    }
    Ok(b.finish())
}

/// Recursive doubling (thesis 5.1, 5.4).
///
/// Let `p2` be the largest power of two not above the group size. The
/// *extra* ranks `p2 .. size` each first send a *report* to their *proxy*
/// `rank - p2` and wait for a *release* from it. The ranks `0 .. p2` run
/// `log2(p2)` *rounds*: in round `k` rank `r` exchanges an empty message
/// with `r ^ 2^k`. A round's send and receive both require the previous
/// round's receive, so the message of round `k` vouches for all `2^k` ranks
/// heard from so far; after the last round every rank has heard from all
/// `p2`. A proxy's first round requires the report it received, the send
/// *and the receive*: the thesis' listing gates only the first send, but
/// the later rounds hang off the first *receive*, so an ungated first
/// receive lets the proxy vouch for its extra rank before that rank arrived.
/// The release requires the proxy's last round.
fn recursive_doubling(b: &mut Builder) {
    const ROUND: u32 = 0; // rounds use tags ROUND + k, k < 32
    const REPORT: u32 = 64;
    const RELEASE: u32 = 65;
    let fold = Fold::new(b.size);
    let (p2, r) = (fold.p2, b.rank);
    if r >= p2 {
        let proxy = r - p2;
        b.send(NO_DATA, 0, proxy, REPORT, &[]);
        b.recv(NO_DATA, 0, proxy, RELEASE, &[]);
        return;
    }
    let extra = r + p2;
    let mut gate: Vec<VertexId> = Vec::new();
    if extra < b.size {
        gate.push(b.recv(NO_DATA, 0, extra, REPORT, &[]));
    }
    let mut k = 0;
    while (1u32 << k) < p2 {
        let partner = r ^ (1 << k);
        b.send(NO_DATA, 0, partner, ROUND + k, &gate);
        let recv = b.recv(NO_DATA, 0, partner, ROUND + k, &gate);
        gate = vec![recv];
        k += 1;
    }
    if extra < b.size {
        b.send(NO_DATA, 0, extra, RELEASE, &gate);
    }
}

/// Bruck's dissemination barrier (thesis 5.2).
///
/// In round `k` (distance `d = 2^k`, while `d < size`) rank `r` sends an
/// empty message to `(r + d) % size` and receives one from
/// `(r - d) % size`. Both require the previous round's receive, so after
/// round `k` a rank has heard, directly or through others, from the
/// `2^(k+1) - 1` ranks before it; after `ceil(log2(size))` rounds, from all.
fn dissemination(b: &mut Builder) {
    let (p, r) = (b.size, b.rank);
    let mut gate: Vec<VertexId> = Vec::new();
    let (mut d, mut k) = (1u32, 0u32);
    while d < p {
        b.send(NO_DATA, 0, (r + d) % p, k, &gate);
        let recv = b.recv(NO_DATA, 0, (r + p - d) % p, k, &gate);
        gate = vec![recv];
        d <<= 1;
        k += 1;
    }
}

/// Linear: every rank reports to rank 0; once rank 0 has every report, it
/// releases every rank.
fn linear(b: &mut Builder) {
    const REPORT: u32 = 0;
    const RELEASE: u32 = 1;
    if b.rank != 0 {
        b.send(NO_DATA, 0, 0, REPORT, &[]);
        b.recv(NO_DATA, 0, 0, RELEASE, &[]);
        return;
    }
    let reports: Vec<VertexId> = (1..b.size).map(|p| b.recv(NO_DATA, 0, p, REPORT, &[])).collect();
    let all = b.join(&reports);
    for p in 1..b.size {
        b.send(NO_DATA, 0, p, RELEASE, &all);
    }
}
