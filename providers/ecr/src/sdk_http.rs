//! The AWS SDK's HTTP transport, provided by our shared client (`kcp_plugin::http`).
//!
//! Why not the SDK's own client: it parses the system trust store with a constant-time PEM decoder
//! on first use (~4 ms of CPU per exec, more than everything else together), ships a second
//! HTTP stack (hyper-rustls, h2) next to ours, and would need its own proxy rules. Through this
//! adapter every SDK call (ECR, ECR Public, STS, EKS Auth, IMDS, container credentials) uses the same trust
//! store, proxy policy (link-local metadata always direct) and deadline as the other providers.

use aws_smithy_runtime_api::client::http::{
    HttpClient as SdkHttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, HttpError, Route};
use reqwest::{Method, Url};

/// An SDK HTTP client backed by [`HttpClient`], bounded by the run's deadline.
#[derive(Debug, Clone)]
pub struct SharedTransport {
    client: HttpClient,
    deadline: Deadline,
}

impl SharedTransport {
    /// Wraps `client`; no call will outlive `deadline`.
    pub fn new(client: HttpClient, deadline: Deadline) -> Self {
        SharedTransport { client, deadline }
    }

    async fn send(self, request: HttpRequest) -> Result<HttpResponse, ConnectorError> {
        let url = Url::parse(request.uri()).map_err(|e| ConnectorError::user(e.into()))?;
        let method = Method::from_bytes(request.method().as_bytes())
            .map_err(|e| ConnectorError::user(e.into()))?;
        let headers: Vec<(&str, &str)> = request.headers().iter().collect();
        // Token APIs send small in-memory bodies; a streaming body would be a programming error here.
        let body = match request.body().bytes() {
            Some(bytes) => Some(bytes.to_vec()),
            None => {
                return Err(ConnectorError::user(
                    "streaming request bodies are not supported".into(),
                ));
            }
        };
        let answer = self
            .client
            .fetch(Route::Internet, method, &url, &headers, body, self.deadline)
            .await
            .map_err(connector_error)?;
        let status = StatusCode::try_from(answer.status)
            .map_err(|e| ConnectorError::other(e.into(), None))?;
        let mut response = HttpResponse::new(status, SdkBody::from(answer.body));
        for (name, value) in answer.headers {
            response.headers_mut().append(name, value);
        }
        Ok(response)
    }
}

/// Timeouts and connection failures stay retryable for the SDK's retry strategy.
fn connector_error(error: HttpError) -> ConnectorError {
    match error {
        HttpError::Transport { timeout: true, .. } | HttpError::DeadlinePassed(_) => {
            ConnectorError::timeout(error.into())
        }
        HttpError::Transport { .. } | HttpError::Body { .. } => ConnectorError::io(error.into()),
        HttpError::Tls { .. } => ConnectorError::other(error.into(), None),
        HttpError::Setup(_) | HttpError::Status { .. } | HttpError::PlainHttp(_) => {
            ConnectorError::user(error.into())
        }
    }
}

impl HttpConnector for SharedTransport {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        HttpConnectorFuture::new(self.clone().send(request))
    }
}

impl SdkHttpClient for SharedTransport {
    fn http_connector(
        &self,
        _: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}
