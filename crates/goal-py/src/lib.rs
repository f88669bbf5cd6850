//! goal's Python package (`import goal`): PyO3 bindings over goal-rt's Rust API.
//!
//! # Why goal-rt directly, not libgoal.so
//!
//! goal-ffi is a skin over goal-rt that turns every object into a handle in
//! a registry and every error into a thread-local string. Python needs
//! neither: a PyO3 class owns the goal-rt value itself (a `Schedule`, a
//! `Group`, an execution's `Handle`), its errors become `goal.Error` with
//! goal's message and code directly, and a call pays no registry lookup.
//! The collectives are built by the same pure graph builders the C API uses
//! (`goal_sched::coll`), so both APIs compile identical schedules.
//!
//! # Shape
//!
//! | module   | what                                                                 |
//! |----------|----------------------------------------------------------------------|
//! | `err`    | goal-rt errors as `goal.Error` (message, code, code name)            |
//! | `buf`    | the buffer protocol: one contiguous view per argument, its dtype     |
//! | `group`  | `goal.Group`: world, split, create, and each group's schedule cache  |
//! | `exec`   | `goal.Schedule`, `goal.Handle`: runs and waits (GIL released)        |
//! | `coll`   | every collective, one-shot (cached) and persistent (`_init`)         |
//! | `collfn` | the Python-facing functions of `coll`, three per collective          |
//! | `graph`  | `goal.Graph`: send, recv, local operations, requires, compile        |
//! | `heap`   | `goal.HeapBuffer`: a block of the shared heap (`goal.empty`)         |
//!
//! The pure-Python part (`python/goal/`) re-exports this module, defines
//! `goal.Error`, finalizes at exit and carries the type hints.

use pyo3::prelude::*;

mod buf;
mod coll;
mod collfn;
mod err;
mod exec;
mod graph;
mod group;
mod heap;

/// Initialises goal for this process: finds the launcher (goalrun, mpirun,
/// srun, torchrun's environment or none), connects the ranks. Collective
/// over the job; the GIL is released while the ranks meet.
#[pyfunction]
fn init(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(goal_rt::init).map(drop).map_err(err::to_py)?;
    Ok(())
}

/// Ends goal in this process. Called at interpreter exit by the package if
/// the program did not.
#[pyfunction]
fn finalize(py: Python<'_>) -> PyResult<()> {
    group::forget_world(py);
    py.allow_threads(goal_rt::finalize).map_err(err::to_py)
}

/// Whether `init` has succeeded and `finalize` not yet been called.
#[pyfunction]
fn is_initialized() -> bool {
    goal_rt::is_initialized()
}

/// Seconds on goal's monotonic clock.
#[pyfunction]
fn wtime() -> f64 {
    goal_rt::wtime()
}

/// Advances every running execution without blocking; returns how many
/// operations finished.
#[pyfunction]
fn progress() -> PyResult<usize> {
    Ok(goal_rt::runtime("goal.progress").map_err(err::to_py)?.progress())
}

/// The native module `goal._goal`; `goal/__init__.py` re-exports it.
#[pymodule]
fn _goal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(finalize, m)?)?;
    m.add_function(wrap_pyfunction!(is_initialized, m)?)?;
    m.add_function(wrap_pyfunction!(wtime, m)?)?;
    m.add_function(wrap_pyfunction!(progress, m)?)?;
    group::register(m)?;
    exec::register(m)?;
    graph::register(m)?;
    heap::register(m)?;
    collfn::register(m)?;
    coll::register_constants(m)?;
    err::register_constants(m)?;
    Ok(())
}
