//! Per-hop latency of a token forwarded around a ring of processes by kernel
//! chains: `cargo run --release -p goal-transport --example kchain_hop --
//! [--ranks 2,3] [--laps 2000] [--runs 11]`.
//!
//! Rank 0 (this process) re-executes itself as ranks 1..N, which find each
//! other through `KListener`/`connect`. In each run every forwarder submits
//! one chain of `laps` x (RECV from the left → SEND to the right), rank 0 one
//! of `laps` x (SEND → RECV), and then every process idles:
//!
//! * `sleep`: `nanosleep` (rank 0 in 200 µs steps, to notice the end),
//! * `compute`: a busy loop without system calls, reading the completion
//!   queue from memory now and then,
//!
//! while the kernel moves the token. Beside them, in the same run, `user`:
//! every process forwards the token itself, asleep in a blocking `recv`.
//! A hop is run time / (laps x N). Prints one JSON line per mode and N with
//! the median (and extremes) over the runs. With more ranks than cores,
//! `compute` runs only 20 laps: each hop then waits for the receiving
//! process to be scheduled, milliseconds.

use goal_transport::kchain::{connect, KListener, KOp, KOpKind, KRing, Link, SockType};
use goal_transport::sys;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "KCHAIN_HOP_CHILD";
const CONNECT: Duration = Duration::from_secs(10);
const MODES: [&str; 3] = ["sleep", "compute", "user"];

/// Set by nobody: keeps the compute loop honest.
static NOBODY: AtomicBool = AtomicBool::new(false);

/// About 50 µs of arithmetic, with no system call.
fn compute_a_little() {
    let mut x = 0u64;
    for i in 0..50_000u64 {
        if NOBODY.load(Ordering::Relaxed) {
            break;
        }
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
    }
    black_box(x);
}

/// This rank's sockets to its neighbours in the ring.
struct Ring {
    rank: usize,
    left: OwnedFd,
    right: OwnedFd,
}

impl Ring {
    fn join(job: &str, rank: usize, n: usize) -> Ring {
        let listener = KListener::bind(job, rank).unwrap();
        let right = connect(job, (rank + 1) % n, rank, CONNECT).unwrap();
        let (from, left) = listener.accept(CONNECT).unwrap();
        assert_eq!(from, (rank + n - 1) % n);
        Ring { rank, left, right }
    }
}

fn send_op(user_data: u64, fd: BorrowedFd<'_>, buf: *const u64) -> KOp {
    KOp {
        user_data,
        kind: KOpKind::Send {
            fd: fd.as_raw_fd(),
            buf: buf.cast(),
            len: 8,
        },
        link: Link::Soft,
        quiet: false,
    }
}

fn recv_op(user_data: u64, fd: BorrowedFd<'_>, buf: *mut u64) -> KOp {
    KOp {
        user_data,
        kind: KOpKind::Recv {
            fd: fd.as_raw_fd(),
            buf: buf.cast(),
            len: 8,
            sock: SockType::Seqpacket,
        },
        link: Link::Soft,
        quiet: false,
    }
}

/// One run of a kernel mode on this rank: submit the chain, say `READY`
/// (forwarders) or take the time (rank 0), idle until it is done. Returns
/// the run time as rank 0 saw it.
fn kernel_run(ring: &Ring, kring: &mut KRing, laps: usize, mode: &str) -> Duration {
    let mut token = 0u64;
    let out: Vec<u64> = (0..laps as u64).collect();
    let mut back = vec![u64::MAX; laps];
    let mut chain = Vec::with_capacity(2 * laps);
    for lap in 0..laps {
        let ud = 2 * lap as u64;
        if ring.rank == 0 {
            chain.push(send_op(ud, ring.right.as_fd(), &out[lap]));
            chain.push(recv_op(ud + 1, ring.left.as_fd(), &mut back[lap]));
        } else {
            chain.push(recv_op(ud, ring.left.as_fd(), &mut token));
            chain.push(send_op(ud + 1, ring.right.as_fd(), &token));
        }
    }
    if ring.rank != 0 {
        // SAFETY: `token`, `out`, `back` and the sockets outlive the chain,
        // which is reaped to the end below before they are touched.
        unsafe { kring.submit_chain(&chain) }.unwrap();
        say("READY");
    }
    let start = Instant::now();
    if ring.rank == 0 {
        // SAFETY: as above.
        unsafe { kring.submit_chain(&chain) }.unwrap();
    }
    let mut done = Vec::with_capacity(chain.len());
    while done.len() < chain.len() {
        match (mode, ring.rank) {
            ("sleep", 0) => std::thread::sleep(Duration::from_micros(200)),
            ("sleep", _) => std::thread::sleep(Duration::from_millis(2)),
            _ => compute_a_little(),
        }
        kring.reap(&mut done);
        assert!(start.elapsed() < Duration::from_secs(60), "run stuck");
    }
    let took = start.elapsed();
    assert!(
        done.iter().all(|&(_, res)| res == 8),
        "rank {}: {:?}",
        ring.rank,
        done.iter().find(|d| d.1 != 8)
    );
    if ring.rank == 0 {
        assert_eq!(back, (0..laps as u64).collect::<Vec<_>>());
    }
    took
}

/// One run of the user-space baseline on this rank.
fn user_run(ring: &Ring, laps: usize) -> Duration {
    let mut buf = [0u8; 8];
    if ring.rank != 0 {
        say("READY");
    }
    let start = Instant::now();
    for lap in 0..laps as u64 {
        if ring.rank == 0 {
            sys::send(ring.right.as_fd(), &lap.to_ne_bytes(), 0).unwrap();
            sys::recv(ring.left.as_fd(), &mut buf, 0).unwrap();
            assert_eq!(u64::from_ne_bytes(buf), lap);
        } else {
            sys::recv(ring.left.as_fd(), &mut buf, 0).unwrap();
            sys::send(ring.right.as_fd(), &buf, 0).unwrap();
        }
    }
    start.elapsed()
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// A forwarder: joins the ring, then runs what rank 0 says until `END`.
fn child(spec: &str) {
    let mut it = spec.split(' ');
    let job = it.next().unwrap();
    let rank: usize = it.next().unwrap().parse().unwrap();
    let n: usize = it.next().unwrap().parse().unwrap();
    let laps: usize = it.next().unwrap().parse().unwrap();
    let ring = Ring::join(job, rank, n);
    let mut kring = KRing::with_entries(2 * laps as u32).unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let Some((mode, laps)) = line.split_once(' ') else {
            return; // END
        };
        let laps = laps.parse().unwrap();
        match mode {
            "user" => user_run(&ring, laps),
            _ => kernel_run(&ring, &mut kring, laps, mode),
        };
    }
}

struct Forwarder {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Forwarder {
    fn tell(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn ready(&mut self) {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "READY", "a forwarder failed");
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(n: usize, laps: usize, runs: usize) {
    let job = format!("hop-{}-{n}", std::process::id());
    let mut forwarders: Vec<Forwarder> = (1..n)
        .map(|rank| {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .env(CHILD_ENV, format!("{job} {rank} {n} {laps}"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let out = BufReader::new(child.stdout.take().unwrap());
            Forwarder { child, out }
        })
        .collect();
    let ring = Ring::join(&job, 0, n);
    let mut kring = KRing::with_entries(2 * laps as u32).unwrap();
    let mut hops: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let laps_of = |mode: &str| {
        if mode == "compute" && n > cores {
            laps.min(20)
        } else {
            laps
        }
    };
    // Modes interleaved run by run, so that drift in the machine hits all alike.
    for run in 0..=runs {
        for (m, mode) in MODES.iter().enumerate() {
            let laps = laps_of(mode);
            for f in &mut forwarders {
                f.tell(&format!("{mode} {laps}"));
            }
            for f in &mut forwarders {
                f.ready();
            }
            let took = match *mode {
                "user" => user_run(&ring, laps),
                _ => kernel_run(&ring, &mut kring, laps, mode),
            };
            // Run 0 warms up.
            if run > 0 {
                hops[m].push(took.as_secs_f64() * 1e6 / (laps * n) as f64);
            }
        }
    }
    for f in &mut forwarders {
        f.tell("END");
    }
    for mut f in forwarders {
        assert!(f.child.wait().unwrap().success());
    }
    for (mode, v) in MODES.iter().zip(&mut hops) {
        let lo = v.iter().copied().fold(f64::MAX, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        println!(
            "{{\"bench\":\"kchain_hop\",\"mode\":\"{mode}\",\"ranks\":{n},\"cores\":{cores},\"laps\":{},\"runs\":{runs},\
             \"hop_us\":{{\"median\":{:.2},\"min\":{lo:.2},\"max\":{hi:.2}}}}}",
            laps_of(mode),
            median(v)
        );
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
        return;
    }
    let (mut ranks, mut laps, mut runs) = (vec![2], 2000, 11);
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--ranks" => ranks = value.split(',').map(|r| r.parse().unwrap()).collect(),
            "--laps" => laps = value.parse().unwrap(),
            "--runs" => runs = value.parse().unwrap(),
            other => panic!("unknown argument {other}; use --ranks 2,3 --laps 2000 --runs 11"),
        }
    }
    if let Err(e) = KRing::probe() {
        eprintln!("kchain_hop: {e}");
        std::process::exit(77);
    }
    for n in ranks {
        assert!(n >= 2, "a ring needs two ranks");
        bench(n, laps, runs);
    }
}
