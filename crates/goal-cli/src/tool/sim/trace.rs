//! `goal sim --trace PATH`: the simulated timeline in the Chrome trace
//! event format that `GOAL_TRACE_FILE` writes for a real run (goal-trace's
//! writer), so the predicted and the measured timelines of one schedule
//! open side by side in Perfetto or chrome://tracing.
//!
//! One track per rank; in it a lane per cpu and per nic of the host (the
//! resources LogGOPS charges), and one for the network: a message in
//! flight, on its sender's track.

use std::io::{BufWriter, Write};
use std::path::Path;

use goal_sim::{Activity, Params, Resource, What};
use goal_trace::{Arg, TraceWriter};

/// The most activities kept: past it they are counted, not drawn.
const MAX_EVENTS: usize = 4_000_000;

/// Lanes of a rank's track: cpus from 0, nics from here, the network last.
const NIC_LANE: u32 = 1000;
const NETWORK_LANE: u32 = 2000;

/// The activities of one simulation, as the observer saw them.
#[derive(Default)]
pub(super) struct Timeline {
    events: Vec<Activity>,
    dropped: u64,
}

impl Timeline {
    /// Keeps `a` (the simulation's observer).
    pub(super) fn push(&mut self, a: &Activity) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(*a);
        } else {
            self.dropped += 1;
        }
    }

    /// Writes the timeline of `name` (`ranks` ranks, simulated with `prm`)
    /// to `path`, rank by rank.
    pub(super) fn write(mut self, path: &Path, name: &str, ranks: u32, prm: Params) -> std::io::Result<()> {
        self.events.sort_by_key(|a| (a.rank, a.start, a.end));
        let mut w = TraceWriter::new(BufWriter::new(std::fs::File::create(path)?))?;
        let mut named = None;
        let mut lanes: Vec<u32> = Vec::new();
        for a in &self.events {
            if named != Some(a.rank) {
                named = Some(a.rank);
                lanes.clear();
                w.name_rank(a.rank, &format!("rank {} (simulated)", a.rank))?;
            }
            let lane = match a.resource {
                Resource::Cpu(c) => c,
                Resource::Nic(n) => NIC_LANE + n,
                Resource::Network => NETWORK_LANE,
            };
            if !lanes.contains(&lane) {
                lanes.push(lane);
                let label = match a.resource {
                    Resource::Cpu(c) => format!("cpu {c}"),
                    Resource::Nic(n) => format!("nic {n}"),
                    Resource::Network => "network (messages sent)".into(),
                };
                w.name_lane(a.rank, lane, &label)?;
            }
            let what = match a.what {
                What::Send => "send",
                What::Recv => "recv",
                What::Calc => "calc",
                What::Transfer => "transfer",
            };
            let mut args: Vec<(&str, Arg<'_>)> = vec![("bytes", Arg::UInt(a.bytes))];
            if let Some(p) = a.peer {
                args.push(("peer", Arg::UInt(p as u64)));
            }
            if a.op != u32::MAX {
                args.push(("op", Arg::UInt(a.op as u64)));
            }
            w.complete(a.rank, lane, what, a.start, a.end, &args)?;
        }
        let other = [
            ("source", Arg::Str(name)),
            ("simulated", Arg::Str("goal sim (LogGOPS)")),
            ("ranks", Arg::UInt(ranks as u64)),
            ("L", Arg::UInt(prm.l)),
            ("o", Arg::UInt(prm.o)),
            ("g", Arg::UInt(prm.g)),
            ("G", Arg::Float(prm.big_g_ps as f64 / 1000.0)),
            ("O", Arg::Float(prm.big_o_ps as f64 / 1000.0)),
            ("S", Arg::UInt(prm.s)),
            ("dropped_events", Arg::UInt(self.dropped)),
        ];
        w.finish(&other)?.flush()
    }
}
