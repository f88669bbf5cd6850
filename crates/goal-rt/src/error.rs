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
    /// A peer's execution failed by an error of its own (a division by
    /// zero, a truncated receive, ...) before it sent a message that this
    /// execution waits for: the message will never come. Learned by asking
    /// the peer after a second of waiting (see the engine's `failure.rs`).
    PeerFailed,
}

impl ErrorKind {
    /// Every kind, in declaration order: a kind travels between ranks as
    /// its index here, its discriminant (see [`ErrorKind::PeerFailed`]).
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::NotInitialized,
        ErrorKind::AlreadyInitialized,
        ErrorKind::InvalidArgument,
        ErrorKind::Cycle,
        ErrorKind::Rank,
        ErrorKind::Scratchpad,
        ErrorKind::BadOp,
        ErrorKind::Truncated,
        ErrorKind::DivByZero,
        ErrorKind::PeerLost,
        ErrorKind::Busy,
        ErrorKind::NoMemory,
        ErrorKind::System,
        ErrorKind::Unsupported,
        ErrorKind::Mismatch,
        ErrorKind::PeerFailed,
    ];

    /// This kind's index in [`ALL`](Self::ALL).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The kind at `index` in [`ALL`](Self::ALL), if any.
    pub fn from_index(index: u64) -> Option<ErrorKind> {
        Self::ALL.get(usize::try_from(index).ok()?).copied()
    }

    /// A few words for the kind, for a message about another rank's error
    /// ("rank 2's execution failed (an integer division by zero)").
    pub fn words(self) -> &'static str {
        match self {
            ErrorKind::NotInitialized => "goal not initialised",
            ErrorKind::AlreadyInitialized => "goal initialised twice",
            ErrorKind::InvalidArgument => "an invalid argument",
            ErrorKind::Cycle => "a cycle in a graph",
            ErrorKind::Rank => "a rank outside the group",
            ErrorKind::Scratchpad => "a scratchpad range past its size",
            ErrorKind::BadOp => "an operator or type that does not exist",
            ErrorKind::Truncated => "a message larger than its receive",
            ErrorKind::DivByZero => "an integer division by zero",
            ErrorKind::PeerLost => "a rank it needed was lost",
            ErrorKind::Busy => "a schedule still running",
            ErrorKind::NoMemory => "out of memory",
            ErrorKind::System => "the operating system refused",
            ErrorKind::Unsupported => "an algorithm that does not apply",
            ErrorKind::Mismatch => "the ranks' schedules do not pair up",
            ErrorKind::PeerFailed => "another rank's execution failed",
        }
    }
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
