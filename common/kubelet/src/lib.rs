//! The kubelet's image credential provider contract, in Rust.
//!
//! This crate holds the kubelet's contract and nothing of ours: the wire types, image references,
//! matching, Go durations and YAML as the kubelet reads it.
//!
//! It is independent of any cloud and of how a plugin is run: a plugin written in Rust, a test
//! and a config checker all read the contract from here. Every provider links it, so it spawns no
//! process and carries no config validation. The kubelet's own side (reading and validating
//! `CredentialProviderConfig`, running a plugin and judging its stdout) is the checker's, in
//! `kcp-kubelet-emulation`. What our provider binaries accept on their command line (flag tables,
//! Go's flag syntax, mirror mappings) is `kcp-provider-args`'s; how they choose `cacheDuration`
//! (margins, fleet jitter) and the hex of their digests are `kcp-plugin`'s.
//!
//! - [`protocol`]: `CredentialProviderRequest`/`Response`, v1, v1beta1 and v1alpha1.
//! - [`duration`]: Go duration strings, as `cacheDuration` and `defaultCacheDuration` carry them.
//! - [`image`]: image references and their registry host, parsed as the kubelet does.
//! - [`matching`]: the kubelet's glob matching for `matchImages` and `auth` keys, on top of
//!   hand-made copies of the Go standard library functions it calls (`go`: `net/url`,
//!   `net.SplitHostPort`, `net/netip`, `path/filepath.Match`, `strconv.Quote`).
//! - [`secret`]: a string type that never prints its value (the response's password).
//! - [`yaml11`]: YAML as the kubelet's `sigs.k8s.io/yaml` reads it (ACR's `azure.json`, and the
//!   checker's configs).
//!
//! The contract as this project implements it is written up in `docs/kubelet-contract.md`.

pub mod duration;
mod go;
pub mod image;
pub mod matching;
pub mod protocol;
pub mod secret;
pub mod yaml11;

pub use protocol::{ApiVersion, AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials};
pub use secret::Secret;
