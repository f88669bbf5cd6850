//! The runtime's error type: a kind (which the C ABI maps to a code) and a
//! complete message naming what went wrong and where.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// goal is not initialised (or already finalized).
    NotInitialized,
    /// `init` was called a second time.
    AlreadyInitialized,
    /// An argument is invalid (a null pointer, a bad vertex, a bad value).
    InvalidArgument,
    /// The graph was refused by the compiler: a cycle.
    Cycle,
    /// A rank outside the group.
    Rank,
    /// A scratchpad range past its size.
    Scratchpad,
    /// An operator, data type, width or memory type that does not exist.
    BadOp,
    /// A message was larger than its receive.
    Truncated,
    /// Integer division by zero in a local operation.
    DivByZero,
    /// A peer died or left while an execution needed it.
    PeerLost,
    /// The schedule still has executions running.
    Busy,
    /// Out of memory (scratchpad, shared heap).
    NoMemory,
    /// The operating system refused (shared memory, sockets, launch).
    System,
    /// The requested collective algorithm does not apply.
    Unsupported,
    /// The ranks' schedules do not pair up: a message came for an
    /// execution whose schedule has no receive that could take it (ranks
    /// that compiled different schedules, or in a different order, or a
    /// collective called with a different root or size).
    Mismatch,
}

/// A runtime error: its kind and a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of error.
    pub kind: ErrorKind,
    /// A complete sentence naming what is wrong and where.
    pub message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<goal_sched::CompileError> for Error {
    fn from(e: goal_sched::CompileError) -> Error {
        use goal_sched::CompileErrorKind as C;
        let kind = match e.kind {
            C::Cycle => ErrorKind::Cycle,
            C::Rank => ErrorKind::Rank,
            C::Scratchpad => ErrorKind::Scratchpad,
            C::BadOp => ErrorKind::BadOp,
            C::BadArgument | C::TooLarge => ErrorKind::InvalidArgument,
        };
        Error { kind, message: e.message }
    }
}

/// Results of the runtime.
pub type Result<T> = std::result::Result<T, Error>;
