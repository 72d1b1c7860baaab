//! The exchanges, one module per protocol, and what they share: [`Exchange`] (everything one
//! exchange may use), [`Issued`] (the credential it got), the one HTTP call shape ([`send`]:
//! proxy rules, retries on 429 and 5xx with `Retry-After`, the deadline, OAuth and IBM IAM error
//! bodies quoted) and the dispatch on the entry's protocol ([`exchange`]). [`ProtocolError`]
//! lives in `crate::error`, below this module and `crate::answer`, and is re-exported here.
//!
//! A protocol module sends the service-account token to its endpoint only: the host check is done
//! before ([`crate::provider`]), and nothing here logs a token or puts one in an error.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use kcp_kubelet::Secret;
use kcp_oidc_registries::{Protocol, Registry};
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{Call, HttpClient, HttpResponse, RetryRules, Statuses};
use kcp_plugin::logging::error_chain;

use crate::answer::{self, Token};
pub use crate::error::ProtocolError;

pub mod chainguard;
pub mod cloudsmith;
pub mod ibm;
pub mod jfrog;
pub mod passthrough;
pub mod quay;
pub mod token_exchange;
mod vendor;

/// Everything one exchange may use; built by the provider's `fetch` from the plan.
pub struct Exchange<'a> {
    /// The matched entry.
    pub registry: &'a Registry,
    /// The image's registry host (`host[:port]`), after the host check.
    pub host: &'a str,
    /// The pod's service-account token (a JWT).
    pub sa_token: &'a Secret,
    /// The service account's annotations, from the request.
    pub annotations: &'a BTreeMap<String, String>,
    /// `token-exchange`'s client secret, read from `clientSecretFile` when the plan was made.
    pub client_secret: Option<&'a Secret>,
    /// The shared HTTP client.
    pub http: &'a HttpClient,
    /// The run's deadline.
    pub deadline: Deadline,
}

/// A pull credential as a protocol answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The registry user name.
    pub username: String,
    /// The registry password (the issued token).
    pub password: Secret,
    /// The credential's own life as the answer states it (`expires_in`, or a JWT `exp` in the
    /// token); `None`: not stated.
    pub expires_at: Option<SystemTime>,
}

impl Issued {
    /// A credential for `username` from a token answer.
    pub fn from_token(username: impl Into<String>, token: Token) -> Issued {
        Issued {
            username: username.into(),
            password: token.token,
            expires_at: token.expires_at,
        }
    }
}

/// Longest `Retry-After` honoured: a throttled endpoint asking for more gets the backoff's
/// attempts within the deadline instead.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// How every exchange call retries: connection errors, timeouts, 429 and 5xx with jittered
/// backoff (or `Retry-After`, up to [`MAX_RETRY_AFTER`]) inside the deadline; any final answer
/// handed back, so an error status's OAuth body can be quoted.
pub const RETRY_RULES: RetryRules = RetryRules {
    max_retry_after: Some(MAX_RETRY_AFTER),
    answers: Statuses::ANY,
    ..RetryRules::DEFAULT
};

/// Sends one exchange call under [`RETRY_RULES`]: a 2xx answer, or the error with the OAuth
/// error body quoted when the endpoint answered with one.
pub async fn send(x: &Exchange<'_>, call: Call<'_>) -> Result<HttpResponse, ProtocolError> {
    let host = call.url.host_str().unwrap_or("").to_owned();
    let answer = x
        .http
        .send_retrying_with(call, x.deadline, &RETRY_RULES)
        .await
        .map_err(|e| ProtocolError::Call(error_chain(&e)))?;
    if (200..300).contains(&answer.status) {
        return Ok(answer);
    }
    Err(ProtocolError::Refused {
        host,
        status: answer.status,
        oauth: answer::oauth_error(&answer.body).or_else(|| answer::ibm_error(&answer.body)),
        detail: excerpt(&answer.body),
    })
}

/// A short, one-line, redacted excerpt of a body for an error line.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(body);
    let text = kcp_kubelet::secret::redact_known(&text);
    let line = kcp_plugin::http::redact_token_like(&kcp_plugin::logging::one_line(&text));
    line.chars().take(MAX).collect()
}

/// Runs the exchange of the entry's protocol.
pub async fn exchange(x: &Exchange<'_>) -> Result<Issued, ProtocolError> {
    let issued = match &x.registry.protocol {
        Protocol::Passthrough(settings) => passthrough::exchange(x, settings).await,
        Protocol::TokenExchange(settings) => token_exchange::exchange(x, settings).await,
        Protocol::Jfrog(settings) => jfrog::exchange(x, settings).await,
        Protocol::QuayRobot(settings) => quay::exchange(x, settings).await,
        Protocol::Cloudsmith(settings) => cloudsmith::exchange(x, settings).await,
        Protocol::Chainguard(settings) => chainguard::exchange(x, settings).await,
        Protocol::IbmIam(settings) => ibm::exchange(x, settings).await,
    }?;
    if issued.password.expose() == x.sa_token.expose()
        && !matches!(x.registry.protocol, Protocol::Passthrough(_))
    {
        // The pod's identity would go to the registry as a password the kubelet caches; a
        // correct exchange never answers with what it was given.
        return Err(ProtocolError::Answer(
            "the endpoint answered with the service-account token itself; refusing to use it as a registry password".to_owned(),
        ));
    }
    Ok(issued)
}

/// The entry's endpoint for this image, checked as the registries file's endpoints are.
pub fn endpoint(x: &Exchange<'_>) -> Result<url::Url, ProtocolError> {
    match x.registry.endpoint_for(x.host) {
        Some(Ok(url)) => Ok(url),
        Some(Err(e)) => Err(ProtocolError::Input(e)),
        None => Err(ProtocolError::Input(format!(
            "the {} entry has no endpoint",
            x.registry.protocol.name()
        ))),
    }
}
