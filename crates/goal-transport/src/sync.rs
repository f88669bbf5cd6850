//! The one place the crate imports atomics from.
//!
//! Every lock-free structure reaches `std::sync::atomic` through this module,
//! so that a model checker (loom) can be swapped in here later without
//! touching the structures themselves.

pub use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
