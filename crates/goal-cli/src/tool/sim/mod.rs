//! `goal sim [OPTIONS] FILE` and `goal sim [OPTIONS] --coll NAME ...`:
//! simulates a schedule under the LogGOPS model with goal-sim, and prints
//! what LogGOPSim prints (`Host i: t` for every host, the maximum
//! finishing time), so that scripts written for LogGOPSim keep working.
//!
//! The options are LogGOPSim's (`-L -o -g -G -O -S`, in ns and bytes, its
//! defaults; `-f FILE`; `-b` for the maximum only), plus `--json PATH`,
//! `--critical-path`, and `--coll` for goal's own collectives (`args`).
//! A schedule that cannot finish prints what is left and exits 1.

mod args;
pub(crate) mod export;
mod output;
mod trace;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use goal_sim::coll::Cost;
use goal_sim::{Options, Params, Program};

use super::{Context, Failure};
pub(crate) use args::{ps_per_byte, read_params, CollArgs, Source, COLL_OPTIONS};

const HELP: &str = "\
Usage: goal sim [OPTIONS] FILE
       goal sim [OPTIONS] --coll NAME [--alg ALG] --ranks N [--bytes B] [--root R]

Simulates a GOAL schedule under the LogGOPS model, as LogGOPSim does and
with its results: a text schedule (LogGOPSim's and Schedgen's format; -
reads standard input), or one of goal's collectives built by the graph
builders the runtime uses. Prints LogGOPSim's lines: the size and the
parameters, the events, `Host i: t` for every host (its finish time in ns)
and `Maximum finishing time at host H: T (S s)`.

Model (LogGOPSim's options, defaults and units):
  -L N       network latency, ns (default 2500)
  -o N       cpu overhead per message, ns (default 1500)
  -g N       nic gap per message, ns (default 1000)
  -G N       nic gap per byte, ns (default 6; decimals allowed, to 1 ps)
  -O N       cpu overhead per byte, ns (default 0; decimals allowed)
  -S N       largest eager message, bytes; larger go by rendezvous (default 65535)

Options:
  -f FILE          the schedule (as LogGOPSim's -f; or give FILE alone)
  -b, --batchmode  print only the maximum, not every host
  --json PATH      also write the results as JSON to PATH (- for standard output)
  --critical-path  print the chain of operations that set the finish time
  --trace PATH     write the simulated timeline as a Chrome trace (Perfetto,
                   chrome://tracing), as GOAL_TRACE_FILE does for a real run
  --params FILE    L, o, g, G, O and S from goal calibrate --loggops's JSON
                   (options after it override them)
  --max-errors N   show at most N errors of a text file (default 20)
  --coll NAME      simulate goal's collective NAME (barrier, bcast, gather,
                   scatter, allgather, alltoall, reduce, allreduce,
                   reduce_scatter_block, gatherv, scatterv, allgatherv,
                   alltoallv, reduce_scatter)
  --alg ALG        its algorithm (auto, linear, linear_sync, binomial,
                   recursive_doubling, bruck, ring, pipeline, rabenseifner)
  --ranks N        ranks (K and M suffixes: 1M = 1048576)
  --bytes B        bytes per rank (the message, block or vector; K, M, G)
  --root R         root of a rooted collective (default 0)
  --calc-per-byte F  cost of a local operation (reduction, copy) of goal's
                   collectives in ns per byte (default 0: communication only)
  -h, --help       print this help

Exit status: 0 when the schedule finishes, 1 when it cannot (what is left
is printed) or the input is invalid, 2 for a usage mistake. Differences
from LogGOPSim: docs/sim.md.
";

/// The options, parsed.
#[derive(Debug)]
struct Opts {
    source: Source,
    prm: Params,
    batch: bool,
    json: Option<PathBuf>,
    critical: bool,
    max_errors: usize,
    cost: Cost,
    /// `--trace PATH`: the simulated timeline, as a Chrome trace.
    trace: Option<PathBuf>,
}

fn usage(m: String) -> Failure {
    Failure::usage(m, "Usage: goal sim [OPTIONS] FILE | goal sim [OPTIONS] --coll NAME --ranks N [--bytes B]\nTry 'goal sim --help' for more information.".into())
}

impl Opts {
    fn parse(args: Vec<OsString>) -> Result<Option<Opts>, Failure> {
        let mut prm = Params::default();
        let (mut batch, mut critical, mut json, mut max_errors, mut cost) = (false, false, None, 20usize, Cost::default());
        let mut trace = None;
        let mut coll = CollArgs::default();
        let mut files = Vec::new();
        let mut args = args.into_iter();
        let mut options = true;
        while let Some(a) = args.next() {
            let text = a.to_string_lossy().into_owned();
            if !options || text == "-" || !text.starts_with('-') {
                files.push(a);
                continue;
            }
            match text.as_str() {
                "-h" | "--help" => {
                    print!("{HELP}");
                    return Ok(None);
                }
                "--" => {
                    options = false;
                    continue;
                }
                "-b" | "--batchmode" => {
                    batch = true;
                    continue;
                }
                "--critical-path" => {
                    critical = true;
                    continue;
                }
                // LogGOPSim's options that change nothing here.
                "--save-mem" | "--progress" | "-v" | "--verbose" | "--noise-cosched" => continue,
                _ => {}
            }
            // -L2500, -L 2500, --LogGOPS_L=2500, --json=x, --json x
            let (name, inline) = if let Some(long) = text.strip_prefix("--") {
                match long.split_once('=') {
                    Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                    None => (text.clone(), None),
                }
            } else if text.len() > 2 {
                (text[..2].to_string(), Some(text[2..].to_string()))
            } else {
                (text.clone(), None)
            };
            let name = match name.as_str() {
                "--LogGOPS_L" => "-L".to_string(),
                "--LogGOPS_o" => "-o".into(),
                "--LogGOPS_g" => "-g".into(),
                "--LogGOPS_G" => "-G".into(),
                "--LogGOPS_O" => "-O".into(),
                "--LogGOPS_S" => "-S".into(),
                "--filename" => "-f".into(),
                _ => name,
            };
            let name = match name.as_str() {
                "--network-type" => "-n".to_string(),
                "--vizfile" => "-V".into(),
                _ => name,
            };
            let unsupported = |what: &str| usage(format!("{text}: {what} is LogGOPSim's; goal sim does not model it (docs/sim.md)"));
            match name.as_str() {
                "-n" => {
                    let v = inline.clone().or_else(|| args.next().map(|v| v.to_string_lossy().into_owned())).unwrap_or_default();
                    if v == "LogGP" {
                        continue;
                    }
                    return Err(unsupported(&format!("the '{v}' network")));
                }
                "-V" => return Err(unsupported("the visualisation file (a timeline of goal sim is its observer: docs/sim.md)")),
                "--noise-trace" => return Err(unsupported("OS noise")),
                "--qstat" => return Err(unsupported("the queue statistics")),
                _ => {}
            }
            let known = ["-L", "-o", "-g", "-G", "-O", "-S", "-f", "--json", "--max-errors", "--calc-per-byte", "--params", "--trace"];
            if !known.contains(&name.as_str()) && !COLL_OPTIONS.contains(&name.as_str()) {
                return Err(usage(format!("unknown option '{text}'")));
            }
            let value = match inline {
                Some(v) => v,
                None => args.next().ok_or_else(|| usage(format!("{name} needs a value")))?.to_string_lossy().into_owned(),
            };
            let number = || value.parse::<u64>().map_err(|_| usage(format!("{name} takes a whole number (ns or bytes), not '{value}'")));
            let per_byte = || ps_per_byte(&value).ok_or_else(|| usage(format!("{name} takes ns per byte (0 or more, decimals allowed), not '{value}'")));
            match name.as_str() {
                "-L" => prm.l = number()?,
                "-o" => prm.o = number()?,
                "-g" => prm.g = number()?,
                "-G" => prm.big_g_ps = per_byte()?,
                "-O" => prm.big_o_ps = per_byte()?,
                "-S" => prm.s = number()?,
                "--params" => read_params(Path::new(&value), &mut prm)?,
                "--trace" => trace = Some(PathBuf::from(&value)),
                "-f" => files.push(OsString::from(&value)),
                "--json" => json = Some(PathBuf::from(&value)),
                "--max-errors" => max_errors = number()? as usize,
                "--calc-per-byte" => {
                    cost.per_byte = value.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| usage(format!("--calc-per-byte takes ns per byte (0 or more), not '{value}'")))?
                }
                _ => {
                    coll.take(&name, &value);
                }
            }
        }
        let source = match (coll.world(&usage)?, files.len()) {
            (Some(w), 0) => Source::Coll(w),
            (Some(_), _) => return Err(usage("give a FILE or --coll, not both".into())),
            (None, 1) => Source::File(files.remove(0)),
            (None, 0) => return Err(usage("no file given (or --coll NAME)".into())),
            (None, _) => return Err(usage("goal sim takes one file".into())),
        };
        Ok(Some(Opts { source, prm, batch, json, critical, max_errors, cost, trace }))
    }
}

/// What loading took.
pub(crate) struct Loaded {
    pub program: Program,
    pub name: String,
    pub seconds: f64,
}

/// Runs `goal sim ARGS`.
pub(crate) fn sim(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let Some(o) = Opts::parse(args)? else { return Ok(0) };
    let loaded = load(&o.source, o.max_errors, o.cost)?;
    if std::env::var_os("GOAL_SIM_DEBUG").is_some() {
        eprintln!("after load: peak rss {:?} MB", peak_rss().map(|b| b / 1_000_000));
    }
    let start = Instant::now();
    let opts = Options { critical_path: o.critical, max_left: 20 };
    let out = match &o.trace {
        None => goal_sim::simulate_with(&loaded.program, o.prm, opts, ()),
        Some(path) => {
            let mut timeline = trace::Timeline::default();
            let out = goal_sim::simulate_with(&loaded.program, o.prm, opts, |a: &goal_sim::Activity| timeline.push(a));
            timeline.write(path, &loaded.name, loaded.program.num_ranks(), o.prm).map_err(|e| Failure { code: 1, message: format!("cannot write the trace {}: {e}", path.display()), hint: None })?;
            out
        }
    };
    let sim_seconds = start.elapsed().as_secs_f64();
    // Operations are named by their labels in the file, read again for
    // the few the report names.
    let mut wanted: Vec<(u32, u32)> = out.left.as_ref().map(|l| l.ops()).unwrap_or_default();
    wanted.extend(out.critical_path.iter().map(|s| (s.rank, s.op)));
    let labels = match &o.source {
        Source::File(path) if path != "-" && !wanted.is_empty() => labels_of(Path::new(path), &wanted),
        _ => HashMap::new(),
    };
    let names = |r: u32, op: u32| labels.get(&(r, op)).cloned();
    let run = output::Run { name: &loaded.name, program: &loaded.program, prm: o.prm, out: &out, read_seconds: loaded.seconds, sim_seconds, peak_rss: peak_rss(), names: &names };
    print!("{}", run.text(o.batch, o.critical));
    if let Some(left) = &out.left {
        super::check::say(format!("{}: {}", loaded.name, left.render(&loaded.program, &names)).trim_end());
    }
    if let Some(path) = &o.json {
        let j = run.json();
        if path.as_os_str() == "-" {
            print!("{j}");
        } else if let Err(e) = std::fs::write(path, j) {
            return Err(Failure { code: 1, message: format!("cannot write {}: {e}", path.display()), hint: None });
        }
    }
    Ok(if out.complete() { 0 } else { 1 })
}

/// The labels of the operations `wanted` (rank, index) in the file at
/// `path`, for those that have one.
fn labels_of(path: &Path, wanted: &[(u32, u32)]) -> HashMap<(u32, u32), String> {
    let mut by_rank: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(r, op) in wanted {
        by_rank.entry(r).or_default().push(op);
    }
    let mut labels = HashMap::new();
    let Ok(f) = File::open(path) else { return labels };
    goal_text::parse(
        std::io::BufReader::with_capacity(1 << 20, f),
        "",
        |g| {
            for &op in by_rank.get(&g.rank).map_or(&[][..], |v| &v[..]) {
                if let Some(o) = g.ops.get(op as usize).filter(|o| o.label.0 < o.label.1) {
                    labels.insert((g.rank, op), g.names[o.label.0 as usize..o.label.1 as usize].to_string());
                }
            }
        },
        |_| {},
    );
    labels
}

/// Reads the schedule of `source` into a program.
pub(crate) fn load(source: &Source, max_errors: usize, cost: Cost) -> Result<Loaded, Failure> {
    let start = Instant::now();
    let fail = |message: String| Failure { code: 1, message, hint: None };
    let (program, name) = match source {
        Source::File(path) => {
            let name = super::check::display_name(path);
            let read = if path == "-" {
                goal_sim::text::read(std::io::stdin().lock(), &name, 0, max_errors)
            } else {
                File::open(path).map_err(|e| fail(format!("{name}: cannot open the file: {e}")))?;
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
                goal_sim::text::read_path(Path::new(path), &name, max_errors, threads)
            };
            match read {
                Ok(p) => (p, name),
                Err(e) => {
                    for x in &e.errors {
                        super::check::say(&format!("{}:{}:{}: error: {}", x.file, x.line, x.col, x.message));
                    }
                    return Err(fail(format!("{name}: {} error(s): nothing simulated (goal check {name} says more)", e.count)));
                }
            }
        }
        Source::Coll(w) => {
            check_fits(w)?;
            (goal_sim::coll::program(w, cost, |_| {}).map_err(fail)?, describe_world(w))
        }
    };
    Ok(Loaded { program, name, seconds: start.elapsed().as_secs_f64() })
}

/// How output and drawings name a collective: `allreduce ring over 8
/// ranks, 1024 bytes`.
pub(crate) fn describe_world(w: &goal_sched::coll::World) -> String {
    format!("{} {} over {} ranks, {} bytes", w.coll.name(), w.alg.name(), w.size, w.bytes)
}

/// Refuses a collective whose program would not fit in memory, before
/// building it: the operations and dependencies of 64 ranks spread over the
/// group (a rooted collective's root is one of few large ranks, so the mean
/// of a sample is the better estimate than its largest), times the group,
/// twice over for the simulation's state.
fn check_fits(w: &goal_sched::coll::World) -> Result<(), Failure> {
    let samples: Vec<u32> = (0..64u64).map(|i| ((i * w.size as u64) / 64 + i).min(w.size as u64 - 1) as u32).collect();
    let avail = mem_available().unwrap_or(u64::MAX);
    let (mut ops, mut bytes, mut n) = (0u64, 0u64, 0u64);
    let mut smallest = u64::MAX;
    for &r in &samples {
        let g = w.rank_graph(r).map_err(|e| Failure { code: 1, message: format!("rank {r}: {e}"), hint: None })?;
        let b = g.len() as u64 * 16 + (g.edges().len() + g.start_edges().len()) as u64 * 4;
        ops += g.len() as u64;
        bytes += b;
        n += 1;
        smallest = smallest.min(b);
        // Far too large already on the smallest rank seen: no need to look further.
        if smallest.saturating_mul(w.size as u64).saturating_mul(2) > avail {
            break;
        }
    }
    let ops_est = ops / n * w.size as u64;
    let need = (bytes / n).saturating_mul(w.size as u64).saturating_mul(2);
    if need > avail || ops_est >= u32::MAX as u64 {
        return Err(Failure {
            code: 1,
            message: format!(
                "{} ({}) over {} ranks has about {} operations (about {} per rank): about {:.1} GB to simulate, and {:.1} GB are available; use fewer ranks",
                w.coll.name(),
                w.alg.name(),
                w.size,
                ops_est,
                ops / n,
                need as f64 / 1e9,
                avail as f64 / 1e9
            ),
            hint: None,
        });
    }
    Ok(())
}

/// A line of `/proc/self/status` or `/proc/meminfo`, in bytes.
fn proc_kib(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024)
}

/// The most memory this process has held (VmHWM), in bytes.
pub(crate) fn peak_rss() -> Option<u64> {
    proc_kib("/proc/self/status", "VmHWM:")
}

fn mem_available() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}
