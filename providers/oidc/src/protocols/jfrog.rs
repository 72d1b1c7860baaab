//! `jfrog`: JFrog Artifactory's OIDC token exchange.

use kcp_oidc_registries::Jfrog;

use super::{Exchange, Issued, ProtocolError};

/// Trades the service-account token for a pull credential.
pub(crate) async fn exchange(
    _x: &Exchange<'_>,
    _settings: &Jfrog,
) -> Result<Issued, ProtocolError> {
    Err(ProtocolError::NotImplemented("jfrog"))
}
