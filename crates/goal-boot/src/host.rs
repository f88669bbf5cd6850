//! A bootstrap that rides on a host runtime's own allgather: the MPI layer
//! (`libgoal-mpi`) starts goal inside `MPI_Init` with `PMPI_Allgather`, so
//! that an MPI job needs no second launcher protocol and goal never touches
//! the launcher's PMI or PMIx session, which belongs to the MPI library.
//!
//! The host gives its rank, its size and one primitive: an allgather of
//! `len` bytes from every rank, `len` the same on every rank (what
//! `MPI_Allgather` of `MPI_BYTE` does). goal's blobs differ in length from
//! rank to rank (host names, addresses), so each round is two host calls:
//! the lengths (8 bytes each), then every blob padded to the longest.
//!
//! The job secret travels in the first round: rank 0's `GOAL_SECRET`, or 32
//! random bytes, which the others take (a rank whose own `GOAL_SECRET`
//! differs fails, as under PMI). The host's allgather reaches only the
//! job's processes, which is what the secret needs.

use std::io;

use crate::rounds::{self, Exchange, Rounds};
use crate::secret::{Secret, SECRET_LEN};
use crate::Bootstrap;

/// The host's allgather: `mine` (the same length on every rank) in,
/// `size * mine.len()` bytes out, rank order.
pub type HostAllgather = Box<dyn FnMut(&[u8], &mut [u8]) -> io::Result<()> + Send>;

/// A rank of a job whose host runtime (an MPI library) carries the exchange.
pub struct HostClient {
    rank: usize,
    size: usize,
    gather: HostAllgather,
    secret: Secret,
    job: String,
    rounds: Rounds,
}

impl std::fmt::Debug for HostClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostClient(rank {} of {})", self.rank, self.size)
    }
}

/// A bootstrap over the host's allgather. Collective: every rank calls it
/// (one host allgather round agrees on the secret and the job id).
/// `GOAL_SECRET`, if set, must be the same on every rank.
pub fn with_host_allgather(rank: usize, size: usize, gather: HostAllgather) -> io::Result<Box<dyn Bootstrap>> {
    if size == 0 || rank >= size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("host bootstrap: rank {rank} is not below the size {size}"),
        ));
    }
    let own = match std::env::var(crate::env::SECRET) {
        Ok(text) => Some(Secret::from_hex(&text, crate::env::SECRET)?),
        Err(_) => None,
    };
    let mut c = HostClient {
        rank,
        size,
        gather,
        secret: Secret([0; SECRET_LEN]),
        job: String::new(),
        rounds: Rounds::default(),
    };
    // Rank 0's secret and a job id (its pid and time) reach everyone.
    let mine = if rank == 0 {
        let s = match own {
            Some(s) => s,
            None => Secret::random()?,
        };
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut b = s.0.to_vec();
        b.extend_from_slice(format!("host-{}-{nanos}", std::process::id()).as_bytes());
        b
    } else {
        Vec::new()
    };
    let all = c.allgather(&mine).map_err(|e| io::Error::new(e.kind(), format!("host bootstrap: agreeing on the job secret: {e}")))?;
    let zero = &all[0];
    if zero.len() < SECRET_LEN {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "host bootstrap: rank 0 sent no secret"));
    }
    let mut s = [0u8; SECRET_LEN];
    s.copy_from_slice(&zero[..SECRET_LEN]);
    if own.is_some_and(|o| o.0 != s) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "GOAL_SECRET differs between rank 0 and this rank"));
    }
    c.secret = Secret(s);
    c.job = String::from_utf8_lossy(&zero[SECRET_LEN..]).into_owned();
    Ok(Box::new(c))
}

impl Exchange for HostClient {
    fn rounds(&mut self) -> &mut Rounds {
        &mut self.rounds
    }

    fn exchange(&mut self, _round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let n = self.size;
        let mut lens = vec![0u8; 8 * n];
        (self.gather)(&(mine.len() as u64).to_le_bytes(), &mut lens)?;
        let lens: Vec<usize> = lens.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()) as usize).collect();
        if let Some((r, l)) = lens.iter().enumerate().find(|(_, &l)| l > crate::wire::MAX_BLOB) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("rank {r} sent a blob of {l} bytes, over the limit")));
        }
        if lens[self.rank] != mine.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the host's allgather did not put this rank's block at its rank"));
        }
        let width = lens.iter().copied().max().unwrap_or(0);
        if width == 0 {
            return Ok(vec![Vec::new(); n]);
        }
        let mut padded = mine.to_vec();
        padded.resize(width, 0);
        let mut out = vec![0u8; width * n];
        (self.gather)(&padded, &mut out)?;
        Ok(out.chunks_exact(width).zip(&lens).map(|(c, &l)| c[..l].to_vec()).collect())
    }

    fn what(&self) -> &'static str {
        "host allgather"
    }

    fn who(&self) -> String {
        format!("rank {}", self.rank)
    }
}

impl Bootstrap for HostClient {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn job_id(&self) -> String {
        self.job.clone()
    }

    fn allgather(&mut self, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        rounds::allgather(self, mine)
    }

    fn secret(&self) -> [u8; SECRET_LEN] {
        self.secret.0
    }

    fn kind(&self) -> &'static str {
        "host"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier, Mutex};

    /// `n` threads as ranks, their allgather a shared table and a barrier.
    fn job(n: usize, blob: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static) -> Vec<Vec<Vec<u8>>> {
        let table = Arc::new(Mutex::new(vec![Vec::new(); n]));
        let bar = Arc::new(Barrier::new(n));
        let blob = Arc::new(blob);
        let threads: Vec<_> = (0..n)
            .map(|r| {
                let (table, bar, blob) = (table.clone(), bar.clone(), blob.clone());
                std::thread::spawn(move || {
                    let (t2, b2) = (table.clone(), bar.clone());
                    let gather: HostAllgather = Box::new(move |mine: &[u8], all: &mut [u8]| {
                        t2.lock().unwrap()[r] = mine.to_vec();
                        b2.wait();
                        let t = t2.lock().unwrap();
                        for (i, b) in t.iter().enumerate() {
                            all[i * mine.len()..(i + 1) * mine.len()].copy_from_slice(b);
                        }
                        drop(t);
                        b2.wait();
                        Ok(())
                    });
                    let mut boot = with_host_allgather(r, n, gather).unwrap();
                    assert_eq!((boot.rank(), boot.size(), boot.kind()), (r, n, "host"));
                    let got = boot.allgather(&blob(r)).unwrap();
                    (boot.secret(), boot.job_id(), got)
                })
            })
            .collect();
        let outs: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(outs.iter().all(|o| o.0 == outs[0].0 && o.1 == outs[0].1), "one secret and job id");
        assert!(outs[0].1.starts_with("host-"));
        drop(bar);
        outs.into_iter().map(|o| o.2).collect()
    }

    #[test]
    fn blobs_of_different_lengths_come_back_whole() {
        let want: Vec<Vec<u8>> = (0..3).map(|r| vec![r as u8 + 1; r * 5]).collect();
        let w2 = want.clone();
        for got in job(3, move |r| w2[r].clone()) {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_host_error_poisons_the_bootstrap() {
        let mut calls = 0;
        let gather: HostAllgather = Box::new(move |mine: &[u8], all: &mut [u8]| {
            calls += 1;
            if calls > 2 {
                return Err(io::Error::other("MPI_Allgather failed"));
            }
            all.copy_from_slice(mine);
            Ok(())
        });
        let mut b = with_host_allgather(0, 1, gather).unwrap();
        let e = b.allgather(b"x").unwrap_err().to_string();
        assert!(e.contains("host allgather round 1") && e.contains("MPI_Allgather failed"), "{e}");
        assert!(b.allgather(b"y").is_err(), "poisoned");
        let Err(e) = with_host_allgather(2, 2, Box::new(|_: &[u8], _: &mut [u8]| Ok(()))) else { panic!("rank 2 of 2 accepted") };
        assert!(e.to_string().contains("rank 2 is not below the size 2"), "{e}");
    }
}
