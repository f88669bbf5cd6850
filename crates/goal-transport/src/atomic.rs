//! The one place the crate imports atomics from.
//!
//! Every lock-free structure reaches `std::sync::atomic` through this
//! module (directly, or through [`sync`](crate::sync), which re-exports it
//! beside its barriers), so that a model checker (loom) can be swapped in
//! here later without touching the structures themselves. A leaf: the
//! system-call wrappers (`sys`) and the barriers (`sync`, which calls
//! `sys`) both import it without importing each other in a circle.

pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
