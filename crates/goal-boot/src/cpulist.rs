//! CPU lists as the kernel writes them (`0-3,8,10-11`: `Cpus_allowed_list`,
//! `/sys/devices/system/cpu/online`, cgroup cpusets), read and written.
//!
//! Shared by the two sides of a launch: goalrun, which reads the CPUs it
//! may use and binds its ranks, and the ranks, which exchange their masks
//! at start-up in this form (goal-rt's `affinity`).

/// `cpus` (sorted, no duplicates expected) as a CPU list such as `0-3,8`.
pub fn to_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out
}

/// The CPUs of a list such as `0-3,8,10-11`, sorted; `None` if malformed.
pub fn parse_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        if b < a || b - a > 1 << 16 {
            return None;
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(to_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_list("5"), Some(vec![5]));
        assert_eq!(parse_list(""), Some(vec![]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("x"), None);
        for cpus in [vec![], vec![7], vec![0, 2, 4], (0..64).collect::<Vec<_>>()] {
            assert_eq!(parse_list(&to_list(&cpus)), Some(cpus));
        }
    }
}
