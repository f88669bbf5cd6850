//! Claim words: two ranks share the copy of one large message, each
//! taking the next piece as it gets to it.
//!
//! A message split between its receiver (reading the sender's memory) and
//! its sender (writing into the receiver's) is cut into `count` chunks. The
//! receiver takes chunks from the front, the sender from the back, until
//! they meet; each claim is one compare-and-swap on a word in the pair
//! block of the receiver's inbox. A side that is descheduled or slower
//! (a core shared with another process) simply takes fewer chunks, where
//! halves fixed in advance would make the whole message wait for the slower
//! half.
//!
//! The word packs `front` (16 bits: the receiver's next chunk), `back` (16
//! bits: one past the sender's next chunk) and the sender's rendezvous
//! `token` (32 bits). Chunks `front..back` are unclaimed. A side whose
//! token no longer matches (the receiver reused the slot for another
//! message) claims nothing, so a late claim can never take a chunk of the
//! next message.

use crate::sync::{AtomicU64, Ordering};

/// Claim words per pair block: split messages in flight from one sender to
/// one receiver (a window of 64 sends of 64 KiB, as the bandwidth
/// benchmark's, all split).
pub const CLAIM_SLOTS: usize = 64;

/// The most chunks one message may be cut into.
pub const MAX_CHUNKS: u32 = u16::MAX as u32;

fn pack(front: u32, back: u32, token: u32) -> u64 {
    front as u64 | (back as u64) << 16 | (token as u64) << 32
}

fn unpack(w: u64) -> (u32, u32, u32) {
    (w as u32 & 0xffff, (w >> 16) as u32 & 0xffff, (w >> 32) as u32)
}

/// A claim word of an inbox's pair block.
#[derive(Clone, Copy)]
pub struct Claim<'a>(pub(crate) &'a AtomicU64);

impl Claim<'_> {
    /// Receiver: starts message `token` of `count` chunks (at most
    /// [`MAX_CHUNKS`]), all unclaimed, before offering the sender its
    /// share.
    pub fn start(&self, token: u32, count: u32) {
        assert!(count <= MAX_CHUNKS, "goal shm: {count} chunks in one claim word");
        self.0.store(pack(0, count, token), Ordering::Release);
    }

    /// Receiver: takes the first unclaimed chunk of message `token`.
    pub fn take_front(&self, token: u32) -> Option<u32> {
        self.take(token, true)
    }

    /// Sender: takes the last unclaimed chunk of message `token`.
    pub fn take_back(&self, token: u32) -> Option<u32> {
        self.take(token, false)
    }

    /// Whether message `token` has chunks left to claim.
    pub fn left(&self, token: u32) -> bool {
        let (f, b, t) = unpack(self.0.load(Ordering::Acquire));
        t == token && f < b
    }

    /// Receiver: ends the claiming of message `token` (the sender writes
    /// no more); returns the first chunk not taken by the receiver, so
    /// that it copies `front..count` itself. `None` if the word holds
    /// another message.
    pub fn close(&self, token: u32) -> Option<u32> {
        let mut w = self.0.load(Ordering::Acquire);
        loop {
            let (f, _, t) = unpack(w);
            if t != token {
                return None;
            }
            match self.0.compare_exchange_weak(w, pack(f, f, t), Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(f),
                Err(now) => w = now,
            }
        }
    }

    fn take(&self, token: u32, front: bool) -> Option<u32> {
        let mut w = self.0.load(Ordering::Acquire);
        loop {
            let (f, b, t) = unpack(w);
            if t != token || f >= b {
                return None;
            }
            let (next, got) = if front { (pack(f + 1, b, t), f) } else { (pack(f, b - 1, t), b - 1) };
            match self.0.compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(got),
                Err(now) => w = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_and_back_meet_without_overlap() {
        let w = AtomicU64::new(0);
        let c = Claim(&w);
        c.start(7, 5);
        assert_eq!(c.take_front(7), Some(0));
        assert_eq!(c.take_back(7), Some(4));
        assert_eq!(c.take_back(7), Some(3));
        assert_eq!(c.take_front(7), Some(1));
        assert!(c.left(7));
        assert_eq!(c.take_back(7), Some(2));
        assert!(!c.left(7));
        assert_eq!(c.take_front(7), None);
        assert_eq!(c.take_back(7), None);
    }

    #[test]
    fn another_token_claims_nothing() {
        let w = AtomicU64::new(0);
        let c = Claim(&w);
        c.start(1, 4);
        assert_eq!(c.take_back(2), None);
        assert_eq!(c.close(2), None);
        assert_eq!(c.take_front(1), Some(0));
    }

    #[test]
    fn close_leaves_the_rest_to_the_receiver() {
        let w = AtomicU64::new(0);
        let c = Claim(&w);
        c.start(3, 8);
        c.take_front(3);
        c.take_front(3);
        c.take_back(3);
        assert_eq!(c.close(3), Some(2));
        assert_eq!(c.take_back(3), None);
        assert_eq!(c.take_front(3), None);
    }

    #[test]
    fn two_threads_take_every_chunk_once() {
        let w = AtomicU64::new(0);
        let c = Claim(&w);
        c.start(9, 10_000);
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| std::iter::from_fn(|| c.take_front(9)).collect::<Vec<_>>());
            let b = s.spawn(|| std::iter::from_fn(|| c.take_back(9)).collect::<Vec<_>>());
            (a.join().unwrap(), b.join().unwrap())
        });
        let mut all: Vec<u32> = a.iter().chain(b.iter()).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
        assert!(a.windows(2).all(|x| x[0] < x[1]) && b.windows(2).all(|x| x[0] > x[1]));
    }
}
