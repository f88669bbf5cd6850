//! goal's own exchange for launchers that offer none (`srun --mpi=none`,
//! torchrun-style scripts, a loop over ssh): rank 0 serves it on TCP, the
//! way torchrun's TCPStore works, at the address in `GOAL_STORE` (or
//! `MASTER_ADDR` and `MASTER_PORT + GOAL_MASTER_PORT_OFFSET`, default 1:
//! under torchrun, torch's own store already listens on `MASTER_PORT`).
//!
//! # Design
//!
//! The store is goalrun's bootstrap server ([`crate::server`]) on a TCP
//! socket: per allgather round every rank puts its blob, the server answers
//! once it holds all of them. Reusing it means one implementation of rounds
//! and of failure: a rank whose connection closes while a round is being
//! collected (its process died: the kernel closes its sockets) aborts the
//! job, and every other rank's `allgather` fails at once naming that rank;
//! if rank 0 dies, everyone's connection closes. Keepalive catches a host
//! that vanishes without closing anything ([`crate::conn::KEEPALIVE`]).
//!
//! Rank 0 binds the port on every interface of the address' family (the
//! name in `GOAL_STORE` may resolve to a loopback address on rank 0's own
//! host, as Debian's /etc/hosts does for the host name) and then connects
//! to itself like everyone else. The others retry connecting until
//! `GOAL_STORE_TIMEOUT` (30 s by default) has passed, because rank 0 may
//! start later than they do; then they fail with a message naming the
//! address. Rank 0 waits as long for every rank to connect, then fails the
//! job naming how many joined and which never came. Rank 0 keeps serving when it is done until every rank has
//! disconnected, or, after an abort, has been sent the reason (bounded by
//! the same timeout), so that no rank loses the last reply to a connection
//! cut too early.
//!
//! # The secret
//!
//! Anyone who can reach the port can connect, so the store cannot be the
//! one to hand out the job secret, and it must not admit strangers into the
//! job. It therefore requires `GOAL_SECRET` (64 hex digits, the same on
//! every rank, put there by whoever starts the job: srun and mpirun pass the
//! environment on) and uses it for a challenge-response in both directions
//! before the HELLO: each side proves it knows the secret without sending
//! it, with fresh nonces so that nothing can be replayed. The handshake
//! authenticates the ends; it does not encrypt the addresses that follow,
//! which are not secret.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use crate::client::{Peer, Session};
use crate::conn::Conn;
use crate::detect::StorePlan;
use crate::env;
use crate::secret::{Secret, SECRET_LEN};
use crate::server::{Server, ServerHandle};
use crate::Bootstrap;

/// The longest single connection attempt; attempts repeat until the timeout.
const ATTEMPT: Duration = Duration::from_secs(5);
/// The first and the longest pause between attempts.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));

/// A rank's connection to the store, and for rank 0 the store itself.
#[derive(Debug)]
pub(crate) struct StoreClient {
    session: Session,
    /// The server, in rank 0 only.
    server: Option<ServerHandle>,
    secret: Secret,
    /// How long rank 0 waits for the others to disconnect when it is done.
    linger: Duration,
}

impl StoreClient {
    /// Serves the store (rank 0), connects to it, authenticates and greets.
    pub(crate) fn connect(plan: &StorePlan, secret: Option<Secret>) -> io::Result<StoreClient> {
        let Some(secret) = secret else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} selects goal's TCP store, which needs {secret_var} in every rank's \
                     environment: anyone who can reach {} can connect to it, so it cannot hand \
                     out the job secret itself. Give every rank the same 64 hex digits, e.g. \
                     export {secret_var}=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')",
                    plan.origin,
                    plan.addr,
                    secret_var = env::SECRET
                ),
            ));
        };
        let addrs: Vec<SocketAddr> = plan
            .addr
            .to_socket_addrs()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot resolve the goal store address {}: {e}", plan.origin),
                )
            })?
            .collect();
        let Some(&first) = addrs.first() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("the goal store address {} resolves to nothing", plan.origin),
            ));
        };
        let server = if plan.rank == 0 {
            Some(serve(plan, first, secret)?)
        } else {
            None
        };
        let stream = connect_until(plan, &addrs, Instant::now() + plan.timeout)?;
        let conn = Conn::Tcp(stream);
        conn.tune()?;
        let peer = Peer {
            name: format!("the goal store at {}", plan.addr),
            death: "rank 0, which serves it, died, or the job was aborted",
        };
        Session::authenticate(&conn, &peer, &secret)?;
        let session = Session::hello(conn, peer, plan.rank, plan.size, plan.job.clone())?;
        Ok(StoreClient {
            session,
            server,
            secret,
            linger: plan.timeout,
        })
    }
}

/// Rank 0: binds the store's port and starts serving.
fn serve(plan: &StorePlan, addr: SocketAddr, secret: Secret) -> io::Result<ServerHandle> {
    let any: SocketAddr = match addr {
        SocketAddr::V4(a) => (std::net::Ipv4Addr::UNSPECIFIED, a.port()).into(),
        SocketAddr::V6(a) => (std::net::Ipv6Addr::UNSPECIFIED, a.port()).into(),
    };
    let listener = TcpListener::bind(any).map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::AddrInUse {
            ": another process (an earlier job?) holds that port; choose another"
        } else {
            ""
        };
        io::Error::new(
            e.kind(),
            format!(
                "rank 0 cannot serve the goal store on port {} ({}): {e}{hint}",
                addr.port(),
                plan.origin
            ),
        )
    })?;
    let server = Server::on_tcp(listener, plan.size, secret)?.spawn()?;
    // Rank 0 would otherwise wait in its first round forever for a rank
    // that never starts: the others' GOAL_STORE_TIMEOUT bounds its wait too.
    let (size, timeout, at) = (plan.size, plan.timeout, plan.addr.clone());
    server.abort_unless_all_join(timeout, move |joined, missing| {
        format!(
            "only {joined} of {size} ranks joined the goal store at {at} within {:.1} s \
             ({} sets how long rank 0 waits); rank(s) {} never connected: are they \
             running, with the same {} and {}?",
            timeout.as_secs_f64(),
            env::STORE_TIMEOUT,
            list(missing),
            env::STORE,
            env::SECRET,
        )
    })?;
    Ok(server)
}

/// `1, 2, 5` (the first 16, then `...`).
fn list(ranks: &[usize]) -> String {
    let mut s: Vec<String> = ranks.iter().take(16).map(|r| r.to_string()).collect();
    if ranks.len() > 16 {
        s.push("...".into());
    }
    s.join(", ")
}

/// Connects to the first of `addrs` that answers, retrying until `deadline`.
fn connect_until(
    plan: &StorePlan,
    addrs: &[SocketAddr],
    deadline: Instant,
) -> io::Result<TcpStream> {
    let mut pause = BACKOFF.0;
    loop {
        let mut last = None;
        for addr in addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            match TcpStream::connect_timeout(addr, left.clamp(Duration::from_millis(1), ATTEMPT)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        let now = Instant::now();
        if now >= deadline {
            let e = last.unwrap_or_else(|| io::ErrorKind::TimedOut.into());
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "rank {} cannot reach the goal store at {} ({}) within {:.1} s: {e}. \
                     Rank 0 serves it: is rank 0 running, on the host that address names? \
                     ({} sets how long to wait; rank and size from {})",
                    plan.rank,
                    plan.addr,
                    plan.origin,
                    plan.timeout.as_secs_f64(),
                    env::STORE_TIMEOUT,
                    plan.identity_from
                ),
            ));
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(BACKOFF.1);
    }
}

impl Bootstrap for StoreClient {
    fn rank(&self) -> usize {
        self.session.rank()
    }

    fn size(&self) -> usize {
        self.session.size()
    }

    fn job_id(&self) -> String {
        self.session.job().to_owned()
    }

    /// Blocks until every rank has sent its blob for this round; fails
    /// promptly, naming the rank, if one dies.
    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.session.allgather(mine)
    }

    /// `GOAL_SECRET`, which every rank proved to the store that it holds.
    fn secret(&self) -> [u8; SECRET_LEN] {
        self.secret.0
    }

    fn kind(&self) -> &'static str {
        "store"
    }
}

impl Drop for StoreClient {
    /// Rank 0 closes its own connection, waits (bounded) until the server
    /// has given every other rank its last reply, then stops the server.
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.session.close(Shutdown::Both);
            server.wait_all_served(self.linger);
            server.shutdown();
        }
    }
}
