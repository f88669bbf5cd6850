//! Measuring where rendezvous starts to beat eager on a real connection.
//!
//! The executor decides per message between eager (the payload travels in
//! the active message and is copied out at the receiver) and rendezvous
//! (RTS, CTS, then a bulk transfer read straight into place). Which is faster
//! depends on the link and the machine, so [`NetNode::measure_crossover`]
//! times both on the connection itself:
//!
//! * eager(s): a PROBE echo request carrying `s` bytes, answered by an empty
//!   reply, round trip.
//! * rendezvous(s): a PROBE "RTS" for `s` bytes; the peer registers a
//!   scratch buffer and answers "CTS"; we send `s` bytes as an (internal)
//!   bulk transfer; the peer answers "DONE" when the last byte is in. That is
//!   the executor's RTS / CTS / data / completion sequence exactly.
//!
//! The peer answers from inside its own `poll`, so it only has to be polling
//! (any goal process is). The crossover is the smallest measured size from
//! which rendezvous is at least as fast; eager also costs the executor a copy
//! out of its unexpected buffer, which is not in eager(s), so the true
//! crossover is, if anything, lower.

use crate::node::{NetNode, Queued, INTERNAL_TOKEN};
use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

const ECHO_REQ: u32 = 1;
const ECHO_REP: u32 = 2;
const RTS: u32 = 3;
const CTS: u32 = 4;
const DONE: u32 = 5;

/// Largest rendezvous probe a peer serves (it allocates that much).
const MAX_PROBE_BULK: u64 = 256 << 20;

/// Calibration state kept per peer.
#[derive(Default)]
pub(crate) struct ProbePeer {
    /// Receiver: scratch destinations of internal transfers, by token.
    sinks: HashMap<u64, Vec<u8>>,
    /// Sender: sources of internal transfers, by token.
    sources: HashMap<u64, Vec<u8>>,
    /// Replies received: (op, id).
    replies: Vec<(u32, u64)>,
    next_id: u64,
}

/// One measured size.
#[derive(Debug, Clone, Copy)]
pub struct CrossoverPoint {
    /// Message size in bytes.
    pub size: usize,
    /// Median eager round trip (message out, empty reply back), microseconds.
    pub eager_us: f64,
    /// Median rendezvous (RTS, CTS, bulk, DONE), microseconds.
    pub rndv_us: f64,
}

/// What [`NetNode::measure_crossover`] found.
#[derive(Debug, Clone)]
pub struct Crossover {
    /// Every size measured.
    pub points: Vec<CrossoverPoint>,
    /// Eager time as a line fitted to the points: (microseconds, microseconds per byte).
    pub eager_fit: (f64, f64),
    /// Rendezvous time, fitted the same way.
    pub rndv_fit: (f64, f64),
    /// Where the two lines cross, in bytes: above it rendezvous is faster.
    /// `None` if eager's cost per byte is not higher (rendezvous never
    /// catches up). Fitting lines rather than comparing single points keeps
    /// one noisy measurement from moving the answer.
    pub crossover: Option<usize>,
}

/// Least-squares line through `(x, y)` points: (intercept, slope).
fn fit(pts: impl Iterator<Item = (f64, f64)> + Clone) -> (f64, f64) {
    let n = pts.clone().count() as f64;
    if n < 2.0 {
        return (pts.clone().next().map_or(0.0, |p| p.1), 0.0);
    }
    let (sx, sy) = pts.clone().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = pts.fold((0.0, 0.0), |(a, b), (x, y)| (a + (x - mx) * (y - my), b + (x - mx) * (x - mx)));
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

fn probe_frame(op: u32, id: u64, size: u64, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    crate::wire::encode(&crate::wire::Frame::Probe { op, id, size, body }, &mut b);
    b
}

impl NetNode {
    /// Writes a PROBE frame to `p` on its first connection.
    fn send_probe(&mut self, p: u32, op: u32, id: u64, size: u64, body: &[u8]) -> io::Result<()> {
        let c = *self.peers[p as usize].up.first().ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, format!("goal-net: rank {p} is not connected")))?;
        let f = probe_frame(op, id, size, body);
        let conn = self.conn(c);
        conn.push(crate::conn::TxItem::Own(f));
        if conn.tx.len() == 1 {
            self.flush(c);
        }
        Ok(())
    }

    /// Serves or records a PROBE frame from `p` (called from `poll`).
    pub(crate) fn on_probe(&mut self, p: u32, op: u32, id: u64, size: u64, _body: &[u8]) -> Result<(), String> {
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
    pub(crate) fn probe_bulk_done(&mut self, p: u32, token: u64) {
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
                let id = self.next_probe_id(peer);
                let t = Instant::now();
                self.send_probe(peer, ECHO_REQ, id, size as u64, &payload)?;
                self.await_reply(peer, ECHO_REP, id, deadline, held)?;
                eager.push(t.elapsed().as_secs_f64() * 1e6);

                let id = self.next_probe_id(peer);
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
                while self.peers[peer as usize].bulk_out.iter().any(|b| b.token == token) && Instant::now() < deadline {
                    self.poll(&mut |e| held.push(Queued::keep(e)));
                }
                if self.peers[peer as usize].bulk_out.iter().all(|b| b.token != token) {
                    self.peers[peer as usize].probe.sources.remove(&token);
                }
            }
            points.push(CrossoverPoint { size, eager_us: median(&mut eager), rndv_us: median(&mut rndv) });
        }
        let eager_fit = fit(points.iter().map(|p| (p.size as f64, p.eager_us)));
        let rndv_fit = fit(points.iter().map(|p| (p.size as f64, p.rndv_us)));
        let crossover = if eager_fit.1 > rndv_fit.1 {
            let x = (rndv_fit.0 - eager_fit.0) / (eager_fit.1 - rndv_fit.1);
            Some(x.max(0.0) as usize)
        } else {
            None
        };
        Ok(Crossover { points, eager_fit, rndv_fit, crossover })
    }

    fn next_probe_id(&mut self, p: u32) -> u64 {
        let pp = &mut self.peers[p as usize].probe;
        pp.next_id += 1;
        pp.next_id
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
