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
    let exp = claims(token)?.get("exp")?.clone();
    let secs = exp.as_u64().or_else(|| {
        exp.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
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
