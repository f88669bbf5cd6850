//! More ranks than cores: exchanges copy each message once, by the
//! receiver, without waiting for their senders to be on a CPU.
//!
//! 4 ranks confined to (at most) 2 CPUs, in `thread` mode (the default
//! there), run a loop of 1 MiB alltoalls: every large message goes by CMA
//! (none by the stream, which copies twice and moves only while both ranks
//! run at once), and none is pushed by its sender (a push moves the copy to
//! another busy core, and the receive then waits for its sender to be
//! scheduled). Before these rules, such a loop sent about a tenth of its
//! messages by the stream and had a tenth to a fifth pushed (4 ranks on
//! 2 CPUs: alltoall of 1 MiB 0.91x the time now, 64 KiB 0.92x).
//! Every received byte is checked against the sequential model.

mod util;

use goal_sched::coll::{self, Algorithm, Group, Placement};
use goal_sched::Graph;
use util::{debug_count, in_job, launch, pattern};

const TEST: &str = "exchanges_with_more_ranks_than_cores_go_by_cma_unpushed";

/// Executions of the alltoall per job.
const ITERS: u64 = 40;

/// Confines this rank to the first two CPUs it may use (before GOAL_Init,
/// which exchanges the ranks' CPU masks and counts the cores from them).
fn two_cpus() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls get its
    // true size and write/read only within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0, "sched_getaffinity");
        let mine: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).take(2).collect();
        let mut two: libc::cpu_set_t = std::mem::zeroed();
        for c in mine {
            libc::CPU_SET(c, &mut two);
        }
        assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &two), 0, "sched_setaffinity");
    }
}

fn body() {
    two_cpus();
    let rt = goal_rt::init().expect("GOAL_Init");
    let (me, n) = (rt.rank(), rt.size());
    let len = 1usize << 20;
    let mut sbuf = vec![0u8; n as usize * len];
    let mut rbuf = vec![0u8; n as usize * len];
    let mut g = Graph::new();
    let grp = Group { rank: me, size: n };
    coll::alltoall(&mut g, grp, Placement { tag_base: 0 }, sbuf.as_ptr() as u64, len as u64, rbuf.as_mut_ptr() as u64, Algorithm::Linear).unwrap();
    let s = rt.compile(&g).expect("compile");
    // Block j of rank i's sbuf is message (iteration, i, j).
    let msg = |k: u64, from: u32, to: u32| k * 1000 + u64::from(from) * 10 + u64::from(to);
    for k in 0..ITERS {
        for to in 0..n {
            for (i, b) in sbuf[to as usize * len..][..len].iter_mut().enumerate() {
                *b = pattern(msg(k, me, to), i);
            }
        }
        rbuf.fill(0);
        // SAFETY: the buffers outlive the execution, which ends in this statement.
        unsafe { rt.run(&s) }.and_then(|h| h.wait()).unwrap_or_else(|e| panic!("rank {me}, execution {k}: {e}"));
        for from in 0..n {
            let got = &rbuf[from as usize * len..][..len];
            if let Some(i) = (0..len).find(|&i| got[i] != pattern(msg(k, from, me), i)) {
                panic!("rank {me}, execution {k}: byte {i} of the block from rank {from} is wrong");
            }
        }
    }
    goal_rt::finalize().unwrap();
}

#[test]
fn exchanges_with_more_ranks_than_cores_go_by_cma_unpushed() {
    if in_job() {
        body();
        return;
    }
    let job = launch(TEST, 4, &[("GOAL_PROGRESS", "thread"), ("GOAL_DEBUG", "1")]);
    assert!(job.status == 0, "exit {}\n--- stdout\n{}\n--- stderr\n{}", job.status, job.stdout, job.stderr);
    assert!(job.stderr.contains("more ranks than cores"), "the ranks should see more ranks than cores\n{}", job.stderr);
    // Each rank's line: "large messages chosen per message: S by stream, C by
    // CMA (in exchanges: ...); ...; K written here by their senders ...".
    let lines: Vec<&str> = job.stderr.split("large messages chosen per message: ").skip(1).collect();
    assert_eq!(lines.len(), 4, "every rank should report its large messages\n{}", job.stderr);
    for t in lines {
        let num = |s: &str| s.trim().parse::<u64>().unwrap_or(u64::MAX);
        let (stream, rest) = t.split_once(" by stream, ").expect("a stream count");
        let cma = rest.split_once(" by CMA").expect("a CMA count").0;
        assert_eq!(num(stream), 0, "no message should go by the stream: {t}");
        assert!(num(cma) >= 3 * ITERS, "every message should go by CMA: {t}");
    }
    let pushed = debug_count(&job.stderr, " written here by their senders");
    assert_eq!(pushed, 0, "no exchange's message should be pushed\n{}", job.stderr);
}
