//! `goal.Graph`: a GOAL dependency graph built from Python and compiled
//! into a `goal.Schedule` (docs/api.md; the C API's GOAL_Send, GOAL_Recv,
//! GOAL_LocalOp, GOAL_Requires, GOAL_Compile).
//!
//! Operands are arrays (acquired in place and held by the graph, then by
//! every schedule compiled from it, so goal reads and writes the arrays
//! themselves at each run) or places that are not arrays: `goal.scratch(
//! offset, nbytes)` in the execution's scratchpad and `goal.runbuf(slot,
//! nbytes, offset=0)` in a run-time buffer given at each `Schedule.run`.

use crate::buf::{self, Buffer, Dtype};
use crate::err;
use crate::exec::Schedule;
use crate::group::{self, Group};
use goal_sched::{Buf, DataType, ReduceOp, Vertex, VertexId};
use pyo3::prelude::*;
use std::sync::Arc;

/// A place that is not an array: bytes of the scratchpad or of a run-time buffer.
#[pyclass(module = "goal", frozen)]
#[derive(Clone)]
pub(crate) struct Slot {
    buf: Buf,
    nbytes: u64,
}

#[pymethods]
impl Slot {
    fn __repr__(&self) -> String {
        match self.buf.mem {
            1 => format!("goal.scratch({}, {})", self.buf.addr, self.nbytes),
            m => format!("goal.runbuf({}, {}, offset={})", m - goal_sched::MEM_RUN0, self.nbytes, self.buf.addr),
        }
    }
}

/// `nbytes` bytes at byte `offset` of each execution's scratchpad.
#[pyfunction]
fn scratch(offset: u64, nbytes: u64) -> Slot {
    Slot { buf: Buf::scratch(offset), nbytes }
}

/// `nbytes` bytes at byte `offset` of run-time buffer `slot` (0 to 15),
/// given at each `Schedule.run(...)`.
#[pyfunction]
#[pyo3(signature = (slot, nbytes, offset = 0))]
fn runbuf(slot: u8, nbytes: u64, offset: u64) -> PyResult<Slot> {
    if slot as usize >= goal_sched::RUN_SLOTS {
        return Err(err::invalid(format!("goal.runbuf: slot {slot} does not exist (0 to {})", goal_sched::RUN_SLOTS - 1)));
    }
    Ok(Slot { buf: Buf::run(slot, offset), nbytes })
}

/// A GOAL graph: sends, receives and local operations joined by
/// "requires" edges. Each adding call returns the new vertex's number.
#[pyclass(module = "goal")]
pub(crate) struct Graph {
    g: goal_sched::Graph,
    group: Option<Py<Group>>,
    bound: Vec<Arc<Buffer>>,
}

/// An operand: where it is, how many bytes, its dtype if an array.
struct Operand {
    buf: Buf,
    nbytes: u64,
    dtype: Option<Dtype>,
}

impl Graph {
    fn operand(&mut self, o: &Bound<'_, PyAny>, writable: bool, what: &str, name: &str) -> PyResult<Operand> {
        if let Ok(s) = o.downcast::<Slot>() {
            let s = s.get();
            return Ok(Operand { buf: s.buf, nbytes: s.nbytes, dtype: None });
        }
        let b = buf::acquire(o, writable, what, name)?;
        let op = Operand { buf: Buf::user(b.ptr() as u64), nbytes: b.len(), dtype: Some(b.dtype) };
        self.bound.push(Arc::new(b));
        Ok(op)
    }

    fn bytes(o: &Operand, nbytes: Option<u64>, what: &str) -> PyResult<i64> {
        match nbytes {
            None => Ok(o.nbytes as i64),
            Some(n) if n <= o.nbytes => Ok(n as i64),
            Some(n) => Err(err::invalid(format!("{what}: nbytes {n} is more than the buffer's {} bytes", o.nbytes))),
        }
    }
}

/// A dtype given by name ("float32", np.float32, np.dtype("f4"), ml_dtypes.bfloat16).
fn dtype_of(o: &Bound<'_, PyAny>) -> PyResult<Dtype> {
    let name: String = match o.getattr("name").or_else(|_| o.getattr("__name__")) {
        Ok(n) => n.str()?.to_string(),
        Err(_) => o.str()?.to_string(),
    };
    let (dt, bits) = match name.as_str() {
        "bfloat16" => (DataType::BFloat, 16),
        n => {
            let (dt, rest) = if let Some(r) = n.strip_prefix("uint") {
                (DataType::UInt, r)
            } else if let Some(r) = n.strip_prefix("int") {
                (DataType::SInt, r)
            } else if let Some(r) = n.strip_prefix("float") {
                (DataType::Float, r)
            } else {
                return Err(err::invalid(format!("dtype '{n}' is not one goal reduces (int8..int64, uint8..uint64, float16, float32, float64, bfloat16)")));
            };
            (dt, rest.parse::<u32>().map_err(|_| err::invalid(format!("dtype '{n}' has no width")))?)
        }
    };
    Ok(Dtype { dt, bits })
}

#[pymethods]
impl Graph {
    /// An empty graph; its peers are ranks of `group` (default: the world).
    #[new]
    #[pyo3(signature = (group = None))]
    fn new(group: Option<Py<Group>>) -> Graph {
        Graph { g: goal_sched::Graph::new(), group, bound: Vec::new() }
    }

    /// Sends `buf` (its first `nbytes`) to rank `dest` with `tag`.
    #[pyo3(signature = (buf, dest, tag = 0, nbytes = None))]
    fn send(&mut self, buf: &Bound<'_, PyAny>, dest: i64, tag: i64, nbytes: Option<u64>) -> PyResult<VertexId> {
        let o = self.operand(buf, false, "Graph.send", "buf")?;
        let n = Self::bytes(&o, nbytes, "Graph.send")?;
        Ok(self.g.send(o.buf, n, dest, tag))
    }

    /// Receives into `buf` (up to `nbytes`) from rank `source` (or
    /// goal.ANY_SOURCE) with `tag` (or goal.ANY_TAG).
    #[pyo3(signature = (buf, source, tag = 0, nbytes = None))]
    fn recv(&mut self, buf: &Bound<'_, PyAny>, source: i64, tag: i64, nbytes: Option<u64>) -> PyResult<VertexId> {
        let o = self.operand(buf, true, "Graph.recv", "buf")?;
        let n = Self::bytes(&o, nbytes, "Graph.recv")?;
        Ok(self.g.recv(o.buf, n, source, tag))
    }

    /// `out = a op b` element-wise over `count` elements (default: all of
    /// `out`); the dtype comes from the arrays, or `dtype=` for places.
    #[pyo3(signature = (op, a, b, out, count = None, dtype = None))]
    #[allow(clippy::too_many_arguments)]
    fn local_op(&mut self, op: i64, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>, count: Option<u64>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<VertexId> {
        let a = self.operand(a, false, "Graph.local_op", "a")?;
        let b = self.operand(b, false, "Graph.local_op", "b")?;
        let out = self.operand(out, true, "Graph.local_op", "out")?;
        let dt = match dtype {
            Some(d) => dtype_of(d)?,
            None => [&out, &a, &b].iter().find_map(|o| o.dtype).ok_or_else(|| err::invalid("Graph.local_op: no operand is an array: give dtype="))?,
        };
        let count = count.unwrap_or(out.nbytes / dt.size());
        for (name, o) in [("a", &a), ("b", &b), ("out", &out)] {
            if o.nbytes < count * dt.size() && !(name == "b" && op == ReduceOp::Copy as i64) {
                return Err(err::invalid(format!("Graph.local_op: {name} holds {} bytes, fewer than {count} elements of {}", o.nbytes, dt.name())));
            }
        }
        Ok(self.g.local(op, dt.dt as i64, dt.bits as i64, count as i64, a.buf, b.buf, out.buf))
    }

    /// Copies `nbytes` (default: all of `dst`) from `src` to `dst`.
    #[pyo3(signature = (src, dst, nbytes = None))]
    fn copy(&mut self, src: &Bound<'_, PyAny>, dst: &Bound<'_, PyAny>, nbytes: Option<u64>) -> PyResult<VertexId> {
        let s = self.operand(src, false, "Graph.copy", "src")?;
        let d = self.operand(dst, true, "Graph.copy", "dst")?;
        let n = nbytes.unwrap_or(d.nbytes);
        if s.nbytes < n || d.nbytes < n {
            return Err(err::invalid(format!("Graph.copy: {n} bytes do not fit (src {} bytes, dst {})", s.nbytes, d.nbytes)));
        }
        Ok(self.g.local(ReduceOp::Copy as i64, DataType::UInt as i64, 8, n as i64, s.buf, s.buf, d.buf))
    }

    /// Computation of `units` nanoseconds (the text format's `calc`).
    fn calc(&mut self, units: i64) -> VertexId {
        self.g.add(Vertex::Calc { units })
    }

    /// `target` starts only after `prereq` has finished.
    fn requires(&mut self, prereq: VertexId, target: VertexId) -> PyResult<()> {
        let n = self.g.len();
        self.g.requires(prereq, target).map_err(|b| err::invalid(format!("Graph.requires: vertex {} is not in this graph of {n} vertices", b.0)))
    }

    /// Bytes of scratchpad each execution gets.
    #[getter]
    fn get_scratchpad(&self) -> u64 {
        self.g.scratchpad()
    }

    #[setter]
    fn set_scratchpad(&mut self, bytes: u64) {
        self.g.set_scratchpad(bytes)
    }

    fn __len__(&self) -> usize {
        self.g.len()
    }

    /// Checks and compiles the graph into a `goal.Schedule` on its group.
    /// Collective in the matching sense: every member compiles the group's
    /// schedules in the same order.
    fn compile(&self, py: Python<'_>) -> PyResult<Schedule> {
        let grp = group::or_world(py, self.group.as_ref().map(|g| g.clone_ref(py)), "Graph.compile")?;
        let rt = goal_rt::runtime("Graph.compile").map_err(err::to_py)?;
        let s = rt.compile_on(&grp.bind(py).get().g, &self.g).map_err(|e| crate::exec::failed("Graph.compile", e))?;
        Ok(Schedule { s, bound: Arc::new(self.bound.clone()), defaults: Vec::new(), what: "Schedule.run" })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Graph>()?;
    m.add_class::<Slot>()?;
    m.add_function(wrap_pyfunction!(scratch, m)?)?;
    m.add_function(wrap_pyfunction!(runbuf, m)?)?;
    m.add("ANY_SOURCE", goal_sched::ANY_SOURCE)?;
    m.add("ANY_TAG", goal_sched::ANY_TAG)?;
    m.add("COPY", ReduceOp::Copy as i64)?;
    m.add("SUB", ReduceOp::Sub as i64)?;
    m.add("DIV", ReduceOp::Div as i64)?;
    Ok(())
}
