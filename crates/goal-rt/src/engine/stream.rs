//! Rendezvous through the pair's stream: sender and receiver copy through a
//! shared pipelined buffer at the same time (the two-copy path for sizes
//! outside the CMA range, or where the chooser finds it faster).

use super::*;
use super::pieces::{pop_into, push_from};

impl Engine {
    /// Receive `r` takes its `len` bytes from `src`'s stream, through the
    /// window [`Engine::stream_window`] picks (`exchange`: its sender took
    /// it for half of an exchange): the CTS `cts`, sent here, tells the
    /// sender which.
    pub(super) fn stream_receive(&mut self, r: OpRef, src: u32, len: usize, exchange: bool, cts: Head) {
        let fused = self.fusion(r, len);
        let (window, chosen) = self.stream_window(src, len, exchange, fused.is_some());
        self.state.narrow_streams += u64::from(window == StreamWindow::Narrow);
        self.state.long_streams += u64::from(window == StreamWindow::Long);
        self.post_message(src as usize, cts.mode(cts.mode | proto::cts_window_bit(window)));
        let queue = &mut self.state.stream_in[src as usize];
        let timed = chosen.then(|| queue.is_empty().then(Instant::now));
        queue.push_back(StreamIn { r, pos: 0, len, fused, window, timed });
        self.state.streams_active += 1;
    }

    /// Which window of `src`'s stream a message of `len` bytes goes
    /// through (see goal-transport's `shm/stream.rs`):
    /// - the narrow one for a message no longer than the stream that is
    ///   one of a burst (another message from `src` still streams in) or,
    ///   with more ranks than cores, half of an exchange (also one that
    ///   wraps the window: the 4-rank alltoall of 1 MiB exchanges 1 MiB
    ///   blocks, and keeping those on the whole stream brought its slow
    ///   runs back, docs/measurements/exchange-window-2026-12-05). Both
    ///   keep two streams' worth of pages moving beside the buffers they
    ///   copy between, and those do not stay in the caches: 2 ranks on
    ///   the AMD EPYC VM with its vCPUs close,
    ///   windows of 32 sends of 1 MiB, 14.5 GB/s through the whole 1 MiB
    ///   stream, 22.3 through its first 256 KiB
    ///   (docs/measurements/stream-window-2026-12-04); 4 ranks on its 2
    ///   CPUs, close, alltoall of 1 MiB 480-612 us through the whole
    ///   streams, 370-385 through their first 256 KiB
    ///   (docs/measurements/exchange-window-2026-12-05); with a core each,
    ///   2 ranks' exchanges of 1 MiB took 1.07-1.09x as long through it;
    /// - for a message longer than the stream while nothing goes the other
    ///   way (its sender did not take it for half of an exchange, and no
    ///   rendezvous send of ours to `src` is in flight), the long one
    ///   (twice the stream) or the narrow one, whichever recent messages
    ///   of its size from `src` took less time through (see `window`;
    ///   the second value returned: chosen so, to be timed). A receive
    ///   combined as it comes (`fused`) takes the long one. 4 and 16 MiB
    ///   messages streamed at 13.6 GB/s through a 1 MiB stream and
    ///   17-19.5 through a 2 MiB one, while 2-rank allgather and alltoall
    ///   of 4 MiB, both directions streaming at once, took 1.12x as long
    ///   through the larger one;
    /// - the stream's own size otherwise: a lone message keeps it, so that
    ///   its sender is done without waiting for the reader (2-rank
    ///   collectives of 1-4 MiB took up to 1.47x as long through 256 KiB).
    ///
    /// The window changes only when the stream is empty.
    pub(super) fn stream_window(&mut self, src: u32, len: usize, exchange: bool, fused: bool) -> (StreamWindow, bool) {
        let stream = self.link.shm.stream_bytes();
        if len <= stream {
            let burst = !self.state.stream_in[src as usize].is_empty();
            let narrow_exchange = exchange && self.cores_shared;
            return (if burst || narrow_exchange { StreamWindow::Narrow } else { StreamWindow::Stream }, false);
        }
        let sending = exchange || self.state.rdv.iter().flatten().any(|s| s.peer == src);
        if sending || !self.state.stream_out[src as usize].is_empty() {
            (StreamWindow::Stream, false)
        } else if fused {
            (StreamWindow::Long, false)
        } else if self.windows.narrow(src as usize, len) {
            (StreamWindow::Narrow, true)
        } else {
            (StreamWindow::Long, true)
        }
    }

    /// Moves every transfer in flight along: streams in and out, reads.
    pub(super) fn pump_transfers(&mut self) {
        self.pump_streams();
        self.bursts_drained();
        if !self.state.reads.is_empty() {
            self.pump_reads();
        }
        if !self.state.writes.is_empty() {
            self.pump_writes();
        }
    }

    /// Ends the time of the bursts by the stream that their receivers
    /// have copied out (see `burst::Bursts::poll_drained`).
    pub(super) fn bursts_drained(&mut self) {
        let shm = &self.link.shm;
        self.adapt.bursts.poll_drained(|p| shm.stream_unread(p));
    }

    pub(super) fn pump_streams(&mut self) {
        for p in 0..self.size as usize {
            // Outgoing: copy the front send's next bytes into the stream.
            while let Some(so) = self.state.stream_out[p].front() {
                let (token, pos, len) = (so.token, so.pos, so.len);
                self.link.shm.stream_push_window(p, so.window);
                let r = self.state.rdv.get(token as usize).and_then(|s| s.as_ref()).map(|s| s.r);
                let pieces = r.and_then(|r| self.pieces(r));
                let began = Instant::now();
                let moved = match &pieces {
                    Some(pc) => push_from(&self.link.shm, p, pc, pos, len),
                    None => {
                        // Its execution failed: keep the stream in step with zeros.
                        let z = vec![0u8; (len - pos).min(1 << 20)];
                        self.link.shm.stream_push(p, &z)
                    }
                };
                self.copied(moved);
                let so = self.state.stream_out[p].front_mut().unwrap_or_else(|| unreachable!());
                if so.since.is_none() {
                    so.since = Some(began);
                }
                if moved > 0 {
                    so.tail_ns = adapt::stream_trail_ns(began.elapsed().as_nanos() as u64, moved);
                }
                so.pos += moved;
                if so.pos < so.len {
                    break;
                }
                let done = self.state.stream_out[p].pop_front().unwrap_or_else(|| unreachable!());
                self.state.streams_active -= 1;
                if let Some(t) = done.since {
                    let exchange = self.in_exchange(token);
                    let incoming = self.state.stream_in[p].len();
                    if exchange && incoming > 0 {
                        // Half of an exchange: timed until the messages
                        // coming the other way that are in the stream now
                        // are copied out too (see `ExchangeTiming`).
                        self.state.exchange_timing[p] = Some(ExchangeTiming { since: t, len: done.len, incoming });
                    } else {
                        let ns = t.elapsed().as_nanos() as u64 + if exchange { 0 } else { done.tail_ns };
                        self.adapt.record(p, done.len, adapt::Path::Stream, exchange, ns);
                    }
                }
                if let Some(s) = self.take_token(token) {
                    self.rdv_sent(s, 0);
                }
            }
            // Incoming: copy what has arrived into the front receive. A
            // fused one takes only what was there at the start: popping on
            // while the sender keeps pushing held this rank here for as
            // long as the message lasted, its own sends waiting.
            let mut avail = usize::MAX;
            while let Some(si) = self.state.stream_in[p].front() {
                let (r, pos, len, fused) = (si.r, si.pos, si.len, si.fused.is_some());
                self.link.shm.stream_pop_window(p, si.window);
                let moved = if fused {
                    if avail == usize::MAX {
                        avail = self.link.shm.stream_available(p);
                    }
                    let n = self.pop_fused(p, avail);
                    avail -= n;
                    n
                } else {
                    let n = match self.pieces(r) {
                        Some(pc) => pop_into(&self.link.shm, p, &pc, pos, len),
                        None => {
                            let n = (len - pos).min(1 << 20);
                            self.state.discard.resize(n, 0);
                            self.link.shm.stream_pop(p, &mut self.state.discard[..n])
                        }
                    };
                    self.copied(n);
                    n
                };
                let si = self.state.stream_in[p].front_mut().unwrap_or_else(|| unreachable!());
                si.pos += moved;
                if si.pos < si.len {
                    break;
                }
                let si = self.state.stream_in[p].pop_front().unwrap_or_else(|| unreachable!());
                self.state.streams_active -= 1;
                if let Some(next) = self.state.stream_in[p].front_mut() {
                    if let Some(t @ None) = next.timed.as_mut() {
                        *t = Some(Instant::now());
                    }
                }
                if let Some(Some(t)) = si.timed {
                    self.windows.record(p, si.len, si.window == StreamWindow::Narrow, t.elapsed().as_nanos() as u64);
                }
                if let Some(x) = self.state.exchange_timing[p].as_mut() {
                    x.incoming -= 1;
                    if x.incoming == 0 {
                        let (since, len) = (x.since, x.len);
                        self.state.exchange_timing[p] = None;
                        self.adapt.record(p, len, adapt::Path::Stream, true, since.elapsed().as_nanos() as u64);
                    }
                }
                match si.fused {
                    Some(f) => self.fused_done(r, p, &f),
                    None => self.finish(r),
                }
            }
        }
    }

}
