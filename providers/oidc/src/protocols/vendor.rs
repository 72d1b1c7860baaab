//! What the vendor protocols (`jfrog`, `quay-robot`, `cloudsmith`, `chainguard`, `ibm-iam`) share: the
//! one call whose JSON answer carries the credential in a named field, the URL paths under the
//! entry's endpoint, and the hint an operator needs when the vendor refuses the token.

use std::time::SystemTime;

use kcp_plugin::http::{Call, Route};
use reqwest::Method;
use serde_json::{Map, Value};
use url::Url;

use super::Exchange;
use crate::answer::{self, Token};
use crate::error::ProtocolError;

/// One vendor call: what [`token_call`] sends.
pub(crate) struct VendorCall<'a> {
    /// `GET` or `POST`.
    pub method: Method,
    /// The full URL (the endpoint plus the vendor's path and query).
    pub url: &'a Url,
    /// Headers; one of them, or the body, carries the service-account token.
    pub headers: &'a [(&'a str, &'a str)],
    /// The body, when the vendor takes one.
    pub body: Option<&'a [u8]>,
    /// What the call is, for log lines ("JFrog OIDC token exchange").
    pub what: &'a str,
    /// The answer's field holding the credential (`token`, `access_token`).
    pub field: &'a str,
    /// What to check when the vendor refuses the token (400, 401, 403), after "; ".
    pub hint: &'a str,
}

/// Sends `call` under the shared retry rules and reads the credential from its JSON answer: the
/// token (with its life from `expires_in` or its own JWT `exp`) and the whole answer object, for
/// the fields a vendor adds (JFrog's `username`).
pub(crate) async fn token_call(
    x: &Exchange<'_>,
    call: VendorCall<'_>,
) -> Result<(Token, Map<String, Value>), ProtocolError> {
    tracing::debug!(
        endpoint = %kcp_plugin::endpoint::describe(call.url),
        method = %call.method,
        "{}",
        call.what
    );
    let sent = Call {
        route: Route::Internet,
        method: call.method,
        url: call.url,
        headers: call.headers,
        body: call.body,
        what: call.what,
    };
    let answer = super::send(x, sent)
        .await
        .map_err(|e| with_hint(e, call.hint))?;
    let received_at = SystemTime::now();
    let object = answer::json_object(&answer.body, "the answer")?;
    if !object.contains_key(call.field)
        && let Some(error) = answer::oauth_error(&answer.body)
    {
        // A vendor that reports a refusal with a success status (Cloudsmith's `error` field).
        return Err(ProtocolError::Answer(format!(
            "the answer has no {:?} but {error}; {}",
            call.field, call.hint
        )));
    }
    let token = answer::string_token(&answer.body, call.field, received_at)?;
    Ok((token, object))
}

/// A JSON `POST` of `body` to `url` (JFrog, Cloudsmith), read as [`token_call`] reads answers.
pub(crate) async fn post_json(
    x: &Exchange<'_>,
    url: &Url,
    body: &Value,
    what: &str,
    field: &str,
    hint: &str,
) -> Result<(Token, Map<String, Value>), ProtocolError> {
    let body = body.to_string();
    token_call(
        x,
        VendorCall {
            method: Method::POST,
            url,
            headers: &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
            ],
            body: Some(body.as_bytes()),
            what,
            field,
            hint,
        },
    )
    .await
}

/// The refusals operators meet first (the vendor does not trust the token, or the entry names the
/// wrong integration or account) get the vendor's `hint`; other errors are left as they are.
fn with_hint(error: ProtocolError, hint: &str) -> ProtocolError {
    match error.status() {
        Some(400 | 401 | 403) => ProtocolError::Call(format!("{error}; {hint}")),
        _ => error,
    }
}

/// The endpoint with `segments` appended to its path (each percent-encoded as one segment; an
/// endpoint's trailing `/` does not double), e.g. `https://acme.jfrog.io/` and
/// `["access", "api"]` give `https://acme.jfrog.io/access/api`.
pub(crate) fn join(mut url: Url, segments: &[&str]) -> Result<Url, ProtocolError> {
    let described = kcp_plugin::endpoint::describe(&url);
    url.path_segments_mut()
        .map_err(|()| {
            ProtocolError::Input(format!(
                "the endpoint {described} cannot take a path: use a URL such as https://<host>"
            ))
        })?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// A non-empty string field of an answer.
pub(crate) fn string_field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    object
        .get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_under_the_endpoint_once() {
        let join = |base: &str, segments: &[&str]| {
            join(Url::parse(base).unwrap(), segments)
                .unwrap()
                .to_string()
        };
        assert_eq!(
            join("https://acme.jfrog.io", &["access", "api"]),
            "https://acme.jfrog.io/access/api"
        );
        assert_eq!(
            join("https://acme.example/jfrog/", &["access", "api"]),
            "https://acme.example/jfrog/access/api"
        );
        // One segment stays one segment, and a trailing "" keeps the trailing slash.
        assert_eq!(
            join("https://api.cloudsmith.io", &["openid", "a/b c", ""]),
            "https://api.cloudsmith.io/openid/a%2Fb%20c/"
        );
    }
}
