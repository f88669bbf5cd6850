//! The parser's fast path (Schedgen's statement lines read without
//! tokens) records exactly what the general path does: every corpus file
//! and generated files are parsed as they are, and again with a comment
//! after every statement (which sends each line through the general path),
//! and the ranks must be equal, positions and labels included. Lines the
//! fast path must leave to the general one (mistakes, unusual spacing) give
//! the general path's errors.

use goal_text::generate::{schedgen, Pattern};
use goal_text::{RankGraph, TextError};

fn parse(text: &str) -> (Vec<RankGraph>, Vec<TextError>) {
    let (mut ranks, mut errors) = (Vec::new(), Vec::new());
    goal_text::parse(text.as_bytes(), "f.goal", |g| ranks.push(g.clone()), |e| errors.push(e));
    (ranks, errors)
}

/// `text` with ` // x` after every line inside a rank (the general path
/// only: the fast path refuses comments).
fn commented(text: &str) -> String {
    text.split('\n')
        .map(|l| {
            let t = l.trim();
            if t.is_empty() || t.starts_with("rank") || t.starts_with("num_ranks") || t.contains('}') || t.contains("/*") || t.contains("*/") || t.starts_with("//") {
                l.to_string()
            } else {
                format!("{l} // x")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn same(text: &str, what: &str) {
    let (a, ea) = parse(text);
    let c = commented(text);
    let (b, mut eb) = parse(&c);
    // An error at the end of a line points past the comment added there.
    let lines: Vec<&str> = c.split('\n').collect();
    for e in &mut eb {
        if e.message.contains("the end of the line") && lines.get(e.line as usize - 1).is_some_and(|l| l.ends_with(" // x")) {
            e.col -= " // x".len() as u64;
        }
    }
    assert_eq!(ea, eb, "{what}: errors");
    assert_eq!(a.len(), b.len(), "{what}: ranks");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.rank, x.pos, &x.ops, &x.deps, &x.names), (y.rank, y.pos, &y.ops, &y.deps, &y.names), "{what}: rank {}", x.rank);
    }
}

#[test]
fn the_fast_path_reads_every_file_as_the_general_path() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/goal-corpus");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if matches!(p.extension().and_then(|x| x.to_str()), Some("goal" | "g2")) {
            same(&std::fs::read_to_string(&p).unwrap(), &p.display().to_string());
        }
    }
    for pat in [Pattern::Dissemination, Pattern::BinomialBcast] {
        let mut t = String::new();
        schedgen(pat, 300, 1024, 0..300, &mut t);
        same(&t, &format!("{pat:?}"));
    }
    // Forms at the edge of the fast path, valid and not.
    same(
        "num_ranks 4\nrank 0 {\nl1:send 8 b to 1 tag 7 cpu 2 nic 1\n  x_2: recv 8b from -1 tag -1\t\nl3: calc 5 cpu 1\nl1 irequires x_2\nl3 requires l1\nl4: send 1b to 3 tag -1\nl5: send 1b to 4\nl6: recv 1b from 1 tag 2147483648\nl1: calc 1\nl7 requires l1\nl3 requires l99\nsend 1b to 2\nl8: send 1bto 2\nl9: recv 00012b from 0003 tag 0\nl10: calc 99999999999999999999\n_l: calc 1\nl11: send 1b to 1 nic 1 cpu 1\n}\nrank 1 {\n}\n",
        "edge forms",
    );
}

/// Random edits of Schedgen's lines (bytes replaced, removed, doubled):
/// whatever the fast path takes, it takes as the general path would.
#[test]
fn mutated_lines_read_alike_on_both_paths() {
    let mut base = String::new();
    schedgen(Pattern::Dissemination, 6, 1, 0..6, &mut base);
    base = base.replace("l3: send", "x_3: send").replace("tag 0\nl4", "tag 0 cpu 2 nic 1\nl4");
    let alphabet = b" \t:-0123456789bltagcpunicsendrecvfromtoirequires{}\r";
    let mut seed = 0x243F_6A88_85A3_08D3u64;
    let mut rnd = |n: usize| {
        seed = seed.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    };
    for round in 0..3000 {
        let mut b = base.clone().into_bytes();
        for _ in 0..1 + rnd(3) {
            // Edit inside a statement line only: not a rank's header or brace.
            let at = rnd(b.len());
            let line_start = b[..at].iter().rposition(|&c| c == b'\n').map_or(0, |k| k + 1);
            if b[line_start..].starts_with(b"rank") || b[line_start..].starts_with(b"num_ranks") || b[line_start..].starts_with(b"}") {
                continue;
            }
            match rnd(3) {
                0 => b[at] = alphabet[rnd(alphabet.len())],
                1 if b[at] != b'\n' => {
                    b.remove(at);
                }
                _ => b.insert(at, alphabet[rnd(alphabet.len())]),
            }
        }
        let text = String::from_utf8_lossy(&b).into_owned();
        if text.contains("/*") || text.contains("*/") || text.contains("//") {
            continue;
        }
        same(&text, &format!("round {round}:\n{text}"));
    }
}
