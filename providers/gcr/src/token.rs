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

/// The longest life believed of a Google access token: IAM Credentials issues up to 12 hours
/// (with the organisation's policy allowing it), everything else one hour. A longer
/// `expires_in` or `expireTime` (a broken or hostile answer: `expires_in: 1e18` is a date in
/// the year 3e10) is capped here, so neither the kubelet nor the token cache keeps a token for
/// centuries.
pub const MAX_TOKEN_LIFE: Duration = kcp_plugin::token_cache::Issuer::Gcr.longest_life();

/// `expires_at`, but no later than [`MAX_TOKEN_LIFE`] after `now`.
pub fn capped_expiry(expires_at: SystemTime, now: SystemTime) -> SystemTime {
    match now.checked_add(MAX_TOKEN_LIFE) {
        Some(latest) => expires_at.min(latest),
        None => expires_at,
    }
}

/// A bearer token and, when known, when it stops working.
#[derive(Debug, Clone)]
pub struct AccessToken {
    /// The bearer token, answered as the registry password; never logged.
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
/// missing `expires_in` is not, the lifetime is then unknown. `expires_in` is whole seconds (a
/// fraction is dropped, a numeric string accepted); a negative number, or one past any date, is
/// an error; a life longer than [`MAX_TOKEN_LIFE`] is capped to it.
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
                .map(|expires_at| capped_expiry(expires_at, now))
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

/// A non-negative number of seconds (whole, or its whole part), as a JSON number or a string of
/// digits.
fn seconds(value: &Value) -> anyhow::Result<u64> {
    match value {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(whole), _) => Ok(whole),
            (None, Some(f)) if f < 0.0 => bail!("expected a non-negative number of seconds"),
            // A fraction of a second is dropped.
            (None, Some(f)) if f < u64::MAX as f64 => Ok(f as u64),
            _ => bail!("too far in the future to be a time"),
        },
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

    /// Every odd `expires_in`: a time within [`MAX_TOKEN_LIFE`], or a one-line error naming the
    /// field. Only the capping is new: a day, or `1e18` seconds (a date in the year 3e10, which
    /// the kubelet was told to cache for GoDuration's 292-year ceiling), used to be believed.
    #[test]
    fn odd_expires_in_values_are_capped_or_errors_never_a_panic() {
        let now = at(1_800_000_000);
        let capped = Some(now + MAX_TOKEN_LIFE);
        for (value, want) in [
            ("86400", Ok(capped)),
            ("43201", Ok(capped)),
            ("1000000000000000000", Ok(capped)),
            ("9.2e18", Ok(capped)),
            ("43200", Ok(capped)),
            ("0", Ok(Some(now))),
            ("3.5", Ok(Some(at(1_800_000_003)))),
            ("-0.0", Ok(Some(now))),
            ("\"3600\"", Ok(Some(at(1_800_003_600)))),
            ("null", Ok(None)),
            ("1e300", Err("too far in the future to be a time")),
            (
                "18446744073709551616",
                Err("too far in the future to be a time"),
            ),
            (
                "18446744073709551615",
                Err("too far in the future to be a time"),
            ),
            ("-5", Err("expected a non-negative number of seconds")),
            (
                "-9223372036854775808",
                Err("expected a non-negative number of seconds"),
            ),
            ("\"-5\"", Err("expected a number of seconds")),
            ("\"3.5\"", Err("expected a number of seconds")),
            ("\"1e300\"", Err("expected a number of seconds")),
            ("[3600]", Err("expected a number of seconds")),
        ] {
            let body = format!(r#"{{"access_token":"ya29.secret","expires_in":{value}}}"#);
            match (parse_oauth_token(body.as_bytes(), now, "answer"), want) {
                (Ok(token), Ok(want)) => assert_eq!(token.expires_at, want, "{value}"),
                (Err(e), Err(want)) => {
                    assert_eq!(format!("{e:#}"), format!("answer: bad expires_in: {want}"));
                }
                (got, want) => panic!("{value}: {:?}, want {want:?}", got.map(|t| t.expires_at)),
            }
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
