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
use kcp_plugin::http::{HttpClient, HttpError, Route};
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
/// failures to get one become errors.
#[derive(Clone)]
pub struct AzureTransport {
    client: HttpClient,
    deadline: Deadline,
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
        AzureTransport { client, deadline }
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
            .map_err(azure_error)?;
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
    fn debug_output_leaves_the_proxy_settings_out() {
        let proxy =
            kcp_plugin::http::ProxyConfig::https("http://user:proxy-password@proxy.example:3128");
        let client = HttpClient::new(
            &proxy,
            kcp_plugin::http::CONNECT_TIMEOUT,
            kcp_plugin::http::REQUEST_TIMEOUT,
        )
        .unwrap();
        let transport = AzureTransport::new(client, Deadline::after(std::time::Duration::ZERO));
        assert!(!format!("{transport:?}").contains("proxy-password"));
    }
}
