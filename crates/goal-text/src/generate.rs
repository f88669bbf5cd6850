//! Text schedules written by program, in Schedgen's layout (`num_ranks`,
//! one block per rank, labels `l1`, `l2`, ...): inputs of any size for
//! tests and benchmarks without files in the repository.

use std::fmt::Write;
use std::ops::Range;

/// A dissemination barrier over `n` ranks: in round k (distance 2^k) each
/// rank sends 1 byte to `r + 2^k` and receives from `r - 2^k` (mod n); a
/// round's send and receive wait for the previous round's receive.
///
/// Appends the blocks of `ranks` to `out`, preceded by the `num_ranks`
/// line when `ranks` starts at 0, so that a large file can be written a
/// piece at a time; 2^20 ranks make about 1.6 GB.
pub fn dissemination(n: u32, ranks: Range<u32>, out: &mut String) {
    if ranks.start == 0 {
        let _ = writeln!(out, "num_ranks {n}\n");
    }
    let rounds = dissemination_rounds(n);
    let n64 = n as u64;
    for r in ranks {
        let _ = writeln!(out, "rank {r} {{");
        for k in 0..rounds {
            let d = 1u64 << k;
            let (to, from) = ((r as u64 + d) % n64, (r as u64 + n64 - d) % n64);
            let (s, v) = (2 * k + 1, 2 * k + 2);
            let _ = writeln!(out, "l{s}: send 1b to {to} tag 0");
            let _ = writeln!(out, "l{v}: recv 1b from {from} tag 0");
            if k > 0 {
                let _ = writeln!(out, "l{s} requires l{}", v - 2);
                let _ = writeln!(out, "l{v} requires l{}", v - 2);
            }
        }
        let _ = writeln!(out, "}}\n");
    }
}

/// The number of rounds of [`dissemination`] over `n` ranks: ceil(log2 n).
pub fn dissemination_rounds(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}
