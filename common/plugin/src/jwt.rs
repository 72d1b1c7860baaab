//! Reading a JWT's claims without verifying it.
//!
//! Providers never trust a token because of what it says about itself: the registry or the cloud
//! verifies it. Its claims only size a cache time (`exp`) or name the service account a cached
//! credential belongs to, where the kubelet is the party that minted and delivered the token.

use std::time::{Duration, SystemTime};

use base64::Engine;
use serde_json::Value;

/// The payload of a compact JWT as JSON, or `None` when `token` is not one.
pub fn claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.is_object().then_some(claims)
}

/// The `exp` claim: when the token stops being valid.
pub fn expiry(token: &str) -> Option<SystemTime> {
    time_claim(token, "exp")
}

/// A NumericDate claim (`exp`, `iat`, `nbf`: RFC 7519 §2) as a time, or `None` when the token
/// has no such claim or it is not a time: not a JSON number (`"3600"` is text, not a date),
/// negative, or past what [`SystemTime`] holds (`1e300`). A fraction of a second is dropped.
pub fn time_claim(token: &str, name: &str) -> Option<SystemTime> {
    numeric_date(claims(token)?.get(name)?)
}

/// Whole seconds after the epoch as a time; checked, so no number can panic.
fn numeric_date(value: &Value) -> Option<SystemTime> {
    let secs = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && *f < u64::MAX as f64)
            .map(|f| f as u64)
    })?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Who a Kubernetes service-account token was minted for, from its `kubernetes.io` claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountClaims {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account's name.
    pub name: String,
    /// The service account's UID: a recreated account with the same name is another identity.
    pub uid: String,
    /// The token's audiences, sorted.
    pub audiences: Vec<String>,
}

impl ServiceAccountClaims {
    /// The claims of a projected service-account token, or `None` when any of namespace, name or
    /// UID is missing (a legacy or foreign token).
    pub fn from_token(token: &str) -> Option<Self> {
        let claims = claims(token)?;
        let k8s = claims.get("kubernetes.io")?;
        let text = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let sa = k8s.get("serviceaccount")?;
        let mut audiences: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        audiences.sort();
        Some(ServiceAccountClaims {
            namespace: text(k8s.get("namespace"))?,
            name: text(sa.get("name"))?,
            uid: text(sa.get("uid"))?,
            audiences,
        })
    }
}

/// Fuzz entry point for claim reading (the `jwt_claims` target in `fuzz/`, and
/// `common/plugin/src/fuzz_smoke.rs` on stable): arbitrary bytes in, a panic when an invariant
/// breaks. Built only for cargo-fuzz (`--cfg fuzzing`) and unit tests: no release binary has it.
#[cfg(any(fuzzing, test))]
pub mod fuzz {
    use base64::Engine;
    use serde_json::Value;

    use super::{ServiceAccountClaims, expiry, time_claim};

    /// The input as a whole token, and as the JSON payload of one (so that mutations reach the
    /// claims without having to learn base64).
    ///
    /// Invariants: claims are an object; a time claim is read exactly when it is a non-negative
    /// JSON number, as its whole seconds; service-account claims are non-empty and their
    /// audiences sorted.
    pub fn claims(data: &[u8]) {
        check(&String::from_utf8_lossy(data));
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data);
        check(&format!("eyJhbGciOiJSUzI1NiJ9.{payload}.sig"));
    }

    fn check(token: &str) {
        let read = super::claims(token);
        assert!(read.as_ref().is_none_or(Value::is_object));
        assert_eq!(expiry(token), time_claim(token, "exp"));
        for name in ["exp", "iat", "nbf"] {
            let value = read.as_ref().and_then(|c| c.get(name));
            let secs =
                time_claim(token, name).map(|t| match t.duration_since(std::time::UNIX_EPOCH) {
                    Ok(d) => d.as_secs(),
                    Err(_) => panic!("{name} before the epoch in {token:?}"),
                });
            match (value, secs) {
                (None, None) => {}
                (None, Some(_)) => panic!("{name} read from a token without it: {token:?}"),
                (Some(value), secs) => {
                    let whole = value.as_u64().or_else(|| {
                        value
                            .as_f64()
                            .filter(|f| *f >= 0.0 && *f < u64::MAX as f64)
                            .map(|f| f.trunc() as u64)
                    });
                    match (whole, secs) {
                        (Some(w), Some(s)) => assert_eq!(w, s, "{name} in {token:?}"),
                        (None, Some(_)) => panic!("{name} {value} read as a time"),
                        // Past what the platform's clock holds.
                        (Some(w), None) => assert!(w > i64::MAX as u64, "{name} {w} dropped"),
                        (None, None) => {}
                    }
                }
            }
        }
        if let Some(sa) = ServiceAccountClaims::from_token(token) {
            assert!(!sa.namespace.is_empty() && !sa.name.is_empty() && !sa.uid.is_empty());
            assert!(sa.audiences.is_sorted(), "{:?}", sa.audiences);
            let k8s = read.as_ref().and_then(|c| c.get("kubernetes.io"));
            assert_eq!(
                k8s.and_then(|k| k.get("namespace")).and_then(Value::as_str),
                Some(sa.namespace.as_str())
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn reads_the_expiry_without_verifying() {
        let token = format!(
            "{}.{}.sig",
            b64(r#"{"alg":"RS256"}"#),
            b64(r#"{"exp":1900000000,"aud":"x"}"#)
        );
        assert_eq!(expiry(&token), Some(at(1_900_000_000)));
        let sa = format!("e30.{}.sig", b64(r#"{"aud":["x"],"exp":1800003600}"#));
        assert_eq!(expiry(&sa), Some(at(1_800_003_600)));
        let float = format!("h.{}.s", b64(r#"{"exp":1900000000.5}"#));
        assert!(expiry(&float).is_some());
        for bad in [
            "",
            "opaque-token",
            "not-a-jwt",
            "a.b.c",
            "a.!!!.c",
            &format!("h.{}.s", b64(r#"{"exp":"soon"}"#)),
            &format!("h.{}.s", b64("[]")),
        ] {
            assert_eq!(expiry(bad), None, "{bad}");
        }
    }

    /// Odd numbers from the network in `exp`, `iat` and `nbf`: a time or `None`, never a panic.
    /// Already handled before this test was written (checked arithmetic, finite non-negative
    /// floats only).
    #[test]
    fn odd_numbers_in_time_claims_are_none_or_whole_seconds() {
        for name in ["exp", "iat", "nbf"] {
            let token = |value: &str| format!("h.{}.s", b64(&format!(r#"{{"{name}":{value}}}"#)));
            for (value, want) in [
                ("1e300", None),
                ("-5", None),
                ("0", Some(at(0))),
                ("3.5", Some(at(3))),
                ("\"3600\"", None),
                ("18446744073709551615", None),
                ("18446744073709551616", None),
                ("-9223372036854775808", None),
                ("-0.0", Some(at(0))),
                ("1e-300", Some(at(0))),
                ("null", None),
                ("[1]", None),
            ] {
                assert_eq!(time_claim(&token(value), name), want, "{name}: {value}");
            }
        }
        assert_eq!(time_claim("opaque", "iat"), None);
    }

    #[test]
    fn reads_service_account_claims() {
        let token = format!(
            "h.{}.s",
            b64(
                r#"{"aud":["sts.amazonaws.com","b"],"exp":1,"kubernetes.io":{"namespace":"team-a","pod":{"name":"p","uid":"pu"},"serviceaccount":{"name":"puller","uid":"8f2c"}}}"#
            )
        );
        assert_eq!(
            ServiceAccountClaims::from_token(&token),
            Some(ServiceAccountClaims {
                namespace: "team-a".into(),
                name: "puller".into(),
                uid: "8f2c".into(),
                audiences: vec!["b".into(), "sts.amazonaws.com".into()],
            })
        );
        let no_uid = format!(
            "h.{}.s",
            b64(r#"{"kubernetes.io":{"namespace":"a","serviceaccount":{"name":"b"}}}"#)
        );
        assert_eq!(ServiceAccountClaims::from_token(&no_uid), None);
        assert_eq!(ServiceAccountClaims::from_token("opaque"), None);
    }
}
