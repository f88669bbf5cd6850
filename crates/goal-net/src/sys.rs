//! Thin, safe wrappers over the Linux system calls goal-net uses.
//!
//! Every call goes through [`cvt`], which turns the C convention (`-1` and
//! `errno`) into an [`io::Error`]. Callers that treat "try again" specially
//! match `io::ErrorKind::WouldBlock` in one visible arm; `EINTR` is retried
//! here, where it can never mean anything else.
//!
//! This is the only module that speaks `libc`: the rest of the crate reads in
//! terms of descriptors, socket addresses and byte slices. Raw pointers cross
//! this boundary in exactly one shape, [`IoSlice`]-like `(ptr, len)` pairs for
//! `sendmsg`/`readv`, whose validity the caller promises (those two functions
//! are `unsafe`).

use std::ffi::CStr;
use std::io;
use std::mem::{size_of, zeroed, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Turns a C return value into `io::Result`: `-1` becomes the current `errno`.
fn cvt<T: PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`], but calls `f` again while it fails with `EINTR`.
fn cvt_retry<T: PartialEq + From<i8>>(mut f: impl FnMut() -> T) -> io::Result<T> {
    loop {
        match cvt(f()) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Wraps a freshly returned descriptor.
fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: the caller passes a descriptor the kernel has just returned to
    // us (checked by `cvt`), which nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A `sockaddr_storage` and the length the kernel should read of it.
struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl RawAddr {
    fn zeroed() -> RawAddr {
        // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
        RawAddr { storage: unsafe { zeroed() }, len: size_of::<libc::sockaddr_storage>() as libc::socklen_t }
    }

    fn from_std(a: &SocketAddr) -> RawAddr {
        let mut r = RawAddr::zeroed();
        match a {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and suitably aligned
                // for sockaddr_in (that is its purpose).
                unsafe { std::ptr::write(&mut r.storage as *mut _ as *mut libc::sockaddr_in, sin) };
                r.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo(),
                    sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                    sin6_scope_id: v6.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe { std::ptr::write(&mut r.storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
                r.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        r
    }

    fn to_std(&self) -> io::Result<SocketAddr> {
        // SAFETY: the kernel filled `storage`; we read the variant its family
        // names, and sockaddr_storage is large and aligned enough for both.
        unsafe { sockaddr_to_std(&self.storage as *const _ as *const libc::sockaddr) }
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unsupported address family"))
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }

    fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        &mut self.storage as *mut _ as *mut libc::sockaddr
    }
}

/// Reads an IPv4 or IPv6 `sockaddr`.
///
/// # Safety
/// `sa` must be null or point to a valid `sockaddr` whose storage is as large
/// as its family says (`sockaddr_in` for `AF_INET`, `sockaddr_in6` for `AF_INET6`).
unsafe fn sockaddr_to_std(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: non-null and valid by the caller's promise.
    let family = unsafe { (*sa).sa_family } as libc::c_int;
    match family {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in (caller's promise
            // on its size); read_unaligned makes no alignment assumption.
            let sin = unsafe { std::ptr::read_unaligned(sa as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { std::ptr::read_unaligned(sa as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(sin6.sin6_port), sin6.sin6_flowinfo, sin6.sin6_scope_id)))
        }
        _ => None,
    }
}

/// A non-blocking, close-on-exec TCP socket of the address's family.
pub fn tcp_socket(for_addr: &IpAddr) -> io::Result<OwnedFd> {
    let family = if for_addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall, no pointers.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    Ok(owned(fd))
}

/// `setsockopt(fd, level, name, &val, sizeof(int))`.
pub fn set_int_opt(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, val: libc::c_int) -> io::Result<()> {
    // SAFETY: we pass a pointer to a live c_int and its exact size.
    cvt(unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, &val as *const _ as *const libc::c_void, size_of::<libc::c_int>() as libc::socklen_t)
    })?;
    Ok(())
}

/// `getsockopt(fd, level, name)` of an int option.
pub fn get_int_opt(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are live and sized as the kernel expects.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, &mut v as *mut _ as *mut libc::c_void, &mut len) })?;
    Ok(v)
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name)`: the socket's TCP
/// congestion control, by the kernel's name for it.
pub fn set_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the kernel reads `name.len()` bytes from a live slice.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr() as *const libc::c_void, name.len() as libc::socklen_t) })?;
    Ok(())
}

/// The socket's TCP congestion control (`TCP_CONGESTION`), by name.
pub fn congestion(fd: BorrowedFd<'_>) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are live, and len is buf's size: the kernel
    // writes at most that many bytes and stores how many in len.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len) })?;
    let name = &buf[..(len as usize).min(buf.len())];
    Ok(String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or_default()).into_owned())
}

/// `SO_LINGER {on, 0}`: a later close resets the connection at once instead
/// of leaving the kernel to deliver (or retransmit) what is still queued.
pub fn set_linger_zero(fd: BorrowedFd<'_>) -> io::Result<()> {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: pointer to a live linger struct and its exact size.
    cvt(unsafe {
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &l as *const _ as *const libc::c_void, size_of::<libc::linger>() as libc::socklen_t)
    })?;
    Ok(())
}

/// The pending socket error (`SO_ERROR`), cleared by reading it.
pub fn take_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are live and sized as the kernel expects.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, &mut v as *mut _ as *mut libc::c_void, &mut len) })?;
    Ok(if v == 0 { None } else { Some(io::Error::from_raw_os_error(v)) })
}

/// What the kernel knows about a TCP connection's health (a subset of `TCP_INFO`).
#[derive(Debug, Clone, Copy)]
pub struct TcpHealth {
    /// Segments sent and not yet acknowledged by the peer's kernel.
    pub unacked: u32,
    /// Milliseconds since the peer's kernel last acknowledged anything.
    pub last_ack_recv_ms: u32,
    /// Retransmission timeouts in a row without an acknowledgement (0 once
    /// anything is acknowledged).
    pub retransmits: u8,
}

/// `getsockopt(TCP_INFO)`.
pub fn tcp_health(fd: BorrowedFd<'_>) -> io::Result<TcpHealth> {
    // SAFETY: tcp_info is plain old data; all-zero is a valid value.
    let mut ti: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: ti and len are live; the kernel writes at most `len` bytes.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, &mut ti as *mut _ as *mut libc::c_void, &mut len) })?;
    Ok(TcpHealth { unacked: ti.tcpi_unacked, last_ack_recv_ms: ti.tcpi_last_ack_recv, retransmits: ti.tcpi_retransmits })
}

/// `bind(fd, addr)`.
pub fn bind(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<()> {
    let a = RawAddr::from_std(addr);
    // SAFETY: a.storage holds a valid sockaddr of length a.len.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), a.as_ptr(), a.len) })?;
    Ok(())
}

/// `listen(fd, backlog)`.
pub fn listen(fd: BorrowedFd<'_>, backlog: i32) -> io::Result<()> {
    // SAFETY: plain syscall, no pointers.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(())
}

/// The local address of a socket.
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    let mut a = RawAddr::zeroed();
    // SAFETY: a.storage is writable for a.len bytes; the kernel updates a.len.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), a.as_mut_ptr(), &mut a.len) })?;
    a.to_std()
}

/// `accept4(NONBLOCK | CLOEXEC)`: `Ok(None)` when no connection is waiting.
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<Option<(OwnedFd, SocketAddr)>> {
    let mut a = RawAddr::zeroed();
    // SAFETY: a.storage is writable for a.len bytes; the kernel updates a.len.
    let r = cvt_retry(|| unsafe { libc::accept4(fd.as_raw_fd(), a.as_mut_ptr(), &mut a.len, libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) });
    match r {
        Ok(new) => {
            let s = owned(new);
            Ok(Some((s, a.to_std()?)))
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        // The connection was reset before we took it: nothing to accept.
        Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Starts a non-blocking `connect`. `Ok(true)`: connected at once;
/// `Ok(false)`: in progress (wait for writability, then [`take_error`]).
pub fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<bool> {
    let a = RawAddr::from_std(addr);
    // SAFETY: a.storage holds a valid sockaddr of length a.len.
    match cvt(unsafe { libc::connect(fd.as_raw_fd(), a.as_ptr(), a.len) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `shutdown(fd, SHUT_RDWR)`.
pub fn shutdown(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain syscall, no pointers.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) })?;
    Ok(())
}

/// A raw I/O vector entry: the caller vouches for the memory.
pub type RawIov = libc::iovec;

/// A reusable list of iovecs, kept in the node so that building one per
/// system call allocates nothing.
#[derive(Default)]
pub struct IovBuf(pub Vec<RawIov>);

// SAFETY: the entries are addresses filled in just before one system call
// and never dereferenced by Rust code; between calls they are dead values.
// Moving the (empty or stale) list to another thread shares no memory.
unsafe impl Send for IovBuf {}

impl std::ops::Deref for IovBuf {
    type Target = Vec<RawIov>;
    fn deref(&self) -> &Vec<RawIov> {
        &self.0
    }
}

impl std::ops::DerefMut for IovBuf {
    fn deref_mut(&mut self) -> &mut Vec<RawIov> {
        &mut self.0
    }
}

/// Builds an iovec entry.
#[inline]
pub fn iov(ptr: *const u8, len: usize) -> RawIov {
    libc::iovec { iov_base: ptr as *mut libc::c_void, iov_len: len }
}

/// `sendmsg(fd, iov, MSG_NOSIGNAL | MSG_DONTWAIT)`: a `writev` that never
/// raises `SIGPIPE`. `WouldBlock` when the socket buffer is full.
///
/// # Safety
/// Every entry of `iov` must describe memory readable for its length for the
/// duration of the call.
pub unsafe fn send_vectored(fd: BorrowedFd<'_>, iov: &[RawIov]) -> io::Result<usize> {
    // SAFETY: msghdr is plain old data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len() as _;
    // SAFETY: msg points at `iov`, whose entries the caller vouches for; the
    // kernel only reads them.
    let n = cvt_retry(|| unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) })?;
    Ok(n as usize)
}

/// `send(fd, buf)`, never blocking and never raising `SIGPIPE`: how many
/// bytes the kernel took (`WouldBlock` when none).
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a live slice of buf.len() bytes; the kernel only reads it.
    let n = cvt_retry(|| unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) })?;
    Ok(n as usize)
}

/// `readv(fd, iov)`: `Ok(0)` is end of stream; `WouldBlock` when nothing is there.
///
/// # Safety
/// Every entry of `iov` must describe memory writable for its length for the
/// duration of the call, and not otherwise borrowed.
pub unsafe fn read_vectored(fd: BorrowedFd<'_>, iov: &[RawIov]) -> io::Result<usize> {
    let cnt = iov.len().min(libc::UIO_MAXIOV as usize) as libc::c_int;
    // SAFETY: the caller vouches that every entry is writable memory.
    let n = cvt_retry(|| unsafe { libc::readv(fd.as_raw_fd(), iov.as_ptr(), cnt) })?;
    Ok(n as usize)
}

/// `read(fd, buf)` into a safe buffer (used for the timerfd).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of buf.len() bytes.
    let n = cvt_retry(|| unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) })?;
    Ok(n as usize)
}

/// `shutdown(fd, SHUT_WR)`: a FIN after everything written so far.
pub fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: shutdown takes a descriptor we borrow and a flag.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) })?;
    Ok(())
}

/// Waits up to `timeout` until one of `fds` is readable (or has an error
/// or hang-up pending); `Ok(false)` on timeout.
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: std::time::Duration) -> io::Result<bool> {
    let mut p: Vec<libc::pollfd> = fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int;
    // SAFETY: `p` is a live array of `p.len()` pollfd structs for the call.
    let n = cvt_retry(|| unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) })?;
    Ok(n > 0)
}

/// Interest and readiness bits for [`Epoll`].
pub mod ev {
    /// Readable (or a pending connection on a listener).
    pub const IN: u32 = libc::EPOLLIN as u32;
    /// Writable.
    pub const OUT: u32 = libc::EPOLLOUT as u32;
    /// An error is pending.
    pub const ERR: u32 = libc::EPOLLERR as u32;
    /// Hung up.
    pub const HUP: u32 = libc::EPOLLHUP as u32;
    /// The peer shut down its writing half.
    pub const RDHUP: u32 = libc::EPOLLRDHUP as u32;
}

/// An epoll instance, level-triggered, each descriptor tagged with a `u64`.
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// `epoll_create1(EPOLL_CLOEXEC)`.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall, no pointers.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll { fd: owned(fd) })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, tag: u64) -> io::Result<()> {
        let mut e = libc::epoll_event { events, u64: tag };
        // SAFETY: e is a live epoll_event; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut e) })?;
        Ok(())
    }

    /// Watches `fd` for `events`, reporting `tag`.
    pub fn add(&self, fd: BorrowedFd<'_>, events: u32, tag: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd.as_raw_fd(), events, tag)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: BorrowedFd<'_>, events: u32, tag: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd.as_raw_fd(), events, tag)
    }

    /// Stops watching `fd`.
    pub fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd.as_raw_fd(), 0, 0)
    }

    /// Waits up to `timeout` (`None`: forever, zero: not at all) and fills
    /// `out` with `(tag, events)`; returns how many.
    pub fn wait(&self, out: &mut Vec<(u64, u32)>, max: usize, timeout: Option<Duration>) -> io::Result<usize> {
        let ms = match timeout {
            None => -1,
            Some(d) => d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
        };
        let mut raw: Vec<MaybeUninit<libc::epoll_event>> = Vec::with_capacity(max);
        // SAFETY: raw has capacity for `max` events, which the kernel fills.
        let n = match cvt(unsafe { libc::epoll_wait(self.fd.as_raw_fd(), raw.as_mut_ptr() as *mut libc::epoll_event, max as i32, ms) }) {
            Ok(n) => n as usize,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        // SAFETY: the kernel initialised the first n entries.
        unsafe { raw.set_len(n) };
        out.clear();
        for e in raw {
            // SAFETY: initialised above.
            let e = unsafe { e.assume_init() };
            out.push((e.u64, e.events));
        }
        Ok(n)
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A monotonic one-shot timer descriptor (readable once it fires).
pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    /// `timerfd_create(CLOCK_MONOTONIC, NONBLOCK | CLOEXEC)`.
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall, no pointers.
        let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(Timer { fd: owned(fd) })
    }

    /// Fires once, `after` from now (a zero duration disarms, so it is
    /// rounded up to one nanosecond).
    pub fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: after.as_secs() as libc::time_t, tv_nsec: after.subsec_nanos() as libc::c_long },
        };
        // SAFETY: spec is a live itimerspec; the old value is not asked for.
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Stops it from firing (an expiry already due stays readable).
    pub fn disarm(&self) -> io::Result<()> {
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let spec = libc::itimerspec { it_interval: zero, it_value: zero };
        // SAFETY: spec is a live itimerspec; the old value is not asked for.
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Consumes an expiry, if any.
    pub fn clear(&self) {
        let mut b = [0u8; 8];
        let _ = read(self.fd.as_fd_borrowed(), &mut b);
    }

    /// The descriptor, to watch.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd_borrowed()
    }
}

/// A non-blocking `eventfd`: readable once notified, until cleared.
pub struct Notifier {
    fd: OwnedFd,
}

impl Notifier {
    /// `eventfd(0, NONBLOCK | CLOEXEC)`.
    pub fn new() -> io::Result<Notifier> {
        // SAFETY: plain syscall, no pointers.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        Ok(Notifier { fd: owned(fd) })
    }

    /// Makes it readable (a saturated counter already is).
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: `one` lives across the call and is the 8 bytes an eventfd
        // write takes.
        let _ = cvt_retry(|| unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) });
    }

    /// Consumes the notifications, if any.
    pub fn clear(&self) {
        let mut b = [0u8; 8];
        let _ = read(self.fd.as_fd_borrowed(), &mut b);
    }

    /// The descriptor, to watch.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd_borrowed()
    }
}

/// `as_fd` under a name that does not clash with the trait in scope elsewhere.
trait AsFdBorrowed {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
}

impl AsFdBorrowed for OwnedFd {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

/// Fills `buf` from the kernel's random number generator (`getrandom(2)`).
pub fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: rest is a live, writable slice of rest.len() bytes.
        let n = cvt_retry(|| unsafe { libc::getrandom(rest.as_mut_ptr() as *mut libc::c_void, rest.len(), 0) })?;
        done += n as usize;
    }
    Ok(())
}

/// One address of one network interface, as `getifaddrs` reports it.
#[derive(Debug, Clone)]
pub struct IfAddr {
    /// Interface name (`eth0`).
    pub name: String,
    /// The address.
    pub addr: IpAddr,
    /// Length of the network prefix, from the netmask.
    pub prefix_len: u8,
    /// `IFF_UP` is set.
    pub up: bool,
    /// `IFF_LOOPBACK` is set.
    pub loopback: bool,
}

/// Every IPv4 and IPv6 address of every interface, in the kernel's order.
pub fn interface_addrs() -> io::Result<Vec<IfAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: head is a valid out-pointer; on success we own the list until freeifaddrs.
    cvt(unsafe { libc::getifaddrs(&mut head) })?;
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        // SAFETY: getifaddrs gives each entry an address of the size its family says, or null.
        let (Some(addr), mask) = (unsafe { sockaddr_to_std(ifa.ifa_addr) }, unsafe { sockaddr_to_std(ifa.ifa_netmask) }) else {
            continue;
        };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        let prefix_len = match mask.map(|m| m.ip()) {
            Some(IpAddr::V4(m)) => u32::from(m).count_ones() as u8,
            Some(IpAddr::V6(m)) => u128::from(m).count_ones() as u8,
            None => if addr.is_ipv4() { 32 } else { 128 },
        };
        let flags = ifa.ifa_flags;
        out.push(IfAddr {
            name,
            addr: addr.ip(),
            prefix_len,
            up: flags & libc::IFF_UP as libc::c_uint != 0,
            loopback: flags & libc::IFF_LOOPBACK as libc::c_uint != 0,
        });
    }
    // SAFETY: head came from getifaddrs and is freed once; nothing refers to it now.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}
