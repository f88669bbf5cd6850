//! What the engine remembers of each peer from one message to the next:
//! the eager credit both ways ([`Credit`]), and how the peer's writes into
//! this rank's memory and this rank's own reads from it went
//! ([`PeerPaths`], what the push and split policy judges by). Data and
//! its bookkeeping only, no transport: a leaf module with unit tests.

use super::inflight::Recent;
use std::time::{Duration, Instant};

/// Eager credit: a receiver buffers at most `credit` bytes of one sender's
/// unexpected eager messages. A sender counts what it sent and what the
/// receiver has released (published through the link); past its credit it
/// sends an RTS instead. A receiver publishes what it released in steps of
/// a quarter of the credit, so that the publication stays off the
/// per-message path.
pub(super) struct Credit {
    /// Eager bytes sent to each peer (credit accounting).
    pub(super) eager_sent: Vec<u64>,
    /// Cached credits each peer has returned.
    pub(super) eager_returned: Vec<u64>,
    /// Eager bytes I have released per source, and what I published.
    pub(super) released: Vec<u64>,
    pub(super) published: Vec<u64>,
    /// Some peer's released credit reached `credit_step` unpublished bytes.
    pub(super) due: bool,
    /// Released credit is published in steps of a quarter of the credit.
    pub(super) step: u64,
}

impl Credit {
    /// Credit accounting for a group of `n` ranks, `credit` bytes per sender.
    pub(super) fn new(n: usize, credit: u64) -> Credit {
        Credit { eager_sent: vec![0; n], eager_returned: vec![0; n], released: vec![0; n], published: vec![0; n], due: false, step: (credit / 4).max(1) }
    }

    /// Notes `n` eager bytes of `src` released; publishing becomes due
    /// once a step of them is unpublished (see `publish_credits`).
    #[inline(always)]
    pub(super) fn release(&mut self, src: u32, n: u64) {
        let p = src as usize;
        self.released[p] += n;
        if self.released[p] - self.published[p] >= self.step {
            self.due = true;
        }
    }

    /// Whether `len` more bytes to `p` stay within `credit`, by what `p`
    /// is known to have returned.
    #[inline(always)]
    pub(super) fn allows(&self, p: usize, len: u64, credit: u64) -> bool {
        self.eager_sent[p] + len - self.eager_returned[p] <= credit
    }

    /// The peers whose released bytes are a step past what was published,
    /// marking them published; clears `due`.
    pub(super) fn take_due(&mut self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.due = false;
        let step = self.step;
        self.released.iter().zip(self.published.iter_mut()).enumerate().filter_map(move |(p, (&rel, publ))| {
            (rel - *publ >= step).then(|| {
                *publ = rel;
                (p, rel)
            })
        })
    }
}

/// Per peer, how its writes into this rank's memory (pushes, its parts of
/// split messages) and this rank's reads from its memory went: whether to
/// ask it to write the next one (see `COLD_WRITES` in `policy.rs`).
pub(super) struct PeerPaths {
    /// Per peer: it was not allowed to write into this process (ask no more).
    pub(super) push_refused: Vec<bool>,
    /// Per peer: whether its writes here were cold lately (see
    /// [`ColdSpell`]).
    pub(super) cold: Vec<ColdSpell>,
    /// Per peer: picoseconds per byte of this rank's fastest whole read of a
    /// long message from its memory into the buffer its previous read went
    /// to (0: none yet), what its pushes are judged by.
    pub(super) read_ps: Vec<u64>,
    /// Per peer: the buffers its latest long messages went to that it
    /// wrote itself (all or part). Only a write into a buffer it wrote the
    /// time before is judged: the first finds the lines where this rank's
    /// own copy left them.
    pub(super) written_to: Vec<Recent>,
    /// Per peer: the buffers its latest long messages went to that this
    /// rank read whole.
    pub(super) read_to: Vec<Recent>,
    /// Writes judged cold, for `GOAL_DEBUG`'s summary.
    pub(super) cold_writes: u64,
}

impl PeerPaths {
    /// Nothing known yet of any of `n` peers.
    pub(super) fn new(n: usize) -> PeerPaths {
        PeerPaths {
            push_refused: vec![false; n],
            cold: vec![ColdSpell::default(); n],
            read_ps: vec![0; n],
            written_to: vec![Recent::default(); n],
            read_to: vec![Recent::default(); n],
            cold_writes: 0,
        }
    }
}

/// One sender's writes into this rank's memory, judged one by one against
/// this rank's own copies (see `COLD_WRITES` in `policy.rs`): after
/// [`COLD_VOTES`] votes in a row against them (cold writes, declined
/// requests) this rank takes the sender's next [`COLD_SKIP`] long messages
/// without its writes, twice as many after each spell that ends in cold
/// writes again, up to [`COLD_SKIP_MAX`]; a warm write forgets it all.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct ColdSpell {
    /// Messages still to take without the sender's writes.
    left: u32,
    /// Votes against its writes in a row.
    votes: u8,
    /// How many messages the last spell skipped (0: none since a warm write).
    skip: u32,
}

/// Votes in a row after which a sender's writes pause: one slow write is
/// as likely a preempted writer on a shared machine (a run of bcasts that
/// read nothing judged 8 of 22 writes cold one at a time).
pub(super) const COLD_VOTES: u8 = 3;

/// Messages a first pause lasts (see [`ColdSpell`]).
pub(super) const COLD_SKIP: u32 = 32;

/// The longest pause, in messages.
pub(super) const COLD_SKIP_MAX: u32 = 1024;

impl ColdSpell {
    /// A write that took no longer than this rank's own copy allows.
    pub(super) fn warm(&mut self) {
        *self = ColdSpell::default();
    }

    /// One more reason not to have the sender write here; returns whether
    /// it starts a pause.
    pub(super) fn vote(&mut self) -> bool {
        self.votes += 1;
        if self.votes < COLD_VOTES {
            return false;
        }
        self.skip = if self.skip == 0 { COLD_SKIP } else { (self.skip * 2).min(COLD_SKIP_MAX) };
        self.left = self.skip;
        self.votes = 0;
        true
    }

    /// Whether the sender may write its next long message here; a message
    /// taken without its writes counts down the pause.
    pub(super) fn may_write(&mut self) -> bool {
        if self.left == 0 {
            return true;
        }
        self.left -= 1;
        false
    }
}

/// Whether anything moves: the operations finished when last looked at,
/// since when that count stands still, when the stalled receives were
/// last probed (see `Engine::probe_if_stalled`) and when the stall was
/// last reported (see `Engine::report_if_stalled`), and after how long a
/// stall is reported at all.
pub(super) struct StallWatch {
    pub(super) ops_seen: usize,
    pub(super) since: Instant,
    /// The engine's progress passes at `since` (see `State::passes`).
    pub(super) passes: u32,
    pub(super) probed: Option<Instant>,
    pub(super) reported: Option<Instant>,
    pub(super) report_after: Option<Duration>,
}

impl StallWatch {
    /// Nothing seen yet.
    pub(super) fn new() -> StallWatch {
        StallWatch { ops_seen: 0, since: Instant::now(), passes: 0, probed: None, reported: None, report_after: None }
    }

    /// The count moved to `ops` (or nothing is in flight): a new period
    /// without progress starts now, at the engine's pass number `passes`.
    pub(super) fn restart(&mut self, ops: usize, passes: u32) {
        (self.ops_seen, self.since, self.passes, self.probed, self.reported) = (ops, Instant::now(), passes, None, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages `c` lets through of the next `n`.
    fn written(c: &mut ColdSpell, n: u32) -> u32 {
        (0..n).filter(|_| c.may_write()).count() as u32
    }

    #[test]
    fn three_votes_in_a_row_pause_a_senders_writes_and_a_warm_write_forgets_them() {
        let mut c = ColdSpell::default();
        assert!(!c.vote() && !c.vote(), "two votes are not a spell");
        c.warm();
        assert!(!c.vote() && !c.vote(), "a warm write started the count again");
        assert_eq!(written(&mut c, 5), 5, "no pause yet");
        assert!(c.vote(), "the third vote in a row");
        assert_eq!(written(&mut c, COLD_SKIP), 0, "the next {COLD_SKIP} messages without its writes");
        assert!(c.may_write(), "then it writes again");
        assert!(!c.vote() && !c.vote() && c.vote());
        assert_eq!(written(&mut c, 2 * COLD_SKIP + 1), 1, "cold again: a pause twice as long");
        c.warm();
        assert!(!c.vote() && !c.vote() && c.vote());
        assert_eq!(written(&mut c, COLD_SKIP + 1), 1, "after a warm write a first pause again");
    }

    #[test]
    fn pauses_double_up_to_the_longest() {
        let mut c = ColdSpell::default();
        let mut pauses = Vec::new();
        for _ in 0..8 {
            assert!(!c.vote() && !c.vote() && c.vote());
            let mut n = 0;
            while !c.may_write() {
                n += 1;
            }
            pauses.push(n);
        }
        assert_eq!(pauses, [32, 64, 128, 256, 512, 1024, 1024, 1024]);
        assert_eq!((COLD_SKIP, COLD_SKIP_MAX), (32, 1024));
    }

    #[test]
    fn a_sender_stops_at_its_credit_and_goes_on_as_it_comes_back() {
        let mut c = Credit::new(2, 1000);
        assert!(c.allows(1, 1000, 1000));
        c.eager_sent[1] += 900;
        assert!(c.allows(1, 100, 1000));
        assert!(!c.allows(1, 101, 1000), "past the credit: rendezvous");
        c.eager_returned[1] = 500;
        assert!(c.allows(1, 600, 1000));
    }

    #[test]
    fn released_credit_is_published_a_quarter_at_a_time() {
        let mut c = Credit::new(3, 1000);
        c.release(1, 249);
        assert!(!c.due, "below a step");
        c.release(1, 1);
        c.release(2, 100);
        assert!(c.due);
        let published: Vec<(usize, u64)> = c.take_due().collect();
        assert_eq!(published, vec![(1, 250)], "only the peer a step past");
        assert!(!c.due);
        c.release(2, 150);
        assert_eq!(c.take_due().collect::<Vec<_>>(), vec![(2, 250)]);
    }
}
