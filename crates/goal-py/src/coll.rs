//! Every collective of goal with buffers given at each run.
//!
//! A call is turned into a [`Call`]: its [`Key`] (what the schedule depends
//! on: the collective, sizes, dtype and operator of a reduction, root,
//! algorithm, in place or not) and the caller's buffers, acquired in place
//! (`buf`). The schedule is built by goal-sched's graph builders, the same
//! the C API's `GOAL_Xxx_init` call, with run-time buffer 0 as the send
//! buffer and run-time buffer 1 as the receive buffer (`GOAL_BUF_AT_RUN`),
//! so it names no array; it comes from the group's cache (see `group`) and
//! runs on the call's arrays. Three ways to call (`collfn`): blocking
//! (`goal.allreduce`), starting (`goal.iallreduce`, a `goal.Handle`), and
//! persistent (`goal.allreduce_init`, a `goal.Schedule` bound to the arrays,
//! run as often as wanted).
//!
//! Sizes come from the arrays. Every member must pass the same sizes (and
//! the same in-place choice for allreduce), as in MPI; a disagreement is
//! reported by goal (`ERR_MISMATCH`) rather than hanging, because the
//! collectives' receives take only messages of their exact length.

use crate::buf::{Buffer, Dtype};
use crate::err;
use crate::group::Group;
use goal_sched::coll::{self, Algorithm, Coll as Kind, Reduction};
use goal_sched::{run_addr, Graph, ReduceOp};
use pyo3::prelude::*;

/// What a one-shot collective's schedule depends on: equal keys, the same
/// schedule. Every field is one the group's members agree on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) kind: Kind,
    /// Bytes (moving collectives, per rank where the collective has blocks)
    /// or elements (reductions).
    pub(crate) count: u64,
    /// Per-rank counts and displacements (v-collectives), in bytes
    /// (reduce_scatter: elements), concatenated as the builder takes them.
    pub(crate) v: Vec<u64>,
    pub(crate) root: u32,
    /// The reduction (`None` for collectives that only move bytes).
    pub(crate) red: Option<(ReduceOp, Dtype)>,
    pub(crate) alg: Algorithm,
    pub(crate) in_place: bool,
}

/// One call: the key, its group and the arrays (slot 0 send, slot 1 receive).
pub(crate) struct Call {
    pub(crate) what: &'static str,
    pub(crate) key: Key,
    pub(crate) group: Py<Group>,
    pub(crate) bufs: [Option<Buffer>; 2],
}

/// The collective tag space, as the C API's (GOAL_COLL_TAG_BASE).
const TAG_BASE: i64 = 1 << 30;

/// Builds the collective of `key` for this rank of `me`.
pub(crate) fn build(key: &Key, me: coll::Group) -> Result<Graph, coll::CollError> {
    let mut g = Graph::new();
    let at = coll::Placement { tag_base: TAG_BASE };
    let s = run_addr(0, 0);
    let r = if key.in_place { s } else { run_addr(1, 0) };
    let red = || {
        let (op, dt) = key.red.expect("a reduction has its operator");
        Reduction::new(op, dt.dt, dt.bits)
    };
    let n = key.count;
    let size = me.size as usize;
    let v = &key.v;
    match key.kind {
        Kind::Barrier => coll::barrier(&mut g, me, at, key.alg),
        Kind::Bcast => coll::bcast(&mut g, me, at, s, n, key.root, key.alg),
        Kind::Gather => coll::gather(&mut g, me, at, s, n, r, key.root, key.alg),
        Kind::Scatter => coll::scatter(&mut g, me, at, s, n, r, key.root, key.alg),
        Kind::Allgather => coll::allgather(&mut g, me, at, s, n, r, key.alg),
        Kind::Alltoall => coll::alltoall(&mut g, me, at, s, n, r, key.alg),
        Kind::Reduce => coll::reduce(&mut g, me, at, s, r, n, red(), key.root, key.alg),
        Kind::Allreduce => coll::allreduce(&mut g, me, at, s, r, n, red(), key.alg),
        Kind::ReduceScatterBlock => coll::reduce_scatter_block(&mut g, me, at, s, r, n, red(), key.alg),
        Kind::Gatherv => coll::gatherv(&mut g, me, at, s, n, r, &v[..size], &v[size..], key.root, key.alg),
        Kind::Scatterv => coll::scatterv(&mut g, me, at, s, &v[..size], &v[size..], r, n, key.root, key.alg),
        Kind::Allgatherv => coll::allgatherv(&mut g, me, at, s, n, r, &v[..size], &v[size..], key.alg),
        Kind::Alltoallv => coll::alltoallv(&mut g, me, at, s, &v[..size], &v[size..2 * size], r, &v[2 * size..3 * size], &v[3 * size..], key.alg),
        Kind::ReduceScatter => coll::reduce_scatter(&mut g, me, at, s, r, v, red(), key.alg),
    }?;
    Ok(g)
}

impl Call {
    /// The compiled schedule for this call's key, from the group's cache.
    pub(crate) fn schedule(&self, py: Python<'_>) -> PyResult<goal_rt::Schedule> {
        let grp = self.group.bind(py).get();
        let mut cache = grp.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get_or(&self.key, || {
            let rt = goal_rt::runtime(self.what).map_err(err::to_py)?;
            let me = coll::Group { rank: grp.g.rank(), size: grp.g.size() };
            let g = build(&self.key, me).map_err(|e| match e {
                coll::CollError::Unsupported(m) => err::new(goal_rt::ErrorKind::Unsupported, format!("{}: {m}", self.what)),
                coll::CollError::BadArgument(m) => err::invalid(format!("{}: {m}", self.what)),
            })?;
            rt.compile_on(&grp.g, &g).map_err(|mut e| {
                e.message = format!("{}: {}", self.what, e.message);
                err::to_py(e)
            })
        })
    }

    /// The run-time buffers, as `run_with` takes them.
    pub(crate) fn slots(&self) -> [(*mut u8, usize); 2] {
        let one = |b: &Option<Buffer>| b.as_ref().map_or((std::ptr::null_mut(), 0), Buffer::slot);
        [one(&self.bufs[0]), one(&self.bufs[1])]
    }
}

/// The operator constants: mpi4py's names and goal's.
pub(crate) const OPS: [(&str, ReduceOp); 11] = [
    ("SUM", ReduceOp::Add),
    ("PROD", ReduceOp::Mul),
    ("MIN", ReduceOp::Min),
    ("MAX", ReduceOp::Max),
    ("BAND", ReduceOp::And),
    ("BOR", ReduceOp::Or),
    ("BXOR", ReduceOp::Xor),
    ("ADD", ReduceOp::Add),
    ("MUL", ReduceOp::Mul),
    ("AND", ReduceOp::And),
    ("OR", ReduceOp::Or),
];

/// A reducing operator from its C API number, checked.
pub(crate) fn op_of(what: &str, op: i64) -> PyResult<ReduceOp> {
    match ReduceOp::from_raw(op) {
        Some(o @ (ReduceOp::Max | ReduceOp::Min | ReduceOp::Add | ReduceOp::Mul | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)) => Ok(o),
        _ => Err(err::new(
            goal_rt::ErrorKind::BadOp,
            format!("{what}: op {op} does not reduce (use goal.SUM, goal.PROD, goal.MIN, goal.MAX, goal.BAND, goal.BOR or goal.BXOR)"),
        )),
    }
}

/// An algorithm from its C API number, checked.
pub(crate) fn alg_of(what: &str, alg: i64) -> PyResult<Algorithm> {
    Algorithm::from_raw(alg).ok_or_else(|| err::invalid(format!("{what}: algorithm {alg} does not exist (goal.ALG_AUTO .. goal.ALG_RABENSEIFNER are 0 .. 8)")))
}

/// `goal.SUM` ..., `goal.ALG_*`.
pub(crate) fn register_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, op) in OPS {
        m.add(name, op as i64)?;
    }
    m.add("BXOR", ReduceOp::Xor as i64)?;
    m.add("XOR", ReduceOp::Xor as i64)?;
    for a in Algorithm::ALL {
        m.add(a.c_name().trim_start_matches("GOAL_"), a as i64)?;
    }
    Ok(())
}
