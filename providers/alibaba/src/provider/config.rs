//! The provider's configuration as the command line and environment give it, each value checked
//! once at start (a refusal is a usage error: one line, exit 2, before the request is read).

use std::time::Duration;

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::secret::Secret;
use kcp_plugin::endpoint;
use url::Url;

use crate::credentials::AccessKey;

/// `ALIBABA_CLOUD_ACCESS_KEY_ID`.
pub const ACCESS_KEY_ID_ENV: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
/// `ALIBABA_CLOUD_ACCESS_KEY_SECRET`.
pub const ACCESS_KEY_SECRET_ENV: &str = "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
/// `ALIBABA_CLOUD_SECURITY_TOKEN` (STS credentials given as static keys).
pub const SECURITY_TOKEN_ENV: &str = "ALIBABA_CLOUD_SECURITY_TOKEN";
/// `ALIBABA_CLOUD_ECS_METADATA`: the node's RAM role name, when the server's listed one is not it.
pub const ECS_METADATA_ENV: &str = "ALIBABA_CLOUD_ECS_METADATA";
/// `ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED=true`: STS through its VPC endpoint.
pub const VPC_ENDPOINT_ENV: &str = "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED";

/// Shortest `DurationSeconds` STS accepts.
pub const MIN_SESSION: Duration = Duration::from_secs(15 * 60);
/// Longest `DurationSeconds` a role may allow.
pub const MAX_SESSION: Duration = Duration::from_secs(12 * 60 * 60);

/// An OIDC provider's ARN, `acs:ram::<account>:oidc-provider/<name>`, with its account split out
/// (the default account of a role given by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcProviderArn {
    arn: String,
    account: String,
}

impl OidcProviderArn {
    /// Checks `text` (`--oidc-provider-arn`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let parsed = text
            .strip_prefix("acs:ram::")
            .and_then(|rest| rest.split_once(":oidc-provider/"))
            .filter(|(account, name)| is_account(account) && is_ram_name(name));
        match parsed {
            Some((account, _)) => Ok(OidcProviderArn {
                arn: text.to_owned(),
                account: account.to_owned(),
            }),
            None => Err(format!(
                "--oidc-provider-arn {text:?} is not an OIDC provider ARN (acs:ram::<account>:oidc-provider/<name>)"
            )),
        }
    }

    /// The ARN.
    pub fn as_str(&self) -> &str {
        &self.arn
    }

    /// The account ID it names.
    pub fn account(&self) -> &str {
        &self.account
    }
}

/// Checks `--account-id`: digits only.
pub fn parse_account_id(text: &str) -> Result<String, String> {
    let text = text.trim();
    if is_account(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "--account-id {text:?} is not an Alibaba Cloud account ID (digits only)"
        ))
    }
}

/// An account ID (`UID`): 1..32 digits.
fn is_account(text: &str) -> bool {
    !text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_digit())
}

/// A RAM role or OIDC provider name: 1..64 of `[A-Za-z0-9.-]`.
fn is_ram_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
}

/// The role a service-account annotation names, as a full ARN: a role name (`acs:ram::` + the
/// account + `:role/<name>`) or a full `acs:ram::<account>:role/<path/name>` ARN taken as is.
/// `account` is `--account-id`, else the OIDC provider ARN's account.
pub fn role_arn(annotation_key: &str, value: &str, account: &str) -> Result<String, String> {
    let value = value.trim();
    if is_ram_name(value) {
        return Ok(format!("acs:ram::{account}:role/{value}"));
    }
    let full = value
        .strip_prefix("acs:ram::")
        .and_then(|rest| rest.split_once(":role/"))
        .is_some_and(|(acct, path)| {
            is_account(acct) && !path.is_empty() && path.split('/').all(is_ram_name)
        });
    if full {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "the service-account annotation {annotation_key} = {value:?} is neither a RAM role name nor a role ARN (acs:ram::<account>:role/<name>): fix the annotation"
        ))
    }
}

/// `--session-duration`: a Go duration or whole seconds, 15m..12h.
pub fn parse_session_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().ok().map(Duration::from_secs)
    } else {
        GoDuration::parse(text).ok().and_then(GoDuration::to_std)
    };
    match duration {
        Some(d) if (MIN_SESSION..=MAX_SESSION).contains(&d) && d.subsec_nanos() == 0 => Ok(d),
        _ => Err(format!(
            "--session-duration {text:?} must be a duration (1h, 90m) or seconds from 15m to 12h, whole seconds"
        )),
    }
}

/// `--metadata-endpoint`: http only to the metadata server's address or a loopback host (tests,
/// a local proxy); https to any host.
pub fn metadata_endpoint(text: &str) -> Result<Url, String> {
    let what = "--metadata-endpoint (ALIBABA_CLOUD_METADATA_ENDPOINT)";
    let url = endpoint::parse_url(text.trim()).map_err(|e| format!("{what} {e}"))?;
    let host_ok = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::new(100, 100, 100, 200),
        _ => false,
    } || endpoint::is_loopback(&url);
    match url.scheme() {
        "http" if host_ok => {}
        "https" => {}
        _ => {
            return Err(format!(
                "{what} {text:?} must be http://100.100.100.200 (the ECS metadata server), a loopback http URL, or https"
            ));
        }
    }
    if !url.username().is_empty() || url.password().is_some() || url.host().is_none() {
        return Err(format!(
            "{what} {text:?} must be a plain scheme://host[:port] URL"
        ));
    }
    if url.query().is_some() || url.path() != "/" {
        return Err(format!(
            "{what} {text:?} must not carry a path or query (the metadata paths are fixed)"
        ));
    }
    Ok(url)
}

/// An API endpoint from `--sts-endpoint`/`--cr-endpoint`: a bare host (https) or a URL; plain
/// http only to loopback.
pub fn service_endpoint(text: &str, what: &str) -> Result<Url, String> {
    let text = text.trim();
    let full = if text.contains("://") {
        text.to_owned()
    } else {
        format!("https://{text}")
    };
    let url = endpoint::secure_url(&full, what).map_err(|e| e.to_string())?;
    if url.query().is_some() || url.fragment().is_some() || url.path() != "/" {
        return Err(format!(
            "{what} {text:?} must be a host or scheme://host[:port] without a path"
        ));
    }
    Ok(url)
}

/// Static keys from the environment: both or neither (a missing one named); the security token
/// only with them. Values are trimmed; empty counts as unset.
pub fn static_key(
    id: Option<String>,
    secret: Option<String>,
    token: Option<String>,
) -> Result<Option<AccessKey>, String> {
    let clean = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    match (clean(id), clean(secret), clean(token)) {
        (None, None, None) => Ok(None),
        (Some(id), Some(secret), token) => Ok(Some(AccessKey {
            id,
            secret: Secret::new(secret),
            security_token: token.map(Secret::new),
            expiration: None,
        })),
        (Some(_), None, _) => Err(format!(
            "{ACCESS_KEY_ID_ENV} is set but {ACCESS_KEY_SECRET_ENV} is not: set both, or neither to use the node's RAM role"
        )),
        (None, Some(_), _) => Err(format!(
            "{ACCESS_KEY_SECRET_ENV} is set but {ACCESS_KEY_ID_ENV} is not: set both, or neither to use the node's RAM role"
        )),
        (None, None, Some(_)) => Err(format!(
            "{SECURITY_TOKEN_ENV} is set without {ACCESS_KEY_ID_ENV} and {ACCESS_KEY_SECRET_ENV}: set all three, or none to use the node's RAM role"
        )),
    }
}

/// `ALIBABA_CLOUD_ECS_METADATA`: a RAM role name (it becomes a metadata path segment, so
/// nothing else is accepted); empty counts as unset.
pub fn ecs_role(value: Option<&str>) -> Result<Option<String>, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(role) if is_ram_name(role) => Ok(Some(role.to_owned())),
        Some(role) => Err(format!(
            "{ECS_METADATA_ENV} {role:?} is not a RAM role name (letters, digits, '.' and '-')"
        )),
    }
}

/// `ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED`: `true`/`false` (empty: false).
pub fn vpc_enabled(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim).unwrap_or("") {
        "" | "false" | "0" => Ok(false),
        "true" | "1" => Ok(true),
        other => Err(format!("{VPC_ENDPOINT_ENV} {other:?} is not true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oidc_provider_arns() {
        let arn = OidcProviderArn::parse("acs:ram::1234567890:oidc-provider/ack-rrsa-c1").unwrap();
        assert_eq!(arn.account(), "1234567890");
        assert_eq!(
            arn.as_str(),
            "acs:ram::1234567890:oidc-provider/ack-rrsa-c1"
        );
        for bad in [
            "",
            "acs:ram::abc:oidc-provider/x",
            "acs:ram::123:role/x",
            "acs:ram::123:oidc-provider/",
            "acs:ram::123:oidc-provider/a/b",
            "arn:aws:iam::123:oidc-provider/x",
            "acs:ram:cn-hangzhou:123:oidc-provider/x",
        ] {
            let err = OidcProviderArn::parse(bad).unwrap_err();
            assert!(err.starts_with("--oidc-provider-arn"), "{bad}: {err}");
        }
    }

    #[test]
    fn role_annotations() {
        let key = "pod-identity.alibabacloud.com/role-name";
        let table: &[(&str, Result<&str, ()>)] = &[
            ("puller", Ok("acs:ram::42:role/puller")),
            (" puller ", Ok("acs:ram::42:role/puller")),
            ("acs:ram::7:role/other", Ok("acs:ram::7:role/other")),
            (
                "acs:ram::7:role/path/to/other",
                Ok("acs:ram::7:role/path/to/other"),
            ),
            ("", Err(())),
            ("a b", Err(())),
            ("acs:ram::x:role/other", Err(())),
            ("acs:ram::7:role/", Err(())),
            ("acs:ram::7:user/other", Err(())),
            ("acs:ram::7:role/a//b", Err(())),
            ("role/x", Err(())),
        ];
        for (value, want) in table {
            let got = role_arn(key, value, "42");
            match want {
                Ok(arn) => assert_eq!(got.as_deref(), Ok(*arn), "{value:?}"),
                Err(()) => {
                    let err = got.unwrap_err();
                    assert!(
                        err.contains(key) && err.contains("fix the annotation"),
                        "{err}"
                    );
                }
            }
        }
    }

    #[test]
    fn session_durations() {
        assert_eq!(parse_session_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_session_duration("900"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_session_duration("12h"), Ok(MAX_SESSION));
        assert_eq!(parse_session_duration("15m"), Ok(MIN_SESSION));
        for bad in [
            "", "14m59s", "899", "12h0m1s", "1.5s", "-1h", "soon", "43201",
        ] {
            assert!(
                parse_session_duration(bad)
                    .unwrap_err()
                    .starts_with("--session-duration"),
                "{bad}"
            );
        }
    }

    #[test]
    fn metadata_endpoints() {
        for good in [
            "http://100.100.100.200",
            "http://100.100.100.200/",
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:9",
            "https://metadata.example.com",
        ] {
            assert!(metadata_endpoint(good).is_ok(), "{good}");
        }
        for bad in [
            "http://100.100.100.201",
            "http://metadata.example.com",
            "ftp://100.100.100.200",
            "100.100.100.200",
            "http://user:pw@127.0.0.1:1",
            "http://127.0.0.1:1/latest",
            "http://127.0.0.1:1/?x=1",
        ] {
            let err = metadata_endpoint(bad).unwrap_err();
            assert!(err.starts_with("--metadata-endpoint"), "{bad}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn service_endpoints() {
        let got = |t: &str| service_endpoint(t, "--cr-endpoint").map(|u| u.to_string());
        assert_eq!(
            got("cr.cn-hangzhou.aliyuncs.com"),
            Ok("https://cr.cn-hangzhou.aliyuncs.com/".into())
        );
        assert_eq!(
            got("https://cr-vpc.cn-hangzhou.aliyuncs.com"),
            Ok("https://cr-vpc.cn-hangzhou.aliyuncs.com/".into())
        );
        assert_eq!(
            got("http://127.0.0.1:9000"),
            Ok("http://127.0.0.1:9000/".into())
        );
        for bad in [
            "http://cr.cn-hangzhou.aliyuncs.com",
            "https://cr.example.com/x",
            "https://u:p@cr.example.com",
            "ftp://x.y",
        ] {
            assert!(got(bad).unwrap_err().starts_with("--cr-endpoint"), "{bad}");
        }
    }

    #[test]
    fn static_keys() {
        let s = |v: &str| Some(v.to_owned());
        assert!(static_key(None, None, None).unwrap().is_none());
        assert!(static_key(s(""), s(" "), None).unwrap().is_none());
        let key = static_key(s("LTAIid"), s("sekrit"), None).unwrap().unwrap();
        assert_eq!(
            (
                key.id.as_str(),
                key.secret.expose(),
                key.security_token.is_none()
            ),
            ("LTAIid", "sekrit", true)
        );
        let key = static_key(s("STS.id"), s("sekrit"), s("tok"))
            .unwrap()
            .unwrap();
        assert_eq!(key.security_token.as_ref().map(|t| t.expose()), Some("tok"));
        let err = static_key(s("LTAIid"), None, None).unwrap_err();
        assert!(
            err.starts_with(
                "ALIBABA_CLOUD_ACCESS_KEY_ID is set but ALIBABA_CLOUD_ACCESS_KEY_SECRET is not"
            ),
            "{err}"
        );
        let err = static_key(None, s("sekrit"), s("tok")).unwrap_err();
        assert!(
            err.starts_with(
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET is set but ALIBABA_CLOUD_ACCESS_KEY_ID is not"
            ),
            "{err}"
        );
        assert!(!err.contains("sekrit"));
        let err = static_key(None, None, s("tok")).unwrap_err();
        assert!(
            err.starts_with("ALIBABA_CLOUD_SECURITY_TOKEN is set without"),
            "{err}"
        );
    }

    #[test]
    fn ecs_roles() {
        assert_eq!(ecs_role(None), Ok(None));
        assert_eq!(ecs_role(Some(" ")), Ok(None));
        assert_eq!(
            ecs_role(Some("node-role.1")),
            Ok(Some("node-role.1".to_owned()))
        );
        for bad in ["../x", "a/b", "a?b", "a b"] {
            assert!(
                ecs_role(Some(bad))
                    .unwrap_err()
                    .starts_with(ECS_METADATA_ENV),
                "{bad}"
            );
        }
    }

    #[test]
    fn vpc_switch() {
        assert_eq!(vpc_enabled(None), Ok(false));
        assert_eq!(vpc_enabled(Some("true")), Ok(true));
        assert_eq!(vpc_enabled(Some("false")), Ok(false));
        assert!(vpc_enabled(Some("yes")).is_err());
    }
}
