//! The bootstrap server and client together: ranks as threads where only the
//! protocol matters, as processes (this test binary re-run with the GOAL_
//! variables set) where `from_env` and the process boundary matter.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use goal_boot::server::Server;
use goal_boot::{Bootstrap, UnixClient, MAX_BLOB};

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "goal-boot-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn sock(&self) -> PathBuf {
        self.0.join("boot.sock")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The blob rank `rank` contributes to round `round`: distinct per rank and
/// round, of varying length, empty for some, large for one round.
fn blob(rank: usize, round: usize) -> Vec<u8> {
    let len = match round {
        2 => 0,
        3 => 200_000 + rank,
        _ => rank * 3 + round,
    };
    (0..len)
        .map(|i| (rank * 31 + round * 7 + i) as u8)
        .collect()
}

fn run_rank(path: &Path, rank: usize, size: usize, rounds: usize) -> io::Result<[u8; 32]> {
    let mut client = UnixClient::connect(path, rank, size, "job-1".into())?;
    assert_eq!(
        (client.rank(), client.size(), client.job_id()),
        (rank, size, "job-1".into())
    );
    for round in 0..rounds {
        let all = client.allgather(&blob(rank, round))?;
        let want: Vec<Vec<u8>> = (0..size).map(|r| blob(r, round)).collect();
        assert!(all == want, "rank {rank} round {round}: wrong blobs");
    }
    assert_eq!(client.kind(), "goalrun");
    Ok(client.secret())
}

#[test]
fn allgather_rounds_carry_every_ranks_blob() {
    let mut job_secrets = Vec::new();
    for size in [1, 3, 7] {
        let dir = TempDir::new();
        let server = Server::bind(dir.sock(), size).unwrap().spawn().unwrap();
        let ranks: Vec<_> = (0..size)
            .map(|rank| {
                let path = dir.sock();
                thread::spawn(move || run_rank(&path, rank, size, 5))
            })
            .collect();
        let secrets: Vec<[u8; 32]> = ranks
            .into_iter()
            .map(|r| r.join().unwrap().unwrap())
            .collect();
        assert!(
            secrets.iter().all(|s| *s == secrets[0]),
            "one secret per job"
        );
        assert_ne!(secrets[0], [0u8; 32]);
        job_secrets.push(secrets[0]);
        assert_eq!(server.rounds_completed(), 5);
        server.shutdown();
    }
    assert!(
        job_secrets[0] != job_secrets[1] && job_secrets[1] != job_secrets[2],
        "every server makes its own secret"
    );
}

#[test]
fn bad_hello_is_rejected_and_the_job_goes_on() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 2).unwrap().spawn().unwrap();

    let e = UnixClient::connect(&dir.sock(), 5, 2, "j".into()).unwrap_err();
    assert!(e.to_string().contains("rank 5 is out of range"), "{e}");
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);

    let e = UnixClient::connect(&dir.sock(), 1, 3, "j".into()).unwrap_err();
    assert!(e.to_string().contains("says the job has 3 ranks"), "{e}");

    let first = UnixClient::connect(&dir.sock(), 0, 2, "j".into()).unwrap();
    let e = UnixClient::connect(&dir.sock(), 0, 2, "j".into()).unwrap_err();
    assert!(e.to_string().contains("rank 0 has already joined"), "{e}");

    let other = {
        let path = dir.sock();
        thread::spawn(move || {
            let mut c = UnixClient::connect(&path, 1, 2, "j".into())?;
            c.allgather(b"one")
        })
    };
    let mut first = first;
    assert_eq!(
        first.allgather(b"zero").unwrap(),
        vec![b"zero".to_vec(), b"one".to_vec()]
    );
    assert_eq!(
        other.join().unwrap().unwrap(),
        vec![b"zero".to_vec(), b"one".to_vec()]
    );
    server.shutdown();
}

/// The calling thread's id, for [`until_blocked`].
fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Waits (up to 10 s) until thread `tid` of this process sleeps in the
/// kernel. A rank thread that sleeps after it was told to start an
/// allgather is blocked in it, waiting for the reply: the test need not
/// guess how long the thread takes to get there.
fn until_blocked(tid: i32) {
    let stat = format!("/proc/self/task/{tid}/stat");
    let t = Instant::now();
    // The state follows the parenthesised command name.
    let state = || {
        std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| s.rsplit_once(") ").and_then(|(_, r)| r.chars().next()))
    };
    while state() != Some('S') && t.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `c.allgather(b"x")` and then `then` on a thread of its own;
/// returns once that thread is blocked in the allgather (or past it).
fn allgather_in_thread<T: Send + 'static>(
    mut c: UnixClient,
    then: impl FnOnce(&mut UnixClient, io::Result<Vec<Vec<u8>>>) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = thread::spawn(move || {
        tx.send(gettid()).unwrap();
        let r = c.allgather(b"x");
        then(&mut c, r)
    });
    until_blocked(rx.recv().unwrap());
    handle
}

/// The waiting rank connects before the thread that waits is started (a
/// client that came after the abort would be refused at its HELLO), and the
/// abort comes once that thread is blocked in its allgather.
#[test]
fn abort_fails_a_blocked_allgather_promptly_with_the_reason() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 2).unwrap().spawn().unwrap();
    let mut idle = UnixClient::connect(&dir.sock(), 1, 2, "j".into()).unwrap();
    let c = UnixClient::connect(&dir.sock(), 0, 2, "j".into()).unwrap();
    let waiter = allgather_in_thread(c, |c, r| {
        let again = c.allgather(b"x");
        (r, again, Instant::now())
    });
    let aborted_at = Instant::now();
    server.abort("rank 1 (pid 7) was killed by signal 9");
    let (r, again, failed_at) = waiter.join().unwrap();
    let e = r.unwrap_err();
    assert!(
        e.to_string()
            .contains("rank 1 (pid 7) was killed by signal 9"),
        "{e}"
    );
    assert!(failed_at.duration_since(aborted_at) < Duration::from_secs(2));
    assert!(again.is_err(), "a failed client stays failed");
    // A rank that was between rounds learns of the abort at its next call.
    let e = idle.allgather(b"y").unwrap_err();
    assert!(e.to_string().contains("was killed by signal 9"), "{e}");
    assert_eq!(
        server.blamed_rank(),
        None,
        "the launcher aborted, no rank is to blame"
    );
    server.shutdown();
}

/// As above: every rank connects first, and the leaver leaves once both
/// others are blocked in the round.
#[test]
fn rank_leaving_during_a_round_aborts_the_others() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 3).unwrap().spawn().unwrap();
    let waiters: Vec<_> = (0..2)
        .map(|rank| {
            let c = UnixClient::connect(&dir.sock(), rank, 3, "j".into()).unwrap();
            allgather_in_thread(c, |_, r| r)
        })
        .collect();
    let leaver = UnixClient::connect(&dir.sock(), 2, 3, "j".into()).unwrap();
    drop(leaver);
    for w in waiters {
        let e = w.join().unwrap().unwrap_err();
        assert!(e.to_string().contains("rank 2"), "{e}");
    }
    assert_eq!(server.blamed_rank(), Some(2));
    server.shutdown();
}

#[test]
fn client_fails_promptly_when_the_server_closes() {
    // A stand-in for a launcher that dies: admit the client, then close.
    let dir = TempDir::new();
    let listener = UnixListener::bind(dir.sock()).unwrap();
    let fake = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 20];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&0u32.to_le_bytes()).unwrap();
        s.write_all(&[7u8; 32]).unwrap();
        thread::sleep(Duration::from_millis(200));
    });
    let mut c = UnixClient::connect(&dir.sock(), 0, 2, "j".into()).unwrap();
    assert_eq!(
        c.secret(),
        [7u8; 32],
        "the secret comes from the HELLO reply"
    );
    let e = c.allgather(b"x").unwrap_err();
    assert!(e.to_string().contains("closed the connection"), "{e}");
    fake.join().unwrap();
}

#[test]
fn oversized_blob_is_refused_locally_and_the_client_stays_usable() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 1).unwrap().spawn().unwrap();
    let mut c = UnixClient::connect(&dir.sock(), 0, 1, "j".into()).unwrap();
    let e = c.allgather(&vec![0u8; MAX_BLOB + 1]).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    let max = vec![7u8; MAX_BLOB];
    assert_eq!(c.allgather(&max).unwrap(), vec![max]);
    server.shutdown();
}

/// Not a test on its own: the body of one rank process spawned by
/// `ranks_as_processes_use_from_env`; passes trivially when run directly.
#[test]
fn rank_process_entry() {
    if std::env::var_os("GOAL_BOOT_TEST_CHILD").is_none() {
        return;
    }
    let mut boot = goal_boot::from_env().unwrap();
    let (rank, size) = (boot.rank(), boot.size());
    for round in 0..3 {
        let all = boot.allgather(&blob(rank, round)).unwrap();
        assert!(all == (0..size).map(|r| blob(r, round)).collect::<Vec<_>>());
    }
    if std::env::var_os("GOAL_BOOT_TEST_DIE").is_some() && rank == 0 {
        std::process::exit(9);
    }
    // Everyone but a dying rank 0 tries one more round: it must fail, not hang.
    let last = boot.allgather(b"last");
    if std::env::var_os("GOAL_BOOT_TEST_DIE").is_some() {
        let e = last.unwrap_err();
        println!("RANK-ERROR {e}");
    } else {
        last.unwrap();
    }
}

fn spawn_ranks(dir: &TempDir, size: usize, die: bool) -> Vec<std::process::Child> {
    (0..size)
        .map(|rank| {
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args([
                "--exact",
                "rank_process_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("GOAL_BOOT_TEST_CHILD", "1")
            .env("GOAL_BOOTSTRAP", dir.sock())
            .env("GOAL_RANK", rank.to_string())
            .env("GOAL_SIZE", size.to_string())
            .env("GOAL_JOB", "proc-job")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
            if die {
                cmd.env("GOAL_BOOT_TEST_DIE", "1");
            }
            cmd.spawn().unwrap()
        })
        .collect()
}

#[test]
fn ranks_as_processes_use_from_env() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 3).unwrap().spawn().unwrap();
    for child in spawn_ranks(&dir, 3, false) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert_eq!(server.rounds_completed(), 4);
    server.shutdown();
}

#[test]
fn a_dead_rank_process_fails_the_others_next_round() {
    let dir = TempDir::new();
    let server = Server::bind(dir.sock(), 3).unwrap().spawn().unwrap();
    let mut children = spawn_ranks(&dir, 3, true).into_iter();
    let first = children.next().unwrap().wait_with_output().unwrap();
    assert!(!first.status.success());
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(
            stdout.contains("RANK-ERROR") && stdout.contains("rank 0"),
            "{stdout}"
        );
    }
    server.shutdown();
}
