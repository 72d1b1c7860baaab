//! The kubelet's own side of image credential providers, reproduced for the checker and tests.
//!
//! `kcp-kubelet` holds the contract a plugin implements (what it reads and writes); this crate
//! holds what the kubelet itself does around it: read and validate a `CredentialProviderConfig`,
//! spawn a plugin, and judge the plugin's stdout. It spawns processes and carries the kubelet's
//! config rules, so no provider links it: `credential-provider-check` does, and the test kit and
//! tests do (a test in `tests/provider_links.rs` keeps it that way).
//!
//! - [`config`], [`validate`]: `CredentialProviderConfig` read and validated as the kubelet does,
//!   for the kubelet version and feature gates [`kubelet_version`] describes.
//! - [`exec`]: the kubelet's side of an exec: run a plugin and decode its answer strictly.
//! - [`stdout_shape`]: a plugin's stdout described and shown without its values.
//!
//! The kubelet's behaviour reproduced here is written up in `docs/kubelet-contract.md`.

pub mod config;
pub mod exec;
pub mod kubelet_version;
pub mod stdout_shape;
pub mod validate;
