//! Building, using and removing a cluster.
//!
//! # Shape
//!
//! ```text
//!   host0 netns                 switch netns                 host1 netns
//!   lo, rail0 ──veth── h0r0 ─┐  br0  ┌─ h1r0 ──veth── rail0, lo
//!       rail1 ──veth── h0r1 ─┴─ br1 ─┴─ h1r1 ──veth── rail1
//! ```
//!
//! Each rail is its own switch (a bridge in the switch namespace) and its own
//! subnet, like the separate fabrics of a multi-rail cluster: traffic for
//! rail 1 can only go out of `rail1`. A rate limit is a `tbf` qdisc on *both*
//! ends of each cable, since a qdisc shapes only what a device sends: the host
//! end shapes the host's uplink and the switch end its downlink, so a host
//! port is a full-duplex link of that rate, like a NIC.
//!
//! # Ownership
//!
//! A [`Cluster`] value owns its namespaces; dropping it (also while a test
//! unwinds from a panic) kills what still runs inside and deletes them, which
//! takes the veths and bridges with them. Creation records each namespace the
//! moment it exists, so a failing step drops a half-built cluster the same
//! way. A named cluster (for the CLI) is handed over with [`Cluster::keep`]
//! and found again with [`Cluster::attach`].
//!
//! # Processes
//!
//! A host's process is started as
//! `ip netns exec NS unshare --uts sh -c 'hostname H && exec "$@"' H PROGRAM ARGS...`:
//! `ip netns exec` enters the network namespace (and remounts `/sys` so it
//! shows the host's interfaces), `unshare --uts` gives the process a hostname
//! of its own so `gethostname()` tells hosts apart, and everything `exec`s,
//! so the pid a caller gets is the program's own. Shell commands rather than
//! `setns` in a `pre_exec` hook: it is the same line the MPI launcher agent
//! runs (see [`crate::mpi`]), and a person can paste it.

use std::ffi::{OsStr, OsString};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, ErrorKind};
use crate::plan::{self, Rate};
use crate::sys;

/// The command line that runs a program (the words that follow) inside
/// namespace `ns` with hostname `hostname`: `ip netns exec NS unshare --uts
/// sh -c 'hostname "$0" && exec "$@"' HOSTNAME`. In the `sh -c` line, `$0`
/// is the hostname and `"$@"` the program and its arguments.
pub(crate) fn enter_host_argv(tools: &sys::Tools, ns: &OsStr, hostname: &OsStr) -> Vec<OsString> {
    let hostname_then_exec = format!(
        r#"{} "$0" && exec "$@""#,
        sys::shell_quote(&tools.hostname.to_string_lossy())
    );
    vec![
        tools.ip.clone().into(),
        "netns".into(),
        "exec".into(),
        ns.into(),
        tools.unshare.clone().into(),
        "--uts".into(),
        tools.sh.clone().into(),
        "-c".into(),
        hostname_then_exec.into(),
        hostname.into(),
    ]
}

/// What to build: how many hosts, how many rails, and how fast a port is.
#[derive(Clone, Debug)]
pub struct Spec {
    hosts: usize,
    rails: usize,
    rate: Option<Rate>,
    name: Option<String>,
}

impl Spec {
    /// `hosts` hosts with `rails` rails each, no rate limit, owned by this
    /// process.
    pub fn new(hosts: usize, rails: usize) -> Spec {
        Spec {
            hosts,
            rails,
            rate: None,
            name: None,
        }
    }

    /// Limits every host port to `rate` in each direction.
    pub fn rate(mut self, rate: Rate) -> Spec {
        self.rate = Some(rate);
        self
    }

    /// Makes a named cluster (namespaces `goal-NAME-*`), which
    /// [`Cluster::keep`] can leave behind for [`Cluster::attach`] to find.
    pub fn name(mut self, name: &str) -> Spec {
        self.name = Some(name.to_owned());
        self
    }

    fn check(&self) -> Result<(), Error> {
        if !(1..=plan::MAX_HOSTS).contains(&self.hosts) {
            return Err(Error::invalid(format!(
                "{} hosts: must be 1 to {}",
                self.hosts,
                plan::MAX_HOSTS
            )));
        }
        if !(1..=plan::MAX_RAILS).contains(&self.rails) {
            return Err(Error::invalid(format!(
                "{} rails: must be 1 to {}",
                self.rails,
                plan::MAX_RAILS
            )));
        }
        self.name.as_deref().map_or(Ok(()), plan::check_name)
    }
}

/// An emulated cluster: one network namespace per host, one switch
/// namespace with a bridge per rail, and per host and rail a veth "cable"
/// from the host's `railR` to that bridge, rate-limited at both ends.
/// Dropping the value removes all of it (unless it was [kept](Self::keep)).
///
/// ```text
///   host0 netns                 switch netns                 host1 netns
///   lo, rail0 ──veth── h0r0 ─┐  br0  ┌─ h1r0 ──veth── rail0, lo
///       rail1 ──veth── h0r1 ─┴─ br1 ─┴─ h1r1 ──veth── rail1
/// ```
#[derive(Debug)]
pub struct Cluster {
    tag: String,
    hosts: usize,
    rails: usize,
    rate: Option<Rate>,
    /// Made with [`Spec::name`]: may outlive this process.
    named: bool,
    /// Every namespace of the cluster that exists, in creation order; what
    /// teardown deletes.
    namespaces: Vec<String>,
    /// Whether dropping this value tears the cluster down.
    owned: bool,
}

impl Cluster {
    /// Builds the cluster of `spec`. On any failure, whatever was already
    /// built is removed before the error is returned.
    pub fn create(spec: &Spec) -> Result<Cluster, Error> {
        spec.check()?;
        crate::available().map_err(|why| Error::new(ErrorKind::Unavailable, why))?;
        let tag = match &spec.name {
            Some(name) => {
                if Cluster::named_leftover(name).is_ok() {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!(
                            "cluster {name:?} exists already (goal-cluster down --name {name})"
                        ),
                    ));
                }
                plan::named_tag(name)
            }
            None => plan::process_tag(std::process::id(), next_seq()),
        };
        let mut cluster = Cluster {
            tag,
            hosts: spec.hosts,
            rails: spec.rails,
            rate: spec.rate,
            named: spec.name.is_some(),
            namespaces: Vec::new(),
            owned: true,
        };
        // From here on, `?` drops `cluster`, which removes what was built.
        cluster.build()?;
        Ok(cluster)
    }

    fn build(&mut self) -> Result<(), Error> {
        let sw = plan::switch_ns(&self.tag);
        self.add_namespace(&sw)?;
        for rail in 0..self.rails {
            let br = plan::bridge(rail);
            sys::ip(&["-n", &sw, "link", "add", &br, "type", "bridge"])?;
            sys::ip(&["-n", &sw, "link", "set", &br, "up"])?;
        }
        for host in 0..self.hosts {
            let ns = plan::host_ns(&self.tag, host);
            self.add_namespace(&ns)?;
            sys::ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            for rail in 0..self.rails {
                self.cable(&sw, &ns, host, rail)?;
            }
        }
        Ok(())
    }

    /// Creates a namespace and records it for teardown at once.
    fn add_namespace(&mut self, ns: &str) -> Result<(), Error> {
        sys::ip(&["netns", "add", ns])?;
        self.namespaces.push(ns.to_owned());
        Ok(())
    }

    /// Connects host `host`'s `rail<rail>` to the rail's bridge: a veth pair
    /// created with each end directly in its namespace (it never appears in
    /// the root namespace), the address, and the rate on both ends.
    fn cable(&self, sw: &str, ns: &str, host: usize, rail: usize) -> Result<(), Error> {
        let port = plan::switch_port(host, rail);
        let nic = plan::rail_interface(rail);
        let addr = format!("{}/{}", plan::host_addr(host, rail), plan::PREFIX_LEN);
        sys::ip(&[
            "-n", sw, "link", "add", &port, "type", "veth", "peer", "name", &nic, "netns", ns,
        ])?;
        sys::ip(&[
            "-n",
            sw,
            "link",
            "set",
            &port,
            "master",
            &plan::bridge(rail),
            "up",
        ])?;
        sys::ip(&["-n", ns, "addr", "add", &addr, "dev", &nic])?;
        sys::ip(&["-n", ns, "link", "set", &nic, "up"])?;
        if let Some(rate) = self.rate {
            shape(ns, &nic, rate)?;
            shape(sw, &port, rate)?;
        }
        Ok(())
    }

    /// Finds the named cluster `name` (made by `create` with
    /// [`Spec::name`] and left by [`keep`](Self::keep)). Dropping the value
    /// leaves the cluster in place; [`destroy`](Self::destroy) removes it.
    pub fn attach(name: &str) -> Result<Cluster, Error> {
        let mut cluster = Cluster::named_leftover(name)?;
        let roles: Vec<_> = cluster
            .namespaces
            .iter()
            .filter_map(|ns| plan::parse_ns(ns))
            .map(|n| n.host)
            .collect();
        cluster.hosts = roles.iter().filter(|h| h.is_some()).count();
        let complete = cluster.hosts > 0
            && roles.contains(&None)
            && (0..cluster.hosts).all(|h| roles.contains(&Some(h)));
        if !complete {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "cluster {name:?} is incomplete ({}); `goal-cluster down --name {name}` removes it",
                    cluster.namespaces.join(" ")
                ),
            ));
        }
        let h0 = plan::host_ns(&cluster.tag, 0);
        let links = sys::ip(&["-n", &h0, "-o", "link", "show"])?;
        // "2: rail0@if6: <BROADCAST,...": the name is the second word, up
        // to the '@' of a veth's peer or the ':'.
        let names: Vec<&str> = links
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1)?.split(['@', ':']).next())
            .collect();
        let has_rail = |r: usize| names.contains(&plan::rail_interface(r).as_str());
        cluster.rails = (0..plan::MAX_RAILS).take_while(|&r| has_rail(r)).count();
        let qdisc = sys::tc(&["-n", &h0, "qdisc", "show", "dev", &plan::rail_interface(0)])?;
        // "qdisc tbf 8001: root refcnt 2 rate 1Gbit burst 125000b lat 10ms"
        cluster.rate = qdisc
            .split_whitespace()
            .skip_while(|w| *w != "rate")
            .nth(1)
            .and_then(|r| r.parse().ok());
        Ok(cluster)
    }

    /// Removes the named cluster `name`, also an incomplete leftover of one
    /// (a `create` killed half-way).
    pub fn remove_named(name: &str) -> Result<(), Error> {
        Cluster::named_leftover(name)?.destroy()
    }

    /// The namespaces of the named cluster `name`, as an unowned value whose
    /// sizes are not yet known.
    fn named_leftover(name: &str) -> Result<Cluster, Error> {
        plan::check_name(name)?;
        let tag = plan::named_tag(name);
        let namespaces: Vec<_> = sys::netns_list()?
            .into_iter()
            .filter(|ns| plan::parse_ns(ns).is_some_and(|n| n.tag == tag))
            .collect();
        if namespaces.is_empty() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("no cluster named {name:?}"),
            ));
        }
        Ok(Cluster {
            tag,
            hosts: 0,
            rails: 0,
            rate: None,
            named: true,
            namespaces,
            owned: false,
        })
    }

    /// Leaves the cluster in place when this value is dropped, for a named
    /// cluster that must outlive this process (`goal-cluster up`).
    ///
    /// # Errors
    /// For a process-owned cluster: `gc` would remove it as soon as this
    /// process exits, so keeping it is refused (the value is returned).
    pub fn keep(mut self) -> Result<(), Cluster> {
        if !self.named {
            return Err(self);
        }
        self.owned = false;
        Ok(())
    }

    /// Removes the cluster now, and reports what failed (dropping does the
    /// same but can only print). Tries every namespace even after a failure.
    pub fn destroy(mut self) -> Result<(), Error> {
        self.owned = false;
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), Error> {
        let mut first_error = None;
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = sys::netns_delete(&ns) {
                first_error.get_or_insert(e);
            }
        }
        let dir = self.workdir();
        if dir.exists() {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                first_error.get_or_insert(Error::io(format_args!("removing {}", dir.display()), e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The cluster's tag (`g<pid>-<seq>` or `goal-<name>`), the common
    /// prefix of its namespace names.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The number of hosts.
    pub fn hosts(&self) -> usize {
        self.hosts
    }

    /// The number of rails per host.
    pub fn rails(&self) -> usize {
        self.rails
    }

    /// The rate of every port, if limited.
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// The namespace holding the bridges.
    pub fn switch_namespace(&self) -> String {
        plan::switch_ns(&self.tag)
    }

    /// Host `index`.
    ///
    /// # Panics
    /// If `index >= self.hosts()`.
    pub fn host(&self, index: usize) -> Host<'_> {
        assert!(
            index < self.hosts,
            "host {index} of a {}-host cluster",
            self.hosts
        );
        Host {
            cluster: self,
            index,
        }
    }

    /// All hosts, in order.
    pub fn all_hosts(&self) -> impl Iterator<Item = Host<'_>> {
        (0..self.hosts).map(|index| Host {
            cluster: self,
            index,
        })
    }

    /// Takes host `host`'s rail `rail` down or brings it back up, like
    /// pulling and replugging its cable: `ip link set railR down|up` in the
    /// host. Down, the host loses its route on that rail at once and its
    /// peers' packets to it are lost; up, the route and the rate limit are
    /// back as before (the qdisc survives), and open TCP connections resume.
    pub fn set_rail(&self, host: usize, rail: usize, up: bool) -> Result<(), Error> {
        self.check_index(host, rail)?;
        let ns = plan::host_ns(&self.tag, host);
        let state = if up { "up" } else { "down" };
        sys::ip(&["-n", &ns, "link", "set", &plan::rail_interface(rail), state]).map(drop)
    }

    pub(crate) fn check_index(&self, host: usize, rail: usize) -> Result<(), Error> {
        if host >= self.hosts || rail >= self.rails {
            return Err(Error::invalid(format!(
                "host {host} rail {rail} outside a cluster of {} hosts x {} rails",
                self.hosts, self.rails
            )));
        }
        Ok(())
    }

    /// The directory for files this cluster writes (the MPI launcher agent,
    /// hostfiles); removed with the cluster and by `gc`.
    pub fn workdir(&self) -> PathBuf {
        workdir_for(&self.tag)
    }
}

/// Where the files of the cluster with this tag live.
pub(crate) fn workdir_for(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("goal-netns-{tag}"))
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            if let Err(e) = self.teardown() {
                eprintln!("goal-netns: removing cluster {}: {e}", self.tag);
            }
        }
    }
}

/// A numbered cluster per process, so tests running as threads of one
/// process get distinct tags.
pub(crate) fn next_seq() -> usize {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// A token bucket on `dev`'s egress: the rate, a bucket of
/// [`Rate::burst_bytes`], and at most 10 ms of queue (beyond that tbf drops,
/// as a switch port would).
fn shape(ns: &str, dev: &str, rate: Rate) -> Result<(), Error> {
    let rate_arg = format!("{}bit", rate.bits_per_sec());
    let burst = format!("{}b", rate.burst_bytes());
    sys::tc(&[
        "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate_arg, "burst", &burst,
        "latency", "10ms",
    ])
    .map(drop)
}

/// One host of a [`Cluster`].
#[derive(Clone, Copy, Debug)]
pub struct Host<'a> {
    cluster: &'a Cluster,
    index: usize,
}

impl Host<'_> {
    /// Its index in the cluster.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its network namespace (for `ip netns exec`, `ip -n`).
    pub fn namespace(&self) -> String {
        plan::host_ns(&self.cluster.tag, self.index)
    }

    /// The hostname its processes see: `host<index>`.
    pub fn hostname(&self) -> String {
        plan::hostname(self.index)
    }

    /// Its address on rail `rail` (see the plan in [`crate::plan`]).
    ///
    /// # Panics
    /// If the cluster has no rail `rail`.
    pub fn addr(&self, rail: usize) -> Ipv4Addr {
        assert!(
            rail < self.cluster.rails,
            "rail {rail} of a {}-rail cluster",
            self.cluster.rails
        );
        plan::host_addr(self.index, rail)
    }

    /// A command that runs `program` on this host: in its network namespace,
    /// with its hostname. Add arguments, environment and stdio as usual.
    /// The environment and working directory pass through unchanged.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        // Every way to get a `Cluster` ran `ip` through `sys::tools()`
        // first, whose answer is cached: it cannot fail now.
        let tools = sys::tools().expect("a cluster exists, so its tools were found");
        let argv = enter_host_argv(tools, self.namespace().as_ref(), self.hostname().as_ref());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).arg(program);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step failing half-way must not leave the steps before it behind.
    /// The failure is made real: the second host's namespace name is taken.
    #[test]
    fn a_create_that_fails_half_way_removes_what_it_built() {
        if let Err(why) = crate::available() {
            println!("skipped: {why}");
            return;
        }
        let tag = plan::process_tag(std::process::id(), next_seq());
        let squatter = plan::host_ns(&tag, 1);
        sys::ip(&["netns", "add", &squatter]).expect("make the squatting namespace");
        let mut cluster = Cluster {
            tag: tag.clone(),
            hosts: 2,
            rails: 2,
            rate: None,
            named: false,
            namespaces: Vec::new(),
            owned: true,
        };
        let err = cluster
            .build()
            .expect_err("host 1's namespace exists already");
        assert!(err.to_string().contains(&squatter), "{err}");
        assert_eq!(
            cluster.namespaces,
            [plan::switch_ns(&tag), plan::host_ns(&tag, 0)]
        );
        drop(cluster);
        let left = sys::netns_list().expect("ip netns list");
        sys::netns_delete(&squatter).expect("remove the squatter");
        assert_eq!(
            left.iter()
                .filter(|ns| ns.starts_with(&tag))
                .collect::<Vec<_>>(),
            [&squatter]
        );
    }
}
