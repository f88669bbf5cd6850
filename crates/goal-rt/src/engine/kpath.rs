//! The `kernel` progress mode: small messages on channels of their own, and runs of dependent sends and receives handed to the kernel
//! as linked io_uring chains.
//!
//! # Channels
//!
//! A channel is a `SOCK_SEQPACKET` socket pair that carries the messages of
//! one send operation of one schedule, execution after execution. Its
//! sender makes the channels of a schedule when the schedule runs a second
//! time (`Engine::start`: worth them), and offers each the next time its
//! operation goes out eagerly to a peer on this machine, in that message's
//! envelope (`MODE_OFFER`,
//! the descriptor number); the receiver takes its end with `pidfd_getfd`
//! and answers `ACCEPT`, or `DECLINE` when its receive cannot be bound to
//! one sender's operation for good. At the operation's next execution the
//! sender marks its message `MODE_SWITCH`; every later execution sends on
//! the channel. Each side thus switches at a point the other can see, and
//! no other agreement between ranks is needed: a rank without the kernel
//! mode declines every offer.
//!
//! Between ranks on different machines a channel is a TCP connection of
//! its own (goal-net's connections carry everything else, framed, and a
//! receive in the kernel would take whatever comes next on them). The
//! sender listens on a port the kernel picks and offers the port, with a
//! nonce, in place of a descriptor; the receiver connects, introduces
//! itself with a hello that carries the job secret's MAC over both ranks,
//! the operation and the nonce, and then answers `ACCEPT`. The sender
//! takes the connection when the answer comes, checks the hello, and
//! closes the listener. A receive on a TCP channel asks for exactly the
//! message's length, which the offer fixed for good (a stream keeps no
//! boundaries: a sender that sent more would be caught by nothing else).
//!
//! A receive may be bound to a channel only if the message it takes is the
//! same one every time: the schedule has no wildcard receive, and the
//! receive is the only one from that sender with that tag or all receives
//! from that sender lie on one chain (so they are posted in a fixed order).
//! The sender checks the same of its side. The message's length is fixed by
//! the schedule, so a receive posted in the kernel asks for exactly that
//! length (see kchain's table of what a socket delivers).
//!
//! # Chains
//!
//! When a channel operation becomes ready, it goes to the kernel together
//! with the operations after it on its chain (`goal_sched::chains`) that are
//! channel operations too, linked: a broadcast's receive-then-forward, a
//! ping-pong's two hundred turns, a barrier's rounds run as task work of
//! the thread that submitted them, while it computes or sleeps, without a
//! helper waking. An operation that nothing outside its run waits for is
//! *quiet*: it posts no completion, the run's end vouches for it. Joins,
//! local operations and everything else run in user space as in the other
//! modes.
//!
//! # One execution of a schedule at a time
//!
//! A channel holds the messages of successive executions in order, and a
//! receive posted in the kernel takes whatever comes next. So in this mode
//! a rank starts an execution of a schedule only once its previous one has
//! ended; a later Run is held until then (it cannot deadlock: an execution
//! never waits for a later one of its schedule).

use super::exec::SchedInner;
use crate::proto::SchedId;
use crate::error::{Error, ErrorKind};
use goal_sched::chains::ChainPlan;
use goal_sched::{OpKind, Schedule};
use goal_transport::kchain::KRing;
use std::collections::VecDeque;
use goal_transport::kchain::SockType;
use std::net::{IpAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Added to the dependency counter of an operation already in the kernel
/// (behind another one of its run), so that it never becomes ready again in
/// user space as its prerequisites finish.
pub(crate) const IN_KERNEL: u32 = 1 << 30;

/// The state of one operation's channel.
pub(crate) enum Chan {
    /// Not tried yet.
    Untried,
    /// Never: not eligible, or declined.
    Never,
    /// Sender: made, to be offered with the next eager message.
    Ready { mine: OwnedFd, theirs: OwnedFd },
    /// Sender: offered in a message, waiting for the answer. Holds both
    /// ends (the receiver takes a duplicate of `theirs`).
    Offered { mine: OwnedFd, theirs: OwnedFd },
    /// Sender to another machine: listening for the receiver's
    /// connection, to be offered with the next eager message.
    Listening { listener: TcpListener, port: u16, nonce: u32 },
    /// Sender to another machine: the port offered, waiting for the answer.
    ListenOffered { listener: TcpListener, nonce: u32 },
    /// Sender: accepted; the next message says `MODE_SWITCH`. `theirs` is
    /// the receiver's end of a local channel (none over TCP).
    Accepted { mine: OwnedFd, theirs: Option<OwnedFd> },
    /// Sender: switched; every message goes on the channel.
    Sending { mine: OwnedFd, _theirs: Option<OwnedFd> },
    /// Receiver: bound, waiting for the sender's switch.
    Bound { fd: OwnedFd, len: u32, sock: SockType },
    /// Receiver: switched; every message comes on the channel.
    Receiving { fd: OwnedFd, len: u32, sock: SockType },
}

impl Chan {
    /// The descriptors it holds in this process.
    fn fds(&self) -> usize {
        match self {
            Chan::Ready { .. } | Chan::Offered { .. } => 2,
            Chan::Accepted { theirs, .. } | Chan::Sending { _theirs: theirs, .. } => 1 + usize::from(theirs.is_some()),
            Chan::Listening { .. } | Chan::ListenOffered { .. } | Chan::Bound { .. } | Chan::Receiving { .. } => 1,
            Chan::Untried | Chan::Never => 0,
        }
    }
}

/// What the schedule allows, per side (computed once per schedule).
pub(crate) struct SchedInfo {
    pub plan: ChainPlan,
    /// No receive of the schedule is a wildcard.
    pub no_wildcards: bool,
}

impl SchedInfo {
    pub fn new(s: &Schedule) -> SchedInfo {
        let no_wildcards = s.ops.iter().all(|o| {
            !matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) || (o.peer >= 0 && o.tag >= 0)
        });
        SchedInfo {
            plan: goal_sched::chains::plan(s),
            no_wildcards,
        }
    }

    /// Whether op `i` (a send or receive) always pairs with the same
    /// operation of its peer, as far as this side can tell.
    pub fn deterministic(&self, s: &Schedule, i: usize) -> bool {
        let o = &s.ops[i];
        let send = matches!(o.kind(), OpKind::Send | OpKind::SendVec);
        let same = |p: &goal_sched::OpRec| {
            matches!(p.kind(), OpKind::Send | OpKind::SendVec) == send
                && matches!(
                    p.kind(),
                    OpKind::Send | OpKind::SendVec | OpKind::Recv | OpKind::RecvVec
                )
                && p.peer == o.peer
                && p.tag == o.tag
        };
        let unique = s.ops.iter().filter(|p| same(p)).count() == 1;
        let ordered = if send {
            self.plan.sends_in_order_to(o.peer as u32)
        } else {
            self.plan.receives_in_order_from(o.peer as u32)
        };
        self.no_wildcards && (unique || ordered)
    }
}

/// An operation in the kernel.
#[derive(Clone, Copy)]
pub(crate) struct KRec {
    /// Its execution's slot, generation and op index (engine `OpRef`).
    pub slot: u32,
    pub gen: u32,
    pub op: u32,
    /// The run it belongs to and its place there.
    pub run: u32,
    pub pos: u32,
    /// The peer, and the bytes it moves.
    pub peer: u32,
    pub len: u32,
}

/// Operations submitted together as one chain.
pub(crate) struct Run {
    /// Their `user_data`, in order.
    pub ops: Vec<u64>,
    /// The first not yet finished.
    pub next: usize,
    /// Completions (real or implied) still to come.
    pub live: usize,
}

/// The kernel mode's state, owned by the engine.
/// What the kernel mode keeps of one schedule (see [`KPath::scheds`]).
pub(crate) struct KSched {
    /// Per op: its channel.
    pub chans: Vec<Chan>,
    /// What it allows (made at its first execution).
    pub info: Arc<SchedInfo>,
    /// Executions held until the previous one ends (slots).
    pub held: VecDeque<u32>,
    /// Whether the schedule still exists.
    alive: Weak<SchedInner>,
}

pub(crate) struct KPath {
    pub ring: KRing,
    /// Per live schedule that ran here, by id: its channels, what it
    /// allows, its held executions. Keyed rather than indexed by id, so
    /// that a program compiling and freeing a schedule per step keeps it
    /// as small as its live schedules (issue 39).
    pub scheds: std::collections::HashMap<SchedId, KSched>,
    /// Operations in the kernel, by `user_data`.
    pub ops: Vec<Option<KRec>>,
    free_ops: Vec<u32>,
    pub runs: Vec<Option<Run>>,
    free_runs: Vec<u32>,
    /// Completions reaped and not yet handled.
    pub reaped: Vec<(u64, i32)>,
    /// Counters for the debug line at the end.
    pub stats: Stats,
    /// Descriptors held by channels, and how many they may hold: half of
    /// the soft `RLIMIT_NOFILE`, so that the application's own files never
    /// run out because of them (past it, sends keep the user-space path).
    pub fds: usize,
    pub fd_budget: usize,
    /// Peers on other machines reported lost while operations on their TCP
    /// channels were in the kernel: when to fail those that are left, and
    /// why (see [`KPath::watch_lost`]).
    pub lost: Vec<(u32, Instant, String)>,
    /// Where receives of empty messages on TCP channels put the byte that
    /// stands for them (written by the kernel, never read).
    sink: Box<std::cell::UnsafeCell<[u8; 1]>>,
    /// Operations ready for the kernel that a thread other than a carrier
    /// made ready (see `kernel::mark_carrier`), in order; and whether there
    /// are any, for the helper to read without the engine lock.
    pub(super) deferred: VecDeque<super::OpRef>,
    pub deferred_flag: Arc<std::sync::atomic::AtomicBool>,
}

/// The byte a send of an empty message puts on a TCP channel.
pub(crate) static ONE_BYTE: [u8; 1] = [0];

/// What the kernel mode did, for `GOAL_DEBUG`.
#[derive(Default, Clone, Copy)]
pub(crate) struct Stats {
    /// Channels bound (as sender) and accepted (as receiver).
    pub channels_out: u64,
    pub channels_in: u64,
    /// Of these, those over TCP (to and from other machines).
    pub tcp_out: u64,
    pub tcp_in: u64,
    /// Offers declined by receivers.
    pub declined: u64,
    /// Operations and runs handed to the kernel.
    pub kernel_ops: u64,
    pub runs: u64,
    /// Completions user space had to handle.
    pub completions: u64,
}

impl KPath {
    pub fn new(ring: KRing, deferred_flag: Arc<std::sync::atomic::AtomicBool>) -> KPath {
        KPath {
            ring,
            scheds: std::collections::HashMap::new(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            runs: Vec::new(),
            free_runs: Vec::new(),
            reaped: Vec::new(),
            stats: Stats::default(),
            fds: 0,
            fd_budget: fd_budget(),
            lost: Vec::new(),
            sink: Box::new(std::cell::UnsafeCell::new([0])),
            deferred: VecDeque::new(),
            deferred_flag,
        }
    }

    /// Peer `peer`, on another machine, was lost (`why`). Its TCP channels
    /// report that themselves: a receive gets the bytes the peer sent
    /// before it went away, then the end of the stream. But they arrive on
    /// connections of their own, so they may still be on their way when
    /// goal-net sees the peer leave: failing the operations at once would
    /// fail executions whose messages came. Those still in the kernel
    /// after [`LOST_GRACE`] (a peer that is unreachable, not gone, never
    /// closes its channels) fail then.
    pub fn watch_lost(&mut self, peer: u32, why: String) {
        if !self.lost.iter().any(|l| l.0 == peer) {
            self.lost.push((peer, Instant::now() + LOST_GRACE, why));
        }
    }

    /// The peers whose grace has passed, with why they were lost.
    pub fn overdue(&mut self) -> Vec<(u32, String)> {
        if self.lost.is_empty() {
            return Vec::new();
        }
        let now = Instant::now();
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.lost).into_iter().partition(|l| l.1 <= now);
        self.lost = keep;
        due.into_iter().map(|(p, _, why)| (p, why)).collect()
    }

    /// The byte that receives of empty messages on TCP channels write.
    pub fn sink(&self) -> *mut u8 {
        self.sink.get().cast()
    }

    /// Closes the channels of schedules that no longer exist.
    fn sweep(&mut self) {
        let fds = &mut self.fds;
        self.scheds.retain(|_, k| {
            let keep = k.alive.strong_count() > 0;
            if !keep {
                for ch in k.chans.drain(..) {
                    *fds -= ch.fds();
                }
            }
            keep
        });
    }

    /// Whether channels may hold `n` more descriptors.
    pub fn room_for(&self, n: usize) -> bool {
        self.fds + n <= self.fd_budget
    }

    /// Makes the info and channel table of `sched` at its first execution.
    /// The channels of schedules the application has freed are closed
    /// then, and their entries go.
    pub fn prepare(&mut self, sched: &Arc<SchedInner>) {
        if !self.scheds.contains_key(&sched.id) {
            self.sweep();
            let s = &sched.s;
            let k = KSched {
                chans: (0..s.ops.len()).map(|_| Chan::Untried).collect(),
                info: Arc::new(SchedInfo::new(s)),
                held: VecDeque::new(),
                alive: Arc::downgrade(sched),
            };
            self.scheds.insert(sched.id, k);
        }
    }

    pub fn chan(&self, id: SchedId, op: u32) -> Option<&Chan> {
        self.scheds.get(&id)?.chans.get(op as usize)
    }

    pub fn chan_mut(&mut self, id: SchedId, op: u32) -> Option<&mut Chan> {
        self.scheds.get_mut(&id)?.chans.get_mut(op as usize)
    }

    /// What schedule `id` allows, if it ran here.
    pub fn info(&self, id: SchedId) -> Option<Arc<SchedInfo>> {
        self.scheds.get(&id).map(|k| k.info.clone())
    }

    /// Makes the channels of schedule `id`'s sends that may have one: a
    /// contiguous send whose pairing is fixed, to a peer `route` gives a way
    /// to. Called at the schedule's second execution, so that a schedule
    /// run once costs nothing, and in one go, so that the system calls
    /// (about 30 us per channel) do not sit between two messages.
    pub fn make_channels(&mut self, id: SchedId, s: &Schedule, route: impl Fn(&goal_sched::OpRec) -> Option<Route>) {
        let Some(info) = self.info(id) else { return };
        for (i, o) in s.ops.iter().enumerate() {
            let Some(ch) = self.scheds.get_mut(&id).and_then(|k| k.chans.get_mut(i)) else { return };
            if !matches!(ch, Chan::Untried) || o.kind() != OpKind::Send {
                continue;
            }
            let route = route(o).filter(|_| info.deterministic(s, i));
            *ch = match route {
                Some(Route::Local) if self.fds + 2 <= self.fd_budget => match goal_transport::kchain::seqpacket_channel() {
                    Ok((mine, theirs)) => {
                        self.fds += 2;
                        Chan::Ready { mine, theirs }
                    }
                    Err(_) => Chan::Never,
                },
                Some(Route::Tcp(ip)) if self.fds < self.fd_budget => match goal_transport::kchain::tcp_channel_listener(ip) {
                    Ok((listener, port)) => {
                        self.fds += 1;
                        Chan::Listening { listener, port, nonce: nonce() }
                    }
                    Err(_) => Chan::Never,
                },
                _ => Chan::Never,
            };
        }
    }

    /// Records a run of operations; returns their `user_data`s.
    pub fn add_run(&mut self, recs: &[KRec]) -> (u32, Vec<u64>) {
        let run = match self.free_runs.pop() {
            Some(r) => r,
            None => {
                self.runs.push(None);
                (self.runs.len() - 1) as u32
            }
        };
        let mut uds = Vec::with_capacity(recs.len());
        for (pos, rec) in recs.iter().enumerate() {
            let rec = KRec {
                run,
                pos: pos as u32,
                ..*rec
            };
            let ud = match self.free_ops.pop() {
                Some(u) => {
                    self.ops[u as usize] = Some(rec);
                    u
                }
                None => {
                    self.ops.push(Some(rec));
                    (self.ops.len() - 1) as u32
                }
            };
            uds.push(ud as u64);
        }
        self.runs[run as usize] = Some(Run {
            ops: uds.clone(),
            next: 0,
            live: recs.len(),
        });
        (run, uds)
    }

    /// Forgets a run whose submission failed.
    pub fn drop_run(&mut self, run: u32) {
        if let Some(r) = self.runs[run as usize].take() {
            for ud in r.ops {
                self.ops[ud as usize] = None;
                self.free_ops.push(ud as u32);
            }
            self.free_runs.push(run);
        }
    }

    /// Marks operation `ud` as ended (its completion seen or implied).
    pub fn retire(&mut self, ud: u64) {
        let Some(rec) = self.ops.get_mut(ud as usize).and_then(|o| o.take()) else {
            return;
        };
        self.free_ops.push(ud as u32);
        let run = rec.run as usize;
        let done = match self.runs[run].as_mut() {
            Some(r) => {
                r.live -= 1;
                r.live == 0
            }
            None => false,
        };
        if done {
            self.runs[run] = None;
            self.free_runs.push(rec.run);
        }
    }

    /// The `user_data`s in flight for execution slot `slot`.
    pub fn of_slot(&self, slot: u32) -> Vec<u64> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_some_and(|o| o.slot == slot))
            .map(|(u, _)| u as u64)
            .collect()
    }

    /// The slots of executions with operations in flight to or from `peer`.
    pub fn slots_with_peer(&self, peer: u32) -> Vec<u32> {
        self.ops
            .iter()
            .flatten()
            .filter(|o| o.peer == peer)
            .map(|o| o.slot)
            .collect()
    }
}

/// How a channel reaches its receiver.
#[derive(Clone, Copy)]
pub(crate) enum Route {
    /// A socket pair, the receiver taking its end with `pidfd_getfd`.
    Local,
    /// A TCP connection; the sender's address family is that of this one.
    Tcp(IpAddr),
}

/// A random nonce for an offer over TCP (the hello's MAC covers it, so that
/// an old hello cannot take a new channel).
fn nonce() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // Never fails for 4 bytes once the pool is ready; the clock is a
        // fallback, not a secret (the MAC's key is).
        return std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    }
    u32::from_ne_bytes(b)
}

/// The hello a receiver sends on a TCP channel: what it is, then the job
/// secret's MAC over it.
pub(crate) const HELLO_LEN: usize = 64;

/// The hello of receiver `to` for the channel of sender `from`'s
/// operation `op` of schedule `sched`, offered with `nonce`.
pub(crate) fn hello(secret: &[u8], from: u32, to: u32, sched: SchedId, op: u32, nonce: u32) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..8].copy_from_slice(b"goalkcn1");
    for (i, v) in [from, to, sched as u32, op, nonce, (sched >> 32) as u32].into_iter().enumerate() {
        h[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
    }
    let mac = goal_auth::hmac_sha256(secret, &[&h[..32]]);
    h[32..].copy_from_slice(&mac);
    h
}

/// How long operations on the TCP channels of a lost peer may still finish
/// (see [`KPath::watch_lost`]).
pub(crate) const LOST_GRACE: Duration = Duration::from_secs(2);

/// Half of this process' soft limit on open descriptors.
fn fd_budget() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    (lim.rlim_cur.min(1 << 20) / 2) as usize
}

/// The error for a kernel operation that ended with `res` instead of `len`.
pub(crate) fn failure(what: &str, peer: u32, send: bool, res: i32, len: u32) -> Error {
    if res == 0 && !send {
        return Error::new(
            ErrorKind::PeerLost,
            format!("{what}: rank {peer} closed its channel (it ended or failed)"),
        );
    }
    if res < 0 {
        let e = std::io::Error::from_raw_os_error(-res);
        let kind = if res == -libc::EPIPE || res == -libc::ECONNRESET {
            ErrorKind::PeerLost
        } else {
            ErrorKind::System
        };
        return Error::new(
            kind,
            format!(
                "{what}: on the channel {} rank {peer}: {e}",
                if send { "to" } else { "from" }
            ),
        );
    }
    if !send && res as u32 > len {
        return Error::new(
            ErrorKind::Truncated,
            format!("{what}: message of {res} bytes from rank {peer} on its channel, where the schedule fixed {len} (truncation)"),
        );
    }
    Error::new(
        ErrorKind::System,
        format!("{what}: moved {res} of {len} bytes on the channel with rank {peer}"),
    )
}
