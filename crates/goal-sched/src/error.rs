//! Why a graph could not be compiled.

use std::fmt;

/// What kind of mistake a graph contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileErrorKind {
    /// The dependencies form a cycle.
    Cycle,
    /// A peer rank is outside the group (or a wildcard where none is allowed).
    Rank,
    /// A scratchpad range reaches past the graph's scratchpad size.
    Scratchpad,
    /// An operator, data type, element width or memory type that does not exist.
    BadOp,
    /// A negative or too large count, or a negative tag.
    BadArgument,
    /// The graph is too large for the schedule format.
    TooLarge,
}

/// A graph that [`compile`](crate::compile) refused, naming the vertex and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// What kind of mistake.
    pub kind: CompileErrorKind,
    /// The offending vertex (its index in the graph), if one is to blame.
    pub vertex: Option<u64>,
    /// A complete sentence for the user.
    pub message: String,
}

impl CompileError {
    pub(crate) fn at(kind: CompileErrorKind, vertex: usize, what: &str, message: String) -> Self {
        CompileError { kind, vertex: Some(vertex as u64), message: format!("vertex {vertex} ({what}): {message}") }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CompileError {}
