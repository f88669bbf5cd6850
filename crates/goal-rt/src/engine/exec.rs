//! The executions core: schedules as the runtime holds them, executions in
//! their slots, dependency counters and the ready queue. No transport: this
//! module imports neither goal-transport nor goal-net, and its tests run
//! executions without a process group.
//!
//! An execution of a schedule owns only what changes: one dependency
//! counter per operation (copied from the schedule's `deps`), its
//! scratchpad, and the receives it has posted. Buffers for both come from a
//! per-schedule pool, so running a schedule again allocates nothing.
//! Operations whose counter reaches zero go on one FIFO ready queue,
//! drained in a loop (never by recursion: a chain of a million operations
//! that each finish at once keeps the stack flat, as in the thesis'
//! section 4.2.3). A slot's generation changes with every execution in it,
//! so anything still in flight for a finished or failed execution (an
//! [`OpRef`] of an older generation) finds nothing and ends harmlessly.

use crate::error::Error;
use crate::fuse;
use crate::proto::SchedId;
use crate::userop::UserFn;
use goal_sched::OpKind;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A compiled schedule as the runtime holds it.
pub(crate) struct SchedInner {
    /// Its group's context and its number in that group's compile order:
    /// the same on every member of the group.
    pub id: SchedId,
    /// The compiled form.
    pub s: goal_sched::Schedule,
    /// Executions started so far (the next execution's number). Written
    /// only with the engine lock held, so a load and a store suffice: a
    /// locked read-modify-write would wait for the send just written to a
    /// peer's ring to leave the store buffer.
    pub runs: AtomicU32,
    /// Executions not yet finished (written as `runs` is, read by anyone).
    pub running: AtomicU32,
    /// Counter and scratchpad buffers of finished executions, for reuse.
    pub(super) pool: LockedPool,
    /// Its executions in flight here, as (execution number, slot), in no
    /// order: an execution is in the list from [`Execs::insert`] to
    /// [`Execs::vacate`]. Kept here rather than in a table by id, so that
    /// a Run and a completion reach it through their schedule, without a
    /// lookup.
    pub(super) active: LockedActive,
    /// [`Schedule`](crate::Schedule) handles of it: the last one to go
    /// frees it (see `Engine::free`).
    pub(crate) handles: AtomicU32,
    /// Each operation's initial dependency counter, in one array that a
    /// Run copies as a block.
    pub(super) deps: Box<[u32]>,
    /// Receives that may be combined as they come, by receive index.
    pub(super) fuse: Box<[fuse::Plan]>,
    /// Sources of the receives of at least [`EAGER_EXCHANGE_MIN`] bytes
    /// that start with the execution, sorted, each with its longest such
    /// receive: a large send that starts with it too, to one of them, is
    /// half of an exchange (see `adapt`, `eagerness`).
    pub(super) opening_recvs: Box<[(u32, u64)]>,
    /// Whether it sends a message of at least [`EXCHANGE_MIN`] bytes: a
    /// rank that receives large messages sends as much then (an
    /// exchange), rather than only collecting (a gather's root).
    pub(super) sends_large: bool,
    /// The length of its second-longest send (0 with fewer than two): a
    /// send longer than this is the only one of its size, the lone large
    /// message of a gather's or a reduction's contributor (see
    /// `Engine::eager_limit`).
    pub(super) second_send: u64,
    /// Whether it starts several sends of at least [`EXCHANGE_MIN`] bytes
    /// at once (independent operations), from different buffers: an
    /// all-to-all's rank, which has a message for each peer and a copy to
    /// make of each (see `Engine::eager_limit`), not an allgather's, which
    /// sends one block to every peer.
    pub(super) opens_sends: bool,
    /// How its executions have gone lately, for the helper's park (see
    /// `progress::park::Rhythm`). Shared with its executions' states.
    pub(crate) rhythm: Arc<crate::progress::park::Rhythm>,
    /// (source, tag) of every receive, sorted, wildcards as -1: whether a
    /// message that no posted receive took may still be taken by one (see
    /// [`Engine::stash`]).
    pub(super) recv_keys: Box<[(i32, i32)]>,
    /// The job rank of each member of its group, by group rank (its
    /// operations' peers are job ranks already): who may send to its
    /// wildcard receives.
    pub(crate) members: Arc<[u32]>,
    /// The job ranks its sends and receives name, sorted, once each (a
    /// wildcard receive names every member): the ranks a Wait for one of
    /// its executions may wait for (see `progress::batch`).
    pub(crate) peers: Arc<[u32]>,
    /// The functions of the user operators it names, kept alive with it
    /// (see [`crate::userop`]).
    pub(crate) users: Box<[Arc<UserFn>]>,
    /// Whether the schedule has the shape of one that Run may finish
    /// within ([`Engine::start_done`]): at most `DONE_AT_ONCE` operations,
    /// all independent, each a send or a local operation. Known here, so
    /// that a Run of any other schedule (a barrier's send and receive)
    /// does not look at its operations to find out (some 40 instructions).
    pub(super) done_shape: bool,
}

/// Receives from this size on make a large send to their peer half of an
/// exchange (adapt's smallest size class).
pub(super) const EXCHANGE_MIN: u64 = 64 << 10;

/// The same for a send that `eagerness` chooses the way of (above the
/// eager limit, up to 64 KiB): `eagerness`'s smallest size class.
pub(super) const EAGER_EXCHANGE_MIN: u64 = 8 << 10;

impl SchedInner {
    pub fn new(id: SchedId, s: goal_sched::Schedule, members: Arc<[u32]>, users: Vec<Arc<UserFn>>) -> SchedInner {
        let deps = s.ops.iter().map(|o| o.deps).collect();
        let fuse = fuse::plan(&s).into_boxed_slice();
        let mut opening_recvs: Vec<(u32, u64)> = s.ops[..s.independent as usize]
            .iter()
            .filter(|o| matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) && o.peer >= 0 && o.len as u64 >= EAGER_EXCHANGE_MIN)
            .map(|o| (o.peer as u32, o.len as u64))
            .collect();
        // Sorted by peer, each peer once with its longest receive.
        opening_recvs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        opening_recvs.dedup_by_key(|r| r.0);
        let opening_recvs = opening_recvs.into_boxed_slice();
        let mut longest = [0u64; 2];
        for o in s.ops.iter().filter(|o| matches!(o.kind(), OpKind::Send | OpKind::SendVec)) {
            let len = o.len as u64;
            if len > longest[0] {
                longest = [len, longest[0]];
            } else if len > longest[1] {
                longest[1] = len;
            }
        }
        let second_send = longest[1];
        let mut opening = s.ops[..s.independent as usize]
            .iter()
            .filter(|o| matches!(o.kind(), OpKind::Send | OpKind::SendVec) && o.len as u64 >= EXCHANGE_MIN);
        let opens_sends = opening.next().is_some_and(|first| opening.any(|o| o.addr != first.addr));
        let sends_large = s.ops.iter().any(|o| matches!(o.kind(), OpKind::Send | OpKind::SendVec) && o.len as u64 >= EXCHANGE_MIN);
        let mut recv_keys: Vec<(i32, i32)> =
            s.ops.iter().filter(|o| matches!(o.kind(), OpKind::Recv | OpKind::RecvVec)).map(|o| (o.peer, o.tag)).collect();
        recv_keys.sort_unstable();
        recv_keys.dedup();
        let recv_keys = recv_keys.into_boxed_slice();
        let mut peers: Vec<u32> = Vec::new();
        for o in s.ops.iter().filter(|o| matches!(o.kind(), OpKind::Send | OpKind::SendVec | OpKind::Recv | OpKind::RecvVec)) {
            match u32::try_from(o.peer) {
                Ok(p) => peers.push(p),
                Err(_) => peers.extend_from_slice(&members),
            }
        }
        peers.sort_unstable();
        peers.dedup();
        let peers = peers.into();
        let done_shape = s.independent as usize == s.ops.len()
            && s.ops.len() <= super::run::DONE_AT_ONCE
            && s.ops.iter().all(|o| matches!(o.kind(), OpKind::Send | OpKind::Local));
        SchedInner { id, s, runs: AtomicU32::new(0), running: AtomicU32::new(0), pool: LockedPool(UnsafeCell::new(Vec::new())), active: LockedActive(UnsafeCell::new(Vec::new())), handles: AtomicU32::new(1), deps, fuse, opening_recvs, sends_large, second_send, opens_sends, rhythm: Default::default(), recv_keys, members, peers, users: users.into_boxed_slice(), done_shape }
    }

    /// Whether some receive of the schedule could take a message from
    /// `src` with `tag` (a wildcard receive takes any).
    pub(super) fn may_receive(&self, src: u32, tag: i32) -> bool {
        let has = |k: (i32, i32)| self.recv_keys.binary_search(&k).is_ok();
        let src = src as i32;
        has((src, tag)) || has((src, -1)) || has((-1, tag)) || has((-1, -1))
    }

    /// The function of user operator `op`, which compiling resolved.
    pub(super) fn user_fn(&self, op: goal_sched::UserOp) -> &UserFn {
        self.users.iter().find(|f| f.op == op).expect("compile resolved every user operator of the schedule")
    }

    /// The fusion plan of receive `op`, if it has one.
    pub(super) fn fusable(&self, op: u32) -> Option<fuse::Plan> {
        self.fuse.binary_search_by_key(&op, |p| p.recv).ok().map(|i| self.fuse[i])
    }
}

/// A schedule's pool of execution buffers, touched only by the engine, that
/// is with the engine lock held. A mutex of its own cost two locked
/// instructions per Run and two per completion, on the path of an 8-byte
/// collective.
// Boxed buffers: a Run and a completion move one pointer each, not 80 bytes.
#[allow(clippy::vec_box)]
pub(super) struct LockedPool(pub(super) UnsafeCell<Vec<Box<ExecBufs>>>);

// SAFETY: the pool is only reached through `Engine::pool`, which takes
// `&mut Engine`: the caller holds the process' one engine lock, so no two
// threads touch a pool at once.
unsafe impl Sync for LockedPool {}

/// A schedule's active executions (see [`SchedInner::active`]), touched
/// only by the engine, that is with the engine lock held, as
/// [`LockedPool`] is.
pub(super) struct LockedActive(UnsafeCell<Vec<(u32, u32)>>);

// SAFETY: the list is only reached through `Execs::active` and
// `Execs::active_mut`, and an `Execs` only through the engine (the caller
// holds the process' one engine lock) or, in the core's tests, from one
// thread: no two threads touch a list at once.
unsafe impl Sync for LockedActive {}

/// An execution's schedule, by pointer: an `Arc` clone and drop per
/// execution were two of the fourteen locked instructions of a 2-rank
/// barrier's Run and Wait.
///
/// Valid while an execution holding it exists: a schedule with executions
/// in flight is kept by its [`Schedule`](crate::Schedule) handles and, once
/// the last of those is dropped, by the engine ([`Engine::orphan`]) until
/// `running` reaches zero. A copy taken out of an `Exec` must not be used
/// after that execution completes.
#[derive(Clone, Copy)]
pub(super) struct SchedRef(pub(super) std::ptr::NonNull<SchedInner>);

impl SchedRef {
    pub(super) fn new(s: &Arc<SchedInner>) -> SchedRef {
        SchedRef(std::ptr::NonNull::from(&**s))
    }
}

impl std::ops::Deref for SchedRef {
    type Target = SchedInner;
    fn deref(&self) -> &SchedInner {
        // SAFETY: the schedule outlives every execution of it (see the type's
        // comment), and only executions hold a `SchedRef`; `SchedInner` is
        // only read through shared references (its mutable parts are atomics
        // and the engine-locked pool).
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `SchedRef` stands for a shared `&SchedInner`, and `SchedInner` is
// `Sync` (it is shared through `Arc` between threads already).
unsafe impl Send for SchedRef {}

/// A 64-byte aligned block, so scratchpads are aligned for any element type.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Line(pub(super) [u8; 64]);

/// What an execution owns, kept between executions so that a rerun
/// allocates nothing.
pub(super) struct ExecBufs {
    pub(super) counters: Vec<u32>,
    /// The scratchpad, owned here and reached through `bases[0]` (it is
    /// never reallocated).
    #[allow(dead_code)]
    pub(super) scratch: Vec<Line>,
    /// The scratchpad and this execution's run-time buffers (see
    /// [`Bases`](super::pieces::Bases)); entries past the schedule's
    /// run-time buffers are never read.
    pub(super) bases: [usize; super::pieces::BASES],
    /// Posted receives, in posting order.
    pub(super) posted: Vec<Posted>,
    /// The state the handle watches; reused once no handle holds it.
    pub(super) shared: Arc<ExecShared>,
}

impl ExecShared {
    pub(super) fn new(rt: &Arc<crate::Runtime>, sched_id: SchedId, peers: Arc<[u32]>, rhythm: Arc<crate::progress::park::Rhythm>, large: bool) -> Arc<ExecShared> {
        Arc::new(ExecShared {
            large,
            state: AtomicI32::new(RUNNING),
            error: Mutex::new(None),
            rt: rt.clone(),
            sched_id,
            peers,
            rhythm,
            started: AtomicU64::new(0),
            run_at: AtomicU64::new(0),
            asleep: AtomicBool::new(false),
        })
    }

    /// Publishes the end of the execution (`DONE` or `FAILED`), and rings
    /// this rank's doorbell if the thread waiting for it sleeps there: the
    /// thread that finishes an execution is often not the one waiting for
    /// it (another application thread's Wait, a Test, the helper), and
    /// peers skip the ring while any thread of ours polls. Dekker with the
    /// sleeper (`progress::wait`): it sets `asleep`, registers on the
    /// doorbell (whose heavy fence orders the two), then reads `state`;
    /// here `state` is written, a light fence, then `asleep` read.
    #[inline]
    pub(super) fn publish(&self, state: i32) {
        self.state.store(state, Ordering::Release);
        goal_transport::sync::light_fence();
        if self.asleep.load(Ordering::Relaxed) {
            self.rt.bell.ring();
        }
    }
}

/// The state of an execution that its handle observes: all a handle is
/// (see [`Handle`](crate::Handle)).
pub struct ExecShared {
    /// 0 running, 1 finished, -1 failed.
    pub state: AtomicI32,
    /// Why it failed.
    pub error: Mutex<Option<Error>>,
    /// The runtime, for the handle: held here, with the reused state,
    /// rather than cloned into every handle (a locked increment in Run and
    /// a decrement in Wait). Schedules hold their pooled states, so a
    /// schedule kept past `finalize` keeps the runtime's memory until it
    /// is dropped.
    pub rt: Arc<crate::Runtime>,
    /// The schedule's id: with `run_at`, Wait learns from them whether the
    /// application computes after this schedule's Runs (see
    /// `progress::AppMark`).
    pub sched_id: SchedId,
    /// Its schedule's peers (`SchedInner::peers`).
    pub peers: Arc<[u32]>,
    /// Its schedule sends large messages (`SchedInner::sends_large`).
    pub large: bool,
    /// Its schedule's `SchedInner::rhythm`.
    pub rhythm: Arc<crate::progress::park::Rhythm>,
    /// When its Run began (`ticks`), with a park timer only (see
    /// `progress::park::after_wait`).
    pub started: AtomicU64,
    /// The time of this execution's Run (`ticks`), written by Run before
    /// the handle exists; only in modes with a helper, whose Wait reads it.
    pub run_at: AtomicU64,
    /// The thread waiting for this execution sleeps on the doorbell (see
    /// [`publish`](Self::publish)).
    pub asleep: AtomicBool,
}

/// Execution running, finished, failed.
pub const RUNNING: i32 = 0;

/// See [`RUNNING`].
pub const DONE: i32 = 1;

/// See [`RUNNING`].
pub const FAILED: i32 = -1;

/// An operation of an execution: slot, generation of the slot, op index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OpRef {
    pub(super) slot: u32,
    pub(super) gen: u32,
    pub(super) op: u32,
}

pub(super) struct Posted {
    pub(super) op: u32,
    pub(super) peer: i32,
    pub(super) tag: i32,
}

/// An execution in flight, in its slot of [`Execs`]. Generic over what it
/// owns only so that the core's tests can run executions without a
/// runtime; the engine's are `Exec<ExecBufs>`.
pub(super) struct Exec<B = ExecBufs> {
    /// Its schedule (valid while the execution exists, see [`SchedRef`]).
    pub(super) sched: SchedRef,
    /// Its execution number: the schedule's `runs` when it started, the
    /// same on every rank for the same Run.
    pub(super) seq: u32,
    /// Its slot's generation when it started (see [`Execs::gens`]).
    pub(super) gen: u32,
    /// Boxed: an execution's buffers move from the pool into its slot and
    /// back on every Run, as one pointer rather than 80 bytes.
    pub(super) bufs: Box<B>,
    /// Operations not yet finished; the execution completes at zero.
    pub(super) remaining: u32,
}

/// What the core needs of what an execution owns: its dependency
/// counters (one per operation) and its posted receives.
pub(super) trait Owned {
    /// The counters, indexed by operation.
    fn counters(&mut self) -> &mut [u32];
    /// The posted receives, in posting order.
    fn posted(&mut self) -> &mut Vec<Posted>;
}

impl ExecBufs {
    /// What this execution's relative addresses resolve against.
    #[inline(always)]
    pub(super) fn bases(&self) -> super::pieces::Bases {
        super::pieces::Bases::of(&self.bases)
    }
}

impl Owned for ExecBufs {
    #[inline(always)]
    fn counters(&mut self) -> &mut [u32] {
        &mut self.counters
    }
    #[inline(always)]
    fn posted(&mut self) -> &mut Vec<Posted> {
        &mut self.posted
    }
}

/// The executions in flight: slots reused across generations, the active
/// executions of each schedule, and the one ready queue. Transport-free:
/// the engine decides what an operation does; this only counts.
pub(super) struct Execs<B = ExecBufs> {
    /// Executions by slot. Invariant: `slots[i]` is `None` exactly when
    /// `i` is in `free`.
    pub(super) slots: Vec<Option<Exec<B>>>,
    /// Per slot, the generation of its latest execution, bumped when one
    /// starts there: an [`OpRef`] of an earlier execution in the slot
    /// names an older generation and finds nothing (messages and
    /// transfers still in flight for a finished or failed execution end
    /// harmlessly). Same length as `slots`.
    pub(super) gens: Vec<u32>,
    /// Free slots, the latest freed on top (reused first: its buffers are
    /// warm in the cache).
    pub(super) free: Vec<u32>,
    /// The live schedules, by id: what an arriving message's schedule id
    /// is looked up in. A schedule is in it from its compile
    /// (`Engine::adopt`) until it is freed (`State::forget`), so a program
    /// that compiles, runs and frees a schedule per step keeps it as small
    /// as its live schedules (issue 39).
    pub(super) scheds: SchedTable,
    /// Operations whose counters reached zero, to start in this order
    /// (FIFO, drained in a loop, never by recursion: a chain of a million
    /// operations that each finish at once keeps the stack flat).
    pub(super) ready: VecDeque<OpRef>,
    /// Schedules dropped by the application with executions still running,
    /// kept until those finish (see [`SchedRef`]).
    pub(super) orphans: Vec<Arc<SchedInner>>,
    /// Operations finished so far (a pass reports how many it finished).
    pub(super) finished_ops: usize,
}

impl<B> Default for Execs<B> {
    fn default() -> Self {
        Execs { slots: Vec::new(), gens: Vec::new(), free: Vec::new(), scheds: SchedTable::default(), ready: VecDeque::new(), orphans: Vec::new(), finished_ops: 0 }
    }
}

impl<B: Owned> Execs<B> {
    /// The execution of `r`, if it is still the one in its slot.
    #[inline(always)]
    pub(super) fn get(&self, r: OpRef) -> Option<&Exec<B>> {
        self.slots.get(r.slot as usize)?.as_ref().filter(|e| e.gen == r.gen)
    }

    /// [`get`](Self::get), mutable.
    #[inline(always)]
    pub(super) fn get_mut(&mut self, r: OpRef) -> Option<&mut Exec<B>> {
        self.slots.get_mut(r.slot as usize)?.as_mut().filter(|e| e.gen == r.gen)
    }

    /// `s`'s active executions.
    #[inline(always)]
    pub(super) fn active<'a>(&'a self, s: &'a SchedInner) -> &'a Vec<(u32, u32)> {
        // SAFETY: see `LockedActive`: `&self` of the `Execs` means the
        // engine lock is held, and no `&mut` to the list outlives the
        // `&mut self` it came from.
        unsafe { &*s.active.0.get() }
    }

    /// [`active`](Self::active), mutable.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(super) fn active_mut<'a>(&'a mut self, s: &'a SchedInner) -> &'a mut Vec<(u32, u32)> {
        // SAFETY: as in `active`; `&mut self` excludes any other borrow of
        // a list through this `Execs`.
        unsafe { &mut *s.active.0.get() }
    }

    /// Whether execution `seq` of schedule `id` started here and is over
    /// (it is before the next one to start, and not active).
    pub(super) fn finished_before(&self, id: SchedId, seq: u32) -> bool {
        self.scheds.get(id).is_some_and(|s| seq.wrapping_sub(s.runs.load(Ordering::Relaxed)) >= 1 << 31 && !self.active(s).iter().any(|&(q, _)| q == seq))
    }

    /// Puts a new execution of `sched`, number `seq`, into a free slot (or
    /// a new one) under the slot's next generation, and lists it as
    /// active; returns (slot, generation).
    #[inline(always)]
    pub(super) fn insert(&mut self, sched: SchedRef, seq: u32, bufs: Box<B>, ops: u32) -> (u32, u32) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.gens.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        let gen = self.gens[slot as usize].wrapping_add(1);
        self.gens[slot as usize] = gen;
        self.active_mut(&sched).push((seq, slot));
        self.slots[slot as usize] = Some(Exec { sched, seq, gen, bufs, remaining: ops });
        (slot, gen)
    }

    /// The slot of execution `seq` of schedule `id`, if it is active here.
    #[inline]
    pub(super) fn active_slot(&self, id: SchedId, seq: u32) -> Option<u32> {
        let s = self.scheds.get(id)?;
        self.active(s).iter().find(|&&(q, _)| q == seq).map(|&(_, slot)| slot)
    }

    /// Counts one dependency of `r` as met; queues it when none is left.
    #[inline]
    pub(super) fn dec(&mut self, r: OpRef) {
        let Some(e) = self.get_mut(r) else { return };
        let c = &mut e.bufs.counters()[r.op as usize];
        *c -= 1;
        if *c == 0 {
            self.ready.push_back(r);
        }
    }

    /// Operation `r` has finished: releases its dependents, and returns its
    /// slot if that was its execution's last operation.
    #[inline(always)]
    pub(super) fn finish(&mut self, r: OpRef) -> Option<u32> {
        let e = self.slots.get_mut(r.slot as usize).and_then(|e| e.as_mut()).filter(|e| e.gen == r.gen)?;
        self.finished_ops += 1;
        let s = &e.sched.s;
        let counters = e.bufs.counters();
        for &d in s.dependents(r.op as usize) {
            let c = &mut counters[d as usize];
            *c -= 1;
            if *c == 0 {
                self.ready.push_back(OpRef { op: d, ..r });
            }
        }
        e.remaining -= 1;
        (e.remaining == 0).then_some(r.slot)
    }

    /// Takes the execution out of `slot`, frees the slot and drops the
    /// execution from its schedule's active list.
    #[inline(always)]
    pub(super) fn vacate(&mut self, slot: u32) -> Option<Exec<B>> {
        let e = self.slots[slot as usize].take()?;
        self.free.push(slot);
        let list = self.active_mut(&e.sched);
        if let Some(i) = list.iter().position(|&(q, s)| q == e.seq && s == slot) {
            list.swap_remove(i);
        }
        Some(e)
    }

    /// Whether any execution is in flight.
    #[inline]
    pub(super) fn busy(&self) -> bool {
        self.slots.len() > self.free.len()
    }

    /// Drops the kept schedules that have no execution left; returns their
    /// ids, for the engine to forget (only freed schedules are kept).
    #[cold]
    pub(super) fn release_orphans(&mut self) -> Vec<SchedId> {
        let mut freed = Vec::new();
        self.orphans.retain(|s| {
            let keep = s.running.load(Ordering::Relaxed) > 0;
            if !keep {
                freed.push(s.id);
            }
            keep
        });
        freed
    }
}

/// A slot of [`SchedTable`].
#[derive(Default)]
struct Entry {
    /// The schedule's id plus one; 0: an empty slot.
    key: u64,
    sched: Option<Arc<SchedInner>>,
}

/// The home slot of schedule `id` in a table of `mask + 1` slots.
#[inline(always)]
fn home(id: SchedId, mask: usize) -> usize {
    (id as u32 ^ ((id >> 32) as u32).wrapping_mul(0x9e37_79b9)) as usize & mask
}

/// Slots of an empty [`SchedTable`].
const TABLE_MIN: usize = 8;

/// The live schedules, by id: an open-addressed table with linear probing
/// whose hash is the id's number in its group, mixed with the group's
/// context (the world group's ids hash to themselves). Numbers are
/// consecutive, so live ones mostly sit in their home slot and a lookup costs a mask, a
/// load and a compare, as the vectors indexed by id it replaces did; but a
/// freed schedule's entry goes (backward-shift deletion, no tombstones),
/// so the table is as large as the live schedules, whatever their ids.
/// (Ids are below 2^48, so a key, the id plus one, is never 0.)
pub(super) struct SchedTable {
    /// A power of two long, at least [`TABLE_MIN`]; at most half full.
    slots: Vec<Entry>,
    /// `slots.len() - 1`.
    mask: usize,
    len: usize,
}

impl Default for SchedTable {
    fn default() -> Self {
        SchedTable { slots: (0..TABLE_MIN).map(|_| Entry::default()).collect(), mask: TABLE_MIN - 1, len: 0 }
    }
}

impl SchedTable {
    /// Schedule `id`, if it is live.
    #[inline(always)]
    pub(super) fn get(&self, id: SchedId) -> Option<&SchedInner> {
        let i = home(id, self.mask);
        // SAFETY: `mask` is `slots.len() - 1` (kept so by `resize`), so
        // `i` is in bounds.
        let e = unsafe { self.slots.get_unchecked(i) };
        if e.key == id + 1 {
            e.sched.as_deref()
        } else if e.key == 0 {
            None
        } else {
            self.get_probing(id, i)
        }
    }

    /// [`get`](Self::get) past a home slot that another id holds (kept
    /// out of line: the arrival path inlines `get`).
    #[cold]
    #[inline(never)]
    fn get_probing(&self, id: SchedId, i: usize) -> Option<&SchedInner> {
        self.probe(id, i).and_then(|i| self.slots[i].sched.as_deref())
    }

    /// The slot of `id` past its home slot `i`, which another id holds.
    #[cold]
    #[inline(never)]
    fn probe(&self, id: SchedId, mut i: usize) -> Option<usize> {
        loop {
            i = (i + 1) & self.mask;
            match self.slots[i].key {
                0 => return None,
                k if k == id + 1 => return Some(i),
                _ => {}
            }
        }
    }

    /// The slot of `id`, if it is live.
    fn find(&self, id: SchedId) -> Option<usize> {
        let i = home(id, self.mask);
        match self.slots[i].key {
            0 => None,
            k if k == id + 1 => Some(i),
            _ => self.probe(id, i),
        }
    }

    /// Adds `s` (newly compiled); false if its id is held already (by
    /// `s` itself, or by a schedule compiled 2^32 - 1 compiles earlier).
    pub(super) fn add(&mut self, s: Arc<SchedInner>) -> bool {
        if self.find(s.id).is_some() {
            return false;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.resize(self.slots.len() * 2);
        }
        let i = self.vacant(s.id);
        self.len += 1;
        self.slots[i] = Entry { key: s.id + 1, sched: Some(s) };
        true
    }

    /// Rehashes the entries into a table of `cap` slots (a power of two).
    fn resize(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, (0..cap).map(|_| Entry::default()).collect());
        self.mask = cap - 1;
        for e in old.into_iter().filter(|e| e.key != 0) {
            let i = self.vacant(e.key - 1);
            self.slots[i] = e;
        }
    }

    /// The first empty slot from `id`'s home.
    fn vacant(&self, id: SchedId) -> usize {
        let mut i = home(id, self.mask);
        while self.slots[i].key != 0 {
            i = (i + 1) & self.mask;
        }
        i
    }

    /// Takes schedule `id` out (it was freed), shifting back the entries
    /// after it that probing would no longer find; shrinks a table at most
    /// an eighth full.
    pub(super) fn remove(&mut self, id: SchedId) -> Option<Arc<SchedInner>> {
        let mut i = self.find(id)?;
        let gone = std::mem::take(&mut self.slots[i]).sched;
        self.len -= 1;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            if self.slots[j].key == 0 {
                break;
            }
            let home = home(self.slots[j].key - 1, self.mask);
            // Whether `home` lies cyclically in (i, j]: then it stays.
            let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
            if !stays {
                self.slots[i] = std::mem::take(&mut self.slots[j]);
                i = j;
            }
        }
        if self.slots.len() > TABLE_MIN && self.len * 8 <= self.slots.len() {
            self.resize(self.slots.len() / 2);
        }
        gone
    }

    /// Keeps only the schedules for which `keep` holds.
    pub(super) fn retain(&mut self, keep: impl Fn(&SchedInner) -> bool) {
        let gone: Vec<SchedId> = self.slots.iter().filter_map(|e| e.sched.as_deref()).filter(|s| !keep(s)).map(|s| s.id).collect();
        for id in gone {
            self.remove(id);
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Slots, empty or not.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// Counts one execution of `sched` as over: the last use of its
/// `SchedRef`. A `Schedule` dropped without the engine lock frees the
/// schedule, its pool included, once it reads `running == 0`; so the
/// decrement comes after the execution's buffers are back in that pool
/// (decremented first, a drop in between freed the pool under `recycle`).
#[inline(always)]
pub(super) fn sched_done(sched: SchedRef) {
    sched.running.store(sched.running.load(Ordering::Relaxed) - 1, Ordering::Release);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use goal_sched::{Buf, CompileOptions, Graph};

    /// What an execution owns in these tests: counters and posted
    /// receives, no handle state (which needs a runtime).
    pub(in crate::engine) struct Bufs {
        pub counters: Vec<u32>,
        pub posted: Vec<Posted>,
    }

    impl Owned for Bufs {
        fn counters(&mut self) -> &mut [u32] {
            &mut self.counters
        }
        fn posted(&mut self) -> &mut Vec<Posted> {
            &mut self.posted
        }
    }

    /// A schedule of 4 ranks as rank 0 sees it: receive from 1 (op 0),
    /// then send to 2 and to 3 (ops 1 and 2), both after the receive.
    pub(in crate::engine) fn forward(id: SchedId) -> Arc<SchedInner> {
        let mut g = Graph::new();
        let r = g.recv(Buf::user(0x1000), 8, 1, 0);
        let a = g.send(Buf::user(0x1000), 8, 2, 0);
        let b = g.send(Buf::user(0x1000), 8, 3, 0);
        g.requires(r, a).unwrap();
        g.requires(r, b).unwrap();
        let s = goal_sched::compile(&g, &CompileOptions { group_size: 4 }).unwrap();
        Arc::new(SchedInner::new(id, s, (0..4).collect(), Vec::new()))
    }

    /// Starts an execution of `s` in `x` as the engine's Run does.
    pub(in crate::engine) fn start(x: &mut Execs<Bufs>, s: &Arc<SchedInner>) -> (u32, u32) {
        let seq = s.runs.load(Ordering::Relaxed);
        s.runs.store(seq + 1, Ordering::Relaxed);
        x.scheds.add(s.clone());
        let bufs = Box::new(Bufs { counters: s.deps.to_vec(), posted: Vec::new() });
        x.insert(SchedRef::new(s), seq, bufs, s.s.ops.len() as u32)
    }

    /// The operation of `s` that vertex `v` became.
    fn op_of(s: &SchedInner, v: u32) -> u32 {
        s.s.origin.iter().position(|&o| o == v).unwrap() as u32
    }

    /// Rank 0 of 4 sending 64 KiB to each peer at once, from `addr(peer)`,
    /// and receiving as much from each.
    fn opening_sends(addr: impl Fn(i64) -> u64) -> SchedInner {
        let mut g = Graph::new();
        for p in 1..4i64 {
            g.send(Buf::user(addr(p)), 64 << 10, p, 0);
            g.recv(Buf::user(0x100_0000 + p as u64 * 0x10_0000), 64 << 10, p, 0);
        }
        let s = goal_sched::compile(&g, &CompileOptions { group_size: 4 }).unwrap();
        SchedInner::new(0, s, (0..4).collect(), Vec::new())
    }

    #[test]
    fn an_all_to_all_opens_sends_from_different_buffers_and_an_allgather_does_not() {
        // An all-to-all: a block of its own for every peer.
        assert!(opening_sends(|p| p as u64 * 0x10_0000).opens_sends);
        // An allgather: the one block to every peer (it stays eager to the
        // rank on this CPU, see `Engine::eager_limit`).
        assert!(!opening_sends(|_| 0x10_0000).opens_sends);
    }

    #[test]
    fn a_slot_is_reused_under_a_new_generation() {
        let s = forward(0);
        let mut x = Execs::<Bufs>::default();
        let (slot, gen) = start(&mut x, &s);
        assert!(x.busy());
        assert!(x.vacate(slot).is_some());
        assert!(!x.busy());
        let (slot2, gen2) = start(&mut x, &s);
        assert_eq!(slot2, slot, "the freed slot is reused");
        assert_ne!(gen2, gen);
        // What is still in flight for the first execution finds nothing.
        assert!(x.get(OpRef { slot, gen, op: 0 }).is_none());
        assert!(x.finish(OpRef { slot, gen, op: 0 }).is_none());
        assert_eq!(x.get(OpRef { slot, gen: gen2, op: 0 }).map(|e| e.seq), Some(1));
    }

    #[test]
    fn dependents_become_ready_in_order_and_the_last_operation_completes() {
        let s = forward(0);
        let mut x = Execs::<Bufs>::default();
        let (slot, gen) = start(&mut x, &s);
        let (recv, a, b) = (op_of(&s, 0), op_of(&s, 1), op_of(&s, 2));
        assert_eq!(x.get(OpRef { slot, gen, op: 0 }).unwrap().bufs.counters[a as usize], 1);
        assert_eq!(x.finish(OpRef { slot, gen, op: recv }), None);
        let ready: Vec<u32> = x.ready.drain(..).map(|r| r.op).collect();
        assert_eq!(ready, vec![a, b], "both sends are ready, in the schedule's order");
        assert_eq!(x.finish(OpRef { slot, gen, op: a }), None);
        assert_eq!(x.finish(OpRef { slot, gen, op: b }), Some(slot), "the last operation completes the execution");
        assert_eq!(x.finished_ops, 3);
    }

    #[test]
    fn a_dependency_met_elsewhere_counts_once() {
        let s = forward(0);
        let mut x = Execs::<Bufs>::default();
        let (slot, gen) = start(&mut x, &s);
        let a = op_of(&s, 1);
        x.dec(OpRef { slot, gen, op: a });
        assert_eq!(x.ready.pop_front().map(|r| r.op), Some(a));
        assert!(x.ready.is_empty());
    }

    #[test]
    fn active_executions_and_finished_ones_are_told_apart() {
        let (s, t) = (forward(0), forward(1));
        let mut x = Execs::<Bufs>::default();
        let (s0, _) = start(&mut x, &s);
        let (s1, _) = start(&mut x, &s);
        let (t0, _) = start(&mut x, &t);
        assert_eq!(x.active_slot(0, 0), Some(s0));
        assert_eq!(x.active_slot(0, 1), Some(s1));
        assert_eq!(x.active_slot(1, 0), Some(t0));
        assert!(!x.finished_before(0, 0), "running, not finished");
        x.vacate(s0);
        assert_eq!(x.active_slot(0, 0), None);
        assert!(x.finished_before(0, 0), "started and over");
        assert!(!x.finished_before(0, 2), "not started yet: a message may come early");
        assert!(!x.finished_before(2, 0), "a schedule never run here");
    }

    #[test]
    fn a_freed_schedule_leaves_nothing_behind() {
        let mut x = Execs::<Bufs>::default();
        for id in 0..10_000 {
            let s = forward(id);
            let (slot, _) = start(&mut x, &s);
            assert_eq!(x.active_slot(id, 0), Some(slot));
            x.vacate(slot);
            assert!(x.finished_before(id, 0), "a live schedule's finished execution is told");
            x.scheds.remove(id);
            assert!(!x.finished_before(id, 0), "a freed schedule is not known");
        }
        assert_eq!(x.scheds.len(), 0);
        assert!(x.scheds.capacity() <= TABLE_MIN, "the table shrinks back: {} slots", x.scheds.capacity());
        assert_eq!(x.slots.len(), 1, "one slot, reused");
    }

    #[test]
    fn the_schedule_table_finds_every_live_id_after_removals() {
        let mut t = SchedTable::default();
        // Ids that share home slots (multiples of the capacity), of
        // several groups' contexts, and a long-lived one beside many
        // short-lived ones.
        let mut live: Vec<SchedId> = Vec::new();
        for round in 0..2000u32 {
            let id = crate::proto::sched_id((round % 4) as u16 * 0x3fff, if round % 3 == 0 { round * 64 } else { round });
            assert!(t.add(forward(id)));
            assert!(!t.add(forward(id)), "an id held by a live schedule is not handed out twice");
            live.push(id);
            if round % 2 == 1 {
                let gone = live.remove((round as usize * 7) % live.len());
                assert_eq!(t.remove(gone).map(|s| s.id), Some(gone));
                assert!(t.get(gone).is_none());
            }
            for &l in &live {
                assert_eq!(t.get(l).map(|s| s.id), Some(l), "id {l} lost at round {round}");
            }
        }
        assert_eq!(t.len(), live.len());
        t.retain(|s| s.id % 2 == 0);
        assert!(live.iter().all(|&l| t.get(l).is_some() == (l % 2 == 0)));
        for l in live {
            t.remove(l);
        }
        assert_eq!(t.len(), 0);
        assert!(t.remove(5).is_none());
    }
}
