//! Kernel chains: sends, receives and futex operations linked in io_uring,
//! which the kernel carries forward while the process sleeps or computes.
//!
//! A chain such as "receive from the left neighbour, then forward the same
//! buffer to the right one" needs no decision from user space between its
//! steps. Submitted once as linked io_uring operations ([`KRing::submit_chain`]),
//! it runs to its end inside the kernel: no polling thread, no wake-up of a
//! helper, no progress call. This module is the transport-level building
//! block; which parts of a schedule become chains is decided above it.
//!
//! # What the kernel does, and what this module relies on
//!
//! Measured on Linux 6.18 (`examples/kchain_hop.rs` and `tests/kchain.rs`):
//!
//! * **Default ring mode.** A socket operation that cannot complete at once
//!   arms a poll on the socket. When the data arrives, the rest of the
//!   operation runs as *task work* of the thread that submitted it, notified
//!   like a signal: a thread computing in user space is interrupted for a
//!   few microseconds, a thread sleeping in any system call is woken, runs
//!   the work, and goes back to sleep (`nanosleep` and `poll` are restarted,
//!   not failed with `EINTR`). The next linked operation is issued right
//!   there. A token forwarded around a ring of two processes (two cores)
//!   by RECV→SEND chains takes 27 µs per hop with every process sleeping in
//!   `nanosleep` and 13 µs with every process computing, against 26 µs when
//!   each process forwards it itself from a blocking `recv`. With more
//!   computing processes than cores a hop waits until the receiving
//!   process is scheduled: 2.7 ms with three on two cores. The rings are
//!   therefore made with plain `io_uring_setup`: `IORING_SETUP_DEFER_TASKRUN`
//!   would hold the task work until the thread enters io_uring, and
//!   `IORING_SETUP_COOP_TASKRUN` would delay it to the thread's next tick
//!   (4 ms) while it computes.
//! * **The submitting thread carries the chain.** Its task work runs only in
//!   that thread; once the thread has exited, its operations complete with
//!   `-ECANCELED` where they would have progressed. Keep a [`KRing`] on a
//!   thread that outlives its chains.
//! * **Links form within one submission.** An unterminated link at the end
//!   of an `io_uring_enter` is cut there: a chain split over two
//!   submissions runs as two independent chains at once. So a chain is
//!   always submitted whole, and one longer than the submission queue is
//!   refused ([`KRing::max_chain`]).
//! * **Failure and links.** After [`Link::Soft`] (`IOSQE_IO_LINK`) the next
//!   operation starts only if this one succeeded; otherwise every later one
//!   completes with `-ECANCELED`. After [`Link::Hard`]
//!   (`IOSQE_IO_HARDLINK`) it starts whatever the result. A receive fails
//!   on an error, on the peer closing the connection and on any message
//!   that is not exactly the expected length (below); a futex wait fails
//!   with `-EAGAIN` when the word no longer holds the expected value at
//!   the moment the wait is *issued*, that is when its predecessor completes.
//! * **Cancellation.** [`KRing::cancel`] finds only operations that have
//!   been issued: one still waiting behind an unfinished predecessor is not
//!   found, so a chain is stopped by cancelling its current operation.
//!   Cancelling a receive or send completes it with `-ECANCELED` and fails
//!   its link. Cancelling a **futex wait does not fail its link**: the
//!   kernel completes the wait with `-ECANCELED` but issues the next
//!   operation as if the wait had ended, even after a soft link.
//! * **File descriptors are looked up when an operation is issued**, so a
//!   linked operation uses the descriptor number as it stands when its
//!   predecessor completes.
//!
//! # Receives and their completions
//!
//! Every operation transfers exactly its length or fails its link, so that
//! a chain never forwards a buffer that was not filled. Sends use
//! `MSG_WAITALL | MSG_NOSIGNAL` (a stream send is retried until complete; a
//! peer that is gone gives `-EPIPE`, never `SIGPIPE`). Receives use
//! `MSG_WAITALL`, and on a message socket ([`SockType::Seqpacket`]) also
//! `MSG_TRUNC`, so that the result is the message's real length. For a
//! receive of `len` bytes on a `SOCK_SEQPACKET` socket the result is:
//!
//! | the peer sends | result | link |
//! |---|---|---|
//! | one message of `len` bytes | `len` | continues |
//! | a message longer than `len` | its real length (`> len`); the buffer holds its first `len` bytes, the rest is discarded | fails |
//! | nothing, and closes (or dies) | `0` | fails |
//! | a message shorter than `len` | nothing yet: io_uring treats `MSG_WAITALL` as "fill the buffer" and receives the *next* message into the rest of it; the result is the sum, `len` if they fill it exactly | fails only if the sum exceeds `len` or the peer closes |
//! | an error | `-errno` | fails |
//!
//! So message boundaries are kept only when both ends agree on every
//! message's length, which a compiled schedule guarantees; a longer message
//! is always caught. (Without `MSG_WAITALL` a short message completes with
//! its length but neither it nor the peer closing (`0`) fails the link, and
//! the chain would forward a stale buffer; without `MSG_TRUNC` an oversized
//! message completes with `len` and looks like a success.) On a stream
//! socket ([`SockType::Stream`]) a receive completes with `len`, or with
//! the bytes received before the peer closed (`< len`), failing the link.
//! `MSG_TRUNC` is never used there: on TCP it means "discard the data".
//!
//! # Socket buffers
//!
//! AF_UNIX charges a queued message to the *sender's* send buffer until the
//! receiver takes it (the receiver's `SO_RCVBUF` is not consulted, so it is
//! left alone). A message longer than `SO_SNDBUF - 32` bytes fails at once
//! with `-EMSGSIZE` ([`max_message`]); otherwise a send waits (in the
//! kernel, pausing its chain) while the messages already queued to that peer
//! are charged at `SO_SNDBUF` or more. Each is charged its length plus
//! overhead: 768 B for up to 64 B, 8.4 KiB for 4 KiB, 1.07 MiB for 1 MiB on
//! this kernel. A pause becomes a deadlock when two chains each wait to send
//! to the other before receiving, so every socket made here asks for the
//! largest send buffer the kernel grants (`net.core.wmem_max`, doubled by
//! the kernel: 416 KiB by default, 8 MiB here), which costs nothing until
//! used. The rule for callers: the unreceived messages that chains can queue
//! on one socket, counted with that overhead, must fit in [`max_message`] + 32.
//!
//! # Completions and the ring's descriptor
//!
//! An operation marked [`KOp::quiet`] (`IOSQE_CQE_SKIP_SUCCESS`) posts a
//! completion only when it fails: a long chain then wakes its waiter once,
//! at its end. When a quiet operation fails, the kernel cancels the rest of
//! its chain without posting their completions either; [`KRing::reap`]
//! reports them as `-ECANCELED` itself, so the caller sees every operation
//! end exactly once, as without quiet ones. Quiet operations must be
//! soft-linked and not last, and their `user_data` unique among those in
//! flight.
//!
//! [`KRing::reap`] reads the completion queue without a system call.
//! [`KRing::wait`] sleeps in the kernel until a completion or a timeout.
//! [`KRing::fd`] is readable (`POLLIN`, level-triggered) while completions
//! wait in the queue, so a waiter can `poll` it together with other
//! descriptors; this holds when the poller is the submitting thread itself,
//! whose task work interrupts and restarts the `poll`.
//!
//! # Local channels
//!
//! [`seqpacket_pair`] makes two connected sockets in one process. Processes
//! that do not share a parent find each other by name: rank `r` of job `j`
//! listens at the abstract address `@goal-kchain/j/r` ([`KListener`]), and a
//! peer [`connect`]s there, introducing itself with its rank in a first
//! message. Abstract addresses live in the network namespace, need no file
//! and vanish with the socket; both ends check that the other runs as the
//! same user.

use crate::dualwait::{io_uring_allowed, FUTEX2_SIZE_U32, MATCH_ANY};
use crate::sync::AtomicU32;
use crate::sys;
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// The `user_data` of the ring's own cancel requests; refused for the
/// caller's operations.
pub const RESERVED_USER_DATA: u64 = u64::MAX;

/// Marks the `user_data` of a quiet operation inside the ring, so that its
/// failure completion is not counted against [`KRing::in_flight`].
const QUIET_BIT: u64 = 1 << 63;

/// How long a submission refused by the kernel for a transient reason
/// (`EINTR`, `EAGAIN`, `EBUSY`) is retried before the error is returned.
const SUBMIT_PATIENCE: Duration = Duration::from_secs(1);

/// How long dropping a [`KRing`] waits for its cancelled operations.
const DROP_PATIENCE: Duration = Duration::from_secs(2);

/// Why kernel chains cannot be used here.
#[derive(Debug)]
pub enum Unavailable {
    /// `GOAL_IO_URING=0` turned io_uring off.
    Disabled,
    /// The kernel refused a system call (`call`) that kernel chains need.
    Refused {
        /// The call that failed.
        call: &'static str,
        /// The kernel's answer.
        error: io::Error,
    },
    /// io_uring works but lacks these operations or features.
    Missing(Vec<&'static str>),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Disabled => write!(
                f,
                "kernel chains are unavailable because GOAL_IO_URING=0 turns io_uring off"
            ),
            Unavailable::Refused { call, error } => write!(
                f,
                "kernel chains are unavailable because {call} failed ({error}): \
                 io_uring is missing or forbidden here (sysctl kernel.io_uring_disabled, seccomp)"
            ),
            Unavailable::Missing(what) => write!(
                f,
                "kernel chains are unavailable because this kernel's io_uring lacks {} \
                 (Linux 6.7 or later has everything they use)",
                what.join(", ")
            ),
        }
    }
}

impl std::error::Error for Unavailable {}

/// How an operation is tied to the one after it in a chain. The last
/// operation's link is not used: the chain ends there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// The next operation starts only if this one succeeds; otherwise it and
    /// all later ones complete with `-ECANCELED` (`IOSQE_IO_LINK`).
    Soft,
    /// The next operation starts when this one completes, whatever the
    /// result (`IOSQE_IO_HARDLINK`): for a futex wait whose word may already
    /// have changed (`-EAGAIN`) before the wait was issued.
    Hard,
}

/// The kind of socket a receive reads from, which decides how a message
/// that does not fit shows (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockType {
    /// `SOCK_SEQPACKET`: a message of exactly `len` bytes; a longer one
    /// completes with its real length and fails the link, a shorter one is
    /// topped up from the next message.
    Seqpacket,
    /// `SOCK_STREAM` (TCP, or AF_UNIX streams): exactly `len` bytes of the stream.
    Stream,
}

impl SockType {
    fn recv_flags(self) -> i32 {
        match self {
            SockType::Seqpacket => libc::MSG_WAITALL | libc::MSG_TRUNC,
            SockType::Stream => libc::MSG_WAITALL,
        }
    }
}

/// What one operation of a chain does.
#[derive(Debug, Clone, Copy)]
pub enum KOpKind {
    /// Sends `len` bytes from `buf` on the connected socket `fd`; completes
    /// with `len`, or `-errno`.
    Send {
        /// A connected socket.
        fd: RawFd,
        /// The bytes to send.
        buf: *const u8,
        /// How many.
        len: u32,
    },
    /// Receives exactly `len` bytes into `buf` from the connected socket
    /// `fd`; the result is described in the module documentation.
    Recv {
        /// A connected socket.
        fd: RawFd,
        /// Where the bytes go.
        buf: *mut u8,
        /// How many are expected.
        len: u32,
        /// The kind of socket `fd` is.
        sock: SockType,
    },
    /// If `*word == val` when the wait is issued, sleeps until a wake-up on
    /// `word` and completes with 0; otherwise completes at once with
    /// `-EAGAIN`. A store to the word without a wake-up does not end it.
    FutexWait {
        /// The futex word (shared memory if another process wakes it).
        word: *const AtomicU32,
        /// The value to sleep on.
        val: u32,
    },
    /// Wakes up to `count` sleepers on `word` (`i32::MAX` or more: all of
    /// them); completes with the number woken.
    FutexWake {
        /// The futex word.
        word: *const AtomicU32,
        /// At most how many to wake.
        count: u32,
    },
}

/// One operation of a chain.
#[derive(Debug, Clone, Copy)]
pub struct KOp {
    /// Comes back with the operation's result from [`KRing::reap`]; any value
    /// but [`RESERVED_USER_DATA`].
    pub user_data: u64,
    /// What it does.
    pub kind: KOpKind,
    /// How it is tied to the next operation of the chain.
    pub link: Link,
    /// Posts a completion only if it fails (`IOSQE_CQE_SKIP_SUCCESS`): its
    /// success is implied by the completion of a later operation of the
    /// same chain, which therefore cannot be quiet itself. Spares the
    /// waiter a wake-up per step of a long chain.
    pub quiet: bool,
}

impl KOp {
    /// The submission entry, linked to the next one if `linked`.
    fn entry(&self, linked: bool) -> squeue::Entry {
        let entry = match self.kind {
            KOpKind::Send { fd, buf, len } => opcode::Send::new(types::Fd(fd), buf, len)
                .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
                .build(),
            KOpKind::Recv { fd, buf, len, sock } => opcode::Recv::new(types::Fd(fd), buf, len)
                .flags(sock.recv_flags())
                .build(),
            // `AtomicU32` has the layout of `u32`.
            KOpKind::FutexWait { word, val } => {
                opcode::FutexWait::new(word.cast(), val.into(), MATCH_ANY, FUTEX2_SIZE_U32).build()
            }
            // The kernel reads the count as an `int`: `u32::MAX` would wake one.
            KOpKind::FutexWake { word, count } => opcode::FutexWake::new(
                word.cast(),
                count.min(i32::MAX as u32).into(),
                MATCH_ANY,
                FUTEX2_SIZE_U32,
            )
            .build(),
        }
        .user_data(if self.quiet {
            self.user_data | QUIET_BIT
        } else {
            self.user_data
        });
        let entry = if self.quiet {
            entry.flags(squeue::Flags::SKIP_SUCCESS)
        } else {
            entry
        };
        match (linked, self.link) {
            (false, _) => entry,
            (true, Link::Soft) => entry.flags(squeue::Flags::IO_LINK),
            (true, Link::Hard) => entry.flags(squeue::Flags::IO_HARDLINK),
        }
    }
}

/// One io_uring instance in the default mode, whose chains the kernel runs
/// in the thread that submitted them.
///
/// Dropping it cancels every operation still in flight and waits (up to two
/// seconds) for their completions, so that nothing the kernel holds refers
/// to the caller's memory afterwards.
pub struct KRing {
    ring: IoUring,
    /// The caller's loud operations queued or submitted whose completions
    /// have not been reaped yet (each posts exactly one completion; quiet
    /// ones post only on failure, before the loud one that ends their chain).
    in_flight: usize,
    /// The same for the ring's own cancel requests.
    cancels: usize,
    /// Scratch space for the entries of one chain, kept to avoid an
    /// allocation per submission.
    entries: Vec<squeue::Entry>,
    /// Per quiet operation in flight: the operations after it in its chain
    /// (`user_data`, quiet). When a quiet operation fails after a soft
    /// link, the kernel cancels the rest of its chain *without* posting
    /// their completions; [`KRing::reap`] reports them from here.
    quiet_rest: HashMap<u64, Vec<(u64, bool)>>,
    /// Per chain with quiet operations, by its last operation: those quiet
    /// operations, forgotten when the chain ends.
    quiet_of_chain: HashMap<u64, Vec<u64>>,
}

impl KRing {
    /// Submission queue entries of a ring made by [`KRing::probe`]: the
    /// longest chain it takes.
    pub const DEFAULT_ENTRIES: u32 = 256;

    /// A ring of [`KRing::DEFAULT_ENTRIES`], if io_uring is allowed
    /// (`GOAL_IO_URING` is not `0`), works, and has every operation kernel
    /// chains use.
    pub fn probe() -> Result<KRing, Unavailable> {
        KRing::with_entries(KRing::DEFAULT_ENTRIES)
    }

    /// [`KRing::probe`] with a submission queue of `entries` (1 to 32768,
    /// rounded up to a power of two: chains up to that long), and twice as
    /// many completions.
    pub fn with_entries(entries: u32) -> Result<KRing, Unavailable> {
        if !io_uring_allowed() {
            return Err(Unavailable::Disabled);
        }
        let mut ring = IoUring::new(entries).map_err(|error| Unavailable::Refused {
            call: "io_uring_setup",
            error,
        })?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|error| Unavailable::Refused {
                call: "IORING_REGISTER_PROBE",
                error,
            })?;
        let mut missing = Vec::new();
        for (code, name) in [
            (opcode::Nop::CODE, "IORING_OP_NOP"),
            (opcode::Send::CODE, "IORING_OP_SEND"),
            (opcode::Recv::CODE, "IORING_OP_RECV"),
            (opcode::FutexWait::CODE, "IORING_OP_FUTEX_WAIT"),
            (opcode::FutexWake::CODE, "IORING_OP_FUTEX_WAKE"),
            (opcode::AsyncCancel2::CODE, "IORING_OP_ASYNC_CANCEL"),
        ] {
            if !probe.is_supported(code) {
                missing.push(name);
            }
        }
        let params = ring.params();
        if !params.is_feature_nodrop() {
            missing.push("IORING_FEAT_NODROP");
        }
        if !params.is_feature_ext_arg() {
            missing.push("IORING_FEAT_EXT_ARG");
        }
        if !params.is_feature_skip_cqe_on_success() {
            missing.push("IORING_FEAT_CQE_SKIP");
        }
        if !missing.is_empty() {
            return Err(Unavailable::Missing(missing));
        }
        // One round trip, in case the kernel (or a seccomp filter) allows
        // setting a ring up but not entering it.
        let nop = opcode::Nop::new().build().user_data(RESERVED_USER_DATA);
        // SAFETY: a no-op refers to no memory.
        unsafe { ring.submission().push(&nop) }.expect("a new ring has room for one entry");
        ring.submit_and_wait(1)
            .map_err(|error| Unavailable::Refused {
                call: "io_uring_enter",
                error,
            })?;
        ring.completion().for_each(drop);
        Ok(KRing {
            ring,
            in_flight: 0,
            cancels: 0,
            entries: Vec::new(),
            quiet_rest: HashMap::new(),
            quiet_of_chain: HashMap::new(),
        })
    }

    /// The longest chain [`KRing::submit_chain`] takes (the submission
    /// queue's size).
    pub fn max_chain(&self) -> usize {
        self.ring.params().sq_entries() as usize
    }

    /// How many of the caller's operations have been submitted and not yet
    /// reaped.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Submits `ops` as one chain, each linked to the next as its
    /// [`KOp::link`] says, and returns once the kernel has them (the first
    /// is then issued; the others follow as their predecessors complete).
    /// An empty chain is a no-op.
    ///
    /// Fails without submitting anything if the chain is longer than
    /// [`KRing::max_chain`] (`InvalidInput`: io_uring cannot link across
    /// submissions, so a chain is never split), if an operation uses
    /// [`RESERVED_USER_DATA`] (`InvalidInput`), or if its completions might
    /// not fit in the completion queue next to those of the operations in
    /// flight (`WouldBlock`: reap first). Should the kernel keep refusing the
    /// submission after the chain was queued (it retries `EINTR`, `EAGAIN`
    /// and `EBUSY` for a second first), the error is returned and the chain
    /// stays queued, counted by [`KRing::in_flight`], to go with the ring's
    /// next system call.
    ///
    /// # Safety
    ///
    /// Until an operation's completion has been returned by [`KRing::reap`],
    /// or the ring has been dropped:
    ///
    /// 1. a `Send`'s `buf` must stay valid for reads of `len` bytes and
    ///    unchanged;
    /// 2. a `Recv`'s `buf` must stay valid for writes of `len` bytes, and
    ///    nothing else may read or write it: the kernel writes it at a time
    ///    of its choosing (a word that another process reads while a
    ///    receive writes it may be seen half-written);
    /// 3. a futex `word` must point to a live `AtomicU32` (in memory shared
    ///    with the processes that wait on it or wake it);
    /// 4. `fd` must stay open and refer to the same socket: a linked
    ///    operation looks its descriptor up only when it is issued.
    ///
    /// The ring must not be leaked (`mem::forget`) while operations are in
    /// flight.
    pub unsafe fn submit_chain(&mut self, ops: &[KOp]) -> io::Result<()> {
        let Some(last) = ops.len().checked_sub(1) else {
            return Ok(());
        };
        if ops.len() > self.max_chain() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a chain of {} operations is longer than the submission queue ({} entries); \
                     io_uring links only within one submission, so a chain cannot be split",
                    ops.len(),
                    self.max_chain()
                ),
            ));
        }
        if ops.iter().any(|op| op.user_data & QUIET_BIT != 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "user_data values from {QUIET_BIT:#x} up are reserved for the ring's own use"
                ),
            ));
        }
        if ops[last].quiet {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the last operation of a chain cannot be quiet: nothing would report the chain's end",
            ));
        }
        if ops.iter().any(|op| op.quiet && op.link == Link::Hard) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a quiet operation must be soft-linked (its failure then ends the chain)",
            ));
        }
        self.reserve_completions(ops.len())?;
        // A submission refused earlier may have left entries queued; they
        // go first, and if they cannot, nothing of this chain is queued.
        self.flush()?;
        self.entries.clear();
        self.entries
            .extend(ops.iter().enumerate().map(|(i, op)| op.entry(i < last)));
        // SAFETY: the caller keeps every buffer, word and descriptor of
        // `ops` valid until its completion is reaped or the ring dropped
        // (this function's contract); `push_multiple` queues all of the
        // chain or none of it.
        unsafe { self.ring.submission().push_multiple(&self.entries) }.map_err(|_| {
            io::Error::other("the submission queue is still occupied after a flush")
        })?;
        self.in_flight += ops.iter().filter(|op| !op.quiet).count();
        let quiet: Vec<u64> = ops
            .iter()
            .filter(|op| op.quiet)
            .map(|op| op.user_data)
            .collect();
        if !quiet.is_empty() {
            for (i, op) in ops.iter().enumerate().filter(|(_, op)| op.quiet) {
                let rest = ops[i + 1..]
                    .iter()
                    .map(|o| (o.user_data, o.quiet))
                    .collect();
                self.quiet_rest.insert(op.user_data, rest);
            }
            self.quiet_of_chain.insert(ops[last].user_data, quiet);
        }
        self.flush()
    }

    /// Moves the completions that are ready to `out` as `(user_data,
    /// result)`, without a system call; returns how many. A negative result
    /// is `-errno`.
    pub fn reap(&mut self, out: &mut Vec<(u64, i32)>) -> usize {
        let before = out.len();
        for cqe in self.ring.completion() {
            let ud = cqe.user_data();
            if ud == RESERVED_USER_DATA {
                self.cancels -= 1;
            } else if ud & QUIET_BIT != 0 {
                // A quiet operation failed: the kernel cancelled the rest of
                // its chain silently; report those here.
                let ud = ud & !QUIET_BIT;
                out.push((ud, cqe.result()));
                let rest = self.quiet_rest.remove(&ud).unwrap_or_default();
                for &(next, quiet) in &rest {
                    out.push((next, -libc::ECANCELED));
                    if !quiet {
                        self.in_flight -= 1;
                    }
                }
                if let Some(&(end, _)) = rest.last() {
                    for q in self.quiet_of_chain.remove(&end).unwrap_or_default() {
                        self.quiet_rest.remove(&q);
                    }
                }
            } else {
                self.in_flight -= 1;
                out.push((ud, cqe.result()));
                if !self.quiet_of_chain.is_empty() {
                    for q in self.quiet_of_chain.remove(&ud).unwrap_or_default() {
                        self.quiet_rest.remove(&q);
                    }
                }
            }
        }
        out.len() - before
    }

    /// Sleeps in the kernel until at least one completion is ready to reap,
    /// `timeout` has passed, or a signal arrives. Returns at once if a
    /// completion is ready or none of the caller's operations is in flight.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        if self.in_flight == 0 || !self.ring.completion().is_empty() {
            return Ok(());
        }
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => Ok(()),
            Err(e) => Err(io::Error::new(e.kind(), format!("io_uring_enter: {e}"))),
        }
    }

    /// Asks the kernel to cancel every issued operation whose user_data is
    /// `user_data`. Each then completes with `-ECANCELED` through
    /// [`KRing::reap`] (or with its own result, had it finished first). An
    /// operation still waiting behind its predecessor is not found: cancel
    /// a chain through its current operation. A cancelled futex wait does
    /// not fail its link (module documentation).
    pub fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        // A quiet operation carries the quiet bit inside the ring.
        self.reserve_completions(2)?;
        self.push_cancel(types::CancelBuilder::user_data(user_data).all())?;
        self.push_cancel(types::CancelBuilder::user_data(user_data | QUIET_BIT).all())
    }

    /// The ring's descriptor: readable (`POLLIN`) while completions are
    /// ready to reap, for `poll`/`epoll` together with other descriptors.
    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the ring's descriptor stays open as long as the ring, which
        // the returned borrow cannot outlive.
        unsafe { BorrowedFd::borrow_raw(self.ring.as_raw_fd()) }
    }

    /// Fails with `WouldBlock` unless `n` more completions fit in the
    /// completion queue with those of every request in flight, so that it
    /// never overflows.
    fn reserve_completions(&self, n: usize) -> io::Result<()> {
        let capacity = self.ring.params().cq_entries() as usize;
        let busy = self.in_flight + self.cancels;
        if busy + n > capacity {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{busy} requests are in flight and the completion queue holds {capacity}: \
                     reap completions before submitting {n} more"
                ),
            ));
        }
        Ok(())
    }

    /// Submits a cancel request. It may overflow the completion queue (the
    /// kernel keeps the excess until there is room), which only the drop
    /// allows itself.
    fn push_cancel(&mut self, what: types::CancelBuilder) -> io::Result<()> {
        self.flush()?;
        let entry = opcode::AsyncCancel2::new(what)
            .build()
            .user_data(RESERVED_USER_DATA);
        // SAFETY: a cancel request refers to no memory, only to other
        // requests.
        unsafe { self.ring.submission().push(&entry) }.map_err(|_| {
            io::Error::other("the submission queue is still occupied after a flush")
        })?;
        self.cancels += 1;
        self.flush()
    }

    /// Hands every queued entry to the kernel, retrying transient refusals
    /// for up to [`SUBMIT_PATIENCE`]. On error some entries may still be queued.
    fn flush(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + SUBMIT_PATIENCE;
        while !self.ring.submission().is_empty() {
            match self.ring.submit() {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) && Instant::now() < deadline =>
                {
                    std::thread::yield_now()
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("io_uring_enter: {e}"))),
            }
        }
        Ok(())
    }
}

impl Drop for KRing {
    fn drop(&mut self) {
        let deadline = Instant::now() + DROP_PATIENCE;
        let mut sink = Vec::new();
        while self.in_flight + self.cancels > 0 && Instant::now() < deadline {
            // One cancel of everything at a time: an operation after a hard
            // link (or a futex wait) is issued when its predecessor is
            // cancelled, and the next round cancels it.
            if self.cancels == 0 && self.push_cancel(types::CancelBuilder::any().all()).is_err() {
                break;
            }
            let ts = types::Timespec::from(Duration::from_millis(50));
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            self.reap(&mut sink);
            sink.clear();
        }
    }
}

/// Two connected `SOCK_SEQPACKET` sockets (close-on-exec), with the send
/// buffers described in the module documentation.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = sys::seqpacket_pair()?;
    size_send_buffer(a.as_fd())?;
    size_send_buffer(b.as_fd())?;
    Ok((a, b))
}

/// Two connected `SOCK_SEQPACKET` sockets for messages in one direction,
/// from the first to the second: only the sending end gets the large send
/// buffer (AF_UNIX charges queued messages to the sender), which saves a
/// system call per channel.
pub fn seqpacket_channel() -> io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = sys::seqpacket_pair()?;
    size_send_buffer(a.as_fd())?;
    Ok((a, b))
}

/// The longest message a `SOCK_SEQPACKET` socket made here can send
/// (`SO_SNDBUF - 32`); a longer one fails with `EMSGSIZE`.
pub fn max_message(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let sndbuf = sys::socket_int(fd, libc::SO_SNDBUF)?;
    Ok((sndbuf as usize).saturating_sub(32))
}

/// Asks for the largest send buffer the kernel grants without privileges
/// (`net.core.wmem_max`, which the kernel doubles).
fn size_send_buffer(fd: BorrowedFd<'_>) -> io::Result<()> {
    sys::set_socket_int(fd, libc::SO_SNDBUF, i32::MAX)
        .map_err(|e| io::Error::new(e.kind(), format!("setsockopt(SO_SNDBUF): {e}")))
}

/// The first message on a connection: this magic, then the connecting
/// rank as a little-endian u64.
const HELLO_MAGIC: [u8; 8] = *b"goalkch1";
const HELLO_LEN: usize = 16;

/// The abstract address (without its leading NUL) of rank `rank` of `job`.
fn address_of(job: &str, rank: usize) -> String {
    format!("goal-kchain/{job}/{rank}")
}

/// `e` with `what` in front, keeping its kind.
fn context(what: impl fmt::Display, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Fails unless the process at the other end of `fd` runs as our user.
fn check_peer(fd: BorrowedFd<'_>, address: &str) -> io::Result<()> {
    let (theirs, ours) = (sys::peer_uid(fd)?, sys::geteuid());
    if theirs != ours {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the peer at @{address} runs as uid {theirs}, not as this job's uid {ours}"),
        ));
    }
    Ok(())
}

/// Sleeps until `fd` is readable or `deadline`; `what` names the wait in
/// the timeout error.
fn readable_by(fd: BorrowedFd<'_>, deadline: Instant, what: impl Fn() -> String) -> io::Result<()> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut pfd = [libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let ms = left.as_millis().min(i32::MAX as u128) as i32 + 1;
        if sys::poll(&mut pfd, ms)? > 0 {
            return Ok(());
        }
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, what()));
        }
    }
}

/// A socket listening at rank `rank`'s abstract address of a job, where the
/// job's other ranks [`connect`].
#[derive(Debug)]
pub struct KListener {
    fd: OwnedFd,
    address: String,
}

impl KListener {
    /// Listens at `@goal-kchain/<job>/<rank>`. `job` should be unique to the
    /// job (derived from its secret, say): two jobs with the same string on
    /// one machine would meet each other's ranks.
    pub fn bind(job: &str, rank: usize) -> io::Result<KListener> {
        let address = address_of(job, rank);
        let fd = sys::seqpacket_socket()?;
        sys::bind_abstract(fd.as_fd(), address.as_bytes()).map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::AddrInUse {
                " (another process holds it: a second copy of this rank, or another job with the same name)"
            } else {
                ""
            };
            context(format_args!("bind @{address}{hint}"), e)
        })?;
        sys::listen(fd.as_fd(), libc::SOMAXCONN)
            .map_err(|e| context(format_args!("listen on @{address}"), e))?;
        Ok(KListener { fd, address })
    }

    /// The address, as `ss -x` prints it (`@goal-kchain/<job>/<rank>`).
    pub fn address(&self) -> String {
        format!("@{}", self.address)
    }

    /// The next rank to connect, and its socket; waits at most `timeout`.
    pub fn accept(&self, timeout: Duration) -> io::Result<(usize, OwnedFd)> {
        let address = &self.address;
        let deadline = Instant::now() + timeout;
        readable_by(self.fd.as_fd(), deadline, || {
            format!("no rank connected to @{address} within {timeout:?}")
        })?;
        let fd = sys::accept(self.fd.as_fd())
            .map_err(|e| context(format_args!("accept on @{address}"), e))?;
        check_peer(fd.as_fd(), address)?;
        readable_by(fd.as_fd(), deadline, || {
            format!("a connection to @{address} did not say which rank it is within {timeout:?}")
        })?;
        let mut hello = [0u8; HELLO_LEN];
        let n = sys::recv(fd.as_fd(), &mut hello, libc::MSG_TRUNC)
            .map_err(|e| context(format_args!("receive a hello on @{address}"), e))?;
        if n != HELLO_LEN || hello[..8] != HELLO_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a connection to @{address} sent {n} bytes that do not name a goal rank \
                     (a stranger, or a different goal version)"
                ),
            ));
        }
        size_send_buffer(fd.as_fd())?;
        let rank = u64::from_le_bytes(hello[8..].try_into().expect("8 bytes"));
        Ok((rank as usize, fd))
    }
}

/// Connects rank `me` of `job` to rank `to`'s [`KListener`], retrying for up
/// to `timeout` while nobody listens there yet, and introduces itself.
pub fn connect(job: &str, to: usize, me: usize, timeout: Duration) -> io::Result<OwnedFd> {
    let address = address_of(job, to);
    let deadline = Instant::now() + timeout;
    let fd = loop {
        let fd = sys::seqpacket_socket()?;
        match sys::connect_abstract(fd.as_fd(), address.as_bytes()) {
            Ok(()) => break fd,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => {
                let hint = if e.kind() == io::ErrorKind::ConnectionRefused {
                    format!(" after {timeout:?}: nobody listens there (is rank {to} running?)")
                } else {
                    String::new()
                };
                return Err(context(format_args!("connect to @{address}{hint}"), e));
            }
        }
    };
    check_peer(fd.as_fd(), &address)?;
    size_send_buffer(fd.as_fd())?;
    let mut hello = [0u8; HELLO_LEN];
    hello[..8].copy_from_slice(&HELLO_MAGIC);
    hello[8..].copy_from_slice(&(me as u64).to_le_bytes());
    sys::send(fd.as_fd(), &hello, libc::MSG_NOSIGNAL)
        .map_err(|e| context(format_args!("send a hello to @{address}"), e))?;
    Ok(fd)
}

// ---------------------------------------------------------------------------
// TCP channels, between ranks on different machines
// ---------------------------------------------------------------------------

/// A listening TCP socket for one channel from a rank on another machine:
/// the unspecified address of `ip`'s family, a port the kernel picks. The
/// receiver [`tcp_channel_connect`]s to it and introduces itself with a
/// hello the caller defines and checks (the job secret's MAC, so that
/// nobody else can take the channel).
pub fn tcp_channel_listener(ip: IpAddr) -> io::Result<(TcpListener, u16)> {
    let any: IpAddr = if ip.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
    let l = TcpListener::bind(SocketAddr::new(any, 0)).map_err(|e| context("bind a TCP channel listener", e))?;
    let port = l.local_addr()?.port();
    l.set_nonblocking(true)?;
    Ok((l, port))
}

/// Connects to a [`tcp_channel_listener`] at `to` within `timeout` and
/// sends `hello`; the connection is the receiving end of the channel
/// (blocking, `TCP_NODELAY`).
pub fn tcp_channel_connect(to: SocketAddr, hello: &[u8], timeout: Duration) -> io::Result<OwnedFd> {
    let s = TcpStream::connect_timeout(&to, timeout).map_err(|e| context(format_args!("connect to the channel at {to}"), e))?;
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(timeout))?;
    (&s).write_all(hello).map_err(|e| context(format_args!("send the hello on the channel to {to}"), e))?;
    s.set_write_timeout(None)?;
    Ok(s.into())
}

/// Accepts the connection to `l` within `timeout` and reads its hello of
/// `hello_len` bytes; returns the sending end of the channel (blocking,
/// `TCP_NODELAY`) and the hello, which the caller must check.
pub fn tcp_channel_accept(l: &TcpListener, hello_len: usize, timeout: Duration) -> io::Result<(OwnedFd, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    readable_by(l.as_fd(), deadline, || format!("nobody connected to the channel listener within {timeout:?}"))?;
    let (s, from) = l.accept().map_err(|e| context("accept on a channel listener", e))?;
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))))?;
    let mut hello = vec![0u8; hello_len];
    (&s).read_exact(&mut hello).map_err(|e| context(format_args!("read the hello of the channel from {from}"), e))?;
    s.set_read_timeout(None)?;
    Ok((s.into(), hello))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_chain_longer_than_the_queue_and_the_reserved_user_data() {
        let mut ring = match KRing::with_entries(4) {
            Ok(ring) => ring,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let word = AtomicU32::new(0);
        let wake = |user_data| KOp {
            user_data,
            kind: KOpKind::FutexWake {
                word: &word,
                count: 1,
            },
            link: Link::Soft,
            quiet: false,
        };
        let long: Vec<KOp> = (0..5).map(wake).collect();
        // SAFETY: every op refers to `word`, which outlives the ring.
        let e = unsafe { ring.submit_chain(&long) }.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("cannot be split"), "{e}");
        // SAFETY: as above.
        let e = unsafe { ring.submit_chain(&[wake(RESERVED_USER_DATA)]) }.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert_eq!(ring.in_flight(), 0);
        // Four fit, and wake nobody.
        // SAFETY: as above.
        unsafe { ring.submit_chain(&long[..4]) }.unwrap();
        let mut got = Vec::new();
        while got.len() < 4 {
            ring.wait(Duration::from_secs(5)).unwrap();
            ring.reap(&mut got);
        }
        assert_eq!(got, [(0, 0), (1, 0), (2, 0), (3, 0)]);
    }

    #[test]
    fn keeps_the_completion_queue_from_overflowing() {
        let mut ring = match KRing::with_entries(4) {
            Ok(ring) => ring,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let word = AtomicU32::new(0);
        let wait = KOp {
            user_data: 1,
            kind: KOpKind::FutexWait {
                word: &word,
                val: 0,
            },
            link: Link::Soft,
            quiet: false,
        };
        // The completion queue holds 8: two chains of 4 waits fill it.
        // SAFETY: `word` outlives the ring, whose drop cancels the waits.
        unsafe { ring.submit_chain(&[wait; 4]) }.unwrap();
        // SAFETY: as above.
        unsafe { ring.submit_chain(&[wait; 4]) }.unwrap();
        // SAFETY: as above.
        let e = unsafe { ring.submit_chain(&[wait]) }.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        assert_eq!(ring.in_flight(), 8);
    }
}
