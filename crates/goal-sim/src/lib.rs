//! goal-sim: a LogGOPS simulator of GOAL schedules that gives LogGOPSim's
//! results, at the scale of millions of ranks.
//!
//! A schedule (every rank's operations and dependencies) is held as a
//! [`Program`] ([`program`]: struct-of-arrays, 16 bytes per operation plus 4
//! per dependency), built from a text file ([`text`]) or from goal's own
//! collective builders ([`coll`]). [`simulate`] runs it under the LogGOPS
//! model with LogGOPSim's exact semantics ([`Params`]: L, o, g, G, O, S;
//! cpus and nics as separate resources per host; eager and rendezvous
//! messages; requires and irequires) and returns each host's finish time
//! ([`Outcome`]). Where LogGOPSim depends on an unstable sort, goal keeps
//! program order (see `engine`), the only difference.
//!
//! A schedule that cannot finish (a receive never matched, a rendezvous
//! send never received) does not hang: the simulation ends when no event is
//! left, and [`Outcome::left`] says what is left, on which rank, waiting
//! for what ([`report`]). On request, [`Outcome::critical_path`] names the
//! chain of operations that set the finish time.
//!
//! Every simulated activity (a cpu or nic busy with an operation, a message
//! on the wire) can be handed to an [`Observer`], for a timeline.
//!
//! Pure: no I/O beyond reading the input, no `unsafe`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod coll;
mod engine;
mod matchq;
pub mod program;
mod queue;
pub mod report;
pub mod text;

pub use program::{Program, ProgramBuilder};
pub use report::{CriticalStep, Left, LeftItem};

/// The LogGOPS parameters, in nanoseconds and bytes, as LogGOPSim names
/// them. [`Default`] gives LogGOPSim's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// L: latency of the network.
    pub l: u64,
    /// o: cpu overhead per message (send and receive).
    pub o: u64,
    /// g: nic gap per message.
    pub g: u64,
    /// G: nic gap per byte, in picoseconds (LogGOPSim's whole ns x 1000:
    /// a calibrated shared-memory G is a fraction of a ns).
    pub big_g_ps: u64,
    /// O: cpu overhead per byte, in picoseconds.
    pub big_o_ps: u64,
    /// S: messages of more than S bytes go by rendezvous.
    pub s: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params { l: 2500, o: 1500, g: 1000, big_g_ps: 6000, big_o_ps: 0, s: 65535 }
    }
}

/// What an [`Activity`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// A send's overhead (cpu) or gap (nic).
    Send,
    /// A message taken by its destination: overhead (cpu) or gap (nic);
    /// or a receive completed from the unexpected queue (no time).
    Recv,
    /// Local work.
    Calc,
    /// A message in the network, from the end of the send's overhead to
    /// its arrival (`o + L` after the send started).
    Transfer,
}

/// What an activity occupied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A cpu of the host.
    Cpu(u32),
    /// A nic of the host.
    Nic(u32),
    /// The network (a message in flight).
    Network,
}

/// One thing that took simulated time, handed to an [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activity {
    /// The rank (host) it happened on (for a transfer: the sender).
    pub rank: u32,
    /// The operation (index in the rank). For a message taken before its
    /// receive was posted, `u32::MAX` (the receive is not known yet).
    pub op: u32,
    /// What it was.
    pub what: What,
    /// Start and end, in ns.
    pub start: u64,
    /// End, in ns (not before `start`).
    pub end: u64,
    /// The other rank of a send, receive or transfer.
    pub peer: Option<u32>,
    /// Bytes (calc: units of work).
    pub bytes: u64,
    /// What it occupied.
    pub resource: Resource,
}

/// Sees every activity of a simulation, in the order simulated (which is
/// the order of start times, except that a message's transfer is reported
/// with its send).
pub trait Observer {
    /// Called once per activity.
    fn activity(&mut self, a: &Activity);
}

/// No observer: costs nothing.
impl Observer for () {
    #[inline(always)]
    fn activity(&mut self, _: &Activity) {}
}

impl<F: FnMut(&Activity)> Observer for F {
    fn activity(&mut self, a: &Activity) {
        self(a)
    }
}

/// Options of a simulation beyond the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep what the critical path needs (24 bytes per operation).
    pub critical_path: bool,
    /// Name at most this many leftover operations in [`Outcome::left`]
    /// (all are counted); 0 means 20.
    pub max_left: usize,
}

/// What a simulation found.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Each host's finish time: the time its last cpu became free (what
    /// LogGOPSim prints as `Host i: t`).
    pub finish: Vec<u64>,
    /// Events simulated (operations started, messages taken, retries).
    pub events: u64,
    /// Operations that finished.
    pub done: u64,
    /// Operations in the schedule.
    pub ops: u64,
    /// What could not finish, if anything.
    pub left: Option<Left>,
    /// The chain of operations that ended last, latest first (on request).
    pub critical_path: Vec<CriticalStep>,
    /// Most events waiting at once.
    pub peak_events: usize,
    /// Bytes of simulation state (besides the program).
    pub state_bytes: u64,
}

impl Outcome {
    /// Whether every operation finished.
    pub fn complete(&self) -> bool {
        self.left.is_none()
    }
    /// The latest finish time and the first host that has it (host 0 if
    /// all are 0), as LogGOPSim picks it.
    pub fn max(&self) -> (u32, u64) {
        let mut best = (0u32, 0u64);
        for (h, &t) in self.finish.iter().enumerate() {
            if t > best.1 {
                best = (h as u32, t);
            }
        }
        best
    }
}

/// Simulates `p` under `prm`, handing every activity to `obs`.
pub fn simulate_with<O: Observer>(p: &Program, prm: Params, opts: Options, obs: O) -> Outcome {
    let mut e = engine::Engine::new(p, prm, obs, opts.critical_path);
    e.start();
    e.run();
    let finish: Vec<u64> = (0..p.num_ranks).map(|h| e.cpu_times(h).iter().copied().max().unwrap_or(0)).collect();
    let mut out = Outcome {
        finish,
        events: e.events,
        done: e.done,
        ops: p.num_ops(),
        peak_events: e.queue.peak,
        state_bytes: (e.pending.capacity() * 4 + e.clock.capacity() * 8) as u64
            + e.rq.memory()
            + e.uq.memory()
            + e.queue.memory(),
        ..Outcome::default()
    };
    if e.done < p.num_ops() || e.uq.len() > 0 || e.rq.len() > 0 {
        out.left = Some(report::leftover(&e, if opts.max_left == 0 { 20 } else { opts.max_left }));
    }
    if let Some(tr) = &e.trail {
        let host = out.max().0;
        out.critical_path = report::critical_path(p, tr, e.cpu_times(host), host as usize * e.stride);
    }
    out
}

/// Simulates `p` under `prm`.
pub fn simulate(p: &Program, prm: Params) -> Outcome {
    simulate_with(p, prm, Options::default(), ())
}

/// `x` as C++'s `std::cout << x` prints a double by default (`%g`, six
/// significant digits): how LogGOPSim prints the maximum in seconds.
pub fn format_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exp = x.abs().log10().floor() as i32;
    // Round to 6 significant digits first: that may change the exponent.
    let e = format!("{:.5e}", x);
    let (mant, ex) = e.split_once('e').unwrap_or((&e, "0"));
    let ex: i32 = ex.parse().unwrap_or(exp);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&ex) {
        let sign = if ex < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), ex.abs())
    } else {
        let decimals = (5 - ex).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn doubles_print_as_cout_prints_them() {
        assert_eq!(format_g(27500.0 / 1e9), "2.75e-05");
        assert_eq!(format_g(3005494.0 / 1e9), "0.00300549");
        assert_eq!(format_g(2956071552.0 / 1e9), "2.95607");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(123456789.0), "1.23457e+08");
        assert_eq!(format_g(999999.5), "1e+06");
        assert_eq!(format_g(1.5), "1.5");
    }
}
