//! Leveled, one-line logs on stderr.
//!
//! stdout belongs to the protocol, so every log line goes to stderr. The kubelet drops a plugin's
//! stderr on success and appends it verbatim to its own error on failure, so by default only our
//! own warnings and errors are printed: a failure then reads as one clear line in the kubelet log.
//! `-v` / `--v=N` (klog style) or [`VERBOSITY_ENV`] raise the level for debugging by hand.
//!
//! **Whose events.** Only this project's crates log at the default level and at `--v=1` to `5`
//! ([`is_ours`]): a dependency's events appear from `--v=6` (trace) on. The SDKs we build on log
//! their own view of a failure, often at ERROR and once per retry (the AWS SDK's "unable to mark
//! the connection for closure"), and our error line already names the cause; letting them through
//! would turn one line into several in the kubelet's log. This is an allow-list, not a list of
//! noisy crates to silence: a new dependency stays quiet without anyone noticing it. "Ours" is a
//! naming rule rather than a list of names, so a new provider cannot lose its own warnings by
//! being left out of one: a crate is ours when its name starts with `kcp_` or
//! `credential_provider_`, or ends with `_credential_provider`. A unit test reads the workspace manifest and fails for any crate that
//! logs through this module and does not follow the rule.
//!
//! **Bodies.** Even at `--v=6` nothing prints a request or response body: the crates that log
//! bodies at TRACE ([`BODY_LOGGING_CRATES`]) stop at DEBUG, and the events of aws-config that
//! embed a raw response are never shown ([`RAW_RESPONSE_CRATES`]).
//!
//! From `--v=1` on every line names the module that logged it, which is what a reader of a
//! verbose log needs to tell our events from a dependency's.

use std::str::FromStr;

use tracing::level_filters::LevelFilter;

/// Environment variable for the log level: a klog number (`0`–`10`) or `error`, `warn`, `info`,
/// `debug`, `trace`, `off`.
pub const VERBOSITY_ENV: &str = "CREDENTIAL_PROVIDER_VERBOSITY";

/// How much to log, in klog's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verbosity(LevelFilter);

impl Verbosity {
    /// Warnings and errors only.
    pub const DEFAULT: Verbosity = Verbosity(LevelFilter::WARN);

    /// klog `--v=N`: 0 warnings, 1–3 info, 4–5 debug, 6+ trace.
    pub fn from_klog(level: u32) -> Self {
        Verbosity(match level {
            0 => LevelFilter::WARN,
            1..=3 => LevelFilter::INFO,
            4 | 5 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        })
    }

    /// The tracing filter.
    pub fn level(self) -> LevelFilter {
        self.0
    }

    /// The level from the command line when given, else from [`VERBOSITY_ENV`], else the default.
    pub fn resolve(from_args: Option<Verbosity>) -> Result<Verbosity, String> {
        if let Some(v) = from_args {
            return Ok(v);
        }
        match std::env::var(VERBOSITY_ENV) {
            Ok(text) if !text.trim().is_empty() => {
                text.parse().map_err(|e| format!("{VERBOSITY_ENV}: {e}"))
            }
            _ => Ok(Verbosity::DEFAULT),
        }
    }
}

impl FromStr for Verbosity {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u32>() {
            return Ok(Verbosity::from_klog(n));
        }
        match s.to_ascii_lowercase().as_str() {
            "off" => Ok(Verbosity(LevelFilter::OFF)),
            "error" => Ok(Verbosity(LevelFilter::ERROR)),
            "warn" | "warning" => Ok(Verbosity(LevelFilter::WARN)),
            "info" => Ok(Verbosity(LevelFilter::INFO)),
            "debug" => Ok(Verbosity(LevelFilter::DEBUG)),
            "trace" => Ok(Verbosity(LevelFilter::TRACE)),
            _ => Err(format!(
                "invalid verbosity {s:?}: use a number 0-10 or error, warn, info, debug, trace, off"
            )),
        }
    }
}

/// Whether events of the crate `krate` (the first segment of an event's target) are this
/// project's own: `kcp_*` (kcp-kubelet, kcp-plugin, the test kit), `*_credential_provider`
/// (every provider, its library and its binary) and `credential_provider_*` (the checker and the
/// fleet token controller). See the module documentation.
pub fn is_ours(krate: &str) -> bool {
    krate.starts_with("kcp_")
        || krate.ends_with("_credential_provider")
        || krate.starts_with("credential_provider_")
}

/// Dependencies that log whole request and response bodies (tokens included) at TRACE. They
/// stop at DEBUG, whatever the verbosity.
const BODY_LOGGING_CRATES: &[&str] = &[
    "aws_runtime",
    "aws_sdk_ecr",
    "aws_sdk_ecrpublic",
    "aws_sdk_sts",
    "aws_sdk_sso",
    "aws_sdk_ssooidc",
    "aws_smithy_http_client",
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "azure_core",
    "azure_identity",
    "gcp_auth",
    "h2",
    "hyper",
    "hyper_util",
    "kube_client",
    "reqwest",
    "rustls",
    "typespec_client_core",
];

/// Crates whose error-carrying events embed raw HTTP responses, headers and body included:
/// aws-config's credential chain logs each failed provider with `DisplayErrorContext`, whose
/// form ends in a Debug dump of the response (an instance-metadata body can hold role
/// credentials). Their events with an error-like field ([`RAW_RESPONSE_FIELDS`]) are never
/// shown; our own error line names the source and the cause. Their other events (such as which
/// provider of the chain loaded credentials) show at `--v=6`, as for every dependency.
const RAW_RESPONSE_CRATES: &[&str] = &["aws_config"];
/// Field names under which those crates attach an error.
const RAW_RESPONSE_FIELDS: &[&str] = &["error", "err", "context", "source"];

/// The crate an event's target names: its first path segment.
fn crate_of(target: &str) -> &str {
    target.split("::").next().unwrap_or(target)
}

/// Which events and spans reach stderr at one verbosity. A decision depends only on a call
/// site's static metadata (target, level, field names), so tracing asks once per call site and
/// caches the answer: a filtered-out event costs nothing after its first use.
struct Gate {
    /// The most verbose level shown for our own crates: the verbosity itself.
    ours: LevelFilter,
    /// The same for every dependency: off below trace.
    theirs: LevelFilter,
}

impl Gate {
    fn new(verbosity: Verbosity) -> Self {
        let ours = verbosity.level();
        let theirs = if ours == LevelFilter::TRACE {
            LevelFilter::TRACE
        } else {
            LevelFilter::OFF
        };
        Gate { ours, theirs }
    }

    /// The most verbose level shown for events whose target is `target`.
    fn ceiling(&self, target: &str) -> LevelFilter {
        let krate = crate_of(target);
        if is_ours(krate) {
            self.ours
        } else if BODY_LOGGING_CRATES.contains(&krate) || RAW_RESPONSE_CRATES.contains(&krate) {
            self.theirs.min(LevelFilter::DEBUG)
        } else {
            self.theirs
        }
    }

    fn allows(&self, meta: &tracing::Metadata<'_>) -> bool {
        *meta.level() <= self.ceiling(meta.target()) && may_show(meta)
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Gate {
    fn register_callsite(
        &self,
        meta: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if self.allows(meta) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(
        &self,
        meta: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        self.allows(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.ours.max(self.theirs))
    }
}

/// Whether an event or span may be shown at all (see [`RAW_RESPONSE_CRATES`]).
fn may_show(meta: &tracing::Metadata<'_>) -> bool {
    !(RAW_RESPONSE_CRATES.contains(&crate_of(meta.target()))
        && meta
            .fields()
            .iter()
            .any(|f| RAW_RESPONSE_FIELDS.contains(&f.name())))
}

/// Starts logging to stderr. Calling it twice is harmless (the second call does nothing).
pub fn init(verbosity: Verbosity) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let layer = tracing_subscriber::fmt::layer()
        .with_writer(redacting_stderr)
        .with_target(verbosity.level() > LevelFilter::WARN)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(Gate::new(verbosity))
        .with(layer)
        .try_init();
}

/// A formatted log entry as exactly one line: line breaks inside it (a dependency's multi-line
/// field at `--v=6`, such as the AWS SDK's canonical request) become spaces, and it ends with
/// its one newline. Borrowed, at no cost, when the entry already is one line.
fn one_line_entry(entry: &str) -> std::borrow::Cow<'_, str> {
    let body = entry.strip_suffix('\n').unwrap_or(entry);
    if body.contains(['\n', '\r']) {
        let mut line = body.replace(['\n', '\r'], " ");
        line.push('\n');
        std::borrow::Cow::Owned(line)
    } else {
        std::borrow::Cow::Borrowed(entry)
    }
}

/// Folds a message onto one line, so an error from a remote body cannot split a log entry.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for part in text.split(['\n', '\r']).filter(|p| !p.trim().is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part.trim());
    }
    out
}

/// An error and its chain of causes as one line (`a: b: c`), skipping causes whose text the line
/// already holds (many errors repeat their source in their own message).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    one_line(&line)
}

/// The writer of every log line: the line is collected whole and written to stderr when the
/// event is done, with every secret the process holds replaced (`kcp_kubelet::secret::
/// redact_known`), whatever library put it into the event, and folded onto one line
/// ([`one_line_entry`]). Costs a copy per printed line only.
fn redacting_stderr() -> RedactingLine<std::io::Stderr> {
    RedactingLine(Vec::new(), std::io::stderr())
}

/// One log line on its way to a sink (stderr); see [`redacting_stderr`].
struct RedactingLine<W: std::io::Write>(Vec<u8>, W);

impl<W: std::io::Write> std::io::Write for RedactingLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: std::io::Write> Drop for RedactingLine<W> {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.0);
        let redacted = kcp_kubelet::secret::redact_known(&text);
        let line = one_line_entry(&redacted);
        // Logging has nowhere to report its own failure.
        let _ = self.1.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn klog_levels_map_to_tracing_levels() {
        assert_eq!(Verbosity::from_klog(0).level(), LevelFilter::WARN);
        assert_eq!(Verbosity::from_klog(2).level(), LevelFilter::INFO);
        assert_eq!(Verbosity::from_klog(4).level(), LevelFilter::DEBUG);
        assert_eq!(Verbosity::from_klog(9).level(), LevelFilter::TRACE);
        assert_eq!(
            "debug".parse::<Verbosity>().unwrap().level(),
            LevelFilter::DEBUG
        );
        assert_eq!("WARNING".parse::<Verbosity>().unwrap(), Verbosity::DEFAULT);
        assert_eq!(
            "off".parse::<Verbosity>().unwrap().level(),
            LevelFilter::OFF
        );
        assert!("loud".parse::<Verbosity>().is_err());
        assert_eq!(
            Verbosity::resolve(Some(Verbosity::from_klog(5)))
                .unwrap()
                .level(),
            LevelFilter::DEBUG
        );
    }

    #[test]
    fn log_lines_hide_every_secret_held() {
        use std::io::Write;
        let _held = kcp_kubelet::Secret::new("logged-Secret/With+Slash-0042");
        let mut out = Vec::new();
        {
            let mut line = RedactingLine(Vec::new(), &mut out);
            // Written in pieces, redacted as one line.
            line.write_all(b"ERROR refused logged-Secret/With").unwrap();
            line.write_all(b"+Slash-0042 at STS\n").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ERROR refused <redacted> at STS\n"
        );
    }

    #[test]
    fn dependencies_are_silent_below_trace_and_never_log_bodies() {
        let at = |v: u32, target: &str| Gate::new(Verbosity::from_klog(v)).ceiling(target);
        for ours in [
            "kcp_plugin::runner",
            "kcp_plugin::token_cache",
            // The contract crate's one module that logs (a request field it ignores).
            "kcp_kubelet::protocol",
            // The checker's kubelet emulation: a `kcp_` crate, so ours should it ever log here.
            "kcp_kubelet_emulation::config",
            "ecr_credential_provider::provider",
            "acr_credential_provider",
        ] {
            assert_eq!(at(0, ours), LevelFilter::WARN, "{ours}");
            assert_eq!(at(2, ours), LevelFilter::INFO, "{ours}");
            assert_eq!(at(6, ours), LevelFilter::TRACE, "{ours}");
        }
        for theirs in [
            "aws_smithy_runtime::client::http::connection_poisoning",
            "aws_config::imds",
            "tokio::runtime",
            // Not ours although it shares a prefix with one of our crates.
            "kcpx_plugin",
        ] {
            for v in 0..=5 {
                assert_eq!(at(v, theirs), LevelFilter::OFF, "{theirs} at --v={v}");
            }
        }
        assert_eq!(at(6, "tokio::runtime"), LevelFilter::TRACE);
        assert_eq!(at(9, "hyper::proto"), LevelFilter::DEBUG);
        assert_eq!(at(9, "aws_config::imds"), LevelFilter::DEBUG);
        // Matched by crate, not by string prefix.
        assert_eq!(at(9, "aws_sdk_ecrpublic::client"), LevelFilter::DEBUG);
        assert_eq!(at(9, "hyperx"), LevelFilter::TRACE);
        let off = Gate::new("off".parse().unwrap());
        assert_eq!(off.ceiling("kcp_plugin::runner"), LevelFilter::OFF);
        assert_eq!(off.ceiling("hyper"), LevelFilter::OFF);
    }

    /// Every crate of the workspace that logs through this module (it depends on kcp-plugin)
    /// must count as ours, or its own warnings would vanish at the default level.
    #[test]
    fn every_workspace_crate_that_logs_here_is_ours() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = workspace
            .split_once("members = [")
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(list, _)| list)
            .unwrap();
        let mut checked = Vec::new();
        for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
            if member.is_empty() {
                continue;
            }
            let manifest = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
            let logs_here = member == "common/plugin"
                || manifest
                    .lines()
                    .any(|l| l.trim_start().starts_with("kcp-plugin"));
            // The package's name and any [lib] or [[bin]] name it sets: each is a crate name.
            let mut section = String::new();
            for line in manifest.lines().map(str::trim) {
                if line.starts_with('[') {
                    section = line.trim_matches(['[', ']']).to_owned();
                } else if let Some(name) = line
                    .strip_prefix("name")
                    .and_then(|r| r.trim_start().strip_prefix('='))
                    .filter(|_| ["package", "lib", "bin"].contains(&section.as_str()))
                {
                    let krate = name.trim().trim_matches('"').replace('-', "_");
                    if logs_here {
                        assert!(
                            is_ours(&krate),
                            "{member}: crate {krate} would lose its own log lines: name it \
                             kcp-*, *-credential-provider or credential-provider-* (common/plugin/src/logging.rs)"
                        );
                        checked.push(krate);
                    }
                }
            }
        }
        for provider in ["ecr", "acr", "gcr", "static", "oidc"] {
            let krate = format!("{provider}_credential_provider");
            assert!(checked.contains(&krate), "{krate} not found in {checked:?}");
        }
        assert!(checked.contains(&"kcp_plugin".to_owned()), "{checked:?}");
    }

    #[test]
    fn a_log_entry_is_one_line() {
        assert_eq!(
            one_line_entry("TRACE sign: canonical_request=POST\n/\n\nhost:x\r\n"),
            "TRACE sign: canonical_request=POST /  host:x \n"
        );
        assert!(matches!(
            one_line_entry("ERROR one line\n"),
            std::borrow::Cow::Borrowed("ERROR one line\n")
        ));
    }

    #[test]
    fn one_line_folds_newlines() {
        assert_eq!(one_line("a\nb\r\n  c  \n\n"), "a b c");
        assert_eq!(one_line("plain"), "plain");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer failed")]
    struct Outer(#[source] Inner);
    #[derive(Debug, thiserror::Error)]
    #[error("inner: connection refused")]
    struct Inner(#[source] std::io::Error);

    #[test]
    fn error_chain_joins_causes_once() {
        let e = Outer(Inner(std::io::Error::other("connection refused")));
        // The io error's text is already in Inner's message, so it is not repeated.
        assert_eq!(error_chain(&e), "outer failed: inner: connection refused");
    }
}
