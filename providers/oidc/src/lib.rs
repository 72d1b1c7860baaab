//! The library behind `oidc-credential-provider` (the binary, `src/main.rs`, is its command
//! line): the pod's service-account token traded for a registry credential, as the registries
//! file (`kcp_oidc_registries`) says for the image's registry.
//!
//! [`provider`] holds the kubelet side (which entry answers, the checks on the service-account
//! token, `cacheDuration`, the token cache); [`protocols`] the exchanges, one module per protocol;
//! [`answer`] the reading of the answers they share (OAuth token and error bodies, `{"token"}`
//! bodies, a credential's life); [`error`] why an exchange failed, which both of those make.
//! They stack one way: `provider` → `protocols` → `answer` → `error`.

pub mod answer;
pub mod error;
pub mod protocols;
pub mod provider;
