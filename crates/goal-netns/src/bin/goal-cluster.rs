//! `goal-cluster`: an emulated cluster from the shell, for benchmarks and
//! for poking at one by hand. A thin skin over the `goal_netns` library:
//! arguments are read as given ([`LowArgs`]), turned into an [`Action`] with
//! typed values, and the action calls the library.
//!
//! Clusters made here are *named* and outlive the command (`up` ... `down`);
//! see `docs/cluster.md`.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;
use std::time::Duration;

use goal_netns::probe::{self, SINK_COMMAND, SOURCE_COMMAND};
use goal_netns::{plan, Cluster, Rate, Slurm, Spec};

const USAGE: &str = "\
usage: goal-cluster COMMAND [OPTIONS]

  up      --name NAME [--hosts N (2)] [--rails R (1)] [--rate RATE|none (none)]
          build a cluster and leave it; prints its namespaces and addresses
  show    --name NAME                  print them again
  exec    --name NAME --host I -- PROGRAM [ARGS...]
          run PROGRAM on host I (its namespace and hostname)
  mpirun  --name NAME --np N --per-host P [--rails 0,1] [--mpich] -- PROGRAM [ARGS...]
          an Open MPI (or MPICH) job across the hosts, launched from host 0
  srun    --name NAME -- SRUN_ARGS...
          start Slurm on the cluster (munged; slurmctld on host 0; a slurmd
          per host), run `srun SRUN_ARGS...` on host 0, stop Slurm; fails
          with Slurm's logs if srun does
  measure --name NAME [--from I (0)] [--to J (1)] [--rails 0,1 (all)] [--seconds S (2)]
          TCP from host I to host J, one connection per rail, as the receiver saw it
  rail    --name NAME --host I --rail R --state up|down
          plug or pull one cable: take host I's rail R down or up
  down    --name NAME                  remove the cluster
  gc                                   remove leftovers of dead test processes
  sink    [--port P (0)] [--connections N (1)] [--timeout S (60)]
  source  --to ADDR:PORT [--seconds S (2)]
          the two ends of `measure`

RATE is written like tc writes it: 1gbit, 100mbit, 2.5gbit.
Output lines are `KIND key=value ...`, one record a line.";

fn main() -> ExitCode {
    let low = match LowArgs::parse(std::env::args_os().skip(1)) {
        Ok(low) => low,
        Err(msg) => return usage_error(&msg),
    };
    let action = match Action::from_low(low) {
        Ok(action) => action,
        Err(msg) => return usage_error(&msg),
    };
    match action.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("goal-cluster: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    if msg.is_empty() {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    eprintln!("goal-cluster: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

/// Stage one: the command line as given, `--flag value` pairs and the words
/// after `--`, with no meaning attached yet.
struct LowArgs {
    command: String,
    values: Vec<(String, String)>,
    switches: Vec<String>,
    rest: Vec<OsString>,
}

/// Flags that take no value.
const SWITCHES: [&str; 1] = ["--mpich"];

impl LowArgs {
    /// `Err("")` asks for the usage text.
    fn parse(args: impl Iterator<Item = OsString>) -> Result<LowArgs, String> {
        let mut args = args.peekable();
        let command = match args.next().map(|a| a.into_string()) {
            None => return Err(String::new()),
            Some(Ok(c)) if c == "help" || c == "-h" || c == "--help" => return Err(String::new()),
            Some(Ok(c)) => c,
            Some(Err(c)) => return Err(format!("bad command {c:?}")),
        };
        let mut low = LowArgs {
            command,
            values: Vec::new(),
            switches: Vec::new(),
            rest: Vec::new(),
        };
        while let Some(arg) = args.next() {
            let flag = arg
                .into_string()
                .map_err(|a| format!("bad argument {a:?}"))?;
            if flag == "--" {
                low.rest.extend(args.by_ref());
            } else if SWITCHES.contains(&flag.as_str()) {
                low.switches.push(flag);
            } else if flag.starts_with("--") {
                let value = args
                    .next()
                    .and_then(|v| v.into_string().ok())
                    .ok_or_else(|| format!("{flag} needs a value"))?;
                low.values.push((flag, value));
            } else {
                return Err(format!("unexpected {flag:?} (a program goes after `--`)"));
            }
        }
        Ok(low)
    }
}

/// Stage two: what to do, with every value parsed.
enum Action {
    Up {
        name: String,
        spec: Spec,
    },
    Show {
        name: String,
    },
    Exec {
        name: String,
        host: usize,
        program: Vec<OsString>,
    },
    Mpirun {
        name: String,
        np: usize,
        per_host: usize,
        rails: Option<Vec<usize>>,
        mpich: bool,
        program: Vec<OsString>,
    },
    Srun {
        name: String,
        args: Vec<OsString>,
    },
    Measure {
        name: String,
        from: usize,
        to: usize,
        rails: Option<Vec<usize>>,
        seconds: f64,
    },
    Rail {
        name: String,
        host: usize,
        rail: usize,
        up: bool,
    },
    Down {
        name: String,
    },
    Gc,
    Sink {
        port: u16,
        connections: usize,
        timeout: f64,
    },
    Source {
        to: SocketAddr,
        seconds: f64,
    },
}

/// Reads the flags of one command, refusing any it does not take.
struct Flags {
    low: LowArgs,
}

impl Flags {
    fn take(&mut self, flag: &str) -> Option<String> {
        let i = self.low.values.iter().position(|(f, _)| f == flag)?;
        Some(self.low.values.remove(i).1)
    }

    fn parsed<T: std::str::FromStr>(&mut self, flag: &str, default: Option<T>) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        match self.take(flag) {
            Some(v) => v.parse().map_err(|e| format!("{flag} {v}: {e}")),
            None => default.ok_or_else(|| format!("{flag} is required")),
        }
    }

    fn switch(&mut self, flag: &str) -> bool {
        let had = self.low.switches.iter().any(|s| s == flag);
        self.low.switches.retain(|s| s != flag);
        had
    }

    fn rails(&mut self) -> Result<Option<Vec<usize>>, String> {
        self.take("--rails")
            .map(|list| {
                list.split(',')
                    .map(|r| r.trim().parse().map_err(|e| format!("--rails {list}: {e}")))
                    .collect()
            })
            .transpose()
    }

    fn program(&mut self) -> Result<Vec<OsString>, String> {
        if self.low.rest.is_empty() {
            return Err(format!("{} needs a program after `--`", self.low.command));
        }
        Ok(std::mem::take(&mut self.low.rest))
    }

    /// Fails on whatever the command did not take.
    fn done(self) -> Result<(), String> {
        let left: Vec<&str> = self
            .low
            .values
            .iter()
            .map(|(f, _)| f.as_str())
            .chain(self.low.switches.iter().map(String::as_str))
            .collect();
        if !left.is_empty() {
            return Err(format!(
                "{} does not take {}",
                self.low.command,
                left.join(", ")
            ));
        }
        if !self.low.rest.is_empty() {
            return Err(format!("{} takes no program", self.low.command));
        }
        Ok(())
    }
}

impl Action {
    fn from_low(low: LowArgs) -> Result<Action, String> {
        let command = low.command.clone();
        let mut f = Flags { low };
        let action = match command.as_str() {
            "up" => {
                let name: String = f.parsed("--name", None)?;
                let mut spec =
                    Spec::new(f.parsed("--hosts", Some(2))?, f.parsed("--rails", Some(1))?)
                        .name(&name);
                match f.take("--rate").as_deref() {
                    None | Some("none") => {}
                    Some(rate) => {
                        spec = spec.rate(rate.parse::<Rate>().map_err(|e| e.to_string())?)
                    }
                }
                Action::Up { name, spec }
            }
            "show" => Action::Show {
                name: f.parsed("--name", None)?,
            },
            "exec" => Action::Exec {
                name: f.parsed("--name", None)?,
                host: f.parsed("--host", None)?,
                program: f.program()?,
            },
            "mpirun" => Action::Mpirun {
                name: f.parsed("--name", None)?,
                np: f.parsed("--np", None)?,
                per_host: f.parsed("--per-host", None)?,
                rails: f.rails()?,
                mpich: f.switch("--mpich"),
                program: f.program()?,
            },
            "srun" => Action::Srun {
                name: f.parsed("--name", None)?,
                args: f.program()?,
            },
            "measure" => Action::Measure {
                name: f.parsed("--name", None)?,
                from: f.parsed("--from", Some(0))?,
                to: f.parsed("--to", Some(1))?,
                rails: f.rails()?,
                seconds: f.parsed("--seconds", Some(2.0))?,
            },
            "rail" => Action::Rail {
                name: f.parsed("--name", None)?,
                host: f.parsed("--host", None)?,
                rail: f.parsed("--rail", None)?,
                up: match f.parsed::<String>("--state", None)?.as_str() {
                    "up" => true,
                    "down" => false,
                    other => return Err(format!("--state {other}: say up or down")),
                },
            },
            "down" => Action::Down {
                name: f.parsed("--name", None)?,
            },
            "gc" => Action::Gc,
            SINK_COMMAND => Action::Sink {
                port: f.parsed("--port", Some(0))?,
                connections: f.parsed("--connections", Some(1))?,
                timeout: f.parsed("--timeout", Some(60.0))?,
            },
            SOURCE_COMMAND => Action::Source {
                to: f.parsed("--to", None)?,
                seconds: f.parsed("--seconds", Some(2.0))?,
            },
            other => return Err(format!("unknown command {other:?}")),
        };
        f.done()?;
        Ok(action)
    }

    fn run(self) -> Result<(), String> {
        match self {
            Action::Up { name, spec } => {
                let cluster = Cluster::create(&spec).map_err(|e| e.to_string())?;
                print_cluster(&name, &cluster);
                cluster
                    .keep()
                    .map_err(|_| "a named cluster could not be kept".to_string())
            }
            Action::Show { name } => {
                print_cluster(&name, &attach(&name)?);
                Ok(())
            }
            Action::Exec {
                name,
                host,
                program,
            } => {
                let cluster = attach(&name)?;
                check_host(&cluster, host)?;
                let mut cmd = cluster.host(host).command(&program[0]);
                cmd.args(&program[1..]);
                Err(format!("could not run {:?}: {}", program[0], cmd.exec()))
            }
            Action::Mpirun {
                name,
                np,
                per_host,
                rails,
                mpich,
                program,
            } => {
                let cluster = attach(&name)?;
                let mut cmd = if mpich {
                    cluster.mpiexec_mpich(np, per_host, rails.as_deref(), &program)
                } else {
                    cluster.mpirun_openmpi(np, per_host, rails.as_deref(), &program)
                }
                .map_err(|e| e.to_string())?;
                Err(format!("could not run the MPI launcher: {}", cmd.exec()))
            }
            Action::Srun { name, args } => {
                let cluster = attach(&name)?;
                let slurm = Slurm::start(&cluster).map_err(|e| format!("starting Slurm: {e}"))?;
                // The daemons are this process' children: srun runs to its
                // end here (not exec'd), then they are stopped.
                let status = slurm
                    .srun()
                    .args(&args)
                    .status()
                    .map_err(|e| format!("could not run srun: {e}"))?;
                if status.success() {
                    return slurm.stop().map_err(|e| format!("stopping Slurm: {e}"));
                }
                Err(format!("srun {status}; Slurm's logs:\n{}", slurm.logs()))
            }
            Action::Measure {
                name,
                from,
                to,
                rails,
                seconds,
            } => {
                let cluster = attach(&name)?;
                check_host(&cluster, from)?;
                check_host(&cluster, to)?;
                let rails = rails.unwrap_or_else(|| (0..cluster.rails()).collect());
                let me =
                    std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
                let rates = cluster
                    .measure_tcp(&me, from, to, &rails, duration(seconds)?)
                    .map_err(|e| e.to_string())?;
                for r in &rates {
                    println!(
                        "rail rail={} bytes={} seconds={:.3} gbit_per_s={:.3}",
                        r.rail,
                        r.bytes,
                        r.seconds,
                        r.gbit_per_sec()
                    );
                }
                println!(
                    "total gbit_per_s={:.3}",
                    rates.iter().map(|r| r.gbit_per_sec()).sum::<f64>()
                );
                Ok(())
            }
            Action::Rail {
                name,
                host,
                rail,
                up,
            } => attach(&name)?
                .set_rail(host, rail, up)
                .map_err(|e| e.to_string()),
            Action::Down { name } => Cluster::remove_named(&name).map_err(|e| e.to_string()),
            Action::Gc => {
                for removed in goal_netns::gc().map_err(|e| e.to_string())? {
                    println!("removed {removed}");
                }
                Ok(())
            }
            Action::Sink {
                port,
                connections,
                timeout,
            } => {
                let listener = std::net::TcpListener::bind(("0.0.0.0", port))
                    .map_err(|e| format!("listen on port {port}: {e}"))?;
                let port = listener.local_addr().map_err(|e| e.to_string())?.port();
                println!("listening {port}");
                let mut out = std::io::stdout();
                probe::sink(&listener, connections, duration(timeout)?, &mut out)
                    .map_err(|e| e.to_string())
            }
            Action::Source { to, seconds } => {
                let sent = probe::source(to, duration(seconds)?).map_err(|e| e.to_string())?;
                println!("sent {sent}");
                Ok(())
            }
        }
    }
}

fn attach(name: &str) -> Result<Cluster, String> {
    Cluster::attach(name).map_err(|e| e.to_string())
}

fn check_host(cluster: &Cluster, host: usize) -> Result<(), String> {
    if host < cluster.hosts() {
        Ok(())
    } else {
        Err(format!(
            "no host {host}: the cluster has {}",
            cluster.hosts()
        ))
    }
}

fn duration(seconds: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{seconds} seconds: {e}"))
}

/// `cluster ...` then one `host ...` line per host.
fn print_cluster(name: &str, cluster: &Cluster) {
    let rate = cluster
        .rate()
        .map_or_else(|| "none".to_string(), |r| r.to_string());
    println!(
        "cluster name={name} hosts={} rails={} rate={rate} switch={} workdir={}",
        cluster.hosts(),
        cluster.rails(),
        cluster.switch_namespace(),
        cluster.workdir().display()
    );
    for host in cluster.all_hosts() {
        let mut line = format!(
            "host index={} hostname={} netns={}",
            host.index(),
            host.hostname(),
            host.namespace()
        );
        for rail in 0..cluster.rails() {
            line += &format!(
                " {}={}/{}",
                plan::rail_interface(rail),
                host.addr(rail),
                plan::PREFIX_LEN
            );
        }
        println!("{line}");
    }
}
