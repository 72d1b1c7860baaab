//! `jfrog`: the JFrog Platform's OIDC token exchange (Artifactory's Access service).
//!
//! One JSON `POST` to `<endpoint>/access/api/v1/oidc/token`: the token-exchange grant, the
//! service-account token as an `id_token` subject, the integration's `provider_name`, and
//! `provider_type`, `audience`, `project_key` and `identity_mapping_name` when the entry sets
//! them. The answer's `access_token` is the password for its `expires_in`; the user is the
//! answer's `username` (newer platforms say which user the identity mapping chose), else the
//! entry's `username`.

use kcp_oidc_registries::Jfrog;
use serde_json::{Map, Value};

use super::vendor;
use super::{Exchange, Issued};
use crate::error::ProtocolError;

/// The Access service's OIDC token endpoint, under the platform URL.
pub const TOKEN_PATH: [&str; 5] = ["access", "api", "v1", "oidc", "token"];
/// How the service-account token is described to the platform.
pub const SUBJECT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// What to check when the platform refuses.
const HINT: &str = "check that the JFrog OIDC integration named by providerName trusts the cluster's service-account issuer and audience, and that one of its identity mappings matches the token's claims";

/// Trades the service-account token for a JFrog access token.
pub(crate) async fn exchange(x: &Exchange<'_>, settings: &Jfrog) -> Result<Issued, ProtocolError> {
    let url = vendor::join(super::endpoint(x)?, &TOKEN_PATH)?;
    let (token, answer) = vendor::post_json(
        x,
        &url,
        &Value::Object(body(x, settings)),
        "JFrog OIDC token exchange",
        "access_token",
        HINT,
    )
    .await?;
    let username = match (
        vendor::string_field(&answer, "username"),
        &settings.username,
    ) {
        (Some(answered), _) => answered.to_owned(),
        (None, Some(configured)) => configured.clone(),
        (None, None) => {
            return Err(ProtocolError::Answer(
                "the JFrog platform issued a token but did not say for which user (no \"username\" in its answer, as older versions answer): set \"username\" in the entry to the user the integration's identity mapping maps to".to_owned(),
            ));
        }
    };
    Ok(Issued::from_token(username, token))
}

/// The request body: the required fields, then the entry's optional ones.
fn body(x: &Exchange<'_>, settings: &Jfrog) -> Map<String, Value> {
    let mut body = Map::new();
    let mut put = |name: &str, value: &str| {
        body.insert(name.to_owned(), Value::String(value.to_owned()));
    };
    put("grant_type", super::token_exchange::GRANT_TYPE);
    put("subject_token_type", SUBJECT_TOKEN_TYPE);
    put("subject_token", x.sa_token.expose());
    put("provider_name", &settings.provider_name);
    for (name, value) in [
        ("provider_type", &settings.provider_type),
        ("audience", &settings.audience),
        ("project_key", &settings.project_key),
        ("identity_mapping_name", &settings.identity_mapping_name),
    ] {
        if let Some(value) = value {
            put(name, value);
        }
    }
    body
}
