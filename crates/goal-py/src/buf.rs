//! Buffers: anything with the buffer protocol, used in place.
//!
//! goal reads and writes the caller's memory itself, so every buffer
//! argument is acquired as one C-contiguous view (`PyObject_GetBuffer`)
//! and its address handed to the schedule: no copy on the way in or out.
//! The view is held until the execution that uses it has finished, which
//! also keeps the exporter from resizing or freeing the memory (numpy
//! refuses to resize an array with a view exported).
//!
//! The element type comes from the view's format (numpy's `f`, `d`, `e`
//! (float16), `i`, `q`, `B`, ...). Two exporters cannot say theirs: numpy
//! arrays of `ml_dtypes.bfloat16` (numpy exports no buffer for a dtype it
//! does not know) and torch tensors (no buffer protocol). For those the
//! object is first viewed as one numpy knows: `arr.view("uint16")` for
//! bfloat16, `t.detach().numpy()` (`t.view(torch.int16)` first for
//! bfloat16) for a CPU tensor; each is a view of the same memory, so the
//! results still land in the caller's array.

use goal_sched::DataType;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::CStr;

/// An element type: goal's (type, width) and the name Python users know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Dtype {
    pub(crate) dt: DataType,
    /// Width in bits.
    pub(crate) bits: u32,
}

impl Dtype {
    pub(crate) const BYTE: Dtype = Dtype { dt: DataType::UInt, bits: 8 };

    /// Bytes per element.
    pub(crate) fn size(self) -> u64 {
        self.bits as u64 / 8
    }

    /// numpy's name for it ("float32", "bfloat16", "void96").
    pub(crate) fn name(self) -> String {
        match self.dt {
            DataType::SInt => format!("int{}", self.bits),
            DataType::UInt => format!("uint{}", self.bits),
            DataType::Float => format!("float{}", self.bits),
            DataType::BFloat => "bfloat16".into(),
            DataType::Bytes => format!("void{}", self.bits),
        }
    }

    /// The type a buffer format names (struct module syntax, one element).
    /// Formats of several fields or unknown letters are opaque bytes of
    /// `itemsize`: fine to move, refused by the reductions.
    fn from_format(format: &str, itemsize: usize) -> Result<Dtype, String> {
        let f = format.trim_start_matches(['@', '=', '<']);
        if f.starts_with(['>', '!']) {
            return Err(format!("big-endian elements (format '{format}') are not supported"));
        }
        let bits = (itemsize * 8) as u32;
        let dt = match f {
            "b" | "h" | "i" | "l" | "q" | "n" => DataType::SInt,
            "B" | "H" | "I" | "L" | "Q" | "N" | "?" | "c" => DataType::UInt,
            "e" | "f" | "d" => DataType::Float,
            _ => DataType::Bytes,
        };
        if itemsize == 0 {
            return Err(format!("elements of 0 bytes (format '{format}')"));
        }
        Ok(Dtype { dt, bits })
    }
}

/// One acquired view; released (with the GIL) when dropped.
pub(crate) struct Buffer {
    view: Box<ffi::Py_buffer>,
    pub(crate) dtype: Dtype,
}

// SAFETY: the view is only read through `ptr`/`len` (plain numbers) and
// released in `drop`, which takes the GIL first; the exporter's memory it
// points to is meant to be written by goal's threads meanwhile.
unsafe impl Send for Buffer {}
// SAFETY: as above; `&Buffer` gives only the numbers.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// The first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.view.buf.cast()
    }
    /// Bytes.
    pub(crate) fn len(&self) -> u64 {
        self.view.len as u64
    }
    /// Elements of its dtype.
    pub(crate) fn count(&self) -> u64 {
        self.len() / self.dtype.size()
    }
    /// (address, bytes), as `run_with` takes it.
    pub(crate) fn slot(&self) -> (*mut u8, usize) {
        (self.ptr(), self.view.len as usize)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        Python::with_gil(|_| {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer
            // and is released once, here, with the GIL held.
            unsafe { ffi::PyBuffer_Release(&mut *self.view) }
        });
    }
}

/// The contiguous view of `obj` (writable if `writable`), and its element
/// type. `what` and `name` name the call and the argument for errors
/// ("goal.allreduce", "recvbuf"), put together only if one is raised.
pub(crate) fn acquire(obj: &Bound<'_, PyAny>, writable: bool, what: &str, name: &str) -> PyResult<Buffer> {
    match get(obj, writable, None) {
        Ok(b) => Ok(b),
        Err(first) => {
            let py = obj.py();
            let what = format!("{what}: {name}");
            match viewed(obj) {
                Ok(Some((view_obj, dtype))) => get(&view_obj, writable, dtype)
                    .map_err(|e| crate::err::invalid(format!("{what}: {}", describe(py, &e)))),
                Ok(None) => Err(crate::err::invalid(format!(
                    "{what}: {} offers no {}contiguous buffer ({}); pass a C-contiguous numpy array, \
                     bytearray, memoryview or CPU torch tensor",
                    type_name(obj),
                    if writable { "writable " } else { "" },
                    describe(py, &first)
                ))),
                Err(e) => Err(crate::err::invalid(format!("{what}: {} could not be viewed as a numpy array: {}", type_name(obj), describe(py, &e)))),
            }
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "the object".into())
}

fn describe(py: Python<'_>, e: &PyErr) -> String {
    e.value_bound(py).str().map(|s| s.to_string()).unwrap_or_else(|_| "unknown error".into())
}

/// For an object without a usable buffer: a view of the same memory that
/// has one, and the element type if the view's format hides it.
fn viewed<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, Option<Dtype>)>> {
    let Ok(dtype) = obj.getattr("dtype") else { return Ok(None) };
    let name = dtype.str()?.to_string();
    const BF16: Dtype = Dtype { dt: DataType::BFloat, bits: 16 };
    if name.starts_with("torch.") {
        let t = obj.call_method0("detach")?;
        if name == "torch.bfloat16" {
            let torch = obj.py().import_bound("torch")?;
            let ints = t.call_method1("view", (torch.getattr("int16")?,))?;
            return Ok(Some((ints.call_method0("numpy")?, Some(BF16))));
        }
        return Ok(Some((t.call_method0("numpy")?, None)));
    }
    if name == "bfloat16" {
        return Ok(Some((obj.call_method1("view", ("uint16",))?, Some(BF16))));
    }
    Ok(None)
}

/// `PyObject_GetBuffer` for a C-contiguous view; `dtype` overrides the format's.
fn get(obj: &Bound<'_, PyAny>, writable: bool, dtype: Option<Dtype>) -> PyResult<Buffer> {
    let mut view: Box<ffi::Py_buffer> = Box::new(ffi::Py_buffer::new());
    let flags = ffi::PyBUF_C_CONTIGUOUS | ffi::PyBUF_FORMAT | if writable { ffi::PyBUF_WRITABLE } else { 0 };
    // SAFETY: `obj` is a live object (the GIL is held through `Bound`) and
    // `view` a zeroed Py_buffer we own; on success it must be released once
    // (Buffer's drop), on failure it holds nothing.
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) } != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    let itemsize = view.itemsize.max(1) as usize;
    let format = if view.format.is_null() {
        "B".to_string()
    } else {
        // SAFETY: a non-null format is a NUL-terminated string owned by the view.
        unsafe { CStr::from_ptr(view.format) }.to_string_lossy().into_owned()
    };
    let mut buffer = Buffer { view, dtype: Dtype::BYTE };
    buffer.dtype = match dtype {
        Some(d) => d,
        None => Dtype::from_format(&format, itemsize).map_err(crate::err::invalid)?,
    };
    Ok(buffer)
}
