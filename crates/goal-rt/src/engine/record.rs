//! The engine's half of `GOAL_TRACE_FILE`: a record per operation of what
//! it did and when (start, end, peer, bytes, the path its bytes took), kept
//! in a buffer allocated once, at init, and handed to `crate::timeline` at
//! finalize, which aligns the ranks' clocks and writes the file.
//!
//! Cost: the hooks are the `GOAL_TRACE` ones (`trace_start` and
//! `trace_finish`, behind the one cached flag `trace_on` that the 8-byte
//! path already tests), plus `trace_path` and `trace_from` where a path is
//! chosen, which are off that path (rendezvous, the network, the kernel
//! mode) or reached only while tracing (a receive filled in the poll
//! finishes there, not through `delivered`, unless tracing is on). Tracing
//! off adds no instruction to a small message.
//!
//! Paths: an operation whose path nobody set took the default one, told
//! apart at its end by its peer: a copy to itself, an eager message
//! through the ring, or one active message over the network.

use super::*;

/// How an operation's bytes moved (see `docs/api.md`, "Tracing").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Path {
    /// Not set: the default for its kind, decided at its end.
    Unset = 0,
    /// Eager through the shared-memory ring.
    Eager,
    /// A message to this rank itself, copied locally.
    SelfCopy,
    /// Rendezvous through the pair's pipelined stream.
    Stream,
    /// Rendezvous: the receiver reads the sender's memory (Cross Memory Attach).
    Cma,
    /// Rendezvous: one copy out of the sender's shared heap (`GOAL_Alloc`).
    Heap,
    /// Rendezvous: the sender writes into the receiver's memory.
    Push,
    /// Rendezvous: half read by the receiver, half written by the sender.
    Split,
    /// One active message over the network (eager).
    NetEager,
    /// A network bulk transfer (rendezvous).
    NetBulk,
    /// Handed to the kernel in an io_uring chain (`GOAL_PROGRESS=kernel`).
    KernelChain,
    /// A local operation.
    Local,
    /// `calc`: computation.
    Calc,
    /// Copied into the sender's shared heap for a receiver that was not
    /// running, which reads it from there later (see `engine::stage`).
    Staged,
}

impl Path {
    /// Its name in the trace file.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Path::Unset => "unknown",
            Path::Eager => "eager",
            Path::SelfCopy => "self",
            Path::Stream => "stream",
            Path::Cma => "CMA",
            Path::Heap => "heap single copy",
            Path::Push => "push",
            Path::Split => "split",
            Path::NetEager => "network eager",
            Path::NetBulk => "network bulk",
            Path::KernelChain => "kernel chain",
            Path::Local => "local",
            Path::Calc => "calc",
            Path::Staged => "staged",
        }
    }

    /// The path of code `c` (a [`Rec::path`]).
    pub(crate) fn from_code(c: u8) -> Path {
        const ALL: [Path; 14] = [
            Path::Unset, Path::Eager, Path::SelfCopy, Path::Stream, Path::Cma, Path::Heap, Path::Push,
            Path::Split, Path::NetEager, Path::NetBulk, Path::KernelChain, Path::Local, Path::Calc, Path::Staged,
        ];
        ALL.get(c as usize).copied().unwrap_or(Path::Unset)
    }
}

/// What kind of operation a record is, in the trace's words.
pub(crate) const KINDS: [&str; 4] = ["send", "recv", "local", "calc"];

/// One operation: what it did and when (ns on this rank's monotonic clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Rec {
    pub(crate) start: u64,
    /// 0 while it runs.
    pub(crate) end: u64,
    pub(crate) bytes: u64,
    pub(crate) sched: u64,
    pub(crate) exec: u32,
    /// The vertex of the user's graph.
    pub(crate) vertex: u32,
    /// The peer (for a receive from any source, the one its message came
    /// from once known), -1 for none.
    pub(crate) peer: i32,
    pub(crate) tag: i32,
    /// Index in [`KINDS`].
    pub(crate) kind: u8,
    /// A [`Path`].
    pub(crate) path: u8,
}

impl Rec {
    /// Bytes of one record on the wire (see [`encode`](Self::encode)).
    pub(crate) const WIRE: usize = 56;

    /// Little-endian, field by field: what a rank sends rank 0 at finalize.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for x in [self.start, self.end, self.bytes, self.sched] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for x in [self.exec, self.vertex, self.peer as u32, self.tag as u32] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.extend_from_slice(&[self.kind, self.path, 0, 0, 0, 0, 0, 0]);
    }

    /// The record `encode` wrote at the start of `b` (`WIRE` bytes).
    pub(crate) fn decode(b: &[u8]) -> Option<Rec> {
        let b = b.get(..Self::WIRE)?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        Some(Rec {
            start: u64_at(0),
            end: u64_at(8),
            bytes: u64_at(16),
            sched: u64_at(24),
            exec: u32_at(32),
            vertex: u32_at(36),
            peer: u32_at(40) as i32,
            tag: u32_at(44) as i32,
            kind: b[48],
            path: b[49],
        })
    }
}

/// The records of this rank, in a buffer of fixed capacity.
pub(crate) struct Recorder {
    /// Operations in order of start; allocated whole at init.
    pub(crate) recs: Vec<Rec>,
    /// Operations started and not finished: their index in `recs`.
    open: HashMap<(u32, u32, u32), usize>,
    /// Operations not recorded because the buffer was full.
    pub(crate) dropped: u64,
    /// When the recorder was made (ns): the timeline's origin.
    pub(crate) origin: u64,
}

impl Recorder {
    /// Room for `cap` operations.
    pub(crate) fn new(cap: usize) -> Recorder {
        Recorder { recs: Vec::with_capacity(cap), open: HashMap::with_capacity(1024), dropped: 0, origin: localop::monotonic_ns() }
    }

    fn key(r: OpRef) -> (u32, u32, u32) {
        (r.slot, r.gen, r.op)
    }

    /// The record of running operation `r`, if recorded.
    fn open_rec(&mut self, r: OpRef) -> Option<&mut Rec> {
        let i = *self.open.get(&Self::key(r))?;
        self.recs.get_mut(i)
    }
}

/// The record of `o` (operation `op` of execution `e`), started at `now`.
fn rec_of(e: &Exec, op: u32, now: u64) -> Rec {
    let s = &e.sched.s;
    let o = &s.ops[op as usize];
    let (kind, peer, bytes, path) = match o.kind() {
        OpKind::Send | OpKind::SendVec => (0, o.peer, o.len as u64, Path::Unset),
        OpKind::Recv | OpKind::RecvVec => (1, o.peer, o.len as u64, Path::Unset),
        OpKind::Local | OpKind::LocalVec => (2, -1, 0, Path::Local),
        OpKind::Calc => (3, -1, o.addr, Path::Calc),
    };
    Rec { start: now, end: 0, bytes, sched: e.sched.id, exec: e.seq, vertex: s.origin[op as usize], peer, tag: o.tag, kind, path: path as u8 }
}

impl Engine {
    /// Records every operation from now on, in a buffer of `cap` (see
    /// [`Recorder`]); turns the trace hooks on.
    pub fn record(&mut self, cap: usize) {
        self.recorder = Some(Box::new(Recorder::new(cap)));
        TRACE.store(true, Ordering::Relaxed);
    }

    /// Stops recording and hands over what was recorded.
    pub(crate) fn take_records(&mut self) -> Option<Box<Recorder>> {
        self.recorder.take()
    }

    /// Operation `r` starts (`trace_on`).
    pub(super) fn record_start(&mut self, r: OpRef) {
        let now = localop::monotonic_ns();
        let Some(e) = self.state.execs.get(r) else { return };
        let Some(rec) = self.recorder.as_deref_mut() else { return };
        if rec.recs.len() == rec.recs.capacity() {
            rec.dropped += 1;
            return;
        }
        rec.open.insert(Recorder::key(r), rec.recs.len());
        rec.recs.push(rec_of(e, r.op, now));
    }

    /// Operation `r` ends (`trace_on`): its end, and its path if unset.
    pub(super) fn record_finish(&mut self, r: OpRef) {
        let now = localop::monotonic_ns();
        if self.recorder.as_ref().is_some_and(|rec| !rec.open.contains_key(&Recorder::key(r))) {
            // Finished without a start seen (a kernel chain's later
            // operations start in the kernel): an instant at its end.
            self.record_start(r);
        }
        let (me, link) = (self.rank as i32, &self.link);
        let Some(rec) = self.recorder.as_deref_mut() else { return };
        let Some(i) = rec.open.remove(&Recorder::key(r)) else { return };
        let x = &mut rec.recs[i];
        x.end = now.max(x.start);
        if x.path == Path::Unset as u8 {
            x.path = match x.peer {
                p if p == me => Path::SelfCopy,
                p if p >= 0 && link.is_remote(p as usize) => Path::NetEager,
                _ => Path::Eager,
            } as u8;
        }
    }

    /// Operation `r`'s bytes take `path` (`trace_on`).
    pub(super) fn trace_path(&mut self, r: OpRef, path: Path) {
        if let Some(x) = self.recorder.as_deref_mut().and_then(|rec| rec.open_rec(r)) {
            x.path = path as u8;
        }
    }

    /// The operations `run` of `r`'s execution go to the kernel as one
    /// chain (`trace_on`): those not started yet start now.
    pub(super) fn trace_kernel_run(&mut self, r: OpRef, run: &[u32]) {
        for &op in run {
            let r = OpRef { op, ..r };
            if self.recorder.as_ref().is_some_and(|rec| !rec.open.contains_key(&Recorder::key(r))) {
                self.record_start(r);
            }
            self.trace_path(r, Path::KernelChain);
        }
    }

    /// Receive `r` takes a message of `len` bytes from `src` (`trace_on`).
    pub(super) fn trace_from(&mut self, r: OpRef, src: u32, len: u32) {
        if let Some(x) = self.recorder.as_deref_mut().and_then(|rec| rec.open_rec(r)) {
            x.peer = src as i32;
            x.bytes = len as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_comes_back_from_the_wire_as_it_went() {
        let r = Rec { start: 1 << 40, end: (1 << 40) + 7, bytes: 1 << 33, sched: 9, exec: 3, vertex: 12, peer: -1, tag: 1 << 30, kind: 1, path: Path::Cma as u8 };
        let mut b = Vec::new();
        r.encode(&mut b);
        assert_eq!(b.len(), Rec::WIRE);
        assert_eq!(Rec::decode(&b), Some(r));
        assert_eq!(Rec::decode(&b[1..]), None, "short");
    }

    #[test]
    fn every_path_has_its_code_and_a_name() {
        for c in 0..13u8 {
            assert_eq!(Path::from_code(c) as u8, c);
            assert!(!Path::from_code(c).name().is_empty());
        }
        assert_eq!(Path::from_code(200), Path::Unset);
    }
}
