//! The fast path of the parser: one pass over the bytes of a statement line
//! in the forms Schedgen writes (`l3: send 1b to 2 tag 0`, `l3 requires
//! l2`), with no tokens, no allocation and no second look.
//!
//! It takes only a line that is complete and valid as it stands: labels
//! defined once, peers in range, dependencies naming labels already
//! defined, nothing after the statement but spaces. Anything else (a
//! comment, a brace, a mistake, an unusual spacing) returns `false`, and
//! the general path reads the line as before, so errors and their messages
//! are the general path's alone. What the fast path records is exactly
//! what the general one would: the same operation, label, dependency and
//! positions.

use super::{Parser, BROKEN, MAX_TAG, UNDEFINED};
use crate::{Dep, Op, OpKind, Pos};

/// A cursor over one line.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cur<'_> {
    #[inline]
    fn spaces(&mut self) -> bool {
        let s = self.i;
        while self.i < self.b.len() && (self.b[self.i] == b' ' || self.b[self.i] == b'\t') {
            self.i += 1;
        }
        self.i > s
    }
    #[inline]
    fn ident(&mut self) -> Option<(usize, usize)> {
        let s = self.i;
        if s < self.b.len() && self.b[s].is_ascii_alphabetic() {
            self.i += 1;
            while self.i < self.b.len() && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_') {
                self.i += 1;
            }
            Some((s, self.i))
        } else {
            None
        }
    }
    #[inline]
    fn word(&mut self, w: &[u8]) -> bool {
        let e = self.i + w.len();
        // Byte by byte: the words are short, and a call to memcmp costs more.
        if e <= self.b.len() && self.b[self.i..e].iter().zip(w).all(|(a, b)| a == b) && self.b.get(e).is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_') {
            self.i = e;
            true
        } else {
            false
        }
    }
    /// Decimal digits up to 19 (no overflow), not followed by a letter
    /// unless `unit` allows a `b` right after.
    #[inline]
    fn number(&mut self) -> Option<u64> {
        let s = self.i;
        let mut v = 0u64;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            v = v.wrapping_mul(10).wrapping_add((self.b[self.i] - b'0') as u64);
            self.i += 1;
        }
        let n = self.i - s;
        (n > 0 && n <= 19).then_some(v)
    }
    /// `-1`: the wildcard.
    #[inline]
    fn wild(&mut self) -> bool {
        if self.b[self.i..].starts_with(b"-1") && self.b.get(self.i + 2).is_none_or(|c| !c.is_ascii_digit()) {
            self.i += 2;
            true
        } else {
            false
        }
    }
    #[inline]
    fn end(&mut self) -> bool {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r') {
            self.i += 1;
        }
        self.i == self.b.len()
    }
}

impl Parser {
    /// Reads statement line `n` if it is in a simple, valid form; whether
    /// it did.
    pub(super) fn fast_statement(&mut self, n: u64, line: &[u8]) -> bool {
        let mut c = Cur { b: line, i: 0 };
        c.spaces();
        let first = c.i;
        let pos = Pos { line: n, col: first as u64 + 1 };
        let Some((a0, a1)) = c.ident() else { return false };
        if c.i < line.len() && line[c.i] == b':' {
            c.i += 1;
            c.spaces();
            let label = &line[a0..a1];
            if self.lookup(label).is_some() {
                return false;
            }
            let Some(op) = self.fast_op(&mut c, pos) else { return false };
            if self.graph.ops.len() >= UNDEFINED as usize {
                return false;
            }
            let index = self.graph.ops.len() as u32;
            if self.define(label, index).is_err() {
                return false;
            }
            let a = self.graph.names.len() as u32;
            // Labels are ASCII here (ident() took only ASCII bytes).
            self.graph.names.extend(label.iter().map(|&b| b as char));
            self.graph.ops.push(Op { label: (a, self.graph.names.len() as u32), ..op });
            return true;
        }
        if !c.spaces() {
            return false;
        }
        let verb = &line[a0..a1];
        if verb == b"send" || verb == b"recv" || verb == b"calc" {
            c.i = first;
            let Some(op) = self.fast_op(&mut c, pos) else { return false };
            if self.graph.ops.len() >= UNDEFINED as usize {
                return false;
            }
            self.graph.ops.push(op);
            return true;
        }
        let on_start = if c.word(b"requires") {
            false
        } else if c.word(b"irequires") {
            true
        } else {
            return false;
        };
        if !c.spaces() {
            return false;
        }
        let Some((b0, b1)) = c.ident() else { return false };
        if !c.end() {
            return false;
        }
        match (self.lookup(&line[a0..a1]), self.lookup(&line[b0..b1])) {
            (Some(t), Some(p)) if t != BROKEN && p != BROKEN => {
                self.graph.deps.push(Dep { target: t, prereq: p, on_start, pos });
                true
            }
            _ => false,
        }
    }

    /// `send|recv Nb to|from P [tag T] [cpu C] [nic K]` or `calc N [cpu C]`
    /// at the cursor, to the end of the line.
    fn fast_op(&self, c: &mut Cur<'_>, pos: Pos) -> Option<Op> {
        let peers = self.num_ranks as u64 - 1;
        let kind = if c.word(b"calc") {
            c.spaces().then_some(())?;
            OpKind::Calc { units: c.number()? }
        } else {
            let send = if c.word(b"send") {
                true
            } else if c.word(b"recv") {
                false
            } else {
                return None;
            };
            c.spaces().then_some(())?;
            let bytes = c.number()?;
            c.spaces();
            if !(c.word(b"b") || c.word(b"B")) {
                return None;
            }
            c.spaces().then_some(())?;
            if !c.word(if send { b"to" } else { b"from" }) {
                return None;
            }
            c.spaces().then_some(())?;
            let peer = if !send && c.wild() { None } else { Some(c.number().filter(|&p| p <= peers)?) };
            let mut tag = Some(0);
            let save = c.i;
            if c.spaces() && c.word(b"tag") {
                c.spaces().then_some(())?;
                tag = if !send && c.wild() { None } else { Some(c.number().filter(|&t| t <= MAX_TAG)?) };
            } else {
                c.i = save;
            }
            if send {
                OpKind::Send { bytes, to: peer? as u32, tag: tag? as u32 }
            } else {
                OpKind::Recv { bytes, from: peer.map(|p| p as u32), tag: tag.map(|t| t as u32) }
            }
        };
        let mut op = Op { kind, cpu: 0, nic: 0, pos, label: (0, 0) };
        let save = c.i;
        if c.spaces() && c.word(b"cpu") {
            c.spaces().then_some(())?;
            op.cpu = u32::try_from(c.number()?).ok()?;
        } else {
            c.i = save;
        }
        if !matches!(kind, OpKind::Calc { .. }) {
            let save = c.i;
            if c.spaces() && c.word(b"nic") {
                c.spaces().then_some(())?;
                op.nic = u32::try_from(c.number()?).ok()?;
            } else {
                c.i = save;
            }
        }
        c.end().then_some(op)
    }
}
