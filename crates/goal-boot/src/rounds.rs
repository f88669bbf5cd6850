//! What every multi-rank bootstrap's `allgather` shares, whatever carries
//! the bytes: the 1 MiB limit checked before anything is sent, numbered
//! rounds for messages, and poisoning. After one failed round a bootstrap
//! refuses every later one with the first error: the ranks no longer agree
//! on which round is which (and a stream may be mid-frame), so going on
//! could only pair wrong rounds or hang.

use std::io;

use crate::wire::MAX_BLOB;

/// The round counter and the poison of one bootstrap.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    /// Rounds completed so far.
    done: u64,
    /// Why the bootstrap is unusable, once it is.
    broken: Option<String>,
}

/// A bootstrap that can run one allgather round.
pub(crate) trait Exchange {
    fn rounds(&mut self) -> &mut Rounds;
    /// Runs round number `round`; `mine` is within the limit.
    fn exchange(&mut self, round: u64, mine: &[u8]) -> io::Result<Vec<Vec<u8>>>;
    /// Names the operation for an error message: "PMI allgather".
    fn what(&self) -> &'static str;
    /// Who failed, for an error message: "rank 3", "rank 3, PMI_FD=6".
    fn who(&self) -> String;
}

/// Refuses a blob over [`MAX_BLOB`], before anything is sent.
pub(crate) fn check_blob(mine: &[u8]) -> io::Result<()> {
    if mine.len() > MAX_BLOB {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "allgather blob of {} bytes exceeds the bootstrap limit of {MAX_BLOB} bytes",
                mine.len()
            ),
        ));
    }
    Ok(())
}

/// One allgather round of `b`, with the limit, the numbering and the poison.
/// A refused blob leaves the bootstrap usable; any other failure does not.
pub(crate) fn allgather(b: &mut impl Exchange, mine: &[u8]) -> io::Result<Vec<Vec<u8>>> {
    check_blob(mine)?;
    if let Some(why) = &b.rounds().broken {
        return Err(io::Error::new(io::ErrorKind::NotConnected, why.clone()));
    }
    let round = b.rounds().done;
    match b.exchange(round, mine) {
        Ok(all) => {
            b.rounds().done += 1;
            Ok(all)
        }
        Err(e) => {
            let msg = format!("{} round {round} ({}): {e}", b.what(), b.who());
            b.rounds().broken = Some(msg.clone());
            Err(io::Error::new(e.kind(), msg))
        }
    }
}

/// Whether a round has failed.
pub(crate) fn is_broken(b: &mut impl Exchange) -> bool {
    b.rounds().broken.is_some()
}
