//! What must hold for any input to `goal check`, shared by the cargo-fuzz
//! target (`fuzz_targets/check.rs`, run by `scripts/fuzz-smoke.sh` in
//! `make test`) and the stable random-input test (`tests/random.rs`):
//!
//! * no panic, no hang, whatever the bytes;
//! * every error has a position inside the input and a message;
//! * the result does not depend on how the reader splits the input;
//! * the text checker and goal's own compiler (the checks of
//!   `GOAL_Compile`) agree: every rank of a file the checker accepts
//!   converts to a graph and compiles, except for sizes a graph cannot hold
//!   (a message of 4 GiB or more, which `goal sim` takes and `goal run`
//!   refuses), never for a cycle or a peer outside `num_ranks`.

use goal_sched::{compile, CompileErrorKind, CompileOptions, Graph};
use goal_text::{check, Summary};

/// Checks `data` read through a buffer of `cap` bytes; the graphs of the
/// ranks the checker handed out (`Err` for a rank that did not convert).
pub fn run(data: &[u8], cap: usize) -> (Summary, Vec<Result<Graph, String>>) {
    let mut graphs = Vec::new();
    let s = check(std::io::BufReader::with_capacity(cap, data), "fuzz.goal", 8, |g| {
        graphs.push(goal_text::convert::to_graph(g).map(|c| c.graph).map_err(|e| e.message));
    });
    (s, graphs)
}

/// Asserts every property above for `data`.
pub fn properties(data: &[u8]) {
    let text = || String::from_utf8_lossy(data).into_owned();
    let (whole, graphs) = run(data, 1 << 16);
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    for e in &whole.errors {
        assert!(e.line >= 1 && e.line <= lines && e.col >= 1, "{e} in {:?}", text());
        assert!(!e.message.is_empty());
    }
    assert!(whole.errors.len() as u64 <= whole.error_count);
    assert!(whole.is_valid() || !whole.errors.is_empty());
    // A reader that splits every few bytes sees the same file.
    let (split, _) = run(data, 1 + data.len() % 7);
    assert_eq!(whole.errors, split.errors, "{:?}", text());
    assert_eq!((whole.ranks, whole.sends, whole.recvs, whole.deps), (split.ranks, split.sends, split.recvs, split.deps));
    // The compiler sees what the checker saw.
    let opts = CompileOptions { group_size: whole.num_ranks.unwrap_or(u32::MAX) };
    for (rank, g) in graphs.iter().enumerate() {
        match g {
            Ok(g) => {
                if let Err(e) = compile(g, &opts) {
                    let agrees = !matches!(e.kind, CompileErrorKind::Cycle | CompileErrorKind::Rank);
                    assert!(!whole.is_valid() || agrees, "rank {rank} of a valid file does not compile: {e} in {:?}", text());
                }
            }
            Err(m) => assert!(!whole.is_valid() || m.contains("too large"), "rank {rank} of a valid file does not convert: {m} in {:?}", text()),
        }
    }
}
