//! The Python functions of every collective, three per collective:
//! `goal.allreduce(...)` (blocking), `goal.iallreduce(...)` (returns a
//! `goal.Handle`) and `goal.allreduce_init(...)` (a persistent
//! `goal.Schedule` bound to the arrays; call or `.run()` it each time).
//!
//! Each `prep_*` reads its arguments into a [`Call`] and checks them so
//! that a mistake is named in Python's terms (which array, how many bytes
//! it holds and needs) before goal sees it; sizes come from the arrays.

// A Python function takes its keyword arguments one by one, as MPI's
// signatures have them: some collectives have eight or nine.
#![allow(clippy::too_many_arguments)]

use crate::buf::{self, Buffer};
use crate::coll::{alg_of, op_of, Call, Key};
use goal_sched::coll::Coll as Kind;
use crate::err;
use crate::exec::{self, Handle, Schedule};
use crate::group::{self, Group};
use pyo3::prelude::*;
use std::sync::Arc;

/// `goal.IN_PLACE`: as a send buffer, "the data is in the receive buffer".
#[pyclass(module = "goal", frozen, name = "_InPlace")]
struct InPlace;

#[pymethods]
impl InPlace {
    fn __repr__(&self) -> &'static str {
        "goal.IN_PLACE"
    }
}

fn is_in_place(o: &Bound<'_, PyAny>) -> bool {
    o.downcast::<InPlace>().is_ok()
}

/// What the three forms share: the group, its rank and size.
struct Ctx {
    what: &'static str,
    group: Py<Group>,
    rank: u32,
    size: u32,
    alg: goal_sched::coll::Algorithm,
}

fn ctx(py: Python<'_>, what: &'static str, group: Option<Py<Group>>, alg: i64) -> PyResult<Ctx> {
    let group = group::or_world(py, group, what)?;
    let (rank, size) = {
        let g = &group.bind(py).get().g;
        (g.rank(), g.size())
    };
    Ok(Ctx { what, group, rank, size, alg: alg_of(what, alg)? })
}

impl Ctx {
    fn key(&self, kind: Kind, count: u64) -> Key {
        Key { kind, count, v: Vec::new(), root: 0, red: None, alg: self.alg, in_place: false }
    }
    fn call(self, key: Key, send: Option<Buffer>, recv: Option<Buffer>) -> Call {
        Call { what: self.what, key, group: self.group, bufs: [send, recv] }
    }
    fn root(&self, root: i64) -> PyResult<u32> {
        if root < 0 || root >= self.size as i64 {
            return Err(err::new(goal_rt::ErrorKind::Rank, format!("{}: root {root} is outside the group of {} ranks", self.what, self.size)));
        }
        Ok(root as u32)
    }
    fn send(&self, o: &Bound<'_, PyAny>) -> PyResult<Buffer> {
        buf::acquire(o, false, self.what, "sendbuf")
    }
    fn recv(&self, o: &Bound<'_, PyAny>) -> PyResult<Buffer> {
        buf::acquire(o, true, self.what, "recvbuf")
    }
    /// `recvbuf`, required (on this rank).
    fn recv_req(&self, o: Option<&Bound<'_, PyAny>>, why: &str) -> PyResult<Buffer> {
        match o {
            Some(o) if !o.is_none() => self.recv(o),
            _ => Err(err::invalid(format!("{}: recvbuf is required{why}", self.what))),
        }
    }
    /// Refuses `b` (argument `name`) if it holds fewer than `bytes`.
    fn holds(&self, name: &str, b: &Buffer, bytes: u64, why: &str) -> PyResult<()> {
        if b.len() < bytes {
            return Err(err::invalid(format!("{}: {name} holds {} bytes, fewer than the {bytes} it needs ({why})", self.what, b.len())));
        }
        Ok(())
    }
    /// Refuses a reduction whose arrays differ in dtype.
    fn same_dtype(&self, a: &Buffer, b: &Buffer) -> PyResult<()> {
        if a.dtype != b.dtype {
            return Err(err::invalid(format!(
                "{}: sendbuf is {} but recvbuf is {}: a reduction takes one dtype",
                self.what,
                a.dtype.name(),
                b.dtype.name()
            )));
        }
        Ok(())
    }
    /// Refuses overlapping send and receive arrays (in place is
    /// `goal.IN_PLACE` where the collective has it).
    fn apart(&self, a: &Buffer, b: &Buffer) -> PyResult<()> {
        let (a0, b0) = (a.ptr() as u64, b.ptr() as u64);
        if a0 < b0 + b.len() && b0 < a0 + a.len() && a.len() > 0 && b.len() > 0 {
            return Err(err::invalid(format!("{}: sendbuf and recvbuf overlap", self.what)));
        }
        Ok(())
    }
    /// Per-rank counts (elements) and displacements, in bytes of `esz`,
    /// checked against the group; returns (counts, displs, bytes spanned).
    fn layout(&self, name: &str, counts: &[i64], displs: Option<Vec<i64>>, esz: u64) -> PyResult<(Vec<u64>, Vec<u64>, u64)> {
        let n = self.size as usize;
        if counts.len() != n {
            return Err(err::invalid(format!("{}: {name} has {} entries for a group of {n} ranks", self.what, counts.len())));
        }
        let displs = match displs {
            Some(d) if d.len() != n => return Err(err::invalid(format!("{}: the displacements for {name} have {} entries for a group of {n} ranks", self.what, d.len()))),
            Some(d) => d,
            None => counts.iter().scan(0i64, |at, &c| Some(std::mem::replace(at, *at + c.max(0)))).collect(),
        };
        let mut span = 0u64;
        let (mut c, mut d) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, (&ci, &di)) in counts.iter().zip(&displs).enumerate() {
            if ci < 0 || di < 0 {
                return Err(err::invalid(format!("{}: {name}[{i}] = {ci}, displacement {di}: negative", self.what)));
            }
            c.push(ci as u64 * esz);
            d.push(di as u64 * esz);
            span = span.max((ci + di) as u64 * esz);
        }
        Ok((c, d, span))
    }
}

fn barrier_prep(py: Python<'_>, what: &'static str, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let key = c.key(Kind::Barrier, 0);
    Ok(c.call(key, None, None))
}

fn bcast_prep(py: Python<'_>, what: &'static str, buf: &Bound<'_, PyAny>, root: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let root = c.root(root)?;
    let b = if c.rank == root { c.send(buf)? } else { buf::acquire(buf, true, what, "buf")? };
    let mut key = c.key(Kind::Bcast, b.len());
    key.root = root;
    Ok(c.call(key, Some(b), None))
}

#[allow(clippy::too_many_arguments)]
fn reduce_prep(py: Python<'_>, what: &'static str, sendbuf: &Bound<'_, PyAny>, recvbuf: Option<&Bound<'_, PyAny>>, op: i64, root: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let root = c.root(root)?;
    let op = op_of(what, op)?;
    let s = c.send(sendbuf)?;
    let r = if c.rank == root {
        let r = c.recv_req(recvbuf, " at the root")?;
        c.same_dtype(&s, &r)?;
        c.holds("recvbuf", &r, s.len(), "as many as sendbuf")?;
        c.apart(&s, &r)?;
        Some(r)
    } else {
        None
    };
    let mut key = c.key(Kind::Reduce, s.count());
    key.root = root;
    key.red = Some((op, s.dtype));
    Ok(c.call(key, Some(s), r))
}

fn allreduce_prep(py: Python<'_>, what: &'static str, sendbuf: &Bound<'_, PyAny>, recvbuf: Option<&Bound<'_, PyAny>>, op: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let op = op_of(what, op)?;
    let recvbuf = recvbuf.filter(|r| !r.is_none());
    let (s, r, in_place) = match (is_in_place(sendbuf), recvbuf) {
        (true, None) => return Err(err::invalid(format!("{what}: sendbuf is goal.IN_PLACE but no recvbuf is given"))),
        (true, Some(r)) => (c.recv(r)?, None, true),
        (false, None) => (buf::acquire(sendbuf, true, what, "sendbuf (in place: no recvbuf)")?, None, true),
        (false, Some(r)) => {
            let (s, r) = (c.send(sendbuf)?, c.recv(r)?);
            c.same_dtype(&s, &r)?;
            c.holds("recvbuf", &r, s.len(), "as many as sendbuf")?;
            c.apart(&s, &r)?;
            (s, Some(r), false)
        }
    };
    let mut key = c.key(Kind::Allreduce, s.count());
    key.red = Some((op, s.dtype));
    key.in_place = in_place;
    Ok(c.call(key, Some(s), r))
}

fn reduce_scatter_block_prep(py: Python<'_>, what: &'static str, sendbuf: &Bound<'_, PyAny>, recvbuf: &Bound<'_, PyAny>, op: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let op = op_of(what, op)?;
    let (s, r) = (c.send(sendbuf)?, c.recv(recvbuf)?);
    c.same_dtype(&s, &r)?;
    if s.count() % c.size as u64 != 0 {
        return Err(err::invalid(format!("{what}: sendbuf's {} elements do not split into {} equal blocks", s.count(), c.size)));
    }
    let n = s.count() / c.size as u64;
    c.holds("recvbuf", &r, n * s.dtype.size(), "one block of sendbuf")?;
    c.apart(&s, &r)?;
    let mut key = c.key(Kind::ReduceScatterBlock, n);
    key.red = Some((op, s.dtype));
    Ok(c.call(key, Some(s), Some(r)))
}

fn reduce_scatter_prep(py: Python<'_>, what: &'static str, sendbuf: &Bound<'_, PyAny>, recvbuf: &Bound<'_, PyAny>, counts: Vec<i64>, op: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let op = op_of(what, op)?;
    let (s, r) = (c.send(sendbuf)?, c.recv(recvbuf)?);
    c.same_dtype(&s, &r)?;
    let (v, _, total) = c.layout("counts", &counts, None, 1)?;
    c.holds("sendbuf", &s, total * s.dtype.size(), "the sum of counts")?;
    c.holds("recvbuf", &r, v[c.rank as usize] * s.dtype.size(), "counts[rank]")?;
    c.apart(&s, &r)?;
    let mut key = c.key(Kind::ReduceScatter, 0);
    key.v = v;
    key.red = Some((op, s.dtype));
    Ok(c.call(key, Some(s), Some(r)))
}

/// gather, scatter, allgather, alltoall: equal blocks of bytes.
#[allow(clippy::too_many_arguments)]
fn blocks_prep(py: Python<'_>, what: &'static str, kind: Kind, sendbuf: Option<&Bound<'_, PyAny>>, recvbuf: Option<&Bound<'_, PyAny>>, root: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    blocks_prep_at(py, what, kind, root, sendbuf, recvbuf, group, alg)
}

/// [`blocks_prep`] with the root before the arrays (the root-less forms pass 0).
#[allow(clippy::too_many_arguments)]
fn blocks_prep_at(py: Python<'_>, what: &'static str, kind: Kind, root: i64, sendbuf: Option<&Bound<'_, PyAny>>, recvbuf: Option<&Bound<'_, PyAny>>, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let root = if matches!(kind, Kind::Gather | Kind::Scatter) { c.root(root)? } else { 0 };
    let at_root = c.rank == root;
    let n = c.size as u64;
    let sendbuf = sendbuf.filter(|o| !o.is_none());
    let send_req = |why: &str| match sendbuf {
        Some(o) => c.send(o),
        None => Err(err::invalid(format!("{what}: sendbuf is required{why}"))),
    };
    let (s, r, block) = match kind {
        Kind::Gather => {
            let s = send_req("")?;
            let r = if at_root { Some(c.recv_req(recvbuf, " at the root")?) } else { None };
            if let Some(r) = &r {
                c.holds("recvbuf", r, n * s.len(), "one block of sendbuf per rank")?;
            }
            let block = s.len();
            (Some(s), r, block)
        }
        Kind::Scatter => {
            let r = c.recv_req(recvbuf, "")?;
            let s = if at_root { Some(send_req(" at the root")?) } else { None };
            if let Some(s) = &s {
                c.holds("sendbuf", s, n * r.len(), "one block of recvbuf per rank")?;
            }
            let block = r.len();
            (s, Some(r), block)
        }
        Kind::Allgather => {
            let (s, r) = (send_req("")?, c.recv_req(recvbuf, "")?);
            c.holds("recvbuf", &r, n * s.len(), "one block of sendbuf per rank")?;
            let block = s.len();
            (Some(s), Some(r), block)
        }
        _ => {
            let (s, r) = (send_req("")?, c.recv_req(recvbuf, "")?);
            if s.len() % n != 0 {
                return Err(err::invalid(format!("{what}: sendbuf's {} bytes do not split into {n} equal blocks", s.len())));
            }
            c.holds("recvbuf", &r, s.len(), "as many as sendbuf")?;
            let block = s.len() / n;
            (Some(s), Some(r), block)
        }
    };
    if let (Some(s), Some(r)) = (&s, &r) {
        c.apart(s, r)?;
    }
    let mut key = c.key(kind, block);
    key.root = root;
    Ok(c.call(key, s, r))
}

/// gatherv, scatterv, allgatherv: one array of blocks of `counts`.
#[allow(clippy::too_many_arguments)]
fn v_prep(py: Python<'_>, what: &'static str, kind: Kind, sendbuf: Option<&Bound<'_, PyAny>>, recvbuf: Option<&Bound<'_, PyAny>>, counts: Vec<i64>, displs: Option<Vec<i64>>, root: i64, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    v_prep_at(py, what, kind, root, sendbuf, recvbuf, counts, displs, group, alg)
}

/// [`v_prep`] with the root first (allgatherv passes 0).
#[allow(clippy::too_many_arguments)]
fn v_prep_at(py: Python<'_>, what: &'static str, kind: Kind, root: i64, sendbuf: Option<&Bound<'_, PyAny>>, recvbuf: Option<&Bound<'_, PyAny>>, counts: Vec<i64>, displs: Option<Vec<i64>>, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let root = if kind == Kind::Allgatherv { 0 } else { c.root(root)? };
    let at_root = c.rank == root || kind == Kind::Allgatherv;
    let (sendbuf, recvbuf) = (sendbuf.filter(|o| !o.is_none()), recvbuf.filter(|o| !o.is_none()));
    // The side with blocks is the receive side, except for scatterv.
    let blocks_are_send = kind == Kind::Scatterv;
    let s = match sendbuf {
        Some(o) => Some(c.send(o)?),
        None if blocks_are_send && !at_root => None,
        None => return Err(err::invalid(format!("{what}: sendbuf is required{}", if blocks_are_send { " at the root" } else { "" }))),
    };
    let r = match recvbuf {
        Some(o) => Some(c.recv(o)?),
        None if !blocks_are_send && !at_root => None,
        None => return Err(err::invalid(format!("{what}: recvbuf is required{}", if blocks_are_send { "" } else { " at the root" }))),
    };
    let esz = s.as_ref().or(r.as_ref()).map_or(1, |b| b.dtype.size());
    let (cv, dv, span) = c.layout("counts", &counts, displs, esz)?;
    let mine = cv[c.rank as usize];
    let (single, name_single, name_blocks) = if blocks_are_send { (&r, "recvbuf", "sendbuf") } else { (&s, "sendbuf", "recvbuf") };
    if let Some(b) = single {
        c.holds(name_single, b, mine, "counts[rank] elements")?;
    }
    if let Some(b) = if blocks_are_send { &s } else { &r } {
        c.holds(name_blocks, b, span, "every block of counts at its displacement")?;
    }
    if let (Some(s), Some(r)) = (&s, &r) {
        c.apart(s, r)?;
    }
    let mut key = c.key(kind, mine);
    key.root = root;
    key.v = [cv, dv].concat();
    Ok(c.call(key, s, r))
}

#[allow(clippy::too_many_arguments)]
fn alltoallv_prep(py: Python<'_>, what: &'static str, sendbuf: &Bound<'_, PyAny>, recvbuf: &Bound<'_, PyAny>, sendcounts: Vec<i64>, recvcounts: Vec<i64>, sdispls: Option<Vec<i64>>, rdispls: Option<Vec<i64>>, group: Option<Py<Group>>, alg: i64) -> PyResult<Call> {
    let c = ctx(py, what, group, alg)?;
    let (s, r) = (c.send(sendbuf)?, c.recv(recvbuf)?);
    let (sc, sd, sspan) = c.layout("sendcounts", &sendcounts, sdispls, s.dtype.size())?;
    let (rc, rd, rspan) = c.layout("recvcounts", &recvcounts, rdispls, r.dtype.size())?;
    c.holds("sendbuf", &s, sspan, "every block of sendcounts at its displacement")?;
    c.holds("recvbuf", &r, rspan, "every block of recvcounts at its displacement")?;
    c.apart(&s, &r)?;
    let mut key = c.key(Kind::Alltoallv, 0);
    key.v = [sc, sd, rc, rd].concat();
    Ok(c.call(key, Some(s), Some(r)))
}

/// Runs `call` and waits, the GIL released meanwhile.
fn blocking(py: Python<'_>, call: Call) -> PyResult<()> {
    let s = call.schedule(py)?;
    let h = exec::start(call.what, &s, &call.slots())?;
    exec::wait(py, call.what, h)
}

/// Starts `call`; the handle holds its arrays.
fn starting(py: Python<'_>, call: Call) -> PyResult<Handle> {
    let s = call.schedule(py)?;
    let h = exec::start(call.what, &s, &call.slots())?;
    let keep = call.bufs.into_iter().flatten().map(Arc::new).collect();
    Ok(Handle::new(call.what, h, keep, s))
}

/// A persistent schedule bound to `call`'s arrays.
fn persistent(py: Python<'_>, call: Call) -> PyResult<Schedule> {
    let s = call.schedule(py)?;
    let defaults = call.bufs.into_iter().map(|b| b.map(Arc::new)).collect();
    Ok(Schedule { s, bound: Arc::default(), defaults, what: call.what })
}

/// The three forms of one collective.
macro_rules! three {
    ($prep:ident ($($pre:expr),*), $block:ident, $start:ident, $init:ident, $doc:literal, ($($sig:tt)*), ($($arg:ident : $ty:ty),*)) => {
        #[doc = $doc]
        #[doc = "\n\nBlocks until this rank's part is done (the GIL released meanwhile)."]
        #[pyfunction]
        #[pyo3(signature = ($($sig)*))]
        fn $block(py: Python<'_>, $($arg: $ty),*) -> PyResult<()> {
            blocking(py, $prep(py, concat!("goal.", stringify!($block)), $($pre,)* $($arg),*)?)
        }
        #[doc = $doc]
        #[doc = "\n\nStarts it and returns a goal.Handle; the arrays must not be touched until it is waited for."]
        #[pyfunction]
        #[pyo3(signature = ($($sig)*))]
        fn $start(py: Python<'_>, $($arg: $ty),*) -> PyResult<Handle> {
            starting(py, $prep(py, concat!("goal.", stringify!($start)), $($pre,)* $($arg),*)?)
        }
        #[doc = $doc]
        #[doc = "\n\nPersistent: a goal.Schedule bound to these arrays; sched() runs it and waits, sched.run() starts it."]
        #[pyfunction]
        #[pyo3(signature = ($($sig)*))]
        fn $init(py: Python<'_>, $($arg: $ty),*) -> PyResult<Schedule> {
            persistent(py, $prep(py, concat!("goal.", stringify!($init)), $($pre,)* $($arg),*)?)
        }
    };
}

type Obj<'a, 'py> = &'a Bound<'py, PyAny>;
type Opt<'a, 'py> = Option<&'a Bound<'py, PyAny>>;
type Grp = Option<Py<Group>>;

three!(barrier_prep(), barrier, ibarrier, barrier_init,
    "No rank leaves before every rank of the group has entered.",
    (*, group = None, alg = 0), (group: Grp, alg: i64));
three!(bcast_prep(), bcast, ibcast, bcast_init,
    "Broadcast: every rank's buf receives root's buf (all the same size).",
    (buf, root = 0, *, group = None, alg = 0), (buf: Obj, root: i64, group: Grp, alg: i64));
three!(reduce_prep(), reduce, ireduce, reduce_init,
    "Reduce: root's recvbuf receives the element-wise op of every rank's sendbuf.",
    (sendbuf, recvbuf = None, op = 2, root = 0, *, group = None, alg = 0), (sendbuf: Obj, recvbuf: Opt, op: i64, root: i64, group: Grp, alg: i64));
three!(allreduce_prep(), allreduce, iallreduce, allreduce_init,
    "Allreduce: every rank's recvbuf receives the element-wise op of every rank's sendbuf, bit-identical on all ranks. Without recvbuf (or with sendbuf=goal.IN_PLACE) in place.",
    (sendbuf, recvbuf = None, op = 2, *, group = None, alg = 0), (sendbuf: Obj, recvbuf: Opt, op: i64, group: Grp, alg: i64));
three!(reduce_scatter_block_prep(), reduce_scatter_block, ireduce_scatter_block, reduce_scatter_block_init,
    "Reduce-scatter with equal blocks: rank i's recvbuf receives block i of the element-wise op of every rank's sendbuf.",
    (sendbuf, recvbuf, op = 2, *, group = None, alg = 0), (sendbuf: Obj, recvbuf: Obj, op: i64, group: Grp, alg: i64));
three!(reduce_scatter_prep(), reduce_scatter, ireduce_scatter, reduce_scatter_init,
    "Reduce-scatter: rank i's recvbuf receives counts[i] elements of the reduction, the blocks laid out in rank order.",
    (sendbuf, recvbuf, counts, op = 2, *, group = None, alg = 0), (sendbuf: Obj, recvbuf: Obj, counts: Vec<i64>, op: i64, group: Grp, alg: i64));
three!(blocks_prep(Kind::Gather), gather, igather, gather_init,
    "Gather: block i of root's recvbuf receives rank i's sendbuf (recvbuf only at the root).",
    (sendbuf, recvbuf = None, root = 0, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, root: i64, group: Grp, alg: i64));
three!(blocks_prep(Kind::Scatter), scatter, iscatter, scatter_init,
    "Scatter: rank i's recvbuf receives block i of root's sendbuf (sendbuf only at the root).",
    (sendbuf, recvbuf, root = 0, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, root: i64, group: Grp, alg: i64));
three!(blocks_prep_at(Kind::Allgather, 0), allgather, iallgather, allgather_init,
    "Allgather: block i of every rank's recvbuf receives rank i's sendbuf.",
    (sendbuf, recvbuf, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, group: Grp, alg: i64));
three!(blocks_prep_at(Kind::Alltoall, 0), alltoall, ialltoall, alltoall_init,
    "All-to-all: block j of rank i's sendbuf lands in block i of rank j's recvbuf.",
    (sendbuf, recvbuf, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, group: Grp, alg: i64));
three!(v_prep(Kind::Gatherv), gatherv, igatherv, gatherv_init,
    "Gatherv: rank i's sendbuf (counts[i] elements) lands at displs[i] of root's recvbuf (displs default: packed).",
    (sendbuf, recvbuf, counts, displs = None, root = 0, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, counts: Vec<i64>, displs: Option<Vec<i64>>, root: i64, group: Grp, alg: i64));
three!(v_prep(Kind::Scatterv), scatterv, iscatterv, scatterv_init,
    "Scatterv: rank i's recvbuf receives counts[i] elements at displs[i] of root's sendbuf (displs default: packed).",
    (sendbuf, recvbuf, counts, displs = None, root = 0, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, counts: Vec<i64>, displs: Option<Vec<i64>>, root: i64, group: Grp, alg: i64));
three!(v_prep_at(Kind::Allgatherv, 0), allgatherv, iallgatherv, allgatherv_init,
    "Allgatherv: rank i's sendbuf (counts[i] elements) lands at displs[i] of every rank's recvbuf (displs default: packed).",
    (sendbuf, recvbuf, counts, displs = None, *, group = None, alg = 0), (sendbuf: Opt, recvbuf: Opt, counts: Vec<i64>, displs: Option<Vec<i64>>, group: Grp, alg: i64));
three!(alltoallv_prep(), alltoallv, ialltoallv, alltoallv_init,
    "All-to-all with per-rank counts (elements) and displacements (default: packed): sendcounts[j] elements at sdispls[j] go to rank j, recvcounts[i] from rank i land at rdispls[i].",
    (sendbuf, recvbuf, sendcounts, recvcounts, sdispls = None, rdispls = None, *, group = None, alg = 0),
    (sendbuf: Obj, recvbuf: Obj, sendcounts: Vec<i64>, recvcounts: Vec<i64>, sdispls: Option<Vec<i64>>, rdispls: Option<Vec<i64>>, group: Grp, alg: i64));

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<InPlace>()?;
    m.add("IN_PLACE", Py::new(m.py(), InPlace)?)?;
    macro_rules! add {
        ($($f:ident),*) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(barrier, ibarrier, barrier_init, bcast, ibcast, bcast_init, reduce, ireduce, reduce_init);
    add!(allreduce, iallreduce, allreduce_init, reduce_scatter_block, ireduce_scatter_block, reduce_scatter_block_init);
    add!(reduce_scatter, ireduce_scatter, reduce_scatter_init, gather, igather, gather_init, scatter, iscatter, scatter_init);
    add!(allgather, iallgather, allgather_init, alltoall, ialltoall, alltoall_init, gatherv, igatherv, gatherv_init);
    add!(scatterv, iscatterv, scatterv_init, allgatherv, iallgatherv, allgatherv_init, alltoallv, ialltoallv, alltoallv_init);
    Ok(())
}
