//! goalrun's arguments as given: the first of two parsing stages.
//!
//! This stage only sorts the command line into options and the program with
//! its arguments, keeping every value as text. It knows the spelling of each
//! option and nothing of what values mean; [`super::hiargs`] validates them.
//! Options end at `--` or at the first argument that is not an option: the
//! rest is the program and its own arguments, passed through untouched, so
//! `goalrun -n 2 prog -n 5` gives `-n 5` to `prog`.

use std::ffi::OsString;

/// The command line, sorted but not interpreted.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LowArgs {
    /// `-n`/`--np`: number of ranks, as text.
    pub np: Option<String>,
    /// `--progress`: the progress mode, as text.
    pub progress: Option<String>,
    /// `--timeout`: seconds, as text.
    pub timeout: Option<String>,
    /// `--bind-to`: what each rank is bound to, as text.
    pub bind_to: Option<String>,
    /// `--map-by`: the order ranks take the cores in, as text.
    pub map_by: Option<String>,
    /// `--report-bindings`.
    pub report_bindings: bool,
    /// `--tag-output`/`-l`.
    pub tag_output: bool,
    /// `-h`/`--help`.
    pub help: bool,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// A command line that cannot be sorted: an unknown option or a missing value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ParseError(pub String);

/// Options that take a value, by every spelling.
fn takes_value(name: &str) -> Option<&'static str> {
    match name {
        "-n" | "--np" => Some("np"),
        "--progress" => Some("progress"),
        "--timeout" => Some("timeout"),
        "--bind-to" => Some("bind-to"),
        "--map-by" => Some("map-by"),
        _ => None,
    }
}

impl LowArgs {
    /// Sorts `args` (without the program name).
    pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<LowArgs, ParseError> {
        let mut low = LowArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let Some(text) = arg.to_str().filter(|t| t.starts_with('-') && t.len() > 1) else {
                // Not an option (or not UTF-8, which no option is): the program.
                low.command.push(arg);
                break;
            };
            if text == "--" {
                break;
            }
            // --name=value, -nVALUE, or a name whose value is the next argument.
            let (name, inline) = if let Some(long) = text.strip_prefix("--") {
                match long.split_once('=') {
                    Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                    None => (text.to_owned(), None),
                }
            } else if text.len() > 2 && text.starts_with("-n") {
                (
                    "-n".to_owned(),
                    Some(text[2..].trim_start_matches('=').to_owned()),
                )
            } else {
                (text.to_owned(), None)
            };
            if let Some(key) = takes_value(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => match args.next().map(OsString::into_string) {
                        Some(Ok(v)) => v,
                        Some(Err(v)) => {
                            return Err(ParseError(format!(
                                "value '{}' of option '{name}' is not valid UTF-8",
                                v.to_string_lossy()
                            )))
                        }
                        None => return Err(ParseError(format!("option '{name}' needs a value"))),
                    },
                };
                let slot = match key {
                    "np" => &mut low.np,
                    "progress" => &mut low.progress,
                    "bind-to" => &mut low.bind_to,
                    "map-by" => &mut low.map_by,
                    _ => &mut low.timeout,
                };
                *slot = Some(value);
                continue;
            }
            if inline.is_some() {
                return Err(ParseError(format!("option '{name}' takes no value")));
            }
            match name.as_str() {
                "-l" | "--tag-output" => low.tag_output = true,
                "--report-bindings" => low.report_bindings = true,
                "-h" | "--help" => low.help = true,
                _ => return Err(ParseError(format!("unknown option '{text}'"))),
            }
        }
        low.command.extend(args);
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
    fn every_spelling_of_the_options() {
        for args in [
            &["-n", "4", "prog"][..],
            &["-n4", "prog"],
            &["-n=4", "prog"],
            &["--np", "4", "prog"],
            &["--np=4", "prog"],
        ] {
            let low = parse(args).unwrap();
            assert_eq!(low.np.as_deref(), Some("4"), "{args:?}");
            assert_eq!(low.command, vec![OsString::from("prog")]);
        }
        let low = parse(&["-l", "--progress=spin", "--timeout", "2.5", "--", "-x"]).unwrap();
        assert!(low.tag_output);
        assert_eq!(low.progress.as_deref(), Some("spin"));
        assert_eq!(low.timeout.as_deref(), Some("2.5"));
        assert_eq!(low.command, vec![OsString::from("-x")]);
        let low = parse(&["--bind-to", "none", "--map-by=socket", "--report-bindings", "p"]).unwrap();
        assert_eq!((low.bind_to.as_deref(), low.map_by.as_deref()), (Some("none"), Some("socket")));
        assert!(low.report_bindings);
    }

    #[test]
    fn options_after_the_program_belong_to_the_program() {
        let low = parse(&["-n", "2", "prog", "-n", "5", "--help"]).unwrap();
        assert_eq!(low.np.as_deref(), Some("2"));
        assert!(!low.help);
        assert_eq!(low.command.len(), 4);
    }

    #[test]
    fn unknown_options_and_missing_values_are_errors() {
        assert_eq!(
            parse(&["--bogus"]).unwrap_err().0,
            "unknown option '--bogus'"
        );
        assert_eq!(parse(&["-n"]).unwrap_err().0, "option '-n' needs a value");
        assert_eq!(
            parse(&["--tag-output=yes"]).unwrap_err().0,
            "option '--tag-output' takes no value"
        );
    }
}
