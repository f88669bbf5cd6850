//! Receives: starting one (an unexpected message first, else posted),
//! keeping messages that came before their receive, the mismatch and stale
//! checks that turn a disagreement between ranks into an error, and
//! delivering a matched message.

use super::*;
use super::pieces::{copy_pieces, scatter};

impl Engine {
    /// Reports what waits for executions that finished with all their
    /// receives taken (`State::stray_keys`): strays (see [`stale`](Self::stale)).
    #[cold]
    pub(super) fn strays(&mut self) {
        while let Some(k) = self.state.matcher.stray_keys.pop() {
            if let Some(q) = self.state.matcher.unexp.remove(&k) {
                for u in q {
                    self.stale((k >> 32) as SchedId, k as u32, u);
                }
            }
        }
    }

    /// An unexpected message whose execution is gone: release its sender.
    pub(super) fn drop_unexpected(&mut self, u: Unexp) {
        match u.kind {
            UnexpKind::Eager(d, ctl) => {
                self.release_credit(u.src, d.len() as u64);
                self.state.matcher.spare_buf(d);
                if let Some(ctl) = ctl.filter(|c| c.mode == proto::MODE_OFFER) {
                    self.answer_offer(u.src, ctl, false);
                }
            }
            UnexpKind::Rts { token, .. } => self.send_control(u.src, Kind::Fin, token),
            UnexpKind::SelfSend(s) => self.finish(s),
        }
    }

    pub(super) fn start_recv(&mut self, r: OpRef, o: &OpRec, sched: SchedId, seq: u32) {
        if let Some(u) = self.state.matcher.take_unexpected(key(sched, seq), o.peer, o.tag) {
            return self.deliver(r, u);
        }
        if o.peer >= 0 && o.peer as u32 != self.rank {
            if let Some(cause) = &self.state.lost[o.peer as usize] {
                let msg = format!("{}: rank {} {cause}", self.describe(r), o.peer);
                return self.fail(r, Error::new(ErrorKind::PeerLost, msg));
            }
        }
        self.post(r, o);
    }

    /// Finds and removes the first posted receive of execution (sched, seq) matching src/tag.
    pub(super) fn match_posted(&mut self, sched: SchedId, seq: u32, src: u32, tag: i32) -> Option<OpRef> {
        match_posted(&mut self.state.execs, sched, seq, src, tag)
    }

    /// Keeps message `u`, which no posted receive took, until a receive of
    /// execution (sched, seq) starts. The ranks' schedules do not pair up
    /// if that execution runs here already and no receive of its schedule
    /// could ever take the message (it fails, see
    /// [`mismatch`](Self::mismatch)), or if it finished here already (see
    /// [`stale`](Self::stale)).
    pub(super) fn stash(&mut self, sched: SchedId, seq: u32, u: Unexp) {
        if self.state.matcher.is_dead(key(sched, seq)) {
            return self.drop_unexpected(u);
        }
        if let Some(slot) = self.state.execs.active_slot(sched, seq) {
            let e = self.state.execs.slots[slot as usize].as_ref().unwrap_or_else(|| unreachable!("active executions have slots"));
            if !e.sched.may_receive(u.src, u.tag) {
                let r = OpRef { slot, gen: e.gen, op: u32::MAX };
                return self.mismatch(r, u);
            }
        } else if self.state.execs.finished_before(sched, seq) {
            // Before the next execution here, and none active: one that
            // finished, all its receives taken.
            return self.stale(sched, seq, u);
        }
        self.state.matcher.keep(key(sched, seq), u);
    }

    /// Fails execution `r` (an `OpRef` of the execution) for message `u`,
    /// which no receive of its schedule takes, and releases the sender.
    pub(super) fn mismatch(&mut self, r: OpRef, u: Unexp) {
        let Some(err) = self.mismatch_error(r, &u) else { return self.drop_unexpected(u) };
        self.drop_unexpected(u);
        self.fail(r, err);
    }

    /// The error of execution `r` for message `u`, which no receive of its
    /// schedule takes (`None` if `r` is over).
    pub(super) fn mismatch_error(&self, r: OpRef, u: &Unexp) -> Option<Error> {
        let e = self.exec(r)?;
        let id = e.sched.id;
        let msg = format!(
            "{}: rank {} sent it a message with {} ({} bytes), and schedule {} has no receive from rank {} with that tag here: {DISAGREE}",
            self.describe(r), u.src, tag_words(u.tag), u.len, proto::Named(id), u.src
        );
        Some(Error::new(ErrorKind::Mismatch, msg))
    }

    /// Message `u` came for execution `seq` of schedule `sched`, which
    /// finished here without it: no execution is left to fail, so the
    /// schedule's next execution here fails with the news (a mismatch
    /// whose executions all finish, say a broadcast whose ranks disagree on
    /// the root, would otherwise go unseen), and the sender is released.
    #[cold]
    pub(super) fn stale(&mut self, sched: SchedId, seq: u32, u: Unexp) {
        let msg = format!(
            "schedule {} execution {seq} had finished here when rank {} sent it a message with {} ({} bytes) \
             that none of its receives took: {DISAGREE}",
            proto::Named(sched), u.src, tag_words(u.tag), u.len
        );
        self.drop_unexpected(u);
        self.state.matcher.stale.entry(sched).or_insert_with(|| Error::new(ErrorKind::Mismatch, msg));
    }

    /// The news [`stale`](Self::stale) kept for schedule `sched`, for its
    /// next execution to end with.
    pub(super) fn take_stale(&mut self, sched: SchedId) -> Option<Error> {
        if self.state.matcher.stale.is_empty() {
            return None;
        }
        let mut err = self.state.matcher.stale.remove(&sched)?;
        err.message.push_str("; reported by the schedule's next execution, this one");
        Some(err)
    }

    /// Before execution (sched, seq) in `slot` starts its operations:
    /// marks it to end with a mismatch (see `State::poisoned`) if an
    /// earlier execution's stray message was seen (see [`stale`](Self::stale)),
    /// or if a message waits for it that no receive of its schedule takes
    /// (one that came before the execution started here), releasing that
    /// message's sender. The operations still start, so that what this rank
    /// sends at once reaches its peers. Returns whether to fail it as soon
    /// as they have (the latter case: its receives may wait for messages
    /// that never come, as when the message comes while it runs, see
    /// [`stash`](Self::stash)); with an earlier execution's news it runs
    /// to its end.
    #[cold]
    pub(super) fn check_waiting(&mut self, sched: SchedId, seq: u32, slot: u32, gen: u32) -> bool {
        if let Some(err) = self.take_stale(sched) {
            self.state.matcher.poisoned.insert(slot, err);
            return false;
        }
        let r = OpRef { slot, gen, op: u32::MAX };
        let Some(e) = self.exec(r) else { return false };
        let sr = e.sched;
        let k = key(sched, seq);
        let Some(q) = self.state.matcher.unexp.get_mut(&k) else { return false };
        let Some(i) = q.iter().position(|u| !sr.may_receive(u.src, u.tag)) else { return false };
        let u = q.remove(i).unwrap_or_else(|| unreachable!());
        if q.is_empty() {
            self.state.matcher.unexp.remove(&k);
        }
        if let Some(err) = self.mismatch_error(r, &u) {
            self.state.matcher.poisoned.insert(slot, err);
        }
        self.drop_unexpected(u);
        true
    }

    /// Delivers message `u` into receive `r`.
    pub(super) fn deliver(&mut self, r: OpRef, u: Unexp) {
        if trace_on() {
            self.trace_from(r, u.src, u.len);
        }
        let (cap, exact) = self.rec(r).map_or((0, false), |o| (o.len, o.exact()));
        match fit(u.len as u64, cap as u64, exact) {
            Fit::Ok => {}
            Fit::Truncated => {
                let msg = format!("{}: message of {} bytes from rank {} is larger than the receive of {cap} bytes (truncation)", self.describe(r), u.len, u.src);
                self.drop_unexpected(u);
                return self.fail(r, Error::new(ErrorKind::Truncated, msg));
            }
            Fit::Short => {
                let err = short_message(self.describe(r), u.len, u.src, cap);
                self.drop_unexpected(u);
                return self.fail(r, err);
            }
        }
        let Some(dst) = self.pieces(r) else { return self.drop_unexpected(u) };
        match u.kind {
            UnexpKind::Eager(mut d, ctl) => {
                scatter(&mut d, dst.as_slice());
                self.copied(d.len());
                self.release_credit(u.src, d.len() as u64);
                self.state.matcher.spare_buf(d);
                if let Some(ctl) = ctl {
                    if let Err(e) = self.channel_note(r, u.src, ctl, u.len) {
                        return self.fail(r, e);
                    }
                }
                self.finish(r);
            }
            UnexpKind::SelfSend(s) => {
                if let Some(src) = self.pieces(s) {
                    copy_pieces(&src, &dst, u.len as usize);
                }
                self.copied(u.len as usize);
                self.finish(s);
                self.finish(r);
            }
            UnexpKind::Rts { mode, token, addr } => self.fetch(r, u.src, u.len, mode, token, addr, &dst),
        }
    }

}

/// The error of exact-length receive `what` (of `cap` bytes) for a
/// message of `len` bytes from `src`.
#[cold]
pub(super) fn short_message(what: String, len: u32, src: u32, cap: u32) -> Error {
    Error::new(
        ErrorKind::Mismatch,
        format!(
            "{what}: message of {len} bytes from rank {src}, where this collective's receive takes exactly {cap}: \
             the ranks called the collective with different counts, types or sizes"
        ),
    )
}

/// The end of a mismatch's message: what the ranks must agree on.
pub(super) const DISAGREE: &str = "the ranks' schedules do not pair up (every rank must compile the same schedules in the same order, \
     call each collective with the same root, sizes and algorithm, and pair each send with a receive of the peer's graph)";

/// A message's tag for an error message: collectives that goal builds
/// from C use tags from `GOAL_COLL_TAG_BASE` (2^30) on.
pub(super) fn tag_words(tag: i32) -> String {
    if tag >= 1 << 30 {
        format!("tag {tag} (GOAL_COLL_TAG_BASE + {}: a collective's)", tag - (1 << 30))
    } else {
        format!("tag {tag}")
    }
}
