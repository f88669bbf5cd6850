//! `goal check [--max-errors N] FILE...`: reads GOAL text schedules (the
//! format of LogGOPSim and Schedgen, `docs/goal-text.md`) and validates
//! them with goal-text, streaming: a file of any size in memory bounded by
//! its largest rank and the messages in flight.
//!
//! For a valid file: one line on standard output (ranks, operations,
//! bytes, time). For an invalid one: its errors on standard error, each
//! `FILE:LINE:COL: error: ...`, the first N (default 20) and the count of
//! the rest. Exit status 0 when every file is valid, 1 otherwise, 2 for a
//! mistake on the command line. `-` reads standard input.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufReader, Write};

use super::{Context, Failure};

const HELP: &str = "\
Usage: goal check [--max-errors N] FILE...

Reads GOAL text schedules (LogGOPSim's and Schedgen's format: num_ranks,
rank N { ... }, send/recv/calc, requires/irequires) and checks them: the
syntax, labels defined before use, peers inside num_ranks, ranks 0..N-1 in
order, no dependency cycle in a rank, and every send received somewhere and
every receive sent to (by source, destination and tag; -1 matches any).
FILE - reads standard input.

Options:
  --max-errors N  show at most N errors per file (default 20), then the count
                  of the rest
  -h, --help      print this help

Exit status: 0 when every file is valid, 1 when one is not, 2 for a usage
mistake. See docs/goal-text.md.
";

/// Runs `goal check ARGS`.
pub(crate) fn check(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let usage = |m: String| Failure::usage(m, "Usage: goal check [--max-errors N] FILE...\nTry 'goal check --help' for more information.".into());
    let mut max_errors = 20usize;
    let mut files = Vec::new();
    let mut args = args.into_iter();
    let mut options = true;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("-h" | "--help") if options => {
                print!("{HELP}");
                return Ok(0);
            }
            Some("--max-errors") if options => {
                let v = args.next().ok_or_else(|| usage("--max-errors needs a number".into()))?;
                max_errors = v.to_str().and_then(|v| v.parse().ok()).ok_or_else(|| usage(format!("--max-errors takes a number, not '{}'", v.to_string_lossy())))?;
            }
            Some(s) if options && s.starts_with("--max-errors=") => {
                let v = &s["--max-errors=".len()..];
                max_errors = v.parse().map_err(|_| usage(format!("--max-errors takes a number, not '{v}'")))?;
            }
            Some("--") if options => options = false,
            Some(s) if options && s.starts_with('-') && s != "-" => return Err(usage(format!("unknown option '{s}'"))),
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        return Err(usage("no file given".into()));
    }
    let mut status = 0;
    for f in files {
        if !check_one(&f, max_errors) {
            status = 1;
        }
    }
    Ok(status)
}

/// Checks one file, printing its summary or its errors; whether it is valid.
fn check_one(path: &OsString, max_errors: usize) -> bool {
    let name = display_name(path);
    let summary = match check_path(path, &name, max_errors, |_| {}) {
        Ok(s) => s,
        Err(message) => {
            say(&message);
            return false;
        }
    };
    let s = &summary;
    if s.is_valid() {
        let mbs = s.text_bytes as f64 / 1e6 / s.seconds.max(1e-9);
        println!(
            "{name}: valid: {} ranks, {} ops ({} sends, {} recvs, {} calcs), {} deps, {} bytes sent; checked in {:.3} s ({:.0} MB/s)",
            s.ranks,
            s.ops(),
            s.sends,
            s.recvs,
            s.calcs,
            s.deps,
            s.bytes,
            s.seconds,
            mbs
        );
        return true;
    }
    print_errors(&name, s);
    false
}

/// The name a file goes by in messages (`<stdin>` for `-`).
pub(super) fn display_name(path: &OsString) -> String {
    if path == "-" {
        "<stdin>".into()
    } else {
        path.to_string_lossy().into_owned()
    }
}

/// Checks the file at `path` (`-`: standard input), called `name`; `Err`
/// is the message for a file that cannot be opened.
pub(super) fn check_path(path: &OsString, name: &str, max_errors: usize, on_rank: impl FnMut(&goal_text::RankGraph)) -> Result<goal_text::Summary, String> {
    if path == "-" {
        return Ok(goal_text::check(io::stdin().lock(), name, max_errors, on_rank));
    }
    match File::open(path) {
        Ok(f) => Ok(goal_text::check(BufReader::with_capacity(1 << 20, f), name, max_errors, on_rank)),
        Err(e) => Err(format!("{name}: error: cannot open the file: {e}")),
    }
}

/// Prints an invalid file's errors on standard error, as `goal check` does.
pub(super) fn print_errors(name: &str, s: &goal_text::Summary) {
    for e in &s.errors {
        say(&format!("{}:{}:{}: error: {}", e.file, e.line, e.col, e.message));
    }
    let rest = s.error_count - s.errors.len() as u64;
    if rest > 0 {
        say(&format!("{name}: ... and {rest} more error(s) (--max-errors shows more)"));
    }
    if s.unbalanced_unknown {
        say(&format!("{name}: sends and receives were not matched across ranks: fix the errors above first"));
    }
    say(&format!("{name}: invalid: {} error(s)", s.error_count));
}

/// Writes `line` and a newline on standard error in one write, so that a
/// line stays whole beside other writers of the same pipe (goalrun's
/// messages, other ranks' under `goal run`): `eprintln!` writes a
/// formatted line in pieces.
pub(super) fn say(line: &str) {
    let _ = io::stderr().write_all(format!("{line}\n").as_bytes());
}
