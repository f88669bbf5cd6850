//! A PMIx client through libpmix, loaded at run time with `dlopen`.
//!
//! PMIx is how Open MPI's `mpirun` (and `prterun`, and `srun --mpi=pmix`)
//! hands each rank a key-value exchange: the rank connects to a server the
//! launcher runs (found through the `PMIX_SERVER_URI*` variables), puts its
//! values, and a fence makes everyone's values readable. Its wire protocol is
//! not meant to be spoken by others, so goal uses the library.
//!
//! Why `dlopen` and not a link-time dependency: libgoal.so must load, and a
//! program must run under goalrun, srun or hydra, on machines without
//! libpmix. So nothing links against it; [`load`] looks for `libpmix.so.2`
//! (Debian's libpmix2; `GOAL_PMIX_LIBRARY` names another file) the first time
//! a PMIx launcher is detected, and if that fails the caller falls back to
//! goal's TCP store when one is configured, or explains what is missing.
//! The library is never unloaded: PMIx starts a progress thread of its own.
//!
//! The declarations below are written by hand from the headers of PMIx
//! 4.2.2 (Debian 12's libpmix-dev). Only stable parts are used: six
//! functions of the client API, `pmix_proc_t` (a 256-byte namespace and a
//! rank), the head of `pmix_value_t` (a type code, then a union that holds
//! a byte object or an integer) and one `pmix_info_t` (a 512-byte key, flags
//! and a value). Those have not changed from PMIx 2 to 5. A unit test
//! compiles a C program against the installed header and checks our sizes
//! and offsets against it.
//!
//! One allgather round: put my blob under `goal.ag.<round>` (scope
//! `PMIX_GLOBAL`), commit, fence with `PMIX_COLLECT_DATA`, then get every
//! other rank's value. The job secret travels the same way when the client
//! starts: rank 0 puts `goal.secret`, everyone fences, the others get it.
//! Only clients the launcher's server admitted (the job's ranks) can read
//! the values. A rank that dies makes the launcher end the job, so a fence
//! does not wait forever for it.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io;
use std::ptr;
use std::sync::OnceLock;

use crate::rounds::{self, Exchange, Rounds};
use crate::secret::{self, Publish, Secret, SECRET_LEN};
use crate::wire::MAX_BLOB;
use crate::Bootstrap;

/// The library file tried when `GOAL_PMIX_LIBRARY` is unset.
const DEFAULT_LIBRARY: &str = "libpmix.so.2";
/// Environment variable naming another libpmix to load.
pub(crate) const LIBRARY_VAR: &str = "GOAL_PMIX_LIBRARY";

type Status = c_int;
const PMIX_SUCCESS: Status = 0;
const PMIX_MAX_NSLEN: usize = 255;
const PMIX_MAX_KEYLEN: usize = 511;
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
const PMIX_BOOL: u16 = 1;
const PMIX_UINT32: u16 = 14;
const PMIX_BYTE_OBJECT: u16 = 27;
const PMIX_GLOBAL: u8 = 3;
const PMIX_JOB_SIZE: &CStr = c"pmix.job.size";
const PMIX_COLLECT_DATA: &[u8] = b"pmix.collect";
/// The key of the job secret.
const SECRET_KEY: &CStr = c"goal.secret";

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The union inside `pmix_value_t`, with the members goal uses; `_largest`
/// gives it the size of the largest C member (`pmix_envar_t`: two pointers
/// and a char, padded to 24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
union ValueData {
    flag: bool,
    uint32: u32,
    bo: ByteObject,
    _largest: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    kind: u16,
    data: ValueData,
}

/// `pmix_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Info {
    key: [c_char; PMIX_MAX_KEYLEN + 1],
    flags: u32,
    value: Value,
}

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> Status;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> Status;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> Status;
type CommitFn = unsafe extern "C" fn() -> Status;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> Status;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> Status;
type ValueDestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(Status) -> *const c_char;

/// The functions goal calls, resolved from the loaded library.
pub(crate) struct Api {
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    value_destruct: ValueDestructFn,
    error_string: ErrorStringFn,
    /// The file that was loaded, for messages.
    file: String,
}

/// Loads libpmix once per process and resolves the API; the error says
/// which file could not be loaded and why.
pub(crate) fn load() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let file = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| DEFAULT_LIBRARY.to_owned());
        open(&file)
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn dlerror() -> String {
    // SAFETY: dlerror takes no arguments and returns either null or a
    // NUL-terminated string owned by libc, valid until the next dl* call on
    // this thread; it is copied out at once.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        "unknown error".to_owned()
    } else {
        // SAFETY: non-null, so a NUL-terminated C string (see above).
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    }
}

fn open(file: &str) -> Result<Api, String> {
    let name =
        CString::new(file).map_err(|_| format!("{LIBRARY_VAR}='{file}' contains a NUL byte"))?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    // Loading runs the library's constructors; libpmix's only set up its
    // own state. The handle is never closed (PMIx runs threads of its own),
    // so the resolved functions stay valid for the life of the process.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("cannot load {file}: {}", dlerror()));
    }
    let sym = |symbol: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: `handle` is a live handle from dlopen (never closed) and
        // `symbol` a NUL-terminated string.
        let p = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "{file} has no {}: {}",
                symbol.to_string_lossy(),
                dlerror()
            ))
        } else {
            Ok(p)
        }
    };
    // SAFETY (every `function` below): each address is that of the named
    // function in libpmix, whose C prototype in pmix.h (4.2.2) is the one
    // the field's type declares: the argument and return types match
    // pmix_proc_t*, pmix_info_t*, size_t, pmix_scope_t (uint8_t),
    // const char*, pmix_value_t*, pmix_status_t (int) one for one.
    unsafe {
        Ok(Api {
            init: function::<InitFn>(sym(c"PMIx_Init")?),
            finalize: function::<FinalizeFn>(sym(c"PMIx_Finalize")?),
            put: function::<PutFn>(sym(c"PMIx_Put")?),
            commit: function::<CommitFn>(sym(c"PMIx_Commit")?),
            fence: function::<FenceFn>(sym(c"PMIx_Fence")?),
            get: function::<GetFn>(sym(c"PMIx_Get")?),
            value_destruct: function::<ValueDestructFn>(sym(c"PMIx_Value_destruct")?),
            error_string: function::<ErrorStringFn>(sym(c"PMIx_Error_string")?),
            file: file.to_owned(),
        })
    }
}

/// Turns a symbol's address into a function pointer of type `F`.
///
/// # Safety
///
/// `F` must be an `extern "C"` function pointer type whose signature is the
/// C prototype of the function at `address`, and the code there must stay
/// loaded for as long as the pointer is used.
unsafe fn function<F: Copy>(address: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: on Linux (System V ABI) a data pointer and a function pointer
    // have the same size (asserted) and representation; that `F` is the
    // right signature is the caller's promise.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) }
}

impl Api {
    /// An error for a failed call, with PMIx's name for the status.
    fn error(&self, call: &str, status: Status) -> io::Error {
        // SAFETY: PMIx_Error_string accepts any status and returns a pointer
        // to a static, NUL-terminated string (or null).
        let text = unsafe { (self.error_string)(status) };
        let text = if text.is_null() {
            format!("status {status}")
        } else {
            // SAFETY: non-null, so a static C string (see above).
            let s = unsafe { CStr::from_ptr(text) }.to_string_lossy();
            format!("{s} ({status})")
        };
        io::Error::other(format!("{call} failed: {text}"))
    }

    fn check(&self, call: &str, status: Status) -> io::Result<()> {
        if status == PMIX_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, status))
        }
    }
}

/// A rank connected to its launcher's PMIx server.
pub(crate) struct PmixClient {
    api: &'static Api,
    me: Proc,
    namespace: String,
    size: usize,
    secret: Secret,
    rounds: Rounds,
    finalized: bool,
}

impl std::fmt::Debug for PmixClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmixClient")
            .field("namespace", &self.namespace)
            .field("rank", &self.me.rank)
            .field("size", &self.size)
            .field("rounds", &self.rounds)
            .finish_non_exhaustive()
    }
}

impl PmixClient {
    /// Initialises PMIx, checks that the server agrees with `PMIX_RANK` and
    /// `PMIX_NAMESPACE`, learns the job size and agrees on the secret (a
    /// fence: every rank of the job must call this).
    pub(crate) fn connect(
        api: &'static Api,
        rank: usize,
        namespace: &str,
        goal_secret: Option<Secret>,
    ) -> io::Result<PmixClient> {
        // SAFETY: an all-zero pmix_proc_t is valid (an empty namespace).
        let mut me: Proc = unsafe { std::mem::zeroed() };
        // SAFETY: `me` is a live, writable pmix_proc_t that PMIx_Init fills
        // in; a null info array with a count of 0 is allowed by its contract.
        let status = unsafe { (api.init)(&mut me, ptr::null_mut(), 0) };
        if status != PMIX_SUCCESS {
            let e = api.error("PMIx_Init", status);
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "{e} ({} loaded; is the launcher's PMIx server at PMIX_SERVER_URI* still running?)",
                    api.file
                ),
            ));
        }
        // SAFETY: PMIx_Init wrote a NUL-terminated namespace into the array
        // (PMIX_MAX_NSLEN + 1 bytes, the last one never written, still 0).
        let got_namespace = unsafe { CStr::from_ptr(me.nspace.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut client = PmixClient {
            api,
            me,
            namespace: got_namespace,
            size: 0,
            secret: Secret([0; SECRET_LEN]),
            rounds: Rounds::default(),
            finalized: false,
        };
        if client.me.rank as usize != rank || client.namespace != namespace {
            return Err(io::Error::other(format!(
                "the PMIx server says this is rank {} of namespace '{}', but \
                 PMIX_RANK='{rank}' and PMIX_NAMESPACE='{namespace}'",
                client.me.rank, client.namespace
            )));
        }
        client.size = client.get(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, |v| {
            if v.kind != PMIX_UINT32 {
                return Err(io::Error::other(format!(
                    "pmix.job.size has type {}, not uint32",
                    v.kind
                )));
            }
            // SAFETY: the type code says the union holds a uint32.
            Ok(unsafe { v.data.uint32 } as usize)
        })?;
        if client.size == 0 || rank >= client.size {
            return Err(io::Error::other(format!(
                "the PMIx server says the job has {} ranks, and this is rank {rank}",
                client.size
            )));
        }
        client.secret = secret::agree(&mut client, rank, goal_secret).map_err(|e| {
            io::Error::new(e.kind(), format!("PMIx: agreeing on the job secret: {e}"))
        })?;
        Ok(client)
    }

    /// Puts `bytes` under `key` with global scope (PMIx copies them).
    fn put(&self, key: &CStr, bytes: &[u8]) -> io::Result<()> {
        let mut value = Value {
            kind: PMIX_BYTE_OBJECT,
            data: ValueData {
                bo: ByteObject {
                    bytes: bytes.as_ptr() as *mut c_char,
                    size: bytes.len(),
                },
            },
        };
        // SAFETY: `key` is NUL-terminated and `value` a valid pmix_value_t
        // whose byte object points at `bytes.len()` readable bytes; both
        // outlive the call. PMIx_Put copies the value into its own cache
        // (PMIx_Value_xfer) and never writes through the byte pointer, so
        // casting away const is sound.
        let status = unsafe { (self.api.put)(PMIX_GLOBAL, key.as_ptr(), &mut value) };
        self.api.check("PMIx_Put", status)
    }

    /// Commits what was put and waits in a fence that collects everyone's data.
    fn commit_and_fence(&self) -> io::Result<()> {
        // SAFETY: PMIx_Commit takes no arguments.
        self.api
            .check("PMIx_Commit", unsafe { (self.api.commit)() })?;
        // SAFETY: an all-zero pmix_info_t is valid (empty key, undefined value).
        let mut collect: Info = unsafe { std::mem::zeroed() };
        for (dst, &src) in collect.key.iter_mut().zip(PMIX_COLLECT_DATA) {
            *dst = src as c_char;
        }
        collect.value.kind = PMIX_BOOL;
        collect.value.data.flag = true;
        // SAFETY: a null proc array with a count of 0 means "every process
        // in my namespace" (pmix.h); `collect` is one valid pmix_info_t (a
        // NUL-terminated key, a bool value) that outlives the call.
        let status = unsafe { (self.api.fence)(ptr::null(), 0, &collect, 1) };
        self.api.check("PMIx_Fence", status)
    }

    /// Gets `key` as put by `rank` of our namespace and hands the value to
    /// `read`, then frees it.
    fn get<T>(
        &self,
        rank: u32,
        key: &CStr,
        read: impl FnOnce(&Value) -> io::Result<T>,
    ) -> io::Result<T> {
        let proc = Proc {
            nspace: self.me.nspace,
            rank,
        };
        let mut value: *mut Value = ptr::null_mut();
        // SAFETY: `proc` and `key` are valid and outlive the call; a null
        // info array with count 0 is allowed; PMIx_Get stores a pointer to a
        // value it allocated (with malloc) in `value` on success.
        let status = unsafe { (self.api.get)(&proc, key.as_ptr(), ptr::null(), 0, &mut value) };
        let who = if rank == PMIX_RANK_WILDCARD {
            "the job".to_owned()
        } else {
            format!("rank {rank}")
        };
        self.api.check(
            &format!("PMIx_Get of {} from {who}", key.to_string_lossy()),
            status,
        )?;
        if value.is_null() {
            return Err(io::Error::other("PMIx_Get succeeded but returned no value"));
        }
        // SAFETY: on success `value` points at a valid pmix_value_t owned by
        // us until we release it below.
        let result = read(unsafe { &*value });
        // SAFETY: PMIX_VALUE_RELEASE, spelled out: destruct frees what the
        // value points to, then free the struct PMIx allocated with malloc.
        // `value` is not used afterwards.
        unsafe {
            (self.api.value_destruct)(value);
            libc::free(value.cast());
        }
        result
    }

    fn round_trip(&mut self, round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let key = CString::new(format!("goal.ag.{round}")).expect("no NUL in the key");
        self.put(&key, mine)?;
        self.commit_and_fence()?;
        let me = self.me.rank as usize;
        (0..self.size)
            .map(|r| {
                if r == me {
                    Ok(mine.to_vec())
                } else {
                    self.get(r as u32, &key, bytes_of)
                }
            })
            .collect()
    }
}

/// Copies a byte-object value out.
fn bytes_of(v: &Value) -> io::Result<Vec<u8>> {
    if v.kind != PMIX_BYTE_OBJECT {
        return Err(io::Error::other(format!(
            "a value of type {}, not a byte object",
            v.kind
        )));
    }
    // SAFETY: the type code says the union holds a byte object.
    let bo = unsafe { v.data.bo };
    if bo.size == 0 || bo.bytes.is_null() {
        return Ok(Vec::new());
    }
    if bo.size > MAX_BLOB {
        return Err(io::Error::other(format!("a value of {} bytes", bo.size)));
    }
    // SAFETY: PMIx's byte object points at `size` readable bytes, alive as
    // long as the value (which the caller frees only after this returns).
    Ok(unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }.to_vec())
}

impl Publish for PmixClient {
    fn publish(&mut self, secret: &Secret) -> io::Result<()> {
        self.put(SECRET_KEY, &secret.0)
    }

    fn fence(&mut self) -> io::Result<()> {
        self.commit_and_fence()
    }

    fn fetch(&mut self) -> io::Result<Secret> {
        let published = self.get(0, SECRET_KEY, bytes_of)?;
        <[u8; SECRET_LEN]>::try_from(published)
            .map(Secret)
            .map_err(|b| {
                io::Error::other(format!("rank 0 published a secret of {} bytes", b.len()))
            })
    }
}

impl Exchange for PmixClient {
    fn rounds(&mut self) -> &mut Rounds {
        &mut self.rounds
    }

    fn exchange(&mut self, round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.round_trip(round, mine)
    }

    fn what(&self) -> &'static str {
        "PMIx allgather"
    }

    fn who(&self) -> String {
        format!("rank {}", self.me.rank)
    }
}

impl Bootstrap for PmixClient {
    fn rank(&self) -> usize {
        self.me.rank as usize
    }

    fn size(&self) -> usize {
        self.size
    }

    /// The PMIx namespace, the same on every rank of the job.
    fn job_id(&self) -> String {
        self.namespace.clone()
    }

    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        rounds::allgather(self, mine)
    }

    /// Rank 0's secret, published through the launcher's PMIx server.
    fn secret(&self) -> [u8; SECRET_LEN] {
        self.secret.0
    }

    fn kind(&self) -> &'static str {
        "pmix"
    }
}

impl Drop for PmixClient {
    /// Finalizes PMIx: Open MPI's mpirun reports a rank that connected and
    /// exited without finalizing as a failure. With an MPI library in the
    /// process the session is shared (PMIx counts its inits): finalizing it
    /// now, before the program's MPI_Init, left Open MPI unable to start
    /// ("orte_init: startup: internal failure"), so goal's finalize waits for
    /// the process' exit, after MPI's own.
    fn drop(&mut self) {
        if !self.finalized {
            self.finalized = true;
            if crate::sys::mpi_in_process() {
                finalize_at_exit(self.api.finalize);
                return;
            }
            // SAFETY: PMIx was initialised by this client; a null info array
            // with count 0 is allowed.
            let _ = unsafe { (self.api.finalize)(ptr::null(), 0) };
        }
    }
}

/// The PMIx_Finalize that `finalize_at_exit` left for the process' exit.
static AT_EXIT: OnceLock<FinalizeFn> = OnceLock::new();

/// Calls PMIx_Finalize when the process exits (libc's `atexit`).
fn finalize_at_exit(f: FinalizeFn) {
    extern "C" fn at_exit() {
        if let Some(f) = AT_EXIT.get() {
            // SAFETY: the library stays loaded (never dlclose'd); PMIx was
            // initialised by goal's client, whose finalize this is; a null
            // info array with count 0 is allowed.
            let _ = unsafe { f(ptr::null(), 0) };
        }
    }
    if AT_EXIT.set(f).is_ok() {
        // SAFETY: `at_exit` is a plain extern "C" function without
        // arguments, as atexit wants.
        unsafe { libc::atexit(at_exit) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use std::process::Command;

    /// Compiles a C program against the installed pmix.h and compares its
    /// sizes and offsets with ours. Skips when the header or a C compiler
    /// is missing.
    #[test]
    fn layouts_match_the_installed_header() {
        let include = ["/usr/lib/x86_64-linux-gnu/pmix2/include", "/usr/include"]
            .into_iter()
            .find(|d| std::path::Path::new(d).join("pmix.h").exists());
        let Some(include) = include else {
            println!("skipped: pmix.h not installed (Debian: libpmix-dev)");
            return;
        };
        let dir = std::env::temp_dir().join(format!("goal-pmix-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("layout.c");
        std::fs::write(
            &src,
            r#"#include <pmix.h>
#include <stdio.h>
#include <stddef.h>
int main(void) {
    printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %u %d %d %d %d %s %s\n",
        sizeof(pmix_proc_t), offsetof(pmix_proc_t, rank),
        sizeof(pmix_value_t), offsetof(pmix_value_t, data),
        sizeof(pmix_info_t), offsetof(pmix_info_t, flags), offsetof(pmix_info_t, value),
        sizeof(pmix_byte_object_t), offsetof(pmix_byte_object_t, size),
        (unsigned)PMIX_RANK_WILDCARD, PMIX_BOOL, PMIX_UINT32, PMIX_BYTE_OBJECT, PMIX_GLOBAL,
        PMIX_JOB_SIZE, PMIX_COLLECT_DATA);
    return 0;
}
"#,
        )
        .unwrap();
        let exe = dir.join("layout");
        let built = Command::new("cc")
            .arg(format!("-I{include}"))
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output();
        let built = match built {
            Ok(o) if o.status.success() => o,
            Ok(o) => panic!("cc failed: {}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                println!("skipped: no C compiler ({e})");
                return;
            }
        };
        drop(built);
        let out = Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(out.stdout).unwrap();
        let ours = format!(
            "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            size_of::<Proc>(),
            offset_of!(Proc, rank),
            size_of::<Value>(),
            offset_of!(Value, data),
            size_of::<Info>(),
            offset_of!(Info, flags),
            offset_of!(Info, value),
            size_of::<ByteObject>(),
            offset_of!(ByteObject, size),
            PMIX_RANK_WILDCARD,
            PMIX_BOOL,
            PMIX_UINT32,
            PMIX_BYTE_OBJECT,
            PMIX_GLOBAL,
            PMIX_JOB_SIZE.to_str().unwrap(),
            std::str::from_utf8(PMIX_COLLECT_DATA).unwrap(),
        );
        assert_eq!(text.trim(), ours, "C (left) and Rust (right) disagree");
    }
}
