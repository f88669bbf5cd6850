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

/// `-G`/`-O`'s value, ns per byte with decimals allowed, in picoseconds.
pub(crate) fn ps_per_byte(value: &str) -> Option<u64> {
    let v: f64 = value.parse().ok()?;
    (v.is_finite() && (0.0..1e12).contains(&v)).then(|| (v * 1000.0).round() as u64)
}

/// Sets `prm` from the JSON that `goal calibrate --loggops --out` writes:
/// `"L"`, `"o"`, `"g"` in ns (rounded to whole ns, as LogGOPSim takes
/// them), `"G"`, `"O"` in ns per byte (to the picosecond), `"S"` in bytes.
pub(crate) fn read_params(path: &std::path::Path, prm: &mut goal_sim::Params) -> Result<(), Failure> {
    let bad = |m: String| Failure { code: 1, message: format!("--params {}: {m}", path.display()), hint: None };
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let field = |key: &str| -> Result<f64, Failure> {
        let at = text.find(&format!("\"{key}\":")).ok_or_else(|| bad(format!("no \"{key}\" (expected the JSON of goal calibrate --loggops --out)")))?;
        let rest = text[at + key.len() + 3..].trim_start();
        let end = rest.find([',', '}', '\n']).unwrap_or(rest.len());
        rest[..end].trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| bad(format!("\"{key}\" is not a number of 0 or more")))
    };
    prm.l = field("L")?.round() as u64;
    prm.o = field("o")?.round() as u64;
    prm.g = field("g")?.round() as u64;
    prm.big_g_ps = (field("G")? * 1000.0).round() as u64;
    prm.big_o_ps = (field("O")? * 1000.0).round() as u64;
    prm.s = field("S")?.round() as u64;
    Ok(())
}

#[cfg(test)]
mod param_tests {
    use super::*;

    #[test]
    fn per_byte_costs_read_to_the_picosecond_and_calibrations_load() {
        assert_eq!(ps_per_byte("6"), Some(6000));
        assert_eq!(ps_per_byte("0.1126"), Some(113));
        assert_eq!(ps_per_byte("-1"), None);
        assert_eq!(ps_per_byte("x"), None);
        let path = std::env::temp_dir().join(format!("goal-params-{}.json", std::process::id()));
        std::fs::write(&path, "{\n  \"L\": 120.4,\n  \"o\": 300.0,\n  \"g\": 15.3,\n  \"G\": 0.112646,\n  \"O\": 0.054071,\n  \"S\": 16384,\n  \"measured\": []\n}\n").unwrap();
        let mut prm = goal_sim::Params::default();
        read_params(&path, &mut prm).unwrap();
        assert_eq!((prm.l, prm.o, prm.g, prm.big_g_ps, prm.big_o_ps, prm.s), (120, 300, 15, 113, 54, 16384));
        std::fs::write(&path, "{\"L\": 1}").unwrap();
        let e = read_params(&path, &mut prm).unwrap_err();
        assert!(e.message.contains("no \"o\""), "{}", e.message);
        std::fs::remove_file(&path).unwrap();
    }
}
