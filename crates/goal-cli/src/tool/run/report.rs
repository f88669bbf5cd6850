//! What `goal run` prints on rank 0: a table of every rank's finish times
//! and the makespan, and the same as JSON (`--json PATH`).

use std::fmt::Write;

/// One rank's part of the report.
pub(super) struct Row {
    /// Operations (sends, receives, calcs) and sends, from the file.
    pub ops: u64,
    pub sends: u64,
    /// Bytes its sends carry.
    pub bytes: u64,
    /// Receives whose bytes were checked, and receives in all.
    pub checked: u64,
    pub recvs: u64,
    /// Seconds from the common start to its last operation's end, per
    /// measured iteration.
    pub times: Vec<f64>,
}

/// The whole report.
pub(super) struct Report<'a> {
    pub file: &'a str,
    pub iterations: usize,
    pub warmup: usize,
    pub progress: &'a str,
    pub rows: Vec<Row>,
}

/// (min, median, max) of `v` (zeros when empty).
fn stats(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    let median = if s.len() % 2 == 1 { s[m] } else { (s[m - 1] + s[m]) / 2.0 };
    (s[0], median, s[s.len() - 1])
}

impl Report<'_> {
    /// Per iteration, the latest finish of any rank.
    fn makespans(&self) -> Vec<f64> {
        (0..self.iterations).map(|i| self.rows.iter().map(|r| r.times.get(i).copied().unwrap_or(0.0)).fold(0.0, f64::max)).collect()
    }

    fn coverage(&self) -> (u64, u64) {
        (self.rows.iter().map(|r| r.checked).sum(), self.rows.iter().map(|r| r.recvs).sum())
    }

    /// The table, for standard output.
    pub(super) fn table(&self) -> String {
        let mut t = String::new();
        let (checked, recvs) = self.coverage();
        let _ = writeln!(
            t,
            "goal run {}: {} ranks, {} iteration(s) after {} warmup, progress {}; bytes checked on {checked} of {recvs} receive(s) per iteration",
            self.file,
            self.rows.len(),
            self.iterations,
            self.warmup,
            self.progress
        );
        let _ = writeln!(t, "{:>6} {:>9} {:>9} {:>14} {:>12} {:>12} {:>12}", "rank", "ops", "sends", "bytes sent", "finish min", "median", "max (us)");
        for (r, row) in self.rows.iter().enumerate() {
            let (lo, med, hi) = stats(&row.times);
            let _ = writeln!(t, "{r:>6} {:>9} {:>9} {:>14} {:>12.2} {:>12.2} {:>12.2}", row.ops, row.sends, row.bytes, lo * 1e6, med * 1e6, hi * 1e6);
        }
        let (lo, med, hi) = stats(&self.makespans());
        let _ = writeln!(t, "makespan (us, latest finish per iteration): min {:.2}  median {:.2}  max {:.2}", lo * 1e6, med * 1e6, hi * 1e6);
        t
    }

    /// The same as JSON (seconds).
    pub(super) fn json(&self) -> String {
        let list = |v: &[f64]| v.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>().join(",");
        let trio = |(a, b, c): (f64, f64, f64)| format!("\"min\":{a:e},\"median\":{b:e},\"max\":{c:e}");
        let (checked, recvs) = self.coverage();
        let mut j = String::new();
        let file = self.file.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = write!(
            j,
            "{{\"file\":\"{file}\",\"ranks\":{},\"iterations\":{},\"warmup\":{},\"progress\":\"{}\",\"receives_checked\":{checked},\"receives\":{recvs},\"unit\":\"s\",\"per_rank\":[",
            self.rows.len(),
            self.iterations,
            self.warmup,
            self.progress
        );
        for (r, row) in self.rows.iter().enumerate() {
            let sep = if r == 0 { "" } else { "," };
            let _ = write!(
                j,
                "{sep}{{\"rank\":{r},\"ops\":{},\"sends\":{},\"bytes_sent\":{},\"receives_checked\":{},\"receives\":{},\"finish\":[{}],{}}}",
                row.ops,
                row.sends,
                row.bytes,
                row.checked,
                row.recvs,
                list(&row.times),
                trio(stats(&row.times))
            );
        }
        let m = self.makespans();
        let _ = writeln!(j, "],\"makespan\":{{\"all\":[{}],{}}}}}", list(&m), trio(stats(&m)));
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), (1.0, 2.0, 3.0));
        assert_eq!(stats(&[4.0, 1.0, 2.0, 3.0]), (1.0, 2.5, 4.0));
        assert_eq!(stats(&[]), (0.0, 0.0, 0.0));
    }
}
