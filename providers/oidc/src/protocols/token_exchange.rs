//! `token-exchange`: an OAuth 2.0 token exchange (RFC 8693 §2.1) at the entry's token endpoint,
//! as Keycloak, Dex or an STS in front of a Docker token server take it.
//!
//! One form-encoded POST: `grant_type` (the token-exchange grant), `subject_token` (the pod's
//! service-account token) and `subject_token_type`, plus `audience`, `scope`, `resource` and
//! `requested_token_type` when the entry sets them. A confidential client authenticates with
//! HTTP Basic (`client_secret_basic`, RFC 6749 §2.3.1: id and secret form-encoded, then
//! base64); a public client (a `clientId` without a secret) sends `client_id` in the form. The
//! answer's `access_token` is the registry password, for `expires_in` (or the token's own JWT
//! `exp`); an OAuth error body (RFC 6749 §5.2) is quoted in the error line.

use std::time::SystemTime;

use base64::Engine;
use kcp_oidc_registries::TokenExchange;
use kcp_plugin::http::{Call, Route};
use reqwest::Method;

use super::{Exchange, Issued};
use crate::answer;
use crate::error::ProtocolError;

/// RFC 8693's grant type.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Trades the service-account token for an access token.
pub(crate) async fn exchange(
    x: &Exchange<'_>,
    settings: &TokenExchange,
) -> Result<Issued, ProtocolError> {
    let url = super::endpoint(x)?;
    let body = form(x, settings);
    let authorization = match (&settings.client_id, x.client_secret) {
        (Some(id), Some(secret)) => Some(basic(id, secret.expose())),
        _ => None,
    };
    let mut headers = vec![
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ];
    if let Some(value) = &authorization {
        headers.push(("Authorization", value.as_str()));
    }
    tracing::debug!(
        endpoint = %kcp_plugin::endpoint::describe(&url),
        audience = ?settings.audience,
        client = ?settings.client_id,
        "OAuth 2.0 token exchange"
    );
    let call = Call {
        route: Route::Internet,
        method: Method::POST,
        url: &url,
        headers: &headers,
        body: Some(body.as_bytes()),
        what: "OAuth 2.0 token exchange",
    };
    let answer = super::send(x, call).await.map_err(|e| hint(e, settings))?;
    let token = answer::oauth_token(&answer.body, SystemTime::now())?;
    Ok(Issued::from_token(settings.username.clone(), token))
}

/// The form body, parameters in RFC 8693's order.
fn form(x: &Exchange<'_>, settings: &TokenExchange) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", GRANT_TYPE);
    for (name, value) in [
        ("resource", &settings.resource),
        ("audience", &settings.audience),
        ("scope", &settings.scope),
        ("requested_token_type", &settings.requested_token_type),
    ] {
        if let Some(value) = value {
            form.append_pair(name, value);
        }
    }
    form.append_pair("subject_token", x.sa_token.expose());
    form.append_pair("subject_token_type", settings.subject_token_type());
    if let (Some(id), None) = (&settings.client_id, x.client_secret) {
        form.append_pair("client_id", id);
    }
    form.finish()
}

/// `client_secret_basic`: `Basic base64(urlencode(id) ":" urlencode(secret))`.
fn basic(id: &str, secret: &str) -> String {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// What to check for the refusals operators meet first.
fn hint(error: ProtocolError, settings: &TokenExchange) -> ProtocolError {
    let hint = match error.status() {
        Some(401) if settings.client_id.is_some() => {
            "; check clientId and the secret in clientSecretFile"
        }
        Some(400 | 401 | 403) => {
            "; check that the token endpoint trusts the cluster's service-account issuer, that token exchange is enabled for the client, and the audience"
        }
        _ => "",
    };
    if hint.is_empty() {
        return error;
    }
    ProtocolError::Call(format!("{error}{hint}"))
}
