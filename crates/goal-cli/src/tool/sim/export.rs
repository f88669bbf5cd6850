//! `goal export --coll NAME [--alg ALG] --ranks N [--bytes B] [--root R]
//! [-o FILE]`: writes one of goal's collectives, as the runtime's graph
//! builders make it, as a text schedule in Schedgen's layout (LogGOPSim's
//! txt2bin reads it; `goal check`, `goal sim`, `goal run` and `goal draw`
//! too). The output depends only on the arguments: the same command writes
//! the same bytes.

use std::ffi::OsString;
use std::io::{BufWriter, Write};

use goal_sim::coll::Cost;
use goal_text::generate::{self, Pattern};

use super::{CollArgs, COLL_OPTIONS};
use crate::tool::{Context, Failure};

const HELP: &str = "\
Usage: goal export --coll NAME [--alg ALG] --ranks N [--bytes B] [--root R] [-o FILE]
       goal export --pattern NAME --ranks N [--bytes B] [-o FILE]

Writes goal's collective NAME over N ranks, built by the graph builders the
runtime uses, as a GOAL text schedule in Schedgen's layout (num_ranks, one
block per rank, labels l1, l2, ...: vertex i of a rank's graph is l<i+1>),
which LogGOPSim's txt2bin reads too. Every rank's collective opens and
closes with a `calc 0` (the entry and exit every operation hangs from).

Options:
  --coll NAME       barrier, bcast, gather, scatter, allgather, alltoall,
                    reduce, allreduce, reduce_scatter_block, gatherv,
                    scatterv, allgatherv, alltoallv, reduce_scatter
  --alg ALG         auto (default), linear, linear_sync, binomial,
                    recursive_doubling, bruck, ring, pipeline, rabenseifner
  --ranks N         ranks (K and M suffixes)
  --bytes B         bytes per rank: the message, block or vector (K, M, G)
  --root R          root of a rooted collective (default 0)
  --calc-per-byte F local operations (reductions, copies) as calc of F ns per
                    byte (default 0)
  --pattern NAME    instead of goal's collective, one of Schedgen's as Schedgen
                    writes it: dissemination (barrier; 1-byte messages) or
                    binomial_bcast (from rank 0), for tests and benchmarks
  -o FILE           write to FILE (default: standard output)
  -h, --help        print this help
";

/// What writes the schedule, wherever it goes.
type Writer = dyn Fn(&mut dyn Write) -> std::io::Result<()>;

fn usage(m: String) -> Failure {
    Failure::usage(m, "Usage: goal export --coll NAME [--alg ALG] --ranks N [--bytes B] [-o FILE]\nTry 'goal export --help' for more information.".into())
}

/// Runs `goal export ARGS`.
pub(crate) fn export(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let mut coll = CollArgs::default();
    let mut out: Option<OsString> = None;
    let mut cost = Cost::default();
    let mut pattern: Option<String> = None;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let text = a.to_string_lossy().into_owned();
        if text == "-h" || text == "--help" {
            print!("{HELP}");
            return Ok(0);
        }
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (text.clone(), None),
        };
        if !["-o", "--output", "--calc-per-byte", "--pattern"].contains(&name.as_str()) && !COLL_OPTIONS.contains(&name.as_str()) {
            return Err(usage(if text.starts_with('-') { format!("unknown option '{text}'") } else { format!("unexpected argument '{text}': goal export writes a collective (--coll NAME)") }));
        }
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or_else(|| usage(format!("{name} needs a value")))?.to_string_lossy().into_owned(),
        };
        match name.as_str() {
            "-o" | "--output" => out = Some(OsString::from(value)),
            "--pattern" => pattern = Some(value),
            "--calc-per-byte" => {
                cost.per_byte = value.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| usage(format!("--calc-per-byte takes ns per byte (0 or more), not '{value}'")))?
            }
            _ => {
                coll.take(&name, &value);
            }
        }
    }
    let write: Box<Writer> = match pattern {
        Some(p) => {
            let pat = Pattern::from_name(&p).ok_or_else(|| usage(format!("unknown pattern '{p}': expected dissemination or binomial_bcast")))?;
            let ranks = coll.ranks.as_deref().ok_or_else(|| usage("--pattern needs --ranks N".into()))?;
            let n = super::args::size(ranks).filter(|&n| (1..=1u64 << 31).contains(&n)).ok_or_else(|| usage(format!("--ranks takes 1 to 2^31, not '{ranks}'")))? as u32;
            let bytes = match coll.bytes.as_deref() {
                None => 1,
                Some(b) => super::args::size(b).ok_or_else(|| usage(format!("--bytes takes a size, not '{b}'")))?,
            };
            if coll.coll.is_some() || coll.alg.is_some() || coll.root.is_some() {
                return Err(usage("--pattern goes with --ranks and --bytes only".into()));
            }
            Box::new(move |w: &mut dyn Write| {
                let mut text = String::new();
                let mut r = 0u32;
                while r < n {
                    let end = n.min(r.saturating_add(4096));
                    text.clear();
                    generate::schedgen(pat, n, bytes, r..end, &mut text);
                    w.write_all(text.as_bytes())?;
                    r = end;
                }
                Ok(())
            })
        }
        None => {
            let world = coll.world(&usage)?.ok_or_else(|| usage("goal export needs --coll NAME (or --pattern NAME)".into()))?;
            Box::new(move |w: &mut dyn Write| goal_sim::coll::write_text(&world, cost, w))
        }
    };
    let fail = |m: String| Failure { code: 1, message: m, hint: None };
    match out {
        None => {
            let stdout = std::io::stdout();
            let mut w = BufWriter::with_capacity(1 << 20, stdout.lock());
            write(&mut w).and_then(|_| w.flush()).map_err(|e| fail(format!("cannot write the schedule: {e}")))?;
        }
        Some(path) => {
            let name = path.to_string_lossy().into_owned();
            let f = std::fs::File::create(&path).map_err(|e| fail(format!("cannot create {name}: {e}")))?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            write(&mut w).and_then(|_| w.flush()).map_err(|e| fail(format!("cannot write {name}: {e}")))?;
        }
    }
    Ok(0)
}
