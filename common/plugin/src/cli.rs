//! Command-line pieces every provider binary shares.
//!
//! Providers define their own clap parser and `#[command(flatten)]` [`CommonArgs`] into it, so the
//! shared flags read the same everywhere. [`start`] first applies [`crate::hygiene`] (no core
//! dumps, no ptrace by peers), then parses leniently (upstream plugins tolerate the klog flags
//! kubelet configs pass), resolves [`Settings`] and starts logging; [`normalize_args`]
//! rewrites the Go-flag spellings that kubelet configs copy from klog (`-v=4`) into what clap
//! understands; a usage error is one line and exit 2.

use std::ffi::OsString;

use crate::logging::Verbosity;
use crate::runner::EXIT_USAGE;
use crate::settings::{CommonArgs, Settings};

/// Rewrites Go-flag spellings clap does not accept: `-v=N` → `--v=N`, `-v N` stays a count plus a
/// positional (as in clap), `-deadline=…` → `--deadline=…`.
pub fn normalize_args<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    args.into_iter()
        .map(Into::into)
        .map(|arg| match arg.to_str() {
            Some(s) if s.starts_with("-v=") || s.starts_with("-deadline=") => {
                OsString::from(format!("-{s}"))
            }
            _ => arg,
        })
        .collect()
}

/// Parses `args` with `T`, dropping flags `T` does not know instead of failing, as upstream
/// plugins tolerate klog flags that kubelet configs pass. Returns the dropped arguments so the
/// caller can warn about them once logging is up. `--help`, `--version` and bad values of known
/// flags still end the process as clap does.
pub fn parse_lenient<T: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
) -> (T, Vec<String>) {
    let mut args = normalize_args(args);
    let mut dropped = Vec::new();
    loop {
        match T::try_parse_from(&args) {
            Ok(parsed) => return (parsed, dropped),
            Err(e) if e.kind() == clap::error::ErrorKind::UnknownArgument => {
                let Some(clap::error::ContextValue::String(flag)) =
                    e.get(clap::error::ContextKind::InvalidArg)
                else {
                    exit_on(e);
                };
                let flag = flag.split('=').next().unwrap_or(flag).to_owned();
                // Skip argv[0]; drop the first argument spelled as the flag (with or without `=value`).
                // A Go-style single-dash long flag (`-logtostderr`) reaches clap as the short `-l`.
                let short = flag.len() == 2 && !flag.starts_with("--");
                let Some(index) = args.iter().skip(1).position(|a| {
                    a.to_str().is_some_and(|a| {
                        a == flag
                            || a.starts_with(&format!("{flag}="))
                            || (short && a.starts_with(&flag) && !a.starts_with("--"))
                    })
                }) else {
                    exit_on(e);
                };
                dropped.push(args.remove(index + 1).to_string_lossy().into_owned());
            }
            Err(e) => exit_on(e),
        }
    }
}

/// Ends the process on a clap outcome: `--help` and `--version` print as clap does; a usage
/// error (a bad flag value, a missing required flag) becomes one line on stderr and exit 2 like
/// every other failure, because the kubelet appends stderr verbatim to its log and clap's own
/// form spans several lines.
fn exit_on(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    crate::logging::init(Verbosity::DEFAULT);
    tracing::error!("{}", one_line_usage_error(&e.render().to_string()));
    std::process::exit(i32::from(EXIT_USAGE));
}

/// clap's error text as one line: what is wrong, pointing at `--help`.
fn one_line_usage_error(rendered: &str) -> String {
    // "error: <what>\n[details]\n\nUsage: …\n\nFor more information, try '--help'.\n"
    let what = rendered.split("\n\n").next().unwrap_or(rendered).trim();
    let what = what.strip_prefix("error: ").unwrap_or(what);
    let what = if what.is_empty() {
        "invalid command line"
    } else {
        what
    };
    format!("{} (see --help)", crate::logging::one_line(what))
}

/// What every provider's `main` does first: make the process non-dumpable with no core file
/// ([`crate::hygiene::apply`], before anything secret is read; a failure is one debug line, never
/// fatal), parse `args` leniently (see [`parse_lenient`]), resolve the shared [`Settings`], start
/// logging at the level they ask for, and warn once per ignored argument. A bad setting ends the
/// process here with one line and [`EXIT_USAGE`], before any request is read. `positionals`
/// returns the parser's free arguments; `get-credentials` (upstream's subcommand) among them is
/// expected and not warned about.
pub fn start<T: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
    common: fn(&T) -> &CommonArgs,
    positionals: fn(&T) -> &[String],
) -> (T, Settings) {
    let hygiene = crate::hygiene::apply();
    let (cli, unknown) = parse_lenient::<T>(args);
    let settings = match Settings::resolve(common(&cli)) {
        Ok(settings) => settings,
        Err(e) => {
            crate::logging::init(Verbosity::DEFAULT);
            tracing::error!("{}", crate::logging::one_line(&e));
            std::process::exit(i32::from(EXIT_USAGE));
        }
    };
    crate::logging::init(settings.verbosity);
    if let Err(e) = hygiene {
        tracing::debug!("{e}");
    }
    let ignored = positionals(&cli)
        .iter()
        .filter(|a| a.as_str() != "get-credentials");
    for arg in unknown.iter().chain(ignored) {
        tracing::warn!("ignoring unknown argument {arg:?}");
    }
    (cli, settings)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;
    use kcp_kubelet::duration::GoDuration;

    /// A provider's command line at its smallest: the shared flags and free arguments.
    #[derive(Debug, Parser)]
    pub(crate) struct Cli {
        #[command(flatten)]
        pub(crate) common: CommonArgs,
        pub(crate) rest: Vec<String>,
    }

    #[test]
    fn lenient_parsing_drops_unknown_flags_and_keeps_known_ones() {
        let args = [
            "p",
            "get-credentials",
            "--logtostderr",
            "--v=4",
            "-alsologtostderr=true",
            "--deadline",
            "3s",
        ];
        let (cli, dropped) = parse_lenient::<Cli>(args.iter().map(OsString::from));
        assert_eq!(
            dropped,
            vec![
                "--logtostderr".to_owned(),
                "-alsologtostderr=true".to_owned()
            ]
        );
        assert_eq!(cli.rest, vec!["get-credentials".to_owned()]);
        assert_eq!(cli.common.v, Some(4));
        assert_eq!(cli.common.deadline, Some(GoDuration::from_secs(3)));
    }

    #[test]
    fn usage_errors_are_one_line() {
        let e = Cli::try_parse_from(["p", "--deadline=soon"]).unwrap_err();
        let line = one_line_usage_error(&e.render().to_string());
        assert!(
            line.starts_with("invalid value 'soon' for '--deadline <DURATION>'"),
            "{line}"
        );
        assert!(
            line.ends_with("(see --help)") && !line.contains('\n'),
            "{line}"
        );
        assert_eq!(
            one_line_usage_error(""),
            "invalid command line (see --help)"
        );
    }
}
