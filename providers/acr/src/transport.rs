//! The run's HTTP, all of it on the shared client (`kcp_plugin::http::HttpClient`): the registry's
//! challenge and exchange, the ARM metadata call, and, through the azure_core transport adapter
//! [`AzureTransport`], every Entra and managed-identity request azure_identity makes.
//!
//! One client means one trust store load per exec (`kcp_plugin::tls`, `SSL_CERT_FILE`), one proxy
//! policy (link-local metadata addresses never proxied), one body cap and every call's timeout
//! capped by the run's deadline. This module only adds what is ACR's own: the registry's
//! User-Agent and the adapter.

use async_trait::async_trait;
use azure_core::http::headers::{HeaderName, HeaderValue, Headers};
use azure_core::http::{AsyncRawResponse, Body, Request, StatusCode};
use azure_core::{Bytes, error::ErrorKind};
use kcp_plugin::deadline::Deadline;
use std::sync::{Arc, Mutex};

use kcp_plugin::http::{HttpClient, HttpError, Route, redact_token_like};
use reqwest::Method;

/// User-Agent of the registry and ARM calls, as upstream sends it (plus our version).
/// azure_identity's requests carry the SDK's own User-Agent.
pub const USER_AGENT: &str = concat!(
    "kubernetes-credentialprovider-acr (acr-credential-provider/",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// azure_core's HTTP transport over the shared client, bounded by the run's deadline.
///
/// Statuses are azure_core's to judge, so every answer is returned ([`HttpClient::fetch`]); only
/// failures to get one become errors. The last answer is kept ([`Self::answers`]): azure_identity
/// words every failed token request as a bad credential, and loses the status of an error answer
/// that is not Entra's JSON (an HTML 503 from a gateway), so the error line is built from what
/// the server really said.
#[derive(Clone)]
pub struct AzureTransport {
    client: HttpClient,
    deadline: Deadline,
    answers: Answers,
}

/// The last answer a transport received, shared with whoever built it.
#[derive(Debug, Clone, Default)]
pub struct Answers(Arc<Mutex<Option<LastAnswer>>>);

/// What a token endpoint last answered: never the body, only its OAuth error fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastAnswer {
    /// The host that answered.
    pub host: String,
    /// Its HTTP status.
    pub status: u16,
    /// How many answers in a row had this status from this host (retries included).
    pub times: u32,
    /// The OAuth `error` code of an error answer (`invalid_client`), if it had one.
    pub error: Option<String>,
    /// Its `error_description`, on one line, token-like runs redacted, cut short.
    pub description: Option<String>,
}

impl Answers {
    /// The last answer, if any request got one (a failure to connect clears it).
    pub fn last(&self) -> Option<LastAnswer> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<LastAnswer>> {
        // A panic elsewhere while holding the lock leaves a usable value behind.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record(&self, host: &str, status: u16, body: &[u8]) {
        let (error, description) = oauth_error(status, body);
        let mut last = self.lock();
        let times = match last.as_ref() {
            Some(before) if before.host == host && before.status == status => before.times + 1,
            _ => 1,
        };
        *last = Some(LastAnswer {
            host: host.to_owned(),
            status,
            times,
            error,
            description,
        });
    }

    fn clear(&self) {
        *self.lock() = None;
    }
}

/// The `error` and `error_description` of an OAuth error answer (RFC 6749 §5.2); nothing else
/// of the body is kept.
fn oauth_error(status: u16, body: &[u8]) -> (Option<String>, Option<String>) {
    const MAX: usize = 300;
    if status < 400 {
        return (None, None);
    }
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return (None, None);
    };
    let field = |name: &str| {
        map.get(name)
            .and_then(serde_json::Value::as_str)
            .map(|text| redact_token_like(&kcp_plugin::logging::one_line(text)))
            .filter(|text| !text.is_empty())
            .map(|text| match text.char_indices().nth(MAX) {
                Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
                None => text,
            })
    };
    (field("error"), field("error_description"))
}

/// azure_core may log its transport; the client's proxy settings can hold credentials, so they
/// are left out.
impl std::fmt::Debug for AzureTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureTransport")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl AzureTransport {
    /// Wraps `client`; no request will outlive `deadline`.
    pub fn new(client: HttpClient, deadline: Deadline) -> Self {
        AzureTransport {
            client,
            deadline,
            answers: Answers::default(),
        }
    }

    /// A handle on the last answer this transport (and its clones) received.
    pub fn answers(&self) -> Answers {
        self.answers.clone()
    }
}

#[async_trait]
impl azure_core::http::HttpClient for AzureTransport {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        let method = Method::from_bytes(request.method().as_str().as_bytes())
            .map_err(|e| azure_core::Error::new(ErrorKind::Other, e))?;
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // Token requests are small forms and query strings; a stream would be a programming error.
        let body = match request.body() {
            Body::Bytes(bytes) if bytes.is_empty() => None,
            Body::Bytes(bytes) => Some(bytes.to_vec()),
            Body::SeekableStream(_) => {
                return Err(azure_core::Error::with_message(
                    ErrorKind::Other,
                    "streaming request bodies are not supported",
                ));
            }
        };
        let answer = self
            .client
            .fetch(
                Route::Internet,
                method,
                request.url(),
                &headers,
                body,
                self.deadline,
            )
            .await
            .map_err(|error| {
                self.answers.clear();
                azure_error(error)
            })?;
        self.answers.record(
            request.url().host_str().unwrap_or_default(),
            answer.status,
            &answer.body,
        );
        let mut response_headers = Headers::new();
        for (name, value) in answer.headers {
            // A repeated header keeps its last value, as azure_core's own reqwest transport does.
            response_headers.insert(HeaderName::from(name), HeaderValue::from(value));
        }
        Ok(AsyncRawResponse::from_bytes(
            StatusCode::from(answer.status),
            response_headers,
            Bytes::from(answer.body),
        ))
    }
}

/// Connection trouble and timeouts stay retryable for azure_core's retry policy (it retries `Io`
/// and `Connection`); an untrusted certificate, the body cap and a spent deadline do not.
fn azure_error(error: HttpError) -> azure_core::Error {
    let kind = match &error {
        HttpError::Transport { .. } => ErrorKind::Io,
        HttpError::Setup(_)
        | HttpError::Tls { .. }
        | HttpError::Status { .. }
        | HttpError::Body { .. }
        | HttpError::DeadlinePassed(_)
        | HttpError::PlainHttp(_) => ErrorKind::Other,
    };
    azure_core::Error::new(kind, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transport_failures_are_retryable_for_azure_core() {
        let io = azure_error(HttpError::Transport {
            host: "h".into(),
            reason: "reset".into(),
            timeout: false,
        });
        assert_eq!(io.kind(), &ErrorKind::Io);
        assert_eq!(io.to_string(), "request to h failed: reset");
        let tls = azure_error(HttpError::Tls {
            host: "h".into(),
            reason: "UnknownIssuer".into(),
        });
        assert_eq!(tls.kind(), &ErrorKind::Other);
        assert_eq!(
            azure_error(HttpError::DeadlinePassed("h".into())).kind(),
            &ErrorKind::Other
        );
    }

    #[test]
    fn answers_keep_the_status_and_only_the_oauth_error_fields() {
        let answers = Answers::default();
        assert_eq!(answers.last(), None);
        let body = br#"{"error":"invalid_client","error_description":"AADSTS7000215: Bad.\r\nTrace ID: 1","access_token":"x"}"#;
        answers.record("login.example", 401, body);
        assert_eq!(
            answers.last(),
            Some(LastAnswer {
                host: "login.example".into(),
                status: 401,
                times: 1,
                error: Some("invalid_client".into()),
                description: Some("AADSTS7000215: Bad. Trace ID: 1".into()),
            })
        );
        // Repeats of one status count up; another status or host starts again.
        answers.record("login.example", 503, b"<html>");
        answers.record("login.example", 503, b"");
        let last = answers.last().unwrap();
        assert_eq!((last.status, last.times, last.error), (503, 2, None));
        answers.record("other.example", 503, b"");
        assert_eq!(answers.last().unwrap().times, 1);
        // Success bodies are never read; a token-like run in a description is redacted, a long
        // one cut.
        answers.record("login.example", 200, br#"{"error":"x"}"#);
        assert_eq!(answers.last().unwrap().error, None);
        let long = format!(
            r#"{{"error_description":"{} {}"}}"#,
            "A".repeat(50),
            "word ".repeat(100)
        );
        answers.record("login.example", 400, long.as_bytes());
        let description = answers.last().unwrap().description.unwrap();
        assert!(description.starts_with("<redacted> word"), "{description}");
        assert_eq!(description.chars().count(), 301);
        answers.clear();
        assert_eq!(answers.last(), None);
    }

    #[test]
    fn debug_output_leaves_the_proxy_settings_out() {
        let proxy =
            kcp_plugin::http::ProxyConfig::https("http://user:proxy-password@proxy.example:3128");
        let client = HttpClient::new(
            &proxy,
            kcp_plugin::http::CONNECT_TIMEOUT,
            kcp_plugin::http::REQUEST_TIMEOUT,
        );
        let transport = AzureTransport::new(client, Deadline::after(std::time::Duration::ZERO));
        assert!(!format!("{transport:?}").contains("proxy-password"));
    }
}
