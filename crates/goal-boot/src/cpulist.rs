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

/// The machine's online CPUs (`/sys/devices/system/cpu/online`); empty
/// if that cannot be read.
pub fn online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_list(&t))
        .unwrap_or_default()
}

/// A process' binding in words, from the CPUs it may run on (`mine`) and
/// the machine's `online` ones: `bound to CPUs 1 of the online 0-1`, or
/// `not bound: CPUs 0-1, every online CPU`. Said the same way by goal-rt
/// under `GOAL_DEBUG=1` and by `goal info`.
pub fn binding(mine: &[usize], online: &[usize]) -> String {
    let list = to_list(mine);
    if mine.is_empty() {
        "CPUs unknown (sched_getaffinity failed)".to_string()
    } else if online.is_empty() || mine.len() >= online.len() {
        format!("not bound: CPUs {list}, every online CPU")
    } else {
        format!("bound to CPUs {list} of the online {}", to_list(online))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_is_described_against_the_online_cpus() {
        assert_eq!(binding(&[1], &[0, 1]), "bound to CPUs 1 of the online 0-1");
        assert_eq!(binding(&[0, 1], &[0, 1]), "not bound: CPUs 0-1, every online CPU");
        assert!(binding(&[], &[0, 1]).starts_with("CPUs unknown"));
    }

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
