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

/// A pattern of [`schedgen`]: the collectives Schedgen writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Schedgen's dissemination barrier: in round k each rank sends to
    /// `r + 2^k` and receives from `r - 2^k` (mod n); a round's send waits
    /// for the previous round's receive (LogGOPSim's `dissemination_16.goal`).
    Dissemination,
    /// Schedgen's binomial-tree broadcast from rank 0: rank r receives from
    /// r without its highest bit, then sends to `r + 2^j` for every `2^j > r`
    /// below n, each send waiting for the receive.
    BinomialBcast,
}

impl Pattern {
    /// The pattern called `name` ("dissemination", "binomial_bcast").
    pub fn from_name(name: &str) -> Option<Pattern> {
        match name {
            "dissemination" | "dissemination_barrier" => Some(Pattern::Dissemination),
            "binomial_bcast" | "binomialtreebcast" | "binomial" => Some(Pattern::BinomialBcast),
            _ => None,
        }
    }
}

/// Appends the blocks of `ranks` of `pattern` over `n` ranks (`bytes` per
/// message; the barrier's are 1 byte) in Schedgen's layout, preceded by the
/// `num_ranks` line when `ranks` starts at 0, so that a large file can be
/// written a piece at a time.
pub fn schedgen(pattern: Pattern, n: u32, bytes: u64, ranks: Range<u32>, out: &mut String) {
    if ranks.start == 0 {
        let _ = writeln!(out, "num_ranks {n}\n");
    }
    let n64 = n as u64;
    for r in ranks {
        let _ = writeln!(out, "rank {r} {{");
        match pattern {
            Pattern::Dissemination => {
                for k in 0..dissemination_rounds(n) {
                    let d = 1u64 << k;
                    let (to, from) = ((r as u64 + d) % n64, (r as u64 + n64 - d) % n64);
                    let (s, v) = (2 * k + 1, 2 * k + 2);
                    let _ = writeln!(out, "l{s}: send 1b to {to} tag 0");
                    if k > 0 {
                        let _ = writeln!(out, "l{s} requires l{}", s - 1);
                    }
                    let _ = writeln!(out, "l{v}: recv 1b from {from} tag 0");
                }
            }
            Pattern::BinomialBcast => {
                let mut l = 0;
                if r > 0 {
                    let parent = r & !(1u32 << (31 - r.leading_zeros()));
                    let _ = writeln!(out, "l1: recv {bytes}b from {parent} tag 0");
                    l = 1;
                }
                let first = if r == 0 { 0 } else { 32 - r.leading_zeros() };
                for j in first..32 {
                    let to = r as u64 + (1u64 << j);
                    if to >= n64 {
                        break;
                    }
                    l += 1;
                    let _ = writeln!(out, "l{l}: send {bytes}b to {to} tag 0");
                    if r > 0 {
                        let _ = writeln!(out, "l{l} requires l1");
                    }
                }
            }
        }
        let _ = writeln!(out, "}}\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator writes LogGOPSim's own example and the corpus' broadcast, byte for byte
    /// apart from blank lines.
    #[test]
    fn schedgen_layouts_match_the_files_schedgen_wrote() {
        let squash = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n");
        let mut t = String::new();
        schedgen(Pattern::BinomialBcast, 128, 1024, 0..128, &mut t);
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/goal-corpus/loggopsim2-tests_network_binomialtreebcast_128_1024.goal");
        let want = std::fs::read_to_string(corpus).unwrap();
        assert_eq!(squash(&t), squash(&want));
        let mut t = String::new();
        schedgen(Pattern::Dissemination, 16, 1, 0..16, &mut t);
        assert!(t.contains("rank 0 {\nl1: send 1b to 1 tag 0\nl2: recv 1b from 15 tag 0\nl3: send 1b to 2 tag 0\nl3 requires l2\n"), "{t}");
        assert!(t.contains("l7: send 1b to 0 tag 0\nl7 requires l6\nl8: recv 1b from 0 tag 0\n}"), "{t}");
    }
}
