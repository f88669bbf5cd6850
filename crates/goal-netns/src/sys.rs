//! The only place that touches the system: finding the tools, running them,
//! and the few direct calls (effective uid, signals).
//!
//! Everything else in the crate builds command lines and reads their output
//! through [`run`], so every failure leaves the same trail: the command line
//! and its stderr. We drive `ip`/`tc` instead of speaking rtnetlink ourselves
//! because their behaviour is what people reproduce by hand when a test
//! fails, and because the whole cluster is a few dozen commands (~80 ms).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::error::{Error, ErrorKind};

/// The external programs a cluster needs, found once by absolute path so
/// that a caller's `env_clear()` or a root shell without `/usr/sbin` on PATH
/// does not change which binary runs.
#[derive(Debug)]
pub(crate) struct Tools {
    pub ip: PathBuf,
    pub tc: PathBuf,
    pub unshare: PathBuf,
    pub sh: PathBuf,
    pub hostname: PathBuf,
}

/// The tools, or why one is missing (cached: the answer does not change
/// while the process lives).
pub(crate) fn tools() -> Result<&'static Tools, Error> {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    let found = TOOLS.get_or_init(|| {
        Ok(Tools {
            ip: find_tool("ip")?,
            tc: find_tool("tc")?,
            unshare: find_tool("unshare")?,
            sh: find_tool("sh")?,
            hostname: find_tool("hostname")?,
        })
    });
    found
        .as_ref()
        .map_err(|why| Error::new(ErrorKind::Unavailable, why.clone()))
}

/// `name` in the usual system directories, then on PATH.
pub(crate) fn find_tool(name: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .into_iter()
        .map(PathBuf::from);
    dirs.chain(std::env::split_paths(&path))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            format!("{name} not found (looked in /usr/sbin, /usr/bin, /sbin, /bin and PATH)")
        })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The command line as one string a shell would read back the same, for
/// messages.
pub(crate) fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `cmd` to completion with no stdin; returns its stdout, or an error
/// that names the command line and carries its stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<String, Error> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format_args!("could not start `{}`", describe(cmd)), e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(Error::new(
            ErrorKind::Command,
            format!(
                "`{}` failed ({}): {}",
                describe(cmd),
                out.status,
                stderr.trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip ARGS...`, checked.
pub(crate) fn ip<S: AsRef<OsStr>>(args: &[S]) -> Result<String, Error> {
    run(Command::new(&tools()?.ip).args(args))
}

/// `tc ARGS...`, checked.
pub(crate) fn tc<S: AsRef<OsStr>>(args: &[S]) -> Result<String, Error> {
    run(Command::new(&tools()?.tc).args(args))
}

/// The names of all named network namespaces (`ip netns list`, first word
/// of each line: the rest is an optional "(id: N)").
pub(crate) fn netns_list() -> Result<Vec<String>, Error> {
    let out = ip(&["netns", "list"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Removes a named namespace after killing every process still inside it.
///
/// The kill matters: a process that lives on inside the namespace keeps it
/// (and its interfaces) alive after the name is gone, where nobody can see
/// or reach it. The processes are the cluster's own (nothing else enters
/// its namespaces), typically a forgotten child or an orphaned `orted`.
pub(crate) fn netns_delete(ns: &str) -> Result<(), Error> {
    let pids = ip(&["netns", "pids", ns])?;
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<libc::pid_t>().ok())
    {
        // SAFETY: kill(2) has no memory-safety preconditions; at worst the
        // pid has exited meanwhile and we get ESRCH, which we ignore.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    ip(&["netns", "delete", ns]).map(drop)
}

/// Whether this process runs with effective uid 0.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a process with this pid exists (zombies count: conservative,
/// since this decides whether a cluster may be garbage-collected).
pub(crate) fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// `s` as one word for `sh`: bare if it is made of safe characters, else in
/// single quotes (with each `'` written as `'\''`).
pub(crate) fn shell_quote(s: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(&b);
    if !s.is_empty() && s.bytes().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
