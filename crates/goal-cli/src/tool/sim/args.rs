//! The arguments `goal sim` and `goal export` share: where the schedule
//! comes from (a text file, or one of goal's collectives by name) and the
//! parsing of numbers with unit suffixes.

use std::ffi::OsString;

use goal_sched::coll::{self, Algorithm, Coll, World};

use crate::tool::Failure;

/// Where a schedule comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A text file (`-` standard input).
    File(OsString),
    /// A collective of goal's.
    Coll(World),
}

/// `--coll`, `--alg`, `--ranks`, `--bytes`, `--root`, as given.
#[derive(Debug, Default)]
pub(crate) struct CollArgs {
    pub coll: Option<String>,
    pub alg: Option<String>,
    pub ranks: Option<String>,
    pub bytes: Option<String>,
    pub root: Option<String>,
}

/// The options of [`CollArgs`], for the parsers' lists.
pub(crate) const COLL_OPTIONS: [&str; 5] = ["--coll", "--alg", "--ranks", "--bytes", "--root"];

impl CollArgs {
    /// Takes `--name value` if it is one of [`COLL_OPTIONS`].
    pub fn take(&mut self, name: &str, value: &str) -> bool {
        let slot = match name {
            "--coll" => &mut self.coll,
            "--alg" => &mut self.alg,
            "--ranks" => &mut self.ranks,
            "--bytes" => &mut self.bytes,
            "--root" => &mut self.root,
            _ => return false,
        };
        *slot = Some(value.to_string());
        true
    }

    /// The collective named, or `None` if `--coll` was not given (then no
    /// other of these options may be).
    pub fn world(&self, usage: &dyn Fn(String) -> Failure) -> Result<Option<World>, Failure> {
        let Some(name) = &self.coll else {
            if self.alg.is_some() || self.ranks.is_some() || self.bytes.is_some() || self.root.is_some() {
                return Err(usage("--alg, --ranks, --bytes and --root go with --coll NAME".into()));
            }
            return Ok(None);
        };
        let names = || Coll::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ");
        let c = Coll::from_name(name).ok_or_else(|| usage(format!("unknown collective '{name}': expected one of {}", names())))?;
        let alg = match &self.alg {
            None => Algorithm::Auto,
            Some(a) => {
                let has = || coll::algorithms(c).iter().map(|a| a.name()).collect::<Vec<_>>().join(", ");
                let alg = Algorithm::from_name(a).ok_or_else(|| usage(format!("unknown algorithm '{a}': {} has {} (or auto)", c.name(), has())))?;
                if alg != Algorithm::Auto && !coll::algorithms(c).contains(&alg) {
                    return Err(usage(format!("{} has no algorithm '{a}': it has {} (or auto)", c.name(), has())));
                }
                alg
            }
        };
        let ranks = self.ranks.as_deref().ok_or_else(|| usage("--coll needs --ranks N".into()))?;
        let ranks = size(ranks).filter(|&n| (1..=1u64 << 31).contains(&n)).ok_or_else(|| usage(format!("--ranks takes 1 to 2^31 (K, M suffixes allowed), not '{ranks}'")))?;
        let bytes = match &self.bytes {
            None if c == Coll::Barrier => 0,
            None => return Err(usage(format!("--coll {} needs --bytes B", c.name()))),
            Some(b) => size(b).ok_or_else(|| usage(format!("--bytes takes a size (K, M, G suffixes: KiB, MiB, GiB), not '{b}'")))?,
        };
        let root = match &self.root {
            None => 0,
            Some(r) => r.parse::<u32>().ok().filter(|&r| (r as u64) < ranks).ok_or_else(|| usage(format!("--root takes a rank from 0 to {}, not '{r}'", ranks - 1)))?,
        };
        World::new(c, alg, ranks as u32, bytes, root).map(Some).map_err(|e| Failure { code: 1, message: e.to_string(), hint: None })
    }
}

/// `N`, `NK`, `NM`, `NG` (powers of 1024; `KiB`, `MiB`, `GiB`, `B` too).
pub(crate) fn size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let mul = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(size("1M"), Some(1 << 20));
        assert_eq!(size("64k"), Some(64 << 10));
        assert_eq!(size("8"), Some(8));
        assert_eq!(size("2GiB"), Some(2 << 30));
        assert_eq!(size("1.5M"), None);
        assert_eq!(size("x"), None);
    }
}
