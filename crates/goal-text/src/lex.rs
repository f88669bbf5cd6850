//! Lines and tokens.
//!
//! [`for_each_line`] walks the input line by line straight out of the
//! reader's buffer (a line is copied only when it straddles two fills), so
//! reading costs one pass over the bytes. [`Lexer`] splits one line into
//! tokens, carrying the state of a `/* ... */` comment from line to line.
//! Tokens split where the kind of character changes, so `100b` is the number
//! 100 then the word `b`, and `rank 0{` needs no space before the brace.

use std::io::{BufRead, ErrorKind};
use std::ops::ControlFlow;

/// Calls `f(line_number, line)` for each line (without its `\n`), numbered
/// from 1, until the input ends or `f` breaks. An I/O error is returned with
/// the number of the line being read.
pub(crate) fn for_each_line<R: BufRead>(
    mut input: R,
    mut f: impl FnMut(u64, &[u8]) -> ControlFlow<()>,
) -> Result<(), (u64, std::io::Error)> {
    let mut carry: Vec<u8> = Vec::new();
    let mut line = 1u64;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err((line, e)),
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                let _ = f(line, &carry);
            }
            return Ok(());
        }
        let len = buf.len();
        let mut start = 0;
        while let Some(nl) = find_newline(&buf[start..]) {
            let end = start + nl;
            let flow = if carry.is_empty() {
                f(line, &buf[start..end])
            } else {
                carry.extend_from_slice(&buf[start..end]);
                let flow = f(line, &carry);
                carry.clear();
                flow
            };
            line += 1;
            start = end + 1;
            if flow.is_break() {
                return Ok(());
            }
        }
        carry.extend_from_slice(&buf[start..]);
        input.consume(len);
    }
}

/// Index of the first `\n` in `s`, eight bytes at a time (the lines of a
/// Schedgen file are about 20 bytes: a byte-by-byte search was a tenth of
/// the reading).
#[inline]
pub(crate) fn find_newline(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = ONES * b'\n' as u64;
    let mut chunks = s.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ NL;
        // A zero byte of w is a newline; the lowest flagged byte is exact.
        let z = w.wrapping_sub(ONES) & !w & HIGH;
        if z != 0 {
            return Some(at + (z.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks.remainder().iter().position(|&b| b == b'\n').map(|k| at + k)
}

/// One token of a line; `col` is its first byte's column, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub col: u64,
    /// Byte range in the line.
    pub start: usize,
    pub end: usize,
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_]*`
    Word,
    /// `-?[0-9]+`; `value` is `None` when it does not fit 64 bits.
    Num { neg: bool, value: Option<u64> },
    Colon,
    Open,
    Close,
    /// A byte that starts no token.
    Bad(u8),
}

/// Splits lines into tokens, remembering an open block comment.
#[derive(Debug, Default)]
pub(crate) struct Lexer {
    /// Where the `/*` of an unfinished block comment is.
    pub open_comment: Option<crate::Pos>,
}

impl Lexer {
    /// Replaces `out` with the tokens of `line` (line number `n`).
    pub fn tokens(&mut self, n: u64, line: &[u8], out: &mut Vec<Token>) {
        out.clear();
        let mut i = 0;
        let len = line.len();
        while i < len {
            if self.open_comment.is_some() {
                match find2(&line[i..], b'*', b'/') {
                    Some(k) => {
                        i += k + 2;
                        self.open_comment = None;
                    }
                    None => return,
                }
                continue;
            }
            let c = line[i];
            let start = i;
            let kind = match c {
                b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => {
                    i += 1;
                    while i < len && line[i] == b' ' {
                        i += 1;
                    }
                    continue;
                }
                b'/' if line.get(i + 1) == Some(&b'/') => return,
                b'/' if line.get(i + 1) == Some(&b'*') => {
                    self.open_comment = Some(crate::Pos { line: n, col: i as u64 + 1 });
                    i += 2;
                    continue;
                }
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                    i += 1;
                    while i < len && (line[i].is_ascii_alphanumeric() || line[i] == b'_') {
                        i += 1;
                    }
                    Tok::Word
                }
                b'0'..=b'9' | b'-' => {
                    let neg = c == b'-';
                    if neg {
                        i += 1;
                    }
                    let digits = i;
                    while i < len && line[i].is_ascii_digit() {
                        i += 1;
                    }
                    if i == digits {
                        Tok::Bad(b'-')
                    } else {
                        Tok::Num { neg, value: number(&line[digits..i]) }
                    }
                }
                b':' => {
                    i += 1;
                    Tok::Colon
                }
                b'{' => {
                    i += 1;
                    Tok::Open
                }
                b'}' => {
                    i += 1;
                    Tok::Close
                }
                other => {
                    i += 1;
                    Tok::Bad(other)
                }
            };
            out.push(Token { kind, col: start as u64 + 1, start, end: i });
        }
    }
}

/// The value of a run of decimal digits; `None` past 64 bits. Up to 19
/// digits cannot overflow, so only longer runs pay for checked arithmetic.
fn number(digits: &[u8]) -> Option<u64> {
    let acc = |v: u64, &d: &u8| v * 10 + (d - b'0') as u64;
    if digits.len() <= 19 {
        return Some(digits.iter().fold(0, acc));
    }
    digits.iter().try_fold(0u64, |v, &d| v.checked_mul(10)?.checked_add((d - b'0') as u64))
}

/// Index of the first `a` immediately followed by `b`.
fn find2(s: &[u8], a: u8, b: u8) -> Option<usize> {
    s.windows(2).position(|w| w[0] == a && w[1] == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(line: &str, lx: &mut Lexer) -> Vec<Tok> {
        let mut out = Vec::new();
        lx.tokens(1, line.as_bytes(), &mut out);
        out.iter().map(|t| t.kind).collect()
    }

    #[test]
    fn sizes_split_from_their_unit_and_braces_need_no_space() {
        let mut lx = Lexer::default();
        let n = |v| Tok::Num { neg: false, value: Some(v) };
        assert_eq!(kinds("l1: send 8b to 3", &mut lx), vec![Tok::Word, Tok::Colon, Tok::Word, n(8), Tok::Word, Tok::Word, n(3)]);
        assert_eq!(kinds("rank 0{", &mut lx), vec![Tok::Word, n(0), Tok::Open]);
        assert_eq!(kinds("from -1", &mut lx), vec![Tok::Word, Tok::Num { neg: true, value: Some(1) }]);
        assert_eq!(kinds("99999999999999999999", &mut lx), vec![Tok::Num { neg: false, value: None }]);
        let max = Tok::Num { neg: false, value: Some(u64::MAX) };
        assert_eq!(kinds("18446744073709551615 018446744073709551615", &mut lx), vec![max, max]);
        assert_eq!(kinds("18446744073709551616", &mut lx), vec![Tok::Num { neg: false, value: None }]);
        assert_eq!(kinds("9999999999999999999", &mut lx), vec![Tok::Num { neg: false, value: Some(9_999_999_999_999_999_999) }]);
    }

    #[test]
    fn comments_of_both_styles_and_across_lines() {
        let mut lx = Lexer::default();
        assert_eq!(kinds("} // the end", &mut lx), vec![Tok::Close]);
        assert_eq!(kinds("{ /* open", &mut lx), vec![Tok::Open]);
        assert!(lx.open_comment.is_some());
        assert_eq!(kinds("still */ }", &mut lx), vec![Tok::Close]);
        assert_eq!(kinds("/**/{/* x */}", &mut lx), vec![Tok::Open, Tok::Close]);
    }

    #[test]
    fn the_newline_search_finds_the_first_at_every_offset() {
        for len in 0..40 {
            for nl in 0..=len {
                let mut v = vec![b'x'; len];
                v.extend_from_slice(&[0x8a, 0x0b, 0x09]);
                if nl < len {
                    v[nl] = b'\n';
                    if nl + 3 < len {
                        v[nl + 3] = b'\n';
                    }
                }
                let want = v.iter().position(|&b| b == b'\n');
                assert_eq!(find_newline(&v), want, "len {len} nl {nl}");
            }
        }
    }

    #[test]
    fn lines_straddling_fills_are_whole() {
        let text = b"one\ntwo two\n\nthree";
        let r = std::io::BufReader::with_capacity(3, &text[..]);
        let mut got = Vec::new();
        for_each_line(r, |n, l| {
            got.push((n, String::from_utf8(l.to_vec()).unwrap()));
            ControlFlow::Continue(())
        })
        .unwrap();
        let want: Vec<(u64, String)> = [(1, "one"), (2, "two two"), (3, ""), (4, "three")].iter().map(|&(n, s)| (n, s.to_string())).collect();
        assert_eq!(got, want);
    }
}
