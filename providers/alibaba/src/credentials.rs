//! An Alibaba Cloud access key, and what every call needs to know of it.
//!
//! One type for the three kinds of key a node meets: a RAM user's long-lived pair (from the
//! environment), the ECS instance's RAM role credentials (`metadata`) and a pod's STS credentials
//! (`sts`). The signature (`sign`) only needs the id, the secret and, for STS credentials, the
//! security token; the provider needs the expiry to bound what it caches.

use std::time::SystemTime;

use kcp_kubelet::secret::Secret;

/// An access key: a RAM user's long-lived pair, or temporary STS credentials (with a security
/// token and an expiry). `Debug` never shows the secret or the token.
#[derive(Debug, Clone)]
pub struct AccessKey {
    /// `AccessKeyId`: not a secret, named in errors and cache keys.
    pub id: String,
    /// `AccessKeySecret`.
    pub secret: Secret,
    /// `SecurityToken` of STS credentials (sent as `x-acs-security-token`).
    pub security_token: Option<Secret>,
    /// When STS credentials expire; `None` for a long-lived pair.
    pub expiration: Option<SystemTime>,
}

impl AccessKey {
    /// A RAM user's long-lived pair (`ALIBABA_CLOUD_ACCESS_KEY_ID`/`_SECRET`): no token, no
    /// expiry. Both values are remembered for redaction ([`Secret::new`]).
    pub fn long_lived(id: impl Into<String>, secret: impl Into<String>) -> Self {
        AccessKey {
            id: id.into(),
            secret: Secret::new(secret),
            security_token: None,
            expiration: None,
        }
    }
}
