//! goal-boot: how a rank finds its group.
//!
//! A bootstrap answers three questions before any transport exists: which
//! rank am I, how many are we, and, collectively, what did everyone say
//! (`allgather` of small blobs, typically transport addresses). The runtime
//! sees only the [`Bootstrap`] trait; [`from_env`] picks the implementation
//! from the process environment, so other launchers (mpirun, srun) can be
//! added here later without touching the runtime.
//!
//! # Environment
//!
//! Under `goalrun` every rank gets:
//!
//! | variable          | meaning                                             |
//! |-------------------|-----------------------------------------------------|
//! | `GOAL_BOOTSTRAP`  | path of the launcher's Unix stream socket           |
//! | `GOAL_RANK`       | this rank, `0..GOAL_SIZE`                           |
//! | `GOAL_SIZE`       | number of ranks, at least 1                         |
//! | `GOAL_JOB`        | job identifier, the same on every rank              |
//!
//! With `GOAL_BOOTSTRAP` set, [`from_env`] connects to that socket
//! ([`client::UnixClient`]); a missing or garbled variable is an error that
//! names the variable and its value. With none of the four set, the process
//! is a group of one ([`Single`]). Setting some but not `GOAL_BOOTSTRAP` is an
//! error rather than a silent group of one, which would hide a broken launch.
//!
//! # Wire protocol
//!
//! All integers are `u32` little-endian; a "string" is a `u32` length followed
//! by that many bytes. One connection per rank, for the life of the job.
//!
//! ```text
//! client -> server  HELLO   "GOAL" | version = 1 | rank | size | pid      (20 bytes)
//! server -> client  status = 0                                           (admitted)
//!                or status = 1 (rejected) | message string, then close
//!
//! repeated, one per allgather round:
//! client -> server  BLOB    length (<= 1 MiB) | bytes
//! server -> client  status = 0 | count = size | count x (length | bytes)  (index = rank)
//!                or status = 2 (aborted) | message string, then close
//! ```
//!
//! The server answers a round only once every rank has sent its blob for it,
//! so `allgather` blocks, without a timeout, until the slowest rank arrives.
//! It does not block on a dead job: the server aborts the job (status 2, with
//! the reason) when a rank leaves while a round is being collected, when a
//! round starts after a rank has left, or when the launcher says so (a rank
//! process died); and if the launcher itself dies, the kernel closes the
//! socket. Either way the client's read returns at once with an error. Blobs
//! over 1 MiB ([`MAX_BLOB`]) are refused by the client before anything is
//! sent, and by the server (which then aborts the job) if sent anyway.
//! See [`server`] for the server's design.

#![deny(missing_docs)]

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

pub mod client;
pub mod server;
mod sys;
mod wire;

pub use client::UnixClient;
pub use wire::MAX_BLOB;

/// Names of the environment variables goalrun sets for each rank.
pub mod env {
    /// Path of the launcher's bootstrap socket.
    pub const BOOTSTRAP: &str = "GOAL_BOOTSTRAP";
    /// This rank, `0..GOAL_SIZE`.
    pub const RANK: &str = "GOAL_RANK";
    /// Number of ranks.
    pub const SIZE: &str = "GOAL_SIZE";
    /// Job identifier, the same on every rank.
    pub const JOB: &str = "GOAL_JOB";
    /// Progress mode requested on the goalrun command line (read by goal-rt).
    pub const PROGRESS: &str = "GOAL_PROGRESS";
}

/// What the runtime needs from a launcher: who am I, how many are we, and a
/// collective exchange of small address blobs.
pub trait Bootstrap: Send {
    /// This process' rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks in the group.
    fn size(&self) -> usize;
    /// A job identifier, the same on every rank of the job.
    fn job_id(&self) -> String;
    /// Collective: every rank contributes `mine`; returns every rank's blob, indexed by rank.
    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>>;
}

/// The bootstrap for this process, from its environment.
pub fn from_env() -> io::Result<Box<dyn Bootstrap>> {
    match Plan::from_lookup(|name| std::env::var_os(name))? {
        Plan::Single => Ok(Box::new(Single::new())),
        Plan::Launcher {
            path,
            rank,
            size,
            job,
        } => Ok(Box::new(UnixClient::connect(&path, rank, size, job)?)),
    }
}

/// A group of one: a process started without a launcher.
#[derive(Debug, Clone)]
pub struct Single {
    job: String,
}

impl Single {
    /// A group of one with a job id made of the pid and the time.
    pub fn new() -> Single {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Single {
            job: format!("single-{}-{nanos}", std::process::id()),
        }
    }
}

impl Default for Single {
    fn default() -> Self {
        Single::new()
    }
}

impl Bootstrap for Single {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn job_id(&self) -> String {
        self.job.clone()
    }

    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        Ok(vec![mine.to_vec()])
    }
}

/// What the environment asks for, validated, before any connection is made.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    Single,
    Launcher {
        path: PathBuf,
        rank: usize,
        size: usize,
        job: String,
    },
}

impl Plan {
    fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> io::Result<Plan> {
        let names = [env::BOOTSTRAP, env::RANK, env::SIZE, env::JOB];
        let present: Vec<&str> = names.into_iter().filter(|n| get(n).is_some()).collect();
        if present.is_empty() {
            return Ok(Plan::Single);
        }
        let Some(path) = get(env::BOOTSTRAP) else {
            return Err(bad(format!(
                "{} is set but {} is not: start the program with goalrun, \
                 or unset the GOAL_ variables to run it as a group of one",
                present.join(" and "),
                env::BOOTSTRAP
            )));
        };
        if path.is_empty() {
            return Err(bad(format!("{} is set but empty", env::BOOTSTRAP)));
        }
        let text = |name: &str| -> io::Result<String> {
            let Some(value) = get(name) else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} is set but {name} is not", env::BOOTSTRAP),
                ));
            };
            value.into_string().map_err(|v| {
                bad(format!(
                    "{name}='{}' is not valid UTF-8",
                    v.to_string_lossy()
                ))
            })
        };
        let number = |name: &str| -> io::Result<usize> {
            let value = text(name)?;
            value
                .trim()
                .parse::<usize>()
                .map_err(|e| bad(format!("{name}='{value}' is not a count: {e}")))
        };
        let rank = number(env::RANK)?;
        let size = number(env::SIZE)?;
        if size == 0 {
            return Err(bad(format!(
                "{}='0': a job has at least one rank",
                env::SIZE
            )));
        }
        if rank >= size {
            return Err(bad(format!(
                "{}='{rank}' is out of range for {}='{size}'",
                env::RANK,
                env::SIZE
            )));
        }
        let job = text(env::JOB)?;
        if job.is_empty() {
            return Err(bad(format!("{} is set but empty", env::JOB)));
        }
        Ok(Plan::Launcher {
            path: PathBuf::from(path),
            rank,
            size,
            job,
        })
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn plan(vars: &[(&str, &str)]) -> io::Result<Plan> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Plan::from_lookup(|name| map.get(name).cloned())
    }

    const FULL: [(&str, &str); 4] = [
        ("GOAL_BOOTSTRAP", "/tmp/x/boot.sock"),
        ("GOAL_RANK", "2"),
        ("GOAL_SIZE", "3"),
        ("GOAL_JOB", "42-1"),
    ];

    #[test]
    fn no_variables_is_a_group_of_one() {
        assert_eq!(plan(&[]).unwrap(), Plan::Single);
        // GOAL_PROGRESS is for the runtime, not the bootstrap.
        assert_eq!(plan(&[("GOAL_PROGRESS", "spin")]).unwrap(), Plan::Single);
    }

    #[test]
    fn all_variables_give_a_launcher_client() {
        assert_eq!(
            plan(&FULL).unwrap(),
            Plan::Launcher {
                path: "/tmp/x/boot.sock".into(),
                rank: 2,
                size: 3,
                job: "42-1".into()
            }
        );
    }

    fn error_with(vars: &[(&str, &str)]) -> String {
        plan(vars).unwrap_err().to_string()
    }

    #[test]
    fn garbled_variables_are_named_with_their_value() {
        let mut vars = FULL;
        vars[1] = ("GOAL_RANK", "two");
        let e = error_with(&vars);
        assert!(e.contains("GOAL_RANK='two'"), "{e}");

        vars[1] = ("GOAL_RANK", "3");
        let e = error_with(&vars);
        assert!(
            e.contains("GOAL_RANK='3'") && e.contains("GOAL_SIZE='3'"),
            "{e}"
        );

        let mut vars = FULL;
        vars[2] = ("GOAL_SIZE", "0");
        assert!(error_with(&vars).contains("GOAL_SIZE='0'"));
    }

    #[test]
    fn missing_variables_are_named() {
        let e = error_with(&FULL[..3]);
        assert!(e.contains("GOAL_JOB"), "{e}");
        let e = error_with(&FULL[1..]);
        assert!(e.contains("GOAL_BOOTSTRAP is not"), "{e}");
    }

    #[test]
    fn single_gathers_its_own_blob() {
        let mut s = Single::new();
        assert_eq!((s.rank(), s.size()), (0, 1));
        assert!(s.job_id().starts_with("single-"));
        assert_eq!(s.allgather(b"abc").unwrap(), vec![b"abc".to_vec()]);
    }
}
