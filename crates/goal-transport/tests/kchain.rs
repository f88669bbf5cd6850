//! Kernel chains across real processes: the kernel forwards, exchanges and
//! wakes while the process that submitted the chain computes without a
//! system call or sleeps in `nanosleep`. Each cross-process test re-executes
//! this binary as its peers (see `common::ChildProc`); the peers find each
//! other through `KListener` / `connect`, as unrelated processes would.
//!
//! Every wait is bounded: the parent's by `reap_n`, the children's by their
//! own timeouts and a watchdog that ends a child after `LIMIT`.

mod common;

use common::*;
use goal_transport::kchain::{
    connect, max_message, seqpacket_pair, KListener, KOp, KOpKind, KRing, Link, SockType,
    Unavailable,
};
use goal_transport::sys;
use std::hint::black_box;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);
const CONNECT: Duration = Duration::from_secs(5);
/// How long the process that submitted a chain computes or sleeps.
const IDLE: Duration = Duration::from_millis(500);
/// A peer acts this long after it is told to, so that the submitter is
/// most likely idle by then. (Not surely, on a loaded machine: so the
/// submitter's window is taken to start before it tells the peer, and no
/// test depends on it being idle already.)
const LATER: Duration = Duration::from_millis(50);
const ECANCELED: i32 = -libc::ECANCELED;

/// A job name no other test (or run) shares.
fn job(test: &str) -> String {
    format!("kchain-test-{}-{test}", std::process::id())
}

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the
/// machine, so that times taken in different processes compare.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) },
        0
    );
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Set by nobody: the compute loop checks it so that the loop is not
/// optimised away and stands for an application's loop with an exit flag.
static NOBODY: AtomicBool = AtomicBool::new(false);

/// `iters` rounds of arithmetic on a counter, with no system call.
fn spin(iters: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..iters {
        if NOBODY.load(Ordering::Relaxed) {
            break;
        }
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
    }
    black_box(x)
}

/// How the submitter passes the time while its chain runs.
#[derive(Clone, Copy, Debug)]
enum Idle {
    /// A busy loop without any system call.
    Compute,
    /// One `nanosleep(2)`, not io_uring.
    Sleep,
}

/// Idles for about `d`; returns the `now_ns` window it spent, taken just
/// outside the idle part itself.
fn idle(how: Idle, d: Duration) -> (u64, u64) {
    let iters = match how {
        Idle::Compute => {
            let t = Instant::now();
            spin(1_000_000);
            (d.as_secs_f64() / t.elapsed().as_secs_f64() * 1e6) as u64
        }
        Idle::Sleep => 0,
    };
    let start = now_ns();
    match how {
        Idle::Compute => {
            spin(iters);
        }
        Idle::Sleep => {
            let req = libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            };
            let mut rem = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: both timespecs are valid for the call.
            let r = unsafe { libc::nanosleep(&req, &mut rem) };
            // The chain's task work wakes the sleeper, runs, and the kernel
            // restarts the sleep: no EINTR.
            assert_eq!(r, 0, "nanosleep: {}", io::Error::last_os_error());
        }
    }
    (start, now_ns())
}

/// Reaps until `n` completions have come, waiting in the kernel in between;
/// panics after `limit`.
fn reap_n(ring: &mut KRing, n: usize, limit: Duration) -> Vec<(u64, i32)> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    loop {
        ring.reap(&mut got);
        if got.len() >= n {
            return got;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "only {got:?} of {n} completions within {limit:?}"
        );
        ring.wait(left).unwrap();
    }
}

/// Waits for one message on `fd`, at most `limit`; returns it, cut to its
/// real length (which `buf` must hold).
fn recv_within(fd: BorrowedFd<'_>, buf: &mut [u8], limit: Duration) -> usize {
    let mut pfd = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    let n = sys::poll(&mut pfd, limit.as_millis() as i32).unwrap();
    assert_eq!(n, 1, "no message within {limit:?}");
    let len = sys::recv(fd, buf, libc::MSG_TRUNC).unwrap();
    assert!(
        len <= buf.len(),
        "a message of {len} bytes, expected at most {}",
        buf.len()
    );
    len
}

/// In a child: end the process if the test stalls, so the parent never waits
/// on a silent pipe forever.
fn child_watchdog() {
    std::thread::spawn(|| {
        std::thread::sleep(LIMIT);
        eprintln!("kchain test child: still running after {LIMIT:?}, giving up");
        std::process::exit(3);
    });
}

/// In a child: connect to rank `to` of the job the parent names, as `me`.
fn child_connect(to: usize, me: usize) -> OwnedFd {
    child_watchdog();
    connect(&child_recv("JOB"), to, me, CONNECT).unwrap()
}

/// In the parent: children in `roles`, each told the job name, and every
/// connection they make to `listener` by rank.
fn spawn_and_accept(
    test: &str,
    listener: &KListener,
    job: &str,
    roles: &[(&str, usize)],
) -> (Vec<ChildProc>, Vec<(usize, OwnedFd)>) {
    let mut children = Vec::new();
    let mut conns = Vec::new();
    for (role, connects) in roles {
        let mut child = ChildProc::spawn(test, role);
        child.send("JOB", job);
        children.push(child);
        for _ in 0..*connects {
            conns.push(listener.accept(CONNECT).unwrap());
        }
    }
    (children, conns)
}

fn take(conns: &mut Vec<(usize, OwnedFd)>, rank: usize) -> OwnedFd {
    let at = conns.iter().position(|(r, _)| *r == rank).unwrap();
    conns.remove(at).1
}

fn kring() -> KRing {
    KRing::probe().unwrap_or_else(|e| panic!("{e}"))
}

/// Whether kernel chains work here; if not, says why on stderr and the test
/// passes without running (as the whole suite does under `GOAL_IO_URING=0`).
fn available() -> bool {
    match KRing::probe() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn send(user_data: u64, fd: BorrowedFd<'_>, buf: &[u8], link: Link) -> KOp {
    KOp {
        user_data,
        kind: KOpKind::Send {
            fd: fd.as_raw_fd(),
            buf: buf.as_ptr(),
            len: buf.len() as u32,
        },
        link,
        quiet: false,
    }
}

fn recv(user_data: u64, fd: BorrowedFd<'_>, buf: &mut [u8], link: Link) -> KOp {
    KOp {
        user_data,
        kind: KOpKind::Recv {
            fd: fd.as_raw_fd(),
            buf: buf.as_mut_ptr(),
            len: buf.len() as u32,
            sock: SockType::Seqpacket,
        },
        link,
        quiet: false,
    }
}

/// A page of shared memory (a memfd) holding futex words, mapped for the
/// rest of the process's life: rings that refer to it are dropped first.
struct SharedPage {
    fd: OwnedFd,
    base: *mut u8,
}

impl SharedPage {
    fn new() -> SharedPage {
        let fd = sys::memfd_create(c"kchain-test").unwrap();
        sys::ftruncate(fd.as_fd(), 4096).unwrap();
        let base = sys::mmap_shared(fd.as_fd(), 4096, true).unwrap();
        SharedPage { fd, base }
    }

    /// The parent's page, in a child: `pid fd` as `SharedPage::name` gave them.
    fn open(name: &str) -> SharedPage {
        let (pid, fd) = name.split_once(' ').unwrap();
        let fd = sys::open_proc_fd(pid.parse().unwrap(), fd.parse().unwrap(), true).unwrap();
        let base = sys::mmap_shared(fd.as_fd(), 4096, true).unwrap();
        SharedPage { fd, base }
    }

    fn name(&self) -> String {
        format!("{} {}", std::process::id(), self.fd.as_raw_fd())
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: the page is mapped, writable, page-aligned and never
        // unmapped; all-zero is a valid AtomicU32.
        unsafe { &*(self.base as *const AtomicU32) }
    }
}

const FORWARD_LEN: usize = 64 << 10;

/// A sends to B, B's chain forwards to C while B idles: C gets the bytes
/// during B's idle window, and B's completions are there afterwards
/// without B having waited for them.
fn forward_chain(test: &str, how: Idle) {
    match child_role().as_deref() {
        Some("A") => {
            let to_b = child_connect(1, 0);
            let mut msg = vec![0u8; FORWARD_LEN];
            fill(1, &mut msg);
            child_recv("GO");
            std::thread::sleep(LATER);
            assert_eq!(sys::send(to_b.as_fd(), &msg, 0).unwrap(), FORWARD_LEN);
            return;
        }
        Some("C") => {
            let from_b = child_connect(1, 2);
            let mut got = vec![0u8; FORWARD_LEN + 1];
            let n = recv_within(from_b.as_fd(), &mut got, LIMIT / 2);
            let at = now_ns();
            assert_eq!(n, FORWARD_LEN);
            check(1, &got[..n]);
            child_send("GOT", &at.to_string());
            return;
        }
        _ => {}
    }
    if !available() {
        return;
    }
    let job = job(test);
    let listener = KListener::bind(&job, 1).unwrap();
    let (mut children, mut conns) = spawn_and_accept(test, &listener, &job, &[("A", 1), ("C", 1)]);
    let (from_a, to_c) = (take(&mut conns, 0), take(&mut conns, 2));
    let mut ring = kring();
    let mut buf = vec![0u8; FORWARD_LEN];
    let chain = [
        recv(1, from_a.as_fd(), &mut buf, Link::Soft),
        send(2, to_c.as_fd(), &buf, Link::Soft),
    ];
    // SAFETY: `buf` and both sockets outlive the ring, and `buf` is not
    // touched until both completions are reaped.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    // The window starts before GO: A sends only after it, so the bytes
    // cannot come before `start`, however late this process idles.
    let start = now_ns();
    children[0].send("GO", "");
    let (_, end) = idle(how, IDLE);
    let mut done = Vec::new();
    ring.reap(&mut done);
    assert_eq!(
        done,
        [(1, FORWARD_LEN as i32), (2, FORWARD_LEN as i32)],
        "B's chain had not run when B stopped ({how:?})"
    );
    check(1, &buf);
    let at: u64 = children[1].recv("GOT").parse().unwrap();
    assert!(
        start < at && at < end,
        "C got the bytes {} ms into B's {:?} of {} ms",
        (at as f64 - start as f64) / 1e6,
        how,
        (end - start) / 1_000_000
    );
    for child in children {
        child.wait_ok(LIMIT);
    }
}

#[test]
fn forward_chain_runs_while_the_forwarder_computes() {
    forward_chain(
        "forward_chain_runs_while_the_forwarder_computes",
        Idle::Compute,
    );
}

#[test]
fn forward_chain_runs_while_the_forwarder_sleeps() {
    forward_chain("forward_chain_runs_while_the_forwarder_sleeps", Idle::Sleep);
}

const ROUNDS: usize = 32;

/// The chain of one side of a two-party exchange of `ROUNDS` rounds: the
/// first side sends then receives in each round, the other receives then
/// sends. Round `r` of rank `me` carries the word `r * 2 + me`.
fn rounds_chain(
    me: usize,
    fd: BorrowedFd<'_>,
    out: &[u64; ROUNDS],
    into: &mut [u64; ROUNDS],
) -> Vec<KOp> {
    let mut chain = Vec::new();
    for (r, (o, i)) in out.iter().zip(into.iter_mut()).enumerate() {
        let s = send(2 * r as u64, fd, bytes_of(o), Link::Soft);
        // SAFETY: a u64 is 8 initialised bytes, and any bytes are a valid u64.
        let into = unsafe { std::slice::from_raw_parts_mut((i as *mut u64).cast(), 8) };
        let v = recv(2 * r as u64 + 1, fd, into, Link::Soft);
        if me == 0 {
            chain.extend([s, v]);
        } else {
            chain.extend([v, s]);
        }
    }
    chain
}

fn bytes_of(v: &u64) -> &[u8] {
    // SAFETY: a u64 is 8 initialised bytes.
    unsafe { std::slice::from_raw_parts((v as *const u64).cast(), 8) }
}

/// Runs one side of the exchange: submit once, idle, then check that every
/// round completed and carried the peer's words.
///
/// `handshake` orders the two submissions: rank 1 calls it once its chain
/// is in the kernel (to say so), rank 0 before it submits (to hear that).
/// So rank 0 idles with both chains submitted, and rank 1's idle has only
/// to outlast rank 0's submission, not its whole set-up (a fixed window
/// that also covered the peer's ring set-up and scheduling was a guess
/// about how fast a loaded machine runs the other process).
fn exchange_rounds(me: usize, fd: BorrowedFd<'_>, how: Idle, handshake: impl FnOnce()) {
    let out: [u64; ROUNDS] = std::array::from_fn(|r| (r * 2 + me) as u64);
    let mut into = [u64::MAX; ROUNDS];
    let mut ring = kring();
    let chain = rounds_chain(me, fd, &out, &mut into);
    // SAFETY: `out`, `into` and `fd` outlive the ring; `into` is read only
    // after every completion has been reaped.
    let mut submit = || unsafe { ring.submit_chain(&chain) }.unwrap();
    if me == 0 {
        handshake();
        submit();
    } else {
        submit();
        handshake();
    }
    let (_, _) = idle(how, IDLE);
    let mut done = Vec::new();
    ring.reap(&mut done);
    assert_eq!(
        done.len(),
        2 * ROUNDS,
        "rank {me} ({how:?}): only {} of {} operations done: {done:?}",
        done.len(),
        2 * ROUNDS
    );
    let in_order: Vec<u64> = chain.iter().map(|op| op.user_data).collect();
    assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), in_order);
    assert!(done.iter().all(|&(_, res)| res == 8), "{done:?}");
    let peer = 1 - me;
    let want: Vec<u64> = (0..ROUNDS).map(|r| (r * 2 + peer) as u64).collect();
    assert_eq!(into.to_vec(), want);
}

#[test]
fn rounds_of_an_exchange_complete_in_the_kernel() {
    const TEST: &str = "rounds_of_an_exchange_complete_in_the_kernel";
    if child_role().as_deref() == Some("peer") {
        let fd = child_connect(0, 1);
        exchange_rounds(1, fd.as_fd(), Idle::Sleep, || child_send("SUBMITTED", ""));
        child_send("DONE", "");
        return;
    }
    if !available() {
        return;
    }
    let job = job("rounds");
    let listener = KListener::bind(&job, 0).unwrap();
    let (mut children, mut conns) = spawn_and_accept(TEST, &listener, &job, &[("peer", 1)]);
    let fd = take(&mut conns, 1);
    exchange_rounds(0, fd.as_fd(), Idle::Compute, || {
        children[0].recv("SUBMITTED");
    });
    children[0].recv("DONE");
    children.pop().unwrap().wait_ok(LIMIT);
}

#[test]
fn futex_wait_hard_linked_to_a_send_lets_it_leave_only_after_the_wake() {
    const TEST: &str = "futex_wait_hard_linked_to_a_send_lets_it_leave_only_after_the_wake";
    if child_role().as_deref() == Some("waker") {
        let from_parent = child_connect(0, 1);
        let page = SharedPage::open(&child_recv("SHM"));
        child_recv("GO");
        // Nothing may come while the word is unchanged.
        let mut pfd = [libc::pollfd {
            fd: from_parent.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(sys::poll(&mut pfd, 200).unwrap(), 0, "the send left early");
        let woke_at = now_ns();
        page.word().store(1, Ordering::SeqCst);
        sys::futex_wake(page.word(), i32::MAX).unwrap();
        let mut got = [0u8; 16];
        let n = recv_within(from_parent.as_fd(), &mut got, LIMIT / 2);
        let got_at = now_ns();
        assert_eq!(&got[..n], b"after the wake");
        child_send("GOT", &format!("{woke_at} {got_at}"));
        return;
    }
    if !available() {
        return;
    }
    let job = job("futex-send");
    let listener = KListener::bind(&job, 0).unwrap();
    let (mut children, mut conns) = spawn_and_accept(TEST, &listener, &job, &[("waker", 1)]);
    let to_waker = take(&mut conns, 1);
    let page = SharedPage::new();
    children[0].send("SHM", &page.name());
    let msg = b"after the wake";
    let mut ring = kring();
    let chain = [
        KOp {
            user_data: 1,
            kind: KOpKind::FutexWait {
                word: page.word(),
                val: 0,
            },
            link: Link::Hard,
            quiet: false,
        },
        send(2, to_waker.as_fd(), msg, Link::Soft),
    ];
    // SAFETY: the page is never unmapped; `msg` and the socket outlive the ring.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    // Before GO, as in `forward_chain`.
    let start = now_ns();
    children[0].send("GO", "");
    let (_, end) = idle(Idle::Sleep, IDLE + Duration::from_millis(300));
    let mut done = Vec::new();
    ring.reap(&mut done);
    assert_eq!(done, [(1, 0), (2, msg.len() as i32)]);
    let line = children[0].recv("GOT");
    let (woke_at, got_at) = line.split_once(' ').unwrap();
    let (woke_at, got_at): (u64, u64) = (woke_at.parse().unwrap(), got_at.parse().unwrap());
    assert!(start < woke_at && woke_at < got_at && got_at < end);
    children.pop().unwrap().wait_ok(LIMIT);
}

#[test]
fn recv_into_a_shared_word_linked_to_futex_wake_wakes_a_waiter() {
    const TEST: &str = "recv_into_a_shared_word_linked_to_futex_wake_wakes_a_waiter";
    const VALUE: u32 = 0x6b63_6861;
    match child_role().as_deref() {
        Some("sender") => {
            let to_parent = child_connect(0, 1);
            child_recv("GO");
            std::thread::sleep(LATER * 2);
            sys::send(to_parent.as_fd(), &VALUE.to_ne_bytes(), 0).unwrap();
            return;
        }
        Some("waiter") => {
            child_watchdog();
            let page = SharedPage::open(&child_recv("SHM"));
            child_send("WAITING", "");
            let deadline = Instant::now() + LIMIT / 2;
            // Asleep in the kernel well before the value comes, so only a
            // FUTEX_WAKE can end the wait.
            let how = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                assert!(!left.is_zero(), "never woken");
                match sys::futex_wait(page.word(), 0, Some(left)).unwrap() {
                    sys::FutexWait::TimedOut | sys::FutexWait::Interrupted => continue,
                    how => break how,
                }
            };
            let at = now_ns();
            assert_eq!(how, sys::FutexWait::Woken);
            assert_eq!(page.word().load(Ordering::SeqCst), VALUE);
            child_send("WOKEN", &at.to_string());
            return;
        }
        _ => {}
    }
    if !available() {
        return;
    }
    let job = job("recv-wake");
    let listener = KListener::bind(&job, 0).unwrap();
    let page = SharedPage::new();
    let (mut children, mut conns) =
        spawn_and_accept(TEST, &listener, &job, &[("sender", 1), ("waiter", 0)]);
    children[1].send("SHM", &page.name());
    children[1].recv("WAITING");
    let from_sender = take(&mut conns, 1);
    let word = page.word();
    let mut ring = kring();
    let chain = [
        KOp {
            user_data: 1,
            kind: KOpKind::Recv {
                fd: from_sender.as_raw_fd(),
                buf: word.as_ptr().cast(),
                len: 4,
                sock: SockType::Seqpacket,
            },
            link: Link::Soft,
            quiet: false,
        },
        KOp {
            user_data: 2,
            kind: KOpKind::FutexWake {
                word,
                count: u32::MAX,
            },
            link: Link::Soft,
            quiet: false,
        },
    ];
    // SAFETY: the page is never unmapped; nothing in this process touches the
    // word until both completions are reaped; the socket outlives the ring.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    // Before GO, as in `forward_chain`.
    let start = now_ns();
    children[0].send("GO", "");
    let (_, end) = idle(Idle::Sleep, IDLE);
    let mut done = Vec::new();
    ring.reap(&mut done);
    assert_eq!(done, [(1, 4), (2, 1)], "one waiter woken");
    let at: u64 = children[1].recv("WOKEN").parse().unwrap();
    assert!(start < at && at < end);
    for child in children {
        child.wait_ok(LIMIT);
    }
}

#[test]
fn a_message_that_does_not_fit_is_reported_and_stops_the_chain() {
    if !available() {
        return;
    }
    let (a, b) = seqpacket_pair().unwrap();
    let mut ring = kring();
    let mut buf = [0u8; 8];
    let reply = *b"reply!!!";
    let chain = |buf: &mut [u8]| {
        [
            recv(1, b.as_fd(), buf, Link::Soft),
            send(2, b.as_fd(), &reply, Link::Soft),
        ]
    };
    // Longer: the real length, the first 8 bytes, and no reply.
    // SAFETY: `buf`, `reply` and the sockets outlive the ring; `buf` is read
    // only after the completions are reaped.
    unsafe { ring.submit_chain(&chain(&mut buf)) }.unwrap();
    sys::send(a.as_fd(), b"sixteen bytes!!!", 0).unwrap();
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(1, 16), (2, ECANCELED)]);
    assert_eq!(&buf, b"sixteen ");
    let e = sys::recv(a.as_fd(), &mut [0u8; 8], libc::MSG_DONTWAIT).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "a reply left: {e}");
    // Exact: the reply goes.
    // SAFETY: as above.
    unsafe { ring.submit_chain(&chain(&mut buf)) }.unwrap();
    sys::send(a.as_fd(), b"8 bytes.", 0).unwrap();
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(1, 8), (2, 8)]);
    assert_eq!(&buf, b"8 bytes.");
    let mut got = [0u8; 9];
    assert_eq!(recv_within(a.as_fd(), &mut got, LIMIT), 8);
    assert_eq!(&got[..8], &reply);
    // Shorter: io_uring's MSG_WAITALL fills the buffer from the next
    // message too (documented in kchain; this pins the kernel's behaviour).
    // SAFETY: as above.
    unsafe { ring.submit_chain(&chain(&mut buf)) }.unwrap();
    sys::send(a.as_fd(), b"four", 0).unwrap();
    sys::send(a.as_fd(), b"more", 0).unwrap();
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(1, 8), (2, 8)]);
    assert_eq!(&buf, b"fourmore");
    assert_eq!(recv_within(a.as_fd(), &mut got, LIMIT), 8);
    // Too long for the socket's send buffer: EMSGSIZE, at once.
    let big = vec![0u8; max_message(b.as_fd()).unwrap() + 1];
    assert!(
        big.len() > 200 << 10,
        "send buffer of only {} bytes",
        big.len()
    );
    // SAFETY: `big` and the socket outlive the ring.
    unsafe { ring.submit_chain(&[send(3, b.as_fd(), &big, Link::Soft)]) }.unwrap();
    assert_eq!(reap_n(&mut ring, 1, LIMIT), [(3, -libc::EMSGSIZE)]);
}

#[test]
fn quiet_operations_report_only_their_failures() {
    if !available() {
        return;
    }
    let (a, b) = seqpacket_pair().unwrap();
    let mut ring = kring();
    let (mut first, mut second) = ([0u8; 4], [0u8; 4]);
    let quiet = |op: KOp| KOp { quiet: true, ..op };
    // recv, recv, send: the two receives are quiet, the send reports.
    let chain = |first: &mut [u8], second: &mut [u8]| {
        [
            quiet(recv(1, b.as_fd(), first, Link::Soft)),
            quiet(recv(2, b.as_fd(), second, Link::Soft)),
            send(3, b.as_fd(), b"done", Link::Soft),
        ]
    };
    // SAFETY: the buffers and sockets outlive the ring; the buffers are read
    // only after the chain's last completion is reaped.
    unsafe { ring.submit_chain(&chain(&mut first, &mut second)) }.unwrap();
    assert_eq!(ring.in_flight(), 1, "only the loud operation is counted");
    sys::send(a.as_fd(), b"one.", 0).unwrap();
    sys::send(a.as_fd(), b"two.", 0).unwrap();
    assert_eq!(reap_n(&mut ring, 1, LIMIT), [(3, 4)]);
    assert_eq!((&first, &second), (b"one.", b"two."));
    let mut got = [0u8; 8];
    assert_eq!(recv_within(a.as_fd(), &mut got, LIMIT), 4);
    // A quiet receive that fails reports itself (with the user_data the
    // caller gave), and the rest of the chain is cancelled.
    // SAFETY: as above.
    unsafe { ring.submit_chain(&chain(&mut first, &mut second)) }.unwrap();
    sys::send(a.as_fd(), b"too long", 0).unwrap();
    assert_eq!(
        reap_n(&mut ring, 3, LIMIT),
        [(1, 8), (2, ECANCELED), (3, ECANCELED)]
    );
    assert_eq!(ring.in_flight(), 0);
    // A quiet receive still waiting is cancelled by its user_data.
    // SAFETY: as above.
    unsafe { ring.submit_chain(&chain(&mut first, &mut second)) }.unwrap();
    ring.cancel(1).unwrap();
    assert_eq!(
        reap_n(&mut ring, 3, LIMIT),
        [(1, ECANCELED), (2, ECANCELED), (3, ECANCELED)]
    );
    // A chain must end with a loud operation, and user_data keeps clear of
    // the ring's own bit.
    let q = quiet(send(4, b.as_fd(), b"x", Link::Soft));
    // SAFETY: refused before anything is queued.
    let e = unsafe { ring.submit_chain(&[q]) }.unwrap_err();
    assert!(e.to_string().contains("cannot be quiet"), "{e}");
    // SAFETY: as above.
    let e =
        unsafe { ring.submit_chain(&[send(1 << 63, b.as_fd(), b"x", Link::Soft)]) }.unwrap_err();
    assert!(e.to_string().contains("reserved"), "{e}");
}

#[test]
fn a_peer_that_dies_ends_a_pending_receive_and_cancels_the_rest() {
    const TEST: &str = "a_peer_that_dies_ends_a_pending_receive_and_cancels_the_rest";
    if child_role().as_deref() == Some("doomed") {
        let _to_parent = child_connect(0, 1);
        child_send("CONNECTED", "");
        std::thread::sleep(LIMIT);
        return;
    }
    if !available() {
        return;
    }
    let job = job("dies");
    let listener = KListener::bind(&job, 0).unwrap();
    let (mut children, mut conns) = spawn_and_accept(TEST, &listener, &job, &[("doomed", 1)]);
    children[0].recv("CONNECTED");
    let fd = take(&mut conns, 1);
    let mut ring = kring();
    let (mut first, then, mut last) = ([0u8; 8], [1u8; 8], [0u8; 8]);
    let chain = [
        recv(1, fd.as_fd(), &mut first, Link::Soft),
        send(2, fd.as_fd(), &then, Link::Soft),
        recv(3, fd.as_fd(), &mut last, Link::Soft),
    ];
    // SAFETY: the buffers and the socket outlive the ring.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    std::thread::sleep(LATER);
    assert_eq!(ring.in_flight(), 3);
    children[0].child.kill().unwrap();
    assert_eq!(
        reap_n(&mut ring, 3, LIMIT),
        [(1, 0), (2, ECANCELED), (3, ECANCELED)]
    );
    // A stream socket whose peer closes mid-message: the bytes so far.
    let (near, mut far) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut buf = [0u8; 8];
    let chain = [
        KOp {
            user_data: 4,
            kind: KOpKind::Recv {
                fd: near.as_raw_fd(),
                buf: buf.as_mut_ptr(),
                len: 8,
                sock: SockType::Stream,
            },
            link: Link::Soft,
            quiet: false,
        },
        send(5, near.as_fd(), &then, Link::Soft),
    ];
    // SAFETY: `buf`, `then` and the sockets outlive the ring.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    io::Write::write_all(&mut far, b"abc").unwrap();
    drop(far);
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(4, 3), (5, ECANCELED)]);
    assert_eq!(&buf[..3], b"abc");
}

#[test]
fn links_cancels_and_the_rings_descriptor() {
    if !available() {
        return;
    }
    let (a, b) = seqpacket_pair().unwrap();
    let mut ring = kring();
    let word = AtomicU32::new(1);
    let msg = *b"go";
    let wait = |user_data, link| KOp {
        user_data,
        kind: KOpKind::FutexWait {
            word: &word,
            val: 0,
        },
        link,
        quiet: false,
    };
    // The word already changed: -EAGAIN stops a soft link, not a hard one.
    // SAFETY: `word`, `msg` and the sockets outlive the ring.
    unsafe { ring.submit_chain(&[wait(1, Link::Soft), send(2, b.as_fd(), &msg, Link::Soft)]) }
        .unwrap();
    assert_eq!(
        reap_n(&mut ring, 2, LIMIT),
        [(1, -libc::EAGAIN), (2, ECANCELED)]
    );
    // SAFETY: as above.
    unsafe { ring.submit_chain(&[wait(3, Link::Hard), send(4, b.as_fd(), &msg, Link::Soft)]) }
        .unwrap();
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(3, -libc::EAGAIN), (4, 2)]);
    assert_eq!(recv_within(a.as_fd(), &mut [0u8; 2], LIMIT), 2);

    // Cancelling a receive fails its soft link.
    let mut buf = [0u8; 4];
    // SAFETY: as above; `buf` too.
    unsafe {
        ring.submit_chain(&[
            recv(5, b.as_fd(), &mut buf, Link::Soft),
            send(6, b.as_fd(), &msg, Link::Soft),
        ])
    }
    .unwrap();
    ring.cancel(6).unwrap(); // not issued yet: not found
    ring.cancel(5).unwrap();
    assert_eq!(
        reap_n(&mut ring, 2, LIMIT),
        [(5, ECANCELED), (6, ECANCELED)]
    );
    // Cancelling a futex wait does not: the send goes (a kernel quirk the
    // module documents; this test notices if it changes).
    word.store(0, Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { ring.submit_chain(&[wait(7, Link::Soft), send(8, b.as_fd(), &msg, Link::Soft)]) }
        .unwrap();
    ring.cancel(7).unwrap();
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(7, ECANCELED), (8, 2)]);
    assert_eq!(recv_within(a.as_fd(), &mut [0u8; 2], LIMIT), 2);

    // wait() ends at its timeout when nothing completes.
    // SAFETY: as above.
    unsafe { ring.submit_chain(&[recv(9, b.as_fd(), &mut buf, Link::Soft)]) }.unwrap();
    let t = Instant::now();
    ring.wait(Duration::from_millis(30)).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(25),
        "{:?}",
        t.elapsed()
    );
    let mut none = Vec::new();
    assert_eq!(ring.reap(&mut none), 0);

    // The ring's descriptor: not readable with nothing to reap; poll(2)
    // sleeps until the receive completes (its task work interrupts and
    // restarts the poll), then reports POLLIN until the completion is reaped.
    let mut pfd = [libc::pollfd {
        fd: ring.fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    assert_eq!(sys::poll(&mut pfd, 0).unwrap(), 0);
    let a_fd = a.try_clone().unwrap();
    // Taken before the sender starts: it sends at least LATER after `t`
    // however late this thread gets to poll.
    let t = Instant::now();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(LATER);
        sys::send(a_fd.as_fd(), b"ring", 0).unwrap();
    });
    // SAFETY: `pfd` is a valid array of one pollfd. (Raw poll, not sys::poll,
    // which would hide an EINTR.)
    let r = unsafe { libc::poll(pfd.as_mut_ptr(), 1, LIMIT.as_millis() as i32) };
    assert_eq!(r, 1, "poll: {}", io::Error::last_os_error());
    assert!(t.elapsed() >= LATER / 2 && pfd[0].revents & libc::POLLIN != 0);
    assert_eq!(sys::poll(&mut pfd, 0).unwrap(), 1, "level-triggered");
    assert_eq!(reap_n(&mut ring, 1, LIMIT), [(9, 4)]);
    assert_eq!(&buf, b"ring");
    assert_eq!(sys::poll(&mut pfd, 0).unwrap(), 0);
    sender.join().unwrap();

    // Dropping a ring with chains in flight (a hard link and a futex wait
    // included) cancels them all and returns.
    word.store(0, Ordering::SeqCst);
    let t = Instant::now();
    // SAFETY: as above; the drop below waits for every completion.
    unsafe {
        ring.submit_chain(&[
            wait(10, Link::Hard),
            recv(11, b.as_fd(), &mut buf, Link::Hard),
            wait(12, Link::Soft),
        ])
    }
    .unwrap();
    drop(ring);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn listeners_name_their_address_in_errors() {
    let job = job("errors");
    let listener = KListener::bind(&job, 3).unwrap();
    assert_eq!(listener.address(), format!("@goal-kchain/{job}/3"));
    let e = KListener::bind(&job, 3).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    assert!(e.to_string().contains(&listener.address()), "{e}");
    let e = connect(&job, 4, 0, Duration::from_millis(30)).unwrap_err();
    assert!(
        e.to_string().contains(&format!("@goal-kchain/{job}/4"))
            && e.to_string().contains("rank 4"),
        "{e}"
    );
    let e = listener.accept(Duration::from_millis(30)).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    assert!(e.to_string().contains(&listener.address()), "{e}");
    // A rank connects and says so; a stranger that says something else is refused.
    let fd = connect(&job, 3, 7, CONNECT).unwrap();
    let (rank, accepted) = listener.accept(CONNECT).unwrap();
    assert_eq!(rank, 7);
    sys::send(fd.as_fd(), b"hi", 0).unwrap();
    assert_eq!(recv_within(accepted.as_fd(), &mut [0u8; 2], LIMIT), 2);
    let stranger = sys::seqpacket_socket().unwrap();
    sys::connect_abstract(stranger.as_fd(), format!("goal-kchain/{job}/3").as_bytes()).unwrap();
    sys::send(stranger.as_fd(), b"hello, I am rank 1", 0).unwrap();
    let e = listener.accept(CONNECT).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

#[test]
fn goal_io_uring_0_makes_probe_unavailable() {
    if child_role().as_deref() == Some("off") {
        let e = KRing::probe().err().expect("probe ignored GOAL_IO_URING=0");
        assert!(matches!(e, Unavailable::Disabled), "{e:?}");
        assert!(e.to_string().contains("GOAL_IO_URING=0"), "{e}");
        child_send("SAID", &e.to_string());
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "goal_io_uring_0_makes_probe_unavailable",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "off")
        .env("GOAL_IO_URING", "0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader stays open until the child exits: it still prints.
    let mut out = io::BufReader::new(child.stdout.take().unwrap());
    let said = recv_tagged(&mut out, "SAID");
    io::copy(&mut out, &mut io::sink()).unwrap();
    assert!(child.wait().unwrap().success());
    eprintln!("with GOAL_IO_URING=0: {said}");
}

/// A TCP channel (the kind made between ranks on different machines): the
/// hello arrives intact, a chain receives on one end of the stream and
/// forwards on the other, exactly as many bytes as asked, and the peer
/// closing the stream mid-message fails the receive rather than
/// forwarding a part.
#[test]
fn tcp_channels_carry_exact_messages_and_report_a_close() {
    if !available() {
        return;
    }
    use goal_transport::kchain::{tcp_channel_accept, tcp_channel_connect, tcp_channel_listener};
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let (l, port) = tcp_channel_listener(lo).unwrap();
    let hello = *b"a hello of 20 bytes.";
    let rx = tcp_channel_connect(SocketAddr::new(lo, port), &hello, CONNECT).unwrap();
    let (tx, got) = tcp_channel_accept(&l, hello.len(), CONNECT).unwrap();
    assert_eq!(got, hello);
    // Nobody else is let in afterwards: the listener is dropped.
    drop(l);
    assert!(std::net::TcpStream::connect_timeout(&SocketAddr::new(lo, port), CONNECT).is_err());

    // A chain on the receiving side: receive 1000 bytes, send them back.
    let (l2, port2) = tcp_channel_listener(lo).unwrap();
    let back_rx = tcp_channel_connect(SocketAddr::new(lo, port2), b"x", CONNECT).unwrap();
    let (back_tx, _) = tcp_channel_accept(&l2, 1, CONNECT).unwrap();
    let mut ring = kring();
    let mut buf = vec![0u8; 1000];
    let chain = [
        KOp {
            user_data: 1,
            kind: KOpKind::Recv { fd: rx.as_raw_fd(), buf: buf.as_mut_ptr(), len: 1000, sock: SockType::Stream },
            link: Link::Soft,
            quiet: true,
        },
        send(2, back_tx.as_fd(), &buf, Link::Soft),
    ];
    // SAFETY: `buf` and the sockets outlive the ring's operations (reaped below).
    unsafe { ring.submit_chain(&chain) }.unwrap();
    let msg: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    // In two parts, the second later: the receive waits for all of it.
    sys::send(tx.as_fd(), &msg[..300], libc::MSG_NOSIGNAL).unwrap();
    std::thread::sleep(LATER);
    sys::send(tx.as_fd(), &msg[300..], libc::MSG_NOSIGNAL).unwrap();
    assert_eq!(reap_n(&mut ring, 1, LIMIT), [(2, 1000)]);
    // (Not `recv_within`: on TCP its MSG_TRUNC discards the data.)
    let back = std::net::TcpStream::from(back_rx);
    back.set_read_timeout(Some(LIMIT)).unwrap();
    let mut echoed = vec![0u8; 1000];
    io::Read::read_exact(&mut &back, &mut echoed).unwrap();
    assert!(echoed == msg, "the chain forwarded other bytes than it received");

    // The sender goes away after 10 of 1000 bytes: the receive ends short
    // and the send behind it never happens.
    // SAFETY: as above.
    unsafe { ring.submit_chain(&chain) }.unwrap();
    sys::send(tx.as_fd(), &msg[..10], libc::MSG_NOSIGNAL).unwrap();
    drop(tx);
    assert_eq!(reap_n(&mut ring, 2, LIMIT), [(1, 10), (2, ECANCELED)]);
}
