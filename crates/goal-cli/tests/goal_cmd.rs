//! `goal` as users run it: the real binary, with the real drivers of this
//! source tree where a test needs one to answer (`--help` only: no
//! benchmark runs here), and with stand-in drivers in an installed layout
//! where a test looks at what goal passes on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const GOAL: &str = env!("CARGO_BIN_EXE_goal");

/// A fresh directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "goal-cmd-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // goal sees its own path with the links resolved.
        Dir(dir.canonicalize().unwrap())
    }

    /// Writes `text` to `rel`, creating the directories on the way.
    fn file(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run of goal did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `goal` (or `exe`) with `args`, without GOAL_BENCH_DIR unless `env`
/// sets it.
fn run_exe(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("GOAL_BENCH_DIR")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // A copy of goal just written may be held open for writing for a moment
    // by a child another test thread forked before its exec (the fd is
    // close-on-exec but inherited until then): Linux refuses to execute it
    // with ETXTBSY until that child execs, so try again briefly.
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => break r.expect("goal could not be started"),
        }
    };
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn goal(args: &[&str], env: &[(&str, &str)]) -> Run {
    run_exe(Path::new(GOAL), args, env)
}

#[test]
fn help_lists_bench_and_tune() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let r = goal(args, &[]);
        assert_eq!(r.code, Some(0), "goal {args:?}: {}", r.stderr);
        for line in ["  bench BENCHMARK [ARGS...]", "  tune [ARGS...]", "  help "] {
            assert!(
                r.stdout.contains(line),
                "goal {args:?} lacks {line:?}:\n{}",
                r.stdout
            );
        }
    }
    let r = goal(&["bench", "--help"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for name in ["p2p", "coll", "net", "overlap", "mpi", "groups", "torch"] {
        assert!(
            r.stdout.contains(&format!("\n  {name} ")),
            "goal bench --help lacks {name}:\n{}",
            r.stdout
        );
    }
}

#[test]
fn version_names_the_crate_version() {
    let r = goal(&["--version"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, format!("goal {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn bench_p2p_help_reaches_the_driver() {
    // Every spelling of the question reaches bench/p2p.py's argparse.
    for args in [
        &["bench", "p2p", "--help"][..],
        &["help", "bench", "p2p"],
        &["--help", "bench", "p2p"],
    ] {
        let r = goal(args, &[]);
        assert_eq!(r.code, Some(0), "goal {args:?}: {}", r.stderr);
        assert!(
            r.stdout.contains("Point-to-point benchmark of goal")
                && r.stdout.contains("--prefix PREFIX"),
            "goal {args:?} did not print p2p.py's help:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn an_unknown_subcommand_exits_2_naming_it() {
    let r = goal(&["frobnicate", "--quick"], &[]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("unknown subcommand 'frobnicate'"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("  bench ") && r.stderr.contains("  tune "),
        "no list:\n{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let r = goal(&["bench", "p3p"], &[]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("unknown benchmark 'p3p'"), "{}", r.stderr);
    let r = goal(&[], &[]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("no subcommand"), "{}", r.stderr);
}

#[test]
fn a_missing_driver_names_the_path_tried() {
    let dir = Dir::new();
    let r = goal(
        &["bench", "p2p", "--help"],
        &[("GOAL_BENCH_DIR", dir.0.to_str().unwrap())],
    );
    assert_eq!(r.code, Some(127), "{}", r.stderr);
    let tried = dir.0.join("p2p.py");
    assert!(
        r.stderr.contains("cannot find p2p.py")
            && r.stderr
                .contains(&format!("{} (GOAL_BENCH_DIR)", tried.display())),
        "{}",
        r.stderr
    );
}

#[test]
fn a_missing_python3_is_named() {
    let empty = Dir::new();
    let r = goal(&["tune", "--help"], &[("PATH", empty.0.to_str().unwrap())]);
    assert_eq!(r.code, Some(127), "{}", r.stderr);
    assert!(
        r.stderr.contains("python3 is not on PATH") && r.stderr.contains(empty.0.to_str().unwrap()),
        "{}",
        r.stderr
    );
}

/// An installed goal (`make install`'s layout, with empty stand-ins for the
/// library) gives its drivers `--prefix` of its installation unless told
/// one, and exits with the driver's status.
#[test]
fn an_installed_goal_runs_its_drivers_with_its_prefix() {
    let prefix = Dir::new();
    for f in ["bin/goalrun", "include/goal.h", "lib/pkgconfig/goal.pc"] {
        prefix.file(f, "");
    }
    let exe = prefix.0.join("bin/goal");
    std::fs::copy(GOAL, &exe).unwrap();
    // A stand-in driver: prints its arguments, exits 3.
    prefix.file(
        "share/goal/bench/p2p.py",
        "import json, sys\nprint(json.dumps(sys.argv[1:]))\nsys.exit(3)\n",
    );
    let p = prefix.0.to_str().unwrap();
    let r = run_exe(&exe, &["bench", "p2p", "--quick"], &[]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        format!(r#"["--prefix", "{p}", "--quick"]"#)
    );
    let r = run_exe(&exe, &["bench", "p2p", "--prefix=/elsewhere"], &[]);
    assert_eq!(
        r.stdout.trim(),
        r#"["--prefix=/elsewhere"]"#,
        "{}",
        r.stderr
    );
    // A driver not installed there comes from the source tree.
    let r = run_exe(&exe, &["tune", "--help"], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("usage: tune.py"), "{}", r.stdout);
}
