//! HTTP for the calls a provider makes by hand (metadata servers, token exchanges).
//!
//! One client setup for every provider: rustls with the ring provider (aws-lc-rs costs ~20 ms of CPU
//! in every exec), the system trust store plus `SSL_CERT_FILE`, short connect timeouts, and request
//! timeouts capped by the run's [`Deadline`]. Proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, either case) are honoured, except for cloud metadata endpoints: those
//! are link-local and node-only, and sending their traffic (and the tokens in it) to a proxy is
//! both wrong and dangerous, so [`Route::Metadata`] and every link-local address go direct.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::{Method, Url};

use crate::deadline::Deadline;

/// Default connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default per-request timeout (further capped by the deadline).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Most bytes read from a response body; token answers are a few KiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Installs ring as the process-wide rustls provider. Idempotent; call before any TLS.
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Where a request goes, which decides whether proxies apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A public or corporate endpoint: proxy variables apply.
    Internet,
    /// A node-local metadata endpoint: never proxied.
    Metadata,
}

/// Proxy settings, normally read from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Proxy for `https://` URLs.
    pub https: Option<String>,
    /// Proxy for `http://` URLs.
    pub http: Option<String>,
    /// Hosts that bypass the proxy, in curl's `NO_PROXY` syntax.
    pub no_proxy: Option<String>,
}

impl ProxyConfig {
    /// Reads `HTTPS_PROXY`/`https_proxy`, `HTTP_PROXY`/`http_proxy`, `ALL_PROXY`/`all_proxy` and
    /// `NO_PROXY`/`no_proxy`; the lowercase spelling wins, as in curl.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`Self::from_env`], from any lookup function (tests, the checker's merged environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| {
            lookup(&name.to_ascii_lowercase())
                .or_else(|| lookup(name))
                .filter(|v| !v.trim().is_empty())
        };
        let all = get("ALL_PROXY");
        ProxyConfig {
            https: get("HTTPS_PROXY").or_else(|| all.clone()),
            http: get("HTTP_PROXY").or(all),
            no_proxy: get("NO_PROXY"),
        }
    }
}

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
}

impl HttpError {
    /// Whether another attempt may succeed: timeouts, connection errors, 429 and 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            HttpError::Transport { .. } => true,
            HttpError::Status { status, .. } => *status == 429 || *status >= 500,
            HttpError::Setup(_) | HttpError::Body { .. } | HttpError::DeadlinePassed(_) => false,
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A successful answer.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code (2xx).
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// Response headers, lower-cased names.
    pub headers: Vec<(String, String)>,
}

impl HttpResponse {
    /// The first header of that (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP client that follows the rules in the module docs.
#[derive(Debug, Clone)]
pub struct HttpClient {
    proxied: reqwest::Client,
    direct: reqwest::Client,
    request_timeout: Duration,
}

impl HttpClient {
    /// A client with the environment's proxy settings and default timeouts.
    pub fn from_env() -> Result<Self, HttpError> {
        Self::new(&ProxyConfig::from_env(), CONNECT_TIMEOUT, REQUEST_TIMEOUT)
    }

    /// A client with explicit proxy settings and timeouts.
    pub fn new(
        proxy: &ProxyConfig,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<Self, HttpError> {
        install_crypto_provider();
        let base = || {
            reqwest::Client::builder()
                .connect_timeout(connect_timeout)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!(
                    "kubelet-credential-providers/",
                    env!("CARGO_PKG_VERSION")
                ))
                // Our own proxy handling below replaces reqwest's implicit environment lookup.
                .no_proxy()
        };
        let setup = |e: reqwest::Error| HttpError::Setup(e.to_string());
        let no_proxy = proxy
            .no_proxy
            .as_deref()
            .and_then(reqwest::NoProxy::from_string);
        let mut proxied = base();
        if let Some(url) = &proxy.https {
            proxied = proxied.proxy(
                reqwest::Proxy::https(url)
                    .map_err(setup)?
                    .no_proxy(no_proxy.clone()),
            );
        }
        if let Some(url) = &proxy.http {
            proxied = proxied.proxy(
                reqwest::Proxy::http(url)
                    .map_err(setup)?
                    .no_proxy(no_proxy.clone()),
            );
        }
        Ok(HttpClient {
            proxied: proxied.build().map_err(setup)?,
            direct: base().build().map_err(setup)?,
            request_timeout,
        })
    }

    /// Sends one request and returns a 2xx answer, or an error naming the host.
    ///
    /// `headers` and `body` may carry secrets; they are never logged.
    pub async fn send(
        &self,
        route: Route,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        deadline: Deadline,
    ) -> Result<HttpResponse, HttpError> {
        let host = url.host_str().unwrap_or("").to_owned();
        let timeout = deadline.cap(self.request_timeout);
        if timeout.is_zero() {
            return Err(HttpError::DeadlinePassed(host));
        }
        let client = if route == Route::Metadata || is_link_local_url(url) {
            &self.direct
        } else {
            &self.proxied
        };
        let mut request = client.request(method.clone(), url.clone()).timeout(timeout);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        tracing::debug!(%method, %host, path = url.path(), ?route, "HTTP request");
        let response = request
            .send()
            .await
            .map_err(|e| transport_error(&host, &e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = read_body(response, &host).await?;
        tracing::debug!(%host, status, bytes = body.len(), "HTTP response");
        if !(200..300).contains(&status) {
            return Err(HttpError::Status {
                host,
                status,
                detail: excerpt(&body),
            });
        }
        Ok(HttpResponse {
            status,
            body,
            headers,
        })
    }
}

async fn read_body(mut response: reqwest::Response, host: &str) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(HttpError::Body {
                        host: host.to_owned(),
                        reason: format!("answer larger than {MAX_BODY_BYTES} bytes"),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(transport_error(host, &e)),
        }
    }
}

fn transport_error(host: &str, error: &reqwest::Error) -> HttpError {
    let mut reason = crate::logging::error_chain(error);
    // reqwest puts the full URL in its message; keep the host only, a query may hold a secret.
    if let Some(url) = error.url() {
        reason = reason.replace(url.as_str(), host);
    }
    HttpError::Transport {
        host: host.to_owned(),
        reason,
        timeout: error.is_timeout(),
    }
}

/// A short one-line excerpt of an error body, for diagnostics.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(body);
    let line = crate::logging::one_line(&text);
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Whether the URL's host is a link-local address (cloud metadata lives there).
pub fn is_link_local_url(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => is_link_local(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_link_local(IpAddr::V6(ip)),
        _ => false,
    }
}

/// 169.254.0.0/16, fe80::/10 and AWS's IPv6 IMDS address fd00:ec2::254.
pub fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}
