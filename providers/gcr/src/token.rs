//! Access tokens and the few formats they arrive in: OAuth 2.0 token answers (metadata server,
//! key-file `token_uri`, STS), RFC 3339 expiry times (IAM Credentials) and the unverified `exp`
//! claim of a Kubernetes service-account JWT.
//!
//! Every parser here works on a `serde_json::Value` and writes its own error messages, naming
//! fields but never their values: serde's type errors quote the offending value, and in a token
//! answer that value may be the token itself (upstream logs the whole body of a malformed answer).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    let expires_in = match object.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(v) => Some(seconds(v).with_context(|| format!("{what}: bad expires_in"))?),
    };
    Ok(AccessToken {
        token,
        expires_at: expires_in.map(|s| now + Duration::from_secs(s)),
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

/// Parses an RFC 3339 timestamp such as `2026-01-02T03:04:05Z` or
/// `2026-01-02T03:04:05.123456789+01:00` (what IAM Credentials returns as `expireTime`).
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !matches!(ob[0], b'+' | b'-') || ob[3] != b':' {
                return None;
            }
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            let sign = if ob[0] == b'-' { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
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
    fn parses_rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(at(0)));
        assert_eq!(
            parse_rfc3339("2026-01-02T03:04:05Z"),
            Some(at(1_767_323_045))
        );
        assert_eq!(
            parse_rfc3339("2026-01-02T03:04:05.999999999Z"),
            Some(at(1_767_323_045))
        );
        assert_eq!(
            parse_rfc3339("2026-01-02T04:04:05+01:00"),
            Some(at(1_767_323_045))
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00Z"),
            Some(at(1_709_164_800))
        );
        for bad in [
            "",
            "2026-01-02",
            "2026-13-02T03:04:05Z",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05+0100",
            "20x6-01-02T03:04:05Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
