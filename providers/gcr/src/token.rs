//! Access tokens and the OAuth 2.0 token answers they arrive in (metadata server, key-file
//! `token_uri`, STS). IAM Credentials' RFC 3339 expiry times are read by
//! `kcp_plugin::time::parse_rfc3339`, JWT claims by `kcp_plugin::jwt`.
//!
//! Every parser here works on a `serde_json::Value` and writes its own error messages, naming
//! fields but never their values: serde's type errors quote the offending value, and in a token
//! answer that value may be the token itself (upstream logs the whole body of a malformed answer).

use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};
use kcp_kubelet::Secret;
use serde_json::Value;

/// A bearer token and, when known, when it stops working.
#[derive(Debug, Clone)]
pub struct AccessToken {
    /// The token itself.
    pub token: Secret,
    /// Its expiry; `None` when the issuer did not say.
    pub expires_at: Option<SystemTime>,
    /// When the answer arrived: the "now" its relative `expires_in` was counted from.
    pub received_at: SystemTime,
}

/// Parses a JSON document into an object, with an error that quotes nothing from it.
pub fn json_object(body: &[u8], what: &str) -> anyhow::Result<serde_json::Map<String, Value>> {
    // serde_json's syntax errors carry only a position, never content.
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| anyhow!("{what} is not valid JSON ({} bytes): {e}", body.len()))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => bail!("{what} is not a JSON object ({} bytes)", body.len()),
    }
}

/// Parses an OAuth 2.0 token answer: `{"access_token": "...", "expires_in": 3599, ...}`.
///
/// An empty or missing `access_token` is an error (upstream answered with an empty password); a
/// missing `expires_in` is not, the lifetime is then unknown.
pub fn parse_oauth_token(body: &[u8], now: SystemTime, what: &str) -> anyhow::Result<AccessToken> {
    let object = json_object(body, what)?;
    let token = match object.get("access_token") {
        Some(Value::String(t)) if !t.is_empty() => Secret::new(t.as_str()),
        Some(Value::String(_)) => bail!("{what} has an empty access_token"),
        Some(_) => bail!("{what} has an access_token that is not a string"),
        None => bail!(
            "{what} has no access_token (fields present: {})",
            field_names(&object)
        ),
    };
    let expires_at = match object.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            seconds(v)
                .and_then(|s| {
                    now.checked_add(Duration::from_secs(s))
                        .ok_or_else(|| anyhow!("too far in the future to be a time"))
                })
                .with_context(|| format!("{what}: bad expires_in"))?,
        ),
    };
    Ok(AccessToken {
        token,
        expires_at,
        received_at: now,
    })
}

/// The names of an object's fields, for error messages (never the values).
pub fn field_names(object: &serde_json::Map<String, Value>) -> String {
    if object.is_empty() {
        return "none".to_owned();
    }
    object
        .keys()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A non-negative whole number of seconds, as a JSON number or numeric string.
fn seconds(value: &Value) -> anyhow::Result<u64> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .ok_or_else(|| anyhow!("expected a non-negative number of seconds")),
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .map_err(|_| anyhow!("expected a number of seconds")),
        _ => bail!("expected a number of seconds"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn parses_oauth_answers_and_keeps_the_token_out_of_errors() {
        let now = at(1_800_000_000);
        let t = parse_oauth_token(
            br#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#,
            now,
            "answer",
        )
        .unwrap();
        assert_eq!(t.token.expose(), "ya29.x");
        assert_eq!(t.expires_at, Some(at(1_800_003_599)));

        let t =
            parse_oauth_token(br#"{"access_token":"ya29.x","expires_in":"60"}"#, now, "a").unwrap();
        assert_eq!(t.expires_at, Some(at(1_800_000_060)));
        let t = parse_oauth_token(br#"{"access_token":"ya29.x"}"#, now, "a").unwrap();
        assert_eq!(t.expires_at, None);

        for (body, want) in [
            (&br#"{"access_token":""}"#[..], "empty access_token"),
            (
                br#"{"token":"ya29.secret"}"#,
                "no access_token (fields present: \"token\")",
            ),
            (
                br#"{"access_token":"ya29.secret","expires_in":"ya29.secret"}"#,
                "bad expires_in",
            ),
            (br#"{"access_token":7}"#, "not a string"),
            (br#"ya29.secret"#, "not valid JSON (11 bytes)"),
            (br#"["ya29.secret"]"#, "not a JSON object"),
        ] {
            let e = format!("{:#}", parse_oauth_token(body, now, "answer").unwrap_err());
            assert!(e.contains(want), "{e}");
            assert!(!e.contains("ya29.secret"), "{e}");
        }
    }

    #[test]
    fn an_expires_in_past_any_date_is_an_error_not_a_panic() {
        let now = at(1_800_000_000);
        for body in [
            &br#"{"access_token":"ya29.secret","expires_in":18446744073709551615}"#[..],
            br#"{"access_token":"ya29.secret","expires_in":1e300}"#,
        ] {
            let e = format!("{:#}", parse_oauth_token(body, now, "answer").unwrap_err());
            assert!(e.contains("answer: bad expires_in"), "{e}");
            assert!(!e.contains("ya29.secret"), "{e}");
        }
    }
}
