//! What the engine tells a person: the stall report (`GOAL_STALL_REPORT`,
//! `GOAL_DEBUG`), the description of an operation for error messages,
//! `GOAL_TRACE` lines, and the summary of the paths taken.

use super::*;
use std::time::Duration;

/// Tags from here on are a collective's (`GOAL_COLL_TAG_BASE` of the C API).
const COLLECTIVE_TAGS: i32 = 1 << 30;

/// The stall report's likely cause when a collective's execution waits for
/// a rank that sends nothing: a disagreement on a collective's arguments
/// that makes ranks wait for each other (each rank a root of its own, say)
/// sends no message a mismatch could be seen in.
const NOT_SENT_COLLECTIVE: &str = "; unless they are still computing or have not run this schedule yet, \
     ranks may disagree on a collective's root/size/algorithm (every rank must call it with the same root, counts, \
     types and algorithm: a disagreement in which the ranks wait for each other and send nothing, such as a \
     different root on every rank, is not detected), or have compiled their schedules in a different order";

/// The same for an execution of the user's own graph.
const NOT_SENT: &str = "; unless they are still computing or have not run this schedule yet, \
     their schedule lacks the matching send (every receive needs a send in the same schedule of its peer, \
     which must compile its schedules in the same order)";

/// How often a stall that goes on is reported again (see
/// [`Engine::report_if_stalled`]).
const STALL_REPORT_EVERY: Duration = Duration::from_secs(30);

impl Engine {
    /// Prints a stall report after `after` without any operation finishing
    /// while executions are in flight (`None`: never; see
    /// `Config::stall_report`).
    pub fn report_stalls(&mut self, after: Option<Duration>) {
        self.stall.report_after = after;
    }

    /// Prints what every running execution waits for ([`stall_report`](Self::stall_report))
    /// once nothing has finished for the stall-report time (and every
    /// [`STALL_REPORT_EVERY`] after), whichever thread polls: an
    /// application thread in Wait, Test or Progress, or the helper. Called
    /// from the liveness check, after `probe_if_stalled` has seen whether
    /// the count of finished operations moved.
    #[cold]
    pub(super) fn report_if_stalled(&mut self) {
        let Some(after) = self.stall.report_after else { return };
        let stalled = self.stall.since.elapsed();
        if stalled < after || !self.state.execs.busy() || self.stall.reported.is_some_and(|t| t.elapsed() < STALL_REPORT_EVERY) {
            return;
        }
        self.stall.reported = Some(Instant::now());
        let lines = self.stall_report();
        let rank = self.rank;
        // The passes tell whether anything polled all along (a thread
        // that held the engine lock meanwhile would leave few).
        let passes = self.state.passes.wrapping_sub(self.stall.passes);
        let ready = self.state.execs.ready.len();
        say!("goal: rank {rank}: no operation has finished for {:.0} s ({passes} progress passes since, {ready} operation(s) ready to start); in flight:", stalled.as_secs_f64());
        for l in lines {
            say!("goal: rank {rank}:   {l}");
        }
    }

    /// What every running execution waits for, in lines, for a report on
    /// an execution that does not finish (see [`report_if_stalled`](Self::report_if_stalled)):
    /// receives posted and not matched, sends waiting for their receiver,
    /// transfers in flight, unexpected messages, messages dropped as
    /// stale, and the network's state per peer.
    pub fn stall_report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (slot, e) in self.state.execs.slots.iter().enumerate() {
            let Some(e) = e else { continue };
            let r = OpRef { slot: slot as u32, gen: e.gen, op: u32::MAX };
            let posted: Vec<String> = e.bufs.posted.iter().map(|p| self.describe(OpRef { op: p.op, ..r })).collect();
            lines.push(format!(
                "{}: {} of {} operation(s) not finished; receives posted and unmatched: [{}]",
                self.describe(r),
                e.remaining,
                e.sched.s.ops.len(),
                posted.join(", ")
            ));
            // A posted receive is unmatched because its peer has sent
            // nothing it can take: a message that it cannot take ends the
            // execution with a mismatch at once. So after this long the
            // peer is computing, or not sending it at all.
            let mut silent: Vec<i32> = e.bufs.posted.iter().map(|p| p.peer).filter(|&p| p >= 0).collect();
            silent.sort_unstable();
            silent.dedup();
            if !silent.is_empty() {
                let from = silent.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
                let collective = e.sched.s.ops.iter().any(|o| o.tag >= COLLECTIVE_TAGS);
                lines.push(format!("  likely cause: nothing has come from rank(s) {from} that this execution can take{}", if collective { NOT_SENT_COLLECTIVE } else { NOT_SENT }));
            }
        }
        for s in self.state.rdv.iter().flatten() {
            lines.push(format!("{}: waiting for rank {}'s answer (rendezvous mode {})", self.describe(s.r), s.peer, s.mode));
        }
        for (&(src, token), &r) in &self.state.net_in {
            lines.push(format!("{}: bytes from rank {src} arriving by network transfer (token {token})", self.describe(r)));
        }
        for x in &self.state.reads {
            lines.push(format!("{}: reading {} B from rank {}'s memory, {} done", self.describe(x.r), x.len, x.src, x.done));
        }
        for (&k, q) in &self.state.matcher.unexp {
            let what: Vec<String> = q.iter().map(|u| format!("from rank {} tag {} ({} B)", u.src, u.tag, u.len)).collect();
            lines.push(format!("unexpected for schedule {} execution {}: [{}]", proto::Named((k >> 32) as SchedId), k & 0xffff_ffff, what.join(", ")));
        }
        // Messages dropped for an execution taken as over here: the news
        // waits for the schedule's next Run, which a rank stuck in Test
        // never makes.
        for e in self.state.matcher.stale.values() {
            lines.push(format!("dropped, to be reported by the schedule's next Run: {}", e.message));
        }
        for (p, (o, i)) in self.state.stream_out.iter().zip(&self.state.stream_in).enumerate() {
            if let Some(s) = o.front() {
                lines.push(format!("stream to rank {p}: {} send(s), the first at {} of {} B", o.len(), s.pos, s.len));
            }
            if let Some(s) = i.front() {
                lines.push(format!("stream from rank {p}: {} receive(s), the first ({}) at {} of {} B", i.len(), self.describe(s.r), s.pos, s.len));
            }
        }
        for (p, q) in self.state.outq.iter().enumerate() {
            if !q.is_empty() {
                lines.push(format!("{} message(s) to rank {p} wait for ring space", q.len()));
            }
        }
        if let Some(net) = self.link.net.as_ref() {
            for p in self.link.remote_peers() {
                lines.push(net.describe_peer(p as u32));
            }
        }
        lines
    }

    pub(super) fn describe(&self, r: OpRef) -> String {
        let Some(e) = self.exec(r) else { return String::from("a finished execution") };
        let s = &e.sched.s;
        if r.op == u32::MAX {
            return format!("schedule {} execution {}", proto::Named(e.sched.id), e.seq);
        }
        let o = &s.ops[r.op as usize];
        let v = s.origin[r.op as usize];
        let what = match o.kind() {
            OpKind::Send => format!("Send to {}, tag {}", o.peer, o.tag),
            OpKind::Recv => format!("Recv from {}, tag {}", o.peer, o.tag),
            OpKind::SendVec => format!("SendVec to {}, tag {}", o.peer, o.tag),
            OpKind::RecvVec => format!("RecvVec from {}, tag {}", o.peer, o.tag),
            OpKind::Local | OpKind::LocalVec => "LocalOp".to_string(),
            OpKind::Calc => "Calc".to_string(),
        };
        format!("vertex {v} ({what})")
    }

    #[cold]
    pub(super) fn trace_start(&mut self, r: OpRef) {
        if self.recorder.is_some() {
            self.record_start(r);
        }
        if !trace_lines() {
            return;
        }
        if let Some(e) = self.exec(r) {
            say!("goal-trace {:.6} rank {} start sched {} exec {} {}", localop::wtime(), self.rank, e.sched.id, e.seq, self.describe(r));
        }
    }

    #[cold]
    pub(super) fn trace_finish(&mut self, r: OpRef) {
        if self.recorder.is_some() {
            self.record_finish(r);
        }
        if !trace_lines() {
            return;
        }
        if let Some(e) = self.exec(r) {
            let v = e.sched.s.origin[r.op as usize];
            say!("goal-trace {:.6} rank {} finish sched {} exec {} vertex {v}", localop::wtime(), self.rank, e.sched.id, e.seq);
        }
    }

    /// How many sends above the eager limit went eagerly (ranks sharing
    /// cores, see [`Engine::eager_limit`]), and how many within it went by
    /// rendezvous behind a full ring (see [`Engine::backed_up`]).
    pub fn eager_summary(&self) -> Option<String> {
        let (beyond, backed_up) = (self.state.eager_beyond, self.state.eager_backed_up);
        let eager = self.thresholds.eager;
        let mut parts = Vec::new();
        if beyond > 0 {
            parts.push(format!("{beyond} send(s) above the eager limit of {eager} B went eagerly (more ranks than cores: to a rank that last waited on this CPU, or the longest send of a schedule and not half of an exchange)"));
        }
        if backed_up > 0 {
            parts.push(format!("{backed_up} send(s) within the eager limit of {eager} B went by rendezvous behind a full ring"));
        }
        let [by_eager, by_rdv] = self.eagerness.taken;
        if by_rdv + by_eager > 0 {
            parts.push(format!(
                "of the sends from {} B up to {} B, {by_eager} went eagerly and {by_rdv} by rendezvous, chosen by what each took (ns per byte: {})",
                self.eagerness.from(),
                self.thresholds.eager_adapt,
                self.eagerness.measured().unwrap_or_else(|| "-".into())
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// How many messages this rank received through the stream's narrow
    /// and long windows (see [`Engine::stream_window`]).
    pub fn stream_summary(&self) -> Option<String> {
        let (narrow, long) = (self.state.narrow_streams, self.state.long_streams);
        let mut parts = Vec::new();
        if narrow > 0 {
            parts.push(format!("{narrow} message(s) received through the first {} B of their sender's stream (bursts, exchanges, and longer messages that measured faster so)", self.link.shm.stream_narrow_bytes()));
        }
        if long > 0 {
            parts.push(format!("{long} message(s) received through twice the {} B of their sender's stream (longer than it, nothing going back)", self.link.shm.stream_bytes()));
        }
        let [by_long, by_narrow] = self.windows.taken;
        if by_long + by_narrow > 0 {
            parts.push(format!(
                "of the messages longer than the stream with nothing going back, {by_long} through the long window and {by_narrow} through the narrow one, chosen by what each took (ns per byte: {})",
                self.windows.measured()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// How many large messages took each path, when chosen per message.
    pub fn path_summary(&self) -> Option<String> {
        let [stream, cma] = self.adapt.taken;
        let [x_stream, x_cma] = self.adapt.taken_in_exchange;
        let off = self.adapt.bursts_off_stream;
        let mates = self.adapt.to_cpu_mates;
        let [b_stream, b_cma] = self.adapt.bursts.taken;
        let b_timed = self.adapt.bursts.timed;
        let fuse_cma = self.fuse_paths.taken[1];
        let (fused, pushed, [split, declined], cold) = (self.state.fused, self.state.pushed, self.state.split, self.state.paths.cold_writes);
        let [bytes, read] = self.state.split_bytes;
        let share = (read * 100).checked_div(bytes).unwrap_or(0);
        let staged = self.stage.sends;
        (stream + cma + fused + fuse_cma + pushed + split + staged > 0).then(|| {
            format!(
                "large messages chosen per message: {stream} by stream, {cma} by CMA (in exchanges: {x_stream} by stream, {x_cma} by CMA; \
                 {mates} by the stream to a rank waiting on this CPU, more ranks than cores; \
                 {off} of a burst of the smallest class by CMA because the stream measured slower; \
                 of bursts of messages longer than the stream, {b_stream} by stream and {b_cma} by split CMA, {b_timed} burst(s) timed whole), \
                 {staged} of them staged in this rank's heap instead, for a rank not running (more ranks than cores); \
                 {fused} receive(s) combined with their local operation as they came \
                 ({fuse_cma} more read by CMA, then combined: the stream measured slower, or to explore); {pushed} written here by their senders while this rank was busy; \
                 {split} copied by this rank and their senders together, chunk by chunk, this rank taking {share} % of their bytes \
                 ({declined} of them declined by a sender whose application did not wait); \
                 {cold} of their senders' writes slower than this rank's own copy (the application reads what it receives: this rank then copies for a while); \
                 ns per byte measured: {}; by whole bursts: {}; for receives that could be combined as they come \
                 (stream: fused, CMA: the read alone): {}",
                self.adapt.measured(),
                self.adapt.bursts.measured(),
                self.fuse_paths.measured()
            )
        })
    }

}
