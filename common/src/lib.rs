//! Shared plumbing for kubelet image credential provider plugins.
//!
//! Every provider binary in this workspace is thin: its flags, its token source and the mapping of
//! a token into [`protocol::Credentials`]. Everything the kubelet contract asks of all of them lives
//! here, one module per concern:
//!
//! - [`protocol`]: the `CredentialProviderRequest`/`Response` wire types, v1, v1beta1 and v1alpha1.
//! - [`duration`]: Go duration strings, as `cacheDuration` carries them.
//! - [`image`]: image references and their registry host.
//! - [`matching`]: the kubelet's glob matching for `matchImages` and `auth` keys.
//! - [`cache_hint`]: `cacheDuration` from a credential's real expiry, and fleet jitter.
//! - [`token_cache`]: the opt-in on-disk token cache shared by concurrent and later execs.
//! - [`jwt`]: unverified JWT claims (expiry, service-account identity).
//! - [`runner`]: stdin → provider → exactly one response on stdout, errors as one stderr line.
//! - [`cli`], [`logging`]: shared flags and stderr logging.
//! - [`deadline`], [`retry`], [`http`]: one overall deadline, jittered retries, HTTP for hand-rolled calls.
//! - [`secret`]: a string type that never prints its value.
//! - [`tls`]: the trust store (fast PEM loading) and rustls client configuration.
//! - [`kubelet`]: the kubelet's side (exec a plugin, decode its answer strictly), for tests and tools.
//! - `testkit` (feature `testkit`): assertions for provider integration tests.

pub mod cache_hint;
pub mod cli;
pub mod deadline;
pub mod duration;
pub mod http;
pub mod image;
pub mod jwt;
pub mod kubelet;
pub mod logging;
pub mod matching;
pub mod protocol;
pub mod retry;
pub mod runner;
pub mod secret;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod tls;
pub mod token_cache;

pub use protocol::{ApiVersion, AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials};
pub use runner::ProviderError;
pub use secret::Secret;
