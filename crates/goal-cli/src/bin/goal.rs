//! `goal SUBCOMMAND [ARGS...]`: the one entry for goal's tools. The logic is
//! [`goal_cli::tool`]; this file only exits with the status it returns.

fn main() {
    std::process::exit(goal_cli::tool::main(std::env::args_os().skip(1)));
}
