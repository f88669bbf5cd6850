//! The rank's side of the bootstrap server's protocol: goalrun's Unix
//! socket ([`UnixClient`]) and, through the same `Session`, the TCP store.
//!
//! One blocking stream per rank, opened and greeted (HELLO) when the client
//! is made, so that a wrong rank or size is reported when the runtime
//! starts, not at the first exchange. `allgather` has no timeout on purpose:
//! the slowest rank may legitimately take long to arrive. What must not hang
//! is a dead job, and that needs no timer: when the server's process dies
//! the kernel closes its end of the socket, and when the server aborts the
//! job (a rank failed) it sends an error reply and closes. Either way the
//! blocked read returns and `allgather` fails at once. (Over TCP a host that
//! vanishes without closing anything is caught by keepalive, see
//! `conn::KEEPALIVE`.) After one failure the client is poisoned:
//! the stream may be mid-frame, so every later call fails too.

use std::io::{self, BufReader, Read};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::conn::Conn;
use crate::rounds::{self, Exchange, Rounds};
use crate::secret::{Secret, SECRET_LEN};
use crate::sys;
use crate::wire::{
    self, Hello, Role, CHALLENGE_LEN, CHALLENGE_MAGIC, MAX_BLOB, MAX_MESSAGE, NONCE_LEN, STATUS_OK,
};
use crate::Bootstrap;

/// How long the TCP handshake and HELLO may take before the client gives up
/// on a server that accepted the connection but does not speak.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A rank of a job launched by goalrun: a connected client of its bootstrap socket.
#[derive(Debug)]
pub struct UnixClient {
    session: Session,
}

impl UnixClient {
    /// Connects to the bootstrap server at `path` and introduces itself as
    /// `rank` of `size`. Fails if the server is unreachable or refuses the
    /// HELLO (rank out of range, rank taken, size mismatch), with the
    /// server's reason in the message. The server's reply carries the job
    /// secret ([`Bootstrap::secret`]).
    pub fn connect(path: &Path, rank: usize, size: usize, job: String) -> io::Result<UnixClient> {
        let stream = UnixStream::connect(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot connect to the goalrun bootstrap socket {}: {e}",
                    path.display()
                ),
            )
        })?;
        let server = Peer {
            name: format!("the bootstrap server at {}", path.display()),
            death: "the launcher died or aborted the job",
        };
        let session = Session::hello(Conn::Unix(stream), server, rank, size, job)?;
        Ok(UnixClient { session })
    }

    /// Uses `secret` (from `GOAL_SECRET`) instead of the one the server handed out.
    pub(crate) fn set_secret(&mut self, secret: Secret) {
        self.session.secret = secret;
    }
}

impl Bootstrap for UnixClient {
    fn rank(&self) -> usize {
        self.session.rank
    }

    fn size(&self) -> usize {
        self.session.size
    }

    fn job_id(&self) -> String {
        self.session.job.clone()
    }

    /// Sends `mine`, then blocks until every rank has sent its blob for this
    /// round; fails promptly if the launcher closes or aborts the job.
    /// A blob over [`MAX_BLOB`] is refused locally and leaves the client usable.
    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.session.allgather(mine)
    }

    /// The secret goalrun's server handed out with the HELLO reply, or
    /// `GOAL_SECRET` if that is set.
    fn secret(&self) -> [u8; SECRET_LEN] {
        self.session.secret.0
    }

    fn kind(&self) -> &'static str {
        "goalrun"
    }
}

/// Who is at the other end, for messages.
#[derive(Debug)]
pub(crate) struct Peer {
    /// "the bootstrap server at PATH", "the goal store at HOST:PORT".
    pub(crate) name: String,
    /// What it means when it closes the connection.
    pub(crate) death: &'static str,
}

/// A connected, admitted client of a bootstrap server: the protocol, for
/// either kind of stream.
#[derive(Debug)]
pub(crate) struct Session {
    stream: BufReader<Conn>,
    server: Peer,
    rank: usize,
    size: usize,
    job: String,
    secret: Secret,
    rounds: Rounds,
}

impl Session {
    /// The client's side of the TCP store's handshake, before the HELLO:
    /// answer the server's challenge with a MAC under `secret`, then check
    /// the server's MAC, so each side knows the other holds the job secret
    /// without either sending it.
    pub(crate) fn authenticate(stream: &Conn, server: &Peer, secret: &Secret) -> io::Result<()> {
        let fail = |what: String| io::Error::new(io::ErrorKind::PermissionDenied, what);
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let mut challenge = [0u8; CHALLENGE_LEN];
        (&*stream).read_exact(&mut challenge).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{} sent no goal store challenge: {e}", server.name),
            )
        })?;
        if challenge[..4] != CHALLENGE_MAGIC {
            return Err(fail(format!(
                "{} is not a goal store (it greeted with {:02x?})",
                server.name,
                &challenge[..4]
            )));
        }
        let server_nonce: [u8; NONCE_LEN] = challenge[4..].try_into().expect("length checked");
        let mut client_nonce = [0u8; NONCE_LEN];
        sys::fill_random(&mut client_nonce)?;
        let mut answer = client_nonce.to_vec();
        answer.extend_from_slice(&wire::handshake_mac(
            &secret.0,
            Role::Client,
            &server_nonce,
            &client_nonce,
        ));
        let sent = stream.send_all(&answer);
        // Unbuffered: nothing may be read past the server's proof.
        let mut reader = stream;
        let status = wire::read_u32(&mut reader);
        let status = match (status, sent) {
            (Ok(s), _) => s,
            (Err(e), sent) => {
                let cause = sent.err().unwrap_or(e);
                return Err(io::Error::new(
                    cause.kind(),
                    format!(
                        "{} closed the connection during the handshake: {cause}",
                        server.name
                    ),
                ));
            }
        };
        if status != STATUS_OK {
            let msg = wire::read_bytes(&mut reader, MAX_MESSAGE, "error message")
                .map(|m| String::from_utf8_lossy(&m).into_owned())
                .unwrap_or_else(|e| format!("(unreadable reason: {e})"));
            return Err(fail(format!("{} refused this rank: {msg}", server.name)));
        }
        let mut mac = [0u8; NONCE_LEN];
        reader.read_exact(&mut mac)?;
        let want = wire::handshake_mac(&secret.0, Role::Server, &server_nonce, &client_nonce);
        if !goal_auth::ct_eq(&mac, &want) {
            return Err(fail(format!(
                "{} does not know this job's secret: it serves another job, \
                 or GOAL_SECRET differs between rank 0 and this rank",
                server.name
            )));
        }
        Ok(())
    }

    /// Greets the server on `stream` as `rank` of `size`; on success the
    /// session holds the secret field of the server's reply.
    pub(crate) fn hello(
        stream: Conn,
        server: Peer,
        rank: usize,
        size: usize,
        job: String,
    ) -> io::Result<Session> {
        let (Ok(rank32), Ok(size32)) = (u32::try_from(rank), u32::try_from(size)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rank {rank} / size {size} do not fit the bootstrap protocol"),
            ));
        };
        let hello = Hello {
            rank: rank32,
            size: size32,
            pid: std::process::id(),
        };
        let mut session = Session {
            stream: BufReader::new(stream),
            server,
            rank,
            size,
            job,
            secret: Secret([0; SECRET_LEN]),
            rounds: Rounds::default(),
        };
        let sent = session.stream.get_ref().send_all(&hello.encode());
        let admitted = session.read_status(sent.err()).and_then(|()| {
            let mut secret = [0u8; SECRET_LEN];
            session.stream.read_exact(&mut secret).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "the reply that admitted us was cut short ({e}): is {} \
                         running a goal of another version?",
                        session.server.name
                    ),
                )
            })?;
            session.secret = Secret(secret);
            session.stream.get_ref().set_read_timeout(None)
        });
        match admitted {
            Ok(()) => Ok(session),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("bootstrap HELLO as rank {rank} of {size} failed: {e}"),
            )),
        }
    }

    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn job(&self) -> &str {
        &self.job
    }

    /// Shuts the connection down now, before the session is dropped.
    pub(crate) fn close(&self, how: std::net::Shutdown) {
        let _ = self.stream.get_ref().shutdown(how);
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
                        "{} closed the connection ({}): {cause}",
                        self.server.name, self.server.death
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

    /// One round on the wire: send the blob, read everyone's.
    fn round_trip(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let mut frame = Vec::with_capacity(4 + mine.len());
        wire::put_bytes(&mut frame, mine);
        let sent = self.stream.get_ref().send_all(&frame);
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

    /// Sends `mine`, then blocks until every rank has sent its blob for this
    /// round; fails promptly if the server closes or aborts the job.
    /// A blob over [`MAX_BLOB`] is refused locally and leaves the session usable.
    pub(crate) fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        rounds::allgather(self, mine)
    }
}

impl Exchange for Session {
    fn rounds(&mut self) -> &mut Rounds {
        &mut self.rounds
    }

    fn exchange(&mut self, _round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.round_trip(mine)
    }

    fn what(&self) -> &'static str {
        "bootstrap allgather"
    }

    fn who(&self) -> String {
        format!("rank {}", self.rank)
    }
}
