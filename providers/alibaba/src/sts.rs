//! STS `AssumeRoleWithOIDC`: a pod's identity (RRSA) from its service-account token.
//!
//! The call is anonymous (the token is the credential) and RPC style: `POST /` with
//! `DurationSeconds`, `OIDCProviderArn`, `RoleArn` and `RoleSessionName` in the query, and the
//! `OIDCToken` in a form body, never in the URL (URLs end up in proxy and server logs). The
//! answer's `Credentials` become an [`AccessKey`] with a security token and an expiry.

use std::time::{Duration, SystemTime};

use kcp_kubelet::secret::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use url::Url;

use crate::api::{self, ApiCall, ApiError};
use crate::credentials::AccessKey;

/// STS's API version for `AssumeRoleWithOIDC`.
pub const VERSION: &str = "2015-04-01";

/// The shortest session STS grants (`DurationSeconds` below it is refused).
pub const MIN_DURATION: Duration = Duration::from_secs(900);
/// The longest session STS can grant (a role's own maximum may be lower).
pub const MAX_DURATION: Duration = Duration::from_secs(43_200);

/// What the answer is called in errors.
pub const WHAT: &str = "STS AssumeRoleWithOIDC";

/// What `AssumeRoleWithOIDC` is asked.
#[derive(Debug, Clone)]
pub struct AssumeRoleWithOidc<'a> {
    /// `RoleArn`: `acs:ram::<account>:role/<name>`.
    pub role_arn: &'a str,
    /// `OIDCProviderArn`: `acs:ram::<account>:oidc-provider/<name>`.
    pub oidc_provider_arn: &'a str,
    /// `OIDCToken`: the pod's service-account token.
    pub oidc_token: &'a Secret,
    /// `RoleSessionName`.
    pub session_name: &'a str,
    /// `DurationSeconds`: kept within [`MIN_DURATION`]..=[`MAX_DURATION`], whole seconds.
    pub duration: Duration,
}

/// Exchanges the service-account token at `endpoint` (anonymous call) for STS credentials.
pub async fn assume_role_with_oidc(
    http: &HttpClient,
    endpoint: &Url,
    request: &AssumeRoleWithOidc<'_>,
    deadline: Deadline,
) -> Result<AccessKey, ApiError> {
    let duration = request
        .duration
        .clamp(MIN_DURATION, MAX_DURATION)
        .as_secs()
        .to_string();
    let what = format!("{WHAT} for {}", request.role_arn);
    let call = ApiCall {
        endpoint,
        method: "POST",
        path: "/",
        action: "AssumeRoleWithOIDC",
        version: VERSION,
        query: &[
            ("DurationSeconds", &duration),
            ("OIDCProviderArn", request.oidc_provider_arn),
            ("RoleArn", request.role_arn),
            ("RoleSessionName", request.session_name),
        ],
        form: &[("OIDCToken", request.oidc_token.expose())],
        what: &what,
    };
    let answer = api::send(http, &call, None, deadline)
        .await
        .map_err(|e| e.with_hint(hint))?;
    parse_answer(&answer.body, SystemTime::now())
}

/// Parses `AssumeRoleWithOIDC`'s answer (`{"RequestId", "AssumedRoleUser", "OIDCTokenInfo",
/// "Credentials": {"AccessKeyId", "AccessKeySecret", "SecurityToken", "Expiration"}}`),
/// received at `now`: every credential field a non-empty string, `Expiration` an RFC 3339 time
/// after `now`. The secret and token are remembered for redaction first.
pub fn parse_answer(body: &[u8], now: SystemTime) -> Result<AccessKey, ApiError> {
    let map = api::json_object(WHAT, body)?;
    let credentials = api::required_object(&map, WHAT, "Credentials")?;
    let secret = api::required_str(credentials, WHAT, "AccessKeySecret").map(Secret::new);
    let token = api::required_str(credentials, WHAT, "SecurityToken").map(Secret::new);
    let id = api::required_str(credentials, WHAT, "AccessKeyId")?;
    let (secret, token) = (secret?, token?);
    let expiration = api::future_rfc3339(credentials, WHAT, "Expiration", now)?;
    Ok(AccessKey {
        id: id.trim().to_owned(),
        secret,
        security_token: Some(token),
        expiration: Some(expiration),
    })
}

/// What to check for STS's codes of `AssumeRoleWithOIDC`.
pub fn hint(code: &str) -> Option<&'static str> {
    Some(match code {
        c if c == "InvalidParameter.OIDCToken" || c.starts_with("AuthenticationFail.OIDCToken") => {
            "check the service-account token: its audience (tokenAttributes.serviceAccountTokenAudience) must be sts.aliyuncs.com, its issuer the OIDC provider's, and it must not be expired"
        }
        "EntityNotExist.Role" | "NoPermission" | "AuthenticationFail.NoPermission" => {
            "check the RoleArn, and that the role's trust policy allows the OIDC provider and this service account (oidc:aud, oidc:sub)"
        }
        "InvalidParameter.RoleArn" => {
            "the RoleArn is malformed: it looks like acs:ram::<account>:role/<name>"
        }
        "InvalidParameter.OIDCProviderArn" => {
            "the OIDCProviderArn is malformed or unknown: it looks like acs:ram::<account>:oidc-provider/<name>"
        }
        c if c.starts_with("EntityNotExist.OIDCProvider") => {
            "the OIDC provider does not exist: check the OIDCProviderArn"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
