//! Failure and liveness: peers checked every 100 ms of passes, and a lost
//! peer failing every execution that still needs it (its receives, sends
//! queued or in rendezvous to it, transfers with it), after taking in what
//! it left in this rank's inbox. A receive that has waited long asks its
//! peer whether a send will ever come: not if the peer's schedule holds
//! none (a mismatch), nor if the peer's execution failed before sending
//! (see [`FailedLog`]).

use super::*;
use super::recv::{tag_words, DISAGREE};
use std::time::Duration;

/// How long nothing may finish, while executions wait on receives, before
/// this rank asks the peers they wait on whether they will ever send (see
/// [`Engine::probe_if_stalled`]); and how often it asks again meanwhile.
const PROBE_AFTER: Duration = Duration::from_secs(1);
const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How many failed executions a rank remembers for peers that ask.
const FAILED_KEPT: usize = 4096;

/// The last [`FAILED_KEPT`] executions of this rank that failed, by
/// (schedule, number), with the failure they go back to. An execution
/// that fails starts none of its operations after that, so a send of it
/// that had not left never will: its peer's receive, which would wait for
/// ever, learns so when it asks ([`Engine::answer_probe`]). A send that had
/// left is in the pair's ring, stream or connection before the answer, and
/// is taken first (messages between two ranks keep their order).
#[derive(Default)]
pub(super) struct FailedLog {
    causes: HashMap<(SchedId, u32), Cause>,
    order: VecDeque<(SchedId, u32)>,
    /// Executions failing because a peer's failed (see
    /// [`Engine::no_send`]), by slot: the failure theirs went back to.
    pending: HashMap<u32, Cause>,
}

/// The first failure of a chain: the rank whose execution failed by an
/// error of its own, and that error's kind. A rank whose execution failed
/// because its peer's did passes its peer's cause on, so the last rank of
/// a chain of waits still names the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cause {
    pub rank: u32,
    pub kind: ErrorKind,
}

impl Cause {
    /// As [`Head::with_failure`] carries it.
    pub(super) fn word(self) -> u64 {
        self.kind.index() as u64 | (self.rank as u64) << 32
    }

    /// The inverse of [`word`](Self::word), `None` for a kind this runtime
    /// does not know.
    pub(super) fn from_word(w: u64) -> Option<Cause> {
        Some(Cause { rank: (w >> 32) as u32, kind: ErrorKind::from_index(w & 0xff)? })
    }
}

impl FailedLog {
    /// Execution `seq` of schedule `sched`, in `slot`, failed with an error
    /// of `kind` on rank `me`: its own failure, unless [`failing_after`](Self::failing_after)
    /// named another.
    pub(super) fn record(&mut self, slot: u32, sched: SchedId, seq: u32, me: u32, kind: ErrorKind) {
        let cause = self.pending.remove(&slot).unwrap_or(Cause { rank: me, kind });
        if self.causes.insert((sched, seq), cause).is_none() {
            self.order.push_back((sched, seq));
            if self.order.len() > FAILED_KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.causes.remove(&old);
                }
            }
        }
    }

    /// The execution in `slot` is about to fail because a peer's did, by
    /// `cause`.
    pub(super) fn failing_after(&mut self, slot: u32, cause: Cause) {
        self.pending.insert(slot, cause);
    }

    /// Schedule `sched` is gone: a later one may take its id.
    pub(super) fn forget(&mut self, sched: SchedId) {
        if !self.causes.is_empty() {
            self.causes.retain(|k, _| k.0 != sched);
            self.order.retain(|k| k.0 != sched);
        }
    }

    /// What execution `seq` of schedule `sched` failed by, if it did (and
    /// is among the last remembered).
    pub(super) fn get(&self, sched: SchedId, seq: u32) -> Option<Cause> {
        self.causes.get(&(sched, seq)).copied()
    }
}

impl Engine {
    /// Checks peer liveness now if 100 ms have passed since the last check.
    #[cold]
    pub fn check_peers_if_due(&mut self) {
        if self.state.last_check.elapsed().as_millis() < 100 {
            return;
        }
        self.state.last_check = Instant::now();
        // Every peer found gone in this check, the deaths before the
        // finalizes: a rank whose program ended because a third rank died
        // is usually gone by the time this rank looks, and taken first (in
        // rank order) it was blamed, with advice about a programming error
        // that did not happen.
        let mut gone = Vec::new();
        while let Err(lost) = self.link.shm.check_peers() {
            gone.push(lost);
        }
        gone.sort_by_key(|lost| lost.finalized.is_some());
        for lost in gone {
            self.peer_lost(lost, true);
        }
        self.probe_if_stalled();
        self.report_if_stalled();
        for (peer, msg) in self.kernel.as_mut().map(|k| k.overdue()).unwrap_or_default() {
            let slots = self.kernel.as_ref().map(|k| k.slots_with_peer(peer)).unwrap_or_default();
            for slot in slots {
                self.fail_slot(slot, Error::new(ErrorKind::PeerLost, msg.clone()));
            }
        }
    }

    /// Asks, once nothing has finished for [`PROBE_AFTER`] while
    /// executions wait on receives (and every [`PROBE_EVERY`] after), each
    /// peer a receive waits on whether its schedule holds a send to this
    /// rank with that tag at all (`Kind::Probe`). One that holds none
    /// answers `Kind::NoSend`, and the execution fails with a mismatch
    /// instead of waiting for ever: ranks that disagree on a collective's
    /// root where nobody sends (every rank its own root of a gather or a
    /// reduce) only wait, and no message ever shows the disagreement.
    /// Wildcard receives are not asked about; a peer that has not compiled
    /// the schedule yet does not answer. Off the path of every message:
    /// this runs in the liveness check, every 100 ms of a wait.
    fn probe_if_stalled(&mut self) {
        let ops = self.state.execs.finished_ops;
        let stall = &mut self.stall;
        if ops != stall.ops_seen || !self.state.execs.busy() {
            stall.restart(ops, self.state.passes);
            return;
        }
        if stall.since.elapsed() < PROBE_AFTER || stall.probed.is_some_and(|t| t.elapsed() < PROBE_EVERY) {
            return;
        }
        stall.probed = Some(Instant::now());
        let mut asks = Vec::new();
        for e in self.state.execs.slots.iter().flatten() {
            for p in &e.bufs.posted {
                if p.peer >= 0 && p.peer as u32 != self.rank && p.tag != -1 {
                    asks.push((p.peer as u32, e.sched.id, e.seq, p.tag));
                }
            }
        }
        asks.sort_unstable();
        asks.dedup();
        for (peer, sched, seq, tag) in asks {
            if self.state.lost[peer as usize].is_none() {
                let mut probe = Head::control(Kind::Probe, 0);
                (probe.sched, probe.seq, probe.tag) = (sched, seq, tag);
                self.post_message(peer as usize, probe);
            }
        }
    }

    /// A `Kind::Probe` from `src` (see [`probe_if_stalled`](Self::probe_if_stalled)):
    /// answers `Kind::NoSend` if this rank's schedule `h.sched` holds no
    /// send to `src` with `h.tag`, or in [`proto::NOSEND_FAILED`] if it
    /// does but execution `h.seq` of it failed here (see [`FailedLog`]).
    pub(super) fn answer_probe(&mut self, src: u32, h: Head) {
        let Some(s) = self.state.execs.scheds.get(h.sched) else { return };
        let sends = s.s.ops.iter().any(|o| matches!(o.kind(), OpKind::Send | OpKind::SendVec) && o.peer == src as i32 && o.tag == h.tag);
        let mut answer = Head::control(Kind::NoSend, 0);
        (answer.sched, answer.seq, answer.tag) = (h.sched, h.seq, h.tag);
        if !sends {
            self.post_message(src as usize, answer);
        } else if let Some(cause) = self.state.failed.get(h.sched, h.seq) {
            self.post_message(src as usize, answer.mode(proto::NOSEND_FAILED).with_failure(cause.word()));
        }
    }

    /// A `Kind::NoSend` from `src`: the execution that probed cannot finish
    /// (unless, for a failed sender's answer, the message came before it).
    pub(super) fn no_send(&mut self, src: u32, h: Head) {
        let Some(slot) = self.state.execs.active_slot(h.sched, h.seq) else { return };
        let Some(e) = self.state.execs.slots[slot as usize].as_ref() else { return };
        let r = OpRef { slot, gen: e.gen, op: u32::MAX };
        let (kind, msg) = if h.mode == proto::NOSEND_FAILED {
            // Every message the sender sent came before its answer: a
            // receive they matched is no longer posted.
            if !e.bufs.posted.iter().any(|p| p.peer == src as i32 && p.tag == h.tag) {
                return;
            }
            let cause = Cause::from_word(h.failure()).unwrap_or(Cause { rank: src, kind: ErrorKind::PeerFailed });
            let first = if cause.rank == src {
                format!("failed ({}) before sending it; rank {src}'s own error says where", cause.kind.words())
            } else {
                format!(
                    "failed before sending it, after rank {}'s failed ({}); rank {}'s own error says where",
                    cause.rank,
                    cause.kind.words(),
                    cause.rank
                )
            };
            let msg = format!(
                "{}: it waits for a message from rank {src} with {}, and rank {src}'s execution {} of schedule {} {first}",
                self.describe(r),
                tag_words(h.tag),
                h.seq,
                proto::Named(h.sched)
            );
            self.state.failed.failing_after(slot, cause);
            (ErrorKind::PeerFailed, msg)
        } else {
            let msg = format!(
                "{}: it waits for a message from rank {src} with {}, and rank {src}'s schedule {} has no send to this rank with that tag: {DISAGREE}",
                self.describe(r),
                tag_words(h.tag),
                proto::Named(h.sched)
            );
            (ErrorKind::Mismatch, msg)
        };
        self.fail(r, Error::new(kind, msg));
    }

    /// Peer `lost.rank` is gone: fails every execution that still needs it.
    /// `may_be_death`: false for a peer on another machine that closed its
    /// connections itself (it most likely finished), which is then not the
    /// first death that later losses are blamed on.
    pub(super) fn peer_lost(&mut self, lost: PeerLost, may_be_death: bool) {
        let r = lost.rank;
        if self.state.lost[r].is_some() {
            return;
        }
        // Take in whatever the peer left in my inbox before it went away: its
        // ring messages and stream bytes live in my memory and survive it (a
        // streamed send finishes once its last byte is in the stream, so a
        // sender may rightly finish and exit while I still copy). A few
        // passes, since each may start receives that take more of it.
        for _ in 0..64 {
            let before = self.state.execs.finished_ops;
            self.poll_messages();
            self.drain_ready();
            if self.state.streams_active > 0 {
                self.pump_transfers();
                self.drain_ready();
            }
            if self.state.execs.finished_ops == before {
                break;
            }
        }
        self.state.lost[r] = Some(lost.cause.clone());
        if may_be_death && lost.finalized.is_none() && self.state.first_death.is_none() {
            self.state.first_death = Some(format!("rank {r} {}", lost.cause));
        }
        // A rank that finalized after another died most likely ended
        // because of that death (its execution failed, and its program
        // gave up): the death is the cause to report, as goalrun does.
        let after_death = lost.finalized.and(self.state.first_death.clone());
        let msg = match &after_death {
            Some(death) => format!(
                "{death} (the first failure in the job this rank saw); then rank {r}, which this execution still needed, {}, most likely because of that failure",
                lost.cause
            ),
            None => format!("rank {r} {} while this execution still needed it", lost.cause),
        };
        // A wildcard receive fails only once no other member of its
        // schedule's group is left to send it.
        let me = self.rank;
        let gone = &self.state.lost;
        let others_left = |members: &[u32]| members.iter().any(|&p| p != me && gone[p as usize].is_none());
        // Fail every execution that still waits on that peer.
        let mut victims = Vec::new();
        for (slot, e) in self.state.execs.slots.iter().enumerate() {
            let Some(e) = e else { continue };
            let waits_recv = e.bufs.posted.iter().any(|p| p.peer == r as i32 || (p.peer == -1 && !others_left(&e.sched.members)));
            if waits_recv {
                victims.push(slot as u32);
            }
        }
        for q in self.state.outq[r].iter() {
            if let Some(s) = q.send {
                victims.push(s.slot);
            }
        }
        for x in self.state.rdv.iter().flatten() {
            if x.peer as usize == r {
                victims.push(x.r.slot);
            }
        }
        for s in self.state.stream_in[r].iter() {
            victims.push(s.r.slot);
        }
        for x in self.state.reads.iter().filter(|x| x.src as usize == r) {
            victims.push(x.r.slot);
        }
        // Receives the peer was to write, and sends writing into it.
        self.state.pushes_in.retain(|&(src, _), &mut (x, _, _)| {
            if src as usize == r {
                victims.push(x.slot);
            }
            src as usize != r
        });
        let writes = self.state.writes.len();
        for w in self.state.writes.iter().filter(|w| w.peer as usize == r) {
            if let Some(s) = self.state.rdv.get(w.token as usize).and_then(|s| s.as_ref()) {
                victims.push(s.r.slot);
            }
        }
        self.state.writes.retain(|w| w.peer as usize != r);
        self.state.streams_active -= (writes - self.state.writes.len()) as u32;
        if let Some(kernel) = self.kernel.as_mut() {
            if self.link.is_remote(r) {
                if !kernel.slots_with_peer(r as u32).is_empty() {
                    kernel.watch_lost(r as u32, msg.clone());
                }
            } else {
                victims.extend(kernel.slots_with_peer(r as u32));
            }
        }
        for (&(src, _), x) in self.state.net_in.iter() {
            if src as usize == r {
                victims.push(x.slot);
            }
        }
        self.state.net_in.retain(|&(src, _), _| src as usize != r);
        self.state.outq[r].clear();
        self.unstage_peer(r);
        let reads = self.state.reads.len();
        self.state.reads.retain(|x| x.src as usize != r);
        let cleared = self.state.stream_in[r].len() + self.state.stream_out[r].len() + reads - self.state.reads.len();
        self.state.streams_active -= cleared as u32;
        self.state.stream_in[r].clear();
        self.state.stream_out[r].clear();
        self.state.exchange_timing[r] = None;
        victims.sort_unstable();
        victims.dedup();
        for slot in victims {
            let hint = match (lost.finalized.filter(|_| after_death.is_none()), self.state.execs.slots.get(slot as usize).and_then(|e| e.as_ref())) {
                // The peer's program ended normally: the ranks' programs
                // disagree on what to run.
                (Some(_), Some(e)) if proto::context_of(e.sched.id) != 0 => format!(
                    "; this is execution {} of schedule {} of the group with context {} here: rank {r} did not compile or run it as often (a group's members compile its schedules in the same order and run each as often)",
                    e.seq, e.sched.id as u32, proto::context_of(e.sched.id)
                ),
                (Some(n), Some(e)) if e.sched.id >= n => format!(
                    "; rank {r} never compiled this schedule (number {} here): every rank must compile the same schedules in the same order",
                    e.sched.id
                ),
                (Some(_), Some(e)) => format!(
                    "; this is execution {} of schedule {} here, which rank {r} did not run as often: every rank must run each schedule as often",
                    e.seq, e.sched.id
                ),
                _ => String::new(),
            };
            self.fail_slot(slot, Error::new(ErrorKind::PeerLost, format!("{msg}{hint}")));
        }
    }

}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_survives_its_word_for_every_kind_and_rank() {
        for kind in ErrorKind::ALL {
            for rank in [0, 1, 4095, u32::MAX] {
                let c = Cause { rank, kind };
                assert_eq!(Cause::from_word(c.word()), Some(c));
            }
        }
        assert_eq!(Cause::from_word(200), None, "a kind this runtime does not know");
    }

    #[test]
    fn the_log_keeps_the_first_cause_forgets_freed_schedules_and_ends_at_its_bound() {
        let mut log = FailedLog::default();
        log.record(3, 7, 0, 2, ErrorKind::DivByZero);
        assert_eq!(log.get(7, 0), Some(Cause { rank: 2, kind: ErrorKind::DivByZero }));
        // A failure caused by a peer's keeps the peer's cause.
        log.failing_after(4, Cause { rank: 0, kind: ErrorKind::Truncated });
        log.record(4, 7, 1, 2, ErrorKind::PeerFailed);
        assert_eq!(log.get(7, 1), Some(Cause { rank: 0, kind: ErrorKind::Truncated }));
        // ... once: the slot's next failure is its own.
        log.record(4, 7, 2, 2, ErrorKind::Mismatch);
        assert_eq!(log.get(7, 2), Some(Cause { rank: 2, kind: ErrorKind::Mismatch }));
        assert_eq!(log.get(7, 3), None);
        log.forget(7);
        assert_eq!(log.get(7, 0), None);
        for seq in 0..FAILED_KEPT as u32 + 10 {
            log.record(0, 9, seq, 1, ErrorKind::DivByZero);
        }
        assert_eq!(log.get(9, 9), None, "the oldest are let go");
        assert!(log.get(9, 10).is_some() && log.get(9, FAILED_KEPT as u32 + 9).is_some());
        assert_eq!(log.causes.len(), FAILED_KEPT);
    }
}
