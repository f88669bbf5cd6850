//! Which parts of a schedule the kernel can run by itself: chains.
//!
//! The `kernel` progress mode submits runs of dependent sends and receives as
//! linked io_uring operations: each starts when the one before it has
//! finished, inside the kernel, while the process sleeps or computes. A
//! link only says "after the previous one", so a chain must never make an
//! operation wait for something the graph does not ask for: otherwise two
//! ranks could each wait, in the kernel, for a send the other has queued
//! behind a receive (the graph would have let both sends go).
//!
//! The plan therefore cuts the schedule into **paths**: every operation of a
//! chain after the first has the one before it among its prerequisites, and
//! all of its other prerequisites earlier in the same chain. Linking then
//! adds no order that was not already implied. An operation that waits for
//! operations of several chains, or for a local operation, begins a new
//! chain: a *join*, which user space starts once its counter reaches zero
//! (when goal next has the CPU: a call, or a helper woken by the kernel).
//!
//! Only contiguous sends and receives with a named peer and tag can be
//! linked (a wildcard needs matching, which the kernel does not do); local
//! operations, vectors and `Calc` stay in user space, as do operations with
//! start-to-start ("irequires") edges.
//!
//! The plan also says, per peer, whether this rank's receives from it (and
//! sends to it) lie on a single chain. A socket delivers in order, so a
//! receive posted in the kernel takes the next message of its peer: that is
//! only the right message when the receives from that peer are taken in a
//! fixed order and the peer sends in a fixed order too. Where either is not
//! so, the runtime reads that peer's messages in user space and matches
//! them there. This module is pure; it decides nothing about sockets.

use crate::schedule::{OpKind, Schedule};

/// How one schedule splits into kernel chains (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainPlan {
    /// The chains, each a list of op indices in link order.
    pub chains: Vec<Vec<u32>>,
    /// For each op: its chain and position in it, or `None` (user space).
    pub place: Vec<Option<(u32, u32)>>,
    /// Peers whose messages to this rank are all received on one chain, sorted.
    pub ordered_from: Vec<u32>,
    /// Peers this rank sends to only from one chain, sorted.
    pub ordered_to: Vec<u32>,
}

impl ChainPlan {
    /// Whether op `i` is the first of its chain (or runs in user space):
    /// user space starts it when its dependency counter reaches zero.
    pub fn starts_chain(&self, i: usize) -> bool {
        self.place[i].is_none_or(|(_, pos)| pos == 0)
    }

    /// Whether the receives from `peer` may be posted in the kernel.
    pub fn receives_in_order_from(&self, peer: u32) -> bool {
        self.ordered_from.binary_search(&peer).is_ok()
    }

    /// Whether the sends to `peer` leave in one fixed order.
    pub fn sends_in_order_to(&self, peer: u32) -> bool {
        self.ordered_to.binary_search(&peer).is_ok()
    }
}

/// Whether op `i` can be a link of a chain.
fn linkable(s: &Schedule, i: usize) -> bool {
    let op = &s.ops[i];
    matches!(op.kind(), OpKind::Send | OpKind::Recv) && op.peer >= 0 && op.tag >= 0 && s.start_dependents(i).is_empty()
}

/// Cuts `s` into chains. Ops are visited in the schedule's (topological)
/// order; an op joins the chain whose tail is one of its prerequisites, if
/// all its prerequisites are on that chain and no other op continued the
/// tail already; otherwise it starts a chain of its own.
pub fn plan(s: &Schedule) -> ChainPlan {
    let n = s.ops.len();
    let mut place: Vec<Option<(u32, u32)>> = vec![None; n];
    // Prerequisites of each op, from the dependents lists.
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for i in 0..n {
        for &d in s.dependents(i) {
            preds[d as usize].push(i as u32);
        }
    }
    let mut chains: Vec<Vec<u32>> = Vec::new();
    for i in 0..n {
        if !linkable(s, i) {
            continue;
        }
        // The chain to continue: the one whose tail is a prerequisite and
        // which holds every prerequisite.
        let cont = preds[i].iter().find_map(|&p| {
            let (c, pos) = place[p as usize]?;
            let chain = &chains[c as usize];
            let is_tail = pos as usize + 1 == chain.len();
            let all_in = preds[i].iter().all(|&q| place[q as usize].is_some_and(|(qc, _)| qc == c));
            (is_tail && all_in).then_some(c)
        });
        let c = match cont {
            Some(c) => c,
            None => {
                chains.push(Vec::new());
                (chains.len() - 1) as u32
            }
        };
        place[i] = Some((c, chains[c as usize].len() as u32));
        chains[c as usize].push(i as u32);
    }
    // Per peer and direction: the one chain its ops lie on, if there is one
    // and every such op is linkable.
    let mut from: std::collections::BTreeMap<u32, Option<u32>> = Default::default();
    let mut to: std::collections::BTreeMap<u32, Option<u32>> = Default::default();
    for (i, op) in s.ops.iter().enumerate() {
        let map = match op.kind() {
            OpKind::Send | OpKind::SendVec => &mut to,
            OpKind::Recv | OpKind::RecvVec => &mut from,
            _ => continue,
        };
        if op.peer < 0 {
            // A wildcard receive may take any peer's message: see below.
            continue;
        }
        let chain = place[i].map(|(c, _)| c);
        map.entry(op.peer as u32)
            .and_modify(|v| {
                if *v != chain {
                    *v = None
                }
            })
            .or_insert(chain);
    }
    let wildcard = s.ops.iter().any(|o| matches!(o.kind(), OpKind::Recv | OpKind::RecvVec) && o.peer < 0);
    let ordered = |m: std::collections::BTreeMap<u32, Option<u32>>| m.into_iter().filter(|(_, c)| c.is_some()).map(|(p, _)| p).collect();
    ChainPlan {
        chains,
        place,
        ordered_from: if wildcard { Vec::new() } else { ordered(from) },
        ordered_to: ordered(to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::{self, Algorithm, Group, Placement};
    use crate::graph::{Buf, Graph, VertexId};
    use crate::schedule::{compile, CompileOptions};

    fn compiled(g: &Graph, n: u32) -> Schedule {
        compile(g, &CompileOptions { group_size: n }).unwrap()
    }

    /// The plan's chains as graph vertices, for readable assertions.
    fn vertex_chains(s: &Schedule, p: &ChainPlan) -> Vec<Vec<u32>> {
        p.chains.iter().map(|c| c.iter().map(|&i| s.origin[i as usize]).collect()).collect()
    }

    /// Every link's predecessor is a prerequisite, and every prerequisite of
    /// a linked op is earlier on its chain: linking adds no order.
    fn check_paths(s: &Schedule, p: &ChainPlan) {
        for chain in &p.chains {
            for (k, &op) in chain.iter().enumerate().skip(1) {
                let preds: Vec<u32> = (0..s.ops.len() as u32).filter(|&q| s.dependents(q as usize).contains(&op)).collect();
                assert!(preds.contains(&chain[k - 1]), "op {op} linked after {} which it does not require", chain[k - 1]);
                for q in preds {
                    assert!(chain[..k].contains(&q), "op {op} requires {q}, which is not before it on its chain");
                }
            }
        }
    }

    #[test]
    fn a_receive_then_forward_is_one_chain() {
        let mut g = Graph::new();
        let r = g.recv(Buf::user(0x1000), 64, 0, 5);
        let s1 = g.send(Buf::user(0x1000), 64, 2, 5);
        let s2 = g.send(Buf::user(0x1000), 64, 3, 5);
        g.requires(r, s1).unwrap();
        g.requires(r, s2).unwrap();
        let s = compiled(&g, 4);
        let p = plan(&s);
        check_paths(&s, &p);
        // The first forward continues the receive; the second send waits only
        // for the receive too, but the receive's chain is taken: a join.
        assert_eq!(vertex_chains(&s, &p), vec![vec![r as u32, s1 as u32], vec![s2 as u32]]);
        assert!(p.receives_in_order_from(0) && p.sends_in_order_to(2) && p.sends_in_order_to(3));
    }

    #[test]
    fn a_send_after_two_receives_of_different_chains_is_a_join() {
        let mut g = Graph::new();
        let a = g.recv(Buf::user(0x1000), 8, 1, 0);
        let b = g.recv(Buf::user(0x2000), 8, 2, 0);
        let s0 = g.send(Buf::user(0x1000), 8, 3, 0);
        g.requires(a, s0).unwrap();
        g.requires(b, s0).unwrap();
        let s = compiled(&g, 4);
        let p = plan(&s);
        check_paths(&s, &p);
        assert_eq!(p.chains.len(), 3);
        let i = s.origin.iter().position(|&v| v == s0 as u32).unwrap();
        assert!(p.starts_chain(i));
    }

    #[test]
    fn local_operations_and_wildcards_stay_in_user_space() {
        let mut g = Graph::new();
        let r = g.recv(Buf::user(0x1000), 8, crate::ANY_SOURCE, 0);
        let l = g.local(crate::ReduceOp::Add as i64, crate::DataType::Float as i64, 64, 1, Buf::user(0x1000), Buf::user(0x2000), Buf::user(0x2000));
        let s0 = g.send(Buf::user(0x2000), 8, 1, 0);
        g.requires(r, l).unwrap();
        g.requires(l, s0).unwrap();
        let s = compiled(&g, 2);
        let p = plan(&s);
        let at = |v: VertexId| s.origin.iter().position(|&o| o == v as u32).unwrap();
        assert_eq!(p.place[at(r)], None);
        assert_eq!(p.place[at(l)], None);
        assert_eq!(p.place[at(s0)], Some((0, 0)));
        assert!(p.ordered_from.is_empty(), "a wildcard receive can take any peer's message");
    }

    #[test]
    fn two_unordered_receives_from_one_peer_are_read_in_user_space() {
        let mut g = Graph::new();
        g.recv(Buf::user(0x1000), 8, 1, 0);
        g.recv(Buf::user(0x2000), 8, 1, 1);
        g.send(Buf::user(0x3000), 8, 1, 2);
        let s = compiled(&g, 2);
        let p = plan(&s);
        assert!(!p.receives_in_order_from(1));
        assert!(p.sends_in_order_to(1));
    }

    #[test]
    fn barrier_rounds_link_into_one_chain_per_rank() {
        for n in [2u32, 4, 5, 8] {
            for rank in 0..n {
                let mut g = Graph::new();
                coll::barrier(&mut g, Group { rank, size: n }, Placement { tag_base: 0 }, Algorithm::Bruck).unwrap();
                let s = compiled(&g, n);
                let p = plan(&s);
                check_paths(&s, &p);
                let linked = p.place.iter().filter(|x| x.is_some()).count();
                assert_eq!(linked, s.ops.iter().filter(|o| matches!(o.kind(), OpKind::Send | OpKind::Recv)).count(), "n={n} rank={rank}");
            }
        }
    }

    #[test]
    fn every_collective_plan_is_made_of_paths() {
        for n in [2u32, 3, 7] {
            for rank in 0..n {
                let grp = Group { rank, size: n };
                let at = Placement { tag_base: 0 };
                let mut g = Graph::new();
                coll::bcast(&mut g, grp, at, 0x10_0000, 1 << 20, 0, Algorithm::Pipeline).unwrap();
                let s = compiled(&g, n);
                let p = plan(&s);
                check_paths(&s, &p);
                // Between the ends of the pipeline each segment is received
                // and forwarded by one chain.
                if rank != 0 && rank != n - 1 {
                    assert!(p.chains.iter().all(|c| c.len() == 2), "n={n} rank={rank}: {:?}", p.chains);
                }
                let mut g = Graph::new();
                let red = coll::Reduction::new(crate::ReduceOp::Add, crate::DataType::Float, 32);
                coll::allreduce(&mut g, grp, at, 0x10_0000, 0x20_0000, 1024, red, Algorithm::Auto).unwrap();
                let s = compiled(&g, n);
                check_paths(&s, &plan(&s));
            }
        }
    }
}
