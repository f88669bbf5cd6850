//! Run-time configuration from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GOAL_PROGRESS` | `manual`, `thread`, `spin` (`kernel`, `auto`: see below) | `thread` |
//! | `GOAL_SPIN_US` | how long a waiting thread polls before it sleeps | 50 (thread, manual), 2000 (spin); 2 with more ranks than cores |
//! | `GOAL_EAGER_LIMIT` | largest message sent eagerly through the rings | calibrated |
//! | `GOAL_CMA_MIN`, `GOAL_CMA_MAX` | sizes that go by Cross Memory Attach instead of the pipelined stream | calibrated |
//! | `GOAL_UNEXPECTED_BYTES` | eager bytes a rank buffers for receives not yet started, before senders must wait | 64 MiB |
//! | `GOAL_SHM_RING_BYTES`, `GOAL_SHM_STREAM_BYTES`, `GOAL_HEAP_BYTES` | shared-memory sizes | see goal-transport |
//! | `GOAL_DEBUG` | `1`: print decisions (mode, thresholds) on stderr | off |
//!
//! `kernel` and `auto` are accepted; until the kernel-driven mode exists they
//! run as `thread`, and say so when `GOAL_DEBUG=1`.

use crate::error::{Error, ErrorKind, Result};
use std::time::Duration;

/// How executions advance between the application's calls into goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Only inside Test, Wait and Progress.
    Manual,
    /// A helper thread that sleeps in the kernel until data arrives.
    Thread,
    /// A helper thread that polls (for a spare core), sleeping only after a long idle spell.
    Spin,
}

impl ProgressMode {
    /// The mode's name as `GOAL_PROGRESS` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ProgressMode::Manual => "manual",
            ProgressMode::Thread => "thread",
            ProgressMode::Spin => "spin",
        }
    }
}

/// The runtime's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Progress mode.
    pub progress: ProgressMode,
    /// Poll this long before sleeping.
    pub spin: Duration,
    /// Largest eager message (None: calibrate).
    pub eager_limit: Option<usize>,
    /// CMA size range (None: calibrate).
    pub cma_range: Option<(usize, usize)>,
    /// Bound on buffered unexpected eager bytes per receiver.
    pub unexpected_bytes: u64,
    /// Shared-memory sizes.
    pub shm: goal_transport::shm::ShmConfig,
    /// Largest eager message to a peer on another machine (`GOAL_NET_EAGER`).
    pub net_eager: usize,
    /// Rails to use between machines (`GOAL_RAILS`: interface names; None: every up, non-loopback IPv4 interface).
    pub rails: Option<String>,
    /// Print decisions.
    pub debug: bool,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn parse_bytes(name: &str) -> Result<Option<usize>> {
    let Some(v) = var(name) else { return Ok(None) };
    let t = v.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let mult: usize = match mult.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(Error::new(ErrorKind::InvalidArgument, format!("{name}={v}: not a byte count (e.g. 4096, 64K, 1M)"))),
    };
    let n: usize = num
        .parse()
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{name}={v}: not a byte count (e.g. 4096, 64K, 1M)")))?;
    Ok(Some(n * mult))
}

impl Config {
    /// Reads the environment; a malformed variable is an error naming it.
    pub fn from_env() -> Result<Config> {
        let debug = var("GOAL_DEBUG").is_some_and(|v| v != "0");
        let progress = match var("GOAL_PROGRESS").as_deref() {
            None | Some("thread") | Some("auto") | Some("kernel") => ProgressMode::Thread,
            Some("manual") => ProgressMode::Manual,
            Some("spin") => ProgressMode::Spin,
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("GOAL_PROGRESS={other}: unknown progress mode (manual, thread, spin, kernel, auto)"),
                ))
            }
        };
        if debug && matches!(var("GOAL_PROGRESS").as_deref(), Some("kernel") | Some("auto")) {
            eprintln!("goal: GOAL_PROGRESS={}: running as 'thread' (the kernel-driven mode is not built yet)", var("GOAL_PROGRESS").unwrap_or_default());
        }
        let spin_us = match var("GOAL_SPIN_US") {
            None => {
                if progress == ProgressMode::Spin {
                    2000
                } else {
                    50
                }
            }
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("GOAL_SPIN_US={v}: not a number of microseconds")))?,
        };
        let cma_range = match (parse_bytes("GOAL_CMA_MIN")?, parse_bytes("GOAL_CMA_MAX")?) {
            (None, None) => None,
            (lo, hi) => Some((lo.unwrap_or(0), hi.unwrap_or(usize::MAX))),
        };
        let shm = goal_transport::shm::ShmConfig::from_env().map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
        Ok(Config {
            progress,
            spin: Duration::from_micros(spin_us),
            eager_limit: parse_bytes("GOAL_EAGER_LIMIT")?,
            cma_range,
            unexpected_bytes: parse_bytes("GOAL_UNEXPECTED_BYTES")?.unwrap_or(64 << 20) as u64,
            shm,
            net_eager: parse_bytes("GOAL_NET_EAGER")?.unwrap_or(NET_EAGER_DEFAULT),
            rails: var("GOAL_RAILS"),
            debug,
        })
    }
}

/// Default eager limit between machines, from goal-net's crossover
/// measurement between two emulated hosts (`net_bench --crossover`, 1 Gbit/s
/// rail): up to 16 KiB eager takes 20-27 us and rendezvous 44-56 us (one
/// round trip more); from 32 KiB both are bound by the wire and differ by
/// under 10 %, while only rendezvous stripes over several rails (64 KiB on 3
/// rails: 93 us against 276 on one) and lands in the receive buffer without
/// a copy. So: eager up to 16 KiB.
const NET_EAGER_DEFAULT: usize = 16 << 10;
