//! `GOAL_TRACE_FILE`: a real 4-rank job (`goalrun -n 4 goal run FILE`)
//! writes one timeline that is valid against the schema in
//! `docs/trace-event.schema.json` (checked by `trace/schema.rs`), with one
//! track per rank, and whose events say what the schedule did: the ring's
//! 8-byte messages eager, the 1 MiB message by a rendezvous path on both
//! sides, the calc as long as written, each receive ending after its send
//! started (the clocks aligned), and the clock estimates within their bound.

#[path = "trace/schema.rs"]
mod schema;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

/// A ring of 8-byte messages (tag 1), then 1 MiB from rank 0 to rank 2
/// (tag 2) and 20 us of calc on rank 0.
const RING: &str = "\
num_ranks 4
rank 0 {
l1: send 8b to 1 tag 1
l2: recv 8b from 3 tag 1
l3: send 1048576b to 2 tag 2
l4: calc 20000
l3 requires l2
l4 requires l2
}
rank 1 {
l1: recv 8b from 0 tag 1
l2: send 8b to 2 tag 1
l2 requires l1
}
rank 2 {
l1: recv 8b from 1 tag 1
l2: send 8b to 3 tag 1
l2 requires l1
l3: recv 1048576b from 0 tag 2
}
rank 3 {
l1: recv 8b from 2 tag 1
l2: send 8b to 0 tag 1
l2 requires l1
}
";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("goal-trace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn schema() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/trace-event.schema.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn arg<'a>(e: &'a Value, k: &str) -> &'a Value {
    &e["args"][k]
}

#[test]
fn a_traced_4_rank_run_writes_one_valid_timeline_with_a_track_per_rank() {
    let dir = scratch("ring");
    let file = dir.join("ring.goal");
    std::fs::write(&file, RING).unwrap();
    let trace = dir.join("trace.json");
    let out = Command::new(env!("CARGO_BIN_EXE_goalrun"))
        .args(["-n", "4", "--timeout", "60", "--", env!("CARGO_BIN_EXE_goal"), "run", "--iterations", "3"])
        .arg(&file)
        .env("GOAL_TRACE_FILE", &trace)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "goal run failed: {said}");
    let text = std::fs::read_to_string(&trace).unwrap_or_else(|e| panic!("no trace at {}: {e}\n{said}", trace.display()));
    let v: Value = serde_json::from_str(&text).unwrap();
    let s = schema();
    schema::validate(&s, &s, &v, "").unwrap();

    let events = v["traceEvents"].as_array().unwrap();
    let ops: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    for e in &ops {
        schema::validate(&s, &s["definitions"]["runtime_operation"], e, "").unwrap();
    }
    // One track per rank, named, and every rank's operations on its own.
    let named: BTreeSet<u64> = events.iter().filter(|e| e["name"] == "process_name").map(|e| e["pid"].as_u64().unwrap()).collect();
    let with_ops: BTreeSet<u64> = ops.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    assert_eq!(named, (0..4).collect(), "track names");
    assert_eq!(with_ops, (0..4).collect(), "tracks with operations");

    // The file's schedule (goal run's barriers are schedules too): the one
    // with the calc, run once to warm up and 3 times measured.
    let calcs: Vec<&&Value> = ops.iter().filter(|e| e["name"] == "calc").collect();
    assert_eq!(calcs.len(), 4, "{calcs:#?}");
    let sched = arg(calcs[0], "schedule").as_u64().unwrap();
    let ring: Vec<&&Value> = ops.iter().filter(|e| e["name"] != "calc" && arg(e, "schedule").as_u64() == Some(sched)).collect();
    assert_eq!(ring.len(), 4 * 10, "4 runs of 10 sends and receives: {ring:#?}");
    for e in ring.iter().filter(|e| arg(e, "bytes") == 8) {
        assert_eq!(arg(e, "path"), "eager", "{e}");
    }
    let rendezvous = ["stream", "CMA", "heap single copy", "push", "split"];
    let big: Vec<&&&Value> = ring.iter().filter(|e| arg(e, "bytes") == 1048576).collect();
    assert_eq!(big.len(), 8, "{big:#?}");
    for e in &big {
        assert!(rendezvous.contains(&arg(e, "path").as_str().unwrap()), "1 MiB by {}", arg(e, "path"));
        let (pid, peer) = (e["pid"].as_u64().unwrap(), arg(e, "peer").as_u64().unwrap());
        assert_eq!((pid, peer, e["name"].as_str().unwrap()), if pid == 0 { (0, 2, "send") } else { (2, 0, "recv") });
    }
    for c in &calcs {
        assert_eq!((c["pid"].as_u64(), arg(c, "bytes").as_u64()), (Some(0), Some(20000)), "calc's args carry its ns: {c}");
        assert!(c["dur"].as_f64().unwrap() >= 20.0, "20 us of calc took {} us", c["dur"]);
    }

    // Aligned clocks: each receive ends after its send started (sends and
    // receives of one execution matched by ranks and tag, which the file
    // makes unique).
    let mut sends: BTreeMap<(u64, i64, i64, u64), f64> = BTreeMap::new();
    for e in ring.iter().filter(|e| e["name"] == "send") {
        let key = (e["pid"].as_u64().unwrap(), arg(e, "peer").as_i64().unwrap(), arg(e, "tag").as_i64().unwrap(), arg(e, "execution").as_u64().unwrap());
        sends.insert(key, e["ts"].as_f64().unwrap());
    }
    for e in ring.iter().filter(|e| e["name"] == "recv") {
        let key = (arg(e, "peer").as_u64().unwrap(), e["pid"].as_i64().unwrap(), arg(e, "tag").as_i64().unwrap(), arg(e, "execution").as_u64().unwrap());
        let sent = sends.get(&key).unwrap_or_else(|| panic!("no send for {e}"));
        let end = e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        assert!(end >= *sent, "receive {e} ended before its send started at {sent}");
    }
    // One kernel here: the applied offsets are 0, and each estimate is
    // within half its round trip of that truth.
    let other = &v["otherData"];
    for k in 1..4 {
        let get = |what: &str| other[format!("rank{k}.{what}")].as_str().unwrap_or_else(|| panic!("no rank{k}.{what} in {other}")).to_string();
        assert_eq!(get("same_kernel"), "true");
        assert_eq!(get("offset_applied_ns"), "0");
        let (est, rtt): (i64, i64) = (get("offset_estimate_ns").parse().unwrap(), get("rtt_ns").parse().unwrap());
        assert!(est.abs() <= rtt / 2 + 1, "rank {k}: estimate {est} ns beyond half the round trip {rtt} ns");
    }
    assert_eq!(other["missing_ranks"], "");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_goal_trace_file_nothing_is_written() {
    let dir = scratch("off");
    let file = dir.join("ring.goal");
    std::fs::write(&file, RING).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_goalrun"))
        .args(["-n", "4", "--timeout", "60", "--", env!("CARGO_BIN_EXE_goal"), "run"])
        .arg(&file)
        .env_remove("GOAL_TRACE_FILE")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, ["ring.goal"], "only the schedule");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `goal sim --trace` writes the predicted timeline of the same file in
/// the same format: valid against the schema, a track per rank, and on
/// the cpu lanes the file's 5 sends, 5 receives and its calc, at
/// the times the model gives (every operation within the finish time).
#[test]
fn goal_sim_writes_the_predicted_timeline_in_the_same_format() {
    let dir = scratch("sim");
    let file = dir.join("ring.goal");
    std::fs::write(&file, RING).unwrap();
    let trace = dir.join("sim.json");
    let out = Command::new(env!("CARGO_BIN_EXE_goal")).args(["sim", "-b", "--trace"]).arg(&trace).arg(&file).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "goal sim failed: {said}");
    let max: u64 = said.split("Maximum finishing time at host ").nth(1).and_then(|r| r.split(": ").nth(1)).and_then(|r| r.split(' ').next()).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("no maximum in {said}"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let s = schema();
    schema::validate(&s, &s, &v, "").unwrap();
    let ops: Vec<&Value> = v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    let ranks: BTreeSet<u64> = ops.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    assert_eq!(ranks, (0..4).collect());
    let on_cpu = |name: &str| ops.iter().filter(|e| e["name"] == name && e["tid"] == 0).count();
    assert_eq!((on_cpu("send"), on_cpu("recv"), on_cpu("calc")), (5, 5, 1), "{ops:#?}");
    for e in &ops {
        let end_ns = (e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()) * 1000.0;
        assert!(end_ns <= max as f64 + 0.5, "{e} ends after the finish time {max} ns");
    }
    assert_eq!(v["otherData"]["simulated"], "goal sim (LogGOPS)");
}
