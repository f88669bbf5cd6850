//! The checker over arbitrary bytes, with the properties of
//! `tests/random.rs`: no panic, no hang; every error has a position inside
//! the input; the result does not depend on how the reader splits the input.
#![no_main]

use goal_text::{check, Summary};
use libfuzzer_sys::fuzz_target;

fn run(data: &[u8], cap: usize) -> Summary {
    check(std::io::BufReader::with_capacity(cap, data), "fuzz.goal", 8, |g| {
        // Every graph handed out converts (or says why not).
        let _ = goal_text::convert::to_graph(g);
    })
}

fuzz_target!(|data: &[u8]| {
    let whole = run(data, 1 << 16);
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    for e in &whole.errors {
        assert!(e.line >= 1 && e.line <= lines && e.col >= 1, "{e}");
        assert!(!e.message.is_empty());
    }
    assert!(whole.errors.len() as u64 <= whole.error_count);
    assert!(whole.is_valid() || !whole.errors.is_empty());
    // A reader that splits every few bytes sees the same file.
    let split = run(data, 1 + data.len() % 7);
    assert_eq!(whole.errors, split.errors);
    assert_eq!((whole.ranks, whole.sends, whole.recvs, whole.deps), (split.ranks, split.sends, split.recvs, split.deps));
});
