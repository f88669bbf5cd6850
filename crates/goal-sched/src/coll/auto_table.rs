//! GOAL_ALG_AUTO's decision table, measured on this machine by `bench/tune.py`
//! ("goal tune"); regenerate it with `python3 bench/tune.py --prefix DIR`.
//!
//! Measured 2026-11-26T18:26:20Z on vm: 2 CPUs (Intel(R) Xeon(R) Processor), docker, kernel 6.18.44-fc-v657; group sizes 2, 3, 4, 5 round(s), progress default, ranks pinned to CPU r % ncpus.
//! alltoall measured again 2026-11-26T21:47:11Z (5 round(s), `--update`).
//! reduce measured again 2026-11-27T00:26:09Z (5 round(s), `--update`).
//! bcast, gather, reduce, scatter measured again 2026-11-27T01:11:38Z (3 round(s), `--update`).
//! bcast measured again 2026-11-27T06:38:13Z (7 round(s), `--update`).
//! barrier on 4 ranks measured again 2026-12-01 (7 round(s), `--colls barrier --no-write`, the row edited by hand): Bruck 1.93 us, recursive doubling 2.09.
//! allgather on 4 ranks, 512 KiB-1 MiB, measured again 2026-12-07 on a 2-vCPU AMD EPYC (`bench/ab.py`, 8 and 10 rounds; `docs/measurements/p2p-paired-2026-12-07`), the rows edited by hand: Bruck 0.80-0.93x recursive doubling's time, and 0.39-0.43x in runs where recursive doubling took 2.5-3x its usual time; recursive doubling kept at 256 KiB and below and from 2 MiB.
//! reduce_scatter_block on 4 ranks measured again 2026-12-08 on a 2-vCPU Intel Xeon (six rounds of `goal_coll`, 8 B-1 MiB; `docs/measurements/short-exchanges-2026-12-08`), the rows edited by hand: linear 0.61-0.77x recursive halving's time from 16 KiB (1 MiB: 1242 against 1749 us), 0.97-0.98x at 8 B and 8 KiB, 1.14-1.28x at 1-4 KiB; recursive halving kept up to 8 KiB.
//! Group sizes above 2 ran more ranks than CPUs: their choices reflect ranks sharing CPUs.
//!
//! A rule applies to `coll` on `min_size ..= max_size` ranks when `bytes <= max_bytes`
//! (`bytes` as in [`auto`](super::auto): one rank's contribution); the first rule that
//! applies wins. Group sizes no rule covers are left to `auto`'s built-in choices.

use super::{Algorithm, Coll};

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The collective.
    pub coll: Coll,
    /// Smallest group size the rule covers.
    pub min_size: u32,
    /// Largest group size the rule covers.
    pub max_size: u32,
    /// Largest contribution (bytes) the rule covers.
    pub max_bytes: u64,
    /// The algorithm measured fastest there.
    pub alg: Algorithm,
}

/// The measured rules, by collective, group size and size.
pub(crate) const TABLE: &[Rule] = &[
    Rule { coll: Coll::Barrier, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Bruck },
    Rule { coll: Coll::Barrier, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Barrier, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Bruck },
    Rule { coll: Coll::Bcast, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Binomial },
    Rule { coll: Coll::Bcast, min_size: 3, max_size: 3, max_bytes: 262144, alg: Algorithm::Binomial },
    Rule { coll: Coll::Bcast, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Pipeline },
    Rule { coll: Coll::Bcast, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Gather, min_size: 2, max_size: 2, max_bytes: 131072, alg: Algorithm::Binomial },
    Rule { coll: Coll::Gather, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Gather, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Gather, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Scatter, min_size: 2, max_size: 2, max_bytes: 131072, alg: Algorithm::Linear },
    Rule { coll: Coll::Scatter, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Binomial },
    Rule { coll: Coll::Scatter, min_size: 3, max_size: 3, max_bytes: 1048576, alg: Algorithm::Binomial },
    Rule { coll: Coll::Scatter, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Scatter, min_size: 4, max_size: 4, max_bytes: 1024, alg: Algorithm::Linear },
    Rule { coll: Coll::Scatter, min_size: 4, max_size: 4, max_bytes: 2048, alg: Algorithm::Binomial },
    Rule { coll: Coll::Scatter, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Allgather, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Bruck },
    Rule { coll: Coll::Allgather, min_size: 3, max_size: 3, max_bytes: 256, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Allgather, min_size: 3, max_size: 3, max_bytes: 32768, alg: Algorithm::Ring },
    Rule { coll: Coll::Allgather, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Bruck },
    Rule { coll: Coll::Allgather, min_size: 4, max_size: 4, max_bytes: 262144, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Allgather, min_size: 4, max_size: 4, max_bytes: 1048576, alg: Algorithm::Bruck },
    Rule { coll: Coll::Allgather, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Alltoall, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::LinearSync },
    Rule { coll: Coll::Alltoall, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Alltoall, min_size: 4, max_size: 4, max_bytes: 16384, alg: Algorithm::Linear },
    Rule { coll: Coll::Alltoall, min_size: 4, max_size: 4, max_bytes: 32768, alg: Algorithm::LinearSync },
    Rule { coll: Coll::Alltoall, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Linear },
    Rule { coll: Coll::Reduce, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Binomial },
    Rule { coll: Coll::Reduce, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Binomial },
    Rule { coll: Coll::Reduce, min_size: 4, max_size: 4, max_bytes: 4096, alg: Algorithm::Linear },
    Rule { coll: Coll::Reduce, min_size: 4, max_size: 4, max_bytes: 32768, alg: Algorithm::Binomial },
    Rule { coll: Coll::Reduce, min_size: 4, max_size: 4, max_bytes: 262144, alg: Algorithm::Linear },
    Rule { coll: Coll::Reduce, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Binomial },
    Rule { coll: Coll::Allreduce, min_size: 2, max_size: 2, max_bytes: 524288, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Allreduce, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Rabenseifner },
    Rule { coll: Coll::Allreduce, min_size: 3, max_size: 3, max_bytes: 2048, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Allreduce, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Rabenseifner },
    Rule { coll: Coll::Allreduce, min_size: 4, max_size: 4, max_bytes: 131072, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::Allreduce, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Rabenseifner },
    Rule { coll: Coll::ReduceScatterBlock, min_size: 2, max_size: 2, max_bytes: u64::MAX, alg: Algorithm::Ring },
    Rule { coll: Coll::ReduceScatterBlock, min_size: 3, max_size: 3, max_bytes: 512, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::ReduceScatterBlock, min_size: 3, max_size: 3, max_bytes: u64::MAX, alg: Algorithm::Ring },
    Rule { coll: Coll::ReduceScatterBlock, min_size: 4, max_size: 4, max_bytes: 8192, alg: Algorithm::RecursiveDoubling },
    Rule { coll: Coll::ReduceScatterBlock, min_size: 4, max_size: 4, max_bytes: u64::MAX, alg: Algorithm::Linear },
];

/// The measured choice for `coll` on `size` ranks with `bytes` per rank, if the table has one.
pub(crate) fn lookup(coll: Coll, size: u32, bytes: u64) -> Option<Algorithm> {
    TABLE.iter().find(|r| r.coll == coll && (r.min_size..=r.max_size).contains(&size) && bytes <= r.max_bytes).map(|r| r.alg)
}
