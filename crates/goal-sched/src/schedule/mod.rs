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

use crate::{DataType, Op, ReduceOp, UserOp};

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

mod compile;
#[cfg(test)]
mod tests;

pub use compile::{compile, CompileOptions};
