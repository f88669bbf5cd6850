//! The address-blob decoder over arbitrary bytes: no panic, and what it
//! accepts survives a round trip.
#![no_main]

use goal_net::rails::Blob;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = Blob::decode(data) {
        assert_eq!(Blob::decode(&b.encode()).unwrap(), b);
    }
});
