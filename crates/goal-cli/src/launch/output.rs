//! `--tag-output`: each rank's stdout and stderr go through a pipe to a
//! reader thread that prefixes every line with `[rank] ` and writes it to
//! goalrun's own stdout or stderr.
//!
//! A line is written with one `write_all` while the stream is locked, then
//! flushed, so lines of different ranks never interleave mid-line and appear
//! as soon as the rank ends them. A line longer than [`MAX_LINE`] is cut and
//! written in pieces rather than buffered without bound; a last line without
//! a newline gets one. Write errors (goalrun's stdout closed) are ignored and
//! the pipe keeps being drained, so a rank never blocks on a full pipe.
//!
//! Without `--tag-output` none of this exists: ranks inherit goalrun's
//! descriptors and write to them directly.

use std::io::{self, Read, Write};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The longest piece of a line written at once.
const MAX_LINE: usize = 64 << 10;

/// Which of goalrun's streams a pipe feeds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// The running reader threads.
#[derive(Debug)]
pub(crate) struct Tagger {
    done_tx: mpsc::Sender<()>,
    done_rx: mpsc::Receiver<()>,
    readers: usize,
}

impl Tagger {
    pub(crate) fn new() -> Tagger {
        let (done_tx, done_rx) = mpsc::channel();
        Tagger {
            done_tx,
            done_rx,
            readers: 0,
        }
    }

    /// Starts copying `pipe` to `stream`, each line prefixed with `[rank] `.
    pub(crate) fn tag(
        &mut self,
        rank: usize,
        pipe: impl Read + Send + 'static,
        stream: Stream,
    ) -> io::Result<()> {
        let done = self.done_tx.clone();
        thread::Builder::new()
            .name(format!("goalrun-tag{rank}"))
            .spawn(move || {
                let prefix = format!("[{rank}] ");
                match stream {
                    Stream::Stdout => pump(pipe, &prefix, || io::stdout().lock()),
                    Stream::Stderr => pump(pipe, &prefix, || io::stderr().lock()),
                }
                let _ = done.send(());
            })?;
        self.readers += 1;
        Ok(())
    }

    /// Waits, at most `limit`, for every pipe to reach its end. A pipe can
    /// outlive its rank when the rank left a background process holding it;
    /// goalrun does not wait for those.
    pub(crate) fn finish(self, limit: Duration) {
        let deadline = Instant::now() + limit;
        for _ in 0..self.readers {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done_rx.recv_timeout(left).is_err() {
                return;
            }
        }
    }
}

/// Copies `pipe` to `out` line by line, each line prefixed.
fn pump<W: Write>(mut pipe: impl Read, prefix: &str, out: impl Fn() -> W) {
    let mut chunk = vec![0u8; 16 << 10];
    // The line being assembled, prefix included.
    let mut line = prefix.as_bytes().to_vec();
    let emit = |line: &mut Vec<u8>| {
        let mut w = out();
        let _ = w.write_all(line).and_then(|()| w.flush());
        line.truncate(prefix.len());
    };
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        for piece in chunk[..n].split_inclusive(|&b| b == b'\n') {
            line.extend_from_slice(piece);
            if line.ends_with(b"\n") {
                emit(&mut line);
            } else if line.len() - prefix.len() >= MAX_LINE {
                line.push(b'\n');
                emit(&mut line);
            }
        }
    }
    if line.len() > prefix.len() {
        line.push(b'\n');
        emit(&mut line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A reader that hands out its input a few bytes at a time.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(3).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn tagged(input: &[u8]) -> String {
        let sink = Sink::default();
        let s = sink.clone();
        pump(Trickle(input), "[2] ", move || s.clone());
        let bytes = sink.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn every_line_is_prefixed_even_when_split_across_reads() {
        assert_eq!(tagged(b"hello\nworld\n"), "[2] hello\n[2] world\n");
        assert_eq!(tagged(b"a\n\nlast"), "[2] a\n[2] \n[2] last\n");
        assert_eq!(tagged(b""), "");
    }

    #[test]
    fn an_endless_line_is_cut() {
        let long = vec![b'x'; MAX_LINE * 2 + 5];
        let out = tagged(&long);
        assert_eq!(out.lines().count(), 3);
        assert!(out.lines().all(|l| l.starts_with("[2] ")));
    }
}
