//! A text schedule (LogGOPSim's and Schedgen's format, `docs/goal-text.md`)
//! as a [`Program`], read by goal-text's streaming parser one rank at a
//! time: memory is the program's, not the file's.
//!
//! A large file ([`read_path`]) is read on several threads: split at
//! `rank N {` lines, each part parsed on its own ([`goal_text::parse_part`])
//! into a builder of its own, the builders joined in order. A file with a
//! mistake anywhere is read again as a whole, so that its errors are
//! reported as [`read`] reports them.
//!
//! A file with mistakes is refused with goal-text's errors (file, line,
//! column, what was expected). Beyond those, the simulator needs cpu and
//! nic numbers below 256: LogGOPSim keeps them in 8 bits.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use goal_text::{OpKind, Part, RankGraph, TextError};

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

/// Files smaller than this are read on one thread.
const PARALLEL_FROM: u64 = 32 << 20;

/// Reads the file at `path` (called `name` in errors), on up to `threads`
/// threads when it is large.
pub fn read_path(path: &Path, name: &str, max_errors: usize, threads: usize) -> Result<Program, ReadError> {
    read_path_from(path, name, max_errors, threads, PARALLEL_FROM)
}

fn read_path_from(path: &Path, name: &str, max_errors: usize, threads: usize, parallel_from: u64) -> Result<Program, ReadError> {
    let io = |e: std::io::Error| ReadError { errors: vec![TextError { file: name.into(), line: 1, col: 1, message: format!("cannot read the file: {e}") }], count: 1 };
    let len = std::fs::metadata(path).map_err(io)?.len();
    let whole = || -> Result<Program, ReadError> {
        let f = File::open(path).map_err(io)?;
        read(BufReader::with_capacity(1 << 20, f), name, len, max_errors)
    };
    if threads < 2 || len < parallel_from {
        return whole();
    }
    match split(path, len, threads).ok().flatten() {
        Some((num_ranks, cuts)) => match read_parts(path, name, num_ranks, &cuts) {
            Some(p) => Ok(p),
            None => whole(),
        },
        None => whole(),
    }
}

/// Where the parts of a file start: (byte offset, first rank).
type Cuts = Vec<(u64, u32)>;

/// `num_ranks` and the parts: (byte offset, first rank), the first at 0.
/// `None` when the file does not look like one to split (no `num_ranks`
/// first, no `rank` lines where expected).
fn split(path: &Path, len: u64, threads: usize) -> std::io::Result<Option<(u32, Cuts)>> {
    let mut f = File::open(path)?;
    let mut head = vec![0u8; 4096.min(len as usize)];
    f.read_exact(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    let mut words = text.split_whitespace();
    let num_ranks = match (words.next(), words.next().and_then(|n| n.parse::<u32>().ok())) {
        (Some("num_ranks"), Some(n)) if n > 0 => n,
        _ => return Ok(None),
    };
    let mut cuts = vec![(0u64, 0u32)];
    for k in 1..threads as u64 {
        let at = len * k / threads as u64;
        f.seek(SeekFrom::Start(at))?;
        let mut r = BufReader::with_capacity(1 << 16, &mut f);
        let mut line = Vec::new();
        // Skip the partial line, then find a line `rank N {`.
        let mut pos = at + r.read_until(b'\n', &mut line)? as u64;
        loop {
            line.clear();
            let n = r.read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            if let Some(rest) = line.strip_prefix(b"rank ") {
                let digits: Vec<u8> = rest.iter().copied().take_while(u8::is_ascii_digit).collect();
                if let Some(rank) = std::str::from_utf8(&digits).ok().and_then(|d| d.parse::<u32>().ok()) {
                    if rank > cuts.last().map_or(0, |c| c.1) && rank < num_ranks {
                        cuts.push((pos, rank));
                    }
                    break;
                }
            }
            pos += n as u64;
        }
    }
    Ok((cuts.len() > 1).then_some((num_ranks, cuts)))
}

/// The parts read on threads of their own and joined; `None` if any part
/// has a mistake (or the parts do not join up).
fn read_parts(path: &Path, name: &str, num_ranks: u32, cuts: &[(u64, u32)]) -> Option<Program> {
    let parts: Vec<Option<ProgramBuilder>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cuts
            .iter()
            .enumerate()
            .map(|(i, &(at, first))| {
                let (end_at, end_rank) = cuts.get(i + 1).map_or((u64::MAX, None), |&(o, r)| (o, Some(r)));
                scope.spawn(move || -> Option<ProgramBuilder> {
                    let mut f = File::open(path).ok()?;
                    f.seek(SeekFrom::Start(at)).ok()?;
                    let input = BufReader::with_capacity(1 << 20, f.take(end_at - at));
                    let mut b = ProgramBuilder::new(0);
                    let hint = (end_at.min(u64::MAX / 2) - at).min(std::fs::metadata(path).ok()?.len());
                    b.reserve((hint / 16) as usize, (hint / 16) as usize);
                    let (mut bad, mut ok) = (false, true);
                    goal_text::parse_part(
                        input,
                        name,
                        Part { num_ranks, first, end: end_rank },
                        |g| ok &= add_rank(&mut b, g).is_ok(),
                        |_| bad = true,
                    );
                    let want = end_rank.unwrap_or(num_ranks) - first;
                    (!bad && ok && b.next_rank() == want).then_some(b)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    let mut parts = parts.into_iter();
    let mut all = parts.next()??;
    for p in parts {
        all.append(p?).ok()?;
    }
    all.set_num_ranks(num_ranks);
    all.finish().ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use goal_text::generate::{schedgen, Pattern};

    fn same(a: &Program, b: &Program) {
        assert_eq!((a.num_ranks, &a.op_base, &a.edge_base, &a.peer, &a.succ_end, &a.npre, &a.edges), (b.num_ranks, &b.op_base, &b.edge_base, &b.peer, &b.succ_end, &b.npre, &b.edges));
        let attrs = |p: &Program| p.attr.iter().map(|&i| p.attrs[i as usize]).collect::<Vec<_>>();
        assert_eq!(attrs(a), attrs(b));
    }

    /// A file read in parts on threads is the program read in one piece;
    /// a mistake in a later part is reported as a whole read reports it.
    #[test]
    fn a_file_read_in_parts_is_the_file_read_whole() {
        let dir = std::env::temp_dir().join(format!("goal-sim-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.goal");
        let mut text = String::new();
        schedgen(Pattern::Dissemination, 3001, 1, 0..3001, &mut text);
        // Attributes the first part never uses, and a comment across no cut.
        text = text.replace("rank 2900 {\n", "rank 2900 {\nx: calc 7 cpu 3 /* late */\n");
        std::fs::write(&path, &text).unwrap();
        let whole = read_path_from(&path, "b.goal", 5, 1, 0).unwrap();
        for threads in [2, 3, 7] {
            same(&read_path_from(&path, "b.goal", 5, threads, 0).unwrap(), &whole);
        }
        assert_eq!(whole.cpus(), 4);
        let bad = text.replace("rank 2500 {\nl1: send 1b to 2501", "rank 2500 {\nl1: send 1b to 9999");
        std::fs::write(&path, &bad).unwrap();
        let line = bad[..bad.find("send 1b to 9999").unwrap()].lines().count() as u64;
        let e = read_path_from(&path, "b.goal", 5, 4, 0).unwrap_err();
        assert_eq!((e.count, e.errors[0].line), (1, line), "{:?}", e.errors);
        assert!(e.errors[0].message.contains("outside num_ranks 3001"), "{:?}", e.errors);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
