//! Receive-reduce fusion: which receives of a schedule may be combined
//! with their local operation as their bytes come, instead of landing in
//! the scratchpad first and being read back by the operation.
//!
//! A reduction step in a collective is a receive into a scratchpad buffer
//! followed by a local operation `result = theirs op mine`. When the
//! message comes through a pair's stream (large messages between local
//! ranks), the receiver copies it out of the stream into the scratchpad,
//! then reads it again to combine: two passes over memory that a 1 MiB
//! vector does not fit in the cache for. Fused, the receiver copies a
//! small piece (16 KiB, cache-resident) out of the stream and combines it
//! at once, and the scratchpad buffer is never touched. A large message
//! offered by Cross Memory Attach is asked for through the stream instead,
//! for this reason (see `FUSE_CMA_MAX` in the engine). An eager message
//! whose receive is posted when it arrives is combined by the poll straight
//! from the pair's ring, and the scratchpad is not written either (not a
//! division, whose failure would end the execution inside the poll).
//!
//! The same holds for a receive into the application's memory that the
//! operation combines in place (`buf = mine op buf`, a 2-rank reduce's
//! root): the buffer then ends as the operation leaves it either way.
//!
//! That is only the same computation when nothing else sees the
//! difference, so [`plan`] marks a receive only if:
//! - it is a plain receive into the scratchpad, or into application memory
//!   that the operation writes its result to, with exactly one dependent
//!   and no operation waiting for it to start;
//! - that dependent is a plain binary local operation (not COPY or WTIME,
//!   nor a user operator, whose function is called once per operation)
//!   with no start dependents either, whose first or second operand (not
//!   both) is exactly the received buffer, over as many bytes as the
//!   receive takes;
//! - the operation's other operand does not overlap the received buffer;
//! - no other operation of the schedule reads or writes any byte of the
//!   received buffer (a buffer reused for several receives, or a result
//!   sent on from it, rules fusion out);
//! - it is not a receive into a run-time buffer, nor into the application's
//!   memory in a schedule with run-time buffers: buffers given at each run
//!   may be any memory, so whether another operation touches the same
//!   bytes is not known when the schedule is compiled.
//!
//! At run time the engine fuses a marked receive only when the message
//! fills the receive exactly and the operation's other prerequisites have
//! all finished (its dependency counter is one), since the combining
//! happens while the message comes.

use goal_sched::{OpKind, Schedule};

/// A receive that may be combined as it comes (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The receive.
    pub recv: u32,
    /// Its local operation.
    pub op: u32,
    /// The received bytes are the operation's first operand (else its second).
    pub first: bool,
}

/// Above this many range comparisons (receive candidates times scratchpad
/// ranges) a schedule is not examined: fusion is an optimisation, and a
/// compile must not turn quadratic.
const MAX_CHECKS: usize = 1 << 22;

/// The receives of `s` that may be fused, sorted by receive index.
pub(crate) fn plan(s: &Schedule) -> Vec<Plan> {
    let mut found = Vec::new();
    for (i, o) in s.ops.iter().enumerate() {
        if o.kind() != OpKind::Recv || o.len == 0 || !s.start_dependents(i).is_empty() {
            continue;
        }
        let scratch = o.relative();
        if (scratch && o.addr >> goal_sched::RUN_SHIFT != 0) || (!scratch && !s.run.is_empty()) {
            continue;
        }
        let &[d] = s.dependents(i) else { continue };
        let od = &s.ops[d as usize];
        if od.kind() != OpKind::Local || !s.start_dependents(d as usize).is_empty() {
            continue;
        }
        let l = s.locals[od.addr as usize];
        // A user operator's function takes whole calls, not elements as
        // they come (and may be slow): never fused.
        if !l.op().is_binary() || l.op().builtin().is_none() {
            continue;
        }
        if l.count as u64 * l.width as u64 / 8 != o.len as u64 {
            continue;
        }
        // Operand `bit` lies in the receive's memory (scratchpad or the
        // application's) and starts where it does.
        let is = |bit: u8, a: u64| (l.mem & (1 << bit) != 0) == scratch && a == o.addr;
        let first = match (is(0, l.b1), is(1, l.b2)) {
            (true, false) => true,
            (false, true) => false,
            _ => continue,
        };
        // In the application's memory, only in place: the buffer must end
        // as the operation leaves it, since the message never lands there.
        if !scratch && !is(2, l.b3) {
            continue;
        }
        // The other operand is read while the message comes: apart from it.
        let (other, bit) = if first { (l.b2, 1) } else { (l.b1, 0) };
        let (lo, hi) = (o.addr, o.addr + o.len as u64);
        if (l.mem & (1 << bit) != 0) == scratch && other < hi && other + o.len as u64 > lo {
            continue;
        }
        found.push(Plan { recv: i as u32, op: d, first });
    }
    if found.is_empty() {
        return found;
    }
    let mut ranges = [None, None];
    for want in [true, false] {
        if found.iter().any(|f| s.ops[f.recv as usize].relative() == want) {
            let r = ranges_in(s, want);
            if found.len().saturating_mul(r.len()) > MAX_CHECKS {
                return Vec::new();
            }
            ranges[want as usize] = Some(r);
        }
    }
    found.retain(|f| {
        let o = &s.ops[f.recv as usize];
        let (lo, hi) = (o.addr, o.addr + o.len as u64);
        let ranges = ranges[o.relative() as usize].as_deref().unwrap_or_default();
        ranges.iter().all(|&(op, a, b)| op == f.recv || op == f.op || b <= lo || a >= hi)
    });
    found
}

/// Every range of relative addresses (`scratch`: the scratchpad's and the
/// run-time buffers', apart by their top byte) or of the application's
/// memory that any operation reads or writes: (op, start, end).
fn ranges_in(s: &Schedule, scratch: bool) -> Vec<(u32, u64, u64)> {
    let mut out = Vec::new();
    for (i, o) in s.ops.iter().enumerate() {
        let i = i as u32;
        match o.kind() {
            OpKind::Send | OpKind::Recv if o.relative() == scratch => out.push((i, o.addr, o.addr + o.len as u64)),
            OpKind::SendVec | OpKind::RecvVec if o.relative() == scratch => {
                for p in s.pieces_of(s.vecs[o.addr as usize]) {
                    out.push((i, p.addr, p.addr + p.len as u64));
                }
            }
            OpKind::Local => {
                let l = s.locals[o.addr as usize];
                // WTIME writes 8 bytes whatever its count.
                let bytes = l.count as u64 * l.width as u64 / 8;
                for (bit, a) in [l.b1, l.b2, l.b3].into_iter().enumerate() {
                    if (l.mem & (1 << bit) != 0) == scratch {
                        out.push((i, a, a + bytes.max(8)));
                    }
                }
            }
            OpKind::LocalVec => {
                let l = s.lvecs[o.addr as usize];
                for (bit, list) in l.lists.into_iter().enumerate() {
                    if (l.mem & (1 << bit) != 0) == scratch {
                        for p in s.pieces_of(list) {
                            out.push((i, p.addr, p.addr + p.len as u64));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use goal_sched::{Buf, CompileOptions, DataType, Graph, ReduceOp};

    fn compile(g: &Graph) -> Schedule {
        goal_sched::compile(g, &CompileOptions { group_size: 2 }).unwrap()
    }

    /// A graph receiving 4096 bytes into the scratchpad and combining
    /// `count` 32-bit elements of them with a user buffer.
    fn step(first: bool, count: i64) -> (Graph, u64, u64) {
        let mut g = Graph::new();
        g.set_scratchpad(8192);
        let theirs = Buf::scratch(0);
        let got = g.recv(theirs, 4096, 1, 0);
        let mine = Buf::user(0x1000);
        let (x, y) = if first { (theirs, mine) } else { (mine, theirs) };
        let sum = g.local(ReduceOp::Sub as i64, DataType::SInt as i64, 32, count, x, y, Buf::user(0x9000));
        g.requires(got, sum).unwrap();
        (g, got, sum)
    }

    #[test]
    fn a_receive_feeding_only_its_reduction_is_fused_in_either_operand_order() {
        for first in [true, false] {
            let (g, got, sum) = step(first, 1024);
            let s = compile(&g);
            let p = plan(&s);
            assert_eq!(p.len(), 1, "{p:?}");
            assert_eq!(p[0].first, first);
            assert_eq!(s.origin[p[0].recv as usize] as u64, got);
            assert_eq!(s.origin[p[0].op as usize] as u64, sum);
        }
    }

    /// A user operator's function is called on whole operations, never as
    /// the message comes: its step is not fused (the same step with a
    /// built-in operator is).
    #[test]
    fn a_user_operator_is_never_fused() {
        let user = goal_sched::UserOp { id: 1, commutative: true }.raw();
        for (op, fused) in [(ReduceOp::Add as i64, 1), (user, 0)] {
            let mut g = Graph::new();
            g.set_scratchpad(4096);
            let got = g.recv(Buf::scratch(0), 4096, 1, 0);
            let sum = g.local(op, DataType::UInt as i64, 32, 1024, Buf::scratch(0), Buf::user(0x1000), Buf::user(0x1000));
            g.requires(got, sum).unwrap();
            assert_eq!(plan(&compile(&g)).len(), fused, "operator {op}");
        }
    }

    #[test]
    fn other_users_of_the_buffer_a_second_dependent_or_a_short_operation_rule_it_out() {
        // Part of the received buffer is sent on as well.
        let (mut g, _, sum) = step(true, 1024);
        let fwd = g.send(Buf::scratch(1024), 8, 1, 1);
        g.requires(sum, fwd).unwrap();
        assert!(plan(&compile(&g)).is_empty());
        // A second receive into the buffer.
        let (mut g, _, sum) = step(true, 1024);
        let again = g.recv(Buf::scratch(2048), 8, 1, 1);
        g.requires(sum, again).unwrap();
        assert!(plan(&compile(&g)).is_empty());
        // Two dependents.
        let (mut g, got, _) = step(true, 1024);
        let other = g.send(Buf::user(0x5000), 8, 1, 1);
        g.requires(got, other).unwrap();
        assert!(plan(&compile(&g)).is_empty());
        // The operation covers part of the message only.
        let (g, _, _) = step(true, 512);
        assert!(plan(&compile(&g)).is_empty());
        // Elsewhere in the scratchpad is no obstacle.
        let (mut g, _, sum) = step(true, 1024);
        let fwd = g.send(Buf::scratch(4096), 8, 1, 1);
        g.requires(sum, fwd).unwrap();
        assert_eq!(plan(&compile(&g)).len(), 1);
    }

    /// A graph receiving 4096 bytes into application memory at `at` and
    /// combining them (second operand) with `mine` into `res`.
    fn in_user(at: u64, mine: u64, res: u64) -> Graph {
        let mut g = Graph::new();
        let got = g.recv(Buf::user(at), 4096, 1, 0);
        let sum = g.local(ReduceOp::Add as i64, DataType::Float as i64, 64, 512, Buf::user(mine), Buf::user(at), Buf::user(res));
        g.requires(got, sum).unwrap();
        g
    }

    #[test]
    fn a_receive_into_application_memory_is_fused_only_when_combined_there_in_place() {
        // rbuf = sbuf + rbuf, as a 2-rank reduce's root does.
        let p = plan(&compile(&in_user(0x10000, 0x20000, 0x10000)));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(!p[0].first);
        // The result elsewhere: the receive buffer would miss the message.
        assert!(plan(&compile(&in_user(0x10000, 0x20000, 0x30000))).is_empty());
        // The other operand overlaps the received bytes.
        assert!(plan(&compile(&in_user(0x10000, 0x10800, 0x10000))).is_empty());
        // Another operation reads the buffer.
        let mut g = in_user(0x10000, 0x20000, 0x10000);
        g.send(Buf::user(0x10ff8), 8, 1, 1);
        assert!(plan(&compile(&g)).is_empty());
        // Elsewhere in application memory is no obstacle.
        let mut g = in_user(0x10000, 0x20000, 0x10000);
        g.send(Buf::user(0x11000), 8, 1, 1);
        assert_eq!(plan(&compile(&g)).len(), 1);
    }
}
