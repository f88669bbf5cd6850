//! The events a node reports through [`NetNode::poll`](crate::NetNode::poll),
//! and the queue of those that wait for the next `poll`.
//!
//! Its own module because both the node and its calibration hold events
//! back (the calibration keeps whatever arrives while it measures), and
//! neither should have to import the other for it.

use std::collections::VecDeque;

/// What [`NetNode::poll`](crate::NetNode::poll) reports.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// An active message, in the sender's order. The slices are valid for
    /// the duration of the callback.
    Am {
        /// Sending rank.
        src: u32,
        /// Handler id (16..=255).
        handler: u8,
        /// The small fixed header.
        head: &'a [u8],
        /// The payload.
        payload: &'a [u8],
    },
    /// Every byte of a transfer registered with `expect_bulk` has arrived.
    BulkDone {
        /// Sending rank.
        src: u32,
        /// The token.
        token: u64,
    },
    /// Every fragment of a `send_bulk` is acknowledged: the buffer is free.
    BulkSent {
        /// Receiving rank.
        dst: u32,
        /// The token.
        token: u64,
    },
    /// No connection to this peer is left. Its transfers are dropped (their
    /// buffers are free) and sending to it fails from now on.
    PeerLost {
        /// The rank.
        peer: u32,
        /// Why, for the error message.
        why: String,
        /// The peer closed every connection itself, in order (it finished,
        /// or exited): not a failure of the network, and maybe none of the
        /// job (whether it left too early is for the caller to judge).
        orderly: bool,
    },
    /// One connection to a peer failed; traffic continues on the others.
    RailLost {
        /// The rank it led to.
        peer: u32,
        /// Our rail's name.
        rail: String,
        /// Why, with the addresses.
        why: String,
    },
}

/// An event waiting for delivery by the next `poll`.
pub(crate) enum Queued {
    /// One with no borrowed parts.
    Ev(Event<'static>),
    /// An active message, copied (held during calibration).
    Am { src: u32, handler: u8, head: Vec<u8>, payload: Vec<u8> },
}

impl Queued {
    /// Keeps an event for later, copying its borrowed parts.
    pub(crate) fn keep(e: Event<'_>) -> Queued {
        match e {
            Event::Am { src, handler, head, payload } => Queued::Am { src, handler, head: head.to_vec(), payload: payload.to_vec() },
            Event::BulkDone { src, token } => Queued::Ev(Event::BulkDone { src, token }),
            Event::BulkSent { dst, token } => Queued::Ev(Event::BulkSent { dst, token }),
            Event::PeerLost { peer, why, orderly } => Queued::Ev(Event::PeerLost { peer, why, orderly }),
            Event::RailLost { peer, rail, why } => Queued::Ev(Event::RailLost { peer, rail, why }),
        }
    }
}

/// Delivers the queued events in order; returns how many.
pub(crate) fn drain(pending: &mut VecDeque<Queued>, on: &mut dyn FnMut(Event<'_>)) -> usize {
    let n = pending.len();
    while let Some(q) = pending.pop_front() {
        match q {
            Queued::Ev(e) => on(e),
            Queued::Am { src, handler, head, payload } => on(Event::Am { src, handler, head: &head, payload: &payload }),
        }
    }
    n
}
