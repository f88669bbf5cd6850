//! goal's errors as Python exceptions.
//!
//! Every failure raises `goal.Error` (defined in `python/goal/_errors.py`,
//! so that it is an ordinary Python class with `message`, `code` and
//! `name`): the message is goal's own sentence naming what is wrong and
//! where, the code is the C API's `GOAL_ERR_*` value.

use goal_rt::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

/// The C API's code for each kind (`include/goal.h`, `GOAL_ERR_*`).
pub(crate) const CODES: [(ErrorKind, i32, &str); 16] = [
    (ErrorKind::NotInitialized, -1, "ERR_NOT_INITIALIZED"),
    (ErrorKind::AlreadyInitialized, -2, "ERR_ALREADY_INITIALIZED"),
    (ErrorKind::InvalidArgument, -3, "ERR_INVALID_ARGUMENT"),
    (ErrorKind::Cycle, -4, "ERR_CYCLE"),
    (ErrorKind::Rank, -5, "ERR_RANK"),
    (ErrorKind::Scratchpad, -6, "ERR_SCRATCHPAD"),
    (ErrorKind::BadOp, -7, "ERR_BAD_OP"),
    (ErrorKind::Truncated, -8, "ERR_TRUNCATED"),
    (ErrorKind::DivByZero, -9, "ERR_DIV_BY_ZERO"),
    (ErrorKind::PeerLost, -10, "ERR_PEER_LOST"),
    (ErrorKind::Busy, -11, "ERR_BUSY"),
    (ErrorKind::NoMemory, -12, "ERR_NO_MEMORY"),
    (ErrorKind::System, -13, "ERR_SYSTEM"),
    (ErrorKind::Unsupported, -14, "ERR_UNSUPPORTED"),
    (ErrorKind::Mismatch, -16, "ERR_MISMATCH"),
    (ErrorKind::PeerFailed, -17, "ERR_PEER_FAILED"),
];

static ERROR_CLASS: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// `goal.Error(message, code)` for a goal-rt error.
pub(crate) fn to_py(e: Error) -> PyErr {
    let code = CODES.iter().find(|c| c.0 == e.kind).map_or(-15, |c| c.1);
    raise(e.message, code)
}

/// `goal.Error` of `kind` with `message`.
pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> PyErr {
    to_py(Error::new(kind, message))
}

/// `goal.Error` for an invalid argument.
pub(crate) fn invalid(message: impl Into<String>) -> PyErr {
    new(ErrorKind::InvalidArgument, message)
}

fn raise(message: String, code: i32) -> PyErr {
    Python::with_gil(|py| {
        let class = ERROR_CLASS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import_bound("goal._errors")?.getattr("Error")?.unbind())
        });
        match class.and_then(|c| c.bind(py).call1((message.clone(), code))) {
            Ok(e) => PyErr::from_value_bound(e),
            // The package is broken (no goal._errors): still say what failed.
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(format!("{message} (goal error {code})")),
        }
    })
}

/// `goal.ERR_*` constants.
pub(crate) fn register_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (_, code, name) in CODES {
        m.add(name, code)?;
    }
    m.add("ERR_INTERNAL", -15)?;
    Ok(())
}
