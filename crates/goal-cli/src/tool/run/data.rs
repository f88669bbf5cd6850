//! The bytes of a text schedule run for real: one buffer per rank holding
//! every send's and receive's region (the layout of
//! [`goal_text::convert`]), sends filled with a pattern known everywhere,
//! receives checked against it after each iteration.
//!
//! The pattern of a message depends on its (source, destination, tag) and
//! the byte's offset, not on which of several such messages it is: however
//! the engine pairs equal messages, the bytes are the same. A receive is
//! checked when it names its source and its tag and every send of that
//! triple in the file has one size (no larger than the receive); receives
//! with `-1` are counted, not checked (which send they take is the run's
//! choice). The sizes come from the whole-file pass every rank makes
//! ([`Incoming`]), in memory bounded by the distinct (source, tag) pairs
//! sent to this rank.

use std::collections::HashMap;

use goal_text::{OpKind, RankGraph};

/// The size of the sends to this rank, per (source, tag): `None` when they
/// differ.
#[derive(Default)]
pub(super) struct Incoming(HashMap<(u32, u32), Option<u64>>);

impl Incoming {
    /// Notes the sends of `g` to rank `me`.
    pub(super) fn note(&mut self, g: &RankGraph, me: u32) {
        for op in &g.ops {
            if let OpKind::Send { bytes, to, tag } = op.kind {
                if to == me {
                    let e = self.0.entry((g.rank, tag)).or_insert(Some(bytes));
                    if *e != Some(bytes) {
                        *e = None;
                    }
                }
            }
        }
    }
}

/// The pattern's seed for a message of `src` to `dst` with `tag`.
fn seed(src: u32, dst: u32, tag: u32) -> u64 {
    (src as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (dst as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ (tag as u64 + 1).wrapping_mul(0x1656_67B1_9E37_79F9)
}

/// Byte `j` of a message with seed `h`.
fn byte(h: u64, j: u64) -> u8 {
    (h.rotate_left((j % 61) as u32) ^ j.wrapping_mul(7) ^ (j >> 8)) as u8
}

/// This rank's buffer and what it checks.
pub(super) struct Data {
    pub(super) buf: Vec<u8>,
    /// Per receive checked: (operation, region offset, bytes to compare,
    /// the seed of its message).
    checks: Vec<(usize, u64, u64, u64)>,
    /// Receive regions, zeroed before each iteration.
    recvs: Vec<(u64, u64)>,
}

impl Data {
    /// The buffer for `g`'s regions (`None` for a calc), sends filled.
    pub(super) fn new(g: &RankGraph, regions: &[Option<(u64, u64)>], incoming: &Incoming) -> Result<Data, String> {
        let total = regions.iter().flatten().map(|&(at, n)| at + n).max().unwrap_or(0);
        let len = usize::try_from(total).map_err(|_| format!("its buffers ({total} bytes) do not fit in memory"))?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| format!("cannot allocate its buffers ({total} bytes)"))?;
        buf.resize(len, 0);
        let (mut checks, mut recvs) = (Vec::new(), Vec::new());
        for (i, (op, r)) in g.ops.iter().zip(regions).enumerate() {
            let Some((at, n)) = *r else { continue };
            match op.kind {
                OpKind::Send { to, tag, .. } => {
                    let h = seed(g.rank, to, tag);
                    for (j, b) in buf[at as usize..(at + n) as usize].iter_mut().enumerate() {
                        *b = byte(h, j as u64);
                    }
                }
                OpKind::Recv { from, tag, .. } => {
                    recvs.push((at, n));
                    if let (Some(s), Some(t)) = (from, tag) {
                        if let Some(&Some(sent)) = incoming.0.get(&(s, t)) {
                            if sent <= n {
                                checks.push((i, at, sent, seed(s, g.rank, t)));
                            }
                        }
                    }
                }
                OpKind::Calc { .. } => {}
            }
        }
        Ok(Data { buf, checks, recvs })
    }

    /// The start of the buffer, as the graph names it.
    pub(super) fn base(&self) -> u64 {
        self.buf.as_ptr() as u64
    }

    /// Receives checked, and receives in all.
    pub(super) fn coverage(&self) -> (usize, usize) {
        (self.checks.len(), self.recvs.len())
    }

    /// Zeroes the receive regions.
    pub(super) fn clear(&mut self) {
        for &(at, n) in &self.recvs {
            self.buf[at as usize..(at + n) as usize].fill(0);
        }
    }

    /// Checks the received bytes; `Err` names the first wrong byte.
    pub(super) fn verify(&self, g: &RankGraph) -> Result<(), String> {
        for &(i, at, n, h) in &self.checks {
            let got = &self.buf[at as usize..(at + n) as usize];
            if let Some(j) = (0..n).find(|&j| got[j as usize] != byte(h, j)) {
                let op = &g.ops[i];
                return Err(format!(
                    "rank {}: {} (line {}) received byte {j} of {n} as {:#04x}, expected {:#04x}",
                    g.rank,
                    g.name(i),
                    op.pos.line,
                    got[j as usize],
                    byte(h, j)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank 1 of a two-rank exchange: what rank 0 sends it, by tag.
    fn rank1() -> (RankGraph, Incoming) {
        let text = "num_ranks 2\nrank 0 {\nsend 100b to 1 tag 3\nrecv 8b from 1 tag 4\n}\nrank 1 {\na: recv 100b from 0 tag 3\nb: recv 8b from -1 tag 4\nsend 8b to 0 tag 4\n}\n";
        let (mut incoming, mut mine) = (Incoming::default(), RankGraph::default());
        goal_text::parse(text.as_bytes(), "t", |g| {
            incoming.note(g, 1);
            if g.rank == 1 {
                mine = g.clone();
            }
        }, |e| panic!("{e}"));
        (mine, incoming)
    }

    #[test]
    fn a_wrong_byte_is_named_and_wildcards_are_not_checked() {
        let (g, incoming) = rank1();
        let regions = goal_text::convert::to_graph(&g).unwrap().regions;
        let mut d = Data::new(&g, &regions, &incoming).unwrap();
        assert_eq!(d.coverage(), (1, 2));
        // What rank 0 would have sent: its pattern.
        let h = seed(0, 1, 3);
        for j in 0..100 {
            d.buf[j] = byte(h, j as u64);
        }
        assert_eq!(d.verify(&g), Ok(()));
        d.buf[57] ^= 1;
        let e = d.verify(&g).unwrap_err();
        assert!(e.starts_with("rank 1: a (line 7) received byte 57 of 100 as"), "{e}");
        d.clear();
        assert!(d.buf[..108].iter().all(|&b| b == 0));
        // The send's region holds its pattern, untouched by clear.
        assert_eq!(d.buf[108], byte(seed(1, 0, 4), 0));
    }
}
