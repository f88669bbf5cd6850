//! Where goalrun's ranks run, checked from the ranks' own
//! `/proc/self/status` (`Cpus_allowed_list`): the default (a core per rank
//! while the cores suffice, nothing bound beyond), `--bind-to none`, an
//! explicit binding that cannot be kept, `--report-bindings` against what
//! the kernel says, goalrun under `taskset`, and a goal rank that keeps
//! the binding it was started with and says so under `GOAL_DEBUG=1`.
//!
//! Expectations come from the test process' own affinity and the kernel's
//! topology files, so the tests hold on any machine; those that need two
//! cores, or `taskset`, say "skipped" where they cannot run.

mod util;

use std::collections::BTreeMap;
use std::process::Command;

const GOALRUN: &str = env!("CARGO_BIN_EXE_goalrun");

/// What each rank of the shell program below prints: its pid and its CPUs.
const SHOW: &str = "echo pid=$$; grep Cpus_allowed_list /proc/self/status";

/// A CPU list (`0-3,8`) as CPUs.
fn parse_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap());
    }
    cpus
}

/// The CPUs this test process may run on.
fn allowed() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    parse_list(status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap())
}

/// The allowed CPUs grouped by core (socket, core id), in that order.
fn cores() -> Vec<Vec<usize>> {
    let topo = |cpu: usize, what: &str| -> usize {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(cpu)
    };
    let mut by: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for cpu in allowed() {
        by.entry((topo(cpu, "physical_package_id"), topo(cpu, "core_id"))).or_default().push(cpu);
    }
    by.into_values().collect()
}

struct Ranks {
    status: i32,
    /// Per rank: (pid, CPUs it may run on), from its own output.
    ranks: BTreeMap<usize, (u32, Vec<usize>)>,
    stderr: String,
}

/// A binding case: what comes before goalrun, goalrun's options, and the
/// CPUs each rank must get.
type Run<'a> = (Vec<&'a str>, Vec<&'a str>, Vec<Vec<usize>>);

/// `[prefix...] goalrun ARGS --tag-output sh -c SHOW`, and what each rank said.
fn show(prefix: &[&str], args: &[&str]) -> Ranks {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(GOALRUN);
            c
        }
        None => Command::new(GOALRUN),
    };
    let out = cmd.args(args).args(["--tag-output", "--timeout", "60", "sh", "-c", SHOW]).output().expect("start goalrun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut ranks: BTreeMap<usize, (u32, Vec<usize>)> = BTreeMap::new();
    for line in stdout.lines() {
        let Some((tag, text)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else { continue };
        let e = ranks.entry(tag.parse().unwrap()).or_default();
        if let Some(pid) = text.strip_prefix("pid=") {
            e.0 = pid.trim().parse().unwrap();
        } else if let Some(list) = text.strip_prefix("Cpus_allowed_list:") {
            e.1 = parse_list(list);
        }
    }
    Ranks { status: out.status.code().unwrap_or(-1), ranks, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

fn cpus_of(r: &Ranks) -> Vec<Vec<usize>> {
    r.ranks.values().map(|(_, c)| c.clone()).collect()
}

#[test]
fn by_default_each_rank_gets_a_core_of_its_own() {
    let cores = cores();
    if cores.len() < 2 {
        println!("skipped: {} core(s) allowed, 2 needed", cores.len());
        return;
    }
    let r = show(&[], &["-n", "2"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(cpus_of(&r), vec![cores[0].clone(), cores[1].clone()], "{}", r.stderr);
}

#[test]
fn more_ranks_than_cores_and_bind_to_none_leave_every_rank_every_cpu() {
    let (all, n) = (allowed(), cores().len());
    let r = show(&[], &["-n", &(n + 1).to_string()]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(cpus_of(&r), vec![all.clone(); n + 1], "{} ranks on {n} cores: {}", n + 1, r.stderr);
    let r = show(&[], &["-n", "2", "--bind-to", "none"]);
    assert_eq!(cpus_of(&r), vec![all.clone(); 2], "{}", r.stderr);
    // A single rank is not bound either (see goalrun's `bind`).
    assert_eq!(cpus_of(&show(&[], &["-n", "1"])), vec![all]);
}

#[test]
fn a_binding_that_cannot_be_kept_is_refused_before_any_rank_starts() {
    let n = cores().len() + 1;
    let r = show(&[], &["-n", &n.to_string(), "--bind-to", "core"]);
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("--bind-to core: {n} ranks, but only {} core(s)", n - 1)), "{}", r.stderr);
    assert!(r.ranks.is_empty(), "ranks ran: {:?}", r.ranks);
}

#[test]
fn report_bindings_says_what_the_kernel_says() {
    for args in [&["-n", "2"][..], &["-n", "3"], &["-n", "2", "--bind-to", "hwthread"]] {
        let mut args = args.to_vec();
        args.push("--report-bindings");
        let r = show(&[], &args);
        assert_eq!(r.status, 0, "{args:?}: {}", r.stderr);
        for (rank, (pid, cpus)) in &r.ranks {
            let line = r
                .stderr
                .lines()
                .find(|l| l.starts_with(&format!("goalrun: rank {rank} (pid {pid}) ")))
                .unwrap_or_else(|| panic!("{args:?}: no report for rank {rank} (pid {pid}):\n{}", r.stderr));
            let listed = line.split("CPUs ").nth(1).and_then(|t| t.split(':').next()).unwrap();
            assert_eq!(parse_list(listed), *cpus, "{args:?}: {line}");
            let bound = cpus.len() < allowed().len() || !line.contains("not bound");
            assert!(bound == line.contains(" bound to "), "{args:?}: {line}");
            assert!(line.ends_with(']') && line.contains(": ["), "{line}");
        }
        assert_eq!(r.ranks.len(), args[1].parse::<usize>().unwrap(), "{}", r.stderr);
    }
}

/// `taskset` from util-linux, if this machine has it.
fn taskset() -> Option<&'static str> {
    ["/usr/bin/taskset", "/bin/taskset"].into_iter().find(|p| std::path::Path::new(p).exists())
}

#[test]
fn under_taskset_goalrun_shares_out_only_the_cpus_it_was_given() {
    let (Some(taskset), all) = (taskset(), allowed()) else {
        println!("skipped: no taskset");
        return;
    };
    if all.len() < 2 {
        println!("skipped: one CPU");
        return;
    }
    let last = all[all.len() - 1].to_string();
    // One CPU for two ranks: nothing to bind, both stay on it.
    let r = show(&[taskset, "-c", &last], &["-n", "2"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(cpus_of(&r), vec![vec![all[all.len() - 1]]; 2], "{}", r.stderr);
    // One rank bound explicitly: to that CPU's core, within the set.
    let r = show(&[taskset, "-c", &last], &["-n", "1", "--bind-to", "core"]);
    assert_eq!(cpus_of(&r), vec![vec![all[all.len() - 1]]], "{}", r.stderr);
}

const KEEP_NAME: &str = "a_goal_rank_keeps_the_binding_it_was_started_with_and_reports_it";

/// One rank: its CPUs before and after `init`, printed, and a barrier.
fn keep_body() {
    let before = allowed();
    let rt = goal_rt::init().expect("GOAL_Init");
    let after = allowed();
    println!("rank {} before={before:?} after={after:?}", rt.rank());
    assert_eq!(before, after, "rank {}: goal changed the binding it was started with", rt.rank());
}

#[test]
fn a_goal_rank_keeps_the_binding_it_was_started_with_and_reports_it() {
    if util::in_job() {
        keep_body();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let all = allowed();
    let last = all[all.len() - 1];
    let last_s = last.to_string();
    // (before goalrun, goalrun's options, each rank's CPUs)
    let mut runs: Vec<Run> = vec![(vec![], vec!["--bind-to", "none"], vec![all.clone(); 2])];
    let cores = cores();
    if cores.len() >= 2 {
        runs.push((vec![], vec![], cores[..2].to_vec())); // goalrun's default: a core each
    }
    if let (Some(t), true) = (taskset(), all.len() >= 2) {
        runs.push((vec![t, "-c", &last_s], vec![], vec![vec![last]; 2])); // bound by taskset
    }
    for (prefix, args, want) in runs {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(GOALRUN);
                c
            }
            None => Command::new(GOALRUN),
        };
        let out = cmd
            .args(["-n", "2", "--timeout", "120"])
            .args(&args)
            .arg("--")
            .arg(&exe)
            .args([KEEP_NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env("GOAL_DEBUG", "1")
            .output()
            .expect("start goalrun");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{prefix:?} {args:?}: {}\n{stdout}\n{stderr}", out.status);
        for (rank, cpus) in want.iter().enumerate() {
            assert!(stdout.contains(&format!("rank {rank} before={cpus:?} after={cpus:?}")), "{prefix:?} {args:?}: rank {rank} should run on {cpus:?}:\n{stdout}");
            let line = stderr.lines().find(|l| l.starts_with(&format!("goal: rank {rank} (pid "))).unwrap_or_else(|| panic!("no GOAL_DEBUG binding line for rank {rank}:\n{stderr}"));
            let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
            let bound = cpus.len() < parse_list(&online).len();
            assert_eq!(line.contains("bound to CPUs"), bound, "{line}");
            assert!(line.contains("(launcher: goalrun)"), "{line}");
        }
    }
}

/// `goal info` as the program of a job: one line per rank, its binding in
/// goal's words, matching what the kernel gives that rank.
#[test]
fn goal_info_under_goalrun_says_each_ranks_binding() {
    let goal = env!("CARGO_BIN_EXE_goal");
    let (all, cores) = (allowed(), cores());
    let online = parse_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    let n = if cores.len() >= 2 { 2 } else { 1 };
    for extra in [&[][..], &["--bind-to", "none"]] {
        let out = Command::new(GOALRUN).args(["-n", &n.to_string()]).args(extra).arg(goal).arg("info").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{extra:?}: {text}");
        // (`rank` is the rank the line names, not only an index of `cores`.)
        #[allow(clippy::needless_range_loop)]
        for rank in 0..n {
            let line = text.lines().find(|l| l.starts_with(&format!("goal info: rank {rank} of {n} (launcher goalrun, "))).unwrap_or_else(|| panic!("{extra:?}: no line for rank {rank}:\n{text}"));
            let want: &[usize] = if extra.is_empty() && n >= 2 { &cores[rank] } else { &all };
            let listed = line.split("CPUs ").nth(1).unwrap().split([' ', ',']).next().unwrap();
            assert_eq!(parse_list(listed), want, "{extra:?}: {line}");
            assert_eq!(line.contains("bound to CPUs"), want.len() < online.len(), "{line}");
        }
    }
    let out = Command::new(goal).arg("info").env_remove("GOAL_RANK").env_remove("GOAL_BOOTSTRAP").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("goal info: rank 0 of 1 (launcher single, "), "{out:?}");
}
