//! Rendezvous by reading the sender's memory: Cross Memory Attach
//! (`process_vm_readv`) or a plain copy out of the sender's shared heap.
//! Long reads go in pieces of [`READ_PIECE`], one per pass, so the sends
//! that start with the same execution are not held back ([`READ_LATER`]).

use super::*;

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

/// A receive reading its message from the sender's memory (see [`READ_LATER`]).
pub(super) struct Read {
    pub(super) r: OpRef,
    pub(super) src: u32,
    pub(super) len: usize,
    /// `proto::MODE_CMA` or `proto::MODE_HEAP`.
    pub(super) mode: u8,
    pub(super) token: u32,
    /// Where the message starts in the sender's memory (CMA) or heap.
    pub(super) addr: u64,
    /// Bytes read so far.
    pub(super) done: usize,
    /// Time spent reading them, for the FIN (see `adapt`).
    pub(super) ns: u64,
    /// The whole message, not a part of a split one.
    pub(super) whole: bool,
}

impl Engine {
    /// Reads the next piece of the first message read from its sender's
    /// memory (see [`READ_LATER`]).
    pub(super) fn pump_reads(&mut self) {
        let Some(rd) = self.st.reads.pop_front() else { return };
        self.st.streams_active -= 1;
        let Some(dst) = self.pieces(rd.r) else {
            // Its execution failed here: the sender still waits for FIN.
            self.post_message(rd.src as usize, Head::control(Kind::Fin, rd.token));
            return;
        };
        if let Some(rd) = self.read_step(rd, &dst, READ_PIECE) {
            self.st.reads.push_front(rd);
            self.st.streams_active += 1;
        }
    }

    /// Reads up to `piece` more bytes of message `rd` from its sender's
    /// memory into `dst`, the receive's buffer; returns it if bytes are
    /// left. At its end (or on an error) frees the sender with FIN and
    /// finishes (fails) the receive; a receiver not allowed to read the
    /// sender's memory (ptrace rules) asks for the stream instead.
    pub(super) fn read_step(&mut self, mut rd: Read, dst: &Pieces, piece: usize) -> Option<Read> {
        let (src, len, mode) = (rd.src, rd.len, rd.mode);
        let end = len.min(rd.done.saturating_add(piece));
        let t0 = Instant::now();
        let res = each_span(dst, rd.done, end, |p, from, n| {
            // SAFETY: `each_span` gives a part of a receive buffer piece,
            // valid for writes for `n` bytes (API contract).
            let d = unsafe { std::slice::from_raw_parts_mut(p, n) };
            if mode == proto::MODE_HEAP {
                self.link.heap_read(src as usize, rd.addr + from as u64, d)
            } else {
                self.link.cma_read(src as usize, rd.addr + from as u64, d)
            }
        });
        let ns = t0.elapsed().as_nanos() as u64;
        let denied = res.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        if mode == proto::MODE_CMA && rd.done == 0 && denied && self.st.lost[src as usize].is_none() {
            self.send_control(src, Kind::Cts, rd.token);
            self.stream_receive(rd.r, src, len);
            return None;
        }
        if res.is_ok() {
            self.copied(end - rd.done);
            rd.done = end;
            rd.ns += ns;
            if end < len {
                return Some(rd);
            }
            if mode == proto::MODE_CMA {
                self.st.cma_reads_work = true;
            }
            if let Some(sp) = self.st.split_in.get_mut(&(src, rd.token)) {
                // The receiver's part of a split message: the sender's
                // buffer is free once its own part is written too.
                sp.read = true;
                sp.read_ns = rd.ns;
                let (written, write_ns, judge) = (sp.written, sp.write_ns, sp.judge);
                self.post_message(src as usize, Head::control(Kind::Fin, rd.token).mode(proto::FIN_PART).with_nanos(rd.ns));
                if written {
                    self.st.split_in.remove(&(src, rd.token));
                    self.judge_write(src, judge, write_ns, rd.ns);
                    self.finish(rd.r);
                }
                return None;
            }
            // The second of two reads into one buffer: where this rank's
            // own copy leaves the lines, as a push into it finds them
            // when the application reads nothing.
            let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
            let again = self.st.read_to[src as usize].take(at);
            self.st.read_to[src as usize].put(at);
            if mode == proto::MODE_CMA && len >= PUSH_MIN && rd.whole && again {
                let ps = rd.ns * 1000 / len as u64;
                let best = &mut self.st.read_ps[src as usize];
                if *best == 0 || ps < *best {
                    *best = ps.max(1);
                }
            }
        }
        // FIN carries the read's time, for the sender's choice of path.
        let ns = if mode == proto::MODE_CMA && res.is_ok() { rd.ns } else { 0 };
        self.post_message(src as usize, Head::control(Kind::Fin, rd.token).with_nanos(ns));
        match res {
            Ok(()) => self.finish(rd.r),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                let msg = format!("{}: rank {src} exited before its {len} bytes were read (at byte {})", self.describe(rd.r), rd.done);
                self.fail(rd.r, Error::new(ErrorKind::PeerLost, msg));
            }
            Err(e) => {
                let how = if mode == proto::MODE_HEAP { "shared heap" } else { "Cross Memory Attach" };
                let msg = format!("{}: reading {len} bytes from rank {src} by {how} failed at byte {}: {e}", self.describe(rd.r), rd.done);
                self.fail(rd.r, Error::new(ErrorKind::System, msg));
            }
        }
        None
    }

}
