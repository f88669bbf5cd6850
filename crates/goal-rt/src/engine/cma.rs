//! Rendezvous by reading the sender's memory: Cross Memory Attach
//! (`process_vm_readv`) or a plain copy out of the sender's shared heap.
//! Long reads go in pieces of [`READ_PIECE`], one per pass, so the sends
//! that start with the same execution are not held back ([`READ_LATER`]).

use super::*;
use super::pieces::{Pieces, each_span};
use super::policy::{claim_chunk, PUSH_MIN};

/// A message read from the sender's memory (CMA, the shared heap) from
/// this size on is read after the pass that matched it, in pieces of
/// [`READ_PIECE`] per pass, not at once where its RTS met its receive.
/// Read at once, a receive that started with its execution and found its
/// RTS waiting held back the sends that start after it: 2 ranks, allgather
/// of 4 MiB, both reading by CMA, took 1000-1700 us in a third to half of
/// the iterations (the peer waited for this rank's RTS until the read was
/// over) and 640-720 us in the rest, where MPICH and Open MPI took 680-740
/// every time. MPICH reads in pieces of 512 KiB too.
pub(super) const READ_LATER: usize = 64 << 10;

/// See [`READ_LATER`].
pub(super) const READ_PIECE: usize = 512 << 10;

/// A message read whole from its sender's memory is read in one piece up
/// to this size (after the pass that matched it, as [`READ_LATER`] says),
/// in pieces of [`READ_PIECE`] above it. Two pieces of a 1 MiB message
/// let the pass between them start the receiver's other copies (its own
/// block's, in pieces), which then shared the core with the read's second
/// half: 2 ranks, 1 MiB, medians of 4 alternated runs, allgather 189.4
/// -> 179.7 us, alltoall 199.0 -> 192.3, allreduce 182.0 -> 178.4 (Open
/// MPI about 172, 197, 206). Read whole, longer messages held other work
/// back: 2 MiB bcast 1.28x, 4 MiB allgather 1.03x in 1 MiB pieces. Not
/// with more ranks than cores, where the pass between the pieces serves
/// ranks that share this core: 4 ranks on 2 CPUs, alltoall and alltoallv
/// of 1 MiB took 1.02-1.03x as long read whole
/// (docs/measurements/copy-paths-2026-12-02).
pub(super) const READ_WHOLE: usize = 1 << 20;

impl Engine {
    /// Reads the next piece of the first message read from its sender's
    /// memory (see [`READ_LATER`]).
    pub(super) fn pump_reads(&mut self) {
        let Some(read) = self.state.reads.pop_front() else { return };
        self.state.streams_active -= 1;
        let Some(dst) = self.pieces(read.r) else {
            // Its execution failed here: the sender still waits for FIN.
            self.post_message(read.src as usize, Head::control(Kind::Fin, read.token));
            return;
        };
        let whole = read.claim.is_none() && read.done == 0 && read.len <= READ_WHOLE && !self.cores_shared;
        let piece = if whole { read.len } else { READ_PIECE };
        if let Some(read) = self.read_step(read, &dst, piece) {
            self.state.reads.push_front(read);
            self.state.streams_active += 1;
        }
    }

    /// Reads up to `piece` more bytes of message `read` from its sender's
    /// memory into `dst`, the receive's buffer; returns it if bytes are
    /// left. At its end (or on an error) frees the sender with FIN and
    /// finishes (fails) the receive; a receiver not allowed to read the
    /// sender's memory (ptrace rules) asks for the stream instead.
    pub(super) fn read_step(&mut self, mut read: Read, dst: &Pieces, piece: usize) -> Option<Read> {
        let (src, len, mode) = (read.src, read.len, read.mode);
        let t0 = Instant::now();
        let (step, res, more) = match read.claim {
            Some(slot) => {
                let claim = self.link.claim(src as usize, slot as usize, false);
                copy_claimed(|| claim.take_front(read.token), || claim.left(read.token), len, claim_chunk(len, mode), piece, |from, to| {
                    self.read_span(&read, dst, from, to)
                })
            }
            None => {
                let end = len.min(read.done.saturating_add(piece));
                (end - read.done, self.read_span(&read, dst, read.done, end), end < len)
            }
        };
        let ns = t0.elapsed().as_nanos() as u64;
        let denied = res.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        // (Not for a split message's part: the sender writes chunks of it
        // meanwhile, and a split is asked only once reads have worked.)
        if mode == proto::MODE_CMA && read.done == 0 && denied && read.claim.is_none() && self.state.lost[src as usize].is_none() {
            if read.fusable {
                self.fuse_paths.deny_cma();
            }
            self.stream_receive(read.r, src, len, false, Head::control(Kind::Cts, read.token));
            return None;
        }
        if res.is_ok() {
            self.copied(step);
            read.done += step;
            read.ns += ns;
            if more {
                return Some(read);
            }
            if mode == proto::MODE_CMA {
                self.state.cma_reads_work = true;
            }
            if let Some(split) = self.state.split_in.get_mut(&(src, read.token)) {
                // The receiver's part of a split message (no chunk left to
                // take): the sender's buffer is free once its own chunks
                // are written too.
                split.read = true;
                split.read_ns = read.ns;
                split.read_bytes = read.done;
                let written = split.written;
                self.state.split_bytes[1] += read.done as u64;
                self.post_message(src as usize, Head::control(Kind::Fin, read.token).mode(proto::FIN_PART).with_nanos(read.ns));
                if written {
                    if let Some(split) = self.state.split_in.remove(&(src, read.token)) {
                        self.split_over(src, &split, len);
                    }
                    self.finish(read.r);
                }
                return None;
            }
            // The second of two reads into one buffer: where this rank's
            // own copy leaves the lines, as a push into it finds them
            // when the application reads nothing.
            let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
            let again = self.state.paths.read_to[src as usize].take(at);
            self.state.paths.read_to[src as usize].put(at);
            if mode == proto::MODE_CMA && len >= PUSH_MIN && read.whole && again {
                let ps = read.ns * 1000 / len as u64;
                let best = &mut self.state.paths.read_ps[src as usize];
                if *best == 0 || ps < *best {
                    *best = ps.max(1);
                }
            }
        }
        if read.fusable && res.is_ok() {
            self.fuse_paths.record(src as usize, len, adapt::Path::Cma, false, read.ns);
        }
        // FIN carries the read's time, for the sender's choice of path.
        let ns = if mode == proto::MODE_CMA && res.is_ok() { read.ns } else { 0 };
        self.post_message(src as usize, Head::control(Kind::Fin, read.token).with_nanos(ns));
        match res {
            Ok(()) => self.finish(read.r),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                let msg = format!("{}: rank {src} exited before its {len} bytes were read (at byte {})", self.describe(read.r), read.done);
                self.fail(read.r, Error::new(ErrorKind::PeerLost, msg));
            }
            Err(e) => {
                let how = if mode == proto::MODE_HEAP { "shared heap" } else { "Cross Memory Attach" };
                let msg = format!("{}: reading {len} bytes from rank {src} by {how} failed at byte {}: {e}", self.describe(read.r), read.done);
                self.fail(read.r, Error::new(ErrorKind::System, msg));
            }
        }
        None
    }


    /// Reads bytes `from..to` of message `read` into `dst`, the receive's
    /// buffer, from its sender's memory (CMA) or shared heap.
    fn read_span(&self, read: &Read, dst: &Pieces, from: usize, to: usize) -> std::io::Result<()> {
        each_span(dst, from, to, |p, at, n| {
            // SAFETY: `each_span` gives a part of a receive buffer piece,
            // valid for writes for `n` bytes (API contract).
            let d = unsafe { std::slice::from_raw_parts_mut(p, n) };
            if read.mode == proto::MODE_HEAP {
                self.link.heap_read(read.src as usize, read.addr + at as u64, d)
            } else {
                self.link.cma_read(read.src as usize, read.addr + at as u64, d)
            }
        })
    }

    /// Receiver: split message `split` of `len` bytes from `src` is over
    /// (both parts copied, or the sender's given up): frees its claim
    /// word, and judges the sender's write against this rank's read, per
    /// byte (see `COLD_WRITES`).
    pub(super) fn split_over(&mut self, src: u32, split: &SplitIn, len: usize) {
        self.state.claims_free[src as usize] |= 1 << split.slot;
        let wrote = len.saturating_sub(split.read_bytes);
        if split.written && split.read_bytes > 0 && wrote > 0 {
            let write_ns = (split.write_ns as u128 * split.read_bytes as u128 / wrote as u128) as u64;
            self.judge_write(src, split.judge, write_ns, split.read_ns);
        }
    }
}

/// Copies the chunks (of `chunk` bytes, of a message of `len`) that `take`
/// claims, one after the other, with `copy(from, to)`, until `budget`
/// bytes are copied or none is left: the receiver's side of a split
/// message (from the front) and the sender's (from the back). Returns the
/// bytes copied, how it went, and whether chunks are left (`left`).
pub(super) fn copy_claimed(
    take: impl Fn() -> Option<u32>,
    left: impl Fn() -> bool,
    len: usize,
    chunk: usize,
    budget: usize,
    mut copy: impl FnMut(usize, usize) -> std::io::Result<()>,
) -> (usize, std::io::Result<()>, bool) {
    let mut step = 0;
    while step < budget {
        let Some(i) = take() else { return (step, Ok(()), false) };
        let from = i as usize * chunk;
        let to = len.min(from + chunk);
        if let Err(e) = copy(from, to) {
            return (step, Err(e), false);
        }
        step += to - from;
    }
    (step, Ok(()), left())
}
