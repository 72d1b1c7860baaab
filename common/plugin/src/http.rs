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
//!
//! One file per concern under `http/`: `crypto` (the ring provider), `nss` (glibc's host lookup in
//! static builds), `proxy` (routes, proxy variables, node-local addresses), `client` (the lazily
//! built clients, timeouts, body cap), `response`, `statuses` (sets of statuses), `retrying`
//! (calls under [`RetryRules`]), `error` (failure classes and their messages) and `redact` (what
//! of a body may be logged). They stack one way: `retrying` → `client` → `proxy` → `error` →
//! `response`, `statuses`, `redact`.

use std::time::Duration;

mod client;
mod crypto;
mod error;
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
mod nss;
mod proxy;
mod redact;
mod response;
mod retrying;
mod statuses;

pub use client::{HttpClient, Pin};
pub use crypto::install_crypto_provider;
pub use error::{CallError, HttpError};
pub use proxy::{ProxyConfig, ProxyUrl, Route, is_link_local, is_link_local_url};
pub use redact::{TOKEN_RUN_MIN, redact_token_like};
pub use response::HttpResponse;
pub use retrying::{Call, RetryRules};
pub use statuses::Statuses;

/// Default connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default per-request timeout (further capped by the deadline).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// When a call's timeout is cut short by the run's deadline, it ends this much earlier, so the
/// caller can still report which call timed out before the runner's overall deadline fires.
pub const DEADLINE_SLACK: Duration = Duration::from_millis(100);
/// Most bytes read from a response body; token answers are a few KiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
