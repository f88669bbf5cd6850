//! `GOAL_TRACE_FILE`: at finalize, the ranks' records of their operations
//! (see `engine::record`) become one timeline, written by rank 0 in the
//! Chrome trace event format (goal-trace's writer), one track per rank.
//!
//! # Clocks
//!
//! Every rank records on its own `CLOCK_MONOTONIC`. Rank 0 then meets each
//! other rank `k` in turn, over the runtime's own messages (schedules of
//! one send and one receive, compiled on the world group like any other):
//! [`ROUNDS`] ping-pongs, rank 0 reading its clock before its ping (`a`) and
//! after the pong (`b`), rank `k` reading its clock (`t`) between the two
//! and sending it in the pong. The round with the shortest round trip gives
//! the estimate `offset = t - (a + b) / 2`, off by at most half that round
//! trip (a few microseconds here). Ranks on one kernel (the same
//! `/proc/sys/kernel/random/boot_id`, sent in the pong) share the very
//! same clock, so there the offset applied is 0, exactly; the estimate is
//! still written in the file's `otherData`, which shows how good it would
//! have been. Ranks on other machines get their estimate. Times are then
//! written, on rank 0's clock, from the earliest of its start of recording
//! (its `GOAL_Init`) and every rank's first operation (a rank may start
//! one before rank 0 is out of `GOAL_Init`).
//!
//! # Gathering
//!
//! After its ping-pongs, rank `k` sends its records (56 bytes each, see
//! `Rec::encode`) in one message. Rank 0 first meets every rank, then
//! writes its own records and takes each rank's in turn, writing them at
//! once: it holds one rank's records at a time, and one file results,
//! wherever the ranks ran. The schedules take three compile numbers per
//! rank, the same on every rank, beyond any the program used. A rank that
//! cannot reach rank 0 (an error, rank 0 gone) writes its own records to
//! `PATH.RANK` instead, on its own clock,
//! and says so on stderr; rank 0 names the ranks missing from the file.

use crate::engine::record::{Path, Rec, Recorder, KINDS};
use crate::{Result, Runtime};
use goal_sched::{Buf, Graph};
use goal_trace::{assign_lanes, Arg, TraceWriter};
use std::io::{BufWriter, Write};
use std::sync::Arc;

/// Ping-pongs per rank; the shortest round trip is kept.
pub(crate) const ROUNDS: usize = 8;

/// The pong: rank k's clock, the bytes of its records, its boot id, the
/// operations it did not record, the start of its first record.
const PONG: usize = 40;

/// What rank 0 learned of one rank's clock.
#[derive(Debug, Clone, Copy, Default)]
struct Clock {
    /// Estimated (rank k's clock minus rank 0's), ns.
    estimate: i64,
    /// The round trip the estimate came from, ns.
    rtt: u64,
    /// Applied: 0 on the same kernel, else the estimate.
    applied: i64,
}

/// Writes the timelines if `GOAL_TRACE_FILE` is set: called by every rank
/// at the start of finalize. Never fails the finalize: what goes wrong is
/// said on stderr.
pub(crate) fn write_at_finalize(rt: &Arc<Runtime>) {
    let Some(path) = rt.cfg.trace_file.clone() else { return };
    let Some(rec) = rt.lock_engine().take_records() else { return };
    let me = rt.rank;
    if rec.dropped > 0 {
        say!("goal (rank {me}): GOAL_TRACE_FILE: {} operation(s) not recorded, past GOAL_TRACE_EVENTS={} (raise it)", rec.dropped, rec.recs.capacity());
    }
    let res = if me == 0 { gather(rt, &path, &rec) } else { serve(rt, &rec) };
    if let Err(e) = res {
        let own = std::path::PathBuf::from(format!("{}.{me}", path.display()));
        say!("goal (rank {me}): GOAL_TRACE_FILE: {e}; writing this rank's own timeline, on its own clock, to {}", own.display());
        if let Err(e) = write_own(&own, me, &rec) {
            say!("goal (rank {me}): GOAL_TRACE_FILE: cannot write {}: {e}", own.display());
        }
    }
}

/// The three compile numbers of rank `k`'s meeting with rank 0 (ping,
/// pong, records), the same on every rank: taken in turn from the world's
/// counter, for ranks 1..=k.
fn numbers(rt: &Runtime, k: u32) -> Vec<[u32; 3]> {
    (1..=k).map(|_| [rt.world.next_number(), rt.world.next_number(), rt.world.next_number()]).collect()
}

fn compile(rt: &Runtime, number: u32, build: impl FnOnce(&mut Graph)) -> Result<crate::Schedule> {
    let mut g = Graph::new();
    build(&mut g);
    rt.compile_numbered(&rt.world, &g, Some(number))
}

/// Runs `s` to its end.
///
/// # Safety
/// The buffers `s` names are valid until it returns.
unsafe fn run(rt: &Arc<Runtime>, s: &crate::Schedule) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { rt.run(s) }?.wait()
}

/// Rank k (not 0): ping-pongs with rank 0, then sends its records.
fn serve(rt: &Arc<Runtime>, rec: &Recorder) -> Result<()> {
    let me = rt.rank;
    let [a, b, c] = *numbers(rt, me).last().expect("rank is at least 1");
    let mut blob = Vec::with_capacity(rec.recs.len() * Rec::WIRE);
    for r in &rec.recs {
        r.encode(&mut blob);
    }
    let mut ping = [0u8; 8];
    let mut pong = [0u8; PONG];
    let recv_ping = compile(rt, a, |g| {
        g.recv(Buf::user(ping.as_mut_ptr() as u64), 8, 0, 0);
    })?;
    let send_pong = compile(rt, b, |g| {
        g.send(Buf::user(pong.as_ptr() as u64), PONG as i64, 0, 0);
    })?;
    let send_blob = compile(rt, c, |g| {
        g.send(Buf::user(blob.as_ptr() as u64), blob.len() as i64, 0, 0);
    })?;
    let boot = boot_id();
    for _ in 0..ROUNDS {
        // SAFETY: `ping` outlives the execution, which ends within.
        unsafe { run(rt, &recv_ping) }?;
        let t = crate::localop::monotonic_ns();
        pong[..8].copy_from_slice(&t.to_le_bytes());
        pong[8..16].copy_from_slice(&(blob.len() as u64).to_le_bytes());
        pong[16..24].copy_from_slice(&boot.to_le_bytes());
        pong[24..32].copy_from_slice(&rec.dropped.to_le_bytes());
        pong[32..].copy_from_slice(&rec.recs.first().map_or(u64::MAX, |r| r.start).to_le_bytes());
        // SAFETY: as above, `pong`.
        unsafe { run(rt, &send_pong) }?;
    }
    // SAFETY: as above, `blob`.
    unsafe { run(rt, &send_blob) }
}

/// What rank 0 learned of rank k in their ping-pongs.
struct Met {
    clock: Clock,
    /// On rank 0's kernel (the same boot id).
    same_kernel: bool,
    /// Bytes of its records.
    len: usize,
    /// Operations it did not record.
    dropped: u64,
    /// The start of its first record, on its clock (`u64::MAX`: none).
    first: u64,
}

/// Rank 0: meets every rank for its clock, then writes its own records and
/// each rank's as they come into `path`, from the earliest of its own
/// start and every rank's first operation.
fn gather(rt: &Arc<Runtime>, path: &std::path::Path, rec: &Recorder) -> Result<()> {
    let io = |e: std::io::Error| crate::Error::new(crate::ErrorKind::System, format!("writing {}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = TraceWriter::new(BufWriter::new(file)).map_err(io)?;
    let boot = boot_id();
    let numbers = numbers(rt, rt.size - 1);
    let mut met: Vec<Option<Met>> = Vec::new();
    let mut missing = Vec::new();
    for (k, &[a, b, _]) in (1..rt.size).zip(&numbers) {
        match meet(rt, k, [a, b], boot) {
            Ok(m) => met.push(Some(m)),
            Err(e) => {
                say!("goal (rank 0): GOAL_TRACE_FILE: rank {k}'s timeline is missing: {e}");
                missing.push(k.to_string());
                met.push(None);
            }
        }
    }
    let mut origin = rec.origin.min(rec.recs.first().map_or(u64::MAX, |r| r.start)) as i64;
    for m in met.iter().flatten().filter(|m| m.first != u64::MAX) {
        origin = origin.min(m.first as i64 - m.clock.applied);
    }
    write_rank(&mut w, 0, &rec.recs, 0, origin).map_err(io)?;
    let mut dropped = rec.dropped;
    for ((k, &[_, _, c]), m) in (1..rt.size).zip(&numbers).zip(&met) {
        let Some(m) = m else { continue };
        match records(rt, k, c, m.len) {
            Ok(recs) => write_rank(&mut w, k, &recs, m.clock.applied, origin).map_err(io)?,
            Err(e) => {
                say!("goal (rank 0): GOAL_TRACE_FILE: rank {k}'s timeline is missing: {e}");
                missing.push(k.to_string());
            }
        }
        dropped += m.dropped;
    }
    let mut other: Vec<(String, String)> = vec![
        ("producer".into(), "goal runtime (GOAL_TRACE_FILE)".into()),
        ("clock".into(), "CLOCK_MONOTONIC of each rank, in ns from the earliest of rank 0's GOAL_Init and every rank's first operation".into()),
        (
            "alignment".into(),
            format!("offset to rank 0 estimated from the shortest of {ROUNDS} ping-pongs over goal's own messages; applied as 0 for ranks on rank 0's kernel (same boot_id: the same clock)"),
        ),
    ];
    for (k, m) in (1..rt.size).zip(&met) {
        let Some(m) = m else { continue };
        other.push((format!("rank{k}.offset_estimate_ns"), m.clock.estimate.to_string()));
        other.push((format!("rank{k}.offset_applied_ns"), m.clock.applied.to_string()));
        other.push((format!("rank{k}.rtt_ns"), m.clock.rtt.to_string()));
        other.push((format!("rank{k}.same_kernel"), m.same_kernel.to_string()));
    }
    other.push(("ranks".into(), rt.size.to_string()));
    other.push(("missing_ranks".into(), missing.join(",")));
    other.push(("operations_not_recorded".into(), dropped.to_string()));
    let args: Vec<(&str, Arg)> = other.iter().map(|(k, v)| (k.as_str(), Arg::Str(v.as_str()))).collect();
    w.finish(&args).map_err(io)?.flush().map_err(io)?;
    Ok(())
}

/// Rank 0's ping-pongs with rank `k` (schedule numbers `a`, `b`).
fn meet(rt: &Arc<Runtime>, k: u32, [a, b]: [u32; 2], boot: u64) -> Result<Met> {
    let ping = [0u8; 8];
    let mut pong = [0u8; PONG];
    let send_ping = compile(rt, a, |g| {
        g.send(Buf::user(ping.as_ptr() as u64), 8, k as i64, 0);
    })?;
    let recv_pong = compile(rt, b, |g| {
        g.recv(Buf::user(pong.as_mut_ptr() as u64), PONG as i64, k as i64, 0);
    })?;
    let mut clock = Clock { rtt: u64::MAX, ..Clock::default() };
    for _ in 0..ROUNDS {
        // SAFETY: `pong` outlives the execution, waited for below.
        let pong_h = unsafe { rt.run(&recv_pong) }?;
        let t0 = crate::localop::monotonic_ns();
        // SAFETY: as above, `ping`; waited for within.
        unsafe { run(rt, &send_ping) }?;
        pong_h.wait()?;
        let t1 = crate::localop::monotonic_ns();
        let t = word(&pong, 0);
        if t1 - t0 < clock.rtt {
            clock.rtt = t1 - t0;
            clock.estimate = t as i64 - (t0 / 2 + t1 / 2) as i64;
        }
    }
    let same_kernel = word(&pong, 2) == boot && boot != 0;
    clock.applied = if same_kernel { 0 } else { clock.estimate };
    Ok(Met { clock, same_kernel, len: word(&pong, 1) as usize, dropped: word(&pong, 3), first: word(&pong, 4) })
}

/// Word `i` of a pong.
fn word(pong: &[u8; PONG], i: usize) -> u64 {
    u64::from_le_bytes(pong[8 * i..8 * i + 8].try_into().unwrap_or_default())
}

/// Rank `k`'s records, `len` bytes (schedule number `c`).
fn records(rt: &Arc<Runtime>, k: u32, c: u32, len: usize) -> Result<Vec<Rec>> {
    let mut blob = vec![0u8; len];
    let recv_blob = compile(rt, c, |g| {
        g.recv(Buf::user(blob.as_mut_ptr() as u64), len as i64, k as i64, 0);
    })?;
    // SAFETY: `blob` outlives the execution, which ends within.
    unsafe { run(rt, &recv_blob) }?;
    Ok(blob.chunks_exact(Rec::WIRE).filter_map(Rec::decode).collect())
}

/// Rank `rank`'s records as events: its clock minus `offset` minus `origin`
/// (rank 0's clock).
fn write_rank<W: Write>(w: &mut TraceWriter<W>, rank: u32, recs: &[Rec], offset: i64, origin: i64) -> std::io::Result<()> {
    w.name_rank(rank, &format!("rank {rank}"))?;
    let at = |t: u64| (t as i64 - offset - origin).max(0) as u64;
    let spans: Vec<(u64, u64)> = recs.iter().map(|r| (at(r.start), at(r.end.max(r.start)))).collect();
    let lanes = assign_lanes(&spans);
    for l in 0..lanes.iter().max().map_or(0, |&m| m + 1) {
        w.name_lane(rank, l, &format!("operations {l}"))?;
    }
    for ((r, &(start, end)), &lane) in recs.iter().zip(&spans).zip(&lanes) {
        let name = KINDS.get(r.kind as usize).copied().unwrap_or("op");
        let path = Path::from_code(r.path).name();
        let mut args = vec![
            ("peer", Arg::Int(r.peer as i64)),
            ("bytes", Arg::UInt(r.bytes)),
            ("path", Arg::Str(path)),
            ("tag", Arg::Int(r.tag as i64)),
            ("schedule", Arg::UInt(r.sched)),
            ("execution", Arg::UInt(r.exec as u64)),
            ("vertex", Arg::UInt(r.vertex as u64)),
        ];
        if r.end == 0 {
            args.push(("unfinished", Arg::Str("the operation had not ended at finalize")));
        }
        w.complete(rank, lane, name, start, end, &args)?;
    }
    Ok(())
}

/// A rank that could not reach rank 0: its own file, on its own clock.
fn write_own(path: &std::path::Path, me: u32, rec: &Recorder) -> std::io::Result<()> {
    let mut w = TraceWriter::new(BufWriter::new(std::fs::File::create(path)?))?;
    write_rank(&mut w, me, &rec.recs, 0, rec.origin.min(rec.recs.first().map_or(u64::MAX, |r| r.start)) as i64)?;
    let alignment = format!("none: rank {me}'s own clock, from its GOAL_Init (rank 0 could not be reached)");
    w.finish(&[("producer", Arg::Str("goal runtime (GOAL_TRACE_FILE)")), ("alignment", Arg::Str(&alignment)), ("dropped", Arg::UInt(rec.dropped))])?.flush()
}

/// This kernel's boot id, as 64 bits (0 if unknown: never "the same").
fn boot_id() -> u64 {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let hex: String = text.chars().filter(|c| c.is_ascii_hexdigit()).take(16).collect();
    u64::from_str_radix(&hex, 16).unwrap_or(0)
}
