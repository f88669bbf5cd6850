//! Sleeping on the doorbell and on a file descriptor at the same time.
//!
//! A rank with peers on other machines hears from two kinds of sources: local
//! peers ring its doorbell (a futex word in shared memory), remote peers'
//! bytes make a socket readable. Neither `futex` nor `epoll` can wait for
//! the other, and a relay thread would add a context switch to every
//! wake-up. io_uring can: a `FUTEX_WAIT` (kernel 6.7 and later) and a
//! `POLL_ADD` on the transport's epoll descriptor are submitted together and
//! the thread sleeps until the first of them (or the timeout) completes; the
//! other is then cancelled, and both completions are reaped before
//! returning, so nothing refers to this stack frame afterwards.
//!
//! Each thread gets its own small ring, made on its first sleep. Where
//! io_uring is missing, disabled (`GOAL_IO_URING=0`) or lacks futex
//! waits, the sleep falls back to a futex wait of at most one millisecond
//! (the descriptor is then noticed that late), and this is said once on
//! stderr.

use crate::sync::AtomicU32;
use io_uring::{opcode, types, IoUring};
use std::cell::RefCell;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `FUTEX2_SIZE_U32`: the futex word is 32 bits (futex2 flags; no
/// `FUTEX2_PRIVATE`, since peers in other processes wake it).
pub(crate) const FUTEX2_SIZE_U32: u32 = 0x02;
/// `FUTEX_BITSET_MATCH_ANY`.
pub(crate) const MATCH_ANY: u64 = 0xffff_ffff;

const UD_FUTEX: u64 = 1;
const UD_POLL: u64 = 2;
const UD_CANCEL: u64 = 3;

thread_local! {
    /// This thread's ring: `None` until first used, `Some(None)` when io_uring is unusable.
    static RING: RefCell<Option<Option<IoUring>>> = const { RefCell::new(None) };
}

static SAID: AtomicBool = AtomicBool::new(false);

fn say_fallback(why: &str) {
    if !SAID.swap(true, Ordering::Relaxed) {
        // One write: the ranks of a job share the launcher's stderr, and
        // `eprintln!` writes a line in pieces.
        let line = format!("goal: io_uring cannot wait for the doorbell and the network together ({why}); sleeping in 1 ms steps instead\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    }
}

/// Whether io_uring may be used (`GOAL_IO_URING=0` turns it off).
pub fn io_uring_allowed() -> bool {
    std::env::var("GOAL_IO_URING").map_or(true, |v| v != "0")
}

/// Sleeps until `word` is no longer `token`, `fd` is readable, or `timeout`
/// has passed; spurious returns are allowed.
pub(crate) fn wait(word: &AtomicU32, token: u32, fd: RawFd, timeout: Duration) {
    let done = RING.with(|cell| {
        let mut cell = cell.borrow_mut();
        let ring = cell.get_or_insert_with(|| {
            if !io_uring_allowed() {
                say_fallback("GOAL_IO_URING=0");
                return None;
            }
            match IoUring::new(8) {
                Ok(r) => Some(r),
                Err(e) => {
                    say_fallback(&format!("io_uring_setup: {e}"));
                    None
                }
            }
        });
        let Some(r) = ring.as_mut() else { return false };
        match wait_ring(r, word, token, fd, timeout) {
            Ok(()) => true,
            Err(e) => {
                say_fallback(&e.to_string());
                *ring = None;
                false
            }
        }
    });
    if !done {
        let _ = crate::sys::futex_wait(word, token, Some(timeout.min(Duration::from_millis(1))));
    }
}

fn wait_ring(ring: &mut IoUring, word: &AtomicU32, token: u32, fd: RawFd, timeout: Duration) -> io::Result<()> {
    let futex = opcode::FutexWait::new(word.as_ptr() as *const u32, token as u64, MATCH_ANY, FUTEX2_SIZE_U32).build().user_data(UD_FUTEX);
    let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build().user_data(UD_POLL);
    // SAFETY: the entries refer to `word` (a live shared-memory atomic that
    // outlives this call: the caller holds its mapping) and to `fd`; both
    // operations complete (or are cancelled and complete) before this
    // function returns, below.
    unsafe {
        let mut sq = ring.submission();
        sq.push(&futex).map_err(|_| io::Error::other("submission queue full"))?;
        sq.push(&poll).map_err(|_| io::Error::other("submission queue full"))?;
    }
    let ts = types::Timespec::from(timeout);
    let args = types::SubmitArgs::new().timespec(&ts);
    match ring.submitter().submit_with_args(1, &args) {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::ETIME) || e.raw_os_error() == Some(libc::EINTR) => {}
        Err(e) => return Err(e),
    }
    // Reap: whichever finished first; cancel the rest; wait for both.
    let (mut futex_done, mut poll_done) = (false, false);
    let mut unsupported = None;
    let mut cancelled = false;
    loop {
        for cqe in ring.completion() {
            match cqe.user_data() {
                UD_FUTEX => {
                    futex_done = true;
                    let res = cqe.result();
                    if res == -libc::EINVAL || res == -libc::EOPNOTSUPP || res == -libc::ENOSYS {
                        unsupported = Some(io::Error::from_raw_os_error(-res));
                    }
                }
                UD_POLL => poll_done = true,
                _ => {}
            }
        }
        if futex_done && poll_done {
            break;
        }
        if !cancelled {
            cancelled = true;
            // Cancel both: the one that already finished answers ENOENT.
            for which in [UD_FUTEX, UD_POLL] {
                let cancel = opcode::AsyncCancel::new(which).build().user_data(UD_CANCEL);
                // SAFETY: a cancel entry refers to nothing but a user_data value.
                unsafe {
                    ring.submission().push(&cancel).map_err(|_| io::Error::other("submission queue full"))?;
                }
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    // Drop any cancel completions still queued.
    for _ in ring.completion() {}
    match unsupported {
        Some(e) => Err(io::Error::other(format!("IORING_OP_FUTEX_WAIT: {e}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn wakes_on_the_futex_on_the_descriptor_and_on_timeout() {
        let (rd, wr) = {
            let mut fds = [0; 2];
            // SAFETY: fds is a valid array of two ints.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            (fds[0], fds[1])
        };
        let word = Arc::new(AtomicU32::new(7));
        // timeout
        let t = Instant::now();
        wait(&word, 7, rd, Duration::from_millis(20));
        assert!(t.elapsed() >= Duration::from_millis(1));
        // futex
        let w2 = word.clone();
        let th = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            w2.store(8, Ordering::SeqCst);
            let _ = crate::sys::futex_wake(&w2, i32::MAX);
        });
        let t = Instant::now();
        wait(&word, 7, rd, Duration::from_secs(10));
        assert!(t.elapsed() < Duration::from_secs(5), "futex wake-up missed");
        th.join().unwrap();
        // descriptor
        let th = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: wr is an open pipe end; one byte from a live buffer.
            unsafe { libc::write(wr, b"x".as_ptr().cast(), 1) };
        });
        let t = Instant::now();
        wait(&word, 8, rd, Duration::from_secs(10));
        assert!(t.elapsed() < Duration::from_secs(5), "readable descriptor missed");
        th.join().unwrap();
        // SAFETY: closing the pipe ends made above.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
    }
}
