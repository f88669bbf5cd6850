//! The checker and goal's compiler over arbitrary bytes, with the
//! properties of `fuzz/properties.rs` (also run, on generated inputs, by
//! `tests/random.rs`). `scripts/fuzz-smoke.sh` runs it in `make test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::properties(data));
