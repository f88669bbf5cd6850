//! Why a simulation failed: [`SimError`] and the ranks it names.

use crate::error::CompileError;
use std::fmt;

/// A rank whose operations could not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StuckRank {
    /// The rank.
    pub rank: u32,
    /// Operations that started and never finished: (graph vertex, description).
    pub blocked: Vec<(u64, String)>,
    /// Operations that never started because a prerequisite did not finish.
    pub waiting: usize,
}

/// Why a simulation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The arguments do not fit together (as many graphs as memories, at least one).
    Setup(String),
    /// A rank's graph does not compile.
    Compile {
        /// The rank.
        rank: u32,
        /// The compiler's error.
        error: CompileError,
    },
    /// A user buffer reaches past the rank's memory.
    OutOfBounds {
        /// The rank.
        rank: u32,
        /// The graph vertex.
        vertex: u64,
        /// What reaches where.
        message: String,
    },
    /// A message larger than its receive.
    Truncation {
        /// The receiving rank.
        rank: u32,
        /// The receive's graph vertex.
        vertex: u64,
        /// The sending rank.
        source: u32,
        /// Bytes of the message.
        bytes: u64,
        /// Bytes of the receive.
        capacity: u64,
    },
    /// A message shorter than its exact-length receive (a collective's:
    /// see [`Graph::require_exact`](crate::Graph::require_exact)).
    Short {
        /// The receiving rank.
        rank: u32,
        /// The receive's graph vertex.
        vertex: u64,
        /// The sending rank.
        source: u32,
        /// Bytes of the message.
        bytes: u64,
        /// Bytes of the receive.
        capacity: u64,
    },
    /// Integer division by zero in a local operation.
    DivByZero {
        /// The rank.
        rank: u32,
        /// The graph vertex.
        vertex: u64,
        /// The element index.
        element: u64,
    },
    /// A local operation whose result partially overlaps an operand.
    Overlap {
        /// The rank.
        rank: u32,
        /// The graph vertex.
        vertex: u64,
        /// Which buffers.
        message: String,
    },
    /// Two operations of one rank running at once on overlapping bytes, one writing.
    Race {
        /// The rank.
        rank: u32,
        /// The operation that was running (graph vertex).
        first: u64,
        /// The operation that started (graph vertex).
        second: u64,
        /// The two operations and the bytes.
        message: String,
    },
    /// Operations left and nothing can progress.
    Deadlock {
        /// Every rank with unfinished operations.
        stuck: Vec<StuckRank>,
    },
    /// Messages that no receive matched.
    Unmatched {
        /// "rank 0 -> rank 1, tag 3, 8 bytes" for each.
        messages: Vec<String>,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Setup(m) => f.write_str(m),
            SimError::Compile { rank, error } => write!(f, "rank {rank}: {error}"),
            SimError::OutOfBounds { rank, message, .. } => write!(f, "rank {rank}: {message}"),
            SimError::Truncation { rank, vertex, source, bytes, capacity } => write!(
                f,
                "rank {rank}: vertex {vertex}: message of {bytes} bytes from rank {source} is larger than the receive of {capacity} bytes (truncation)"
            ),
            SimError::Short { rank, vertex, source, bytes, capacity } => write!(
                f,
                "rank {rank}: vertex {vertex}: message of {bytes} bytes from rank {source}, where the receive takes exactly {capacity}"
            ),
            SimError::DivByZero { rank, vertex, element } => {
                write!(f, "rank {rank}: vertex {vertex}: integer division by zero at element {element}")
            }
            SimError::Overlap { rank, message, .. } => write!(f, "rank {rank}: {message}"),
            SimError::Race { rank, message, .. } => write!(f, "rank {rank}: {message}"),
            SimError::Deadlock { stuck } => {
                f.write_str("deadlock:")?;
                for s in stuck {
                    let b: Vec<String> = s.blocked.iter().map(|(v, d)| format!("vertex {v} ({d})")).collect();
                    write!(f, " rank {} blocked in [{}], {} waiting;", s.rank, b.join(", "), s.waiting)?;
                }
                Ok(())
            }
            SimError::Unmatched { messages } => write!(f, "messages never received: {}", messages.join("; ")),
        }
    }
}

impl std::error::Error for SimError {}
