//! The runtime every provider binary in this workspace is built on.
//!
//! A provider is thin: its flags, its token source and the mapping of a token into
//! [`kcp_kubelet::Credentials`]. Everything else a plugin process needs lives here, one module per
//! concern:
//!
//! - [`cli`]: strict Go-style parsing (the provider's own flags and its upstream's klog flags),
//!   one-line usage errors.
//! - [`settings`]: flags and environment resolved once into one value, before stdin is read.
//! - [`hygiene`]: no core dumps and no ptrace by peers, from a provider's first line.
//! - [`provider`]: the one shape of every provider (plan, token cache, fetch), as a trait.
//! - [`runner`]: stdin → provider → exactly one response on stdout, errors as one stderr line.
//! - [`cache_hint`]: `cacheDuration` from a credential's real expiry, and fleet jitter.
//! - [`deadline`], [`retry`], [`http`]: one overall deadline, jittered retries, HTTP for hand-rolled calls.
//! - [`endpoint`]: which URLs may carry credentials (https, or http to loopback); URLs from input.
//! - [`tls`]: the trust store (fast PEM loading) and rustls client configuration.
//! - [`token_cache`]: the opt-in on-disk token cache shared by concurrent and later execs.
//! - [`metrics`]: the opt-in Prometheus textfile every exec adds its outcome to.
//! - [`jwt`]: unverified JWT claims (expiry, service-account identity).
//! - [`signing`]: what hand-signed requests share (RFC 3986 encoding, hex SHA-256).
//! - [`hex`]: lower-case hex for digests, shared by the token cache, the signers and the checker.
//! - [`time`]: dates servers send (HTTP `Date`, RFC 3339) and Unix seconds, one calendar routine.
//! - [`logging`]: leveled, one-line stderr logging.
//!
//! The protocol types themselves come from [`kcp_kubelet`], re-exported here for providers.

pub mod cache_hint;
pub mod cli;
pub mod deadline;
pub mod endpoint;
pub mod hex;
pub mod http;
pub mod hygiene;
pub mod jwt;
pub mod logging;
pub mod metrics;
pub mod provider;
pub mod retry;
pub mod runner;
pub mod safe_file;
pub mod settings;
pub mod signing;
pub mod time;
pub mod tls;
pub mod token_cache;

#[cfg(test)]
mod fuzz_smoke;

pub use kcp_kubelet::{
    self as kubelet, ApiVersion, AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials,
    Secret,
};
pub use provider::Provider;
pub use provider::ProviderError;
