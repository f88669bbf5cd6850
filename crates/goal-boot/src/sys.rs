//! The few system calls goal-boot makes that std does not wrap, each through
//! [`cvt`], which turns the C convention (`-1` and `errno`) into `io::Error`.
//!
//! Why these and not std: sockets must be written with `MSG_NOSIGNAL`, because
//! the client runs inside arbitrary programs (C programs through libgoal.so
//! included) where a write to a socket the launcher has closed would otherwise
//! raise `SIGPIPE` and kill the rank instead of returning an error. The server's
//! accept loop waits on an `eventfd` next to the listening socket so that
//! [`crate::server::ServerHandle::abort`] can wake it without a timeout.
//! The rest are what std has no word for: random bytes for the job secret,
//! the host name, TCP keepalive timing (so that a store connection to a host
//! that vanished fails instead of hanging), and checking a descriptor number
//! that a launcher handed over in `PMI_FD`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Integers that system calls return, where `-1` means "see errno".
pub(crate) trait IsMinusOne: Copy {
    fn is_minus_one(self) -> bool;
}

impl IsMinusOne for i32 {
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

/// Writes all of `buf` to the socket `fd` with `MSG_NOSIGNAL`, retrying on
/// `EINTR`. A peer that has gone away gives `EPIPE` as an error, never a signal.
pub(crate) fn send_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a live slice, so `buf.as_ptr()` is valid for reads
        // of `buf.len()` bytes for the duration of the call; `send` does not
        // keep the pointer. An invalid `fd` only makes the call fail (EBADF).
        let ret = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        match cvt(ret) {
            Ok(n) => buf = &buf[n as usize..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A blocking socket only reports EAGAIN with a send timeout set,
            // which goal-boot never sets; pass it up rather than spin.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// An `eventfd`: a counter the kernel can wait on, used as a wake-up signal.
#[derive(Debug)]
pub(crate) struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new, unsignalled, close-on-exec eventfd.
    pub(crate) fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; on success it returns a fresh
        // file descriptor that nothing else owns.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by eventfd, is open, and is owned by
        // no other object, so OwnedFd may take it over (and close it once).
        Ok(EventFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Makes the eventfd readable (for good: nobody drains it).
    pub(crate) fn notify(&self) -> io::Result<()> {
        let one: u64 = 1;
        loop {
            // SAFETY: `one` lives across the call and is 8 bytes, the size an
            // eventfd write requires; `self.fd` is an open eventfd.
            let ret = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
            match cvt(ret) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // The counter is saturated: it is readable already.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable (or hung up), with no timeout.
/// Returns the `revents` of each descriptor, in order. `EINTR` is retried.
pub(crate) fn poll_readable(fds: &[RawFd]) -> io::Result<Vec<libc::c_short>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: `pfds` is a live, initialised array of `pfds.len()` pollfd
        // structs that the kernel may write `revents` into; poll keeps no
        // reference after it returns.
        let ret = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, -1) };
        match cvt(ret) {
            Ok(_) => return Ok(pfds.iter().map(|p| p.revents).collect()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Fills `buf` from the kernel's CSPRNG (`getrandom`, blocking only until
/// the pool is first initialised, early in boot).
pub(crate) fn fill_random(mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a live, writable slice of `buf.len()` bytes for
        // the duration of the call; getrandom keeps no pointer.
        let ret = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
        match cvt(ret) {
            Ok(n) => buf = &mut buf[n as usize..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// This machine's host name (of the UTS namespace the process is in).
pub(crate) fn hostname() -> io::Result<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for `buf.len()` bytes; gethostname writes at
    // most that many and keeps no pointer.
    cvt(unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) })?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: the option value is a live `c_int` whose size is passed
    // alongside; setsockopt copies it and keeps no pointer. A bad `fd` only
    // makes the call fail.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Turns on TCP keepalive with short timers: a peer whose host died (no FIN,
/// no RST) is declared gone after about `idle + count * interval` seconds.
pub(crate) fn set_keepalive(fd: RawFd, idle: i32, interval: i32, count: i32) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle)?;
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, interval)?;
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, count)
}

/// Whether `fd` is an open socket in this process.
pub(crate) fn is_socket(fd: RawFd) -> io::Result<bool> {
    // SAFETY: an all-zero `stat` is a valid value of that plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a live, writable stat buffer; fstat on a number that
    // is not an open descriptor fails with EBADF and touches nothing else.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// A close-on-exec duplicate of `fd`: goal's own descriptor for a
/// connection whose original belongs to someone else (the program's MPI
/// library and PMI_FD), so that closing goal's never closes theirs.
pub(crate) fn dup_cloexec(fd: RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC takes and returns plain integers; a bad `fd`
    // only makes the call fail.
    let new = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: `new` was just opened by fcntl and nothing else holds it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(new) })
}

/// Whether an MPI library is loaded in this process: its profiling entry
/// `PMPI_Init` is visible to `dlsym`. Such a library owns the launcher's
/// PMI session and finalizes it itself.
pub(crate) fn mpi_in_process() -> bool {
    // SAFETY: RTLD_DEFAULT searches the loaded objects; the name is a
    // NUL-terminated literal and the result is only compared with NULL.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"PMPI_Init".as_ptr()) }.is_null()
}
