//! The compiler's and the binary form's unit tests.

use super::*;
use crate::error::CompileErrorKind as K;
use crate::graph::{Buf, Graph, Vertex};

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
