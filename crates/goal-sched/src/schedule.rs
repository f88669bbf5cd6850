//! The compiled schedule: a compact form the runtime interprets.
//!
//! # Layout
//!
//! A [`Schedule`] is a handful of flat arrays of `#[repr(C)]` records, so
//! the in-memory form is the binary form (see [`Schedule::to_bytes`]):
//!
//! ```text
//! header                    96 bytes: magic and the array lengths
//! ops:    [OpRec; n]        32 bytes each, in topological order: the
//!                           `independent` operations (no prerequisite) first
//! edges:  [u32; e]          dependents of op i: edges[ops[i].first_dep .. ops[i+1].first_dep]
//!                           (the last op's run ends at e)
//! locals: [LocalRec]        40 bytes per local operation (op, type, width, user op, 3 buffers)
//! vecs:   [VecRec]          8 bytes per vector send/receive: a run of `pieces`
//! lvecs:  [LocalVecRec]     36 bytes per vector local operation: three runs of `pieces`
//! pieces: [Piece]           16 bytes per piece (address or offset, length)
//! start_index, start_edges  only for graphs with "irequires" edges: CSR of
//!                           the operations that wait for op i to *start*
//! run:    [u64; r]          bytes each run-time buffer slot must hold (see below)
//! origin: [u32; n]          the graph vertex each op came from (for messages)
//! ```
//!
//! `OpRec`:
//!
//! ```text
//!  0  kind u8   (OpKind)       1  flags u8 (bit 0: relative buffer; bit 1: exact-length receive)
//!  2  reserved u16             4  deps u32 (initial dependency counter)
//!  8  peer i32 (-1: any)      12  tag i32 (-1: any)
//! 16  addr u64: address or relative address (Send/Recv), index into
//!     vecs (SendVec/RecvVec), locals (Local), lvecs (LocalVec), or units (Calc)
//! 24  len u32: bytes (total bytes for vectors)
//! 28  first_dep u32: index of the first dependent in `edges`
//! ```
//!
//! # Relative addresses
//!
//! A buffer is either an address in the process' memory or *relative* to
//! the execution (flag bit 0 of an op, the `mem` bits of a local operation):
//! then its top byte says relative to what, and the 56 bits below are the
//! offset. Top byte 0 is the execution's scratchpad; `k` in `1..=16` is
//! run-time buffer `k - 1`, memory given by each run
//! ([`run_addr`](crate::run_addr)), so a compiled address is the same
//! number the collective builders use for it. The runtime resolves a
//! relative address with one table of bases per execution (scratchpad and
//! run-time buffers). `run[i]` is the largest end (offset + length) of any
//! operand in run-time buffer `i`; a schedule whose `run` is not empty must
//! be given that many buffers, each at least that large, at every run.
//!
//! A send or receive costs 32 bytes plus 4 per outgoing edge. An execution
//! copies only the `deps` counters (4 bytes per op); the schedule itself is
//! never written, so any number of executions of one schedule can run at once.

use crate::error::{CompileError, CompileErrorKind as K};
use crate::graph::{run_addr, Graph, MemType, Vertex, RUN_SHIFT, RUN_SLOTS};
use crate::ops::check_local;
use crate::{DataType, Op, ReduceOp, UserOp};
use std::collections::VecDeque;

/// Bytes of the header of [`Schedule::to_bytes`].
pub const HEADER_BYTES: usize = 96;

/// What an [`OpRec`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OpKind {
    /// Contiguous send.
    Send = 0,
    /// Contiguous receive.
    Recv = 1,
    /// Gather-list send.
    SendVec = 2,
    /// Scatter-list receive.
    RecvVec = 3,
    /// Local operation.
    Local = 4,
    /// Local operation over three lists.
    LocalVec = 5,
    /// Local work of `addr` nanoseconds.
    Calc = 6,
}

impl OpKind {
    fn from_u8(v: u8) -> OpKind {
        match v {
            0 => OpKind::Send,
            1 => OpKind::Recv,
            2 => OpKind::SendVec,
            3 => OpKind::RecvVec,
            4 => OpKind::Local,
            5 => OpKind::LocalVec,
            _ => OpKind::Calc,
        }
    }
}

/// One operation of a schedule (32 bytes; see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct OpRec {
    /// [`OpKind`] as a byte.
    pub kind: u8,
    /// Bit 0 ([`FLAG_REL`]): the buffer (`addr`) is a relative address;
    /// bit 1 ([`FLAG_EXACT`]): an exact-length receive.
    pub flags: u8,
    /// Reserved, zero.
    pub reserved: u16,
    /// Number of prerequisites: the initial dependency counter.
    pub deps: u32,
    /// Peer rank, -1 for any source.
    pub peer: i32,
    /// Tag, -1 for any tag.
    pub tag: i32,
    /// Address, relative address, or index of the operation's extra record.
    pub addr: u64,
    /// Bytes moved (total for vectors).
    pub len: u32,
    /// First index of this op's dependents in `edges`.
    pub first_dep: u32,
}

/// Flag bit of [`OpRec::flags`]: the buffer is a relative address
/// (scratchpad or run-time buffer; see the module documentation).
pub const FLAG_REL: u8 = 1;
/// Flag bit of [`OpRec::flags`]: a receive that takes only a message of
/// exactly `len` bytes (see [`Graph::require_exact`](crate::Graph::require_exact)).
pub const FLAG_EXACT: u8 = 2;

impl OpRec {
    /// The operation's kind.
    pub fn kind(&self) -> OpKind {
        OpKind::from_u8(self.kind)
    }
    /// Whether the buffer is a relative address (scratchpad or run-time buffer).
    #[inline(always)]
    pub fn relative(&self) -> bool {
        self.flags & FLAG_REL != 0
    }
    /// Whether a receive takes only a message of exactly `len` bytes.
    pub fn exact(&self) -> bool {
        self.flags & FLAG_EXACT != 0
    }
}

/// [`LocalRec::op`]'s byte for a user operator (whose number is in `user`).
pub const OP_USER: u8 = 0xFF;

/// A local operation's parameters (40 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct LocalRec {
    /// [`ReduceOp`] as a byte, or [`OP_USER`].
    pub op: u8,
    /// [`DataType`] as a byte.
    pub dt: u8,
    /// Bit i: buffer i (0 = b1, 1 = b2, 2 = b3) is a relative address.
    pub mem: u8,
    /// Reserved, zero.
    pub reserved: u8,
    /// Element width in bits.
    pub width: u32,
    /// Number of elements.
    pub count: u32,
    /// The user operator (`2 * id + commutative`) when `op` is [`OP_USER`], else 0.
    pub user: u32,
    /// First operand.
    pub b1: u64,
    /// Second operand.
    pub b2: u64,
    /// Result.
    pub b3: u64,
}

/// `(op, user)` bytes of a record for `op`.
fn op_bytes(op: Op) -> (u8, u32) {
    match op {
        Op::Builtin(o) => (o as u8, 0),
        Op::User(u) => (OP_USER, 2 * u.id + u.commutative as u32),
    }
}

/// The operator of a record's `(op, user)`.
#[inline(always)]
fn op_of(op: u8, user: u32) -> Op {
    if op == OP_USER {
        Op::User(UserOp { id: user / 2, commutative: user % 2 == 1 })
    } else {
        Op::Builtin(ReduceOp::ALL[op as usize])
    }
}

impl LocalRec {
    /// The operator.
    #[inline(always)]
    pub fn op(&self) -> Op {
        op_of(self.op, self.user)
    }
    /// The element type.
    pub fn dt(&self) -> DataType {
        DataType::from_raw(self.dt as i64).unwrap_or(DataType::UInt)
    }
}

/// A run of [`Piece`]s (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct VecRec {
    /// Index of the first piece.
    pub first: u32,
    /// Number of pieces.
    pub count: u32,
}

/// A local operation over three lists (36 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct LocalVecRec {
    /// [`ReduceOp`] as a byte, or [`OP_USER`].
    pub op: u8,
    /// [`DataType`] as a byte.
    pub dt: u8,
    /// Bit i: list i's pieces are relative addresses.
    pub mem: u8,
    /// Reserved, zero.
    pub reserved: u8,
    /// Element width in bits.
    pub width: u32,
    /// The user operator, as in [`LocalRec::user`].
    pub user: u32,
    /// The three lists: operand 1, operand 2, result.
    pub lists: [VecRec; 3],
}

impl LocalVecRec {
    /// The operator.
    pub fn op(&self) -> Op {
        op_of(self.op, self.user)
    }
    /// The element type.
    pub fn dt(&self) -> DataType {
        DataType::from_raw(self.dt as i64).unwrap_or(DataType::UInt)
    }
}

/// One piece of a gather/scatter list (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Piece {
    /// Address or relative address.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// Reserved, zero.
    pub reserved: u32,
}

/// A compiled, immutable GOAL schedule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schedule {
    /// Operations, the `independent` ones first.
    pub ops: Vec<OpRec>,
    /// Dependents (finish-to-start), CSR-indexed by `OpRec::first_dep`.
    pub edges: Vec<u32>,
    /// Start-to-start dependents: `start_edges[start_index[i]..start_index[i+1]]`; empty if none.
    pub start_index: Vec<u32>,
    /// See `start_index`.
    pub start_edges: Vec<u32>,
    /// Local operation records.
    pub locals: Vec<LocalRec>,
    /// Vector send/receive records.
    pub vecs: Vec<VecRec>,
    /// Vector local operation records.
    pub lvecs: Vec<LocalVecRec>,
    /// Pieces of all lists.
    pub pieces: Vec<Piece>,
    /// Number of operations without prerequisites (they are `ops[..independent]`).
    pub independent: u32,
    /// Scratchpad bytes per execution.
    pub scratch: u64,
    /// Bytes each run-time buffer must hold, by slot; empty when the
    /// schedule has all its buffers (see the module documentation).
    pub run: Vec<u64>,
    /// Graph vertex of each op.
    pub origin: Vec<u32>,
}

impl Schedule {
    /// Dependents of op `i` (operations waiting for it to finish).
    #[inline(always)]
    pub fn dependents(&self, i: usize) -> &[u32] {
        let start = self.ops[i].first_dep as usize;
        let end = self.ops.get(i + 1).map_or(self.edges.len(), |o| o.first_dep as usize);
        &self.edges[start..end]
    }

    /// Operations waiting for op `i` to start.
    #[inline]
    pub fn start_dependents(&self, i: usize) -> &[u32] {
        if self.start_index.is_empty() {
            return &[];
        }
        &self.start_edges[self.start_index[i] as usize..self.start_index[i + 1] as usize]
    }

    /// The pieces of a list.
    #[inline]
    pub fn pieces_of(&self, v: VecRec) -> &[Piece] {
        &self.pieces[v.first as usize..(v.first + v.count) as usize]
    }

    /// Bytes of the compiled form (what [`to_bytes`](Self::to_bytes) writes).
    pub fn byte_size(&self) -> usize {
        HEADER_BYTES + self.ops.len() * 32
            + self.edges.len() * 4
            + self.start_index.len() * 4
            + self.start_edges.len() * 4
            + self.locals.len() * 40
            + self.vecs.len() * 8
            + self.lvecs.len() * 36
            + self.pieces.len() * 16
            + self.run.len() * 8
    }

    /// The binary form: a 96-byte header (magic `GOALSCH1`, then as
    /// little-endian u64 the element count of each array in the order below,
    /// the number of independent operations, the scratchpad size, and the
    /// number of run-time buffers),
    /// followed by the arrays in the order of the module documentation, each
    /// record little-endian and packed. `origin` is not part of it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.byte_size());
        b.extend_from_slice(b"GOALSCH1");
        for n in [
            self.ops.len() as u64,
            self.edges.len() as u64,
            self.start_index.len() as u64,
            self.start_edges.len() as u64,
            self.locals.len() as u64,
            self.vecs.len() as u64,
            self.lvecs.len() as u64,
            self.pieces.len() as u64,
            self.independent as u64,
            self.scratch,
            self.run.len() as u64,
        ] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        for o in &self.ops {
            b.extend_from_slice(&[o.kind, o.flags]);
            b.extend_from_slice(&o.reserved.to_le_bytes());
            b.extend_from_slice(&o.deps.to_le_bytes());
            b.extend_from_slice(&o.peer.to_le_bytes());
            b.extend_from_slice(&o.tag.to_le_bytes());
            b.extend_from_slice(&o.addr.to_le_bytes());
            b.extend_from_slice(&o.len.to_le_bytes());
            b.extend_from_slice(&o.first_dep.to_le_bytes());
        }
        for e in self.edges.iter().chain(&self.start_index).chain(&self.start_edges) {
            b.extend_from_slice(&e.to_le_bytes());
        }
        for l in &self.locals {
            b.extend_from_slice(&[l.op, l.dt, l.mem, l.reserved]);
            for x in [l.width, l.count, l.user] {
                b.extend_from_slice(&x.to_le_bytes());
            }
            for x in [l.b1, l.b2, l.b3] {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        for v in &self.vecs {
            b.extend_from_slice(&v.first.to_le_bytes());
            b.extend_from_slice(&v.count.to_le_bytes());
        }
        for l in &self.lvecs {
            b.extend_from_slice(&[l.op, l.dt, l.mem, l.reserved]);
            b.extend_from_slice(&l.width.to_le_bytes());
            b.extend_from_slice(&l.user.to_le_bytes());
            for v in &l.lists {
                b.extend_from_slice(&v.first.to_le_bytes());
                b.extend_from_slice(&v.count.to_le_bytes());
            }
        }
        for p in &self.pieces {
            b.extend_from_slice(&p.addr.to_le_bytes());
            b.extend_from_slice(&p.len.to_le_bytes());
            b.extend_from_slice(&p.reserved.to_le_bytes());
        }
        for r in &self.run {
            b.extend_from_slice(&r.to_le_bytes());
        }
        b
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Buf;

    fn opts(n: u32) -> CompileOptions {
        CompileOptions { group_size: n }
    }

    #[test]
    fn records_have_the_documented_sizes() {
        assert_eq!(std::mem::size_of::<OpRec>(), 32);
        assert_eq!(std::mem::size_of::<LocalRec>(), 40);
        assert_eq!(std::mem::size_of::<VecRec>(), 8);
        assert_eq!(std::mem::size_of::<LocalVecRec>(), 36);
        assert_eq!(std::mem::size_of::<Piece>(), 16);
    }

    #[test]
    fn independent_operations_come_first_in_the_order_added() {
        let mut g = Graph::new();
        let r = g.recv(Buf::user(0x1000), 8, 0, 0);
        let s1 = g.send(Buf::user(0x1000), 8, 1, 0);
        let s2 = g.send(Buf::user(0x2000), 8, 2, 0);
        g.requires(r, s1).unwrap();
        let s = compile(&g, &opts(3)).unwrap();
        assert_eq!(s.independent, 2);
        assert_eq!(s.origin, vec![r as u32, s2 as u32, s1 as u32]);
        assert_eq!(s.dependents(0), &[2]);
        assert_eq!(s.ops[2].deps, 1);
        assert!(s.dependents(1).is_empty() && s.dependents(2).is_empty());
    }

    #[test]
    fn a_cycle_is_refused_naming_its_vertices() {
        let mut g = Graph::new();
        let a = g.send(Buf::user(8), 1, 0, 0);
        let b = g.recv(Buf::user(8), 1, 0, 0);
        let c = g.send(Buf::user(8), 1, 0, 1);
        g.requires(a, b).unwrap();
        g.requires(b, c).unwrap();
        g.requires(c, b).unwrap();
        let e = compile(&g, &opts(1)).unwrap_err();
        assert_eq!(e.kind, K::Cycle);
        assert_eq!(e.vertex, Some(1));
        assert!(e.message.contains("cycle: 1 -> 2 -> 1"), "{}", e.message);
    }

    #[test]
    fn bad_arguments_are_refused_with_the_vertex_named() {
        let local =
            |op: i64, dt: i64, width: i64| Vertex::Local { op, dt, width, count: 1, b1: Buf::user(8), b2: Buf::user(8), b3: Buf::user(8) };
        let cases: Vec<(Vertex, K, &str)> = vec![
            (Vertex::Send { buf: Buf::user(8), len: 1, peer: 4, tag: 0 }, K::Rank, "destination rank 4 is outside the group of 4"),
            (Vertex::Send { buf: Buf::user(8), len: 1, peer: -1, tag: 0 }, K::Rank, "rank -1"),
            (Vertex::Recv { buf: Buf::user(8), len: 1, peer: -2, tag: 0 }, K::Rank, "source rank -2"),
            (Vertex::Send { buf: Buf::user(8), len: -1, peer: 0, tag: 0 }, K::BadArgument, "count -1 is negative"),
            (Vertex::Send { buf: Buf::user(8), len: 1, peer: 0, tag: -1 }, K::BadArgument, "tag -1"),
            (Vertex::Recv { buf: Buf::scratch(60), len: 8, peer: 0, tag: 0 }, K::Scratchpad, "[60, 68) reaches past the scratchpad of 64"),
            (Vertex::Send { buf: Buf { mem: 42, addr: 0 }, len: 1, peer: 0, tag: 0 }, K::BadOp, "memory type 42"),
            (local(ReduceOp::Xor as i64, 2, 64), K::BadOp, "GOAL_XOR is not defined on GOAL_FLOAT"),
            (local(ReduceOp::Add as i64, 0, 12), K::BadOp, "width 12"),
            (local(42, 0, 8), K::BadOp, "operator 42"),
            (local(ReduceOp::And as i64, 3, 16), K::BadOp, "GOAL_AND is not defined on GOAL_BFLOAT of width 16"),
            (local(ReduceOp::Xor as i64, 2, 16), K::BadOp, "GOAL_XOR is not defined on GOAL_FLOAT of width 16"),
            (local(ReduceOp::Add as i64, 3, 32), K::BadOp, "element width 32 bits does not exist for GOAL_BFLOAT (it takes 16 only)"),
            (local(ReduceOp::Add as i64, 2, 8), K::BadOp, "element width 8 bits does not exist for GOAL_FLOAT (it takes 16, 32 or 64)"),
            (local(ReduceOp::Add as i64, 5, 16), K::BadOp, "data type 5 does not exist"),
            (local(ReduceOp::Add as i64, 4, 96), K::BadOp, "GOAL_ADD is not defined on GOAL_BYTES"),
            (local(UserOp { id: 3, commutative: false }.raw(), 4, 12), K::BadOp, "element width 12 bits does not exist for GOAL_BYTES"),
            (local(-1, 0, 8), K::BadOp, "operator -1"),
        ];
        for (v, kind, needle) in cases {
            let mut g = Graph::new();
            g.set_scratchpad(64);
            g.send(Buf::user(8), 1, 0, 0);
            g.add(v.clone());
            let e = compile(&g, &opts(4)).unwrap_err();
            assert_eq!(e.kind, kind, "{v:?}: {}", e.message);
            assert_eq!(e.vertex, Some(1));
            assert!(e.message.starts_with("vertex 1 ("), "{}", e.message);
            assert!(e.message.contains(needle), "{:?} lacks {needle:?}", e.message);
        }
    }

    /// binary16 and bfloat16 take every operator a float takes, as local
    /// operations and vectors of pieces, and their elements are 2 bytes.
    #[test]
    fn sixteen_bit_floats_compile_with_every_float_operator() {
        for (dt, name) in [(DataType::Float, "binary16"), (DataType::BFloat, "bfloat16")] {
            for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Sub, ReduceOp::Div, ReduceOp::Mul, ReduceOp::Copy] {
                let mut g = Graph::new();
                g.set_scratchpad(64);
                g.local(op as i64, dt as i64, 16, 32, Buf::scratch(0), Buf::scratch(0), Buf::scratch(0));
                let pieces = vec![(0u64, 6i64), (16, 2)];
                g.add(Vertex::LocalVec {
                    op: op as i64,
                    dt: dt as i64,
                    width: 16,
                    lists: [(1, pieces.clone()), (1, pieces.clone()), (1, pieces)],
                });
                let s = compile(&g, &opts(1)).unwrap_or_else(|e| panic!("{name} {}: {e}", op.name()));
                assert_eq!((s.locals[0].dt(), s.locals[0].width), (dt, 16));
                assert_eq!(s.lvecs[0].dt, dt as u8);
            }
            let mut g = Graph::new();
            g.set_scratchpad(64);
            g.local(ReduceOp::Add as i64, dt as i64, 16, 33, Buf::scratch(0), Buf::scratch(0), Buf::scratch(0));
            let e = compile(&g, &opts(1)).unwrap_err();
            assert!(e.message.contains("scratchpad"), "{name}: 33 elements are 66 bytes: {}", e.message);
            let mut g = Graph::new();
            g.set_scratchpad(64);
            let odd = vec![(0u64, 3i64), (16, 3)];
            g.add(Vertex::LocalVec {
                op: ReduceOp::Add as i64,
                dt: dt as i64,
                width: 16,
                lists: [(1, odd.clone()), (1, odd.clone()), (1, odd)],
            });
            let e = compile(&g, &opts(1)).unwrap_err();
            assert!(e.message.contains("splits a 16-bit element"), "{name}: {}", e.message);
        }
    }

    #[test]
    fn empty_vertices_are_removed_and_their_order_kept() {
        // user op -> entry (Calc 0) -> {a, b} -> done (Calc 0) -> user op
        let mut g = Graph::new();
        let first = g.send(Buf::user(8), 1, 1, 0);
        let entry = g.add(Vertex::Calc { units: 0 });
        let a = g.send(Buf::user(8), 1, 1, 1);
        let b = g.recv(Buf::user(8), 1, 1, 1);
        let done = g.add(Vertex::Calc { units: 0 });
        let last = g.recv(Buf::user(8), 1, 1, 2);
        for (p, t) in [(first, entry), (entry, a), (entry, b), (a, done), (b, done), (done, last)] {
            g.requires(p, t).unwrap();
        }
        let s = compile(&g, &opts(2)).unwrap();
        assert_eq!(s.origin, vec![first as u32, a as u32, b as u32, last as u32]);
        assert_eq!(s.independent, 1);
        assert_eq!(s.dependents(0), &[1, 2]);
        assert_eq!(s.dependents(1), &[3]);
        assert_eq!(s.dependents(2), &[3]);
        assert_eq!(s.ops[3].deps, 2);
    }

    #[test]
    fn empty_vertices_stay_where_removing_them_adds_edges_or_changes_meaning() {
        // 3 x 3 through one Calc 0: 6 edges, 9 without it
        let mut g = Graph::new();
        let hub = g.add(Vertex::Calc { units: 0 });
        for i in 0..3 {
            let p = g.send(Buf::user(8), 1, 0, i);
            let d = g.recv(Buf::user(8), 1, 0, i);
            g.requires(p, hub).unwrap();
            g.requires(hub, d).unwrap();
        }
        assert_eq!(compile(&g, &opts(1)).unwrap().ops.len(), 7);
        // a start edge (irequires) names it
        let mut g = Graph::new();
        let c = g.add(Vertex::Calc { units: 0 });
        let x = g.send(Buf::user(8), 1, 0, 0);
        g.requires_start(c, x).unwrap();
        assert_eq!(compile(&g, &opts(1)).unwrap().ops.len(), 2);
        // an empty graph stays empty; a graph of nothing but Calc 0 becomes empty
        let mut g = Graph::new();
        let c = g.add(Vertex::Calc { units: 0 });
        let d = g.add(Vertex::Calc { units: 0 });
        g.requires(c, d).unwrap();
        assert!(compile(&g, &opts(1)).unwrap().ops.is_empty());
    }

    #[test]
    fn a_cycle_through_an_empty_vertex_is_named_in_the_graph_as_written() {
        let mut g = Graph::new();
        let a = g.send(Buf::user(8), 1, 0, 0);
        let nop = g.add(Vertex::Calc { units: 0 });
        let b = g.recv(Buf::user(8), 1, 0, 0);
        g.requires(a, nop).unwrap();
        g.requires(nop, b).unwrap();
        g.requires(b, nop).unwrap();
        let e = compile(&g, &opts(1)).unwrap_err();
        assert_eq!(e.kind, K::Cycle);
        assert!(e.message.contains("1 -> 2 -> 1"), "{}", e.message);
        // and a bad vertex behind one keeps its own number
        let mut g = Graph::new();
        let nop = g.add(Vertex::Calc { units: 0 });
        let bad = g.send(Buf::user(8), 1, 9, 0);
        g.requires(nop, bad).unwrap();
        let e = compile(&g, &opts(2)).unwrap_err();
        assert_eq!(e.vertex, Some(1), "{}", e.message);
    }

    #[test]
    fn wildcards_are_receive_only() {
        let mut g = Graph::new();
        g.recv(Buf::user(8), 1, -1, -1);
        assert!(compile(&g, &opts(2)).is_ok());
    }

    /// A user operator (with opaque elements or a built-in type) compiles
    /// into a record that gives it back, commutativity included.
    #[test]
    fn user_operators_and_opaque_elements_survive_compilation() {
        for (u, dt, width) in [(UserOp { id: 0, commutative: true }, 4, 96), (UserOp { id: UserOp::MAX_ID, commutative: false }, 2, 64)] {
            let mut g = Graph::new();
            g.set_scratchpad(1 << 12);
            g.local(u.raw(), dt, width, 10, Buf::scratch(0), Buf::scratch(1024), Buf::scratch(2048));
            g.add(Vertex::LocalVec { op: u.raw(), dt, width, lists: [(1, vec![(0, 120)]), (1, vec![(1024, 120)]), (1, vec![(2048, 120)])] });
            let s = compile(&g, &opts(1)).unwrap();
            assert_eq!((s.locals[0].op(), s.locals[0].width, s.locals[0].dt()), (Op::User(u), width as u32, DataType::from_raw(dt).unwrap()));
            assert_eq!(s.lvecs[0].op(), Op::User(u));
            assert!(u.raw() <= i32::MAX as i64 && UserOp::from_raw(u.raw()) == Some(u));
        }
        // COPY moves opaque elements too.
        let mut g = Graph::new();
        g.local(ReduceOp::Copy as i64, 4, 8 * 12, 3, Buf::user(0), Buf::user(0), Buf::user(64));
        assert_eq!(compile(&g, &opts(1)).unwrap().locals[0].width, 96);
    }

    #[test]
    fn a_million_operation_chain_compiles_quickly() {
        let n = 1_000_000u64;
        let mut g = Graph::new();
        let mut prev = None;
        for i in 0..n {
            let v = g.local(ReduceOp::Copy as i64, 1, 8, 1, Buf::user(8), Buf::user(0), Buf::user(16));
            if let Some(p) = prev {
                g.requires(p, v).unwrap();
            }
            prev = Some(v);
            assert_eq!(v, i);
        }
        let s = compile(&g, &opts(1)).unwrap();
        assert_eq!(s.ops.len(), n as usize);
        assert_eq!(s.independent, 1);
        assert_eq!(s.edges.len(), n as usize - 1);
        // 32 bytes per op, 40 per local record, 4 per edge
        assert!(s.byte_size() < (n as usize) * 80);
    }

    #[test]
    fn send_recv_cost_32_bytes_plus_4_per_edge() {
        let mut g = Graph::new();
        let r = g.recv(Buf::user(8), 8, 0, 0);
        for k in 0..10 {
            let x = g.send(Buf::user(8), 8, 0, k);
            g.requires(r, x).unwrap();
        }
        let s = compile(&g, &opts(1)).unwrap();
        assert_eq!(s.byte_size(), HEADER_BYTES + 11 * 32 + 10 * 4);
        assert_eq!(s.to_bytes().len(), s.byte_size());
    }

    #[test]
    fn start_edges_order_and_count() {
        let mut g = Graph::new();
        let a = g.recv(Buf::user(8), 8, 0, 0);
        let b = g.send(Buf::user(8), 8, 0, 0);
        g.requires_start(a, b).unwrap();
        let s = compile(&g, &opts(1)).unwrap();
        assert_eq!(s.independent, 1);
        assert_eq!(s.start_dependents(0), &[1]);
        assert_eq!(s.ops[1].deps, 1);
    }

    #[test]
    fn append_shifts_vertices_edges_and_scratchpad() {
        let mut a = Graph::new();
        a.set_scratchpad(16);
        let x = a.send(Buf::scratch(0), 16, 0, 0);
        let mut b = Graph::new();
        b.set_scratchpad(8);
        let r = b.recv(Buf::scratch(0), 8, 0, 0);
        let y = b.send(Buf::scratch(0), 8, 0, 1);
        b.requires(r, y).unwrap();
        let (base, sbase) = a.append(&b);
        assert_eq!((base, sbase), (1, 16));
        a.requires(x, base + r).unwrap();
        assert_eq!(a.scratchpad(), 24);
        assert_eq!(a.vertices()[1], Vertex::Recv { buf: Buf::scratch(16), len: 8, peer: 0, tag: 0 });
        assert_eq!(a.edges(), &[(1, 2), (0, 1)]);
        assert!(compile(&a, &opts(1)).is_ok());
    }
}
