//! Every rank's graph of one named collective over a whole group: what
//! `goal sim --coll` simulates and `goal export --coll` writes, built by
//! the same builders the runtime calls, so the schedule simulated is the
//! schedule run.
//!
//! A [`World`] names the collective, the algorithm, the group size, the
//! size in bytes and the root; [`World::rank_graph`] builds one rank's
//! graph, on its own (a graph holds one rank; a million ranks are built one
//! at a time). Sizes follow [`auto`](super::auto): `bytes` is the message
//! of bcast, one rank's block of gather, scatter, allgather, alltoall and
//! reduce_scatter_block, the vector of reduce and allreduce, and every
//! rank's equal block of the collectives with per-rank counts. Reductions
//! add bytes (unsigned 8-bit elements), so `bytes` is also the count.
//! Buffers are user addresses (send buffer at 2^32, receive buffer at
//! 2^40, never in place); tags start at 0 (the runtime's start at 2^30:
//! only the numbers differ).

use super::*;

/// One collective over a whole group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// The collective.
    pub coll: Coll,
    /// The algorithm ([`Algorithm::Auto`] is resolved per rank, as the
    /// runtime does).
    pub alg: Algorithm,
    /// Ranks in the group.
    pub size: u32,
    /// Bytes (see the module doc).
    pub bytes: u64,
    /// The root, for the rooted collectives.
    pub root: u32,
    /// Equal counts and displacements, for the v-collectives.
    counts: Vec<u64>,
    displs: Vec<u64>,
}

const SBUF: u64 = 1 << 32;
const RBUF: u64 = 1 << 40;

impl Coll {
    /// The collective called `name` ("allreduce", "reduce_scatter_block").
    pub fn from_name(name: &str) -> Option<Coll> {
        Coll::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl Algorithm {
    /// The algorithm called `name`: "auto", "linear", "linear_sync",
    /// "binomial", "recursive_doubling", "bruck" (also "dissemination"),
    /// "ring", "pipeline", "rabenseifner"; `-` for `_` is accepted.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        let n = name.to_ascii_lowercase().replace('-', "_");
        let n = n.strip_prefix("goal_alg_").unwrap_or(&n);
        if n == "dissemination" {
            return Some(Algorithm::Bruck);
        }
        Algorithm::ALL.iter().copied().find(|a| a.c_name()["GOAL_ALG_".len()..].eq_ignore_ascii_case(n))
    }

    /// The name [`from_name`](Self::from_name) takes ("recursive_doubling").
    pub fn name(self) -> String {
        self.c_name()["GOAL_ALG_".len()..].to_ascii_lowercase()
    }
}

impl World {
    /// `coll` with `alg` over `size` ranks, `bytes` each, rooted at `root`.
    pub fn new(coll: Coll, alg: Algorithm, size: u32, bytes: u64, root: u32) -> Result<World, CollError> {
        if size == 0 {
            return Err(CollError::BadArgument("a collective needs at least 1 rank".into()));
        }
        check_root(root, size)?;
        if alg != Algorithm::Auto && !algorithms(coll).contains(&alg) {
            resolve(coll, alg, size, bytes)?;
        }
        let v = matches!(coll, Coll::Gatherv | Coll::Scatterv | Coll::Allgatherv | Coll::Alltoallv | Coll::ReduceScatter);
        let (counts, displs) = if v { ((0..size).map(|_| bytes).collect(), (0..size as u64).map(|r| r * bytes).collect()) } else { (Vec::new(), Vec::new()) };
        Ok(World { coll, alg, size, bytes, root, counts, displs })
    }

    /// Rank `rank`'s graph.
    pub fn rank_graph(&self, rank: u32) -> Result<Graph, CollError> {
        let mut g = Graph::new();
        let grp = Group { rank, size: self.size };
        let at = Placement { tag_base: 0 };
        let (b, alg, root) = (self.bytes, self.alg, self.root);
        let red = Reduction::new(ReduceOp::Add, DataType::UInt, 8);
        let (c, d) = (&self.counts[..], &self.displs[..]);
        match self.coll {
            Coll::Barrier => barrier(&mut g, grp, at, alg),
            Coll::Bcast => bcast(&mut g, grp, at, RBUF, b, root, alg),
            Coll::Gather => gather(&mut g, grp, at, SBUF, b, RBUF, root, alg),
            Coll::Scatter => scatter(&mut g, grp, at, SBUF, b, RBUF, root, alg),
            Coll::Allgather => allgather(&mut g, grp, at, SBUF, b, RBUF, alg),
            Coll::Alltoall => alltoall(&mut g, grp, at, SBUF, b, RBUF, alg),
            Coll::Reduce => reduce(&mut g, grp, at, SBUF, RBUF, b, red, root, alg),
            Coll::Allreduce => allreduce(&mut g, grp, at, SBUF, RBUF, b, red, alg),
            Coll::ReduceScatterBlock => reduce_scatter_block(&mut g, grp, at, SBUF, RBUF, b, red, alg),
            Coll::Gatherv => gatherv(&mut g, grp, at, SBUF, b, RBUF, c, d, root, alg),
            Coll::Scatterv => scatterv(&mut g, grp, at, SBUF, c, d, RBUF, b, root, alg),
            Coll::Allgatherv => allgatherv(&mut g, grp, at, SBUF, b, RBUF, c, d, alg),
            Coll::Alltoallv => alltoallv(&mut g, grp, at, SBUF, c, d, RBUF, c, d, alg),
            Coll::ReduceScatter => reduce_scatter(&mut g, grp, at, SBUF, RBUF, c, red, alg),
        }?;
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_collective_builds_every_algorithm() {
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::from_name(&a.name()), Some(a));
        }
        assert_eq!(Algorithm::from_name("dissemination"), Some(Algorithm::Bruck));
        assert_eq!(Algorithm::from_name("GOAL_ALG_RING"), Some(Algorithm::Ring));
        for c in Coll::ALL {
            assert_eq!(Coll::from_name(c.name()), Some(c));
            for &a in algorithms(c).iter().chain([Algorithm::Auto].iter()) {
                let w = World::new(c, a, 5, 64, 2).unwrap();
                for r in 0..5 {
                    let g = w.rank_graph(r).unwrap_or_else(|e| panic!("{} {:?} rank {r}: {e}", c.name(), a));
                    assert!(g.len() >= 2, "{} {:?}", c.name(), a);
                }
            }
        }
        assert!(World::new(Coll::Barrier, Algorithm::Ring, 4, 0, 0).is_err());
        assert!(World::new(Coll::Bcast, Algorithm::Binomial, 4, 8, 4).is_err());
    }
}
