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
//! The cost is a read lock and a hash lookup per call: tens of nanoseconds
//! against the microseconds a `GOAL_Run` takes.

use crate::{goal_graph, goal_schedule, invalid, GOAL_Graph, GOAL_Schedule};
use goal_rt::Error;
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

const TAG_BITS: u32 = 4;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;
/// Low bits of a graph handle.
const GRAPH_TAG: usize = 0x5;
/// Low bits of a schedule handle.
const SCHEDULE_TAG: usize = 0xA;

/// The next id; ids start at 1, so no handle is NULL.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A graph in the table. Boxed, so that it stays where it is while the
/// table grows: [`graph`] hands out a reference into the box.
struct Slot(UnsafeCell<goal_graph>);

// SAFETY: the table only moves the boxes; the graph inside is reached
// through `graph`, whose callers use a graph from one thread at a time (the
// contract), so no two threads touch one graph at once.
unsafe impl Sync for Slot {}

/// Graphs by id.
static GRAPHS: RwLock<Option<HashMap<usize, Box<Slot>>>> = RwLock::new(None);
/// Schedules by id; a call holds its own reference while it uses one.
static SCHEDULES: RwLock<Option<HashMap<usize, Arc<goal_schedule>>>> = RwLock::new(None);

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

/// Registers a new schedule; returns its handle.
pub(crate) fn add_schedule(s: goal_schedule) -> GOAL_Schedule {
    let id = new_id();
    let mut t = SCHEDULES.write().unwrap_or_else(|p| p.into_inner());
    t.get_or_insert_with(HashMap::new).insert(id, Arc::new(s));
    (id << TAG_BITS | SCHEDULE_TAG) as GOAL_Schedule
}

/// The schedule behind handle `s`.
pub(crate) fn schedule(s: GOAL_Schedule, what: &str) -> Result<Arc<goal_schedule>, Error> {
    if s.is_null() {
        return Err(invalid(format!("{what}: the schedule is NULL")));
    }
    let v = s as usize;
    let t = SCHEDULES.read().unwrap_or_else(|p| p.into_inner());
    id_of(v, SCHEDULE_TAG)
        .and_then(|id| t.as_ref()?.get(&id).cloned())
        .ok_or_else(|| stale(what, "schedule", v, "GOAL_Compile or a GOAL_Xxx_init"))
}

/// Takes schedule `s` out of the table if `keep` finds no reason to keep
/// it (the error it returns instead).
pub(crate) fn remove_schedule(
    s: GOAL_Schedule,
    what: &str,
    keep: impl FnOnce(&goal_schedule) -> Option<Error>,
) -> Result<Arc<goal_schedule>, Error> {
    if s.is_null() {
        return Err(invalid(format!("{what}: the schedule is NULL")));
    }
    let v = s as usize;
    let mut t = SCHEDULES.write().unwrap_or_else(|p| p.into_inner());
    let id = id_of(v, SCHEDULE_TAG).filter(|id| t.as_ref().is_some_and(|m| m.contains_key(id)));
    let Some(id) = id else {
        return Err(stale(
            what,
            "schedule",
            v,
            "GOAL_Compile or a GOAL_Xxx_init",
        ));
    };
    let map = t.as_mut().expect("checked above");
    if let Some(e) = keep(&map[&id]) {
        return Err(e);
    }
    Ok(map.remove(&id).expect("checked above"))
}
