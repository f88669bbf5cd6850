//! Writes a generated text schedule to standard output, for measurements:
//! `cargo run --release -p goal-text --example generate -- dissemination N`.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u32 = match (args.first().map(String::as_str), args.get(1).and_then(|n| n.parse().ok())) {
        (Some("dissemination"), Some(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: generate dissemination N");
            std::process::exit(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let mut text = String::new();
    let mut r = 0;
    while r < n {
        let end = n.min(r.saturating_add(4096));
        text.clear();
        goal_text::generate::dissemination(n, r..end, &mut text);
        if out.write_all(text.as_bytes()).is_err() {
            std::process::exit(1);
        }
        r = end;
    }
}
