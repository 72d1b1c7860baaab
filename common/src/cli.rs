//! Command-line pieces every provider binary shares.
//!
//! Providers define their own clap parser and `#[command(flatten)]` [`CommonArgs`] into it, so the
//! verbosity and deadline flags read the same everywhere. [`normalize_args`] rewrites the Go-flag
//! spellings that kubelet configs copy from klog (`-v=4`) into what clap understands. The token
//! cache and jitter flags live here too, so every provider offers them under the same names.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::cache_hint;
use crate::deadline::{DEADLINE_ENV, DEFAULT_DEADLINE};
use crate::duration::GoDuration;
use crate::logging::Verbosity;
use crate::token_cache::{self, TokenCache};

/// Flags shared by every provider.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// More log output on stderr; repeat for more (-vvvv = debug).
    #[arg(short = 'v', action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// klog-style log level: 0 warnings, 2 info, 4 debug, 6 trace (also CREDENTIAL_PROVIDER_VERBOSITY).
    #[arg(long = "v", value_name = "N", global = true)]
    pub v: Option<u32>,

    /// Overall time limit for one run, a Go duration; the kubelet kills plugins at 60s
    /// (also CREDENTIAL_PROVIDER_DEADLINE) [default: 45s].
    #[arg(long, value_name = "DURATION", value_parser = parse_go_duration, global = true)]
    pub deadline: Option<GoDuration>,

    /// Keep registry tokens on disk so concurrent and later execs (and restarted kubelets) reuse
    /// one upstream token (also CREDENTIAL_PROVIDER_TOKEN_CACHE)
    /// [default dir: /var/lib/kubelet-credential-provider/token-cache].
    #[arg(long, value_name = "BOOL", value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", global = true)]
    pub token_cache: Option<bool>,

    /// Directory of the token cache; setting it turns the cache on (also
    /// CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR).
    #[arg(long, value_name = "DIR", global = true)]
    pub token_cache_dir: Option<PathBuf>,

    /// Lower cacheDuration by a random 0..PERCENT %, so nodes that started together do not all
    /// refresh together; 0 turns it off (also CREDENTIAL_PROVIDER_CACHE_JITTER) [default: 10].
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100), global = true)]
    pub cache_jitter: Option<u8>,
}

/// What [`crate::runner::run`] takes from the shared flags and environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    /// The overall deadline of one run.
    pub deadline: Duration,
    /// Fleet jitter percentage for `cacheDuration`.
    pub jitter: u8,
}

impl CommonArgs {
    /// The log level from the flags, falling back to the environment.
    pub fn verbosity(&self) -> Result<Verbosity, String> {
        let from_args = match (self.v, self.verbose) {
            (Some(n), _) => Some(Verbosity::from_klog(n)),
            (None, 0) => None,
            (None, count) => Some(Verbosity::from_klog(u32::from(count))),
        };
        Verbosity::resolve(from_args)
    }

    /// The token cache, when the flags or the environment turn it on. Flags win over the
    /// environment; an empty variable counts as unset.
    pub fn token_cache(&self) -> Result<Option<TokenCache>, String> {
        let on = match self.token_cache {
            Some(on) => Some(on),
            None => match env_text(token_cache::ENABLE_ENV) {
                Some(text) => Some(parse_bool(&text).ok_or_else(|| {
                    format!(
                        "{}: {text:?} is not a boolean (true/false)",
                        token_cache::ENABLE_ENV
                    )
                })?),
                None => None,
            },
        };
        let dir = self
            .token_cache_dir
            .clone()
            .or_else(|| env_text(token_cache::DIR_ENV).map(PathBuf::from));
        let on = on.unwrap_or(dir.is_some());
        let jitter = self.cache_jitter()?;
        Ok(on.then(|| {
            TokenCache::new(dir.unwrap_or_else(|| PathBuf::from(token_cache::DEFAULT_DIR)))
                .with_refresh_jitter(jitter)
        }))
    }

    /// The fleet-jitter percentage from the flag, else the environment, else the default.
    pub fn cache_jitter(&self) -> Result<u8, String> {
        if let Some(percent) = self.cache_jitter {
            return Ok(percent);
        }
        match env_text(cache_hint::JITTER_ENV) {
            None => Ok(cache_hint::DEFAULT_JITTER_PERCENT),
            Some(text) => text
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| {
                    format!(
                        "{}: {text:?} is not a percentage from 0 to 100",
                        cache_hint::JITTER_ENV
                    )
                }),
        }
    }

    /// The settings the runner needs, each read once from flags and environment. A bad token
    /// cache setting fails here too, so it is a usage error before any request is read.
    pub fn run_settings(&self) -> Result<RunSettings, String> {
        let deadline = self.deadline()?;
        let jitter = self.cache_jitter()?;
        self.token_cache()?;
        Ok(RunSettings { deadline, jitter })
    }

    /// The overall deadline from the flag, else [`DEADLINE_ENV`], else [`DEFAULT_DEADLINE`].
    pub fn deadline(&self) -> Result<Duration, String> {
        let chosen = match self.deadline {
            Some(d) => d,
            None => match std::env::var(DEADLINE_ENV) {
                Ok(text) if !text.trim().is_empty() => {
                    parse_go_duration(text.trim()).map_err(|e| format!("{DEADLINE_ENV}: {e}"))?
                }
                _ => return Ok(DEFAULT_DEADLINE),
            },
        };
        chosen
            .to_std()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("deadline must be positive, got {chosen}"))
    }
}

/// A variable's trimmed value; unset and empty are the same.
fn env_text(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `true`/`false` and the usual spellings of them, as clap's boolish parser reads flags.
fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" | "on" => Some(true),
        "false" | "0" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

/// Parses a Go duration string for clap.
pub fn parse_go_duration(text: &str) -> Result<GoDuration, String> {
    GoDuration::parse(text).map_err(|e| e.to_string())
}

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
    std::process::exit(i32::from(crate::runner::EXIT_USAGE));
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

/// What every provider's `main` does first: parse `args` leniently (see [`parse_lenient`]), start
/// logging at the level they ask for, and warn once per ignored argument. `positionals` returns
/// the parser's free arguments; `get-credentials` (upstream's subcommand) among them is expected
/// and not warned about.
pub fn start<T: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
    common: fn(&T) -> &CommonArgs,
    positionals: fn(&T) -> &[String],
) -> T {
    let (cli, unknown) = parse_lenient::<T>(args);
    crate::logging::init(common(&cli).verbosity().unwrap_or(Verbosity::DEFAULT));
    let ignored = positionals(&cli)
        .iter()
        .filter(|a| a.as_str() != "get-credentials");
    for arg in unknown.iter().chain(ignored) {
        tracing::warn!("ignoring unknown argument {arg:?}");
    }
    cli
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
        rest: Vec<String>,
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(normalize_args(
            std::iter::once("p").chain(args.iter().copied()),
        ))
        .unwrap()
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
        assert_eq!(cli.common.deadline().unwrap(), Duration::from_secs(3));
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

    #[test]
    fn reads_klog_and_counted_verbosity() {
        use tracing::level_filters::LevelFilter;
        assert_eq!(
            parse(&["--v=4"]).common.verbosity().unwrap().level(),
            LevelFilter::DEBUG
        );
        assert_eq!(
            parse(&["-v=2"]).common.verbosity().unwrap().level(),
            LevelFilter::INFO
        );
        assert_eq!(
            parse(&["--v", "6"]).common.verbosity().unwrap().level(),
            LevelFilter::TRACE
        );
        assert_eq!(
            parse(&["-vvvv"]).common.verbosity().unwrap().level(),
            LevelFilter::DEBUG
        );
        assert_eq!(
            parse(&["-v"]).common.verbosity().unwrap().level(),
            LevelFilter::INFO
        );
    }

    #[test]
    fn reads_the_deadline_as_a_go_duration() {
        assert_eq!(
            parse(&["--deadline=1m30s"]).common.deadline().unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse(&["-deadline=2s"]).common.deadline().unwrap(),
            Duration::from_secs(2)
        );
        assert!(Cli::try_parse_from(["p", "--deadline=soon"]).is_err());
        assert!(parse(&["--deadline=0s"]).common.deadline().is_err());
        assert_eq!(
            parse(&["get-credentials"]).rest,
            vec!["get-credentials".to_owned()]
        );
    }
}
