//! goal's own collectives as programs and as text: the graphs the runtime
//! builds ([`goal_sched::coll::World`]), one rank at a time, converted
//! operation for operation.
//!
//! Vertex `i` of a rank's graph becomes operation `i` (label `l{i+1}` in
//! the text): a send or receive of its length (a vector one of the sum of
//! its pieces; `ANY_SOURCE` and `ANY_TAG` become `-1`), a local operation a
//! calc of `bytes x cost` units ([`Cost`]; free by default: LogGOPS models
//! communication), a calc a calc (the no-op entry and exit of every
//! collective are `calc 0`). Dependencies follow in the graph's order,
//! finish edges (`requires`) then start edges (`irequires`), in the program
//! and in the text alike: [`program`] and [`write_text`] of the same world
//! simulate identically.

use std::io::Write;

use goal_sched::coll::World;
use goal_sched::{Graph, Vertex, ANY_SOURCE, ANY_TAG};

use crate::program::{Attr, Kind, OpSpec, Program, ProgramBuilder, ANY};

/// What a local operation (reduction, copy) costs in `calc` units (ns):
/// `per_byte` times the bytes it writes, rounded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Units per byte.
    pub per_byte: f64,
}

/// One operation of a graph: (kind, size, peer, tag).
fn convert(v: &Vertex, cost: Cost) -> Result<(Kind, u64, u32, u32), String> {
    let len = |l: i64| u64::try_from(l).map_err(|_| format!("a length of {l} bytes"));
    let sum = |p: &[(u64, i64)]| p.iter().try_fold(0u64, |a, &(_, l)| Ok::<u64, String>(a.saturating_add(len(l)?)));
    let peer = |p: i64| if p == ANY_SOURCE { Ok(ANY) } else { u32::try_from(p).map_err(|_| format!("peer {p}")) };
    let tag = |t: i64| if t == ANY_TAG { Ok(ANY) } else { u32::try_from(t).map_err(|_| format!("tag {t}")) };
    let calc = |bytes: u64| (bytes as f64 * cost.per_byte).round() as u64;
    Ok(match v {
        Vertex::Send { len: l, peer: p, tag: t, .. } => (Kind::Send, len(*l)?, peer(*p)?, tag(*t)?),
        Vertex::Recv { len: l, peer: p, tag: t, .. } => (Kind::Recv, len(*l)?, peer(*p)?, tag(*t)?),
        Vertex::SendVec { pieces, peer: p, tag: t, .. } => (Kind::Send, sum(pieces)?, peer(*p)?, tag(*t)?),
        Vertex::RecvVec { pieces, peer: p, tag: t, .. } => (Kind::Recv, sum(pieces)?, peer(*p)?, tag(*t)?),
        Vertex::Local { width, count, .. } => (Kind::Calc, calc(len(*count)?.saturating_mul(len(*width)? / 8)), 0, 0),
        Vertex::LocalVec { lists, .. } => (Kind::Calc, calc(sum(&lists[2].1)?), 0, 0),
        Vertex::Calc { units } => (Kind::Calc, len(*units)?, 0, 0),
    })
}

/// Adds rank `g`'s graph to `b`.
pub fn add_graph(b: &mut ProgramBuilder, g: &Graph, cost: Cost) -> Result<(), String> {
    b.begin_rank();
    for v in g.vertices() {
        let (kind, size, peer, tag) = convert(v, cost)?;
        b.op(OpSpec { attr: Attr { kind, size, tag, cpu: 0, nic: 0 }, peer }).map_err(|e| e.0)?;
    }
    for &(p, t) in g.edges() {
        b.dep(t, p, false);
    }
    for &(p, t) in g.start_edges() {
        b.dep(t, p, true);
    }
    b.end_rank().map_err(|e| e.0)
}

/// Every rank of `w` as a program; `on_rank(r)` is told as each rank is
/// built (for progress).
pub fn program(w: &World, cost: Cost, mut on_rank: impl FnMut(u32)) -> Result<Program, String> {
    let mut b = ProgramBuilder::new(w.size);
    for r in 0..w.size {
        let g = w.rank_graph(r).map_err(|e| format!("rank {r}: {e}"))?;
        if r == 0 {
            let n = g.len() as u64 * w.size as u64;
            b.reserve(n.min(u32::MAX as u64) as usize, (g.edges().len() as u64 * w.size as u64).min(u32::MAX as u64) as usize);
        }
        add_graph(&mut b, &g, cost).map_err(|e| format!("rank {r}: {e}"))?;
        on_rank(r);
    }
    b.finish().map_err(|e| e.0)
}

/// Writes `w` as a text schedule in Schedgen's layout (`num_ranks`, one
/// block per rank, labels `l1`, `l2`, ...), which LogGOPSim reads too.
pub fn write_text(w: &World, cost: Cost, out: &mut (impl Write + ?Sized)) -> std::io::Result<()> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    let mut text = String::new();
    writeln!(out, "num_ranks {}", w.size)?;
    for r in 0..w.size {
        let g = w.rank_graph(r).map_err(|e| bad(format!("rank {r}: {e}")))?;
        text.clear();
        rank_text(r, &g, cost, &mut text).map_err(|e| bad(format!("rank {r}: {e}")))?;
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// Rank `r`'s block.
pub fn rank_text(r: u32, g: &Graph, cost: Cost, out: &mut String) -> Result<(), String> {
    use std::fmt::Write as _;
    let num = |v: u32| if v == ANY { "-1".to_string() } else { v.to_string() };
    let _ = writeln!(out, "\nrank {r} {{");
    for (i, v) in g.vertices().iter().enumerate() {
        let (kind, size, peer, tag) = convert(v, cost)?;
        let l = i + 1;
        let _ = match kind {
            Kind::Send => writeln!(out, "l{l}: send {size}b to {peer} tag {tag}"),
            Kind::Recv => writeln!(out, "l{l}: recv {size}b from {} tag {}", num(peer), num(tag)),
            Kind::Calc => writeln!(out, "l{l}: calc {size}"),
        };
    }
    for &(p, t) in g.edges() {
        let _ = writeln!(out, "l{} requires l{}", t + 1, p + 1);
    }
    for &(p, t) in g.start_edges() {
        let _ = writeln!(out, "l{} irequires l{}", t + 1, p + 1);
    }
    out.push_str("}\n");
    Ok(())
}
