//! The bootstrap wire protocol: frames and their encoding, shared by the
//! client and the server so the two cannot disagree. The protocol itself is
//! described in the crate documentation; it is the same over goalrun's Unix
//! socket and the TCP store, which adds a handshake in front.

use std::io::{self, Read};

use crate::secret::SECRET_LEN;

/// First four bytes of a HELLO.
pub(crate) const MAGIC: [u8; 4] = *b"GOAL";
/// Protocol version carried in HELLO. Version 2 added the secret to the
/// HELLO reply and the TCP handshake.
pub(crate) const VERSION: u32 = 2;
/// Size of a HELLO frame: magic, version, rank, size, pid.
pub(crate) const HELLO_LEN: usize = 20;
/// The largest blob one rank may contribute to one allgather round.
pub const MAX_BLOB: usize = 1 << 20;
/// The longest error message a reader accepts.
pub(crate) const MAX_MESSAGE: usize = 64 << 10;

/// Reply status: success, the payload follows.
pub(crate) const STATUS_OK: u32 = 0;
/// Reply status: the HELLO was refused; a message follows, then the server closes.
pub(crate) const STATUS_REJECTED: u32 = 1;
/// Reply status: the job was aborted; a message follows, then the server closes.
pub(crate) const STATUS_ABORTED: u32 = 2;

/// First four bytes of the TCP store's challenge.
pub(crate) const CHALLENGE_MAGIC: [u8; 4] = *b"GOAS";
/// Bytes in a handshake nonce and in a MAC.
pub(crate) const NONCE_LEN: usize = 32;
/// Size of the server's challenge: magic, nonce.
pub(crate) const CHALLENGE_LEN: usize = 4 + NONCE_LEN;
/// Size of the client's answer: its nonce, its MAC.
pub(crate) const ANSWER_LEN: usize = 2 * NONCE_LEN;

/// The MAC with which one side of the TCP handshake proves it knows the job
/// secret. The role label keeps a MAC from being reflected back as the
/// other side's; the two fresh nonces keep it from being replayed.
pub(crate) fn handshake_mac(
    secret: &[u8; SECRET_LEN],
    role: Role,
    server_nonce: &[u8; NONCE_LEN],
    client_nonce: &[u8; NONCE_LEN],
) -> [u8; NONCE_LEN] {
    let label: &[u8] = match role {
        Role::Client => b"goal store handshake: client\0",
        Role::Server => b"goal store handshake: server\0",
    };
    goal_auth::hmac_sha256(secret, &[label, server_nonce, client_nonce])
}

/// Which side of the handshake a MAC speaks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    Client,
    Server,
}

/// The reply that admits a HELLO: status 0 and the 32-byte secret field.
pub(crate) fn hello_ok(secret_field: &[u8; SECRET_LEN]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + SECRET_LEN);
    out.extend_from_slice(&STATUS_OK.to_le_bytes());
    out.extend_from_slice(secret_field);
    out
}

/// What a client says when it connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hello {
    pub rank: u32,
    pub size: u32,
    pub pid: u32,
}

impl Hello {
    pub(crate) fn encode(&self) -> [u8; HELLO_LEN] {
        let mut out = [0u8; HELLO_LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4..8].copy_from_slice(&VERSION.to_le_bytes());
        out[8..12].copy_from_slice(&self.rank.to_le_bytes());
        out[12..16].copy_from_slice(&self.size.to_le_bytes());
        out[16..20].copy_from_slice(&self.pid.to_le_bytes());
        out
    }

    /// Decodes a HELLO; a wrong magic or version is an `InvalidData` error.
    pub(crate) fn decode(buf: &[u8; HELLO_LEN]) -> io::Result<Hello> {
        if buf[0..4] != MAGIC {
            return Err(invalid(format!(
                "not a goal bootstrap HELLO (magic {:02x?})",
                &buf[0..4]
            )));
        }
        let version = u32_at(buf, 4);
        if version != VERSION {
            return Err(invalid(format!(
                "bootstrap protocol version {version}, this server speaks {VERSION}"
            )));
        }
        Ok(Hello {
            rank: u32_at(buf, 8),
            size: u32_at(buf, 12),
            pid: u32_at(buf, 16),
        })
    }
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

pub(crate) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Appends a length-prefixed byte string.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// An error reply: status, then the message as a length-prefixed string.
pub(crate) fn error_reply(status: u32, message: &str) -> Vec<u8> {
    let msg = &message.as_bytes()[..message.len().min(MAX_MESSAGE)];
    let mut out = Vec::with_capacity(8 + msg.len());
    out.extend_from_slice(&status.to_le_bytes());
    put_bytes(&mut out, msg);
    out
}

/// The success reply of an allgather round: status 0, the count, each blob.
pub(crate) fn round_reply(blobs: &[Vec<u8>]) -> Vec<u8> {
    let total: usize = blobs.iter().map(|b| 4 + b.len()).sum();
    let mut out = Vec::with_capacity(8 + total);
    out.extend_from_slice(&STATUS_OK.to_le_bytes());
    out.extend_from_slice(&(blobs.len() as u32).to_le_bytes());
    for blob in blobs {
        put_bytes(&mut out, blob);
    }
    out
}

pub(crate) fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Reads a length-prefixed byte string of at most `max` bytes.
pub(crate) fn read_bytes(r: &mut impl Read, max: usize, what: &str) -> io::Result<Vec<u8>> {
    let len = read_u32(r)? as usize;
    if len > max {
        return Err(invalid(format!(
            "{what} of {len} bytes exceeds the limit of {max} bytes"
        )));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// Reads the first frame of a connection's next request: `Ok(None)` on a clean
/// end of stream before any byte of it, the blob otherwise.
pub(crate) fn read_blob_or_eof(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_BLOB {
        return Err(invalid(format!(
            "allgather blob of {len} bytes exceeds the limit of {MAX_BLOB} bytes"
        )));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips() {
        let h = Hello {
            rank: 3,
            size: 7,
            pid: 4242,
        };
        assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
    }

    #[test]
    fn hello_with_wrong_magic_is_refused() {
        let mut buf = Hello {
            rank: 0,
            size: 1,
            pid: 1,
        }
        .encode();
        buf[0] = b'X';
        assert!(Hello::decode(&buf)
            .unwrap_err()
            .to_string()
            .contains("magic"));
    }

    #[test]
    fn oversized_blob_is_refused_before_allocation() {
        let mut frame = Vec::new();
        frame.extend_from_slice(&(MAX_BLOB as u32 + 1).to_le_bytes());
        let err = read_blob_or_eof(&mut &frame[..]).unwrap_err();
        assert!(err.to_string().contains("exceeds the limit"), "{err}");
    }

    #[test]
    fn clean_eof_is_not_an_error_but_torn_header_is() {
        assert!(read_blob_or_eof(&mut &[][..]).unwrap().is_none());
        assert!(read_blob_or_eof(&mut &[1u8, 0][..]).is_err());
    }
}
