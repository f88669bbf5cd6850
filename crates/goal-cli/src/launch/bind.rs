//! Where goalrun's ranks may run: the CPUs goalrun itself is allowed, how
//! they group into cores and sockets, and which of them each rank gets
//! (`--bind-to`, `--map-by`, `--report-bindings`).
//!
//! # The policy, and why
//!
//! Users expect from goalrun what `mpirun` does: Open MPI binds each rank
//! to a core when there are at most two ranks (to a socket from three), and
//! binds nothing once there are more ranks than cores; MPICH's hydra binds
//! nothing unless asked (`-bind-to core`). Unbound ranks lose much on a busy
//! machine: with one CPU-bound process beside a 2-rank job on 2 cores, goal's
//! 64 KiB streaming bandwidth fell from 10-16 GB/s (ranks bound to CPUs 0
//! and 1) to 0.7-1.1 GB/s unbound, as the scheduler moved both ranks onto
//! one core and the competing process onto the other (issue 43). So:
//!
//! - **At least 2 ranks and no more than the cores goalrun may use:**
//!   `--bind-to core`, rank r on the r-th core (`--map-by core`: cores in
//!   the order of their socket and core ids; `--map-by socket`: round robin
//!   over the sockets). A rank bound to a core may run on every hardware
//!   thread of that core that goalrun may use.
//! - **More ranks than cores:** not bound (`none`): every rank may run on
//!   every CPU goalrun may use, as with Open MPI (which refuses to bind an
//!   oversubscribed job to cores). Fixing ranks round robin on the cores
//!   instead would keep the kernel from moving a rank off a core whose
//!   other ranks compute while it could run elsewhere, and goal's waits
//!   already yield when the ranks outnumber the cores.
//! - **One rank:** not bound. It has no peer to keep apart from, and
//!   several one-rank jobs, each bound to "the first core", would all pile
//!   onto CPU 0 (Open MPI's binding does exactly that to concurrent
//!   single-rank jobs).
//!
//! "May use" is goalrun's own affinity (`sched_getaffinity`: `taskset`, a
//! batch system's binding, a container's cpuset) intersected with the
//! cgroup cpuset it runs in, so `taskset -c 2,3 goalrun -n 2` binds the
//! ranks to CPUs 2 and 3, and `taskset -c 0 goalrun -n 2` binds nothing
//! (two ranks, one core). An explicit `--bind-to core` or `hwthread` that
//! cannot give every rank its own core or CPU is refused before anything
//! starts, naming the numbers, rather than silently doubling ranks up.
//!
//! The binding is applied in each rank between fork and exec, so the
//! program starts bound; goal-rt finds it there, reports it under
//! `GOAL_DEBUG=1` and leaves it as it is.

use std::io;

use goal_boot::cpulist::{parse_list, to_list};

use super::sys;

/// What each rank is bound to (`--bind-to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindTo {
    /// Not bound: every CPU goalrun may use.
    None,
    /// One hardware thread (logical CPU) per rank.
    HwThread,
    /// Every allowed hardware thread of one core per rank.
    Core,
    /// Every allowed CPU of the socket of the rank's core.
    Socket,
}

impl BindTo {
    pub(crate) const NAMES: &'static str = "core, hwthread, socket, none";

    pub(crate) fn parse(text: &str) -> Option<BindTo> {
        Some(match text {
            "none" => BindTo::None,
            "hwthread" => BindTo::HwThread,
            "core" => BindTo::Core,
            "socket" | "package" => BindTo::Socket,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BindTo::None => "none",
            BindTo::HwThread => "hwthread",
            BindTo::Core => "core",
            BindTo::Socket => "socket",
        }
    }
}

/// In which order ranks take the cores (`--map-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapBy {
    /// Fill the cores in order: socket 0's first, then socket 1's.
    Core,
    /// Round robin over the sockets: rank 0 on socket 0, rank 1 on socket 1.
    Socket,
}

impl MapBy {
    pub(crate) const NAMES: &'static str = "core (or slot), socket";

    pub(crate) fn parse(text: &str) -> Option<MapBy> {
        Some(match text {
            "core" | "slot" => MapBy::Core,
            "socket" | "package" => MapBy::Socket,
            _ => return None,
        })
    }
}

/// One allowed CPU: its number, the core and socket it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cpu {
    pub id: usize,
    pub socket: usize,
    pub core: usize,
}

/// The CPUs goalrun may use, grouped: `cores[k]` are the CPUs of the k-th
/// core, in socket then core-id order; each core's CPUs in number order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Topology {
    pub cores: Vec<Vec<Cpu>>,
}

impl Topology {
    /// goalrun's allowed CPUs (affinity and cgroup cpuset), grouped by the
    /// kernel's topology files. A CPU whose topology cannot be read counts
    /// as a core of its own on socket 0.
    pub(crate) fn read() -> io::Result<Topology> {
        let mut allowed = sys::affinity()?;
        if let Some(cpuset) = cgroup_cpuset() {
            let within: Vec<usize> = allowed.iter().copied().filter(|c| cpuset.contains(c)).collect();
            // A cpuset that excludes every CPU we may run on is misread.
            if !within.is_empty() {
                allowed = within;
            }
        }
        let topo = |cpu: usize, what: &str| -> Option<usize> {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}");
            std::fs::read_to_string(path).ok()?.trim().parse().ok()
        };
        let cpus = allowed.iter().map(|&id| Cpu {
            id,
            socket: topo(id, "physical_package_id").unwrap_or(0),
            // Unknown: a core of its own, numbered as the CPU.
            core: topo(id, "core_id").unwrap_or(id),
        });
        Ok(Topology::from_cpus(cpus))
    }

    /// Groups `cpus` into cores.
    pub(crate) fn from_cpus(cpus: impl IntoIterator<Item = Cpu>) -> Topology {
        let mut cpus: Vec<Cpu> = cpus.into_iter().collect();
        cpus.sort_by_key(|c| (c.socket, c.core, c.id));
        let mut cores: Vec<Vec<Cpu>> = Vec::new();
        for cpu in cpus {
            match cores.last_mut() {
                Some(core) if (core[0].socket, core[0].core) == (cpu.socket, cpu.core) => core.push(cpu),
                _ => cores.push(vec![cpu]),
            }
        }
        Topology { cores }
    }

    /// Every allowed CPU, in number order.
    pub(crate) fn cpus(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.cores.iter().flatten().map(|c| c.id).collect();
        all.sort_unstable();
        all
    }

    /// The sockets that have allowed CPUs, in order.
    fn sockets(&self) -> Vec<usize> {
        let mut s: Vec<usize> = self.cores.iter().map(|c| c[0].socket).collect();
        s.dedup();
        s
    }

    /// The cores in the order ranks take them.
    fn core_order(&self, map: MapBy) -> Vec<&[Cpu]> {
        match map {
            MapBy::Core => self.cores.iter().map(Vec::as_slice).collect(),
            MapBy::Socket => {
                let mut per: Vec<Vec<&[Cpu]>> = self
                    .sockets()
                    .iter()
                    .map(|&s| self.cores.iter().filter(|c| c[0].socket == s).map(Vec::as_slice).collect())
                    .collect();
                let mut order = Vec::new();
                let mut k = 0;
                while per.iter().any(|p| k < p.len()) {
                    for p in per.iter_mut() {
                        if let Some(core) = p.get(k) {
                            order.push(*core);
                        }
                    }
                    k += 1;
                }
                order
            }
        }
    }
}

/// Where each rank runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The binding in effect (the default resolved).
    pub bind: BindTo,
    /// Per rank: the CPUs it is bound to, `None` when not bound.
    pub ranks: Vec<Option<Vec<usize>>>,
    /// Why this binding, for the report: "default: 2 ranks on 2 cores".
    pub why: String,
}

/// The binding of `ranks` ranks on `topo`: `bind` as asked (`None`: the
/// default of the module documentation), ranks taking cores in `map`'s
/// order. An explicit binding that cannot give each rank its own core or
/// CPU is an error naming the counts.
pub(crate) fn plan(topo: &Topology, ranks: usize, bind: Option<BindTo>, map: MapBy) -> Result<Plan, String> {
    let cores = topo.cores.len();
    let cpus = topo.cpus();
    let list = to_list(&cpus);
    let (bind, why) = match bind {
        Some(b) => (b, format!("--bind-to {}", b.as_str())),
        None if ranks >= 2 && ranks <= cores => (BindTo::Core, format!("default: {ranks} ranks, {cores} cores allowed (CPUs {list}), one core each")),
        None if ranks < 2 => (BindTo::None, "default: a single rank is not bound".to_string()),
        None => (BindTo::None, format!("default: {ranks} ranks, more than the {cores} core(s) allowed (CPUs {list}): not bound")),
    };
    let order = topo.core_order(map);
    let ranks_cpus = match bind {
        BindTo::None => vec![None; ranks],
        BindTo::Core | BindTo::Socket => {
            if ranks > cores {
                return Err(format!(
                    "--bind-to {}: {ranks} ranks, but only {cores} core(s) are allowed here (CPUs {list}); \
                     use --bind-to none (or hwthread), or fewer ranks",
                    bind.as_str()
                ));
            }
            order[..ranks]
                .iter()
                .map(|core| {
                    let mine: Vec<usize> = if bind == BindTo::Core {
                        core.iter().map(|c| c.id).collect()
                    } else {
                        topo.cores.iter().flatten().filter(|c| c.socket == core[0].socket).map(|c| c.id).collect()
                    };
                    Some(sorted(mine))
                })
                .collect()
        }
        BindTo::HwThread => {
            if ranks > cpus.len() {
                return Err(format!(
                    "--bind-to hwthread: {ranks} ranks, but only {} CPU(s) are allowed here ({list}); \
                     use --bind-to none, or fewer ranks",
                    cpus.len()
                ));
            }
            // Distinct cores first, then their second threads, and so on.
            let depth = order.iter().map(|c| c.len()).max().unwrap_or(0);
            let threads: Vec<usize> = (0..depth).flat_map(|k| order.iter().filter_map(move |c| c.get(k).map(|t| t.id))).collect();
            threads[..ranks].iter().map(|&t| Some(vec![t])).collect()
        }
    };
    Ok(Plan { bind, ranks: ranks_cpus, why })
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

/// One rank's line of `--report-bindings`, after "goalrun: ":
/// `rank 1 (pid 4242) bound to core 1 of socket 0, CPUs 1: [./B]`, or
/// `rank 2 (pid 4243) not bound: CPUs 0-1: [B/B]`. The map has one bracket
/// per socket, the allowed CPUs of each core together, cores apart by `/`:
/// `B` where the rank may run, `.` where not (Open MPI's picture), drawn
/// over the CPUs goalrun may use. Cores and sockets are the kernel's ids.
pub(crate) fn report_line(topo: &Topology, plan: &Plan, rank: usize, pid: i32) -> String {
    let mine = plan.ranks[rank].clone().unwrap_or_else(|| topo.cpus());
    let what = match plan.ranks[rank] {
        None => "not bound".to_string(),
        Some(_) => {
            let cores: Vec<&Vec<Cpu>> = topo.cores.iter().filter(|c| c.iter().any(|t| mine.contains(&t.id))).collect();
            let sockets: Vec<usize> = {
                let mut s: Vec<usize> = cores.iter().map(|c| c[0].socket).collect();
                s.dedup();
                s
            };
            let place = match (plan.bind, cores.as_slice()) {
                (BindTo::Socket, _) => format!("socket {}", list_of(&sockets)),
                (_, [core]) => {
                    let of = if plan.bind == BindTo::HwThread { "a thread of " } else { "" };
                    format!("{of}core {} of socket {}", core[0].core, core[0].socket)
                }
                _ => format!("{} cores", cores.len()),
            };
            format!("bound to {place}")
        }
    };
    format!("rank {rank} (pid {pid}) {what}, CPUs {}: {}", to_list(&mine), picture(topo, &mine))
}

/// The `[B./..]` picture of `mine` on `topo` (see [`report_line`]).
fn picture(topo: &Topology, mine: &[usize]) -> String {
    let mut out = String::new();
    for socket in topo.sockets() {
        let cores: Vec<String> = topo
            .cores
            .iter()
            .filter(|c| c[0].socket == socket)
            .map(|c| c.iter().map(|t| if mine.contains(&t.id) { 'B' } else { '.' }).collect())
            .collect();
        out.push('[');
        out.push_str(&cores.join("/"));
        out.push(']');
    }
    out
}

fn list_of(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// The CPUs of the cgroup cpuset goalrun runs in, if one can be read: v2's
/// `cpuset.cpus.effective` in its unified cgroup, else v1's `cpuset.cpus`
/// in its cpuset cgroup.
fn cgroup_cpuset() -> Option<Vec<usize>> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = match controllers {
            "" => format!("/sys/fs/cgroup{path}/cpuset.cpus.effective"),
            c if c.split(',').any(|x| x == "cpuset") => format!("/sys/fs/cgroup/cpuset{path}/cpuset.cpus"),
            _ => continue,
        };
        if let Some(cpus) = std::fs::read_to_string(file).ok().and_then(|t| parse_list(&t)).filter(|c| !c.is_empty()) {
            return Some(cpus);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sockets` x `cores` x `threads`, numbered as Linux does: every
    /// core's first thread first, then the second threads.
    fn machine(sockets: usize, cores: usize, threads: usize) -> Topology {
        let per_thread = sockets * cores;
        Topology::from_cpus((0..per_thread * threads).map(|id| {
            let c = id % per_thread;
            Cpu { id, socket: c / cores, core: c % cores }
        }))
    }

    fn cpus_of(p: &Plan) -> Vec<Option<Vec<usize>>> {
        p.ranks.clone()
    }

    #[test]
    fn the_default_is_a_core_per_rank_until_the_ranks_outnumber_the_cores() {
        let two = machine(1, 2, 1);
        let p = plan(&two, 2, None, MapBy::Core).unwrap();
        assert_eq!(p.bind, BindTo::Core);
        assert_eq!(cpus_of(&p), vec![Some(vec![0]), Some(vec![1])]);
        let p = plan(&two, 3, None, MapBy::Core).unwrap();
        assert_eq!((p.bind, cpus_of(&p)), (BindTo::None, vec![None; 3]));
        assert!(p.why.contains("more than the 2 core(s)"), "{}", p.why);
        assert_eq!(plan(&two, 1, None, MapBy::Core).unwrap().bind, BindTo::None);
        // Hyperthreads: a core is both its threads; 4 CPUs are still 2 cores.
        let ht = machine(1, 2, 2);
        let p = plan(&ht, 2, None, MapBy::Core).unwrap();
        assert_eq!(cpus_of(&p), vec![Some(vec![0, 2]), Some(vec![1, 3])]);
        assert_eq!(plan(&ht, 3, None, MapBy::Core).unwrap().bind, BindTo::None);
    }

    #[test]
    fn mapping_by_socket_alternates_and_hwthreads_fill_cores_first() {
        let m = machine(2, 2, 2); // CPUs 0-3 first threads, 4-7 second
        let p = plan(&m, 4, Some(BindTo::Core), MapBy::Socket).unwrap();
        assert_eq!(cpus_of(&p), vec![Some(vec![0, 4]), Some(vec![2, 6]), Some(vec![1, 5]), Some(vec![3, 7])]);
        let p = plan(&m, 5, Some(BindTo::HwThread), MapBy::Core).unwrap();
        assert_eq!(cpus_of(&p), vec![Some(vec![0]), Some(vec![1]), Some(vec![2]), Some(vec![3]), Some(vec![4])]);
        let p = plan(&m, 2, Some(BindTo::Socket), MapBy::Core).unwrap();
        assert_eq!(cpus_of(&p), vec![Some(vec![0, 1, 4, 5]); 2]);
    }

    #[test]
    fn an_explicit_binding_that_cannot_be_kept_is_refused() {
        let two = machine(1, 2, 1);
        let e = plan(&two, 3, Some(BindTo::Core), MapBy::Core).unwrap_err();
        assert!(e.contains("3 ranks, but only 2 core(s)") && e.contains("CPUs 0-1"), "{e}");
        assert!(plan(&two, 3, Some(BindTo::HwThread), MapBy::Core).unwrap_err().contains("only 2 CPU(s)"));
        assert_eq!(cpus_of(&plan(&two, 5, Some(BindTo::None), MapBy::Core).unwrap()), vec![None; 5]);
    }

    #[test]
    fn the_allowed_set_is_what_is_shared_out() {
        // As under `taskset -c 2,3`: the ranks get CPUs 2 and 3.
        let t = Topology::from_cpus([2, 3].map(|id| Cpu { id, socket: 0, core: id }));
        assert_eq!(cpus_of(&plan(&t, 2, None, MapBy::Core).unwrap()), vec![Some(vec![2]), Some(vec![3])]);
    }

    #[test]
    fn report_lines_name_the_cpus_and_draw_them() {
        let two = machine(1, 2, 1);
        let p = plan(&two, 2, None, MapBy::Core).unwrap();
        assert_eq!(report_line(&two, &p, 1, 42), "rank 1 (pid 42) bound to core 1 of socket 0, CPUs 1: [./B]");
        let p = plan(&two, 3, None, MapBy::Core).unwrap();
        assert_eq!(report_line(&two, &p, 2, 7), "rank 2 (pid 7) not bound, CPUs 0-1: [B/B]");
        let m = machine(2, 2, 2);
        let p = plan(&m, 2, Some(BindTo::Socket), MapBy::Socket).unwrap();
        assert_eq!(report_line(&m, &p, 1, 1), "rank 1 (pid 1) bound to socket 1, CPUs 2-3,6-7: [../..][BB/BB]");
    }
}
