//! Why an exchange failed ([`ProtocolError`]): below both the readers of answers
//! ([`crate::answer`]) and the exchanges ([`crate::protocols`]), which both make one, so neither
//! has to name the other for it.

/// Why an exchange failed. Messages name fields and hosts, never a token.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The call failed: no connection, TLS, a timeout, the deadline (the HTTP layer's message).
    #[error("{0}")]
    Call(String),
    /// The endpoint answered with an error status; `oauth` is its OAuth (or IBM IAM) error body,
    /// quoted.
    #[error("{host} answered HTTP {status}{}", match .oauth { Some(o) => format!(": {o}"), None if .detail.is_empty() => String::new(), None => format!(": {}", .detail) })]
    Refused {
        /// The endpoint's host.
        host: String,
        /// The HTTP status.
        status: u16,
        /// `error "…" ("…")` from an OAuth error body, or `error "BXNIM…" ("…")` from IBM IAM's.
        oauth: Option<String>,
        /// Otherwise a short redacted excerpt of the body.
        detail: String,
    },
    /// The answer was not usable (no token, not JSON, a bad `expires_in`).
    #[error("{0}")]
    Answer(String),
    /// The exchange cannot be made for this request or entry (a missing annotation, a bad
    /// endpoint).
    #[error("{0}")]
    Input(String),
}

impl ProtocolError {
    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProtocolError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}
