//! The library behind `alibaba-credential-provider`, the kubelet image credential provider for
//! Alibaba Cloud Container Registry (the binary, `src/main.rs`, is its command line).
//!
//! One module per concern, lowest first:
//! - [`sign`]: the V3 request signature (`ACS3-HMAC-SHA256`) every Alibaba API call carries.
//! - [`credentials`]: an access key (long-lived or STS) and where one comes from.
//! - [`api`]: one Alibaba OpenAPI call (signed or anonymous), its retries and its error answers.
//! - [`metadata`]: the ECS metadata server (hardened mode): the node's RAM role and region.
//! - [`sts`]: `AssumeRoleWithOIDC`, a pod's identity (RRSA) for its service-account token.
//! - [`cr`]: Container Registry's token calls (Enterprise and Personal Edition) and `ListInstance`.
//! - [`host`]: which registry hosts are Container Registry's, and what each names.
//! - [`instances`]: Enterprise instance names resolved to IDs, remembered on disk for a day.
//! - [`provider`]: which identity and which call answer a request.
//!
//! `fuzz` holds the bodies of the cargo-fuzz targets in `fuzz/` for the parsers of outside input;
//! it is built for cargo-fuzz and unit tests only.

pub mod api;
pub mod cr;
pub mod credentials;
pub mod host;
pub mod instances;
pub mod metadata;
pub mod provider;
pub mod sign;
pub mod sts;

#[cfg(any(fuzzing, test))]
pub mod fuzz;

#[cfg(test)]
mod fuzz_smoke;
