//! The wire parser over arbitrary bytes, with the properties of
//! `tests/wire_fuzz.rs`: no panic; an accepted frame re-encodes to exactly
//! the bytes it consumed and each strict prefix of it is incomplete;
//! "incomplete" asks for more than it was given. The input is also read as
//! a stream of frames, the way a connection reads them (fragment bodies
//! skipped), under two sets of limits chosen by the first byte.
#![no_main]

use goal_net::wire::{self, Frame, HandlerSet, Limits, Parsed};
use libfuzzer_sys::fuzz_target;

fn check(buf: &[u8], lim: &Limits) -> Option<usize> {
    match wire::parse(buf, lim) {
        Err(_) => None,
        Ok(Parsed::Incomplete { need }) => {
            assert!(need > buf.len());
            None
        }
        Ok(Parsed::Frame(f, used)) => {
            assert!(used >= wire::HEADER_LEN && used <= buf.len());
            let mut again = Vec::new();
            wire::encode(&f, &mut again);
            assert_eq!(&again[..], &buf[..used]);
            assert!(matches!(wire::parse(&buf[..used - 1], lim), Ok(Parsed::Incomplete { .. })));
            let body = if let Frame::Frag(h) = f { h.len as usize } else { 0 };
            Some(used + body)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let lim = if sel & 1 == 0 {
        Limits { max_am_payload: 4096, handlers: HandlerSet::of(&[16, 17, 18, 19]) }
    } else {
        Limits { max_am_payload: u32::MAX, handlers: HandlerSet::all() }
    };
    let mut at = 0;
    while at < rest.len() {
        match check(&rest[at..], &lim) {
            Some(n) => at = at.saturating_add(n),
            None => break,
        }
    }
});
