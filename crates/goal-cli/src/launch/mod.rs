//! goalrun, the one-machine launcher: starts N ranks of a program, gives each
//! its place in the job through the environment and a bootstrap socket, and
//! ends the job as a whole.
//!
//! The launcher is three steps, one module each, in the order they run:
//! [`lowargs`] sorts the command line, [`hiargs`] validates it into a launch
//! (nothing is started until everything checks out), and [`job`] runs it.
//! [`bind`] decides which CPUs each rank runs on, [`output`] is the
//! `--tag-output` plumbing and [`sys`] the system calls.
//! The bootstrap protocol itself lives in goal-boot, shared with the ranks.

/// Writes one line to stderr with a single `write`, so that it cannot be
/// torn apart by the ranks' output sharing the same pipe or terminal
/// (`eprintln!` may issue several writes per line).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut line = format!($($arg)*);
        line.push('\n');
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }};
}

mod bind;
mod hiargs;
mod job;
mod lowargs;
mod output;
mod sys;

use std::ffi::OsString;

use hiargs::HiArgs;
use lowargs::{LowArgs, ParseError};

const USAGE: &str = "Usage: goalrun -n N [--progress MODE] [--bind-to WHAT] [--map-by ORDER] \
     [--report-bindings] [--timeout S] [--tag-output] [--] PROGRAM [ARGS...]";

const HELP: &str = "\
goalrun: start a goal job of N ranks on this machine.

Usage: goalrun -n N [OPTIONS] [--] PROGRAM [ARGS...]

Options:
  -n, --np N           number of ranks to start (at least 1)
      --progress MODE  the runtime's progress mode: manual, thread, spin,
                       kernel or auto (given to the ranks as GOAL_PROGRESS)
      --bind-to WHAT   what each rank is bound to: core, hwthread, socket or
                       none. Default: a core each when there are 2 or more
                       ranks and no more than the cores goalrun may use
                       (its affinity and cpuset: taskset, a batch system);
                       otherwise none (every rank may use every such CPU)
      --map-by ORDER   the order ranks take the cores: core (or slot; the
                       default: socket 0's cores first) or socket (round
                       robin over the sockets)
      --report-bindings
                       print to stderr, per rank, the CPUs it may run on
      --timeout S      kill every rank after S seconds (exit status 124)
  -l, --tag-output     prefix each line the ranks print with \"[rank] \"
  -h, --help           print this help

Options end at the first argument that is not one, or at --: the rest is the
program and its arguments. Each rank runs PROGRAM with GOAL_RANK (0..N-1),
GOAL_SIZE (N), GOAL_JOB (the same on every rank) and GOAL_BOOTSTRAP (the
launcher's socket) set, and torchrun's variables, so that torch.distributed's
init_process_group() (env://) just works: RANK and LOCAL_RANK (0..N-1),
WORLD_SIZE and LOCAL_WORLD_SIZE (N), and MASTER_ADDR and MASTER_PORT (torch's
store, served by rank 0): those of goalrun's environment when both are set
there, otherwise 127.0.0.1 and a port that is free when goalrun starts (as
torchrun --standalone picks one); one of the two set alone is an error.
goal's own bootstrap ignores these: GOAL_BOOTSTRAP comes first.

Rank 0 gets goalrun's standard input, the others /dev/null. A rank never
outlives goalrun. The socket lives in a private directory in $TMPDIR (or
/tmp); one that a goalrun killed by SIGKILL could not remove is removed by
the next goalrun of the same user.

A rank that ends before it joined the job (before or in GOAL_Init), with any
exit status, fails the job once another rank has joined: the others are told
which rank left, and goalrun exits with 1 if that rank's own status was 0.

When a rank fails, the others get GOAL_ABORT_GRACE seconds (default 3) to end
by themselves, then SIGTERM, then SIGKILL one second later. SIGINT, SIGTERM
and SIGHUP are forwarded to the ranks; a second one kills them.

Exit status: 0 if every rank exited 0; otherwise the first failing rank's exit
status (128+N if killed by signal N); 124 on timeout; 126 or 127 if PROGRAM
cannot be executed; 2 for a usage error.
";

/// Why goalrun stops before or instead of running the job.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Exit status.
    pub code: i32,
    /// What to print after "goalrun: ".
    pub message: String,
    /// A command-line mistake: also print the usage line.
    pub usage: bool,
}

fn report(f: Failure) -> i32 {
    say!("goalrun: {}", f.message);
    if f.usage {
        say!("{USAGE}\nTry 'goalrun --help' for more information.");
    }
    f.code
}

/// goalrun's main, minus the exit: `args` without the program name; returns
/// the exit status once everything (ranks, server, temp dir) is cleaned up.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let low = match LowArgs::parse(args) {
        Ok(low) => low,
        Err(ParseError(message)) => {
            return report(Failure {
                code: 2,
                message,
                usage: true,
            })
        }
    };
    if low.help {
        print!("{HELP}");
        return 0;
    }
    let hi = match HiArgs::from_low(low, |name| std::env::var_os(name)) {
        Ok(hi) => hi,
        Err(f) => return report(f),
    };
    match job::run(&hi) {
        Ok(code) => code,
        Err(f) => report(f),
    }
}
