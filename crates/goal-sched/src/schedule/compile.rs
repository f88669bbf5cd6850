//! The compiler: checks a [`Graph`] (cycles, ranks, buffers, operators) and
//! encodes it into the flat records of a [`Schedule`] (see the parent
//! module for the layout).

use super::*;
use crate::error::{CompileError, CompileErrorKind as K};
use crate::graph::{run_addr, Graph, MemType, Vertex, RUN_SHIFT, RUN_SLOTS};
use crate::ops::check_local;
use std::collections::VecDeque;

/// What the compiler needs to know about the group.
#[derive(Debug, Clone, Copy)]
pub struct CompileOptions {
    /// Number of ranks in the group: peers must lie in `0..group_size`.
    pub group_size: u32,
}

/// Checks `g` and compiles it into a [`Schedule`].
///
/// Refuses, naming the vertex and the reason: a dependency cycle, a rank
/// outside the group, a scratchpad range past the scratchpad's size, a
/// run-time buffer range past 2^56 bytes, an operator, type, width or memory
/// type that does not exist, a negative count or tag, a list that mixes
/// process memory with run-time buffers.
pub fn compile(g: &Graph, opts: &CompileOptions) -> Result<Schedule, CompileError> {
    if let Some((reduced, kept)) = elide_nops(g) {
        // Errors are reported against the graph the user wrote: on any
        // failure, compile that one for the message.
        if let Ok(mut s) = compile_exact(&reduced, opts) {
            for o in &mut s.origin {
                *o = kept[*o as usize];
            }
            return Ok(s);
        }
    }
    compile_exact(g, opts)
}

/// Removes the vertices that do nothing (`Calc 0`), joining each one's
/// prerequisites to its dependents, where that does not add edges: a vertex
/// with p prerequisites and d dependents is replaced by p x d edges, so it
/// goes when p x d <= p + d (always for the entry and exit vertices of a
/// stand-alone collective, which have p = 0 or d = 0). Each such vertex would
/// otherwise cost a pass through the executor on every run, about a tenth of
/// a microsecond, as much as a whole shared-memory hop. Vertices with
/// start edges (irequires) keep their meaning only as vertices, so they stay.
///
/// Returns the reduced graph and, for each of its vertices, the original
/// index; `None` when there is nothing to remove.
fn elide_nops(g: &Graph) -> Option<(Graph, Vec<u32>)> {
    let is_nop = |v: &Vertex| matches!(v, Vertex::Calc { units: 0 });
    if !g.vertices.iter().any(is_nop) {
        return None;
    }
    let n = g.vertices.len();
    let mut pinned = vec![false; n];
    for &(p, t) in &g.start_edges {
        pinned[p as usize] = true;
        pinned[t as usize] = true;
    }
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(p, t) in &g.edges {
        if !succs[p as usize].contains(&t) {
            succs[p as usize].push(t);
            preds[t as usize].push(p);
        }
    }
    let mut gone = vec![false; n];
    for x in 0..n {
        if !is_nop(&g.vertices[x]) || pinned[x] || succs[x].contains(&(x as u32)) {
            continue;
        }
        let (np, nd) = (preds[x].len(), succs[x].len());
        if np * nd > np + nd {
            continue;
        }
        gone[x] = true;
        let (ps, ds) = (std::mem::take(&mut preds[x]), std::mem::take(&mut succs[x]));
        let xu = x as u32;
        for &p in &ps {
            succs[p as usize].retain(|&t| t != xu);
        }
        for &d in &ds {
            preds[d as usize].retain(|&q| q != xu);
        }
        for &p in &ps {
            for &d in &ds {
                if !succs[p as usize].contains(&d) {
                    succs[p as usize].push(d);
                    preds[d as usize].push(p);
                }
            }
        }
    }
    let kept: Vec<u32> = (0..n as u32).filter(|&v| !gone[v as usize]).collect();
    if kept.len() == n {
        return None;
    }
    let mut new_id = vec![u32::MAX; n];
    for (i, &v) in kept.iter().enumerate() {
        new_id[v as usize] = i as u32;
    }
    let mut r = Graph { scratch: g.scratch, ..Graph::default() };
    r.vertices = kept.iter().map(|&v| g.vertices[v as usize].clone()).collect();
    for &v in &kept {
        for &t in &succs[v as usize] {
            r.edges.push((new_id[v as usize], new_id[t as usize]));
        }
    }
    r.start_edges = g.start_edges.iter().map(|&(p, t)| (new_id[p as usize], new_id[t as usize])).collect();
    r.exact = g.exact.iter().filter(|&&v| !gone[v as usize]).map(|&v| new_id[v as usize]).collect();
    Some((r, kept))
}

/// [`compile`] without removing anything: every vertex becomes an operation.
fn compile_exact(g: &Graph, opts: &CompileOptions) -> Result<Schedule, CompileError> {
    let n = g.vertices.len();
    if n > u32::MAX as usize - 1 {
        return Err(CompileError { kind: K::TooLarge, vertex: None, message: format!("{n} vertices: a schedule holds at most 2^32-2") });
    }
    let mut s = Schedule { scratch: g.scratch, ..Schedule::default() };

    // 1. Order: Kahn's algorithm over both kinds of edges, FIFO so that
    //    independent operations keep the order in which they were added.
    let mut indeg = vec![0u32; n];
    let mut out_count = vec![0u32; n + 1];
    for &(p, t) in &g.edges {
        indeg[t as usize] += 1;
        out_count[p as usize] += 1;
    }
    let mut sout_count = vec![0u32; n + 1];
    for &(p, t) in &g.start_edges {
        indeg[t as usize] += 1;
        sout_count[p as usize] += 1;
    }
    let adj = csr(n, &g.edges, &out_count);
    let sadj = if g.start_edges.is_empty() { (Vec::new(), Vec::new()) } else { csr(n, &g.start_edges, &sout_count) };

    let mut remaining = indeg.clone();
    let mut queue: VecDeque<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
    s.independent = queue.len() as u32;
    let mut order = Vec::with_capacity(n);
    while let Some(v) = queue.pop_front() {
        order.push(v);
        let v = v as usize;
        let (start, end) = (adj.0[v] as usize, adj.0[v + 1] as usize);
        for &t in &adj.1[start..end] {
            let r = &mut remaining[t as usize];
            *r -= 1;
            if *r == 0 {
                queue.push_back(t);
            }
        }
        if !sadj.0.is_empty() {
            let (start, end) = (sadj.0[v] as usize, sadj.0[v + 1] as usize);
            for &t in &sadj.1[start..end] {
                let r = &mut remaining[t as usize];
                *r -= 1;
                if *r == 0 {
                    queue.push_back(t);
                }
            }
        }
    }
    if order.len() < n {
        return Err(cycle_error(g, &remaining));
    }
    let mut pos = vec![0u32; n];
    for (i, &v) in order.iter().enumerate() {
        pos[v as usize] = i as u32;
    }

    // 2. Emit records in that order, checking each vertex.
    s.ops.reserve_exact(n);
    s.edges.reserve_exact(g.edges.len());
    s.origin.reserve_exact(n);
    let mut exact = vec![false; if g.exact.is_empty() { 0 } else { n }];
    for &v in &g.exact {
        exact[v as usize] = true;
    }
    for &v in &order {
        let vi = v as usize;
        let vert = &g.vertices[vi];
        let mut rec = OpRec { kind: 0, flags: 0, reserved: 0, deps: indeg[vi], peer: 0, tag: 0, addr: 0, len: 0, first_dep: s.edges.len() as u32 };
        encode(&mut s, &mut rec, vert, vi, opts)?;
        if exact.get(vi).copied().unwrap_or(false) && matches!(rec.kind(), OpKind::Recv | OpKind::RecvVec) {
            rec.flags |= FLAG_EXACT;
        }
        s.ops.push(rec);
        s.origin.push(v);
        let (start, end) = (adj.0[vi] as usize, adj.0[vi + 1] as usize);
        s.edges.extend(adj.1[start..end].iter().map(|&t| pos[t as usize]));
    }
    if !g.start_edges.is_empty() {
        s.start_index.reserve_exact(n + 1);
        for &v in &order {
            let vi = v as usize;
            s.start_index.push(s.start_edges.len() as u32);
            let (start, end) = (sadj.0[vi] as usize, sadj.0[vi + 1] as usize);
            s.start_edges.extend(sadj.1[start..end].iter().map(|&t| pos[t as usize]));
        }
        s.start_index.push(s.start_edges.len() as u32);
    }
    Ok(s)
}

/// Compressed adjacency: (index of length n+1, targets).
fn csr(n: usize, edges: &[(u32, u32)], out_count: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut index = vec![0u32; n + 1];
    let mut acc = 0u32;
    for i in 0..n {
        index[i] = acc;
        acc += out_count[i];
    }
    index[n] = acc;
    let mut fill = index.clone();
    let mut targets = vec![0u32; edges.len()];
    for &(p, t) in edges {
        let f = &mut fill[p as usize];
        targets[*f as usize] = t;
        *f += 1;
    }
    (index, targets)
}

/// Names one cycle among the vertices Kahn's algorithm could not order.
fn cycle_error(g: &Graph, remaining: &[u32]) -> CompileError {
    let n = g.vertices.len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(p, t) in g.edges.iter().chain(&g.start_edges) {
        if remaining[p as usize] > 0 && remaining[t as usize] > 0 {
            preds[t as usize].push(p);
        }
    }
    // Every unordered vertex has an unordered predecessor: walk back until a repeat.
    let start = remaining.iter().position(|&r| r > 0).unwrap_or(0);
    let mut seen = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut v = start;
    while seen[v] == usize::MAX {
        seen[v] = walk.len();
        walk.push(v);
        v = preds[v].first().map_or(v, |&p| p as usize);
    }
    let mut cycle: Vec<usize> = walk[seen[v]..].to_vec();
    cycle.reverse();
    let first = *cycle.iter().min().unwrap_or(&v);
    let rot = cycle.iter().position(|&x| x == first).unwrap_or(0);
    cycle.rotate_left(rot);
    let mut path: Vec<String> = cycle.iter().map(|x| x.to_string()).collect();
    path.push(first.to_string());
    let what = g.vertices[first].describe();
    CompileError::at(K::Cycle, first, &what, format!("is on a dependency cycle: {}", path.join(" -> ")))
}

fn encode(s: &mut Schedule, rec: &mut OpRec, v: &Vertex, vi: usize, opts: &CompileOptions) -> Result<(), CompileError> {
    let what = || v.describe();
    let err = |kind, msg: String| CompileError::at(kind, vi, &what(), msg);
    let size = opts.group_size as i64;
    let scratch = s.scratch;
    let check_len = |len: i64, name: &str| -> Result<u32, CompileError> {
        if len < 0 {
            return Err(err(K::BadArgument, format!("{name} {len} is negative")));
        }
        u32::try_from(len).map_err(|_| err(K::TooLarge, format!("{name} {len} is larger than 4 GiB - 1")))
    };
    let check_mem = |mem: i64| -> Result<MemType, CompileError> {
        MemType::from_raw(mem).ok_or_else(|| {
            err(K::BadOp, format!("memory type {mem} does not exist (GOAL_USERSPACE 0, GOAL_SCRATCHPAD 1, GOAL_RUNBUF(0 .. 15) 2 .. 17)"))
        })
    };
    // Where an operand of `len` bytes at `addr` in `mem` lies: whether its
    // compiled address is relative, and that address (see "Relative
    // addresses"). A user address from 2^56 up is a run-time buffer's.
    let place = |run: &mut Vec<u64>, mem: MemType, addr: u64, len: u64, name: &str| -> Result<(bool, u64), CompileError> {
        let limit = 1u64 << RUN_SHIFT;
        let slot = match mem {
            MemType::User => match addr >> RUN_SHIFT {
                k @ 1..=16 => Some(((k - 1) as u8, addr & (limit - 1))),
                _ => return Ok((false, addr)),
            },
            MemType::Run(i) => Some((i, addr)),
            MemType::Scratch => None,
        };
        let end = addr.checked_add(len).filter(|&e| e <= limit);
        let Some((i, off)) = slot else {
            if len > 0 && end.is_none_or(|end| end > scratch) {
                return Err(err(
                    K::Scratchpad,
                    format!("{name} range [{addr}, {}) reaches past the scratchpad of {scratch} bytes", addr.saturating_add(len)),
                ));
            }
            // (An empty range's offset is never read: kept below the slots.)
            return Ok((true, addr & (limit - 1)));
        };
        let Some(end) = off.checked_add(len).filter(|&e| e <= limit) else {
            return Err(err(
                K::BadArgument,
                format!("{name} range [{off}, {}) of run-time buffer {i} reaches past 2^56 bytes", off.saturating_add(len)),
            ));
        };
        if run.len() <= i as usize {
            run.resize(i as usize + 1, 0);
        }
        run[i as usize] = run[i as usize].max(end);
        Ok((true, run_addr(i, off)))
    };
    let check_peer = |peer: i64, wildcard: bool| -> Result<i32, CompileError> {
        if wildcard && peer == -1 {
            return Ok(-1);
        }
        if peer < 0 || peer >= size {
            let role = if wildcard { "source" } else { "destination" };
            return Err(err(K::Rank, format!("{role} rank {peer} is outside the group of {size} ranks")));
        }
        Ok(peer as i32)
    };
    let check_tag = |tag: i64, wildcard: bool| -> Result<i32, CompileError> {
        if wildcard && tag == -1 {
            return Ok(-1);
        }
        if tag < 0 || tag > i32::MAX as i64 {
            return Err(err(K::BadArgument, format!("tag {tag} is invalid (tags are 0 ..= 2^31-1)")));
        }
        Ok(tag as i32)
    };
    // A list is relative as a whole: in user memory, only if one of its
    // pieces lies in a run-time buffer, and then every piece with bytes must.
    let push_list = |s: &mut Schedule, mem: MemType, pieces: &[(u64, i64)], name: &str| -> Result<(VecRec, u64, bool), CompileError> {
        let first = s.pieces.len() as u32;
        let rel = mem != MemType::User || pieces.iter().any(|p| (1..=RUN_SLOTS as u64).contains(&(p.0 >> RUN_SHIFT)));
        let mut total = 0u64;
        for (k, &(addr, len)) in pieces.iter().enumerate() {
            let len = check_len(len, &format!("{name} piece {k} length"))?;
            let (r, mut at) = place(&mut s.run, mem, addr, len as u64, &format!("{name} piece {k}"))?;
            if r != rel {
                if len > 0 {
                    return Err(err(
                        K::BadArgument,
                        format!("{name} piece {k} is in the process' memory, others in run-time buffers: a list lies in one or the other"),
                    ));
                }
                // (Never read: an empty piece, resolved to an address that is valid.)
                at = 0;
            }
            total += len as u64;
            s.pieces.push(Piece { addr: at, len, reserved: 0 });
        }
        Ok((VecRec { first, count: pieces.len() as u32 }, total, rel))
    };
    match v {
        Vertex::Send { buf, len, peer, tag } | Vertex::Recv { buf, len, peer, tag } => {
            let is_recv = matches!(v, Vertex::Recv { .. });
            let mem = check_mem(buf.mem)?;
            rec.kind = if is_recv { OpKind::Recv } else { OpKind::Send } as u8;
            rec.len = check_len(*len, "count")?;
            rec.peer = check_peer(*peer, is_recv)?;
            rec.tag = check_tag(*tag, is_recv)?;
            let (rel, at) = place(&mut s.run, mem, buf.addr, rec.len as u64, "buffer")?;
            rec.flags = if rel { FLAG_REL } else { 0 };
            rec.addr = at;
        }
        Vertex::SendVec { mem, pieces, peer, tag } | Vertex::RecvVec { mem, pieces, peer, tag } => {
            let is_recv = matches!(v, Vertex::RecvVec { .. });
            let m = check_mem(*mem)?;
            rec.kind = if is_recv { OpKind::RecvVec } else { OpKind::SendVec } as u8;
            rec.peer = check_peer(*peer, is_recv)?;
            rec.tag = check_tag(*tag, is_recv)?;
            let (vr, total, rel) = push_list(s, m, pieces, "list")?;
            rec.len = u32::try_from(total).map_err(|_| err(K::TooLarge, format!("total of {total} bytes is larger than 4 GiB - 1")))?;
            rec.flags = if rel { FLAG_REL } else { 0 };
            rec.addr = s.vecs.len() as u64;
            s.vecs.push(vr);
        }
        Vertex::Local { op, dt, width, count, b1, b2, b3 } => {
            let (op, dt, width) = check_local(*op, *dt, *width).map_err(|m| err(K::BadOp, m))?;
            let count = check_len(*count, "element count")?;
            let bytes = count as u64 * (width as u64 / 8);
            let mut mem = 0u8;
            let bufs = [(b1, "b1"), (b2, "b2"), (b3, "bres")];
            let mut at = [b1.addr, b2.addr, b3.addr];
            for (i, (b, name)) in bufs.iter().enumerate() {
                let used = match op {
                    Op::Builtin(ReduceOp::Wtime) => i == 2,
                    Op::Builtin(ReduceOp::Copy) => i != 1,
                    _ => true,
                };
                if !used {
                    continue;
                }
                let m = check_mem(b.mem)?;
                let n = if op == ReduceOp::Wtime { 8 } else { bytes };
                let (rel, a) = place(&mut s.run, m, b.addr, n, name)?;
                at[i] = a;
                if rel {
                    mem |= 1 << i;
                }
            }
            rec.kind = OpKind::Local as u8;
            rec.addr = s.locals.len() as u64;
            rec.len = bytes.min(u32::MAX as u64) as u32;
            rec.peer = -1;
            let (op, user) = op_bytes(op);
            s.locals.push(LocalRec { op, dt: dt as u8, mem, reserved: 0, width, count, user, b1: at[0], b2: at[1], b3: at[2] });
        }
        Vertex::LocalVec { op, dt, width, lists } => {
            let (op, dt, width) = check_local(*op, *dt, *width).map_err(|m| err(K::BadOp, m))?;
            let mut recs = [VecRec::default(); 3];
            let mut totals = [0u64; 3];
            let mut mem = 0u8;
            for (i, (m, pieces)) in lists.iter().enumerate() {
                let used = match op {
                    Op::Builtin(ReduceOp::Wtime) => i == 2,
                    Op::Builtin(ReduceOp::Copy) => i != 1,
                    _ => true,
                };
                if !used {
                    recs[i] = VecRec { first: s.pieces.len() as u32, count: 0 };
                    continue;
                }
                let mt = check_mem(*m)?;
                let (r, t, rel) = push_list(s, mt, pieces, ["buf1", "buf2", "buf3"][i])?;
                recs[i] = r;
                totals[i] = t;
                if rel {
                    mem |= 1 << i;
                }
            }
            let esize = width as u64 / 8;
            if op != ReduceOp::Wtime {
                if totals[0] != totals[2] || (op.is_binary() && totals[1] != totals[0]) {
                    return Err(err(
                        K::BadArgument,
                        format!("the lists hold {}, {} and {} bytes; they must be equal", totals[0], totals[1], totals[2]),
                    ));
                }
                if totals[0] % esize != 0 {
                    return Err(err(K::BadArgument, format!("{} bytes is not a whole number of {width}-bit elements", totals[0])));
                }
                if let Some((k, p)) = lists.iter().flat_map(|l| l.1.iter()).enumerate().find(|(_, p)| !(p.1 as u64).is_multiple_of(esize)) {
                    return Err(err(K::BadArgument, format!("piece {k} of {} bytes splits a {width}-bit element", p.1)));
                }
            } else if totals[2] < 8 {
                return Err(err(K::BadArgument, "GOAL_WTIME needs 8 bytes in its result list".into()));
            }
            rec.kind = OpKind::LocalVec as u8;
            rec.addr = s.lvecs.len() as u64;
            rec.len = totals[2].min(u32::MAX as u64) as u32;
            rec.peer = -1;
            let (op, user) = op_bytes(op);
            s.lvecs.push(LocalVecRec { op, dt: dt as u8, mem, reserved: 0, width, user, lists: recs });
        }
        Vertex::Calc { units } => {
            if *units < 0 {
                return Err(err(K::BadArgument, format!("calc {units} is negative")));
            }
            rec.kind = OpKind::Calc as u8;
            rec.addr = *units as u64;
            rec.peer = -1;
        }
    }
    Ok(())
}
