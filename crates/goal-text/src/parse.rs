//! The streaming parser: lines in, one [`RankGraph`] at a time out.
//!
//! A state machine over each line's tokens: the header (`num_ranks N`),
//! between ranks (`rank N {`), inside a rank (statements and the closing
//! `}`). A statement ends at the end of its line or at a `}`. A mistake is
//! reported and the rest of the statement skipped, so one run reports many;
//! only a missing `num_ranks` and an unreadable input stop the parse.
//!
//! Statement lines in the simple forms Schedgen writes take a fast path
//! (`fast.rs`) that reads them without tokens; any other line, and every
//! mistake, goes through the general path.
//!
//! Labels are looked up in a map that is cleared, not freed, between ranks;
//! a label of at most 16 bytes (Schedgen's `l1`, `l2`, ...) is its own key,
//! packed into a `u128`, so defining one allocates nothing.

use std::collections::HashMap;
use std::io::BufRead;
use std::ops::ControlFlow;
use std::sync::Arc;

use crate::hash::FxMap;
use crate::lex::{for_each_line, Lexer, Tok, Token};
use crate::{Dep, Op, OpKind, Pos, RankGraph, TextError};

#[path = "fast.rs"]
mod fast;

/// The most ranks a file may declare (peers are 32-bit signed in goal).
pub const MAX_RANKS: u64 = 1 << 31;
/// The largest tag (goal's tags are `0..=2^31-1`).
pub const MAX_TAG: u64 = i32::MAX as u64;

/// The op index of a label whose operation could not be read.
const BROKEN: u32 = u32::MAX;

/// What the parse learned of the file as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// `num_ranks`, if the file declared it.
    pub num_ranks: Option<u32>,
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Parses `input` (called `file` in errors), calling `on_rank` with each
/// rank's graph when its `}` is read and `on_error` with each mistake.
/// The graph passed to `on_rank` is reused for the next rank.
pub fn parse<R: BufRead>(input: R, file: &str, on_rank: impl FnMut(&RankGraph), on_error: impl FnMut(TextError)) -> Header {
    parse_part(input, file, Part::default(), on_rank, on_error)
}

/// A part of a file to parse on its own, for reading a large file on
/// several threads: the ranks `first..end` (`end`: every rank after
/// `first` when `None`). A part that starts at rank 0 starts at the top of
/// the file (with `num_ranks`); a later one starts at the line `rank
/// first {` and needs `num_ranks` from the caller. Line numbers count from
/// the start of the part: a caller that finds errors reads the file again
/// as a whole to report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Part {
    /// `num_ranks` of the file, for a part that does not start at the top.
    pub num_ranks: u32,
    /// The first rank of the part.
    pub first: u32,
    /// The rank after the part's last, if not the file's last.
    pub end: Option<u32>,
}

/// [`parse`] of one [`Part`] of a file.
pub fn parse_part<R: BufRead>(
    input: R,
    file: &str,
    part: Part,
    mut on_rank: impl FnMut(&RankGraph),
    mut on_error: impl FnMut(TextError),
) -> Header {
    let top = part.first == 0;
    let mut p = Parser {
        file: Arc::from(file),
        state: if top { State::Header } else { State::Between },
        num_ranks: part.num_ranks,
        next_rank: part.first as u64,
        end_rank: part.end,
        lexer: Lexer::default(),
        tokens: Vec::new(),
        graph: RankGraph::default(),
        discard: false,
        short: FxMap::default(),
        numbered: Vec::new(),
        numbered_used: 0,
        long: HashMap::new(),
        pending: Vec::new(),
        header: Header { num_ranks: (!top).then_some(part.num_ranks), ..Header::default() },
        last: Pos { line: 1, col: 1 },
    };
    let read = for_each_line(input, |n, line| {
        p.header.lines = n;
        p.header.bytes += line.len() as u64 + 1;
        p.last = Pos { line: n, col: line.len() as u64 + 1 };
        p.line(n, line, &mut on_rank, &mut on_error)
    });
    if let Err((line, e)) = read {
        on_error(p.err(Pos { line, col: 1 }, format!("cannot read the file: {e}")));
        return p.header;
    }
    p.finish(&mut on_rank, &mut on_error);
    p.header
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before `num_ranks`.
    Header,
    /// Expecting `rank N {` (or the end).
    Between,
    /// After `rank N`, expecting `{`.
    Brace,
    /// Inside a rank's braces.
    Body,
    /// A fatal mistake: read no further.
    Stopped,
}

struct Parser {
    file: Arc<str>,
    state: State,
    num_ranks: u32,
    /// The rank expected next.
    next_rank: u64,
    /// The rank after the last this part reads, if not the file's last.
    end_rank: Option<u32>,
    lexer: Lexer,
    tokens: Vec<Token>,
    graph: RankGraph,
    /// The block being read belongs to no valid rank: do not hand it on.
    discard: bool,
    /// Labels of at most 16 bytes, packed, to op index.
    short: FxMap<u128, u32>,
    /// Labels `l<N>` (Schedgen's), by N: op index or UNDEFINED.
    numbered: Vec<u32>,
    /// How much of `numbered` the current rank has touched.
    numbered_used: usize,
    /// Longer labels.
    long: HashMap<Box<[u8]>, u32>,
    /// Dependencies that named a label not (yet) defined: (label, where).
    pending: Vec<(String, Pos)>,
    header: Header,
    /// The end of the last line read, where end-of-file errors point.
    last: Pos,
}

type OnRank<'a> = &'a mut dyn FnMut(&RankGraph);
type OnError<'a> = &'a mut dyn FnMut(TextError);

/// Why a statement could not be read: where and what.
type Bad = (u64, String);

fn describe(t: Option<&Token>, line: &[u8]) -> String {
    match t {
        None => "the end of the line".into(),
        Some(t) => match t.kind {
            Tok::Close => "'}'".into(),
            Tok::Bad(c) if !c.is_ascii_graphic() => format!("the byte 0x{c:02x}"),
            _ => format!("'{}'", String::from_utf8_lossy(&line[t.start..t.end])),
        },
    }
}

impl Parser {
    fn err(&self, pos: Pos, message: String) -> TextError {
        TextError { file: self.file.clone(), line: pos.line, col: pos.col, message }
    }

    fn line(&mut self, n: u64, line: &[u8], on_rank: OnRank, on_error: OnError) -> ControlFlow<()> {
        if self.state == State::Body && self.lexer.open_comment.is_none() && self.fast_statement(n, line) {
            return ControlFlow::Continue(());
        }
        let mut toks = std::mem::take(&mut self.tokens);
        self.lexer.tokens(n, line, &mut toks);
        let mut i = 0;
        while i < toks.len() && self.state != State::Stopped {
            let t = toks[i];
            let at = |col| Pos { line: n, col };
            let word = |k: usize, w: &str| toks.get(k).is_some_and(|t| t.kind == Tok::Word && same(&line[t.start..t.end], w.as_bytes()));
            match self.state {
                State::Header => {
                    match (word(i, "num_ranks"), toks.get(i + 1).map(|t| t.kind)) {
                        (true, Some(Tok::Num { neg: false, value: Some(v) })) if (1..=MAX_RANKS).contains(&v) => {
                            self.num_ranks = v as u32;
                            self.header.num_ranks = Some(v as u32);
                            self.state = State::Between;
                            i += 2;
                        }
                        (true, _) => {
                            let c = toks.get(i + 1).map_or(line.len() as u64 + 1, |t| t.col);
                            on_error(self.err(at(c), format!("expected the number of ranks (1 to {MAX_RANKS}) after num_ranks, found {}", describe(toks.get(i + 1), line))));
                            self.state = State::Stopped;
                        }
                        (false, _) => {
                            on_error(self.err(at(t.col), format!("expected 'num_ranks N' to open the file, found {}", describe(Some(&t), line))));
                            self.state = State::Stopped;
                        }
                    }
                }
                State::Between => {
                    if word(i, "rank") {
                        i = self.open_rank(n, line, &toks, i, on_error);
                    } else {
                        let what = if t.kind == Tok::Close { "a '}' that closes no rank".to_string() } else { describe(Some(&t), line) };
                        on_error(self.err(at(t.col), format!("expected 'rank {} {{', found {what}", self.next_rank)));
                        i = toks.len();
                    }
                }
                State::Brace => {
                    if t.kind == Tok::Open {
                        self.state = State::Body;
                        i += 1;
                    } else {
                        on_error(self.err(at(t.col), format!("expected '{{' to open rank {}, found {}", self.graph.rank, describe(Some(&t), line))));
                        self.state = State::Body;
                    }
                }
                State::Body => {
                    if t.kind == Tok::Close {
                        self.close_rank(on_rank, on_error);
                        i += 1;
                    } else if word(i, "rank") && matches!(toks.get(i + 1).map(|t| t.kind), Some(Tok::Num { .. })) {
                        on_error(self.err(at(t.col), format!("expected '}}' to close rank {} (opened at line {}) before the next rank", self.graph.rank, self.graph.pos.line)));
                        self.close_rank(on_rank, on_error);
                    } else {
                        let end = toks[i..].iter().position(|t| t.kind == Tok::Close).map_or(toks.len(), |k| i + k);
                        if let Err((col, msg)) = self.statement(n, line, &toks[i..end]) {
                            on_error(self.err(at(col), msg));
                        }
                        i = end;
                    }
                }
                State::Stopped => {}
            }
        }
        self.tokens = toks;
        if self.state == State::Stopped {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// `rank N {` at `toks[i]`; returns the index after it.
    fn open_rank(&mut self, n: u64, line: &[u8], toks: &[Token], i: usize, on_error: OnError) -> usize {
        let pos = Pos { line: n, col: toks[i].col };
        let num = toks.get(i + 1);
        let rank = match num.map(|t| t.kind) {
            Some(Tok::Num { neg: false, value: Some(v) }) if v < self.num_ranks as u64 => v,
            Some(Tok::Num { neg: false, value }) => {
                let v = value.map_or("a number past 2^64".into(), |v| v.to_string());
                on_error(self.err(Pos { line: n, col: toks[i + 1].col }, format!("rank {v} is outside num_ranks {}: expected a rank from 0 to {}", self.num_ranks, self.num_ranks - 1)));
                // Read its block, to stay in step, but hand it to no one.
                self.begin(u32::MAX, pos);
                self.discard = true;
                return i + 2;
            }
            _ => {
                let col = num.map_or(line.len() as u64 + 1, |t| t.col);
                on_error(self.err(Pos { line: n, col }, format!("expected the rank's number after 'rank', found {}", describe(num, line))));
                return toks.len();
            }
        };
        if rank != self.next_rank {
            let col = toks[i + 1].col;
            let msg = if rank > self.next_rank {
                let missing = if rank == self.next_rank + 1 { format!("rank {} is", self.next_rank) } else { format!("ranks {} to {} are", self.next_rank, rank - 1) };
                format!("rank {rank} comes too early: {missing} missing (ranks must appear in order 0 to {})", self.num_ranks - 1)
            } else {
                format!("rank {rank} is out of order: expected rank {} (ranks appear once each, in order)", self.next_rank)
            };
            on_error(self.err(Pos { line: n, col }, msg));
        }
        self.next_rank = self.next_rank.max(rank + 1);
        self.begin(rank as u32, pos);
        i + 2
    }

    /// Starts reading rank `rank`'s block, its `rank` word at `pos`.
    fn begin(&mut self, rank: u32, pos: Pos) {
        self.graph.clear();
        self.short.clear();
        self.long.clear();
        self.numbered[..self.numbered_used].fill(UNDEFINED);
        self.numbered_used = 0;
        self.pending.clear();
        self.graph.rank = rank;
        self.graph.pos = pos;
        self.discard = false;
        self.state = State::Brace;
    }

    fn close_rank(&mut self, on_rank: OnRank, on_error: OnError) {
        for (label, pos) in std::mem::take(&mut self.pending) {
            let msg = match self.lookup(label.as_bytes()) {
                Some(BROKEN) => continue,
                Some(k) => format!(
                    "label {label} is used before it is defined (at line {}): a dependency must follow the labels it names",
                    self.graph.ops[k as usize].pos.line
                ),
                None => format!("label {label} is not defined in rank {}: expected a label defined earlier in this rank", self.graph.rank),
            };
            on_error(self.err(pos, msg));
        }
        if !self.discard {
            on_rank(&self.graph);
        }
        self.state = State::Between;
    }

    fn finish(&mut self, on_rank: OnRank, on_error: OnError) {
        let end = self.last;
        if let Some(open) = self.lexer.open_comment {
            on_error(self.err(open, "this comment is never closed: expected '*/' before the end of the file".into()));
        }
        match self.state {
            State::Header => on_error(self.err(end, "the file ends before 'num_ranks N': expected 'num_ranks N' to open the file".into())),
            State::Brace | State::Body => {
                on_error(self.err(end, format!("the file ends inside rank {} (opened at line {}): expected '}}'", self.graph.rank, self.graph.pos.line)));
                self.close_rank(on_rank, on_error);
            }
            State::Between | State::Stopped => {}
        }
        let last_rank = self.end_rank.unwrap_or(self.num_ranks).min(self.num_ranks);
        if self.state != State::Stopped && self.header.num_ranks.is_some() && self.next_rank < last_rank as u64 {
            let (a, b) = (self.next_rank, last_rank - 1);
            let missing = if a == b as u64 { format!("rank {a} is missing") } else { format!("ranks {a} to {b} are missing") };
            on_error(self.err(end, format!("the file ends but {missing}: num_ranks {} expects ranks 0 to {b}", self.num_ranks)));
        }
    }

    fn lookup(&self, label: &[u8]) -> Option<u32> {
        if let Some(n) = numbered(label) {
            return self.numbered.get(n).copied().filter(|&v| v != UNDEFINED);
        }
        match pack(label) {
            Some(k) => self.short.get(&k).copied(),
            None => self.long.get(label).copied(),
        }
    }

    /// One statement, `toks` not empty and without its `}`.
    fn statement(&mut self, n: u64, line: &[u8], toks: &[Token]) -> Result<(), Bad> {
        // Words are ASCII (the lexer makes them so): compare bytes.
        let text = |t: &Token| &line[t.start..t.end];
        let eol = line.len() as u64 + 1;
        let col_of = |k: usize| toks.get(k).map_or(eol, |t| t.col);
        let found = |k: usize| describe(toks.get(k), line);
        let first = toks[0];
        let pos = Pos { line: n, col: first.col };
        if first.kind != Tok::Word {
            return Err((first.col, format!("expected an operation (send, recv, calc), a label or a dependency, found {}", found(0))));
        }
        let w0 = text(&first);
        // A dependency: `a requires b` / `a irequires b`.
        if let Some(t1) = toks.get(1).filter(|t| t.kind == Tok::Word) {
            let w1 = text(t1);
            if same(w1, b"requires") || same(w1, b"irequires") {
                let Some(t2) = toks.get(2).filter(|t| t.kind == Tok::Word) else {
                    return Err((col_of(2), format!("expected a label after {}, found {}", found(1), found(2))));
                };
                if toks.len() > 3 {
                    return Err((col_of(3), format!("expected the end of the dependency, found {}", found(3))));
                }
                let (a, b) = (self.lookup(w0), self.lookup(text(t2)));
                if a.is_none() {
                    self.pending.push((String::from_utf8_lossy(w0).into_owned(), pos));
                }
                if b.is_none() {
                    self.pending.push((String::from_utf8_lossy(text(t2)).into_owned(), Pos { line: n, col: t2.col }));
                }
                if let (Some(target), Some(prereq)) = (a, b) {
                    if target == BROKEN || prereq == BROKEN {
                        return Ok(());
                    }
                    self.graph.deps.push(Dep { target, prereq, on_start: same(w1, b"irequires"), pos });
                }
                return Ok(());
            }
        }
        // An operation, maybe labelled.
        let (label, k) = if toks.get(1).is_some_and(|t| t.kind == Tok::Colon) {
            if !first.kind.eq(&Tok::Word) || !line[first.start].is_ascii_alphabetic() {
                return Err((first.col, format!("a label starts with a letter, found {}", found(0))));
            }
            (Some(w0), 2)
        } else {
            (None, 0)
        };
        if self.graph.ops.len() >= UNDEFINED as usize {
            return Err((first.col, format!("rank {} has more operations than goal can number (2^32 - 2)", self.graph.rank)));
        }
        let index = self.graph.ops.len() as u32;
        // A label whose operation cannot be read stands for it all the same
        // (BROKEN): dependencies naming it are dropped, not reported again.
        let op = self.operation(line, toks, k, pos);
        if let Some(l) = label {
            let given = if op.is_ok() { index } else { BROKEN };
            if let Err(prev) = self.define(l, given) {
                let at = self.graph.ops.get(prev as usize).map_or(n, |o| o.pos.line);
                let w0 = String::from_utf8_lossy(w0);
                return Err((first.col, format!("label {w0} is already defined in rank {} (at line {at}): expected a new label", self.graph.rank)));
            }
        }
        let mut op = op?;
        if let Some(l) = label {
            let a = self.graph.names.len() as u32;
            self.graph.names.push_str(&String::from_utf8_lossy(l));
            op.label = (a, self.graph.names.len() as u32);
        }
        self.graph.ops.push(op);
        Ok(())
    }

    /// Defines `label` as operation `index`; `Err` with the operation it
    /// already names.
    fn define(&mut self, label: &[u8], index: u32) -> Result<(), u32> {
        use std::collections::hash_map::Entry;
        if let Some(n) = numbered(label) {
            if n >= self.numbered.len() {
                self.numbered.resize(n + 1, UNDEFINED);
            }
            self.numbered_used = self.numbered_used.max(n + 1);
            return match std::mem::replace(&mut self.numbered[n], index) {
                UNDEFINED => Ok(()),
                prev => {
                    self.numbered[n] = prev;
                    Err(prev)
                }
            };
        }
        let slot = match pack(label) {
            Some(key) => match self.short.entry(key) {
                Entry::Occupied(o) => return Err(*o.get()),
                Entry::Vacant(v) => v,
            }
            .insert(index),
            None => match self.long.entry(label.into()) {
                Entry::Occupied(o) => return Err(*o.get()),
                Entry::Vacant(v) => v,
            }
            .insert(index),
        };
        let _ = slot;
        Ok(())
    }

    /// `send ...`, `recv ...` or `calc ...` at `toks[k]`.
    fn operation(&self, line: &[u8], toks: &[Token], mut k: usize, pos: Pos) -> Result<Op, Bad> {
        let text = |t: &Token| &line[t.start..t.end];
        let eol = line.len() as u64 + 1;
        let col_of = |k: usize| toks.get(k).map_or(eol, |t| t.col);
        let found = |k: usize| describe(toks.get(k), line);
        let is_word = |k: usize, w: &str| toks.get(k).is_some_and(|t| t.kind == Tok::Word && same(text(t), w.as_bytes()));
        // A number at k: Ok(None) for -1 where `wild`, with `what` in messages.
        let number = |k: usize, what: &str, max: u64, wild: bool| -> Result<Option<u64>, Bad> {
            match toks.get(k).map(|t| t.kind) {
                Some(Tok::Num { neg: false, value: Some(v) }) if v <= max => Ok(Some(v)),
                Some(Tok::Num { neg: true, value: Some(1) }) if wild => Ok(None),
                Some(Tok::Num { .. }) => {
                    let any = if wild { " or -1 (any)" } else { "" };
                    Err((col_of(k), format!("{what} {} is out of range: expected 0 to {max}{any}", found(k).trim_matches('\''))))
                }
                _ => Err((col_of(k), format!("expected {what} (a number), found {}", found(k)))),
            }
        };
        let peers = self.num_ranks as u64 - 1;
        let verb: &[u8] = if toks.get(k).is_some_and(|t| t.kind == Tok::Word) { text(&toks[k]) } else { b"" };
        // Where a missing tag clause would have been (usize::MAX: given).
        let mut tag_at = usize::MAX;
        let kind = match verb {
            b"send" | b"recv" => {
                let send = verb == b"send";
                let bytes = number(k + 1, "a size in bytes", u64::MAX, false)?.unwrap_or(0);
                if is_word(k + 2, "b") || is_word(k + 2, "B") {
                    k += 3;
                } else {
                    return Err((col_of(k + 2), format!("expected 'b' after the size {bytes}, found {}", found(k + 2))));
                }
                let dir = if send { "to" } else { "from" };
                if !is_word(k, dir) {
                    return Err((col_of(k), format!("expected '{dir}' after the size, found {}", found(k))));
                }
                let what = if send { "the destination rank" } else { "the source rank" };
                let peer = match toks.get(k + 1).map(|t| t.kind) {
                    Some(Tok::Num { neg: false, value }) if value.is_none_or(|v| v > peers) => {
                        let verb = if send { "sends to" } else { "receives from" };
                        return Err((col_of(k + 1), format!(
                            "rank {} {verb} rank {}, outside num_ranks {}: expected {what} from 0 to {peers}{}",
                            self.graph.rank,
                            found(k + 1).trim_matches('\''),
                            self.num_ranks,
                            if send { "" } else { " or -1 (any)" }
                        )));
                    }
                    _ => number(k + 1, what, peers, !send)?,
                };
                k += 2;
                let mut tag = Some(0);
                if is_word(k, "tag") {
                    tag = number(k + 1, "the tag", MAX_TAG, !send)?;
                    k += 2;
                } else {
                    tag_at = k;
                }
                if send {
                    OpKind::Send { bytes, to: peer.unwrap_or(0) as u32, tag: tag.unwrap_or(0) as u32 }
                } else {
                    OpKind::Recv { bytes, from: peer.map(|p| p as u32), tag: tag.map(|t| t as u32) }
                }
            }
            b"calc" => {
                let units = number(k + 1, "the units of work", u64::MAX, false)?.unwrap_or(0);
                k += 2;
                OpKind::Calc { units }
            }
            _ => return Err((col_of(k), format!("expected send, recv or calc, found {}", found(k)))),
        };
        let mut op = Op { kind, cpu: 0, nic: 0, pos, label: (0, 0) };
        // The clauses still allowed, in order: tag (read above), cpu, nic.
        let mut next = if tag_at == usize::MAX { 1 } else { 0 };
        if is_word(k, "cpu") {
            op.cpu = number(k + 1, "the cpu", u32::MAX as u64, false)?.unwrap_or(0) as u32;
            k += 2;
            next = 2;
        }
        if !matches!(kind, OpKind::Calc { .. }) && is_word(k, "nic") {
            op.nic = number(k + 1, "the nic", u32::MAX as u64, false)?.unwrap_or(0) as u32;
            k += 2;
            next = 3;
        }
        if k < toks.len() {
            let all = if matches!(kind, OpKind::Calc { .. }) { &["'cpu C'"][..] } else { &["'tag T'", "'cpu C'", "'nic N'"][..] };
            let left = if matches!(kind, OpKind::Calc { .. }) { &all[(next - 1).min(1)..] } else { &all[next.min(3)..] };
            let options = if left.is_empty() { String::new() } else { format!("{} or ", left.join(", ")) };
            return Err((col_of(k), format!("expected {options}the end of the statement, found {}", found(k))));
        }
        Ok(op)
    }
}

/// Byte strings equal, compared inline (the words compared are short).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// No label in [`Parser::numbered`].
const UNDEFINED: u32 = u32::MAX - 1;

/// N for a label `l<N>` as Schedgen writes them (no leading zero, N below
/// 2^20), which are looked up by index instead of by hash.
fn numbered(label: &[u8]) -> Option<usize> {
    let digits = label.strip_prefix(b"l")?;
    if digits.is_empty() || digits.len() > 7 || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    let mut n = 0usize;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (d - b'0') as usize;
    }
    (n < 1 << 20).then_some(n)
}

/// A label of at most 16 bytes as one integer (labels hold no zero byte,
/// so zero-padding keeps different labels different).
fn pack(label: &[u8]) -> Option<u128> {
    if label.len() > 16 {
        return None;
    }
    let mut b = [0u8; 16];
    b[..label.len()].copy_from_slice(label);
    Some(u128::from_le_bytes(b))
}
