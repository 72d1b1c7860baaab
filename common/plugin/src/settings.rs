//! The shared flags ([`CommonArgs`]) and their environment variables, resolved once into one
//! [`Settings`] value.
//!
//! Every provider follows the same lifecycle: parse the command line, resolve [`Settings`] (and the
//! provider's own configuration), and only then read the request from stdin. A bad value anywhere
//! is a usage error (exit 2, one line) before any request is read, and nothing later reads the
//! environment for these settings again. Flags win over the environment; an empty variable counts
//! as unset.

use std::path::PathBuf;
use std::time::Duration;

use kcp_kubelet::duration::GoDuration;

use crate::cache_hint::{DEFAULT_JITTER_PERCENT, JITTER_ENV};
use crate::deadline::{DEADLINE_ENV, DEFAULT_DEADLINE};
use crate::logging::Verbosity;
use crate::metrics::{self, MetricsFile};
use crate::token_cache::{self, SharedIdentity, TokenCache};

/// Flags shared by every provider.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommonArgs {
    /// More log output on stderr; repeat for more (-vvvv = debug); -v N is --v=N.
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
    /// [default dir: /var/lib/kubelet-credential-provider/token-cache; on Windows
    /// C:\ProgramData\kubelet-credential-provider\token-cache].
    #[arg(long, value_name = "BOOL", value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", global = true)]
    pub token_cache: Option<bool>,

    /// Directory of the token cache; setting it turns the cache on (also
    /// CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR).
    #[arg(long, value_name = "DIR", global = true)]
    pub token_cache_dir: Option<PathBuf>,

    /// Fleet mode: this node shares its cloud identity with the nodes named NAME, so registry
    /// tokens published for NAME by the token controller answer its requests; turns the cache on
    /// (also CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY) [default: off].
    #[arg(long, value_name = "NAME", global = true)]
    pub token_cache_shared_identity: Option<String>,

    /// Lower cacheDuration by a random 0..PERCENT %, so nodes that started together do not all
    /// refresh together; 0 turns it off (also CREDENTIAL_PROVIDER_CACHE_JITTER) [default: 10].
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100), global = true)]
    pub cache_jitter: Option<u8>,

    /// Add each exec's outcome to this Prometheus text file, for node-exporter's textfile
    /// collector (also CREDENTIAL_PROVIDER_METRICS_FILE) [default: off].
    #[arg(long, value_name = "PATH", global = true)]
    pub metrics_file: Option<PathBuf>,
}

/// Parses a Go duration string for clap.
pub fn parse_go_duration(text: &str) -> Result<GoDuration, String> {
    GoDuration::parse(text).map_err(|e| e.to_string())
}

/// What one run takes from the shared flags and the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The log level.
    pub verbosity: Verbosity,
    /// The overall deadline of the run.
    pub deadline: Duration,
    /// Fleet jitter percentage for `cacheDuration` (0 = off).
    pub cache_jitter: u8,
    /// The on-disk token cache, when turned on.
    pub token_cache: Option<TokenCache>,
    /// The metrics file, when one is named (its provider label is set by [`crate::cli::start`]).
    pub metrics: Option<MetricsFile>,
    /// [`token_cache::PRINT_KEY_ENV`] is set: print the request's cache key instead of answering.
    pub print_cache_key: bool,
}

impl Settings {
    /// Resolves every shared setting from `args`, falling back to the environment.
    pub fn resolve(args: &CommonArgs) -> Result<Settings, String> {
        let verbosity = verbosity(args)?;
        let deadline = deadline(args)?;
        let cache_jitter = cache_jitter(args)?;
        let token_cache = token_cache(args, cache_jitter)?;
        let metrics = args
            .metrics_file
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .or_else(|| env_text(metrics::FILE_ENV).map(PathBuf::from))
            .map(MetricsFile::new);
        let print_cache_key = match env_text(token_cache::PRINT_KEY_ENV).as_deref() {
            None | Some("false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => {
                return Err(format!(
                    "{}: {other:?} is not true or false",
                    token_cache::PRINT_KEY_ENV
                ));
            }
        };
        Ok(Settings {
            verbosity,
            deadline,
            cache_jitter,
            token_cache,
            metrics,
            print_cache_key,
        })
    }
}

/// The log level from the flags, falling back to the environment.
fn verbosity(args: &CommonArgs) -> Result<Verbosity, String> {
    let from_args = match (args.v, args.verbose) {
        (Some(n), _) => Some(Verbosity::from_klog(n)),
        (None, 0) => None,
        (None, count) => Some(Verbosity::from_klog(u32::from(count))),
    };
    Verbosity::resolve(from_args)
}

/// The overall deadline from the flag, else [`DEADLINE_ENV`], else [`DEFAULT_DEADLINE`].
fn deadline(args: &CommonArgs) -> Result<Duration, String> {
    let chosen = match args.deadline {
        Some(d) => d,
        None => match env_text(DEADLINE_ENV) {
            Some(text) => GoDuration::parse(&text).map_err(|e| format!("{DEADLINE_ENV}: {e}"))?,
            None => return Ok(DEFAULT_DEADLINE),
        },
    };
    chosen
        .to_std()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("deadline must be positive, got {chosen}"))
}

/// The fleet-jitter percentage from the flag, else [`JITTER_ENV`], else the default.
fn cache_jitter(args: &CommonArgs) -> Result<u8, String> {
    if let Some(percent) = args.cache_jitter {
        return Ok(percent);
    }
    match env_text(JITTER_ENV) {
        None => Ok(DEFAULT_JITTER_PERCENT),
        Some(text) => text
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| format!("{JITTER_ENV}: {text:?} is not a percentage from 0 to 100")),
    }
}

/// The token cache, when the flags or the environment turn it on; setting a directory turns it on.
fn token_cache(args: &CommonArgs, jitter: u8) -> Result<Option<TokenCache>, String> {
    let on = match args.token_cache {
        Some(on) => Some(on),
        None => match env_text(token_cache::ENABLE_ENV) {
            Some(text) => Some(parse_bool(token_cache::ENABLE_ENV, &text)?),
            None => None,
        },
    };
    let dir = args
        .token_cache_dir
        .clone()
        .or_else(|| env_text(token_cache::DIR_ENV).map(PathBuf::from));
    let shared = match args
        .token_cache_shared_identity
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or_else(|| env_text(token_cache::SHARED_IDENTITY_ENV))
    {
        Some(name) => Some(SharedIdentity::parse(&name)?),
        None => None,
    };
    if shared.is_some() && on == Some(false) {
        return Err(
            "a shared identity (--token-cache-shared-identity) needs the token cache, which is turned off"
                .into(),
        );
    }
    let on = on.unwrap_or(dir.is_some() || shared.is_some());
    Ok(on.then(|| {
        TokenCache::new(dir.unwrap_or_else(|| PathBuf::from(token_cache::DEFAULT_DIR)))
            .with_refresh_jitter(jitter)
            .with_shared_identity(shared)
    }))
}

/// A variable's trimmed value; unset and empty are the same.
fn env_text(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The variable `name`'s `text` as `true`/`false` and the usual spellings of them, as clap's
/// boolish parser reads flags.
fn parse_bool(name: &str, text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" | "on" => Ok(true),
        "false" | "0" | "no" | "n" | "off" => Ok(false),
        _ => Err(format!("{name}: {text:?} is not a boolean (true/false)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::{Cli, parse_args};
    use tracing::level_filters::LevelFilter;

    fn parse(args: &[&str]) -> Cli {
        parse_args(args).unwrap()
    }

    #[test]
    fn reads_klog_and_counted_verbosity() {
        let level = |args: &[&str]| verbosity(&parse(args).common).unwrap().level();
        assert_eq!(level(&["--v=4"]), LevelFilter::DEBUG);
        assert_eq!(level(&["-v=2"]), LevelFilter::INFO);
        assert_eq!(level(&["--v", "6"]), LevelFilter::TRACE);
        assert_eq!(level(&["-v", "4", "get-credentials"]), LevelFilter::DEBUG);
        assert_eq!(level(&["-v4"]), LevelFilter::DEBUG);
        assert_eq!(level(&["-vvvv"]), LevelFilter::DEBUG);
        assert_eq!(level(&["-v"]), LevelFilter::INFO);
        assert_eq!(level(&["-v", "get-credentials"]), LevelFilter::INFO);
    }

    #[test]
    fn reads_the_deadline_as_a_go_duration() {
        assert_eq!(
            deadline(&parse(&["--deadline=1m30s"]).common).unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            deadline(&parse(&["-deadline=2s"]).common).unwrap(),
            Duration::from_secs(2)
        );
        assert!(parse_args(&["--deadline=soon"]).is_err());
        assert!(deadline(&parse(&["--deadline=0s"]).common).is_err());
        assert_eq!(
            parse(&["get-credentials"]).rest,
            vec!["get-credentials".to_owned()]
        );
    }

    #[test]
    fn a_shared_identity_turns_the_cache_on_and_is_checked() {
        let resolve = |args: &[&str]| Settings::resolve(&parse(args).common);
        let s = resolve(&["--token-cache-shared-identity=nodes"]).unwrap();
        let cache = s.token_cache.unwrap();
        assert_eq!(cache.shared_identity().map(|s| s.name()), Some("nodes"));
        assert_eq!(cache.dir(), std::path::Path::new(token_cache::DEFAULT_DIR));
        let err = resolve(&["--token-cache-shared-identity=Nodes"]).unwrap_err();
        assert!(err.contains("\"Nodes\" is not a name"), "{err}");
        let err =
            resolve(&["--token-cache=false", "--token-cache-shared-identity=nodes"]).unwrap_err();
        assert!(err.contains("needs the token cache"), "{err}");
        let s = resolve(&["--token-cache-dir=/tmp/x"]).unwrap();
        assert!(s.token_cache.unwrap().shared_identity().is_none());
    }

    #[test]
    fn flags_set_jitter_and_the_token_cache() {
        let s = Settings::resolve(
            &parse(&[
                "--cache-jitter=0",
                "--token-cache-dir=/tmp/x",
                "--deadline=3s",
            ])
            .common,
        )
        .unwrap();
        assert_eq!(s.cache_jitter, 0);
        assert_eq!(s.deadline, Duration::from_secs(3));
        assert!(s.token_cache.is_some());
        let s = Settings::resolve(
            &parse(&[
                "--token-cache=false",
                "--token-cache-dir=/tmp/x",
                "--cache-jitter=7",
            ])
            .common,
        )
        .unwrap();
        assert!(s.token_cache.is_none());
        assert_eq!(s.cache_jitter, 7);
        assert!(s.metrics.is_none());
    }

    #[test]
    fn the_flag_names_the_metrics_file() {
        let s = Settings::resolve(&parse(&["--metrics-file=/tmp/m.prom"]).common).unwrap();
        assert_eq!(
            s.metrics.as_ref().map(|m| m.path().to_path_buf()),
            Some(PathBuf::from("/tmp/m.prom"))
        );
    }
}
