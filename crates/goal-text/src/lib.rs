//! goal-text: the GOAL text format that the field's tools write and read
//! (Schedgen writes it, LogGOPSim's txt2bin reads it; `docs/goal-text.md`).
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//! l1: send 8b to 1 tag 5
//! l2: calc 100
//! l1 requires l2
//! }
//! rank 1 {
//! l1: recv 8b from -1 tag -1
//! }
//! ```
//!
//! The files are large (a dissemination barrier over 2^20 ranks is 1.6 GB),
//! so everything here streams: [`parse`] reads a [`BufRead`](std::io::BufRead)
//! and hands the caller one rank's graph ([`RankGraph`]) at a time, reusing
//! its buffers, so memory is bounded by the largest rank, not by the file.
//! [`check()`](check::check) adds what needs the whole file (every rank
//! present, every send received somewhere, no cycle) in memory bounded by
//! the messages in flight between ranks not yet read.
//!
//! Every mistake becomes a [`TextError`] naming the file, the line and the
//! column, what is wrong and what was expected; parsing goes on after one
//! (the rest of the line is skipped) so that one run reports many.
//! [`convert`] turns one rank's graph into a [`goal_sched::Graph`], for
//! `goal run`.
//!
//! Pure: no I/O beyond reading the input, no `unsafe`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod convert;
pub mod generate;
mod hash;
mod lex;
mod matching;
mod parse;

use std::fmt;
use std::sync::Arc;

pub use check::{check, Summary};
pub use parse::{parse, parse_part, Header, Part};

/// A mistake in a text schedule, at a place in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// The file, as the caller named it.
    pub file: Arc<str>,
    /// Line, from 1.
    pub line: u64,
    /// Column (byte), from 1.
    pub col: u64,
    /// What is wrong and what was expected, a complete sentence.
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)
    }
}

impl std::error::Error for TextError {}

/// Where something was written: line and column, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line, from 1.
    pub line: u64,
    /// Column (byte), from 1.
    pub col: u64,
}

/// What one operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// `send Nb to PEER [tag T] [cpu C] [nic K]`
    Send {
        /// Bytes.
        bytes: u64,
        /// Destination rank.
        to: u32,
        /// Tag, `0..=2^31-1`.
        tag: u32,
    },
    /// `recv Nb from PEER|-1 [tag T|-1] [cpu C] [nic K]`
    Recv {
        /// Bytes.
        bytes: u64,
        /// Source rank; `None` for `-1` (any).
        from: Option<u32>,
        /// Tag; `None` for `-1` (any).
        tag: Option<u32>,
    },
    /// `calc N [cpu C]`: N units (nanoseconds) of local work.
    Calc {
        /// Units of work.
        units: u64,
    },
}

/// One operation of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// What it does.
    pub kind: OpKind,
    /// The `cpu` it runs on (default 0).
    pub cpu: u32,
    /// The `nic` it uses (default 0; always 0 for calc).
    pub nic: u32,
    /// Where its statement starts.
    pub pos: Pos,
    /// Its label, as a range of [`RankGraph::names`] (empty: no label).
    pub label: (u32, u32),
}

/// A dependency between two operations of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dep {
    /// The operation that waits (index in [`RankGraph::ops`]).
    pub target: u32,
    /// The operation it waits for.
    pub prereq: u32,
    /// `irequires`: waits for the start of `prereq`, not its end.
    pub on_start: bool,
    /// Where the statement is.
    pub pos: Pos,
}

/// One rank's part of a file: its operations and dependencies.
#[derive(Debug, Clone, Default)]
pub struct RankGraph {
    /// The rank, as written.
    pub rank: u32,
    /// Where `rank N {` is.
    pub pos: Pos,
    /// Operations, in the order written.
    pub ops: Vec<Op>,
    /// Dependencies, in the order written.
    pub deps: Vec<Dep>,
    /// The labels' bytes, concatenated (see [`Op::label`]).
    pub names: String,
}

impl RankGraph {
    /// The label of operation `i`, or `#i` (its index) when it has none.
    pub fn name(&self, i: usize) -> String {
        let (a, b) = self.ops[i].label;
        if a == b {
            format!("#{i}")
        } else {
            self.names[a as usize..b as usize].to_string()
        }
    }

    fn clear(&mut self) {
        self.ops.clear();
        self.deps.clear();
        self.names.clear();
    }
}
