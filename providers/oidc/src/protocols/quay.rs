//! `quay-robot`: Quay's robot account federation.

use kcp_oidc_registries::QuayRobot;

use super::{Exchange, Issued, ProtocolError};

/// Trades the service-account token for a pull credential.
pub(crate) async fn exchange(
    _x: &Exchange<'_>,
    _settings: &QuayRobot,
) -> Result<Issued, ProtocolError> {
    Err(ProtocolError::NotImplemented("quay-robot"))
}
