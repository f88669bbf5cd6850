//! Calibration on a live connection: the PROBE exchanges behind
//! [`NetNode::measure_crossover`] and the peer's side of them, answered from
//! inside its `poll`. The arithmetic and the per-peer state are in
//! `crate::probe`, which knows nothing of the node; this is the part that
//! sends and polls.

use super::NetNode;
use crate::bulk::INTERNAL_TOKEN;
use crate::conn::TxItem;
use crate::event::Queued;
use crate::probe::{median, probe_frame, Crossover, CrossoverPoint, CTS, DONE, ECHO_REP, ECHO_REQ, MAX_PROBE_BULK, RTS};
use std::io;
use std::time::{Duration, Instant};

impl NetNode {
    /// Writes a PROBE frame to `p` on its first connection.
    fn send_probe(&mut self, p: u32, op: u32, id: u64, size: u64, body: &[u8]) -> io::Result<()> {
        let c = *self.peers[p as usize].up.first().ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, format!("goal-net: rank {p} is not connected")))?;
        let f = probe_frame(op, id, size, body);
        let conn = self.conn(c);
        conn.push(TxItem::Own(f));
        if conn.tx.len() == 1 {
            self.flush(c);
        }
        Ok(())
    }

    /// Serves or records a PROBE frame from `p` (called from `poll`).
    pub(super) fn on_probe(&mut self, p: u32, op: u32, id: u64, size: u64, _body: &[u8]) -> Result<(), String> {
        let res = match op {
            ECHO_REQ => self.send_probe(p, ECHO_REP, id, 0, &[]),
            RTS => {
                if size > MAX_PROBE_BULK {
                    return Err(format!("protocol error: a {size}-byte calibration transfer"));
                }
                let token = INTERNAL_TOKEN | id;
                let mut sink = vec![0u8; size as usize];
                let dst = vec![(sink.as_mut_ptr(), sink.len())];
                // Registered first: a repeated id fails here, before a sink
                // still registered under it could be replaced (and freed).
                if let Err(e) = self.expect_inner(p, token, dst, true) {
                    return Err(format!("protocol error: calibration step {id}: {e}"));
                }
                // The Vec's heap block does not move when the Vec is moved
                // into the map, so the registration stays valid until the
                // transfer is done (then `probe_bulk_done` frees it) or the
                // peer is lost (both go together).
                self.peers[p as usize].probe.sinks.insert(token, sink);
                self.send_probe(p, CTS, id, size, &[])
            }
            ECHO_REP | CTS | DONE => {
                self.peers[p as usize].probe.replies.push((op, id));
                Ok(())
            }
            _ => return Err(format!("protocol error: unknown calibration step {op}")),
        };
        res.map_err(|e| e.to_string())
    }

    /// An internal transfer from `p` is complete: free its sink and answer.
    pub(super) fn probe_bulk_done(&mut self, p: u32, token: u64) {
        self.peers[p as usize].probe.sinks.remove(&token);
        let _ = self.send_probe(p, DONE, token & !INTERNAL_TOKEN, 0, &[]);
    }

    /// Polls until the reply `(op, id)` from `p` arrives.
    fn await_reply(&mut self, p: u32, op: u32, id: u64, deadline: Instant, held: &mut Vec<Queued>) -> io::Result<()> {
        loop {
            let replies = &mut self.peers[p as usize].probe.replies;
            if let Some(i) = replies.iter().position(|&r| r == (op, id)) {
                replies.swap_remove(i);
                return Ok(());
            }
            if let Some(why) = &self.peers[p as usize].lost {
                return Err(io::Error::new(io::ErrorKind::NotConnected, why.clone()));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("goal-net: rank {p} did not answer the calibration (is it polling?)")));
            }
            self.poll(&mut |e| held.push(Queued::keep(e)));
        }
    }

    /// Times eager and rendezvous transfers of each of `sizes` to `peer`
    /// (`reps` times each, medians) and returns the curves and the crossover.
    /// The peer must be polling; our own traffic should be quiet. Events
    /// that arrive meanwhile are kept and delivered by the next `poll`
    /// (active messages included, in order).
    pub fn measure_crossover(&mut self, peer: u32, sizes: &[usize], reps: usize) -> io::Result<Crossover> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut held = Vec::new();
        let r = self.measure_inner(peer, sizes, reps.max(1), deadline, &mut held);
        for e in held.into_iter().rev() {
            self.pending.push_front(e);
        }
        r
    }

    fn measure_inner(&mut self, peer: u32, sizes: &[usize], reps: usize, deadline: Instant, held: &mut Vec<Queued>) -> io::Result<Crossover> {
        let mut points = Vec::new();
        for &size in sizes {
            if size > self.cfg.max_am_payload || size as u64 > MAX_PROBE_BULK {
                continue;
            }
            let payload = vec![0x5au8; size];
            let mut eager = Vec::new();
            let mut rndv = Vec::new();
            for _ in 0..reps {
                let id = self.peers[peer as usize].probe.next_id();
                let t = Instant::now();
                self.send_probe(peer, ECHO_REQ, id, size as u64, &payload)?;
                self.await_reply(peer, ECHO_REP, id, deadline, held)?;
                eager.push(t.elapsed().as_secs_f64() * 1e6);

                let id = self.peers[peer as usize].probe.next_id();
                let token = INTERNAL_TOKEN | id;
                let t = Instant::now();
                self.send_probe(peer, RTS, id, size as u64, &[])?;
                self.await_reply(peer, CTS, id, deadline, held)?;
                let src = payload.clone();
                let pieces = vec![(src.as_ptr(), src.len())];
                self.peers[peer as usize].probe.sources.insert(token, src);
                self.send_bulk_inner(peer, token, pieces, true)?;
                self.await_reply(peer, DONE, id, deadline, held)?;
                rndv.push(t.elapsed().as_secs_f64() * 1e6);
                // The source may be freed once no connection writes from it.
                while self.peers[peer as usize].rel.bulk_out.iter().any(|b| b.token == token) && Instant::now() < deadline {
                    self.poll(&mut |e| held.push(Queued::keep(e)));
                }
                if self.peers[peer as usize].rel.bulk_out.iter().all(|b| b.token != token) {
                    self.peers[peer as usize].probe.sources.remove(&token);
                }
            }
            points.push(CrossoverPoint { size, eager_us: median(&mut eager), rndv_us: median(&mut rndv) });
        }
        Ok(Crossover::from_points(points))
    }

}
