//! Thin, safe wrappers over the Linux system calls the transport uses.
//!
//! Every call goes through `cvt` (or `cvt_long`), which turns the C
//! convention (`-1` and `errno`) into an [`io::Error`]. Callers that must
//! treat "try again" specially (`EAGAIN`, `EINTR`, `ETIMEDOUT`) match on the
//! raw OS error in one visible arm rather than hiding it in the helper.
//!
//! Nothing here knows about rings or ranks: this is the only module that
//! speaks `libc`, so the rest of the crate reads in terms of file
//! descriptors, mappings and futex words.

use crate::atomic::AtomicU32;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Turns a C return value into `io::Result`: `-1` becomes the current `errno`.
fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// [`cvt`] for calls returning `long` / `ssize_t` (raw `syscall(2)` and friends).
fn cvt_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Wraps a freshly returned descriptor.
fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: the caller passes a descriptor the kernel has just returned to
    // us (checked by `cvt`), which nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The calling process's id.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// The system page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n <= 0 {
        4096
    } else {
        n as usize
    }
}

/// `memfd_create(name, MFD_CLOEXEC)`: an anonymous, sparse, shareable file.
pub fn memfd_create(name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid NUL-terminated string for the whole call.
    let fd = cvt(unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) })?;
    Ok(owned(fd))
}

/// `ftruncate(fd, len)`.
pub fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: plain syscall on a descriptor we borrow; no memory is passed.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len) })?;
    Ok(())
}

/// Size in bytes of the file behind `fd` (`fstat`).
pub fn file_size(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(fstat(fd)?.st_size as u64)
}

/// Bytes of storage actually allocated to the file behind `fd` (`st_blocks * 512`).
pub fn allocated_bytes(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(fstat(fd)?.st_blocks as u64 * 512)
}

fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain old data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `struct stat` for the duration of the call.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// Opens descriptor `fd` of process `pid` through `/proc/<pid>/fd/<fd>`.
///
/// This reopens the *file* the descriptor refers to (a memfd here), with its
/// own access mode, as long as we may inspect that process (same user).
pub fn open_proc_fd(pid: i32, fd: RawFd, writable: bool) -> io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fd}\0");
    let flags = libc::O_CLOEXEC
        | if writable {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        };
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = cvt(unsafe { libc::open(path.as_ptr().cast(), flags) })
        .map_err(|e| io::Error::new(e.kind(), format!("open /proc/{pid}/fd/{fd}: {e}")))?;
    Ok(owned(fd))
}

/// Maps `len` bytes of `fd` from offset 0, `MAP_SHARED | MAP_NORESERVE`,
/// readable, and writable if asked. Returns the base address.
///
/// Creating a mapping at an address the kernel chooses cannot disturb any
/// existing Rust object, so this is safe; *using* the pointer is not.
pub fn mmap_shared(fd: BorrowedFd<'_>, len: usize, writable: bool) -> io::Result<*mut u8> {
    let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    // SAFETY: a null hint and no MAP_FIXED: the kernel picks a fresh range, so
    // no existing memory is replaced.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

/// `munmap(ptr, len)`.
///
/// # Safety
///
/// `[ptr, ptr+len)` must be a mapping made by [`mmap_shared`] that no live
/// reference or pointer will be used to access afterwards.
pub unsafe fn munmap(ptr: *mut u8, len: usize) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is ours and unused from now on.
    cvt(unsafe { libc::munmap(ptr.cast(), len) })?;
    Ok(())
}

/// `madvise(ptr, len, advice)`, e.g. `MADV_REMOVE` to free shmem pages.
///
/// # Safety
///
/// `[ptr, ptr+len)` must be mapped by this process, and the advice must not
/// invalidate data that live Rust references still rely on (`MADV_REMOVE`
/// and `MADV_DONTNEED` zero the range).
pub unsafe fn madvise(ptr: *mut u8, len: usize, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is mapped and may be discarded.
    cvt(unsafe { libc::madvise(ptr.cast(), len, advice) })?;
    Ok(())
}

/// Gives the storage of `[offset, offset+len)` of `fd` back to the system;
/// the range then reads as zeros and the file keeps its size
/// (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`).
pub fn punch_hole(fd: BorrowedFd<'_>, offset: u64, len: u64) -> io::Result<()> {
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: plain syscall on a borrowed descriptor; no memory is passed.
    cvt(unsafe {
        libc::fallocate(
            fd.as_raw_fd(),
            mode,
            offset as libc::off_t,
            len as libc::off_t,
        )
    })?;
    Ok(())
}

/// How a [`futex_wait`] ended. None of these is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexWait {
    /// Woken by `FUTEX_WAKE` (or spuriously).
    Woken,
    /// The word no longer held `expected` when the kernel looked (`EAGAIN`).
    ValueChanged,
    /// The timeout passed (`ETIMEDOUT`).
    TimedOut,
    /// A signal arrived (`EINTR`).
    Interrupted,
}

/// `FUTEX_WAIT` on a word in *shared* memory (no `FUTEX_PRIVATE_FLAG`, so
/// the futex is keyed by the underlying file page and works across processes
/// mapping the same memfd). Sleeps while `*word == expected`, at most
/// `timeout` if given.
pub fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<Duration>,
) -> io::Result<FutexWait> {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit atomic; `ts_ptr` is null or
    // points at `ts`, which outlives the call; the remaining arguments are
    // ignored by FUTEX_WAIT.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            ts_ptr,
            0usize,
            0u32,
        )
    };
    match cvt_long(r) {
        Ok(_) => Ok(FutexWait::Woken),
        Err(e) => match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(FutexWait::ValueChanged),
            Some(libc::ETIMEDOUT) => Ok(FutexWait::TimedOut),
            Some(libc::EINTR) => Ok(FutexWait::Interrupted),
            _ => Err(e),
        },
    }
}

/// `membarrier(2)` commands (linux/membarrier.h; the libc crate has no names for them).
const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> io::Result<libc::c_long> {
    // SAFETY: membarrier takes a command and two integer arguments, no
    // pointers; unknown commands fail with EINVAL.
    cvt_long(unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0u32, 0i32) })
}

/// Whether the kernel offers the expedited barriers, global and private.
pub fn membarrier_supported() -> bool {
    let want = MEMBARRIER_CMD_GLOBAL_EXPEDITED
        | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED
        | MEMBARRIER_CMD_PRIVATE_EXPEDITED
        | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
    membarrier(MEMBARRIER_CMD_QUERY).is_ok_and(|m| m as libc::c_int & want == want)
}

/// Registers this process for both expedited barriers.
pub fn membarrier_register() -> io::Result<()> {
    membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)?;
    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)?;
    Ok(())
}

/// A full barrier on every CPU that runs a thread of a process registered
/// for the global form.
pub fn membarrier_global() -> io::Result<()> {
    membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED).map(|_| ())
}

/// A full barrier on every CPU that runs a thread of this process.
pub fn membarrier_private() -> io::Result<()> {
    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED).map(|_| ())
}

/// `FUTEX_WAKE` (shared): wakes up to `n` waiters on `word`; returns how many.
pub fn futex_wake(word: &AtomicU32, n: i32) -> io::Result<usize> {
    // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE ignores the
    // timeout and second-word arguments.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            0usize,
            0usize,
            0u32,
        )
    };
    Ok(cvt_long(r)? as usize)
}

/// `pidfd_open(pid, 0)`: a descriptor that becomes readable when `pid` exits.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let r = cvt_long(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) })?;
    Ok(owned(r as libc::c_int))
}

/// `pidfd_getfd(pidfd, fd, 0)`: a duplicate, in this process, of descriptor
/// `fd` of the process behind `pidfd` (allowed where `ptrace` would be, the
/// same rule as Cross Memory Attach; Linux 5.6 or later).
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let r = cvt_long(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) })?;
    Ok(owned(r as libc::c_int))
}

/// `poll(fds, timeout_ms)`; retries on `EINTR`/`EAGAIN`. Returns how many
/// entries have events.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    loop {
        // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfd.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        match cvt(r) {
            Ok(n) => return Ok(n as usize),
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) | Some(libc::EAGAIN) => continue,
                _ => return Err(e),
            },
        }
    }
}

/// The soft limit on this process's address space (`RLIMIT_AS`, what
/// `ulimit -v` sets), if there is one.
pub fn address_space_limit() -> Option<u64> {
    // SAFETY: rlimit is plain old data; all-zero is valid.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid, writable rlimit for the duration of the call.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// What `/proc/<pid>/stat` says of a process: enough to tell whether the
/// process seen earlier under `pid` still runs, where pidfds are missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Clock ticks after boot at which the process started (field 22): a
    /// pid reused by a new process has a later one.
    pub start: u64,
    /// The process has ended and waits to be reaped (state `Z` or `X`).
    pub ended: bool,
    /// Its wait status (field 52, kept while it is a zombie; Linux 3.5).
    pub status: Option<i32>,
}

/// Reads `/proc/<pid>/stat`; `ErrorKind::NotFound` once the process is gone.
pub fn proc_stat(pid: i32) -> io::Result<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_proc_stat(&text).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat: cannot parse {text:?}"))
    })
}

/// The fields of a `/proc/<pid>/stat` line that [`ProcStat`] keeps. The
/// command name (field 2) may hold spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // f[0] is field 3 (state), so field k is f[k - 3].
    let state = f.first()?;
    Some(ProcStat {
        start: f.get(22 - 3)?.parse().ok()?,
        ended: *state == "Z" || *state == "X",
        status: f.get(52 - 3).and_then(|s| s.parse().ok()),
    })
}

/// How a process ended, from a wait status (`waitpid`'s encoding).
pub fn exit_cause(status: i32) -> ExitCause {
    if status & 0x7f == 0 {
        ExitCause::Exited((status >> 8) & 0xff)
    } else {
        ExitCause::Killed {
            signal: status & 0x7f,
            dumped: status & 0x80 != 0,
        }
    }
}

/// How a process ended, as far as `waitid` could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCause {
    /// It called `exit(code)`.
    Exited(i32),
    /// A signal killed it (`dumped`: with a core dump).
    Killed {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        dumped: bool,
    },
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOHANG | WNOWAIT)`: how the process
/// behind `pidfd` ended, without reaping it. `Ok(None)` if it has not ended
/// yet; `Err(ECHILD)` if it is not our child (only a parent may ask).
pub fn waitid_pidfd(pidfd: BorrowedFd<'_>) -> io::Result<Option<ExitCause>> {
    // SAFETY: siginfo_t is plain old data; all-zero is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
    cvt(unsafe {
        libc::waitid(
            libc::P_PIDFD,
            pidfd.as_raw_fd() as libc::id_t,
            &mut info,
            flags,
        )
    })?;
    // SAFETY: after a successful waitid the SIGCHLD member of the union is
    // the one the kernel filled (si_pid is 0 when nothing had changed yet).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    Ok(Some(match info.si_code {
        libc::CLD_EXITED => ExitCause::Exited(status),
        libc::CLD_DUMPED => ExitCause::Killed {
            signal: status,
            dumped: true,
        },
        _ => ExitCause::Killed {
            signal: status,
            dumped: false,
        },
    }))
}

/// The first version of the kernel's `struct pidfd_info` (Linux 6.15):
/// `mask`, `cgroupid`, eleven ids, `exit_code`.
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    ids: [u32; 11],
    exit_code: i32,
}

/// `PIDFD_GET_INFO`: `_IOWR(0xFF, 11, struct pidfd_info)` at its first size.
const PIDFD_GET_INFO: libc::c_ulong = (3 << 30) | ((std::mem::size_of::<PidfdInfo>() as libc::c_ulong) << 16) | (0xFF << 8) | 11;
/// Asks for (and, in the answer, says there is) the exit status.
const PIDFD_INFO_EXIT: u64 = 1 << 3;

/// The wait status of the process behind `pidfd` once it has been reaped,
/// for a process that is not our child (`ioctl(PIDFD_GET_INFO)` with
/// `PIDFD_INFO_EXIT`, Linux 6.15): `None` while it runs or is a zombie,
/// or where the kernel does not keep it.
pub fn pidfd_exit_status(pidfd: BorrowedFd<'_>) -> Option<i32> {
    let mut info = PidfdInfo { mask: PIDFD_INFO_EXIT, ..PidfdInfo::default() };
    // SAFETY: `info` is a writable struct of the size the request encodes,
    // alive for the call; the kernel writes at most that many bytes.
    let r = unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_INFO as _, &mut info as *mut PidfdInfo) };
    (r == 0 && info.mask & PIDFD_INFO_EXIT != 0).then_some(info.exit_code)
}

/// `prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`: lets any process of ours read
/// our memory (Cross Memory Attach) even under Yama's ptrace scope 1.
pub fn set_ptracer_any() -> io::Result<()> {
    // SAFETY: integer-only prctl; the unused arguments are zero.
    cvt(unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) })?;
    Ok(())
}

/// One `process_vm_readv`: copies up to `dst.len()` bytes from `remote_addr`
/// in process `pid` into `dst`; returns the bytes copied (maybe fewer).
pub fn process_vm_readv(pid: i32, remote_addr: u64, dst: &mut [u8]) -> io::Result<usize> {
    let local = libc::iovec {
        iov_base: dst.as_mut_ptr().cast(),
        iov_len: dst.len(),
    };
    let remote = libc::iovec {
        iov_base: remote_addr as usize as *mut libc::c_void,
        iov_len: dst.len(),
    };
    // SAFETY: `local` describes `dst`, which is writable for its whole length
    // and exclusively ours for the call; the kernel validates `remote` in the
    // other process's address space and never touches ours through it.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    Ok(cvt_long(r as libc::c_long)? as usize)
}

/// Copies exactly `dst.len()` bytes from `remote_addr` in process `pid`
/// (Linux Cross Memory Attach: a single copy, no shared mapping needed),
/// looping over partial reads.
///
/// Fails with the kernel's error (`EFAULT` for an unmapped remote range,
/// `EPERM` without ptrace rights, `ESRCH` if the process is gone).
pub fn cma_read(pid: i32, remote_addr: u64, dst: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < dst.len() {
        match process_vm_readv(pid, remote_addr + done as u64, &mut dst[done..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "process_vm_readv from pid {pid} made no progress at {:#x}",
                        remote_addr + done as u64
                    ),
                ))
            }
            Ok(n) => done += n,
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EAGAIN) =>
            {
                continue
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Copies exactly `src.len()` bytes from `src` to `remote_addr` in process
/// `pid` (`process_vm_writev`, looping over partial writes): the other
/// direction of [`cma_read`], with the same errors.
pub fn cma_write(pid: i32, remote_addr: u64, src: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < src.len() {
        let rest = &src[done..];
        let local = libc::iovec {
            iov_base: rest.as_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        let remote = libc::iovec {
            iov_base: (remote_addr + done as u64) as usize as *mut libc::c_void,
            iov_len: rest.len(),
        };
        // SAFETY: `local` describes `rest`, readable for its whole length (the
        // kernel only reads it); the kernel validates `remote` in the other
        // process's address space and never touches ours through it.
        let r = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
        match cvt_long(r as libc::c_long) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("process_vm_writev to pid {pid} made no progress at {:#x}", remote_addr + done as u64),
                ))
            }
            Ok(n) => done += n as usize,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::EAGAIN) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC)`: two connected
/// message sockets.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid, writable array of two ints.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    Ok((owned(fds[0]), owned(fds[1])))
}

/// `socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC)`: an unbound, unconnected
/// message socket.
pub fn seqpacket_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    Ok(owned(fd))
}

/// The `sockaddr_un` of the abstract address `name` (Linux: a leading NUL,
/// then `name`; no file is created and the name vanishes with the socket).
fn abstract_addr(name: &[u8]) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: `sockaddr_un` is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    if name.len() + 1 > addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "abstract socket name of {} bytes is longer than the {} AF_UNIX allows",
                name.len(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, &src) in addr.sun_path[1..].iter_mut().zip(name) {
        *dst = src as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
    Ok((addr, len as libc::socklen_t))
}

/// `bind(fd, @name)` to the abstract address `name`.
pub fn bind_abstract(fd: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    let (addr, len) = abstract_addr(name)?;
    // SAFETY: `addr` is a valid sockaddr_un of which `len` bytes are used.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
    Ok(())
}

/// `connect(fd, @name)` to the abstract address `name`.
pub fn connect_abstract(fd: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    let (addr, len) = abstract_addr(name)?;
    // SAFETY: `addr` is a valid sockaddr_un of which `len` bytes are used.
    cvt(unsafe { libc::connect(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
    Ok(())
}

/// `listen(fd, backlog)`.
pub fn listen(fd: BorrowedFd<'_>, backlog: i32) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed descriptor.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(())
}

/// `accept4(fd, NULL, NULL, SOCK_CLOEXEC)`: the next pending connection.
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: null address pointers ask the kernel not to report the peer.
    let fd = cvt(unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    })?;
    Ok(owned(fd))
}

/// `setsockopt(fd, SOL_SOCKET, opt, &val)` for an integer option.
pub fn set_socket_int(fd: BorrowedFd<'_>, opt: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: `val` is a live int and its size is passed with it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&raw const val).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `getsockopt(fd, SOL_SOCKET, opt)` for an integer option.
pub fn socket_int(fd: BorrowedFd<'_>, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `val` and `len` are live and writable; `len` holds val's size.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&raw mut val).cast(),
            &mut len,
        )
    })?;
    Ok(val)
}

/// The effective user id of the process at the other end of a connected
/// AF_UNIX socket, as the kernel recorded it at `connect`/`listen` time
/// (`SO_PEERCRED`).
pub fn peer_uid(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: `ucred` is plain old data; all-zero is a valid value.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live and writable; `len` holds cred's size.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    })?;
    Ok(cred.uid)
}

/// The calling process's effective user id.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `send(fd, buf, flags)`: returns the bytes sent. `EAGAIN` (with
/// `MSG_DONTWAIT`) and `EINTR` come back as errors for the caller to match.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is readable for `buf.len()` bytes for the whole call.
    let r = unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    Ok(cvt_long(r as libc::c_long)? as usize)
}

/// `recv(fd, buf, flags)`: returns the bytes received (with `MSG_TRUNC` on
/// a message socket: the message's real length, which may exceed
/// `buf.len()`). 0 means the peer closed the connection.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is writable for `buf.len()` bytes and exclusively ours
    // for the whole call.
    let r = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) };
    Ok(cvt_long(r as libc::c_long)? as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_reads_this_process() {
        let st = proc_stat(getpid()).unwrap();
        assert!(st.start > 0);
        assert!(!st.ended);
    }

    #[test]
    fn proc_stat_counts_fields_after_the_command_name() {
        // A zombie whose command name holds ") Z (": the fields count from the last ')'.
        let mut fields = vec!["0"; 50];
        fields[0] = "Z";
        fields[22 - 3] = "12345";
        fields[52 - 3] = "9";
        let line = format!("42 (a) Z (b) {}\n", fields.join(" "));
        let st = parse_proc_stat(&line).unwrap();
        assert_eq!(st, ProcStat { start: 12345, ended: true, status: Some(9) });
        assert_eq!(exit_cause(9), ExitCause::Killed { signal: 9, dumped: false });
        assert_eq!(exit_cause(3 << 8), ExitCause::Exited(3));
        assert!(parse_proc_stat("42 (a) R 1 2").is_none());
    }
}
