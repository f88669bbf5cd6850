//! Choosing, per large message, between the pipelined stream and Cross
//! Memory Attach, from what recent transfers of that size took.
//!
//! Which path is faster between two local ranks is not a property of the
//! machine alone: it depends on where the two cores sit. On this project's
//! VM the host moves the vCPUs between two placements every few seconds.
//! With the cores sharing a cache (a cache line passes in 27 ns) the
//! stream, where the receiver copies out what the sender has just copied
//! in, moves 1 MiB in 50 us and CMA in 125 us; with the cores apart (168
//! ns) the stream takes 220-470 us while CMA's single kernel copy, which
//! reads the sender's buffer from memory, stays near 100 us. Calibration
//! at start-up sees one placement and fixes a choice that is wrong half of
//! the time.
//!
//! So every rendezvous send from a size class on picks the path whose
//! recent transfers were faster per byte (an exponential average per peer
//! and size class, measured where the copy happens: the receiver times its
//! CMA read (both parts of a message whose sender declined to write half)
//! and returns the time in `FIN`; a message split between the two cores
//! counts its longer part, the receiver's read or the sender's write; the
//! sender times its stream pushes from the start of the first to
//! the end of the last, and adds the last push's time for its last 64 KiB
//! once more, for the receiver's copy of those bytes out of the stream: a
//! push publishes every 64 KiB, so the receiver trails by that much. Timed
//! from the end of the first push instead, a message that fits one push
//! looked free, and 64 KiB messages kept the stream at 9 us one-way on a
//! machine where CMA takes 4; with the whole last push counted again, a
//! 1 MiB message pushed in one go was timed twice over),
//! each path's first transfers of a class taken before any choice, the
//! very first untimed (see [`SETTLED`]),
//! leaving calibration's choice only
//! for a path [`MARGIN`] times faster, and at most every [`EXPLORE_NS`] (20 ms) a send of a
//! class takes the other path, so that a change of placement is seen; less
//! often where the other path's transfers are long, so that exploring
//! costs at most about [`EXPLORE_SHARE`] of the class's time. A
//! receiver that may not read its peer's memory (ptrace rules) answers a
//! CMA request with `CTS`, and the sender stops offering CMA.
//!
//! The two ranks of a pair use one path per size class and situation
//! (below): the lower rank chooses, and the higher one sends the way the
//! lower one's last message of that class came in the same situation (see
//! [`Adapt::heard`]). Each rank choosing on its own measurements mixed
//! the paths, and a mixed pair serialises (one rank reads by CMA while its
//! peer waits to push its stream): 2 ranks, allgather 4 MiB, rank 0 by CMA
//! and rank 1 by stream took 866-1394 us, against 511-970 us by stream
//! both ways and 556-617 us by CMA both ways.
//!
//! What a message competes with changes the answer, so the measurements
//! are kept apart for two situations:
//! - a *lone* message (a broadcast's, a gather's);
//! - one half of an *exchange*: a large message from the same peer comes
//!   at the same time (allgather and alltoall between two ranks, a
//!   pairwise step). Both cores copy then: by the stream each copies both
//!   messages (in and out), by CMA each reads one. Measured together with
//!   lone messages, the choice followed whichever collective ran last: 2
//!   ranks, allgather of 4 MiB ran by the stream at 1056 us in a run of
//!   every collective and 767-825 us by CMA, beside Open MPI's 722-747.
//!
//! An exchange's measurements are clean only when both messages took the
//! same path: a mixed pair is recorded for neither (see [`Adapt::arrived`]),
//! and an exchange explores the other path with two sends in a row, the
//! first of which meets the peer's send on the old path.
//!
//! Above calibration's CMA range every situation starts from CMA (the
//! engine passes it as the calibrated path): calibration compared the
//! stream with one core's CMA read, where a large CMA message is copied
//! by both cores at once (split) and the stream moves only while both
//! ranks are on a CPU.
//!
//! A third, a *burst* (more large sends to the peer already in flight),
//! takes the stream, or CMA where the receiver splits the copy with its
//! waiting sender (see [`Adapt::pick`]): fixed for messages no longer than
//! the pair's stream, for longer ones whichever whole bursts took less
//! time by (see `burst`: a burst's messages are timed together, since
//! their copies meet each other).
//!
//! With more ranks than cores an exchange's message at least as long as
//! the pair's stream always takes CMA, and so does such a lone message, where calibration
//! found one CMA read cheaper in CPU time than the stream's two copies;
//! so does a shorter exchange's message within calibration's CMA range;
//! other shorter exchanges' messages, and all where it did not, take the stream (see
//! [`Adapt::share_cores`]).
//!
//! Off when `GOAL_CMA_MIN`/`GOAL_CMA_MAX` fix the range, or `GOAL_ADAPT=0`.

use crate::burst::Bursts;
use goal_transport::shm::STREAM_CHUNK;

/// Size classes: 64 KiB, 128 KiB, ..., and 16 MiB with everything above.
pub(crate) const CLASSES: usize = 9;
/// The smallest size class, as a power of two.
const FIRST_CLASS_LOG2: u32 = 16;
/// At most this often per peer and class, a send takes the path that looked
/// slower (a count would tax a stream of large messages: each try of the
/// slower path stalls the pipeline behind it).
pub(crate) const EXPLORE_NS: u64 = 20_000_000;
/// Exploring the slower path takes at most about this share of a class's
/// time: a class explores every [`EXPLORE_NS`], or every time its slower
/// path would take for the sends of one exploration divided by this share,
/// whichever is longer. Each try costs up to a whole transfer on the slower
/// path (and an exchange's first try meets its peer's send on the old
/// path): 2 ranks, allgather of 4 MiB, about 850 us an iteration by CMA,
/// explored every 20 ms, paid some 750 us over three iterations each time,
/// 4 % of the time and a fifth of the iterations of a 40 ms measurement.
/// Explored so, a 4 MiB exchange whose stream takes 1.4 ms tries it every
/// 280 ms; never less often than every [`EXPLORE_MAX_NS`], so that a change
/// of placement (every few seconds here) is still seen within a second.
const EXPLORE_SHARE: f64 = 0.01;
/// The longest wait between two explorations of a class (see [`EXPLORE_SHARE`]).
const EXPLORE_MAX_NS: u64 = 1_000_000_000;
/// How long the lower rank's choice binds the higher one after its last
/// message of a class: two exploration periods, so that a pair trading
/// messages keeps one path, and one that stopped leads no more.
pub(crate) const LEAD_NS: u64 = 2 * EXPLORE_NS;
/// Weight of the newest measurement in the average.
const ALPHA: f64 = 0.3;
/// A measurement counts for at most this many times the average: a
/// transfer that was preempted or met the host's other work (this VM: a
/// 256 KiB CMA read now and then took 1.5 ms where it takes 12 us) would
/// otherwise swing the choice to the slower path for hundreds of messages
/// (2 ranks, allgather of 256 KiB: 30-50 us in a third of the runs,
/// against 20-24). A real change of speed still shows within a few
/// messages.
const OUTLIER: f64 = 3.0;
/// Transfers a path takes in a class before the chooser compares it: the
/// first is not timed, the second and third start the average at the
/// faster of them, the fourth joins it like any later one.
/// A path's first transfers are slow for reasons of their own: the stream's
/// pages are faulted in (2 ranks, allgather of 1 MiB: the first exchange
/// by the stream took 1.9-3.1 ms, the second 245-413 us, later ones 140-180,
/// where CMA took 170-270 every time). Averaged from its first time, the
/// stream looked ten times slower than it is, and its next exploration,
/// as rare as it looked slow (see [`EXPLORE_SHARE`]), came after the
/// application's phase had ended. The two paths take turns while they
/// settle: everything is slow in a process' first milliseconds (2 ranks,
/// gather of 1 MiB: 2-4 stream transfers at 220-650 us, then 4 CMA ones at
/// 180-380, where later ones of either took 130-180), and settled one after
/// the other, the stream met the slower start and lost.
const SETTLED: u8 = 4;
/// How long a receiver copying a stream out goes on after the sender's last
/// push, which moved `pushed` bytes in `push_ns`: the time of the push's
/// last chunk. A push publishes its bytes chunk by chunk, so a receiver
/// that copies out as they come trails its sender by about one chunk.
/// Counted as the whole push, a 1 MiB message pushed in one go was timed
/// twice over: 150-220 us by the stream against the 96 us iterations it
/// made of a 2-rank scatter, where CMA's 145 us iterations were chosen.
pub(crate) fn stream_trail_ns(push_ns: u64, pushed: usize) -> u64 {
    if pushed == 0 {
        return 0;
    }
    push_ns * pushed.min(STREAM_CHUNK) as u64 / pushed as u64
}

/// The calibrated path is left only for one this many times faster: where
/// the two are close (large messages with the cores sharing a cache), the
/// noise of single measurements would otherwise flip between them.
const MARGIN: f64 = 1.25;

/// Bursts of messages shorter than this take the stream even where bursts
/// go by CMA (see [`Adapt::burst_by_cma`]): in the smallest size class a
/// CMA read's fixed cost (pinning each page of the sender's buffer) is a
/// larger share of it than the two copies of the stream, which stay in the
/// cores' caches (the stream holds sixteen such messages, so the sender
/// runs ahead of a receiver that is off its CPU).
/// 2 ranks, windows of 64 KiB (`goal_p2p --tests bandwidth`, alternated
/// with the build before): quiet 8.1 -> 22.9 GB/s, under 100 us detours
/// every 1 ms 6.2 -> 15.8, beside a busy process 6.8 -> 20.7 in 8 of 10
/// rounds and 1.1 and 3.5 in the other two; 256 KiB and up, where split
/// CMA stays, unchanged (`docs/measurements/burst-stream-2026-12-04`).
/// Those two rounds, and every such collapse since, were the host's: its
/// vCPUs placed apart (see [`Adapt::stream_slow`], which sends the class
/// by CMA then).
const BURST_CMA_MIN: usize = 128 << 10;

/// One of the two paths for a large message between local ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    Stream,
    Cma,
}

/// What else moves between the pair while a message goes (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Situation {
    /// Nothing large the other way, no other large send to the peer.
    Lone,
    /// A large message from the peer comes at the same time.
    Exchange,
    /// Other large sends to the peer are still in flight.
    Burst,
}

/// Per peer and size class: ns per byte of each of two ways (0: not
/// measured yet) and when the slower one was last tried. The paths of
/// [`Adapt`] (index 0 the stream, 1 CMA), and the stream's windows of
/// `window::Windows`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Class {
    ns_per_byte: [f64; 2],
    /// Transfers seen each way (up to [`SETTLED`], see [`Class::add`]).
    seen: [u8; 2],
    explored: u64,
    /// Sends left in the current exploration of the slower way (see
    /// [`EXCHANGE_EXPLORE`]).
    exploring: u8,
    /// Transfers each way takes before the two are compared; 0:
    /// [`SETTLED`] (see [`Class::settling_after`]).
    settle: u8,
}

impl Class {
    /// A class whose ways are compared after `n` transfers each (at least
    /// 2: the first is not timed) rather than [`SETTLED`]: for transfers
    /// timed whole over many messages, steadier than one message's.
    pub(crate) fn settling_after(n: u8) -> Class {
        Class { settle: n.max(2), ..Class::default() }
    }

    fn settled(&self) -> u8 {
        if self.settle == 0 { SETTLED } else { self.settle }
    }

    /// Which way (0 or 1) a transfer of `len` bytes takes at time `now`
    /// (ns): while both settle, they take turns (see [`SETTLED`]); then
    /// `default`, unless the other is `margin` times faster per byte, and
    /// every so often the slower one, `tries` times in a row (see
    /// [`explore_every`]).
    pub(crate) fn pick(&mut self, default: usize, margin: f64, tries: u8, len: usize, now: u64) -> usize {
        let settled = self.settled();
        if self.seen[0] < settled || self.seen[1] < settled {
            return usize::from(self.seen[1] < self.seen[0]);
        }
        let best = if self.ns_per_byte[1 - default] * margin < self.ns_per_byte[default] { 1 - default } else { default };
        if self.exploring > 0 {
            self.exploring -= 1;
            1 - best
        } else if now.saturating_sub(self.explored) >= explore_every(self.ns_per_byte[0].max(self.ns_per_byte[1]), len, tries) {
            self.explored = now;
            self.exploring = tries - 1;
            1 - best
        } else {
            best
        }
    }

    /// A transfer took `ns_per_byte` way `way`: the first is not counted,
    /// the next two start the average at the faster of them, later ones
    /// join it ([`ALPHA`]), each at most [`OUTLIER`] times the average.
    pub(crate) fn add(&mut self, way: usize, ns_per_byte: f64) {
        let settled = self.settled();
        let (seen, v) = (&mut self.seen[way], &mut self.ns_per_byte[way]);
        let before = *seen;
        *seen = (before + 1).min(settled);
        *v = match before {
            0 => return,
            1 => ns_per_byte,
            b if b + 1 < settled => v.min(ns_per_byte),
            _ => (1.0 - ALPHA) * *v + ALPHA * ns_per_byte.min(OUTLIER * *v),
        };
    }

    /// Both ways' ns per byte after their `names` ("stream 0.031 cma -",
    /// `-` where unmeasured), for the debug line at the end; `None` while
    /// neither is measured.
    pub(crate) fn describe(&self, names: [&str; 2]) -> Option<String> {
        let [a, b] = self.ns_per_byte;
        let f = |v: f64| if v == 0.0 { "-".to_string() } else { format!("{v:.3}") };
        (a != 0.0 || b != 0.0).then(|| format!("{} {} {} {}", names[0], f(a), names[1], f(b)))
    }
}

/// Sends of an exchange's class that explore the slower path in a row. The
/// lower rank's first one meets the higher rank's send on the old path (it
/// follows only what it has heard, see [`Adapt::heard`]): a mixed pair,
/// whose time is recorded for neither path (see [`Adapt::arrived`]); the
/// second one is the pair's on the new path.
const EXCHANGE_EXPLORE: u8 = 2;

/// The path of the lower rank's last message of a class, and when it came
/// (ns; see [`Adapt::heard`]).
type Lead = (Path, u64);

/// A send's path, from [`Adapt::pick_send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Picked {
    /// The path it takes.
    pub path: Path,
    /// Whether it joined a burst timed whole (see `burst`).
    pub timed_burst: bool,
}

/// The chooser (see the module documentation).
pub(crate) struct Adapt {
    /// Sizes from here on are chosen adaptively (`usize::MAX`: off).
    from: usize,
    /// Per peer: lone messages' classes, then exchanges'.
    classes: Vec<[[Class; CLASSES]; 2]>,
    /// Per lower-ranked peer, situation (lone, exchange) and size class:
    /// the path of its last message to us in that situation and when it
    /// came, which our sends to it in the same situation follow for
    /// [`LEAD_NS`].
    led: Vec<[[Option<Lead>; CLASSES]; 2]>,
    /// Per peer and size class: the path of the latest large message that
    /// came from it, to tell a mixed exchange (see [`Adapt::arrived`]).
    arrived: Vec<[Option<Path>; CLASSES]>,
    /// A receiver refused CMA: never offer it again.
    cma_denied: bool,
    /// Bursts go by CMA: an idle receiver then splits each message with its
    /// waiting sender (the engine's `SPLIT_MIN`), so both cores copy.
    burst_cma: bool,
    /// Bursts of messages longer than this (a pair's stream) take the
    /// path whole bursts measured (see `burst`).
    burst_measured_above: usize,
    /// Bursts' paths, measured per burst (see `burst`).
    pub bursts: Bursts,
    /// More ranks than cores (see [`Adapt::share_cores`]): exchanges take
    /// one path unmeasured, and lone messages as long as a stream CMA
    /// where calibration found it faster somewhere.
    shared: Option<Shared>,
    /// Sends that took each path, for the debug line at the end: all, and
    /// those that were half of an exchange.
    pub taken: [u64; 2],
    pub taken_in_exchange: [u64; 2],
    /// Of those by the stream, sends to a rank waiting on this CPU (see
    /// [`Adapt::sent_to_cpu_mate`]).
    pub to_cpu_mates: u64,
    /// Messages of bursts of the smallest class sent by CMA because the
    /// stream measured slow (see [`Adapt::stream_slow`]).
    pub bursts_off_stream: u64,
    /// The calibrated path is left for one this many times faster
    /// ([`MARGIN`] unless [`Adapt::with_margin`] says otherwise).
    margin: f64,
}

/// How long a class waits between explorations (see [`EXPLORE_SHARE`]),
/// given its slower path's ns per byte, the message size and the sends of
/// one exploration.
fn explore_every(slower_ns_per_byte: f64, len: usize, tries: u8) -> u64 {
    let cost = slower_ns_per_byte * len as f64 * f64::from(tries);
    ((cost / EXPLORE_SHARE) as u64).clamp(EXPLORE_NS, EXPLORE_MAX_NS)
}

/// Per peer and size class of `classes` with a measurement, both ways'
/// ns per byte after their `names` ("rank 1 4096 KiB: long 0.052 narrow
/// 0.036; ..."), for the choosers' debug lines.
pub(crate) fn describe_classes(classes: &[[Class; CLASSES]], names: [&str; 2]) -> String {
    let mut out = Vec::new();
    for (peer, classes) in classes.iter().enumerate() {
        for (k, c) in classes.iter().enumerate() {
            if let Some(d) = c.describe(names) {
                out.push(format!("rank {peer} {} KiB: {d}", 64u64 << k));
            }
        }
    }
    out.join("; ")
}

/// [`describe_classes`] for classes kept per situation, lone messages then
/// exchanges ("rank 1 exchange 64 KiB: eager 0.051 rendezvous 0.130"),
/// the classes' sizes doubling from `first_kib`.
pub(crate) fn describe_situations<const N: usize>(classes: &[[[Class; N]; 2]], names: [&str; 2], first_kib: u64) -> String {
    let mut out = Vec::new();
    for (peer, sits) in classes.iter().enumerate() {
        for (x, classes) in sits.iter().enumerate() {
            for (k, c) in classes.iter().enumerate() {
                if let Some(d) = c.describe(names) {
                    let what = if x == 1 { "exchange" } else { "lone" };
                    out.push(format!("rank {peer} {what} {} KiB: {d}", first_kib << k));
                }
            }
        }
    }
    out.join("; ")
}

/// The size class of a message of `len` bytes (see [`CLASSES`]).
pub(crate) fn class_of(len: usize) -> usize {
    let log2 = usize::BITS - 1 - len.max(1).leading_zeros();
    (log2.saturating_sub(FIRST_CLASS_LOG2) as usize).min(CLASSES - 1)
}

fn index(p: Path) -> usize {
    match p {
        Path::Stream => 0,
        Path::Cma => 1,
    }
}

/// More ranks than cores (see [`Adapt::share_cores`]).
#[derive(Debug, Clone, Copy)]
struct Shared {
    /// A pair's stream bytes.
    stream: usize,
    /// Calibration found one CMA read cheaper than the stream's two copies.
    cma_cheaper: bool,
    /// Calibration's CMA range: where one CMA read beat the stream's two
    /// overlapped copies in latency, so certainly in CPU time.
    faster: (usize, usize),
}

impl Shared {
    /// Whether an exchange's message of `len` bytes goes by CMA.
    fn exchange_by_cma(&self, len: usize) -> bool {
        self.cma_cheaper && (len >= self.stream || (self.faster.0..=self.faster.1).contains(&len))
    }
}

impl Adapt {
    /// A chooser for `peers` peers, for sizes from `from` on.
    pub fn new(peers: usize, from: usize) -> Adapt {
        let classes = vec![[[Class::default(); CLASSES]; 2]; peers];
        Adapt { from, classes, led: vec![[[None; CLASSES]; 2]; peers], arrived: vec![[None; CLASSES]; peers], cma_denied: false, burst_cma: false, burst_measured_above: usize::MAX, bursts: Bursts::new(peers), shared: None, taken: [0; 2], taken_in_exchange: [0; 2], to_cpu_mates: 0, bursts_off_stream: 0, margin: MARGIN }
    }

    /// The same chooser, leaving the calibrated path only for one `margin`
    /// times faster: for a choice whose two measurements are not alike
    /// (the engine's fused receives: the stream timed with its combine,
    /// CMA without).
    pub fn with_margin(self, margin: f64) -> Adapt {
        Adapt { margin, ..self }
    }

    /// Sends bursts by CMA (`on`: messages split between the two cores) or
    /// by the stream; those of messages longer than `stream` (a pair's
    /// stream bytes) by whichever whole bursts measured faster.
    pub fn burst_by_cma(&mut self, on: bool, stream: usize) {
        self.burst_cma = on;
        self.burst_measured_above = stream;
    }

    /// More ranks than cores, with streams of `stream_bytes` (`None`: not
    /// so), `cma_cheaper` where calibration found one CMA read cheaper in
    /// CPU time than the stream's two copies between two cores (see
    /// `Thresholds::cma_shared`): every exchange's message of `stream_bytes`
    /// or more goes by CMA, and every shorter one by the stream, without measuring
    /// or exploring. Every core copies then
    /// anyway, and CMA copies each message once where the stream copies it
    /// twice, and the receiver reads it whether its sender is on a CPU or
    /// not, where a stream of more than its ring's bytes moves only while
    /// both ranks run at once (which two ranks sharing a CPU never do).
    /// Measured, the two paths' times there mix every rank's preemptions
    /// and the chooser kept exploring the stream: 4 ranks on 2 CPUs,
    /// alltoall of 1 MiB, a tenth of the messages went by the stream.
    ///
    /// So does a lone message of `stream_bytes` (a pair's stream) or
    /// more: its sender cannot finish pushing it while its receiver is
    /// off the CPU. A shorter one keeps the stream where it measures
    /// faster, for there the sender completes without its receiver (4
    /// ranks on 2 CPUs, bcast of 256 KiB: 34-45 us by the chooser, 54-60
    /// by CMA). 4 ranks on 2 CPUs, 1 MiB, three alternations of
    /// `goal_coll`: scatter 355-374 -> 231-257 us (its root sent 169 of
    /// 231 messages by the stream), bcast 285-307 -> 239-265, gather
    /// unchanged.
    ///
    /// Both rest on CMA's one copy costing less than the stream's two.
    /// Where it costs more (not `cma_cheaper`), exchanges take the stream, unmeasured for the same
    /// reason, and lone messages follow their measurements at every size
    /// (see `Engine::share_cores` for what that gained).
    ///
    /// An exchange's message shorter than a pair's stream takes the stream
    /// where CMA is no more than cheaper: its sender writes it all and goes
    /// on while its receiver is away, and the two copies stay in the caches.
    /// 4 ranks on 2 CPUs, where a CMA read cost about the stream's two
    /// copies, 4 rounds of the collective benchmark, every exchange by CMA
    /// against every one by the stream: 64-256 KiB 1.04-1.38x the time
    /// (allgather of 64 KiB 0.97x), 1 MiB allgather 0.71x, alltoall 0.87x;
    /// one run, and in another two settings that sent those messages
    /// alike came out 0.55-0.67x apart (docs/measurements/shared-work-2026-12-06).
    ///
    /// But within calibration's CMA range (`faster`), where one read beat
    /// the stream's two copies in latency though those overlap in time,
    /// the read costs a fraction of them in CPU time, and such a message
    /// takes CMA too. On an Intel Xeon VM whose calibration put CMA ahead
    /// from 8 KiB to 1 MiB, 4 ranks on 2 CPUs, eight alternations of
    /// `goal_coll`: alltoall of 64 KiB 63.8 -> 35.1 us (Open MPI with its
    /// single copy 34), allgather 46.9 -> 33.7, allreduce 47.1 -> 30.5, 256
    /// KiB 0.75-0.93x (docs/measurements/short-exchanges-2026-12-08). Where
    /// calibration found no such range (that AMD EPYC's), nothing changes.
    pub fn share_cores(&mut self, stream_bytes: Option<usize>, cma_cheaper: bool, faster: (usize, usize)) {
        self.shared = stream_bytes.map(|stream| Shared { stream, cma_cheaper, faster });
    }

    /// The path for a send of `len` bytes to `peer`, or `None` when the
    /// size is not chosen adaptively (the calibrated range decides).
    /// `calibrated` is what calibration would take. In a
    /// [`Situation::Burst`] the message takes the stream whatever the
    /// measurements say, where the sender's copies and the receiver's
    /// overlap (by CMA the receiver alone copies one message after the
    /// other: a window of 64 KiB messages streamed at 8.4 GB/s by CMA and
    /// 11.9 by the stream on a machine where one alone takes 4 us by CMA
    /// and 9 by the stream); but CMA with [`burst_by_cma`](Self::burst_by_cma),
    /// where the receiver splits
    /// each message with its sender and both cores copy once (2 ranks,
    /// windows of 1 MiB messages: 9.3 GB/s by the stream, 12.0 by split
    /// CMA), whatever calibration's CMA range: calibration times one
    /// message copied by one core, which a burst's split copies are not.
    /// Until 2026-12-07 bursts split only from that range's lower bound up,
    /// and on a host whose CMA read of a MiB took 76 us against the
    /// stream's two copies' 52 between its vCPUs, calibration found no
    /// range and windows of 256 KiB and 1 MiB sends all took the stream at
    /// 8.2-8.4 GB/s, where split CMA ran 14.3-15.3 and 12.5-13.7 (three
    /// alternations; Open MPI without single copy 9.3-10.3;
    /// docs/measurements/cpu-mates-2026-12-07). Above calibration's range,
    /// bursts took the stream until 2026-11-30: windows of 4 and 16 MiB
    /// then went 9.2 and 8.6 GB/s by the stream, 12.7 and 11.3 by split
    /// CMA, and beside a busy process 4.1 and 3.8 against 7.0 and 8.7, for
    /// the stream moves only while both ranks are on a CPU; but on the host
    /// of 2026-12-06, in the state where a CMA read costs four `memcpy`s,
    /// 10.1-13.7 and 9.3-12.8 by the stream against 8.0-9.4 and 9.5-9.8 by
    /// split CMA. So bursts of
    /// messages longer than a pair's stream take the path whole bursts
    /// measured (see `burst`). Bursts of the smallest class take the
    /// stream all the same (see [`BURST_CMA_MIN`]), unless the stream
    /// measured slower than CMA for lone messages of that class (see
    /// [`stream_slow`](Self::stream_slow)). Otherwise it goes the way
    /// that was faster in its situation.
    pub fn pick(&mut self, peer: usize, len: usize, calibrated: Path, situation: Situation) -> Option<Path> {
        self.pick_send(peer, len, calibrated, situation).map(|p| p.path)
    }

    /// [`Adapt::pick`], telling also whether the send joined a burst that
    /// is timed whole: its end is then to be reported ([`Bursts::sent`]).
    pub fn pick_send(&mut self, peer: usize, len: usize, calibrated: Path, situation: Situation) -> Option<Picked> {
        if len < self.from {
            return None;
        }
        let now = crate::localop::monotonic_ns();
        if situation != Situation::Burst {
            self.bursts.end(peer);
        }
        let burst_cma = self.burst_cma && !self.cma_denied;
        let timed_burst = situation == Situation::Burst && burst_cma && len > self.burst_measured_above;
        let p = match situation {
            Situation::Burst if timed_burst => self.bursts.pick(peer, len),
            Situation::Burst if burst_cma && (len >= BURST_CMA_MIN || self.stream_slow(peer, len)) => {
                if len < BURST_CMA_MIN {
                    self.bursts_off_stream += 1;
                }
                Path::Cma
            }
            Situation::Burst => Path::Stream,
            Situation::Lone if self.shared.is_some_and(|s| s.cma_cheaper && len >= s.stream) && !self.cma_denied => Path::Cma,
            Situation::Exchange if self.shared.is_some_and(|s| s.exchange_by_cma(len)) && !self.cma_denied => Path::Cma,
            Situation::Exchange if self.shared.is_some() => Path::Stream,
            Situation::Lone => self.choose(peer, len, calibrated, false, now)?,
            Situation::Exchange => self.choose(peer, len, calibrated, true, now)?,
        };
        self.taken[index(p)] += 1;
        if situation == Situation::Exchange {
            self.taken_in_exchange[index(p)] += 1;
        }
        Some(Picked { path: p, timed_burst })
    }

    /// Counts a send that the engine put on the stream, unchosen, for its
    /// receiver waits on the sender's CPU (`exchange`: half of an
    /// exchange; see `Engine::choose_offer`).
    pub fn sent_to_cpu_mate(&mut self, exchange: bool) {
        self.taken[index(Path::Stream)] += 1;
        self.taken_in_exchange[index(Path::Stream)] += u64::from(exchange);
        self.to_cpu_mates += 1;
    }

    /// Whether lone messages of `len`'s size class to `peer` measured
    /// slower per byte by the stream than by CMA, both paths settled: a
    /// burst of the smallest class then goes by CMA too (see
    /// [`BURST_CMA_MIN`]). The stream between two vCPUs that the host has
    /// placed apart (a cache line passing in 200-300 ns instead of 27)
    /// moves 64 KiB windows at 2.3-4.7 GB/s where split CMA keeps 9-11;
    /// its lone 64 KiB messages then measured 0.35-1.08 ns per byte
    /// against CMA's 0.14-0.23, and 0.08-0.11 against 0.20-0.22 with the
    /// cores close, where bursts by the stream read 17-22 GB/s. The
    /// lone class keeps measuring the stream meanwhile (an exploration
    /// every [`EXPLORE_NS`]), so bursts return to it once the cores are
    /// close again.
    fn stream_slow(&self, peer: usize, len: usize) -> bool {
        let c = &self.classes[peer][0][class_of(len)];
        let [stream, cma] = c.ns_per_byte;
        c.seen[0] >= SETTLED && c.seen[1] >= SETTLED && stream > cma
    }

    /// [`Adapt::pick`] at time `now` (ns), for a lone message or an
    /// exchange's.
    fn choose(&mut self, peer: usize, len: usize, calibrated: Path, exchange: bool, now: u64) -> Option<Path> {
        if len < self.from {
            return None;
        }
        if self.cma_denied {
            return Some(Path::Stream);
        }
        if let Some((p, when)) = self.led[peer][exchange as usize][class_of(len)] {
            if now.saturating_sub(when) < LEAD_NS {
                return Some(p);
            }
        }
        let tries = if exchange { EXCHANGE_EXPLORE } else { 1 };
        let c = &mut self.classes[peer][exchange as usize][class_of(len)];
        Some(match c.pick(index(calibrated), self.margin, tries, len, now) {
            0 => Path::Stream,
            _ => Path::Cma,
        })
    }

    /// A send of `len` bytes to `peer` took `ns` on `path`, as half of an
    /// exchange or not (a burst's sends count as lone ones).
    ///
    /// Half of an exchange counts only if the message that came the other
    /// way took the same path (see [`Adapt::arrived`]).
    pub fn record(&mut self, peer: usize, len: usize, path: Path, exchange: bool, ns: u64) {
        if len < self.from || len == 0 || ns == 0 {
            return;
        }
        if exchange && self.arrived[peer][class_of(len)].is_some_and(|p| p != path) {
            return;
        }
        self.classes[peer][exchange as usize][class_of(len)].add(index(path), ns as f64 / len as f64);
    }

    /// A message of `len` bytes came from `peer`, a lower rank, by `path`,
    /// as half of an exchange or not (its sender's judgment): sends of that
    /// size class to it in the same situation go the same way for
    /// [`LEAD_NS`].
    ///
    /// One path per class for both situations mixed the pair's exchanges
    /// where one schedule has both: in a 2-rank Rabenseifner allreduce of
    /// 1 MiB the lower rank sends its reduce-scatter half as an exchange
    /// (by CMA) and its allgather half as a lone message (by the stream),
    /// and the higher rank followed each with the other's path; every
    /// allgather step then met a CMA read with a stream push, which
    /// serialises (205 us an iteration, against 163 with the calibrated
    /// choice, `GOAL_ADAPT=0`).
    pub fn heard(&mut self, peer: usize, len: usize, path: Path, exchange: bool) {
        self.heard_at(peer, len, path, exchange, crate::localop::monotonic_ns());
    }

    /// [`Adapt::heard`] at time `now` (ns).
    fn heard_at(&mut self, peer: usize, len: usize, path: Path, exchange: bool, now: u64) {
        if len >= self.from {
            self.led[peer][exchange as usize][class_of(len)] = Some((path, now));
        }
    }

    /// A large message of `len` bytes came from `peer` by `path`. An
    /// exchange whose two messages took different paths serialises (one
    /// rank reads by CMA while its peer waits to push its stream, see the
    /// module documentation) and is recorded for neither: measured, the
    /// lower rank's exploration of CMA in a 4 MiB exchange met the higher
    /// rank's stream and took 0.20-0.29 ns per byte, so CMA never looked
    /// faster than the stream's 0.19-0.25 (2 ranks, alltoall of 4 MiB
    /// after 1 MiB: 1082 us by the stream, against 805-815 us by CMA).
    pub fn arrived(&mut self, peer: usize, len: usize, path: Path) {
        if len >= self.from {
            self.arrived[peer][class_of(len)] = Some(path);
        }
    }

    /// What the chooser has measured, for the debug line at the end: per
    /// peer, situation and size class with a measurement, ns per byte of
    /// each path (`-` where unmeasured).
    pub fn measured(&self) -> String {
        describe_situations(&self.classes, ["stream", "cma"], 64)
    }

    /// Whether a receiver refused to read this rank's memory (see
    /// [`deny_cma`](Self::deny_cma)).
    pub fn cma_denied(&self) -> bool {
        self.cma_denied
    }

    /// A receiver may not read this rank's memory.
    pub fn deny_cma(&mut self) {
        self.cma_denied = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    /// Calibration found no size at which CMA's latency beat the stream's.
    const NO_RANGE: (usize, usize) = (usize::MAX, 0);

    /// Records a transfer of `ns`; while the path is not settled in its
    /// class (see [`SETTLED`]), as many as settle it, all taking `ns`.
    fn rec(a: &mut Adapt, peer: usize, len: usize, path: Path, exchange: bool, ns: u64) {
        let seen = |a: &Adapt| a.classes[peer][exchange as usize][class_of(len)].seen[index(path)];
        loop {
            let before = seen(a);
            a.record(peer, len, path, exchange, ns);
            if !(before < seen(a) && seen(a) < SETTLED) {
                return;
            }
        }
    }

    #[test]
    fn a_path_is_compared_from_its_fastest_early_transfers_the_first_untimed() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 1 << 20;
        let at = |a: &mut Adapt| a.choose(1, len, Path::Cma, true, 0);
        // The paths take turns. The stream's first exchange faults its
        // pages in: 2 ms.
        let (stream, cma) = ([2_000_000, 300_000, 150_000, 160_000], [400_000, 220_000, 220_000, 230_000]);
        for i in 0..4 {
            assert_eq!(at(&mut a), Some(Path::Stream), "transfer {i}");
            a.record(1, len, Path::Stream, true, stream[i]);
            assert_eq!(at(&mut a), Some(Path::Cma), "transfer {i}");
            a.record(1, len, Path::Cma, true, cma[i]);
        }
        // The stream started at 150 us, not 2 ms nor 300: clearly faster.
        let c = a.classes[1][1][class_of(len)];
        assert!(c.ns_per_byte[0] * (len as f64) < 160_000.0, "{:?}", c.ns_per_byte);
        let picks: Vec<_> = (0..5).map(|i| a.choose(1, len, Path::Cma, true, i)).collect();
        assert!(picks.iter().filter(|&&p| p == Some(Path::Stream)).count() >= 4, "{picks:?}");
    }

    #[test]
    fn tries_both_then_follows_the_faster_and_explores() {
        let mut a = Adapt::new(2, 64 << 10);
        assert_eq!(a.pick(1, 1000, Path::Stream, Situation::Lone), None, "below the adaptive range");
        let len = 1 << 20;
        let at = |a: &mut Adapt, peer, len, t| a.choose(peer, len, Path::Stream, false, t);
        assert_eq!(at(&mut a, 1, len, 0), Some(Path::Stream));
        rec(&mut a, 1, len, Path::Stream, false, 400_000);
        assert_eq!(at(&mut a, 1, len, 0), Some(Path::Cma));
        rec(&mut a, 1, len, Path::Cma, false, 100_000);
        // One try of the slower path per period (here the stream's 400 us
        // over EXPLORE_SHARE, 40 ms), whatever the count.
        let picks: Vec<Path> = (0..100).filter_map(|i| at(&mut a, 1, len, 45 * MS + i * MS / 10)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == Path::Stream).count(), 1, "{picks:?}");
        // The placement changes: the stream becomes fast, and is followed.
        for _ in 0..8 {
            rec(&mut a, 1, len, Path::Stream, false, 50_000);
        }
        assert_eq!(at(&mut a, 1, len, 56 * MS), Some(Path::Stream));
        // Other peers and sizes keep their own measurements.
        assert_eq!(at(&mut a, 0, len, 56 * MS), Some(Path::Stream));
        assert_eq!(at(&mut a, 1, 64 << 10, 56 * MS), Some(Path::Stream));
    }

    #[test]
    fn a_burst_takes_the_stream_and_a_lone_message_the_faster_path() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 64 << 10;
        rec(&mut a, 1, len, Path::Stream, false, 9_000);
        rec(&mut a, 1, len, Path::Cma, false, 4_000);
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
        // Alone, CMA (but for at most one exploration of the stream).
        let lone: Vec<_> = (0..3).map(|_| a.pick(1, len, Path::Cma, Situation::Lone)).collect();
        assert!(lone.iter().filter(|&&p| p == Some(Path::Cma)).count() >= 2, "{lone:?}");
        assert_eq!(a.pick(1, 1000, Path::Cma, Situation::Burst), None, "below the adaptive range the calibrated range decides");
        // Where messages split between the cores, a burst goes by CMA,
        // unless a receiver refused it, from the second size class on (see
        // BURST_CMA_MIN).
        a.burst_by_cma(true, 1 << 20);
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Cma), "the stream measured slower: CMA");
        assert_eq!(a.bursts_off_stream, 1);
        let long = BURST_CMA_MIN;
        assert_eq!(a.pick(1, long, Path::Cma, Situation::Burst), Some(Path::Cma));
        // Whatever calibration's CMA range (its one core's copy is not a
        // burst's split one); a burst no longer than the stream is not timed.
        let picked = a.pick_send(1, long, Path::Stream, Situation::Burst);
        assert_eq!(picked, Some(Picked { path: Path::Cma, timed_burst: false }), "outside calibration's CMA range");
        // Longer than the pair's stream: the path whole bursts measured,
        // in calibration's range or not.
        let longer = 4 << 20;
        let outside = a.pick_send(1, longer, Path::Stream, Situation::Burst).expect("in the adaptive range");
        assert!(outside.timed_burst, "outside calibration's CMA range, timed all the same");
        a.bursts.end(1);
        let first = a.pick_send(1, longer, Path::Cma, Situation::Burst).expect("in the adaptive range");
        assert!(first.timed_burst);
        assert_eq!(first.path, a.bursts.pick(1, longer), "the burst's own path");
        a.deny_cma();
        assert_eq!(a.pick(1, long, Path::Cma, Situation::Burst), Some(Path::Stream));
    }

    #[test]
    fn a_burst_of_the_smallest_class_streams_while_the_stream_measures_faster() {
        // Lone 64 KiB messages as measured with the vCPUs close (stream
        // 0.08 ns per byte, CMA 0.2), then apart (stream 0.8).
        let len = 64 << 10;
        let ns = |per_byte: f64| (per_byte * len as f64) as u64;
        let mut a = Adapt::new(2, 64 << 10);
        a.burst_by_cma(true, 1 << 20);
        // Unsettled, the stream.
        rec(&mut a, 1, len, Path::Stream, false, ns(0.8));
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
        let mut a = Adapt::new(2, 64 << 10);
        a.burst_by_cma(true, 1 << 20);
        rec(&mut a, 1, len, Path::Stream, false, ns(0.08));
        rec(&mut a, 1, len, Path::Cma, false, ns(0.2));
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
        // Stream transfers at `per_byte` until a burst takes `want`: how many.
        let until = |a: &mut Adapt, per_byte: f64, want: Path| {
            (1..=10).find(|_| {
                a.record(1, len, Path::Stream, false, ns(per_byte));
                a.pick(1, len, Path::Cma, Situation::Burst) == Some(want)
            })
        };
        // The cores move apart: a few slower stream transfers turn bursts
        // to CMA (none counted three times the average at once), and fast
        // ones back, as the lone class explores the stream.
        let turned = until(&mut a, 0.8, Path::Cma);
        assert!(turned.is_some_and(|i| i <= 6), "turned to CMA after {turned:?} slow transfers");
        let back = until(&mut a, 0.08, Path::Stream);
        assert!(back.is_some_and(|i| i <= 6), "back to the stream after {back:?} fast transfers");
        // Not where bursts do not go by CMA at all, nor past a refusal.
        a.burst_by_cma(false, 1 << 20);
        for _ in 0..10 {
            a.record(1, len, Path::Stream, false, ns(0.8));
        }
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
        a.burst_by_cma(true, 1 << 20);
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Cma));
        a.deny_cma();
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
    }

    #[test]
    fn a_wider_margin_keeps_the_calibrated_path_longer() {
        // A fused receive of 1 MiB: the stream measured against a CMA read
        // 1.5 times (the vCPUs close, an exchange) and 4.5 times faster
        // (apart), with the engine's margin of 3.
        let len = 1 << 20;
        let picks = |stream: u64, cma: u64| {
            let mut a = Adapt::new(2, 512 << 10).with_margin(3.0);
            rec(&mut a, 1, len, Path::Stream, false, stream);
            rec(&mut a, 1, len, Path::Cma, false, cma);
            (0..10).filter(|&i| a.choose(1, len, Path::Stream, false, i) == Some(Path::Cma)).count()
        };
        assert!(picks(120_000, 80_000) <= 1, "close: the stream (but for an exploration)");
        assert!(picks(480_000, 105_000) >= 9, "apart: CMA (but for an exploration)");
        // adapt's own margin would have left the stream at 1.5 already.
        let mut a = Adapt::new(2, 512 << 10);
        rec(&mut a, 1, len, Path::Stream, false, 120_000);
        rec(&mut a, 1, len, Path::Cma, false, 80_000);
        assert!((0..10).filter(|&i| a.choose(1, len, Path::Stream, false, i) == Some(Path::Cma)).count() >= 9);
    }

    #[test]
    fn a_mixed_exchange_is_recorded_for_neither_path() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 4 << 20;
        let mb = len as u64 / 1000; // ns for 0.001 ns per byte
        let at = |a: &mut Adapt, t| a.choose(1, len, Path::Stream, true, t);
        rec(&mut a, 1, len, Path::Stream, true, 1000 * mb);
        // Our CMA message met the peer's stream: not a time of CMA's.
        a.arrived(1, len, Path::Stream);
        rec(&mut a, 1, len, Path::Cma, true, 500 * mb);
        assert_eq!(at(&mut a, 0), Some(Path::Cma), "CMA is still unmeasured, so it is tried");
        // Both by CMA: recorded, and slower than the stream.
        a.arrived(1, len, Path::Cma);
        rec(&mut a, 1, len, Path::Cma, true, 2000 * mb);
        assert_eq!(at(&mut a, 0), Some(Path::Stream));
        // A lone message's time does not depend on what comes the other way.
        a.arrived(1, len, Path::Stream);
        rec(&mut a, 1, len, Path::Stream, false, 1000 * mb);
        rec(&mut a, 1, len, Path::Cma, false, 500 * mb);
        assert_eq!(a.choose(1, len, Path::Stream, false, 0), Some(Path::Cma));
    }

    #[test]
    fn an_exchange_explores_with_two_sends_in_a_row() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 4 << 20;
        for exchange in [false, true] {
            rec(&mut a, 1, len, Path::Stream, exchange, 2_000_000);
            rec(&mut a, 1, len, Path::Cma, exchange, 1_000_000);
            // Past the first exploration period (the stream's 2 ms per try over
            // EXPLORE_SHARE: 200 ms alone, 400 ms in an exchange).
            let picks: Vec<Path> = (0..4).filter_map(|i| a.choose(1, len, Path::Cma, exchange, 500 * MS + i)).collect();
            let tries = if exchange { 2 } else { 1 };
            let mut want = vec![Path::Stream; tries];
            want.resize(4, Path::Cma);
            assert_eq!(picks, want, "exchange {exchange}");
        }
    }

    #[test]
    fn an_exchange_keeps_its_own_measurements() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 4 << 20;
        // Lone messages of this size were faster by the stream...
        rec(&mut a, 1, len, Path::Stream, false, 1_000_000);
        rec(&mut a, 1, len, Path::Cma, false, 2_000_000);
        // ...exchanges by CMA, where the stream copies both messages on each core.
        rec(&mut a, 1, len, Path::Stream, true, 2_000_000);
        rec(&mut a, 1, len, Path::Cma, true, 1_000_000);
        assert_eq!(a.choose(1, len, Path::Stream, false, 1), Some(Path::Stream));
        assert_eq!(a.choose(1, len, Path::Stream, true, 2), Some(Path::Cma));
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
    }

    #[test]
    fn one_slow_transfer_does_not_swing_the_choice() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 256 << 10;
        for _ in 0..5 {
            rec(&mut a, 1, len, Path::Stream, true, 26_000);
            rec(&mut a, 1, len, Path::Cma, true, 12_000);
        }
        // One CMA read preempted for 1.5 ms.
        rec(&mut a, 1, len, Path::Cma, true, 1_500_000);
        assert_eq!(a.choose(1, len, Path::Cma, true, 1), Some(Path::Cma));
        // CMA really slowed down: followed within a few messages.
        let mut n = 0;
        while a.choose(1, len, Path::Cma, true, 2) == Some(Path::Cma) {
            rec(&mut a, 1, len, Path::Cma, true, 120_000);
            n += 1;
            assert!(n < 10, "still CMA after {n} slow reads");
        }
    }

    #[test]
    fn the_calibrated_path_stays_unless_the_other_is_clearly_faster() {
        let mut a = Adapt::new(1, 64 << 10);
        let len = 16 << 20;
        rec(&mut a, 0, len, Path::Stream, false, 1_600_000);
        rec(&mut a, 0, len, Path::Cma, false, 1_400_000);
        assert_eq!(a.choose(0, len, Path::Stream, false, 1), Some(Path::Stream));
        assert_eq!(a.choose(0, len, Path::Cma, false, 2), Some(Path::Cma));
        rec(&mut a, 0, len, Path::Cma, false, 100_000);
        rec(&mut a, 0, len, Path::Cma, false, 100_000);
        assert_eq!(a.choose(0, len, Path::Stream, false, 3), Some(Path::Cma));
    }

    #[test]
    fn the_higher_rank_follows_the_lower_ones_choice() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 4 << 20;
        // Its own measurements say CMA...
        rec(&mut a, 0, len, Path::Stream, false, 4_000_000);
        rec(&mut a, 0, len, Path::Cma, false, 1_000_000);
        assert_eq!(a.choose(0, len, Path::Stream, false, 1), Some(Path::Cma));
        // ...but the lower rank sent by stream: follow it, without exploring,
        // as long as it keeps sending.
        for t in 0..100 {
            a.heard_at(0, len, Path::Stream, false, t * EXPLORE_NS);
            assert_eq!(a.choose(0, len, Path::Stream, false, t * EXPLORE_NS + 1), Some(Path::Stream));
        }
        a.heard_at(0, len, Path::Cma, false, 1);
        assert_eq!(a.choose(0, len, Path::Stream, false, 2), Some(Path::Cma));
        // Other classes, and sizes below the adaptive range, are untouched.
        assert_eq!(a.choose(0, 1 << 20, Path::Stream, false, 1), Some(Path::Stream));
        a.heard(0, 1000, Path::Cma, false);
        assert_eq!(a.pick(0, 1000, Path::Stream, Situation::Lone), None);
        // A refusal of CMA still wins.
        a.deny_cma();
        assert_eq!(a.choose(0, len, Path::Stream, false, 1), Some(Path::Stream));
    }

    #[test]
    fn the_higher_rank_follows_each_situation_with_the_lower_ones_path_in_it() {
        // One schedule, two steps in one size class: the lower rank sends
        // the first as an exchange by CMA, the second as a lone message by
        // the stream (a 2-rank Rabenseifner allreduce). The higher rank's
        // exchange goes by CMA and its lone message by the stream, however
        // the two interleave.
        let mut a = Adapt::new(2, 64 << 10);
        let len = 512 << 10;
        for t in 0..10 {
            a.heard_at(0, len, Path::Cma, true, 2 * t * MS);
            assert_eq!(a.choose(0, len, Path::Stream, true, 2 * t * MS + 1), Some(Path::Cma), "exchange {t}");
            a.heard_at(0, len, Path::Stream, false, (2 * t + 1) * MS);
            assert_eq!(a.choose(0, len, Path::Cma, true, (2 * t + 1) * MS + 1), Some(Path::Cma), "exchange after lone {t}");
            assert_eq!(a.choose(0, len, Path::Cma, false, (2 * t + 1) * MS + 2), Some(Path::Stream), "lone {t}");
        }
    }

    #[test]
    fn the_lead_ends_when_the_lower_rank_stops_sending() {
        let mut a = Adapt::new(2, 64 << 10);
        let len = 1 << 20;
        rec(&mut a, 0, len, Path::Stream, false, 25_000);
        rec(&mut a, 0, len, Path::Cma, false, 95_000);
        // The lower rank's last message was an exploration by CMA.
        a.heard_at(0, len, Path::Cma, false, 10 * MS);
        assert_eq!(a.choose(0, len, Path::Stream, false, 10 * MS + LEAD_NS - 1), Some(Path::Cma));
        // Past the lead, our own measurements choose again (after the one
        // exploration that falls due).
        let t = 10 * MS + LEAD_NS;
        let picks: Vec<Path> = (0..10).filter_map(|i| a.choose(0, len, Path::Stream, false, t + i)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == Path::Stream).count(), 9, "{picks:?}");
    }

    #[test]
    fn exploring_takes_a_small_share_of_the_time_whatever_the_size() {
        // An exchange of 4 MiB every millisecond for 2 s: CMA 0.85 ms, the
        // stream 1.4 ms.
        let len = 4 << 20;
        let mut a = Adapt::new(2, 64 << 10);
        rec(&mut a, 1, len, Path::Stream, true, 1_400_000);
        rec(&mut a, 1, len, Path::Cma, true, 850_000);
        let picks: Vec<Path> = (1..=2000).filter_map(|i| a.choose(1, len, Path::Cma, true, i * MS)).collect();
        let slow = picks.iter().filter(|&&p| p == Path::Stream).count();
        // Every 280 ms two sends: 14 in 2 s, where every 20 ms was 200.
        assert!((2..=16).contains(&slow), "{slow} sends by the stream");
        assert!(slow as f64 * 1.4 <= 2.0 * EXPLORE_SHARE * 2000.0, "{slow} sends by the stream");
        // A slower path that takes very long is still tried every EXPLORE_MAX_NS.
        let huge = 64 << 20;
        rec(&mut a, 1, huge, Path::Stream, true, 100_000_000);
        rec(&mut a, 1, huge, Path::Cma, true, 20_000_000);
        let picks: Vec<Path> = (1..=3500).filter_map(|i| a.choose(1, huge, Path::Cma, true, i * MS)).collect();
        let slow = picks.iter().filter(|&&p| p == Path::Stream).count();
        assert_eq!(slow, 2 * 3, "every {} s, two sends", EXPLORE_MAX_NS / 1_000_000_000);
        // Short transfers still explore every EXPLORE_NS.
        let len = 128 << 10;
        rec(&mut a, 1, len, Path::Stream, true, 40_000);
        rec(&mut a, 1, len, Path::Cma, true, 20_000);
        let picks: Vec<Path> = (1..=200).filter_map(|i| a.choose(1, len, Path::Cma, true, i * MS)).collect();
        let slow = picks.iter().filter(|&&p| p == Path::Stream).count();
        let periods = (200 / (EXPLORE_NS / MS)) as usize;
        assert!((2 * periods - 1..=2 * periods).contains(&slow), "{slow}: every {} ms, two sends", EXPLORE_NS / MS);
    }

    #[test]
    fn a_refusal_ends_cma() {
        let mut a = Adapt::new(1, 64 << 10);
        rec(&mut a, 0, 1 << 20, Path::Stream, false, 400_000);
        rec(&mut a, 0, 1 << 20, Path::Cma, false, 100_000);
        assert_eq!(a.choose(0, 1 << 20, Path::Stream, false, 1), Some(Path::Cma));
        a.deny_cma();
        assert!((0..100).all(|t| a.choose(0, 1 << 20, Path::Stream, false, t * EXPLORE_NS) == Some(Path::Stream)));
    }

    #[test]
    fn with_cores_shared_an_exchange_takes_cma_whatever_was_measured() {
        let mut a = Adapt::new(2, 64 << 10);
        a.share_cores(Some(1 << 20), true, NO_RANGE);
        let len = 1 << 20;
        // The stream measured four times faster in exchanges and alone.
        for exchange in [false, true] {
            rec(&mut a, 1, len, Path::Stream, exchange, 100_000);
            rec(&mut a, 1, len, Path::Cma, exchange, 400_000);
        }
        // Exchanges take CMA every time (no exploring), even where the
        // calibrated path is the stream, as lone messages of a stream's
        // length do (see the next test); bursts follow the burst rule.
        assert!((0..200).all(|_| a.pick(1, len, Path::Stream, Situation::Exchange) == Some(Path::Cma)));
        let streamed = |a: &mut Adapt, s: Situation| (0..6).filter(|_| a.pick(1, len, Path::Cma, s) == Some(Path::Stream)).count();
        assert_eq!(streamed(&mut a, Situation::Lone), 0);
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Burst), Some(Path::Stream));
        assert_eq!(a.pick(1, 1000, Path::Stream, Situation::Exchange), None, "below the adaptive range");
        // Shorter than a pair's stream: the stream every time, though
        // CMA measured four times faster there.
        rec(&mut a, 1, 256 << 10, Path::Cma, true, 25_000);
        rec(&mut a, 1, 256 << 10, Path::Stream, true, 100_000);
        assert!((0..200).all(|_| a.pick(1, 256 << 10, Path::Cma, Situation::Exchange) == Some(Path::Stream)));
        // A receiver that may not read this rank's memory ends it.
        a.deny_cma();
        assert_eq!(a.pick(1, len, Path::Cma, Situation::Exchange), Some(Path::Stream));
        // Off, the exchange follows its measurements again.
        let mut b = Adapt::new(2, 64 << 10);
        rec(&mut b, 1, len, Path::Stream, true, 100_000);
        rec(&mut b, 1, len, Path::Cma, true, 400_000);
        assert!(streamed(&mut b, Situation::Exchange) >= 4);
        // Where calibration found CMA slower everywhere: exchanges take
        // the stream every time, though CMA measured four times faster,
        // and a lone message of a stream's length follows its measurements.
        let mut c = Adapt::new(2, 64 << 10);
        c.share_cores(Some(1 << 20), false, NO_RANGE);
        for exchange in [false, true] {
            rec(&mut c, 1, len, Path::Cma, exchange, 100_000);
            rec(&mut c, 1, len, Path::Stream, exchange, 400_000);
        }
        assert!((0..200).all(|_| c.pick(1, len, Path::Cma, Situation::Exchange) == Some(Path::Stream)));
        let by_cma = (0..6).filter(|_| c.pick(1, len, Path::Stream, Situation::Lone) == Some(Path::Cma)).count();
        assert!(by_cma >= 4, "a lone message follows CMA's measured lead: {by_cma} of 6");
    }

    #[test]
    fn with_cores_shared_a_shorter_exchange_takes_cma_within_the_calibrated_range() {
        // Calibration found CMA faster than the stream from 8 KiB to 512 KiB.
        let mut a = Adapt::new(2, 64 << 10);
        a.share_cores(Some(1 << 20), true, (8 << 10, 512 << 10));
        // The stream measured four times faster at every size.
        for len in [64 << 10, 512 << 10, 768 << 10] {
            rec(&mut a, 1, len, Path::Stream, true, len as u64 / 10);
            rec(&mut a, 1, len, Path::Cma, true, len as u64 * 4 / 10);
        }
        let by_cma = |a: &mut Adapt, len: usize, s: Situation| (0..50).filter(|_| a.pick(1, len, Path::Cma, s) == Some(Path::Cma)).count();
        assert_eq!(by_cma(&mut a, 64 << 10, Situation::Exchange), 50, "in the range: CMA every time");
        assert_eq!(by_cma(&mut a, 512 << 10, Situation::Exchange), 50, "at its upper bound");
        assert_eq!(by_cma(&mut a, 768 << 10, Situation::Exchange), 0, "above it, shorter than the stream: the stream");
        assert_eq!(by_cma(&mut a, 1 << 20, Situation::Exchange), 50, "a stream's length: CMA");
        // Lone messages of the range keep following their measurements.
        rec(&mut a, 1, 64 << 10, Path::Stream, false, 6_400);
        rec(&mut a, 1, 64 << 10, Path::Cma, false, 25_600);
        assert!(by_cma(&mut a, 64 << 10, Situation::Lone) <= 2);
        // Where calibration found the read dearer than the two copies, the
        // range does not send exchanges by CMA.
        let mut b = Adapt::new(2, 64 << 10);
        b.share_cores(Some(1 << 20), false, (8 << 10, 512 << 10));
        assert_eq!(by_cma(&mut b, 64 << 10, Situation::Exchange), 0);
        // Nor where CMA is refused.
        a.deny_cma();
        assert_eq!(by_cma(&mut a, 64 << 10, Situation::Exchange), 0);
    }

    #[test]
    fn with_cores_shared_a_lone_message_longer_than_the_stream_takes_cma() {
        let mut a = Adapt::new(2, 64 << 10);
        a.share_cores(Some(1 << 20), true, NO_RANGE);
        // The stream measured four times faster at both sizes.
        for len in [256 << 10, 1 << 20] {
            rec(&mut a, 1, len, Path::Stream, false, len as u64 / 10);
            rec(&mut a, 1, len, Path::Cma, false, len as u64 * 4 / 10);
        }
        let by_cma = |a: &mut Adapt, len: usize| (0..20).filter(|_| a.pick(1, len, Path::Stream, Situation::Lone) == Some(Path::Cma)).count();
        assert_eq!(by_cma(&mut a, 1 << 20), 20, "from the stream's size on: CMA every time");
        assert!(by_cma(&mut a, 256 << 10) <= 2, "a shorter one follows its measurements (but for an exploration)");
        // Cores not shared: the measurements decide at every size.
        a.share_cores(None, true, NO_RANGE);
        assert!(by_cma(&mut a, 1 << 20) <= 2);
    }

    #[test]
    fn a_receiver_trails_a_long_push_by_one_chunk() {
        // A push of one chunk or less: the receiver copies all of it after.
        assert_eq!(stream_trail_ns(9_000, STREAM_CHUNK), 9_000);
        assert_eq!(stream_trail_ns(3_000, 4096), 3_000);
        // A 1 MiB push: only its last chunk (a sixteenth) is left to copy out.
        assert_eq!(STREAM_CHUNK, 64 << 10);
        assert_eq!(stream_trail_ns(80_000, 1 << 20), 5_000);
        assert_eq!(stream_trail_ns(80_000, 0), 0);
    }

    #[test]
    fn classes_are_powers_of_two_from_64_kib() {
        assert_eq!(class_of(1), 0);
        assert_eq!(class_of(64 << 10), 0);
        assert_eq!(class_of((128 << 10) - 1), 0);
        assert_eq!(class_of(128 << 10), 1);
        assert_eq!(class_of(16 << 20), CLASSES - 1);
        assert_eq!(class_of(1 << 30), CLASSES - 1);
    }
}
