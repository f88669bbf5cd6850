//! Removing what dead processes left behind.
//!
//! A cluster is removed when its [`Cluster`](crate::Cluster) value drops,
//! but a process killed by SIGKILL (a timed-out test, a ^C'd benchmark)
//! never drops anything. Its namespaces are named after its pid
//! (`g<pid>-<seq>-...`, see [`crate::plan`]), so a later run can tell them
//! from live clusters of other processes and remove just those. Named
//! clusters (`goal-<name>-...`) are deliberate and left alone.
//!
//! A pid can be reused by an unrelated process before `gc` runs; then that
//! leftover is kept until the pid is free again: a missed removal, never a
//! wrong one.

use crate::cluster::workdir_for;
use crate::error::Error;
use crate::{plan, sys};

/// Removes the namespaces and work directories of clusters whose creating
/// process is gone; returns what it removed (namespace names and
/// directory paths). Keeps going after a failure and returns the first.
pub fn gc() -> Result<Vec<String>, Error> {
    let dead = |tag_pid: Option<u32>| tag_pid.is_some_and(|pid| !sys::pid_alive(pid));
    let mut removed = Vec::new();
    let mut first_error = None;
    for ns in sys::netns_list()? {
        if dead(plan::parse_ns(&ns).and_then(|n| n.pid)) {
            match sys::netns_delete(&ns) {
                Ok(()) => removed.push(ns),
                Err(e) => drop(first_error.get_or_insert(e)),
            }
        }
    }
    let tmp = std::env::temp_dir();
    let entries = std::fs::read_dir(&tmp)
        .map_err(|e| Error::io(format_args!("listing {}", tmp.display()), e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(tag) = name.to_str().and_then(|n| n.strip_prefix("goal-netns-")) else {
            continue;
        };
        if dead(plan::parse_ns(&plan::switch_ns(tag)).and_then(|n| n.pid)) {
            let dir = workdir_for(tag);
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed.push(dir.display().to_string()),
                Err(e) => drop(
                    first_error
                        .get_or_insert(Error::io(format_args!("removing {}", dir.display()), e)),
                ),
            }
        }
    }
    first_error.map_or(Ok(removed), Err)
}
