//! A client of the PMI-1 "simple" wire protocol, which MPICH's hydra
//! (`mpiexec`) speaks to every rank, and which Slurm's PMI-2 plugin (`srun
//! --mpi=pmi2`) answers as well.
//!
//! Why the wire protocol rather than a library: it is a handful of
//! newline-terminated text commands on a socket the launcher hands over
//! (`PMI_FD`) or names (`PMI_PORT`), so a client costs less than a
//! dependency, and it gives a real key-value exchange within the job.
//!
//! ```text
//! -> cmd=init pmi_version=1 pmi_subversion=1     <- cmd=response_to_init ... rc=0
//! -> cmd=get_maxes                               <- cmd=maxes kvsname_max= keylen_max= vallen_max=
//! -> cmd=get_my_kvsname                          <- cmd=my_kvsname kvsname=K
//! -> cmd=put kvsname=K key=k value=v             <- cmd=put_result rc=0
//! -> cmd=barrier_in                              <- cmd=barrier_out
//! -> cmd=get kvsname=K key=k                     <- cmd=get_result rc=0 value=v
//! -> cmd=finalize                                <- cmd=finalize_ack
//! ```
//!
//! In `PMI_PORT` mode the client first sends `cmd=initack pmiid=ID` and the
//! server answers `cmd=initack`, then `cmd=set size=`, `rank=` and `debug=`.
//!
//! An allgather round is: put my blob, barrier, get everyone's. Values may
//! not contain spaces or `=` and are limited in length (hydra: 1024; Slurm
//! reads a whole request in one 1024-byte `read`), so a blob travels as hex
//! in chunks: key `goal.R.r.n` holds the number of chunks of rank `r` in
//! round `R`, keys `goal.R.r.i` hold the chunks. Puts become visible only at
//! the barrier, which is what makes the round a collective.
//!
//! The job secret: rank 0 puts it (`GOAL_SECRET`, or 32 fresh random bytes)
//! under `goal.secret` before a barrier when the client starts; the others
//! read it. The key-value space belongs to the job: only processes the
//! launcher handed a PMI connection can read it.
//!
//! A rank that dies makes the launcher end the job (hydra and Slurm both do);
//! if the launcher itself goes, our socket closes and the blocked read fails.
//! Either way no timer is needed.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::detect::PmiConn;
use crate::rounds::{self, Exchange, Rounds};
use crate::secret::{self, Publish, Secret, SECRET_LEN};
use crate::sys;
use crate::wire::MAX_BLOB;
use crate::Bootstrap;

/// The longest request line we send: Slurm reads each request with a single
/// 1024-byte `read`.
const MAX_LINE: usize = 1024;
/// The longest reply line we accept (a value plus the command's words).
const MAX_REPLY: usize = 64 << 10;
/// The key of the job secret.
const SECRET_KEY: &str = "goal.secret";

/// A rank connected to a PMI-1 server.
#[derive(Debug)]
pub(crate) struct PmiClient {
    reader: BufReader<File>,
    /// Where the server is, for messages: "PMI_FD=6", "PMI_PORT=host:port".
    server: String,
    kvsname: String,
    rank: usize,
    size: usize,
    /// Largest hex chunk per value that fits the server's limits.
    chunk: usize,
    /// The server's limit on key length.
    keylen_max: usize,
    secret: Secret,
    rounds: Rounds,
    finalized: bool,
    /// The session is the program's MPI library's too (PMI_FD with MPI
    /// loaded): that library says `finalize` in its `MPI_Finalize`, so goal
    /// must not (hydra would then refuse MPI's own barrier).
    shared_with_mpi: bool,
}

/// One parsed reply: its words as key=value pairs, in order.
#[derive(Debug)]
struct Reply {
    line: String,
    fields: Vec<(String, String)>,
}

impl Reply {
    fn parse(line: &str) -> Reply {
        let fields = line
            .split_ascii_whitespace()
            .map(|w| match w.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (w.to_owned(), String::new()),
            })
            .collect();
        Reply {
            line: line.to_owned(),
            fields,
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl PmiClient {
    /// Connects as the plan says, greets the server, learns the job's
    /// key-value space and agrees on the secret (a barrier: every rank of
    /// the job must call this).
    pub(crate) fn connect(
        conn: &PmiConn,
        identity: Option<(usize, usize)>,
        goal_secret: Option<Secret>,
    ) -> io::Result<PmiClient> {
        let (fd, server) = match conn {
            PmiConn::Fd(n) => (dup_fd(*n)?, format!("PMI_FD={n}")),
            PmiConn::Port { addr, .. } => {
                let stream = TcpStream::connect(addr).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot connect to the PMI server at PMI_PORT={addr}: {e}"),
                    )
                })?;
                (OwnedFd::from(stream), format!("PMI_PORT={addr}"))
            }
        };
        let mut client = PmiClient {
            reader: BufReader::new(File::from(fd)),
            server,
            kvsname: String::new(),
            rank: 0,
            size: 0,
            chunk: 0,
            keylen_max: 0,
            secret: Secret([0; SECRET_LEN]),
            rounds: Rounds::default(),
            finalized: false,
            shared_with_mpi: matches!(conn, PmiConn::Fd(_)) && sys::mpi_in_process(),
        };
        let server = client.server.clone();
        let ready = client
            .start(conn, identity)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("PMI start-up with {server} failed: {e}"))
            })
            .and_then(|()| {
                let rank = client.rank;
                secret::agree(&mut client, rank, goal_secret)
                    .map(|s| client.secret = s)
                    .map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("PMI: agreeing on the job secret through {server} failed: {e}"),
                        )
                    })
            });
        match ready {
            Ok(()) => Ok(client),
            Err(e) => {
                // Half-started: do not also try to finalize on drop.
                client.finalized = true;
                Err(e)
            }
        }
    }

    fn start(&mut self, conn: &PmiConn, identity: Option<(usize, usize)>) -> io::Result<()> {
        if let PmiConn::Port { id: Some(id), .. } = conn {
            self.send(&format!("cmd=initack pmiid={id}"))?;
            self.expect("initack")?;
            let (mut size, mut rank) = (None, None);
            for _ in 0..3 {
                let set = self.expect("set")?;
                let num = |k: &str| set.get(k).and_then(|v| v.parse::<usize>().ok());
                size = size.or(num("size"));
                rank = rank.or(num("rank"));
            }
            match (rank, size) {
                (Some(r), Some(s)) if r < s => (self.rank, self.size) = (r, s),
                _ => {
                    return Err(invalid(
                        "the server's initack did not give a rank below the size",
                    ))
                }
            }
        }
        if let Some((rank, size)) = identity {
            (self.rank, self.size) = (rank, size);
        }
        let init = self.call(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        if init.get("pmi_version") != Some("1") {
            return Err(invalid(&format!(
                "the server does not speak PMI version 1: {}",
                init.line
            )));
        }
        let maxes = self.call("cmd=get_maxes", "maxes")?;
        let limit = |key: &str| {
            maxes
                .get(key)
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| invalid(&format!("no {key} in '{}'", maxes.line)))
        };
        let (keylen_max, vallen_max) = (limit("keylen_max")?, limit("vallen_max")?);
        let name = self.call("cmd=get_my_kvsname", "my_kvsname")?;
        self.kvsname = name
            .get("kvsname")
            .filter(|k| !k.is_empty())
            .ok_or_else(|| invalid(&format!("no kvsname in '{}'", name.line)))?
            .to_owned();
        // Our keys, "goal.<round>.<rank>.<chunk>", stay under 40 bytes in any
        // real job; `put` checks each one against the limit.
        if keylen_max < 40 {
            return Err(invalid(&format!("keys limited to {keylen_max} bytes")));
        }
        self.keylen_max = keylen_max;
        let overhead = "cmd=put kvsname= key= value=\n".len() + self.kvsname.len() + keylen_max;
        let chunk = vallen_max
            .saturating_sub(1)
            .min(MAX_LINE.saturating_sub(overhead))
            & !1;
        if chunk < 64 {
            return Err(invalid(&format!(
                "values limited to {vallen_max} bytes, too short to carry addresses"
            )));
        }
        self.chunk = chunk;
        Ok(())
    }

    fn send(&mut self, line: &str) -> io::Result<()> {
        let mut msg = line.to_owned();
        msg.push('\n');
        sys::send_all(self.reader.get_ref().as_raw_fd(), msg.as_bytes())
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        let mut line = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_REPLY as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the PMI server closed the connection (the launcher died or ended the job)",
            ));
        }
        if line.last() != Some(&b'\n') {
            return Err(invalid("a reply line was cut short or too long"));
        }
        Ok(Reply::parse(String::from_utf8_lossy(&line).trim_end()))
    }

    /// Reads one reply and checks it is `cmd=<want>` with no error code.
    fn expect(&mut self, want: &str) -> io::Result<Reply> {
        let reply = self.read_reply()?;
        if reply.get("cmd") != Some(want) {
            return Err(invalid(&format!(
                "expected cmd={want}, the server said '{}'",
                reply.line
            )));
        }
        match reply.get("rc") {
            None | Some("0") => Ok(reply),
            Some(rc) => Err(io::Error::other(format!(
                "the PMI server answered rc={rc}{}",
                reply
                    .get("msg")
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ))),
        }
    }

    fn call(&mut self, request: &str, want: &str) -> io::Result<Reply> {
        self.send(request)?;
        self.expect(want)
    }

    fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        if key.len() >= self.keylen_max {
            return Err(invalid(&format!(
                "key {key} exceeds the server's limit of {} bytes",
                self.keylen_max
            )));
        }
        let request = format!("cmd=put kvsname={} key={key} value={value}", self.kvsname);
        debug_assert!(request.len() < MAX_LINE, "{} bytes", request.len());
        self.call(&request, "put_result")
            .map(drop)
            .map_err(|e| io::Error::new(e.kind(), format!("put {key}: {e}")))
    }

    fn get(&mut self, key: &str) -> io::Result<String> {
        let request = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let reply = self
            .call(&request, "get_result")
            .map_err(|e| io::Error::new(e.kind(), format!("get {key}: {e}")))?;
        Ok(reply.get("value").unwrap_or_default().to_owned())
    }

    fn barrier(&mut self) -> io::Result<()> {
        self.call("cmd=barrier_in", "barrier_out").map(drop)
    }

    fn round_trip(&mut self, round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let hex = secret::to_hex(mine);
        let chunks: Vec<&str> = hex
            .as_bytes()
            .chunks(self.chunk)
            .map(|c| std::str::from_utf8(c).expect("hex is ASCII"))
            .collect();
        let me = self.rank;
        for (i, chunk) in chunks.iter().enumerate() {
            self.put(&format!("goal.{round}.{me}.{i}"), chunk)?;
        }
        self.put(&format!("goal.{round}.{me}.n"), &chunks.len().to_string())?;
        self.barrier()?;
        let mut all = Vec::with_capacity(self.size);
        for r in 0..self.size {
            if r == me {
                all.push(mine.to_vec());
                continue;
            }
            let count = self.get(&format!("goal.{round}.{r}.n"))?;
            let count: usize = count
                .parse()
                .ok()
                .filter(|&n| n <= 2 * MAX_BLOB / self.chunk + 1)
                .ok_or_else(|| invalid(&format!("rank {r} published '{count}' chunks")))?;
            let mut hex = String::new();
            for i in 0..count {
                hex.push_str(&self.get(&format!("goal.{round}.{r}.{i}"))?);
            }
            let blob = secret::from_hex(&hex)
                .ok_or_else(|| invalid(&format!("rank {r} published a value that is not hex")))?;
            all.push(blob);
        }
        Ok(all)
    }
}

impl Publish for PmiClient {
    fn publish(&mut self, secret: &Secret) -> io::Result<()> {
        self.put(SECRET_KEY, &secret.to_hex())
    }

    fn fence(&mut self) -> io::Result<()> {
        self.barrier()
    }

    fn fetch(&mut self) -> io::Result<Secret> {
        let hex = self.get(SECRET_KEY)?;
        Secret::from_hex(&hex, "rank 0's published secret")
    }
}

impl Exchange for PmiClient {
    fn rounds(&mut self) -> &mut Rounds {
        &mut self.rounds
    }

    fn exchange(&mut self, round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.round_trip(round, mine)
    }

    fn what(&self) -> &'static str {
        "PMI allgather"
    }

    fn who(&self) -> String {
        format!("rank {}, {}", self.rank, self.server)
    }
}

impl Bootstrap for PmiClient {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    /// The PMI key-value space's name, the same on every rank of the job.
    fn job_id(&self) -> String {
        self.kvsname.clone()
    }

    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        rounds::allgather(self, mine)
    }

    /// Rank 0's secret, published through the job's PMI key-value space.
    fn secret(&self) -> [u8; SECRET_LEN] {
        self.secret.0
    }

    fn kind(&self) -> &'static str {
        "pmi"
    }
}

impl Drop for PmiClient {
    /// Says `finalize`, so the launcher knows this rank ended on purpose;
    /// the socket closes with the client.
    /// Not on a session shared with the program's MPI library, which
    /// finalizes it itself.
    fn drop(&mut self) {
        if !self.finalized && !self.shared_with_mpi && !rounds::is_broken(self) {
            self.finalized = true;
            let _ = self.call("cmd=finalize", "finalize_ack");
        }
    }
}

/// goal's own duplicate of the PMI socket the launcher left open as
/// descriptor `n`. The original stays open and untouched: under MPICH's
/// hydra it is also the program's MPI library's connection, and closing it
/// made MPICH's `MPI_Finalize` fail ("PMI_Barrier returned -1 ... Bad file
/// descriptor").
fn dup_fd(n: i32) -> io::Result<OwnedFd> {
    match sys::is_socket(n) {
        Ok(true) => {}
        Ok(false) => {
            return Err(invalid(&format!(
                "PMI_FD={n} is open but not a socket: it is not the launcher's PMI connection"
            )))
        }
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "PMI_FD={n} is not an open descriptor in this process ({e}); was the \
                     PMI connection already used and finalized, or closed by a launcher in between?"
                ),
            ))
        }
    }
    sys::dup_cloexec(n)
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

#[cfg(test)]
mod tests {
    //! The client against a small in-process PMI-1 server with Slurm's
    //! habits (rc on every reply, rc=1 for a missing key), one thread per
    //! rank, over socketpairs handed over as PMI_FD would be.

    use super::*;
    use std::collections::HashMap;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::sync::{Arc, Barrier, Mutex};
    use std::thread;

    /// Serves one rank: the fake server's side of its socket.
    fn serve(
        stream: UnixStream,
        kvs: Arc<Mutex<HashMap<String, String>>>,
        staged: Arc<Mutex<Vec<(String, String)>>>,
        barrier: Arc<Barrier>,
        vallen_max: usize,
    ) {
        let mut out = stream.try_clone().unwrap();
        for line in BufReader::new(stream).lines() {
            let line = line.unwrap();
            assert!(line.len() < MAX_LINE, "request of {} bytes", line.len());
            let req = Reply::parse(&line);
            let reply = match req.get("cmd").unwrap() {
                "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".to_owned(),
                "get_maxes" => {
                    format!("cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max={vallen_max}")
                }
                "get_my_kvsname" => "cmd=my_kvsname rc=0 kvsname=77.0".to_owned(),
                "put" => {
                    let (k, v) = (req.get("key").unwrap(), req.get("value").unwrap());
                    assert!(v.len() < vallen_max);
                    staged.lock().unwrap().push((k.to_owned(), v.to_owned()));
                    "cmd=put_result rc=0".to_owned()
                }
                "barrier_in" => {
                    barrier.wait();
                    let mut st = staged.lock().unwrap();
                    kvs.lock().unwrap().extend(st.drain(..));
                    drop(st);
                    barrier.wait();
                    "cmd=barrier_out rc=0".to_owned()
                }
                "get" => match kvs.lock().unwrap().get(req.get("key").unwrap()) {
                    Some(v) => format!("cmd=get_result rc=0 value={v}"),
                    None => "cmd=get_result rc=1".to_owned(),
                },
                "finalize" => {
                    writeln!(out, "cmd=finalize_ack rc=0").unwrap();
                    return;
                }
                other => panic!("unexpected command {other}"),
            };
            writeln!(out, "{reply}").unwrap();
        }
    }

    fn run_job(
        size: usize,
        vallen_max: usize,
        blobs: impl Fn(usize, usize) -> Vec<u8> + Send + Sync + 'static,
    ) {
        let kvs = Arc::new(Mutex::new(HashMap::new()));
        let staged = Arc::new(Mutex::new(Vec::new()));
        let barrier = Arc::new(Barrier::new(size));
        let blobs = Arc::new(blobs);
        let mut threads = Vec::new();
        for rank in 0..size {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let (kvs, staged, barrier) = (kvs.clone(), staged.clone(), barrier.clone());
            threads.push(thread::spawn(move || {
                serve(theirs, kvs, staged, barrier, vallen_max)
            }));
            let blobs = blobs.clone();
            threads.push(thread::spawn(move || {
                let mut c = PmiClient::connect(&PmiConn::Fd(ours.as_raw_fd()), Some((rank, size)), None).unwrap();
                // goal keeps a duplicate: the launcher's descriptor is not its to close.
                drop(ours);
                assert_eq!(
                    (c.rank(), c.size(), c.job_id().as_str()),
                    (rank, size, "77.0")
                );
                for round in 0..3 {
                    let all = c.allgather(&blobs(rank, round)).unwrap();
                    let want: Vec<Vec<u8>> = (0..size).map(|r| blobs(r, round)).collect();
                    assert!(all == want, "rank {rank} round {round}");
                }
                let secrets = c.allgather(&c.secret()).unwrap();
                assert!(
                    secrets.iter().all(|s| s == &secrets[0]),
                    "one secret per job"
                );
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn allgather_rounds_over_a_slurm_like_server() {
        run_job(3, 1024, |rank, round| match round {
            0 => vec![rank as u8; rank],
            // Several chunks per blob, and not a multiple of the chunk.
            1 => (0..3000 + rank).map(|i| (i * 7 + rank) as u8).collect(),
            _ => Vec::new(),
        });
    }

    #[test]
    fn tiny_value_limits_are_refused() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let server = thread::spawn(move || {
            serve(
                theirs,
                Default::default(),
                Default::default(),
                Arc::new(Barrier::new(1)),
                32,
            )
        });
        let e =
            PmiClient::connect(&PmiConn::Fd(ours.as_raw_fd()), Some((0, 1)), None).unwrap_err();
        assert!(e.to_string().contains("values limited to 32 bytes"), "{e}");
        drop(ours);
        server.join().unwrap();
    }

    #[test]
    fn a_closed_server_is_an_error_not_a_hang() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let e =
            PmiClient::connect(&PmiConn::Fd(ours.as_raw_fd()), Some((0, 2)), None).unwrap_err();
        assert!(e.to_string().contains("PMI_FD="), "{e}");
    }

    #[test]
    fn a_bad_pmi_fd_is_named() {
        let e = dup_fd(1_000_000).unwrap_err();
        assert!(
            e.to_string()
                .contains("PMI_FD=1000000 is not an open descriptor"),
            "{e}"
        );
        let file = File::open("/proc/self/status").unwrap();
        let e = dup_fd(file.as_raw_fd()).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");
    }

    /// Under hydra the PMI socket is the program's MPI library's too: goal
    /// leaves the inherited descriptor open, and says no `finalize` on a
    /// session it shares with MPI (MPICH's MPI_Finalize failed on both).
    #[test]
    fn the_inherited_pmi_fd_stays_open_and_a_shared_session_unfinalized() {
        for shared in [false, true] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            let server = thread::spawn(move || {
                let mut out = theirs.try_clone().unwrap();
                for line in BufReader::new(theirs).lines() {
                    let line = line.unwrap();
                    let req = Reply::parse(&line);
                    let cmd = req.get("cmd").unwrap().to_owned();
                    let reply = match cmd.as_str() {
                        "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
                        "get_maxes" => "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024",
                        "get_my_kvsname" => "cmd=my_kvsname rc=0 kvsname=k",
                        "put" => "cmd=put_result rc=0",
                        "barrier_in" => "cmd=barrier_out rc=0",
                        "finalize" => "cmd=finalize_ack rc=0",
                        // What the MPI library says after goal is done with the socket.
                        "mpi_still_here" => "cmd=yes",
                        other => panic!("unexpected command {other}"),
                    };
                    writeln!(out, "{reply}").unwrap();
                    tx.send(cmd).unwrap();
                }
            });
            let mut c = PmiClient::connect(&PmiConn::Fd(ours.as_raw_fd()), Some((0, 1)), None).unwrap();
            c.shared_with_mpi = shared;
            drop(c);
            // The original still works: the MPI library's PMI client goes on.
            let mut mine = ours.try_clone().unwrap();
            writeln!(mine, "cmd=mpi_still_here").unwrap();
            let mut reply = String::new();
            BufReader::new(&ours).read_line(&mut reply).unwrap();
            assert_eq!(reply.trim(), "cmd=yes", "shared={shared}");
            drop((mine, ours));
            server.join().unwrap();
            let said: Vec<String> = rx.try_iter().collect();
            assert_eq!(said.contains(&"finalize".to_owned()), !shared, "shared={shared}: {said:?}");
        }
    }
}
