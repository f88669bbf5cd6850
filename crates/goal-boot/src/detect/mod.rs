//! Reading the environment into a [`Plan`]: which launcher started this
//! process, what it says our rank and size are, and how addresses will be
//! exchanged.
//!
//! Kept apart from the clients and free of I/O (it only reads variables) so
//! that every launcher's environment, and every broken one, is a unit test:
//! the clients then never guess, they carry out a plan. The precedence and
//! the variables are documented in the crate documentation; this module is
//! where they are decided, in [`Plan::from_env`] and [`auto`].
//!
//! Two rules shape the errors. A half-set environment (a launcher's rank
//! without its size, `MASTER_ADDR` without `MASTER_PORT`, PMIx's rank without
//! its namespace) is an error naming the variable that is missing, never a
//! silent group of one: that would hide a broken launch until ranks wait on
//! each other forever. And a value that is present but garbled is named
//! together with its value (except `GOAL_SECRET`'s, which is never shown).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::env;
use crate::secret::Secret;

/// How far above `MASTER_PORT` goal's store listens when
/// `GOAL_MASTER_PORT_OFFSET` is unset (torch's store has `MASTER_PORT`).
pub(crate) const DEFAULT_MASTER_PORT_OFFSET: usize = 1;

/// How long ranks wait for the store when `GOAL_STORE_TIMEOUT` is unset.
pub(crate) const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// The process environment, or a test's stand-in for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Env {
    vars: HashMap<String, OsString>,
}

impl Env {
    /// A snapshot of this process' environment (names that are not UTF-8
    /// cannot be any of ours and are left out).
    pub(crate) fn from_process() -> Env {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| k.into_string().ok().map(|k| (k, v)))
                .collect(),
        }
    }

    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &[(&str, &str)]) -> Env {
        Env {
            vars: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), OsString::from(v)))
                .collect(),
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// The variable as text; not UTF-8 is an error that names it.
    pub(crate) fn text(&self, name: &str) -> io::Result<Option<String>> {
        match self.vars.get(name) {
            None => Ok(None),
            Some(v) => v.clone().into_string().map(Some).map_err(|v| {
                bad(format!(
                    "{name}='{}' is not valid UTF-8",
                    v.to_string_lossy()
                ))
            }),
        }
    }

    /// The variable as a number; garbled is an error naming it and its value.
    pub(crate) fn number(&self, name: &str) -> io::Result<Option<usize>> {
        let Some(value) = self.text(name)? else {
            return Ok(None);
        };
        value
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|e| bad(format!("{name}='{value}' is not a count: {e}")))
    }

    /// The first of `names` that is set, with its name.
    fn first_text(&self, names: &[&'static str]) -> io::Result<Option<(&'static str, String)>> {
        for &name in names {
            if let Some(v) = self.text(name)? {
                return Ok(Some((name, v)));
            }
        }
        Ok(None)
    }

    /// Names of the set variables that start with `prefix`, sorted.
    fn with_prefix(&self, prefix: &str) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .vars
            .keys()
            .map(String::as_str)
            .filter(|k| k.starts_with(prefix))
            .collect();
        names.sort_unstable();
        names
    }
}

/// What the environment asks for, validated, before any connection is made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) launch: Launch,
    /// `GOAL_SECRET`, parsed, if set.
    pub(crate) secret: Option<Secret>,
}

/// Who launched us and how the ranks will find each other.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// No launcher, or one that started a single process.
    Single,
    /// goalrun: its Unix socket.
    Goalrun {
        path: PathBuf,
        rank: usize,
        size: usize,
        job: String,
    },
    /// A PMIx server (Open MPI's mpirun, srun --mpi=pmix, prterun), through
    /// libpmix loaded at run time. The size comes from the server.
    Pmix {
        rank: usize,
        namespace: String,
        /// What to do if libpmix cannot be loaded: `None` if no store is
        /// configured, else the store plan or why it could not be made.
        fallback: Option<Result<StorePlan, String>>,
    },
    /// A PMI-1 server (MPICH's hydra, srun --mpi=pmi2).
    Pmi {
        conn: PmiConn,
        /// Rank and size from `PMI_RANK`/`PMI_SIZE`; `None` in `PMI_PORT`
        /// mode with `PMI_ID`, where the server tells them.
        identity: Option<(usize, usize)>,
    },
    /// goal's TCP store, served by rank 0.
    Store(StorePlan),
}

/// Where the PMI-1 server is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PmiConn {
    /// An inherited socket (`PMI_FD`).
    Fd(i32),
    /// A TCP address (`PMI_PORT`, "host:port"), and our id (`PMI_ID`).
    Port { addr: String, id: Option<usize> },
}

/// Everything the TCP store needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StorePlan {
    /// "host:port", as given.
    pub(crate) addr: String,
    /// Where the address came from, for messages: `GOAL_STORE='h:p'`.
    pub(crate) origin: String,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Which variables gave the rank and size, for messages.
    pub(crate) identity_from: String,
    pub(crate) job: String,
    /// How long to keep trying to reach rank 0's store.
    pub(crate) timeout: Duration,
}

/// A launcher's pair of rank and size variables.
struct IdentityVars {
    rank: &'static str,
    /// Accepted names of the size, the preferred first.
    size: &'static [&'static str],
    launcher: &'static str,
}

const GOAL_IDENTITY: IdentityVars = IdentityVars {
    rank: env::RANK,
    size: &[env::SIZE],
    launcher: "goalrun or by hand",
};
const OMPI_IDENTITY: IdentityVars = IdentityVars {
    rank: "OMPI_COMM_WORLD_RANK",
    size: &["OMPI_COMM_WORLD_SIZE"],
    launcher: "Open MPI's mpirun",
};
const PMI_IDENTITY: IdentityVars = IdentityVars {
    rank: "PMI_RANK",
    size: &["PMI_SIZE"],
    launcher: "a PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)",
};
const SLURM_IDENTITY: IdentityVars = IdentityVars {
    rank: "SLURM_PROCID",
    size: &["SLURM_NTASKS", "SLURM_NPROCS"],
    launcher: "Slurm's srun",
};
const TORCH_IDENTITY: IdentityVars = IdentityVars {
    rank: "RANK",
    size: &["WORLD_SIZE"],
    launcher: "torchrun",
};

/// Rank and size as some launcher gave them.
#[derive(Debug, Clone, Copy)]
struct Identity {
    rank: usize,
    size: usize,
    rank_var: &'static str,
    size_var: &'static str,
    launcher: &'static str,
}

impl Identity {
    fn vars(&self) -> String {
        format!("{}/{}", self.rank_var, self.size_var)
    }
}

/// Reads one launcher's rank and size. Neither set is `None`; one without
/// the other, a garbled number, a size of 0 or a rank out of range is an
/// error that names the variables.
fn identity(env: &Env, vars: &IdentityVars) -> io::Result<Option<Identity>> {
    let size_var = vars
        .size
        .iter()
        .copied()
        .find(|n| env.has(n))
        .unwrap_or(vars.size[0]);
    let (rank, size) = (env.number(vars.rank)?, env.number(size_var)?);
    let (rank, size) = match (rank, size) {
        (None, None) => return Ok(None),
        (Some(r), Some(s)) => (r, s),
        (Some(_), None) => {
            return Err(bad(format!(
                "{} is set (by {}) but {} is not",
                vars.rank,
                vars.launcher,
                vars.size.join(" or ")
            )))
        }
        (None, Some(_)) => {
            return Err(bad(format!(
                "{size_var} is set (by {}) but {} is not",
                vars.launcher, vars.rank
            )))
        }
    };
    if size == 0 {
        return Err(bad(format!("{size_var}='0': a job has at least one rank")));
    }
    if rank >= size {
        return Err(bad(format!(
            "{}='{rank}' is out of range for {size_var}='{size}'",
            vars.rank
        )));
    }
    Ok(Some(Identity {
        rank,
        size,
        rank_var: vars.rank,
        size_var,
        launcher: vars.launcher,
    }))
}

/// The first launcher identity present, in the order a store plan trusts
/// them: set by hand, Open MPI, PMI, Slurm, and torchrun's generic names.
fn store_identity(env: &Env) -> io::Result<Option<Identity>> {
    for vars in [
        &GOAL_IDENTITY,
        &OMPI_IDENTITY,
        &PMI_IDENTITY,
        &SLURM_IDENTITY,
        &TORCH_IDENTITY,
    ] {
        if let Some(id) = identity(env, vars)? {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

impl Plan {
    /// The plan for `env`. See the crate documentation for the precedence.
    pub(crate) fn from_env(env: &Env) -> io::Result<Plan> {
        let secret = match env.text(env::SECRET)? {
            Some(text) => Some(Secret::from_hex(&text, env::SECRET)?),
            None => None,
        };
        let forced = env.text(env::BOOT)?;
        let launch = match forced.as_deref().map(str::trim) {
            None | Some("") | Some("auto") => auto(env)?,
            Some("single") => Launch::Single,
            Some(name @ ("goalrun" | "pmix" | "pmi" | "store")) => {
                let found = match name {
                    "goalrun" => goalrun(env)?,
                    "pmix" => pmix(env, false)?,
                    "pmi" => pmi(env)?,
                    _ => Some(Launch::Store(store(env)?.ok_or_else(|| {
                        bad(format!(
                            "{}=store but neither {} nor MASTER_ADDR is set",
                            env::BOOT,
                            env::STORE
                        ))
                    })?)),
                };
                found.ok_or_else(|| {
                    let needs = match name {
                        "goalrun" => env::BOOTSTRAP,
                        "pmix" => "PMIX_RANK",
                        _ => "PMI_FD or PMI_PORT",
                    };
                    bad(format!("{}={name} but {needs} is not set", env::BOOT))
                })?
            }
            Some(other) => {
                return Err(bad(format!(
                    "{}='{other}' is not one of auto, single, goalrun, pmix, pmi, store",
                    env::BOOT
                )))
            }
        };
        Ok(Plan { launch, secret })
    }
}

/// The precedence, first match wins:
///
/// 1. `GOAL_BOOTSTRAP`: goalrun.
/// 2. `OMPI_COMM_WORLD_RANK`: Open MPI's mpirun, through its PMIx server.
///    First because Open MPI sets it only for the ranks it starts itself,
///    so it marks the innermost launcher even inside a Slurm step.
/// 3. `PMI_FD` or `PMI_PORT`: a PMI-1 server (MPICH's hydra, srun
///    --mpi=pmi2). Before PMIx's variables because hydra run inside a Slurm
///    step started with --mpi=pmix passes the step's PMIX_ variables on to
///    its ranks, while the PMI socket is its own.
/// 4. `PMIX_RANK` or `PMIX_NAMESPACE`: a PMIx server (srun --mpi=pmix, prterun).
/// 5. `GOAL_STORE`, or `MASTER_ADDR` and `MASTER_PORT`: goal's TCP store.
/// 6. A launcher's rank and size with no way to exchange addresses: an
///    error if the size is over 1, a group of one otherwise.
/// 7. Nothing: a group of one.
fn auto(env: &Env) -> io::Result<Launch> {
    if let Some(launch) = goalrun(env)? {
        return Ok(launch);
    }
    if env.has(OMPI_IDENTITY.rank) {
        if let Some(launch) = pmix(env, true)? {
            return Ok(launch);
        }
        if let Some(plan) = store(env)? {
            return Ok(Launch::Store(plan));
        }
        return Err(bad(format!(
            "{} is set (by Open MPI's mpirun) but PMIX_RANK is not: this Open MPI \
             offers no PMIx server to exchange addresses through; {}",
            OMPI_IDENTITY.rank, STORE_HINT
        )));
    }
    if let Some(launch) = pmi(env)? {
        return Ok(launch);
    }
    if let Some(launch) = pmix(env, true)? {
        return Ok(launch);
    }
    if let Some(plan) = store(env)? {
        return Ok(Launch::Store(plan));
    }
    let goal_vars: Vec<&str> = [env::RANK, env::SIZE, env::JOB]
        .into_iter()
        .filter(|n| env.has(n))
        .collect();
    if !goal_vars.is_empty() {
        return Err(bad(format!(
            "{} is set but {} is not: start the program with goalrun, set {} \
             for goal's TCP store, or unset the GOAL_ variables to run it as a group of one",
            goal_vars.join(" and "),
            env::BOOTSTRAP,
            env::STORE
        )));
    }
    for vars in [&PMI_IDENTITY, &SLURM_IDENTITY] {
        let Some(id) = identity(env, vars)? else {
            continue;
        };
        if id.size == 1 {
            return Ok(Launch::Single);
        }
        let why = if vars.rank == PMI_IDENTITY.rank {
            "neither PMI_FD nor PMI_PORT is, so there is no PMI server to exchange addresses through"
                .to_owned()
        } else {
            "this step has no PMI: run it with srun --mpi=pmix (or --mpi=pmi2)".to_owned()
        };
        return Err(bad(format!(
            "{}='{}' and {}='{}' are set (by {}) but {why}; {STORE_HINT}",
            id.rank_var, id.rank, id.size_var, id.size, id.launcher
        )));
    }
    Ok(Launch::Single)
}

const STORE_HINT: &str = "or set GOAL_STORE=host:port (rank 0's host and a free port) and \
     GOAL_SECRET (64 hex digits) for goal's TCP store";

/// goalrun's plan, if `GOAL_BOOTSTRAP` is set.
fn goalrun(env: &Env) -> io::Result<Option<Launch>> {
    let Some(path) = env.vars.get(env::BOOTSTRAP) else {
        return Ok(None);
    };
    if path.is_empty() {
        return Err(bad(format!("{} is set but empty", env::BOOTSTRAP)));
    }
    let Some(id) = identity(env, &GOAL_IDENTITY)
        .map_err(|e| io::Error::new(e.kind(), format!("{} is set, but: {e}", env::BOOTSTRAP)))?
    else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is set but {} is not", env::BOOTSTRAP, env::RANK),
        ));
    };
    let Some(job) = env.text(env::JOB)? else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is set but {} is not", env::BOOTSTRAP, env::JOB),
        ));
    };
    if job.is_empty() {
        return Err(bad(format!("{} is set but empty", env::JOB)));
    }
    Ok(Some(Launch::Goalrun {
        path: PathBuf::from(path),
        rank: id.rank,
        size: id.size,
        job,
    }))
}

/// The PMIx plan, if `PMIX_RANK` or `PMIX_NAMESPACE` is set. With
/// `with_fallback`, a configured store becomes the fallback for a missing
/// libpmix.
fn pmix(env: &Env, with_fallback: bool) -> io::Result<Option<Launch>> {
    let (rank, namespace) = (env.number("PMIX_RANK")?, env.text("PMIX_NAMESPACE")?);
    let (rank, namespace) = match (rank, namespace) {
        (None, None) => return Ok(None),
        (Some(r), Some(n)) if !n.is_empty() => (r, n),
        (Some(_), _) => return Err(bad("PMIX_RANK is set but PMIX_NAMESPACE is not".into())),
        (None, Some(_)) => return Err(bad("PMIX_NAMESPACE is set but PMIX_RANK is not".into())),
    };
    if env.with_prefix("PMIX_SERVER_URI").is_empty() {
        return Err(bad(format!(
            "PMIX_RANK='{rank}' and PMIX_NAMESPACE='{namespace}' are set but no \
             PMIX_SERVER_URI variable is, so the PMIx server cannot be found"
        )));
    }
    let fallback = if with_fallback {
        match store(env) {
            Ok(None) => None,
            Ok(Some(plan)) => Some(Ok(plan)),
            Err(e) => Some(Err(e.to_string())),
        }
    } else {
        None
    };
    Ok(Some(Launch::Pmix {
        rank,
        namespace,
        fallback,
    }))
}

/// The PMI-1 plan, if `PMI_FD` or `PMI_PORT` is set (`PMI_FD` wins, as in
/// MPICH's own client).
fn pmi(env: &Env) -> io::Result<Option<Launch>> {
    let conn = if let Some(fd) = env.text("PMI_FD")? {
        match fd.trim().parse::<i32>() {
            Ok(n) if n >= 0 => PmiConn::Fd(n),
            _ => {
                return Err(bad(format!(
                    "PMI_FD='{fd}' is not a file descriptor number"
                )))
            }
        }
    } else if let Some(addr) = env.text("PMI_PORT")? {
        check_host_port(&addr, "PMI_PORT")?;
        PmiConn::Port {
            addr,
            id: env.number("PMI_ID")?,
        }
    } else {
        return Ok(None);
    };
    let identity = match identity(env, &PMI_IDENTITY)? {
        Some(id) => Some((id.rank, id.size)),
        None if matches!(conn, PmiConn::Port { id: Some(_), .. }) => None,
        None => {
            let set = if matches!(conn, PmiConn::Fd(_)) {
                "PMI_FD"
            } else {
                "PMI_PORT"
            };
            return Err(bad(format!(
                "{set} is set but PMI_RANK is not{}",
                if set == "PMI_PORT" {
                    " (nor PMI_ID)"
                } else {
                    ""
                }
            )));
        }
    };
    Ok(Some(Launch::Pmi { conn, identity }))
}

/// The store plan, if `GOAL_STORE` or `MASTER_ADDR`/`MASTER_PORT` is set.
fn store(env: &Env) -> io::Result<Option<StorePlan>> {
    let (addr, origin) = if let Some(addr) = env.text(env::STORE)? {
        check_host_port(&addr, env::STORE)?;
        let origin = format!("{}='{addr}'", env::STORE);
        (addr, origin)
    } else {
        match (env.text("MASTER_ADDR")?, env.text("MASTER_PORT")?) {
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(bad("MASTER_ADDR is set but MASTER_PORT is not".into())),
            (None, Some(_)) => return Err(bad("MASTER_PORT is set but MASTER_ADDR is not".into())),
            (Some(host), Some(port)) => {
                // torch's own store (torchrun's agent, or rank 0 under
                // init_method="env://") listens on MASTER_PORT: goal's
                // listens beside it, GOAL_MASTER_PORT_OFFSET above.
                let offset = env.number(env::MASTER_PORT_OFFSET)?.unwrap_or(DEFAULT_MASTER_PORT_OFFSET);
                let ours = match port.trim().parse::<u16>() {
                    Ok(p) if p != 0 && offset > 0 && p as usize + offset <= u16::MAX as usize => p as usize + offset,
                    Ok(_) if offset == 0 => {
                        return Err(bad(format!("{}='0': goal's store cannot share MASTER_PORT with torch's", env::MASTER_PORT_OFFSET)))
                    }
                    _ => {
                        return Err(bad(format!(
                            "MASTER_PORT='{port}' plus {}={offset} is not a port (1 to 65535)",
                            env::MASTER_PORT_OFFSET
                        )))
                    }
                };
                let addr = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]:{ours}")
                } else {
                    format!("{host}:{ours}")
                };
                check_host_port(&addr, "MASTER_ADDR/MASTER_PORT")?;
                (
                    addr,
                    format!(
                        "MASTER_ADDR='{host}' and MASTER_PORT='{port}' (goal's store at MASTER_PORT + {offset}, \
                         {}; torch's has MASTER_PORT)",
                        env::MASTER_PORT_OFFSET
                    ),
                )
            }
        }
    };
    let Some(id) = store_identity(env)? else {
        return Err(bad(format!(
            "{origin} is set but nothing says this process' rank: set {} and {}, \
             or start it with srun or mpirun",
            env::RANK,
            env::SIZE
        )));
    };
    let timeout = match env.text(env::STORE_TIMEOUT)? {
        None => DEFAULT_STORE_TIMEOUT,
        Some(t) => match t.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
            _ => {
                return Err(bad(format!(
                    "{}='{t}' is not a positive number of seconds",
                    env::STORE_TIMEOUT
                )))
            }
        },
    };
    let job = if let Some(job) = env.text(env::JOB)?.filter(|j| !j.is_empty()) {
        job
    } else if let Some((_, job)) = env.first_text(&["SLURM_JOB_ID", "SLURM_JOBID"])? {
        match env.first_text(&["SLURM_STEP_ID", "SLURM_STEPID"])? {
            Some((_, step)) => format!("slurm-{job}.{step}"),
            None => format!("slurm-{job}"),
        }
    } else if let Some(job) = env.text("OMPI_MCA_ess_base_jobid")? {
        format!("ompi-{job}")
    } else if let Some(job) = env.text("TORCHELASTIC_RUN_ID")? {
        format!("torch-{job}")
    } else {
        format!("store-{addr}")
    };
    Ok(Some(StorePlan {
        addr,
        origin,
        rank: id.rank,
        size: id.size,
        identity_from: format!("{} ({})", id.vars(), id.launcher),
        job,
        timeout,
    }))
}

/// Checks the shape "host:port" (IPv6 hosts in brackets) with a port from
/// 1 to 65535; resolving the host is left to the connection.
fn check_host_port(addr: &str, name: &str) -> io::Result<()> {
    let shape = || {
        bad(format!(
            "{name}='{addr}' is not host:port (an IPv6 address goes in brackets: [::1]:29500)"
        ))
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(shape)?;
    let host_ok =
        !host.is_empty() && (!host.contains(':') || (host.starts_with('[') && host.ends_with(']')));
    match port.parse::<u16>() {
        Ok(p) if p != 0 && host_ok => Ok(()),
        _ => Err(shape()),
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

#[cfg(test)]
mod tests;
