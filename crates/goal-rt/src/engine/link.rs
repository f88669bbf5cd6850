//! The link: how the engine reaches each peer, the one seam between the
//! protocols and the transports.
//!
//! Every peer is reached by exactly one link, fixed at start: shared
//! memory for a peer on this machine (goal-transport), the network for a
//! peer on another (goal-net). The protocols above ask the link for what
//! they need and never look at a transport's type to decide; where a
//! protocol really differs per transport (a rendezvous is a bulk transfer
//! over the network, a stream, CMA or heap copy between local ranks) it
//! asks [`Links::is_remote`] or matches on [`Link`], and this file is the
//! only one that knows which peers are where. Statically dispatched: an
//! enum, no trait objects, so the 8-byte path compiles to what it did
//! when the branches were inline.
//!
//! # What a link provides
//!
//! | need | shared memory (goal-transport) | network (goal-net) |
//! |---|---|---|
//! | send an envelope (header and eager payload) | a write into the peer's ring; `Ok(false)` when it is full | an active message, queued by the network: never full |
//! | send a control message (header only: RTS, CTS, FIN, ...) | the same, with no payload | the same |
//! | return eager credit | a store into the pair's credit word | a `CREDIT` control message |
//! | see the credit a peer returned | a load of that word | `None`: credit arrives as messages |
//! | fetch a large message | stream, CMA read or write, heap copy (the [`cma`](super::cma), [`push`](super::push), [`stream`](super::stream) files) | a bulk transfer straight into the receive buffer ([`rdv`](super::rdv)) |
//! | liveness | the peer's pid, watched | the connection, watched by goal-net |
//!
//! Writes into rings are made visible to their readers by [`Links::flush`]
//! (goal-transport batches the doorbells); the network sends as it goes.

use crate::proto::{Head, Kind};
use goal_net::NetNode;
use goal_transport::shm::ShmNode;
use std::io;

/// The links to every peer of the group.
pub(crate) struct Links {
    /// Shared memory: the rings, streams and heap of the peers on this
    /// machine (it has a place for every rank; the remote ones' stay unused).
    pub(crate) shm: ShmNode,
    /// The network, when some peers are on other machines.
    pub(crate) net: Option<NetNode>,
    /// Per peer: reached through `net` rather than `shm`. Set once, before
    /// the first message.
    remote: Vec<bool>,
}

/// One peer's link, for a protocol step that differs per transport.
pub(super) enum Link<'a> {
    /// A peer on this machine, by rank.
    Local(&'a mut ShmNode, usize),
    /// A peer on another machine, by rank.
    Remote(&'a mut NetNode, u32),
}

impl Links {
    /// Links to a group of `n` ranks, all on this machine until
    /// [`attach_net`](Self::attach_net).
    pub(super) fn new(shm: ShmNode, n: usize) -> Links {
        Links { shm, net: None, remote: vec![false; n] }
    }

    /// Reaches the peers marked in `remote` through `net`.
    pub(super) fn attach_net(&mut self, net: NetNode, remote: Vec<bool>) {
        self.net = Some(net);
        self.remote = remote;
    }

    /// Whether peer `p` is on another machine.
    #[inline(always)]
    pub(super) fn is_remote(&self, p: usize) -> bool {
        self.remote[p]
    }

    /// The peers on other machines.
    pub(super) fn remote_peers(&self) -> impl Iterator<Item = usize> + '_ {
        self.remote.iter().enumerate().filter(|(_, &r)| r).map(|(p, _)| p)
    }

    /// Peer `p`'s link.
    #[inline(always)]
    pub(super) fn to(&mut self, p: usize) -> Link<'_> {
        match self.net.as_mut() {
            Some(net) if self.remote[p] => Link::Remote(net, p as u32),
            _ => Link::Local(&mut self.shm, p),
        }
    }

    /// Sends envelope `head` with `payload` to `p`: `Ok(false)` if the
    /// peer's ring has no room now (the caller queues it), an error if
    /// the peer cannot be reached.
    #[inline]
    pub(super) fn send_envelope(&mut self, p: usize, head: &Head, payload: &[&[u8]]) -> io::Result<bool> {
        match self.to(p) {
            Link::Local(shm, p) => shm.try_send(p, &head.encode(), payload),
            Link::Remote(net, p) => am(net, p, head, payload).map(|_| true),
        }
    }

    /// Sends a message without payload (RTS, CTS, FIN, ...); see
    /// [`send_envelope`](Self::send_envelope).
    #[inline]
    pub(super) fn send_control(&mut self, p: usize, head: &Head) -> io::Result<bool> {
        self.send_envelope(p, head, &[])
    }

    /// Sends one protocol message to `p` over the network (for the
    /// rendezvous that only the network has); an error if `p` is not
    /// reached that way.
    pub(super) fn send_am(&mut self, p: u32, head: &Head, payload: &[&[u8]]) -> io::Result<()> {
        match self.net.as_mut() {
            Some(n) if self.remote[p as usize] => am(n, p, head, payload),
            _ => Err(io::Error::other(format!("rank {p} is not reached over the network"))),
        }
    }

    /// The eager credit `p` has returned so far, where that is a word to
    /// read (shared memory); `None` where it arrives as messages.
    #[inline(always)]
    pub(super) fn credits_returned(&self, p: usize) -> Option<u64> {
        (!self.remote[p]).then(|| self.shm.credits_returned(p))
    }

    /// Tells `p` that this rank has released `released` bytes of its eager
    /// messages in all.
    pub(super) fn return_credits(&mut self, p: usize, released: u64) {
        match self.to(p) {
            Link::Local(shm, p) => shm.return_credits(p, released),
            Link::Remote(net, p) => {
                let h = Head::control(Kind::Credit, 0).with_credits(released);
                // A lost peer is reported by the network itself.
                let _ = am(net, p, &h, &[]);
            }
        }
    }

    /// Reads `dst.len()` bytes at `addr` of local peer `p`'s memory (Cross
    /// Memory Attach); `PermissionDenied` where ptrace rules forbid it.
    #[inline]
    pub(super) fn cma_read(&self, p: usize, addr: u64, dst: &mut [u8]) -> io::Result<()> {
        goal_transport::sys::cma_read(self.shm.peer_pid(p), addr, dst)
    }

    /// Writes `src` at `addr` of local peer `p`'s memory (Cross Memory Attach).
    #[inline]
    pub(super) fn cma_write(&self, p: usize, addr: u64, src: &[u8]) -> io::Result<()> {
        goal_transport::sys::cma_write(self.shm.peer_pid(p), addr, src)
    }

    /// Reads `dst.len()` bytes at offset `off` of local peer `p`'s shared heap.
    #[inline]
    pub(super) fn heap_read(&self, p: usize, off: u64, dst: &mut [u8]) -> io::Result<()> {
        self.shm.read_peer_heap(p, off, dst)
    }

    /// The claim word `slot` of a message local peer `p` sends this rank
    /// (`out`: of one this rank sends `p`), by which the two share its copy.
    #[inline]
    pub(super) fn claim(&self, p: usize, slot: usize, out: bool) -> goal_transport::shm::Claim<'_> {
        if out { self.shm.claim_out(p, slot) } else { self.shm.claim_in(p, slot) }
    }

    /// Makes what was written into rings visible to their readers (wakes
    /// the sleepers among them).
    #[inline(always)]
    pub(super) fn flush(&self) {
        self.shm.flush();
    }
}

/// Sends `head` and `payload` to `p` as the active message of the head's kind.
fn am(net: &mut NetNode, p: u32, head: &Head, payload: &[&[u8]]) -> io::Result<()> {
    net.send_am(p, NET_HANDLER_BASE + head.kind as u8, &head.to_bytes(), payload)
}

/// Network handlers are `NET_HANDLER_BASE + kind` (goal-net reserves 0..=15).
pub(crate) const NET_HANDLER_BASE: u8 = 16;

/// The handler ids the executor accepts from the network.
pub(crate) fn net_handlers() -> Vec<u8> {
    [Kind::Eager, Kind::Rts, Kind::Cts, Kind::Fin, Kind::Credit, Kind::Accept, Kind::Decline, Kind::Probe, Kind::NoSend]
        .iter()
        .map(|&k| NET_HANDLER_BASE + k as u8)
        .collect()
}

/// Decodes a protocol message from the network; `None` if it does not fit
/// (goal-net already refused unknown handlers and oversized headers).
pub(super) fn net_head(handler: u8, head: &[u8]) -> Option<Head> {
    Head::from_bytes(head).filter(|h| h.kind != Kind::Invalid && handler == NET_HANDLER_BASE + h.kind as u8)
}
