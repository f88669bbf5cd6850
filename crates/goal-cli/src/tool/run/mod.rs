//! `goal run FILE [--iterations N] [--warmup N] [--json PATH]`: runs a GOAL
//! text schedule for real, as a program of a job (`goalrun -n N goal run
//! FILE`, or under mpirun or srun: it starts goal like any goal program).
//!
//! Each rank reads the whole file, streaming, with the checks of
//! `goal check` (so every rank reaches the same verdict on its own), and
//! keeps its own rank's graph only; it lays that graph's sends and receives
//! out in one buffer of its own ([`data`]), compiles it and runs it
//! `--warmup` plus `--iterations` times, each start after a barrier, each
//! run's received bytes checked against the senders' pattern. Rank 0
//! gathers every rank's finish times and prints the table ([`report`]).
//!
//! The ranks agree ([`coord`]) before running: a file that is invalid, or
//! written for another number of ranks, is reported on rank 0 only, in
//! `goal check`'s words, and every rank exits 1; a failure of one rank
//! (a file it cannot open, a graph it cannot compile, a wrong byte) is
//! reported by that rank and ends the run everywhere at the next barrier.

mod data;
mod report;
mod coord;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use goal_rt::Runtime;
use goal_text::{OpKind, RankGraph};

use super::check::{check_path, display_name, print_errors, say};
use super::{Context, Failure};
use data::{Data, Incoming};
use report::{Report, Row};
use coord::Coord;

const HELP: &str = "\
Usage: goal run [--iterations N] [--warmup N] [--json PATH] [--max-errors N] [--timeout S] FILE

Runs a GOAL text schedule (LogGOPSim's and Schedgen's format, see goal check)
for real, as every rank of a job: start it as the program of one,
  goalrun -n RANKS goal run FILE      (or mpirun / srun ... goal run FILE)
with as many processes as the file's num_ranks. Each rank checks the whole
file as goal check does, compiles its own rank's operations and runs them:
sends and receives of the sizes written, in buffers goal run allocates (sends
carry a known pattern; receives that name their source and tag are checked),
calc N as N nanoseconds of computation, -1 as the wildcards. Each iteration
starts after a barrier; rank 0 prints each rank's finish time (from the
barrier to its last operation) and the makespan, min/median/max over the
iterations. GOAL_PROGRESS and goal's other settings apply as in any program.

Options:
  --iterations N  measured runs of the schedule (default 10)
  --warmup N      runs before those, not measured (default 1)
  --json PATH     also write the results as JSON to PATH (rank 0)
  --max-errors N  show at most N errors of an invalid file (default 20)
  --timeout S     give up, exit 1, when the run has not ended after S seconds
                  (default 300): a schedule that cannot finish (a receive
                  with -1 that took a message meant for another) is reported,
                  not waited for forever; 0 waits forever
  -h, --help      print this help

Exit status: 0 when every rank ran every iteration with every byte right, 1
otherwise (an invalid file, num_ranks not the number of processes, a
failure), 2 for a usage mistake. See docs/goal-text.md.
";

/// The most iterations: every rank keeps a time per iteration, and rank 0
/// every rank's.
const MAX_ITERATIONS: usize = 1_000_000;

/// The command line.
struct Opts {
    file: OsString,
    iterations: usize,
    warmup: usize,
    json: Option<PathBuf>,
    max_errors: usize,
    /// Seconds the whole run may take before it is declared stuck.
    timeout: f64,
}

impl Opts {
    /// The options, or `None` after printing the help.
    fn parse(args: Vec<OsString>) -> Result<Option<Opts>, Failure> {
        let usage = |m: String| Failure::usage(m, "Usage: goal run [--iterations N] [--warmup N] [--json PATH] [--max-errors N] [--timeout S] FILE\nTry 'goal run --help' for more information.".into());
        let mut o = Opts { file: OsString::new(), iterations: 10, warmup: 1, json: None, max_errors: 20, timeout: 300.0 };
        let mut files = Vec::new();
        let mut args = args.into_iter();
        let mut options = true;
        while let Some(a) = args.next() {
            let text = a.to_string_lossy().into_owned();
            if !options || !text.starts_with("--") && (text == "-" || !text.starts_with('-')) {
                files.push(a);
                continue;
            }
            if text == "-h" || text == "--help" {
                print!("{HELP}");
                return Ok(None);
            }
            if text == "--" {
                options = false;
                continue;
            }
            let (name, inline) = match text.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(OsString::from(v))),
                None => (text.clone(), None),
            };
            if !["--iterations", "--warmup", "--json", "--max-errors", "--timeout"].contains(&name.as_str()) {
                return Err(usage(format!("unknown option '{text}'")));
            }
            let value = inline.or_else(|| args.next()).ok_or_else(|| usage(format!("{name} needs a value")))?;
            let number = || value.to_str().and_then(|v| v.parse::<usize>().ok()).ok_or_else(|| usage(format!("{name} takes a number, not '{}'", value.to_string_lossy())));
            match name.as_str() {
                "--iterations" => o.iterations = number()?,
                "--warmup" => o.warmup = number()?,
                "--max-errors" => o.max_errors = number()?,
                "--timeout" => o.timeout = number()? as f64,
                _ => o.json = Some(PathBuf::from(&value)),
            }
        }
        match files.len() {
            1 => o.file = files.remove(0),
            0 => return Err(usage("no file given".into())),
            _ => return Err(usage("goal run takes one file".into())),
        }
        if o.iterations == 0 || o.iterations > MAX_ITERATIONS {
            return Err(usage(format!("--iterations takes 1 to {MAX_ITERATIONS}")));
        }
        if o.file == "-" {
            return Err(usage("goal run reads FILE on every rank: it cannot be standard input".into()));
        }
        Ok(Some(o))
    }
}

/// Runs `goal run ARGS`.
pub(crate) fn run(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let Some(o) = Opts::parse(args)? else { return Ok(0) };
    super::as_rank("run", "goalrun -n RANKS goal run FILE", |rt| {
        let _watchdog = (o.timeout > 0.0).then(|| watchdog(o.timeout, rt.rank(), display_name(&o.file)));
        execute(rt, &o)
    })
}

/// Ends this process (status 1) with a message if it is still running
/// after `seconds`; dropping the result disarms it. A stuck schedule
/// leaves every Wait of the job waiting, so each rank's own watchdog ends
/// it (goalrun ends the job when a rank fails).
fn watchdog(seconds: f64, me: u32, name: String) -> std::sync::mpsc::Sender<()> {
    let (disarm, armed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = armed.recv_timeout(std::time::Duration::from_secs_f64(seconds)) {
            say(&format!(
                "goal run: rank {me}: {name}: not finished after {seconds} s (--timeout): the schedule may be stuck (a receive with -1 that took a message the file meant for another receive, say); GOAL_DEBUG=1 reports what each rank waits for"
            ));
            std::process::exit(1);
        }
    });
    disarm
}

/// Every rank is fine.
const OK: u32 = 0;
/// The file is refused: every rank knows it alike; rank 0 says why.
const REFUSED: u32 = 1;
/// This rank failed: it says why itself.
const FAILED: u32 = 2;

/// What one rank does; the exit status.
fn execute(rt: &Arc<Runtime>, o: &Opts) -> goal_rt::Result<i32> {
    let (me, n) = (rt.rank(), rt.size());
    // Compiled first, so that every rank numbers them alike.
    let mut coord = Coord::new(rt, 2 + o.iterations)?;
    let name = display_name(&o.file);
    let mut mine: Option<RankGraph> = None;
    let mut incoming = Incoming::default();
    let mut rows = Vec::new();
    let read = check_path(&o.file, &name, o.max_errors, |g| {
        if g.rank == me {
            mine = Some(g.clone());
        }
        incoming.note(g, me);
        if me == 0 {
            rows.push(row_of(g));
        }
    });
    let mut why = String::new();
    let mut status = match &read {
        Err(m) => {
            why = format!("rank {me}: {m}");
            FAILED
        }
        Ok(s) if !s.is_valid() => REFUSED,
        Ok(s) if s.num_ranks != Some(n) => REFUSED,
        Ok(_) => OK,
    };
    let mut prepared = None;
    if let (OK, Some(g)) = (status, mine.take()) {
        match prepare(rt, g, &incoming, &name) {
            Ok(p) => prepared = Some(p),
            Err(m) => (status, why) = (FAILED, m),
        }
    }
    let (worst, each) = coord.agree(rt, status)?;
    if worst != OK {
        match (status, read) {
            (REFUSED, Ok(s)) if me == 0 && !s.is_valid() => print_errors(&name, &s),
            (REFUSED, Ok(s)) if me == 0 => say(&format!(
                "goal run: {name}: the file is written for {} ranks (num_ranks {0}) but this job has {n} process(es): start it with {0} (goalrun -n {0} goal run FILE); running a file on fewer processes than its ranks (--ranks-per-host) is not implemented",
                s.num_ranks.unwrap_or(0)
            )),
            (FAILED, _) => say(&format!("goal run: {why}")),
            _ => {}
        }
        if me == 0 && status == OK {
            let failed: Vec<String> = each.iter().enumerate().filter(|(_, &s)| s == FAILED).map(|(r, _)| r.to_string()).collect();
            say(&format!("goal run: {name}: not run: rank(s) {} failed (their messages above)", failed.join(", ")));
        }
        return Ok(1);
    }
    let (g, mut data, sched) = prepared.expect("a rank whose status is OK has prepared its schedule");
    let mut times = Vec::with_capacity(o.iterations);
    for it in 0..o.warmup + o.iterations {
        data.clear();
        coord.agree(rt, OK)?;
        let t0 = goal_rt::wtime();
        // SAFETY: the schedule names only `data.buf` (to_graph_at's
        // regions), which lives until after the wait and is not touched by
        // this thread until the wait returns.
        let done = unsafe { rt.run(&sched) }.and_then(|h| h.wait());
        let t = goal_rt::wtime() - t0;
        let checked = done.map_err(|e| format!("rank {me}: {name}: iteration {}: {e}", it + 1)).and_then(|()| data.verify(&g).map_err(|m| format!("{name}: {m} (iteration {})", it + 1)));
        if let Err(m) = checked {
            // Leave at once: finalizing tells the peers still waiting for
            // this rank that its program ended (their Waits fail), where a
            // barrier would wait for ranks stuck on it forever.
            say(&format!("goal run: {m}"));
            if m.contains("truncation") && g.ops.iter().any(|op| matches!(op.kind, OpKind::Recv { from: None, .. } | OpKind::Recv { tag: None, .. })) {
                say(&format!("goal run: {name}: rank {me} has receives from -1 or with tag -1: run for real, such a receive takes whichever matching message comes first, which may be one the file meant for another receive (LogGOPSim ignores receive sizes); the file's outcome depends on timing"));
            }
            return Ok(1);
        }
        if it >= o.warmup {
            times.push(t);
        }
    }
    let (checked, recvs) = data.coverage();
    let mut mine_slots = vec![checked as f64, recvs as f64];
    mine_slots.extend(&times);
    let gathered = coord.gather(rt, &mine_slots)?;
    if let Some(all) = gathered {
        for (row, slots) in rows.iter_mut().zip(all) {
            row.checked = slots[0] as u64;
            row.recvs = slots[1] as u64;
            row.times = slots[2..2 + o.iterations].to_vec();
        }
        let report = Report { file: &name, iterations: o.iterations, warmup: o.warmup, progress: rt.config().progress.name(), rows };
        print!("{}", report.table());
        if let Some(path) = &o.json {
            if let Err(e) = std::fs::write(path, report.json()) {
                say(&format!("goal run: cannot write {}: {e}", path.display()));
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// The report's row of rank `g`, from the file.
fn row_of(g: &RankGraph) -> Row {
    let mut r = Row { ops: g.ops.len() as u64, sends: 0, bytes: 0, checked: 0, recvs: 0, times: Vec::new() };
    for op in &g.ops {
        if let OpKind::Send { bytes, .. } = op.kind {
            r.sends += 1;
            r.bytes = r.bytes.saturating_add(bytes);
        }
    }
    r
}

/// This rank's graph with its buffer, compiled; `Err` says why not.
fn prepare(rt: &Runtime, g: RankGraph, incoming: &Incoming, name: &str) -> Result<(RankGraph, Data, goal_rt::Schedule), String> {
    let me = g.rank;
    let at_op = |e: goal_text::convert::ConvertError| {
        let p = g.ops[e.op].pos;
        format!("{name}:{}:{}: error: rank {me}: {}", p.line, p.col, e.message)
    };
    // The layout first (in the scratchpad), then the same in our buffer.
    let layout = goal_text::convert::to_graph(&g).map_err(at_op)?;
    let data = Data::new(&g, &layout.regions, incoming).map_err(|m| format!("{name}: rank {me}: {m}"))?;
    let conv = goal_text::convert::to_graph_at(&g, Some(data.base())).map_err(at_op)?;
    let sched = rt.compile(&conv.graph).map_err(|e| format!("{name}: rank {me}: goal cannot compile its operations: {e}"))?;
    Ok((g, data, sched))
}
