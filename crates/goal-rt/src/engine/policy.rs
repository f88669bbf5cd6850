//! Path policy: whether a receiver asks its sender to write (push), to
//! share the copy (split), or reads itself, judged by measurements of
//! whether the sender's writes land cold in this rank's cache. The
//! stream-or-CMA choice per message size is `crate::adapt`'s.

use super::*;
use super::cma::{READ_PIECE};
use super::fusion::{FUSE_CMA_MAX};
use super::pieces::{Pieces};

/// Messages at least this long may be pushed (below, the extra message
/// costs more than the copy it moves to the sender).
pub(super) const PUSH_MIN: usize = 64 << 10;

/// A sender's write into this rank's memory (a push, or its part of a split
/// message) counts as cold when it took this many percent of the time this
/// rank's own copy of as much took, or more (its part of the same split
/// message, which is cut so that both parts take as long; its fastest
/// whole read of a message from the same sender, for a push).
///
/// Where the write lands decides. An application that reads what it
/// receives leaves the receive buffer in its own core's cache; the other
/// core's write must then take each line from there, and the application's
/// next read takes it back. In a loop that never reads its results (the
/// thesis' benchmark, 6.5) the lines stay with the writing core, and the
/// write is the faster copy. Two ranks, bcast by splits, the sender's write
/// against the receiver's read of its half, per byte: 0.8x at 64 KiB to
/// 1 MiB without reading, 1.25-2.0x with every rank reading its result
/// after each bcast; and reading, the whole iteration (bcast and read)
/// took 12-15 us at 64 KiB with splits against 7-9 without, 256 KiB 39-50
/// against 23-36, 1 MiB 116-171 against 104-175. A push (a gather's root
/// copies its own block meanwhile), against the root's own read: 1.3-1.4x
/// at 64 and 256 KiB even without reading, where the root's own reads were
/// the faster gather too (4.0-4.3 against 5.0-5.4 us at 64 KiB), 2.7-3.1x
/// reading (gather and read 15-17 against 21-31 us).
pub(super) const COLD_WRITES: u64 = 130;

/// Writes from this size on are not judged (see [`COLD_WRITES`]): from
/// 1 MiB on, whether the application reads its results changed the
/// writes' speed less than the host's noise did (2 ranks, bcast of 1 MiB,
/// sender's write against receiver's read: 0.75-1.0x without reading,
/// 1.2-2.2x reading; a run of outliers then stopped the splits of a loop
/// that read nothing, 30 -> 62 us), and the whole iteration gained less.
pub(super) const COLD_MAX: usize = 1 << 20;

/// CMA messages from this size on, whose receiver is idle and whose sender
/// waits in Wait, are copied by both (`CTS` in `MODE_SPLIT`). One core
/// reading the whole message leaves the other idle; two processes on the
/// two CPUs here, medians of 300, halves fixed in advance: 64 KiB 8.1 ->
/// 6.3 us, 256 KiB 25.5 -> 21.2, 1 MiB 99.7 -> 63.2, 4 MiB 488 -> 287.
///
/// The two take the message's chunks ([`claim_chunk`]) from either end as
/// they get to them (a claim word in the receiver's inbox, see
/// `goal_transport::shm::Claim`), not halves fixed in advance: with one
/// CPU shared with another process, the rank on it copies at half speed,
/// and fixed halves made every message wait for that half (2 ranks beside
/// a busy process, windows of 16 MiB: 2.0-2.6 GB/s split in halves, 2.3-2.5
/// read by the receiver alone).
pub(super) const SPLIT_MIN: usize = 64 << 10;

/// The chunk by which the receiver and the sender of a split message of
/// `len` bytes, read in `mode`, take their shares (see [`SPLIT_MIN`]), in
/// whole pages: by CMA a quarter of it, at least half of it up to 128 KiB,
/// at most [`READ_PIECE`]. Each chunk costs a claim and a system call: an
/// eighth of 1 MiB, or a quarter of 256 KiB, made those one-way times
/// 12-33 % slower on a quiet machine. From the shared heap an eighth, from
/// 64 KiB: the receiver's part is a plain `memcpy`, faster than the
/// sender's write, and with quarters it took too little of a 1 MiB
/// message (2 ranks, one-way 45 -> 58 us).
pub(super) fn claim_chunk(len: usize, mode: u8) -> usize {
    let chunk = if mode == proto::MODE_HEAP { (len / 8).clamp(64 << 10, READ_PIECE) } else { (len / 4).clamp((len / 2).min(128 << 10), READ_PIECE) };
    (chunk + 4095) & !4095
}

/// [`SPLIT_MIN`] for a message from the sender's shared heap, which the
/// receiver reads with a plain `memcpy`: only there does the extra control
/// message and the sender's `process_vm_writev` pay (see the measurements
/// in `docs/design.md`).
pub(super) const HEAP_SPLIT_MIN: usize = 512 << 10;

/// The largest message sent eagerly with more ranks than cores where that
/// pays (see [`Engine::eager_limit`]): what a 256 KiB ring's record held
/// when those sends were measured. The 1 MiB ring's records hold 256 KiB;
/// eager sends of 64-256 KiB with cores shared are not measured.
pub(super) const SHARED_EAGER: usize = 64 << 10;

/// Whether a rendezvous send of `len` bytes starts from CMA (`adapt` then
/// keeps it unless the stream is measured faster), given calibration's
/// CMA range `cma`: from the range's lower bound up, above its upper
/// bound too (see [`Engine::choose_offer`]); never where calibration
/// found no range.
pub(super) fn cma_first(len: usize, cma: (usize, usize)) -> bool {
    cma_range_found(cma) && len >= cma.0
}

/// Whether calibration found sizes at which CMA beats the stream (its
/// range `cma` is not empty: `(usize::MAX, 0)` where it found none).
pub(crate) fn cma_range_found(cma: (usize, usize)) -> bool {
    cma.0 <= cma.1
}

/// How a receive fetches a large message whose RTS it matched: the
/// decision of [`Engine::choose_fetch`], which [`Engine::fetch`] carries out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fetch {
    /// From a peer on another machine: a bulk transfer straight into the
    /// receive buffer.
    Bulk,
    /// Through the stream, combined as it comes, though CMA was offered
    /// (see [`FUSE_CMA_MAX`]).
    FusedStream,
    /// The sender writes all of it into the receive buffer (see [`Write`]);
    /// `judge`: time the write against this rank's own reads (see
    /// [`COLD_WRITES`]).
    Push { judge: bool },
    /// This rank reads chunks from the front while the sender writes
    /// them from the back (see [`SPLIT_MIN`]).
    Split { judge: bool },
    /// This rank reads it all from the sender's memory (CMA) or heap.
    Read,
    /// A read by CMA of a message that could have been combined through
    /// the stream (see [`FUSE_CMA_MAX`]): timed for that choice.
    FusableRead,
    /// Through the pair's stream, both copying at once.
    Stream,
}

/// How a rendezvous send to a peer on this machine offers its message
/// (the RTS's mode): the sender's side of the choice [`Fetch`] completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Read it from offset `off` of this rank's shared heap (`GOAL_Alloc`).
    Heap { off: u64 },
    /// Read it from address `addr` of this process (Cross Memory Attach).
    Cma { addr: u64 },
    /// Through the pair's stream, after a CTS.
    Stream,
}

/// Whether a copy out of a message of `out_len` bytes stands for one of
/// `len` bytes: within a factor of two (`eagerness` times by size class).
fn same_class(out_len: u32, len: usize) -> bool {
    out_len as usize > len / 2 && out_len as usize <= 2 * len
}

impl Engine {
    /// Decides how large send `r` of `len` bytes to local peer `p` offers
    /// its message: from the shared heap when its buffer is there
    /// (`heap_off`), by CMA or by the stream as calibration and `adapt`
    /// decide (`ptr`: its one buffer; null for a send of pieces, which
    /// goes by the stream). Also whether it is half of an exchange (see
    /// `adapt`), and whether it is part of a burst timed whole (see
    /// `burst`), for the send's record. `chosen`: `eagerness` chose the
    /// rendezvous over the eager ring.
    pub(super) fn choose_offer(&mut self, r: OpRef, p: usize, len: usize, ptr: *mut u8, heap_off: Option<u64>, chosen: bool) -> (Offer, bool, bool) {
        if let Some(off) = heap_off {
            return (Offer::Heap { off }, false, false);
        }
        if ptr.is_null() {
            return (Offer::Stream, false, false);
        }
        let calibrated = len >= self.thresholds.cma.0 && len <= self.thresholds.cma.1;
        // Moved by the helper (the application computes): one read by
        // the receiver, which needs the sender only for its start and its
        // end, where the stream needs both ranks' helpers in turn for
        // every 64 KiB, each a wake-up on a CPU an application computes
        // on (2 ranks computing, 1 MiB allreduce started before: ended
        // after a median 3.2 ms with the path the blocking loops taught
        // `adapt`, 0.5 ms by CMA). Not recorded for `adapt`'s choice,
        // which times transfers the application waits for.
        if self.background && len >= self.thresholds.cma.0 && !self.adapt.cma_denied() {
            return (Offer::Cma { addr: ptr as u64 }, false, false);
        }
        // A rendezvous that `eagerness` chose over the ring (`chosen`):
        // by CMA where calibration found it faster, not by `adapt`'s
        // choice. The eager chooser weighs this rendezvous by its time, and
        // `adapt`, which sees few such messages, would be trying its other
        // ways with them: 2 ranks, ping-pong of 64 KiB, the chooser's tries
        // went by the stream (6-16 us to FIN) and split CMA (8-30 us) while
        // CMA took 3.7 us one-way message after message, and kept every
        // message eager (8.8 us). The receiver still reads, splits or has
        // the sender push as it chooses (`choose_fetch`).
        if chosen && calibrated && !self.adapt.cma_denied() {
            let exchange = len >= self.thresholds.adapt_from && self.exchanging(r, p);
            return (Offer::Cma { addr: ptr as u64 }, exchange, false);
        }
        // Another large send to this peer still in flight: a burst
        // (looked for only where adapt chooses).
        let burst = len >= self.thresholds.adapt_from
            && self.state.rdv.iter().flatten().filter(|s| s.peer as usize == p && s.mode != proto::MODE_HEAP).nth(1).is_some();
        let exchange = len >= self.thresholds.adapt_from && !burst && self.exchanging(r, p);
        let situation = if burst {
            adapt::Situation::Burst
        } else if exchange {
            adapt::Situation::Exchange
        } else {
            adapt::Situation::Lone
        };
        // With more ranks than cores, a receiver that last waited on
        // this CPU runs only while this rank does not: whichever path,
        // every copy of the message is made on this one core. The
        // stream's two copies stay in its caches (the sender writes the
        // stream and the receiver reads it on this core), where a CMA
        // read pins each page of the sender's buffer and costs more
        // than the two (a MiB: 76-99 us against 22-26 for a `memcpy` on
        // the AMD EPYC VM of the figures that follow); and the sender
        // does not wait: the receiver runs once it blocks. So such a
        // send takes the stream, unmeasured (its times would be the two
        // ranks' turns on the CPU). 4 ranks on 2 CPUs, rank r on CPU
        // r % 2, 1 MiB, where calibration found CMA cheaper in CPU time
        // than the stream's two copies between two cores
        // (`Adapt::share_cores`), five alternations: bcast 121 -> 98 us,
        // gather 160 -> 123, reduce 149 -> 122, scatter 108 -> 99,
        // alltoall 0.94x, allgather and allreduce unchanged
        // (docs/measurements/cpu-mates-2026-12-07).
        if self.cores_shared && situation != adapt::Situation::Burst && len >= self.thresholds.adapt_from && self.on_this_cpu(p) {
            self.adapt.sent_to_cpu_mate(exchange);
            return (Offer::Stream, exchange, false);
        }
        // CMA is where `adapt` starts from calibration's lower bound up,
        // alone and in an exchange; the stream is left only for a path
        // measured `MARGIN` (adapt.rs) times faster. Calibration's upper
        // bound compared the stream's two overlapped copies with one
        // core's CMA read, but a CMA message from `SPLIT_MIN` on is
        // copied by both cores (split, chunk by chunk) whenever the
        // receiver is idle and the sender waits, and the stream moves
        // only while both ranks are on a CPU. Lone messages above that
        // bound took the stream until 2026-11-30 (2 ranks, ping-pong in
        // repetitions of about 2 ms, one-way: quiet, 4 MiB 496 -> 335 us
        // and 16 MiB 1956 -> 1382; beside a busy process 431 -> 347 and
        // 3728 -> 3207). In an exchange both cores copy anyway, and CMA
        // copies once where the stream copies twice (2 ranks, alltoall
        // of 4 MiB after 1 MiB: 1.21-1.26 ms by the stream, CMA measured
        // 1.2 times faster per byte and not taken while the stream was
        // its start); a burst, whatever the range, is split by its
        // receiver and its sender (see `adapt::Adapt::pick`).
        let default = cma_first(len, self.thresholds.cma);
        let (cma, burst) = match self.adapt.pick_send(p, len, if default { adapt::Path::Cma } else { adapt::Path::Stream }, situation) {
            Some(picked) => (picked.path == adapt::Path::Cma, picked.timed_burst),
            None => (calibrated, false),
        };
        (if cma { Offer::Cma { addr: ptr as u64 } } else { Offer::Stream }, exchange, burst)
    }

    /// Decides how receive `r` fetches a message of `len` bytes from `src`
    /// into `dst`, offered in `mode` (the RTS's: the sender's view of
    /// which paths its buffer allows). Notes what the decision consumes:
    /// the buffer `src` wrote last (see [`Recent`]) and the cold spells.
    pub(super) fn choose_fetch(&mut self, r: OpRef, src: u32, len: usize, mode: u8, dst: &Pieces) -> Fetch {
        // Whether the sender may write this message here (see COLD_WRITES),
        // and whether it wrote the last one, into the same buffer.
        let long = matches!(mode, proto::MODE_CMA | proto::MODE_HEAP) && len >= PUSH_MIN.min(SPLIT_MIN);
        let at = dst.as_slice().first().map_or(0, |&(p, _)| p as u64);
        let again = long && self.state.paths.written_to[src as usize].take(at) && len < COLD_MAX;
        let warm = long && (len >= COLD_MAX || self.writes_warm(src));
        match mode {
            proto::MODE_NET => Fetch::Bulk,
            // In the background (see `choose_offer`): read it all now,
            // without asking a sender that computes to write a part.
            proto::MODE_HEAP | proto::MODE_CMA if self.background => Fetch::Read,
            proto::MODE_CMA if self.state.lost[src as usize].is_none() && len >= FUSE_CMA_MAX && self.fusable(r, len) => {
                // With cores shared, the fused stream, unmeasured: the
                // chooser's times there mix every rank's preemptions, and
                // the combine riding the copy out saves a pass over the
                // data on cores that are all busy (4 ranks on 2 CPUs, 1 MiB,
                // one run of 4 rounds: reduce_scatter_block 1.39x, allreduce
                // 1.12x the time with the chooser offered CMA;
                // docs/measurements/shared-work-2026-12-06).
                if self.cores_shared {
                    return Fetch::FusedStream;
                }
                // Read whole by CMA where that is chosen, so that its time
                // is measured (see FUSE_CMA_MAX; its `Read` notes it).
                match self.fuse_paths.pick(src as usize, len, adapt::Path::Stream, adapt::Situation::Lone) {
                    Some(adapt::Path::Cma) => Fetch::FusableRead,
                    _ => Fetch::FusedStream,
                }
            }
            proto::MODE_CMA if warm && self.push_pays(r, src, len, dst) => Fetch::Push { judge: again },
            // From the heap the receiver's `memcpy` outruns the sender's
            // CMA write, and takes more of the chunks by itself (fixed, three
            // fifths had paid: 2 ranks, bcast from the heap, six
            // alternations: 1 MiB 23.4 -> 19.3 us, 4 MiB 202 -> 194 against
            // halves).
            proto::MODE_HEAP | proto::MODE_CMA if warm && self.split_pays(r, src, mode, len, dst) => Fetch::Split { judge: again },
            proto::MODE_HEAP | proto::MODE_CMA => Fetch::Read,
            _ => Fetch::Stream,
        }
    }

    /// The largest message that send `r` of `len` bytes to local peer `p`
    /// may send eagerly: the calibrated limit, or with more ranks than
    /// cores, [`SHARED_EAGER`] (64 KiB; less if a ring record holds less) for a send to a peer
    /// that last waited on this CPU (unless it is one of an all-to-all's
    /// messages), and for the longest send of its schedule that is not
    /// half of an exchange.
    ///
    /// Calibration weighs eager's two copies against CMA's one between two
    /// running ranks. With more ranks than cores the receiver is often not
    /// on a CPU, and a rendezvous send waits for it twice (its CTS or read,
    /// then FIN) where an eager one is over once it is copied.
    ///
    /// - A peer that last waited on this CPU is not running now (unless it
    ///   moved since): by rendezvous
    ///   the send needs a switch to it and back before it ends, and the
    ///   two copies stay in this core's caches. 4 ranks on 2 CPUs, AUTO,
    ///   medians of 5 alternated rounds: bcast of 64 KiB 0.75x, scatter
    ///   0.91x, allgatherv 0.82x, allreduce 0.90x, most exchanges of
    ///   16 KiB 0.80-0.88x. Not an all-to-all's messages of 64 KiB and
    ///   more ([`all_to_all`](Self::all_to_all)): every core copies each of
    ///   its ranks' messages once, and eagerly this one twice.
    /// - A contributor to a gather or a reduction has one large message,
    ///   and its root copies from the rings while the other contributors go
    ///   on: gather of 64 KiB 10.4 -> 5.7 us, of 16 KiB 4.4 -> 2.0; reduce
    ///   12.0 -> 6.6 and 6.2 -> 3.9 (Open MPI about 8.8 and 12.5 at 64 KiB).
    ///
    /// Other exchanges keep CMA's single copy (every core has copies of its
    /// own to make), and a rank with several large sends (a broadcast's or
    /// a scatter's root) keeps its receivers on the other CPU reading, where
    /// it would make every copy itself (docs/measurements/eager-shared-2026-12-01).
    pub(super) fn eager_limit(&self, r: OpRef, p: usize, len: usize) -> usize {
        let eager = self.thresholds.eager;
        if len <= eager || !self.cores_shared || self.kernel.is_some() {
            return eager;
        }
        let ring = self.link.shm.max_eager().min(SHARED_EAGER).max(eager);
        if self.on_this_cpu(p) && !self.all_to_all(r, p) {
            return ring;
        }
        let longest = self.exec(r).is_some_and(|e| len as u64 > e.sched.second_send);
        if longest && !self.exchanging(r, p) {
            ring
        } else {
            eager
        }
    }

    /// Whether send `r` of `len` bytes to local peer `p` goes eagerly (within
    /// [`eager_limit`](Self::eager_limit)), and whether `eagerness` chose
    /// so: above 16 KiB (or the calibrated limit, if lower) up to its bound,
    /// within the calibrated limit as above it, between ranks that do not
    /// share cores (there `eager_limit`'s rules decide), outside
    /// kernel mode (whose eager sends are offered to the kernel's chains).
    /// `Some(exchange)` where `eagerness` chose: whether the send is half of
    /// an exchange, whose two halves it sends the same way.
    pub(super) fn eager_way(&mut self, r: OpRef, p: usize, len: usize) -> (bool, Option<bool>) {
        if self.eagerness.covers(len) && !self.cores_shared && self.kernel.is_none() {
            let exchange = self.exchanging_from(r, p, exec::EAGER_EXCHANGE_MIN);
            return (self.eagerness.eager(p, len, exchange, (p as u32) < self.rank), Some(exchange));
        }
        (len <= self.eager_limit(r, p, len), None)
    }

    /// What an eager exchange send of `len` bytes to `p`, copied into the
    /// ring in `copy_ns`, costs this rank: that copy and the copy out of the
    /// last message `p` sent this way in the same size class, one after
    /// the other on this CPU (a rendezvous exchange's two reads run on both
    /// CPUs at once, and it is timed as the peer's read of this rank's
    /// message, see `rdv_sent`). `None`
    /// where no such message came since the last such send (the peer's
    /// half went by rendezvous: a mixed exchange, timed for neither way).
    /// Timed as the copy in alone, an allgather of 32 KiB between vCPUs far
    /// apart kept the eager way at 16-17 us an iteration where rendezvous
    /// took 5.8: there the copy out is the slow one.
    pub(super) fn eager_exchange_ns(&mut self, p: usize, len: usize, copy_ns: u64) -> Option<u64> {
        let (out_len, out_ns) = std::mem::take(&mut self.state.eager_out[p]);
        (out_ns > 0 && same_class(out_len, len)).then(|| copy_ns + u64::from(out_ns))
    }

    /// What the receiver of a lone eager send of `len` bytes to `p` takes
    /// to copy it out of the ring: its last such copy of a message of the
    /// same size class from this rank, which it publishes (see
    /// `ShmNode::publish_copy_out`); 0 where it published none. The
    /// eager way's time is then both copies, as a rendezvous's (from RTS
    /// to FIN) holds the receiver's read. Timed as the sender's copy
    /// alone, on a host where the receiver's copy out of the sender's
    /// cache was the slow half (an Intel Xeon, 2 ranks, 64 KiB: the copy
    /// in 3 us, the message 8.8 us one-way, by CMA 3.7), every lone
    /// message of 16 to 64 KiB stayed eager: broadcasts and reductions
    /// took 1.3-1.7x the time they took by CMA.
    pub(super) fn lone_copy_out_ns(&self, p: usize, len: usize) -> u64 {
        let (out_len, out_ns) = self.link.shm.copy_out(p);
        if same_class(out_len, len) { u64::from(out_ns) } else { 0 }
    }

    /// Whether a send of `len` bytes to `p`, within the eager limit, goes
    /// by rendezvous (its bytes through the stream) rather than queue for
    /// ring space behind messages already waiting for it: a burst of
    /// messages longer than half the largest record (a 256 KiB ring, the
    /// default before `shm::RING_BYTES`, held three of 64 KiB; the 1 MiB
    /// one holds fifteen and queues every eager burst). With the two cores far apart (other core complexes, a
    /// cache line 180-210 ns between them) the receiver reads each eager
    /// line out of the sender's cache, and three records are too few to
    /// keep both copies going; the 1 MiB stream lets the sender run ahead.
    /// 2 ranks, windows of 64 sends of 64 KiB: 14.2 -> 28.7 GB/s far
    /// apart (Open MPI without single copy 23.7), 46.3 -> 47.6 close
    /// (docs/measurements/eager-burst-2026-12-04). The RTS queues behind
    /// the eager messages, so matching keeps the order of sending. With
    /// more ranks than cores an eager send's point is that it ends while
    /// its receiver is not on a CPU: it queues, as before.
    pub(super) fn backed_up(&self, p: usize, len: usize) -> bool {
        2 * len > self.link.shm.max_eager()
            && !self.state.outq[p].is_empty()
            && !self.cores_shared
            && self.kernel.is_none()
    }

    /// Whether send `r` to `p` is one of an all-to-all's messages: it starts
    /// with its execution beside other large sends, and a large message
    /// from `p` comes at the same time. Its copy to a rank on this CPU is
    /// then one of several each core makes, and eagerly it is copied
    /// twice. AUTO, medians of 3-4 alternated runs, by CMA rather than
    /// eagerly to the rank on this CPU: 4 ranks on 2 CPUs, alltoall and
    /// alltoallv of 64 KiB 45.1 -> 39.0 and 44.9 -> 38.7 us (Open MPI about
    /// 40), 3 ranks 26.8 -> 24.1, 8 ranks alltoallv 473 -> 380. An
    /// allgather's rank sends one buffer to every peer (no `opens_sends`):
    /// its linear allgatherv of 64 KiB took 1.18x as long this way
    /// (docs/measurements/copy-paths-2026-12-02).
    fn all_to_all(&self, r: OpRef, p: usize) -> bool {
        self.exec(r).is_some_and(|e| e.sched.opens_sends && r.op < e.sched.s.independent) && self.exchanging(r, p)
    }

    /// Whether local peer `p` last waited on the CPU this thread runs on
    /// (see `ShmNode::note_cpu`): with more ranks than cores, then, it
    /// cannot be running while this rank does.
    pub(super) fn on_this_cpu(&self, p: usize) -> bool {
        super::current_cpu().is_some_and(|cpu| self.link.shm.on_cpu(p, cpu))
    }

    /// Receiver: whether to ask the sender of a CMA message of `len` bytes
    /// into receive `r`'s `dst` to write it here itself: a long message,
    /// while this rank has operations of its own to run (which the read
    /// would otherwise wait behind or delay), from a sender that may
    /// ([`may_write_here`](Self::may_write_here)).
    ///
    /// With more ranks than cores, not into a schedule that sends large
    /// messages too: an exchange (allgather, alltoall), where every core
    /// has its own ranks' copies to make, so that a push only moves a copy
    /// to another busy core, and the receive then waits until its sender
    /// is on a CPU (a read needs only the receiver). A gather's root,
    /// which only collects, still has its senders write (they are idle
    /// once their message is offered). 4 ranks on 2 CPUs, this and
    /// exchanges by CMA against neither, medians of 9 paired runs:
    /// alltoall 64 KiB 0.92x (58.4 -> 53.7 us), 1 MiB 0.91x, allgather
    /// 1 MiB 0.83x; exchanges by CMA alone: alltoall 1.0x, allgather
    /// 1 MiB 0.91x; a gather's time unchanged.
    pub(super) fn push_pays(&self, r: OpRef, src: u32, len: usize, dst: &Pieces) -> bool {
        // Not before this rank has read one such message from `src` itself:
        // its time is what the pushes are judged by (see COLD_WRITES).
        self.pushes
            && len >= PUSH_MIN
            && (len >= COLD_MAX || self.state.paths.read_ps[src as usize] != 0)
            && self.has_own_work()
            && !(self.cores_shared && self.exec(r).is_some_and(|e| e.sched.sends_large))
            && self.may_write_here(src, dst)
    }

    /// Receiver: `src` wrote a message here, or its part of a split one, in
    /// `write_ns`, where this rank's own copy of as much took `read_ns` (its
    /// part of the same message; its fastest read of a whole one; 0:
    /// unknown). A write is cold when it took more than `cold_writes` %
    /// of that (see [`COLD_WRITES`]); cold writes in a row keep the next
    /// messages from `src` to this rank's own copies (see
    /// [`ColdSpell`](super::history::ColdSpell)).
    pub(super) fn judge_write(&mut self, src: u32, judge: bool, write_ns: u64, read_ns: u64) {
        if !judge || read_ns == 0 {
            return;
        }
        if write_ns * 100 < read_ns * self.cold_writes {
            self.state.paths.cold[src as usize].warm();
            return;
        }
        self.state.paths.cold_writes += 1;
        self.cold_vote(src as usize);
    }

    /// Receiver: one more reason not to have `p` write here (a cold write,
    /// or a split it declined); [`COLD_VOTES`](super::history::COLD_VOTES)
    /// in a row start a pause (see [`ColdSpell`](super::history::ColdSpell)).
    pub(super) fn cold_vote(&mut self, p: usize) {
        if self.state.paths.cold[p].vote() {
            self.state.paths.written_to[p] = Recent::default();
        }
    }

    /// Receiver: whether `src` may write (all or part of) its next long
    /// message here, counting down the messages taken without its writes
    /// since its last cold one (see [`COLD_WRITES`]).
    pub(super) fn writes_warm(&mut self, src: u32) -> bool {
        self.state.paths.cold[src as usize].may_write()
    }

    /// Whether this rank has operations of its own starting (a Run), ready
    /// to run, or running in pieces.
    pub(super) fn has_own_work(&self) -> bool {
        self.state.run_left > 0 || !self.state.execs.ready.is_empty() || self.state.in_pieces
    }

    /// Receiver: whether `src` may be asked to write (all or part of) a
    /// message into `dst` (see [`Write`]): one piece, a sender allowed to
    /// write here and alive, that waits for nothing of this rank's (in an
    /// exchange both cores are busy: pulling is as good, with one message
    /// less).
    pub(super) fn may_write_here(&self, src: u32, dst: &Pieces) -> bool {
        matches!(dst, Pieces::One(_))
            && !self.state.paths.push_refused[src as usize]
            && self.state.lost[src as usize].is_none()
            && !self.state.rdv.iter().flatten().any(|s| s.peer == src)
    }

    /// Receiver: whether to split a CMA or shared-heap message (`mode`) of
    /// `len` bytes into `dst` with its sender (see [`SPLIT_MIN`],
    /// [`HEAP_SPLIT_MIN`]): as for a push, but for a receiver with nothing
    /// else to do, where CMA reads have worked (a heap message: the
    /// sender's write tells, see `PUSH_REFUSED`), not with more ranks than
    /// cores (the sender's core is another rank's then, and the receiver
    /// would wait for it), with a claim word free for it (see
    /// [`CLAIM_SLOTS`]), and not for a receive that a local operation
    /// combines next (`fusable`): that one reads the message, from this
    /// core's cache when this core copied it (2 ranks, reduce of 64 KiB:
    /// 5.5-7.2 us read here, 8.2-9.9 split).
    pub(super) fn split_pays(&self, r: OpRef, src: u32, mode: u8, len: usize, dst: &Pieces) -> bool {
        let long = if mode == proto::MODE_HEAP { len >= HEAP_SPLIT_MIN } else { len >= SPLIT_MIN && self.state.cma_reads_work };
        self.splits
            && long
            && self.state.claims_free[src as usize] != 0
            && !self.fusable(r, len)
            && self.may_write_here(src, dst)
    }

    /// Lets a busy receiver ask its senders to write their large messages
    /// into its memory (see [`Write`]). Only where senders have a helper:
    /// a sender in `manual` mode would write only when its application
    /// next calls goal, where the receiver could have read without it.
    /// (Peers are taken to run in this rank's mode, as a job's ranks do.)
    pub fn allow_pushes(&mut self, on: bool) {
        self.pushes = on;
    }

    /// Judges a sender's write into this rank's memory cold when it takes
    /// more than `percent` % of this rank's own copy (`GOAL_COLD_WRITES`;
    /// [`COLD_WRITES`] unless set; 0: every write judged is cold).
    pub fn judge_writes_at(&mut self, percent: u64) {
        self.cold_writes = percent;
    }

    /// Lets an idle receiver share the copy of a large message with its
    /// sender (see [`SPLIT_MIN`]), a sender whose application threads wait
    /// in Wait (`app_waiting`, the runtime's count) agreeing.
    pub fn allow_splits(&mut self, on: bool, app_waiting: Arc<AtomicU32>) {
        self.splits = on;
        self.adapt.burst_by_cma(on, self.link.shm.stream_bytes());
        self.app_waiting = Some(app_waiting);
    }

    /// More ranks than cores on this machine (`on`): exchanges, and lone
    /// messages of `stream_bytes` (a pair's stream) or more, go by CMA
    /// (see `adapt::Adapt::share_cores`) where calibration found one CMA
    /// read cheaper in CPU time than the stream's two copies
    /// ([`Thresholds::cma_shared`]), their receives are not pushed (see
    /// [`push_pays`](Self::push_pays)), and the eager rings are not
    /// rewound (see `ShmNode::rewind_rings`).
    ///
    /// Where one CMA read costs more than the stream's two copies,
    /// exchanges take the stream, unmeasured (their times mix the ranks'
    /// preemptions, which made the chooser keep a third to two thirds of
    /// them on CMA), and lone messages are chosen by measurement as with
    /// a core per rank. On a host whose `process_vm_readv` took 85-100 us
    /// per MiB against `memcpy`'s 18-20, 4 ranks on 2 CPUs, 1 MiB, medians
    /// of 4 alternations: gather 135 -> 41 us, bcast 119 -> 60, allgather
    /// 600 -> 353, allgatherv 588 -> 406, alltoall 811 -> 572, allreduce
    /// 226 -> 185 (Open MPI without single copy: 117, 99, 385, 540, 516,
    /// 289; docs/measurements/shared-stream-2026-12-04).
    ///
    /// The rule once followed calibration's CMA range, which compares
    /// latencies (the stream's two copies overlap in time): on the same
    /// host two days later, where a MiB between the two vCPUs took 133 us
    /// by the stream's two copies and 99 by CMA, a noisy calibration that
    /// found CMA faster at one size (32 KiB) sent exchanges by CMA and
    /// another that found none by the stream, and the stream's allgather
    /// of 1 MiB took 1.2-1.4x CMA's (three runs; shorter
    /// exchanges stay on the stream, see `adapt::Adapt::share_cores`;
    /// docs/measurements/shared-work-2026-12-06).
    /// With cores shared every copy waits for a CPU, so the measure is
    /// the copies' CPU time.
    pub fn share_cores(&mut self, on: bool, stream_bytes: usize) {
        self.cores_shared = on;
        if on {
            // (`eagerness` chooses nothing then, see `eager_way`.)
            self.state.eager_out_from = usize::MAX;
        }
        self.link.shm.rewind_rings(!on);
        self.adapt.share_cores(on.then_some(stream_bytes), self.thresholds.cma_shared, self.thresholds.cma);
    }
}

#[cfg(test)]
mod tests {
    use super::cma_first;

    #[test]
    fn cma_is_the_first_choice_from_the_calibrated_lower_bound_up() {
        let range = (8 << 10, 2 << 20);
        assert!(!cma_first(4 << 10, range), "below the range: the stream");
        assert!(cma_first(8 << 10, range) && cma_first(2 << 20, range), "in the range");
        assert!(cma_first((2 << 20) + 1, range) && cma_first(64 << 20, range), "above the range, where messages split");
        assert!(!cma_first(4 << 20, (usize::MAX, 0)), "no range: calibration found CMA slower everywhere");
    }
}
