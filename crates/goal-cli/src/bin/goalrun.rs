//! `goalrun -n N [OPTIONS] [--] PROGRAM [ARGS...]`: the one-machine launcher.
//! The design is described in `src/launch/mod.rs`; this file only exits with
//! the status it returns, after all its cleanup has run.

#[path = "../launch/mod.rs"]
mod launch;

fn main() {
    std::process::exit(launch::main(std::env::args_os().skip(1)));
}
