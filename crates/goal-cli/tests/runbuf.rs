//! Run-time buffers in every progress mode, the kernel mode's channels
//! included (the C acceptance test `ctests/t_runbuf.c` runs in the modes
//! `ctests/run.sh` knows, which are not all).
//!
//! Each rank sends to rank+1 and receives from rank-1 with both buffers
//! given at each run, a new pair every run (the old ones kept, so no run
//! finds its predecessor's addresses), at 8 B (in kernel mode a channel
//! carries it from the fourth run, into each run's buffer) and 64 KiB
//! (rendezvous), and three executions in flight with a pair each; then
//! an allreduce built with its buffers at run. Every
//! byte is checked against a direct computation; a Run without the
//! buffers is refused. In kernel mode ranks 0 and 1 must report operations
//! run in the kernel (`GOAL_DEBUG`), so the channels were used.

mod util;

use goal_sched::coll::{self, Algorithm, Group, Placement, Reduction};
use goal_sched::{run_addr, Buf, DataType, Graph, ReduceOp};
use util::{in_job, kernel_ops, launch, pattern};

const NAME: &str = "run_time_buffers_work_in_every_progress_mode";

fn body() {
    let rt = goal_rt::init().expect("GOAL_Init");
    let (me, n) = (rt.rank() as usize, rt.size() as usize);
    let (to, from) = ((me + 1) % n, (me + n - 1) % n);
    let mut kept = Vec::new();
    for len in [8usize, 64 << 10] {
        let mut g = Graph::new();
        g.send(Buf::run(0, 0), len as i64, to as i64, 1);
        g.recv(Buf::run(1, 0), len as i64, from as i64, 1);
        let s = rt.compile(&g).expect("compile");
        // SAFETY: a schedule with run-time buffers starts nothing without them.
        let e = unsafe { rt.run(&s) }.err().expect("Run without the run-time buffers");
        assert!(e.message.contains("takes 2 run-time buffers"), "{e}");
        for run in 0..8u64 {
            let seed = |rank: usize| rank as u64 * 1000 + run * 10 + len as u64;
            let sb: Vec<u8> = (0..len).map(|i| pattern(seed(me), i)).collect();
            let mut rb = vec![0u8; len];
            // SAFETY: both buffers live (and are not touched) until the wait returns.
            let h = unsafe { rt.run_with(&s, &[(sb.as_ptr() as *mut u8, len), (rb.as_mut_ptr(), len)]) }.expect("RunWith");
            h.wait().unwrap_or_else(|e| panic!("rank {me}, {len} B, run {run}: {e}"));
            let bad = (0..len).find(|&i| rb[i] != pattern(seed(from), i));
            assert_eq!(bad, None, "rank {me}, {len} B, run {run}: byte received wrong");
            kept.push((sb, rb));
        }
        // Three executions in flight at once, each with its own buffers
        // (in kernel mode the later ones are held until the earlier end).
        let seed = |rank: usize, k: u64| rank as u64 * 1000 + 500 + k * 10 + len as u64;
        let sbs: Vec<Vec<u8>> = (0..3).map(|k| (0..len).map(|i| pattern(seed(me, k), i)).collect()).collect();
        let mut rbs: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; len]).collect();
        let handles: Vec<_> = sbs
            .iter()
            .zip(rbs.iter_mut())
            // SAFETY: every buffer lives (untouched) until the waits below return.
            .map(|(sb, rb)| unsafe { rt.run_with(&s, &[(sb.as_ptr() as *mut u8, len), (rb.as_mut_ptr(), len)]) }.expect("RunWith"))
            .collect();
        for (k, h) in handles.into_iter().enumerate() {
            h.wait().unwrap_or_else(|e| panic!("rank {me}, {len} B, execution {k} of 3 in flight: {e}"));
        }
        for (k, rb) in rbs.iter().enumerate() {
            let bad = (0..len).find(|&i| rb[i] != pattern(seed(from, k as u64), i));
            assert_eq!(bad, None, "rank {me}, {len} B, execution {k} of 3 in flight: byte received wrong");
        }
    }
    let grp = Group { rank: me as u32, size: n as u32 };
    let mut kept_words = Vec::new();
    let red = Reduction::from_raw(ReduceOp::Add as i64, DataType::SInt as i64, 64).expect("reduction");
    for count in [1usize, 3000] {
        let mut g = Graph::new();
        coll::allreduce(&mut g, grp, Placement { tag_base: 1 << 30 }, run_addr(0, 0), run_addr(1, 0), count as u64, red, Algorithm::Auto)
            .expect("allreduce");
        let s = rt.compile(&g).expect("compile");
        for run in 0..6i64 {
            let x: Vec<i64> = (0..count as i64).map(|i| (me as i64 + 1) * (i + 7) + run).collect();
            let mut y = vec![0i64; count];
            let bytes = count * 8;
            // SAFETY: both buffers live until the wait returns.
            let h = unsafe { rt.run_with(&s, &[(x.as_ptr() as *mut u8, bytes), (y.as_mut_ptr() as *mut u8, bytes)]) }.expect("RunWith");
            h.wait().unwrap_or_else(|e| panic!("rank {me}, allreduce of {count}, run {run}: {e}"));
            let ranks = (n * (n + 1) / 2) as i64;
            for (i, v) in y.iter().enumerate() {
                assert_eq!(*v, ranks * (i as i64 + 7) + n as i64 * run, "rank {me}, allreduce of {count}, run {run}, element {i}");
            }
            kept_words.push((x, y));
        }
    }
    goal_rt::finalize().unwrap();
}

#[test]
fn run_time_buffers_work_in_every_progress_mode() {
    if in_job() {
        return body();
    }
    for n in [2usize, 3] {
        for mode in ["manual", "thread", "spin", "kernel"] {
            let what = format!("{n} ranks, GOAL_PROGRESS={mode}");
            let job = launch(NAME, n, &[("GOAL_PROGRESS", mode), ("GOAL_DEBUG", "1")]);
            assert!(job.status == 0, "{what}: exit {}\n--- stdout\n{}\n--- stderr\n{}", job.status, job.stdout, job.stderr);
            if mode == "kernel" && job.stderr.contains("progress mode 'kernel'") {
                let ran = kernel_ops(&job.stderr);
                assert!(
                    ran.iter().filter(|&&k| k > 0).count() >= 2,
                    "{what}: ranks 0 and 1 should report operations run in the kernel\n--- stderr\n{}",
                    job.stderr
                );
            }
        }
    }
}
