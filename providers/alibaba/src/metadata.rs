//! The ECS metadata server: the node's RAM role credentials and its region.
//!
//! Hardened mode first, as Alibaba recommends (and as an instance set to "enforced" requires):
//! `PUT /latest/api/token` with `X-aliyun-ecs-metadata-token-ttl-seconds` gives a session token
//! that every read then carries in `X-aliyun-ecs-metadata-token`. A server that answers the PUT
//! with an HTTP error (an older one, or a hardened mode switched off) is read without it; one
//! that cannot be reached at all means this node is not an ECS instance, and the error says
//! which other identity to configure.
//!
//! The server is plain http on a node-local address, so every call is [`Route::Metadata`]
//! (never through a proxy) and no signature is involved: `send_retrying` suffices. The session
//! token, the AccessKeySecret and the SecurityToken are secrets: held as [`Secret`] (and so
//! remembered for redaction), never logged.

use std::time::SystemTime;

use kcp_kubelet::secret::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{Call, CallError, HttpClient, HttpError, RetryRules, Route};
use kcp_plugin::retry::RetryPolicy;
use reqwest::Method;
use url::Url;

use crate::api::{self, ApiError};
use crate::credentials::AccessKey;

/// The metadata server's default address.
pub const DEFAULT_ENDPOINT: &str = "http://100.100.100.200";

/// The session token's life asked for, in seconds. A token serves one run only (each exec asks
/// for its own, and the kubelet kills a plugin after 60 s), so five minutes outlasts any run,
/// even one with a raised `CREDENTIAL_PROVIDER_DEADLINE`, while a token that leaked anyway is
/// soon worthless (the server accepts 1 to 21600).
pub const SESSION_TOKEN_TTL_SECS: u32 = 300;

/// The header asking for a session token's life.
const TTL_HEADER: &str = "X-aliyun-ecs-metadata-token-ttl-seconds";
/// The header carrying the session token on every read.
const TOKEN_HEADER: &str = "X-aliyun-ecs-metadata-token";

/// Where the session token comes from.
const TOKEN_PATH: &str = "/latest/api/token";
/// The RAM role's name, and under it each role's credentials.
const ROLES_PATH: &str = "/latest/meta-data/ram/security-credentials/";
/// The instance's region.
const REGION_PATH: &str = "/latest/meta-data/region-id";

/// The region-id answer is not a region.
pub(crate) const NOT_REGION: &str = "is not a region ID (such as cn-hangzhou)";
/// A `Code` that does not look like one.
pub(crate) const NOT_CODE: &str = "is not a code";

/// What the metadata server's credentials answer is called in errors.
pub const CREDENTIALS_WHAT: &str = "the ECS metadata server's RAM role credentials";

/// A metadata server client.
#[derive(Debug, Clone)]
pub struct Metadata {
    base: Url,
}

/// Why a metadata read failed: one line naming the read and what to check.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// Nothing answers at the metadata address: the node is not an ECS instance (or its
    /// metadata service is blocked), so another identity must be configured.
    #[error(
        "the ECS metadata server at {endpoint} is unreachable ({}): this node is not on Alibaba Cloud ECS, or set ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET, or --metadata-endpoint",
        .error.error.describe()
    )]
    Unreachable {
        /// The server's base URL.
        endpoint: String,
        /// The failed session-token request.
        error: CallError,
    },
    /// The instance has no RAM role, so there are no node credentials to use.
    #[error(
        "no RAM role is attached to this ECS instance: attach one with cr:GetAuthorizationToken (and cr:ListInstance)"
    )]
    NoRole,
    /// The role asked for (`ALIBABA_CLOUD_ECS_METADATA`) is not the instance's.
    #[error(
        "the RAM role {role} is not attached to this ECS instance (HTTP 404): check ALIBABA_CLOUD_ECS_METADATA or attach the role"
    )]
    RoleNotAttached {
        /// The RAM role asked for: the listed one or `ALIBABA_CLOUD_ECS_METADATA`.
        role: String,
    },
    /// A role name that cannot be a RAM role name (and must not reach a URL path).
    #[error(
        "{source_name} is not a RAM role name (letters, digits, '.', '-', '_', '@', up to 64 characters)"
    )]
    BadRole {
        /// Where the name came from ("ALIBABA_CLOUD_ECS_METADATA", "the metadata server's role list").
        source_name: &'static str,
    },
    /// The server refused to hand out the role's credentials (`Code` other than `Success`).
    #[error(
        "the ECS metadata server refused the RAM role credentials: Code {code}; check the instance's RAM role"
    )]
    Refused {
        /// The `Code`, checked to look like one.
        code: String,
    },
    /// A read failed after the server was reached.
    #[error("reading {what} from the ECS metadata server failed: {}", .error)]
    Http {
        /// Which read.
        what: &'static str,
        /// The failure.
        error: CallError,
    },
    /// An answer that is not what the server documents; names the field, never a value.
    #[error(transparent)]
    Malformed(ApiError),
}

impl Metadata {
    /// A client for the server at `endpoint` (plain http only to 100.100.100.200 or loopback;
    /// checked by the caller's flag parsing, see `provider`).
    pub fn new(endpoint: Url) -> Self {
        Metadata { base: endpoint }
    }

    /// The node's RAM role credentials: the role named by `role` (`ALIBABA_CLOUD_ECS_METADATA`),
    /// else the one the server lists. Hardened mode: a session token first.
    pub async fn role_credentials(
        &self,
        http: &HttpClient,
        role: Option<&str>,
        deadline: Deadline,
    ) -> Result<AccessKey, MetadataError> {
        // A bad name is refused before anything is sent.
        let given = role
            .map(|role| checked_role(role.trim(), "ALIBABA_CLOUD_ECS_METADATA"))
            .transpose()?;
        let session = self.session_token(http, deadline).await?;
        let role = match given {
            Some(role) => role.to_owned(),
            None => {
                let listed = match self
                    .get(http, ROLES_PATH, "the RAM role name", &session, deadline)
                    .await
                {
                    Err(MetadataError::Http { error, .. }) if error.status() == Some(404) => {
                        return Err(MetadataError::NoRole);
                    }
                    other => other?,
                };
                let text = String::from_utf8_lossy(&listed);
                let name = text
                    .lines()
                    .map(str::trim)
                    .find(|line| !line.is_empty())
                    .ok_or(MetadataError::NoRole)?;
                checked_role(name, "the metadata server's role list")?.to_owned()
            }
        };
        let path = format!("{ROLES_PATH}{role}");
        let body = match self
            .get(http, &path, "the RAM role credentials", &session, deadline)
            .await
        {
            Err(MetadataError::Http { error, .. }) if error.status() == Some(404) => {
                return Err(MetadataError::RoleNotAttached { role });
            }
            other => other?,
        };
        let key = parse_role_credentials(&body, SystemTime::now())?;
        tracing::debug!(role = %role, access_key_id = %key.id, "RAM role credentials from the ECS metadata server");
        Ok(key)
    }

    /// The node's region (`/latest/meta-data/region-id`).
    pub async fn region(
        &self,
        http: &HttpClient,
        deadline: Deadline,
    ) -> Result<String, MetadataError> {
        let session = self.session_token(http, deadline).await?;
        let body = self
            .get(http, REGION_PATH, "the region", &session, deadline)
            .await?;
        let text = String::from_utf8_lossy(&body);
        let region = text.trim();
        if !is_region(region) {
            return Err(MetadataError::Malformed(api::malformed(
                "reading the region from the ECS metadata server",
                "region-id",
                NOT_REGION,
            )));
        }
        Ok(region.to_owned())
    }

    /// A hardened-mode session token, or `None` when the server answers the PUT with an HTTP
    /// error (no hardened mode there: reads go without the header).
    async fn session_token(
        &self,
        http: &HttpClient,
        deadline: Deadline,
    ) -> Result<Option<Secret>, MetadataError> {
        let url = self.url(TOKEN_PATH);
        let ttl = SESSION_TOKEN_TTL_SECS.to_string();
        let headers = [(TTL_HEADER, ttl.as_str())];
        let call = Call {
            route: Route::Metadata,
            method: Method::PUT,
            url: &url,
            headers: &headers,
            body: None,
            what: "the ECS metadata session token",
        };
        // Two attempts, not four: on a node that is not an ECS instance nothing answers, and
        // each attempt may wait out the connect timeout before the one-line error can say so.
        let rules = RetryRules {
            policy: RetryPolicy {
                max_attempts: 2,
                ..RetryPolicy::DEFAULT
            },
            ..RetryRules::DEFAULT
        };
        match http.send_retrying_with(call, deadline, &rules).await {
            Ok(answer) => {
                let token = String::from_utf8_lossy(&answer.body).trim().to_owned();
                if token.is_empty() {
                    return Err(MetadataError::Malformed(api::malformed(
                        "the ECS metadata session token answer",
                        "the token",
                        api::EMPTY,
                    )));
                }
                Ok(Some(Secret::new(token)))
            }
            Err(error) if matches!(error.error, HttpError::Status { .. }) => {
                tracing::debug!(
                    status = error.status(),
                    "the ECS metadata server has no hardened mode (its answer to the session token request); reading without a token"
                );
                Ok(None)
            }
            Err(error) if matches!(error.error, HttpError::Transport { .. }) => {
                Err(MetadataError::Unreachable {
                    endpoint: self.base.as_str().trim_end_matches('/').to_owned(),
                    error,
                })
            }
            Err(error) => Err(MetadataError::Http {
                what: "the session token",
                error,
            }),
        }
    }

    /// GETs `path` with the session token when there is one.
    async fn get(
        &self,
        http: &HttpClient,
        path: &str,
        what: &'static str,
        session: &Option<Secret>,
        deadline: Deadline,
    ) -> Result<Vec<u8>, MetadataError> {
        let url = self.url(path);
        let headers: Vec<(&str, &str)> = session
            .iter()
            .map(|token| (TOKEN_HEADER, token.expose()))
            .collect();
        let call = Call {
            route: Route::Metadata,
            method: Method::GET,
            url: &url,
            headers: &headers,
            body: None,
            what,
        };
        match http.send_retrying(call, deadline).await {
            Ok(answer) => Ok(answer.body),
            Err(error) => Err(MetadataError::Http { what, error }),
        }
    }

    /// `path` under the server's base URL (its own path, if any, replaced).
    fn url(&self, path: &str) -> Url {
        let mut url = self.base.clone();
        url.set_path(path);
        url.set_query(None);
        url
    }
}

/// `name` when it can be a RAM role name: 1 to 64 of `A-Z a-z 0-9 . - _ @` (Alibaba's rule), so
/// it is safe in a URL path.
fn checked_role<'n>(name: &'n str, source_name: &'static str) -> Result<&'n str, MetadataError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'@'));
    if ok {
        Ok(name)
    } else {
        Err(MetadataError::BadRole { source_name })
    }
}

/// Whether `text` looks like a region ID: `[a-z]+(-[a-z0-9]+)+` (`cn-hangzhou`,
/// `ap-southeast-1`).
pub fn is_region(text: &str) -> bool {
    let mut parts = text.split('-');
    let first_ok = parts
        .next()
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()));
    let mut rest = 0;
    let rest_ok = parts.all(|p| {
        rest += 1;
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    first_ok && rest_ok && rest > 0 && text.len() <= 64
}

/// Parses the metadata server's credentials answer (`{"AccessKeyId", "AccessKeySecret",
/// "SecurityToken", "Expiration", "LastUpdated", "Code": "Success"}`), received at `now`.
///
/// A `Code` other than `Success` is [`MetadataError::Refused`] quoting it; every field must be
/// a non-empty string; `Expiration` must be an RFC 3339 time after `now`. The secret and token
/// are held as [`Secret`], so they are remembered for redaction before anything else happens.
pub fn parse_role_credentials(body: &[u8], now: SystemTime) -> Result<AccessKey, MetadataError> {
    let what = CREDENTIALS_WHAT;
    let map = api::json_object(what, body).map_err(MetadataError::Malformed)?;
    // The secrets first: remembered even when another field is wrong.
    let secret = api::required_str(&map, what, "AccessKeySecret").map(Secret::new);
    let token = api::required_str(&map, what, "SecurityToken").map(Secret::new);
    match map.get("Code").and_then(serde_json::Value::as_str) {
        Some("Success") => {}
        Some(code) => {
            return Err(match api::clean_code(code) {
                Some(code) => MetadataError::Refused { code },
                None => MetadataError::Malformed(api::malformed(what, "Code", NOT_CODE)),
            });
        }
        None => {
            return Err(MetadataError::Malformed(api::malformed(
                what,
                "Code",
                api::MISSING,
            )));
        }
    }
    let id = api::required_str(&map, what, "AccessKeyId").map_err(MetadataError::Malformed)?;
    let secret = secret.map_err(MetadataError::Malformed)?;
    let token = token.map_err(MetadataError::Malformed)?;
    let expiration =
        api::future_rfc3339(&map, what, "Expiration", now).map_err(MetadataError::Malformed)?;
    Ok(AccessKey {
        id: id.trim().to_owned(),
        secret,
        security_token: Some(token),
        expiration: Some(expiration),
    })
}

#[cfg(test)]
mod tests;
