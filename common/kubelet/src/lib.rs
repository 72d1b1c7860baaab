//! The kubelet's image credential provider contract, in Rust.
//!
//! This crate owns what the kubelet defines, independent of any cloud and of how a plugin is run:
//! a plugin written in Rust, a test and a config checker all read the contract from here.
//!
//! - [`protocol`]: `CredentialProviderRequest`/`Response`, v1, v1beta1 and v1alpha1.
//! - [`duration`]: Go duration strings, as `cacheDuration` and `defaultCacheDuration` carry them.
//! - [`image`]: image references and their registry host, parsed as the kubelet does.
//! - [`matching`]: the kubelet's glob matching for `matchImages` and `auth` keys, on top of
//!   hand-made copies of the Go standard library functions it calls (`go`: `net/url`,
//!   `net.SplitHostPort`, `net/netip`, `path/filepath.Match`, `strconv.Quote`).
//! - [`mirror`]: the `--registry-mirror SRC:DST` flag providers share (and the checker reads).
//! - [`cache_hint`]: `cacheDuration` from a credential's real expiry, and fleet jitter.
//! - [`secret`]: a string type that never prints its value (the response's password).
//! - [`config`], [`validate`]: `CredentialProviderConfig` read and validated as the kubelet does,
//!   for the kubelet version and feature gates [`kubelet_version`] describes.
//! - [`exec`]: the kubelet's side of an exec: run a plugin and decode its answer strictly.
//! - [`stdout_shape`]: a plugin's stdout described and shown without its values.
//! - [`flags`]: the command lines of this project's providers, checked alike by them and the checker.
//!
//! The contract as this project implements it is written up in `docs/kubelet-contract.md`.

pub mod cache_hint;
pub mod config;
pub mod duration;
pub mod exec;
pub mod flags;
mod go;
pub mod image;
pub mod kubelet_version;
pub mod matching;
pub mod mirror;
pub mod protocol;
pub mod secret;
pub mod stdout_shape;
pub mod validate;
pub mod yaml11;

pub use protocol::{ApiVersion, AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials};
pub use secret::Secret;
