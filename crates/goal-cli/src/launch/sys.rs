//! The system calls goalrun makes beyond std, each through [`cvt`], which maps
//! `-1` to the `io::Error` of `errno`.
//!
//! goalrun waits in the kernel, never in a loop: children are watched
//! through pidfds (readable once the process has exited), signals arrive
//! through a signalfd, and both are waited on with one `poll` whose timeout
//! is the next deadline (timeout, grace period, SIGKILL). Nothing here
//! blocks except `poll`.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Integers that system calls return, where `-1` means "see errno".
pub(crate) trait IsMinusOne: Copy {
    fn is_minus_one(self) -> bool;
}

impl IsMinusOne for i32 {
    fn is_minus_one(self) -> bool {
        self == -1
    }
}

impl IsMinusOne for i64 {
    fn is_minus_one(self) -> bool {
        self == -1
    }
}

impl IsMinusOne for isize {
    fn is_minus_one(self) -> bool {
        self == -1
    }
}

/// Maps a system call's `-1` return to the `io::Error` of `errno`.
pub(crate) fn cvt<T: IsMinusOne>(ret: T) -> io::Result<T> {
    if ret.is_minus_one() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An `io::Error`'s text without Rust's " (os error N)" suffix, as a shell
/// would print it: "No such file or directory".
pub(crate) fn describe(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(at) => s[..at].to_owned(),
        None => s,
    }
}

/// How a child ended, from `waitpid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// `exit(code)`.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl ExitStatus {
    pub(crate) fn success(self) -> bool {
        self == ExitStatus::Exited(0)
    }

    /// The status a shell would report: the code, or 128 + the signal.
    pub(crate) fn code(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) => 128 + s,
        }
    }
}

/// Opens a pidfd for our child `pid`: readable once the child has exited.
/// Works on a child that has exited already, as long as it is not reaped.
pub(crate) fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags, no pointers; on success the
    // kernel returns a new descriptor nobody else owns.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    // SAFETY: `fd` is a fresh open descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// How `pid` ended, if it has, without reaping it (`waitid` with
/// `WNOWAIT`) and without blocking: it stays a zombie, whose `/proc` entry
/// still says how it ended, until [`try_wait`].
pub(crate) fn ended(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a live siginfo_t the kernel writes into.
        match cvt(unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) }) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // SAFETY: waitid filled `info` for a child's state change (si_pid
        // set) or left it zeroed (none, WNOHANG); both fields are plain ints.
        let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
        if who == 0 {
            return Ok(None);
        }
        return Ok(Some(match info.si_code {
            libc::CLD_EXITED => ExitStatus::Exited(status),
            // CLD_KILLED, CLD_DUMPED
            _ => ExitStatus::Signaled(status),
        }));
    }
}

/// Reaps `pid` if it has exited, without blocking.
pub(crate) fn try_wait(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a live c_int the kernel writes the status into.
        match cvt(unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) }) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    if libc::WIFEXITED(status) {
        Ok(Some(ExitStatus::Exited(libc::WEXITSTATUS(status))))
    } else if libc::WIFSIGNALED(status) {
        Ok(Some(ExitStatus::Signaled(libc::WTERMSIG(status))))
    } else {
        // Stopped or continued: not reported without WUNTRACED/WCONTINUED.
        Ok(None)
    }
}

/// Sends `sig` to `pid`.
pub(crate) fn kill(pid: libc::pid_t, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes two integers, no pointers.
    cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// Waits until one of `fds` is readable or `timeout` passes (`None`: no
/// timeout). Returns each descriptor's `revents`; all zero on timeout or
/// on `EINTR` (the caller recomputes its deadlines and waits again).
pub(crate) fn poll(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<libc::c_short>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = match timeout {
        None => -1,
        // Round up: waking a millisecond early would make the caller poll
        // again with a zero timeout, a (short) spin.
        Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: `pfds` is a live array of `pfds.len()` initialised pollfds the
    // kernel may write `revents` into; no reference is kept after return.
    match cvt(unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) }) {
        Ok(_) => Ok(pfds.iter().map(|p| p.revents).collect()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(vec![0; fds.len()]),
        Err(e) => Err(e),
    }
}

fn sigset(signals: &[i32]) -> io::Result<libc::sigset_t> {
    // SAFETY: sigset_t is a plain bit array; all-zero is a valid value, and
    // sigemptyset initialises it fully anyway.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live sigset_t.
    cvt(unsafe { libc::sigemptyset(&mut set) })?;
    for &sig in signals {
        // SAFETY: `set` is a live, initialised sigset_t.
        cvt(unsafe { libc::sigaddset(&mut set, sig) })?;
    }
    Ok(set)
}

/// A signalfd for some signals, which are blocked in the calling thread (and
/// every thread it starts afterwards) so that they arrive only through it.
#[derive(Debug)]
pub(crate) struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks `signals` in this thread and opens a non-blocking signalfd for
    /// them. Call before starting any thread, or those threads would still
    /// take the signals' default action (death) for the whole process.
    pub(crate) fn new(signals: &[i32]) -> io::Result<SignalFd> {
        let set = sigset(signals)?;
        // SAFETY: `set` is an initialised sigset_t; the old mask is not wanted.
        let ret = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if ret != 0 {
            return Err(io::Error::from_raw_os_error(ret));
        }
        // SAFETY: `set` is an initialised sigset_t; -1 asks for a new fd.
        let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
        // SAFETY: `fd` is a fresh open descriptor owned by nothing else.
        Ok(SignalFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// The next pending signal, if any.
    pub(crate) fn next(&self) -> io::Result<Option<i32>> {
        // SAFETY: signalfd_siginfo is plain data; all-zero is a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        loop {
            // SAFETY: `info` is a live, writable signalfd_siginfo of `size` bytes.
            let ret = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    size,
                )
            };
            match cvt(ret) {
                Ok(n) if n as usize == size => return Ok(Some(info.ssi_signo as i32)),
                Ok(_) => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }
}

impl AsRawFd for SignalFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// What a rank does between fork and exec. Only async-signal-safe calls.
///
/// 1. `PR_SET_PDEATHSIG(SIGKILL)`: the rank dies when goalrun dies, however
///    goalrun dies. The kernel ties this to the *thread* that forked, so
///    ranks must be spawned from goalrun's main thread, which lives to the end.
/// 2. If goalrun died before step 1 took effect, the rank has already been
///    reparented; it kills itself instead of running orphaned.
/// 3. An empty signal mask: goalrun blocks SIGINT/SIGTERM/SIGHUP for its
///    signalfd, and a mask survives exec. (std resets it too; this does not
///    depend on that.)
pub(crate) fn child_setup(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number; no pointers.
    cvt(unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    })?;
    // SAFETY: getppid cannot fail and takes no arguments.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: raise takes a signal number; SIGKILL ends this process here.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let set = sigset(&[])?;
    // SAFETY: `set` is an initialised (empty) sigset_t; the old mask is not wanted.
    let ret = unsafe { libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()) };
    cvt(ret).map(drop)
}

/// This process' pid.
pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: getpid cannot fail and takes no arguments.
    unsafe { libc::getpid() }
}

/// Whether `path` names something this process may execute (access X_OK).
pub(crate) fn executable(path: &Path) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::access(c.as_ptr(), libc::X_OK) }).map(drop)
}

/// Creates a fresh directory `{base}/{prefix}XXXXXX`, mode 0700 (mkdtemp).
pub(crate) fn mkdtemp(base: &Path, prefix: &str) -> io::Result<PathBuf> {
    let mut template = base.as_os_str().as_bytes().to_vec();
    template.push(b'/');
    template.extend_from_slice(prefix.as_bytes());
    template.extend_from_slice(b"XXXXXX\0");
    // SAFETY: `template` is a writable NUL-terminated buffer ending in
    // "XXXXXX", which mkdtemp overwrites in place; it outlives the call.
    let ret = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if ret.is_null() {
        return Err(io::Error::last_os_error());
    }
    template.pop(); // the NUL
    Ok(PathBuf::from(OsStr::from_bytes(&template)))
}

/// Takes an exclusive `flock` on `file` without waiting; `false` if another
/// open file description holds one. The lock lasts until every descriptor
/// of this description is closed, by the kernel too when the process dies.
pub(crate) fn try_lock(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: flock takes a descriptor `file` keeps open and plain flags.
    match cvt(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

/// This process' effective user id.
pub(crate) fn geteuid() -> libc::uid_t {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Raises the soft limit on open files towards `want` (up to the hard limit).
/// Each rank costs goalrun a few descriptors (pidfd, sockets, pipes).
pub(crate) fn raise_nofile_limit(want: u64) -> io::Result<()> {
    // SAFETY: rlimit is plain data; all-zero is a valid value.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a live rlimit the kernel writes into.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur >= want as libc::rlim_t {
        return Ok(());
    }
    lim.rlim_cur = (want as libc::rlim_t).min(lim.rlim_max);
    // SAFETY: `lim` is a live, initialised rlimit.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }).map(drop)
}

/// The name of a signal, for messages.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        s if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&s) => {
            return format!("SIGRTMIN+{}", s - libc::SIGRTMIN())
        }
        _ => return format!("signal {sig}"),
    };
    name.to_owned()
}

/// The CPUs this process may run on (`sched_getaffinity`), in order.
pub(crate) fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and
    // sched_getaffinity(0, ..) writes at most its size into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        cvt(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set))?;
        set
    };
    // SAFETY: CPU_ISSET reads inside the set for indices below its capacity.
    Ok((0..8 * std::mem::size_of::<libc::cpu_set_t>()).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// `cpus` as a `cpu_set_t`; CPUs beyond its capacity (1024) are an error.
pub(crate) fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is beyond what a cpu_set_t holds")));
        }
        // SAFETY: `cpu` is below the set's capacity (checked).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Binds the calling process to `set`. Async-signal-safe (one system
/// call), for the child between fork and exec.
pub(crate) fn bind_self(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t of the size given; pid 0 is the caller.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) }).map(drop)
}
