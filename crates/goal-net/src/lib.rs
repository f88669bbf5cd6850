//! goal-net: goal's transport between machines. Active messages over TCP,
//! with an eager path (the payload travels in the message) and a rendezvous
//! path (bulk transfers read from and written to the caller's buffers
//! directly), striped over several NICs ("rails").
//!
//! In the layer picture of `docs/design.md` it sits below goal-rt's engine,
//! beside goal-transport: the engine's link reaches every peer on another
//! machine through one [`NetNode`], and goal-rt sleeps on the node's epoll
//! descriptor beside the doorbell. It depends only on goal-auth.
//!
//! # The link goal-net serves
//!
//! goal-rt's engine talks to each peer through one *link*, whatever lies
//! underneath. A link provides:
//!
//! * **send an envelope**: eager data with its header, one message, in
//!   order with the others to that peer. goal-net: an active message,
//!   [`NetNode::send_am`] with the executor's EAGER handler, the header as
//!   the message head and the data as its payload.
//! * **send a control message**: RTS, CTS, FIN and the like, a header and
//!   no data. goal-net: an active message with an empty payload, on the
//!   same ordered stream as the envelopes.
//! * **the fetch paths** for large messages: moving the data of a
//!   rendezvous. goal-net: a bulk transfer, [`NetNode::expect_bulk`] at the
//!   receiver and [`NetNode::send_bulk`] at the sender, read from the
//!   network straight into the receive buffer; completion is reported by
//!   [`Event::BulkDone`] and [`Event::BulkSent`], so the engine needs no
//!   FIN over the network. (The shared-memory link provides its own fetch
//!   paths: a stream, CMA read or write, a heap copy; none is goal-net's.)
//!
//! Everything else in this crate (rails, handshake, acknowledgements,
//! failover, calibration) is how goal-net keeps those three promises across
//! machines; the engine sees only the calls above and [`NetNode::poll`].
//!
//! # Shape
//!
//! Following the MPC multirail design (the seed article), the layer speaks
//! *active messages*: each message names a handler and carries a small
//! header and a payload. The executor's nine message kinds that cross
//! machines (EAGER, RTS, CTS, FIN, CREDIT, ACCEPT, DECLINE, PROBE, NOSEND: goal-rt's
//! `net_handlers`) are user handlers 16 and up; goal-net's own (handshake,
//! fragments, acknowledgements) are 0..=15. One protocol endpoint per peer
//! ([`NetNode`] keeps it) holds one transport endpoint per rail: a TCP
//! connection.
//!
//! ```text
//! let (mut node, blob) = NetNode::bind(cfg)?;          // listen on every rail
//! let blobs = allgather(blob);                          // by goal-boot
//! node.connect(&blobs, &remote)?;                       // authenticated, one per (peer, rail)
//! node.send_am(peer, EAGER, &envelope, &[payload])?;    // small: copied, one rail
//! unsafe { node.expect_bulk(src, token, dst)? };        // receiver, before its CTS
//! unsafe { node.send_bulk(dst, token, buf)? };          // sender, on CTS: all rails
//! node.poll(&mut |ev| ...);                             // Am, BulkDone, BulkSent, PeerLost, RailLost
//! ```
//!
//! The executor's rendezvous over the network: the sender sends RTS; the
//! receiver matches it, calls `expect_bulk` and answers CTS; the sender calls
//! `send_bulk`; the receiver's `BulkDone` completes the receive and the
//! sender's `BulkSent` completes the send, so no FIN is needed.
//! [`NetNode::measure_crossover`] times eager against rendezvous on the real
//! connection, for the executor's eager limit.
//!
//! # Modules
//!
//! * [`wire`]: the frame format and its pure, fuzzed parser.
//! * SHA-256 / HMAC for the handshake come from `goal-auth`, shared with goal-boot.
//! * [`rails`]: interfaces, address blobs, pairing rails by subnet.
//! * `reliable`: per-peer sequence numbers, reorder buffer and
//!   acknowledgements; pure, like `wire`.
//! * `bulk`: fragment bookkeeping on both sides.
//! * `event`: what `poll` reports, and the queue of events held for it.
//! * `conn`: one connection's buffers and queues.
//! * `node`: [`NetNode`]; under it, one file per stage: connect,
//!   handshake, progress, read, write, send, failover, calibrate.
//! * `probe`: the eager/rendezvous crossover arithmetic and state.
//! * `sys`: the system calls, each behind one safe wrapper.
//!
//! The modules depend on each other in one direction only: `node` (with
//! its files) on the others; `reliable` on `bulk` and `wire`; `config` on
//! `rails`; `conn` and `probe` on `wire`; `bulk` and `rails` on `sys`;
//! `wire`, `event` and `sys` on nothing. No two import each other.
//!
//! # Wire format
//!
//! Every frame starts with a 16-byte header, little-endian:
//!
//! ```text
//! offset size field
//!      0    1 kind       0..=15 goal-net's own, 16..=255 a user handler
//!      1    1 head_len   bytes of the head that follows (user: at most 64)
//!      2    2 flags      bit 0 UNACKED (FRAG and user messages only); the rest must be 0
//!      4    4 body_len   bytes of the body that follows the head
//!      8    8 arg        user message: its sequence number; ACK: delivered count; else 0
//! ```
//!
//! | kind | name      | head (bytes)                                            | body |
//! |------|-----------|---------------------------------------------------------|------|
//! | 1    | CHALLENGE | `"GOALNET1"`, rank u32, size u32, rail u32, nonce 32 B (52) | none |
//! | 2    | HELLO     | `"GOALNET1"`, rank, size, from_rail, to_rail (u32 each), nonce 32 B, mac 32 B (88) | none |
//! | 3    | WELCOME   | mac 32 B                                                | none |
//! | 4    | REJECT    | none                                                    | reason, UTF-8, at most 256 |
//! | 5    | FRAG      | xid u64, token u64, offset u64, total u64 (32)          | the data, `body_len` bytes |
//! | 6    | ACK       | none                                                    | (xid u64, offset u64) per fragment, at most 4096 |
//! | 7    | PING      | none                                                    | none |
//! | 8    | BYE       | none                                                    | none |
//! | 9    | PROBE     | op u32, 0 u32, id u64, size u64 (24)                    | calibration payload |
//! | 16.. | user      | the caller's head, at most 64                           | the payload, at most `max_am_payload` |
//!
//! A kind that is not listed (0, 10..=15, or a user id the node was not
//! given), a head length other than the kind's, a body longer than its
//! limit, non-zero reserved bits, or a fragment range outside its `total`
//! is a protocol error, and so is, checked by the node: a fragment for a
//! token nobody registered, a message larger than its registered
//! destination, a transfer that changes its size, an acknowledgement for
//! something never sent, a sequence number more than 2^20 ahead. A protocol
//! error closes the connection (and loses the peer if it was its last).
//!
//! Active messages between an ordered pair are numbered from 0 (`arg`); the
//! receiver delivers them in that order and acknowledges with ACK's `arg`
//! (how many it has delivered), at the latest after 32 messages or 2 ms.
//! Fragments are acknowledged by (xid, offset) on the connection that
//! carried them. Acknowledgements exist so that a dead connection's
//! traffic can go again on another rail: to a peer reached over a single
//! rail, where a dead connection loses the peer, a sender keeps nothing
//! once written and sets UNACKED, and the receiver acknowledges nothing
//! (one wake fewer per message for a sender asleep in the helper). `xid` numbers the sender's bulk transfers to one peer from
//! 0 and is never reused; `token` is the caller's.
//!
//! # Handshake
//!
//! The lower rank connects from its rail's address to the higher rank's
//! listening socket on the paired rail.
//!
//! 1. Acceptor → connector: CHALLENGE (its rank, size, rail, a fresh random nonce `Na`).
//! 2. Connector checks that it reached the rank and rail it meant to, then →
//!    HELLO (its rank, size, rails, nonce `Nc`, `mac = HMAC-SHA256(secret,
//!    "goal-net hello v1" ‖ challenge fields ‖ hello fields)`).
//! 3. Acceptor checks size, rank, the MAC (constant-time), and that this
//!    (rank, rail pair) is expected and not yet connected; then → WELCOME
//!    (`HMAC(secret, "goal-net welcome v1" ‖ challenge ‖ whole hello)`), or
//!    REJECT with the reason, logged with the remote address, and closes.
//! 4. Connector checks the WELCOME MAC: both sides have proven knowledge
//!    of the secret over a nonce the other chose; the secret never crosses
//!    the wire and a recorded handshake cannot be replayed.
//!
//! The handshake keeps strangers and other jobs out; it does not encrypt or
//! authenticate the traffic after it (a cluster's network is trusted not to
//! be tampered with on the path).
//!
//! # Failure detection
//!
//! A connection dies when its socket reports an error or end of stream, or
//! when `TCP_INFO` shows data in flight, the retransmission timer fired, and
//! nothing acknowledged for `dead_after` (default 3 s): a downed link that
//! just stops delivering is found without any socket error. Idle
//! connections carry a PING every `dead_after / 3` so there is always
//! something to be acknowledged. The unacknowledged traffic of a dead
//! connection goes again on the others ([`Event::RailLost`]); with none left,
//! [`Event::PeerLost`] says "no rail left".
//!
//! # Testing, fuzzing, benchmarking
//!
//! * `cargo test -p goal-net --release`: loopback rails (127.0.0.1-3, no
//!   root needed), processes, liars, and 3 million fuzzed frames. As root
//!   with `unshare`, `ip` and `tc`, `tests/process.rs` also blackholes a rail
//!   in a private network namespace (skipped otherwise).
//! * `cargo install cargo-fuzz`, then from `crates/goal-net`:
//!   `cargo +nightly fuzz run wire -- -max_total_time=60` (and `blob`). The
//!   fuzz crate is its own workspace and is not built with goal.
//! * `cargo run --release -p goal-net --example net_bench -- --local 3`, or
//!   one process per host (see the example's header): latency, bandwidth
//!   per rail count, and the eager/rendezvous crossover, as JSON lines.
//!
//! # Threads and safety
//!
//! A node is driven by one thread at a time. The two bulk calls take raw
//! buffers and are `unsafe`: the caller keeps the memory valid until the
//! completion event. Everything read from the network is checked before it
//! is used to index memory; malformed input closes a connection and never
//! panics.

#![deny(missing_docs)]

mod bulk;
mod config;
mod conn;
mod event;
mod node;
mod probe;
pub mod rails;
mod reliable;
mod sys;
pub mod wire;

pub use config::{AmRails, NetConfig};
pub use conn::ConnCounters;
pub use event::Event;
pub use node::{NetNode, RailStats};
pub use probe::{Crossover, CrossoverPoint};
pub use rails::{discover_rails, RailSpec};
pub use sys::{ev, Epoll, Notifier, Timer};
