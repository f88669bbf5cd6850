//! Measuring where rendezvous starts to beat eager on a real connection.
//!
//! The executor decides per message between eager (the payload travels in
//! the active message and is copied out at the receiver) and rendezvous
//! (RTS, CTS, then a bulk transfer read straight into place). Which is faster
//! depends on the link and the machine, so
//! [`NetNode::measure_crossover`](crate::NetNode::measure_crossover) times
//! both on the connection itself:
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
//!
//! This module holds what needs no node: the per-peer calibration state,
//! the PROBE frame, and the fitting of the curves. The exchanges themselves
//! run in the node (`node/calibrate.rs`), which depends on this module and
//! not the other way round.

use std::collections::HashMap;

pub(crate) const ECHO_REQ: u32 = 1;
pub(crate) const ECHO_REP: u32 = 2;
pub(crate) const RTS: u32 = 3;
pub(crate) const CTS: u32 = 4;
pub(crate) const DONE: u32 = 5;

/// Largest rendezvous probe a peer serves (it allocates that much).
pub(crate) const MAX_PROBE_BULK: u64 = 256 << 20;

/// Calibration state kept per peer.
#[derive(Default)]
pub(crate) struct ProbePeer {
    /// Receiver: scratch destinations of internal transfers, by token.
    pub(crate) sinks: HashMap<u64, Vec<u8>>,
    /// Sender: sources of internal transfers, by token.
    pub(crate) sources: HashMap<u64, Vec<u8>>,
    /// Replies received: (op, id).
    pub(crate) replies: Vec<(u32, u64)>,
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

/// What [`NetNode::measure_crossover`](crate::NetNode::measure_crossover) found.
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

pub(crate) fn probe_frame(op: u32, id: u64, size: u64, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    crate::wire::encode(&crate::wire::Frame::Probe { op, id, size, body }, &mut b);
    b
}

impl ProbePeer {
    /// A fresh calibration id (never 0).
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

impl Crossover {
    /// Fits both curves to the measured points and finds where they cross.
    pub(crate) fn from_points(points: Vec<CrossoverPoint>) -> Crossover {
        let eager_fit = fit(points.iter().map(|p| (p.size as f64, p.eager_us)));
        let rndv_fit = fit(points.iter().map(|p| (p.size as f64, p.rndv_us)));
        let crossover = if eager_fit.1 > rndv_fit.1 {
            let x = (rndv_fit.0 - eager_fit.0) / (eager_fit.1 - rndv_fit.1);
            Some(x.max(0.0) as usize)
        } else {
            None
        };
        Crossover { points, eager_fit, rndv_fit, crossover }
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
