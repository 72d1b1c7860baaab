//! The classes of HTTP failure and how they are told apart: set-up, transport, TLS, status,
//! body, deadline and refused plain http; which are worth another attempt; and the messages,
//! which name the host and never a URL's query or a token.

use reqwest::Url;

use super::redact::excerpt;
use super::response::HttpResponse;
use super::statuses::Statuses;

/// Why an HTTP call failed. Messages name the URL's host, never a token.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The client could not be set up (bad proxy URL, TLS setup).
    #[error("HTTP client setup failed: {0}")]
    Setup(String),
    /// No connection, a reset, or a timeout.
    #[error("request to {host} failed: {reason}")]
    Transport {
        /// The host that was called.
        host: String,
        /// What went wrong.
        reason: String,
        /// Whether it was a timeout.
        timeout: bool,
    },
    /// The TLS handshake failed: an untrusted or mismatched certificate. Retrying cannot help.
    #[error(
        "TLS with {host} failed: {reason}; check the CA bundle (SSL_CERT_FILE) and any TLS-intercepting proxy"
    )]
    Tls {
        /// The host that was called.
        host: String,
        /// What rustls reported.
        reason: String,
    },
    /// The server answered with a non-success status.
    #[error("{host} answered HTTP {status}{}", if .detail.is_empty() { String::new() } else { format!(": {}", .detail) })]
    Status {
        /// The host that was called.
        host: String,
        /// The HTTP status.
        status: u16,
        /// A short, sanitized excerpt of the body (no secrets are expected in error bodies, but
        /// it is cut short and folded onto one line anyway).
        detail: String,
    },
    /// The body was too large or unreadable.
    #[error("reading the answer from {host} failed: {reason}")]
    Body {
        /// The host that was called.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// The deadline had already passed.
    #[error("no time left before the overall deadline to call {0}")]
    DeadlinePassed(String),
    /// Plain http to a host that is not node-local: refused before anything is sent.
    #[error(
        "refusing to call {0} over plain http: a token would cross the network unencrypted; use https (plain http goes only to loopback and link-local metadata addresses)"
    )]
    PlainHttp(String),
}

impl HttpError {
    /// Whether another attempt may succeed: timeouts, connection errors, 429 and 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            HttpError::Transport { .. } => true,
            HttpError::Status { status, .. } => {
                Statuses::THROTTLED_OR_SERVER_ERROR.contains(*status)
            }
            HttpError::Setup(_)
            | HttpError::Tls { .. }
            | HttpError::Body { .. }
            | HttpError::DeadlinePassed(_)
            | HttpError::PlainHttp(_) => false,
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The message for an error line: as displayed, plus "(timed out)" for a timeout whose reason
    /// does not already say so (an operator needs to tell a hang from a refusal).
    pub fn describe(&self) -> String {
        let text = self.to_string();
        match self {
            HttpError::Transport { timeout: true, .. } if !text.contains("timed out") => {
                format!("{text} (timed out)")
            }
            _ => text,
        }
    }
}

/// The last error of a call and how many attempts it took.
#[derive(Debug, thiserror::Error)]
#[error("{error}{}", if *.attempts > 1 { format!(" (after {} attempts)", .attempts) } else { String::new() })]
pub struct CallError {
    /// The last attempt's error.
    #[source]
    pub error: HttpError,
    /// Attempts made.
    pub attempts: u32,
}

impl CallError {
    /// The HTTP status of the last answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        self.error.status()
    }
}

/// The error for an answer whose status the caller does not take: the host, the status and a
/// short redacted excerpt of the body.
pub(super) fn status_error(url: &Url, answer: &HttpResponse) -> HttpError {
    HttpError::Status {
        host: url.host_str().unwrap_or("").to_owned(),
        status: answer.status,
        detail: excerpt(&answer.body),
    }
}

pub(super) fn transport_error(host: &str, error: &reqwest::Error) -> HttpError {
    let mut reason = crate::logging::error_chain(error);
    // reqwest puts the full URL in its message; keep the host only, a query may hold a secret.
    if let Some(url) = error.url() {
        reason = reason.replace(url.as_str(), host);
    }
    if let Some(tls) = rustls_error(error) {
        return HttpError::Tls {
            host: host.to_owned(),
            reason: tls.to_string(),
        };
    }
    HttpError::Transport {
        host: host.to_owned(),
        reason,
        timeout: error.is_timeout(),
    }
}

/// The rustls error somewhere in the chain; tokio-rustls wraps it in an `io::Error`, sometimes
/// inside another one, and `io::Error::source` skips the wrapped error itself.
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let wrapped = error
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref());
    if let Some(found) = wrapped.and_then(|inner| rustls_error(inner)) {
        return Some(found);
    }
    error.source().and_then(rustls_error)
}
