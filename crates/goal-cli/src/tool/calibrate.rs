//! `goal calibrate --loggops`: measures the LogGOPS parameters (L, o, g,
//! G, O and the rendezvous threshold S) between two ranks of a job, in the
//! form `goal sim` and LogGOPSim read.
//!
//! The method is the parametrised round trip of Hoefler, Schneider and
//! Lumsdaine ("LogGP in theory and practice", 2009; Netgauge's): rank 0
//! sends `n` messages of `s` bytes to rank 1, `d` nanoseconds of
//! computation between two sends, and rank 1 answers with one message of
//! `s` bytes once it has all of them. With PRTT(n, d, s) the time of that
//! exchange at rank 0 (the median of many):
//!
//! * `g + (s-1)G = (PRTT(n, 0, s) - PRTT(1, 0, s)) / (n - 1)`: back to back,
//!   the sender issues a message per gap;
//! * the sender's overhead `o_s + (s-1)O = (PRTT(n, d, s) - PRTT(1, 0, s)) /
//!   (n - 1) - d`, with `d` longer than a round trip, so the network is
//!   idle when each send starts and only the sender's own cost is left;
//! * the receiver's overhead `o_r + (s-1)O`, as Netgauge measures it:
//!   receives of messages that wait for them. Where rank 0 stays awake
//!   through it (`train_awake`: goal's spin outlasts the wait), the same
//!   train sent back to back, rank 1 computing `d` before each receive
//!   after the first; rank 1's time of that less its time of PRTT(1, 0,
//!   s), over `n - 1`, less `d`. Where rank 0 would fall asleep (across
//!   hosts), that time held its wake-up (8-11 us where a receive costs
//!   2-4), so a receive is timed on its own instead: rank 1 computes `d`
//!   (at least 200 us) and then receives, less the computation alone (see
//!   `calls`);
//! * G and O are the slopes of the least-squares lines through those, over
//!   the eager sizes; g, o_s and o_r their means at the small sizes (up to
//!   64 bytes) less the bytes' share;
//! * a message costs `o_s + L + o_r` from the send's start to the
//!   receive's end, so `L = PRTT(1, 0, 1) / 2 - o_s - o_r`: what the two
//!   ends' overheads leave of the half round trip (a delayed link goes
//!   there). 0 where they fill it: over shared memory the ends' work
//!   overlaps, and over TCP between namespaces (goal's emulated hosts) the
//!   sender's system call carries the message through the receiver's stack
//!   too, so the message arrives before the send returns;
//! * LogGOPSim charges one `o` at both ends: `o = (o_s + o_r) / 2` keeps
//!   their sum (both are written too, as `o_send` and `o_recv`);
//! * S is the eager limit goal uses to that peer: shared memory's
//!   calibrated one on one host; between hosts the network's
//!   (`GOAL_NET_EAGER`, larger over one rail, where rendezvous has no
//!   striping to offer). Above it goal and LogGOPSim both hand a message
//!   over by rendezvous.
//!
//! Each configuration is a goal schedule (sends chained by `requires`,
//! `calc d` between them), compiled in the same order on both ranks and run
//! many times. Run on one host, it measures shared memory; across two
//! hosts (mpirun with one rank per host), the network.
//!
//! The overheads are what the calling thread pays, as LogGOPS has them, so
//! goal runs here without its helper thread (`GOAL_PROGRESS=manual`, unless
//! the environment names a mode). With the helper, a message that arrives
//! while the receiver computes is taken off the network by the helper on
//! the other CPU, and the receive timed after the computation costs nearly
//! nothing: across 2 emulated hosts o_r came out 0 at 8 and 64 bytes in 3
//! runs of 3 where it was 2.1-3.3 us without the helper.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use goal_rt::{Runtime, Schedule};
use goal_sched::{Buf, Graph, Vertex};

use super::check::say;
use super::{Context, Failure};

const HELP: &str = "\
Usage: goal calibrate --loggops [--out PATH] [--reps N] [--messages N]

Measures the LogGOPS parameters between the two ranks of a job, in the form
goal sim and LogGOPSim read:
  goalrun -n 2 goal calibrate --loggops            (shared memory)
  mpirun -np 2 --host a,b goal calibrate --loggops (the network)
Method: the parametrised round trip PRTT(n, d, s) of Hoefler, Schneider and
Lumsdaine (LogGP in theory and practice, 2009), at every eager size from 1
byte: the sender's overhead o_s from a train with computation between the
sends, the receiver's o_r from receives whose messages wait for them (in a
train, or one at a time where the train's wait would put rank 0 to sleep),
L = PRTT(1,0,1)/2 - o_s
- o_r, o = (o_s + o_r)/2; S is goal's eager limit to the other rank (the
network's between hosts). The overheads are the calling thread's: goal runs
without its helper thread (GOAL_PROGRESS=manual) unless GOAL_PROGRESS is set.
Rank 0 prints the measurements, the parameters in nanoseconds (G and O per
byte) and the goal sim options.

Options:
  --loggops       measure the LogGOPS parameters (the only calibration today)
  --out PATH      also write them as JSON to PATH (rank 0)
  --reps N        round trips timed per configuration (default 400)
  --messages N    messages n of the back-to-back trains (default 16)
  -h, --help      print this help

Exit status: 0 when measured, 1 when goal cannot start or the job does not
have 2 ranks, 2 for a usage mistake. See docs/goal-text.md.
";

/// The sizes measured, those up to the eager limit.
const SIZES: &[usize] = &[1, 8, 64, 512, 2048, 8192, 16384, 32768, 65536];

struct Opts {
    out: Option<PathBuf>,
    reps: usize,
    messages: usize,
}

impl Opts {
    fn parse(args: Vec<OsString>) -> Result<Option<Opts>, Failure> {
        let usage = |m: String| Failure::usage(m, "Usage: goal calibrate --loggops [--out PATH] [--reps N] [--messages N]\nTry 'goal calibrate --help' for more information.".into());
        let mut o = Opts { out: None, reps: 400, messages: 16 };
        let mut loggops = false;
        let mut args = args.into_iter();
        while let Some(a) = args.next() {
            let text = a.to_string_lossy().into_owned();
            let (name, inline) = match text.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(OsString::from(v))),
                None => (text.clone(), None),
            };
            match name.as_str() {
                "-h" | "--help" => {
                    print!("{HELP}");
                    return Ok(None);
                }
                "--loggops" => loggops = true,
                "--out" | "--reps" | "--messages" => {
                    let value = inline.or_else(|| args.next()).ok_or_else(|| usage(format!("{name} needs a value")))?;
                    if name == "--out" {
                        o.out = Some(PathBuf::from(value));
                        continue;
                    }
                    let v = value.to_str().and_then(|v| v.parse::<usize>().ok()).filter(|&v| (2..=1_000_000).contains(&v));
                    let v = v.ok_or_else(|| usage(format!("{name} takes a number from 2 to 1000000, not '{}'", value.to_string_lossy())))?;
                    if name == "--reps" {
                        o.reps = v;
                    } else {
                        o.messages = v;
                    }
                }
                _ => return Err(usage(format!("unknown argument '{text}'"))),
            }
        }
        if !loggops {
            return Err(usage("say what to calibrate: --loggops (the only calibration today)".into()));
        }
        Ok(Some(o))
    }
}

/// Runs `goal calibrate ARGS`.
pub(crate) fn calibrate(args: Vec<OsString>, _cx: &Context) -> Result<i32, Failure> {
    let Some(o) = Opts::parse(args)? else { return Ok(0) };
    if std::env::var_os("GOAL_PROGRESS").is_none() {
        // Before goal starts, while this process has one thread.
        std::env::set_var("GOAL_PROGRESS", "manual");
    }
    super::as_rank("calibrate", "goalrun -n 2 goal calibrate --loggops", |rt| {
        if rt.size() == 2 {
            return measure(rt, &o);
        }
        if rt.rank() == 0 {
            say(&format!("goal calibrate: the job has {} rank(s): the LogGOPS parameters are measured between 2 (goalrun -n 2, or mpirun -np 2 with one rank per host for the network)", rt.size()));
        }
        Ok(1)
    })
}

/// The buffers every schedule names: a send region of the largest size and
/// a receive region of `n` of them (each receive of a train its own).
struct Bufs {
    send: Vec<u8>,
    recv: Vec<u8>,
}

/// One configuration PRTT(n, d, s), compiled on both ranks: rank 0 sends
/// `n` messages of `s` bytes, `d_ns` of computation between two sends, and
/// rank 1 answers once it has received them all, `r_ns` of computation
/// before each receive after the first (Netgauge's receiver-side train;
/// `d_ns` and `r_ns` are never both set).
fn train(rt: &Runtime, b: &Bufs, n: usize, d_ns: u64, r_ns: u64, s: usize) -> goal_rt::Result<Schedule> {
    let mut g = Graph::new();
    let (sb, rb) = (b.send.as_ptr() as u64, b.recv.as_ptr() as u64);
    // Vertex `v` after `prev`, with `ns` of computation between them.
    let chain = |g: &mut Graph, prev: Option<goal_sched::VertexId>, v: goal_sched::VertexId, ns: u64| {
        let Some(mut p) = prev else { return };
        if ns > 0 {
            let c = g.add(Vertex::Calc { units: ns as i64 });
            g.requires(p, c).expect("vertices of g");
            p = c;
        }
        g.requires(p, v).expect("vertices of g");
    };
    if rt.rank() == 0 {
        let mut prev = None;
        for _ in 0..n {
            let v = g.send(Buf::user(sb), s as i64, 1, 1);
            chain(&mut g, prev, v, d_ns);
            prev = Some(v);
        }
        g.recv(Buf::user(rb), s as i64, 1, 2);
    } else {
        let reply = g.send(Buf::user(sb), s as i64, 0, 2);
        let mut prev = None;
        for i in 0..n {
            let r = g.recv(Buf::user(rb + (i * s) as u64), s as i64, 0, 1);
            g.requires(r, reply).expect("vertices of g");
            if r_ns > 0 {
                chain(&mut g, prev, r, r_ns);
            }
            prev = Some(r);
        }
    }
    rt.compile(&g)
}

/// Runs `sched` `reps` times after a few more; the median time of one run
/// at this rank, in nanoseconds.
fn time(rt: &Arc<Runtime>, sched: &Schedule, reps: usize) -> goal_rt::Result<f64> {
    let mut t = Vec::with_capacity(reps);
    for i in 0..reps + reps / 10 + 2 {
        let t0 = goal_rt::wtime();
        // SAFETY: the schedule names only the `Bufs` of `measure`, which
        // outlive every run and are not touched while one is in flight.
        unsafe { rt.run(sched) }?.wait()?;
        if i >= reps / 10 + 2 {
            t.push((goal_rt::wtime() - t0) * 1e9);
        }
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// The send and the receive timed on their own, Netgauge's way of taking
/// a receive's overhead: the receiver computes `d_ns` (longer than the
/// message takes to arrive, so it waits) and only then receives. Two kinds
/// of round, alternating, each ended by a byte from rank 1 that starts the
/// next: in the first, rank 0 runs a schedule of one send of `s` bytes and
/// rank 1 one of `calc d_ns` then the receive; in the second, rank 0 an
/// empty schedule and rank 1 the `calc d_ns` alone. Each rank times its own
/// runs, and the differences of the medians are the send's cost (the
/// network idle) and the receive's (its message waiting): neither a rank's
/// time asleep waiting for the other, as in a train's time, nor the fixed
/// cost of a run counts. The computation is inside the schedule, as
/// `goal run` has it: a run started after the application computed
/// elsewhere costs more (goal hands its progress over then), and that is
/// no receive's cost. In nanoseconds: (send at rank 0, receive at rank 1),
/// on both ranks.
fn calls(rt: &Arc<Runtime>, b: &Bufs, s: usize, d_ns: f64, reps: usize) -> goal_rt::Result<(f64, f64)> {
    let (sb, rb) = (b.send.as_ptr() as u64, b.recv.as_ptr() as u64);
    let me = rt.rank();
    let compile = |f: &dyn Fn(&mut Graph)| {
        let mut g = Graph::new();
        f(&mut g);
        rt.compile(&g)
    };
    let calc = |g: &mut Graph| g.add(Vertex::Calc { units: if me == 0 { 0 } else { d_ns as i64 } });
    let msg = compile(&|g| {
        if me == 0 {
            g.send(Buf::user(sb), s as i64, 1, 4);
        } else {
            let c = calc(g);
            let r = g.recv(Buf::user(rb), s as i64, 0, 4);
            g.requires(c, r).expect("vertices of g");
        }
    })?;
    let alone = compile(&|g| {
        calc(g);
    })?;
    let ack = compile(&|g| {
        if me == 0 {
            g.recv(Buf::user(rb), 1, 1, 5);
        } else {
            g.send(Buf::user(sb), 1, 0, 5);
        }
    })?;
    // One run of `sch` to the end of its wait, in nanoseconds.
    let call = |sch: &Schedule| -> goal_rt::Result<f64> {
        let t0 = goal_rt::wtime();
        // SAFETY: as in `time`: the schedules name only `b`, which
        // outlives every run and is not touched while one is in flight.
        unsafe { rt.run(sch) }?.wait()?;
        Ok((goal_rt::wtime() - t0) * 1e9)
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mut with, mut without) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for i in 0..reps + reps / 10 + 2 {
        let t = (call(&msg)?, call(&ack)?, call(&alone)?, call(&ack)?);
        if i >= reps / 10 + 2 {
            with.push(t.0);
            without.push(t.2);
        }
    }
    let mine = (median(with) - median(without)).max(0.0);
    Ok((share(rt, 0, mine)?, share(rt, 1, mine)?))
}

/// Whether rank 0 stays awake through the receiver's train of `n`
/// messages with `d_ns` before each: it waits about `(n - 1) d` for the
/// answer, and goal spins that long before it sleeps. Then rank 1's time of
/// the train is its receives' alone, and the train's per-message time is
/// the receive overhead, as it is in a schedule that receives a burst
/// (one poll finds several waiting messages). Where rank 0 falls asleep
/// (across hosts, where `d` is tens of microseconds), the train's time
/// holds its wake-up (56-115 us on an idle CPU here), and the receive
/// timed on its own (`calls`) is the overhead instead.
fn train_awake(rt: &Runtime, n: usize, d_ns: f64) -> bool {
    (n - 1) as f64 * d_ns < rt.config().spin.as_nanos() as f64
}

/// One size's measurements, in nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Row {
    s: usize,
    /// PRTT(1, 0, s) at rank 0.
    prtt1: f64,
    /// g + (s-1)G: (PRTT(n, 0, s) - PRTT(1, 0, s)) / (n - 1).
    gap: f64,
    /// The sender's overhead o_s + (s-1)O, from PRTT(n, d, s).
    send: f64,
    /// The receiver's overhead o_r + (s-1)O: receives of waiting messages
    /// at rank 1, timed in its train or on their own (see [`train_awake`]).
    recv: f64,
    /// Whether `recv` is the train's.
    recv_in_train: bool,
    /// The send call's own time at rank 0, the network idle (see
    /// [`calls`]); printed beside `send`, not a parameter.
    send_call: f64,
    d: f64,
}

/// The parameters from the measured rows, in nanoseconds (G, O per byte).
#[derive(Debug)]
struct Params {
    l: f64,
    o: f64,
    o_send: f64,
    o_recv: f64,
    g: f64,
    big_g: f64,
    big_o: f64,
}

/// LogGOPS from the rows: G and O are the slopes over every size, g, o_s
/// and o_r the means at the small ones (up to 64 bytes) less their bytes'
/// share (the lines' intercepts would be pulled by the noise of the large
/// sizes). A message
/// costs its sender o_s and its receiver o_r, so the half round trip of 1
/// byte is `o_s + L + o_r` and L what is left of it. LogGOPSim charges one
/// o at both ends: their mean, which keeps the sum.
fn derive(rows: &[Row]) -> Params {
    let pts = |f: fn(&Row) -> f64| rows.iter().map(|r| ((r.s - 1) as f64, f(r))).collect::<Vec<_>>();
    let (_, big_g) = fit(&pts(|r| r.gap));
    let (_, big_o) = fit(&pts(|r| (r.send + r.recv) / 2.0));
    // Each small size's cost less its bytes' share, averaged.
    let small = |f: &dyn Fn(&Row) -> f64, per_byte: f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.s <= 64).map(|r| f(r) - (r.s - 1) as f64 * per_byte).collect();
        (v.iter().sum::<f64>() / v.len().max(1) as f64).max(0.0)
    };
    let (g, o_send, o_recv) = (small(&|r| r.gap, big_g), small(&|r| r.send, big_o), small(&|r| r.recv, big_o));
    let l = (rows[0].prtt1 / 2.0 - o_send - o_recv).max(0.0);
    Params { l, o: (o_send + o_recv) / 2.0, o_send, o_recv, g, big_g, big_o }
}

/// Why the parameters look disturbed, if they do: an end's overhead fitted
/// to 0 though every small size measured one. Then O, a slope over every
/// size, took some disturbed size's time for a per-byte cost (in CI,
/// beside a 7.5 GiB transfer, receives of 512 B and 2 KiB took 68 us and
/// 1.2 ms where they take 1-1.3 us, and o_s and o_r came out 0).
fn suspect(rows: &[Row], p: &Params) -> Option<String> {
    let small: Vec<&Row> = rows.iter().filter(|r| r.s <= 64).collect();
    let zeroed = |name: &str, fitted: f64, f: fn(&Row) -> f64| {
        (fitted == 0.0 && !small.is_empty() && small.iter().all(|r| f(r) > 0.0)).then(|| {
            format!("{name} came out 0 though every size up to 64 B measured it ({:.0} ns at 1 B): O = {:.4} ns/B leaves them nothing, so some larger size was measured while other work held the CPUs; calibrate again on a quiet machine", f(small[0]), p.big_o)
        })
    };
    zeroed("o_s", p.o_send, |r| r.send).or_else(|| zeroed("o_r", p.o_recv, |r| r.recv))
}

/// Rank `from`'s `v` on both ranks.
fn share(rt: &Arc<Runtime>, from: u32, v: f64) -> goal_rt::Result<f64> {
    let theirs = f64::from_bits(exchange(rt, v.to_bits())?);
    Ok(if rt.rank() == from { v } else { theirs })
}

fn measure(rt: &Arc<Runtime>, o: &Opts) -> goal_rt::Result<i32> {
    let host = host_hash();
    let peer_host = exchange(rt, host)?;
    let network = peer_host != host;
    let eager = eager_limit(rt, network);
    let sizes: Vec<usize> = SIZES.iter().copied().filter(|&s| s <= eager.max(1)).collect();
    let max = *sizes.last().expect("1 byte is always eager");
    let n = o.messages;
    let b = Bufs { send: vec![7; max], recv: vec![0; max * n] };
    let k = (n - 1) as f64;
    let mut rows = Vec::new();
    for &s in &sizes {
        // Both ranks compile the same schedules in the same order; each
        // times every run (rank 0 the round trips, rank 1 its receives).
        let one = train(rt, &b, 1, 0, 0, s)?;
        let prtt1 = time(rt, &one, o.reps)?;
        let back = train(rt, &b, n, 0, 0, s)?;
        let prttn = time(rt, &back, o.reps)?;
        // Longer than a round trip: the sender finds the network idle, the
        // receiver its message waiting.
        let d = share(rt, 0, (prtt1 * 2.0).max(2000.0).round())?;
        let spaced = train(rt, &b, n, d as u64, 0, s)?;
        let prttd = time(rt, &spaced, o.reps.div_ceil(4).max(2))?;
        // The receive overhead, Netgauge's way: receives of messages that
        // wait for them. Two ways of timing them (see `train_awake`): rank
        // 1's time of a train with `d` before each receive, and a receive
        // run on its own after `d` (long enough for the answer to wake
        // rank 0 and its next message to arrive: an idle CPU here takes up
        // to 100 us to wake).
        // Rank 0 decides, so that both ranks compile the same schedules
        // (each rank's spin is its own setting).
        let recv_in_train = share(rt, 0, if train_awake(rt, n, d) { 1.0 } else { 0.0 })? != 0.0;
        let (send_call, alone) = calls(rt, &b, s, d.max(200_000.0), o.reps.div_ceil(2).max(2))?;
        let recv = if recv_in_train {
            let waiting = train(rt, &b, n, 0, d as u64, s)?;
            let recvd = time(rt, &waiting, o.reps.div_ceil(4).max(2))?;
            share(rt, 1, if rt.rank() == 1 { (recvd - prtt1) / k - d } else { 0.0 })?
        } else {
            alone
        };
        rows.push(Row { s, prtt1, gap: (prttn - prtt1) / k, send: (prttd - prtt1) / k - d, recv, recv_in_train, send_call, d });
    }
    if rt.rank() != 0 {
        return Ok(0);
    }
    let p = derive(&rows);
    let (l, ov, g, big_g, big_o) = (p.l, p.o, p.g, p.big_g, p.big_o);
    let how = if network { "the network (the ranks on different hosts)" } else { "shared memory (both ranks on one host)" };
    println!("goal calibrate --loggops: rank 0 <-> rank 1 over {how}; eager limit {eager} B; progress {}; n = {n}, median of {} round trips", rt.config().progress.name(), o.reps);
    println!("{:>8} {:>14} {:>14} {:>14} {:>14} {:>7} {:>10} {:>10}", "size", "PRTT(1,0,s)", "g+(s-1)G", "o_s+(s-1)O", "o_r+(s-1)O", "o_r by", "send call", "d");
    for r in &rows {
        let by = if r.recv_in_train { "train" } else { "alone" };
        println!("{:>8} {:>14.0} {:>14.1} {:>14.1} {:>14.1} {:>7} {:>10.1} {:>10.0}", r.s, r.prtt1, r.gap, r.send, r.recv, by, r.send_call, r.d);
    }
    println!("o_s = {:.0} ns, o_r = {:.0} ns: o = {ov:.0} ns at each end; L = PRTT(1,0,1)/2 - o_s - o_r = {l:.0} ns", p.o_send, p.o_recv);
    println!("L = {l:.0} ns, o = {ov:.0} ns, g = {g:.0} ns, G = {big_g:.4} ns/B, O = {big_o:.4} ns/B, S = {eager} B");
    println!("goal sim -L {l:.0} -o {ov:.0} -g {g:.0} -G {big_g:.4} -O {big_o:.4} -S {eager} FILE");
    if let Some(w) = suspect(&rows, &p) {
        eprintln!("goal calibrate: warning: {w}");
    }
    if let Some(path) = &o.out {
        let measured: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"bytes\": {}, \"prtt1_ns\": {:.1}, \"gap_ns\": {:.1}, \"send_overhead_ns\": {:.1}, \"recv_overhead_ns\": {:.1}, \"recv_timed\": \"{}\", \"send_call_ns\": {:.1}, \"d_ns\": {:.0}}}",
                    r.s,
                    r.prtt1,
                    r.gap,
                    r.send,
                    r.recv,
                    if r.recv_in_train { "train" } else { "alone" },
                    r.send_call,
                    r.d
                )
            })
            .collect();
        let json = format!(
            "{{\n  \"L\": {l:.1},\n  \"o\": {ov:.1},\n  \"g\": {g:.1},\n  \"G\": {big_g:.6},\n  \"O\": {big_o:.6},\n  \"S\": {eager},\n  \"o_send\": {:.1},\n  \"o_recv\": {:.1},\n  \"units\": \"ns; G and O in ns per byte; S in bytes\",\n  \"path\": \"{}\",\n  \"messages\": {n},\n  \"reps\": {},\n  \"measured\": [\n    {}\n  ]\n}}\n",
            p.o_send,
            p.o_recv,
            if network { "network" } else { "shm" },
            o.reps,
            measured.join(",\n    ")
        );
        if let Err(e) = std::fs::write(path, json) {
            say(&format!("goal calibrate: cannot write {}: {e}", path.display()));
            return Ok(1);
        }
    }
    Ok(0)
}

/// The largest message goal sends eagerly to the other rank: between
/// hosts the network's limit (`GOAL_NET_EAGER`; larger over one rail,
/// where rendezvous has no striping to offer), else shared memory's
/// calibrated one. Goal sim's S.
fn eager_limit(rt: &Runtime, network: bool) -> usize {
    if !network {
        return rt.thresholds().0;
    }
    let c = rt.config();
    let one_rail = c.rails.as_deref().is_some_and(|r| r.split(',').filter(|x| !x.trim().is_empty()).count() == 1);
    if one_rail {
        c.net_eager_one_rail
    } else {
        c.net_eager
    }
}

/// The least-squares line `y = a + b x` through `pts`, both clamped at 0
/// (a negative cost is measurement noise).
fn fit(pts: &[(f64, f64)]) -> (f64, f64) {
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = pts.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = pts.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
    let b = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    ((my - b * mx).max(0.0), b)
}

/// A hash of this host's name: equal on both ranks when they share a host.
fn host_hash() -> u64 {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    name.trim().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Sends `mine` to the other rank; returns the other's.
fn exchange(rt: &Arc<Runtime>, mine: u64) -> goal_rt::Result<u64> {
    let (out, mut got) = (Box::new(mine), Box::new(0u64));
    let peer = 1 - rt.rank() as i64;
    let mut g = Graph::new();
    g.send(Buf::user(&*out as *const u64 as u64), 8, peer, 3);
    g.recv(Buf::user(&mut *got as *mut u64 as u64), 8, peer, 3);
    let s = rt.compile(&g)?;
    // SAFETY: the schedule names `out` and `got`, boxed here and alive
    // until the wait returns; nothing else touches them meanwhile.
    unsafe { rt.run(&s) }?.wait()?;
    Ok(*got)
}

#[cfg(test)]
mod tests {
    use super::{derive, fit, suspect, Row};

    /// The rows a LogGP machine with these parameters (ns; G and O per
    /// byte) gives: a round trip is two messages, each `o_s + L + o_r` and
    /// its bytes on the wire and through both ends' copies.
    fn machine(l: f64, o_s: f64, o_r: f64, g: f64, big_g: f64, big_o: f64) -> Vec<Row> {
        [1usize, 8, 64, 512, 2048, 8192]
            .iter()
            .map(|&s| {
                let b = (s - 1) as f64;
                let prtt1 = 2.0 * (o_s + l + o_r + b * (big_g + 2.0 * big_o));
                Row { s, prtt1, gap: g + b * big_g, send: o_s + b * big_o, recv: o_r + b * big_o, recv_in_train: true, send_call: o_s + b * big_o, d: 2.0 * prtt1 }
            })
            .collect()
    }

    #[test]
    fn a_network_latency_goes_to_l_and_the_ends_costs_to_o() {
        // A 50 us wire between ends that spend 3 and 1 us per message (a
        // delayed link): the delay is L, not o.
        let p = derive(&machine(50_000.0, 3000.0, 1000.0, 4000.0, 8.0, 0.5));
        assert!((p.l - 50_000.0).abs() < 1e-6, "{p:?}");
        assert!((p.o - 2000.0).abs() < 1e-6 && (p.o_send - 3000.0).abs() < 1e-6 && (p.o_recv - 1000.0).abs() < 1e-6, "{p:?}");
        assert!((p.g - 4000.0).abs() < 1e-6 && (p.big_g - 8.0).abs() < 1e-9 && (p.big_o - 0.5).abs() < 1e-9, "{p:?}");
        // The simulated one-way time of a byte is the measured half round trip.
        let rows = machine(50_000.0, 3000.0, 1000.0, 4000.0, 8.0, 0.5);
        assert!((2.0 * p.o + p.l - rows[0].prtt1 / 2.0).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn overheads_that_fill_the_round_trip_leave_no_latency() {
        // The sender's cost outlasts the delivery (a TCP send over veth
        // runs the receiver's stack in the sender's system call): L is 0,
        // never negative, and o keeps what each end measured.
        let mut rows = machine(0.0, 8000.0, 2000.0, 7600.0, 8.3, 0.3);
        for r in &mut rows {
            r.prtt1 -= 6000.0;
        }
        let p = derive(&rows);
        assert_eq!(p.l, 0.0, "{p:?}");
        assert!((p.o - 5000.0).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn overheads_fitted_to_zero_by_a_disturbed_size_are_reported() {
        let clean = machine(50_000.0, 3000.0, 1000.0, 4000.0, 8.0, 0.5);
        assert_eq!(suspect(&clean, &derive(&clean)), None);
        // Eager sizes up to 2 KiB, the receives of 512 B and 2 KiB measured
        // at 68 us and 1.2 ms (CI, beside a large transfer).
        let mut rows = clean[..5].to_vec();
        rows[3].recv += 67_000.0;
        rows[4].recv += 1_237_000.0;
        let p = derive(&rows);
        assert_eq!((p.o_send, p.o_recv), (0.0, 0.0), "{p:?}");
        let w = suspect(&rows, &p).expect("a warning");
        assert!(w.starts_with("o_s came out 0 though every size up to 64 B measured it (3000 ns at 1 B)"), "{w}");
    }

    #[test]
    fn the_fit_recovers_a_line_and_clamps_negative_costs() {
        let (a, b) = fit(&[(0.0, 100.0), (1000.0, 600.0), (2000.0, 1100.0)]);
        assert!((a - 100.0).abs() < 1e-9 && (b - 0.5).abs() < 1e-12, "{a} {b}");
        assert_eq!(fit(&[(0.0, 10.0), (10.0, 5.0)]), (7.5, 0.0), "a falling line is noise: flat at its mean");
        assert_eq!(fit(&[(0.0, -3.0)]), (0.0, 0.0));
    }
}
