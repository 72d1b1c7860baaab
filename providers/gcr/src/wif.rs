//! Workload Identity Federation for a pod's service-account token (KEP-4412): the STS token
//! exchange (RFC 8693) and, optionally, impersonation of a Google service account through IAM
//! Credentials `generateAccessToken`.
//!
//! The service-account token is sent to STS and nowhere else; it is never logged, never part of
//! an error message (STS error bodies are scrubbed of it, in case one ever quotes it) and never
//! returned as the registry password.

use std::time::SystemTime;

use anyhow::{anyhow, bail};
use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, Route};
use kcp_plugin::logging::error_chain;
use reqwest::Method;
use serde_json::Value;
use url::Url;

use crate::token::{self, AccessToken};
use kcp_plugin::endpoint;
use kcp_plugin::http::{Call, CallError};

/// Default STS token endpoint.
pub const DEFAULT_STS_ENDPOINT: &str = "https://sts.googleapis.com/v1/token";
/// Default IAM Credentials base URL.
pub const DEFAULT_IAM_ENDPOINT: &str = "https://iamcredentials.googleapis.com";
/// The annotation a service account sets to `"true"` to opt in (GKE's, as upstream).
pub const OPT_IN_ANNOTATION: &str = "iam.gke.io/enable-wi-image-pull";
/// The annotation naming a Google service account to impersonate (GKE Workload Identity's).
pub const GSA_ANNOTATION: &str = "iam.gke.io/gcp-service-account";
/// Scope of the federated and impersonated tokens.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// RFC 8693 grant type.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// What we ask STS for.
pub const REQUESTED_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// What we give STS: the kubelet's service-account JWT.
pub const SUBJECT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";
/// Lifetime asked of IAM Credentials (its default and the maximum without an org policy).
const IMPERSONATION_LIFETIME: &str = "3600s";

/// Federation settings from the command line.
#[derive(Debug, Clone)]
pub struct Wif {
    /// The STS audience: `identitynamespace:<project>.svc.id.goog:<identity-provider>` (GKE) or a
    /// full workload identity provider name (`//iam.googleapis.com/projects/…/providers/…`).
    pub audience: String,
    /// The STS token endpoint.
    pub sts_endpoint: Url,
    /// IAM Credentials base URL.
    pub iam_endpoint: Url,
    /// Service account to impersonate when the pod's service account names none.
    pub default_service_account: Option<String>,
}

/// The GKE audience of upstream's `--identity-provider`/`--project-id`.
pub fn gke_audience(project_id: &str, identity_provider: &str) -> String {
    format!("identitynamespace:{project_id}.svc.id.goog:{identity_provider}")
}

/// Checks a Google service account e-mail before it goes into a URL path.
pub fn check_service_account(email: &str, source: &str) -> anyhow::Result<()> {
    let valid = email.len() <= 254
        && email.split_once('@').is_some_and(|(user, domain)| {
            !user.is_empty() && domain.contains('.') && !domain.starts_with('.')
        })
        && email
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '@' | '.' | '-' | '_'));
    if !valid {
        bail!(
            "{source} {email:?} is not a service account e-mail such as puller@my-project.iam.gserviceaccount.com"
        );
    }
    Ok(())
}

impl Wif {
    /// Exchanges `subject` (the pod's service-account token) for a federated access token, then
    /// impersonates `service_account` with it when one is given.
    pub async fn token(
        &self,
        http: &HttpClient,
        subject: &Secret,
        service_account: Option<&str>,
        deadline: Deadline,
    ) -> anyhow::Result<AccessToken> {
        let federated = self
            .exchange(http, subject, deadline)
            .await
            .map_err(|e| anyhow!("{}", scrub(&format!("{e:#}"), subject)))?;
        let token = match service_account {
            None => federated,
            Some(email) => self.impersonate(http, &federated, email, deadline).await?,
        };
        if token.token.expose() == subject.expose() {
            // The kubelet refuses this (without cacheType: Token) and it would hand the pod's
            // identity to the registry; a correct STS never does it.
            bail!(
                "the token endpoint answered with the service-account token itself; refusing to return it as a registry password"
            );
        }
        Ok(token)
    }

    /// The STS token exchange, form-encoded as RFC 8693 and Google's own client libraries send it.
    async fn exchange(
        &self,
        http: &HttpClient,
        subject: &Secret,
        deadline: Deadline,
    ) -> anyhow::Result<AccessToken> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", GRANT_TYPE)
            .append_pair("audience", &self.audience)
            .append_pair("scope", SCOPE)
            .append_pair("requested_token_type", REQUESTED_TOKEN_TYPE)
            .append_pair("subject_token", subject.expose())
            .append_pair("subject_token_type", SUBJECT_TOKEN_TYPE)
            .finish();
        tracing::debug!(audience = %self.audience, endpoint = %endpoint::describe(&self.sts_endpoint), "STS token exchange");
        let call = Call {
            route: Route::Internet,
            method: Method::POST,
            url: &self.sts_endpoint,
            headers: &[("Content-Type", "application/x-www-form-urlencoded")],
            body: Some(body.as_bytes()),
            what: "STS token exchange",
        };
        let response = http.send_retrying(call, deadline).await.map_err(|e| {
            anyhow!(
                "the STS token exchange at {} for audience {:?} failed: {}{}",
                endpoint::describe(&self.sts_endpoint),
                self.audience,
                error_chain(&e),
                sts_hint(&e)
            )
        })?;
        token::parse_oauth_token(&response.body, SystemTime::now(), "the STS answer")
    }

    /// IAM Credentials `generateAccessToken` for `email`, authorised by the federated token.
    async fn impersonate(
        &self,
        http: &HttpClient,
        federated: &AccessToken,
        email: &str,
        deadline: Deadline,
    ) -> anyhow::Result<AccessToken> {
        let path = format!("v1/projects/-/serviceAccounts/{email}:generateAccessToken");
        let url = self
            .iam_endpoint
            .join(&path)
            .map_err(|e| anyhow!("building the IAM Credentials URL for {email}: {e}"))?;
        let body =
            serde_json::json!({"scope": [SCOPE], "lifetime": IMPERSONATION_LIFETIME}).to_string();
        let authorization = format!("Bearer {}", federated.token.expose());
        let call = Call {
            route: Route::Internet,
            method: Method::POST,
            url: &url,
            headers: &[
                ("Authorization", authorization.as_str()),
                ("Content-Type", "application/json"),
            ],
            body: Some(body.as_bytes()),
            what: "IAM generateAccessToken",
        };
        let what = format!(
            "impersonating {email} through IAM Credentials at {}",
            endpoint::describe(&self.iam_endpoint)
        );
        let response = http.send_retrying(call, deadline).await.map_err(|e| {
            let hint = match e.status() {
                Some(403) => format!(
                    "; grant the federated principal roles/iam.workloadIdentityUser (or serviceAccountTokenCreator) on {email}"
                ),
                Some(404) => format!("; check that the service account {email} exists"),
                _ => String::new(),
            };
            anyhow!("{what} failed: {}{hint}", error_chain(&e))
        })?;
        parse_generate_access_token(&response.body, SystemTime::now())
    }
}

/// Parses IAM Credentials' `generateAccessToken` answer (`{"accessToken": "...", "expireTime":
/// "2026-01-02T03:04:05Z"}`), received at `now`.
///
/// IAM issues the impersonated token for its own lifetime, independent of the federated token
/// that authorised the call, so its own expiry is the one that counts: an RFC 3339 string, capped
/// at [`token::MAX_TOKEN_LIFE`] from `now`; missing or `null` means unknown; anything else is an
/// error. Errors name fields, never values.
pub fn parse_generate_access_token(body: &[u8], now: SystemTime) -> anyhow::Result<AccessToken> {
    let what = "the generateAccessToken answer";
    let object = token::json_object(body, what)?;
    let token = match object.get("accessToken") {
        Some(Value::String(t)) if !t.is_empty() => Secret::new(t.as_str()),
        _ => bail!(
            "{what} has no accessToken (fields present: {})",
            token::field_names(&object)
        ),
    };
    let expires_at = match object.get("expireTime") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => {
            let at = kcp_plugin::time::parse_rfc3339(t)
                .ok_or_else(|| anyhow!("{what} has an expireTime that is not an RFC 3339 time"))?;
            Some(token::capped_expiry(at, now))
        }
        Some(_) => bail!("{what} has an expireTime that is not a string (an RFC 3339 time)"),
    };
    Ok(AccessToken {
        token,
        expires_at,
        received_at: now,
    })
}

/// What to check after an STS failure.
fn sts_hint(e: &CallError) -> &'static str {
    match e.status() {
        Some(400) => {
            "; check the audience (--identity-provider/--project-id or --wif-audience) and that tokenAttributes.serviceAccountTokenAudience is what the workload identity pool expects"
        }
        Some(401 | 403) => "; check the workload identity pool provider's attribute conditions",
        _ => "",
    }
}

/// Replaces every occurrence of the secret in a message.
pub fn scrub(message: &str, secret: &Secret) -> String {
    if secret.expose().len() < 8 {
        return message.to_owned();
    }
    message.replace(secret.expose(), kcp_kubelet::secret::REDACTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    #[test]
    fn gke_audience_format() {
        assert_eq!(
            gke_audience(
                "my-project",
                "https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster"
            ),
            "identitynamespace:my-project.svc.id.goog:https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster"
        );
    }

    #[test]
    fn service_account_emails() {
        assert!(check_service_account("puller@p.iam.gserviceaccount.com", "x").is_ok());
        for bad in [
            "",
            "puller",
            "a/b@c.d",
            "a@b",
            "a@.b",
            "a b@c.d",
            "a@b.c/../x",
            "a@b.c?x",
        ] {
            assert!(check_service_account(bad, "x").is_err(), "{bad}");
        }
    }

    /// Odd `expireTime` values: a time within [`token::MAX_TOKEN_LIFE`], unknown, or a one-line
    /// error quoting nothing. New: a far date (2999, 9999) is capped instead of believed, and a
    /// number is an error instead of an unknown expiry.
    #[test]
    fn odd_expire_times_are_capped_unknown_or_errors() {
        // 2027-01-15T08:00:00Z.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let capped = Some(now + token::MAX_TOKEN_LIFE);
        for (value, want) in [
            (r#""2999-01-01T00:00:00Z""#, Ok(capped)),
            (r#""9999-12-31T23:59:59.999999999+00:00""#, Ok(capped)),
            // A day after `now`.
            (r#""2027-01-16T08:00:00Z""#, Ok(capped)),
            // An hour after `now` (2027-01-15T08:00:00Z).
            (
                r#""2027-01-15T10:00:00+01:00""#,
                Ok(Some(now + Duration::from_secs(3600))),
            ),
            (
                r#""0000-01-01T00:00:00Z""#,
                Ok(kcp_plugin::time::from_unix_secs(-62_167_219_200)),
            ),
            ("null", Ok(None)),
            ("3600", Err("expireTime that is not a string")),
            ("1e300", Err("expireTime that is not a string")),
            ("-5", Err("expireTime that is not a string")),
            (r#""3600""#, Err("expireTime that is not an RFC 3339 time")),
            (
                r#""99999-01-01T00:00:00Z""#,
                Err("expireTime that is not an RFC 3339 time"),
            ),
        ] {
            let body = format!(r#"{{"accessToken":"ya29.impersonated","expireTime":{value}}}"#);
            match (parse_generate_access_token(body.as_bytes(), now), want) {
                (Ok(t), Ok(want)) => assert_eq!(t.expires_at, want, "{value}"),
                (Err(e), Err(want)) => {
                    let e = format!("{e:#}");
                    assert!(e.contains(want) && !e.contains("ya29"), "{value}: {e}");
                }
                (got, want) => panic!("{value}: {:?}, want {want:?}", got.map(|t| t.expires_at)),
            }
        }
        let e = parse_generate_access_token(br#"{"token":"ya29.x"}"#, now).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the generateAccessToken answer has no accessToken (fields present: \"token\")"
        );
    }

    #[test]
    fn scrub_removes_the_secret() {
        let s = Secret::new("eyJhbGciOi.payload.sig");
        assert_eq!(
            scrub("bad token eyJhbGciOi.payload.sig here", &s),
            "bad token <redacted> here"
        );
    }
}
