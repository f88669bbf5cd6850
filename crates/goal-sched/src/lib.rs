//! goal-sched: GOAL graphs and the compiled schedules the runtime executes.
//!
//! In the layer picture of `docs/design.md` it sits below everything and
//! depends on no other goal crate: goal-rt compiles and runs its schedules
//! (and asks [`chains`] what the kernel mode may link), goal-ffi calls its
//! collective builders ([`coll`]), and [`sim`] is the reference model the
//! runtime is tested against.
//!
//! A GOAL graph ([`Graph`]) is a set of operations (send, receive, local
//! operation) joined by "requires" edges: an operation starts only after all
//! its prerequisites have finished. This crate checks such a graph and
//! compiles it ([`compile`]) into a [`Schedule`]: a compact, immutable,
//! position-independent form that the runtime interprets with one dependency
//! counter per operation (the ESPGOAL thesis, section 4.3).
//!
//! This crate is pure: it never performs I/O, never dereferences a user
//! buffer (addresses are plain numbers here) and contains no `unsafe`. That
//! is what lets collective algorithms, which only emit graphs, be tested
//! without sockets or processes.

#![forbid(unsafe_code)]

pub mod coll;
mod error;
mod graph;
pub mod half;
mod ops;
pub mod chains;
mod schedule;
pub mod sim;

pub use error::{CompileError, CompileErrorKind};
pub use graph::{run_addr, Buf, Graph, MemType, Vertex, VertexId, ANY_SOURCE, ANY_TAG, MEM_RUN0, RUN_SHIFT, RUN_SLOTS};
pub use ops::{DataType, Op, ReduceOp, UserOp, USER_OP_FIRST};
pub use schedule::{compile, CompileOptions, LocalRec, LocalVecRec, OpKind, OpRec, Piece, Schedule, VecRec, FLAG_EXACT, FLAG_REL, OP_USER};
