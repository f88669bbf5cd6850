//! goal's command line as given: the first of two parsing stages.
//!
//! This stage sorts goal's own options (`--help`, `--version`) from the
//! subcommand and its arguments, and looks no further: the first argument
//! that is not an option (or the one after `--`) is the subcommand, and
//! everything after it is the subcommand's, untouched, to parse as it
//! likes (the second stage, one per subcommand). So `goal bench p2p --help`
//! asks the benchmark for its help, and `goal --help bench` asks goal.

use std::ffi::OsString;

/// The command line, sorted but not interpreted.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LowArgs {
    /// `-h`/`--help`.
    pub help: bool,
    /// `-V`/`--version`.
    pub version: bool,
    /// The subcommand's name, as given.
    pub subcommand: Option<OsString>,
    /// Everything after the subcommand.
    pub args: Vec<OsString>,
}

/// A command line that cannot be sorted: an option goal does not know.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ParseError(pub String);

impl LowArgs {
    /// Sorts `args` (without the program name).
    pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<LowArgs, ParseError> {
        let mut low = LowArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.to_str() {
                Some("--") => {
                    low.subcommand = args.next();
                    break;
                }
                Some("-h" | "--help") => low.help = true,
                Some("-V" | "--version") => low.version = true,
                Some(text) if text.starts_with('-') && text.len() > 1 => {
                    return Err(ParseError(format!("unknown option '{text}'")))
                }
                _ => {
                    low.subcommand = Some(arg);
                    break;
                }
            }
        }
        low.args.extend(args);
        Ok(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<LowArgs, ParseError> {
        LowArgs::parse(args.iter().map(OsString::from))
    }

    #[test]
    fn options_before_the_subcommand_are_goals() {
        let low = parse(&["--help", "bench", "p2p"]).unwrap();
        assert!(low.help);
        assert_eq!(low.subcommand.as_deref(), Some("bench".as_ref()));
        assert_eq!(low.args, ["p2p"]);
        assert!(parse(&["-V"]).unwrap().version);
        let low = parse(&["--", "-odd"]).unwrap();
        assert_eq!(low.subcommand.as_deref(), Some("-odd".as_ref()));
    }

    #[test]
    fn arguments_after_the_subcommand_are_its_own() {
        let low = parse(&["bench", "p2p", "--help", "--version", "--bogus"]).unwrap();
        assert!(!low.help && !low.version);
        assert_eq!(low.args, ["p2p", "--help", "--version", "--bogus"]);
    }

    #[test]
    fn an_unknown_option_is_an_error() {
        assert_eq!(
            parse(&["--bogus", "bench"]).unwrap_err().0,
            "unknown option '--bogus'"
        );
    }
}
