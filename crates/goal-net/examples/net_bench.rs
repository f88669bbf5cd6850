//! goal-net benchmark: two processes, latency (active-message ping-pong) and
//! bulk bandwidth (rendezvous-style, window 1 and 4) for 1..=N rails, one
//! JSON object per line on stdout.
//!
//! ```sh
//! # two shells on one machine, rails emulated on loopback, blobs through a directory:
//! net_bench --rank 0 --rails 127.0.0.1/8,127.0.0.2/8,127.0.0.3/8 --dir /tmp/nb
//! net_bench --rank 1 --rails 127.0.0.1/8,127.0.0.2/8,127.0.0.3/8 --dir /tmp/nb
//! # across hosts, fixed ports, peers named on the command line:
//! net_bench --rank 0 --rails eth1,eth2,eth3 --port 7100 --peer 10.0.1.2,10.0.2.2,10.0.3.2
//! net_bench --rank 1 --rails eth1,eth2,eth3 --port 7100 --peer 10.0.1.1,10.0.2.1,10.0.3.1
//! # or both ranks from one command (forks itself), for a quick look:
//! net_bench --local 3
//! ```
//!
//! Options: `--max-rails N` (default: all), `--min-rails N`, `--quick`
//! (fewer iterations), `--crossover` (also measure eager against
//! rendezvous), `--secret HEX` (64 hex digits; default a fixed bench key).
//! Rank 0 prints the results.

use goal_net::rails::{Blob, RemoteRail};
use goal_net::{discover_rails, Event, NetConfig, NetNode, RailSpec};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const PING: u8 = 16;
const CTS: u8 = 17;
const SYNC: u8 = 18;

struct Opts {
    rank: u32,
    rails: Vec<RailSpec>,
    dir: Option<PathBuf>,
    port: u16,
    peer: Vec<String>,
    min_rails: usize,
    max_rails: usize,
    quick: bool,
    crossover: bool,
    secret: [u8; 32],
}

fn usage(msg: &str) -> ! {
    eprintln!("net_bench: {msg}\nsee the comment at the top of examples/net_bench.rs");
    std::process::exit(2);
}

fn parse_args() -> Opts {
    let mut a = std::env::args().skip(1);
    let mut rank = None;
    let mut rails = None;
    let mut o = Opts { rank: 0, rails: vec![], dir: None, port: 0, peer: vec![], min_rails: 1, max_rails: usize::MAX, quick: false, crossover: false, secret: [0x42; 32] };
    let mut local = None;
    while let Some(k) = a.next() {
        let mut v = || a.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--rank" => rank = Some(v().parse().unwrap_or_else(|_| usage("bad --rank"))),
            "--rails" => rails = Some(v()),
            "--dir" => o.dir = Some(PathBuf::from(v())),
            "--port" => o.port = v().parse().unwrap_or_else(|_| usage("bad --port")),
            "--peer" => o.peer = v().split(',').map(str::to_owned).collect(),
            "--min-rails" => o.min_rails = v().parse().unwrap_or_else(|_| usage("bad --min-rails")),
            "--max-rails" => o.max_rails = v().parse().unwrap_or_else(|_| usage("bad --max-rails")),
            "--quick" => o.quick = true,
            "--crossover" => o.crossover = true,
            "--local" => local = Some(v().parse::<usize>().unwrap_or_else(|_| usage("bad --local"))),
            "--secret" => {
                let h = v();
                if h.len() != 64 {
                    usage("--secret takes 64 hex digits");
                }
                for i in 0..32 {
                    o.secret[i] = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap_or_else(|_| usage("bad --secret"));
                }
            }
            _ => usage(&format!("unknown option {k}")),
        }
    }
    if let Some(n) = local {
        run_local(n, &o);
    }
    o.rank = rank.unwrap_or_else(|| usage("--rank is required"));
    if o.rank > 1 {
        usage("--rank is 0 or 1");
    }
    let spec = rails.or_else(|| std::env::var("GOAL_RAILS").ok());
    o.rails = discover_rails(spec.as_deref()).unwrap_or_else(|e| usage(&e.to_string()));
    if o.dir.is_none() && o.peer.is_empty() {
        usage("give --dir DIR, or --port P with --peer ADDRS");
    }
    if !o.peer.is_empty() && o.port == 0 {
        usage("--peer needs --port");
    }
    o
}

/// `--local N`: runs rank 1 as a child process and rank 0 here.
fn run_local(n: usize, o: &Opts) -> ! {
    let dir = std::env::temp_dir().join(format!("goal-net-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rails: Vec<String> = (1..=n).map(|i| format!("127.0.0.{i}/8")).collect();
    let mut common = vec!["--rails".to_owned(), rails.join(","), "--dir".into(), dir.to_str().unwrap().into()];
    if o.quick {
        common.push("--quick".into());
    }
    if o.crossover {
        common.push("--crossover".into());
    }
    common.extend(["--min-rails".into(), o.min_rails.to_string()]);
    if o.max_rails != usize::MAX {
        common.extend(["--max-rails".into(), o.max_rails.to_string()]);
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(&exe).args(["--rank", "1"]).args(&common).spawn().unwrap();
    let st = std::process::Command::new(&exe).args(["--rank", "0"]).args(&common).status().unwrap();
    let cst = child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    std::process::exit(if st.success() && cst.success() { 0 } else { 1 });
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0)).collect()
}

/// The other rank's blob: from the directory, or made from `--peer`.
fn exchange(o: &Opts, round: usize, mine: &[u8], nrails: usize) -> io::Result<Vec<u8>> {
    let other = 1 - o.rank;
    if let Some(dir) = &o.dir {
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!("blob.{round}.{}.tmp", o.rank));
        std::fs::write(&tmp, hex(mine))?;
        std::fs::rename(&tmp, dir.join(format!("blob.{round}.{}", o.rank)))?;
        let theirs = dir.join(format!("blob.{round}.{other}"));
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(s) = std::fs::read_to_string(&theirs) {
                return Ok(unhex(s.trim()));
            }
            if Instant::now() > end {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no {}", theirs.display())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let rails = (0..nrails)
        .map(|k| {
            let ip = o.peer.get(k).unwrap_or_else(|| usage("fewer --peer addresses than rails")).parse().unwrap_or_else(|_| usage("bad --peer address"));
            RemoteRail { name: o.peer[k].clone(), addr: SocketAddr::new(ip, o.port + k as u16), prefix_len: o.rails[k].prefix_len }
        })
        .collect();
    Ok(Blob { rank: other, rails }.encode())
}

/// Polls until `want` events matching `pick` have been seen; collects what
/// the picker keeps.
struct Driver {
    node: NetNode,
    ams: VecDeque<(u8, Vec<u8>)>,
    done: VecDeque<u64>,
    sent: VecDeque<u64>,
}

impl Driver {
    fn pump(&mut self) {
        let Driver { node, ams, done, sent } = self;
        node.poll(&mut |e| match e {
            Event::Am { handler, head, .. } => ams.push_back((handler, head.to_vec())),
            Event::BulkDone { token, .. } => done.push_back(token),
            Event::BulkSent { token, .. } => sent.push_back(token),
            Event::PeerLost { peer, why, .. } => {
                eprintln!("net_bench: rank {peer} lost: {why}");
                std::process::exit(1);
            }
            Event::RailLost { rail, why, .. } => eprintln!("net_bench: rail {rail} lost: {why}"),
        });
    }

    fn wait_am(&mut self, h: u8) -> Vec<u8> {
        loop {
            if let Some(i) = self.ams.iter().position(|(x, _)| *x == h) {
                return self.ams.remove(i).unwrap().1;
            }
            self.pump();
        }
    }

    fn sync(&mut self, rank: u32) {
        self.node.send_am(1 - rank, SYNC, b"", &[]).unwrap();
        self.wait_am(SYNC);
    }
}

fn main() {
    let o = parse_args();
    let top = o.rails.len().min(o.max_rails);
    for (round, nrails) in (o.min_rails.max(1)..=top).enumerate() {
        let mut cfg = NetConfig::new(o.rank, 2, o.secret, o.rails[..nrails].to_vec(), vec![PING, CTS, SYNC]);
        cfg.base_port = o.port;
        let (node, blob) = NetNode::bind(cfg).unwrap_or_else(|e| usage(&e.to_string()));
        let theirs = exchange(&o, round, &blob, nrails).unwrap_or_else(|e| usage(&e.to_string()));
        let blobs = if o.rank == 0 { vec![blob, theirs] } else { vec![theirs, blob] };
        let mut d = Driver { node, ams: VecDeque::new(), done: VecDeque::new(), sent: VecDeque::new() };
        d.node.connect(&blobs, &[o.rank == 1, o.rank == 0]).unwrap_or_else(|e| usage(&e.to_string()));
        d.sync(o.rank);
        latency(&mut d, &o, nrails);
        d.sync(o.rank);
        for window in [1usize, 4] {
            bandwidth(&mut d, &o, nrails, window);
            d.sync(o.rank);
        }
        if o.crossover {
            if o.rank == 0 {
                let sizes: Vec<usize> = (10..=20).map(|p| 1usize << p).collect();
                let c = d.node.measure_crossover(1, &sizes, if o.quick { 3 } else { 9 }).unwrap();
                for p in &c.points {
                    println!(r#"{{"bench":"crossover","rails":{nrails},"size":{},"eager_us":{:.1},"rndv_us":{:.1}}}"#, p.size, p.eager_us, p.rndv_us);
                }
                println!(r#"{{"bench":"crossover","rails":{nrails},"crossover":{}}}"#, c.crossover.map_or("null".into(), |x| x.to_string()));
            }
            d.sync(o.rank);
        }
        d.sync(o.rank);
    }
}

fn latency(d: &mut Driver, o: &Opts, nrails: usize) {
    let other = 1 - o.rank;
    for size in [0usize, 64, 1024, 8192, 65536] {
        let iters = if o.quick { 200 } else if size >= 65536 { 2000 } else { 10000 };
        let payload = vec![7u8; size];
        let mut rtts = Vec::with_capacity(iters);
        for i in 0..iters + 100 {
            let t = Instant::now();
            if o.rank == 0 {
                d.node.send_am(other, PING, b"", &[&payload]).unwrap();
                d.wait_am(PING);
            } else {
                d.wait_am(PING);
                d.node.send_am(other, PING, b"", &[&payload]).unwrap();
            }
            if i >= 100 {
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        if o.rank == 0 {
            rtts.sort_by(|a, b| a.total_cmp(b));
            let avg = rtts.iter().sum::<f64>() / rtts.len() as f64;
            println!(
                r#"{{"bench":"latency","rails":{nrails},"size":{size},"iters":{iters},"half_rtt_us":{:.2},"p50_us":{:.2},"p99_us":{:.2}}}"#,
                avg / 2.0,
                rtts[rtts.len() / 2] / 2.0,
                rtts[rtts.len() * 99 / 100] / 2.0
            );
        }
    }
}

/// Rank 0 sends, rank 1 receives; rank 1 registers a buffer and answers CTS
/// (the executor's rendezvous), keeping `window` transfers open.
fn bandwidth(d: &mut Driver, o: &Opts, nrails: usize, window: usize) {
    let other = 1 - o.rank;
    for size in [64usize << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20] {
        let n = if o.quick { 8 } else { ((512usize << 20) / size).clamp(16, 2000) };
        // Buffers are allocated and touched before the clock starts.
        let mut bufs: Vec<Vec<u8>> = if o.rank == 1 { (0..window).map(|_| vec![1u8; size]).collect() } else { vec![] };
        let srcs: Vec<Vec<u8>> = if o.rank == 0 { (0..n.min(64)).map(|i| vec![i as u8; size]).collect() } else { vec![] };
        d.sync(o.rank);
        let before: Vec<u64> = d.node.rail_stats().iter().map(|r| r.counters.bytes_out).collect();
        let t = Instant::now();
        if o.rank == 1 {
            let mut next = 0u64;
            // A completed token's buffer goes to the next token: completions
            // come out of order when fragments take different rails.
            let post = |d: &mut Driver, buf: &mut Vec<u8>, tok: u64| {
                // SAFETY: the buffer is reused only after BulkDone for the
                // token it held, and lives until this function returns,
                // after the last BulkDone.
                unsafe { d.node.expect_bulk(other, tok, vec![(buf.as_mut_ptr(), buf.len())]).unwrap() };
                d.node.send_am(other, CTS, &tok.to_le_bytes(), &[]).unwrap();
            };
            let mut slot_of = std::collections::HashMap::new();
            while (next as usize) < window.min(n) {
                post(d, &mut bufs[next as usize], next);
                slot_of.insert(next, next as usize);
                next += 1;
            }
            let mut got = 0;
            while got < n {
                d.pump();
                while let Some(tok) = d.done.pop_front() {
                    let slot = slot_of.remove(&tok).expect("a token we posted");
                    let b = &bufs[slot];
                    assert!(b[0] == (tok % 64) as u8 && b[size - 1] == (tok % 64) as u8, "data check");
                    got += 1;
                    if (next as usize) < n {
                        post(d, &mut bufs[slot], next);
                        slot_of.insert(next, slot);
                        next += 1;
                    }
                }
            }
        } else {
            let mut sent = 0;
            while sent < n {
                d.pump();
                while let Some(i) = d.ams.iter().position(|(h, _)| *h == CTS) {
                    let head = d.ams.remove(i).unwrap().1;
                    let tok = u64::from_le_bytes(head[..8].try_into().unwrap());
                    let s = &srcs[tok as usize % srcs.len()];
                    // The receiver checks byte == token mod 64.
                    // SAFETY: `srcs` lives until the end of this function,
                    // after every BulkSent.
                    unsafe { d.node.send_bulk(other, tok, vec![(s.as_ptr(), s.len())]).unwrap() };
                }
                while d.sent.pop_front().is_some() {
                    sent += 1;
                }
            }
        }
        let secs = t.elapsed().as_secs_f64();
        if o.rank == 0 {
            let after: Vec<u64> = d.node.rail_stats().iter().map(|r| r.counters.bytes_out).collect();
            let moved: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
            let total: u64 = moved.iter().sum::<u64>().max(1);
            let shares: Vec<String> = moved.iter().map(|m| format!("{:.3}", *m as f64 / total as f64)).collect();
            println!(
                r#"{{"bench":"bandwidth","rails":{nrails},"window":{window},"size":{size},"count":{n},"MBps":{:.1},"us_per_msg":{:.1},"rail_share":[{}]}}"#,
                (size * n) as f64 / secs / 1e6,
                secs * 1e6 / n as f64,
                shares.join(",")
            );
        }
        d.sync(o.rank);
    }
}
