//! Slurm across the emulated hosts: a private `slurmctld`, one `slurmd` per
//! host and a private `munged`, so that `srun` jobs run on the hosts of a
//! [`Cluster`] as they would on a real one.
//!
//! # Shape
//!
//! ```text
//!   host0 netns                         host1 netns ... hostN netns
//!   munged   (socket DIR/munge/socket)
//!   slurmctld (10.100.0.1:6817)
//!   slurmd -N host0 (:6818)             slurmd -N host1 (:6818)
//!   srun ...  ── launches ──>           slurmstepd -> tasks
//! ```
//!
//! [`Slurm::start`] writes a `slurm.conf` into `DIR` (the cluster's
//! [work directory](Cluster::workdir)`/slurm`) with one node per host:
//! `NodeName` is the host's hostname (`host0`, ...) and `NodeAddr` its rail-0
//! address, and `SlurmctldHost` is host 0 at its rail-0 address. Every daemon
//! runs in the foreground (`-D`, `-F`) as a child of this process, inside its
//! host's namespace with its hostname ([`Host::command`](crate::Host::command)),
//! and has its own files under `DIR`: state (`ctld/`), spool and job
//! temporary directory per node (`spool-hostN/`, `tmp-hostN/`: Slurm
//! expands `%n`), pid and log files (`log/`). `srun` ([`Slurm::srun`]) runs
//! on host 0 with `SLURM_CONF` pointing there; it cannot run anywhere else,
//! since only the cluster's namespaces reach the controller's address.
//!
//! The ports are Slurm's defaults, 6817 and 6818: a namespace has ports of
//! its own, so two clusters with Slurm at once, or a Slurm of the machine
//! itself, never collide. One Slurm per cluster at a time (the second
//! `start` fails: its directory exists).
//!
//! # Settings, and why
//!
//! Tested with Debian 12's Slurm 22.05 and munge 0.5.15 in a container,
//! everything as root:
//!
//! - **munge**: a `munged` of our own, with a fresh key and its socket in
//!   `DIR/munge/` (`AuthInfo=socket=...`), run as root with `--force`. A
//!   Unix socket in the file system is reachable from every network
//!   namespace, so all daemons and `srun` share it; it does not depend on,
//!   or disturb, a `munged` of the machine.
//! - **no cgroups**: `ProctrackType=proctrack/linuxproc`, `TaskPlugin=task/none`,
//!   `JobAcctGatherType=jobacct_gather/none`. `slurmd` still loads a cgroup
//!   plugin at start, and its autodetection fails inside a host: `ip netns
//!   exec` mounts a fresh `/sys` without `/sys/fs/cgroup`. `cgroup.conf`
//!   names `CgroupPlugin=cgroup/v1`, which loads without looking.
//! - **per-node `TmpFS`**: the PMIx plugin makes its directory
//!   `TmpFS/spmix_appdir_UID_JOB.STEP` on every node of a step. With one file
//!   system for all hosts, a shared `/tmp` makes all but the first node fail
//!   the step with "File exists"; `TmpFS=DIR/tmp-%n` separates them.
//! - `CPUs=16` per node with `SlurmdParameters=config_overrides`: every host
//!   sees the machine's cores, and a job's shape (`-N 4 -n 8
//!   --ntasks-per-node=2`) should not depend on how many there are.
//! - `SlurmUser=root`, a fresh controller state (`slurmctld -c`), no
//!   accounting, and `KillWait=2`: a cancelled step's tasks get 2 s between
//!   SIGTERM and SIGKILL, not 30.
//!
//! # Ending
//!
//! Dropping the [`Slurm`] value (also while a test unwinds from a panic), or
//! [`Slurm::stop`], sends SIGTERM to the slurmds, slurmctld and munged in
//! turn, each waited for at most [`STOP_GRACE`], then SIGKILLs every process
//! still carrying this Slurm's mark: daemons, `slurmscriptd`, `slurmstepd`s
//! and job tasks (all inherit the variable [`MARK`] from a daemon or from
//! `srun`). Then `DIR` goes. Were this process itself killed, every one of them runs
//! inside the cluster's namespaces, which [`gc`](crate::gc) empties.
//!
//! The value borrows the cluster, so it cannot outlive it. Every wait has a
//! deadline; a daemon that exits or does not answer in time is an error that
//! names it, its log file and the log's last lines.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};
use crate::{sys, Cluster};

/// The variable every daemon and every [`Slurm::srun`] job carries, set to
/// the Slurm's directory: what [`Slurm::stop`] recognises its processes by.
pub const MARK: &str = "GOAL_NETNS_SLURM";

/// How long `munged` and `slurmctld` may take to answer, and all `slurmd`s
/// to register and be idle.
pub const START_LIMIT: Duration = Duration::from_secs(30);

/// How long a `sinfo` asking whether Slurm is up may take.
const CLIENT_LIMIT: Duration = Duration::from_secs(10);

/// How long each kind of daemon (the slurmds, slurmctld, munged) gets to
/// end after SIGTERM before the next is told to, and in the end SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// CPUs each node offers (see the [module docs](self)).
const CPUS_PER_NODE: usize = 16;

/// How many lines of a daemon's log an error quotes.
const TAIL_LINES: usize = 15;

/// The programs this needs, found by absolute path.
#[derive(Debug)]
struct Tools {
    munged: PathBuf,
    slurmctld: PathBuf,
    slurmd: PathBuf,
    srun: PathBuf,
    sinfo: PathBuf,
}

fn tools() -> Result<Tools, String> {
    let find = |name: &str| {
        sys::find_tool(name).map_err(|why| {
            format!("{why}; Debian: apt-get install slurmd slurmctld slurm-client munge")
        })
    };
    Ok(Tools {
        munged: find("munged")?,
        slurmctld: find("slurmctld")?,
        slurmd: find("slurmd")?,
        srun: find("srun")?,
        sinfo: find("sinfo")?,
    })
}

/// Whether Slurm can be started on a cluster here; if not, why (a sentence
/// for a "skipped: ..." line): not root, or a program is missing.
pub fn available() -> Result<(), String> {
    if !sys::is_root() {
        return Err("not root (Slurm's daemons run as root here)".into());
    }
    tools().map(drop)
}

/// The daemons, in start order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Munged,
    Slurmctld,
    Slurmd,
}

impl Kind {
    fn program(self) -> &'static str {
        match self {
            Kind::Munged => "munged",
            Kind::Slurmctld => "slurmctld",
            Kind::Slurmd => "slurmd",
        }
    }
}

/// One daemon: what it is, its process, where its output goes.
#[derive(Debug)]
struct Daemon {
    kind: Kind,
    /// "slurmd on host2", for messages.
    what: String,
    child: Child,
    /// Its stdout and stderr (in the foreground, every daemon logs there too).
    out: PathBuf,
    /// Its own log file, if it has one besides (Slurm's daemons).
    log: Option<PathBuf>,
}

impl Daemon {
    /// Why it is not running any more, if it is not: the exit status, the
    /// log and its last lines.
    fn exited(&mut self) -> Option<Error> {
        let status = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(status)) => status.to_string(),
            Err(e) => format!("cannot be waited for ({e})"),
        };
        Some(Error::new(
            ErrorKind::Command,
            format!(
                "{} (pid {}) exited: {status}; {}",
                self.what,
                self.child.id(),
                self.logs()
            ),
        ))
    }

    /// "log: PATH; last lines of PATH: ...": the last lines of its own log
    /// file, or of its output while that log is empty or missing (errors
    /// before the log is open go to the output only).
    fn logs(&self) -> String {
        let mut s = String::new();
        if let Some(log) = &self.log {
            s += &format!("log: {}; ", log.display());
        }
        let own = self.log.as_deref().map(tail).unwrap_or_default();
        let (path, lines) = if own.is_empty() {
            (self.out.as_path(), tail(&self.out))
        } else {
            (self.log.as_deref().unwrap_or(&self.out), own)
        };
        if lines.is_empty() {
            s += &format!("{} is empty", path.display());
        } else {
            s += &format!("last lines of {}:\n{lines}", path.display());
        }
        s
    }
}

/// The last [`TAIL_LINES`] lines of a file, or "" if it cannot be read.
fn tail(path: &Path) -> String {
    let text = fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned());
    let text = text.unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// Slurm running on a [`Cluster`]; see the [module docs](self). Dropping it
/// stops every daemon and job and removes its files.
#[derive(Debug)]
pub struct Slurm<'c> {
    cluster: &'c Cluster,
    dir: PathBuf,
    conf: PathBuf,
    srun: PathBuf,
    sinfo: PathBuf,
    /// The daemons started, in order.
    daemons: Vec<Daemon>,
    /// Whether teardown ran already.
    stopped: bool,
}

impl<'c> Slurm<'c> {
    /// Starts munged, slurmctld and one slurmd per host of `cluster`, and
    /// waits (at most [`START_LIMIT`] per step) until every node is idle.
    /// On failure, whatever was started is stopped and removed again.
    pub fn start(cluster: &'c Cluster) -> Result<Slurm<'c>, Error> {
        if !sys::is_root() {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "not root (Slurm's daemons run as root here)",
            ));
        }
        let tools = tools().map_err(|why| Error::new(ErrorKind::Unavailable, why))?;
        let workdir = cluster.workdir();
        fs::create_dir_all(&workdir)
            .map_err(|e| Error::io(format_args!("creating {}", workdir.display()), e))?;
        let dir = workdir.join("slurm");
        // Made before the value exists: a second start on this cluster must
        // fail without its drop touching the first one's processes.
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!(
                        "Slurm runs on cluster {} already ({} exists)",
                        cluster.tag(),
                        dir.display()
                    ),
                ))
            }
            Err(e) => return Err(Error::io(format_args!("creating {}", dir.display()), e)),
        }
        let mut slurm = Slurm {
            cluster,
            conf: dir.join("slurm.conf"),
            dir,
            srun: tools.srun,
            sinfo: tools.sinfo,
            daemons: Vec::new(),
            stopped: false,
        };
        // From here on, `?` drops `slurm`, which stops what was started.
        slurm.write_files()?;
        slurm.start_munged(&tools.munged)?;
        slurm.start_slurmctld(&tools.slurmctld)?;
        for host in 0..cluster.hosts() {
            slurm.start_slurmd(&tools.slurmd, host)?;
        }
        slurm.wait_idle()?;
        Ok(slurm)
    }

    /// The directories, the munge key, `slurm.conf` and `cgroup.conf`.
    fn write_files(&self) -> Result<(), Error> {
        let mkdir = |path: PathBuf, mode: u32| {
            fs::DirBuilder::new()
                .mode(mode)
                .create(&path)
                .map_err(|e| Error::io(format_args!("creating {}", path.display()), e))
        };
        mkdir(self.dir.join("log"), 0o755)?;
        mkdir(self.dir.join("ctld"), 0o755)?;
        mkdir(self.dir.join("munge"), 0o755)?;
        mkdir(self.dir.join("munge-key"), 0o700)?;
        for host in self.cluster.all_hosts() {
            mkdir(self.dir.join(format!("spool-{}", host.hostname())), 0o755)?;
            mkdir(self.dir.join(format!("tmp-{}", host.hostname())), 0o755)?;
        }
        let key_path = self.munge_key();
        let mut key = [0u8; 1024];
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .map_err(|e| Error::io("reading /dev/urandom for the munge key", e))?;
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open(&key_path)
            .and_then(|mut f| f.write_all(&key))
            .map_err(|e| Error::io(format_args!("writing {}", key_path.display()), e))?;
        self.write(&self.conf, &self.slurm_conf())?;
        // See the module docs: autodetection needs /sys/fs/cgroup, which a
        // host's fresh /sys lacks; with the plugin named it is not looked at.
        self.write(
            &self.dir.join("cgroup.conf"),
            "# written by goal-netns: no cgroups are used (proctrack/linuxproc, task/none)\n\
             CgroupPlugin=cgroup/v1\n",
        )
    }

    fn write(&self, path: &Path, text: &str) -> Result<(), Error> {
        fs::write(path, text).map_err(|e| Error::io(format_args!("writing {}", path.display()), e))
    }

    fn munge_key(&self) -> PathBuf {
        self.dir.join("munge-key/munge.key")
    }

    /// The socket of this Slurm's munged.
    fn munge_socket(&self) -> PathBuf {
        self.dir.join("munge/socket")
    }

    fn slurm_conf(&self) -> String {
        let d = self.dir.display();
        let h0 = self.cluster.host(0);
        let mut nodes = String::new();
        for host in self.cluster.all_hosts() {
            nodes += &format!(
                "NodeName={} NodeAddr={} CPUs={CPUS_PER_NODE} State=UNKNOWN\n",
                host.hostname(),
                host.addr(0)
            );
        }
        let names: Vec<String> = self.cluster.all_hosts().map(|h| h.hostname()).collect();
        format!(
            "# written by goal-netns for cluster {tag}; see goal_netns::slurm\n\
             ClusterName=goal\n\
             SlurmctldHost={h0name}({h0addr})\n\
             SlurmctldPort=6817\n\
             SlurmdPort=6818\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={d}/ctld\n\
             SlurmdSpoolDir={d}/spool-%n\n\
             TmpFS={d}/tmp-%n\n\
             SlurmctldPidFile={d}/log/slurmctld.pid\n\
             SlurmdPidFile={d}/log/slurmd-%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd-%n.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SwitchType=switch/none\n\
             MpiDefault=none\n\
             SchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             SlurmdParameters=config_overrides\n\
             ReturnToService=2\n\
             KillWait=2\n\
             {nodes}\
             PartitionName=all Nodes={names} Default=YES MaxTime=INFINITE State=UP\n",
            tag = self.cluster.tag(),
            h0name = h0.hostname(),
            h0addr = h0.addr(0),
            socket = self.munge_socket().display(),
            names = names.join(","),
        )
    }

    /// Starts `program` (of `kind`) on host `host`: in its namespace with its
    /// hostname, in the Slurm's directory, with the configuration and the
    /// mark and without `SLURM_` variables of ours ([`set_env`](Self::set_env)),
    /// its output to `log/NAME.out`. Slurm's daemons log to `log/NAME.log`
    /// besides (as `slurm.conf` says), NAME being `slurmctld` or `slurmd-HOST`.
    fn spawn(
        &mut self,
        kind: Kind,
        host: usize,
        program: &Path,
        args: &[&str],
    ) -> Result<(), Error> {
        let hostname = self.cluster.host(host).hostname();
        let what = format!("{} on {hostname}", kind.program());
        let name = match kind {
            Kind::Slurmd => format!("slurmd-{hostname}"),
            _ => kind.program().to_owned(),
        };
        let out = self.dir.join(format!("log/{name}.out"));
        let log = (kind != Kind::Munged).then(|| self.dir.join(format!("log/{name}.log")));
        let file = File::create(&out)
            .map_err(|e| Error::io(format_args!("creating {}", out.display()), e))?;
        let file2 = file
            .try_clone()
            .map_err(|e| Error::io(format_args!("duplicating {}", out.display()), e))?;
        let mut cmd = self.cluster.host(host).command(program);
        cmd.args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(file2);
        self.set_env(&mut cmd);
        let child = cmd.spawn().map_err(|e| {
            Error::io(
                format_args!("starting {what} (`{}`)", sys::describe(&cmd)),
                e,
            )
        })?;
        self.daemons.push(Daemon {
            kind,
            what,
            child,
            out,
            log,
        });
        Ok(())
    }

    /// The environment of everything started here: no `SLURM_` variable of
    /// this process (an outer job's `SLURM_JOB_ID` would send `srun` into
    /// that job), `SLURM_CONF`, and the [`MARK`].
    fn set_env(&self, cmd: &mut Command) {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SLURM_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("SLURM_CONF", &self.conf).env(MARK, &self.dir);
    }

    fn start_munged(&mut self, munged: &Path) -> Result<(), Error> {
        let socket = self.munge_socket();
        let d = &self.dir;
        let args = [
            "--foreground".to_owned(),
            // As root, and with the key under /tmp: munged refuses both
            // without --force.
            "--force".to_owned(),
            format!("--socket={}", socket.display()),
            format!("--key-file={}", self.munge_key().display()),
            format!("--pid-file={}/log/munged.pid", d.display()),
            format!("--seed-file={}/munge/seed", d.display()),
            // Else it looks up the hostname, which nothing resolves.
            format!("--origin={}", self.cluster.host(0).addr(0)),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.spawn(Kind::Munged, 0, munged, &args)?;
        self.wait_for("munged to answer on its socket", Kind::Munged, |_| {
            Ok(UnixStream::connect(&socket).is_ok())
        })
    }

    fn start_slurmctld(&mut self, slurmctld: &Path) -> Result<(), Error> {
        // -D: foreground (a child we can wait for); -c: no old state.
        self.spawn(Kind::Slurmctld, 0, slurmctld, &["-D", "-c"])?;
        self.wait_for("slurmctld to answer sinfo", Kind::Slurmctld, |s| {
            Ok(s.sinfo().is_ok())
        })
    }

    fn start_slurmd(&mut self, slurmd: &Path, host: usize) -> Result<(), Error> {
        // -N: the node it serves (its hostname says so too).
        let name = self.cluster.host(host).hostname();
        self.spawn(Kind::Slurmd, host, slurmd, &["-D", "-N", &name])
    }

    /// Waits until every node is idle.
    fn wait_idle(&mut self) -> Result<(), Error> {
        let mut last = String::new();
        let what = "every slurmd to register and its node to be idle";
        let waited = self.wait_for(what, Kind::Slurmd, |s| {
            last = s.sinfo()?;
            let idle: Vec<&str> = last
                .lines()
                .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
                    [node, "idle"] => Some(node),
                    _ => None,
                })
                .collect();
            Ok(s.cluster
                .all_hosts()
                .all(|h| idle.contains(&h.hostname().as_str())))
        });
        waited.map_err(|e| Error::new(e.kind(), format!("{e}\nsinfo said last:\n{last}")))
    }

    /// `sinfo -h -N -o "%N %T"` on host 0: one "NODE STATE" line per node.
    /// Killed after [`CLIENT_LIMIT`] (its output is small enough for the
    /// pipe, so it is read after it ends).
    fn sinfo(&self) -> Result<String, Error> {
        let mut cmd = self.cluster.host(0).command(&self.sinfo);
        cmd.args(["-h", "-N", "-o", "%N %T"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.set_env(&mut cmd);
        let line = sys::describe(&cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format_args!("could not start `{line}`"), e))?;
        let deadline = Instant::now() + CLIENT_LIMIT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                waited => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let why = match waited {
                        Err(e) => format!("cannot be waited for: {e}"),
                        _ => format!("did not end within {CLIENT_LIMIT:?}"),
                    };
                    return Err(Error::new(ErrorKind::Command, format!("`{line}` {why}")));
                }
            }
        };
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        if !status.success() {
            return Err(Error::new(
                ErrorKind::Command,
                format!("`{line}` failed ({status}): {}", err.trim()),
            ));
        }
        Ok(out)
    }

    /// Polls `ready` every 50 ms until it says yes, at most [`START_LIMIT`];
    /// fails at once, naming the daemon, if one exits meanwhile. A timeout
    /// quotes the logs of the daemons of kind `blame`.
    fn wait_for(
        &mut self,
        what: &str,
        blame: Kind,
        mut ready: impl FnMut(&Self) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            for d in &mut self.daemons {
                if let Some(e) = d.exited() {
                    return Err(Error::new(e.kind(), format!("waiting for {what}: {e}")));
                }
            }
            // A failing probe (sinfo before slurmctld listens) means "not yet".
            if ready(self).unwrap_or(false) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let logs: Vec<String> = self
                    .daemons
                    .iter()
                    .filter(|d| d.kind == blame)
                    .map(|d| format!("{}: {}", d.what, d.logs()))
                    .collect();
                return Err(Error::new(
                    ErrorKind::Command,
                    format!(
                        "gave up waiting for {what} after {START_LIMIT:?} (Slurm in {})\n{}",
                        self.dir.display(),
                        logs.join("\n")
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `srun`, run on host 0 with this Slurm's `SLURM_CONF` (and without
    /// any `SLURM_` variable of this process). Add arguments, environment
    /// and stdio as usual; the tasks inherit srun's environment.
    pub fn srun(&self) -> Command {
        self.client(&self.srun)
    }

    /// Any Slurm client program (`sinfo`, `scontrol`, `squeue`, ...) run on
    /// host 0 with this Slurm's configuration, like [`srun`](Self::srun).
    pub fn client(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = self.cluster.host(0).command(program);
        self.set_env(&mut cmd);
        cmd
    }

    /// The `slurm.conf` (its directory holds the state, spool and log files).
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// For a failed job's message: each daemon's log file and its last
    /// lines (`slurmd` logs also hold its `slurmstepd`s' errors).
    pub fn logs(&self) -> String {
        self.daemons
            .iter()
            .map(|d| format!("--- {}: {}", d.what, d.logs()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stops every daemon and job and removes the files now, reporting
    /// what failed (dropping does the same but can only print).
    pub fn stop(mut self) -> Result<(), Error> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), Error> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        let mut first_error = None;
        // SIGTERM in reverse start order, one kind at a time: the slurmds
        // first (one may still be telling slurmctld that a step ended, and
        // would wait for it), then slurmctld, then munged.
        for kind in [Kind::Slurmd, Kind::Slurmctld, Kind::Munged] {
            for d in self.daemons.iter().filter(|d| d.kind == kind) {
                // SAFETY: kill(2) has no memory-safety preconditions. The pid
                // is our child's and not yet waited for, so it cannot have
                // been reused; if it has exited, this signals its zombie.
                unsafe { libc::kill(d.child.id() as libc::pid_t, libc::SIGTERM) };
            }
            let deadline = Instant::now() + STOP_GRACE;
            while Instant::now() < deadline
                && self
                    .daemons
                    .iter_mut()
                    .any(|d| d.kind == kind && matches!(d.child.try_wait(), Ok(None)))
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // What remains (a daemon that ignored SIGTERM, slurmscriptd, step
        // daemons, tasks) dies now. A process can fork between a scan and the
        // kill, so scan until nothing is found, a bounded number of times.
        for _ in 0..20 {
            let marked = marked_processes(&self.dir);
            if marked.is_empty() {
                break;
            }
            for pid in marked {
                // SAFETY: as above, no memory-safety preconditions; the pid
                // carried our mark a moment ago (at worst it has exited).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for d in &mut self.daemons {
            let _ = d.child.kill();
            if let Err(e) = d.child.wait() {
                first_error.get_or_insert(Error::io(format_args!("waiting for {}", d.what), e));
            }
        }
        self.daemons.clear();
        let left = marked_processes(&self.dir);
        if !left.is_empty() {
            first_error.get_or_insert(Error::new(
                ErrorKind::Command,
                format!(
                    "processes of the Slurm in {} survive SIGKILL: {left:?}",
                    self.dir.display()
                ),
            ));
        }
        if let Err(e) = fs::remove_dir_all(&self.dir) {
            first_error.get_or_insert(Error::io(
                format_args!("removing {}", self.dir.display()),
                e,
            ));
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Slurm<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!(
                "goal-netns: stopping Slurm on cluster {}: {e}",
                self.cluster.tag()
            );
        }
    }
}

/// The live processes whose environment holds `MARK=dir` (zombies have
/// none and are skipped: they are dead already).
fn marked_processes(dir: &Path) -> Vec<libc::pid_t> {
    let mut mark = format!("{MARK}=").into_bytes();
    mark.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_slice()))
        })
        .map(|pid| pid as libc::pid_t)
        .collect()
}
