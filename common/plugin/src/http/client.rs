//! The client itself: one lazily built reqwest client per kind of route (so a run that only talks
//! plain http to a metadata server never loads the trust store), a pinned variant for in-cluster
//! endpoints, timeouts capped by the deadline, no redirects, and the body cap.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::{Method, Url};

use super::crypto::install_crypto_provider;
use super::error::{HttpError, status_error, transport_error};
use super::proxy::{Kind, ProxyConfig, Route};
use super::response::HttpResponse;
use super::statuses::Statuses;
use super::{CONNECT_TIMEOUT, DEADLINE_SLACK, MAX_BODY_BYTES, REQUEST_TIMEOUT};
use crate::deadline::Deadline;
use crate::endpoint::describe;

/// An HTTP client that follows the rules in the module docs.
///
/// The underlying clients are built on first use, one per kind of route: building one loads the
/// system's CA certificates (a 200 KB bundle, read once per process), and a run that only talks
/// plain HTTP to a metadata server needs none of them.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: Arc<Clients>,
}

#[derive(Debug)]
struct Clients {
    proxy: ProxyConfig,
    /// Set by [`HttpClient::pinned`]: one host, fixed addresses, its own trust anchors, no proxy.
    pin: Option<Pin>,
    connect_timeout: Duration,
    request_timeout: Duration,
    /// One lazily built client per [`Kind`], indexed by `Kind as usize`.
    clients: [OnceLock<Result<reqwest::Client, String>>; 3],
}

impl HttpClient {
    /// A client with the environment's proxy settings and default timeouts.
    pub fn from_env() -> Self {
        Self::new(&ProxyConfig::from_env(), CONNECT_TIMEOUT, REQUEST_TIMEOUT)
    }

    /// A client with explicit proxy settings and timeouts. Clients, and the proxy URL, are set up
    /// on first use (a failure there is the call's error), so making one cannot fail: a run that
    /// never needs the proxy never fails because of it.
    pub fn new(proxy: &ProxyConfig, connect_timeout: Duration, request_timeout: Duration) -> Self {
        Self::with(proxy.clone(), None, connect_timeout, request_timeout)
    }

    /// A client that only calls `pin.host`, connected to `pin.addrs` whatever DNS says, trusting
    /// only `pin.trust`, and never through a proxy (the proxy variables are not read).
    ///
    /// For an in-cluster endpoint reached by address but verified by name, such as AKS's identity
    /// bindings behind the API server's address: a proxy could not reach it, and the system's
    /// public CAs must not vouch for it.
    pub fn pinned(pin: Pin, connect_timeout: Duration, request_timeout: Duration) -> Self {
        Self::with(
            ProxyConfig::default(),
            Some(pin),
            connect_timeout,
            request_timeout,
        )
    }

    /// The one constructor behind [`Self::new`] and [`Self::pinned`].
    fn with(
        proxy: ProxyConfig,
        pin: Option<Pin>,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Self {
        install_crypto_provider();
        #[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
        super::nss::pin_static_host_lookup();
        HttpClient {
            inner: Arc::new(Clients {
                proxy,
                pin,
                connect_timeout,
                request_timeout,
                clients: Default::default(),
            }),
        }
    }

    fn client(&self, kind: Kind) -> Result<&reqwest::Client, HttpError> {
        self.inner.clients[kind as usize]
            .get_or_init(|| self.inner.build(kind))
            .as_ref()
            .map_err(|e| HttpError::Setup(e.clone()))
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
        let response = self
            .fetch(route, method, url, headers, body, deadline)
            .await?;
        if !Statuses::SUCCESS.contains(response.status) {
            return Err(status_error(url, &response));
        }
        Ok(response)
    }

    /// As [`Self::send`], but returns the answer whatever its status (for clients such as SDK
    /// transports that read error bodies themselves). Transport failures, the body cap and the
    /// deadline still give errors.
    pub async fn fetch(
        &self,
        route: Route,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        deadline: Deadline,
    ) -> Result<HttpResponse, HttpError> {
        let host = url.host_str().unwrap_or("").to_owned();
        if let Some(pin) = &self.inner.pin
            && (!host.eq_ignore_ascii_case(&pin.host) || url.scheme() != "https")
        {
            return Err(HttpError::Setup(format!(
                "this client only calls https://{}, not {}",
                pin.host,
                describe(url)
            )));
        }
        let mut timeout = deadline.cap(self.inner.request_timeout);
        if timeout < self.inner.request_timeout {
            timeout = timeout.saturating_sub(DEADLINE_SLACK);
        }
        if timeout.is_zero() {
            return Err(HttpError::DeadlinePassed(host));
        }
        let kind = Kind::for_request(url, route)?;
        let client = self.client(kind)?;
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
        Ok(HttpResponse {
            status,
            body,
            headers,
        })
    }
}

impl Clients {
    fn build(&self, kind: Kind) -> Result<reqwest::Client, String> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!(
                "kubelet-credential-providers/",
                env!("CARGO_PKG_VERSION")
            ))
            // Our own proxy handling below replaces reqwest's implicit environment lookup.
            .no_proxy();
        if kind == Kind::ProxiedTls {
            builder = self.proxy.apply(builder)?;
        }
        if let Some(pin) = &self.pin {
            // The URL's port, when it names one, replaces the pinned address's port.
            builder = builder.resolve_to_addrs(&pin.host, &pin.addrs);
            let config =
                crate::tls::client_config_for(pin.trust.clone()).map_err(|e| e.to_string())?;
            builder = builder.tls_backend_preconfigured(config);
        } else if kind != Kind::Plain {
            // Our trust store (fast PEM loading, SSL_CERT_FILE/SSL_CERT_DIR) instead of the
            // platform verifier, which costs ~4 ms of CPU per process to parse the same bundle.
            let config = crate::tls::client_config().map_err(|e| e.to_string())?;
            builder = builder.tls_backend_preconfigured(config);
        } else {
            // An empty trust store: nothing is read from disk, and https cannot succeed, which
            // is fine because this client only ever sees http:// URLs over plain connections.
            builder = builder.tls_certs_only(std::iter::empty());
        }
        builder.build().map_err(|e| crate::logging::error_chain(&e))
    }
}

/// Where a [`HttpClient::pinned`] client goes and whom it trusts.
#[derive(Debug, Clone)]
pub struct Pin {
    /// The only host called: the URL host, the TLS server name (SNI) and the certificate name.
    pub host: String,
    /// The addresses connected to (in order) instead of resolving `host`.
    pub addrs: Vec<SocketAddr>,
    /// The only anchors the server's certificate may chain to.
    pub trust: Arc<crate::tls::TrustStore>,
}

/// The body, up to [`MAX_BODY_BYTES`]: a larger answer is an error, not a truncated body.
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
