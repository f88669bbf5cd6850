//! Graph and schedule handles are numbers, not addresses.
//!
//! A `GOAL_Graph` or `GOAL_Schedule` that C holds is an id, never reused in
//! the process, shifted left by four bits with a tag for its kind in the low
//! bits, and cast to the pointer type the contract's header declares (so the
//! ABI is that of a pointer, as before). The object itself lives in a table
//! here until it is freed. A handle used after it was freed (or freed
//! twice, or a graph passed where a schedule is expected, or garbage) is
//! not found, and the call fails with a message instead of reading freed
//! memory: where the allocator would hand a freed address to a new object,
//! an id is never handed out again.
//!
//! Graphs live in a hash map behind a lock: they are built, not run.
//! Schedules, which every `GOAL_Run` looks up, live in a slab of slots
//! that is never freed or moved: a handle holds a slot's index and the
//! slot's generation when it was made, and a lookup is an index, two
//! loads and a compare, with no lock and no locked instruction (a read
//! lock, a hash and a reference count per Run had cost the 8-byte path
//! 160 instructions and four locked ones). Freeing bumps the generation,
//! so the stale handle no longer matches, and the slot serves the next
//! schedule. As the header says, freeing a schedule while another thread
//! runs it is undefined; a handle used after the free gets an error.

use crate::{goal_graph, goal_schedule, invalid, GOAL_Graph, GOAL_Group, GOAL_Schedule};
use goal_rt::Error;
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

const TAG_BITS: u32 = 4;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;
/// Low bits of a graph handle.
const GRAPH_TAG: usize = 0x5;
/// Low bits of a schedule handle.
const SCHEDULE_TAG: usize = 0xA;
/// Low bits of a group handle. Id 0 is the world group, which is never
/// in the table and never freed.
const GROUP_TAG: usize = 0x3;
/// The world group's handle.
pub(crate) const WORLD_GROUP: usize = GROUP_TAG;

/// The next id; ids start at 1, so no handle is NULL.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A graph in the table. Boxed, so that it stays where it is while the
/// table grows: [`graph`] hands out a reference into the box.
struct Slot(UnsafeCell<goal_graph>);

// SAFETY: the table only moves the boxes; the graph inside is reached
// through `graph`, whose callers use a graph from one thread at a time (the
// contract), so no two threads touch one graph at once.
unsafe impl Sync for Slot {}

/// Groups by id (the world's, id 0, is not here).
static GROUPS: RwLock<Option<HashMap<usize, goal_rt::Group>>> = RwLock::new(None);

/// Registers a new group; returns its handle.
pub(crate) fn add_group(g: goal_rt::Group) -> GOAL_Group {
    let id = new_id();
    let mut t = GROUPS.write().unwrap_or_else(|p| p.into_inner());
    t.get_or_insert_with(HashMap::new).insert(id, g);
    (id << TAG_BITS | GROUP_TAG) as GOAL_Group
}

/// The group behind handle `g` (a clone: the same group).
pub(crate) fn group(g: GOAL_Group, rt: &goal_rt::Runtime, what: &str) -> Result<goal_rt::Group, Error> {
    if g.is_null() {
        return Err(invalid(format!("{what}: the group is NULL")));
    }
    let v = g as usize;
    if v == WORLD_GROUP {
        return Ok(rt.world());
    }
    let t = GROUPS.read().unwrap_or_else(|p| p.into_inner());
    id_of(v, GROUP_TAG)
        .and_then(|id| t.as_ref()?.get(&id))
        .cloned()
        .ok_or_else(|| stale(what, "group", v, "GOAL_Group_split or GOAL_Group_create"))
}

/// Takes group `g` out of the table.
pub(crate) fn remove_group(g: GOAL_Group, what: &str) -> Result<goal_rt::Group, Error> {
    let v = g as usize;
    if v == WORLD_GROUP {
        return Err(invalid(format!("{what}: the world group cannot be freed")));
    }
    let mut t = GROUPS.write().unwrap_or_else(|p| p.into_inner());
    id_of(v, GROUP_TAG)
        .and_then(|id| t.as_mut()?.remove(&id))
        .ok_or_else(|| stale(what, "group", v, "GOAL_Group_split or GOAL_Group_create"))
}

/// Graphs by id.
static GRAPHS: RwLock<Option<HashMap<usize, Box<Slot>>>> = RwLock::new(None);
fn new_id() -> usize {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    // 2^60 handles cannot be made in a process' life.
    assert!(id < usize::MAX >> TAG_BITS, "goal ran out of handle ids");
    id
}

/// The id in handle value `v` if its tag is `tag`.
fn id_of(v: usize, tag: usize) -> Option<usize> {
    (v & TAG_MASK == tag).then_some(v >> TAG_BITS)
}

fn stale(what: &str, kind: &str, v: usize, made_by: &str) -> Error {
    invalid(format!(
        "{what}: {v:#x} is not a live {kind} (freed already, or never returned by {made_by})"
    ))
}

/// Registers a new graph; returns its handle.
pub(crate) fn add_graph(g: goal_graph) -> GOAL_Graph {
    let id = new_id();
    let mut t = GRAPHS.write().unwrap_or_else(|p| p.into_inner());
    t.get_or_insert_with(HashMap::new)
        .insert(id, Box::new(Slot(UnsafeCell::new(g))));
    (id << TAG_BITS | GRAPH_TAG) as GOAL_Graph
}

/// The graph behind handle `g`.
///
/// # Safety
/// The graph must not be used by another thread, or freed, until the
/// returned reference is dropped (the contract: a graph belongs to one
/// thread at a time).
pub(crate) unsafe fn graph<'a>(g: GOAL_Graph, what: &str) -> Result<&'a mut goal_graph, Error> {
    if g.is_null() {
        return Err(invalid(format!("{what}: the graph is NULL")));
    }
    let v = g as usize;
    let t = GRAPHS.read().unwrap_or_else(|p| p.into_inner());
    let found = id_of(v, GRAPH_TAG).and_then(|id| t.as_ref()?.get(&id));
    let Some(b) = found else {
        return Err(stale(what, "graph", v, "GOAL_CreateGraph"));
    };
    let p = b.0.get();
    // SAFETY: the box stays in the table, at this address, until
    // `remove_graph` takes it out, which the caller promises not to do
    // (nor use the graph from another thread) while the reference lives;
    // so it is the only reference to the graph.
    Ok(unsafe { &mut *p })
}

/// Takes graph `g` out of the table (it is dropped by the caller).
pub(crate) fn remove_graph(g: GOAL_Graph, what: &str) -> Result<goal_graph, Error> {
    if g.is_null() {
        return Err(invalid(format!("{what}: the graph is NULL")));
    }
    let v = g as usize;
    let mut t = GRAPHS.write().unwrap_or_else(|p| p.into_inner());
    id_of(v, GRAPH_TAG)
        .and_then(|id| t.as_mut()?.remove(&id))
        .map(|slot| slot.0.into_inner())
        .ok_or_else(|| stale(what, "graph", v, "GOAL_CreateGraph"))
}

/// A schedule's place in the slab.
struct SchedSlot {
    /// Bumped by each free: a handle is live while its generation is this.
    gen: AtomicU32,
    /// The schedule (a `Box` turned into a pointer), null while free.
    ptr: AtomicPtr<goal_schedule>,
}

/// Slots come in chunks of [`CHUNK_SLOTS`], each allocated once and never
/// freed or moved, so a lookup needs no lock: a shift and a mask find the
/// slot. [`CHUNKS`] chunk pointers (512 KiB of zeros until used): 128
/// million schedules at once, whose indices fit the handle's 28 bits.
const CHUNK_SLOTS: usize = 1 << 12;
const CHUNKS: usize = 1 << 15;
/// Handle layout: slot index << INDEX_SHIFT | generation << TAG_BITS | tag.
const INDEX_SHIFT: u32 = 36;

#[allow(clippy::declare_interior_mutable_const)] // an initializer, copied per chunk
const NO_CHUNK: AtomicPtr<SchedSlot> = AtomicPtr::new(std::ptr::null_mut());
static CHUNK: [AtomicPtr<SchedSlot>; CHUNKS] = [NO_CHUNK; CHUNKS];

/// The slab's free slots and its high-water mark; taken by adds and frees
/// (not by lookups).
static SLAB: Mutex<(Vec<u32>, u32)> = Mutex::new((Vec::new(), 0));

// Handles are 64-bit values (index, generation and tag).
const _: () = assert!(usize::BITS == 64 && CHUNK_SLOTS * CHUNKS <= 1 << (64 - INDEX_SHIFT));

/// The chunk of slot `index` and the slot's offset in it.
#[inline(always)]
fn place(index: usize) -> (usize, usize) {
    (index / CHUNK_SLOTS, index % CHUNK_SLOTS)
}

/// Slot `index`, if its chunk exists.
#[inline(always)]
fn slot(index: usize) -> Option<&'static SchedSlot> {
    let (c, off) = place(index);
    let chunk = CHUNK.get(c)?.load(Ordering::Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: a chunk, once published, holds `CHUNK_SLOTS` slots and is
    // never freed or moved; `off` is below that by `place`.
    Some(unsafe { &*chunk.add(off) })
}

/// Registers a new schedule; returns its handle.
pub(crate) fn add_schedule(s: goal_schedule) -> GOAL_Schedule {
    let mut slab = SLAB.lock().unwrap_or_else(|p| p.into_inner());
    let index = match slab.0.pop() {
        Some(i) => i as usize,
        None => {
            let i = slab.1 as usize;
            let (c, off) = place(i);
            assert!(c < CHUNKS, "goal ran out of schedule slots");
            if off == 0 {
                let chunk: Box<[SchedSlot]> = (0..CHUNK_SLOTS)
                    .map(|_| SchedSlot { gen: AtomicU32::new(0), ptr: AtomicPtr::new(std::ptr::null_mut()) })
                    .collect();
                // Leaked on purpose: chunks live as long as the process.
                CHUNK[c].store(Box::leak(chunk).as_mut_ptr(), Ordering::Release);
            }
            slab.1 += 1;
            i
        }
    };
    let slot = slot(index).expect("the slab made it");
    slot.ptr.store(Box::into_raw(Box::new(s)), Ordering::Release);
    let gen = slot.gen.load(Ordering::Relaxed) as usize;
    (index << INDEX_SHIFT | gen << TAG_BITS | SCHEDULE_TAG) as GOAL_Schedule
}

/// The live slot of handle value `v`, if it is one.
#[inline(always)]
fn live(v: usize) -> Option<(usize, &'static SchedSlot)> {
    if v & TAG_MASK != SCHEDULE_TAG {
        return None;
    }
    let slot = slot(v >> INDEX_SHIFT)?;
    (slot.gen.load(Ordering::Acquire) == (v >> TAG_BITS) as u32).then_some((v >> INDEX_SHIFT, slot))
}

/// The schedule behind handle `s`.
///
/// The reference is valid until the schedule is freed, which the caller
/// may not do (nor let another thread do) while it holds it (the header:
/// freeing a schedule that another thread uses is undefined).
#[inline]
pub(crate) fn schedule<'a>(s: GOAL_Schedule, what: &str) -> Result<&'a goal_schedule, Error> {
    find_schedule(s).ok_or_else(|| not_a_schedule(s as usize, what))
}

/// [`schedule`] without the error: the lookup of every `GOAL_Run`.
#[inline(always)]
pub(crate) fn find_schedule<'a>(s: GOAL_Schedule) -> Option<&'a goal_schedule> {
    let p = live(s as usize)?.1.ptr.load(Ordering::Acquire);
    // SAFETY: a live slot's pointer is null or a `Box` of `add_schedule`,
    // freed only by `remove_schedule`, which the caller does not race (see
    // `schedule`).
    unsafe { p.as_ref() }
}

/// Why handle value `v` given to `what` is no schedule (off the Run path).
#[cold]
#[inline(never)]
pub(crate) fn not_a_schedule(v: usize, what: &str) -> Error {
    if v == 0 {
        invalid(format!("{what}: the schedule is NULL"))
    } else {
        stale(what, "schedule", v, "GOAL_Compile or a GOAL_Xxx_init")
    }
}

/// Takes schedule `s` out of the slab if `keep` finds no reason to keep
/// it (the error it returns instead).
pub(crate) fn remove_schedule(
    s: GOAL_Schedule,
    what: &str,
    keep: impl FnOnce(&goal_schedule) -> Option<Error>,
) -> Result<Box<goal_schedule>, Error> {
    if s.is_null() {
        return Err(invalid(format!("{what}: the schedule is NULL")));
    }
    let v = s as usize;
    // Under the slab's lock: two frees of one handle cannot both take it.
    let mut slab = SLAB.lock().unwrap_or_else(|p| p.into_inner());
    let found = live(v).map(|(i, slot)| (i, slot, slot.ptr.load(Ordering::Acquire))).filter(|&(_, _, p)| !p.is_null());
    let Some((index, slot, p)) = found else {
        return Err(stale(what, "schedule", v, "GOAL_Compile or a GOAL_Xxx_init"));
    };
    // SAFETY: the slot is live and holds a `Box` of `add_schedule`; only
    // this function, under the lock, takes it.
    if let Some(e) = keep(unsafe { &*p }) {
        return Err(e);
    }
    slot.ptr.store(std::ptr::null_mut(), Ordering::Release);
    slot.gen.fetch_add(1, Ordering::Release);
    slab.0.push(index as u32);
    // SAFETY: as above; the slot no longer names it, so it is taken once.
    Ok(unsafe { Box::from_raw(p) })
}
