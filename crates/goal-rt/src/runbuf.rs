//! Run-time buffers: a schedule that leaves some of its buffers open, to be
//! given by each run.
//!
//! A schedule binds its buffers when it is compiled, so code that reduces a
//! different array each time (MPI's non-persistent `MPI_Iallreduce`, a
//! Python list of arrays) would have to compile per call. Instead, a graph
//! may place operands in *run-time buffers* (`goal_sched::MemType::Run`, or
//! a user address from `goal_sched::run_addr`): the compiled schedule
//! records how many bytes of each it uses (`Schedule::run`), and every run
//! gives their addresses ([`Runtime::run_with`]). Ranks agree on sizes only:
//! each rank's buffers may lie anywhere, and differ from run to run.
//!
//! The engine keeps one table of bases per execution (its scratchpad and
//! its run-time buffers; `engine::pieces::Bases`) and resolves every
//! relative address against it when the operation starts, so what reads a
//! buffer's address (an eager or rendezvous send, the single-copy paths,
//! whose offers carry the address the sender resolved, the shared-heap
//! test, the kernel mode's submissions) sees the execution's own buffer.

use crate::{Error, ErrorKind, Handle, Result, Runtime, Schedule};
use goal_sched::RUN_SLOTS;
use std::sync::Arc;

impl Runtime {
    /// Starts one execution of `s` whose run-time buffer `i` is `bufs[i]`
    /// (address, bytes). A schedule with all its buffers takes any `bufs`
    /// (none used); buffers past those the schedule has are ignored.
    ///
    /// Fails, starting nothing, when `bufs` holds fewer buffers than the
    /// schedule has, or one smaller than the schedule uses of it (or NULL
    /// where it uses bytes): the message names the buffer, its size and the
    /// schedule's needs.
    ///
    /// # Safety
    /// As [`run`](Self::run): every buffer the schedule names, and each of
    /// `bufs` for its given length, must stay valid (and unaliased by Rust
    /// references while written) until the execution has finished.
    pub unsafe fn run_with(self: &Arc<Self>, s: &Schedule, bufs: &[(*mut u8, usize)]) -> Result<Handle> {
        let need = &s.compiled().run;
        check(s.id(), need, bufs)?;
        let mut run = [0usize; RUN_SLOTS];
        for (r, b) in run.iter_mut().zip(bufs) {
            *r = b.0 as usize;
        }
        // SAFETY: forwarded caller guarantee; each buffer holds what the
        // schedule uses of it (checked above).
        unsafe { self.start_run(s, &run[..need.len()]) }
    }
}

/// Why `s`, which has run-time buffers, cannot be started without them.
pub(crate) fn left_open(s: &Schedule) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{}: give them with each run (GOAL_RunWith)", needs(s.id(), &s.compiled().run)))
}

/// "schedule 3 takes 2 run-time buffers (0: 64 bytes, 1: 128 bytes)".
fn needs(id: u32, need: &[u64]) -> String {
    let each: Vec<String> = need.iter().enumerate().map(|(i, n)| format!("{i}: {n} bytes")).collect();
    let s = if need.len() == 1 { "" } else { "s" };
    format!("schedule {id} takes {} run-time buffer{s} ({})", need.len(), each.join(", "))
}

/// Whether `bufs` gives schedule `id` the run-time buffers `need` says.
fn check(id: u32, need: &[u64], bufs: &[(*mut u8, usize)]) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if bufs.len() < need.len() {
        return bad(format!("{}; {} given", needs(id, need), bufs.len()));
    }
    for (i, (&n, &(p, len))) in need.iter().zip(bufs).enumerate() {
        if (len as u64) < n {
            return bad(format!("run-time buffer {i} holds {len} bytes, fewer than the {n} the schedule uses of it; {}", needs(id, need)));
        }
        if p.is_null() && n > 0 {
            return bad(format!("run-time buffer {i} is NULL; {}", needs(id, need)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(need: &[u64], bufs: &[(*mut u8, usize)]) -> String {
        check(7, need, bufs).err().map(|e| e.message).unwrap_or_default()
    }

    #[test]
    fn too_few_too_small_or_null_buffers_are_refused_naming_the_needs() {
        let mut a = [0u8; 64];
        let p = a.as_mut_ptr();
        assert_eq!(msg(&[64, 8], &[(p, 64)]), "schedule 7 takes 2 run-time buffers (0: 64 bytes, 1: 8 bytes); 1 given");
        assert_eq!(
            msg(&[64, 8], &[(p, 64), (p, 4)]),
            "run-time buffer 1 holds 4 bytes, fewer than the 8 the schedule uses of it; schedule 7 takes 2 run-time buffers (0: 64 bytes, 1: 8 bytes)"
        );
        assert_eq!(msg(&[16], &[(std::ptr::null_mut(), 16)]), "run-time buffer 0 is NULL; schedule 7 takes 1 run-time buffer (0: 16 bytes)");
        // enough: extra buffers, larger ones, NULL where nothing is used
        assert!(check(7, &[0, 8], &[(std::ptr::null_mut(), 0), (p, 64), (p, 1)]).is_ok());
        assert!(check(7, &[], &[]).is_ok());
    }
}
