//! `passthrough`: the service-account token itself is the password (Harbor's workload-identity
//! build, Zot with OIDC bearer tokens). Nothing is sent anywhere; the credential lives as long as
//! the token.

use kcp_oidc_registries::Passthrough;

use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// The credential: the configured user name and the token, for the token's own life.
pub(crate) async fn exchange(
    x: &Exchange<'_>,
    settings: &Passthrough,
) -> Result<Issued, ProtocolError> {
    Ok(credential(x.sa_token, settings))
}

/// The credential, without any runtime: the provider answers passthrough entries from its plan.
pub fn credential(sa_token: &kcp_kubelet::Secret, settings: &Passthrough) -> Issued {
    Issued {
        username: settings.username.clone(),
        password: sa_token.clone(),
        expires_at: kcp_plugin::jwt::expiry(sa_token.expose()),
    }
}
