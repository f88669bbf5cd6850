//! `goal`, the one entry for goal's tools: `goal [OPTIONS] SUBCOMMAND [ARGS...]`.
//!
//! Parsing is two stages, as goalrun's: `lowargs` sorts goal's own options
//! (`--help`, `--version`) from the subcommand and its arguments without
//! looking at those; the subcommand then parses its arguments itself
//! (`drivers` for `bench` and `tune`, which run today's Python drivers).
//!
//! Each subcommand is one row of `SUBCOMMANDS`: its name, its usage, one
//! line of summary and the function that runs it. `goal --help` lists the
//! rows and the dispatcher looks the name up among them, so the list cannot
//! disagree with what runs, and a new tool (`check`, `sim`, `run`, `draw`,
//! `export`, `calibrate`) is one row plus its own module.

mod calibrate;
mod check;
mod draw;
mod drivers;
mod info;
mod lowargs;
mod noise;
mod run;
mod sim;

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use lowargs::{LowArgs, ParseError};

/// One subcommand of goal.
struct Subcommand {
    /// What follows `goal` on the command line.
    name: &'static str,
    /// Its arguments, for the usage line in `goal --help`.
    args: &'static str,
    /// One line: what it does.
    summary: &'static str,
    /// Runs it with the arguments after its name; `Ok` carries the exit
    /// status, `Err` why it could not run.
    run: fn(Vec<OsString>, &Context) -> Result<i32, Failure>,
}

/// Every subcommand, in the order `goal --help` lists them.
const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "bench",
        args: "BENCHMARK [ARGS...]",
        summary: "run a benchmark (p2p, coll, net, overlap, mpi, groups beside the MPIs; torch; sim)",
        run: drivers::bench,
    },
    Subcommand {
        name: "tune",
        args: "[ARGS...]",
        summary: "measure the collective algorithms, rewrite AUTO's table",
        run: drivers::tune,
    },
    Subcommand {
        name: "check",
        args: "[--max-errors N] FILE...",
        summary: "read and validate GOAL text schedules (LogGOPSim, Schedgen)",
        run: check::check,
    },
    Subcommand {
        name: "run",
        args: "[--iterations N] [--warmup N] [--json PATH] FILE",
        summary: "run a GOAL text schedule for real (under goalrun -n N, mpirun, srun)",
        run: run::run,
    },
    Subcommand {
        name: "calibrate",
        args: "--loggops [--out PATH]",
        summary: "measure LogGOPS parameters between 2 ranks, for goal sim",
        run: calibrate::calibrate,
    },
    Subcommand {
        name: "draw",
        args: "[-o OUT] [--format svg|dot] [--max-ranks N] FILE",
        summary: "draw a GOAL text schedule as SVG or DOT: ranks, operations, edges, messages",
        run: draw::draw,
    },
    Subcommand {
        name: "info",
        args: "",
        summary: "this process' rank, launcher and binding (start it under a launcher)",
        run: info::info,
    },
    Subcommand {
        name: "noise",
        args: "KIND [--duration S] [--cpus LIST]",
        summary: "make this machine busy in a known way (busy, detour:D/P)",
        run: noise::noise,
    },
    Subcommand {
        name: "sim",
        args: "[-L N -o N ...] [-b] [--json PATH] FILE | --coll NAME ...",
        summary: "simulate a GOAL text schedule or a collective under LogGOPS (LogGOPSim's results)",
        run: sim::sim,
    },
    Subcommand {
        name: "export",
        args: "--coll NAME [--alg ALG] --ranks N [--bytes B] [-o FILE]",
        summary: "write one of goal's collectives as a GOAL text schedule",
        run: sim::export::export,
    },
    Subcommand {
        name: "help",
        args: "[SUBCOMMAND [ARGS...]]",
        summary: "print this help, or SUBCOMMAND's (SUBCOMMAND --help)",
        run: help,
    },
];

const USAGE: &str = "Usage: goal [-h | --help] [-V | --version] SUBCOMMAND [ARGS...]";

/// Why goal stops before or instead of running a subcommand.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Exit status.
    pub code: i32,
    /// What to print after "goal: ".
    pub message: String,
    /// More lines to print after it (a list to choose from), if any.
    pub hint: Option<String>,
}

impl Failure {
    /// A command-line mistake (status 2), with what to choose from.
    pub(crate) fn usage(message: String, hint: String) -> Failure {
        Failure {
            code: 2,
            message,
            hint: Some(hint),
        }
    }
}

/// Runs `body` as one rank of a job, for the subcommands that are a job's
/// program (`goal run`, `goal calibrate`): starts goal (or fails, saying
/// how to start `goal NAME` under a launcher: `how`), reports an error of
/// `body` as `goal NAME: rank R: ...` (status 1), and finalizes goal.
pub(crate) fn as_rank(
    name: &str,
    how: &str,
    body: impl FnOnce(&std::sync::Arc<goal_rt::Runtime>) -> goal_rt::Result<i32>,
) -> Result<i32, Failure> {
    let rt = goal_rt::init().map_err(|e| Failure {
        code: 1,
        message: format!("{name}: goal could not start ({e}): start it as the program of a job, {how} (or under mpirun or srun)"),
        hint: None,
    })?;
    let code = body(&rt).unwrap_or_else(|e| {
        check::say(&format!("goal {name}: rank {}: {e}", rt.rank()));
        1
    });
    drop(rt);
    if let Err(e) = goal_rt::finalize() {
        check::say(&format!("goal {name}: finalizing goal: {e}"));
    }
    Ok(code)
}

/// What goal knows of where it is and of its environment, gathered once so
/// that the subcommands can be tested without a process of their own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// This executable (on Linux `/proc/self/exe`: links resolved).
    pub exe: Option<PathBuf>,
    /// `GOAL_BENCH_DIR`, when set and not empty.
    pub bench_dir: Option<PathBuf>,
    /// `PATH`, to say where python3 was looked for.
    pub path: Option<OsString>,
}

impl Context {
    fn from_env() -> Context {
        Context {
            exe: std::env::current_exe().ok(),
            bench_dir: std::env::var_os("GOAL_BENCH_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            path: std::env::var_os("PATH"),
        }
    }
}

/// Rows of `NAME  TEXT`, the names padded to one width, two spaces in.
pub(crate) fn listing<'a>(rows: impl IntoIterator<Item = (String, &'a str)>) -> String {
    let rows: Vec<(String, &str)> = rows.into_iter().collect();
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(n, t)| format!("  {n:width$}  {t}\n"))
        .collect()
}

fn subcommand_list() -> String {
    let rows = SUBCOMMANDS
        .iter()
        .map(|s| (format!("{} {}", s.name, s.args), s.summary));
    format!("Subcommands:\n{}", listing(rows))
}

fn goal_help() -> String {
    format!(
        "\
goal: the one entry for goal's tools.

{USAGE}

{}
Options:
  -h, --help     print this help (before a subcommand: that subcommand's help)
  -V, --version  print goal's version

`goal help SUBCOMMAND` and `goal SUBCOMMAND --help` print a subcommand's
help; `goal bench BENCHMARK --help` and `goal tune --help` print the
driver's own options.

{}
Starting a job of N ranks on this machine is goalrun's: `goalrun -n N PROGRAM`
(see `goalrun --help`); across machines, the launcher you already use.
",
        subcommand_list(),
        drivers::ABOUT
    )
}

/// `goal help [SUBCOMMAND [ARGS...]]`: goal's help, or `SUBCOMMAND ARGS --help`.
fn help(mut args: Vec<OsString>, cx: &Context) -> Result<i32, Failure> {
    if args.first().is_none_or(|a| a == "-h" || a == "--help") {
        print!("{}", goal_help());
        return Ok(0);
    }
    let name = args.remove(0);
    args.push("--help".into());
    dispatch(&name, args, cx)
}

fn dispatch(name: &OsStr, args: Vec<OsString>, cx: &Context) -> Result<i32, Failure> {
    match SUBCOMMANDS.iter().find(|s| name == s.name) {
        Some(sub) => (sub.run)(args, cx),
        None => Err(Failure::usage(
            format!("unknown subcommand '{}'", name.to_string_lossy()),
            format!(
                "{}Try 'goal --help' for more information.",
                subcommand_list()
            ),
        )),
    }
}

fn report(f: Failure) -> i32 {
    let mut text = format!("goal: {}\n", f.message);
    if let Some(hint) = f.hint {
        text.push_str(&hint);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    eprint!("{text}");
    f.code
}

/// goal's main, minus the exit: `args` without the program name; returns the
/// exit status (a driver's is its own: goal has become the driver then).
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let low = match LowArgs::parse(args) {
        Ok(low) => low,
        Err(ParseError(message)) => {
            return report(Failure::usage(
                message,
                format!("{USAGE}\nTry 'goal --help' for more information."),
            ))
        }
    };
    if low.version {
        println!("goal {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let cx = Context::from_env();
    let done = match low.subcommand {
        None if low.help => {
            print!("{}", goal_help());
            Ok(0)
        }
        None => Err(Failure::usage(
            "no subcommand given".into(),
            format!(
                "{USAGE}\n\n{}Try 'goal --help' for more information.",
                subcommand_list()
            ),
        )),
        Some(name) if low.help => help([name].into_iter().chain(low.args).collect(), &cx),
        Some(name) => dispatch(&name, low.args, &cx),
    };
    match done {
        Ok(code) => code,
        Err(f) => report(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_lists_every_subcommand() {
        let help = goal_help();
        for s in SUBCOMMANDS {
            assert!(
                help.contains(&format!("  {} {}", s.name, s.args)),
                "{}: {help}",
                s.name
            );
        }
        assert!(help.contains("goalrun -n N"), "{help}");
    }

    #[test]
    fn an_unknown_subcommand_is_a_usage_error_listing_the_known() {
        let f = dispatch("frobnicate".as_ref(), vec![], &Context::default()).unwrap_err();
        assert_eq!(f.code, 2);
        assert_eq!(f.message, "unknown subcommand 'frobnicate'");
        assert!(f.hint.unwrap().contains("  tune [ARGS...]"));
    }

    #[test]
    fn listing_aligns_the_second_column() {
        let text = listing([("a".to_string(), "one"), ("abc".to_string(), "two")]);
        assert_eq!(text, "  a    one\n  abc  two\n");
    }
}
