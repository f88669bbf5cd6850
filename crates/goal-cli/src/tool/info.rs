//! `goal info`: what this process is in a job and where it may run, read
//! without joining the job, so that it can be started under any launcher
//! in place of a program: `goalrun -n 2 goal info`, `mpirun -n 2 goal
//! info`, `srun -n 2 goal info`, `taskset -c 1 goal info`.
//!
//! One line per process (one write, so that ranks sharing a terminal do
//! not tear each other's lines): its rank and the job's size as the
//! launcher's environment gives them, the launcher goal-boot recognises,
//! its pid and host, and its binding in the words goal-rt uses under
//! `GOAL_DEBUG=1` (`bound to CPUs 1 of the online 0-1`).

use std::ffi::OsString;
use std::io::Write;

use super::{Context, Failure};

const HELP: &str = "\
Usage: goal info

Prints, for this process, what a goal rank started the same way would be:
its rank and the job's size (from the launcher's environment), the launcher
goal recognises (goalrun, pmix, pmi, store, single), its pid and host, and
the CPUs it may run on: `bound to CPUs 1 of the online 0-1`, or `not bound`.
Start it as the program of a job to see each rank's binding:
goalrun -n 2 goal info, mpirun -n 2 goal info, srun -n 2 goal info.
";

/// Runs `goal info`.
pub(crate) fn info(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    if let Some(a) = args.first() {
        if a == "-h" || a == "--help" {
            print!("{HELP}");
            return Ok(0);
        }
        return Err(Failure::usage(format!("info takes no arguments (got '{}')", a.to_string_lossy()), "Usage: goal info".into()));
    }
    let launch = goal_boot::launch_info().map_err(|e| Failure { code: 1, message: format!("info: {e}"), hint: None })?;
    let mine = super::noise::allowed().unwrap_or_default();
    let num = |n: Option<usize>| n.map_or("?".to_string(), |n| n.to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let line = format!(
        "goal info: rank {} of {} (launcher {}, pid {}, host {host}): {}\n",
        num(launch.rank),
        num(launch.size),
        launch.launcher,
        std::process::id(),
        goal_boot::cpulist::binding(&mine, &goal_boot::cpulist::online())
    );
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    Ok(0)
}
