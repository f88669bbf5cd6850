//! The launcher's side of the bootstrap: a Unix-socket server that admits one
//! client per rank and serves any number of allgather rounds.
//!
//! # Design
//!
//! A thread per connection and one mutex-protected round state. Bootstrap
//! traffic is a handful of small messages per job, so threads cost nothing
//! that matters and keep each connection's logic a straight line of blocking
//! reads and writes: read HELLO, then loop { read blob, wait for the round,
//! write the reply }. The accept thread waits in `poll` on the listening
//! socket and an `eventfd`, so [`ServerHandle::abort`] can stop it at once.
//!
//! The round state holds the blobs of the round being collected and the
//! encoded reply of the round completed last. Keeping both is what makes the
//! scheme safe without per-round buffers: a rank cannot send round `r + 1`
//! before it has received round `r`, so round `r + 1` cannot complete (and
//! overwrite the last reply) while any worker still has round `r` to send.
//!
//! # Failure
//!
//! The server never waits for something that cannot come. A rank that closes
//! its connection while a round is being collected, or a round that starts
//! after some rank has left, aborts the job; so does a malformed request from
//! a joined rank, and so does the launcher through [`ServerHandle::abort`]
//! (it does so when a rank process dies), and so does a rank process that
//! ends before it joined ([`ServerHandle::rank_ended`]) once any other rank
//! has joined (that one would wait for it forever). Aborting records the reason, wakes
//! every waiting worker, and shuts down the reading side of every connection
//! so that workers blocked in `read` wake too; each worker then sends its
//! client an error reply carrying the reason and closes. Clients therefore
//! fail promptly with a message that says why, not a timeout. The server
//! keeps accepting after an abort, until it is shut down, so that a rank
//! that connects late is told the reason too (rather than finding no
//! socket).
//!
//! A HELLO that is refused (rank out of range, rank already taken, size
//! disagreeing with the server's) is logged to stderr and answered with an
//! error reply; that connection is dropped and the job goes on, the slot
//! still open for the right client.
//!
//! # Two ways in
//!
//! goalrun's server listens on a Unix socket in a directory only its user
//! can enter, so whoever connects is trusted, and the reply that admits a
//! HELLO hands out the job secret, fresh from the kernel's CSPRNG for every
//! server. The TCP store (crate `store` module) runs this same server inside
//! rank 0, reachable by anyone on the network: there a client must first
//! prove it knows the secret (the challenge-response described in the crate
//! documentation), the server proves the same in return, and the secret
//! itself is never sent.

use std::collections::HashMap;
use std::io::{self, BufReader, Read};
use std::net::{Shutdown, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::conn::{Conn, Listener};
use crate::secret::{Secret, SECRET_LEN};
use crate::sys::{self, EventFd};
use crate::wire::{
    self, Hello, Role, ANSWER_LEN, CHALLENGE_MAGIC, HELLO_LEN, NONCE_LEN, STATUS_ABORTED,
    STATUS_OK, STATUS_REJECTED,
};

/// How long a fresh connection may take to send its HELLO (and, over TCP,
/// to answer the challenge).
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound, not yet serving, bootstrap server for a job of `size` ranks.
#[derive(Debug)]
pub struct Server {
    listener: Listener,
    size: usize,
    admission: Admission,
}

/// How a connection earns a rank, and what the reply that admits it carries.
#[derive(Debug, Clone, Copy)]
enum Admission {
    /// goalrun's private Unix socket: anyone who can connect is trusted and
    /// is handed the job secret.
    HandOut(Secret),
    /// The TCP store: a client proves it knows the secret before its HELLO
    /// is read; the secret field of the reply is zeros.
    Prove(Secret),
}

impl Server {
    /// Binds a Unix stream socket at `path` (which must not exist) for a job
    /// of `size` ranks. Clients that connect before [`Server::spawn`] wait in
    /// the listen backlog.
    ///
    /// The server makes a fresh job secret and hands it to every rank it
    /// admits; the socket's directory must therefore be private to the user
    /// (goalrun makes it with mode 0700).
    pub fn bind(path: impl AsRef<Path>, size: usize) -> io::Result<Server> {
        let path = path.as_ref();
        check_size(size)?;
        let secret = Secret::random()?;
        let listener = UnixListener::bind(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot bind the bootstrap socket {}: {e}", path.display()),
            )
        })?;
        Ok(Server {
            listener: Listener::Unix(listener, path.to_owned()),
            size,
            admission: Admission::HandOut(secret),
        })
    }

    /// A server for the TCP store on a bound `listener`: clients must prove
    /// they know `secret`.
    pub(crate) fn on_tcp(listener: TcpListener, size: usize, secret: Secret) -> io::Result<Server> {
        check_size(size)?;
        Ok(Server {
            listener: Listener::Tcp(listener),
            size,
            admission: Admission::Prove(secret),
        })
    }

    /// The socket's path, what ranks find in `GOAL_BOOTSTRAP` (empty for a
    /// TCP store's server, which only this crate makes).
    pub fn path(&self) -> &Path {
        match &self.listener {
            Listener::Unix(_, path) => path,
            Listener::Tcp(_) => Path::new(""),
        }
    }

    /// Starts serving on a background thread.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let shared = Arc::new(Shared {
            size: self.size,
            admission: self.admission,
            wake: EventFd::new()?,
            state: Mutex::new(State {
                conns: HashMap::new(),
                next_conn: 0,
                joined: vec![false; self.size],
                left: vec![false; self.size],
                completed: 0,
                pending: vec![None; self.size],
                pending_count: 0,
                last_reply: Arc::new(Vec::new()),
                aborted: None,
                blamed: None,
                gone_unjoined: None,
                serving: 0,
                workers: Vec::new(),
            }),
            round_done: Condvar::new(),
        });
        let listener = self.listener;
        let accept = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("goal-boot-accept".into())
                .spawn(move || accept_loop(&shared, listener))?
        };
        Ok(ServerHandle {
            shared,
            accept: Some(accept),
        })
    }
}

/// A running bootstrap server. Dropping it aborts the job's bootstrap (any
/// rank still using it gets an error) without waiting for the threads; call
/// [`ServerHandle::shutdown`] to also wait for them.
#[derive(Debug)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// Aborts the job: every rank blocked in, or later calling, `allgather`
    /// gets an error carrying `reason`. Idempotent: the first reason stays.
    pub fn abort(&self, reason: &str) {
        let mut st = self.shared.lock();
        self.shared.abort_locked(&mut st, reason.to_owned());
    }

    /// The launcher saw the process of rank `rank` end; `what` says so
    /// ("rank 1 (pid 42) exited with status 0"). A rank that ends before
    /// it joined can never join, and any rank that has joined, or joins
    /// later, would wait for it forever: the job is aborted, naming it
    /// (and [`ServerHandle::blamed_rank`] is it), now if another rank has
    /// joined, else when one joins. Returns `None` if the rank had joined
    /// (its leaving is seen on its connection), else whether it aborted
    /// the job now. A job none of whose ranks use the bootstrap is never
    /// aborted.
    pub fn rank_ended(&self, rank: usize, what: &str) -> Option<bool> {
        let mut st = self.shared.lock();
        if rank >= self.shared.size || st.joined[rank] {
            return None;
        }
        if st.gone_unjoined.is_some() {
            return Some(false);
        }
        let why = format!(
            "{what} before it joined the job's bootstrap; the other ranks cannot go on without it"
        );
        st.gone_unjoined = Some((rank, why.clone()));
        if st.aborted.is_some() || !st.joined.iter().any(|&j| j) {
            return Some(false);
        }
        self.shared.abort_locked(&mut st, why);
        st.blamed = Some(rank);
        Some(true)
    }

    /// The rank whose connection closed mid-job (or that sent a malformed
    /// request) and so aborted the job, if the job was aborted that way.
    ///
    /// A launcher uses it to tell cause from consequence: a rank's socket
    /// closes before its exit is visible to `waitpid`, so the peers that fail
    /// because of it can appear to die first.
    pub fn blamed_rank(&self) -> Option<usize> {
        self.shared.lock().blamed
    }

    /// Number of allgather rounds completed so far.
    pub fn rounds_completed(&self) -> u64 {
        self.shared.lock().completed
    }

    /// Waits until the server has said its last word to every rank: every
    /// rank has joined and closed its connection again, or, if the job was
    /// aborted, every admitted rank has been sent the reason. Gives up after
    /// `limit`; returns whether it got there. The store's rank 0 calls it
    /// before stopping the server, so that no rank loses the last reply (or
    /// the reason for an abort) to a connection cut too early.
    pub(crate) fn wait_all_served(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut st = self.shared.lock();
        loop {
            let all_in = st.aborted.is_some() || st.joined.iter().all(|&j| j);
            if all_in && st.serving == 0 {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = self
                .shared
                .round_done
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Aborts the job, with the reason `why(joined, missing)` makes, unless
    /// every rank has joined within `limit` from now (`joined`: how many
    /// have, `missing`: the ranks that have not). A thread watches; it ends
    /// once every rank has joined, the job is aborted, or the time is up.
    pub(crate) fn abort_unless_all_join(
        &self,
        limit: Duration,
        why: impl FnOnce(usize, &[usize]) -> String + Send + 'static,
    ) -> io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let deadline = Instant::now() + limit;
        thread::Builder::new()
            .name("goal-boot-joins".into())
            .spawn(move || {
                let mut st = shared.lock();
                loop {
                    if st.aborted.is_some() || st.joined.iter().all(|&j| j) {
                        return;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    st = shared
                        .round_done
                        .wait_timeout(st, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                let missing: Vec<usize> = (0..shared.size).filter(|&r| !st.joined[r]).collect();
                let reason = why(shared.size - missing.len(), &missing);
                log(&reason);
                shared.abort_locked(&mut st, reason);
            })?;
        Ok(())
    }

    /// Stops the server (aborting the job if ranks still use it), closes
    /// every connection and joins every thread.
    pub fn shutdown(mut self) {
        self.abort("the launcher shut the bootstrap server down");
        self.stop_accepting();
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let workers = {
            let mut st = self.shared.lock();
            for conn in st.conns.values() {
                // Unblocks a worker stuck writing to a client that does not read.
                let _ = conn.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut st.workers)
        };
        for worker in workers {
            let _ = worker.join();
        }
    }
}

impl ServerHandle {
    /// Makes the accept thread stop (aborting does not: late clients are
    /// told why the job was aborted).
    fn stop_accepting(&self) {
        if let Err(e) = self.shared.wake.notify() {
            log(&format!("cannot wake the accept thread: {e}"));
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.abort("the launcher shut the bootstrap server down");
        self.stop_accepting();
    }
}

#[derive(Debug)]
struct Shared {
    size: usize,
    admission: Admission,
    state: Mutex<State>,
    /// Signalled when a round completes, a rank leaves, or the job is aborted.
    round_done: Condvar,
    /// Readable once the accept loop must stop (at shutdown, not at abort).
    wake: EventFd,
}

#[derive(Debug)]
struct State {
    /// A clone of every open connection, by connection number, so that
    /// aborting can shut them all down.
    conns: HashMap<u64, Conn>,
    next_conn: u64,
    /// `joined[r]`: a client has been admitted as rank `r`.
    joined: Vec<bool>,
    /// `left[r]`: rank `r`'s connection has closed since.
    left: Vec<bool>,
    /// Rounds completed; the one being collected is number `completed`.
    completed: u64,
    /// Blobs of round `completed`, by rank; `pending_count` of them are `Some`.
    pending: Vec<Option<Vec<u8>>>,
    pending_count: usize,
    /// The encoded reply of round `completed - 1`.
    last_reply: Arc<Vec<u8>>,
    /// Why the job was aborted, once it is.
    aborted: Option<String>,
    /// The rank whose leaving (or bad request) aborted the job, if one did.
    blamed: Option<usize>,
    /// The first rank whose process ended before it joined, and the
    /// reason it gives for aborting the job (see `rank_ended`).
    gone_unjoined: Option<(usize, String)>,
    /// Admitted connections whose worker has not yet finished (sent its
    /// last reply).
    serving: usize,
    workers: Vec<JoinHandle<()>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked leaves the state as consistent as any other
        // point between statements; keep serving rather than cascade.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn abort_locked(&self, st: &mut State, reason: String) {
        if st.aborted.is_some() {
            return;
        }
        st.aborted = Some(reason);
        for conn in st.conns.values() {
            // Wakes a worker blocked reading its client's next request; it
            // then sends the error reply (the writing side stays open).
            let _ = conn.shutdown(Shutdown::Read);
        }
        self.round_done.notify_all();
    }
}

fn log(msg: &str) {
    eprintln!("goal-boot server: {msg}");
}

fn check_size(size: usize) -> io::Result<()> {
    if size == 0 || u32::try_from(size).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a bootstrap server needs 1 to {} ranks, not {size}",
                u32::MAX
            ),
        ));
    }
    Ok(())
}

fn accept_loop(shared: &Arc<Shared>, listener: Listener) {
    loop {
        let fds = [listener.as_raw_fd(), shared.wake.as_raw_fd()];
        let revents = match sys::poll_readable(&fds) {
            Ok(r) => r,
            Err(e) => {
                let why = format!("waiting for connections failed: {e}");
                log(&why);
                shared.abort_locked(&mut shared.lock(), why);
                break;
            }
        };
        if revents[1] != 0 {
            break;
        }
        if revents[0] == 0 {
            continue;
        }
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                continue
            }
            Err(e) => {
                // EMFILE and the like: retrying would spin, waiting would hang
                // the job. Fail it with the reason.
                let why = format!("accepting a connection failed: {e}");
                log(&why);
                shared.abort_locked(&mut shared.lock(), why);
                break;
            }
        };
        let clone = match stream.try_clone() {
            Ok(c) => c,
            Err(e) => {
                log(&format!("dropped a connection: cannot duplicate it: {e}"));
                continue;
            }
        };
        let mut st = shared.lock();
        let id = st.next_conn;
        st.next_conn += 1;
        st.conns.insert(id, clone);
        let worker = {
            let shared = Arc::clone(shared);
            thread::Builder::new()
                .name(format!("goal-boot-conn{id}"))
                .spawn(move || {
                    serve(&shared, stream, &peer);
                    shared.lock().conns.remove(&id);
                })
        };
        match worker {
            Ok(handle) => st.workers.push(handle),
            Err(e) => {
                st.conns.remove(&id);
                log(&format!(
                    "dropped a connection: cannot start its thread: {e}"
                ));
            }
        }
    }
    listener.cleanup();
}

/// The server's side of the TCP handshake: challenge the client, check its
/// MAC, prove our own knowledge of the secret in return.
fn challenge(stream: &Conn, secret: &Secret) -> io::Result<()> {
    let mut server_nonce = [0u8; NONCE_LEN];
    sys::fill_random(&mut server_nonce)?;
    let mut challenge = Vec::with_capacity(wire::CHALLENGE_LEN);
    challenge.extend_from_slice(&CHALLENGE_MAGIC);
    challenge.extend_from_slice(&server_nonce);
    stream.send_all(&challenge)?;
    let mut answer = [0u8; ANSWER_LEN];
    (&*stream).read_exact(&mut answer)?;
    let (client_nonce, mac) = answer.split_at(NONCE_LEN);
    let client_nonce: &[u8; NONCE_LEN] = client_nonce.try_into().map_err(|_| bad_len())?;
    let want = wire::handshake_mac(&secret.0, Role::Client, &server_nonce, client_nonce);
    if !goal_auth::ct_eq(mac, &want) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it does not know the job secret (its GOAL_SECRET differs from rank 0's)",
        ));
    }
    let mut proof = STATUS_OK.to_le_bytes().to_vec();
    proof.extend_from_slice(&wire::handshake_mac(
        &secret.0,
        Role::Server,
        &server_nonce,
        client_nonce,
    ));
    stream.send_all(&proof)
}

fn bad_len() -> io::Error {
    wire::invalid("handshake nonce of the wrong length".into())
}

/// Counts an admitted connection out of `State::serving` when its worker ends.
struct Serving<'a>(&'a Shared);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.0.lock().serving -= 1;
        self.0.round_done.notify_all();
    }
}

/// Serves one connection from HELLO to close.
fn serve(shared: &Shared, stream: Conn, peer: &str) {
    let send = |bytes: &[u8]| stream.send_all(bytes);
    let send_error = |status: u32, why: &str| {
        let _ = send(&wire::error_reply(status, why));
    };

    // Failing to tune only loses the prompt detection of a vanished host.
    let _ = stream.tune();
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    let secret_field = match shared.admission {
        Admission::HandOut(secret) => secret.0,
        Admission::Prove(secret) => {
            if let Err(e) = challenge(&stream, &secret) {
                log(&format!("refused a connection from {peer}: {e}"));
                send_error(STATUS_REJECTED, &e.to_string());
                return;
            }
            [0u8; SECRET_LEN]
        }
    };
    let mut hello = [0u8; HELLO_LEN];
    let hello = match (&stream)
        .read_exact(&mut hello)
        .and_then(|()| Hello::decode(&hello))
    {
        Ok(h) => h,
        // The job was aborted while this client's HELLO was on its way:
        // `abort_locked` shut the reading side of every connection, this
        // one's too, so its read ends early. Tell it why, as any other.
        Err(_) if shared.lock().aborted.is_some() => {
            let why = shared.lock().aborted.clone().unwrap_or_default();
            send_error(STATUS_ABORTED, &why);
            return;
        }
        Err(e) => {
            let why = format!("dropped a connection from {peer} that sent no valid HELLO: {e}");
            log(&why);
            send_error(STATUS_REJECTED, &why);
            return;
        }
    };
    let _ = stream.set_read_timeout(None);
    let (rank, pid) = (hello.rank as usize, hello.pid);
    {
        let mut st = shared.lock();
        if st.aborted.is_none() {
            if let Some((gone, why)) = st.gone_unjoined.clone() {
                // A rank that can never join: do not let this one wait for it.
                log(&why);
                shared.abort_locked(&mut st, why);
                st.blamed = Some(gone);
            }
        }
        let refusal = if let Some(why) = &st.aborted {
            Some((STATUS_ABORTED, why.clone()))
        } else if hello.size as usize != shared.size {
            Some((
                STATUS_REJECTED,
                format!(
                    "rejected a client (pid {pid}): it says the job has {} ranks, \
                     the server was started for {}",
                    hello.size, shared.size
                ),
            ))
        } else if rank >= shared.size {
            Some((
                STATUS_REJECTED,
                format!(
                    "rejected a client (pid {pid}): rank {rank} is out of range \
                     for a job of {} ranks",
                    shared.size
                ),
            ))
        } else if st.joined[rank] {
            Some((
                STATUS_REJECTED,
                format!("rejected a client (pid {pid}): rank {rank} has already joined"),
            ))
        } else {
            st.joined[rank] = true;
            st.serving += 1;
            // Wakes a `abort_unless_all_join` watch.
            shared.round_done.notify_all();
            None
        };
        drop(st);
        if let Some((status, why)) = refusal {
            if status == STATUS_REJECTED {
                log(&why);
            }
            send_error(status, &why);
            return;
        }
    }
    // Counted out when this function returns, after its last reply.
    let _serving = Serving(shared);
    if send(&wire::hello_ok(&secret_field)).is_err() {
        // The client is gone; reading will see it and account for it.
    }

    let mut reader = BufReader::new(&stream);
    loop {
        let request = wire::read_blob_or_eof(&mut reader);
        let mut st = shared.lock();
        let blob = match request {
            Ok(Some(blob)) => blob,
            Ok(None) => {
                // The client closed (or abort shut our reading side).
                st.left[rank] = true;
                shared.round_done.notify_all();
                if st.aborted.is_none() && st.pending_count > 0 {
                    let why = format!(
                        "rank {rank} (pid {pid}) left the job during allgather round {}",
                        st.completed
                    );
                    log(&why);
                    shared.abort_locked(&mut st, why);
                    st.blamed = Some(rank);
                }
                let why = st.aborted.clone();
                drop(st);
                if let Some(why) = why {
                    send_error(STATUS_ABORTED, &why);
                }
                return;
            }
            Err(e) => {
                st.left[rank] = true;
                shared.round_done.notify_all();
                if st.aborted.is_none() {
                    let why = format!("rank {rank} (pid {pid}) sent a bad allgather request: {e}");
                    log(&why);
                    shared.abort_locked(&mut st, why);
                    st.blamed = Some(rank);
                }
                let why = st.aborted.clone().unwrap_or_default();
                drop(st);
                send_error(STATUS_ABORTED, &why);
                return;
            }
        };
        if st.aborted.is_none() {
            if let Some(gone) = st.left.iter().position(|&l| l) {
                let why = format!(
                    "rank {gone} has left the job, so allgather round {} cannot complete",
                    st.completed
                );
                log(&why);
                shared.abort_locked(&mut st, why);
                st.blamed = Some(gone);
            }
        }
        if let Some(why) = st.aborted.clone() {
            drop(st);
            send_error(STATUS_ABORTED, &why);
            return;
        }
        let round = st.completed;
        debug_assert!(st.pending[rank].is_none(), "a rank sent twice in one round");
        st.pending[rank] = Some(blob);
        st.pending_count += 1;
        if st.pending_count == shared.size {
            let blobs: Vec<Vec<u8>> = st
                .pending
                .iter_mut()
                .map(|b| b.take().unwrap_or_default())
                .collect();
            st.last_reply = Arc::new(wire::round_reply(&blobs));
            st.pending_count = 0;
            st.completed += 1;
            shared.round_done.notify_all();
        }
        while st.completed == round && st.aborted.is_none() {
            st = shared
                .round_done
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        if st.completed == round {
            let why = st.aborted.clone().unwrap_or_default();
            drop(st);
            send_error(STATUS_ABORTED, &why);
            return;
        }
        let reply = Arc::clone(&st.last_reply);
        drop(st);
        // A failed send means the client is gone: the next read sees it.
        let _ = send(&reply);
    }
}
