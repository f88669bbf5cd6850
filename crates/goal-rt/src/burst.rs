//! Choosing the path of a burst of large messages to one peer (the
//! stream or split CMA) from what whole bursts took each way.
//!
//! Used for messages longer than a pair's stream (see `adapt::Adapt::pick`).
//! Shorter ones keep their fixed paths: timed so (to their last send's
//! end, before [`Bursts::poll_drained`]), bursts of 256 KiB and 1 MiB
//! measured the stream 1.14-1.28x faster than split CMA in the first
//! state below (0.126 and 0.140 ns per byte against 0.144 and 0.179),
//! while windows of them ran 1.1-1.45x faster all by split CMA than all by
//! the stream, quiet or under detours.
//!
//! A *burst* is a run of large sends to one peer with more of them in
//! flight at once (a window of sends, a pipelined broadcast's segments,
//! see `adapt::Situation::Burst`). Two paths carry one: the pair's stream,
//! where the sender copies each message in while the receiver copies the
//! previous one out, or CMA split between the two cores, where each copies
//! half of every message straight between the buffers. Which is faster
//! changes with the host, and the two are far apart either way:
//! - quiet, in the host state where a CMA read of a MiB costs four
//!   `memcpy`s of it, windows of 4 and 16 MiB sends streamed at
//!   10.1-13.7 and 9.3-12.8 GB/s by the stream against 8.0-9.4 and
//!   9.5-9.8 by split CMA;
//! - beside a busy process, where the stream moves only while both ranks
//!   are on a CPU, 3.2-5.1 GB/s by the stream from 256 KiB against 5.3-6.6
//!   by split CMA;
//! - on the host of 2026-11-30, quiet, 9.2 and 8.6 by the stream, 12.7 and
//!   11.3 by split CMA (the reason bursts took split CMA fixed until now).
//!
//! A burst's single messages cannot be timed apart: each one's copy meets
//! the others' (a message's stream waits while its receiver reads the
//! one before by CMA). So a burst is timed whole: from the pick of its
//! first message that came in a burst to the end of its last send (by
//! split CMA its receiver's `FIN`; by the stream when its receiver has
//! copied the last byte out, see [`Bursts::poll_drained`]), over the bytes
//! of all of them, and every message of one burst takes one path, the one
//! picked for its first. A burst ends at the next large send to the peer
//! that is no part of it (one alone or half of an exchange, or of another
//! size class); it is recorded then, if every send of it finished and its
//! receiver copied it out. Per peer and size class an average per byte of
//! each path is kept in a [`Class`], as `adapt` does for single messages:
//! the two take turns while they settle, the faster is taken (see
//! [`MARGIN`]), and the slower one takes a whole burst every so often, so
//! that a change of the host's state is seen.

use crate::adapt::{class_of, describe_classes, Class, Path, CLASSES};

/// A burst's path is left only for one this many times faster per byte:
/// none, the faster one is taken. A burst's time is that of many
/// messages, steadier than one message's, and bursts timed in turn with
/// the other path measured the two closer than windows of either alone
/// ran: quiet, 4 and 16 MiB bursts by the stream 1.14-1.5x faster than by
/// split CMA where windows all by the stream ran 1.3-1.4x faster; beside a
/// busy process split CMA 1.03-1.2x faster where windows of it ran 1.2x.
/// With `adapt`'s margin of 1.25 or one of 1.1 split CMA kept the quiet
/// bursts of 4 MiB in some runs.
const MARGIN: f64 = 1.0;

/// Bursts each path takes before the two are compared: the first untimed
/// and one timed, where single messages take four (see `adapt`'s
/// `SETTLED`). A burst's time is many messages', and in a benchmark's
/// twenty windows of a size the four bursts a path took while settling
/// were a fifth of them: beside a busy process, where a 16 MiB burst by
/// the stream took up to 2.7 times one by split CMA, windows of 16 MiB ran
/// 0.88x as fast as with split CMA fixed, every burst after settling by
/// split CMA.
const SETTLED: u8 = 2;

/// The burst in flight to one peer.
#[derive(Clone, Copy, Debug)]
struct Run {
    path: Path,
    class: usize,
    /// When its first message was picked (monotonic ns).
    since: u64,
    /// Its messages' bytes, and how many of them there are and ended.
    bytes: u64,
    sent: u32,
    done: u32,
    /// When its latest send ended (monotonic ns); for a burst by the
    /// stream whose sends all ended, when its receiver had copied every
    /// byte out (see [`Bursts::poll_drained`]).
    last: u64,
    /// By the stream, every send ended, and its receiver still copying
    /// out: the burst's time is not known yet.
    draining: bool,
}

/// The chooser (see the module documentation).
pub(crate) struct Bursts {
    /// Per peer and size class: ns per byte of the stream (0) and split
    /// CMA (1) for whole bursts.
    classes: Vec<[Class; CLASSES]>,
    /// Per peer: the burst in flight, if any.
    runs: Vec<Option<Run>>,
    /// Per peer and size class: the bytes of its latest burst timed, which
    /// set how often the slower path is explored (see [`Class::pick`]: at
    /// most about 1 % of the class's time, a whole burst each time).
    last_bytes: Vec<[u64; CLASSES]>,
    /// Messages of bursts that took each path (stream, CMA), and bursts
    /// timed, for the debug line.
    pub taken: [u64; 2],
    pub timed: u64,
    /// Some burst by the stream waits for its receiver (see
    /// [`Bursts::poll_drained`]).
    any_draining: bool,
}

impl Bursts {
    /// A chooser for `peers` peers.
    pub fn new(peers: usize) -> Bursts {
        Bursts { classes: vec![[Class::settling_after(SETTLED); CLASSES]; peers], runs: vec![None; peers], last_bytes: vec![[0; CLASSES]; peers], taken: [0; 2], timed: 0, any_draining: false }
    }

    /// The path of a message of `len` bytes to `peer` that comes in a
    /// burst: the path of the burst in flight when it is of its size
    /// class, else the first of a new one's.
    pub fn pick(&mut self, peer: usize, len: usize) -> Path {
        self.pick_at(peer, len, crate::localop::monotonic_ns())
    }

    fn pick_at(&mut self, peer: usize, len: usize, now: u64) -> Path {
        let class = class_of(len);
        let path = match self.runs[peer] {
            Some(run) if run.class == class => run.path,
            _ => {
                self.end(peer);
                // Split CMA unless the stream measured faster (MARGIN):
                // the path such bursts took before they were timed.
                let default = 1;
                let bytes = (self.last_bytes[peer][class] as usize).max(len);
                let path = if self.classes[peer][class].pick(default, MARGIN, 1, bytes, now) == 1 { Path::Cma } else { Path::Stream };
                self.runs[peer] = Some(Run { path, class, since: now, bytes: 0, sent: 0, done: 0, last: now, draining: false });
                path
            }
        };
        let run = self.runs[peer].as_mut().unwrap_or_else(|| unreachable!());
        run.bytes += len as u64;
        run.sent += 1;
        run.draining = false;
        self.taken[usize::from(path == Path::Cma)] += 1;
        path
    }

    /// A send to `peer` that was picked in a burst ended.
    pub fn sent(&mut self, peer: usize) {
        self.sent_at(peer, crate::localop::monotonic_ns());
    }

    fn sent_at(&mut self, peer: usize, now: u64) {
        if let Some(run) = self.runs[peer].as_mut() {
            run.done += 1;
            run.last = now;
            if run.path == Path::Stream && run.done == run.sent {
                run.draining = true;
                self.any_draining = true;
            }
        }
    }

    /// Ends the time of every burst by the stream whose sends all ended
    /// and whose receiver has copied every byte out, `unread(peer)` being
    /// the bytes of the stream to `peer` not copied out yet. A stream
    /// send ends when its last byte is in the stream, and timed to there a
    /// burst left out what its receiver copied after: up to the stream's
    /// window (2 MiB for messages longer than the stream), and beside a
    /// busy process the time until the receiver had a CPU again. So timed,
    /// bursts of 4 MiB measured the stream as fast as split CMA or faster
    /// (0.175-0.186 ns per byte against 0.184-0.209) where windows of them
    /// ran 1.3x faster by split CMA. Cheap while none waits.
    #[inline]
    pub fn poll_drained(&mut self, unread: impl Fn(usize) -> usize) {
        if self.any_draining {
            self.poll_drained_at(unread, crate::localop::monotonic_ns());
        }
    }

    /// Whether some burst by the stream still waits for its receiver
    /// (see [`Bursts::poll_drained`]).
    #[inline]
    pub fn waiting(&self) -> bool {
        self.any_draining
    }

    fn poll_drained_at(&mut self, unread: impl Fn(usize) -> usize, now: u64) {
        self.any_draining = false;
        for (peer, run) in self.runs.iter_mut().enumerate() {
            if let Some(run) = run.as_mut().filter(|r| r.draining) {
                if unread(peer) == 0 {
                    run.last = now;
                    run.draining = false;
                } else {
                    self.any_draining = true;
                }
            }
        }
    }

    /// A large send to `peer` that is no part of a burst: the burst in
    /// flight, if any, ends.
    pub fn end(&mut self, peer: usize) {
        if let Some(run) = self.runs[peer].take() {
            if run.draining {
                self.any_draining = self.runs.iter().flatten().any(|r| r.draining);
            }
            if run.done == run.sent && !run.draining && run.bytes > 0 && run.last > run.since {
                let way = usize::from(run.path == Path::Cma);
                self.classes[peer][run.class].add(way, (run.last - run.since) as f64 / run.bytes as f64);
                self.last_bytes[peer][run.class] = run.bytes;
                self.timed += 1;
            }
        }
    }

    /// What bursts measured, for the debug line at the end: per peer and
    /// size class, ns per byte of each path.
    pub fn measured(&self) -> String {
        describe_classes(&self.classes, ["stream", "split cma"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// One burst of `n` messages of `len` bytes to peer 1 from `t`, each
    /// sent at `gbps`; the path it took and when it ended.
    fn burst(b: &mut Bursts, t: u64, n: u32, len: usize, gbps: impl Fn(Path) -> f64) -> (Path, u64) {
        let path = b.pick_at(1, len, t);
        for _ in 1..n {
            assert_eq!(b.pick_at(1, len, t), path, "a burst keeps one path");
        }
        let each = (len as f64 / gbps(path)) as u64;
        let mut now = t;
        for _ in 0..n {
            now += each;
            b.sent_at(1, now);
        }
        b.poll_drained_at(|_| 0, now);
        b.end(1);
        (path, now)
    }

    #[test]
    fn bursts_settle_on_the_faster_path_and_explore_the_other() {
        for (fast, slow, len) in [(Path::Stream, Path::Cma, 4 << 20), (Path::Cma, Path::Stream, 1 << 20), (Path::Stream, Path::Cma, 64 << 10)] {
            let mut b = Bursts::new(2);
            let speed = |p: Path| if p == fast { 12.0 } else { 8.0 };
            let (mut t, mut paths) = (0, Vec::new());
            for _ in 0..200 {
                let (p, end) = burst(&mut b, t, 8, len, speed);
                paths.push(p);
                t = end + MS;
            }
            // Settled in turns (SETTLED each), then the faster one but for a
            // rare exploration.
            let later = &paths[8..];
            let slow_ones = later.iter().filter(|&&p| p == slow).count();
            assert!(slow_ones >= 1 && slow_ones * 20 < later.len(), "{fast:?} faster, {len} B: {slow_ones} of {} by {slow:?}", later.len());
            assert_eq!(b.timed, 200);
        }
    }

    #[test]
    fn a_change_of_speed_moves_the_bursts_within_a_second() {
        let len = 4 << 20;
        let mut b = Bursts::new(2);
        // Bursts back to back, the stream 12 GB/s and CMA 8 or the other
        // way round: each burst's path and start.
        let mut t = 0;
        let mut run = |b: &mut Bursts, stream_fast: bool, n: usize| -> Vec<(Path, u64)> {
            (0..n)
                .map(|_| {
                    let at = t;
                    let (p, end) = burst(b, at, 8, len, |p| if (p == Path::Stream) == stream_fast { 12.0 } else { 8.0 });
                    t = end + MS;
                    (p, at)
                })
                .collect()
        };
        assert_eq!(run(&mut b, true, 100).last().map(|r| r.0), Some(Path::Stream));
        let after = run(&mut b, false, 400);
        let change = after[0].1;
        // Turned for good (five bursts in a row by CMA; explorations of
        // the stream may follow) within a tenth of a second.
        let turned = after.windows(5).position(|w| w.iter().all(|r| r.0 == Path::Cma)).expect("never turned to CMA");
        assert!(after[turned].1 - change < 100 * MS, "bursts turned to CMA {} ms after the change", (after[turned].1 - change) / MS);
        assert!(after.iter().rev().take(50).filter(|r| r.0 == Path::Cma).count() >= 45);
    }

    #[test]
    fn a_burst_by_the_stream_is_timed_until_its_receiver_copied_it_out() {
        let len = 4 << 20;
        let mut b = Bursts::new(2);
        // Settle both ways: the stream's sends end at 2 ms, CMA's at 3.
        for i in 0..8u64 {
            let t = i * 100 * MS;
            let path = b.pick_at(1, len, t);
            b.pick_at(1, len, t);
            b.sent_at(1, t + MS);
            b.sent_at(1, t + if path == Path::Stream { 2 * MS } else { 3 * MS });
            if path == Path::Stream {
                // Not drained yet: the time goes on.
                b.poll_drained_at(|_| 1 << 20, t + 2 * MS);
                assert!(b.waiting());
                b.poll_drained_at(|p| if p == 1 { 0 } else { 1 }, t + 5 * MS);
                assert!(!b.waiting());
            }
            b.end(1);
        }
        // The stream's bursts took 5 ms to their receiver's end, CMA's 3:
        // CMA, but for explorations.
        let picks: Vec<_> = (0..5u64).map(|i| burst(&mut b, 1_000 * MS + i * 10 * MS, 2, len, |_| 10.0).0).collect();
        assert!(picks.iter().filter(|&&p| p == Path::Cma).count() >= 4, "{picks:?}");
        // A burst still draining when the next one starts is not recorded.
        let mut t = 10_000 * MS;
        while b.pick_at(1, len, t) != Path::Stream {
            b.sent_at(1, t + MS);
            b.end(1);
            t += 1_100 * MS;
        }
        let timed = b.timed;
        b.sent_at(1, t + MS);
        b.poll_drained_at(|_| 4096, t + 2 * MS);
        b.end(1);
        assert_eq!(b.timed, timed, "a burst its receiver had not copied out was recorded");
        assert!(!b.waiting(), "the next burst does not wait for the old one");
    }

    #[test]
    fn an_unfinished_or_mixed_burst_is_not_recorded() {
        let len = 1 << 20;
        let mut b = Bursts::new(2);
        // Two sends, one ended: not recorded.
        b.pick_at(1, len, 0);
        b.pick_at(1, len, 0);
        b.sent_at(1, MS);
        b.end(1);
        assert_eq!(b.timed, 0);
        // A message of another class starts a new burst; the old one ended.
        b.pick_at(1, len, 10 * MS);
        b.sent_at(1, 11 * MS);
        b.poll_drained_at(|_| 0, 11 * MS);
        b.pick_at(1, 4 * len, 12 * MS);
        assert_eq!(b.timed, 1);
        assert_eq!(b.taken.iter().sum::<u64>(), 4);
    }

    #[test]
    fn equal_paths_keep_split_cma_but_for_explorations() {
        let len = 4 << 20;
        let mut b = Bursts::new(2);
        // While settling the paths take turns, two bursts each.
        let mut seen = [0; 2];
        for i in 0..2 * u64::from(SETTLED) {
            let (p, _) = burst(&mut b, i * 10 * MS, 4, len, |_| 10.0);
            seen[usize::from(p == Path::Cma)] += 1;
        }
        assert_eq!(seen, [SETTLED; 2]);
        let mut t = 100 * MS;
        let kept = (0..5)
            .filter(|_| {
                let (p, end) = burst(&mut b, t, 4, len, |_| 10.0);
                t = end + MS;
                p == Path::Cma
            })
            .count();
        assert!(kept >= 4, "{kept} of 5 bursts by split CMA");
    }
}
