//! One rank's text graph as a [`goal_sched::Graph`], for `goal run`.
//!
//! The text names sizes, not buffers, so each send and receive gets a
//! region of the graph's scratchpad of its own size, laid out in the order
//! written ([`Converted::regions`]); the execution allocates the scratchpad,
//! so the caller allocates nothing. `calc N` becomes a
//! [`Vertex::Calc`](goal_sched::Vertex::Calc) of N nanoseconds, `requires`
//! an edge, `irequires` a start edge, `-1` the wildcards.
//!
//! Not carried over: `cpu` and `nic` (goal runs a rank's operations on one
//! progress engine; the simulator models them). TODO: a layout that reuses
//! regions when a rank's total outgrows memory.

use goal_sched::{Buf, Graph, Vertex, ANY_SOURCE, ANY_TAG};

use crate::{OpKind, RankGraph};

/// A rank's graph and where its messages live.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The graph; vertex `i` is operation `i` of the rank.
    pub graph: Graph,
    /// For each operation, its scratchpad region (offset, bytes); `None`
    /// for a calc.
    pub regions: Vec<Option<(u64, u64)>>,
}

/// Why a rank cannot become a graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertError {
    /// The operation (index in the rank) to blame.
    pub op: usize,
    /// What is wrong.
    pub message: String,
}

/// Converts rank `g`. Sizes past what a graph holds (`i64`) and a
/// scratchpad past 2^64 bytes are refused; the rest is checked by
/// [`goal_sched::compile`] (e.g. a message of 4 GiB or more).
pub fn to_graph(g: &RankGraph) -> Result<Converted, ConvertError> {
    to_graph_at(g, None)
}

/// As [`to_graph`], with the regions laid out the same way but in user
/// memory starting at address `base` when given (the caller then owns a
/// buffer of the total size, and can fill the sends and read the receives:
/// `goal run` checks bytes so), in the scratchpad otherwise.
pub fn to_graph_at(g: &RankGraph, base: Option<u64>) -> Result<Converted, ConvertError> {
    let mut graph = Graph::new();
    let mut regions = Vec::with_capacity(g.ops.len());
    let mut scratch = 0u64;
    for (i, op) in g.ops.iter().enumerate() {
        let too_big = |what: &str| ConvertError { op: i, message: format!("operation {} ({what}) is too large for a graph", g.name(i)) };
        let mut region = |bytes: u64| -> Result<(Buf, i64), ConvertError> {
            let len = i64::try_from(bytes).map_err(|_| too_big("size"))?;
            let at = scratch;
            scratch = scratch.checked_add(bytes).ok_or_else(|| too_big("scratchpad"))?;
            regions.push(Some((at, bytes)));
            let buf = match base {
                Some(b) => Buf::user(b.checked_add(at).ok_or_else(|| too_big("address"))?),
                None => Buf::scratch(at),
            };
            Ok((buf, len))
        };
        match op.kind {
            OpKind::Send { bytes, to, tag } => {
                let (buf, len) = region(bytes)?;
                graph.send(buf, len, to as i64, tag as i64);
            }
            OpKind::Recv { bytes, from, tag } => {
                let (buf, len) = region(bytes)?;
                let peer = from.map_or(ANY_SOURCE, |p| p as i64);
                graph.recv(buf, len, peer, tag.map_or(ANY_TAG, |t| t as i64));
            }
            OpKind::Calc { units } => {
                let units = i64::try_from(units).map_err(|_| too_big("units"))?;
                graph.add(Vertex::Calc { units });
                regions.push(None);
            }
        }
    }
    if base.is_none() {
        graph.set_scratchpad(scratch);
    }
    for d in &g.deps {
        let (p, t) = (d.prereq as u64, d.target as u64);
        let added = if d.on_start { graph.requires_start(p, t) } else { graph.requires(p, t) };
        // The parser only records dependencies between operations it read.
        added.map_err(|_| ConvertError { op: d.target as usize, message: "a dependency names an operation that does not exist".into() })?;
    }
    Ok(Converted { graph, regions })
}
