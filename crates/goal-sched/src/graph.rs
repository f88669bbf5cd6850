//! GOAL graphs as the user builds them.
//!
//! A graph records what the user asked for, raw: counts, ranks, tags and
//! operator codes are kept exactly as given (as `i64`), so that
//! [`compile`](crate::compile) can refuse a bad value with a message that
//! names the vertex, as the C API contract requires, instead of the adding
//! call silently clamping it.

/// Index of a vertex in its graph, in the order the vertices were added.
pub type VertexId = u64;

/// Receive from any source (extension).
pub const ANY_SOURCE: i64 = -1;
/// Receive with any tag (extension).
pub const ANY_TAG: i64 = -1;

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemType {
    /// An address in the process' memory.
    User,
    /// A byte offset in the execution's scratchpad.
    Scratch,
    /// A byte offset in run-time buffer `i` (`0..RUN_SLOTS`): memory the
    /// caller gives at each run, not when the schedule is compiled.
    Run(u8),
}

/// Number of run-time buffer slots a schedule may leave open.
pub const RUN_SLOTS: usize = 16;

/// C API number of the first run-time buffer memory type
/// ([`MemType::Run`]`(0)`); slot `i` is `MEM_RUN0 + i`.
pub const MEM_RUN0: i64 = 2;

/// Bits of a run-time buffer address below the slot: a *run address*
/// (see [`run_addr`]) keeps its offset there.
pub const RUN_SHIFT: u32 = 56;

/// The user-space address that stands for byte `offset` of run-time buffer
/// `slot`: `(slot + 1) << 56 | offset`. No process has memory there (on
/// x86-64 such an address is not canonical; elsewhere Linux gives user space
/// at most 2^56 bytes), so a user address from `1 << 56` up names a run-time
/// buffer wherever a user address goes: the collective builders of
/// [`coll`](crate::coll) take buffers as addresses and need no other change,
/// and the C API's `GOAL_BUF_AT_RUN(i)` is `run_addr(i, 0)`.
pub const fn run_addr(slot: u8, offset: u64) -> u64 {
    ((slot as u64 + 1) << RUN_SHIFT) | offset
}

impl MemType {
    /// The memory type with C API number `v` (0 user space, 1 scratchpad,
    /// `MEM_RUN0 + i` run-time buffer `i`).
    pub fn from_raw(v: i64) -> Option<MemType> {
        match v {
            0 => Some(MemType::User),
            1 => Some(MemType::Scratch),
            _ if (MEM_RUN0..MEM_RUN0 + RUN_SLOTS as i64).contains(&v) => Some(MemType::Run((v - MEM_RUN0) as u8)),
            _ => None,
        }
    }
}

/// A buffer argument: an address or a scratchpad offset, and which of the two.
///
/// `mem` is kept raw so that a memory type that does not exist is refused at
/// compile time with the vertex named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf {
    /// C API memory type (0 user, 1 scratchpad, [`MEM_RUN0`]` + i` run-time
    /// buffer `i`; anything else is refused).
    pub mem: i64,
    /// Address (user) or byte offset (scratchpad, run-time buffer).
    pub addr: u64,
}

impl Buf {
    /// A user-space address.
    pub fn user(addr: u64) -> Buf {
        Buf { mem: 0, addr }
    }
    /// A scratchpad offset.
    pub fn scratch(offset: u64) -> Buf {
        Buf { mem: 1, addr: offset }
    }
    /// Byte `offset` of run-time buffer `slot`.
    pub fn run(slot: u8, offset: u64) -> Buf {
        Buf { mem: MEM_RUN0 + slot as i64, addr: offset }
    }
}

/// One operation of a graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Vertex {
    /// Send `len` bytes at `buf` to `peer` with `tag`.
    Send {
        /// Source buffer.
        buf: Buf,
        /// Bytes.
        len: i64,
        /// Destination rank.
        peer: i64,
        /// Tag, `>= 0`.
        tag: i64,
    },
    /// Receive up to `len` bytes into `buf` from `peer` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    Recv {
        /// Destination buffer.
        buf: Buf,
        /// Capacity in bytes.
        len: i64,
        /// Source rank or [`ANY_SOURCE`].
        peer: i64,
        /// Tag or [`ANY_TAG`].
        tag: i64,
    },
    /// Send the pieces, in order, as one message.
    SendVec {
        /// Memory type of every piece (C API number).
        mem: i64,
        /// (address or offset, length) of each piece.
        pieces: Vec<(u64, i64)>,
        /// Destination rank.
        peer: i64,
        /// Tag, `>= 0`.
        tag: i64,
    },
    /// Receive one message scattered over the pieces, in order.
    RecvVec {
        /// Memory type of every piece (C API number).
        mem: i64,
        /// (address or offset, length) of each piece.
        pieces: Vec<(u64, i64)>,
        /// Source rank or [`ANY_SOURCE`].
        peer: i64,
        /// Tag or [`ANY_TAG`].
        tag: i64,
    },
    /// `b3[i] = b1[i] OP b2[i]` for `count` elements.
    Local {
        /// Operator (C API number).
        op: i64,
        /// Data type (C API number).
        dt: i64,
        /// Element width in bits.
        width: i64,
        /// Number of elements.
        count: i64,
        /// First operand.
        b1: Buf,
        /// Second operand (unused by COPY and WTIME).
        b2: Buf,
        /// Result.
        b3: Buf,
    },
    /// A local operation over three gather lists, element by element.
    LocalVec {
        /// Operator (C API number).
        op: i64,
        /// Data type (C API number).
        dt: i64,
        /// Element width in bits.
        width: i64,
        /// Memory type and pieces (address or offset, bytes) of each operand.
        lists: [(i64, Vec<(u64, i64)>); 3],
    },
    /// `units` nanoseconds of local work (the text format's `calc`).
    Calc {
        /// Nanoseconds.
        units: i64,
    },
}

impl Vertex {
    /// A short description for messages ("Send to 3, tag 0").
    pub fn describe(&self) -> String {
        match self {
            Vertex::Send { peer, tag, .. } => format!("Send to {peer}, tag {tag}"),
            Vertex::Recv { peer, tag, .. } => format!("Recv from {peer}, tag {tag}"),
            Vertex::SendVec { peer, tag, .. } => format!("SendVec to {peer}, tag {tag}"),
            Vertex::RecvVec { peer, tag, .. } => format!("RecvVec from {peer}, tag {tag}"),
            Vertex::Local { op, .. } | Vertex::LocalVec { op, .. } => match crate::Op::from_raw(*op) {
                Some(o) => format!("LocalOp {}", o.name()),
                None => format!("LocalOp {op}"),
            },
            Vertex::Calc { units } => format!("Calc {units}"),
        }
    }
}

/// A GOAL graph: vertices and "requires" edges, plus the scratchpad size.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub(crate) vertices: Vec<Vertex>,
    /// (prerequisite, target): target starts after prerequisite finished.
    pub(crate) edges: Vec<(u32, u32)>,
    /// (prerequisite, target): target starts after prerequisite started.
    pub(crate) start_edges: Vec<(u32, u32)>,
    pub(crate) scratch: u64,
    /// Receives (by vertex) whose message must be exactly their length
    /// (see [`require_exact`](Graph::require_exact)).
    pub(crate) exact: Vec<u32>,
}

/// Why an edge could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadVertex(pub VertexId);

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Adds a vertex and returns its index.
    pub fn add(&mut self, v: Vertex) -> VertexId {
        self.vertices.push(v);
        (self.vertices.len() - 1) as VertexId
    }

    /// Adds a send of `len` bytes at `buf` to `peer`.
    pub fn send(&mut self, buf: Buf, len: i64, peer: i64, tag: i64) -> VertexId {
        self.add(Vertex::Send { buf, len, peer, tag })
    }

    /// Adds a receive of up to `len` bytes into `buf` from `peer`.
    pub fn recv(&mut self, buf: Buf, len: i64, peer: i64, tag: i64) -> VertexId {
        self.add(Vertex::Recv { buf, len, peer, tag })
    }

    /// Adds `b3[i] = b1[i] op b2[i]` for `count` elements of `dt`/`width`.
    #[allow(clippy::too_many_arguments)]
    pub fn local(&mut self, op: i64, dt: i64, width: i64, count: i64, b1: Buf, b2: Buf, b3: Buf) -> VertexId {
        self.add(Vertex::Local { op, dt, width, count, b1, b2, b3 })
    }

    /// `target` may start only after `prereq` has finished.
    pub fn requires(&mut self, prereq: VertexId, target: VertexId) -> Result<(), BadVertex> {
        let (p, t) = (self.check(prereq)?, self.check(target)?);
        self.edges.push((p, t));
        Ok(())
    }

    /// `target` may start only after `prereq` has started (the text format's `irequires`).
    pub fn requires_start(&mut self, prereq: VertexId, target: VertexId) -> Result<(), BadVertex> {
        let (p, t) = (self.check(prereq)?, self.check(target)?);
        self.start_edges.push((p, t));
        Ok(())
    }

    fn check(&self, v: VertexId) -> Result<u32, BadVertex> {
        if v < self.vertices.len() as u64 && v <= u32::MAX as u64 {
            Ok(v as u32)
        } else {
            Err(BadVertex(v))
        }
    }

    /// Receive `v` takes only a message of exactly its length: a shorter
    /// one fails the execution (`GOAL_ERR_MISMATCH`) instead of filling
    /// part of the buffer. The collectives mark their receives so, since
    /// their ranks must agree on every size: a rank that called one with a
    /// smaller count than its peers would otherwise leave a peer's result
    /// partly unwritten, silently. (Marking a vertex that is not a receive
    /// has no effect.)
    pub fn require_exact(&mut self, v: VertexId) -> Result<(), BadVertex> {
        let v = self.check(v)?;
        self.exact.push(v);
        Ok(())
    }

    /// Sets the scratchpad size (each execution gets its own).
    pub fn set_scratchpad(&mut self, bytes: u64) {
        self.scratch = bytes;
    }

    /// The scratchpad size.
    pub fn scratchpad(&self) -> u64 {
        self.scratch
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// Whether the graph has no vertex.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// The vertices, in the order added.
    pub fn vertices(&self) -> &[Vertex] {
        &self.vertices
    }

    /// The finish-to-start edges (prerequisite, target).
    pub fn edges(&self) -> &[(u32, u32)] {
        &self.edges
    }

    /// The start-to-start edges (prerequisite, target): the target starts
    /// once the prerequisite has started.
    pub fn start_edges(&self) -> &[(u32, u32)] {
        &self.start_edges
    }

    /// Appends every vertex and edge of `other`, returning the index offset of
    /// `other`'s vertices in `self`. The scratchpads are laid side by side:
    /// `other`'s scratchpad offsets are shifted past `self`'s.
    pub fn append(&mut self, other: &Graph) -> (VertexId, u64) {
        let base = self.vertices.len() as u64;
        let sbase = self.scratch;
        let shift = |b: Buf| if b.mem == 1 { Buf { mem: 1, addr: b.addr + sbase } } else { b };
        let shift_list = |mem: i64, pieces: &Vec<(u64, i64)>| -> Vec<(u64, i64)> {
            if mem == 1 {
                pieces.iter().map(|&(a, l)| (a + sbase, l)).collect()
            } else {
                pieces.clone()
            }
        };
        for v in &other.vertices {
            let v = match v {
                Vertex::Send { buf, len, peer, tag } => Vertex::Send { buf: shift(*buf), len: *len, peer: *peer, tag: *tag },
                Vertex::Recv { buf, len, peer, tag } => Vertex::Recv { buf: shift(*buf), len: *len, peer: *peer, tag: *tag },
                Vertex::SendVec { mem, pieces, peer, tag } => {
                    Vertex::SendVec { mem: *mem, pieces: shift_list(*mem, pieces), peer: *peer, tag: *tag }
                }
                Vertex::RecvVec { mem, pieces, peer, tag } => {
                    Vertex::RecvVec { mem: *mem, pieces: shift_list(*mem, pieces), peer: *peer, tag: *tag }
                }
                Vertex::Local { op, dt, width, count, b1, b2, b3 } => Vertex::Local {
                    op: *op,
                    dt: *dt,
                    width: *width,
                    count: *count,
                    b1: shift(*b1),
                    b2: shift(*b2),
                    b3: shift(*b3),
                },
                Vertex::LocalVec { op, dt, width, lists } => Vertex::LocalVec {
                    op: *op,
                    dt: *dt,
                    width: *width,
                    lists: [
                        (lists[0].0, shift_list(lists[0].0, &lists[0].1)),
                        (lists[1].0, shift_list(lists[1].0, &lists[1].1)),
                        (lists[2].0, shift_list(lists[2].0, &lists[2].1)),
                    ],
                },
                Vertex::Calc { units } => Vertex::Calc { units: *units },
            };
            self.vertices.push(v);
        }
        let b = base as u32;
        self.edges.extend(other.edges.iter().map(|&(p, t)| (p + b, t + b)));
        self.start_edges.extend(other.start_edges.iter().map(|&(p, t)| (p + b, t + b)));
        self.scratch += other.scratch;
        (base, sbase)
    }
}
