//! How goal-net should poll its sockets: epoll against io_uring, measured by
//! a TCP ping-pong between two processes (issue 4).
//!
//! One TCP connection (`TCP_NODELAY`, non-blocking) carries a ping-pong of
//! `--sizes` bytes (8 by default), `--warmup` + `--iters` round trips per
//! run. Every strategy below runs once per round, all in the same process
//! pair, in an order rotated by round; the rounds are repeated `--rounds`
//! times. Each process waits for the peer's message in the same way:
//!
//! Polled (one core per process spins):
//! * `epoll`: what goal-net does today (`NetNode::poll`): `epoll_wait(timeout
//!   0)` through goal-net's own [`Epoll`] wrapper on every poll, and when the
//!   socket is reported readable one `readv` into a 64 KiB buffer; sends are
//!   `sendmsg(MSG_NOSIGNAL | MSG_DONTWAIT)`.
//! * `recv`: `recv(MSG_DONTWAIT)` in a loop, no epoll: the lower bound of a
//!   user-space poll that asks the socket itself.
//! * `uring`: io_uring in the default task-run mode. A single-shot RECV
//!   (`MSG_WAITALL`) and the SEND are submitted by one `io_uring_enter`; the
//!   completion is found by reading the completion queue in user space, no
//!   system call while waiting.
//! * `uring-multi`: the same ring mode with a multishot RECV into a ring of
//!   provided buffers, armed once per run (no system call to receive at
//!   all); sends by `sendmsg(2)`.
//! * `uring-multi-usend`: `uring-multi`, sends by io_uring SEND + `io_uring_enter`.
//! * `uring-poll`: a multishot POLL_ADD on the socket, completion queue read
//!   in user space, then `readv`/`sendmsg` as goal-net does: the smallest
//!   change to goal-net (its `epoll_wait(0)` becomes a memory read).
//! * `defer`: `IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER`, multishot RECV,
//!   `sendmsg(2)`; completions only appear after `io_uring_enter(GETEVENTS)`,
//!   which the poll loop calls every time the queue is empty.
//! * `defer-flag`: `defer` plus `IORING_SETUP_TASKRUN_FLAG`: the loop enters
//!   the kernel only when the ring's `IORING_SQ_TASKRUN` flag says that
//!   deferred work waits.
//! * `coop-flag`: `IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG`, same loop.
//!
//! Sleeping (the process blocks in the kernel until the message is there):
//! * `epoll-sleep`: `epoll_wait(infinite)` (goal-net's [`Epoll`]), then
//!   `readv`; sends by `sendmsg`.
//! * `uring-sleep`: default ring, RECV and SEND submitted and waited for by
//!   one `io_uring_enter(min_complete)`: one system call per message.
//! * `defer-sleep`: the same with `DEFER_TASKRUN | SINGLE_ISSUER`.
//! * `block`: a blocking `recv` (the socket made blocking for the run), for
//!   reference.
//!
//! Rank 0 times every round trip; a line reports one-way latency (round trip
//! / 2) median, p90 and p99, and the CPU time per round trip of each process
//! (`getrusage`, user and system, warm-up excluded). Output: one JSON object
//! per run and per summary (median over rounds) on stdout, a table on stderr.
//!
//! ```sh
//! cargo build --release -p goal-net --examples
//! # both ranks on loopback (forks itself):
//! target/release/examples/poll_compare --local [--sizes 8,64,4096] [--rounds 5]
//! # between two emulated hosts (root; builds a goal-netns cluster of two
//! # hosts, one 1 Gbit/s rail, and removes it afterwards):
//! target/release/examples/poll_compare --cluster [--sizes 8] [--rounds 5]
//! # or by hand, the same options on both sides:
//! poll_compare --rank 1 --listen 10.0.0.2:7411   # first
//! poll_compare --rank 0 --connect 10.0.0.2:7411
//! ```
//!
//! Other options: `--iters N` (20000), `--warmup N` (2000), `--strategies
//! a,b,...|polled|sleeping` (all), `--label TEXT` (names the network in the
//! output). The summary also gives, per strategy, the median over rounds of
//! its median divided by the same round's `epoll` (`epoll-sleep` for the
//! sleeping ones): a paired comparison that survives the machine changing
//! speed between rounds.
//! Results of 2026-11-22: `docs/measurements/net-poll-2026-11-22/`.

use goal_net::{ev, Epoll};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io::{self, Write};
use std::mem::zeroed;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::process::Stdio;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Strat {
    Epoll,
    Recv,
    Uring,
    UringMulti,
    UringMultiUsend,
    UringPoll,
    Defer,
    DeferFlag,
    CoopFlag,
    EpollSleep,
    UringSleep,
    DeferSleep,
    Block,
}

const ALL: [Strat; 13] = [
    Strat::Epoll,
    Strat::Recv,
    Strat::Uring,
    Strat::UringMulti,
    Strat::UringMultiUsend,
    Strat::UringPoll,
    Strat::Defer,
    Strat::DeferFlag,
    Strat::CoopFlag,
    Strat::EpollSleep,
    Strat::UringSleep,
    Strat::DeferSleep,
    Strat::Block,
];

impl Strat {
    fn name(self) -> &'static str {
        match self {
            Strat::Epoll => "epoll",
            Strat::Recv => "recv",
            Strat::Uring => "uring",
            Strat::UringMulti => "uring-multi",
            Strat::UringMultiUsend => "uring-multi-usend",
            Strat::UringPoll => "uring-poll",
            Strat::Defer => "defer",
            Strat::DeferFlag => "defer-flag",
            Strat::CoopFlag => "coop-flag",
            Strat::EpollSleep => "epoll-sleep",
            Strat::UringSleep => "uring-sleep",
            Strat::DeferSleep => "defer-sleep",
            Strat::Block => "block",
        }
    }

    fn sleeps(self) -> bool {
        matches!(self, Strat::EpollSleep | Strat::UringSleep | Strat::DeferSleep | Strat::Block)
    }

    fn by_name(s: &str) -> Option<Strat> {
        ALL.iter().copied().find(|x| x.name() == s)
    }

    fn index(self) -> u8 {
        ALL.iter().position(|&x| x == self).expect("in ALL") as u8
    }
}

// ---------------------------------------------------------------------------
// Small system helpers
// ---------------------------------------------------------------------------

fn check(ret: isize, what: &str) -> io::Result<usize> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(ret as usize)
    }
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted
}

/// `sendmsg(fd, [buf], MSG_NOSIGNAL | MSG_DONTWAIT)` until all is sent, as
/// goal-net sends (`sys::send_vectored`); waits in `poll` if the socket is full.
fn send_all(fd: RawFd, mut buf: &[u8]) {
    while !buf.is_empty() {
        let mut iov = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: msghdr is plain old data; all-zero is a valid empty value.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        // SAFETY: msg points at one iovec describing `buf`, live and readable
        // for the call; the kernel only reads it.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match check(r, "sendmsg") {
            Ok(n) => buf = &buf[n..],
            Err(e) if would_block(&e) => wait_fd(fd, libc::POLLOUT),
            Err(e) => die(&e.to_string()),
        }
    }
}

/// One `readv` into `buf`: `Ok(0)` would be the end of the stream.
fn readv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    let iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: the iovec describes `buf`, live, writable and not otherwise
    // borrowed for the call.
    check(unsafe { libc::readv(fd, &iov, 1) }, "readv")
}

/// One `recv(flags)` into `buf`.
fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is live and writable for buf.len() bytes during the call.
    check(unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), flags) }, "recv")
}

/// Sleeps in `poll(2)` until `fd` has `events` (30 s at most).
fn wait_fd(fd: RawFd, events: i16) {
    let mut p = libc::pollfd { fd, events, revents: 0 };
    // SAFETY: one live pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 30_000) };
    if r == 0 {
        die("peer silent for 30 s");
    }
}

/// (user, system) CPU time of this process so far, in ns.
fn cpu_ns() -> (u64, u64) {
    // SAFETY: rusage is plain old data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { zeroed() };
    // SAFETY: ru is a live rusage the kernel fills.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

fn die(msg: &str) -> ! {
    eprintln!("poll_compare: {msg}");
    std::process::exit(1);
}

// ---------------------------------------------------------------------------
// Receive buffer shared by all strategies
// ---------------------------------------------------------------------------

const RX_CAP: usize = 1 << 18;

/// Bytes received and not yet handed out; a fixed allocation, so a pointer
/// into its spare part stays valid while a single-shot RECV is in flight.
struct Rx {
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
}

impl Rx {
    fn new() -> Rx {
        Rx { buf: vec![0; RX_CAP], lo: 0, hi: 0 }
    }

    fn len(&self) -> usize {
        self.hi - self.lo
    }

    /// The free end, at least `want` bytes (moves unread bytes to the front
    /// if needed: only called while no RECV writes into the buffer).
    fn spare(&mut self, want: usize) -> &mut [u8] {
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        } else if RX_CAP - self.hi < want {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        &mut self.buf[self.hi..]
    }

    fn push(&mut self, data: &[u8]) {
        let n = data.len();
        self.spare(n)[..n].copy_from_slice(data);
        self.hi += n;
    }

    /// Copies out `out.len()` bytes if that many are here.
    fn take(&mut self, out: &mut [u8]) -> bool {
        if self.len() < out.len() {
            return false;
        }
        out.copy_from_slice(&self.buf[self.lo..self.lo + out.len()]);
        self.lo += out.len();
        true
    }

    fn drain_into(&mut self, v: &mut Vec<u8>) {
        v.extend_from_slice(&self.buf[self.lo..self.hi]);
        self.lo = self.hi;
    }
}

// ---------------------------------------------------------------------------
// Plain socket strategies
// ---------------------------------------------------------------------------

/// One way of moving the ping-pong's messages.
trait PingPong {
    /// The next message to wait for is `len` bytes (posts a single-shot RECV).
    fn arm(&mut self, _len: usize) {}
    /// Sends `buf` (may only queue it until the next `recv` for the sleeping io_uring ones).
    fn send(&mut self, buf: &[u8]);
    /// Waits until `out` is filled from the stream.
    fn recv(&mut self, out: &mut [u8]);
    /// Stops everything in flight; unread bytes go to `left`.
    fn finish(self: Box<Self>, left: &mut Vec<u8>);
}

/// `epoll`, `epoll-sleep`, `recv` and `block`.
struct Plain {
    fd: RawFd,
    how: Strat,
    epoll: Option<Epoll>,
    ready: Vec<(u64, u32)>,
    rx: Rx,
}

impl Plain {
    fn new(s: &TcpStream, how: Strat) -> Plain {
        let epoll = match how {
            Strat::Epoll | Strat::EpollSleep => {
                let e = Epoll::new().unwrap_or_else(|e| die(&format!("epoll_create: {e}")));
                e.add(s.as_fd(), ev::IN | ev::RDHUP, 7).unwrap_or_else(|e| die(&format!("epoll_ctl: {e}")));
                Some(e)
            }
            _ => None,
        };
        if how == Strat::Block {
            s.set_nonblocking(false).unwrap_or_else(|e| die(&format!("fcntl: {e}")));
        }
        Plain { fd: s.as_raw_fd(), how, epoll, ready: Vec::with_capacity(64), rx: Rx::new() }
    }
}

impl PingPong for Plain {
    fn send(&mut self, buf: &[u8]) {
        send_all(self.fd, buf);
    }

    fn recv(&mut self, out: &mut [u8]) {
        while !self.rx.take(out) {
            let need = out.len() - self.rx.len();
            let got = match self.how {
                Strat::Epoll | Strat::EpollSleep => {
                    let timeout = if self.how == Strat::Epoll { Some(Duration::ZERO) } else { None };
                    let ep = self.epoll.as_ref().expect("made for epoll");
                    let _ = ep.wait(&mut self.ready, 64, timeout);
                    if self.ready.is_empty() {
                        continue;
                    }
                    // goal-net reads into its whole free buffer, once per readiness.
                    readv(self.fd, self.rx.spare(need))
                }
                Strat::Recv => {
                    let fd = self.fd;
                    let spare = self.rx.spare(need);
                    recv(fd, &mut spare[..need], libc::MSG_DONTWAIT)
                }
                Strat::Block => {
                    let fd = self.fd;
                    let spare = self.rx.spare(need);
                    recv(fd, &mut spare[..need], 0)
                }
                _ => unreachable!(),
            };
            match got {
                Ok(0) => die("the peer closed the connection"),
                Ok(n) => self.rx.hi += n,
                Err(e) if would_block(&e) => {}
                Err(e) => die(&e.to_string()),
            }
        }
    }

    fn finish(mut self: Box<Self>, left: &mut Vec<u8>) {
        if self.how == Strat::Block {
            // SAFETY: plain fcntl calls on our socket, no pointers.
            unsafe {
                let fl = libc::fcntl(self.fd, libc::F_GETFL);
                libc::fcntl(self.fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        self.rx.drain_into(left);
    }
}

// ---------------------------------------------------------------------------
// io_uring strategies
// ---------------------------------------------------------------------------

const UD_RECV: u64 = 1;
const UD_SEND: u64 = 2;
const UD_POLL: u64 = 3;
const UD_CANCEL: u64 = 4;

/// Provided buffers for a multishot RECV: a ring of `BUFS` entries in its
/// own page (the kernel wants it page-aligned) and the buffers themselves.
const BUFS: u16 = 16;
const BUF_LEN: usize = 16 << 10;
const BGID: u16 = 0;

struct BufRing {
    ring: *mut types::BufRingEntry,
    tail: u16,
    bufs: Vec<u8>,
}

impl BufRing {
    /// Registers the ring with `ring` and hands every buffer to the kernel.
    fn new(uring: &IoUring) -> io::Result<BufRing> {
        // SAFETY: an anonymous private mapping of one page; no pointers in.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut br = BufRing { ring: p.cast(), tail: 0, bufs: vec![0; BUFS as usize * BUF_LEN] };
        // SAFETY: the page (BUFS * 16 bytes used) stays mapped until `Drop`,
        // which runs only after the io_uring that uses it is gone (the
        // strategies drop their ring first); the kernel only reads the
        // entries and the tail (it keeps its head to itself).
        unsafe { uring.submitter().register_buf_ring_with_flags(p as u64, BUFS, BGID, 0)? };
        for bid in 0..BUFS {
            br.give(bid);
        }
        Ok(br)
    }

    /// Hands buffer `bid` (back) to the kernel.
    fn give(&mut self, bid: u16) {
        let addr = self.bufs.as_ptr() as u64 + bid as u64 * BUF_LEN as u64;
        // SAFETY: `tail & (BUFS - 1)` indexes one of the BUFS entries of the
        // mapped page; the kernel does not read an entry past the tail, which
        // is published only after the entry is written (release store below).
        unsafe {
            let e = &mut *self.ring.add((self.tail & (BUFS - 1)) as usize);
            e.set_addr(addr);
            e.set_len(BUF_LEN as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field lies in entry 0 of the mapped page, as the
        // buffer-ring ABI says; it is a u16 that the kernel reads atomically.
        unsafe {
            let t = types::BufRingEntry::tail(self.ring) as *const std::sync::atomic::AtomicU16;
            (*t).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }

    fn buf(&self, bid: u16, len: usize) -> &[u8] {
        &self.bufs[bid as usize * BUF_LEN..][..len]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: unmaps the page mapped in `new`, no longer used by any ring.
        unsafe { libc::munmap(self.ring.cast(), 4096) };
    }
}

/// How a ring is made and how its completions are looked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Default task-run mode: completions appear in the ring by themselves.
    Default,
    /// DEFER_TASKRUN | SINGLE_ISSUER: `io_uring_enter(GETEVENTS)` runs the
    /// deferred work; `flag` adds TASKRUN_FLAG and enters only when it is set.
    Defer { flag: bool },
    /// COOP_TASKRUN | TASKRUN_FLAG: enter when the flag is set.
    Coop,
}

/// How messages are received.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RecvHow {
    /// A single-shot RECV (`MSG_WAITALL`) posted per message by `arm`.
    Single,
    /// One multishot RECV with provided buffers.
    Multi,
    /// One multishot POLL_ADD; `readv` on each readiness.
    Poll,
}

struct Uring {
    // Field order: the ring is dropped before the memory it may refer to.
    ring: IoUring,
    bufs: Option<BufRing>,
    fd: RawFd,
    mode: Mode,
    recv_how: RecvHow,
    /// Sends by io_uring SEND (else `sendmsg(2)`).
    usend: bool,
    /// Waits in `io_uring_enter(min_complete)` instead of spinning.
    sleep: bool,
    rx: Rx,
    tx: Vec<u8>,
    /// Entries pushed and not yet submitted.
    queued: u32,
    /// Operations submitted whose last completion has not been seen; a
    /// multishot one counts until its final completion (no `MORE` flag).
    in_flight: u32,
    /// A SEND from `tx` is in flight.
    sending: bool,
    /// The single-shot RECV in flight, and its length.
    recv_len: Option<usize>,
    /// `finish` has begun: multishot operations are not re-armed.
    stopping: bool,
}

impl Uring {
    fn new(s: &TcpStream, how: Strat) -> io::Result<Uring> {
        let (mode, recv_how, usend, sleep) = match how {
            Strat::Uring => (Mode::Default, RecvHow::Single, true, false),
            Strat::UringMulti => (Mode::Default, RecvHow::Multi, false, false),
            Strat::UringMultiUsend => (Mode::Default, RecvHow::Multi, true, false),
            Strat::UringPoll => (Mode::Default, RecvHow::Poll, false, false),
            Strat::Defer => (Mode::Defer { flag: false }, RecvHow::Multi, false, false),
            Strat::DeferFlag => (Mode::Defer { flag: true }, RecvHow::Multi, false, false),
            Strat::CoopFlag => (Mode::Coop, RecvHow::Multi, false, false),
            Strat::UringSleep => (Mode::Default, RecvHow::Single, true, true),
            Strat::DeferSleep => (Mode::Defer { flag: false }, RecvHow::Single, true, true),
            _ => unreachable!(),
        };
        let mut b = IoUring::builder();
        match mode {
            Mode::Default => {}
            Mode::Defer { flag } => {
                b.setup_defer_taskrun().setup_single_issuer();
                if flag {
                    b.setup_taskrun_flag();
                }
            }
            Mode::Coop => {
                b.setup_coop_taskrun().setup_taskrun_flag();
            }
        }
        let ring = b.build(64)?;
        let bufs = if recv_how == RecvHow::Multi { Some(BufRing::new(&ring)?) } else { None };
        let mut u = Uring {
            ring,
            bufs,
            fd: s.as_raw_fd(),
            mode,
            recv_how,
            usend,
            sleep,
            rx: Rx::new(),
            tx: vec![0; 1 << 16],
            queued: 0,
            in_flight: 0,
            sending: false,
            recv_len: None,
            stopping: false,
        };
        match recv_how {
            RecvHow::Single => {}
            RecvHow::Multi => u.push(opcode::RecvMulti::new(types::Fd(u.fd), BGID).build().user_data(UD_RECV)),
            RecvHow::Poll => u.push(opcode::PollAdd::new(types::Fd(u.fd), libc::POLLIN as u32).multi(true).build().user_data(UD_POLL)),
        }
        u.enter(0, false);
        Ok(u)
    }

    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every entry pushed here refers only to memory that outlives
        // its operation: `rx.buf` and `tx` (owned by self, not touched while
        // the operation runs: see `arm` and `send`) and the provided buffers
        // (`bufs`, dropped after the ring); `finish` waits for every
        // operation before anything is dropped.
        unsafe { self.ring.submission().push(&e) }.unwrap_or_else(|_| die("submission queue full"));
        self.queued += 1;
        self.in_flight += 1;
    }

    /// `io_uring_enter(queued, min_complete, GETEVENTS if waiting or
    /// `getevents`)`: submits what is queued, runs deferred task work (with
    /// GETEVENTS), sleeps until `min_complete` completions are in the queue.
    fn enter(&mut self, min_complete: u32, getevents: bool) {
        let flags = if min_complete > 0 || getevents { io_uring::EnterFlags::GETEVENTS.bits() } else { 0 };
        let n = self.queued;
        if n == 0 && flags == 0 {
            return;
        }
        // SAFETY: no extended argument (a null pointer of size 0 is passed).
        let r = unsafe { self.ring.submitter().enter::<libc::sigset_t>(n, min_complete, flags, None) };
        match r {
            Ok(done) => self.queued -= done as u32,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) => die(&format!("io_uring_enter: {e}")),
        }
    }

    /// Handles every completion in the queue (a memory read when it is empty).
    fn reap(&mut self) {
        loop {
            let Some(cqe) = self.ring.completion().next() else { return };
            let (ud, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            let more = cqueue::more(flags);
            match ud {
                UD_RECV if self.recv_how == RecvHow::Single => {
                    self.in_flight -= 1;
                    let len = self.recv_len.take().expect("a RECV was posted");
                    if res <= 0 {
                        if res == -libc::ECANCELED {
                            continue;
                        }
                        die(&format!("RECV: {}", if res == 0 { "peer closed".into() } else { io::Error::from_raw_os_error(-res).to_string() }));
                    }
                    if res as usize != len {
                        die(&format!("RECV(MSG_WAITALL) of {len} gave {res}"));
                    }
                    self.rx.hi += res as usize;
                }
                UD_RECV => {
                    if !more {
                        self.in_flight -= 1;
                    }
                    if res > 0 {
                        let bid = cqueue::buffer_select(flags).expect("a provided buffer");
                        let br = self.bufs.as_mut().expect("multishot has buffers");
                        self.rx.push(br.buf(bid, res as usize));
                        br.give(bid);
                    } else if res == 0 {
                        die("multishot RECV: peer closed");
                    } else if res != -libc::ENOBUFS && res != -libc::ECANCELED {
                        die(&format!("multishot RECV: {}", io::Error::from_raw_os_error(-res)));
                    }
                    if !more && res != -libc::ECANCELED && !self.cancelling() {
                        self.push(opcode::RecvMulti::new(types::Fd(self.fd), BGID).build().user_data(UD_RECV));
                        self.enter(0, false);
                    }
                }
                UD_POLL => {
                    if !more {
                        self.in_flight -= 1;
                    }
                    if res < 0 && res != -libc::ECANCELED {
                        die(&format!("POLL_ADD: {}", io::Error::from_raw_os_error(-res)));
                    }
                    if res > 0 {
                        let fd = self.fd;
                        match readv(fd, self.rx.spare(BUF_LEN)) {
                            Ok(0) => die("the peer closed the connection"),
                            Ok(n) => self.rx.hi += n,
                            Err(e) if would_block(&e) => {}
                            Err(e) => die(&e.to_string()),
                        }
                    }
                    if !more && res != -libc::ECANCELED && !self.cancelling() {
                        self.push(opcode::PollAdd::new(types::Fd(self.fd), libc::POLLIN as u32).multi(true).build().user_data(UD_POLL));
                        self.enter(0, false);
                    }
                }
                UD_SEND => {
                    self.in_flight -= 1;
                    self.sending = false;
                    if res < 0 {
                        die(&format!("SEND: {}", io::Error::from_raw_os_error(-res)));
                    }
                }
                UD_CANCEL => self.in_flight -= 1,
                _ => die(&format!("unexpected completion {ud}")),
            }
        }
    }

    fn cancelling(&self) -> bool {
        self.stopping
    }

    /// One step of waiting: look at the completion queue, and enter the
    /// kernel as the mode requires.
    fn wait_step(&mut self) {
        self.reap();
        if self.sleep {
            // Submit what is queued and sleep until every single-shot
            // operation has completed (the SEND at once, the RECV when the
            // message is there): one system call.
            let want = self.in_flight;
            self.enter(want, false);
            self.reap();
            return;
        }
        if self.queued > 0 {
            self.enter(0, false);
        }
        let empty = self.ring.completion().is_empty();
        if !empty {
            return;
        }
        match self.mode {
            Mode::Default => {}
            Mode::Defer { flag: false } => self.enter(0, true),
            Mode::Defer { flag: true } | Mode::Coop => {
                if self.ring.submission().taskrun() {
                    self.enter(0, true);
                }
            }
        }
    }
}

impl PingPong for Uring {
    fn arm(&mut self, len: usize) {
        if self.recv_how != RecvHow::Single {
            return;
        }
        assert!(self.recv_len.is_none(), "one RECV at a time");
        let ptr = self.rx.spare(len).as_mut_ptr();
        self.recv_len = Some(len);
        // The RECV writes at rx.buf[hi..hi + len]; nothing else writes there
        // or moves the buffer's contents until its completion (`spare` is
        // only called again after it).
        self.push(opcode::Recv::new(types::Fd(self.fd), ptr, len as u32).flags(libc::MSG_WAITALL).build().user_data(UD_RECV));
    }

    fn send(&mut self, buf: &[u8]) {
        if !self.usend {
            if self.queued > 0 {
                self.enter(0, false);
            }
            send_all(self.fd, buf);
            return;
        }
        // tx is rewritten only after the previous SEND has completed.
        while self.sending {
            self.wait_step();
        }
        self.tx[..buf.len()].copy_from_slice(buf);
        self.sending = true;
        let e = opcode::Send::new(types::Fd(self.fd), self.tx.as_ptr(), buf.len() as u32)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
            .user_data(UD_SEND);
        self.push(e);
        if !self.sleep {
            self.enter(0, false);
        }
    }

    fn recv(&mut self, out: &mut [u8]) {
        while !self.rx.take(out) {
            self.wait_step();
        }
    }

    fn finish(mut self: Box<Self>, left: &mut Vec<u8>) {
        self.reap();
        if self.queued > 0 {
            self.enter(0, false);
        }
        self.stopping = true;
        if self.in_flight > 0 {
            self.push(opcode::AsyncCancel2::new(types::CancelBuilder::any()).build().user_data(UD_CANCEL));
            while self.in_flight > 0 {
                self.enter(1, false);
                self.reap();
            }
        }
        self.rx.drain_into(left);
    }
}

// ---------------------------------------------------------------------------
// The two ranks
// ---------------------------------------------------------------------------

struct Opts {
    sizes: Vec<usize>,
    iters: usize,
    warmup: usize,
    rounds: usize,
    strats: Vec<Strat>,
    label: String,
}

/// The connection and bytes read past the end of a run (by a strategy
/// that received more than it was asked for), which the next control
/// message consumes first.
struct Conn {
    s: TcpStream,
    left: Vec<u8>,
}

impl Conn {
    fn new(s: TcpStream) -> Conn {
        s.set_nodelay(true).unwrap_or_else(|e| die(&format!("TCP_NODELAY: {e}")));
        s.set_nonblocking(true).unwrap_or_else(|e| die(&format!("O_NONBLOCK: {e}")));
        Conn { s, left: Vec::new() }
    }

    fn ctl_send(&mut self, b: &[u8]) {
        send_all(self.s.as_raw_fd(), b);
    }

    fn ctl_recv(&mut self, out: &mut [u8]) {
        let n = self.left.len().min(out.len());
        out[..n].copy_from_slice(&self.left[..n]);
        self.left.drain(..n);
        let mut got = n;
        while got < out.len() {
            match recv(self.s.as_raw_fd(), &mut out[got..], libc::MSG_DONTWAIT) {
                Ok(0) => die("the peer closed the connection"),
                Ok(k) => got += k,
                Err(e) if would_block(&e) => wait_fd(self.s.as_raw_fd(), libc::POLLIN),
                Err(e) => die(&e.to_string()),
            }
        }
    }
}

fn make(conn: &Conn, how: Strat) -> Box<dyn PingPong> {
    match how {
        Strat::Epoll | Strat::EpollSleep | Strat::Recv | Strat::Block => Box::new(Plain::new(&conn.s, how)),
        _ => Box::new(Uring::new(&conn.s, how).unwrap_or_else(|e| die(&format!("{}: io_uring: {e}", how.name())))),
    }
}

fn header(how: Strat, size: usize, o: &Opts) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(b"PCMP");
    h[4] = how.index();
    h[8..12].copy_from_slice(&(size as u32).to_le_bytes());
    h[12..16].copy_from_slice(&((o.iters + o.warmup) as u32).to_le_bytes());
    h
}

struct RunResult {
    rtt: Vec<u64>,
    cpu: (u64, u64),
    peer_cpu: (u64, u64),
}

/// One run of one strategy; rank 0 returns the round trips.
fn run(conn: &mut Conn, rank: u32, how: Strat, size: usize, o: &Opts) -> Option<RunResult> {
    let total = o.iters + o.warmup;
    let h = header(how, size, o);
    let mut msg = vec![0u8; size];
    let mut back = vec![0u8; size];
    let mut ack = [0u8; 16];
    if rank == 0 {
        conn.ctl_send(&h);
        conn.ctl_recv(&mut ack);
        if ack != h {
            die("the peer runs with other options");
        }
        let mut p = make(conn, how);
        let mut rtt = Vec::with_capacity(o.iters);
        let mut cpu0 = (0, 0);
        for i in 0..total {
            if i == o.warmup {
                cpu0 = cpu_ns();
            }
            msg[..8.min(size)].copy_from_slice(&(i as u64).to_le_bytes()[..8.min(size)]);
            let t = Instant::now();
            p.arm(size);
            p.send(&msg);
            p.recv(&mut back);
            let dt = t.elapsed().as_nanos() as u64;
            if i >= o.warmup {
                rtt.push(dt);
            }
            if back[..8.min(size)] != msg[..8.min(size)] {
                die("a reply that is not the echo of its ping");
            }
        }
        let cpu1 = cpu_ns();
        p.finish(&mut conn.left);
        let mut pc = [0u8; 16];
        conn.ctl_recv(&mut pc);
        let peer_cpu = (u64::from_le_bytes(pc[..8].try_into().unwrap()), u64::from_le_bytes(pc[8..].try_into().unwrap()));
        Some(RunResult { rtt, cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1), peer_cpu })
    } else {
        conn.ctl_recv(&mut ack);
        if ack != h {
            die("the peer runs with other options");
        }
        let mut p = make(conn, how);
        conn.ctl_send(&h);
        let mut cpu0 = (0, 0);
        p.arm(size);
        for i in 0..total {
            if i == o.warmup {
                cpu0 = cpu_ns();
            }
            p.recv(&mut back);
            if i + 1 < total {
                p.arm(size);
            }
            p.send(&back);
        }
        let cpu1 = cpu_ns();
        p.finish(&mut conn.left);
        if !conn.left.is_empty() {
            die("bytes left over after a run");
        }
        let mut pc = [0u8; 16];
        pc[..8].copy_from_slice(&(cpu1.0 - cpu0.0).to_le_bytes());
        pc[8..].copy_from_slice(&(cpu1.1 - cpu0.1).to_le_bytes());
        conn.ctl_send(&pc);
        None
    }
}

fn pct(sorted: &[u64], p: usize) -> u64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn kernel() -> String {
    // SAFETY: utsname is plain old data; all-zero is valid.
    let mut u: libc::utsname = unsafe { zeroed() };
    // SAFETY: u is a live utsname the kernel fills with NUL-terminated strings.
    unsafe { libc::uname(&mut u) };
    // SAFETY: release is NUL-terminated (filled by uname, or zero).
    unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }.to_string_lossy().into_owned()
}

/// One summary row: (strategy, size) → medians over rounds.
struct Row {
    how: Strat,
    size: usize,
    med: Vec<f64>,
    p90: Vec<f64>,
    p99: Vec<f64>,
    cpu_user: Vec<f64>,
    cpu_sys: Vec<f64>,
    peer_user: Vec<f64>,
    peer_sys: Vec<f64>,
    /// The round of each entry of the vectors above.
    rounds: Vec<usize>,
}

fn rank_main(conn: TcpStream, rank: u32, o: &Opts) {
    let mut conn = Conn::new(conn);
    let mut rows: Vec<Row> = Vec::new();
    let out = io::stdout();
    if rank == 0 {
        let mut out = out.lock();
        let _ = writeln!(
            out,
            "{{\"kind\":\"meta\",\"label\":\"{}\",\"kernel\":\"{}\",\"iters\":{},\"warmup\":{},\"rounds\":{},\"sizes\":{:?}}}",
            o.label,
            kernel(),
            o.iters,
            o.warmup,
            o.rounds,
            o.sizes
        );
    }
    for round in 0..o.rounds {
        for &size in &o.sizes {
            let n = o.strats.len();
            for k in 0..n {
                let how = o.strats[(k + round) % n];
                let Some(r) = run(&mut conn, rank, how, size, o) else { continue };
                let mut v = r.rtt;
                v.sort_unstable();
                let it = o.iters as f64;
                let (med, p90, p99, min) = (pct(&v, 50) as f64 / 2.0, pct(&v, 90) as f64 / 2.0, pct(&v, 99) as f64 / 2.0, v[0] as f64 / 2.0);
                let mean = v.iter().sum::<u64>() as f64 / v.len() as f64 / 2.0;
                let c = [r.cpu.0 as f64 / it, r.cpu.1 as f64 / it, r.peer_cpu.0 as f64 / it, r.peer_cpu.1 as f64 / it];
                let _ = writeln!(
                    out.lock(),
                    "{{\"kind\":\"run\",\"label\":\"{}\",\"strategy\":\"{}\",\"sleeps\":{},\"size\":{},\"round\":{},\"iters\":{},\"oneway_median_ns\":{:.0},\"oneway_p90_ns\":{:.0},\"oneway_p99_ns\":{:.0},\"oneway_min_ns\":{:.0},\"oneway_mean_ns\":{:.0},\"cpu_user_ns_per_rt\":{:.0},\"cpu_sys_ns_per_rt\":{:.0},\"peer_cpu_user_ns_per_rt\":{:.0},\"peer_cpu_sys_ns_per_rt\":{:.0}}}",
                    o.label, how.name(), how.sleeps(), size, round, o.iters, med, p90, p99, min, mean, c[0], c[1], c[2], c[3]
                );
                let row = match rows.iter_mut().position(|x| x.how == how && x.size == size) {
                    Some(i) => &mut rows[i],
                    None => {
                        rows.push(Row { how, size, med: vec![], p90: vec![], p99: vec![], cpu_user: vec![], cpu_sys: vec![], peer_user: vec![], peer_sys: vec![], rounds: vec![] });
                        rows.last_mut().unwrap()
                    }
                };
                row.med.push(med);
                row.rounds.push(round);
                row.p90.push(p90);
                row.p99.push(p99);
                row.cpu_user.push(c[0]);
                row.cpu_sys.push(c[1]);
                row.peer_user.push(c[2]);
                row.peer_sys.push(c[3]);
            }
        }
    }
    if rank != 0 {
        return;
    }
    rows.sort_by_key(|r| (r.size, r.how.index()));
    eprintln!("\n{}: one-way latency (RTT/2) and CPU per round trip, medians over {} rounds of {} round trips", o.label, o.rounds, o.iters);
    eprintln!("(×base: median over rounds of this median / the same round's epoll, or epoll-sleep for sleeping strategies)");
    eprintln!("| size | strategy | median µs | p90 µs | p99 µs | ×base | CPU µs/RT rank 0 (user+sys) | rank 1 |");
    eprintln!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let m = |v: &Vec<f64>| median_f(v.clone());
        let (med, p90, p99) = (m(&r.med), m(&r.p90), m(&r.p99));
        let base = if r.how.sleeps() { Strat::EpollSleep } else { Strat::Epoll };
        let ratio = rows.iter().find(|b| b.how == base && b.size == r.size).map(|b| {
            let v: Vec<f64> = r.rounds.iter().zip(&r.med).filter_map(|(k, x)| b.rounds.iter().position(|y| y == k).map(|j| x / b.med[j])).collect();
            if v.is_empty() { f64::NAN } else { median_f(v) }
        });
        let ratio = ratio.unwrap_or(f64::NAN);
        let (cu, cs, pu, ps) = (m(&r.cpu_user), m(&r.cpu_sys), m(&r.peer_user), m(&r.peer_sys));
        let _ = writeln!(
            out.lock(),
            "{{\"kind\":\"summary\",\"label\":\"{}\",\"strategy\":\"{}\",\"sleeps\":{},\"size\":{},\"rounds\":{},\"oneway_median_ns\":{:.0},\"oneway_p90_ns\":{:.0},\"oneway_p99_ns\":{:.0},\"median_vs_base\":{},\"cpu_user_ns_per_rt\":{:.0},\"cpu_sys_ns_per_rt\":{:.0},\"peer_cpu_user_ns_per_rt\":{:.0},\"peer_cpu_sys_ns_per_rt\":{:.0}}}",
            o.label, r.how.name(), r.how.sleeps(), r.size, r.med.len(), med, p90, p99,
            if ratio.is_nan() { "null".to_string() } else { format!("{ratio:.3}") },
            cu, cs, pu, ps
        );
        eprintln!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} ({:.1}+{:.1}) | {:.1} ({:.1}+{:.1}) |",
            r.size,
            r.how.name(),
            med / 1e3,
            p90 / 1e3,
            p99 / 1e3,
            ratio,
            (cu + cs) / 1e3,
            cu / 1e3,
            cs / 1e3,
            (pu + ps) / 1e3,
            pu / 1e3,
            ps / 1e3
        );
    }
}

// ---------------------------------------------------------------------------
// Starting the ranks
// ---------------------------------------------------------------------------

enum Role {
    Local,
    Cluster,
    Rank0(SocketAddr),
    Rank1(SocketAddr),
}

fn usage(msg: &str) -> ! {
    eprintln!("poll_compare: {msg}\nsee the comment at the top of crates/goal-net/examples/poll_compare.rs");
    std::process::exit(2);
}

/// The options and the arguments to pass on to the ranks (all but the role).
fn parse() -> (Role, Opts, Vec<String>) {
    let mut o = Opts { sizes: vec![8], iters: 20_000, warmup: 2_000, rounds: 5, strats: ALL.to_vec(), label: String::new() };
    let mut role = None;
    let mut rank = None;
    let mut addr = None;
    let mut pass = Vec::new();
    let mut a = std::env::args().skip(1);
    while let Some(k) = a.next() {
        let mut v = || a.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--local" => role = Some(Role::Local),
            "--cluster" => role = Some(Role::Cluster),
            "--rank" => rank = Some(v().parse::<u32>().unwrap_or_else(|_| usage("bad --rank"))),
            "--listen" | "--connect" => addr = Some((k.clone(), v().parse::<SocketAddr>().unwrap_or_else(|_| usage("bad address")))),
            _ => {
                let val = v();
                match k.as_str() {
                    "--sizes" => o.sizes = val.split(',').map(|s| s.parse().unwrap_or_else(|_| usage("bad --sizes"))).collect(),
                    "--iters" => o.iters = val.parse().unwrap_or_else(|_| usage("bad --iters")),
                    "--warmup" => o.warmup = val.parse().unwrap_or_else(|_| usage("bad --warmup")),
                    "--rounds" => o.rounds = val.parse().unwrap_or_else(|_| usage("bad --rounds")),
                    "--strategies" => {
                        o.strats = match val.as_str() {
                            "polled" => ALL.iter().copied().filter(|s| !s.sleeps()).collect(),
                            "sleeping" => ALL.iter().copied().filter(|s| s.sleeps()).collect(),
                            _ => val.split(',').map(|s| Strat::by_name(s).unwrap_or_else(|| usage(&format!("no strategy {s}")))).collect(),
                        }
                    }
                    "--label" => o.label = val.clone(),
                    _ => usage(&format!("unknown option {k}")),
                }
                pass.push(k);
                pass.push(val);
            }
        }
    }
    if o.sizes.iter().any(|&s| s == 0 || s > 60_000) || o.iters == 0 || o.rounds == 0 || o.strats.is_empty() {
        usage("sizes must be 1..=60000 bytes, iters, rounds and strategies not empty");
    }
    let role = match (role, rank, addr) {
        (Some(r), None, None) => r,
        (None, Some(0), Some((k, a))) if k == "--connect" => Role::Rank0(a),
        (None, Some(1), Some((k, a))) if k == "--listen" => Role::Rank1(a),
        _ => usage("give --local, --cluster, or --rank 0 --connect ADDR / --rank 1 --listen ADDR"),
    };
    (role, o, pass)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return s,
            Err(e) if Instant::now() < end => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => die(&format!("connect {addr}: {e}")),
        }
    }
}

fn main() {
    let (role, mut o, pass) = parse();
    match role {
        Role::Rank0(a) => rank_main(connect(a), 0, &o),
        Role::Rank1(a) => {
            let l = TcpListener::bind(a).unwrap_or_else(|e| die(&format!("bind {a}: {e}")));
            let (s, _) = l.accept().unwrap_or_else(|e| die(&format!("accept: {e}")));
            drop(l);
            rank_main(s, 1, &o);
        }
        Role::Local => {
            if o.label.is_empty() {
                o.label = "loopback".into();
            }
            let l = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| die(&format!("bind: {e}")));
            let a = l.local_addr().expect("bound");
            io::stdout().flush().ok();
            // SAFETY: the process is single-threaded here, so the child
            // inherits a consistent state; it only runs `rank_main` and leaves
            // with `_exit`, running no destructor of the parent's state twice.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                die(&format!("fork: {}", io::Error::last_os_error()));
            }
            if pid == 0 {
                let (s, _) = l.accept().unwrap_or_else(|e| die(&format!("accept: {e}")));
                drop(l);
                rank_main(s, 1, &o);
                io::stdout().flush().ok();
                // SAFETY: ends the child without running atexit handlers or
                // flushing the parent's buffers a second time.
                unsafe { libc::_exit(0) };
            }
            drop(l);
            rank_main(connect(a), 0, &o);
            let mut status = 0;
            // SAFETY: waits for the child forked above; status is a live int.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            if status != 0 {
                die(&format!("rank 1 failed (status {status})"));
            }
        }
        Role::Cluster => {
            let spec = goal_netns::Spec::new(2, 1).rate("1gbit".parse().expect("a rate"));
            let cluster = goal_netns::Cluster::create(&spec).unwrap_or_else(|e| die(&format!("cluster: {e}")));
            let exe = std::env::current_exe().unwrap_or_else(|e| die(&format!("current_exe: {e}")));
            let addr = SocketAddr::new(cluster.host(1).addr(0).into(), 7411);
            let mut pass = pass;
            if o.label.is_empty() {
                pass.extend(["--label".into(), "cluster-1gbit".into()]);
            }
            let mut r1 = cluster
                .host(1)
                .command(&exe)
                .args(["--rank", "1", "--listen", &addr.to_string()])
                .args(&pass)
                .stdout(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| die(&format!("starting rank 1: {e}")));
            let r0 = cluster.host(0).command(&exe).args(["--rank", "0", "--connect", &addr.to_string()]).args(&pass).status();
            let ok0 = matches!(&r0, Ok(s) if s.success());
            if !ok0 {
                let _ = r1.kill();
            }
            let ok1 = matches!(r1.wait(), Ok(s) if s.success());
            cluster.destroy().unwrap_or_else(|e| die(&format!("removing the cluster: {e}")));
            if !ok0 || !ok1 {
                die("a rank failed");
            }
        }
    }
}
