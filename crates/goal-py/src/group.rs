//! `goal.Group`: an ordered subset of the job's ranks, as an MPI
//! communicator (docs/api.md, Groups), and the cache that lets a one-shot
//! collective reuse the schedule of an identical earlier call.
//!
//! # The schedule cache
//!
//! A one-shot call (`goal.allreduce(x, y)`) is compiled with run-time
//! buffers (`GOAL_BUF_AT_RUN`): its schedule names no array, only how many
//! bytes each buffer needs, so the next call with the same shape (the
//! collective, its sizes, dtype, operator, root, algorithm, whether in
//! place) runs it again on whatever arrays it is given. Compiling is
//! collective in the matching sense (a group's members compile its
//! schedules in one order), and the cache keeps that: whether a call
//! compiles depends only on the calls made before it on the group and their
//! arguments, which every member passes alike, so all members hit or miss
//! together. Eviction is least-recently-used, also a function of the calls
//! alone; freeing a schedule is local. `CACHE_SLOTS` shapes per group.

use crate::err;
use goal_rt::{ErrorKind, Schedule};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use std::collections::HashMap;
use std::sync::Mutex;

/// Shapes of one-shot collectives kept compiled per group.
pub(crate) const CACHE_SLOTS: usize = 64;

/// Value of `color` that takes part in a split and gets no group (GOAL_UNDEFINED).
pub(crate) const UNDEFINED: i32 = -32766;

/// A group of ranks. `goal.world()` is every rank; `split` and `create`
/// make others. Collectives and graphs take one as `group=`.
#[pyclass(module = "goal", frozen)]
pub(crate) struct Group {
    pub(crate) g: goal_rt::Group,
    pub(crate) cache: Mutex<Cache>,
}

/// Compiled one-shot schedules of a group, by shape.
#[derive(Default)]
pub(crate) struct Cache {
    map: HashMap<crate::coll::Key, (Schedule, u64)>,
    tick: u64,
}

impl Cache {
    /// The schedule for `key`, compiled by `make` if absent.
    pub(crate) fn get_or(&mut self, key: &crate::coll::Key, make: impl FnOnce() -> PyResult<Schedule>) -> PyResult<Schedule> {
        self.tick += 1;
        if let Some((s, used)) = self.map.get_mut(key) {
            *used = self.tick;
            return Ok(s.clone());
        }
        let s = make()?;
        if self.map.len() >= CACHE_SLOTS {
            if let Some(oldest) = self.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) {
                self.map.remove(&oldest);
            }
        }
        self.map.insert(key.clone(), (s.clone(), self.tick));
        Ok(s)
    }
}

impl Group {
    fn wrap(g: goal_rt::Group) -> Group {
        Group { g, cache: Mutex::new(Cache::default()) }
    }
}

static WORLD: GILOnceCell<Mutex<Option<Py<Group>>>> = GILOnceCell::new();

/// The world group's one Python object (so that its cache is shared).
pub(crate) fn world(py: Python<'_>, what: &str) -> PyResult<Py<Group>> {
    let cell = WORLD.get_or_init(py, || Mutex::new(None));
    let mut slot = cell.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = slot.as_ref() {
        if goal_rt::is_initialized() {
            return Ok(w.clone_ref(py));
        }
    }
    let rt = goal_rt::runtime(what).map_err(err::to_py)?;
    let w = Py::new(py, Group::wrap(rt.world()))?;
    *slot = Some(w.clone_ref(py));
    Ok(w)
}

/// Drops the world's cached schedules (at finalize).
pub(crate) fn forget_world(py: Python<'_>) {
    if let Some(cell) = WORLD.get(py) {
        if let Some(w) = cell.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.get().cache.lock().unwrap_or_else(|e| e.into_inner()).map.clear();
        }
    }
}

/// `group` or the world.
pub(crate) fn or_world(py: Python<'_>, group: Option<Py<Group>>, what: &str) -> PyResult<Py<Group>> {
    match group {
        Some(g) => Ok(g),
        None => world(py, what),
    }
}

#[pymethods]
impl Group {
    /// This process' rank in the group, `0 .. size - 1`.
    #[getter]
    fn rank(&self) -> u32 {
        self.g.rank()
    }

    /// Number of ranks in the group.
    #[getter]
    fn size(&self) -> u32 {
        self.g.size()
    }

    /// The members' ranks in the world group, in this group's order.
    #[getter]
    fn members(&self) -> Vec<u32> {
        self.g.members().to_vec()
    }

    /// As `MPI_Comm_split`: ranks giving the same `color` (>= 0) form a new
    /// group, ordered by `key`, then by rank here. `color=None` (or
    /// `goal.UNDEFINED`) takes part and gets `None`. Collective over this
    /// group; the GIL is released while the members meet.
    #[pyo3(signature = (color, key = 0))]
    fn split(&self, py: Python<'_>, color: Option<i32>, key: i32) -> PyResult<Option<Group>> {
        let color = color.unwrap_or(UNDEFINED);
        if color < 0 && color != UNDEFINED {
            return Err(err::invalid(format!("Group.split: color {color} is negative (use None or goal.UNDEFINED for no group)")));
        }
        let rt = goal_rt::runtime("Group.split").map_err(err::to_py)?;
        let g = py.allow_threads(|| rt.split(&self.g, color, key)).map_err(|mut e| {
            e.message = format!("Group.split: {}", e.message);
            err::to_py(e)
        })?;
        Ok(g.map(Group::wrap))
    }

    /// The group of `ranks` (ranks of this group, in the new group's order),
    /// as `MPI_Comm_create_group`: collective over the listed ranks only,
    /// which pass the same list and `tag`.
    #[pyo3(signature = (ranks, tag = 0))]
    fn create(&self, py: Python<'_>, ranks: Vec<i64>, tag: i32) -> PyResult<Group> {
        let rt = goal_rt::runtime("Group.create").map_err(err::to_py)?;
        let g = py.allow_threads(|| rt.create_group(&self.g, &ranks, tag)).map_err(|mut e| {
            e.message = format!("Group.create: {}", e.message);
            err::to_py(e)
        })?;
        Ok(Group::wrap(g))
    }

    /// Ranks of this group as ranks of `other` (`None` where `other` lacks one).
    fn translate_ranks(&self, ranks: Vec<u32>, other: &Group) -> PyResult<Vec<Option<u32>>> {
        self.g.translate(&ranks, &other.g).map_err(err::to_py)
    }

    /// Frees the group (local). Its cached schedules are dropped first.
    fn free(&self) -> PyResult<()> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).map.clear();
        if self.g.context() == 0 {
            return Err(err::new(ErrorKind::InvalidArgument, "Group.free: the world group is never freed"));
        }
        self.g.free().map_err(err::to_py)
    }

    fn __repr__(&self) -> String {
        format!("<goal.Group rank {} of {}, context {}>", self.g.rank(), self.g.size(), self.g.context())
    }
}

/// `goal.world()`: the group of every rank of the job.
#[pyfunction]
fn world_group(py: Python<'_>) -> PyResult<Py<Group>> {
    world(py, "goal.world")
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Group>()?;
    m.add_function(wrap_pyfunction!(world_group, m)?)?;
    m.add("UNDEFINED", UNDEFINED)?;
    Ok(())
}
