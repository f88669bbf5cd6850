//! Slurm on a 3-host cluster: `srun` places tasks on every host, each task
//! sees its host's hostname, one Slurm per cluster (and another cluster's at
//! the same time), and stopping it ends the daemons and a job still running
//! and removes the files. Skipped (with a
//! line saying so) when not root or Slurm's programs are missing.

mod util;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use goal_netns::{Cluster, ErrorKind, Slurm, Spec};
use util::{cluster, run_with_limit};

/// Processes whose command line or environment mentions `dir` (the daemons
/// name their files there; tasks and step daemons carry it in their
/// environment), as "PID COMMAND LINE".
fn processes_of(dir: &Path) -> Vec<String> {
    let needle = dir.as_os_str().as_encoded_bytes();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if pid == std::process::id().to_string() {
            continue;
        }
        for what in ["cmdline", "environ"] {
            let Ok(bytes) = std::fs::read(format!("/proc/{pid}/{what}")) else {
                continue;
            };
            if bytes.windows(needle.len()).any(|w| w == needle) {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                found.push(format!(
                    "{pid} {}",
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                ));
                break;
            }
        }
    }
    found
}

#[test]
fn srun_runs_on_every_host_and_stopping_leaves_nothing() {
    let test = "slurm";
    if let Err(why) = goal_netns::slurm::available() {
        println!("skipped: {test}: {why}");
        return;
    }
    let Some(c) = cluster(test, &Spec::new(3, 1)) else {
        return;
    };
    let t = Instant::now();
    let slurm = Slurm::start(&c).unwrap_or_else(|e| panic!("starting Slurm: {e}"));
    println!("Slurm up on 3 hosts in {:?}", t.elapsed());
    let dir = slurm.conf().parent().expect("a directory").to_path_buf();

    let err = Slurm::start(&c).expect_err("a second Slurm on the same cluster");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    assert!(
        dir.exists(),
        "the failed second start removed the first one's files"
    );

    // Another cluster's Slurm at the same time, on the same ports: each
    // cluster's namespaces have ports of their own.
    {
        let c2 = Cluster::create(&Spec::new(2, 1)).expect("creating a second cluster");
        let slurm2 = Slurm::start(&c2).unwrap_or_else(|e| panic!("starting a second Slurm: {e}"));
        let mut srun = slurm2.srun();
        srun.args(["-N", "2", "-n", "2", "hostname"]);
        let out = run_with_limit(&mut srun, Duration::from_secs(60));
        let mut hosts: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        hosts.sort_unstable();
        assert_eq!(hosts, ["host0", "host1"], "{}", slurm2.logs());
    }

    let mut srun = slurm.srun();
    srun.args(["-N", "3", "-n", "6", "--ntasks-per-node=2", "sh", "-c"])
        .arg(r#"echo "task $SLURM_PROCID on $(hostname) node $SLURMD_NODENAME""#);
    let out = run_with_limit(&mut srun, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "srun failed ({}):\n{stdout}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        slurm.logs()
    );
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    let want: Vec<String> = (0..6)
        .map(|t| format!("task {t} on host{0} node host{0}", t / 2))
        .collect();
    assert_eq!(lines, want);

    // A job still running when Slurm stops: it ends with it.
    let mut job = slurm.srun();
    job.args(["-N", "3", "-n", "3", "sleep", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut job = job.spawn().expect("starting srun sleep");
    let deadline = Instant::now() + Duration::from_secs(30);
    let sleeping = |p: &&String| {
        p.split_whitespace()
            .nth(1)
            .is_some_and(|c| c.ends_with("sleep"))
    };
    while processes_of(&dir).iter().filter(sleeping).count() < 3 {
        assert!(
            Instant::now() < deadline,
            "the 3 sleep tasks did not start within 30 s: {:#?}\n{}",
            processes_of(&dir),
            slurm.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let t = Instant::now();
    slurm.stop().expect("stopping Slurm");
    println!("Slurm stopped in {:?}", t.elapsed());
    let _ = job.kill();
    let _ = job.wait();
    assert_eq!(processes_of(&dir), Vec::<String>::new(), "left running");
    assert!(!dir.exists(), "{} is still there", dir.display());
}
