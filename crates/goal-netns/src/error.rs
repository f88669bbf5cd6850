//! The one error type of this crate, with a kind a caller can branch on.
//!
//! Almost everything here is done by running `ip`, `tc` and friends, so most
//! failures are "a command said no". Such an error carries the command line
//! and the command's own stderr: "RTNETLINK answers: File exists" is what
//! tells you a leftover is in the way, and a paraphrase would hide it.

use std::fmt;

/// What went wrong, coarsely: enough to decide between "skip", "fix the
/// spec" and "report".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// This process cannot build clusters here: not root, no `ip netns`,
    /// a tool missing. Tests turn this into "skipped".
    Unavailable,
    /// The spec or an argument is out of range (a host index past the end,
    /// a bad rate, a bad cluster name).
    Invalid,
    /// A named cluster that should exist does not.
    NotFound,
    /// A named cluster that should not exist yet does.
    AlreadyExists,
    /// An external command ran and failed; the message has its stderr.
    Command,
    /// A file operation or a spawn failed.
    Io,
}

/// An error of a cluster operation: its kind and a message that names the
/// operation (and, for [`ErrorKind::Command`], the command and its stderr).
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid, message)
    }

    pub(crate) fn io(what: impl fmt::Display, err: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, format!("{what}: {err}"))
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message alone (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
