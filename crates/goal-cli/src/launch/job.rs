//! Running a job: start the bootstrap server and the ranks, watch them, and
//! end the job the way the launch contract says.
//!
//! # Lifecycle
//!
//! 1. Block SIGINT/SIGTERM/SIGHUP and open a signalfd for them, before any
//!    thread exists (threads inherit the mask; one without it would let the
//!    default action kill goalrun without cleanup).
//! 2. Make a private directory (mkdtemp, mode 0700), lock it as alive and
//!    remove what killed goalruns of this user left beside it (see
//!    [`TempDir`]); bind the bootstrap socket in it; start the server
//!    ([`goal_boot::server`]).
//! 3. Spawn the ranks from this, the main, thread (the parent-death signal
//!    is tied to the forking thread; see [`sys::child_setup`]), each with its
//!    GOAL_ variables and bound to its CPUs (decided before step 1 by
//!    [`bind::plan`], which refuses a binding it cannot keep before anything
//!    starts), and open a pidfd for each.
//! 4. [`Monitor::run`]: one `poll` over the signalfd and the pidfds of the
//!    running ranks, its timeout the nearest deadline. It never spins.
//! 5. Shut the server down, wait briefly for tagged output to drain, and
//!    remove the directory (on every path out, by `Drop`).
//!
//! # Ending a job
//!
//! The first rank to fail (non-zero exit or a signal) is reported, the
//! bootstrap server is aborted (ranks blocked in `allgather` fail at once),
//! and the survivors get a grace period to notice the dead peer and end with
//! their own error. Then SIGTERM, then, one second later, SIGKILL. `--timeout`
//! SIGKILLs every rank still running. A signal to goalrun is forwarded to the
//! ranks once; a second one SIGKILLs them. Deaths that goalrun caused itself
//! (its SIGTERM/SIGKILL) are not reported as failures.
//!
//! A rank that ends before it joined the bootstrap (whatever its status)
//! fails the job as soon as another rank has joined, which would otherwise
//! wait for it forever: goalrun tells the server
//! ([`ServerHandle::rank_ended`]), the server aborts the waiting ranks with
//! a reason naming that rank, and goalrun reports it as the job's failure.
//! A job none of whose ranks use the bootstrap (`goalrun -n 2 hostname`)
//! is not affected.
//!
//! # torchrun's variables
//!
//! Besides its own `GOAL_` variables, each rank gets those torchrun gives its
//! workers, so that `torch.distributed.init_process_group(...)` (its default
//! `env://`) works under goalrun as under torchrun: `RANK`, `WORLD_SIZE`,
//! `LOCAL_RANK`, `LOCAL_WORLD_SIZE` (always: an inherited value would be
//! another job's) and `MASTER_ADDR`, `MASTER_PORT` (torch's store, served
//! by rank 0), kept when goalrun's caller set both, otherwise `127.0.0.1`
//! and a port free when goalrun starts, as `torchrun --standalone` picks
//! one: another program could take it before rank 0 binds it, which rank
//! 0's torch then reports. goal's own bootstrap ignores them: `GOAL_BOOTSTRAP`
//! comes first (goal-boot's precedence).
//!
//! Exit status: 124 on timeout; else the first failing rank's status (its
//! exit code, or 128 + signal; "first" is judged with care, see
//! [`Monitor::culprit`]); else, if goalrun killed ranks (a second signal),
//! the status of one of those; else 0.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use goal_boot::env;
use goal_boot::server::{Server, ServerHandle};

use super::bind;
use super::hiargs::HiArgs;
use super::output::{Stream, Tagger};
use super::sys::{self, ExitStatus, SignalFd};
use super::Failure;

/// Time between SIGTERM and SIGKILL for survivors of a failed job.
const TERM_TO_KILL: Duration = Duration::from_secs(1);
/// How long tagged output may take to drain after the last rank exited.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// Failures this close after the first one seen may be its cause rather
/// than its consequence; see [`Monitor::culprit`].
const SETTLE: Duration = Duration::from_millis(250);
/// Signals goalrun forwards to the ranks.
const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn fatal(what: &str) -> impl FnOnce(io::Error) -> Failure + '_ {
    move |e| Failure {
        code: 1,
        message: format!("{what}: {}", sys::describe(&e)),
        usage: false,
    }
}

/// Runs the job `args` describes; returns goalrun's exit status.
pub(crate) fn run(args: &HiArgs) -> Result<i32, Failure> {
    let topo = bind::Topology::read().map_err(fatal("cannot read the CPUs goalrun may use"))?;
    let binding = bind::plan(&topo, args.ranks, args.bind_to, args.map_by).map_err(|message| Failure {
        code: 2,
        message,
        usage: false,
    })?;
    let sets = binding
        .ranks
        .iter()
        .map(|cpus| cpus.as_deref().map(sys::cpu_set).transpose())
        .collect::<io::Result<Vec<_>>>()
        .map_err(fatal("cannot bind the ranks"))?;
    let signals = SignalFd::new(&FORWARDED).map_err(fatal("cannot set up signal handling"))?;
    // pidfd, two bootstrap socket descriptors, two pipes per rank, and spare.
    let _ = sys::raise_nofile_limit(8 * args.ranks as u64 + 64);
    let dir = TempDir::new().map_err(fatal("cannot create a temporary directory"))?;
    let sock = dir.path().join("boot.sock");
    let server = Server::bind(&sock, args.ranks)
        .and_then(Server::spawn)
        .map_err(fatal("cannot start the bootstrap server"))?;
    let job = job_id();
    let master = if args.master_given {
        None
    } else {
        Some(free_port().map_err(fatal("cannot find a free port for MASTER_PORT"))?)
    };
    let mut tagger = args.tag_output.then(Tagger::new);

    let mut ranks = Vec::with_capacity(args.ranks);
    let mut spawn_error = None;
    for (index, &set) in sets.iter().enumerate().take(args.ranks) {
        match spawn_rank(args, index, &sock, &job, master, set, tagger.as_mut()) {
            Ok(rank) => {
                if args.report_bindings {
                    say!("goalrun: {}", bind::report_line(&topo, &binding, index, rank.pid));
                }
                ranks.push(rank)
            }
            Err(e) => {
                spawn_error = Some((index, e));
                break;
            }
        }
    }
    let mut monitor = Monitor::new(ranks, &signals, &server, args);
    let result = match spawn_error {
        None => Ok(monitor.run()),
        Some((index, e)) => {
            server.abort(&format!("goalrun could not start rank {index}"));
            monitor.kill_all();
            monitor.run();
            let message = match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => format!(
                    "cannot execute '{}': {}",
                    args.argv0.to_string_lossy(),
                    sys::describe(&e)
                ),
                _ => format!("cannot start rank {index}: {}", sys::describe(&e)),
            };
            let code = match e.kind() {
                io::ErrorKind::NotFound => 127,
                io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            };
            Err(Failure {
                code,
                message,
                usage: false,
            })
        }
    };
    if let Some(tagger) = tagger {
        tagger.finish(DRAIN_LIMIT);
    }
    server.shutdown();
    drop(dir);
    result
}

/// A job id unique on this machine: goalrun's pid and the time in ns.
fn job_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// A TCP port free on every address of this machine now (the kernel's
/// choice of an ephemeral port), for torch's store.
fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind(("0.0.0.0", 0))?.local_addr()?.port())
}

/// One rank process.
#[derive(Debug)]
struct Rank {
    index: usize,
    pid: libc::pid_t,
    /// Readable once the process has exited.
    pidfd: OwnedFd,
    /// Set once reaped.
    status: Option<ExitStatus>,
    /// goalrun has sent this rank SIGTERM or SIGKILL itself: its death is
    /// goalrun's doing, not a failure to report.
    ended_by_us: bool,
}

fn spawn_rank(
    args: &HiArgs,
    index: usize,
    sock: &Path,
    job: &str,
    master: Option<u16>,
    cpus: Option<libc::cpu_set_t>,
    tagger: Option<&mut Tagger>,
) -> io::Result<Rank> {
    let mut cmd = Command::new(&args.program);
    cmd.arg0(&args.argv0)
        .args(&args.args)
        .env(env::RANK, index.to_string())
        .env(env::SIZE, args.ranks.to_string())
        .env(env::JOB, job)
        .env(env::BOOTSTRAP, sock)
        .env("RANK", index.to_string())
        .env("WORLD_SIZE", args.ranks.to_string())
        .env("LOCAL_RANK", index.to_string())
        .env("LOCAL_WORLD_SIZE", args.ranks.to_string());
    if let Some(port) = master {
        cmd.env("MASTER_ADDR", "127.0.0.1").env("MASTER_PORT", port.to_string());
    }
    if let Some(p) = args.progress {
        cmd.env(env::PROGRESS, p.as_str());
    }
    // Like mpirun: standard input goes to rank 0 only.
    if index != 0 {
        cmd.stdin(Stdio::null());
    }
    if tagger.is_some() {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let parent = sys::getpid();
    // SAFETY: the closure runs between fork and exec in the child of a
    // multi-threaded process, where only async-signal-safe calls are allowed:
    // child_setup makes only prctl, getppid, raise, sigemptyset and
    // sigprocmask calls, bind_self one sched_setaffinity on a set made
    // before the fork; neither allocates nor takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            sys::child_setup(parent)?;
            match &cpus {
                Some(set) => sys::bind_self(set),
                None => Ok(()),
            }
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let ready = sys::pidfd_open(pid).and_then(|pidfd| {
        if let Some(tagger) = tagger {
            if let Some(out) = child.stdout.take() {
                tagger.tag(index, out, Stream::Stdout)?;
            }
            if let Some(err) = child.stderr.take() {
                tagger.tag(index, err, Stream::Stderr)?;
            }
        }
        Ok(pidfd)
    });
    match ready {
        Ok(pidfd) => Ok(Rank {
            index,
            pid,
            pidfd,
            status: None,
            ended_by_us: false,
        }),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Where the job is on its way to an end.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// No failure yet.
    Running,
    /// A rank failed; survivors may end by themselves until then.
    Grace(Instant),
    /// Survivors were sent SIGTERM; SIGKILL at this instant.
    Term(Instant),
    /// Survivors were sent SIGKILL; only reaping is left.
    Killed,
}

struct Monitor<'a> {
    ranks: Vec<Rank>,
    signals: &'a SignalFd,
    server: &'a ServerHandle,
    /// When `--timeout` expires, and its text for the message.
    timeout: Option<(Instant, &'a str)>,
    timed_out: bool,
    grace: Duration,
    phase: Phase,
    /// The first failure seen: which rank, how.
    first_failure: Option<(usize, ExitStatus)>,
    /// Every failure not caused by goalrun, in the order reaped, with when.
    failures: Vec<(Instant, usize, ExitStatus)>,
    /// The signal goalrun received and forwarded, if any.
    forwarded: Option<i32>,
    /// Ranks that exited with status 0 before they joined the bootstrap,
    /// with their pid, as `rank_ended` was told; one of them becomes a
    /// failure if the server blames it for aborting the job.
    ended_unjoined: Vec<(usize, libc::pid_t)>,
    /// That failure has been reported.
    unjoined_reported: bool,
    poll_failed: bool,
    /// Ranks whose end was seen but who are left unreaped until the job
    /// ends (see [`Monitor::reap`]).
    zombies: Vec<libc::pid_t>,
}

fn seconds(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

impl<'a> Monitor<'a> {
    fn new(
        ranks: Vec<Rank>,
        signals: &'a SignalFd,
        server: &'a ServerHandle,
        args: &'a HiArgs,
    ) -> Self {
        let start = Instant::now();
        Monitor {
            ranks,
            signals,
            server,
            timeout: args
                .timeout
                .as_ref()
                .map(|(d, text)| (start + *d, text.as_str())),
            timed_out: false,
            grace: args.abort_grace,
            phase: Phase::Running,
            first_failure: None,
            failures: Vec::new(),
            forwarded: None,
            ended_unjoined: Vec::new(),
            unjoined_reported: false,
            poll_failed: false,
            zombies: Vec::new(),
        }
    }

    fn running(&self) -> Vec<usize> {
        self.ranks
            .iter()
            .filter(|r| r.status.is_none())
            .map(|r| r.index)
            .collect()
    }

    /// Sends `sig` to every running rank, as goalrun's own doing.
    fn signal_running(&mut self, sig: i32) {
        for rank in self.ranks.iter_mut().filter(|r| r.status.is_none()) {
            rank.ended_by_us = true;
            // Unreaped, so the pid cannot have been reused: ESRCH is impossible
            // and any other error would not be helped by a retry.
            let _ = sys::kill(rank.pid, sig);
        }
    }

    fn kill_all(&mut self) {
        self.signal_running(libc::SIGKILL);
        self.phase = Phase::Killed;
    }

    /// Watches the ranks until every one has been reaped; returns the job's
    /// exit status.
    fn run(&mut self) -> i32 {
        loop {
            let running = self.running();
            if running.is_empty() {
                break;
            }
            self.fire_timers(Instant::now());
            let mut fds = vec![self.signals.as_raw_fd()];
            fds.extend(running.iter().map(|&i| self.ranks[i].pidfd.as_raw_fd()));
            let wait = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(Instant::now()));
            let revents = match sys::poll(&fds, wait) {
                Ok(r) => r,
                Err(e) => {
                    // Cannot happen with valid descriptors; degrade to a slow
                    // scan rather than abandon the ranks.
                    if !self.poll_failed {
                        say!("goalrun: waiting for the ranks failed: {e}");
                        self.poll_failed = true;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                    vec![1; fds.len()]
                }
            };
            if revents[0] != 0 {
                self.take_signals();
            }
            for (k, &i) in running.iter().enumerate() {
                if revents[k + 1] != 0 {
                    self.reap(i);
                }
            }
        }
        for pid in std::mem::take(&mut self.zombies) {
            let _ = sys::try_wait(pid);
        }
        // The ranks may all have ended "successfully" after the server
        // aborted the job because one of them had left unjoined.
        self.note_unjoined();
        if self.timed_out {
            return 124;
        }
        if let Some(status) = self.culprit() {
            // A rank that left before joining exited 0, yet failed the job.
            return if status.success() { 1 } else { status.code() };
        }
        // No rank failed on its own, but goalrun may have killed some (a
        // second signal to goalrun): that is not a success either.
        self.ranks
            .iter()
            .filter_map(|r| r.status)
            .find(|s| !s.success())
            .map_or(0, |s| s.code())
    }

    /// The failure that the job's exit status reports: the first rank to fail.
    ///
    /// The order of reaping is not quite the order of failing. A dying rank's
    /// sockets close before `waitpid` can see it, so its peers may detect the
    /// loss, fail, and be reaped in the same wake-up as it, or even before it.
    /// Among failures reaped within [`SETTLE`] of the first one, the cause is
    /// therefore taken to be, in order: the rank the bootstrap server blames
    /// for aborting the job, a rank killed by a signal, the first reaped.
    fn culprit(&self) -> Option<ExitStatus> {
        let &(first_at, _, _) = self.failures.first()?;
        let window: Vec<(usize, ExitStatus)> = self
            .failures
            .iter()
            .filter(|(at, _, _)| at.duration_since(first_at) <= SETTLE)
            .map(|&(_, rank, status)| (rank, status))
            .collect();
        let blamed = self.server.blamed_rank();
        window
            .iter()
            .find(|(rank, _)| Some(*rank) == blamed)
            .or_else(|| {
                window
                    .iter()
                    .find(|(_, s)| matches!(s, ExitStatus::Signaled(_)))
            })
            .or(window.first())
            .map(|&(_, status)| status)
    }

    fn next_deadline(&self) -> Option<Instant> {
        let timeout = self.timeout.filter(|_| !self.timed_out).map(|(t, _)| t);
        let phase = match self.phase {
            Phase::Grace(t) | Phase::Term(t) => Some(t),
            Phase::Running | Phase::Killed => None,
        };
        match (timeout, phase) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        if let Some((deadline, text)) = self.timeout {
            if !self.timed_out && now >= deadline {
                self.timed_out = true;
                say!(
                    "goalrun: timeout after {text} s; killed ranks {:?}",
                    self.running()
                );
                self.server
                    .abort(&format!("goalrun: timeout after {text} s"));
                self.kill_all();
            }
        }
        match self.phase {
            Phase::Grace(until) if now >= until => {
                let failed = self.first_failure.map_or(0, |(r, _)| r);
                say!(
                    "goalrun: ranks {:?} still running {} s after rank {failed} failed; \
                     sending SIGTERM",
                    self.running(),
                    seconds(self.grace)
                );
                self.signal_running(libc::SIGTERM);
                self.phase = Phase::Term(now + TERM_TO_KILL);
            }
            Phase::Term(until) if now >= until => {
                say!(
                    "goalrun: ranks {:?} survived SIGTERM; sending SIGKILL",
                    self.running()
                );
                self.kill_all();
            }
            _ => {}
        }
    }

    fn take_signals(&mut self) {
        loop {
            let sig = match self.signals.next() {
                Ok(Some(sig)) => sig,
                Ok(None) => return,
                Err(e) => {
                    say!("goalrun: reading signals failed: {e}");
                    return;
                }
            };
            let name = sys::signal_name(sig);
            if self.forwarded.is_none() {
                say!("goalrun: received {name}; forwarding it to the ranks");
                self.forwarded = Some(sig);
                self.server.abort(&format!("goalrun received {name}"));
                for rank in self.ranks.iter().filter(|r| r.status.is_none()) {
                    let _ = sys::kill(rank.pid, sig);
                }
            } else {
                say!("goalrun: received {name} again; killing the ranks");
                self.kill_all();
            }
        }
    }

    /// Takes the status of rank `i` if it has ended. The process is left a
    /// zombie until the job ends: its peers, which watch it through a pidfd,
    /// read why it ended from its `/proc/<pid>/stat`, and a reaped process
    /// has none (they said only "exited" for a rank killed by SIGKILL, as
    /// often as goalrun's reaping came first: `hardening.rs`'s
    /// `a_rank_that_finalizes_after_another_died_...` failed once in CI).
    fn reap(&mut self, i: usize) {
        let rank = &mut self.ranks[i];
        let status = match sys::ended(rank.pid) {
            Ok(Some(status)) => {
                self.zombies.push(rank.pid);
                status
            }
            Ok(None) => return,
            Err(e) => {
                // Someone else reaped it (ECHILD). Count it as failed, so
                // the pidfd, readable forever, is not polled again.
                say!(
                    "goalrun: cannot get the status of rank {} (pid {}): {e}",
                    rank.index,
                    rank.pid
                );
                ExitStatus::Exited(255)
            }
        };
        rank.status = Some(status);
        if rank.ended_by_us {
            return;
        }
        let (index, pid) = (rank.index, rank.pid);
        let how = match status {
            ExitStatus::Exited(code) => format!("exited with status {code}"),
            ExitStatus::Signaled(sig) => {
                format!("was killed by signal {sig} ({})", sys::signal_name(sig))
            }
        };
        if status.success() {
            // Fine, unless it never joined while others did or will.
            let what = format!("rank {index} (pid {pid}) {how}");
            if self.server.rank_ended(index, &what).is_some() {
                self.ended_unjoined.push((index, pid));
                self.note_unjoined();
            }
            return;
        }
        self.note_unjoined();
        // A death by the signal goalrun forwarded was announced already.
        let by_forwarded = matches!(status, ExitStatus::Signaled(s) if self.forwarded == Some(s));
        if !by_forwarded {
            say!("goalrun: rank {index} (pid {pid}) {how}");
        }
        self.failures.push((Instant::now(), index, status));
        if self.first_failure.is_none() {
            self.first_failure = Some((index, status));
            if self.phase == Phase::Running {
                self.server
                    .abort(&format!("rank {index} (pid {pid}) {how}"));
                self.phase = Phase::Grace(Instant::now() + self.grace);
            }
        }
    }
}

impl Monitor<'_> {
    /// If the server aborted the job because a rank had ended before it
    /// joined, reports that rank as the job's (first) failure, once.
    fn note_unjoined(&mut self) {
        if self.unjoined_reported {
            return;
        }
        let Some(blamed) = self.server.blamed_rank() else {
            return;
        };
        let Some(&(index, pid)) = self.ended_unjoined.iter().find(|(r, _)| *r == blamed) else {
            return;
        };
        self.unjoined_reported = true;
        let Some(status) = self.ranks[index].status else {
            return;
        };
        say!(
            "goalrun: rank {index} (pid {pid}) exited with status {} before it joined the \
             job's bootstrap, while other ranks waited for it: a rank that leaves before \
             joining fails the job",
            status.code()
        );
        self.failures.insert(0, (Instant::now(), index, status));
        if self.first_failure.is_none() {
            self.first_failure = Some((index, status));
            if self.phase == Phase::Running {
                self.phase = Phase::Grace(Instant::now() + self.grace);
            }
        }
    }
}

/// A private directory for the job's socket, removed on drop.
///
/// A goalrun killed by SIGKILL cannot remove it; the next goalrun of the
/// same user does. Each goalrun holds an `flock` on its directory's
/// [`OWNER`] file for its whole life (the kernel lets go of it when the
/// process dies, however it dies), and at start removes every `goalrun-`
/// directory of its user beside its own whose lock it can take. The lock
/// file is locked under another name and then renamed into place, so no
/// goalrun ever finds the lock of a live one free (a pid, which the kernel
/// reuses, would not say as much).
#[derive(Debug)]
struct TempDir {
    path: PathBuf,
    /// The locked [`OWNER`] file: held, not read.
    _owner: std::fs::File,
}

/// The file whose lock says the directory's goalrun is alive.
const OWNER: &str = "owner.lock";
const PREFIX: &str = "goalrun-";

impl TempDir {
    /// Under `$TMPDIR`, or `/tmp` if that is unset or too long for a Unix
    /// socket path (108 bytes with the socket's own name).
    fn new() -> io::Result<TempDir> {
        let tmp = std::env::var_os("TMPDIR")
            .filter(|d| !d.is_empty() && d.len() <= 64)
            .map(PathBuf::from)
            .and_then(|d| std::path::absolute(d).ok());
        let (base, path) = match tmp.and_then(|b| Some((sys::mkdtemp(&b, PREFIX).ok()?, b))) {
            Some((path, base)) => (base, path),
            None => (
                PathBuf::from("/tmp"),
                sys::mkdtemp(Path::new("/tmp"), PREFIX)?,
            ),
        };
        let owner = match Self::lock(&path) {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&path);
                return Err(e);
            }
        };
        sweep(&base, &path);
        Ok(TempDir {
            path,
            _owner: owner,
        })
    }

    /// Creates and locks `dir`/[`OWNER`] (locked first, then renamed in).
    fn lock(dir: &Path) -> io::Result<std::fs::File> {
        let tmp = dir.join(".owner");
        let f = std::fs::File::create(&tmp)?;
        if !sys::try_lock(&f)? {
            return Err(io::Error::other("a fresh lock file is locked already"));
        }
        std::fs::rename(&tmp, dir.join(OWNER))?;
        Ok(f)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Removes the directories in `base` that goalruns of this user left when
/// they were killed (see [`TempDir`]), except `mine`. Best effort: what
/// cannot be read or removed is left alone.
fn sweep(base: &Path, mine: &Path) {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let me = sys::geteuid();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX) && n.len() == PREFIX.len() + 6);
        if !ours || path == mine {
            continue;
        }
        // A real directory of ours (not a symbolic link, not another user's).
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() && m.uid() == me => {}
            _ => continue,
        }
        // No lock file: a goalrun still setting up, or not one of ours.
        let Ok(owner) = std::fs::File::open(path.join(OWNER)) else {
            continue;
        };
        if sys::try_lock(&owner).unwrap_or(false) {
            // Its goalrun is dead; remove the directory while holding its lock.
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
