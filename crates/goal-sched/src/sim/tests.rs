//! The model against hand-checked cases: matching, protocols, races,
//! deadlocks and the local kernels.

use super::*;
use crate::graph::Buf;

fn two_ranks() -> (Vec<Graph>, Vec<Vec<u8>>) {
    (vec![Graph::new(), Graph::new()], vec![vec![0u8; 64], vec![0u8; 64]])
}

#[test]
fn a_message_moves_its_bytes() {
    let (mut g, mut mem) = two_ranks();
    mem[0][..4].copy_from_slice(&[1, 2, 3, 4]);
    g[0].send(Buf::user(0), 4, 1, 7);
    g[1].recv(Buf::user(8), 8, 0, 7);
    let st = simulate(&g, &mut mem).unwrap();
    assert_eq!(&mem[1][8..12], &[1, 2, 3, 4]);
    assert_eq!((st.messages, st.bytes, st.rounds), (1, 4, 1));
}

#[test]
fn same_tag_messages_do_not_overtake_and_wildcards_match() {
    for seed in 0..20 {
        let (mut g, mut mem) = two_ranks();
        mem[0][..3].copy_from_slice(&[10, 20, 30]);
        let a = g[0].send(Buf::user(0), 1, 1, 5);
        let b = g[0].send(Buf::user(1), 1, 1, 5);
        g[0].requires(a, b).unwrap();
        g[0].send(Buf::user(2), 1, 1, 6);
        let x = g[1].recv(Buf::user(0), 1, 0, 5);
        let y = g[1].recv(Buf::user(1), 1, -1, 5);
        g[1].requires(x, y).unwrap();
        g[1].recv(Buf::user(2), 1, -1, 6);
        simulate_with(&g, &mut mem, &SimOptions { seed, ..Default::default() }).unwrap();
        assert_eq!(&mem[1][..3], &[10, 20, 30]);
    }
    let (mut g, mut mem) = two_ranks();
    mem[0][0] = 9;
    g[0].send(Buf::user(0), 1, 1, 77);
    g[1].recv(Buf::user(5), 1, -1, -1);
    simulate(&g, &mut mem).unwrap();
    assert_eq!(mem[1][5], 9);
}

#[test]
fn truncation_deadlock_unmatched_and_races_are_reported() {
    let (mut g, mut mem) = two_ranks();
    g[0].send(Buf::user(0), 8, 1, 0);
    g[1].recv(Buf::user(0), 4, 0, 0);
    assert!(matches!(simulate(&g, &mut mem), Err(SimError::Truncation { bytes: 8, capacity: 4, .. })));

    let (mut g, mut mem) = two_ranks();
    g[1].recv(Buf::user(0), 4, 0, 0);
    let e = simulate(&g, &mut mem).unwrap_err();
    assert!(e.to_string().contains("rank 1 blocked in [vertex 0 (Recv from 0, tag 0)]"), "{e}");

    let (mut g, mut mem) = two_ranks();
    g[0].send(Buf::user(0), 4, 1, 0);
    let e = simulate_with(&g, &mut mem, &SimOptions { sends: SendMode::Eager, ..Default::default() }).unwrap_err();
    assert!(matches!(e, SimError::Unmatched { .. }), "{e}");

    let (mut g, mut mem) = two_ranks();
    g[0].send(Buf::user(0), 8, 0, 0);
    g[0].recv(Buf::user(4), 8, 0, 0);
    let e = simulate_with(&g, &mut mem, &SimOptions { sends: SendMode::Rendezvous, ..Default::default() }).unwrap_err();
    assert!(matches!(e, SimError::Race { .. }), "{e}");
}

#[test]
fn a_short_message_completes_a_receive_unless_the_receive_is_exact() {
    // Rank 0 sends 4 bytes; rank 1 receives up to 8: fine, unless the
    // receive is marked exact (as the collectives mark theirs).
    for exact in [false, true] {
        let mut g0 = Graph::new();
        g0.send(Buf { mem: 0, addr: 0 }, 4, 1, 0);
        let mut g1 = Graph::new();
        let v = g1.recv(Buf { mem: 0, addr: 0 }, 8, 0, 0);
        if exact {
            g1.require_exact(v).unwrap();
        }
        let mut mem = vec![vec![7u8; 8], vec![0u8; 8]];
        let r = simulate(&[g0, g1], &mut mem);
        if exact {
            assert!(matches!(r, Err(SimError::Short { rank: 1, bytes: 4, capacity: 8, .. })), "{r:?}");
        } else {
            assert!(r.is_ok(), "{r:?}");
            assert_eq!(mem[1], [7, 7, 7, 7, 0, 0, 0, 0]);
        }
    }
}

#[test]
fn head_to_head_rendezvous_sends_deadlock() {
    let (mut g, mut mem) = two_ranks();
    for (r, gr) in g.iter_mut().enumerate() {
        let s = gr.send(Buf::user(0), 4, 1 - r as i64, 0);
        let v = gr.recv(Buf::user(8), 4, 1 - r as i64, 0);
        gr.requires(s, v).unwrap();
    }
    let e = simulate_with(&g, &mut mem, &SimOptions { sends: SendMode::Rendezvous, ..Default::default() }).unwrap_err();
    assert!(matches!(e, SimError::Deadlock { .. }), "{e}");
    assert!(simulate_with(&g, &mut mem, &SimOptions { sends: SendMode::Eager, ..Default::default() }).is_ok());
}

#[test]
fn local_ops_follow_the_kernels() {
    let mut g = vec![Graph::new()];
    let mut mem = vec![vec![0u8; 64]];
    mem[0][0..4].copy_from_slice(&250u32.to_ne_bytes());
    mem[0][4..8].copy_from_slice(&10u32.to_ne_bytes());
    let a = g[0].local(ReduceOp::Add as i64, 1, 8, 4, Buf::user(0), Buf::user(4), Buf::user(8));
    let d = g[0].local(ReduceOp::Div as i64, 0, 32, 1, Buf::user(4), Buf::user(12), Buf::user(16));
    g[0].requires(a, d).unwrap();
    mem[0][12..16].copy_from_slice(&0u32.to_ne_bytes());
    let e = simulate(&g, &mut mem).unwrap_err();
    assert_eq!(mem[0][8], 250u8.wrapping_add(10));
    assert!(matches!(e, SimError::DivByZero { element: 0, .. }), "{e}");

    let mut g = vec![Graph::new()];
    g[0].local(ReduceOp::Add as i64, 1, 8, 4, Buf::user(0), Buf::user(4), Buf::user(2));
    assert!(matches!(simulate(&g, &mut mem), Err(SimError::Overlap { .. })));
}

#[test]
fn compile_errors_name_the_rank() {
    let mut g = vec![Graph::new(), Graph::new()];
    g[1].send(Buf::user(0), 1, 2, 0);
    let e = simulate(&g, &mut [vec![0; 8], vec![0; 8]]).unwrap_err();
    assert!(e.to_string().starts_with("rank 1: vertex 0"), "{e}");
}
