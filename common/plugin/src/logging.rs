//! Leveled, one-line logs on stderr.
//!
//! stdout belongs to the protocol, so every log line goes to stderr. The kubelet drops a plugin's
//! stderr on success and appends it verbatim to its own error on failure, so by default only
//! warnings and errors are printed: a failure then reads as one clear line in the kubelet log.
//! `-v` / `--v=N` (klog style) or [`VERBOSITY_ENV`] raise the level for debugging by hand.

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

/// Third-party crates that log whole request and response bodies (tokens included) at TRACE.
/// They are capped at DEBUG, whatever the verbosity (our own crates may trace), and show only
/// errors at the default verbosity.
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
    "reqwest",
    "rustls",
    "typespec_client_core",
];

/// Crates whose error-carrying events embed raw HTTP responses, headers and body included:
/// aws-config's credential chain logs each failed provider with `DisplayErrorContext`, whose
/// form ends in a Debug dump of the response (an instance-metadata body can hold role
/// credentials). Their events with an error-like field ([`RAW_RESPONSE_FIELDS`]) are never
/// shown; our own error line names the source and the cause. Their other events (such as which
/// provider of the chain loaded credentials) stay, as for every third-party crate.
const RAW_RESPONSE_CRATES: &[&str] = &["aws_config"];
/// Field names under which those crates attach an error.
const RAW_RESPONSE_FIELDS: &[&str] = &["error", "err", "context", "source"];

/// Whether an event or span may be shown at all (see [`RAW_RESPONSE_CRATES`]).
fn may_show(meta: &tracing::Metadata<'_>) -> bool {
    // Compared without allocating: this runs for every event that passes the level filter.
    let raw_crate = RAW_RESPONSE_CRATES.iter().any(|k| {
        meta.target()
            .strip_prefix(k)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    });
    !(raw_crate
        && meta
            .fields()
            .iter()
            .any(|f| RAW_RESPONSE_FIELDS.contains(&f.name())))
}

/// Starts logging to stderr. Calling it twice is harmless (the second call does nothing).
pub fn init(verbosity: Verbosity) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let level = verbosity.level();
    // At the default level their warnings are left out too: they can span lines (the AWS SDK's
    // "failed to parse profile" does), and a failure must read as our one line, which already
    // carries the cause. `-v` brings them back.
    let capped = if level <= LevelFilter::WARN {
        level.min(LevelFilter::ERROR)
    } else {
        level.min(LevelFilter::DEBUG)
    };
    let filter = BODY_LOGGING_CRATES.iter().chain(RAW_RESPONSE_CRATES).fold(
        tracing_subscriber::filter::Targets::new().with_default(level),
        |f, krate| f.with_target(*krate, capped),
    );
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(redacting_stderr)
        .with_target(false)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .with(tracing_subscriber::filter::filter_fn(may_show))
        .try_init();
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
/// redact_known`), whatever library put it into the event. Costs a copy per printed line only.
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
        let line = kcp_kubelet::secret::redact_known(&text);
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
