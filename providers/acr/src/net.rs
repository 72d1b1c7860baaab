//! The one HTTP client of a run: registry challenge and exchange, ARM metadata, and the transport
//! azure_identity sends its Entra and managed-identity requests through.
//!
//! One client means one TLS setup per exec (the trust store load is most of a cold run's CPU).
//! It follows the rules of `kcp_common::http`: rustls with ring, the system trust store (or
//! `SSL_CERT_FILE`), short connect timeouts, no redirects, `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`
//! honoured except for link-local metadata addresses, bodies capped. Unlike
//! `kcp_common::http::HttpClient` it returns every status with its headers: the registry's token
//! challenge is a 401 whose `WWW-Authenticate` header is the whole point.

use std::time::Duration;

use kcp_common::http::{CONNECT_TIMEOUT, MAX_BODY_BYTES, ProxyConfig, REQUEST_TIMEOUT};
use reqwest::header::HeaderMap;
use reqwest::{Method, Url};

/// User-Agent of registry calls, as upstream sends it (plus our version).
const USER_AGENT: &str = concat!(
    "kubernetes-credentialprovider-acr (acr-credential-provider/",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// Link-local metadata endpoints (IMDS) are node-local: never send them, or their tokens, to a proxy.
const ALWAYS_DIRECT: &str = "169.254.0.0/16,fe80::/10";

/// A response of any status.
#[derive(Debug)]
pub struct NetResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// The body, at most [`MAX_BODY_BYTES`].
    pub body: Vec<u8>,
}

impl NetResponse {
    /// Every value of a header, in order, as text (values that are not text are skipped).
    pub fn header_values(&self, name: &str) -> Vec<String> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why a call got no response. Messages name the host, never a URL query or a body sent.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NetError {
    /// Connection refused, reset, TLS failure or timeout.
    #[error("request to {host} failed: {reason}")]
    Transport {
        /// The host called.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// The body was too large or broke off.
    #[error("reading the answer from {host} failed: {reason}")]
    Body {
        /// The host called.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// No time left.
    #[error("no time left before the overall deadline to call {0}")]
    DeadlinePassed(String),
}

/// The run's HTTP client.
#[derive(Debug, Clone)]
pub struct Net {
    client: reqwest::Client,
}

impl Net {
    /// A client with the environment's proxy settings.
    pub fn from_env() -> anyhow::Result<Net> {
        Net::new(&ProxyConfig::from_env())
    }

    /// A client with explicit proxy settings.
    pub fn new(proxy: &ProxyConfig) -> anyhow::Result<Net> {
        kcp_common::http::install_crypto_provider();
        let no_proxy = match proxy.no_proxy.as_deref().map(str::trim) {
            Some(list) if !list.is_empty() => format!("{list},{ALWAYS_DIRECT}"),
            _ => ALWAYS_DIRECT.to_owned(),
        };
        let no_proxy = reqwest::NoProxy::from_string(&no_proxy);
        let setup = |e: reqwest::Error| anyhow::anyhow!("setting up the HTTP client failed: {e}");
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            // Proxies come from ProxyConfig (the same rules as every provider), not reqwest's own lookup.
            .no_proxy();
        if let Some(url) = &proxy.https {
            builder = builder.proxy(
                reqwest::Proxy::https(url)
                    .map_err(|e| {
                        anyhow::anyhow!("HTTPS_PROXY {url:?} is not a valid proxy URL: {e}")
                    })?
                    .no_proxy(no_proxy.clone()),
            );
        }
        if let Some(url) = &proxy.http {
            builder = builder.proxy(
                reqwest::Proxy::http(url)
                    .map_err(|e| {
                        anyhow::anyhow!("HTTP_PROXY {url:?} is not a valid proxy URL: {e}")
                    })?
                    .no_proxy(no_proxy),
            );
        }
        Ok(Net {
            client: builder.build().map_err(setup)?,
        })
    }

    /// The underlying client, for azure_identity's transport.
    pub fn client(&self) -> reqwest::Client {
        self.client.clone()
    }

    /// `GET url`; any status is a response.
    pub async fn get(
        &self,
        url: &Url,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<NetResponse, NetError> {
        self.send(Method::GET, url, headers, None, timeout).await
    }

    /// `POST url` with a form body; any status is a response. The body may hold secrets and is
    /// never logged.
    pub async fn post_form(
        &self,
        url: &Url,
        body: String,
        timeout: Duration,
    ) -> Result<NetResponse, NetError> {
        let headers = [("content-type", "application/x-www-form-urlencoded")];
        self.send(Method::POST, url, &headers, Some(body), timeout)
            .await
    }

    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<String>,
        timeout: Duration,
    ) -> Result<NetResponse, NetError> {
        let host = url.host_str().unwrap_or("").to_owned();
        if timeout.is_zero() {
            return Err(NetError::DeadlinePassed(host));
        }
        let mut request = self
            .client
            .request(method.clone(), url.clone())
            .timeout(timeout);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        tracing::debug!(%method, %host, path = url.path(), "HTTP request");
        let mut response = request
            .send()
            .await
            .map_err(|e| transport_error(&host, &e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_BODY_BYTES {
                        return Err(NetError::Body {
                            host,
                            reason: format!("answer larger than {MAX_BODY_BYTES} bytes"),
                        });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(NetError::Body {
                        host: host.clone(),
                        reason: transport_error(&host, &e).to_string(),
                    });
                }
            }
        }
        tracing::debug!(%host, status, bytes = body.len(), "HTTP response");
        Ok(NetResponse {
            status,
            headers,
            body,
        })
    }
}

fn transport_error(host: &str, error: &reqwest::Error) -> NetError {
    let mut reason = kcp_common::logging::error_chain(error);
    // reqwest puts the full URL in its message; keep the host only.
    if let Some(url) = error.url() {
        reason = reason.replace(url.as_str(), host);
    }
    if error.is_timeout() && !reason.contains("timed out") {
        reason.push_str(" (timed out)");
    }
    NetError::Transport {
        host: host.to_owned(),
        reason,
    }
}
