//! The few system calls goal-boot makes that std does not wrap, each through
//! [`cvt`], which turns the C convention (`-1` and `errno`) into `io::Error`.
//!
//! Why these and not std: sockets must be written with `MSG_NOSIGNAL`, because
//! the client runs inside arbitrary programs (C programs through libgoal.so
//! included) where a write to a socket the launcher has closed would otherwise
//! raise `SIGPIPE` and kill the rank instead of returning an error. The server's
//! accept loop waits on an `eventfd` next to the listening socket so that
//! [`crate::server::ServerHandle::abort`] can wake it without a timeout.

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
