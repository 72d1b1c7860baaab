//! Reading what the exchanges answer: OAuth 2.0 token answers (RFC 6749 §5.1, RFC 8693 §2.2.1),
//! OAuth error bodies (RFC 6749 §5.2) and IBM Cloud IAM's, the `{"token": "..."}` bodies of the
//! vendor APIs, and how long the credential lives.
//!
//! Errors name fields, never values: an answer holds a token, and an error line must not.

use std::time::{Duration, SystemTime};

use kcp_kubelet::Secret;
use serde_json::{Map, Value};

use crate::error::ProtocolError;

/// The longest life believed from an answer: a huge `expires_in` (or `exp`) is read as this, so a
/// server's mistake cannot keep a credential cached for days.
pub const MAX_LIFE: Duration = kcp_plugin::token_cache::Issuer::Oidc.longest_life();

/// A credential as an answer gives it, before the protocol names its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The credential.
    pub token: Secret,
    /// When it stops working, when the answer says (capped at [`MAX_LIFE`] from receipt).
    pub expires_at: Option<SystemTime>,
}

/// The answer's top-level JSON object; `what` names the answer in errors.
pub fn json_object(body: &[u8], what: &str) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::Answer(format!(
            "{what} is not a JSON object"
        ))),
        // Parsing into a `Value`, serde_json's messages are positions only, never content.
        Err(e) => Err(ProtocolError::Answer(format!("{what} is not JSON ({e})"))),
    }
}

/// An OAuth 2.0 token answer: `access_token` (required, non-empty) and its life from
/// `expires_in` or, without it, the token's own `exp` when it is a JWT. `received_at` is when the
/// answer arrived.
pub fn oauth_token(body: &[u8], received_at: SystemTime) -> Result<Token, ProtocolError> {
    string_token(body, "access_token", received_at)
}

/// A `{"<field>": "<token>"}` answer (the vendor APIs' shape), with its life from `expires_in`
/// when present, else the token's own `exp` when it is a JWT.
pub fn string_token(
    body: &[u8],
    field: &str,
    received_at: SystemTime,
) -> Result<Token, ProtocolError> {
    let object = json_object(body, "the answer")?;
    let token = match object.get(field) {
        Some(Value::String(t)) if !t.trim().is_empty() => Secret::new(t.as_str()),
        Some(Value::String(_)) => {
            return Err(ProtocolError::Answer(format!(
                "the answer's {field:?} is empty"
            )));
        }
        Some(_) => {
            return Err(ProtocolError::Answer(format!(
                "the answer's {field:?} is not a string"
            )));
        }
        None => {
            return Err(ProtocolError::Answer(format!(
                "the answer has no {field:?}{}",
                present_fields(&object)
            )));
        }
    };
    let expires_at = life(object.get("expires_in"), token.expose(), received_at)?;
    Ok(Token { token, expires_at })
}

/// When a credential stops working: `expires_in` seconds after `received_at` (a number, or a
/// string of digits as some servers send it; negative: already over), else the token's JWT
/// `exp`; `None` when neither says. Capped at [`MAX_LIFE`]; `expires_in: null` counts as absent.
pub fn life(
    expires_in: Option<&Value>,
    token: &str,
    received_at: SystemTime,
) -> Result<Option<SystemTime>, ProtocolError> {
    let cap = received_at + MAX_LIFE;
    let seconds = match expires_in {
        None | Some(Value::Null) => None,
        // A negative life says the credential is already over: used for this pull, never
        // cached.
        Some(Value::Number(n)) => Some(n.as_u64().unwrap_or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f > 0.0)
                .map_or(0, |f| f.min(u64::MAX as f64) as u64)
        })),
        Some(Value::String(s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            Some(s.parse::<u64>().unwrap_or(u64::MAX))
        }
        Some(_) => {
            return Err(ProtocolError::Answer(
                "the answer's \"expires_in\" is not a number of seconds".to_owned(),
            ));
        }
    };
    let expires_at = match seconds {
        Some(s) => Some(
            received_at
                .checked_add(Duration::from_secs(s))
                .map_or(cap, |t| t.min(cap)),
        ),
        None => kcp_plugin::jwt::expiry(token).map(|t| t.min(cap)),
    };
    Ok(expires_at)
}

/// An OAuth error body (`{"error": "invalid_grant", "error_description": "..."}`) as one quoted
/// phrase, or `None` when the body is not one. Both are quoted as Go quotes strings, cut short,
/// with anything token-like redacted: a server could echo what it was sent.
pub fn oauth_error(body: &[u8]) -> Option<String> {
    let object = serde_json::from_slice::<Map<String, Value>>(body).ok()?;
    let error = object.get("error")?.as_str()?;
    let mut phrase = format!("error {}", quoted(error));
    if let Some(description) = object
        .get("error_description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    {
        phrase.push_str(&format!(" ({})", quoted(description)));
    }
    Some(phrase)
}

/// IBM Cloud IAM's error body (`{"errorCode": "BXNIM0415E", "errorMessage": "...", "context":
/// {"requestId": "..."}}`) as one quoted phrase: the code, the message and the request id IBM's
/// support asks for, each quoted as [`oauth_error`] quotes; `None` when the body is not one.
pub fn ibm_error(body: &[u8]) -> Option<String> {
    let object = serde_json::from_slice::<Map<String, Value>>(body).ok()?;
    let code = object.get("errorCode")?.as_str()?;
    let mut phrase = format!("error {}", quoted(code));
    if let Some(message) = object
        .get("errorMessage")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
    {
        phrase.push_str(&format!(" ({})", quoted(message)));
    }
    if let Some(request) = object
        .get("context")
        .and_then(|c| c.get("requestId"))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        phrase.push_str(&format!(", request id {}", quoted(request)));
    }
    Some(phrase)
}

/// A server's text, safe for an error line: one line, at most 200 characters, known secrets and
/// token-like runs redacted, quoted.
fn quoted(text: &str) -> String {
    const MAX: usize = 200;
    let clean = kcp_kubelet::secret::redact_known(text);
    let clean = kcp_plugin::http::redact_token_like(&kcp_plugin::logging::one_line(&clean));
    let cut: String = clean.chars().take(MAX).collect();
    if cut.len() < clean.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// `(fields: a, b)` naming what an answer had instead, for the error when the token is missing.
fn present_fields(object: &Map<String, Value>) -> String {
    if object.is_empty() {
        return " (the object is empty)".to_owned();
    }
    let mut names: Vec<String> = object.keys().take(8).map(|k| quoted(k)).collect();
    if object.len() > 8 {
        names.push("…".to_owned());
    }
    format!(" (fields: {})", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn life_from_expires_in_capped_and_lenient_on_form() {
        let life = |v: Value| life(Some(&v), "opaque", at(NOW)).unwrap();
        assert_eq!(life(serde_json::json!(600)), Some(at(NOW + 600)));
        assert_eq!(life(serde_json::json!("600")), Some(at(NOW + 600)));
        assert_eq!(life(serde_json::json!(600.9)), Some(at(NOW + 600)));
        assert_eq!(life(serde_json::json!(-5)), Some(at(NOW)));
        assert_eq!(life(serde_json::json!(1e300)), Some(at(NOW + 12 * 3600)));
        assert_eq!(life(serde_json::json!(u64::MAX)), Some(at(NOW + 12 * 3600)));
        assert_eq!(life(Value::Null), None);
        for bad in [
            serde_json::json!("soon"),
            serde_json::json!([1]),
            serde_json::json!("-5"),
        ] {
            let e = super::life(Some(&bad), "opaque", at(NOW)).unwrap_err();
            assert_eq!(
                e.to_string(),
                "the answer's \"expires_in\" is not a number of seconds"
            );
        }
    }

    #[test]
    fn life_from_a_jwt_exp_without_expires_in() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let jwt = |exp: u64| format!("{}.{}.sig", b64("{}"), b64(&format!("{{\"exp\":{exp}}}")));
        assert_eq!(
            life(None, &jwt(NOW + 900), at(NOW)).unwrap(),
            Some(at(NOW + 900))
        );
        assert_eq!(
            life(None, &jwt(NOW + 99 * 3600), at(NOW)).unwrap(),
            Some(at(NOW + 12 * 3600))
        );
        assert_eq!(life(None, "opaque-token", at(NOW)).unwrap(), None);
    }

    #[test]
    fn oauth_errors_are_quoted_on_one_line_without_tokens() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"Invalid token"}"#)
                .as_deref(),
            Some(r#"error "invalid_grant" ("Invalid token")"#)
        );
        assert_eq!(
            oauth_error(br#"{"error":"invalid_request"}"#).as_deref(),
            Some(r#"error "invalid_request""#)
        );
        let echoed = oauth_error(
            br#"{"error":"invalid_grant","error_description":"token eyJhbGciOiJSUzI1NiJ9abcdefghijklmnopqrstuvwxyz0123456789 is bad\nsecond line"}"#,
        )
        .unwrap();
        assert!(!echoed.contains("eyJhbGciOiJSUzI1NiJ9abcdef"), "{echoed}");
        assert!(!echoed.contains('\n'), "{echoed}");
        assert_eq!(oauth_error(b"<html>"), None);
        assert_eq!(oauth_error(br#"{"message":"no"}"#), None);
    }

    #[test]
    fn ibm_errors_are_quoted_on_one_line_without_tokens() {
        assert_eq!(
            ibm_error(
                br#"{"errorCode":"BXNIM0415E","errorMessage":"Provided API key could not be found.","context":{"requestId":"a1b2c3","requestType":"incoming.Identity_Token"}}"#
            )
            .as_deref(),
            Some(
                r#"error "BXNIM0415E" ("Provided API key could not be found."), request id "a1b2c3""#
            )
        );
        assert_eq!(
            ibm_error(br#"{"errorCode":"BXNIM0109E"}"#).as_deref(),
            Some(r#"error "BXNIM0109E""#)
        );
        let echoed = ibm_error(
            br#"{"errorCode":"BXNIM0xxxE","errorMessage":"cr_token eyJhbGciOiJSUzI1NiJ9abcdefghijklmnopqrstuvwxyz0123456789 rejected\nsecond line"}"#,
        )
        .unwrap();
        assert!(!echoed.contains("eyJhbGciOiJSUzI1NiJ9abcdef"), "{echoed}");
        assert!(!echoed.contains('\n'), "{echoed}");
        let long = format!(
            r#"{{"errorCode":"BXNIM0001E","errorMessage":"{}"}}"#,
            "x ".repeat(400)
        );
        let cut = ibm_error(long.as_bytes()).unwrap();
        assert!(cut.ends_with("…)") && cut.chars().count() < 240, "{cut}");
        assert_eq!(ibm_error(br#"{"errorCode":7}"#), None);
        assert_eq!(ibm_error(br#"{"error":"invalid_grant"}"#), None);
        assert_eq!(ibm_error(b"<html>"), None);
    }

    #[test]
    fn token_fields_are_named_never_their_values() {
        let e = string_token(br#"{"tok":"secret-value-123456"}"#, "token", at(NOW)).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"the answer has no "token" (fields: "tok")"#
        );
        let ok = string_token(br#"{"token":"abc","expires_in":60}"#, "token", at(NOW)).unwrap();
        assert_eq!(ok.token.expose(), "abc");
        assert_eq!(ok.expires_at, Some(at(NOW + 60)));
    }
}
