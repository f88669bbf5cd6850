//! The plan: how namespaces, interfaces and addresses are named, and rates.
//!
//! Pure functions only, so the plan can be read (and tested) in one place.
//!
//! # Names
//!
//! A cluster has a *tag*, and its namespaces are `TAG-h0`, `TAG-h1`, ... (one
//! per host) and `TAG-sw` (the switch). The tag says who owns the cluster:
//!
//! - `g<pid>-<seq>`: made by process `pid` (its `seq`-th cluster). It lives
//!   as long as the [`Cluster`](crate::Cluster) value; if the process dies
//!   without dropping it, [`gc`](crate::gc) sees the dead pid and removes it.
//!   Two test processes, or two tests in one process, never clash.
//! - `goal-<name>`: a named cluster (`goal-cluster up --name NAME`), which
//!   outlives its creator and is removed only by `down` (never by `gc`).
//!
//! Inside a host namespace the interfaces are `lo` and `rail0`, `rail1`, ...,
//! the same names on every host, so a program can be told `GOAL_RAILS=rail0,rail1`
//! whichever host it runs on. The switch namespace holds one bridge per rail
//! (`br0`, `br1`, ...) and the switch end of each host's cable (`h<host>r<rail>`).
//! Interface names are per namespace, so nothing here needs the tag, and
//! nothing at all is created in the root namespace.
//!
//! # Addresses
//!
//! Rail `r` is the subnet `10.(100+r).0.0/24`; host `h` is `.h+1` on it:
//!
//! | | rail0 | rail1 | rail r |
//! |---|---|---|---|
//! | host0 | 10.100.0.1 | 10.101.0.1 | 10.(100+r).0.1 |
//! | host1 | 10.100.0.2 | 10.101.0.2 | 10.(100+r).0.2 |
//! | host h | 10.100.0.(h+1) | 10.101.0.(h+1) | 10.(100+r).0.(h+1) |
//!
//! Every cluster uses the same addresses: they are private to its namespaces.
//! Hostnames are `host0`, `host1`, ...

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use crate::error::Error;

/// Most hosts a cluster may have (the last octet of the address plan).
pub const MAX_HOSTS: usize = 250;
/// Most rails a cluster may have (a bound well inside the address plan).
pub const MAX_RAILS: usize = 16;
/// The prefix length of every rail subnet.
pub const PREFIX_LEN: u8 = 24;

/// The address of host `host` on rail `rail`: `10.(100+rail).0.(host+1)`.
///
/// # Panics
/// If `host >= MAX_HOSTS` or `rail >= MAX_RAILS`.
pub fn host_addr(host: usize, rail: usize) -> Ipv4Addr {
    assert!(
        host < MAX_HOSTS && rail < MAX_RAILS,
        "host {host} rail {rail} outside the plan"
    );
    Ipv4Addr::new(10, 100 + rail as u8, 0, host as u8 + 1)
}

/// The host and rail an address of the plan belongs to, if it is one.
pub fn addr_owner(addr: Ipv4Addr) -> Option<(usize, usize)> {
    let [a, b, c, d] = addr.octets();
    let rail = usize::from(b.checked_sub(100)?);
    let host = usize::from(d.checked_sub(1)?);
    (a == 10 && c == 0 && rail < MAX_RAILS && host < MAX_HOSTS).then_some((host, rail))
}

/// The interface of rail `rail` inside every host: `rail<rail>`.
pub fn rail_interface(rail: usize) -> String {
    format!("rail{rail}")
}

/// The hostname of host `host`: `host<host>`.
pub fn hostname(host: usize) -> String {
    format!("host{host}")
}

/// The switch's end of host `host`'s cable on rail `rail`.
pub(crate) fn switch_port(host: usize, rail: usize) -> String {
    format!("h{host}r{rail}")
}

/// The bridge of rail `rail` in the switch namespace.
pub(crate) fn bridge(rail: usize) -> String {
    format!("br{rail}")
}

/// The tag of a cluster owned by process `pid`.
pub(crate) fn process_tag(pid: u32, seq: usize) -> String {
    format!("g{pid}-{seq}")
}

/// The tag of the named cluster `name`.
pub(crate) fn named_tag(name: &str) -> String {
    format!("goal-{name}")
}

/// The namespace of host `host`.
pub(crate) fn host_ns(tag: &str, host: usize) -> String {
    format!("{tag}-h{host}")
}

/// The switch namespace.
pub(crate) fn switch_ns(tag: &str) -> String {
    format!("{tag}-sw")
}

/// A cluster name is kept to what reads well in a namespace name and in a
/// shell script: letters, digits, `_`, `.` and `-`, at most 32 of them.
pub(crate) fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "bad cluster name {name:?}: use 1 to 32 letters, digits, '_', '.' or '-'"
        )))
    }
}

/// What a namespace name says about the cluster it belongs to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NsName<'a> {
    /// The cluster's tag (`g<pid>-<seq>` or `goal-<name>`).
    pub tag: &'a str,
    /// The creating process, for process-owned clusters.
    pub pid: Option<u32>,
    /// `Some(h)` for host `h`, `None` for the switch (or the probe
    /// namespace of [`available`](crate::available)).
    pub host: Option<usize>,
}

/// Splits a namespace name into tag and role; `None` if it is not ours.
pub(crate) fn parse_ns(name: &str) -> Option<NsName<'_>> {
    let (tag, role) = name.rsplit_once('-')?;
    let host = match role {
        "sw" | "probe" => None,
        _ => Some(role.strip_prefix('h')?.parse().ok()?),
    };
    let pid = if let Some(rest) = tag
        .strip_prefix('g')
        .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    {
        let (pid, seq) = rest.split_once('-')?;
        seq.parse::<usize>().ok()?;
        Some(pid.parse().ok()?)
    } else {
        check_name(tag.strip_prefix("goal-")?).ok()?;
        None
    };
    Some(NsName { tag, pid, host })
}

/// A link rate in bits per second, written as `tc` writes rates: `1gbit`,
/// `100mbit`, `2.5gbit`, `800kbit`, `1000bit` (decimal prefixes; case does
/// not matter). A unit is required, because to `tc` a bare number means
/// bytes per second and that mix-up costs a factor of eight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate {
    bits_per_sec: u64,
}

impl Rate {
    /// A rate of `bits_per_sec` bits per second.
    ///
    /// # Panics
    /// If `bits_per_sec` is 0.
    pub fn from_bits_per_sec(bits_per_sec: u64) -> Rate {
        assert!(
            bits_per_sec > 0,
            "a rate of 0 blocks the link; use set_rail to take it down"
        );
        Rate { bits_per_sec }
    }

    /// Bits per second.
    pub fn bits_per_sec(self) -> u64 {
        self.bits_per_sec
    }

    /// The token bucket size for `tbf`: one millisecond of traffic, and at
    /// least 64 KiB so that one full-size GSO packet from a veth always fits
    /// (a smaller bucket makes tbf split or drop them, and the rate sags).
    pub(crate) fn burst_bytes(self) -> u64 {
        (self.bits_per_sec / 8 / 1000).max(64 * 1024)
    }
}

const UNITS: [(&str, u64); 5] = [
    ("tbit", 1_000_000_000_000),
    ("gbit", 1_000_000_000),
    ("mbit", 1_000_000),
    ("kbit", 1_000),
    ("bit", 1),
];

impl FromStr for Rate {
    type Err = Error;

    fn from_str(s: &str) -> Result<Rate, Error> {
        let bad = || {
            Error::invalid(format!(
                "bad rate {s:?}: write it like 1gbit, 100mbit or 2.5gbit"
            ))
        };
        let lower = s.trim().to_ascii_lowercase();
        let (num, scale) = UNITS
            .iter()
            .find_map(|&(unit, scale)| lower.strip_suffix(unit).map(|n| (n, scale)))
            .ok_or_else(bad)?;
        let value: f64 = num.trim().parse().map_err(|_| bad())?;
        let bits = (value * scale as f64).round();
        if !(bits >= 1.0 && bits < u64::MAX as f64) {
            return Err(bad());
        }
        Ok(Rate {
            bits_per_sec: bits as u64,
        })
    }
}

impl fmt::Display for Rate {
    /// The largest unit that divides the rate exactly: `1gbit`, `1500mbit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, scale) = UNITS
            .iter()
            .find(|&&(_, scale)| self.bits_per_sec.is_multiple_of(scale))
            .unwrap_or(&("bit", 1));
        write!(f, "{}{unit}", self.bits_per_sec / scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_the_table() {
        assert_eq!(host_addr(0, 0), Ipv4Addr::new(10, 100, 0, 1));
        assert_eq!(host_addr(1, 1), Ipv4Addr::new(10, 101, 0, 2));
        assert_eq!(addr_owner(Ipv4Addr::new(10, 101, 0, 2)), Some((1, 1)));
        assert_eq!(addr_owner(Ipv4Addr::new(10, 99, 0, 2)), None);
        assert_eq!(addr_owner(Ipv4Addr::new(10, 100, 0, 0)), None);
    }

    #[test]
    fn rates_parse_like_tc() {
        assert_eq!(
            "1gbit".parse::<Rate>().unwrap().bits_per_sec(),
            1_000_000_000
        );
        assert_eq!(
            "2.5Gbit".parse::<Rate>().unwrap().bits_per_sec(),
            2_500_000_000
        );
        assert_eq!(
            "100mbit".parse::<Rate>().unwrap().bits_per_sec(),
            100_000_000
        );
        assert_eq!("1000bit".parse::<Rate>().unwrap().to_string(), "1kbit");
        assert_eq!("1.5gbit".parse::<Rate>().unwrap().to_string(), "1500mbit");
        for bad in ["1000", "gbit", "0gbit", "-1gbit", "1 gbyte", ""] {
            assert!(bad.parse::<Rate>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn namespace_names_round_trip() {
        let ns = host_ns(&process_tag(4242, 3), 1);
        assert_eq!(ns, "g4242-3-h1");
        assert_eq!(
            parse_ns(&ns),
            Some(NsName {
                tag: "g4242-3",
                pid: Some(4242),
                host: Some(1)
            })
        );
        let sw = switch_ns(&named_tag("bench-a"));
        assert_eq!(
            parse_ns(&sw),
            Some(NsName {
                tag: "goal-bench-a",
                pid: None,
                host: None
            })
        );
        for foreign in [
            "docker",
            "g-h0",
            "gx12-0-h0",
            "goal-",
            "g12-h0",
            "g12-x-h0",
            "goal-a-hx",
        ] {
            assert_eq!(parse_ns(foreign), None, "{foreign}");
        }
    }
}
