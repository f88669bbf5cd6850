//! What a node is told at construction: who it is, the job secret, its rails,
//! which user handlers exist, and the tunables.
//!
//! The defaults are chosen for a cluster of 1-100 Gbit/s Ethernet links with
//! sub-millisecond round trips; each is explained at its field. Tests lower
//! the timeouts to keep failure tests short.

use crate::rails::RailSpec;
use std::io;
use std::time::Duration;

/// How a small message picks its rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AmRails {
    /// The connection with the fewest bytes waiting in goal-net's queue;
    /// among equals, the one used last (so an idle ping-pong stays on one
    /// warm connection and messages rarely need reordering).
    #[default]
    LeastQueued,
    /// Each message on the next connection in turn: spreads even idle
    /// traffic, so that the receiver's reordering is exercised (tests).
    RoundRobin,
}

/// Everything a [`NetNode`](crate::NetNode) needs.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// This node's rank.
    pub rank: u32,
    /// Ranks in the group.
    pub size: u32,
    /// The job secret: only peers that know it may connect.
    pub secret: [u8; 32],
    /// Local rails, in order (see [`discover_rails`](crate::discover_rails)).
    pub rails: Vec<RailSpec>,
    /// User handler ids (16..=255) this node accepts; any other id on the
    /// wire closes the connection.
    pub handlers: Vec<u8>,
    /// The TCP congestion control of goal's connections (`TCP_CONGESTION`),
    /// `GOAL_NET_CC`; `None` (the default) leaves the system's
    /// (`net.ipv4.tcp_congestion_control`).
    ///
    /// Some hosts pace TCP (BBR, the choice of some cloud images): the
    /// kernel then sends each connection's data from a timer, an interrupt
    /// on the sending CPU every few segments. Across 2 emulated hosts at
    /// 1 Gbit/s (BBR in the hosts' kernel) a 1 MiB broadcast's root lost
    /// 1.37-1.43 ms of a computation under it with BBR and 1.08-1.11 ms
    /// with `reno` (`docs/measurements/overlap-ranks-2026-12-02/`). Any
    /// name the kernel offers may be given (`tcp_available_congestion_control`);
    /// without `CAP_NET_ADMIN` only those of `tcp_allowed_congestion_control`.
    pub congestion: Option<String>,
    /// Largest active-message payload (sending a larger one is an error, and
    /// receiving one closes the connection). The executor's eager limit must
    /// not exceed it. `GOAL_NET_MAX_AM`, default 1 MiB.
    pub max_am_payload: usize,
    /// Largest bulk fragment. A rail pulls fragments of this size while much
    /// of the message remains; it bounds how long one fragment holds a rail
    /// (a small message queued behind it waits at most this many bytes) and
    /// how much is sent again when a rail dies. `GOAL_NET_FRAG`, default 512 KiB.
    pub frag_size: usize,
    /// Smallest fragment cut when sharing the tail of a message between
    /// rails (below it, per-fragment costs dominate). Default 8 KiB: a 64 KiB
    /// message still spreads over 3 rails.
    pub min_frag: usize,
    /// How long `connect` waits for all its connections. `GOAL_NET_CONNECT_TIMEOUT`
    /// (seconds), default 30 s.
    pub connect_timeout: Duration,
    /// A connection whose link has not acknowledged anything for this long,
    /// while data waits for acknowledgement, is dead (also its
    /// `TCP_USER_TIMEOUT`). `GOAL_NET_DEAD_AFTER` (seconds), default 3 s.
    pub dead_after: Duration,
    /// Bytes the kernel may hold unsent per connection (`TCP_NOTSENT_LOWAT`)
    /// while a peer is reached over several: keeps rails' queues short so
    /// that fragments go to the rail that drains first and the tail of a
    /// message is not stuck behind a slow NIC's queue. Default 256 KiB. A
    /// sole connection to a peer may hold two fragments (`2 * frag_size`,
    /// if more), so that a fragment goes into the socket in one write.
    pub notsent_lowat: usize,
    /// Rail choice for small messages.
    pub am_rails: AmRails,
    /// Listening port of rail 0; rail `r` listens on `base_port + r`. 0 (the
    /// default): ephemeral ports, published through the address blobs.
    /// Fixed ports let tools name peers on the command line.
    pub base_port: u16,
    /// Also let the kernel time connections out (`TCP_USER_TIMEOUT` =
    /// `dead_after`, keepalive), which covers the time when nobody polls.
    /// Default true; tests turn it off to show that goal-net's own
    /// detection needs no error from the socket.
    pub kernel_timeouts: bool,
}

impl NetConfig {
    /// A configuration with the defaults.
    pub fn new(rank: u32, size: u32, secret: [u8; 32], rails: Vec<RailSpec>, handlers: Vec<u8>) -> NetConfig {
        NetConfig {
            rank,
            size,
            secret,
            rails,
            handlers,
            congestion: None,
            max_am_payload: 1 << 20,
            frag_size: 512 << 10,
            min_frag: 8 << 10,
            connect_timeout: Duration::from_secs(30),
            dead_after: Duration::from_secs(3),
            notsent_lowat: 256 << 10,
            am_rails: AmRails::LeastQueued,
            kernel_timeouts: true,
            base_port: 0,
        }
    }

    /// Applies `GOAL_NET_MAX_AM`, `GOAL_NET_FRAG`, `GOAL_NET_CONNECT_TIMEOUT`,
    /// `GOAL_NET_DEAD_AFTER` and `GOAL_NET_CC` from `get` (the environment,
    /// in practice).
    pub fn with_overrides(mut self, get: impl Fn(&str) -> Option<String>) -> io::Result<NetConfig> {
        let num = |k: &str| -> io::Result<Option<u64>> {
            match get(k) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{k}={v:?}: not a whole number"))),
            }
        };
        if let Some(v) = num("GOAL_NET_MAX_AM")? {
            self.max_am_payload = v as usize;
        }
        if let Some(v) = num("GOAL_NET_FRAG")? {
            self.frag_size = v as usize;
        }
        if let Some(v) = num("GOAL_NET_CONNECT_TIMEOUT")? {
            self.connect_timeout = Duration::from_secs(v);
        }
        if let Some(v) = num("GOAL_NET_DEAD_AFTER")? {
            self.dead_after = Duration::from_secs(v);
        }
        if let Some(v) = get("GOAL_NET_CC") {
            self.congestion = Some(v.trim().to_string());
        }
        Ok(self)
    }

    /// Checks the values against each other.
    pub(crate) fn validate(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, format!("goal-net: {m}")));
        if self.rank >= self.size {
            return bad(format!("rank {} outside a group of {}", self.rank, self.size));
        }
        if self.rails.is_empty() || self.rails.len() > 255 {
            return bad(format!("{} rails (1 to 255 allowed)", self.rails.len()));
        }
        if let Some(h) = self.handlers.iter().find(|&&h| h < crate::wire::kind::FIRST_USER) {
            return bad(format!("handler id {h} is reserved (user ids are 16..=255)"));
        }
        if self.max_am_payload > u32::MAX as usize / 2 {
            return bad(format!("max_am_payload {} too large", self.max_am_payload));
        }
        if self.frag_size == 0 || self.frag_size > 1 << 30 || self.min_frag == 0 || self.min_frag > self.frag_size {
            return bad(format!("fragment sizes {}..{} invalid", self.min_frag, self.frag_size));
        }
        if self.base_port != 0 && self.base_port as usize + self.rails.len() > 65536 {
            return bad(format!("ports {}.. run past 65535", self.base_port));
        }
        if self.dead_after < Duration::from_millis(100) {
            return bad("dead_after below 100 ms".into());
        }
        if let Some(cc) = &self.congestion {
            // The kernel's names are at most 15 bytes (TCP_CA_NAME_MAX).
            if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return bad(format!("TCP congestion control {cc:?} (GOAL_NET_CC): not a congestion control's name"));
            }
        }
        Ok(())
    }

    /// The error for congestion control `cc`, which the kernel refused to
    /// a listening socket with `e`: the first socket that asks for it, so a
    /// name it refuses fails `bind` saying why, not every connection later.
    pub(crate) fn congestion_refused(&self, cc: &str, e: &io::Error) -> io::Error {
        let why = match e.raw_os_error() {
            Some(libc::ENOENT) => "not in this kernel (net.ipv4.tcp_available_congestion_control lists those that are)",
            Some(libc::EPERM) => "not allowed without CAP_NET_ADMIN (net.ipv4.tcp_allowed_congestion_control lists those that are)",
            _ => "refused",
        };
        io::Error::new(io::ErrorKind::InvalidInput, format!("goal-net: rank {}: TCP congestion control {cc:?} (GOAL_NET_CC): {why}: {e}", self.rank))
    }
}
