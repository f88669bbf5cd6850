//! `goal draw` as users run it: the drawings of docs/figures are
//! well-formed SVG (parsed by Python's XML parser, which refuses anything
//! malformed) with one lane per rank and one arrow per message, their DOT
//! has a cluster per rank and an edge per message, a large file is folded
//! to the ranks at its ends, and an invalid file is refused with its line.
//! `--coll` draws goal's own collective, the very schedule `goal export`
//! writes, at any size.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn figures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/figures")
}

/// `goal draw ARGS`, `stdin` on its standard input.
fn draw(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_goal"))
        .arg("draw")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Counts, by an XML parser: lanes, their ranks, and the elements of each
/// class (`msg`, `req`, `ireq`, `op`, `folded`), as `name=count` lines.
fn svg_counts(svg: &[u8]) -> std::collections::HashMap<String, String> {
    let script = r#"
import sys, collections, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag
c = collections.Counter(e.get('class') for e in root.iter() if e.get('class'))
for k, v in c.items(): print(f'{k}={v}')
print('ranks=' + ','.join(e.get('data-rank') for e in root.iter() if e.get('class') == 'lane'))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (which the project's bench drivers need too) parses the SVG");
    child.stdin.take().unwrap().write_all(svg).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "not well-formed SVG: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn the_dissemination_barrier_is_drawn_with_a_lane_per_rank_and_an_arrow_per_message() {
    let text = std::fs::read(figures().join("dissemination-8.goal")).unwrap();
    let out = draw(&["-"], &text);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = svg_counts(&out.stdout);
    assert_eq!(c["ranks"], "0,1,2,3,4,5,6,7");
    assert_eq!((c["msg"].as_str(), c["op"].as_str(), c["req"].as_str()), ("24", "48", "32"), "{c:?}");
    assert!(!c.contains_key("ireq") && !c.contains_key("folded"), "{c:?}");
}

#[test]
fn irequires_edges_are_drawn_apart_from_requires_edges() {
    let text = "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\nl2: calc 50\nl3: send 4b to 1 tag 1\nl2 irequires l1\nl3 requires l2\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\nl2: recv 4b from -1 tag -1\n}\n";
    let out = draw(&["-"], text.as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = svg_counts(&out.stdout);
    assert_eq!((c["ireq"].as_str(), c["req"].as_str(), c["msg"].as_str(), c["ranks"].as_str()), ("1", "1", "2", "0,1"), "{c:?}");
}

#[test]
fn dot_has_a_cluster_per_rank_and_an_edge_per_message() {
    let dir = std::env::temp_dir().join(format!("goal-draw-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out_file = dir.join("ring.dot");
    let ring = figures().join("ring-allreduce-4.goal");
    let out = draw(&[ring.to_str().unwrap(), "-o", out_file.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dot = std::fs::read_to_string(&out_file).unwrap();
    assert!(dot.starts_with("digraph goal {") && dot.trim_end().ends_with('}'), "{dot}");
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "braces balance");
    assert_eq!(dot.matches("subgraph cluster_rank").count(), 4);
    assert_eq!(dot.matches("class=\"msg\"").count(), 24, "6 steps of 4 messages");
    assert_eq!(dot.matches("class=\"req\"").count(), 52);
    assert_eq!(dot.lines().filter(|l| l.contains("[label=")).count(), 60, "a node per operation");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_of_many_ranks_is_folded_to_the_ranks_at_its_ends() {
    // The dissemination barrier over 64 ranks, as goal-text writes it.
    let mut text = String::from("num_ranks 64\n");
    for r in 0..64u32 {
        text.push_str(&format!("rank {r} {{\n"));
        for k in 0..6u32 {
            let d = 1 << k;
            text.push_str(&format!("l{}: send 1b to {} tag 0\nl{}: recv 1b from {} tag 0\n", 2 * k + 1, (r + d) % 64, 2 * k + 2, (r + 64 - d) % 64));
            if k > 0 {
                text.push_str(&format!("l{} requires l{}\nl{} requires l{}\n", 2 * k + 1, 2 * k, 2 * k + 2, 2 * k));
            }
        }
        text.push_str("}\n");
    }
    let out = draw(&["--max-ranks", "8", "-"], text.as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = svg_counts(&out.stdout);
    assert_eq!(c["ranks"], "0,1,2,3,60,61,62,63");
    assert_eq!(c["folded"], "1");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ranks 4 to 59 folded: 56 ranks, 672 operations"));
    // Between drawn ranks only: rank r's round-k message to r + 2^k.
    let drawn = |r: u32| !(4..60).contains(&r);
    let expected = (0..64u32).filter(|&r| drawn(r)).flat_map(|r| (0..6).map(move |k| (r, (r + (1 << k)) % 64))).filter(|&(_, to)| drawn(to)).count();
    assert_eq!(c["msg"], expected.to_string());
}

/// `goal ARGS`'s standard output, which must succeed.
fn goal(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_goal")).args(args).output().unwrap();
    assert!(out.status.success(), "goal {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn a_collective_is_drawn_by_name_as_goal_export_writes_it() {
    let coll = ["--coll", "allreduce", "--alg", "ring", "--ranks", "8", "--bytes", "1K"];
    let svg = goal(&[&["draw"][..], &coll].concat());
    let c = svg_counts(&svg);
    assert_eq!(c["ranks"], "0,1,2,3,4,5,6,7");
    assert_eq!(c["msg"], "112", "2 x 7 steps of 8 messages: {c:?}");
    assert!(String::from_utf8_lossy(&svg).contains("allreduce ring over 8 ranks, 1024 bytes"));
    // The same picture as the exported file's, but for the title.
    let exported = goal(&[&["export"][..], &coll].concat());
    let out = draw(&["-"], &exported);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let body = |svg: &[u8]| String::from_utf8_lossy(svg).lines().filter(|l| !l.contains("font-weight=\"bold\"")).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&svg), body(&out.stdout));
    // A large group streams, folded to its ends.
    let big = svg_counts(&goal(&["draw", "--max-ranks", "8", "--coll", "barrier", "--alg=bruck", "--ranks", "4096"]));
    assert_eq!((big["ranks"].as_str(), big["folded"].as_str()), ("0,1,2,3,4092,4093,4094,4095", "1"));
    // Mistakes name the option.
    let bad = Command::new(env!("CARGO_BIN_EXE_goal")).args(["draw", "--coll", "allreduce", "--alg", "bruck", "--ranks", "4", "--bytes", "8"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("allreduce has no algorithm 'bruck'"), "{}", String::from_utf8_lossy(&bad.stderr));
}

#[test]
fn an_invalid_file_is_refused_with_its_line() {
    let out = draw(&["-"], b"num_ranks 2\nrank 0 {\nl1: send 8b to 5 tag 0\n}\nrank 1 {\n}\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<stdin>:3:"), "{err}");
    assert!(out.stdout.is_empty());
}
