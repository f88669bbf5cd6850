//! `goal.Schedule` and `goal.Handle`: running compiled schedules.
//!
//! A schedule owns the goal-rt schedule and the views of every array it
//! names (a graph's buffers, a persistent collective's arrays), so they
//! outlive each run. A handle is one execution: it holds the views of the
//! arrays given to that run until it has finished. `wait` releases the GIL
//! while goal waits (other Python threads run meanwhile); a finished
//! execution is not waited for, and its GIL is never let go.
//!
//! A handle dropped while its execution runs waits for it first (the
//! arrays it writes must not be freed under it), with the GIL released;
//! after `goal.finalize` (at interpreter exit, say) it cannot finish, and
//! its arrays are left allocated instead.

use crate::buf::{self, Buffer};
use crate::err;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

/// A compiled schedule: run it any number of times, each run returning a
/// `goal.Handle`. Executions of one schedule may be in flight together.
#[pyclass(module = "goal", frozen)]
pub(crate) struct Schedule {
    pub(crate) s: goal_rt::Schedule,
    /// Arrays the schedule names: held while it lives, and by each of its
    /// executions (which may outlive the `goal.Schedule` object).
    pub(crate) bound: Arc<Vec<Arc<Buffer>>>,
    /// A persistent collective's arrays, its run-time buffers by default.
    pub(crate) defaults: Vec<Option<Arc<Buffer>>>,
    pub(crate) what: &'static str,
}

/// One execution of a schedule.
#[pyclass(module = "goal")]
pub(crate) struct Handle {
    h: Option<goal_rt::Handle>,
    /// The arrays the execution reads and writes, held until it finished:
    /// its run-time buffers, and the arrays its schedule names.
    keep: Vec<Arc<Buffer>>,
    bound: Option<Arc<Vec<Arc<Buffer>>>>,
    /// The schedule, alive while the execution runs.
    _sched: Option<goal_rt::Schedule>,
    what: &'static str,
}

/// The error of a failed run or wait, with the call named.
pub(crate) fn failed(what: &str, mut e: goal_rt::Error) -> PyErr {
    e.message = format!("{what}: {}", e.message);
    err::to_py(e)
}

/// Starts `s` on run-time buffers `slots`.
pub(crate) fn start(what: &'static str, s: &goal_rt::Schedule, slots: &[(*mut u8, usize)]) -> PyResult<goal_rt::Handle> {
    let rt = goal_rt::runtime(what).map_err(err::to_py)?;
    // SAFETY: every array the schedule names is held by its `goal.Schedule`
    // (graph buffers) or by the caller (run-time buffers: a `Handle`'s
    // `keep`, or the stack of a blocking call that waits before returning),
    // acquired as views that keep the exporter's memory in place, until the
    // execution has finished.
    unsafe { rt.run_with(s, slots) }.map_err(|e| failed(what, e))
}

/// Waits for `h`, with the GIL released unless it already finished.
pub(crate) fn wait(py: Python<'_>, what: &str, h: goal_rt::Handle) -> PyResult<()> {
    let r = if h.is_finished() { h.wait() } else { py.allow_threads(move || h.wait()) };
    r.map_err(|e| failed(what, e))
}

impl Handle {
    pub(crate) fn new(what: &'static str, h: goal_rt::Handle, keep: Vec<Arc<Buffer>>, sched: goal_rt::Schedule) -> Handle {
        Handle { h: Some(h), keep, bound: None, _sched: Some(sched), what }
    }

    fn release(&mut self) {
        self.keep.clear();
        self.bound = None;
        self._sched = None;
    }
}

#[pymethods]
impl Handle {
    /// Blocks until the execution has finished; raises `goal.Error` if it
    /// failed. The GIL is released meanwhile. Waiting again returns at once.
    fn wait(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.h.as_ref().is_some_and(|h| !h.is_finished()) && !goal_rt::is_initialized() {
            // (The handle keeps its arrays: the execution can never finish.)
            return Err(err::new(
                goal_rt::ErrorKind::NotInitialized,
                format!("{}: goal was finalized while this execution ran; it can never finish", self.what),
            ));
        }
        let Some(h) = self.h.take() else { return Ok(()) };
        let r = wait(py, self.what, h);
        self.release();
        r
    }

    /// True once the execution has finished (then the handle is done), False
    /// while it runs; raises `goal.Error` if it failed. Never blocks.
    fn test(&mut self) -> PyResult<bool> {
        let Some(h) = self.h.as_ref() else { return Ok(true) };
        match h.test() {
            Ok(false) => Ok(false),
            Ok(true) => {
                self.h = None;
                self.release();
                Ok(true)
            }
            Err(e) => {
                self.h = None;
                self.release();
                Err(failed(self.what, e))
            }
        }
    }

    /// Whether the execution has finished (without advancing it or raising).
    #[getter]
    fn done(&self) -> bool {
        self.h.as_ref().is_none_or(goal_rt::Handle::is_finished)
    }

    fn __repr__(&self) -> String {
        format!("<goal.Handle of {}: {}>", self.what, if self.done() { "finished" } else { "running" })
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let Some(h) = self.h.take() else { return };
        if h.is_finished() {
            return;
        }
        if !goal_rt::is_initialized() {
            // Finalized with the execution still running: it can never
            // finish, and nothing may free the arrays it would write.
            std::mem::forget(std::mem::take(&mut self.keep));
            std::mem::forget(self.bound.take());
            std::mem::forget(h);
            return;
        }
        // The arrays in `keep` must outlive the execution.
        Python::with_gil(|py| {
            let _ = py.allow_threads(move || h.wait());
        });
    }
}

#[pymethods]
impl Schedule {
    /// Starts one execution and returns its `goal.Handle`. `bufs` are the
    /// run-time buffers (`goal.runbuf(i)` in a graph), in slot order, each
    /// writable (or None for a slot the schedule does not use); a
    /// persistent collective runs on its own arrays when none are given.
    #[pyo3(signature = (*bufs))]
    fn run(&self, bufs: &Bound<'_, PyTuple>) -> PyResult<Handle> {
        let keep = self.run_buffers(bufs)?;
        let slots: Vec<(*mut u8, usize)> = keep.iter().map(|b| b.as_ref().map_or((std::ptr::null_mut(), 0), |b| b.slot())).collect();
        let h = start(self.what, &self.s, &slots)?;
        let mut h = Handle::new(self.what, h, keep.into_iter().flatten().collect(), self.s.clone());
        h.bound = Some(self.bound.clone());
        Ok(h)
    }

    /// Runs once and waits (`run(...).wait()` without a handle).
    #[pyo3(signature = (*bufs))]
    fn __call__(&self, py: Python<'_>, bufs: &Bound<'_, PyTuple>) -> PyResult<()> {
        let keep = self.run_buffers(bufs)?;
        let slots: Vec<(*mut u8, usize)> = keep.iter().map(|b| b.as_ref().map_or((std::ptr::null_mut(), 0), |b| b.slot())).collect();
        let h = start(self.what, &self.s, &slots)?;
        wait(py, self.what, h)
    }

    /// Bytes each run-time buffer must hold (empty for a schedule with all
    /// its buffers).
    #[getter]
    fn run_buffer_sizes(&self) -> Vec<u64> {
        self.s.compiled().run.clone()
    }

    /// The schedule's number in its group's compile order.
    #[getter]
    fn id(&self) -> u32 {
        self.s.id()
    }

    fn __repr__(&self) -> String {
        format!("<goal.Schedule {} ({}), {} run-time buffer(s)>", self.s.id(), self.what, self.s.compiled().run.len())
    }
}

impl Schedule {
    /// The run-time buffers for one run: `bufs` if given (writable: a
    /// schedule may write any of them), else the defaults.
    fn run_buffers(&self, bufs: &Bound<'_, PyTuple>) -> PyResult<Vec<Option<Arc<Buffer>>>> {
        if bufs.is_empty() {
            return Ok(self.defaults.clone());
        }
        let need = &self.s.compiled().run;
        bufs.iter()
            .enumerate()
            .map(|(i, b)| {
                if b.is_none() {
                    return Ok(None);
                }
                let b = buf::acquire(&b, true, self.what, &format!("run-time buffer {i}"))?;
                if let Some(&n) = need.get(i) {
                    if b.len() < n {
                        return Err(err::invalid(format!("{}: run-time buffer {i} holds {} bytes, fewer than the {n} the schedule uses of it", self.what, b.len())));
                    }
                }
                Ok(Some(Arc::new(b)))
            })
            .collect()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Schedule>()?;
    m.add_class::<Handle>()?;
    Ok(())
}
