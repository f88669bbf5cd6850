//! goal-trace: timelines in the Chrome trace event format, which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open.
//!
//! One writer for every timeline goal makes: the runtime's
//! (`GOAL_TRACE_FILE`, what each rank's operations really did) and the
//! simulator's (`goal sim --trace`, what the model predicts), so that a
//! measured and a predicted timeline of one schedule open side by side and
//! read alike. Both speak in the same terms: a rank is a process (`pid`),
//! a lane within it a thread (`tid`), and an operation a complete event
//! (`"ph":"X"`) from `start_ns` for `end_ns - start_ns`, with its details
//! (peer, bytes, path) as `args`.
//!
//! ```
//! use goal_trace::{Arg, TraceWriter};
//! let mut w = TraceWriter::new(Vec::new()).unwrap();
//! w.name_rank(0, "rank 0").unwrap();
//! w.complete(0, 0, "send", 1_000, 3_500, &[("peer", Arg::Int(1)), ("bytes", Arg::UInt(8)), ("path", Arg::Str("eager"))]).unwrap();
//! let json = String::from_utf8(w.finish(&[]).unwrap()).unwrap();
//! assert!(json.contains(r#""ts":1.000,"dur":2.500"#));
//! ```
//!
//! Times are given in nanoseconds and written in the format's microseconds
//! with three decimals, exactly (integer arithmetic, no rounding through a
//! float). Lanes: operations of one rank overlap, and a viewer draws
//! overlapping events of one thread as if nested; [`assign_lanes`] packs
//! them into as few lanes as never overlap.
//!
//! Pure: writes to any [`std::io::Write`], no other I/O, no `unsafe`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::{self, Write};

/// A value of an event's `args` (or of the file's `otherData`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A floating-point number (written as `null` if not finite).
    Float(f64),
    /// A string.
    Str(&'a str),
}

/// A complete event: an operation of rank `rank` on lane `lane`, named
/// `name`, from `start_ns` to `end_ns`, with its details.
#[derive(Debug, Clone, PartialEq)]
pub struct Complete<'a> {
    /// The rank: the event's process (`pid`), its track.
    pub rank: u32,
    /// The lane within the rank (`tid`).
    pub lane: u32,
    /// What the viewer writes on the box.
    pub name: &'a str,
    /// Start, in nanoseconds on the timeline's clock.
    pub start_ns: u64,
    /// End, in nanoseconds (not before `start_ns`: a shorter end counts as
    /// `start_ns`).
    pub end_ns: u64,
    /// Details: shown when the event is selected.
    pub args: &'a [(&'a str, Arg<'a>)],
}

/// Writes one trace file, a JSON object `{"traceEvents":[...], ...}`,
/// event by event: memory does not grow with the trace.
pub struct TraceWriter<W: Write> {
    out: W,
    /// No event written yet (no comma before the next).
    first: bool,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out`.
    pub fn new(mut out: W) -> io::Result<TraceWriter<W>> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(TraceWriter { out, first: true })
    }

    fn open(&mut self) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        Ok(())
    }

    /// A complete event (see [`Complete`]).
    pub fn event(&mut self, e: &Complete<'_>) -> io::Result<()> {
        self.open()?;
        let dur = e.end_ns.saturating_sub(e.start_ns);
        write!(self.out, "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"name\":", e.rank, e.lane)?;
        write_str(&mut self.out, e.name)?;
        write!(self.out, ",\"ts\":{},\"dur\":{},\"args\":", Micros(e.start_ns), Micros(dur))?;
        write_object(&mut self.out, e.args)?;
        self.out.write_all(b"}")
    }

    /// A complete event of rank `rank` on lane `lane`: the simulator's and
    /// the runtime's one call (see [`Complete`]).
    pub fn complete(&mut self, rank: u32, lane: u32, name: &str, start_ns: u64, end_ns: u64, args: &[(&str, Arg<'_>)]) -> io::Result<()> {
        self.event(&Complete { rank, lane, name, start_ns, end_ns, args })
    }

    /// Names rank `rank`'s track (a `process_name` metadata event), and
    /// sorts the tracks by rank.
    pub fn name_rank(&mut self, rank: u32, name: &str) -> io::Result<()> {
        self.metadata(rank, None, "process_name", name)?;
        self.open()?;
        write!(self.out, "{{\"ph\":\"M\",\"pid\":{rank},\"tid\":0,\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{rank}}}}}")
    }

    /// Names lane `lane` of rank `rank` (a `thread_name` metadata event).
    pub fn name_lane(&mut self, rank: u32, lane: u32, name: &str) -> io::Result<()> {
        self.metadata(rank, Some(lane), "thread_name", name)
    }

    fn metadata(&mut self, rank: u32, lane: Option<u32>, what: &str, name: &str) -> io::Result<()> {
        self.open()?;
        write!(self.out, "{{\"ph\":\"M\",\"pid\":{rank},\"tid\":{},\"name\":\"{what}\",\"args\":{{\"name\":", lane.unwrap_or(0))?;
        write_str(&mut self.out, name)?;
        self.out.write_all(b"}}")
    }

    /// Ends the file, with `other` as its `otherData` (what produced it,
    /// how the clocks were aligned), and hands back the output.
    pub fn finish(mut self, other: &[(&str, Arg<'_>)]) -> io::Result<W> {
        self.out.write_all(b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        write_object(&mut self.out, other)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Lanes for intervals `(start_ns, end_ns)` such that no two on one lane
/// overlap (an interval may start where another ends), in as few lanes as
/// that takes: each interval, in order of start, goes to the lowest lane
/// free by then. Returns the lane of each, in the order given.
pub fn assign_lanes(intervals: &[(u64, u64)]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..intervals.len()).collect();
    order.sort_by_key(|&i| (intervals[i].0, intervals[i].1));
    let mut free_at: Vec<u64> = Vec::new();
    let mut lanes = vec![0; intervals.len()];
    for i in order {
        let (start, end) = intervals[i];
        let lane = match free_at.iter().position(|&t| t <= start) {
            Some(l) => l,
            None => {
                free_at.push(0);
                free_at.len() - 1
            }
        };
        free_at[lane] = end.max(start);
        lanes[i] = lane as u32;
    }
    lanes
}

/// Nanoseconds written as microseconds with three decimals.
struct Micros(u64);

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

fn write_object<W: Write>(out: &mut W, args: &[(&str, Arg<'_>)]) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_str(out, k)?;
        out.write_all(b":")?;
        match *v {
            Arg::Int(x) => write!(out, "{x}")?,
            Arg::UInt(x) => write!(out, "{x}")?,
            Arg::Float(x) if x.is_finite() => write!(out, "{x}")?,
            Arg::Float(_) => out.write_all(b"null")?,
            Arg::Str(s) => write_str(out, s)?,
        }
    }
    out.write_all(b"}")
}

/// `s` as a JSON string: quotes, backslashes and control characters escaped.
pub fn write_str<W: Write>(out: &mut W, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut rest = s;
    while let Some(i) = rest.find(|c: char| c == '"' || c == '\\' || (c as u32) < 0x20) {
        out.write_all(&rest.as_bytes()[..i])?;
        let c = rest.as_bytes()[i];
        match c {
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\t' => out.write_all(b"\\t")?,
            _ => write!(out, "\\u{:04x}", c)?,
        }
        rest = &rest[i + 1..];
    }
    out.write_all(rest.as_bytes())?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut TraceWriter<Vec<u8>>)) -> String {
        let mut w = TraceWriter::new(Vec::new()).unwrap();
        f(&mut w);
        String::from_utf8(w.finish(&[("clock", Arg::Str("monotonic"))]).unwrap()).unwrap()
    }

    #[test]
    fn an_event_is_written_in_microseconds_exactly() {
        let t = text(|w| w.complete(3, 1, "recv", 1_234_567, 1_300_000, &[("peer", Arg::Int(-1)), ("f", Arg::Float(0.5))]).unwrap());
        assert!(t.contains(r#"{"ph":"X","pid":3,"tid":1,"name":"recv","ts":1234.567,"dur":65.433,"args":{"peer":-1,"f":0.5}}"#), "{t}");
        assert!(t.ends_with("],\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"monotonic\"}}\n"), "{t}");
    }

    #[test]
    fn an_end_before_the_start_is_a_zero_duration() {
        let t = text(|w| w.complete(0, 0, "x", 10, 5, &[]).unwrap());
        assert!(t.contains(r#""ts":0.010,"dur":0.000"#), "{t}");
    }

    #[test]
    fn strings_are_escaped() {
        let mut v = Vec::new();
        write_str(&mut v, "a\"b\\c\nd\u{1}é").unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn events_are_separated_by_commas_and_metadata_names_tracks() {
        let t = text(|w| {
            w.name_rank(0, "rank 0").unwrap();
            w.name_lane(0, 2, "lane 2").unwrap();
            w.complete(0, 2, "calc", 0, 1, &[]).unwrap();
        });
        assert_eq!(t.matches("},\n{").count(), 3, "{t}");
        assert!(t.contains(r#""name":"process_name","args":{"name":"rank 0"}"#), "{t}");
        assert!(t.contains(r#""name":"process_sort_index","args":{"sort_index":0}"#), "{t}");
    }

    #[test]
    fn lanes_never_hold_two_overlapping_intervals() {
        let iv = [(0, 10), (5, 15), (10, 20), (12, 13), (20, 20), (0, 0)];
        let lanes = assign_lanes(&iv);
        assert_eq!(lanes.iter().max(), Some(&2), "{lanes:?}: three overlap at 12");
        for i in 0..iv.len() {
            for j in i + 1..iv.len() {
                if lanes[i] == lanes[j] {
                    let (a, b) = (iv[i], iv[j]);
                    assert!(a.1 <= b.0 || b.1 <= a.0, "{a:?} and {b:?} share lane {}", lanes[i]);
                }
            }
        }
    }
}
