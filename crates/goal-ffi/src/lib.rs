//! goal-ffi: the C ABI of goal (`goal.h`, `libgoal.so`).
//!
//! In the layer picture of `docs/design.md` it is the top for C programs:
//! it calls goal-rt's Rust API and goal-sched's collective builders
//! (`coll`), and nothing calls it but the application.
//!
//! A thin skin over goal-rt: every exported function
//!
//! * sits behind a panic boundary (`guard`): a Rust panic never unwinds into
//!   C, it becomes `GOAL_ERR_INTERNAL` with a message;
//! * turns null or dangling-looking arguments into error codes, never crashes;
//! * records a complete message for `GOAL_LastError()` whenever it fails.
//!
//! `include/goal.h` is generated from this file by cbindgen and committed;
//! the `header` test regenerates it and fails on any difference
//! (`GOAL_BLESS=1 cargo test -p goal-ffi --test header` rewrites it).
//! Enumerations are `int` typedefs with `#define`d values, so that a value
//! that does not exist reaches the compiler's check instead of being
//! undefined behaviour in Rust.

#![allow(non_camel_case_types, non_snake_case)]
#![deny(unsafe_op_in_unsafe_fn)]

use goal_rt::{Error, ErrorKind};
use goal_sched::Graph;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

mod coll;
mod coll_large;
mod coll_on;
mod coll_v;
mod group;
mod host;
mod registry;
mod runbuf;
mod userop;
mod vertex;
pub use coll::*;
pub use coll_large::*;
pub use coll_on::*;
pub use coll_v::*;
pub use group::*;
pub use host::*;
pub use runbuf::*;
pub use userop::*;
pub use vertex::*;

/// A graph under construction (opaque).
pub struct goal_graph {
    g: Graph,
    /// The group whose ranks its peers are (`None`: the world group).
    group: Option<goal_rt::Group>,
    /// Tag span for the next collective appended (see `coll`).
    next_coll_tag: i64,
}

/// A compiled schedule (opaque).
pub struct goal_schedule {
    s: goal_rt::Schedule,
    rt: Arc<goal_rt::Runtime>,
}

/// One execution of a schedule (opaque: a `goal_rt::Handle` as a pointer).
pub struct goal_handle {
    _opaque: [u8; 0],
}

/// A graph; NULL is invalid. An opaque handle (not an address): one that
/// was freed is refused with an error.
pub type GOAL_Graph = *mut goal_graph;
/// A compiled schedule; NULL is invalid. An opaque handle (not an address):
/// one that was freed is refused with an error.
pub type GOAL_Schedule = *mut goal_schedule;
/// A running execution; NULL is invalid.
pub type GOAL_Handle = *mut goal_handle;
/// A group of ranks (extension; opaque).
pub struct goal_group {
    _opaque: [u8; 0],
}
/// A group of ranks (extension); NULL is invalid. An opaque handle (not an
/// address): one that was freed is refused with an error.
pub type GOAL_Group = *mut goal_group;
/// The index of a vertex in its graph.
pub type GOAL_Vertex = i64;
/// No vertex: what the vertex-adding functions return on error.
pub const GOAL_INVALID_VERTEX: GOAL_Vertex = -1;

/// Where a buffer lives: `GOAL_USERSPACE`, `GOAL_SCRATCHPAD` or
/// `GOAL_RUNBUF(i)` (run-time buffer `i`, given by each `GOAL_RunWith`).
pub type GOAL_MemType = c_int;
/// A pointer into the process' memory.
pub const GOAL_USERSPACE: GOAL_MemType = 0;
/// A byte offset into the execution's scratchpad, cast to a pointer.
pub const GOAL_SCRATCHPAD: GOAL_MemType = 1;

/// Element type of a local operation.
pub type GOAL_DataType = c_int;
/// Signed integer.
pub const GOAL_SINT: GOAL_DataType = 0;
/// Unsigned integer.
pub const GOAL_UINT: GOAL_DataType = 1;
/// IEEE floating point: width 16 (binary16, "half"), 32 or 64.
pub const GOAL_FLOAT: GOAL_DataType = 2;
/// bfloat16 (the upper 16 bits of an IEEE binary32), width 16 only. 16-bit
/// floats combine in fp32 and round to nearest even once per combine (see
/// docs/api.md).
pub const GOAL_BFLOAT: GOAL_DataType = 3;
/// Opaque elements of `element_width / 8` bytes (any positive multiple of
/// 8 bits): only user operations (GOAL_Op_create) and GOAL_COPY take them.
pub const GOAL_BYTES: GOAL_DataType = 4;

/// Operator of a local operation.
pub type GOAL_Op = c_int;
/// Maximum.
pub const GOAL_MAX: GOAL_Op = 0;
/// Minimum.
pub const GOAL_MIN: GOAL_Op = 1;
/// Sum (integers wrap).
pub const GOAL_ADD: GOAL_Op = 2;
/// Difference (integers wrap).
pub const GOAL_SUB: GOAL_Op = 3;
/// Quotient (integer division by zero is an execution error).
pub const GOAL_DIV: GOAL_Op = 4;
/// Product (integers wrap).
pub const GOAL_MUL: GOAL_Op = 5;
/// Copy of the first operand.
pub const GOAL_COPY: GOAL_Op = 6;
/// Bitwise and (integers only).
pub const GOAL_AND: GOAL_Op = 7;
/// Bitwise or (integers only).
pub const GOAL_OR: GOAL_Op = 8;
/// Bitwise exclusive or (integers only).
pub const GOAL_XOR: GOAL_Op = 9;
/// Writes the time in seconds as one 64-bit double into the result.
pub const GOAL_WTIME: GOAL_Op = 10;
/// No operator: what GOAL_Op_free leaves. User operators (GOAL_Op_create)
/// are values from 65536 up, never a built-in one's.
pub const GOAL_OP_NULL: GOAL_Op = -1;

/// Success; every error code is negative.
pub const GOAL_SUCCESS: c_int = 0;
/// Receive from any source (extension).
pub const GOAL_ANY_SOURCE: c_int = -1;
/// Receive with any tag (extension).
pub const GOAL_ANY_TAG: c_int = -1;

/// goal is not initialized, or already finalized.
pub const GOAL_ERR_NOT_INITIALIZED: c_int = -1;
/// GOAL_Init was called twice.
pub const GOAL_ERR_ALREADY_INITIALIZED: c_int = -2;
/// An argument is invalid (NULL, out of range, a bad vertex).
pub const GOAL_ERR_INVALID_ARGUMENT: c_int = -3;
/// The graph has a dependency cycle.
pub const GOAL_ERR_CYCLE: c_int = -4;
/// A rank is outside the group.
pub const GOAL_ERR_RANK: c_int = -5;
/// A scratchpad range reaches past the scratchpad.
pub const GOAL_ERR_SCRATCHPAD: c_int = -6;
/// An operator, data type, width or memory type that does not exist.
pub const GOAL_ERR_BAD_OP: c_int = -7;
/// A message was larger than its receive.
pub const GOAL_ERR_TRUNCATED: c_int = -8;
/// Integer division by zero in a local operation.
pub const GOAL_ERR_DIV_BY_ZERO: c_int = -9;
/// A peer died or left while an execution needed it.
pub const GOAL_ERR_PEER_LOST: c_int = -10;
/// The schedule still has executions running.
pub const GOAL_ERR_BUSY: c_int = -11;
/// Out of memory.
pub const GOAL_ERR_NO_MEMORY: c_int = -12;
/// The operating system refused (shared memory, launch).
pub const GOAL_ERR_SYSTEM: c_int = -13;
/// The requested algorithm does not apply.
pub const GOAL_ERR_UNSUPPORTED: c_int = -14;
/// An internal error (a bug in goal); the message says where.
pub const GOAL_ERR_INTERNAL: c_int = -15;
/// The ranks' schedules do not pair up: a message came for an execution
/// whose schedule has no receive from that rank with that tag (schedules
/// compiled in a different order, or a collective called with a different
/// root or size on some rank). The message names schedule, peer and tag.
pub const GOAL_ERR_MISMATCH: c_int = -16;
/// A peer's execution failed by an error of its own (a division by zero,
/// a truncated receive, ...) before it sent a message this execution waits
/// for, which will therefore never come. Reported about a second after the
/// wait began; the message names the peer, schedule, execution and tag, and
/// the peer's own error says why it failed.
pub const GOAL_ERR_PEER_FAILED: c_int = -17;

/// Extension id: `GOAL_ANY_SOURCE` / `GOAL_ANY_TAG` wildcards.
pub const GOAL_EXT_WILDCARDS: c_int = 1;
/// Extension id: `GOAL_Progress` and the `GOAL_PROGRESS` modes.
pub const GOAL_EXT_PROGRESS: c_int = 2;
/// Extension id: `GOAL_Alloc` / `GOAL_Free` shared memory.
pub const GOAL_EXT_ALLOC: c_int = 3;
/// Extension id: `GOAL_ErrorString` / `GOAL_LastError`.
pub const GOAL_EXT_ERRORS: c_int = 4;
/// Extension id: groups (`GOAL_Group_*`, `GOAL_CreateGraphOn`, `GOAL_Xxx_init_on`).
pub const GOAL_EXT_GROUPS: c_int = 5;
/// Extension id: collectives with per-rank counts (gatherv ... reduce_scatter).
pub const GOAL_EXT_VCOLLECTIVES: c_int = 6;
/// Extension id: 16-bit floats (`GOAL_FLOAT` width 16, `GOAL_BFLOAT`).
pub const GOAL_EXT_HALF: c_int = 7;
/// Extension id: user reductions (`GOAL_Op_create`, `GOAL_BYTES`).
pub const GOAL_EXT_USER_OPS: c_int = 8;
/// Extension id: buffers given at each run (`GOAL_RunWith`, `GOAL_RUNBUF`, `GOAL_BUF_AT_RUN`).
pub const GOAL_EXT_RUN_BUFFERS: c_int = 9;
/// Extension id: `size_t` counts (`GOAL_Send_c` ...), messages up to 4 GiB - 1.
pub const GOAL_EXT_LARGE_COUNTS: c_int = 10;
/// Extension id: every application thread may call goal at once.
pub const GOAL_EXT_THREADS: c_int = 11;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn code_of(kind: ErrorKind) -> c_int {
    match kind {
        ErrorKind::NotInitialized => GOAL_ERR_NOT_INITIALIZED,
        ErrorKind::AlreadyInitialized => GOAL_ERR_ALREADY_INITIALIZED,
        ErrorKind::InvalidArgument => GOAL_ERR_INVALID_ARGUMENT,
        ErrorKind::Cycle => GOAL_ERR_CYCLE,
        ErrorKind::Rank => GOAL_ERR_RANK,
        ErrorKind::Scratchpad => GOAL_ERR_SCRATCHPAD,
        ErrorKind::BadOp => GOAL_ERR_BAD_OP,
        ErrorKind::Truncated => GOAL_ERR_TRUNCATED,
        ErrorKind::DivByZero => GOAL_ERR_DIV_BY_ZERO,
        ErrorKind::PeerLost => GOAL_ERR_PEER_LOST,
        ErrorKind::Busy => GOAL_ERR_BUSY,
        ErrorKind::NoMemory => GOAL_ERR_NO_MEMORY,
        ErrorKind::System => GOAL_ERR_SYSTEM,
        ErrorKind::Unsupported => GOAL_ERR_UNSUPPORTED,
        ErrorKind::Mismatch => GOAL_ERR_MISMATCH,
        ErrorKind::PeerFailed => GOAL_ERR_PEER_FAILED,
    }
}

/// Records `e` as the thread's last error and returns its code.
fn fail(e: Error) -> c_int {
    set_error(&in_c_words(&e.message));
    code_of(e.kind)
}

/// The runtime's words for its start and end (it serves Rust callers too)
/// as a C caller knows them.
fn in_c_words(msg: &str) -> String {
    msg.replace("before goal was initialized", "before GOAL_Init").replace("after goal was finalized", "after GOAL_Finalize")
}

/// Names the C function `what` in an error from the runtime, whose
/// messages name no C function (goal-rt serves Rust callers too).
fn named(what: &str) -> impl FnOnce(Error) -> Error + '_ {
    move |mut e| {
        e.message = format!("{what}: {}", e.message);
        e
    }
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg)
}

/// The entry of every call: refuses a call from inside a user operation's
/// function (see `userop`), then runs `f` behind the panic boundary.
fn guard<T>(what: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    if let Some(e) = userop::refused_inside(what) {
        fail(e);
        return on_panic;
    }
    boundary(what, on_panic, f)
}

/// The panic boundary: runs `f`, turning a panic into `on_panic` and a
/// message. Without `guard`'s check where it is made once already:
/// `code_result` makes it itself (to return the refusal's code), and
/// `GOAL_Run` leaves it to goal-rt's `Runtime::run`, so that the Run path
/// reads that thread-local once.
fn boundary<T>(what: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let why = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            set_error(&format!("{what}: internal error (please report): {why}"));
            on_panic
        }
    }
}

fn code_result(what: &str, f: impl FnOnce() -> Result<c_int, Error>) -> c_int {
    // (`guard`'s check, with the refusal's own code.)
    if let Some(e) = userop::refused_inside(what) {
        return fail(e);
    }
    boundary(what, GOAL_ERR_INTERNAL, || f().unwrap_or_else(fail))
}

/// Borrows the graph behind `g`, refusing NULL, a freed graph and (after
/// `GOAL_Finalize`) any graph.
///
/// # Safety
/// No other thread may use or free the graph while the reference lives.
unsafe fn graph<'a>(g: GOAL_Graph, what: &str) -> Result<&'a mut goal_graph, Error> {
    // SAFETY: forwarded caller guarantee.
    let gr = unsafe { registry::graph(g, what) }?;
    if !goal_rt::is_initialized() {
        goal_rt::runtime(what)?;
    }
    Ok(gr)
}

fn vertex_result(what: &str, f: impl FnOnce() -> Result<GOAL_Vertex, Error>) -> GOAL_Vertex {
    guard(what, GOAL_INVALID_VERTEX, || {
        f().unwrap_or_else(|e| {
            fail(e);
            GOAL_INVALID_VERTEX
        })
    })
}

// ---- group -------------------------------------------------------------

/// Initializes goal (once per process). Returns GOAL_SUCCESS or an error code.
#[no_mangle]
pub extern "C" fn GOAL_Init() -> c_int {
    code_result("GOAL_Init", || goal_rt::init().map(|_| GOAL_SUCCESS).map_err(named("GOAL_Init")))
}

/// Returns 1 after GOAL_Init succeeded (and before GOAL_Finalize), else 0.
#[no_mangle]
pub extern "C" fn GOAL_IsInitialized() -> c_int {
    guard("GOAL_IsInitialized", 0, || goal_rt::is_initialized() as c_int)
}

/// Returns the number of ranks, or an error code before GOAL_Init.
#[no_mangle]
pub extern "C" fn GOAL_GroupSize() -> c_int {
    code_result("GOAL_GroupSize", || goal_rt::runtime("GOAL_GroupSize").map(|rt| rt.size() as c_int))
}

/// Returns this process' rank (0 .. GOAL_GroupSize()-1), or an error code before GOAL_Init.
#[no_mangle]
pub extern "C" fn GOAL_MyRank() -> c_int {
    code_result("GOAL_MyRank", || goal_rt::runtime("GOAL_MyRank").map(|rt| rt.rank() as c_int))
}

/// Frees everything; afterwards only GOAL_IsFinalized() may be called. Returns GOAL_SUCCESS or an error code.
#[no_mangle]
pub extern "C" fn GOAL_Finalize() -> c_int {
    code_result("GOAL_Finalize", || {
        goal_rt::finalize().map_err(named("GOAL_Finalize"))?;
        Ok(GOAL_SUCCESS)
    })
}

/// Returns 1 if goal is finalized or not yet initialized, else 0.
#[no_mangle]
pub extern "C" fn GOAL_IsFinalized() -> c_int {
    guard("GOAL_IsFinalized", 1, || goal_rt::is_finalized() as c_int)
}

// ---- graphs ------------------------------------------------------------

/// A new graph bound to `grp` (see `GOAL_CreateGraphOn`).
fn graph_of_group(grp: goal_rt::Group) -> GOAL_Graph {
    registry::add_graph(goal_graph { g: Graph::new(), group: Some(grp), next_coll_tag: coll::GOAL_COLL_TAG_BASE as i64 })
}

/// Returns a new, empty graph, or NULL (with GOAL_LastError()) before GOAL_Init or after GOAL_Finalize.
#[no_mangle]
pub extern "C" fn GOAL_CreateGraph() -> GOAL_Graph {
    guard("GOAL_CreateGraph", std::ptr::null_mut(), || match goal_rt::runtime("GOAL_CreateGraph") {
        Ok(_) => registry::add_graph(goal_graph { g: Graph::new(), group: None, next_coll_tag: coll::GOAL_COLL_TAG_BASE as i64 }),
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    })
}

/// Frees a graph (its compiled schedules stay valid); also after GOAL_Finalize. Returns GOAL_SUCCESS or an error code (a graph freed already: GOAL_ERR_INVALID_ARGUMENT).
///
/// # Safety
/// No other thread may be using the graph.
#[no_mangle]
pub unsafe extern "C" fn GOAL_FreeGraph(g: GOAL_Graph) -> c_int {
    code_result("GOAL_FreeGraph", || {
        drop(registry::remove_graph(g, "GOAL_FreeGraph")?);
        Ok(GOAL_SUCCESS)
    })
}

/// `target` may start only after `prereq` has finished (prerequisite first). Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `g` must be NULL or a live graph.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Requires(g: GOAL_Graph, prereq: GOAL_Vertex, target: GOAL_Vertex) -> c_int {
    code_result("GOAL_Requires", || {
        // SAFETY: forwarded caller guarantee.
        let gr = unsafe { graph(g, "GOAL_Requires") }?;
        let n = gr.g.len();
        for (name, v) in [("prereq", prereq), ("target", target)] {
            if v < 0 || v as u64 >= n as u64 {
                return Err(invalid(format!("GOAL_Requires: {name} vertex {v} is not in this graph of {n} vertices")));
            }
        }
        gr.g.requires(prereq as u64, target as u64).map_err(|b| invalid(format!("GOAL_Requires: vertex {} is not in this graph", b.0)))?;
        Ok(GOAL_SUCCESS)
    })
}

/// Sets the size of the scratchpad each execution gets. Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `g` must be NULL or a live graph.
#[no_mangle]
pub unsafe extern "C" fn GOAL_AllocateScratchpad(g: GOAL_Graph, bytes: usize) -> c_int {
    code_result("GOAL_AllocateScratchpad", || {
        // SAFETY: forwarded caller guarantee.
        let gr = unsafe { graph(g, "GOAL_AllocateScratchpad") }?;
        if bytes > (1usize << 40) {
            return Err(invalid(format!("GOAL_AllocateScratchpad: {bytes} bytes is more than 1 TiB")));
        }
        gr.g.set_scratchpad(bytes as u64);
        Ok(GOAL_SUCCESS)
    })
}

// ---- schedules ---------------------------------------------------------

/// Checks and compiles a graph. Returns the schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// `g` must be NULL or a live graph.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Compile(g: GOAL_Graph) -> GOAL_Schedule {
    guard("GOAL_Compile", std::ptr::null_mut(), || {
        let r = (|| {
            // SAFETY: forwarded caller guarantee.
            let gr = unsafe { graph(g, "GOAL_Compile") }?;
            let rt = goal_rt::runtime("GOAL_Compile")?;
            let s = match &gr.group {
                None => rt.compile(&gr.g),
                Some(grp) => rt.compile_on(grp, &gr.g),
            }
            .map_err(named("GOAL_Compile"))?;
            Ok(registry::add_schedule(goal_schedule { s, rt }))
        })();
        r.unwrap_or_else(|e: Error| {
            fail(e);
            std::ptr::null_mut()
        })
    })
}

/// Returns 1 while the schedule can be run (compiled, not freed, goal not finalized), else 0.
///
/// # Safety
/// None: any value is answered.
#[no_mangle]
pub unsafe extern "C" fn GOAL_IsScheduleValid(s: GOAL_Schedule) -> c_int {
    guard("GOAL_IsScheduleValid", 0, || (goal_rt::is_initialized() && registry::schedule(s, "GOAL_IsScheduleValid").is_ok()) as c_int)
}

/// Schedules are never consumed by running them; this is a no-op kept for portability.
///
/// # Safety
/// `s` must be NULL or a live schedule.
#[no_mangle]
pub unsafe extern "C" fn GOAL_MakeScheduleReusable(s: GOAL_Schedule) {
    let _ = s;
}

/// Frees a schedule; fails with GOAL_ERR_BUSY while one of its executions runs. Also after GOAL_Finalize. Returns GOAL_SUCCESS or an error code (a schedule freed already: GOAL_ERR_INVALID_ARGUMENT).
///
/// # Safety
/// None: any value is answered.
#[no_mangle]
pub unsafe extern "C" fn GOAL_FreeSchedule(s: GOAL_Schedule) -> c_int {
    code_result("GOAL_FreeSchedule", || {
        let sc = registry::remove_schedule(s, "GOAL_FreeSchedule", |sc| {
            sc.s.is_running().then(|| Error::new(ErrorKind::Busy, "GOAL_FreeSchedule: the schedule still has executions running; wait for them first"))
        })?;
        drop(sc);
        Ok(GOAL_SUCCESS)
    })
}

/// C's handle for `h`: the execution's counted state itself
/// ([`goal_rt::Handle::into_raw`]), so that Run and Wait allocate nothing.
fn new_handle(h: goal_rt::Handle) -> GOAL_Handle {
    h.into_raw() as GOAL_Handle
}

/// Takes back the execution of handle `p`.
///
/// # Safety
/// `p` must come from [`new_handle`] and not have been taken before.
unsafe fn take_handle(p: GOAL_Handle) -> goal_rt::Handle {
    // SAFETY: from `new_handle`, taken once (caller).
    unsafe { goal_rt::Handle::from_raw(p as *const c_void) }
}

/// Starts one execution. Returns its handle, or NULL with GOAL_LastError() saying why
/// (a schedule with run-time buffers starts with GOAL_RunWith only).
///
/// # Safety
/// The buffers the schedule's graph names must be valid until the execution
/// has finished.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Run(s: GOAL_Schedule) -> GOAL_Handle {
    // (`Runtime::run` refuses a call from inside a user operation.)
    boundary("GOAL_Run", std::ptr::null_mut(), || {
        let Some(sc) = registry::find_schedule(s) else {
            fail(registry::not_a_schedule(s as usize, "GOAL_Run"));
            return std::ptr::null_mut();
        };
        if !goal_rt::is_initialized() {
            fail(Error::new(ErrorKind::NotInitialized, "GOAL_Run: goal is not initialized (or already finalized)"));
            return std::ptr::null_mut();
        }
        // SAFETY: the caller guarantees the buffers stay valid until the execution finishes.
        match unsafe { sc.rt.run(&sc.s) }.map_err(named("GOAL_Run")) {
            Ok(h) => new_handle(h),
            Err(e) => {
                fail(e);
                std::ptr::null_mut()
            }
        }
    })
}

/// Returns 1 when finished, 0 while running, <0 if the execution failed; the handle is released once 1 or <0 was returned.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Test(h: GOAL_Handle) -> c_int {
    code_result("GOAL_Test", || {
        if h.is_null() {
            return Err(invalid("GOAL_Test: the handle is NULL".into()));
        }
        // SAFETY: h came from GOAL_Run (caller: live); given back below
        // unless released here, exactly once.
        let hd = std::mem::ManuallyDrop::new(unsafe { take_handle(h) });
        let r = hd.test();
        if !matches!(r, Ok(false)) {
            drop(std::mem::ManuallyDrop::into_inner(hd));
        }
        r.map(|done| done as c_int)
    })
}

/// Blocks until the execution has finished; returns GOAL_SUCCESS or its error. The handle is released.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Wait(h: GOAL_Handle) -> c_int {
    code_result("GOAL_Wait", || {
        if h.is_null() {
            return Err(invalid("GOAL_Wait: the handle is NULL".into()));
        }
        // SAFETY: h came from GOAL_Run; released exactly once here.
        let hd = unsafe { take_handle(h) };
        hd.wait().map(|_| GOAL_SUCCESS)
    })
}

/// Returns 1 if the extension (GOAL_EXT_*) is available, else 0.
#[no_mangle]
pub extern "C" fn GOAL_IsExtensionAvailable(extension_id: c_int) -> c_int {
    (GOAL_EXT_WILDCARDS..=GOAL_EXT_THREADS).contains(&extension_id) as c_int
}

/// Advances every running execution as far as it can without blocking; returns the operations finished, or <0.
#[no_mangle]
pub extern "C" fn GOAL_Progress() -> c_int {
    code_result("GOAL_Progress", || goal_rt::runtime("GOAL_Progress").map(|rt| rt.progress().min(c_int::MAX as usize) as c_int))
}

/// Returns the time in seconds on the clock GOAL_WTIME uses (extension).
#[no_mangle]
pub extern "C" fn GOAL_Wtime() -> f64 {
    goal_rt::wtime()
}

// ---- memory ------------------------------------------------------------

/// Returns memory other local ranks can read directly (sends from it take a single copy), or NULL.
/// It stays valid after GOAL_Finalize, until GOAL_Free.
#[no_mangle]
pub extern "C" fn GOAL_Alloc(bytes: usize) -> *mut c_void {
    guard("GOAL_Alloc", std::ptr::null_mut(), || {
        let rt = match goal_rt::runtime("GOAL_Alloc") {
            Ok(rt) => rt,
            Err(e) => {
                fail(e);
                return std::ptr::null_mut();
            }
        };
        match rt.alloc(bytes) {
            Some(p) => p.as_ptr() as *mut c_void,
            None => {
                fail(Error::new(ErrorKind::NoMemory, format!("GOAL_Alloc: {bytes} bytes do not fit in the shared heap (GOAL_HEAP_BYTES)")));
                std::ptr::null_mut()
            }
        }
    })
}

/// Frees memory from GOAL_Alloc, before or after GOAL_Finalize. Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `ptr` must be NULL or come from GOAL_Alloc, not freed before.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Free(ptr: *mut c_void) -> c_int {
    code_result("GOAL_Free", || {
        if ptr.is_null() {
            return Ok(GOAL_SUCCESS);
        }
        let rt = match goal_rt::runtime("GOAL_Free") {
            Ok(rt) => rt,
            // After GOAL_Finalize: the heap is kept while blocks remain.
            Err(e) => {
                return match goal_rt::free_after_finalize(ptr as *mut u8) {
                    Some(true) => Ok(GOAL_SUCCESS),
                    Some(false) => Err(invalid(format!("GOAL_Free: {ptr:p} was not allocated by GOAL_Alloc"))),
                    None => Err(e),
                };
            }
        };
        if rt.free(ptr as *mut u8) {
            Ok(GOAL_SUCCESS)
        } else {
            Err(invalid(format!("GOAL_Free: {ptr:p} was not allocated by GOAL_Alloc")))
        }
    })
}

// ---- errors ------------------------------------------------------------

/// Returns static text for an error code (never NULL).
#[no_mangle]
pub extern "C" fn GOAL_ErrorString(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        GOAL_SUCCESS => c"success",
        GOAL_ERR_NOT_INITIALIZED => c"goal is not initialized (or already finalized)",
        GOAL_ERR_ALREADY_INITIALIZED => c"goal is already initialized",
        GOAL_ERR_INVALID_ARGUMENT => c"invalid argument",
        GOAL_ERR_CYCLE => c"the graph has a dependency cycle",
        GOAL_ERR_RANK => c"a rank is outside the group",
        GOAL_ERR_SCRATCHPAD => c"a scratchpad range reaches past the scratchpad",
        GOAL_ERR_BAD_OP => c"an operator, data type, width or memory type that does not exist",
        GOAL_ERR_TRUNCATED => c"a message was larger than its receive (truncation)",
        GOAL_ERR_DIV_BY_ZERO => c"integer division by zero",
        GOAL_ERR_PEER_LOST => c"a peer rank died or left",
        GOAL_ERR_BUSY => c"the schedule still has executions running",
        GOAL_ERR_NO_MEMORY => c"out of memory",
        GOAL_ERR_SYSTEM => c"the operating system refused",
        GOAL_ERR_UNSUPPORTED => c"the algorithm does not apply",
        GOAL_ERR_INTERNAL => c"internal error in goal",
        GOAL_ERR_MISMATCH => c"the ranks' schedules do not pair up (a message no receive of its schedule takes)",
        GOAL_ERR_PEER_FAILED => c"a peer's execution failed before sending a message this one waits for",
        _ => c"unknown error code",
    };
    s.as_ptr()
}

/// Returns the calling thread's last detailed error message ("" if none); valid until the thread's next failing call.
#[no_mangle]
pub extern "C" fn GOAL_LastError() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
