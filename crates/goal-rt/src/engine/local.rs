//! Local operations (copies and reductions) and computation (`calc`): small
//! copies at once, long ones in pieces with the engine moving messages in
//! the pauses, vector operations over lists of pieces.

use super::*;
use super::pieces::{operand, scatter, Bases};
use goal_sched::Op;

/// A local operation of at least twice this many bytes runs in pieces of
/// this size (some shorter copies in four, see [`LOCAL_PIECES_FROM`]), and
/// between pieces the engine moves what is waiting: arrived messages,
/// stream bytes, queued sends. Run whole, a gather's 4 MiB copy at the
/// root (some 120 us here) held the peers' next messages for its whole
/// length; in pieces the copy overlaps them (2 ranks, gather 1 MiB per
/// rank: 36-48 us whole, 29 us in pieces).
pub(super) const LOCAL_PIECE_BYTES: usize = 64 << 10;

/// Copies from this size on (up to twice [`LOCAL_PIECE_BYTES`]) run in four
/// pieces too while receives of their execution wait: a gather's root
/// copying its own 64 KiB block was done before its peer's request came,
/// and read the block after it (2 ranks, 64 KiB: 6.2-7.3 us); in pieces the
/// request finds it busy and the peer writes its block during the copy
/// (see [`Write`]).
pub(super) const LOCAL_PIECES_FROM: usize = 64 << 10;

/// Local copies up to this size are copied at once, without the general
/// path's checks (see [`copy_small`]).
pub(super) const SMALL_COPY: usize = 256;

impl Engine {
    /// A local operation (copy or reduction), run at once. Out of
    /// `start_op`, whose hot path for messages it would otherwise weigh
    /// down with its registers.
    #[inline(never)]
    pub(super) fn start_local(&mut self, r: OpRef, o: &OpRec) {
        // Borrowed, not cloned (the borrow ends before `finish`).
        let Some(e) = self.exec(r) else { return };
        let mut bytes = 0;
        let res = if o.kind() == OpKind::LocalVec {
            self.local_vec(r, &e.sched, o)
        } else {
            let l = e.sched.s.locals[o.addr as usize];
            // SAFETY: `l` is an operation of `r`'s execution, whose
            // bases are given.
            if unsafe { copy_small(&l, e.bufs.bases()) } {
                return self.finish(r);
            }
            bytes = (l.count as u64 * l.width as u64 / 8) as usize;
            // Below twice a piece, only a copy while receives of its
            // execution wait, which may let a peer write (see
            // `LOCAL_PIECES_FROM`); otherwise the pauses are only a cost (a
            // lone 64 KiB addition: 2.9-3.4 us whole, 3.8-3.9 in four pieces).
            let long = bytes >= 2 * LOCAL_PIECE_BYTES || (l.op() == ReduceOp::Copy && !e.bufs.posted.is_empty());
            if bytes >= LOCAL_PIECES_FROM && long && !self.state.in_pieces && !self.state.in_poll && l.op() != ReduceOp::Wtime {
                return self.local_in_pieces(r, l);
            }
            if bytes >= LONG_COPY_BYTES {
                // Wake the peers written to so far before a long copy
                // or reduction, not after it.
                self.link.flush();
            }
            let base = e.bufs.bases();
            let at = |i: u8, a: u64| operand(base, a, l.mem & (1 << i) != 0);
            // SAFETY: user buffers are valid for the operation's extent by the API
            // contract; scratchpad ranges were checked at compile time.
            unsafe { compute(&e.sched, l.op(), l.dt(), l.width, at(0, l.b1), at(1, l.b2), at(2, l.b3), l.count as usize) }
        };
        self.copied(bytes);
        self.local_done(r, res);
    }

    /// Local operation `r` has run (whole, in pieces, or fused with its
    /// receive): it finishes, or fails naming the element divided by zero.
    pub(super) fn local_done(&mut self, r: OpRef, res: Result<(), KernelError>) {
        match res {
            Ok(()) => self.finish(r),
            Err(KernelError::DivByZero(i)) => {
                let msg = format!("{}: integer division by zero at element {i}", self.describe(r));
                self.fail(r, Error::new(ErrorKind::DivByZero, msg));
            }
            Err(KernelError::UserPanic) => {
                let msg = format!("{}: the user operation's function panicked", self.describe(r));
                self.fail(r, Error::new(ErrorKind::System, msg));
            }
        }
    }

    /// A long local operation (see [`LOCAL_PIECE_BYTES`]), a piece at a
    /// time, moving messages in the pauses. Elements are independent, so
    /// the pieces in order compute what the whole would.
    pub(super) fn local_in_pieces(&mut self, r: OpRef, l: goal_sched::LocalRec) {
        self.link.flush();
        let esize = (l.width as usize / 8).max(1);
        let step = (l.count as usize * esize / 4).clamp(esize, LOCAL_PIECE_BYTES.max(esize)) / esize;
        let count = l.count as usize;
        let mut done = 0usize;
        self.state.in_pieces = true;
        let res = loop {
            // The execution may have failed in a pause (its buffers went back
            // to the pool): then there is nothing more to compute.
            let Some(e) = self.exec(r) else { break Ok(()) };
            let n = step.min(count - done);
            let base = e.bufs.bases();
            let off = done * esize;
            // SAFETY: `operand` resolves to the operation's buffers, valid for
            // `count` elements (API contract for user buffers, compile-time
            // checks for the scratchpad); `done + n <= count`.
            let at = |i: u8, a: u64| unsafe { operand(base, a, l.mem & (1 << i) != 0).add(off) };
            // SAFETY: as above, for elements `done..done + n`.
            let res = unsafe { compute(&e.sched, l.op(), l.dt(), l.width, at(0, l.b1), at(1, l.b2), at(2, l.b3), n) };
            match res {
                Err(KernelError::DivByZero(i)) => break Err(KernelError::DivByZero(done + i)),
                Err(err) => break Err(err),
                Ok(()) => {}
            }
            done += n;
            if done == count {
                break Ok(());
            }
            self.between_pieces();
        };
        self.state.in_pieces = false;
        self.copied(count * esize);
        if self.exec(r).is_none() {
            return;
        }
        self.local_done(r, res);
    }

    /// What a pause in a long local operation moves: arrived messages,
    /// stream bytes, sends waiting for ring space.
    pub(super) fn between_pieces(&mut self) {
        if self.link.net.is_some() || self.link.shm.pending() {
            self.poll_messages();
        }
        if self.state.streams_active > 0 {
            self.pump_transfers();
        }
        if !self.state.outq_peers.is_empty() {
            self.retry_outq();
        }
        self.drain_ready();
        self.link.flush();
    }

    pub(super) fn local_vec(&self, r: OpRef, sched: &SchedInner, o: &OpRec) -> Result<(), KernelError> {
        let s = &sched.s;
        let l = s.lvecs[o.addr as usize];
        let (op, dt) = (l.op(), l.dt());
        let base = self.exec(r).map_or(Bases::none(), |e| e.bufs.bases());
        let list = |i: usize| -> Vec<(*mut u8, usize)> {
            s.pieces_of(l.lists[i])
                .iter()
                .map(|p| (operand(base, p.addr, l.mem & (1 << i) != 0), p.len as usize))
                .collect()
        };
        let (a, b, c) = (list(0), list(1), list(2));
        if op == ReduceOp::Wtime {
            let mut t = localop::wtime().to_ne_bytes().to_vec();
            scatter(&mut t, &c);
            return Ok(());
        }
        let esize = l.width as usize / 8;
        // Walk the three lists in step, a run of whole elements at a time.
        let (mut ia, mut ib, mut ic) = (0usize, 0usize, 0usize);
        let (mut oa, mut ob, mut oc) = (0usize, 0usize, 0usize);
        let mut done = 0usize;
        while ic < c.len() {
            if c[ic].1 == oc {
                ic += 1;
                oc = 0;
                continue;
            }
            while ia < a.len() && a[ia].1 == oa {
                ia += 1;
                oa = 0;
            }
            if op.is_binary() {
                while ib < b.len() && b[ib].1 == ob {
                    ib += 1;
                    ob = 0;
                }
            }
            let mut run = (c[ic].1 - oc).min(a[ia].1 - oa);
            if op.is_binary() {
                run = run.min(b[ib].1 - ob);
            }
            let n = run / esize;
            // SAFETY: each pointer plus offset stays within its piece, which the
            // user guarantees valid; the compiler checked the lists' totals agree.
            unsafe {
                let pb = if op.is_binary() { b[ib].0.add(ob) } else { a[ia].0.add(oa) };
                compute(sched, op, dt, l.width, a[ia].0.add(oa), pb, c[ic].0.add(oc), n).map_err(|e| match e {
                    KernelError::DivByZero(i) => KernelError::DivByZero(done + i),
                    e => e,
                })?;
            }
            done += n;
            oa += run;
            oc += run;
            if op.is_binary() {
                ob += run;
            }
        }
        Ok(())
    }

}

/// `r = a op b` for `n` elements of `dt`/`width` bits: goal's kernels for
/// a built-in operator, the application's function for a user operator.
///
/// # Safety
/// As for [`localop::apply`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn compute(
    sched: &SchedInner,
    op: Op,
    dt: goal_sched::DataType,
    width: u32,
    a: *const u8,
    b: *const u8,
    r: *mut u8,
    n: usize,
) -> Result<(), KernelError> {
    match op {
        // SAFETY: forwarded from the caller's guarantees.
        Op::Builtin(o) => unsafe { localop::apply(o, dt, width, a, b, r, n) },
        // SAFETY: forwarded; `apply` hands the function unaliased slices.
        Op::User(u) => unsafe { crate::userop::apply(sched.user_fn(u), width as usize / 8, a, b, r, n) },
    }
}

/// Whether `l` is a `Copy` of at most [`SMALL_COPY`] bytes.
#[inline(always)]
pub(super) fn is_small_copy(l: &goal_sched::LocalRec) -> bool {
    l.op() == ReduceOp::Copy && l.count as usize * l.width as usize / 8 <= SMALL_COPY
}

/// Copies `l` at once if it is a `Copy` of at most [`SMALL_COPY`] bytes;
/// whether it did. The general path (`start_op`'s dispatch, the checks for
/// long operations, the operator's and type's) cost a copy of 8 bytes more
/// than the copy (2 ranks, 8 B, five alternations: allgather 0.51 -> 0.43
/// us, scatter 0.40 -> 0.33).
///
/// # Safety
/// `l` is an operation of an execution whose relative addresses resolve
/// against `base`.
#[inline(always)]
pub(super) unsafe fn copy_small(l: &goal_sched::LocalRec, base: Bases) -> bool {
    if !is_small_copy(l) {
        return false;
    }
    let bytes = l.count as usize * l.width as usize / 8;
    let (from, to) = (operand(base, l.b1, l.mem & 1 != 0), operand(base, l.b3, l.mem & 4 != 0));
    // SAFETY: user buffers are valid for the operation's extent by the API
    // contract, scratchpad ranges were checked at compile time (against
    // `base`, the caller's); a copy's result may be its operand exactly
    // (`move_bytes` allows it, as `ptr::copy`).
    unsafe { goal_transport::move_bytes(from as *const u8, to, bytes) };
    true
}
