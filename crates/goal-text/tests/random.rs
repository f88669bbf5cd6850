//! The fuzz target's properties (`fuzz/properties.rs`) over many random
//! and mutated inputs, on the stable toolchain, beside the cargo-fuzz smoke
//! run of `scripts/fuzz-smoke.sh`: no panic, every error at a position
//! inside the input, a result that does not depend on how the reader splits
//! the input, the checker and the compiler agreeing.
//! `GOAL_TEXT_FUZZ_ITERS` sets the number of inputs (default 20000).

#[path = "../fuzz/properties.rs"]
mod properties;

use properties::{properties, run};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SEEDS: &[&str] = &[
    "num_ranks 2\n\nrank 0 {\nl1: send 4b to 1 tag 1\nl2: calc 1000\nl1 requires l2\nl3: calc 2000\nl3 irequires l1\n}\n\nrank 1 {\nl1: recv 4b from 0 tag 1\nl2: calc 3000\nl1 requires l2\n}\n",
    "num_ranks 2\nrank 0{\nl2a: send 11b to 1 cpu 1 nic 0\nl2b: recv 11b from 1 cpu 1 nic 0\n}\nrank 1{\n/* x */ l2a: recv 11b from -1 tag -1 cpu 1\nl2b: send 11b to 0 // c\n}\n",
    "num_ranks 3\nrank 0 {\n}\nrank 1 {\n}\nrank 2 {\n}\n",
];

const WORDS: &[&str] = &[
    "send", "recv", "calc", "rank", "num_ranks", "{", "}", ":", "-1", "-", "requires", "irequires", "tag", "cpu", "nic", "b", "to", "from",
    "/*", "*/", "//", "\n", "\r\n", " ", "\t", "0", "1", "2", "4294967296", "99999999999999999999999", "l1", "l2", "\u{e9}", "\0",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut d = base.to_vec();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(d.len() + 1);
        match rng.below(5) {
            0 => d.insert(at, rng.next() as u8),
            1 => {
                let w = WORDS[rng.below(WORDS.len())].as_bytes();
                d.splice(at..at, w.iter().copied());
            }
            2 if !d.is_empty() => {
                let end = (at + rng.below(12)).min(d.len());
                d.drain(at.min(end)..end);
            }
            3 if !d.is_empty() => {
                let i = at.min(d.len() - 1);
                d[i] = b"0123456789{}:- \n"[rng.below(16)];
            }
            _ => {
                // Repeat a piece elsewhere (lines, ranks, labels twice).
                let a = rng.below(d.len() + 1);
                let b = (a + rng.below(40)).min(d.len());
                let piece = d[a..b].to_vec();
                let to = rng.below(d.len() + 1);
                d.splice(to..to, piece);
            }
        }
    }
    d
}

#[test]
fn random_and_mutated_inputs_never_panic_and_always_say_where() {
    let iters: usize = std::env::var("GOAL_TEXT_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20000);
    let mut rng = Rng(0x60a1_7e27);
    for seed in SEEDS {
        properties(seed.as_bytes());
        assert!(run(seed.as_bytes(), 64).0.is_valid(), "{seed}");
    }
    for i in 0..iters {
        let data = if i % 10 == 0 {
            // Token soup.
            (0..rng.below(40)).flat_map(|_| WORDS[rng.below(WORDS.len())].bytes()).collect()
        } else {
            let seed = SEEDS[rng.below(SEEDS.len())];
            mutate(&mut rng, seed.as_bytes())
        };
        properties(&data);
    }
}
