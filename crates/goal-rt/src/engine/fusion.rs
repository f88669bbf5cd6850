//! Fused receives: a receive whose only use is a reduction into a buffer is
//! combined as its bytes come out of the stream, a chunk at a time through
//! a buffer that stays in the cache, or, an eager message that finds its
//! receive posted, straight from the ring by the poll, instead of being
//! copied and then reduced (see `crate::fuse` for which receives qualify).

use super::*;
use super::pieces::{operand, Bases};

/// A fused receive (see [`fuse`]) copies its message out of the stream this
/// much at a time into a buffer that stays in the cache, and combines it
/// from there.
pub(super) const FUSE_CHUNK: usize = 16 << 10;

/// From this size a receive that could be combined as it comes (see
/// [`fuse`]) answers an offer of Cross Memory Attach with a CTS that asks
/// for the stream, for this message only: there the sender's copy into the
/// stream overlaps the receiver's combining, where by CMA the receiver
/// alone reads, then combines (2 ranks, reduce 1 MiB: 87-112 us fused
/// through the stream, 154 us by CMA). Below it the data stays in the
/// cache between the read and the operation, and CMA's early FIN frees
/// the sender sooner (256 KiB: 16 us for the sender, 20 for the root).
///
/// Unless the stream measures slower: with this VM's two vCPUs placed
/// apart by the host (a cache line passing in 200-300 ns instead of 27)
/// every line of the stream crosses that distance, and 2 ranks' reduce
/// of 1 MiB took 410-437 us fused through it, where it takes 46-54 with
/// the vCPUs close and Open MPI's blocking reduce, by CMA, 89-93 in either
/// placement. So each such receive chooses, per peer, between the fused
/// stream (timed from its match to its last combine) and a CMA read
/// (timed as the read alone, the combine after it untimed) with the
/// chooser of `adapt` (`Engine::fuse_paths`), the stream as the
/// calibrated path, left only for a CMA [`FUSE_MARGIN`] times faster.
pub(super) const FUSE_CMA_MAX: usize = 512 << 10;

/// Eager messages from this size are combined straight from the ring when
/// their receive may be fused (see [`st_fuse_inline`]). Below it the copy
/// saved is a few cache lines, and 2-rank reduce, allreduce and
/// reduce_scatter_block of 8 B took 1.07-1.10x as long fused (medians of
/// ten alternations), where from 4 KiB they took 0.76-0.91x
/// (docs/measurements/fused-eager-2026-12-06).
pub(super) const FUSE_EAGER_MIN: usize = 4 << 10;

/// The stream is left for a fused receive's CMA read only where the read
/// alone measures this many times faster per byte than the fused stream.
/// With the vCPUs close, the 512 KiB halves of a 2-rank allreduce of
/// 1 MiB measured 0.08-0.12 ns per byte fused and 0.08-0.12 read (the
/// combine not counted), and at 1.25 (`adapt`'s margin) half the runs
/// took CMA and ran at 85 us where the fused stream runs at 67; apart, a
/// reduce of 1 MiB measured 4 times faster by CMA.
pub(super) const FUSE_MARGIN: f64 = 3.0;

impl Engine {
    /// Whether receive `r`, a message of `len` bytes, is combined with its
    /// local operation as it comes (see [`fuse`]): planned so, filled
    /// exactly, and the operation waits for nothing else. The operation's
    /// counter is raised so that the receive's completion does not start
    /// it again; [`fused_done`](Self::fused_done) finishes it.
    pub(super) fn fusion(&mut self, r: OpRef, len: usize) -> Option<Box<Fused>> {
        let e = self.exec_mut(r)?;
        let (plan, l) = fusion_plan(e, r, len)?;
        e.bufs.counters[plan.op as usize] += 1;
        Some(Box::new(Fused { op: plan.op, l, first: plan.first, elems: 0, carry: [0; 8], carry_len: 0, err: None, since: Instant::now() }))
    }

    /// Whether [`fusion`](Self::fusion) would fuse receive `r` of `len` bytes.
    pub(super) fn fusable(&self, r: OpRef, len: usize) -> bool {
        self.exec(r).and_then(|e| fusion_plan(e, r, len)).is_some()
    }

    /// Pops up to `max` bytes of the front receive from `p`, a fused one,
    /// and combines them (whole elements; a split one waits in `carry`).
    pub(super) fn pop_fused(&mut self, p: usize, max: usize) -> usize {
        let Some(si) = self.state.stream_in[p].front_mut() else { return 0 };
        let (r, want) = (si.r, max.min(si.len - si.pos));
        let Some(mut f) = si.fused.take() else { return 0 };
        let mut bounce = std::mem::take(&mut self.state.bounce);
        bounce.resize(FUSE_CHUNK + 8, 0);
        let esize = f.l.width as usize / 8;
        let mut moved = 0;
        while moved < want {
            let c = f.carry_len;
            bounce[..c].copy_from_slice(&f.carry[..c]);
            let n = self.link.shm.stream_pop(p, &mut bounce[c..c + (want - moved).min(FUSE_CHUNK)]);
            if n == 0 {
                break;
            }
            moved += n;
            let whole = (c + n) / esize;
            self.combine(r, &mut f, &bounce[..whole * esize]);
            let (done, end) = (whole * esize, c + n);
            f.carry[..end - done].copy_from_slice(&bounce[done..end]);
            f.carry_len = end - done;
        }
        self.state.bounce = bounce;
        if let Some(si) = self.state.stream_in[p].front_mut() {
            si.fused = Some(f);
        }
        moved
    }

    /// Combines `theirs`, the next whole elements of fused receive `r`'s
    /// message, into its operation's result (nothing once the execution has
    /// ended or an element divided by zero).
    pub(super) fn combine(&self, r: OpRef, f: &mut Fused, theirs: &[u8]) {
        let whole = theirs.len() / (f.l.width as usize / 8);
        if let (Some(e), None) = (self.exec(r), f.err) {
            if let Some(i) = combine_at(e.bufs.bases(), &f.l, f.first, f.elems, theirs) {
                f.err = Some(f.elems + i);
            }
        }
        f.elems += whole;
    }

    /// Fused receive `r`, from `src`, has all its bytes: it and its
    /// operation finish.
    pub(super) fn fused_done(&mut self, r: OpRef, src: usize, f: &Fused) {
        let len = f.elems * f.l.width as usize / 8;
        self.copied(len);
        self.fuse_paths.record(src, len, adapt::Path::Stream, false, f.since.elapsed().as_nanos() as u64);
        if self.exec(r).is_none() {
            return;
        }
        self.state.fused += 1;
        let op = OpRef { op: f.op, ..r };
        match f.err {
            Some(i) => self.local_done(op, Err(KernelError::DivByZero(i))),
            None => {
                self.finish(r);
                self.finish(op);
            }
        }
    }

}

/// The fusion plan of receive `r` of execution `e` and its local operation,
/// if the receive is to be combined with it as its `len` bytes come:
/// planned so (see `crate::fuse`), filled exactly, the operation waiting
/// for nothing else, and no trace being written.
fn fusion_plan(e: &Exec, r: OpRef, len: usize) -> Option<(crate::fuse::Plan, goal_sched::LocalRec)> {
    if trace_on() {
        return None;
    }
    let (sched, plan) = (e.sched, e.sched.fusable(r.op)?);
    (sched.s.ops[r.op as usize].len as usize == len && e.bufs.counters[plan.op as usize] == 1)
        .then(|| (plan, sched.s.locals[sched.s.ops[plan.op as usize].addr as usize]))
}

/// Combines `theirs`, whole elements of a fused receive's message starting
/// at element `elems`, with the other operand of local operation `l` into
/// its result, over an execution's buffers `base` (`first`: the message is
/// the operation's first operand). Returns the first element, counted from
/// `elems`, divided by zero.
fn combine_at(base: Bases, l: &goal_sched::LocalRec, first: bool, elems: usize, theirs: &[u8]) -> Option<usize> {
    let esize = l.width as usize / 8;
    let whole = theirs.len() / esize;
    let off = elems * esize;
    // SAFETY: the operation's other operand and result hold `count`
    // elements (API contract, compile-time checks for the scratchpad), and
    // `elems + whole <= count` since the message fills the operation
    // exactly (`fuse::plan`, and the length checked before fusing).
    let at = |bit: u8, a: u64| unsafe { operand(base, a, l.mem & (1 << bit) != 0).add(off) };
    let (a, b) = if first { (theirs.as_ptr(), at(1, l.b2) as *const u8) } else { (at(0, l.b1) as *const u8, theirs.as_ptr()) };
    let goal_sched::Op::Builtin(op) = l.op() else { unreachable!("fuse::plan fuses built-in operators only") };
    // SAFETY: as above; `theirs` holds `whole` elements.
    match unsafe { localop::apply(op, l.dt(), l.width, a, b, at(2, l.b3), whole) } {
        Err(KernelError::DivByZero(i)) => Some(i),
        _ => None,
    }
}

/// Eager message `payload` from `src`, matched by the poll to posted
/// receive `r`: if `r` may be combined with its local operation as it comes
/// (see `crate::fuse`; the message fills it exactly and the operation
/// waits for nothing else), combines it there straight from the ring, so
/// that the receive's buffer is neither written nor read back, and returns
/// the operation, for the caller to finish with the receive (the
/// operation's counter is raised so that the receive's completion does
/// not start it). Not a division, the one operation that can fail: failed
/// in the poll, it could end the execution before its sends leave (their
/// receivers would wait for them), and it runs in its turn as any other.
#[inline(never)]
pub(super) fn st_fuse_inline(state: &mut State, r: OpRef, src: u32, payload: &[u8]) -> Option<u32> {
    let e = state.execs.get_mut(r)?;
    let (plan, l) = fusion_plan(e, r, payload.len())?;
    if l.op() == goal_sched::Op::Builtin(ReduceOp::Div) {
        return None;
    }
    let since = super::arrive::copy_out_starts(state.eager_out_from, payload.len());
    let err = combine_at(e.bufs.bases(), &l, plan.first, 0, payload);
    debug_assert!(err.is_none(), "only a division fails");
    e.bufs.counters[plan.op as usize] += 1;
    if since != 0 {
        super::arrive::st_copied_out(state, src, payload.len(), since);
    }
    if src != state.rank {
        state.credit.release(src, payload.len() as u64);
    }
    state.fused += 1;
    Some(plan.op)
}
