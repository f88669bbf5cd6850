//! Arrays in goal's shared heap (`goal.empty`, `goal.zeros`).
//!
//! A block of this rank's shared heap (`GOAL_Alloc` in C) is memory every
//! other rank of the machine maps: a large message sent from it is one
//! `memcpy` by the receiver, where a message from any other memory takes a
//! kernel copy (Cross Memory Attach) that pins the sender's pages first.
//!
//! `HeapBuffer` owns one block and exports it through the buffer protocol
//! as writable bytes; `goal.empty` (python/goal/__init__.py) wraps it in a
//! numpy array with `numpy.frombuffer`, which keeps the `HeapBuffer` alive
//! as the array's base. The block goes back to the heap when the last
//! array or view of it is gone, also after `goal.finalize()`: goal keeps
//! its heap mapped while blocks remain (`goal_rt::free_after_finalize`),
//! so arrays read after finalizing still hold their bytes.

use crate::err;
use pyo3::ffi;
use pyo3::prelude::*;
use std::os::raw::c_int;

/// One block of this rank's shared heap, exported as writable bytes.
#[pyclass(module = "goal._goal", frozen)]
pub(crate) struct HeapBuffer {
    /// The block's address (an integer, so the class is `Send`).
    addr: usize,
    /// Bytes exported (the block holds at least one, so that an empty
    /// buffer has an address too).
    len: usize,
}

#[pymethods]
impl HeapBuffer {
    /// A block of `nbytes` from this rank's shared heap.
    #[new]
    fn new(nbytes: usize) -> PyResult<HeapBuffer> {
        let rt = goal_rt::runtime("goal.empty").map_err(err::to_py)?;
        let p = rt.alloc(nbytes.max(1)).ok_or_else(|| {
            err::new(
                goal_rt::ErrorKind::NoMemory,
                format!("goal.empty: {nbytes} bytes do not fit in the shared heap (GOAL_HEAP_BYTES)"),
            )
        })?;
        Ok(HeapBuffer { addr: p.as_ptr() as usize, len: nbytes })
    }

    fn __len__(&self) -> usize {
        self.len
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(pyo3::exceptions::PyBufferError::new_err("goal.HeapBuffer: no view to fill"));
        }
        let (addr, len) = (slf.get().addr, slf.get().len);
        // SAFETY: `view` is the non-null Py_buffer the interpreter passes to
        // fill; `PyBuffer_FillInfo` fills it for `len` writable bytes at
        // `addr` (a live block of the heap, which stays mapped while the
        // HeapBuffer lives: the view holds a reference to it, the `obj`
        // argument) and sets format, shape and strides as `flags` ask.
        let rc = unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), addr as *mut _, len as ffi::Py_ssize_t, 0, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        let p = self.addr as *mut u8;
        match goal_rt::runtime("goal.HeapBuffer") {
            Ok(rt) => {
                rt.free(p);
            }
            Err(_) => {
                goal_rt::free_after_finalize(p);
            }
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HeapBuffer>()
}
