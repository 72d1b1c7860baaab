//! `chainguard`: Chainguard's STS exchange for an assumable identity.

use kcp_oidc_registries::Chainguard;

use super::{Exchange, Issued, ProtocolError};

/// Trades the service-account token for a pull credential.
pub(crate) async fn exchange(
    _x: &Exchange<'_>,
    _settings: &Chainguard,
) -> Result<Issued, ProtocolError> {
    Err(ProtocolError::NotImplemented("chainguard"))
}
