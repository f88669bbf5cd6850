//! A sender writes into a receiver's memory (half of a split message, or a
//! push) only while that is the faster copy: when the application reads
//! what it receives, the receiver copies its messages itself.
//!
//! Alone in its test binary: what it asserts rests on how fast copies run,
//! which other tests' jobs on the same two cores would disturb.

mod util;

use goal_sched::coll::{self, Algorithm, Group, Placement};
use goal_sched::Graph;
use util::{debug_count, in_job, launch, pattern};

const TEST: &str = "an_application_that_reads_what_it_receives_gets_its_messages_copied_by_its_own_core";

/// Iterations of the loop.
const ITERS: usize = 300;

/// The bcast's length: judged (under 1 MiB), and split when idle.
const LEN: usize = 256 << 10;

/// Rank 0 broadcasts [`LEN`] bytes to rank 1, [`ITERS`] times, each Wait
/// right after its Run; with `COLD_READ=1` rank 1 then checks every byte it
/// received (the application reads its result), without it only after the
/// last iteration.
fn body() {
    let read = std::env::var("COLD_READ").as_deref() == Ok("1");
    let rt = goal_rt::init().expect("GOAL_Init");
    let me = rt.rank();
    let mut buf: Vec<u8> = (0..LEN).map(|k| if me == 0 { pattern(7, k) } else { 0 }).collect();
    let mut g = Graph::new();
    coll::bcast(&mut g, Group { rank: me, size: 2 }, Placement { tag_base: 0 }, buf.as_mut_ptr() as u64, LEN as u64, 0, Algorithm::Auto).unwrap();
    let s = rt.compile(&g).expect("compile");
    let check = |buf: &[u8], i: usize| {
        if let Some(k) = (0..LEN).find(|&k| buf[k] != pattern(7, k)) {
            panic!("iteration {i}: byte {k} of the bcast is wrong");
        }
    };
    for i in 0..ITERS {
        // SAFETY: `buf` outlives the execution, which ends in the same statement.
        unsafe { rt.run(&s) }.and_then(|h| h.wait()).expect("bcast");
        if me == 1 && read {
            check(&buf, i);
        }
    }
    if me == 1 {
        check(&buf, ITERS);
    }
    goal_rt::finalize().unwrap();
}

/// Splitting a message between the two cores halves the copy's time in a
/// loop that never reads its results: the sender's half stays in the
/// sender's cache, where its next write finds it. An application that reads
/// what it receives takes those lines to its own core after every message,
/// and the sender's next write must take them back (2 ranks, bcast of
/// 256 KiB, bcast and read: 39-50 us with splits, 23-36 us without). The
/// receiver compares the sender's write with its own read of the other half
/// and, after three slow writes in a row, copies a while itself. Both loops
/// must deliver every byte; rank 1's `GOAL_DEBUG` line must count writes it
/// found slow in the reading loop, and messages split in most iterations of
/// the other. A loop disturbed by the machine is tried again (three in all).
#[test]
fn an_application_that_reads_what_it_receives_gets_its_messages_copied_by_its_own_core() {
    if in_job() {
        body();
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if cores < 2 {
        eprintln!("one core: nothing is split");
        return;
    }
    for read in ["1", "0"] {
        // CMA for the message (no choice of the stream), thread mode (the
        // splits need a helper).
        let vars = [("GOAL_PROGRESS", "thread"), ("GOAL_DEBUG", "1"), ("GOAL_CMA_MIN", "64K"), ("GOAL_CMA_MAX", "64M"), ("COLD_READ", read)];
        let mut tries = Vec::new();
        for _ in 0..3 {
            let job = launch(TEST, 2, &vars);
            assert!(job.status == 0, "COLD_READ={read}: exit {}\n--- stderr\n{}", job.status, job.stderr);
            let split = debug_count(&job.stderr, " copied half by this rank");
            let cold = debug_count(&job.stderr, " of their senders' writes slower");
            eprintln!("COLD_READ={read}: {split} split, {cold} writes found slow");
            let ok = if read == "1" { cold >= 3 && split <= ITERS as u64 / 2 } else { split >= ITERS as u64 / 2 };
            if ok {
                break;
            }
            tries.push(format!("{split} split, {cold} writes found slow"));
        }
        let want = if read == "1" { "at least 3 writes found slow and at most half the messages split" } else { "at least half the messages split" };
        assert!(tries.len() < 3, "COLD_READ={read}: wanted {want}, in 3 tries: {tries:?}");
    }
}
