//! The calling thread's CPU affinity: read it, set it, pin it to one CPU.
//!
//! Calibration pins its two measuring threads to two CPUs; the helper
//! thread is pinned by `GOAL_PROGRESS_CPU`, or moves to the CPU that the
//! ranks' helpers share while its application computes (see `progress`).
//!
//! Which CPUs the ranks of a machine have is not this process' own mask
//! alone: a launcher that binds each rank to a core (`mpirun --bind-to
//! core`, Open MPI's default for two ranks; `srun --cpu-bind=cores`)
//! leaves each rank one CPU, and counted from that, 2 ranks on a 2-core
//! machine looked like 2 ranks on 1 core (no CMA calibrated, no helper
//! placement). So the ranks exchange their masks at start-up (as CPU
//! lists, [`to_list`]) and use the union of the masks of the ranks on
//! their kernel.

/// A set of CPUs.
pub(crate) type CpuSet = libc::cpu_set_t;

/// The CPUs this thread may run on.
pub(crate) fn current() -> Option<CpuSet> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and
    // sched_getaffinity(0, ..) writes at most its size into it.
    unsafe {
        let mut set: CpuSet = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<CpuSet>(), &mut set) == 0).then_some(set)
    }
}

/// The CPUs of `set`, in order.
pub(crate) fn cpus(set: &CpuSet) -> Vec<usize> {
    // SAFETY: CPU_ISSET reads inside the set for indices below its capacity.
    (0..8 * std::mem::size_of::<CpuSet>()).filter(|&c| unsafe { libc::CPU_ISSET(c, set) }).collect()
}

/// Lets this thread run on `set` only.
pub(crate) fn set(set: &CpuSet) -> std::io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t; this changes only this thread's affinity.
    match unsafe { libc::sched_setaffinity(0, std::mem::size_of::<CpuSet>(), set) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Runs this thread on `cpu` alone.
pub(crate) fn pin(cpu: usize) -> std::io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<CpuSet>() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and `cpu` is below
    // its capacity (checked).
    let one = unsafe {
        let mut s: CpuSet = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        s
    };
    set(&one)
}

/// `cpus` as a CPU list such as `0-3,8` (sorted, no duplicates expected).
pub(crate) fn to_list(cpus: &[usize]) -> String {
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
        out.push_str(&if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    out
}

/// The CPUs of a list such as `0-3,8,10-11`, sorted; `None` if malformed.
pub(crate) fn parse_list(list: &str) -> Option<Vec<usize>> {
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
