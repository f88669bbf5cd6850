//! Allgather: block `r` of `rbuf` on every rank receives `bytes` from
//! `sbuf` of rank `r`. In place (`sbuf == rbuf`) a rank's own block is
//! already at `rbuf + rank * bytes`.

use super::{check_total, rank_pieces, resolve, user, Algorithm, Builder, Coll, CollError, Fold, Group, Piece, Placement, TAG_SPAN, USER};
use crate::graph::{Buf, Graph, VertexId};

/// Appends an allgather of `bytes` per rank.
///
/// Algorithms: recursive doubling (any group size, see below), Bruck, ring.
pub fn allgather(g: &mut Graph, grp: Group, at: Placement, sbuf: u64, bytes: u64, rbuf: u64, alg: Algorithm) -> Result<Piece, CollError> {
    let alg = resolve(Coll::Allgather, alg, grp.size, bytes)?;
    check_total("the allgather buffer", grp.size as u64, bytes)?;
    let mut b = Builder::new(g, grp, at)?;
    if bytes > 0 {
        let own_at = rbuf + grp.rank as u64 * bytes;
        let mut own = Own { sbuf: (sbuf != rbuf).then_some(sbuf), at: own_at, readers: Vec::new() };
        if grp.size > 1 {
            match alg {
                Algorithm::Ring => ring(&mut b, bytes, rbuf, &mut own),
                Algorithm::Bruck => bruck(&mut b, bytes, rbuf, &mut own),
                _ => recursive_doubling(&mut b, bytes, rbuf, &mut own),
            }
        }
        // The own block's copy comes last: an execution starts its
        // independent operations in the order they were added, and the
        // first sends read `sbuf` (see `Own`).
        if let Some(src) = own.sbuf {
            let copy = b.copy(user(src), user(own.at), bytes, &[]);
            for v in own.readers {
                b.dep(copy, v);
            }
        }
    }
    Ok(b.finish())
}

/// A rank's own block, which is copied from `sbuf` into `rbuf` unless in
/// place. A send of that block alone reads it from `sbuf` and need not wait
/// for the copy; only sends that read it from `rbuf` among other blocks do
/// (`readers`). So the first message leaves before the copy runs: with 2
/// ranks the copy is off the critical path, overlapping the peer's message
/// in flight.
struct Own {
    /// Where the block comes from, if not in place.
    sbuf: Option<u64>,
    /// Where it goes in `rbuf`.
    at: u64,
    /// Sends that read it in `rbuf`: they start after the copy.
    readers: Vec<VertexId>,
}

impl Own {
    /// The buffer a send of the own block alone reads.
    fn alone(&self) -> Buf {
        user(self.sbuf.unwrap_or(self.at))
    }
}

/// Ring: in step `k` (`0 .. size-1`) rank `r` sends block `(r - k) mod
/// size` to its *next* `r + 1` and receives block `(r - k - 1) mod size`
/// from its *previous* `r - 1`, straight into `rbuf`; the block sent in
/// step `k > 0` is the one received in step `k - 1`. Every link carries
/// `size - 1` blocks; `size - 1` steps.
fn ring(b: &mut Builder, bytes: u64, rbuf: u64, own: &mut Own) {
    let (p, r) = (b.size, b.rank);
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    let block = |i: u32| user(rbuf + i as u64 * bytes);
    // Step 0 sends the own block, alone.
    let mut have = vec![];
    for k in 0..p - 1 {
        let tag = k % TAG_SPAN as u32;
        let data = if k == 0 { own.alone() } else { block((r + p - k) % p) };
        b.send(data, bytes, next, tag, &have);
        have = vec![b.recv(block((r + 2 * p - k - 1) % p), bytes, prev, tag, &[])];
    }
}

/// Bruck: `ceil(log2(size))` steps for any group size, without the extra
/// step recursive doubling needs.
///
/// Think of the blocks in *Bruck order*: position `i` is the block of rank
/// `(r + i) mod size`, so a rank starts with position 0 (its own). In step
/// `k` (distance `d = 2^k`) a rank sends its first `count = min(d, size -
/// d)` positions to rank `r - d` and receives `count` positions from rank
/// `r + d`, which are its positions `d .. d + count` (the sender's
/// positions `0 .. count`). After the last step it holds all `size`
/// positions. The textbook version keeps a rotated copy and rotates it into
/// place at the end; here a run of positions is addressed in `rbuf`
/// directly (at most two pieces, where the ranks wrap around), so there is
/// no copy at all.
fn bruck(b: &mut Builder, bytes: u64, rbuf: u64, own: &mut Own) {
    let (p, r) = (b.size, b.rank);
    let mut have = vec![];
    let (mut d, mut k) = (1u32, 0u32);
    while d < p {
        let count = d.min(p - d);
        // Position 0 is the own block: alone in step 0.
        if count == 1 && d == 1 {
            b.send(own.alone(), bytes, (r + p - d) % p, k, &have);
        } else {
            let v = b.send_vec(USER, &rank_pieces(rbuf, bytes, 0, count, r, p), (r + p - d) % p, k, &have);
            own.readers.push(v);
        }
        have.push(b.recv_vec(USER, &rank_pieces(rbuf, bytes, d, count, r, p), (r + d) % p, k, &[]));
        d <<= 1;
        k += 1;
    }
}

/// Recursive doubling, for any group size.
///
/// On a power of two: in step `k` (distance `d = 2^k`) rank `r` holds the
/// `d` blocks of its aligned *group* `r & !(d-1) .. + d` and swaps them
/// with partner `r ^ d`, doubling its group; `log2(size)` steps.
///
/// Otherwise the group is *folded* onto the largest power of two `p2`
/// first ([`Fold`]): each of the first `2 * (size - p2)` ranks that is even
/// sends its block to the odd rank after it, which carries both blocks as
/// one *virtual rank* (the two blocks are adjacent in `rbuf`). The virtual
/// ranks run recursive doubling, a virtual rank's group of blocks being
/// still one contiguous range of `rbuf`. Finally each odd rank sends its
/// even partner everything but the partner's own block (two pieces). That
/// costs one extra step at the start and at the end, as in MPICH's
/// allreduce.
fn recursive_doubling(b: &mut Builder, bytes: u64, rbuf: u64, own: &mut Own) {
    const FOLD_IN: u32 = 32;
    const FOLD_OUT: u32 = 33;
    let (p, r) = (b.size, b.rank);
    let fold = Fold::new(p);
    let at = |rank: u32| rbuf + rank as u64 * bytes;
    let Some(v) = fold.virt(r) else {
        // An even rank that folds away: hand over the block, receive all
        // others (into other bytes, so the receive need not wait).
        b.send(own.alone(), bytes, r + 1, FOLD_IN, &[]);
        let others = [(rbuf, r as u64 * bytes), (at(r + 1), (p - r - 1) as u64 * bytes)];
        let others: Vec<(u64, u64)> = others.into_iter().filter(|x| x.1 > 0).collect();
        b.recv_vec(USER, &others, r + 1, FOLD_OUT, &[]);
        return;
    };
    let mut have = vec![];
    if v < fold.extras {
        have.push(b.recv(user(at(r - 1)), bytes, r - 1, FOLD_IN, &[]));
    }
    // The blocks of virtual ranks first ..= last, as one range.
    let range = |first: u32, last: u32| -> (u64, u64) {
        let (lo, hi) = (fold.ranks_of(first).0, fold.ranks_of(last).1);
        (at(lo), (hi - lo + 1) as u64 * bytes)
    };
    let (mut d, mut k) = (1u32, 0u32);
    while d < fold.p2 {
        let partner = v ^ d;
        let mine = v & !(d - 1);
        let theirs = partner & !(d - 1);
        let (addr, len) = range(mine, mine + d - 1);
        if len == bytes {
            // The own block alone (step 0 of a rank that folded nothing).
            b.send(own.alone(), len, fold.rank_of(partner), k, &have);
        } else {
            let s = b.send(user(addr), len, fold.rank_of(partner), k, &have);
            own.readers.push(s);
        }
        let (addr, len) = range(theirs, theirs + d - 1);
        have.push(b.recv(user(addr), len, fold.rank_of(partner), k, &[]));
        d <<= 1;
        k += 1;
    }
    if v < fold.extras {
        let even = r - 1;
        let others = [(rbuf, even as u64 * bytes), (at(r), (p - r) as u64 * bytes)];
        let others: Vec<(u64, u64)> = others.into_iter().filter(|x| x.1 > 0).collect();
        let all = b.join(&have);
        let s = b.send_vec(USER, &others, even, FOLD_OUT, &all);
        own.readers.push(s);
    }
}
