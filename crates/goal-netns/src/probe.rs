//! A TCP rate probe: how fast one host can send to another over given rails.
//!
//! Checking a cluster means sending real bytes between two hosts, from real
//! processes inside their namespaces: a thread of the test process could
//! enter a namespace too, but would not prove that [`Host::command`] works.
//! `iperf3` would do, but is one more package; the probe is 100 lines.
//!
//! The two ends are subcommands of the `goal-cluster` binary, which calls
//! [`sink`] and [`source`]; [`Cluster::measure_tcp`] runs them on two hosts
//! (one TCP connection per rail, all at once) and collects the rates the
//! sink measured. Lines the sink prints on stdout:
//!
//! ```text
//! listening PORT
//! received LOCAL_ADDR BYTES SECONDS      (one per connection, when it ends)
//! ```
//!
//! The sink's clock runs from accepting a connection to its end of stream, so
//! it counts what arrived, not what the sender managed to queue. TCP over
//! Ethernet carries 1448 payload bytes per 1514-byte frame, so a 1 Gbit/s
//! port measures about 0.95 Gbit/s here.
//!
//! [`Host::command`]: crate::Host::command

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};
use crate::{plan, sys, Cluster};

/// The `goal-cluster` subcommand that runs [`sink`].
pub const SINK_COMMAND: &str = "sink";
/// The `goal-cluster` subcommand that runs [`source`].
pub const SOURCE_COMMAND: &str = "source";

/// How long a source waits for its connection to be accepted: a peer behind
/// a downed rail never answers ARP, and the probe should say so soon.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What the sink saw of one connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpRate {
    /// The rail it came over.
    pub rail: usize,
    /// Payload bytes received.
    pub bytes: u64,
    /// From accept to end of stream.
    pub seconds: f64,
}

impl TcpRate {
    /// Payload rate in Gbit/s.
    pub fn gbit_per_sec(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds.max(1e-9) / 1e9
    }
}

/// Accepts `connections` connections on `listener`, reads each to its end
/// on a thread of its own, and writes one `received` line per connection
/// to `out` in the order they were accepted. Gives up with `TimedOut` if
/// they are not all done within `timeout`.
pub fn sink(
    listener: &TcpListener,
    connections: usize,
    timeout: Duration,
    out: &mut dyn Write,
) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "sink: not all connections finished in time",
        )
    };
    listener.set_nonblocking(true)?;
    let mut readers = Vec::with_capacity(connections);
    while readers.len() < connections {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                stream.set_read_timeout(Some(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(1)),
                ))?;
                readers.push(thread::spawn(move || drain(stream)));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(timed_out());
                }
                thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
    for reader in readers {
        let (local, bytes, seconds) = reader
            .join()
            .map_err(|_| io::Error::other("sink: reader panicked"))??;
        writeln!(out, "received {local} {bytes} {seconds:.6}")?;
    }
    out.flush()
}

/// Reads `stream` to its end: (local address, bytes, seconds).
fn drain(mut stream: TcpStream) -> io::Result<(IpAddr, u64, f64)> {
    let local = stream.local_addr()?.ip();
    let start = Instant::now();
    let mut buf = vec![0u8; 1 << 18];
    let mut bytes = 0u64;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok((local, bytes, start.elapsed().as_secs_f64())),
            Ok(n) => bytes += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Connects to `to` and sends as fast as TCP allows for `duration`; returns
/// the bytes sent.
pub fn source(to: SocketAddr, duration: Duration) -> io::Result<u64> {
    let mut stream = TcpStream::connect_timeout(&to, CONNECT_TIMEOUT)
        .map_err(|e| io::Error::new(e.kind(), format!("connect to {to}: {e}")))?;
    let buf = vec![0x5au8; 1 << 18];
    let start = Instant::now();
    let mut bytes = 0u64;
    while start.elapsed() < duration {
        stream.write_all(&buf)?;
        bytes += buf.len() as u64;
    }
    stream.shutdown(Shutdown::Write)?;
    // Wait for the sink to close its side, so that when this process ends
    // everything it sent has been received.
    let _ = stream.read(&mut [0u8; 1])?;
    Ok(bytes)
}

/// A child killed (and reaped) if it is dropped before being waited for, so
/// a failing measurement leaves no probe running.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child taken only by finish")
    }

    /// Waits for the child; its stdout is returned only if the caller did
    /// not take it. Errors carry the command line and the child's stderr.
    fn finish(mut self, what: &str) -> Result<String, Error> {
        let child = self.0.take().expect("finish runs once");
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io(format_args!("waiting for {what}"), e))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(Error::new(
                ErrorKind::Command,
                format!("{what} failed ({}): {}", out.status, stderr.trim()),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    /// Sends TCP from host `from` to host `to` over each of `rails` at once
    /// (one connection per rail) for `duration`, and returns what the
    /// receiving end measured, one entry per rail in the order given.
    /// `probe` is the `goal-cluster` binary (in a test:
    /// `env!("CARGO_BIN_EXE_goal-cluster")`). A rail that is down makes
    /// this fail, naming the connect error.
    pub fn measure_tcp(
        &self,
        probe: &Path,
        from: usize,
        to: usize,
        rails: &[usize],
        duration: Duration,
    ) -> Result<Vec<TcpRate>, Error> {
        for &rail in rails {
            self.check_index(from, rail)?;
            self.check_index(to, rail)?;
        }
        let timeout = duration + CONNECT_TIMEOUT + Duration::from_secs(10);
        let mut sink_cmd = self.host(to).command(probe);
        sink_cmd
            .args([SINK_COMMAND, "--connections", &rails.len().to_string()])
            .args(["--timeout", &format!("{:.3}", timeout.as_secs_f64())])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let sink_line = sys::describe(&sink_cmd);
        let mut sink =
            Running(Some(sink_cmd.spawn().map_err(|e| {
                Error::io(format_args!("starting `{sink_line}`"), e)
            })?));
        let mut lines =
            BufReader::new(sink.child().stdout.take().expect("stdout was piped")).lines();
        let port = match lines.next() {
            Some(Ok(line)) => line
                .strip_prefix("listening ")
                .and_then(|p| p.trim().parse::<u16>().ok()),
            _ => None,
        };
        let Some(port) = port else {
            return Err(sink
                .finish(&format!("`{sink_line}`"))
                .err()
                .unwrap_or_else(|| {
                    Error::new(
                        ErrorKind::Command,
                        format!("`{sink_line}` did not say where it listens"),
                    )
                }));
        };
        let mut sources = Vec::new();
        for &rail in rails {
            let to_addr = SocketAddr::new(plan::host_addr(to, rail).into(), port);
            let mut cmd = self.host(from).command(probe);
            cmd.args([SOURCE_COMMAND, "--to", &to_addr.to_string()])
                .args(["--seconds", &format!("{:.3}", duration.as_secs_f64())])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let line = sys::describe(&cmd);
            let child = cmd
                .spawn()
                .map_err(|e| Error::io(format_args!("starting `{line}`"), e))?;
            sources.push((Running(Some(child)), line));
        }
        for (source, line) in sources {
            source.finish(&format!("`{line}`"))?;
        }
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        sink.finish(&format!("`{sink_line}`"))?;
        let mut rates = Vec::with_capacity(rails.len());
        for line in &rest {
            let bad = || {
                Error::new(
                    ErrorKind::Command,
                    format!("`{sink_line}` printed {line:?}"),
                )
            };
            let mut words = line.split_whitespace();
            if words.next() != Some("received") {
                return Err(bad());
            }
            let addr: std::net::Ipv4Addr =
                words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            let bytes = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            let seconds = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
            let (_, rail) = plan::addr_owner(addr).ok_or_else(bad)?;
            rates.push(TcpRate {
                rail,
                bytes,
                seconds,
            });
        }
        rates.sort_by_key(|r| rails.iter().position(|&x| x == r.rail));
        Ok(rates)
    }
}
