//! HTTP for the calls a provider makes by hand (metadata servers, token exchanges).
//!
//! One client setup for every provider: rustls with the ring provider (aws-lc-rs costs ~20 ms of CPU
//! in every exec), the system trust store plus `SSL_CERT_FILE`, short connect timeouts, and request
//! timeouts capped by the run's [`Deadline`].
//!
//! Where a request may go (docs/operations.md, "Proxies"):
//! - Plain `http://` on [`Route::Internet`] goes only to node-local addresses: loopback (a local
//!   relay, the tests' fakes) and link-local metadata (169.254.0.0/16, fe80::/10, AWS's
//!   fd00:ec2::254 and fd00:ec2::23). Anything else is refused before a byte is sent
//!   ([`HttpError::PlainHttp`]): the request would carry a token in cleartext.
//! - Node-local addresses and [`Route::Metadata`] always go direct, whatever `NO_PROXY` says: a
//!   proxy cannot reach them, and sending their tokens to one would put them on the network.
//! - Everything else is https and goes through `HTTPS_PROXY` (or `ALL_PROXY`, either case) unless
//!   `NO_PROXY` names it. `HTTP_PROXY` therefore never applies. A malformed proxy variable fails
//!   only the first request that would use it, with a line naming the variable.
//!
//! Clients are built on first use and plain-`http://` requests use one without a trust store, so
//! a run that only talks to a metadata server never reads the system's CA certificates (a 200 KB
//! file and ~0.6M instructions per exec, see `tls`). Error excerpts of answer bodies are cut
//! short and token-like runs in them redacted ([`redact_token_like`]), and redirects are never
//! followed (a token must not follow one).
//!
//! Every retried call goes through [`HttpClient::send_retrying_with`]: its [`RetryRules`] say which
//! statuses are transient, which answers the caller wants back (ACR's challenge needs its 401),
//! and whether a server's `Retry-After` replaces the backoff; the loop itself is
//! [`crate::retry::retry`] and the header is read by [`crate::retry::retry_after`].

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use reqwest::{Method, Url};

use std::cell::Cell;

use crate::deadline::Deadline;
use crate::endpoint::{describe, is_loopback};
use crate::retry::{Retry, RetryPolicy, retry, retry_after};

/// Default connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default per-request timeout (further capped by the deadline).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// When a call's timeout is cut short by the run's deadline, it ends this much earlier, so the
/// caller can still report which call timed out before the runner's overall deadline fires.
pub const DEADLINE_SLACK: Duration = Duration::from_millis(100);
/// Most bytes read from a response body; token answers are a few KiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Installs ring as the process-wide rustls provider. Idempotent; call before any TLS.
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Static glibc builds (release binaries) only: resolve host names with glibc's built-in `files`
/// (/etc/hosts) and `dns` (/etc/resolv.conf) services, whatever the node's /etc/nsswitch.conf says.
///
/// A statically linked glibc still reads nsswitch.conf and would dlopen the node's NSS modules for
/// any other service listed there (`resolve`, `myhostname`, `mdns4_minimal`…), pulling the node's
/// own, possibly different, glibc into the process; glibc warns that this needs the exact version
/// the binary was linked with. `files` and `dns` are part of libc itself since glibc 2.34, so with
/// this pin name resolution never leaves the binary. Runs before any client exists, hence before
/// any lookup.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
fn pin_static_host_lookup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        unsafe extern "C" {
            // Part of glibc's public ABI (GLIBC_2.2.5 on x86_64); meant for exactly this override.
            fn __nss_configure_lookup(
                db: *const std::ffi::c_char,
                service_line: *const std::ffi::c_char,
            ) -> std::ffi::c_int;
        }
        // SAFETY: two NUL-terminated static strings; no lookup is running yet (see above).
        let rc = unsafe { __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr()) };
        if rc != 0 {
            tracing::debug!("could not pin host lookups to files and dns; nsswitch.conf applies");
        }
    });
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
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// The proxy for https requests (the only ones ever proxied, see the module docs).
    pub https: Option<ProxyUrl>,
    /// Hosts that bypass the proxy, in curl's `NO_PROXY` syntax.
    pub no_proxy: Option<String>,
}

/// A proxy URL and the environment variable it was read from, which errors name.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    /// `HTTPS_PROXY`, `https_proxy`, `ALL_PROXY` or `all_proxy`.
    pub variable: &'static str,
    /// The proxy, e.g. `http://proxy.corp:3128`; may hold a user name and password.
    pub url: String,
}

impl ProxyConfig {
    /// Reads `HTTPS_PROXY`/`https_proxy` (else `ALL_PROXY`/`all_proxy`) and
    /// `NO_PROXY`/`no_proxy`; the lowercase spelling wins, as in curl.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`Self::from_env`], from any lookup function (tests, the checker's merged environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |names: [&'static str; 2]| {
            names.into_iter().find_map(|variable| {
                lookup(variable)
                    .filter(|v| !v.trim().is_empty())
                    .map(|url| ProxyUrl { variable, url })
            })
        };
        ProxyConfig {
            https: get(["https_proxy", "HTTPS_PROXY"]).or_else(|| get(["all_proxy", "ALL_PROXY"])),
            no_proxy: get(["no_proxy", "NO_PROXY"]).map(|v| v.url),
        }
    }

    /// An https proxy as if `HTTPS_PROXY` named it (tests, tools).
    pub fn https(url: impl Into<String>) -> Self {
        ProxyConfig {
            https: Some(ProxyUrl {
                variable: "HTTPS_PROXY",
                url: url.into(),
            }),
            no_proxy: None,
        }
    }
}

/// Proxy URLs may carry a password: Debug output (and so any `{:?}` of a client) shows only
/// which variable set one.
impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("https", &self.https.as_ref().map(|p| p.variable))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyUrl({})", self.variable)
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

/// An answer: always 2xx from [`HttpClient::send`], any status from [`HttpClient::fetch`].
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
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

    /// Every value of a header, in order: some headers (`WWW-Authenticate`) may be repeated, each
    /// with its own meaning. Values that were not text were dropped on receipt.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The server's clock when it answered (its `Date` header), when readable: expiry times in
    /// the answer are written by that clock, not the node's.
    pub fn date(&self) -> Option<SystemTime> {
        self.header("date").and_then(crate::time::parse_http_date)
    }
}

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

/// Which client a request needs. Plain http is never proxied (it only goes to node-local
/// addresses), so there is no proxied plain client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Direct plain `http://`: no trust store is ever loaded for it.
    Plain,
    /// Direct https.
    Tls,
    /// https through the proxy variables.
    ProxiedTls,
}

impl HttpClient {
    /// A client with the environment's proxy settings and default timeouts.
    pub fn from_env() -> Result<Self, HttpError> {
        Self::new(&ProxyConfig::from_env(), CONNECT_TIMEOUT, REQUEST_TIMEOUT)
    }

    /// A client with explicit proxy settings and timeouts. Clients, and the proxy URL, are set up
    /// on first use: a run that never needs the proxy never fails because of it.
    pub fn new(
        proxy: &ProxyConfig,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<Self, HttpError> {
        Ok(Self::with(
            proxy.clone(),
            None,
            connect_timeout,
            request_timeout,
        ))
    }

    /// A client that only calls `pin.host`, connected to `pin.addrs` whatever DNS says, trusting
    /// only `pin.trust`, and never through a proxy (the proxy variables are not read).
    ///
    /// For an in-cluster endpoint reached by address but verified by name, such as AKS's identity
    /// bindings behind the API server's address: a proxy could not reach it, and the system's
    /// public CAs must not vouch for it.
    pub fn pinned(
        pin: Pin,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<Self, HttpError> {
        Ok(Self::with(
            ProxyConfig::default(),
            Some(pin),
            connect_timeout,
            request_timeout,
        ))
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
        pin_static_host_lookup();
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
        let node_local = is_loopback(url) || is_link_local_url(url);
        let kind = match (url.scheme(), route) {
            ("http", Route::Metadata) => Kind::Plain,
            ("http", Route::Internet) if node_local => Kind::Plain,
            ("http", Route::Internet) => return Err(HttpError::PlainHttp(describe(url))),
            (_, Route::Metadata) => Kind::Tls,
            (_, Route::Internet) if node_local => Kind::Tls,
            (_, Route::Internet) => Kind::ProxiedTls,
        };
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
        if let (Kind::ProxiedTls, Some(proxy)) = (kind, &self.proxy.https) {
            let no_proxy = self
                .proxy
                .no_proxy
                .as_deref()
                .and_then(reqwest::NoProxy::from_string);
            let parsed = reqwest::Proxy::https(&proxy.url).map_err(|e| {
                // reqwest's error does not quote the URL (which may hold a password).
                format!(
                    "{} is not a usable proxy URL ({}): fix or unset it",
                    proxy.variable,
                    crate::logging::error_chain(&e)
                )
            })?;
            builder = builder.proxy(parsed.no_proxy(no_proxy));
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

/// A request to send, possibly more than once.
pub struct Call<'a> {
    /// Proxy routing.
    pub route: Route,
    /// The HTTP method.
    pub method: Method,
    /// Where to.
    pub url: &'a Url,
    /// Headers; may carry secrets, never logged.
    pub headers: &'a [(&'a str, &'a str)],
    /// Body; may carry secrets, never logged.
    pub body: Option<&'a [u8]>,
    /// What the call is for, in log lines ("metadata token", "STS exchange").
    pub what: &'a str,
}

impl<'a> Call<'a> {
    /// A GET without headers or body (a metadata attribute, a public document).
    pub fn get(route: Route, url: &'a Url, what: &'a str) -> Self {
        Call {
            route,
            method: Method::GET,
            url,
            headers: &[],
            body: None,
            what,
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

/// A set of HTTP statuses, as inclusive ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statuses(pub &'static [(u16, u16)]);

impl Statuses {
    /// 2xx.
    pub const SUCCESS: Statuses = Statuses(&[(200, 299)]);
    /// Every status: the caller judges each answer itself.
    pub const ANY: Statuses = Statuses(&[(0, u16::MAX)]);
    /// 429 and 5xx: throttling and server trouble, which another try may get past.
    pub const THROTTLED_OR_SERVER_ERROR: Statuses = Statuses(&[(429, 429), (500, u16::MAX)]);

    /// Whether `status` is in the set.
    pub fn contains(self, status: u16) -> bool {
        self.0
            .iter()
            .any(|&(low, high)| (low..=high).contains(&status))
    }
}

/// What a retrying call tries again, hands back, and gives up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryRules {
    /// Attempts and backoff.
    pub policy: RetryPolicy,
    /// Statuses worth another try. Checked before `answers`.
    pub transient: Statuses,
    /// Statuses handed back as answers; any other is an [`HttpError::Status`]. A transient status
    /// that outlasts the retries is handed back too when it is in this set.
    pub answers: Statuses,
    /// When set, a transient answer's `Retry-After` (either form, [`retry_after`]) replaces the
    /// backoff, capped at this wait; without the header the backoff applies.
    pub max_retry_after: Option<Duration>,
    /// Whether an answer too large to read ([`HttpError::Body`]) is tried again.
    pub retry_body_errors: bool,
}

impl RetryRules {
    /// [`HttpClient::send_retrying`]'s rules: [`RetryPolicy::DEFAULT`], connection errors,
    /// timeouts, 429 and 5xx retried, 2xx answers only, `Retry-After` not read.
    pub const DEFAULT: RetryRules = RetryRules {
        policy: RetryPolicy::DEFAULT,
        transient: Statuses::THROTTLED_OR_SERVER_ERROR,
        answers: Statuses::SUCCESS,
        max_retry_after: None,
        retry_body_errors: false,
    };

    /// The wait before retrying a transient `answer`: its `Retry-After` when these rules honour
    /// it, else the backoff.
    fn wait_for(&self, answer: &HttpResponse) -> Retry {
        self.max_retry_after
            .and_then(|cap| {
                let asked = retry_after(answer.header("retry-after")?, SystemTime::now())?;
                Some(Retry::After(asked.min(cap)))
            })
            .unwrap_or(Retry::Transient)
    }
}

impl HttpClient {
    /// Sends `call` under [`RetryRules::DEFAULT`]: connection errors, timeouts, 429 and 5xx are
    /// retried with jittered backoff inside `deadline`; 2xx answers only.
    pub async fn send_retrying(
        &self,
        call: Call<'_>,
        deadline: Deadline,
    ) -> Result<HttpResponse, CallError> {
        self.send_retrying_with(call, deadline, &RetryRules::DEFAULT)
            .await
    }

    /// Sends `call` until `rules` say stop: an answer they hand back, an error that another try
    /// cannot fix, the last attempt, or a deadline with no room for another one. Connection
    /// errors and timeouts are always transient; an untrusted certificate, a failed client setup
    /// and a spent deadline never are.
    pub async fn send_retrying_with(
        &self,
        call: Call<'_>,
        deadline: Deadline,
        rules: &RetryRules,
    ) -> Result<HttpResponse, CallError> {
        /// An attempt that is not the final word: a transient answer, or a failure.
        enum Miss {
            Answer(HttpResponse),
            Failed(HttpError),
        }
        let attempts = Cell::new(0);
        let result = retry(
            rules.policy,
            deadline,
            |miss: &Miss| match miss {
                Miss::Answer(answer) => rules.wait_for(answer),
                Miss::Failed(e)
                    if e.is_transient()
                        || (rules.retry_body_errors && matches!(e, HttpError::Body { .. })) =>
                {
                    Retry::Transient
                }
                Miss::Failed(_) => Retry::Permanent,
            },
            |attempt, miss, wait| {
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                // Info, not warn: on success nobody needs it, on failure the final error counts
                // the attempts.
                match miss {
                    Miss::Answer(answer) => {
                        let error = status_error(call.url, answer);
                        tracing::info!(what = call.what, attempt, wait_ms, "{error}; retrying");
                    }
                    Miss::Failed(error) => {
                        tracing::info!(what = call.what, attempt, wait_ms, "{error}; retrying");
                    }
                }
            },
            |attempt| {
                attempts.set(attempt);
                tracing::debug!(what = call.what, attempt, "sending");
                let answer = self.fetch(
                    call.route,
                    call.method.clone(),
                    call.url,
                    call.headers,
                    call.body.map(<[u8]>::to_vec),
                    deadline,
                );
                async move {
                    match answer.await {
                        Ok(answer) if rules.transient.contains(answer.status) => {
                            Err(Miss::Answer(answer))
                        }
                        Ok(answer) => Ok(answer),
                        Err(error) => Err(Miss::Failed(error)),
                    }
                }
            },
        )
        .await;
        let error = match result {
            Ok(answer) | Err(Miss::Answer(answer)) if rules.answers.contains(answer.status) => {
                return Ok(answer);
            }
            Ok(answer) | Err(Miss::Answer(answer)) => status_error(call.url, &answer),
            Err(Miss::Failed(error)) => error,
        };
        Err(CallError {
            error,
            attempts: attempts.get(),
        })
    }
}

/// The error for an answer whose status the caller does not take: the host, the status and a
/// short redacted excerpt of the body.
fn status_error(url: &Url, answer: &HttpResponse) -> HttpError {
    HttpError::Status {
        host: url.host_str().unwrap_or("").to_owned(),
        status: answer.status,
        detail: excerpt(&answer.body),
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

/// A short one-line excerpt of an error body, for diagnostics. Every secret this process holds
/// (`kcp_kubelet::secret::redact_known`: exact values, so an AWS secret key with `/` too) and
/// then every token-like run is redacted before the cut, so a body that quotes the token it
/// rejects (or a fragment of it) cannot carry it into a log line.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(body);
    let known = kcp_kubelet::secret::redact_known(&text);
    let line = redact_token_like(&crate::logging::one_line(&known));
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Shortest run of token characters that [`redact_token_like`] replaces. Words of error
/// messages, host names (split at dots) and UUIDs (36) are shorter; access tokens, JWT segments,
/// keys and signatures are longer.
pub const TOKEN_RUN_MIN: usize = 40;

/// Replaces every run of at least [`TOKEN_RUN_MIN`] characters from `[A-Za-z0-9_+=-]` (the
/// base64 and base64url alphabets without `/`) with `<redacted>`.
pub fn redact_token_like(text: &str) -> String {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '=');
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= TOKEN_RUN_MIN {
            out.push_str(kcp_kubelet::secret::REDACTED);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if is_token_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Whether the URL's host is a link-local address (cloud metadata lives there).
pub fn is_link_local_url(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => is_link_local(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_link_local(IpAddr::V6(ip)),
        _ => false,
    }
}

/// 169.254.0.0/16, fe80::/10 and AWS's node-local IPv6 addresses: fd00:ec2::254 (IMDS) and
/// fd00:ec2::23 (the EKS Pod Identity agent).
pub fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)
        }
    }
}
