//! Throughput and bounded memory on generated files (Schedgen's layout), in
//! memory so that nothing large is written to disk.

use goal_text::generate::{dissemination, dissemination_rounds};

/// Checks a dissemination barrier over `n` ranks; returns MB/s.
fn barrier(n: u32) -> f64 {
    let mut text = String::new();
    dissemination(n, 0..n, &mut text);
    let mut largest = 0;
    let s = goal_text::check(text.as_bytes(), "gen.goal", 10, |g| largest = largest.max(g.ops.len()));
    assert!(s.is_valid(), "{:#?}", s.errors);
    let rounds = dissemination_rounds(n) as u64;
    assert_eq!((s.ranks, s.sends, s.recvs, s.deps), (n as u64, n as u64 * rounds, n as u64 * rounds, n as u64 * 2 * rounds.saturating_sub(1)));
    assert_eq!(largest as u64, 2 * rounds);
    assert_eq!(s.text_bytes, text.len() as u64);
    let mbs = text.len() as f64 / 1e6 / s.seconds;
    eprintln!("dissemination over {n} ranks: {:.1} MB in {:.3} s, {mbs:.0} MB/s", text.len() as f64 / 1e6, s.seconds);
    mbs
}

#[test]
fn a_dissemination_barrier_of_4096_ranks_is_valid_and_quick() {
    barrier(4096);
    barrier(1000); // not a power of two: the last round wraps unevenly
    barrier(1);
}

/// The measurement of docs/goal-text.md (about 90 MB of text):
/// `cargo test --release -p goal-text --test scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput_of_65536_ranks() {
    barrier(65536);
}

#[test]
fn a_send_unmatched_at_scale_is_found_with_its_line() {
    let n = 2048;
    let mut text = String::new();
    dissemination(n, 0..n, &mut text);
    // Rank 1000 sends its first message to the wrong rank: two errors, a
    // send too many and the receive left waiting for it.
    let needle = "rank 1000 {\nl1: send 1b to 1001 tag 0\n";
    let at = text.find(needle).unwrap();
    // Rank 1000 now sends to 1002 twice (l1, then l3 as it should), and
    // 1002 receives once: by matching order the first send is taken, the
    // second (l3, two lines further) is the one reported.
    let line = text[..at].lines().count() as u64 + 4;
    text.replace_range(at..at + needle.len(), "rank 1000 {\nl1: send 1b to 1002 tag 0\n");
    let s = goal_text::check(text.as_bytes(), "gen.goal", 10, |_| {});
    let e: Vec<String> = s.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(s.error_count, 2, "{e:#?}");
    assert!(e[0].starts_with(&format!("gen.goal:{line}:1: rank 1000 sends to rank 1002 with tag 0 but no receive matches it")), "{e:#?}");
    assert!(e[1].contains("rank 1001 receives from rank 1000 with tag 0 but no send is left"), "{e:#?}");
}
