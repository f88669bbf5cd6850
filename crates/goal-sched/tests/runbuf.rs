//! Run-time buffers in the compiler: the memory type and the run address
//! compile alike, the schedule records each buffer's bytes, and what makes
//! no sense is refused. And in the collective builders: every collective x
//! algorithm, built with its buffers given at run (`run_addr(0, 0)` for
//! `sbuf`, `run_addr(1, 0)` for `rbuf`), compiles to exactly the schedule
//! it compiles to with two real addresses, each operand in those buffers
//! turned into the same offset of its run-time buffer; and the schedule
//! asks each run for exactly the bytes the collective's buffers hold.
//! (What the operations then compute is checked against the model by
//! `coll.rs`, with the addresses; the runtime's resolution of run-time
//! buffers by `ctests/t_runbuf.c`.)

use goal_sched::coll::{
    algorithms, allgather, allgatherv, allreduce, alltoall, alltoallv, barrier, bcast, gather, gatherv, reduce, reduce_scatter, reduce_scatter_block, scatter, scatterv, Coll, CollError, Group,
    Piece, Placement, Reduction,
};
use goal_sched::{compile, run_addr, Buf, CompileOptions, DataType, Graph, OpKind, ReduceOp, Schedule, Vertex, FLAG_REL, MEM_RUN0};

fn opts(n: u32) -> CompileOptions {
    CompileOptions { group_size: n }
}

/// Run-time buffers: the memory type and the run address compile alike,
/// to relative addresses with the slot in the top byte, and the schedule
/// records the bytes each slot must hold.
#[test]
fn run_time_buffers_compile_to_relative_addresses_and_their_sizes() {
    let mut g = Graph::new();
    g.set_scratchpad(16);
    g.send(Buf::run(0, 8), 24, 1, 0);
    g.recv(Buf::user(run_addr(2, 100)), 4, 1, 0);
    g.recv(Buf::scratch(8), 8, 1, 1);
    g.send(Buf::user(0x1000), 8, 1, 2);
    g.local(ReduceOp::Add as i64, 1, 32, 2, Buf::run(2, 0), Buf::scratch(0), Buf::user(run_addr(2, 200)));
    g.add(Vertex::SendVec { mem: 0, pieces: vec![(run_addr(0, 40), 8), (0, 0), (run_addr(1, 0), 3)], peer: 1, tag: 3 });
    let s = compile(&g, &opts(2)).unwrap();
    assert_eq!(s.run, vec![48, 3, 208]);
    let ops: Vec<(bool, u64)> = s.ops.iter().take(4).map(|o| (o.relative(), o.addr)).collect();
    assert_eq!(ops, vec![(true, run_addr(0, 8)), (true, run_addr(2, 100)), (true, 8), (false, 0x1000)]);
    assert_eq!((s.locals[0].mem, s.locals[0].b1, s.locals[0].b2, s.locals[0].b3), (7, run_addr(2, 0), 0, run_addr(2, 200)));
    assert!(s.ops[5].relative());
    let at: Vec<u64> = s.pieces.iter().map(|p| p.addr).collect();
    assert_eq!(at, vec![run_addr(0, 40), 0, run_addr(1, 0)]);
    assert_eq!(s.to_bytes().len(), s.byte_size());
    // a schedule without them records none
    let mut g = Graph::new();
    g.send(Buf::user(0x1000), 8, 0, 0);
    assert!(compile(&g, &opts(1)).unwrap().run.is_empty());
    // refused: a slot past the last, a range past 2^56, a list in both kinds of memory
    let bad: Vec<(Vertex, &str)> = vec![
        (Vertex::Send { buf: Buf { mem: MEM_RUN0 + 16, addr: 0 }, len: 1, peer: 0, tag: 0 }, "memory type 18 does not exist"),
        (Vertex::Send { buf: Buf::run(3, (1 << 56) - 4), len: 8, peer: 0, tag: 0 }, "of run-time buffer 3 reaches past 2^56"),
        (
            Vertex::SendVec { mem: 0, pieces: vec![(run_addr(0, 0), 8), (0x1000, 8)], peer: 0, tag: 0 },
            "list piece 1 is in the process' memory, others in run-time buffers",
        ),
    ];
    for (v, needle) in bad {
        let mut g = Graph::new();
        g.add(v);
        let e = compile(&g, &opts(1)).unwrap_err();
        assert!(e.message.contains(needle), "{:?} lacks {needle:?}", e.message);
    }
}

/// Where the absolute build's buffers lie (far apart, below 2^56).
const A: u64 = 1 << 40;
const B: u64 = 2 << 40;
const SPAN: u64 = 1 << 36;

/// Builds `coll` with sbuf/rbuf at `s`/`r`: 3 elements (or bytes) per rank block.
fn build(coll: Coll, alg: goal_sched::coll::Algorithm, grp: Group, s: u64, r: u64) -> Result<(Graph, Piece), CollError> {
    let mut g = Graph::new();
    let at = Placement { tag_base: 0 };
    let red = Reduction::from_raw(ReduceOp::Add as i64, DataType::Float as i64, 64).unwrap();
    let root = grp.size - 1;
    let n = 24;
    // Per-rank counts (bytes; zeros among them) and packed displacements.
    let counts: Vec<u64> = (0..grp.size as u64).map(|r| (r % 3) * 8).collect();
    let displs: Vec<u64> = counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect();
    let mine = counts[grp.rank as usize];
    let elems: Vec<u64> = (0..grp.size as u64).map(|r| 3 * (r % 2)).collect();
    let piece = match coll {
        Coll::Barrier => barrier(&mut g, grp, at, alg),
        Coll::Bcast => bcast(&mut g, grp, at, r, n, root, alg),
        Coll::Gather => gather(&mut g, grp, at, s, n, r, root, alg),
        Coll::Scatter => scatter(&mut g, grp, at, s, n, r, root, alg),
        Coll::Allgather => allgather(&mut g, grp, at, s, n, r, alg),
        Coll::Alltoall => alltoall(&mut g, grp, at, s, n, r, alg),
        Coll::Reduce => reduce(&mut g, grp, at, s, r, 3, red, root, alg),
        Coll::Allreduce => allreduce(&mut g, grp, at, s, r, 3, red, alg),
        Coll::ReduceScatterBlock => reduce_scatter_block(&mut g, grp, at, s, r, 3, red, alg),
        Coll::Gatherv => gatherv(&mut g, grp, at, s, mine, r, &counts, &displs, root, alg),
        Coll::Scatterv => scatterv(&mut g, grp, at, s, &counts, &displs, r, mine, root, alg),
        Coll::Allgatherv => allgatherv(&mut g, grp, at, s, mine, r, &counts, &displs, alg),
        Coll::Alltoallv => alltoallv(&mut g, grp, at, s, &counts, &displs, r, &counts, &displs, alg),
        Coll::ReduceScatter => reduce_scatter(&mut g, grp, at, s, r, &elems, red, alg),
    }?;
    Ok((g, piece))
}

/// `addr`, an absolute address, as the run build must have it: (relative, address).
fn moved(addr: u64) -> (bool, u64) {
    if (A..A + SPAN).contains(&addr) {
        (true, run_addr(0, addr - A))
    } else if (B..B + SPAN).contains(&addr) {
        (true, run_addr(1, addr - B))
    } else {
        (false, addr)
    }
}

/// The absolute build's schedule with its operands in A and B moved into
/// run-time buffers 0 and 1, and the ends reached in each (`run` as the
/// compiler must find it).
fn expected(abs: &Schedule) -> Schedule {
    let mut s = abs.clone();
    let mut ends = [None::<u64>; 2];
    let mut note = |addr: u64, len: u64| {
        for (k, base) in [A, B].into_iter().enumerate() {
            if (base..base + SPAN).contains(&addr) {
                let e = ends[k].get_or_insert(0);
                *e = (*e).max(addr - base + len);
            }
        }
    };
    let mut rel_pieces = vec![false; s.pieces.len()];
    for o in &mut s.ops {
        match o.kind() {
            OpKind::Send | OpKind::Recv if !o.relative() => {
                note(o.addr, o.len as u64);
                let (rel, a) = moved(o.addr);
                o.addr = a;
                o.flags |= if rel { FLAG_REL } else { 0 };
            }
            OpKind::SendVec | OpKind::RecvVec if !o.relative() => {
                let v = abs.vecs[o.addr as usize];
                for k in v.first..v.first + v.count {
                    let p = abs.pieces[k as usize];
                    note(p.addr, p.len as u64);
                    o.flags |= if moved(p.addr).0 { FLAG_REL } else { 0 };
                }
                for k in v.first..v.first + v.count {
                    rel_pieces[k as usize] = o.relative();
                }
            }
            _ => {}
        }
    }
    for l in &mut s.locals {
        let bytes = l.count as u64 * l.width as u64 / 8;
        let used = [true, l.op().is_binary(), true];
        for (i, b) in [&mut l.b1, &mut l.b2, &mut l.b3].into_iter().enumerate() {
            if l.mem & (1 << i) == 0 && used[i] {
                note(*b, bytes);
                let (rel, a) = moved(*b);
                *b = a;
                l.mem |= (rel as u8) << i;
            } else if !used[i] {
                // (An operand the operator ignores is kept as given.)
                *b = if (A..B + SPAN).contains(b) { *b - [A, B][(*b >= B) as usize] + run_addr((*b >= B) as u8, 0) } else { *b };
            }
        }
    }
    for l in &mut s.lvecs {
        for (i, list) in l.lists.into_iter().enumerate() {
            if l.mem & (1 << i) != 0 {
                continue;
            }
            let ps = list.first as usize..(list.first + list.count) as usize;
            for p in &abs.pieces[ps.clone()] {
                note(p.addr, p.len as u64);
            }
            if abs.pieces[ps.clone()].iter().any(|p| moved(p.addr).0) {
                l.mem |= 1 << i;
                rel_pieces[ps].fill(true);
            }
        }
    }
    for (k, p) in s.pieces.iter_mut().enumerate() {
        if rel_pieces[k] {
            p.addr = moved(p.addr).1;
        }
    }
    s.run = match ends {
        [None, None] => vec![],
        [a, None] => vec![a.unwrap_or(0)],
        [a, Some(b)] => vec![a.unwrap_or(0), b],
    };
    s
}

#[test]
fn every_collective_with_run_time_buffers_is_the_one_with_addresses() {
    let mut cases = 0;
    for coll in Coll::ALL {
        for &alg in algorithms(coll) {
            for size in 1..=7u32 {
                for rank in 0..size {
                    let grp = Group { rank, size };
                    for in_place in [false, true] {
                        let (sa, sr) = if in_place { (B, run_addr(1, 0)) } else { (A, run_addr(0, 0)) };
                        let ctx = format!("{} {alg:?} rank {rank} of {size}{}", coll.name(), if in_place { " in place" } else { "" });
                        let Ok((ga, pa)) = build(coll, alg, grp, sa, B) else {
                            continue;
                        };
                        let (gr, pr) = build(coll, alg, grp, sr, run_addr(1, 0)).unwrap_or_else(|e| panic!("{ctx}: {e:?}"));
                        assert_eq!((pa.entry, pa.done), (pr.entry, pr.done), "{ctx}");
                        let opts = CompileOptions { group_size: size };
                        let abs = compile(&ga, &opts).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        let run = compile(&gr, &opts).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert_eq!(run, expected(&abs), "{ctx}");
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 1000, "{cases} cases");
}
