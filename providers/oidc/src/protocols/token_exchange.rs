//! `token-exchange`: an OAuth 2.0 token exchange (RFC 8693) at the entry's token endpoint, as
//! Keycloak, Dex or an STS in front of a Docker token server take it.

use kcp_oidc_registries::TokenExchange;

use super::{Exchange, Issued, ProtocolError};

/// Trades the service-account token for an access token.
pub(crate) async fn exchange(
    _x: &Exchange<'_>,
    _settings: &TokenExchange,
) -> Result<Issued, ProtocolError> {
    Err(ProtocolError::NotImplemented("token-exchange"))
}
