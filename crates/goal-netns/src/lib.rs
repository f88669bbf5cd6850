//! goal-netns: an emulated cluster on one machine, for goal's multi-host
//! tests and benchmarks.
//!
//! In the layer picture of `docs/design.md` it stands apart from the
//! runtime: goal crates use it only in their tests, examples and
//! benchmarks (goal-cli's multi-host tests, goal-boot's and goal-net's),
//! and it depends on no goal crate.
//!
//! goal's inter-node transport stripes messages over several NICs, survives a
//! NIC going down, and is compared against MPI libraries across hosts. None
//! of that can be tested honestly on one machine with one network stack:
//! every peer would be "this host", every address local. This crate builds,
//! from Linux network namespaces, what those tests need:
//!
//! - **hosts**: one network namespace each, with `lo` and one interface per
//!   rail (`rail0`, `rail1`, ...), and a hostname of their own for the
//!   processes started there ([`Host::command`]);
//! - **rails**: one bridge each in a separate switch namespace, each its own
//!   subnet (the address plan is in [`plan`]);
//! - **rates**: an optional `tbf` token bucket per port and direction
//!   (Linux `netem` is not in every kernel, so there is no delay emulation);
//! - **faults**: [`Cluster::set_rail`] takes one host's rail down and up;
//! - **MPI across hosts**: [`Cluster::mpirun_openmpi`] and
//!   [`Cluster::mpiexec_mpich`] launch through an `ssh` stand-in that enters
//!   the target host's namespace ([`mpi`]);
//! - **Slurm across hosts**: [`Slurm::start`] runs a private `slurmctld`,
//!   one `slurmd` per host and a `munged`, for `srun` jobs ([`slurm`]);
//! - **cleanup**: dropping a [`Cluster`] removes everything, even while a
//!   test panics; [`gc`] removes leftovers of dead processes.
//!
//! Nothing is ever created in the root namespace: all traffic stays between
//! namespaces this crate made. Building needs root ([`available`] says why
//! not); all of it is done with `ip` and `tc`, so a failure names the
//! command and its stderr. Shared with the real thing: the kernel's TCP and
//! IP stacks, sockets, routing. Not shared: CPU and memory (every host sees
//! both cores), the boot id, the file system.
//!
//! ```no_run
//! use goal_netns::{Cluster, Spec};
//! let cluster = Cluster::create(&Spec::new(2, 2).rate("1gbit".parse()?))?;
//! let out = cluster.host(1).command("hostname").output().expect("run hostname");
//! assert_eq!(out.stdout, b"host1\n");
//! # Ok::<(), goal_netns::Error>(())
//! ```

#![deny(missing_docs)]

mod cluster;
mod error;
mod gc;
pub mod mpi;
pub mod plan;
pub mod probe;
pub mod slurm;
mod sys;

use std::sync::OnceLock;

pub use cluster::{Cluster, Host, Spec};
pub use error::{Error, ErrorKind};
pub use gc::gc;
pub use plan::Rate;
pub use slurm::Slurm;

/// Whether clusters can be built here; if not, why (a sentence for a
/// "skipped: ..." line). Checks root, the tools, and once per process
/// really makes a namespace with a bridge, a veth pair and a tbf qdisc, so
/// a container without the rights or a kernel without a module says so
/// here instead of half-way through a test.
pub fn available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER.get_or_init(probe_kernel).clone()
}

fn probe_kernel() -> Result<(), String> {
    if !sys::is_root() {
        return Err("not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)".into());
    }
    sys::tools().map_err(|e| e.to_string())?;
    // Named like a process-owned cluster's namespace, so `gc` removes it
    // should this process die right here.
    let ns = format!(
        "{}-probe",
        plan::process_tag(std::process::id(), cluster::next_seq())
    );
    sys::ip(&["netns", "add", &ns]).map_err(|e| format!("ip netns does not work here: {e}"))?;
    let tried = (|| {
        sys::ip(&["-n", &ns, "link", "add", "br0", "type", "bridge"])?;
        sys::ip(&[
            "-n", &ns, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1",
        ])?;
        sys::tc(&[
            "-n", &ns, "qdisc", "add", "dev", "probe0", "root", "tbf", "rate", "1gbit", "burst",
            "64kb", "latency", "10ms",
        ])
    })();
    let removed = sys::netns_delete(&ns);
    tried.map_err(|e| format!("the kernel cannot build a cluster: {e}"))?;
    removed.map_err(|e| e.to_string())
}
