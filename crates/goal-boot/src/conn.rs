//! A stream to or from a bootstrap server: goalrun's Unix socket or the TCP
//! store. The server and the client are written once, against [`Conn`] and
//! [`Listener`]; only where a connection comes from differs.
//!
//! An enum rather than a trait: there are exactly two kinds, both std types
//! with the same inherent methods, and an enum keeps the server's types free
//! of generic parameters.

use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use crate::sys;

/// Keepalive timers for TCP connections, in seconds: idle, interval, probes.
/// A store peer whose host vanished is noticed after about 10 + 3 x 5 s.
pub(crate) const KEEPALIVE: (i32, i32, i32) = (10, 5, 3);

/// One connected stream.
#[derive(Debug)]
pub(crate) enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    pub(crate) fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.shutdown(how),
            Conn::Tcp(s) => s.shutdown(how),
        }
    }

    pub(crate) fn set_read_timeout(&self, limit: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_read_timeout(limit),
            Conn::Tcp(s) => s.set_read_timeout(limit),
        }
    }

    /// Writes all of `bytes` without ever raising SIGPIPE ([`sys::send_all`]).
    pub(crate) fn send_all(&self, bytes: &[u8]) -> io::Result<()> {
        sys::send_all(self.as_raw_fd(), bytes)
    }

    /// Prepares a TCP stream for bootstrap traffic: no Nagle delay on the
    /// small request-reply frames, and keepalive so that a vanished host
    /// ends the connection. A no-op for Unix sockets.
    pub(crate) fn tune(&self) -> io::Result<()> {
        if let Conn::Tcp(s) = self {
            s.set_nodelay(true)?;
            let (idle, interval, count) = KEEPALIVE;
            sys::set_keepalive(s.as_raw_fd(), idle, interval, count)?;
        }
        Ok(())
    }
}

impl AsRawFd for Conn {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Tcp(s) => s.as_raw_fd(),
        }
    }
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => (&*s).read(buf),
            Conn::Tcp(s) => (&*s).read(buf),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

/// A bound, listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    /// goalrun's socket and its path, removed when the server stops.
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    /// Accepts one connection; the string describes the peer for messages.
    pub(crate) fn accept(&self) -> io::Result<(Conn, String)> {
        match self {
            Listener::Unix(l, _) => l
                .accept()
                .map(|(s, _)| (Conn::Unix(s), "a local process".to_owned())),
            Listener::Tcp(l) => l.accept().map(|(s, peer)| (Conn::Tcp(s), peer.to_string())),
        }
    }

    /// Removes what the listener left behind (goalrun's socket file).
    pub(crate) fn cleanup(&self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Unix(l, _) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }
}
