//! The collectives across real processes: the pure builders of
//! `goal_sched::coll` compiled with `rt.compile` and run by the runtime, with
//! real bytes between real ranks.
//!
//! Every collective, every algorithm (and AUTO), group sizes 1..9 (more ranks
//! than cores from 3 up on a 2-core machine), element counts 1, odd, 64 KiB and
//! (for a subset) 1 MiB, roots first/last/middle, in place or not; reductions
//! for every (type, width, operator) the builders accept; many executions of
//! one persistent collective; several collectives in flight at once; a
//! composed schedule. Each case is checked against a directly computed
//! expected result, and every buffer carries guard bytes on both sides, so a
//! write past a buffer or into a buffer that must stay untouched (a
//! non-root's receive buffer) fails the case too. Progress modes: manual and
//! thread.
//!
//! To keep the file fast, checks are grouped: one job per group size runs
//! many cases, and the (type, operator) sweep of the reductions appends one
//! collective per combination to a single graph (each with its own tag range),
//! which also tests many collectives of one schedule in flight at once.

mod util;

use goal_sched::coll::{self, algorithms, Algorithm, Coll, Group, Piece, Placement, Reduction, TAG_SPAN};
use goal_sched::{Buf, DataType, Graph, ReduceOp};
use std::sync::Arc;
use util::ranks;

const SIZES: &[usize] = &[1, 2, 3, 4, 5, 6, 7, 8, 9];
const MODES: &[&str] = &["manual", "thread", "kernel"];
/// Like the C API's `GOAL_COLL_TAG_BASE`.
const TAG0: i64 = 1 << 30;
const KIB: usize = 1024;
const MIB: usize = 1 << 20;
/// Byte counts of the data collectives: one, odd (past the eager limit of
/// small rings, not a multiple of anything), 64 KiB.
const BYTES: &[usize] = &[1, 4099, 64 * KIB];

type Rt = Arc<goal_rt::Runtime>;

fn rt() -> Rt {
    goal_rt::init().expect("GOAL_Init")
}

fn grp(rt: &Rt) -> Group {
    Group { rank: rt.rank(), size: rt.size() }
}

fn at(k: i64) -> Placement {
    Placement { tag_base: TAG0 + k * TAG_SPAN }
}

/// The mode this job runs in, for messages.
fn mode() -> String {
    std::env::var("GOAL_PROGRESS").unwrap_or_else(|_| "default".into())
}

/// Compiles `g` and runs it once; panics with `ctx` on any error.
fn exec(rt: &Rt, g: &Graph, ctx: &str) {
    let s = rt.compile(g).unwrap_or_else(|e| panic!("{ctx}: compile: {e}"));
    run(rt, &s, ctx);
}

fn run(rt: &Rt, s: &goal_rt::Schedule, ctx: &str) {
    // SAFETY: every caller keeps the buffers of `s` alive and untouched until this returns.
    unsafe { rt.run(s) }.and_then(|h| h.wait()).unwrap_or_else(|e| panic!("{ctx}: execution failed: {e}"));
}

/// `Auto` and every algorithm of `c`.
fn algs(c: Coll) -> Vec<Algorithm> {
    std::iter::once(Algorithm::Auto).chain(algorithms(c).iter().copied()).collect()
}

fn roots(p: u32) -> Vec<u32> {
    let mut r = vec![0, p - 1, p / 2];
    r.sort();
    r.dedup();
    r
}

/// Ends a job: a handshake through rank 0 (point to point), so that no rank
/// finalizes and exits while a peer may still be finishing its part of the
/// last collective. (A rank that leaves right after its part is done should
/// be fine too, but is not always: see `a_rank_may_exit_once_its_part_is_done`.)
fn sync_exit(rt: &Rt) {
    let (p, me) = (rt.size() as usize, rt.rank() as usize);
    let mut bytes = vec![0u8; p];
    let mut g = Graph::new();
    if me == 0 {
        let recvs: Vec<_> = (1..p).map(|r| g.recv(Buf::user(bytes[r..].as_mut_ptr() as u64), 1, r as i64, 2)).collect();
        for r in 1..p {
            let s = g.send(Buf::user(bytes.as_ptr() as u64), 1, r as i64, 3);
            for &v in &recvs {
                g.requires(v, s).unwrap();
            }
        }
    } else {
        let s = g.send(Buf::user(bytes.as_ptr() as u64), 1, 0, 2);
        let r = g.recv(Buf::user(bytes[1..].as_mut_ptr() as u64), 1, 0, 3);
        g.requires(s, r).unwrap();
    }
    exec(rt, &g, "the closing handshake");
    goal_rt::finalize().unwrap();
}

// ---------------------------------------------------------------------------
// Buffers with guards, and data every rank can compute.

const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0xA5;

/// A buffer with `GUARD` bytes of `GUARD_BYTE` on both sides, from the Rust
/// heap or (see [`HEAP`]) from goal's shared heap, whose memory peers read
/// directly (the single-copy path).
struct Region {
    ptr: *mut u8,
    len: usize,
    _vec: Option<Vec<u8>>,
}

thread_local! {
    /// Where new regions come from: goal's shared heap when set.
    static HEAP: std::cell::RefCell<Option<Rt>> = const { std::cell::RefCell::new(None) };
}

impl Region {
    fn new(len: usize) -> Region {
        let total = len + 2 * GUARD;
        let (ptr, vec) = match HEAP.with(|h| h.borrow().clone()) {
            Some(rt) => (rt.alloc(total).expect("GOAL_Alloc").as_ptr(), None),
            None => {
                let mut v = vec![0u8; total];
                (v.as_mut_ptr(), Some(v))
            }
        };
        // SAFETY: ptr is valid for `total` bytes.
        unsafe { std::ptr::write_bytes(ptr, GUARD_BYTE, total) };
        Region { ptr, len, _vec: vec }
    }
    fn filled(len: usize, seed: u64) -> Region {
        let mut r = Region::new(len);
        fill(r.data_mut(), seed);
        r
    }
    fn all(&self) -> &[u8] {
        // SAFETY: ptr is valid for len + 2 * GUARD bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len + 2 * GUARD) }
    }
    fn addr(&self) -> u64 {
        self.ptr as u64 + GUARD as u64
    }
    fn data(&self) -> &[u8] {
        &self.all()[GUARD..GUARD + self.len]
    }
    fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `all`; &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(GUARD), self.len) }
    }
    fn check_guards(&self, ctx: &str) {
        let v = self.all();
        let (lo, hi) = (&v[..GUARD], &v[GUARD + self.len..]);
        if let Some(i) = lo.iter().position(|&b| b != GUARD_BYTE) {
            panic!("{ctx}: written {} bytes before the buffer", GUARD - i);
        }
        if let Some(i) = hi.iter().position(|&b| b != GUARD_BYTE) {
            panic!("{ctx}: written {} bytes past the end of the buffer", i + 1);
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self._vec.is_none() {
            if let Some(rt) = HEAP.with(|h| h.borrow().clone()) {
                rt.free(self.ptr);
            }
        }
    }
}

/// Runs `f` with every new region from goal's shared heap.
fn with_heap(rt: &Rt, f: impl FnOnce()) {
    HEAP.with(|h| *h.borrow_mut() = Some(rt.clone()));
    f();
    HEAP.with(|h| *h.borrow_mut() = None);
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for (case, rank, block).
fn sd(case: u64, rank: u32, block: u64) -> u64 {
    mix(case.wrapping_mul(1_000_003) ^ mix((rank as u64) << 32 ^ block))
}

fn fill(b: &mut [u8], seed: u64) {
    for (k, chunk) in b.chunks_mut(8).enumerate() {
        let w = mix(seed ^ (k as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill(&mut v, seed);
    v
}

/// Panics naming the first differing byte.
fn expect_eq(got: &[u8], want: &[u8], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: length");
    if got != want {
        let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
        let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
        panic!("{ctx}: byte {i} is {:#04x}, want {:#04x} ({n} of {} bytes differ)", got[i], want[i], got.len());
    }
}

// ---------------------------------------------------------------------------
// The data-moving collectives, one case each.

struct Case<'a> {
    rt: &'a Rt,
    id: u64,
    ctx: String,
}

fn bcast_case(c: &Case, n: usize, root: u32, alg: Algorithm) {
    let g0 = grp(c.rt);
    let want = pattern(n, sd(c.id, root, 0));
    let buf = if g0.rank == root { Region::filled(n, sd(c.id, root, 0)) } else { Region::filled(n, sd(c.id, 777, g0.rank as u64)) };
    let mut g = Graph::new();
    coll::bcast(&mut g, g0, at(1), buf.addr(), n as u64, root, alg).unwrap_or_else(|e| panic!("{}: build: {e}", c.ctx));
    exec(c.rt, &g, &c.ctx);
    expect_eq(buf.data(), &want, &c.ctx);
    buf.check_guards(&c.ctx);
}

fn gather_case(c: &Case, n: usize, root: u32, alg: Algorithm, in_place: bool) {
    let g0 = grp(c.rt);
    let p = g0.size as usize;
    let me = g0.rank;
    let sbuf = Region::filled(n, sd(c.id, me, 0));
    let mut rbuf = Region::filled(p * n, sd(c.id, 900 + me, 0));
    let rinit = rbuf.data().to_vec();
    let ip = in_place && me == root;
    if ip {
        rbuf.data_mut()[me as usize * n..(me as usize + 1) * n].copy_from_slice(sbuf.data());
    }
    let s_addr = if ip { rbuf.addr() } else { sbuf.addr() };
    let mut g = Graph::new();
    coll::gather(&mut g, g0, at(2), s_addr, n as u64, rbuf.addr(), root, alg).unwrap_or_else(|e| panic!("{}: build: {e}", c.ctx));
    exec(c.rt, &g, &c.ctx);
    if me == root {
        for r in 0..p {
            expect_eq(&rbuf.data()[r * n..(r + 1) * n], &pattern(n, sd(c.id, r as u32, 0)), &format!("{}: block of rank {r}", c.ctx));
        }
    } else {
        expect_eq(rbuf.data(), &rinit, &format!("{}: receive buffer of a non-root must stay untouched", c.ctx));
    }
    expect_eq(sbuf.data(), &pattern(n, sd(c.id, me, 0)), &format!("{}: send buffer changed", c.ctx));
    rbuf.check_guards(&c.ctx);
    sbuf.check_guards(&c.ctx);
}

fn scatter_case(c: &Case, n: usize, root: u32, alg: Algorithm, in_place: bool) {
    let g0 = grp(c.rt);
    let p = g0.size as usize;
    let me = g0.rank;
    let mut sbuf = Region::new(p * n);
    if me == root {
        for r in 0..p {
            fill(&mut sbuf.data_mut()[r * n..(r + 1) * n], sd(c.id, r as u32, 1));
        }
    } else {
        fill(sbuf.data_mut(), sd(c.id, 500 + me, 1));
    }
    let sinit = sbuf.data().to_vec();
    let rbuf = Region::filled(n, sd(c.id, 900 + me, 0));
    let ip = in_place && me == root;
    let r_addr = if ip { sbuf.addr() } else { rbuf.addr() };
    let mut g = Graph::new();
    coll::scatter(&mut g, g0, at(3), sbuf.addr(), n as u64, r_addr, root, alg).unwrap_or_else(|e| panic!("{}: build: {e}", c.ctx));
    exec(c.rt, &g, &c.ctx);
    expect_eq(sbuf.data(), &sinit, &format!("{}: the send buffer must stay untouched", c.ctx));
    if ip {
        expect_eq(rbuf.data(), &pattern(n, sd(c.id, 900 + me, 0)), &format!("{}: in place, rbuf is not used", c.ctx));
    } else {
        expect_eq(rbuf.data(), &pattern(n, sd(c.id, me, 1)), &c.ctx);
    }
    rbuf.check_guards(&c.ctx);
    sbuf.check_guards(&c.ctx);
}

fn allgather_case(c: &Case, n: usize, alg: Algorithm, in_place: bool) {
    let g0 = grp(c.rt);
    let p = g0.size as usize;
    let me = g0.rank as usize;
    let sbuf = Region::filled(n, sd(c.id, me as u32, 0));
    let mut rbuf = Region::filled(p * n, sd(c.id, 900 + me as u32, 0));
    if in_place {
        rbuf.data_mut()[me * n..(me + 1) * n].copy_from_slice(sbuf.data());
    }
    let s_addr = if in_place { rbuf.addr() } else { sbuf.addr() };
    let mut g = Graph::new();
    coll::allgather(&mut g, g0, at(4), s_addr, n as u64, rbuf.addr(), alg).unwrap_or_else(|e| panic!("{}: build: {e}", c.ctx));
    exec(c.rt, &g, &c.ctx);
    for r in 0..p {
        expect_eq(&rbuf.data()[r * n..(r + 1) * n], &pattern(n, sd(c.id, r as u32, 0)), &format!("{}: block of rank {r}", c.ctx));
    }
    rbuf.check_guards(&c.ctx);
    sbuf.check_guards(&c.ctx);
}

fn alltoall_case(c: &Case, n: usize, alg: Algorithm, in_place: bool) {
    let g0 = grp(c.rt);
    let p = g0.size as usize;
    let me = g0.rank;
    // Block j of rank i's send buffer: seed (i, j).
    let mut sbuf = Region::new(p * n);
    for j in 0..p {
        fill(&mut sbuf.data_mut()[j * n..(j + 1) * n], sd(c.id, me, 10 + j as u64));
    }
    let mut rbuf = Region::filled(p * n, sd(c.id, 900 + me, 0));
    if in_place {
        let s = sbuf.data().to_vec();
        rbuf.data_mut().copy_from_slice(&s);
    }
    let s_addr = if in_place { rbuf.addr() } else { sbuf.addr() };
    let mut g = Graph::new();
    coll::alltoall(&mut g, g0, at(5), s_addr, n as u64, rbuf.addr(), alg).unwrap_or_else(|e| panic!("{}: build: {e}", c.ctx));
    exec(c.rt, &g, &c.ctx);
    for i in 0..p {
        let want = pattern(n, sd(c.id, i as u32, 10 + me as u64));
        expect_eq(&rbuf.data()[i * n..(i + 1) * n], &want, &format!("{}: block from rank {i}", c.ctx));
    }
    rbuf.check_guards(&c.ctx);
    sbuf.check_guards(&c.ctx);
}

/// Bcast, gather, scatter: every algorithm, root, size, in place or not.
#[test]
fn rooted_collectives_move_the_right_bytes() {
    ranks("rooted_collectives_move_the_right_bytes", SIZES, MODES, || {
        let rt = rt();
        let p = rt.size();
        let mut id = 0u64;
        let mut case = |what: String| {
            id += 1;
            Case { rt: &rt, id, ctx: format!("{what} on {p} ranks ({} progress), rank {}", mode(), rt.rank()) }
        };
        for &n in BYTES {
            for root in roots(p) {
                for alg in algs(Coll::Bcast) {
                    bcast_case(&case(format!("bcast {alg:?} {n} B root {root}")), n, root, alg);
                }
                for alg in algs(Coll::Gather) {
                    for ip in [false, true] {
                        gather_case(&case(format!("gather {alg:?} {n} B root {root} in_place {ip}")), n, root, alg, ip);
                        scatter_case(&case(format!("scatter {alg:?} {n} B root {root} in_place {ip}")), n, root, alg, ip);
                    }
                }
            }
        }
        // Nothing to move: an empty piece on every rank.
        bcast_case(&case("bcast 0 B".into()), 0, 0, Algorithm::Auto);
        gather_case(&case("gather 0 B".into()), 0, p - 1, Algorithm::Auto, false);
        scatter_case(&case("scatter 0 B".into()), 0, 0, Algorithm::Auto, true);
        // 1 MiB: every bcast algorithm, AUTO gather and scatter, last root.
        let root = p - 1;
        for alg in algs(Coll::Bcast) {
            bcast_case(&case(format!("bcast {alg:?} 1 MiB root {root}")), MIB, root, alg);
        }
        gather_case(&case(format!("gather Auto 1 MiB root {root}")), MIB, root, Algorithm::Auto, false);
        scatter_case(&case(format!("scatter Auto 1 MiB root {root}")), MIB, root, Algorithm::Auto, true);
        sync_exit(&rt);
    });
}

/// Allgather and alltoall: every algorithm, size, in place or not.
#[test]
fn allgather_and_alltoall_move_the_right_bytes() {
    ranks("allgather_and_alltoall_move_the_right_bytes", SIZES, MODES, || {
        let rt = rt();
        let p = rt.size();
        let mut id = 0u64;
        let mut case = |what: String| {
            id += 1;
            Case { rt: &rt, id, ctx: format!("{what} on {p} ranks ({} progress), rank {}", mode(), rt.rank()) }
        };
        for &n in BYTES {
            for ip in [false, true] {
                for alg in algs(Coll::Allgather) {
                    allgather_case(&case(format!("allgather {alg:?} {n} B in_place {ip}")), n, alg, ip);
                }
                for alg in algs(Coll::Alltoall) {
                    alltoall_case(&case(format!("alltoall {alg:?} {n} B in_place {ip}")), n, alg, ip);
                }
            }
        }
        allgather_case(&case("allgather 0 B".into()), 0, Algorithm::Auto, false);
        alltoall_case(&case("alltoall 0 B".into()), 0, Algorithm::Auto, true);
        let n = if p <= 4 { MIB } else { 256 * KIB };
        allgather_case(&case(format!("allgather Auto {n} B")), n, Algorithm::Auto, false);
        alltoall_case(&case(format!("alltoall Auto {n} B")), n, Algorithm::Auto, true);
        sync_exit(&rt);
    });
}

/// Buffers from goal's shared heap (peers copy straight out of them): every
/// data collective and algorithm at 64 KiB and 1 MiB.
#[test]
fn collectives_on_goal_heap_buffers() {
    ranks("collectives_on_goal_heap_buffers", &[2, 3, 4, 5], &["thread"], || {
        let rt = rt();
        let p = rt.size();
        let mut id = 0u64;
        with_heap(&rt, || {
            let mut case = |what: String| {
                id += 1;
                Case { rt: &rt, id, ctx: format!("{what} (GOAL_Alloc buffers) on {p} ranks, rank {}", rt.rank()) }
            };
            for n in [64 * KIB, MIB] {
                let root = p / 2;
                for alg in algs(Coll::Bcast) {
                    bcast_case(&case(format!("bcast {alg:?} {n} B root {root}")), n, root, alg);
                }
                for alg in algs(Coll::Gather) {
                    gather_case(&case(format!("gather {alg:?} {n} B root {root}")), n, root, alg, n == MIB);
                    scatter_case(&case(format!("scatter {alg:?} {n} B root {root}")), n, root, alg, n == MIB);
                }
                for alg in algs(Coll::Allgather) {
                    allgather_case(&case(format!("allgather {alg:?} {n} B")), n, alg, false);
                }
                for alg in algs(Coll::Alltoall) {
                    alltoall_case(&case(format!("alltoall {alg:?} {n} B")), n, alg, n == MIB);
                }
            }
            let big = [(Ty { dt: DataType::Float, width: 64 }, ReduceOp::Add)];
            for (which, c) in red_colls(p) {
                for alg in algs(c) {
                    id += 1;
                    let count = if which == RedColl::ReduceScatterBlock { MIB / 8 / p as usize } else { MIB / 8 };
                    let ctx = format!("{which:?} {alg:?} 1 MiB (GOAL_Alloc buffers) on {p} ranks, rank {}", rt.rank());
                    reductions_case(&rt, id, which, alg, id.is_multiple_of(2), count, &big, &ctx);
                }
            }
        });
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// Reductions: values as raw bits, a reference combine, every type and operator.

#[derive(Clone, Copy, Debug)]
struct Ty {
    dt: DataType,
    width: u8,
}

impl Ty {
    fn esz(self) -> usize {
        self.width as usize / 8
    }
    fn mask(self) -> u64 {
        if self.width == 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }
    fn name(self) -> String {
        format!("{}{}", self.dt.name(), self.width)
    }
}

/// Every (type, operator) the builders accept.
fn combos() -> Vec<(Ty, ReduceOp)> {
    use ReduceOp::*;
    let mut v = Vec::new();
    for dt in [DataType::SInt, DataType::UInt] {
        for width in [8, 16, 32, 64] {
            for op in [Max, Min, Add, Mul, And, Or, Xor] {
                v.push((Ty { dt, width }, op));
            }
        }
    }
    for width in [32, 64] {
        for op in [Max, Min, Add, Mul] {
            v.push((Ty { dt: DataType::Float, width }, op));
        }
    }
    v
}

fn f_bits(ty: Ty, x: f64) -> u64 {
    if ty.width == 32 {
        (x as f32).to_bits() as u64
    } else {
        x.to_bits()
    }
}

fn f_val(ty: Ty, b: u64) -> f64 {
    if ty.width == 32 {
        f32::from_bits(b as u32) as f64
    } else {
        f64::from_bits(b)
    }
}

/// Element `i` of a rank's input with `seed`. Floats are chosen so that
/// every reduction is exact in any order (small multiples of 1/4 for ADD,
/// +-{0.5, 1, 1.5, 2} for MUL), so the result does not depend on the
/// algorithm and can be compared bit for bit.
fn elem(ty: Ty, op: ReduceOp, seed: u64, i: usize) -> u64 {
    let h = mix(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    match ty.dt {
        DataType::Float => {
            let x = match op {
                ReduceOp::Mul => [0.5, 1.0, 1.5, 2.0][(h % 4) as usize] * if h & 8 != 0 { -1.0 } else { 1.0 },
                ReduceOp::Add => ((h % 257) as f64 - 128.0) * 0.25,
                _ => ((h % 20001) as f64 - 10000.0) / 8.0,
            };
            f_bits(ty, x)
        }
        _ => h & ty.mask(),
    }
}

fn sext(ty: Ty, b: u64) -> i64 {
    let s = 64 - ty.width as u32;
    ((b << s) as i64) >> s
}

fn combine(ty: Ty, op: ReduceOp, a: u64, b: u64) -> u64 {
    use ReduceOp::*;
    match ty.dt {
        DataType::Float => {
            let (x, y) = (f_val(ty, a), f_val(ty, b));
            let r = match op {
                Max => x.max(y),
                Min => x.min(y),
                Add => x + y,
                Mul => x * y,
                _ => unreachable!(),
            };
            f_bits(ty, r)
        }
        dt => {
            let m = ty.mask();
            match op {
                Add => a.wrapping_add(b) & m,
                Mul => a.wrapping_mul(b) & m,
                And => a & b,
                Or => a | b,
                Xor => a ^ b,
                Max | Min => {
                    let gt = if dt == DataType::SInt { sext(ty, a) > sext(ty, b) } else { a > b };
                    if (op == Max) == gt {
                        a
                    } else {
                        b
                    }
                }
                _ => unreachable!(),
            }
        }
    }
}

fn put(buf: &mut [u8], ty: Ty, i: usize, v: u64) {
    let e = ty.esz();
    buf[i * e..(i + 1) * e].copy_from_slice(&v.to_le_bytes()[..e]);
}

fn get(buf: &[u8], ty: Ty, i: usize) -> u64 {
    let e = ty.esz();
    let mut w = [0u8; 8];
    w[..e].copy_from_slice(&buf[i * e..(i + 1) * e]);
    u64::from_le_bytes(w)
}

/// `count` elements of every rank's input (seed per rank), as bytes.
fn input(ty: Ty, op: ReduceOp, seed: u64, rank: u32, count: usize) -> Vec<u8> {
    let mut v = vec![0u8; count * ty.esz()];
    for i in 0..count {
        put(&mut v, ty, i, elem(ty, op, seed ^ mix(rank as u64 + 1), i));
    }
    v
}

/// The reduction over all `p` ranks' inputs.
fn reduced(ty: Ty, op: ReduceOp, seed: u64, p: u32, count: usize) -> Vec<u8> {
    let mut v = input(ty, op, seed, 0, count);
    for r in 1..p {
        for i in 0..count {
            let x = combine(ty, op, get(&v, ty, i), elem(ty, op, seed ^ mix(r as u64 + 1), i));
            put(&mut v, ty, i, x);
        }
    }
    v
}

fn red(ty: Ty, op: ReduceOp) -> Reduction {
    Reduction::new(op, ty.dt, ty.width as u32)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum RedColl {
    Reduce(u32),
    Allreduce,
    ReduceScatterBlock,
}

/// One reduction collective of `count` elements (per rank for
/// reduce_scatter_block) for every (type, operator) in `combos`, all in one
/// graph; runs it and checks every result.
#[allow(clippy::too_many_arguments)] // one case of the reduction matrix, named in full
fn reductions_case(rt: &Rt, case: u64, which: RedColl, alg: Algorithm, in_place: bool, count: usize, combos: &[(Ty, ReduceOp)], ctx: &str) {
    let g0 = grp(rt);
    let (p, me) = (g0.size, g0.rank);
    let total = if which == RedColl::ReduceScatterBlock { count * p as usize } else { count };
    struct Bufs {
        s: Region,
        r: Region,
        rinit: Vec<u8>,
    }
    let mut g = Graph::new();
    let mut bufs = Vec::new();
    for (k, &(ty, op)) in combos.iter().enumerate() {
        let seed = sd(case, 0, k as u64);
        let data = input(ty, op, seed, me, total);
        let mut s = Region::new(data.len());
        s.data_mut().copy_from_slice(&data);
        let root = if let RedColl::Reduce(r) = which { Some(r) } else { None };
        let ip = in_place && root.is_none_or(|r| r == me);
        let rlen = if ip {
            total * ty.esz()
        } else {
            match which {
                RedColl::ReduceScatterBlock => count * ty.esz(),
                _ => total * ty.esz(),
            }
        };
        let mut r = Region::filled(rlen, sd(case, 900 + me, k as u64));
        if ip {
            r.data_mut().copy_from_slice(&data);
        }
        let s_addr = if ip { r.addr() } else { s.addr() };
        let built = match which {
            RedColl::Reduce(root) => coll::reduce(&mut g, g0, at(k as i64), s_addr, r.addr(), count as u64, red(ty, op), root, alg),
            RedColl::Allreduce => coll::allreduce(&mut g, g0, at(k as i64), s_addr, r.addr(), count as u64, red(ty, op), alg),
            RedColl::ReduceScatterBlock => {
                coll::reduce_scatter_block(&mut g, g0, at(k as i64), s_addr, r.addr(), count as u64, red(ty, op), alg)
            }
        };
        built.unwrap_or_else(|e| panic!("{ctx} {} {}: build: {e}", ty.name(), op.name()));
        let rinit = r.data().to_vec();
        bufs.push(Bufs { s, r, rinit });
    }
    exec(rt, &g, ctx);
    for (k, (&(ty, op), b)) in combos.iter().zip(&bufs).enumerate() {
        let ctx = format!("{ctx} {} {}", ty.name(), op.name());
        let seed = sd(case, 0, k as u64);
        let want = reduced(ty, op, seed, p, total);
        let e = ty.esz();
        match which {
            RedColl::Reduce(root) if root == me => expect_eq(&b.r.data()[..count * e], &want, &ctx),
            RedColl::Reduce(_) => expect_eq(b.r.data(), &b.rinit, &format!("{ctx}: receive buffer of a non-root must stay untouched")),
            RedColl::Allreduce => expect_eq(b.r.data(), &want, &ctx),
            RedColl::ReduceScatterBlock => {
                let mine = &want[me as usize * count * e..(me as usize + 1) * count * e];
                expect_eq(&b.r.data()[..count * e], mine, &format!("{ctx}: block {me}"));
            }
        }
        if !(in_place && matches!(which, RedColl::Allreduce | RedColl::ReduceScatterBlock)) {
            expect_eq(b.s.data(), &input(ty, op, seed, me, total), &format!("{ctx}: the send buffer changed"));
        }
        b.r.check_guards(&ctx);
        b.s.check_guards(&ctx);
    }
}

fn red_colls(p: u32) -> Vec<(RedColl, Coll)> {
    let mut v: Vec<(RedColl, Coll)> = roots(p).into_iter().map(|r| (RedColl::Reduce(r), Coll::Reduce)).collect();
    v.push((RedColl::Allreduce, Coll::Allreduce));
    v.push((RedColl::ReduceScatterBlock, Coll::ReduceScatterBlock));
    v
}

/// Reduce (every root), allreduce, reduce_scatter_block: every algorithm, in
/// place or not, every type and operator, counts 1 and 7 (fewer and more
/// elements than ranks); then 64 KiB and (on up to 4 ranks) 1 MiB vectors.
#[test]
fn reductions_every_type_operator_and_algorithm() {
    ranks("reductions_every_type_operator_and_algorithm", SIZES, MODES, || {
        let rt = rt();
        let p = rt.size();
        let all = combos();
        let mut case = 0u64;
        for (which, c) in red_colls(p) {
            for alg in algs(c) {
                for ip in [false, true] {
                    for count in [0usize, 1, 7] {
                        case += 1;
                        let ctx = format!("{which:?} {alg:?} in_place {ip} count {count} on {p} ranks ({} progress), rank {}", mode(), rt.rank());
                        reductions_case(&rt, case, which, alg, ip, count, &all, &ctx);
                    }
                }
            }
        }
        // Large vectors: a float, an integer and a bitwise reduction.
        let big = [(Ty { dt: DataType::Float, width: 64 }, ReduceOp::Add), (Ty { dt: DataType::SInt, width: 32 }, ReduceOp::Max)];
        let mut sizes = vec![64 * KIB];
        if p <= 4 {
            sizes.push(MIB);
        }
        for bytes in sizes {
            for (which, c) in red_colls(p) {
                let per_rank = which == RedColl::ReduceScatterBlock;
                let count = if per_rank { bytes / 8 / p as usize + 1 } else { bytes / 8 };
                let list: Vec<Algorithm> = if bytes == MIB && matches!(which, RedColl::Reduce(r) if r != p - 1) { vec![Algorithm::Auto] } else { algs(c) };
                for alg in list {
                    case += 1;
                    let ctx = format!("{which:?} {alg:?} {bytes} B on {p} ranks ({} progress), rank {}", mode(), rt.rank());
                    reductions_case(&rt, case, which, alg, case.is_multiple_of(2), count, &big, &ctx);
                }
            }
        }
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// Floats: allreduce gives the same bits on every rank.

/// FNV-1a.
fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
}

/// `mine` from every rank, at rank 0 (point to point, not a collective).
fn to_rank0(rt: &Rt, mine: &[u8]) -> Vec<Vec<u8>> {
    let (p, me) = (rt.size() as usize, rt.rank());
    let mut all = vec![vec![0u8; mine.len()]; p];
    let mut g = Graph::new();
    if me == 0 {
        all[0].copy_from_slice(mine);
        for (r, b) in all.iter_mut().enumerate().skip(1) {
            g.recv(Buf::user(b.as_mut_ptr() as u64), mine.len() as i64, r as i64, 1);
        }
    } else {
        g.send(Buf::user(mine.as_ptr() as u64), mine.len() as i64, 0, 1);
    }
    exec(rt, &g, "collecting results at rank 0");
    all
}

/// Random floats with full mantissas, every allreduce algorithm: every rank
/// ends with the same bits, close to the exact sum.
#[test]
fn allreduce_floats_are_bit_identical_on_every_rank() {
    ranks("allreduce_floats_are_bit_identical_on_every_rank", SIZES, MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let mut case = 0u64;
        for width in [32u8, 64] {
            let ty = Ty { dt: DataType::Float, width };
            for count in [1usize, 7, 1001, 64 * KIB / ty.esz()] {
                for alg in algs(Coll::Allreduce) {
                    for ip in [false, true] {
                        case += 1;
                        let ctx = format!("allreduce {alg:?} FLOAT{width} ADD count {count} in_place {ip} on {p} ranks, rank {me}");
                        let val = |r: u32, i: usize| (mix(sd(case, r, i as u64)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                        let mut s = Region::new(count * ty.esz());
                        for i in 0..count {
                            put(s.data_mut(), ty, i, f_bits(ty, val(me, i)));
                        }
                        let mut r = Region::new(count * ty.esz());
                        if ip {
                            let d = s.data().to_vec();
                            r.data_mut().copy_from_slice(&d);
                        }
                        let mut g = Graph::new();
                        let s_addr = if ip { r.addr() } else { s.addr() };
                        coll::allreduce(&mut g, grp(&rt), at(0), s_addr, r.addr(), count as u64, red(ty, ReduceOp::Add), alg).unwrap();
                        exec(&rt, &g, &ctx);
                        r.check_guards(&ctx);
                        for i in 0..count {
                            let exact: f64 = (0..p).map(|q| f_val(ty, f_bits(ty, val(q, i)))).sum();
                            let got = f_val(ty, get(r.data(), ty, i));
                            let tol = if width == 32 { 1e-5 } else { 1e-13 } * p as f64;
                            assert!((got - exact).abs() <= tol, "{ctx}: element {i} is {got}, want {exact} (tolerance {tol})");
                        }
                        let hashes = to_rank0(&rt, &hash(r.data()).to_le_bytes());
                        if me == 0 {
                            let h: Vec<u64> = hashes.iter().map(|b| u64::from_le_bytes(b[..8].try_into().unwrap())).collect();
                            assert!(h.iter().all(|&x| x == h[0]), "{ctx}: ranks differ in the result's bits (hashes {h:x?})");
                        }
                    }
                }
            }
        }
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// 16-bit floats: bit for bit the sequential model of each algorithm's order.

/// Rank `rank`'s `count` 16-bit floats for `seed`: one in four any bit
/// pattern (NaNs signalling and quiet, infinities, subnormals, huge
/// values), the others values around 1 whose sums and products round.
fn half_input(bf: bool, seed: u64, rank: u32, count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| {
            let h = mix(sd(seed, rank, i as u64));
            let x = if h.is_multiple_of(4) {
                (h >> 16) as u16
            } else {
                let v = ((h >> 16) % 40_001) as f32 / 3_001.0 - 6.5;
                if bf {
                    goal_sched::half::f32_to_bf16(v)
                } else {
                    goal_sched::half::f32_to_f16(v)
                }
            };
            x.to_le_bytes()
        })
        .collect()
}

/// What every rank's `rbuf` holds after the collective, by the model: the
/// same builder's graphs for all ranks, executed in memory by
/// `goal_sched::sim`, one combine at a time with goal_sched::half's scalar
/// reference. (goal-sched's `reductions_every_type_and_operator` checks
/// that this equals the explicit order model of each algorithm, fold,
/// butterfly, ring, binomial and linear trees, for these types.)
fn half_model(which: RedColl, alg: Algorithm, red: Reduction, p: u32, count: usize, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let ilen = inputs[0].len() as u64;
    let olen = if which == RedColl::ReduceScatterBlock { count as u64 * 2 } else { ilen };
    let graphs: Vec<Graph> = (0..p)
        .map(|rank| {
            let mut g = Graph::new();
            let grp = Group { rank, size: p };
            match which {
                RedColl::Reduce(root) => coll::reduce(&mut g, grp, at(0), 0, ilen, count as u64, red, root, alg),
                RedColl::Allreduce => coll::allreduce(&mut g, grp, at(0), 0, ilen, count as u64, red, alg),
                RedColl::ReduceScatterBlock => coll::reduce_scatter_block(&mut g, grp, at(0), 0, ilen, count as u64, red, alg),
            }
            .unwrap();
            g
        })
        .collect();
    let mut mem: Vec<Vec<u8>> = inputs.iter().map(|x| [x.clone(), vec![0u8; olen as usize]].concat()).collect();
    goal_sched::sim::simulate(&graphs, &mut mem).expect("the model runs");
    mem.into_iter().map(|m| m[ilen as usize..].to_vec()).collect()
}

/// binary16 and bfloat16: reduce (every root), allreduce and
/// reduce_scatter_block, AUTO and every algorithm, MAX, MIN, ADD and MUL,
/// counts from 1 to 64 Ki elements (the largest go through the fused
/// receive-combine paths), inputs with NaNs, infinities, signed zeros and
/// subnormals: every rank's result is bit for bit the sequential model's
/// (so also the same on every rank), and the send buffers are unchanged.
#[test]
fn half_floats_are_bit_exact_against_the_model() {
    ranks("half_floats_are_bit_exact_against_the_model", &[2, 3, 4], MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let mut case = 0u64;
        for (dt, bf) in [(DataType::Float, false), (DataType::BFloat, true)] {
            for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Mul] {
                let red = Reduction::new(op, dt, 16);
                for (which, c) in red_colls(p) {
                    for alg in algs(c) {
                        let counts: &[usize] = if op == ReduceOp::Add { &[1, 7, 1001, 64 * KIB] } else { &[7, 1001] };
                        for &count in counts {
                            case += 1;
                            let ctx = format!("{which:?} {alg:?} {}/16 {} count {count} on {p} ranks ({} progress), rank {me}", dt.name(), op.name(), mode());
                            let total = if which == RedColl::ReduceScatterBlock { count * p as usize } else { count };
                            let inputs: Vec<Vec<u8>> = (0..p).map(|r| half_input(bf, case, r, total)).collect();
                            let want = half_model(which, alg, red, p, count, &inputs);
                            let mut s = Region::new(total * 2);
                            s.data_mut().copy_from_slice(&inputs[me as usize]);
                            let rlen = if which == RedColl::ReduceScatterBlock { count * 2 } else { total * 2 };
                            let r = Region::new(rlen);
                            let mut g = Graph::new();
                            let (sa, ra) = (s.addr(), r.addr());
                            match which {
                                RedColl::Reduce(root) => coll::reduce(&mut g, grp(&rt), at(0), sa, ra, count as u64, red, root, alg),
                                RedColl::Allreduce => coll::allreduce(&mut g, grp(&rt), at(0), sa, ra, count as u64, red, alg),
                                RedColl::ReduceScatterBlock => coll::reduce_scatter_block(&mut g, grp(&rt), at(0), sa, ra, count as u64, red, alg),
                            }
                            .unwrap_or_else(|e| panic!("{ctx}: build: {e}"));
                            exec(&rt, &g, &ctx);
                            if !matches!(which, RedColl::Reduce(root) if root != me) {
                                expect_eq(r.data(), &want[me as usize], &ctx);
                            }
                            expect_eq(s.data(), &inputs[me as usize], &format!("{ctx}: the send buffer changed"));
                            r.check_guards(&ctx);
                            s.check_guards(&ctx);
                        }
                    }
                }
            }
        }
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// Barrier: nobody leaves before everybody entered.

#[test]
fn barriers_hold_every_rank_until_the_last_arrives() {
    ranks("barriers_hold_every_rank_until_the_last_arrives", SIZES, MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        for alg in algs(Coll::Barrier) {
            let mut g = Graph::new();
            coll::barrier(&mut g, grp(&rt), at(0), alg).unwrap();
            let s = rt.compile(&g).unwrap();
            for rep in 0..3u32 {
                let ctx = format!("barrier {alg:?} rep {rep} on {p} ranks ({} progress), rank {me}", mode());
                // A different rank comes last each time.
                let late = (rep * 5 + 1) % p;
                if me == late {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let enter = goal_rt::wtime();
                run(&rt, &s, &ctx);
                let leave = goal_rt::wtime();
                let mut t = [0u8; 16];
                t[..8].copy_from_slice(&enter.to_le_bytes());
                t[8..].copy_from_slice(&leave.to_le_bytes());
                let all = to_rank0(&rt, &t);
                if me == 0 {
                    let f = |b: &[u8]| f64::from_le_bytes(b.try_into().unwrap());
                    let last_in = all.iter().map(|b| f(&b[..8])).fold(f64::MIN, f64::max);
                    for (r, b) in all.iter().enumerate() {
                        assert!(f(&b[8..]) >= last_in, "{ctx}: rank {r} left at {} before the last rank entered at {last_in}", f(&b[8..]));
                    }
                }
            }
        }
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// Persistent collectives, several in flight, composition.

/// One schedule per collective and algorithm, run 20 times with new data
/// each time (the scratchpad is reused, not cleared); AUTO allreduce 300 times.
#[test]
fn persistent_collectives_run_many_times() {
    ranks("persistent_collectives_run_many_times", SIZES, MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let pz = p as usize;
        let n = 3001usize;
        let ty = Ty { dt: DataType::SInt, width: 64 };
        let root = p / 2;
        let mut case = 0u64;
        for (c, reps) in [
            (Coll::Bcast, 20),
            (Coll::Gather, 20),
            (Coll::Scatter, 20),
            (Coll::Allgather, 20),
            (Coll::Alltoall, 20),
            (Coll::Reduce, 20),
            (Coll::Allreduce, 20),
            (Coll::ReduceScatterBlock, 20),
        ] {
            for alg in algs(c) {
                let reps = if c == Coll::Allreduce && alg == Algorithm::Auto { 300 } else { reps };
                let mut s = Region::new(pz * n * 8);
                let mut r = Region::new(pz * n * 8);
                let mut g = Graph::new();
                let (sa, ra, g0) = (s.addr(), r.addr(), grp(&rt));
                let ar = red(ty, ReduceOp::Add);
                match c {
                    Coll::Bcast => coll::bcast(&mut g, g0, at(0), ra, n as u64, root, alg),
                    Coll::Gather => coll::gather(&mut g, g0, at(0), sa, n as u64, ra, root, alg),
                    Coll::Scatter => coll::scatter(&mut g, g0, at(0), sa, n as u64, ra, root, alg),
                    Coll::Allgather => coll::allgather(&mut g, g0, at(0), sa, n as u64, ra, alg),
                    Coll::Alltoall => coll::alltoall(&mut g, g0, at(0), sa, n as u64, ra, alg),
                    Coll::Reduce => coll::reduce(&mut g, g0, at(0), sa, ra, n as u64, ar, root, alg),
                    Coll::Allreduce => coll::allreduce(&mut g, g0, at(0), sa, ra, n as u64, ar, alg),
                    Coll::ReduceScatterBlock => coll::reduce_scatter_block(&mut g, g0, at(0), sa, ra, (n / pz) as u64, ar, alg),
                    _ => unreachable!("{c:?} is not in this list"),
                }
                .unwrap();
                let sched = rt.compile(&g).unwrap();
                for it in 0..reps {
                    case += 1;
                    let ctx = format!("{c:?} {alg:?} execution {it} of one schedule on {p} ranks ({} progress), rank {me}", mode());
                    match c {
                        Coll::Bcast => fill(r.data_mut(), if me == root { sd(case, root, 0) } else { 0 }),
                        Coll::Gather | Coll::Allgather => fill(s.data_mut(), sd(case, me, 0)),
                        Coll::Scatter | Coll::Alltoall => {
                            for j in 0..pz {
                                fill(&mut s.data_mut()[j * n..(j + 1) * n], sd(case, me, j as u64));
                            }
                        }
                        _ => {
                            let len = if c == Coll::ReduceScatterBlock { (n / pz) * pz } else { n };
                            s.data_mut()[..len * 8].copy_from_slice(&input(ty, ReduceOp::Add, case, me, len));
                        }
                    }
                    run(&rt, &sched, &ctx);
                    let rd = r.data();
                    match c {
                        Coll::Bcast => expect_eq(&rd[..n], &pattern(n, sd(case, root, 0)), &ctx),
                        Coll::Gather if me == root => {
                            for q in 0..pz {
                                expect_eq(&rd[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, 0)), &ctx);
                            }
                        }
                        Coll::Allgather => {
                            for q in 0..pz {
                                expect_eq(&rd[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, 0)), &ctx);
                            }
                        }
                        Coll::Scatter => expect_eq(&rd[..n], &pattern(n, sd(case, root, me as u64)), &ctx),
                        Coll::Alltoall => {
                            for q in 0..pz {
                                expect_eq(&rd[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, me as u64)), &ctx);
                            }
                        }
                        Coll::Reduce if me == root => expect_eq(&rd[..n * 8], &reduced(ty, ReduceOp::Add, case, p, n), &ctx),
                        Coll::Allreduce => expect_eq(&rd[..n * 8], &reduced(ty, ReduceOp::Add, case, p, n), &ctx),
                        Coll::ReduceScatterBlock => {
                            let k = n / pz;
                            let want = reduced(ty, ReduceOp::Add, case, p, k * pz);
                            expect_eq(&rd[..k * 8], &want[me as usize * k * 8..(me as usize + 1) * k * 8], &ctx);
                        }
                        _ => {}
                    }
                    r.check_guards(&ctx);
                    s.check_guards(&ctx);
                }
            }
        }
        sync_exit(&rt);
    });
}

/// Seven different collectives started back to back, then waited for in
/// reverse order (and with GOAL_Test polling in between), five times.
#[test]
fn several_collectives_in_flight_at_once() {
    ranks("several_collectives_in_flight_at_once", SIZES, MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let pz = p as usize;
        let g0 = grp(&rt);
        let ty = Ty { dt: DataType::UInt, width: 32 };
        for &n in &[100usize, 40_000] {
            let mut bc = Region::new(n);
            let mut gs = Region::new(n);
            let gr = Region::new(n * pz);
            let mut a2s = Region::new(n * pz);
            let a2r = Region::new(n * pz);
            let mut ars = Region::new(n * 4);
            let arr = Region::new(n * 4);
            let mut ags = Region::new(n);
            let agr = Region::new(n * pz);
            let mut rss = Region::new(n * 4 * pz);
            let rsr = Region::new(n * 4);
            let root_b = 0;
            let root_g = p - 1;
            let sum = red(ty, ReduceOp::Add);
            let build = |f: &dyn Fn(&mut Graph) -> Result<Piece, coll::CollError>| {
                let mut g = Graph::new();
                f(&mut g).unwrap();
                rt.compile(&g).unwrap()
            };
            let scheds = [
                build(&|g| coll::bcast(g, g0, at(0), bc.addr(), n as u64, root_b, Algorithm::Auto)),
                build(&|g| coll::gather(g, g0, at(0), gs.addr(), n as u64, gr.addr(), root_g, Algorithm::Auto)),
                build(&|g| coll::alltoall(g, g0, at(0), a2s.addr(), n as u64, a2r.addr(), Algorithm::Auto)),
                build(&|g| coll::allreduce(g, g0, at(0), ars.addr(), arr.addr(), n as u64, sum, Algorithm::Auto)),
                build(&|g| coll::allgather(g, g0, at(0), ags.addr(), n as u64, agr.addr(), Algorithm::Auto)),
                build(&|g| coll::reduce_scatter_block(g, g0, at(0), rss.addr(), rsr.addr(), n as u64, sum, Algorithm::Auto)),
                build(&|g| coll::barrier(g, g0, at(0), Algorithm::Auto)),
            ];
            for round in 0..5u64 {
                let case = round * 1000 + n as u64;
                let ctx = format!("round {round}, {n} B, on {p} ranks ({} progress), rank {me}", mode());
                fill(bc.data_mut(), if me == root_b { sd(case, 0, 1) } else { 7 });
                fill(gs.data_mut(), sd(case, me, 2));
                for j in 0..pz {
                    fill(&mut a2s.data_mut()[j * n..(j + 1) * n], sd(case, me, 100 + j as u64));
                }
                ars.data_mut().copy_from_slice(&input(ty, ReduceOp::Add, case, me, n));
                fill(ags.data_mut(), sd(case, me, 3));
                rss.data_mut().copy_from_slice(&input(ty, ReduceOp::Add, case + 1, me, n * pz));
                // SAFETY: every buffer lives until all handles were waited for.
                let hs: Vec<goal_rt::Handle> = scheds.iter().map(|s| unsafe { rt.run(s) }.unwrap()).collect();
                if round % 2 == 1 {
                    for _ in 0..50 {
                        if hs.iter().all(|h| h.test().unwrap_or(true)) {
                            break;
                        }
                    }
                }
                for (k, h) in hs.into_iter().enumerate().rev() {
                    h.wait().unwrap_or_else(|e| panic!("{ctx}: collective {k}: {e}"));
                }
                expect_eq(bc.data(), &pattern(n, sd(case, 0, 1)), &format!("{ctx}: bcast"));
                if me == root_g {
                    for q in 0..pz {
                        expect_eq(&gr.data()[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, 2)), &format!("{ctx}: gather"));
                    }
                }
                for q in 0..pz {
                    expect_eq(&a2r.data()[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, 100 + me as u64)), &format!("{ctx}: alltoall"));
                    expect_eq(&agr.data()[q * n..(q + 1) * n], &pattern(n, sd(case, q as u32, 3)), &format!("{ctx}: allgather"));
                }
                expect_eq(arr.data(), &reduced(ty, ReduceOp::Add, case, p, n), &format!("{ctx}: allreduce"));
                let all = reduced(ty, ReduceOp::Add, case + 1, p, n * pz);
                expect_eq(rsr.data(), &all[me as usize * n * 4..(me as usize + 1) * n * 4], &format!("{ctx}: reduce_scatter_block"));
                for b in [&bc, &gr, &a2r, &arr, &agr, &rsr] {
                    b.check_guards(&ctx);
                }
            }
        }
        sync_exit(&rt);
    });
}

/// One schedule: y = allreduce(x); on the root z = 3 * y (a user operation);
/// bcast z from the root; then w = z + y on every rank (a user operation
/// after both collectives). Every allreduce algorithm with every bcast
/// algorithm, run three times each with new inputs.
#[test]
fn composed_allreduce_bcast_and_user_ops() {
    ranks("composed_allreduce_bcast_and_user_ops", SIZES, MODES, || {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let g0 = grp(&rt);
        let ty = Ty { dt: DataType::SInt, width: 64 };
        let root = p - 1;
        let mut case = 0u64;
        for count in [5usize, 20_000] {
            let three = vec![3i64; count];
            for ar_alg in algs(Coll::Allreduce) {
                for bc_alg in algs(Coll::Bcast) {
                    let mut x = Region::new(count * 8);
                    let y = Region::new(count * 8);
                    let z = Region::new(count * 8);
                    let w = Region::new(count * 8);
                    let mut g = Graph::new();
                    let ar = coll::allreduce(&mut g, g0, at(0), x.addr(), y.addr(), count as u64, red(ty, ReduceOp::Add), ar_alg).unwrap();
                    let bc = coll::bcast(&mut g, g0, at(1), z.addr(), count as u64 * 8, root, bc_alg).unwrap();
                    let (i64t, mul, add) = (DataType::SInt as i64, ReduceOp::Mul as i64, ReduceOp::Add as i64);
                    if me == root {
                        let u = g.local(mul, i64t, 64, count as i64, Buf::user(y.addr()), Buf::user(three.as_ptr() as u64), Buf::user(z.addr()));
                        g.requires(ar.done, u).unwrap();
                        g.requires(u, bc.entry).unwrap();
                    }
                    let last = g.local(add, i64t, 64, count as i64, Buf::user(z.addr()), Buf::user(y.addr()), Buf::user(w.addr()));
                    g.requires(bc.done, last).unwrap();
                    g.requires(ar.done, last).unwrap();
                    let s = rt.compile(&g).unwrap();
                    for it in 0..3 {
                        case += 1;
                        let ctx = format!("allreduce {ar_alg:?} -> bcast {bc_alg:?}, count {count}, run {it}, on {p} ranks ({} progress), rank {me}", mode());
                        x.data_mut().copy_from_slice(&input(ty, ReduceOp::Add, case, me, count));
                        run(&rt, &s, &ctx);
                        let sum = reduced(ty, ReduceOp::Add, case, p, count);
                        let mut z3 = vec![0u8; count * 8];
                        let mut w4 = vec![0u8; count * 8];
                        for i in 0..count {
                            let v = get(&sum, ty, i);
                            put(&mut z3, ty, i, v.wrapping_mul(3));
                            put(&mut w4, ty, i, v.wrapping_mul(4));
                        }
                        expect_eq(y.data(), &sum, &format!("{ctx}: allreduce result"));
                        expect_eq(z.data(), &z3, &format!("{ctx}: broadcast of the user op's result"));
                        expect_eq(w.data(), &w4, &format!("{ctx}: user op after both"));
                        for b in [&x, &y, &z, &w] {
                            b.check_guards(&ctx);
                        }
                    }
                }
            }
        }
        sync_exit(&rt);
    });
}

// ---------------------------------------------------------------------------
// A rank whose part is done may finalize and exit.

/// The root of a 1 MiB scatter to 5 ranks finishes its part (all its sends
/// complete: the bytes are in the receivers' streams), finalizes and exits at
/// once, while the receivers (more ranks than cores, so some of them are
/// descheduled) may still be asleep in `wait`. Every receiver must still get
/// its block: everything it needs is already in its own memory. (Every other
/// job of this file ends with [`sync_exit`], so that this one alone tests
/// the rule.) Several jobs, since the timing is not forced.
#[test]
fn a_rank_may_exit_once_its_part_is_done() {
    const NAME: &str = "a_rank_may_exit_once_its_part_is_done";
    if util::in_job() {
        let rt = rt();
        let (p, me) = (rt.size(), rt.rank());
        let n = MIB;
        let mut s = Region::new(p as usize * n);
        if me == 0 {
            for j in 0..p as usize {
                fill(&mut s.data_mut()[j * n..(j + 1) * n], sd(1, 0, j as u64));
            }
        }
        let r = Region::new(n);
        let mut g = Graph::new();
        coll::scatter(&mut g, grp(&rt), at(0), s.addr(), n as u64, r.addr(), 0, Algorithm::Linear).unwrap();
        let sched = rt.compile(&g).unwrap();
        if me != 0 {
            std::thread::sleep(std::time::Duration::from_millis(50 * me as u64));
        }
        run(&rt, &sched, &format!("scatter 1 MiB, rank {me} (the root exits as soon as its sends are done)"));
        expect_eq(r.data(), &pattern(n, sd(1, 0, me as u64)), &format!("rank {me}"));
        drop(sched);
        goal_rt::finalize().unwrap();
        if me == 0 {
            // Leave at once, as a C program returning from main would.
            std::process::exit(0);
        }
        return;
    }
    for (i, mode) in ["manual", "thread", "manual", "thread", "manual", "thread"].iter().enumerate() {
        let job = util::launch(NAME, 5, &[("GOAL_PROGRESS", mode)]);
        assert!(job.status == 0, "{NAME}, job {i}, GOAL_PROGRESS={mode}: exit {}\n--- stderr\n{}", job.status, job.stderr);
    }
}
