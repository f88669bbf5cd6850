//! `goal draw FILE [-o OUT] [--format svg|dot] [--max-ranks N]`: a GOAL
//! text schedule as a picture. The file is read and validated as `goal
//! check` does (an invalid one is refused with its errors), streamed: only
//! the ranks drawn are kept. [`model`] decides what is drawn (ranks,
//! columns by dependency depth, messages paired), [`svg`] and [`dot`] how.

mod dot;
mod model;
mod svg;

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Cursor, Read, Write};

use super::check::{display_name, print_errors};
use super::{Context, Failure};
use goal_text::OpKind;

const HELP: &str = "\
Usage: goal draw [-o OUT] [--format svg|dot] [--max-ranks N] FILE

Draws a GOAL text schedule (see goal check; FILE - reads standard input):
ranks as lanes, operations as boxes laid out left to right by dependency
depth, requires edges (grey) and irequires edges (dashed orange) within a
rank, and messages (red) from each send to the receive it pairs with (by
source, destination and tag, in order; receives with -1 take what is left).
A file that does not pass goal check is refused with its errors.

Options:
  -o, --output OUT   write to OUT (default: standard output)
  --format svg|dot   SVG (default), or Graphviz DOT (the default when OUT ends
                     in .dot or .gv)
  --max-ranks N      draw every rank of a file of at most N ranks (default 32),
                     else the first N/2 and the last N/2 and a note for the
                     ranks folded between
  -h, --help         print this help

Exit status: 0 when drawn, 1 for an invalid file or one that cannot be read
or written, 2 for a usage mistake. See docs/goal-text.md.
";

/// What to draw as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Svg,
    Dot,
}

/// `goal draw`'s arguments.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    file: OsString,
    output: Option<OsString>,
    format: Format,
    max_ranks: u32,
}

fn parse_args(args: Vec<OsString>) -> Result<Option<Args>, Failure> {
    let usage = |m: String| Failure::usage(m, "Usage: goal draw [-o OUT] [--format svg|dot] [--max-ranks N] FILE\nTry 'goal draw --help' for more information.".into());
    let (mut file, mut output, mut format, mut max_ranks) = (None, None, None, 32u32);
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| usage(format!("{name} needs a value")));
        match a.to_str() {
            Some("-h" | "--help") => return Ok(None),
            Some("-o" | "--output") => output = Some(value("-o")?),
            Some("--format") => {
                format = Some(match value("--format")?.to_str() {
                    Some("svg") => Format::Svg,
                    Some("dot") => Format::Dot,
                    other => return Err(usage(format!("--format takes svg or dot, not '{}'", other.unwrap_or("?")))),
                })
            }
            Some("--max-ranks") => {
                let v = value("--max-ranks")?;
                max_ranks = v.to_str().and_then(|v| v.parse().ok()).filter(|&n| n >= 2).ok_or_else(|| usage(format!("--max-ranks takes a number of at least 2, not '{}'", v.to_string_lossy())))?;
            }
            Some(s) if s.starts_with('-') && s != "-" => return Err(usage(format!("unknown option '{s}'"))),
            _ if file.is_some() => return Err(usage(format!("one FILE only ('{}' is a second)", a.to_string_lossy()))),
            _ => file = Some(a),
        }
    }
    let file = file.ok_or_else(|| usage("no file given".into()))?;
    let by_name = output.as_ref().and_then(|o| o.to_str()).is_some_and(|o| o.ends_with(".dot") || o.ends_with(".gv"));
    let format = format.unwrap_or(if by_name { Format::Dot } else { Format::Svg });
    Ok(Some(Args { file, output, format, max_ranks }))
}

/// Runs `goal draw ARGS`.
pub(crate) fn draw(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let Some(args) = parse_args(args)? else {
        print!("{HELP}");
        return Ok(0);
    };
    let name = display_name(&args.file);
    let fail = |message: String| Failure { code: 1, message, hint: None };
    let input: Box<dyn BufRead> = if args.file == "-" {
        Box::new(io::stdin().lock())
    } else {
        let f = std::fs::File::open(&args.file).map_err(|e| fail(format!("{name}: cannot open the file: {e}")))?;
        Box::new(BufReader::with_capacity(1 << 20, f))
    };
    let (num_ranks, input) = peek_num_ranks(input).map_err(|e| fail(format!("{name}: cannot read the file: {e}")))?;
    let mut collector = model::Collector::new(num_ranks, args.max_ranks);
    let summary = goal_text::check(input, &name, 20, |g| collector.rank(g));
    if !summary.is_valid() {
        print_errors(&name, &summary);
        return Ok(1);
    }
    let m = collector.finish();
    // The title: the file's name, without the directories it was found in.
    let title = std::path::Path::new(&name).file_name().map_or(name.clone(), |f| f.to_string_lossy().into_owned());
    let text = match args.format {
        Format::Svg => svg::svg(&m, &title),
        Format::Dot => dot::dot(&m, &title),
    };
    let written = match &args.output {
        Some(out) => std::fs::write(out, text.as_bytes()).map_err(|e| (out.to_string_lossy().into_owned(), e)),
        None => io::stdout().lock().write_all(text.as_bytes()).map_err(|e| ("standard output".to_string(), e)),
    };
    written.map_err(|(to, e)| fail(format!("cannot write {to}: {e}")))?;
    Ok(0)
}

/// `num_ranks` as the file declares it before its first rank, read ahead
/// (at most 64 lines: comments and blank lines may come first); hands back
/// an input that still starts at the file's first byte.
fn peek_num_ranks(mut input: Box<dyn BufRead>) -> io::Result<(Option<u32>, Box<dyn BufRead>)> {
    let mut ahead = Vec::new();
    let mut found = None;
    for _ in 0..64 {
        let start = ahead.len();
        if input.read_until(b'\n', &mut ahead)? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&ahead[start..]);
        let mut words = line.split_whitespace();
        match words.next() {
            Some("num_ranks") => {
                found = words.next().and_then(|n| n.parse().ok());
                break;
            }
            Some("rank") => break,
            _ => {}
        }
    }
    Ok((found, Box::new(BufReader::new(Cursor::new(ahead).chain(input)))))
}

/// What a box says: `send 8b → 1`, `recv 1K ← *`, `calc 100`, with ` t5`
/// for a tag other than 0.
pub(crate) fn op_text(k: &OpKind) -> String {
    let tag = |t: Option<u32>| match t {
        Some(0) => String::new(),
        Some(t) => format!(" t{t}"),
        None => " t*".into(),
    };
    match *k {
        OpKind::Send { bytes, to, tag: t } => format!("send {} → {to}{}", size(bytes), tag(Some(t))),
        OpKind::Recv { bytes, from, tag: t } => format!("recv {} ← {}{}", size(bytes), from.map_or("*".into(), |f| f.to_string()), tag(t)),
        OpKind::Calc { units } => format!("calc {units}"),
    }
}

/// Bytes in the shortest exact form: `8b`, `4K`, `1M`, `3G`.
fn size(b: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    format!("{b}b")
}

/// `s` with XML's special characters escaped.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Result<Option<Args>, Failure> {
        parse_args(a.iter().map(OsString::from).collect())
    }

    #[test]
    fn the_format_follows_the_option_else_the_output_name() {
        let a = args(&["f.goal", "-o", "x.dot"]).unwrap().unwrap();
        assert_eq!((a.format, a.max_ranks), (Format::Dot, 32));
        assert_eq!(args(&["f.goal", "-o", "x.svg"]).unwrap().unwrap().format, Format::Svg);
        assert_eq!(args(&["--format", "svg", "-o", "x.gv", "-"]).unwrap().unwrap().format, Format::Svg);
        assert!(args(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for bad in [&["--format", "png", "f"][..], &["a", "b"], &[], &["--max-ranks", "1", "f"], &["--bogus", "f"], &["f", "-o"]] {
            assert_eq!(args(bad).err().map(|f| f.code), Some(2), "{bad:?}");
        }
    }

    #[test]
    fn boxes_say_kind_size_peer_and_tag() {
        assert_eq!(op_text(&OpKind::Send { bytes: 8, to: 1, tag: 0 }), "send 8b → 1");
        assert_eq!(op_text(&OpKind::Recv { bytes: 3 << 20, from: None, tag: None }), "recv 3M ← * t*");
        assert_eq!(op_text(&OpKind::Recv { bytes: 1000, from: Some(2), tag: Some(5) }), "recv 1000b ← 2 t5");
        assert_eq!(op_text(&OpKind::Calc { units: 7 }), "calc 7");
    }

    #[test]
    fn the_header_is_read_ahead_and_the_input_kept_whole() {
        let text = "// a comment\n\nnum_ranks 3\nrank 0 {\n}\n";
        let (n, mut rest) = peek_num_ranks(Box::new(Cursor::new(text.as_bytes().to_vec()))).unwrap();
        assert_eq!(n, Some(3));
        let mut back = String::new();
        rest.read_to_string(&mut back).unwrap();
        assert_eq!(back, text);
    }
}
