//! Shared arithmetic of the algorithms: splitting a vector into blocks,
//! ranks relative to a root, the in-order binomial tree, runs of rank-ordered
//! blocks, and folding a group onto a power of two.

/// Block `i` of `total` split into `parts`: (offset, length); the first
/// `total % parts` blocks are one longer.
pub(crate) fn split(total: u64, parts: u32, i: u32) -> (u64, u64) {
    let (q, r) = (total / parts as u64, total % parts as u64);
    let i = i as u64;
    (i * q + i.min(r), q + u64::from(i < r))
}

/// Rank relative to `root` (the root is 0).
pub(crate) fn vrank(rank: u32, root: u32, size: u32) -> u32 {
    (rank + size - root) % size
}

/// Rank of relative rank `v`.
pub(crate) fn real(v: u32, root: u32, size: u32) -> u32 {
    (v + root) % size
}

/// In an in-order binomial tree of `size` nodes rooted at 0 (thesis 5.3),
/// the number of nodes in the subtree of `v`: `v .. v + subtree(v)`.
pub(crate) fn subtree(v: u32, size: u32) -> u32 {
    if v == 0 {
        size
    } else {
        (1u32 << v.trailing_zeros()).min(size - v)
    }
}

/// Children of `v` in the in-order binomial tree, nearest first: `v + 1, v + 2, v + 4, ...`.
pub(crate) fn children(v: u32, size: u32) -> Vec<u32> {
    let limit = if v == 0 { u64::MAX } else { 1u64 << v.trailing_zeros() };
    let mut out = Vec::new();
    let mut m = 1u64;
    while m < limit && v as u64 + m < size as u64 {
        out.push(v + m as u32);
        m <<= 1;
    }
    out
}

/// Parent of `v > 0` in the in-order binomial tree: `v` without its lowest set bit.
pub(crate) fn parent(v: u32) -> u32 {
    v & (v - 1)
}

/// The blocks of relative ranks `first .. first + count` as at most two
/// address ranges of `base` (rank order), for rank-ordered buffers of
/// `bytes`-byte blocks: relative rank `v` is rank `(v + root) % size`.
pub(crate) fn rank_pieces(base: u64, bytes: u64, first: u32, count: u32, root: u32, size: u32) -> Vec<(u64, u64)> {
    let start = (first + root) % size;
    let until_wrap = size - start;
    if count <= until_wrap {
        vec![(base + start as u64 * bytes, count as u64 * bytes)]
    } else {
        vec![(base + start as u64 * bytes, until_wrap as u64 * bytes), (base, (count - until_wrap) as u64 * bytes)]
    }
}

/// The largest power of two `<= size` and how to fold the rest onto it, as
/// MPICH does for recursive doubling: the first `2 * extras` ranks pair up,
/// even rank `2i` hands its data to odd rank `2i + 1`, which continues as
/// virtual rank `i`; ranks from `2 * extras` on continue as `rank - extras`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fold {
    /// The largest power of two `<= size`.
    pub p2: u32,
    /// `size - p2`.
    pub extras: u32,
}

impl Fold {
    pub fn new(size: u32) -> Fold {
        let p2 = 1u32 << (31 - size.leading_zeros());
        Fold { p2, extras: size - p2 }
    }
    /// Virtual rank of `rank`, `None` for the even ranks that fold away.
    pub fn virt(&self, rank: u32) -> Option<u32> {
        if rank < 2 * self.extras {
            (rank % 2 == 1).then_some(rank / 2)
        } else {
            Some(rank - self.extras)
        }
    }
    /// The rank that plays virtual rank `v`.
    pub fn rank_of(&self, v: u32) -> u32 {
        if v < self.extras {
            2 * v + 1
        } else {
            v + self.extras
        }
    }
    /// The ranks whose data virtual rank `v` stands for: `first ..= last`.
    pub fn ranks_of(&self, v: u32) -> (u32, u32) {
        if v < self.extras {
            (2 * v, 2 * v + 1)
        } else {
            (v + self.extras, v + self.extras)
        }
    }
}

/// Joins adjacent pieces (address, length), keeping their order.
pub(crate) fn merge(pieces: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(pieces.len());
    for (a, l) in pieces {
        match out.last_mut() {
            Some(last) if last.0 + last.1 == a => last.1 += l,
            _ => out.push((a, l)),
        }
    }
    out
}
