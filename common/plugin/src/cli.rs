//! Command-line pieces every provider binary shares.
//!
//! Providers define their own clap parser and `#[command(flatten)]` [`CommonArgs`] into it, so the
//! shared flags read the same everywhere. [`start`] first applies [`crate::hygiene`] (no core
//! dumps, no ptrace by peers), then [`parse`]s the command line strictly, resolves [`Settings`]
//! and starts logging; any problem is one line and exit 2, before the request is read.
//!
//! Parsing follows upstream's pflag (see [`kcp_provider_args::flags`]): a flag that is neither the
//! provider's own (whatever its clap parser knows) nor one of the klog flags its upstream
//! registers is refused, naming the closest known flag, because a typo such as `--strict-host`
//! must not silently turn a safety check off. Go's spellings (`-name=value`, `--name value`,
//! `-v 4`) are rewritten into one clap reads unambiguously, booleans never take the next word,
//! and klog flags are dropped before clap sees them.

use std::ffi::OsString;

use kcp_provider_args::flags::{self, Flag, Kind, ProviderFlags};

use crate::logging::Verbosity;
use crate::runner::EXIT_USAGE;
use crate::settings::{CommonArgs, Settings};

/// Every flag `T`'s clap parser knows (aliases and clap's help and version included), in the
/// form of [`kcp_provider_args::flags`]: what the binary accepts besides its upstream's klog flags.
/// A value flag whose value may be left out (`num_args = 0..=1`) is a Go boolean.
pub fn flags_of<T: clap::CommandFactory>() -> Vec<Flag> {
    use clap::ArgAction;
    let mut command = T::command();
    command.build();
    let mut flags = Vec::new();
    for arg in command.get_arguments().filter(|a| !a.is_positional()) {
        let kind = match arg.get_action() {
            ArgAction::Count => Kind::Count,
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version => {
                Kind::Exit
            }
            ArgAction::SetTrue | ArgAction::SetFalse => Kind::Bool,
            _ if arg.get_num_args().is_some_and(|n| n.min_values() == 0) => Kind::Bool,
            _ => Kind::Value,
        };
        flags.push(Flag {
            long: arg.get_long().map(|l| l.to_owned().into()),
            short: arg.get_short(),
            kind,
        });
        for alias in arg.get_all_aliases().unwrap_or_default() {
            flags.push(Flag {
                long: Some(alias.to_owned().into()),
                short: None,
                kind,
            });
        }
        for short in arg.get_all_short_aliases().unwrap_or_default() {
            flags.push(Flag {
                long: None,
                short: Some(short),
                kind,
            });
        }
    }
    flags
}

/// Where `T`'s parser and `spec`'s table disagree: the flags only the parser knows, then those
/// only the table lists; both empty when they agree. The checker reads the tables in
/// [`kcp_provider_args::flags`] without linking the providers, so each provider's unit tests assert
/// this is empty.
pub fn table_drift<T: clap::CommandFactory>(spec: &ProviderFlags) -> (Vec<Flag>, Vec<Flag>) {
    let parser = flags_of::<T>();
    let table = spec.known();
    let mut only_parser: Vec<Flag> = parser
        .iter()
        .filter(|f| !table.contains(f))
        .cloned()
        .collect();
    let mut only_table: Vec<Flag> = table
        .iter()
        .filter(|f| !parser.contains(f))
        .cloned()
        .collect();
    only_parser.sort();
    only_table.sort();
    (only_parser, only_table)
}

/// Parses `args` (program name first) with `T` as [`kcp_provider_args::flags`] reads a command line, by
/// `spec`'s table (equal to `T`'s parser, as each provider's [`table_drift`] test proves):
/// `T`'s own flags, `spec`'s klog flags (dropped), `spec`'s positional words. A refusal is a clap
/// error of kind `UnknownArgument` or `InvalidValue` whose message is one line; `--help` and
/// `--version` come back as clap's errors for them.
pub fn parse<T: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
    spec: &ProviderFlags,
) -> Result<T, clap::Error> {
    use clap::error::ErrorKind;
    let mut args = args.into_iter();
    let program = args.next().unwrap_or_else(|| spec.binary.into());
    // The kubelet passes a config's `args`, JSON or YAML strings: always UTF-8.
    let words: Vec<String> = args
        .enumerate()
        .map(|(i, arg)| {
            arg.into_string().map_err(|_| {
                clap::Error::raw(
                    ErrorKind::InvalidUtf8,
                    format!("argument {} is not valid UTF-8", i + 1),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    // The table, not `flags_of::<T>()`: the same flags (each provider's `table_drift` test proves
    // it) without building clap's command an extra time in every exec.
    let parsed = flags::parse(&spec.known(), spec.klog, spec.binary, &words);
    if let Some(error) = parsed.errors.into_iter().next() {
        return Err(clap::Error::raw(ErrorKind::UnknownArgument, error));
    }
    // `--help` and `--version` print whatever else is there.
    if parsed.exits.is_empty() {
        spec.positionals
            .check(&parsed.positionals)
            .map_err(|e| clap::Error::raw(ErrorKind::InvalidValue, e))?;
    }
    let mut clap_args: Vec<OsString> = Vec::with_capacity(words.len() + 2);
    clap_args.push(program);
    clap_args.extend(parsed.flags.into_iter().map(OsString::from));
    if !parsed.positionals.is_empty() {
        clap_args.push("--".into());
        clap_args.extend(parsed.positionals.into_iter().map(OsString::from));
    }
    T::try_parse_from(clap_args)
}

/// Ends the process on a clap outcome: `--help` and `--version` print as clap does; a usage
/// error (an unknown flag, a bad value, a missing required flag) becomes one line on stderr and
/// exit 2 like every other failure, because the kubelet appends stderr verbatim to its log and
/// clap's own form spans several lines.
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
/// fatal), [`parse`] `args` against `T` and `spec` (the provider's table in
/// [`kcp_provider_args::flags`], for its upstream's klog flags and its positional words), resolve the
/// shared [`Settings`] and start logging at the level they ask for (they are the first debug
/// line). A refused command line or a
/// bad setting ends the process here with one line and [`EXIT_USAGE`], before any request is
/// read.
pub fn start<T: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
    spec: &ProviderFlags,
    common: fn(&T) -> &CommonArgs,
) -> (T, Settings) {
    let hygiene = crate::hygiene::apply();
    let cli = parse::<T>(args, spec).unwrap_or_else(|e| exit_on(e));
    let settings = match Settings::resolve(common(&cli)) {
        Ok(mut settings) => {
            // `ecr-credential-provider` → `ecr`: the metrics' provider label.
            let provider = spec
                .binary
                .strip_suffix("-credential-provider")
                .unwrap_or(spec.binary);
            settings.metrics = settings.metrics.map(|m| m.with_provider(provider));
            settings
        }
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
    tracing::debug!(
        deadline = ?settings.deadline,
        cache_jitter = settings.cache_jitter,
        token_cache = ?settings.token_cache.as_ref().map(|c| c.dir().display().to_string()),
        metrics_file = ?settings.metrics.as_ref().map(|m| m.path().display().to_string()),
        "settings resolved"
    );
    (cli, settings)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;
    use kcp_kubelet::duration::GoDuration;
    use kcp_provider_args::flags::Positionals;

    /// A provider's command line at its smallest: the shared flags and free arguments.
    #[derive(Debug, Parser)]
    #[command(version)]
    pub(crate) struct Cli {
        #[command(flatten)]
        pub(crate) common: CommonArgs,
        pub(crate) rest: Vec<String>,
    }

    /// [`Cli`]'s table: no flags of its own, klog's `--logtostderr`.
    pub(crate) const SPEC: ProviderFlags = ProviderFlags {
        binary: "p",
        own: &[],
        klog: &[Flag::long("logtostderr", Kind::Bool)],
        positionals: Positionals::GetCredentials,
    };

    /// `args` after the program name, parsed as a provider does; the error as its one line.
    pub(crate) fn parse_args(args: &[&str]) -> Result<Cli, String> {
        parse::<Cli>(
            std::iter::once("p")
                .chain(args.iter().copied())
                .map(OsString::from),
            &SPEC,
        )
        .map_err(|e| one_line_usage_error(&e.render().to_string()))
    }

    #[test]
    fn known_flags_parse_and_klog_flags_are_dropped() {
        let cli = parse_args(&[
            "get-credentials",
            "--logtostderr",
            "--v=4",
            "-logtostderr=true",
            "--deadline",
            "3s",
            "--token-cache",
            "get-credentials",
        ])
        .unwrap();
        assert_eq!(cli.rest, vec!["get-credentials", "get-credentials"]);
        assert_eq!(cli.common.v, Some(4));
        assert_eq!(cli.common.deadline, Some(GoDuration::from_secs(3)));
        assert_eq!(cli.common.token_cache, Some(true));
    }

    #[test]
    fn unknown_flags_and_stray_words_are_refused_in_one_line() {
        assert_eq!(
            parse_args(&["--deadlin=3s"]).unwrap_err(),
            "unknown flag --deadlin (did you mean --deadline?) (see --help)"
        );
        assert_eq!(
            parse_args(&["get-credentials", "--token-cache", "false"]).unwrap_err(),
            "unexpected argument \"false\" after --token-cache: a boolean flag takes its value as --token-cache=false (see --help)"
        );
        assert_eq!(
            parse_args(&["get-credentials", "now"]).unwrap_err(),
            "unexpected argument \"now\": this provider takes no arguments but get-credentials (see --help)"
        );
        assert_eq!(
            parse::<Cli>(
                [
                    OsString::from("p"),
                    OsString::from("x"),
                    invalid_utf8_argument()
                ],
                &SPEC
            )
            .map_err(|e| one_line_usage_error(&e.render().to_string()))
            .unwrap_err(),
            "argument 2 is not valid UTF-8 (see --help)"
        );
    }

    #[cfg(unix)]
    fn invalid_utf8_argument() -> OsString {
        use std::os::unix::ffi::OsStringExt;
        OsString::from_vec(b"--x=\xff".to_vec())
    }

    #[cfg(windows)]
    fn invalid_utf8_argument() -> OsString {
        use std::os::windows::ffi::OsStringExt;
        OsString::from_wide(&[0xD800])
    }

    #[test]
    fn the_parser_knows_the_shared_flags() {
        assert_eq!(table_drift::<Cli>(&SPEC), (vec![], vec![]));
        const EXTRA: &[Flag] = &[Flag::long("extra", Kind::Value)];
        let missing = ProviderFlags { own: EXTRA, ..SPEC };
        assert_eq!(
            table_drift::<Cli>(&missing),
            (vec![], vec![Flag::long("extra", Kind::Value)])
        );
    }

    #[test]
    fn usage_errors_are_one_line() {
        let line = parse_args(&["--deadline=soon"]).unwrap_err();
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
