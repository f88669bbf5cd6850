//! MPI jobs across the emulated hosts, for comparing goal with Open MPI and
//! MPICH under the same network.
//!
//! MPI launchers start remote daemons with `ssh HOST COMMAND...`. There is no
//! ssh between namespaces, so each cluster writes a launcher *agent*: a
//! script that takes ssh's place, maps the host name (or any of the host's
//! addresses) to its namespace, and runs the command line there with the
//! host's hostname, through `sh -c` as ssh's remote shell would. The
//! launcher itself runs inside host 0, so its own host is local to it and
//! the daemons reach it over the rails.
//!
//! # Open MPI (`mpirun.openmpi`, tested with 4.1)
//!
//! `--mca plm_rsh_agent AGENT` with a hostfile (`host0 slots=P` ...). Two more
//! options matter: `--bind-to none`, because every host believes it owns
//! all cores and bound ranks of different hosts would pile onto the same
//! ones; and `--allow-run-as-root`, since building the cluster needs root.
//! Open MPI decides locality by hostname, so ranks on different hosts talk
//! over TCP (through the rails and their rate limits) and ranks on one host
//! over shared memory, as on a real cluster. `btl_tcp_if_include` restricts
//! the TCP BTL to the chosen rails. `orte_tmpdir_base` puts the job's
//! session directories in the cluster's work directory: Open MPI names them
//! `ompi.HOSTNAME.UID` under `/tmp`, every cluster's hosts are called
//! `host0`... and all share one `/tmp`, so two clusters' jobs at once raced
//! to create and remove the same directory (seen in CI: "mkdir
//! /tmp/ompi.host3.0: File exists", and the job failed).
//!
//! # MPICH (`mpiexec.hydra`, tested with 4.0 on ch4:ucx)
//!
//! `-launcher ssh -launcher-exec AGENT` with a hostfile (`host0:P` ...). Two
//! catches, both handled here:
//!
//! - hydra tells its proxies to call back `host0:PORT`, and nothing resolves
//!   `host0`; `-iface railN` makes it send an address instead.
//! - UCX picks transports by reachability, and its cross-memory-attach
//!   transport (`cma`) reaches any process on the machine, namespaces or
//!   not: left alone, two "hosts" exchange data at memory speed (~20 Gbit/s
//!   measured), bypassing the rails. `UCX_TLS=self,tcp,posix,sysv` takes
//!   `cma` out; `UCX_NET_DEVICES` picks the rails. Its shared-memory
//!   transports (`posix`, `sysv`) still reach other emulated hosts: they take
//!   two processes for one machine when their boot ids agree, which every
//!   namespace shares (an 8-byte allreduce between two emulated hosts took
//!   1 us so, 14 us over TCP). They stay because MPICH 4.0.2 without them
//!   (`self,tcp`) hung in `MPI_Finalize` after a long test across 4 hosts x
//!   2 ranks; a benchmark with one rank per host passes `UCX_TLS=self,tcp`
//!   itself (`bench/mpi.py`), and tests check goal's traffic on a rail of
//!   its own. UCX's TCP
//!   transport used one rail even when given two (measured: 0.95 Gbit/s on
//!   two 1 Gbit/s rails).

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cluster::enter_host_argv;
use crate::error::Error;
use crate::{plan, sys, Cluster};

/// Which MPI a hostfile is for: the two spell slots differently.
#[derive(Clone, Copy)]
enum Flavour {
    OpenMpi,
    Mpich,
}

/// The agent's shell variables for the target namespace and hostname.
const NS: &str = "$ns";
const NAME: &str = "$name";

impl Cluster {
    /// The launcher agent (an `ssh` stand-in, see the [module docs](self)),
    /// written into the cluster's work directory on first use.
    pub fn launcher_agent(&self) -> Result<PathBuf, Error> {
        let tools = sys::tools()?;
        let mut hosts = String::new();
        for host in self.all_hosts() {
            let names: Vec<String> = std::iter::once(host.hostname())
                .chain((0..self.rails()).map(|r| host.addr(r).to_string()))
                .collect();
            let _ = writeln!(
                hosts,
                "    {}) ns={}; name={} ;;",
                names.join("|"),
                host.namespace(),
                host.hostname()
            );
        }
        // The same line as `Host::command`, with the namespace and hostname
        // left to the shell variables set by the `case` above.
        let enter: Vec<String> = enter_host_argv(tools, OsStr::new(NS), OsStr::new(NAME))
            .iter()
            .map(|a| match a.to_str() {
                Some(v @ (NS | NAME)) => format!("\"{v}\""),
                _ => sys::shell_quote(&a.to_string_lossy()),
            })
            .collect();
        let enter = enter.join(" ");
        let script = format!(
            r#"#!/bin/sh
# ssh stand-in for MPI launchers, written by goal-netns for cluster {tag}:
# AGENT [ssh options] HOST COMMAND... runs COMMAND... (joined by spaces, as
# ssh does) with `sh -c` inside HOST's network namespace, as hostname HOST.
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i|-F) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
case "$1" in
{hosts}    *) echo "goal-netns agent: unknown host '$1' (cluster {tag})" >&2; exit 255 ;;
esac
shift
exec {enter} {sh} -c "$*"
"#,
            tag = self.tag(),
            enter = enter,
            sh = sys::shell_quote(&tools.sh.to_string_lossy()),
        );
        self.write_file("agent", &script, 0o755)
    }

    /// `mpirun` of Open MPI, run inside host 0, starting `np` ranks,
    /// `per_host` on each host from host 0 on, each running `program_args`
    /// (program first). With `rails`, the TCP BTL uses only those rails;
    /// without, Open MPI uses all of them.
    ///
    /// The launcher is `$GOAL_OMPI_MPIRUN` (as written by
    /// `scripts/install-deps.sh`) or else `mpirun.openmpi`.
    pub fn mpirun_openmpi<S: AsRef<OsStr>>(
        &self,
        np: usize,
        per_host: usize,
        rails: Option<&[usize]>,
        program_args: &[S],
    ) -> Result<Command, Error> {
        let (mut cmd, hostfile, agent) =
            self.prepare_job(Flavour::OpenMpi, np, per_host, rails, program_args.len())?;
        if sys::is_root() {
            cmd.arg("--allow-run-as-root");
        }
        let session = self.openmpi_session_base()?;
        cmd.arg("--hostfile")
            .arg(hostfile)
            .args(["--mca", "plm_rsh_agent"])
            .arg(agent)
            .args(["--mca", "orte_tmpdir_base"])
            .arg(session);
        cmd.args([
            "--bind-to",
            "none",
            "--map-by",
            "slot",
            "-np",
            &np.to_string(),
        ]);
        if let Some(rails) = rails {
            cmd.args(["--mca", "btl_tcp_if_include", &interfaces(rails)]);
        }
        cmd.args(program_args);
        Ok(cmd)
    }

    /// The directory Open MPI processes of this cluster's jobs keep their
    /// session directories in (`orte_tmpdir_base`, see the
    /// [module docs](self)), created on first use. [`Cluster::mpirun_openmpi`]
    /// passes it; a job started another way (Slurm's `srun`) sets
    /// `OMPI_MCA_orte_tmpdir_base` to it.
    pub fn openmpi_session_base(&self) -> Result<PathBuf, Error> {
        let dir = self.workdir().join("ompi-session");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format_args!("creating {}", dir.display()), e))?;
        Ok(dir)
    }

    /// `mpiexec` of MPICH (hydra), run inside host 0: `np` ranks, `per_host`
    /// on each host from host 0 on, each running `program_args`. With
    /// `rails`, UCX's TCP uses those rails (and hydra's control traffic the
    /// first); without, rail 0. Sets `UCX_TLS` so that no data bypasses the
    /// rails (see the [module docs](self)).
    ///
    /// The launcher is `$GOAL_MPICH_MPIRUN` (as written by
    /// `scripts/install-deps.sh`) or else `mpiexec.hydra`.
    pub fn mpiexec_mpich<S: AsRef<OsStr>>(
        &self,
        np: usize,
        per_host: usize,
        rails: Option<&[usize]>,
        program_args: &[S],
    ) -> Result<Command, Error> {
        let (mut cmd, hostfile, agent) =
            self.prepare_job(Flavour::Mpich, np, per_host, rails, program_args.len())?;
        let rails = rails.unwrap_or(&[0]);
        cmd.args(["-launcher", "ssh", "-launcher-exec"])
            .arg(agent)
            .arg("-f")
            .arg(hostfile);
        cmd.args(["-iface", &plan::rail_interface(rails[0])]);
        cmd.args([
            "-genv",
            "UCX_TLS",
            "self,tcp,posix,sysv",
            "-genv",
            "UCX_NET_DEVICES",
            &interfaces(rails),
        ]);
        cmd.args(["-n", &np.to_string(), "-ppn", &per_host.to_string()]);
        cmd.args(program_args);
        Ok(cmd)
    }

    /// Checks a job's shape, writes its agent and hostfile, and returns the
    /// launcher's command on host 0 (no arguments yet), the hostfile and the
    /// agent.
    fn prepare_job(
        &self,
        flavour: Flavour,
        np: usize,
        per_host: usize,
        rails: Option<&[usize]>,
        program_args: usize,
    ) -> Result<(Command, PathBuf, PathBuf), Error> {
        if program_args == 0 {
            return Err(Error::invalid("an MPI job needs a program"));
        }
        if np == 0 || per_host == 0 || np > per_host * self.hosts() {
            return Err(Error::invalid(format!(
                "{np} ranks, {per_host} per host do not fit {} hosts",
                self.hosts()
            )));
        }
        for &rail in rails.unwrap_or(&[]) {
            self.check_index(0, rail)?;
        }
        if rails.is_some_and(|r| r.is_empty()) {
            return Err(Error::invalid("an empty list of rails"));
        }
        let hosts_used = np.div_ceil(per_host);
        let (name, lines): (_, Vec<String>) = match flavour {
            Flavour::OpenMpi => (
                "hosts-openmpi",
                (0..hosts_used)
                    .map(|h| format!("{} slots={per_host}", plan::hostname(h)))
                    .collect(),
            ),
            Flavour::Mpich => (
                "hosts-mpich",
                (0..hosts_used)
                    .map(|h| format!("{}:{per_host}", plan::hostname(h)))
                    .collect(),
            ),
        };
        let hostfile = self.write_file(
            &format!("{name}-{hosts_used}x{per_host}"),
            &(lines.join("\n") + "\n"),
            0o644,
        )?;
        let agent = self.launcher_agent()?;
        let launcher = match flavour {
            Flavour::OpenMpi => launcher("GOAL_OMPI_MPIRUN", "mpirun.openmpi"),
            Flavour::Mpich => launcher("GOAL_MPICH_MPIRUN", "mpiexec.hydra"),
        };
        Ok((self.host(0).command(launcher), hostfile, agent))
    }

    /// Writes `name` in the work directory (atomically: jobs may be set up
    /// from several threads) and returns its path.
    fn write_file(&self, name: &str, content: &str, mode: u32) -> Result<PathBuf, Error> {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.workdir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format_args!("creating {}", dir.display()), e))?;
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.{:?}", std::thread::current().id()));
        let written = std::fs::write(&tmp, content)
            .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)))
            .and_then(|()| std::fs::rename(&tmp, &path));
        written.map_err(|e| Error::io(format_args!("writing {}", path.display()), e))?;
        Ok(path)
    }
}

/// `rail0,rail1,...` for the given rails.
fn interfaces(rails: &[usize]) -> String {
    rails
        .iter()
        .map(|&r| plan::rail_interface(r))
        .collect::<Vec<_>>()
        .join(",")
}

/// The launcher named by `$env_var`, else `default` found by absolute path
/// (host commands run with the caller's PATH, which may lack it; a missing
/// launcher then fails to spawn under its own name).
fn launcher(env_var: &str, default: &str) -> PathBuf {
    match std::env::var_os(env_var) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => sys::find_tool(default).unwrap_or_else(|_| Path::new(default).to_path_buf()),
    }
}
