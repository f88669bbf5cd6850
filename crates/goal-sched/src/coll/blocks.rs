//! Per-rank blocks: what the collectives with per-rank counts and
//! displacements (gatherv, scatterv, allgatherv, alltoallv, reduce_scatter)
//! share.
//!
//! A *layout* is two arrays with one entry per rank of the group, `counts`
//! and `displs`: rank `r`'s block is `counts[r]` units at `displs[r]` units
//! from the buffer's start (bytes for the data-moving collectives, as MPI's
//! counts with `MPI_BYTE`; elements for reduce_scatter, whose blocks follow
//! each other without displacements). A count may be zero on any rank: its
//! messages are left out on both sides, which every rank can tell because
//! every rank that needs a count has it. The checks here refuse a layout a
//! schedule could not carry (a block ending past 4 GiB − 1, the largest
//! message) and a receive layout whose blocks overlap (MPI calls that
//! erroneous; the receives would race).
//!
//! [`auto_v`] is `GOAL_ALG_AUTO`'s choice for them.

use super::{merge, real, resolve, Algorithm, Coll, CollError};

/// The largest byte a block may reach, exclusive: a message holds at most 4 GiB − 1 bytes.
const LIMIT: u64 = u32::MAX as u64;

/// One side's blocks: rank `j`'s is `counts[j]` bytes at `base + displs[j]`.
#[derive(Clone, Copy)]
pub(crate) struct Layout<'a> {
    pub base: u64,
    pub counts: &'a [u64],
    pub displs: &'a [u64],
}

impl Layout<'_> {
    /// Where rank `j`'s block is.
    pub fn at(&self, j: u32) -> u64 {
        self.base + self.displs[j as usize]
    }
    /// How long rank `j`'s block is.
    pub fn len(&self, j: u32) -> u64 {
        self.counts[j as usize]
    }
}

/// Refuses an array whose length is not the group size.
pub(crate) fn check_len(name: &str, v: &[u64], size: u32) -> Result<(), CollError> {
    if v.len() != size as usize {
        return Err(CollError::BadArgument(format!("{name} has {} entries for a group of {size} ranks", v.len())));
    }
    Ok(())
}

/// Checks a layout of `unit`-byte units: both arrays have `size` entries,
/// every block ends below 4 GiB, and (with `disjoint`) no two non-empty
/// blocks overlap. Returns the sum of the counts, in units.
pub(crate) fn check_layout(counts_name: &str, displs_name: &str, counts: &[u64], displs: &[u64], unit: u64, size: u32, disjoint: bool) -> Result<u64, CollError> {
    check_len(counts_name, counts, size)?;
    check_len(displs_name, displs, size)?;
    for r in 0..size as usize {
        let end = displs[r].checked_add(counts[r]).and_then(|e| e.checked_mul(unit));
        if end.is_none_or(|e| e > LIMIT) {
            return Err(CollError::BadArgument(format!(
                "the block of rank {r} ({displs_name}[{r}] = {}, {counts_name}[{r}] = {}) reaches past 4 GiB - 1 bytes, the largest message of a schedule",
                displs[r], counts[r]
            )));
        }
    }
    if disjoint {
        let mut order: Vec<usize> = (0..size as usize).filter(|&r| counts[r] > 0).collect();
        order.sort_by_key(|&r| displs[r]);
        for w in order.windows(2) {
            let (a, b) = (w[0], w[1]);
            if displs[a] + counts[a] > displs[b] {
                return Err(CollError::BadArgument(format!(
                    "the blocks of ranks {a} ({displs_name}[{a}] = {}, {} long) and {b} ({displs_name}[{b}] = {}, {} long) overlap: the blocks a rank receives must be disjoint",
                    displs[a], counts[a], displs[b], counts[b]
                )));
            }
        }
    }
    total(counts_name, counts, unit)
}

/// The sum of `counts`, refused if `unit` times it exceeds 4 GiB − 1 bytes.
pub(crate) fn total(counts_name: &str, counts: &[u64], unit: u64) -> Result<u64, CollError> {
    let sum = counts.iter().try_fold(0u64, |a, &c| a.checked_add(c));
    match sum {
        Some(s) if s.checked_mul(unit).is_some_and(|b| b <= LIMIT) => Ok(s),
        _ => Err(CollError::BadArgument(format!(
            "the blocks of {counts_name} add up to more than 4 GiB - 1 bytes, the largest message of a schedule"
        ))),
    }
}

/// Refuses a single block (`name`, bytes) that a message could not hold.
pub(crate) fn check_count(name: &str, count: u64) -> Result<(), CollError> {
    if count > LIMIT {
        return Err(CollError::BadArgument(format!("{name} {count} is larger than 4 GiB - 1 bytes, the largest message of a schedule")));
    }
    Ok(())
}

/// Refuses a count that differs from the layout's entry for this rank.
pub(crate) fn check_own(name: &str, count: u64, counts_name: &str, counts: &[u64], rank: u32) -> Result<(), CollError> {
    match counts.get(rank as usize) {
        Some(&c) if c != count => Err(CollError::BadArgument(format!("{name} {count} differs from {counts_name}[{rank}] = {c}"))),
        _ => Ok(()),
    }
}

/// The blocks of relative ranks `first .. first + n` (relative to `root`),
/// in relative rank order, as address ranges of `base` (empty ones left
/// out, adjacent ones joined): what one binomial-tree message carries.
pub(crate) fn relative_pieces(base: u64, counts: &[u64], displs: &[u64], first: u32, n: u32, root: u32) -> Vec<(u64, u64)> {
    let size = counts.len() as u32;
    let pieces = (first..first + n).map(|v| real(v, root, size) as usize).filter(|&r| counts[r] > 0).map(|r| (base + displs[r], counts[r]));
    merge(pieces.collect())
}

/// The bytes of relative ranks `first .. first + n` (relative to `root`).
pub(crate) fn relative_sum(counts: &[u64], first: u32, n: u32, root: u32) -> u64 {
    let size = counts.len() as u32;
    (first..first + n).map(|v| counts[real(v, root, size) as usize]).sum()
}

/// `alg`, with [`Algorithm::Auto`] resolved by [`auto_v`], if it applies to `coll`.
pub(crate) fn resolve_v(coll: Coll, alg: Algorithm, size: u32, total: u64, largest: u64) -> Result<Algorithm, CollError> {
    let alg = if alg == Algorithm::Auto { auto_v(coll, size, total, largest) } else { alg };
    resolve(coll, alg, size, total)
}

/// The algorithm `GOAL_ALG_AUTO` picks for a collective with per-rank
/// counts on `size` ranks, from the `total` bytes of all blocks and the
/// `largest` block (bytes). For alltoallv, whose counts differ per rank,
/// `total` is the larger of what this rank sends and what it receives;
/// every other collective decides from numbers every rank has alike.
///
/// These rules are built in, not measured: the measured table
/// (`goal tune`) has no rows for them yet.
///
/// | collective | choice |
/// |---|---|
/// | gatherv | linear above 6000 bytes per rank on average; binomial above 60 ranks, or above 10 ranks below 1 KiB on average; else linear (Open MPI's gather rules on the average block) |
/// | scatterv | binomial above 10 ranks below 300 bytes on average; else linear (Open MPI's scatter rules) |
/// | allgatherv | with an allgather's layout (counts alike, block `r` at `r` counts) the allgather AUTO picks (see `allgatherv`); else linear (every message at once) up to 8 ranks or below 50000 bytes in total; ring above |
/// | alltoallv | linear (every message at once) up to 8 ranks or up to 256 bytes per peer on average; pairwise exchange above |
/// | reduce_scatter | ring above 64 KiB in total if `(size - 1) * largest < (ceil(log2 size) + 1) * total`; else binomial reduce + linear scatterv |
///
/// Why: with a rank's messages all in flight at once, linear allgatherv and
/// alltoallv move the same bytes as the ring and the pairwise exchange but
/// never wait for a peer step by step; with more ranks than cores that
/// waiting dominated the alltoall's time (see `alltoall`), so they keep it up
/// to 8 ranks and for small totals, where the stepped algorithms only add
/// latency. The ring reduce_scatter takes `size - 1` steps of the *largest*
/// block each, the reduce + scatterv about `log2(size) + 1` passes of the
/// whole vector: with one rank holding most of the result the ring loses,
/// and the rule above compares the two. Linear and pairwise alltoallv send
/// the same messages with the same tags, so ranks that choose differently
/// (their byte counts differ) still match.
pub fn auto_v(coll: Coll, size: u32, total: u64, largest: u64) -> Algorithm {
    use Algorithm::*;
    let p = size.max(1) as u64;
    let average = total / p;
    match coll {
        Coll::Gatherv => {
            if average <= 6000 && (p > 60 || (p > 10 && average < 1024)) {
                Binomial
            } else {
                Linear
            }
        }
        Coll::Scatterv => {
            if p > 10 && average < 300 {
                Binomial
            } else {
                Linear
            }
        }
        Coll::Allgatherv => {
            if p <= 8 || total < 50000 {
                Linear
            } else {
                Ring
            }
        }
        Coll::Alltoallv => {
            if p <= 8 || average <= 256 {
                Linear
            } else {
                LinearSync
            }
        }
        Coll::ReduceScatter => {
            let log = 64 - (p - 1).leading_zeros() as u64; // ceil(log2 p)
            if total > 64 << 10 && ((p - 1) as u128) * (largest as u128) < ((log + 1) as u128) * (total as u128) {
                Ring
            } else {
                Linear
            }
        }
        _ => super::auto(coll, size, total.div_ceil(p)),
    }
}
