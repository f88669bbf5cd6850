//! MPI jobs across emulated hosts, with Open MPI and with MPICH: 2 hosts x 2
//! ranks where each rank reports the hostname it sees, and 1 rank per host
//! whose traffic must obey the rail's rate limit. Skipped (with a line saying
//! so) when the MPI's compiler wrapper or launcher is missing.

mod util;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use goal_netns::{Cluster, Spec};
use util::{cluster, run_with_limit};

/// `mpi_hello.c` built with `mpicc`, or `None` (printed) if it is missing.
fn build_hello(test: &str, mpicc: &str, launcher: &str) -> Option<PathBuf> {
    for tool in [mpicc, launcher] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            println!("skipped: {test}: {tool} not installed (scripts/install-deps.sh)");
            return None;
        }
    }
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mpi_hello.c");
    // One executable per test: tests run at once, and two compilers writing
    // one file would race.
    let name: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("goal-netns-hello-{name}"));
    util::stdout_of(Command::new(mpicc).args(["-O1", "-o"]).arg(&exe).arg(src));
    Some(exe)
}

/// Runs `cmd` and checks that ranks 0..4 ran, `per_host` on each host in
/// order, and that the allreduce across hosts added up.
fn check_job(mut cmd: Command) {
    let line = format!("{cmd:?}");
    let out = run_with_limit(&mut cmd, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{line} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let mut ranks: Vec<(usize, String)> = stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w[..] {
                ["rank", r, "of", "4", "on", host, "sum", "10"] => {
                    Some((r.parse().ok()?, host.to_owned()))
                }
                _ => None,
            }
        })
        .collect();
    ranks.sort();
    let expected: Vec<(usize, String)> = (0..4).map(|r| (r, format!("host{}", r / 2))).collect();
    assert_eq!(ranks, expected, "stdout:\n{stdout}\nstderr:\n{stderr}");
}

fn two_hosts(test: &str) -> Option<Cluster> {
    cluster(
        test,
        &Spec::new(2, 2).rate("1gbit".parse().expect("a valid rate")),
    )
}

/// Builds an MPI launch command on a cluster.
type JobFn = fn(&Cluster, usize, usize, &[usize], &[&OsStr]) -> Result<Command, goal_netns::Error>;

/// Which MPI: how to build and how to launch.
struct Mpi {
    name: &'static str,
    mpicc: &'static str,
    launcher: &'static str,
    /// `np`, `per_host`, rails, program and arguments.
    job: JobFn,
}

const OPENMPI: Mpi = Mpi {
    name: "Open MPI",
    mpicc: "mpicc.openmpi",
    launcher: "mpirun.openmpi",
    job: |c, np, per_host, rails, args| c.mpirun_openmpi(np, per_host, Some(rails), args),
};

const MPICH: Mpi = Mpi {
    name: "MPICH",
    mpicc: "mpicc.mpich",
    launcher: "mpiexec.hydra",
    job: |c, np, per_host, rails, args| c.mpiexec_mpich(np, per_host, Some(rails), args),
};

/// 2 hosts x 2 ranks: every rank sees its host's hostname.
fn ranks_see_their_hosts(mpi: &Mpi) {
    let test = format!("{} across hosts", mpi.name);
    let Some(c) = two_hosts(&test) else { return };
    let Some(hello) = build_hello(&test, mpi.mpicc, mpi.launcher) else {
        return;
    };
    let job = (mpi.job)(&c, 4, 2, &[0, 1], &[hello.as_os_str()]).expect("MPI command");
    check_job(job);
}

/// 1 rank on each of 2 hosts, over one 1 Gbit/s rail: the MPI's rate stays
/// under the rail's (it would be ~20 Gbit/s through shared memory).
fn data_goes_through_the_rails(mpi: &Mpi) {
    let test = format!("{} rate limit", mpi.name);
    let Some(c) = two_hosts(&test) else { return };
    let Some(hello) = build_hello(&test, mpi.mpicc, mpi.launcher) else {
        return;
    };
    let args = [hello.as_os_str(), OsStr::new("bw"), OsStr::new("48")];
    let mut job = (mpi.job)(&c, 2, 1, &[0], &args).expect("MPI command");
    let line = format!("{job:?}");
    // What this test checks is the rate, which rank 0 prints after the
    // transfer. MPICH has been seen to spin in MPI_Finalize after it, and
    // the job never to exit: a job killed at the limit still counts if it
    // printed the rate (the cluster's teardown kills what is left).
    let (out, killed) = match util::run_until(&mut job, Duration::from_secs(60)) {
        util::Ran::Exited(o) => {
            util::assert_ran(&line, &o);
            (o, false)
        }
        util::Ran::Killed(o) => (o, true),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let gbit: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("gbit_per_s ")?.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "{line}: no rate{}; stdout:\n{stdout}\nstderr:\n{}",
                if killed { " in 60 s (killed)" } else { "" },
                String::from_utf8_lossy(&out.stderr)
            )
        });
    if killed {
        println!("{}: the job printed its rate, then did not exit within 60 s (killed)", mpi.name);
    }
    println!(
        "{}: {gbit:.3} Gbit/s between hosts over one 1 Gbit/s rail",
        mpi.name
    );
    assert!((0.05..1.2).contains(&gbit), "{}: {gbit} Gbit/s", mpi.name);
}

#[test]
fn openmpi_job_runs_two_ranks_on_each_of_two_hosts() {
    ranks_see_their_hosts(&OPENMPI);
}

#[test]
fn mpich_job_runs_two_ranks_on_each_of_two_hosts() {
    ranks_see_their_hosts(&MPICH);
}

#[test]
fn openmpi_data_between_hosts_goes_through_the_rails() {
    data_goes_through_the_rails(&OPENMPI);
}

#[test]
fn mpich_data_between_hosts_goes_through_the_rails() {
    data_goes_through_the_rails(&MPICH);
}

/// The time limit holds for a job whose processes keep its pipes open: a
/// command that prints, then never exits while a child of its own holds
/// stdout, is killed at the limit with what it printed.
#[test]
fn a_job_that_does_not_exit_is_killed_at_the_limit() {
    let t0 = std::time::Instant::now();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo printed; sleep 5 & sleep 5"]);
    match util::run_until(&mut cmd, Duration::from_secs(1)) {
        util::Ran::Killed(out) => assert_eq!(String::from_utf8_lossy(&out.stdout), "printed\n"),
        util::Ran::Exited(out) => panic!("not killed: {:?}", out.status),
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "took {:?}", t0.elapsed());
}
