//! Alltoall: block `j` of `sbuf` on rank `i` lands in block `i` of `rbuf`
//! on rank `j`, `bytes` each. In place (`sbuf == rbuf`) `rbuf` holds the
//! blocks to send and is overwritten with the blocks received.

use super::{check_total, merge, resolve, scr, user, Algorithm, Builder, Coll, CollError, Group, Piece, Placement, SCRATCH, USER};
use crate::graph::{Buf, Graph, VertexId};

/// Appends an alltoall of `bytes` per pair of ranks.
///
/// Algorithms: every message at once ([`Algorithm::Linear`]), pairwise
/// exchange one peer at a time ([`Algorithm::LinearSync`]), Bruck.
pub fn alltoall(g: &mut Graph, grp: Group, at: Placement, sbuf: u64, bytes: u64, rbuf: u64, alg: Algorithm) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Alltoall, alg, grp.size, bytes)?;
    check_total("the alltoall buffer", grp.size as u64, bytes)?;
    let mut b = Builder::new(g, grp, at)?;
    if bytes > 0 {
        match alg {
            Algorithm::Bruck => bruck(&mut b, sbuf, bytes, rbuf),
            Algorithm::LinearSync => pairwise(&mut b, sbuf, bytes, rbuf, true),
            _ => pairwise(&mut b, sbuf, bytes, rbuf, false),
        }
    }
    Ok(b.finish())
}

/// Pairwise exchange: `size - 1` steps; in step `k` rank `r` sends block
/// `r + k` to rank `r + k` and receives block `r - k` from rank `r - k`
/// (mod size), so every rank talks to exactly one peer in each direction
/// per step. With `sync` (`LINEAR_SYNC`) a step starts when the previous
/// one has finished, which keeps one message per direction in flight;
/// without (`LINEAR`, Open MPI's basic linear) every send and receive
/// starts at once, in the same order, and a rank waits for all its peers
/// together instead of for each in turn: with more ranks than cores (4
/// ranks on 2 here) every step of the exchange waited for its peer to be
/// scheduled (8 B 10.3-11.6 us in steps, 4.6-5.1 at once; 1 MiB 1.38-1.45
/// ms against 1.05-1.17). The own block is a local copy. In place, the
/// blocks to send are first copied aside (the *outbox*, in the
/// scratchpad), since the receives overwrite them in `rbuf`.
fn pairwise(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64, sync: bool) {
    let (p, r) = (b.size, b.rank);
    let total = p as u64 * bytes;
    let (outbox, mut step): (Buf, Vec<VertexId>) = if sbuf == rbuf {
        let o = b.scratch(total);
        let set_aside = b.copy(user(rbuf), scr(o), total, &[]);
        (scr(o), vec![set_aside])
    } else {
        (user(sbuf), vec![])
    };
    for k in 1..p {
        let (to, from) = ((r + k) % p, (r + p - k) % p);
        let src = Buf { mem: outbox.mem, addr: outbox.addr + to as u64 * bytes };
        let s = b.send(src, bytes, to, 0, &step);
        let v = b.recv(user(rbuf + from as u64 * bytes), bytes, from, 0, &step);
        if sync {
            step = vec![s, v];
        }
    }
    // The own block after the first step's send and receive, which start
    // before it (see scatter's root block).
    if sbuf != rbuf {
        b.copy(user(sbuf + r as u64 * bytes), user(rbuf + r as u64 * bytes), bytes, &[]);
    }
}

/// Bruck: `ceil(log2(size))` steps of `size / 2` blocks each, for small blocks.
///
/// 1. *Rotate*: position `i` of a working buffer gets block `(r + i) mod
///    size` of `sbuf` (one vector copy into the scratchpad).
/// 2. In step `k` (distance `d = 2^k`) a rank sends every position `i` with
///    bit `k` set to rank `r + d` and receives the same positions from rank
///    `r - d`. Two working buffers, *A* and *B*, take turns: a position
///    received goes to the buffer it is not in now, so a step never writes
///    what a send of the same step reads, and nothing is copied back.
///    After the last step position `i` holds the block from rank `r - i`.
/// 3. *Unrotate*: block from rank `r - i` goes to `rbuf` block `r - i` (one
///    vector copy out of the scratchpad).
fn bruck(b: &mut Builder, sbuf: u64, bytes: u64, rbuf: u64) {
    let (p, r) = (b.size, b.rank);
    let total = p as u64 * bytes;
    let buf = [b.scratch(total), b.scratch(total)];
    // in_b[i]: position i currently lives in B.
    let mut in_b = vec![false; p as usize];
    let at = |in_b: &[bool], i: u32| buf[in_b[i as usize] as usize] + i as u64 * bytes;
    let rotation: Vec<(u64, u64)> = (0..p).map(|i| (sbuf + ((r + i) % p) as u64 * bytes, bytes)).collect();
    let rotate = b.copy_vec((USER, merge(rotation)), (SCRATCH, vec![(buf[0], total)]), &[]);
    let (mut sends, mut recvs): (Vec<VertexId>, Vec<VertexId>) = (vec![], vec![]);
    let (mut d, mut k) = (1u32, 0u32);
    while d < p {
        let moving: Vec<u32> = (1..p).filter(|i| i & d != 0).collect();
        let out: Vec<(u64, u64)> = moving.iter().map(|&i| (at(&in_b, i), bytes)).collect();
        let mut after = vec![rotate];
        after.extend(&recvs);
        let s = b.send_vec(SCRATCH, &merge(out), (r + d) % p, k, &after);
        for &i in &moving {
            in_b[i as usize] = !in_b[i as usize];
        }
        let inc: Vec<(u64, u64)> = moving.iter().map(|&i| (at(&in_b, i), bytes)).collect();
        let mut after = vec![rotate];
        after.extend(&sends);
        recvs.push(b.recv_vec(SCRATCH, &merge(inc), (r + p - d) % p, k, &after));
        sends.push(s);
        d <<= 1;
        k += 1;
    }
    let from: Vec<(u64, u64)> = (0..p).map(|i| (at(&in_b, i), bytes)).collect();
    let to: Vec<(u64, u64)> = (0..p).map(|i| (rbuf + ((r + p - i) % p) as u64 * bytes, bytes)).collect();
    let mut after = vec![rotate];
    after.extend(&recvs);
    let all = b.join(&after);
    b.copy_vec((SCRATCH, merge(from)), (USER, merge(to)), &all);
}
