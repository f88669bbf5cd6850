//! The job secret: 32 bytes that every rank of a job knows and nobody else
//! does, with which the transports authenticate their connections.
//!
//! Where it comes from is the launcher's business, because only the launcher
//! has a channel that reaches the job's ranks and no one else (see the crate
//! documentation for the table). This module holds what all of them share:
//! the type, which never prints its bytes; parsing `GOAL_SECRET`; fresh
//! random bytes from the kernel; and hex, the form in which a secret travels
//! through environment variables and PMI key-value stores.

use std::fmt;
use std::io;

use crate::sys;

/// Bytes in a job secret.
pub const SECRET_LEN: usize = 32;

/// A job secret. `Debug` shows a fingerprint, never the bytes, so that a
/// logged plan or error cannot leak it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Secret(pub [u8; SECRET_LEN]);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fp = goal_auth::sha256(&[b"goal secret fingerprint", &self.0]);
        write!(f, "Secret(fingerprint {})", to_hex(&fp[..4]))
    }
}

impl Secret {
    /// 32 bytes from the kernel's CSPRNG (`getrandom`).
    pub(crate) fn random() -> io::Result<Secret> {
        let mut s = [0u8; SECRET_LEN];
        sys::fill_random(&mut s)?;
        Ok(Secret(s))
    }

    /// Parses 64 hex digits (surrounding white space ignored). `name` is
    /// the variable or key the text came from, for the error message, which
    /// never repeats the text itself.
    pub(crate) fn from_hex(text: &str, name: &str) -> io::Result<Secret> {
        let text = text.trim();
        from_hex(text)
            .and_then(|b| <[u8; SECRET_LEN]>::try_from(b).ok())
            .map(Secret)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{name} must be {} hex digits (a {SECRET_LEN}-byte secret); \
                         it has {} characters{}",
                        2 * SECRET_LEN,
                        text.len(),
                        if text.bytes().all(|b| b.is_ascii_hexdigit()) {
                            ""
                        } else {
                            ", some of them not hex digits"
                        }
                    ),
                )
            })
    }

    pub(crate) fn to_hex(self) -> String {
        to_hex(&self.0)
    }
}

/// A launcher's key-value space seen as a way to share the secret (PMIx,
/// PMI-1): only the job's ranks can read it.
pub(crate) trait Publish {
    /// Rank 0: puts `secret` where the others will find it after the fence.
    fn publish(&mut self, secret: &Secret) -> io::Result<()>;
    /// Every rank: makes what was published visible (a barrier).
    fn fence(&mut self) -> io::Result<()>;
    /// Every rank but 0: reads what rank 0 published.
    fn fetch(&mut self) -> io::Result<Secret>;
}

/// Agrees on the job secret through `kvs`: rank 0 publishes `GOAL_SECRET`
/// or fresh random bytes, everyone fences, the others fetch it. A rank whose
/// own `GOAL_SECRET` differs from rank 0's fails rather than go on with a
/// secret its peers do not share. Collective.
pub(crate) fn agree(
    kvs: &mut impl Publish,
    rank: usize,
    goal_secret: Option<Secret>,
) -> io::Result<Secret> {
    let mine = if rank == 0 {
        let secret = match goal_secret {
            Some(s) => s,
            None => Secret::random()?,
        };
        kvs.publish(&secret)?;
        Some(secret)
    } else {
        None
    };
    kvs.fence()?;
    if let Some(secret) = mine {
        return Ok(secret);
    }
    let published = kvs.fetch()?;
    if goal_secret.is_some_and(|own| own != published) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "GOAL_SECRET differs between rank 0 and this rank",
        ));
    }
    Ok(published)
}

/// A stand-in secret derived from a job id, for [`crate::Bootstrap`]
/// implementations that do not provide one. Anyone who knows the job id can
/// compute it: it keeps jobs apart, it does not keep anyone out.
pub(crate) fn derived_from_job(job: &str) -> [u8; SECRET_LEN] {
    goal_auth::sha256(&[b"goal job secret derived from the job id\0", job.as_bytes()])
}

/// Lower-case hex.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Decodes hex (either case); `None` if the length is odd or a character is
/// not a hex digit.
pub(crate) fn from_hex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = text.as_bytes();
    if bytes.len() & 1 == 1 {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&bytes)).unwrap(), bytes);
        assert_eq!(from_hex("0aFF").unwrap(), vec![10, 255]);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
    }

    #[test]
    fn goal_secret_parsing_names_the_variable_and_hides_the_value() {
        let good = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let s = Secret::from_hex(&format!(" {good}\n"), "GOAL_SECRET").unwrap();
        assert_eq!(s.to_hex(), good);
        let e = Secret::from_hex("hunter2", "GOAL_SECRET")
            .unwrap_err()
            .to_string();
        assert!(e.contains("GOAL_SECRET must be 64 hex digits"), "{e}");
        assert!(e.contains("7 characters") && !e.contains("hunter2"), "{e}");
        assert!(
            !format!("{s:?}").contains("0011"),
            "Debug must not show the bytes"
        );
    }

    /// A key-value space of one slot, as rank 0 and another rank see it.
    struct Slot<'a>(&'a std::cell::Cell<Option<Secret>>);

    impl Publish for Slot<'_> {
        fn publish(&mut self, secret: &Secret) -> io::Result<()> {
            self.0.set(Some(*secret));
            Ok(())
        }
        fn fence(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn fetch(&mut self) -> io::Result<Secret> {
            self.0.get().ok_or_else(|| io::ErrorKind::NotFound.into())
        }
    }

    #[test]
    fn agreement_takes_rank_0s_secret_and_catches_a_different_goal_secret() {
        let slot = std::cell::Cell::new(None);
        let zero = agree(&mut Slot(&slot), 0, None).unwrap();
        assert_eq!(agree(&mut Slot(&slot), 1, None).unwrap(), zero);
        assert_eq!(agree(&mut Slot(&slot), 2, Some(zero)).unwrap(), zero);
        let other = Secret::random().unwrap();
        let e = agree(&mut Slot(&slot), 3, Some(other)).unwrap_err();
        assert!(e.to_string().contains("GOAL_SECRET differs"), "{e}");
        // Rank 0's GOAL_SECRET is what it publishes.
        assert_eq!(agree(&mut Slot(&slot), 0, Some(other)).unwrap(), other);
        assert_eq!(agree(&mut Slot(&slot), 1, None).unwrap(), other);
    }

    #[test]
    fn random_secrets_differ() {
        assert_ne!(Secret::random().unwrap(), Secret::random().unwrap());
    }
}
