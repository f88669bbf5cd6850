//! A text schedule (LogGOPSim's and Schedgen's format, `docs/goal-text.md`)
//! as a [`Program`], read by goal-text's streaming parser one rank at a
//! time: memory is the program's, not the file's.
//!
//! A file with mistakes is refused with goal-text's errors (file, line,
//! column, what was expected). Beyond those, the simulator needs cpu and
//! nic numbers below 256: LogGOPSim keeps them in 8 bits.

use std::io::BufRead;

use goal_text::{OpKind, RankGraph, TextError};

use crate::program::{Attr, Kind, OpSpec, Program, ProgramBuilder, ANY};

/// Why a text schedule could not become a program: its errors (the first
/// `max_errors`) and how many there were.
#[derive(Debug, Clone, Default)]
pub struct ReadError {
    /// The first errors, in the order found.
    pub errors: Vec<TextError>,
    /// Every error found.
    pub count: u64,
}

/// Reads `input` (called `file` in errors). `size_hint`, the length of the
/// input in bytes if known, lets the program's arrays be sized once.
pub fn read<R: BufRead>(input: R, file: &str, size_hint: u64, max_errors: usize) -> Result<Program, ReadError> {
    let mut err = ReadError::default();
    let mut builder: Option<ProgramBuilder> = None;
    let push = |e: TextError, err: &mut ReadError| {
        err.count += 1;
        if err.errors.len() < max_errors.max(1) {
            err.errors.push(e);
        }
    };
    let mut rank_errors: Vec<TextError> = Vec::new();
    let header = goal_text::parse(
        input,
        file,
        |g: &RankGraph| {
            let b = builder.get_or_insert_with(|| {
                // Schedgen's files spend about 20 bytes per operation and
                // per dependency; unused reserve costs no memory.
                let mut b = ProgramBuilder::new(0);
                b.reserve((size_hint / 16) as usize, (size_hint / 16) as usize);
                b
            });
            if let Err(m) = add_rank(b, g) {
                rank_errors.push(TextError { file: file.into(), line: g.pos.line, col: g.pos.col, message: m });
            }
        },
        |e| push(e, &mut err),
    );
    for e in rank_errors {
        push(e, &mut err);
    }
    if err.count > 0 {
        return Err(err);
    }
    let n = header.num_ranks.unwrap_or(0);
    let mut b = builder.unwrap_or_else(|| ProgramBuilder::new(0));
    b.set_num_ranks(n);
    b.finish().map_err(|e| ReadError { errors: vec![TextError { file: file.into(), line: header.lines, col: 1, message: e.0 }], count: 1 })
}

/// Adds one rank's graph to the builder.
pub fn add_rank(b: &mut ProgramBuilder, g: &RankGraph) -> Result<(), String> {
    b.begin_rank();
    for (i, op) in g.ops.iter().enumerate() {
        let small = |v: u32, what: &str| -> Result<u8, String> {
            u8::try_from(v).map_err(|_| format!("rank {}: {} uses {what} {v}: goal sim takes 0 to 255, as LogGOPSim (8 bits)", g.rank, g.name(i)))
        };
        let (cpu, nic) = (small(op.cpu, "cpu")?, small(op.nic, "nic")?);
        let (kind, size, tag, peer) = match op.kind {
            OpKind::Send { bytes, to, tag } => (Kind::Send, bytes, tag, to),
            OpKind::Recv { bytes, from, tag } => (Kind::Recv, bytes, tag.unwrap_or(ANY), from.unwrap_or(ANY)),
            OpKind::Calc { units } => (Kind::Calc, units, 0, 0),
        };
        b.op(OpSpec { attr: Attr { kind, size, tag, cpu, nic }, peer }).map_err(|e| e.0)?;
    }
    for d in &g.deps {
        b.dep(d.target, d.prereq, d.on_start);
    }
    b.end_rank().map_err(|e| e.0)
}
