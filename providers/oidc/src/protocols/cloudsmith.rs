//! `cloudsmith`: Cloudsmith's OpenID Connect exchange for a service account.
//!
//! One JSON `POST <endpoint>/openid/<organization>/` with the service-account token as
//! `oidc_token` and the Cloudsmith service account's `service_slug`. The answer's `token` (a
//! short-lived API key) is the password, for its own JWT `exp` when it is one; the user is the
//! service account's slug, or the entry's `username`.

use kcp_oidc_registries::Cloudsmith;
use serde_json::json;

use super::vendor;
use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// What to check when Cloudsmith refuses.
const HINT: &str = "check the organization's OpenID Connect provider in Cloudsmith (its provider URL: the cluster's service-account issuer; its claims; serviceSlug among its service accounts) and organization";

/// Trades the service-account token for a Cloudsmith API token.
pub(crate) async fn exchange(
    x: &Exchange<'_>,
    settings: &Cloudsmith,
) -> Result<Issued, ProtocolError> {
    let url = vendor::join(super::endpoint(x)?, &["openid", &settings.organization, ""])?;
    let body = json!({
        "oidc_token": x.sa_token.expose(),
        "service_slug": settings.service_slug,
    });
    let (token, _) =
        vendor::post_json(x, &url, &body, "Cloudsmith OIDC exchange", "token", HINT).await?;
    let username = settings
        .username
        .as_deref()
        .unwrap_or(&settings.service_slug);
    Ok(Issued::from_token(username, token))
}
