//! The subcommands that run today's Python drivers: `goal bench BENCHMARK
//! [ARGS...]` runs `bench/BENCHMARK.py` and `goal tune [ARGS...]` runs
//! `bench/tune.py`, with ARGS passed through untouched (`--help` too, so the
//! driver describes its own options).
//!
//! A driver is looked for in `$GOAL_BENCH_DIR` if that is set, else in
//! `../share/goal/bench` beside goal's executable (where `make install`
//! puts the drivers and the C sources they compile), else in the `bench/`
//! of the source tree this goal was built from; not finding it names every
//! place tried. Once found, goal execs `python3 DRIVER ARGS...` (python3
//! from `PATH`), so the exit status and the signals are the driver's own.
//!
//! The drivers find goal by `--prefix DIR` (see `bench/common.py`: it wants
//! `DIR/bin/goalrun`, `DIR/include/goal.h` and `DIR/lib/pkgconfig/goal.pc`).
//! An installed goal, one whose executable sits in such a `DIR/bin`, gives
//! the driver `--prefix DIR` unless ARGS already give one, and every driver
//! `GOAL_TOOL`, this goal's own path, for the tools it starts (`goal noise`).

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{listing, Context, Failure};

/// The paragraph on drivers that `goal --help` and `goal bench --help` share.
pub(crate) const ABOUT: &str = "\
bench and tune run Python drivers (python3 from PATH), looked for in
$GOAL_BENCH_DIR if set, else in ../share/goal/bench beside goal's executable
(`make install` puts them there), else in the bench/ of the source tree goal
was built from. An installed goal gives them --prefix of its installation
unless the arguments have one. The exit status is the driver's.
";

/// The benchmarks of `goal bench`, each `bench/NAME.py`, with one line each.
const BENCHMARKS: &[(&str, &str)] = &[
    (
        "p2p",
        "point-to-point latency and bandwidth on this machine",
    ),
    ("coll", "every collective and goal algorithm, 2 and 4 ranks"),
    (
        "net",
        "latency, bandwidth and multirail across two emulated hosts (root)",
    ),
    (
        "overlap",
        "overlap with computation and the CPU cost of progress",
    ),
    (
        "mpi",
        "unmodified MPI programs natively and with libgoal-mpi preloaded",
    ),
    (
        "groups",
        "group creation, collectives on a sub-group, half-precision allreduce",
    ),
    (
        "sim",
        "goal sim at 1K to 1M ranks and one 16M-rank collective: time, memory",
    ),
    (
        "torch",
        "the torch.distributed backend beside Gloo; goal's Python package beside mpi4py",
    ),
    (
        "predict",
        "goal sim with goal calibrate's parameters against goal run",
    ),
];

fn benchmark_list() -> String {
    format!(
        "Benchmarks:\n{}",
        listing(BENCHMARKS.iter().map(|(n, t)| (n.to_string(), *t)))
    )
}

fn bench_help() -> String {
    format!(
        "\
goal bench: run one of goal's benchmarks beside Open MPI and MPICH.

Usage: goal bench BENCHMARK [ARGS...]

{}
`goal bench BENCHMARK --help` prints the benchmark's own options: ARGS are
those, passed to its driver, bench/BENCHMARK.py. bench/README.md has the
methods.

{ABOUT}",
        benchmark_list()
    )
}

/// `goal bench BENCHMARK [ARGS...]`.
pub(crate) fn bench(args: Vec<OsString>, cx: &Context) -> Result<i32, Failure> {
    let mut args = args.into_iter();
    let list = || {
        format!(
            "{}Try 'goal bench --help' for more information.",
            benchmark_list()
        )
    };
    let Some(first) = args.next() else {
        return Err(Failure::usage("bench: no benchmark given".into(), list()));
    };
    let name = first.to_string_lossy();
    if name == "-h" || name == "--help" {
        print!("{}", bench_help());
        return Ok(0);
    }
    match BENCHMARKS.iter().find(|(n, _)| *n == name) {
        Some((n, _)) => run_driver(n, args.collect(), cx),
        None if name.starts_with('-') => Err(Failure::usage(
            format!("bench: the benchmark comes first, its options after it (got '{name}')"),
            list(),
        )),
        None => Err(Failure::usage(
            format!("bench: unknown benchmark '{name}'"),
            list(),
        )),
    }
}

/// `goal tune [ARGS...]`.
pub(crate) fn tune(args: Vec<OsString>, cx: &Context) -> Result<i32, Failure> {
    run_driver("tune", args, cx)
}

/// Execs driver `name` with `args` (and `--prefix`, see [`with_prefix`]):
/// returns only if that cannot be done.
fn run_driver(name: &str, args: Vec<OsString>, cx: &Context) -> Result<i32, Failure> {
    let driver = find(name, cx)?;
    let args = with_prefix(args, installed_prefix(cx));
    let mut cmd = Command::new("python3");
    cmd.arg(&driver).args(&args);
    // The drivers start this goal's tools (`goal noise` for --noise).
    if let Some(exe) = &cx.exe {
        cmd.env("GOAL_TOOL", exe);
    }
    let err = cmd.exec();
    Err(cannot_run(&driver, &err, cx))
}

/// The directories a driver may be in, in the order they are tried, each
/// with why it is tried.
fn places(cx: &Context) -> Vec<(PathBuf, &'static str)> {
    if let Some(dir) = &cx.bench_dir {
        return vec![(dir.clone(), "GOAL_BENCH_DIR")];
    }
    let mut dirs = Vec::new();
    if let Some(prefix) = cx
        .exe
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
    {
        dirs.push((prefix.join("share/goal/bench"), "installed beside goal"));
    }
    // This crate is WORKSPACE/crates/goal-cli.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(workspace) = manifest.parent().and_then(Path::parent) {
        dirs.push((
            workspace.join("bench"),
            "the source tree goal was built from",
        ));
    }
    dirs
}

/// The driver file of `name` (`NAME.py`) in the first of [`places`] that
/// has it.
fn find(name: &str, cx: &Context) -> Result<PathBuf, Failure> {
    let file = format!("{name}.py");
    let tried = places(cx);
    if let Some((dir, _)) = tried.iter().find(|(dir, _)| dir.join(&file).is_file()) {
        return Ok(dir.join(&file));
    }
    let list: String = tried
        .iter()
        .map(|(dir, why)| format!("  {} ({why})\n", dir.join(&file).display()))
        .collect();
    Err(Failure {
        code: 127,
        message: format!(
            "cannot find {file}, the driver of '{}'; tried:",
            command_of(name)
        ),
        hint: Some(list),
    })
}

/// How the user asked for driver `name`: `bench p2p` or `tune`.
fn command_of(name: &str) -> String {
    if name == "tune" {
        name.to_owned()
    } else {
        format!("bench {name}")
    }
}

/// The prefix goal is installed in: the parent of the directory of goal's
/// executable, if it has what the drivers look for there.
fn installed_prefix(cx: &Context) -> Option<PathBuf> {
    let prefix = cx.exe.as_deref()?.parent()?.parent()?;
    ["bin/goalrun", "include/goal.h", "lib/pkgconfig/goal.pc"]
        .iter()
        .all(|f| prefix.join(f).is_file())
        .then(|| prefix.to_path_buf())
}

/// `args` with `--prefix PREFIX` in front if there is a prefix and `args`
/// give none themselves (as `--prefix DIR`, `--prefix=DIR` or an
/// abbreviation argparse accepts, `--pre DIR`, before any `--`). In front,
/// because argparse keeps an option's last value: one in `args` that this
/// misses still wins.
fn with_prefix(args: Vec<OsString>, prefix: Option<PathBuf>) -> Vec<OsString> {
    let gives_prefix = args
        .iter()
        .map(|a| a.to_string_lossy())
        .take_while(|a| a != "--")
        .any(|a| {
            let name = a.split('=').next().unwrap_or_default();
            name.len() >= "--pre".len() && "--prefix".starts_with(name)
        });
    match prefix {
        Some(prefix) if !gives_prefix => {
            let mut all = vec![OsString::from("--prefix"), prefix.into_os_string()];
            all.extend(args);
            all
        }
        _ => args,
    }
}

/// Why `python3 driver` could not be exec'd.
fn cannot_run(driver: &Path, err: &io::Error, cx: &Context) -> Failure {
    if err.kind() == io::ErrorKind::NotFound {
        let looked = match &cx.path {
            Some(path) => format!("looked in PATH={}", path.to_string_lossy()),
            None => "PATH is not set".to_owned(),
        };
        return Failure {
            code: 127,
            message: format!(
                "cannot run {}: python3 is not on PATH ({looked})",
                driver.display()
            ),
            hint: None,
        };
    }
    Failure {
        code: 126,
        message: format!("cannot run python3 {}: {err}", driver.display()),
        hint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_prefix_is_added_unless_given() {
        let p = Some(PathBuf::from("/opt/goal"));
        assert_eq!(
            with_prefix(os(&["--quick"]), p.clone()),
            os(&["--prefix", "/opt/goal", "--quick"])
        );
        for given in [
            &["--prefix", "/x"][..],
            &["--prefix=/x"],
            &["--pref", "/x"],
            &["--pre=/x"],
        ] {
            assert_eq!(with_prefix(os(given), p.clone()), os(given), "{given:?}");
        }
        // Not a prefix: too short to be one for argparse, or past `--`.
        assert_eq!(
            with_prefix(os(&["--p"]), p.clone())[..2],
            os(&["--prefix", "/opt/goal"])
        );
        assert_eq!(with_prefix(os(&["--", "--prefix"]), p.clone()).len(), 4);
        assert_eq!(with_prefix(os(&["--quick"]), None), os(&["--quick"]));
    }

    #[test]
    fn goal_bench_dir_is_the_only_place_tried_when_set() {
        let dir = std::env::temp_dir().join(format!("goal-drivers-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cx = Context {
            exe: Some("/opt/goal/bin/goal".into()),
            bench_dir: Some(dir.clone()),
            path: None,
        };
        let f = find("p2p", &cx).unwrap_err();
        assert_eq!(f.code, 127);
        assert!(
            f.message.contains("p2p.py, the driver of 'bench p2p'"),
            "{}",
            f.message
        );
        assert_eq!(
            f.hint.unwrap(),
            format!("  {} (GOAL_BENCH_DIR)\n", dir.join("p2p.py").display())
        );
        std::fs::write(dir.join("tune.py"), "").unwrap();
        assert_eq!(find("tune", &cx).unwrap(), dir.join("tune.py"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_goal_bench_dir_the_install_then_the_source_tree() {
        let cx = Context {
            exe: Some("/nowhere/goal-prefix/bin/goal".into()),
            bench_dir: None,
            path: None,
        };
        let tried = places(&cx);
        assert_eq!(
            tried[0].0,
            Path::new("/nowhere/goal-prefix/share/goal/bench")
        );
        assert_eq!(
            tried[1].0,
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../bench")
                .canonicalize()
                .unwrap()
        );
        // Built in this tree, the drivers are found in it.
        assert_eq!(find("coll", &cx).unwrap(), tried[1].0.join("coll.py"));
        assert_eq!(installed_prefix(&cx), None);
    }

    #[test]
    fn an_unknown_benchmark_is_a_usage_error() {
        let f = bench(os(&["p3p"]), &Context::default()).unwrap_err();
        assert_eq!(
            (f.code, f.message.as_str()),
            (2, "bench: unknown benchmark 'p3p'")
        );
        assert!(f.hint.unwrap().contains("  overlap  "));
        let f = bench(os(&["--quick", "p2p"]), &Context::default()).unwrap_err();
        assert!(f.message.contains("got '--quick'"), "{}", f.message);
        assert_eq!(bench(vec![], &Context::default()).unwrap_err().code, 2);
    }
}
