//! goal-boot: how a rank finds its group.
//!
//! In the layer picture of `docs/design.md` it runs at start-up only:
//! goal-rt's `init` calls it before any transport exists, goalrun (goal-cli)
//! serves its Unix socket ([`server`]), and its handshakes use goal-auth.
//!
//! A bootstrap answers four questions before any transport exists: which
//! rank am I, how many are we, what secret do we share, and, collectively,
//! what did everyone say (`allgather` of small blobs, typically transport
//! addresses). The runtime sees only the [`Bootstrap`] trait; [`from_env`]
//! recognises the launcher from the process environment and picks the
//! implementation, so a program runs unchanged under goalrun, Open MPI's
//! `mpirun`, MPICH's `mpiexec` (hydra), Slurm's `srun`, or a script that
//! starts the ranks itself on several hosts.
//!
//! | launcher                         | rank and size from                | exchange through                         |
//! |----------------------------------|-----------------------------------|------------------------------------------|
//! | `goalrun`                        | `GOAL_RANK`, `GOAL_SIZE`          | goalrun's Unix socket ([`UnixClient`])   |
//! | Open MPI `mpirun`, `prterun`     | PMIx (`PMIX_RANK`, job size)      | PMIx, libpmix loaded with `dlopen`       |
//! | `srun --mpi=pmix`                | PMIx                              | PMIx                                     |
//! | MPICH `mpiexec` (hydra)          | `PMI_RANK`, `PMI_SIZE` (or PMI_ID) | the PMI-1 wire protocol on `PMI_FD` / `PMI_PORT` |
//! | `srun --mpi=pmi2`                | `PMI_RANK`, `PMI_SIZE`            | PMI-1 (Slurm's PMI-2 plugin answers it)  |
//! | `srun` without PMI, torchrun, ssh | `SLURM_PROCID`/`SLURM_NTASKS`, `GOAL_RANK`/`GOAL_SIZE`, ... | goal's TCP store served by rank 0 (`GOAL_STORE`) |
//! | none                             | a group of one ([`Single`])       | nothing to exchange                      |
//! | an MPI library (`libgoal-mpi`)   | the host's `MPI_Comm_rank`/`size` | the host's allgather ([`with_host_allgather`]), never its PMI |
//!
//! # Environment
//!
//! ## Which launcher: the precedence
//!
//! [`from_env`] takes the first of these that the environment shows
//! (`GOAL_BOOT` overrides the choice, see below):
//!
//! 1. `GOAL_BOOTSTRAP`: goalrun.
//! 2. `OMPI_COMM_WORLD_RANK`: Open MPI's mpirun, through its PMIx server.
//!    First among the foreign launchers because Open MPI sets it only for
//!    the ranks it starts itself, so it marks the innermost launcher even
//!    when mpirun runs inside a Slurm step.
//! 3. `PMI_FD` or `PMI_PORT`: a PMI-1 server (hydra, `srun --mpi=pmi2`).
//!    Before PMIx's variables because hydra started inside a Slurm step that
//!    has PMIx passes the step's `PMIX_` variables on to its ranks, while
//!    the PMI socket is hydra's own.
//! 4. `PMIX_RANK` or `PMIX_NAMESPACE`: a PMIx server (`srun --mpi=pmix`,
//!    `prterun`). If libpmix cannot be loaded, goal's store is used instead
//!    when one is configured (5); otherwise that is an error saying so.
//! 5. `GOAL_STORE`, or `MASTER_ADDR` with `MASTER_PORT`: goal's TCP store
//!    (torchrun's variables: at `MASTER_PORT + 1`, see the table below).
//!    The rank and size come from the first pair that is set, in this
//!    order: `GOAL_RANK`/`GOAL_SIZE`, `OMPI_COMM_WORLD_RANK`/`_SIZE`,
//!    `PMI_RANK`/`PMI_SIZE`, `SLURM_PROCID`/`SLURM_NTASKS` (or
//!    `SLURM_NPROCS`), torchrun's `RANK`/`WORLD_SIZE`.
//! 6. A launcher's rank and size (`PMI_RANK`, `SLURM_PROCID`, or the `GOAL_`
//!    variables) with none of the above: an error that says what is missing
//!    and how to fix it, unless the size is 1 (a group of one).
//! 7. None of these: a group of one ([`Single`]).
//!
//! A half-set environment is an error that names the missing variable, never
//! a silent group of one (which would hide a broken launch): a rank without
//! its size, `PMIX_RANK` without `PMIX_NAMESPACE` or without any
//! `PMIX_SERVER_URI*`, `PMI_FD` without `PMI_RANK`, `MASTER_ADDR` without
//! `MASTER_PORT`, a store address with no rank. A value that is present but
//! garbled is named with its value.
//!
//! ## Variables
//!
//! | variable               | meaning                                                           |
//! |------------------------|-------------------------------------------------------------------|
//! | `GOAL_BOOTSTRAP`       | path of goalrun's Unix stream socket                              |
//! | `GOAL_RANK`            | this rank, `0..GOAL_SIZE` (goalrun, or by hand with a store)      |
//! | `GOAL_SIZE`            | number of ranks, at least 1                                       |
//! | `GOAL_JOB`             | job identifier, the same on every rank                            |
//! | `GOAL_STORE`           | `host:port` of goal's TCP store: rank 0's host and a free port    |
//! | `MASTER_ADDR`, `MASTER_PORT` | torchrun's way (`GOAL_STORE` wins): the store is at `MASTER_ADDR`, port `MASTER_PORT` + `GOAL_MASTER_PORT_OFFSET`, since torch's own store has `MASTER_PORT` |
//! | `GOAL_MASTER_PORT_OFFSET` | how far above `MASTER_PORT` goal's store listens (default 1, at least 1) |
//! | `GOAL_STORE_TIMEOUT`   | seconds a rank keeps trying to reach the store, and rank 0 waits for all to join (default 30) |
//! | `GOAL_SECRET`          | the job secret, 64 hex digits; required with the store            |
//! | `GOAL_BOOT`            | `auto` (default), or force `single`, `goalrun`, `pmix`, `pmi`, `store` |
//! | `GOAL_PMIX_LIBRARY`    | the libpmix to load (default `libpmix.so.2`)                      |
//!
//! and, read but set by the launchers: `OMPI_COMM_WORLD_RANK`/`_SIZE`,
//! `PMIX_RANK`, `PMIX_NAMESPACE`, `PMIX_SERVER_URI*`, `PMI_FD`, `PMI_PORT`,
//! `PMI_ID`, `PMI_RANK`, `PMI_SIZE`, `SLURM_PROCID`, `SLURM_NTASKS`,
//! `SLURM_NPROCS`, `SLURM_JOB_ID`, `SLURM_STEP_ID`, `RANK`, `WORLD_SIZE`.
//!
//! ## The job secret
//!
//! [`Bootstrap::secret`] is 32 bytes every rank of the job knows and nobody
//! else should, for authenticating transport connections. `GOAL_SECRET`, if
//! set, is it (every rank must have the same). Otherwise the launcher's own
//! private channel carries one:
//!
//! | launcher | where the secret comes from                                                  |
//! |----------|------------------------------------------------------------------------------|
//! | goalrun  | its server makes one per job (getrandom) and hands it out in the HELLO reply; the socket sits in a directory only the user can enter |
//! | PMIx     | rank 0 makes one and puts it into the job's PMIx key-value space, readable only by clients the launcher's server admitted |
//! | PMI-1    | the same through the PMI key-value space, reachable only through the sockets the launcher handed its ranks |
//! | store    | `GOAL_SECRET` is required: the store is reachable by anyone on the network, so it never hands out a secret; it uses `GOAL_SECRET` to authenticate each connection both ways instead |
//! | single   | random, private to the process                                               |
//!
//! Under PMIx and PMI-1 a rank that has `GOAL_SECRET` checks it against rank
//! 0's and fails if they differ.
//!
//! ## Host identity
//!
//! [`host_id`] names this machine (host name and boot id), so that the
//! runtime can tell which peers share memory with it: exchange it with
//! `allgather` and compare.
//!
//! # Wire protocol (goalrun's socket and the store)
//!
//! All integers are `u32` little-endian; a "string" is a `u32` length followed
//! by that many bytes. One connection per rank, for the life of the job.
//!
//! ```text
//! TCP store only, first (see `store`):
//! server -> client  CHALLENGE "GOAS" | server nonce (32 bytes)
//! client -> server  client nonce (32) | HMAC-SHA256(secret, "...client" | nonces) (32)
//! server -> client  status = 0 | HMAC-SHA256(secret, "...server" | nonces) (32)
//!                or status = 1 (rejected) | message string, then close
//!
//! client -> server  HELLO   "GOAL" | version = 2 | rank | size | pid      (20 bytes)
//! server -> client  status = 0 | secret (32 bytes; zeros over TCP)     (admitted)
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
//! process died); and if the server's process dies, the kernel closes the
//! socket. Either way the client's read returns at once with an error. Blobs
//! over 1 MiB ([`MAX_BLOB`]) are refused by the client before anything is
//! sent, and by the server (which then aborts the job) if sent anyway.
//! See [`server`] for the server's design.

#![deny(missing_docs)]

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

pub mod client;
mod conn;
pub mod cpulist;
mod detect;
mod host;
mod pmi;
mod pmix;
mod rounds;
mod secret;
pub mod server;
mod store;
mod sys;
mod wire;

pub use client::UnixClient;
pub use host::{with_host_allgather, HostAllgather};
pub use secret::SECRET_LEN;
pub use wire::MAX_BLOB;

use detect::{Env, Launch, Plan};
use secret::Secret;

/// Names of the environment variables goal sets or reads for the bootstrap.
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
    /// The job secret as 64 hex digits; overrides the launcher's.
    pub const SECRET: &str = "GOAL_SECRET";
    /// `host:port` of goal's TCP store, served by rank 0.
    pub const STORE: &str = "GOAL_STORE";
    /// How far above torchrun's `MASTER_PORT` goal's store listens (default 1).
    pub const MASTER_PORT_OFFSET: &str = "GOAL_MASTER_PORT_OFFSET";
    /// Seconds a rank keeps trying to reach the store.
    pub const STORE_TIMEOUT: &str = "GOAL_STORE_TIMEOUT";
    /// Forces a bootstrap: `auto`, `single`, `goalrun`, `pmix`, `pmi`, `store`.
    pub const BOOT: &str = "GOAL_BOOT";
}

/// What the runtime needs from a launcher: who am I, how many are we, what
/// secret do we share, and a collective exchange of small address blobs.
pub trait Bootstrap: Send {
    /// This process' rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks in the group.
    fn size(&self) -> usize;
    /// A job identifier, the same on every rank of the job.
    fn job_id(&self) -> String;
    /// Collective: every rank contributes `mine`; returns every rank's blob, indexed by rank.
    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>>;

    /// The job secret: the same 32 bytes on every rank, known to no one
    /// outside the job, for authenticating transport connections.
    ///
    /// Every bootstrap in this crate overrides it (see the crate
    /// documentation for where each gets it). The default, for other
    /// implementations, is derived from [`Bootstrap::job_id`]: it keeps
    /// jobs apart, but anyone who knows the job id can compute it.
    fn secret(&self) -> [u8; SECRET_LEN] {
        secret::derived_from_job(&self.job_id())
    }

    /// Which mechanism this is, for diagnostics: `"goalrun"`, `"pmix"`,
    /// `"pmi"`, `"store"` or `"single"` in this crate.
    fn kind(&self) -> &'static str {
        "custom"
    }
}

/// The bootstrap for this process, from its environment. The precedence of
/// launchers and the variables are in the crate documentation.
///
/// Under PMIx and PMI-1 this is collective (the ranks agree on the secret
/// in a fence), like every later `allgather`.
pub fn from_env() -> io::Result<Box<dyn Bootstrap>> {
    let plan = Plan::from_env(&Env::from_process())?;
    start(plan)
}

/// Who launched this process and which rank it is, as far as the
/// environment says without connecting to anything (for diagnostics such
/// as `goal info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchInfo {
    /// The bootstrap the environment asks for: `"goalrun"`, `"pmix"`,
    /// `"pmi"`, `"store"` or `"single"` (as [`Bootstrap::kind`] names them).
    pub launcher: &'static str,
    /// This rank, where the environment says (PMIx and PMI-1 with `PMI_ID`
    /// leave it to their server).
    pub rank: Option<usize>,
    /// The number of ranks, where the environment says.
    pub size: Option<usize>,
}

/// This process' [`LaunchInfo`], from its environment; an error names a
/// half-set or garbled variable, as [`from_env`]'s would.
pub fn launch_info() -> io::Result<LaunchInfo> {
    let plan = Plan::from_env(&Env::from_process())?;
    let (launcher, rank, size) = match plan.launch {
        Launch::Single => ("single", Some(0), Some(1)),
        Launch::Goalrun { rank, size, .. } => ("goalrun", Some(rank), Some(size)),
        Launch::Pmix { rank, .. } => ("pmix", Some(rank), None),
        Launch::Pmi { identity, .. } => ("pmi", identity.map(|i| i.0), identity.map(|i| i.1)),
        Launch::Store(p) => ("store", Some(p.rank), Some(p.size)),
    };
    Ok(LaunchInfo { launcher, rank, size })
}

/// Carries out a plan: connects to whatever it names.
fn start(plan: Plan) -> io::Result<Box<dyn Bootstrap>> {
    let secret = plan.secret;
    match plan.launch {
        Launch::Single => Ok(Box::new(Single::with_secret(secret))),
        Launch::Goalrun {
            path,
            rank,
            size,
            job,
        } => {
            let mut client = UnixClient::connect(&path, rank, size, job)?;
            if let Some(s) = secret {
                client.set_secret(s);
            }
            Ok(Box::new(client))
        }
        Launch::Pmix {
            rank,
            namespace,
            fallback,
        } => match (pmix::load(), fallback) {
            (Ok(api), _) => Ok(Box::new(pmix::PmixClient::connect(
                api, rank, &namespace, secret,
            )?)),
            (Err(_), Some(Ok(store))) => store_client(&store, secret),
            (Err(why), Some(Err(store_error))) => Err(io::Error::other(format!(
                "PMIX_RANK is set (a PMIx launcher) but {why}; and the goal store \
                 configured as the fallback is unusable: {store_error}"
            ))),
            (Err(why), None) => Err(io::Error::other(format!(
                "PMIX_RANK is set (a PMIx launcher: Open MPI's mpirun, srun --mpi=pmix) but {why}. \
                 Install libpmix2 (Debian's package) or name the library in {}, or set \
                 GOAL_STORE=host:port and GOAL_SECRET for goal's TCP store",
                pmix::LIBRARY_VAR
            ))),
        },
        Launch::Pmi { conn, identity } => {
            Ok(Box::new(pmi::PmiClient::connect(&conn, identity, secret)?))
        }
        Launch::Store(store) => store_client(&store, secret),
    }
}

fn store_client(
    plan: &detect::StorePlan,
    secret: Option<Secret>,
) -> io::Result<Box<dyn Bootstrap>> {
    if plan.size == 1 {
        // Nothing to exchange, nobody to authenticate: no server, no port.
        let mut single = Single::with_secret(secret);
        single.job = plan.job.clone();
        return Ok(Box::new(single));
    }
    Ok(Box::new(store::StoreClient::connect(plan, secret)?))
}

/// This machine's identity: the host name and the kernel's boot id
/// (`/proc/sys/kernel/random/boot_id`), as `"host/boot-id"`.
///
/// Ranks with the same `host_id` run on the same machine (the boot id tells
/// apart two machines that share a name, and a machine from itself before a
/// reboot). Containers of one host share its boot id but not, as a rule, its
/// host name or shared memory, and are told apart. If the boot id cannot be
/// read, the host name alone.
pub fn host_id() -> String {
    let host = sys::hostname()
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "localhost".to_owned());
    match std::fs::read_to_string("/proc/sys/kernel/random/boot_id") {
        Ok(boot) if !boot.trim().is_empty() => format!("{host}/{}", boot.trim()),
        _ => host,
    }
}

/// A group of one: a process started without a launcher.
#[derive(Debug, Clone)]
pub struct Single {
    job: String,
    secret: Secret,
}

impl Single {
    /// A group of one with a job id made of the pid and the time, and a
    /// random secret.
    pub fn new() -> Single {
        Single::with_secret(None)
    }

    fn with_secret(secret: Option<Secret>) -> Single {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let job = format!("single-{}-{nanos}", std::process::id());
        let secret = secret
            .or_else(|| Secret::random().ok())
            .unwrap_or_else(|| Secret(secret::derived_from_job(&job)));
        Single { job, secret }
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
        rounds::check_blob(mine)?;
        Ok(vec![mine.to_vec()])
    }

    /// `GOAL_SECRET` if set, else random: there is nobody to share it with.
    fn secret(&self) -> [u8; SECRET_LEN] {
        self.secret.0
    }

    fn kind(&self) -> &'static str {
        "single"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_gathers_its_own_blob() {
        let mut s = Single::new();
        assert_eq!((s.rank(), s.size()), (0, 1));
        assert!(s.job_id().starts_with("single-"));
        assert_eq!(s.allgather(b"abc").unwrap(), vec![b"abc".to_vec()]);
        assert_ne!(
            s.secret(),
            Single::new().secret(),
            "each group of one has its own secret"
        );
        assert_eq!(s.kind(), "single");
    }

    #[test]
    fn host_id_is_stable_and_names_the_host() {
        let id = host_id();
        assert_eq!(id, host_id());
        assert!(id.starts_with(&sys::hostname().unwrap()), "{id}");
        if std::path::Path::new("/proc/sys/kernel/random/boot_id").exists() {
            assert!(id.contains('/'), "{id}");
        }
    }

    #[test]
    fn the_default_secret_is_derived_from_the_job_id() {
        struct Custom;
        impl Bootstrap for Custom {
            fn rank(&self) -> usize {
                0
            }
            fn size(&self) -> usize {
                1
            }
            fn job_id(&self) -> String {
                "job-7".into()
            }
            fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
                Ok(vec![mine.to_vec()])
            }
        }
        assert_eq!(Custom.secret(), Custom.secret());
        assert_ne!(Custom.secret(), [0; SECRET_LEN]);
        assert_eq!(Custom.kind(), "custom");
    }
}
