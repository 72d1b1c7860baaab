//! `chainguard`: Chainguard's security token service, assuming an identity.
//!
//! One `POST <endpoint>/sts/exchange?aud=<audience>&identity=<identity id>` with the
//! service-account token as a bearer token and an empty body (the service reads its parameters
//! from the query). The answer's `token` is the password for `cgr.dev`, for its own JWT `exp`;
//! the user is `_token` unless the entry sets `username`.

use kcp_oidc_registries::Chainguard;
use reqwest::Method;

use super::vendor::{self, VendorCall};
use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// The user name sent with the issued token when the entry sets none: the registry reads the
/// identity from the token, and Chainguard's own examples log in with this one.
pub const DEFAULT_USERNAME: &str = "_token";

/// What to check when the service refuses.
const HINT: &str = "check that the assumable identity's issuer and subject match the cluster's service-account issuer and system:serviceaccount:<namespace>:<name>, its audience the token's, and identity its id";

/// Trades the service-account token for a Chainguard registry token.
pub(crate) async fn exchange(
    x: &Exchange<'_>,
    settings: &Chainguard,
) -> Result<Issued, ProtocolError> {
    let mut url = vendor::join(super::endpoint(x)?, &["sts", "exchange"])?;
    let audience = settings.audience.as_deref().unwrap_or(x.host);
    url.query_pairs_mut()
        .append_pair("aud", audience)
        .append_pair("identity", &settings.identity);
    let authorization = format!("Bearer {}", x.sa_token.expose());
    let (token, _) = vendor::token_call(
        x,
        VendorCall {
            method: Method::POST,
            url: &url,
            // An explicit zero length: some front ends refuse a POST without one (HTTP 411).
            headers: &[
                ("Authorization", &authorization),
                ("Accept", "application/json"),
                ("Content-Length", "0"),
            ],
            body: None,
            what: "Chainguard STS exchange",
            field: "token",
            hint: HINT,
        },
    )
    .await?;
    let username = settings.username.as_deref().unwrap_or(DEFAULT_USERNAME);
    Ok(Issued::from_token(username, token))
}
