//! The rank's side of goalrun's bootstrap socket.
//!
//! One blocking Unix stream per rank, opened and greeted (HELLO) in
//! [`UnixClient::connect`], so that a wrong rank or size is reported when the
//! runtime starts, not at the first exchange. `allgather` has no timeout on
//! purpose: the slowest rank may legitimately take long to arrive. What must
//! not hang is a dead job, and that needs no timer: when the launcher dies the
//! kernel closes its end of the socket, and when it aborts the job (a rank
//! failed) the server sends an error reply and closes. Either way the blocked
//! read returns and `allgather` fails at once. After one failure the client is
//! poisoned: the stream may be mid-frame, so every later call fails too.

use std::io::{self, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::sys;
use crate::wire::{self, Hello, MAX_BLOB, MAX_MESSAGE, STATUS_OK};
use crate::Bootstrap;

/// A rank of a job launched by goalrun: a connected client of its bootstrap socket.
#[derive(Debug)]
pub struct UnixClient {
    stream: BufReader<UnixStream>,
    path: PathBuf,
    rank: usize,
    size: usize,
    job: String,
    /// Allgather rounds completed so far (for messages).
    round: u64,
    /// Why the connection is unusable, once it is.
    broken: Option<String>,
}

impl UnixClient {
    /// Connects to the bootstrap server at `path` and introduces itself as
    /// `rank` of `size`. Fails if the server is unreachable or refuses the
    /// HELLO (rank out of range, rank taken, size mismatch), with the
    /// server's reason in the message.
    pub fn connect(path: &Path, rank: usize, size: usize, job: String) -> io::Result<UnixClient> {
        let (Ok(rank32), Ok(size32)) = (u32::try_from(rank), u32::try_from(size)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rank {rank} / size {size} do not fit the bootstrap protocol"),
            ));
        };
        let stream = UnixStream::connect(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot connect to the goalrun bootstrap socket {}: {e}",
                    path.display()
                ),
            )
        })?;
        let hello = Hello {
            rank: rank32,
            size: size32,
            pid: std::process::id(),
        };
        let mut client = UnixClient {
            stream: BufReader::new(stream),
            path: path.to_owned(),
            rank,
            size,
            job,
            round: 0,
            broken: None,
        };
        let sent = sys::send_all(client.stream.get_ref().as_raw_fd(), &hello.encode());
        match client.read_status(sent.err()) {
            Ok(()) => Ok(client),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("bootstrap HELLO as rank {rank} of {size} failed: {e}"),
            )),
        }
    }

    /// Reads a reply's status word; a non-zero status reads the server's
    /// message and becomes the error. `send_err` is a failure of the request
    /// that preceded: the server may still have explained itself, so its
    /// reply is read first and the send error used only if there is none.
    fn read_status(&mut self, send_err: Option<io::Error>) -> io::Result<()> {
        let status = match wire::read_u32(&mut self.stream) {
            Ok(s) => s,
            Err(e) => {
                let cause = send_err.unwrap_or(e);
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    format!(
                        "the bootstrap server at {} closed the connection \
                         (the launcher died or aborted the job): {cause}",
                        self.path.display()
                    ),
                ));
            }
        };
        if status == STATUS_OK {
            return match send_err {
                // OK but our request did not go out: cannot happen with a
                // well-behaved server; report the send failure.
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        let msg = wire::read_bytes(&mut self.stream, MAX_MESSAGE, "error message")
            .map(|m| String::from_utf8_lossy(&m).into_owned())
            .unwrap_or_else(|e| format!("(unreadable reason: {e})"));
        let kind = if status == wire::STATUS_REJECTED {
            io::ErrorKind::ConnectionRefused
        } else {
            io::ErrorKind::ConnectionAborted
        };
        Err(io::Error::new(kind, msg))
    }

    fn exchange(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let mut frame = Vec::with_capacity(4 + mine.len());
        wire::put_bytes(&mut frame, mine);
        let sent = sys::send_all(self.stream.get_ref().as_raw_fd(), &frame);
        self.read_status(sent.err())?;
        let count = wire::read_u32(&mut self.stream)? as usize;
        if count != self.size {
            return Err(wire::invalid(format!(
                "the server answered with {count} blobs for a group of {}",
                self.size
            )));
        }
        let mut all = Vec::with_capacity(count);
        for _ in 0..count {
            all.push(wire::read_bytes(
                &mut self.stream,
                MAX_BLOB,
                "allgather blob",
            )?);
        }
        Ok(all)
    }
}

impl Bootstrap for UnixClient {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn job_id(&self) -> String {
        self.job.clone()
    }

    /// Sends `mine`, then blocks until every rank has sent its blob for this
    /// round; fails promptly if the launcher closes or aborts the job.
    /// A blob over [`MAX_BLOB`] is refused locally and leaves the client usable.
    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        if mine.len() > MAX_BLOB {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "allgather blob of {} bytes exceeds the bootstrap limit of {MAX_BLOB} bytes",
                    mine.len()
                ),
            ));
        }
        if let Some(why) = &self.broken {
            return Err(io::Error::new(io::ErrorKind::NotConnected, why.clone()));
        }
        let round = self.round;
        match self.exchange(mine) {
            Ok(all) => {
                self.round += 1;
                Ok(all)
            }
            Err(e) => {
                let msg = format!(
                    "bootstrap allgather round {round} (rank {}): {e}",
                    self.rank
                );
                self.broken = Some(msg.clone());
                Err(io::Error::new(e.kind(), msg))
            }
        }
    }
}
