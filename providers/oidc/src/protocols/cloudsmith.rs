//! `cloudsmith`: Cloudsmith's OIDC exchange.

use kcp_oidc_registries::Cloudsmith;

use super::{Exchange, Issued, ProtocolError};

/// Trades the service-account token for a pull credential.
pub(crate) async fn exchange(
    _x: &Exchange<'_>,
    _settings: &Cloudsmith,
) -> Result<Issued, ProtocolError> {
    Err(ProtocolError::NotImplemented("cloudsmith"))
}
