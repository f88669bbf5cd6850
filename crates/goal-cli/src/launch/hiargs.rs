//! goalrun's arguments validated and built into what the launch needs: the
//! second parsing stage.
//!
//! Every check that can fail before a process is started happens here, with
//! a message naming the offending value, so that a bad command line never
//! leaves half a job behind: counts and durations are parsed, the progress
//! mode is checked against the runtime's list, `GOAL_ABORT_GRACE` is read,
//! and the program is resolved through `PATH` once (each rank then execs the
//! same file, and "cannot execute" is reported once, with status 127 or 126
//! as a shell would).

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bind::{BindTo, MapBy};
use super::lowargs::LowArgs;
use super::{sys, Failure};

/// The grace period ranks get to end by themselves after one fails.
pub(crate) const DEFAULT_ABORT_GRACE: Duration = Duration::from_secs(3);

/// The runtime's progress modes, what `--progress` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    Manual,
    Thread,
    Spin,
    Kernel,
    Auto,
}

impl Progress {
    const ALL: [Progress; 5] = [
        Progress::Manual,
        Progress::Thread,
        Progress::Spin,
        Progress::Kernel,
        Progress::Auto,
    ];

    /// The name, as given on the command line and exported in `GOAL_PROGRESS`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Progress::Manual => "manual",
            Progress::Thread => "thread",
            Progress::Spin => "spin",
            Progress::Kernel => "kernel",
            Progress::Auto => "auto",
        }
    }
}

/// A validated launch.
#[derive(Debug)]
pub(crate) struct HiArgs {
    /// Number of ranks, at least 1.
    pub ranks: usize,
    pub progress: Option<Progress>,
    /// `--timeout`, and its text for the message.
    pub timeout: Option<(Duration, String)>,
    pub tag_output: bool,
    /// `--bind-to`; `None`: the default (see `bind`).
    pub bind_to: Option<BindTo>,
    pub map_by: MapBy,
    pub report_bindings: bool,
    /// `MASTER_ADDR` and `MASTER_PORT` are set in goalrun's environment:
    /// the ranks inherit them; otherwise goalrun sets both (see
    /// [`job`](super::job), "torchrun's variables").
    pub master_given: bool,
    /// How long survivors of a failed rank may take to end by themselves.
    pub abort_grace: Duration,
    /// The resolved program file that each rank execs.
    pub program: PathBuf,
    /// The program as given: each rank's `argv[0]`.
    pub argv0: OsString,
    pub args: Vec<OsString>,
}

fn usage(msg: String) -> Failure {
    Failure {
        code: 2,
        message: msg,
        usage: true,
    }
}

/// A number of seconds: finite, not negative; zero only if `allow_zero`.
fn seconds(text: &str, allow_zero: bool) -> Option<Duration> {
    let s: f64 = text.trim().parse().ok()?;
    if !s.is_finite() || s < 0.0 || (s == 0.0 && !allow_zero) {
        return None;
    }
    Duration::try_from_secs_f64(s).ok()
}

impl HiArgs {
    /// Validates `low`; `env` looks up environment variables (`PATH`,
    /// `GOAL_ABORT_GRACE`, `MASTER_ADDR`, `MASTER_PORT`). `--help` is handled before this is called.
    pub(crate) fn from_low(
        low: LowArgs,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<HiArgs, Failure> {
        let Some(np) = low.np else {
            return Err(usage("missing -n N, the number of ranks to start".into()));
        };
        let ranks = match np.trim().parse::<u64>() {
            Ok(0) => return Err(usage("-n must be at least 1 (got 0)".into())),
            Ok(n) if n > u32::MAX as u64 => {
                return Err(usage(format!(
                    "-n {n} is more ranks than goalrun can bootstrap"
                )))
            }
            Ok(n) => n as usize,
            Err(_) => {
                return Err(usage(format!(
                    "-n expects a number of ranks (at least 1), got '{np}'"
                )))
            }
        };
        let progress = match low.progress {
            None => None,
            Some(text) => match Progress::ALL.into_iter().find(|p| p.as_str() == text) {
                Some(p) => Some(p),
                None => {
                    return Err(usage(format!(
                        "--progress must be one of manual, thread, spin, kernel, auto; got '{text}'"
                    )))
                }
            },
        };
        let timeout = match low.timeout {
            None => None,
            Some(text) => match seconds(&text, false) {
                Some(d) => Some((d, text.trim().to_owned())),
                None => {
                    return Err(usage(format!(
                        "--timeout expects a positive number of seconds, got '{text}'"
                    )))
                }
            },
        };
        let bind_to = match low.bind_to {
            None => None,
            Some(text) => match BindTo::parse(text.trim()) {
                Some(b) => Some(b),
                None => return Err(usage(format!("--bind-to must be one of {}; got '{text}'", BindTo::NAMES))),
            },
        };
        let map_by = match low.map_by {
            None => MapBy::Core,
            Some(text) => match MapBy::parse(text.trim()) {
                Some(m) => m,
                None => return Err(usage(format!("--map-by must be one of {}; got '{text}'", MapBy::NAMES))),
            },
        };
        let abort_grace = match env("GOAL_ABORT_GRACE") {
            None => DEFAULT_ABORT_GRACE,
            Some(v) => match v.to_str().and_then(|t| seconds(t, true)) {
                Some(d) => d,
                None => {
                    return Err(usage(format!(
                        "GOAL_ABORT_GRACE='{}' is not a number of seconds (at least 0)",
                        v.to_string_lossy()
                    )))
                }
            },
        };
        let master_given = match (env("MASTER_ADDR").is_some(), env("MASTER_PORT").is_some()) {
            (true, true) => true,
            (false, false) => false,
            (addr, _) => {
                let (set, unset) = if addr { ("MASTER_ADDR", "MASTER_PORT") } else { ("MASTER_PORT", "MASTER_ADDR") };
                return Err(usage(format!(
                    "{set} is set but {unset} is not: set both for the ranks (torch's store), \
                     or neither and goalrun picks them (127.0.0.1 and a free port)"
                )));
            }
        };
        let mut command = low.command.into_iter();
        let Some(argv0) = command.next() else {
            return Err(usage("no program to run".into()));
        };
        let program = resolve(&argv0, env("PATH")).map_err(|e| {
            let code = if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            Failure {
                code,
                message: format!(
                    "cannot execute '{}': {}",
                    argv0.to_string_lossy(),
                    sys::describe(&e)
                ),
                usage: false,
            }
        })?;
        Ok(HiArgs {
            ranks,
            progress,
            timeout,
            tag_output: low.tag_output,
            bind_to,
            map_by,
            report_bindings: low.report_bindings,
            master_given,
            abort_grace,
            program,
            argv0,
            args: command.collect(),
        })
    }
}

/// Finds the file `program` names, as `execvp` would: as a path if it has a
/// slash, else in each `PATH` directory (an empty entry is the current
/// directory). A file found but not executable is `PermissionDenied`,
/// nothing found `NotFound`.
fn resolve(program: &OsString, path: Option<OsString>) -> io::Result<PathBuf> {
    let check = |p: &Path| -> io::Result<()> {
        let meta = std::fs::metadata(p)?;
        if meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        sys::executable(p)
    };
    if program.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        check(&p)?;
        return Ok(p);
    }
    let path = path.unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut denied = None;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(std::ffi::OsStr::from_bytes(dir))
        };
        let candidate = dir.join(program);
        match check(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => denied = denied.or(Some(e)),
        }
    }
    Err(denied.unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOENT)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hi(args: &[&str], env: &[(&str, &str)]) -> Result<HiArgs, Failure> {
        let low = LowArgs::parse(args.iter().map(OsString::from)).unwrap();
        let env: Vec<(String, OsString)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        HiArgs::from_low(low, |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn message(args: &[&str]) -> String {
        let f = hi(args, &[]).unwrap_err();
        assert_eq!(f.code, 2, "{}", f.message);
        f.message
    }

    #[test]
    fn a_valid_command_line_is_built() {
        let h = hi(
            &[
                "-n",
                "3",
                "--progress",
                "spin",
                "--timeout",
                "1.5",
                "sh",
                "-c",
                "true",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(h.ranks, 3);
        assert_eq!(h.progress, Some(Progress::Spin));
        assert_eq!(h.timeout.as_ref().unwrap().0, Duration::from_millis(1500));
        assert!(h.program.ends_with("sh"));
        assert_eq!(h.argv0, "sh");
        assert_eq!(h.args.len(), 2);
        assert_eq!(h.abort_grace, DEFAULT_ABORT_GRACE);
    }

    #[test]
    fn bad_values_are_named() {
        assert!(message(&["-n", "0", "sh"]).contains("at least 1 (got 0)"));
        assert!(message(&["-n", "many", "sh"]).contains("got 'many'"));
        assert!(message(&["sh"]).contains("missing -n"));
        assert!(message(&["-n", "1", "--progress", "fast", "sh"]).contains("got 'fast'"));
        assert!(message(&["-n", "1", "--timeout", "0", "sh"]).contains("got '0'"));
        assert!(message(&["-n", "1", "--timeout", "-1", "sh"]).contains("got '-1'"));
        assert!(message(&["-n", "1"]).contains("no program"));
        assert!(message(&["-n", "1", "--bind-to", "board", "sh"]).contains("core, hwthread, socket, none; got 'board'"));
        assert!(message(&["-n", "1", "--map-by", "node", "sh"]).contains("got 'node'"));
        let f = hi(&["-n", "1", "sh"], &[("GOAL_ABORT_GRACE", "soon")]).unwrap_err();
        assert!(
            f.message.contains("GOAL_ABORT_GRACE='soon'"),
            "{}",
            f.message
        );
    }

    #[test]
    fn torch_master_variables_are_both_given_or_neither() {
        assert!(!hi(&["-n", "2", "sh"], &[]).unwrap().master_given);
        let both = [("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29500")];
        assert!(hi(&["-n", "2", "sh"], &both).unwrap().master_given);
        for (one, other) in [(both[0], "MASTER_PORT"), (both[1], "MASTER_ADDR")] {
            let f = hi(&["-n", "2", "sh"], &[one]).unwrap_err();
            assert_eq!(f.code, 2);
            assert!(f.message.contains(&format!("{} is set but {other} is not", one.0)), "{}", f.message);
        }
    }

    #[test]
    fn a_missing_program_is_127() {
        let f = hi(
            &["-n", "1", "no-such-program-goal"],
            &[("PATH", "/usr/bin:/bin")],
        )
        .unwrap_err();
        assert_eq!(f.code, 127);
        assert_eq!(
            f.message,
            "cannot execute 'no-such-program-goal': No such file or directory"
        );
        let f = hi(&["-n", "1", "/etc/passwd"], &[]).unwrap_err();
        assert_eq!(f.code, 126, "{}", f.message);
    }
}
