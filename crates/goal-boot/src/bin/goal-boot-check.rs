//! `goal-boot-check`: does goal's bootstrap work under this launcher?
//!
//! Start it the way you would start a goal program (`mpirun -np 4
//! goal-boot-check`, `srun -n 4 --mpi=pmix goal-boot-check`, `mpiexec -n 4
//! goal-boot-check`, or by hand with `GOAL_STORE`). Every rank calls
//! `goal_boot::from_env`, checks its rank and size against what the launcher
//! put in the environment, runs allgather rounds whose contents it checks
//! (small, several kilobytes, empty), checks that all ranks got the same job
//! secret (`GOAL_SECRET`, if set), counts the hosts, and prints one line:
//!
//! ```text
//! OK rank 1 of 4 via pmix job 1770913793 hosts 1
//! ```
//!
//! or `FAILED rank R: reason` on stderr, exiting 1. The crate's process tests
//! run it under each launcher. For those tests, `GOAL_BOOT_CHECK_KIND` names
//! the bootstrap that must be chosen, and `GOAL_BOOT_CHECK_STALL_RANK=r`
//! makes rank `r` print `STALLED rank r pid P` after the first round and
//! wait to be killed, so a test can kill a rank in the middle of an
//! allgather.

use std::io::Write;
use std::process::ExitCode;

use goal_boot::Bootstrap;

/// The blob `rank` contributes to `round`: distinct per rank and round;
/// round 1 is several kilobytes (PMI splits it into chunks), round 2 empty.
fn blob(rank: usize, round: usize) -> Vec<u8> {
    let len = match round {
        0 => 5 + rank,
        1 => 3000 + 17 * rank,
        _ => 0,
    };
    (0..len)
        .map(|i| (rank * 31 + round * 7 + i) as u8)
        .collect()
}

/// The rank and size the launcher's own variables claim, if any.
fn claimed() -> Option<(usize, usize)> {
    let num = |name: &str| std::env::var(name).ok()?.trim().parse::<usize>().ok();
    [
        ("GOAL_RANK", "GOAL_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    ]
    .into_iter()
    .find_map(|(r, s)| Some((num(r)?, num(s)?)))
}

fn check(boot: &mut dyn Bootstrap) -> Result<String, String> {
    let (rank, size) = (boot.rank(), boot.size());
    if let Some((r, s)) = claimed() {
        if (r, s) != (rank, size) {
            return Err(format!(
                "the bootstrap says rank {rank} of {size}, the launcher's variables {r} of {s}"
            ));
        }
    }
    if let Ok(kind) = std::env::var("GOAL_BOOT_CHECK_KIND") {
        if kind != boot.kind() {
            return Err(format!(
                "bootstrap '{}' chosen, '{kind}' expected",
                boot.kind()
            ));
        }
    }
    let stall = std::env::var("GOAL_BOOT_CHECK_STALL_RANK")
        .ok()
        .and_then(|r| r.parse::<usize>().ok());
    for round in 0..3 {
        let all = boot
            .allgather(&blob(rank, round))
            .map_err(|e| format!("allgather round {round}: {e}"))?;
        let want: Vec<Vec<u8>> = (0..size).map(|r| blob(r, round)).collect();
        if all != want {
            return Err(format!("allgather round {round} returned wrong blobs"));
        }
        if round == 0 && stall == Some(rank) {
            println!("STALLED rank {rank} pid {}", std::process::id());
            let _ = std::io::stdout().flush();
            loop {
                std::thread::park();
            }
        }
    }
    let secrets = boot
        .allgather(&boot.secret())
        .map_err(|e| format!("allgather of the secrets: {e}"))?;
    if secrets.iter().any(|s| s != &secrets[0]) {
        return Err("the ranks hold different job secrets".into());
    }
    if secrets[0] == [0u8; goal_boot::SECRET_LEN] {
        return Err("the job secret is all zeros".into());
    }
    if let Ok(hex) = std::env::var("GOAL_SECRET") {
        let ours: String = secrets[0].iter().map(|b| format!("{b:02x}")).collect();
        if ours != hex.trim().to_ascii_lowercase() {
            return Err("the job secret is not GOAL_SECRET".into());
        }
    }
    let hosts = boot
        .allgather(goal_boot::host_id().as_bytes())
        .map_err(|e| format!("allgather of the host ids: {e}"))?;
    let mut distinct = hosts.clone();
    distinct.sort();
    distinct.dedup();
    Ok(format!(
        "OK rank {rank} of {size} via {} job {} hosts {}",
        boot.kind(),
        boot.job_id(),
        distinct.len()
    ))
}

fn main() -> ExitCode {
    let mut boot = match goal_boot::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("FAILED bootstrap: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rank = boot.rank();
    let result = check(boot.as_mut());
    // Drop first: PMIx and PMI say goodbye to the launcher, the store's rank
    // 0 waits for the others to leave.
    drop(boot);
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("FAILED rank {rank}: {e}");
            ExitCode::FAILURE
        }
    }
}
