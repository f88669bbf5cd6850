//! Rails: which network interfaces a node uses, how nodes describe their
//! listening sockets to each other (the address blob), and which rail of one
//! node talks to which rail of another.
//!
//! A rail is one local address, normally one NIC. Two nodes connect rail to
//! rail over the same subnet, because on a multi-NIC cluster each NIC sits on
//! its own network (eth0 on 10.0.0.0/24, eth1 on 10.0.1.0/24) and a
//! connection from eth0's address to eth1's network would be routed through
//! the wrong wire, or not at all. When no pair shares a subnet (routed
//! networks), rails are paired by position instead, so that such clusters
//! still work. The rule is a pure function of the two blobs, so both ends
//! compute the same pairs without talking.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// One local interface address goal-net sends and listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailSpec {
    /// What to call it in messages (`eth0`, or the address given).
    pub name: String,
    /// The address to bind.
    pub addr: IpAddr,
    /// Length of its network prefix (for matching peers' rails by subnet).
    pub prefix_len: u8,
}

impl fmt::Display for RailSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name == self.addr.to_string() {
            write!(f, "{}/{}", self.addr, self.prefix_len)
        } else {
            write!(f, "{} ({}/{})", self.name, self.addr, self.prefix_len)
        }
    }
}

/// The rails to use.
///
/// * `None`: every interface that is up and not loopback, with its first
///   IPv4 address, in the kernel's order. None at all is an error (a node
///   whose peers are all on its own machine does not need goal-net).
/// * `Some("eth0,eth1")` (the form of `GOAL_RAILS`): those interfaces, in
///   that order (IPv4 address first, else a global IPv6 one). An entry may
///   also be a literal address, optionally with a prefix (`127.0.0.2/8`),
///   which is how tests emulate several NICs on loopback. A name that is not
///   an interface here, or one that is down, is an error naming it.
pub fn discover_rails(names: Option<&str>) -> io::Result<Vec<RailSpec>> {
    let ifs = crate::sys::interface_addrs()?;
    let Some(names) = names else {
        let mut out: Vec<RailSpec> = Vec::new();
        for i in ifs.iter().filter(|i| i.up && !i.loopback && i.addr.is_ipv4()) {
            if !out.iter().any(|r| r.name == i.name) {
                out.push(RailSpec { name: i.name.clone(), addr: i.addr, prefix_len: i.prefix_len });
            }
        }
        if out.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "goal-net: no interface that is up, not loopback and has an IPv4 address; name the rails with GOAL_RAILS"));
        }
        return Ok(out);
    };
    let mut out = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some(r) = literal_rail(name)? {
            out.push(r);
            continue;
        }
        let mine: Vec<_> = ifs.iter().filter(|i| i.name == name).collect();
        if mine.is_empty() {
            let mut known: Vec<&str> = ifs.iter().map(|i| i.name.as_str()).collect();
            known.dedup();
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("goal-net: rail {name:?} is not a network interface with an address here (interfaces: {})", known.join(", ")),
            ));
        }
        if !mine[0].up {
            return Err(io::Error::new(io::ErrorKind::NotConnected, format!("goal-net: rail {name:?} is down")));
        }
        let pick = mine
            .iter()
            .find(|i| i.addr.is_ipv4())
            .or_else(|| mine.iter().find(|i| matches!(i.addr, IpAddr::V6(a) if a.segments()[0] & 0xffc0 != 0xfe80)))
            .unwrap_or(&mine[0]);
        out.push(RailSpec { name: name.to_owned(), addr: pick.addr, prefix_len: pick.prefix_len });
    }
    if out.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "goal-net: the rail list is empty"));
    }
    Ok(out)
}

/// `addr` or `addr/prefix`, if `s` is one.
fn literal_rail(s: &str) -> io::Result<Option<RailSpec>> {
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let Ok(addr) = a.parse::<IpAddr>() else { return Ok(None) };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix_len = match p {
        None => max,
        Some(p) => match p.parse::<u8>() {
            Ok(n) if n <= max => n,
            _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("goal-net: bad prefix length in rail {s:?}"))),
        },
    };
    Ok(Some(RailSpec { name: s.to_owned(), addr, prefix_len }))
}

/// One rail of a peer, as its blob describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRail {
    /// Its name there.
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its prefix length.
    pub prefix_len: u8,
}

/// A decoded address blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Whose.
    pub rank: u32,
    /// Its rails, by index.
    pub rails: Vec<RemoteRail>,
}

const BLOB_MAGIC: [u8; 4] = *b"GNB1";

impl Blob {
    /// Encodes for the allgather.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = BLOB_MAGIC.to_vec();
        b.extend_from_slice(&self.rank.to_le_bytes());
        b.push(self.rails.len() as u8);
        for r in &self.rails {
            match r.addr.ip() {
                IpAddr::V4(a) => {
                    b.push(4);
                    b.extend_from_slice(&a.octets());
                }
                IpAddr::V6(a) => {
                    b.push(6);
                    b.extend_from_slice(&a.octets());
                }
            }
            b.push(r.prefix_len);
            b.extend_from_slice(&r.addr.port().to_le_bytes());
            // At most 255 bytes, cut at a character boundary.
            let mut end = r.name.len().min(255);
            while !r.name.is_char_boundary(end) {
                end -= 1;
            }
            b.push(end as u8);
            b.extend_from_slice(&r.name.as_bytes()[..end]);
        }
        b
    }

    /// Decodes a blob; any inconsistency is an error, never a panic.
    pub fn decode(b: &[u8]) -> io::Result<Blob> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("goal-net: bad address blob: {what}"));
        let mut r = Reader(b);
        if r.take(4).ok_or_else(|| bad("too short"))? != BLOB_MAGIC {
            return Err(bad("not a goal-net blob"));
        }
        let rank = u32::from_le_bytes(r.array().ok_or_else(|| bad("too short"))?);
        let n = r.take(1).ok_or_else(|| bad("too short"))?[0];
        let mut rails = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let fam = r.take(1).ok_or_else(|| bad("truncated rail"))?[0];
            let ip = match fam {
                4 => IpAddr::V4(Ipv4Addr::from(r.array::<4>().ok_or_else(|| bad("truncated rail"))?)),
                6 => IpAddr::V6(Ipv6Addr::from(r.array::<16>().ok_or_else(|| bad("truncated rail"))?)),
                _ => return Err(bad("unknown address family")),
            };
            let prefix_len = r.take(1).ok_or_else(|| bad("truncated rail"))?[0];
            if prefix_len > if ip.is_ipv4() { 32 } else { 128 } {
                return Err(bad("prefix length too long"));
            }
            let port = u16::from_le_bytes(r.array().ok_or_else(|| bad("truncated rail"))?);
            let nl = r.take(1).ok_or_else(|| bad("truncated rail"))?[0] as usize;
            let name = std::str::from_utf8(r.take(nl).ok_or_else(|| bad("truncated rail name"))?).map_err(|_| bad("rail name not UTF-8"))?.to_owned();
            rails.push(RemoteRail { name, addr: SocketAddr::new(ip, port), prefix_len });
        }
        if !r.0.is_empty() {
            return Err(bad("trailing bytes"));
        }
        Ok(Blob { rank, rails })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).map(|s| s.try_into().expect("take returned N bytes"))
    }
}

/// Do `a/pa` and `b/pb` lie on one network (under the shorter prefix)?
pub fn same_subnet(a: IpAddr, pa: u8, b: IpAddr, pb: u8) -> bool {
    let p = pa.min(pb) as u32;
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let m = if p == 0 { 0 } else { u32::MAX << (32 - p) };
            u32::from(a) & m == u32::from(b) & m
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let m = if p == 0 { 0 } else { u128::MAX << (128 - p) };
            u128::from(a) & m == u128::from(b) & m
        }
        _ => false,
    }
}

/// Which rails connect: `(index in lower, index in higher)` pairs, where
/// `lower` are the rails of the lower rank (the one that connects).
///
/// Each of the lower rank's rails, in order, takes the first rail of the
/// higher rank on the same subnet that no earlier rail took. If no pair at
/// all shares a subnet, rails pair by position.
pub fn pair_rails(lower: &[(IpAddr, u8)], higher: &[(IpAddr, u8)]) -> Vec<(usize, usize)> {
    let mut used = vec![false; higher.len()];
    let mut pairs = Vec::new();
    for (i, &(a, pa)) in lower.iter().enumerate() {
        if let Some(j) = (0..higher.len()).find(|&j| !used[j] && same_subnet(a, pa, higher[j].0, higher[j].1)) {
            used[j] = true;
            pairs.push((i, j));
        }
    }
    if pairs.is_empty() {
        let fam = |x: &IpAddr, y: &IpAddr| x.is_ipv4() == y.is_ipv4();
        pairs = (0..lower.len().min(higher.len())).filter(|&k| fam(&lower[k].0, &higher[k].0)).map(|k| (k, k)).collect();
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str, p: u8) -> (IpAddr, u8) {
        (s.parse().unwrap(), p)
    }

    #[test]
    fn pairs_by_subnet_then_position() {
        // Two NICs, listed in different orders on the two nodes.
        let a = [v4("10.0.0.1", 24), v4("10.0.1.1", 24)];
        let b = [v4("10.0.1.2", 24), v4("10.0.0.2", 24)];
        assert_eq!(pair_rails(&a, &b), vec![(0, 1), (1, 0)]);
        // Loopback emulation: one /8, three addresses: by order.
        let l = [v4("127.0.0.1", 8), v4("127.0.0.2", 8), v4("127.0.0.3", 8)];
        assert_eq!(pair_rails(&l, &l), vec![(0, 0), (1, 1), (2, 2)]);
        // Routed: nothing shared, pair by position.
        let x = [v4("10.1.0.1", 24), v4("10.2.0.1", 24)];
        let y = [v4("10.3.0.1", 24)];
        assert_eq!(pair_rails(&x, &y), vec![(0, 0)]);
        // A rail only one side has is left out.
        let c = [v4("10.0.0.1", 24), v4("10.0.1.1", 24), v4("10.0.2.1", 24)];
        assert_eq!(pair_rails(&c, &b), vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn blob_round_trip_and_garbage() {
        let b = Blob {
            rank: 7,
            rails: vec![
                RemoteRail { name: "eth0".into(), addr: "10.0.0.1:4000".parse().unwrap(), prefix_len: 24 },
                RemoteRail { name: "ib0".into(), addr: "[fd00::1]:4001".parse().unwrap(), prefix_len: 64 },
            ],
        };
        let e = b.encode();
        assert_eq!(Blob::decode(&e).unwrap(), b);
        for cut in 0..e.len() {
            assert!(Blob::decode(&e[..cut]).is_err());
        }
        let mut long = e.clone();
        long.push(0);
        assert!(Blob::decode(&long).is_err());
    }

    #[test]
    fn named_rails() {
        let r = discover_rails(Some("lo")).unwrap();
        assert_eq!(r[0].name, "lo");
        assert_eq!(r[0].addr, IpAddr::V4(Ipv4Addr::LOCALHOST));
        let r = discover_rails(Some("127.0.0.2/8, 127.0.0.3")).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].prefix_len, r[1].prefix_len), (8, 32));
        let e = discover_rails(Some("lo,nosuchnic0")).unwrap_err();
        assert!(e.to_string().contains("nosuchnic0"), "{e}");
    }
}
