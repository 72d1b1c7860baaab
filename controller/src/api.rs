//! The API server client and its errors, reduced to what may be logged.
//!
//! It owns how the controller presents itself (user agent `credential-provider-token-controller/<version>`,
//! field manager `credential-provider-token-controller` on every write, as client-go names its
//! callers) and how a failed call is said: kube's own error texts can quote a response body; the
//! controller keeps only the HTTP status and the `Status` reason (or the kind of transport
//! failure), and says what to check.

use std::time::Duration;

use kube::api::PostParams;

/// The name every write is made under (`fieldManager`), as in the objects' `managedFields`.
pub const FIELD_MANAGER: &str = "credential-provider-token-controller";
/// The `User-Agent` of every request: the program and its version, as client-go sends them.
pub const USER_AGENT: &str = concat!(
    "credential-provider-token-controller/",
    env!("CARGO_PKG_VERSION")
);

/// The parameters of every update: the controller's field manager, no dry run.
pub fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

/// A failed API call, without any body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The server answered with an error status.
    Status {
        /// The HTTP status.
        code: u16,
        /// The `Status` reason (`Conflict`, `Forbidden`, …); may be empty.
        reason: String,
    },
    /// No answer within the call's timeout.
    Timeout,
    /// The connection or the client failed (no body involved).
    Transport(String),
    /// The answer could not be decoded.
    Decode,
}

impl ApiError {
    /// From kube's error, keeping nothing a body could have put there.
    pub fn from_kube(error: kube::Error) -> ApiError {
        match error {
            kube::Error::Api(status) => ApiError::Status {
                code: status.code,
                reason: status
                    .reason
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .take(64)
                    .collect(),
            },
            kube::Error::SerdeError(_) | kube::Error::FromUtf8(_) => ApiError::Decode,
            kube::Error::HyperError(e) => ApiError::Transport(kcp_plugin::logging::error_chain(&e)),
            kube::Error::Service(e) => {
                ApiError::Transport(kcp_plugin::logging::one_line(&e.to_string()))
            }
            other => ApiError::Transport(match other {
                kube::Error::HttpError(_) => "building the request failed".into(),
                kube::Error::Auth(_) => "the client's credentials could not be loaded".into(),
                kube::Error::RustlsTls(_) => "TLS to the API server failed".into(),
                _ => "the request failed".into(),
            }),
        }
    }

    /// The HTTP status, if the server answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The level a failure is logged at: what needs an operator (credentials, RBAC, a missing
    /// object, a refused object) is an error, a conflict is the normal course of optimistic
    /// updates, the rest (5xx, no answer) is retried and a warning.
    pub fn level(&self) -> tracing::Level {
        match self.code() {
            Some(401 | 403 | 404 | 422) => tracing::Level::ERROR,
            Some(409) => tracing::Level::INFO,
            _ => tracing::Level::WARN,
        }
    }

    /// One line: `verb` on `object` failed, why, and what to check.
    pub fn describe(&self, verb: &str, resource: &str, namespace: &str, name: &str) -> String {
        let object = format!("{resource} {namespace}/{name}");
        match self {
            ApiError::Status { code: 401, .. } => format!(
                "{verb} {object}: the API server refused the controller's credentials (401 Unauthorized): check the pod's service account token is mounted (automountServiceAccountToken) or KUBECONFIG"
            ),
            ApiError::Status { code: 403, .. } => format!(
                "{verb} {object}: forbidden (403): the controller's Role needs the rule verbs [{verb}] on {resource} with resourceNames [{name}] in namespace {namespace} (the token controller's Role and RoleBinding in deploy/)"
            ),
            ApiError::Status { code: 404, .. } => format!(
                "{verb} {object}: not found (404): the manifests in deploy/ create it and the controller cannot (its Role allows {}): re-apply the manifests in deploy/, or check --namespace and the {} flag",
                if resource == "leases" {
                    "get and update only"
                } else {
                    "get, update and watch only; a recreated Secret is filled within seconds"
                },
                if resource == "leases" {
                    "--lease-name"
                } else {
                    "--secret-name"
                }
            ),
            ApiError::Status { code: 409, .. } => format!(
                "{verb} {object}: conflict (409): someone else changed it since it was read; reading it again"
            ),
            ApiError::Status { code: 422, .. } => format!(
                "{verb} {object}: the API server refused it as invalid (422 Invalid): {}",
                if resource == "leases" {
                    "check that no admission webhook or policy rejects the controller's Lease updates, and --identity"
                } else {
                    "too large or malformed; check the size of the targets' entries (the API server allows 1 MiB of data in all) and that no admission webhook or policy rejects the controller's Secret updates"
                }
            ),
            ApiError::Status { code, reason } => format!(
                "{verb} {object}: the API server answered {code}{}{}; retrying",
                if reason.is_empty() { "" } else { " " },
                reason
            ),
            ApiError::Timeout => {
                format!("{verb} {object}: no answer from the API server in time; retrying")
            }
            ApiError::Transport(why) => format!("{verb} {object}: {why}; retrying"),
            ApiError::Decode => {
                format!("{verb} {object}: the API server's answer could not be decoded; retrying")
            }
        }
    }
}

/// Runs one API call under `timeout`.
pub async fn call<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(timeout, future).await {
        Ok(result) => result.map_err(ApiError::from_kube),
        Err(_) => Err(ApiError::Timeout),
    }
}

/// The controller's two clients of one API server configuration.
#[derive(Clone)]
pub struct Clients {
    /// For calls: every request ends after the API timeout.
    pub calls: kube::Client,
    /// For the Secret's watch: no read timeout (a watch is idle between events); the watch
    /// keeps its own.
    pub watch: kube::Client,
}

/// The clients from the pod's service account, or from `KUBECONFIG` (and `~/.kube/config`)
/// when that is set, as kubectl finds it.
pub async fn clients(timeout: Duration) -> Result<Clients, String> {
    let mut config = kube::Config::infer().await.map_err(|e| {
        format!(
            "no API server configuration: {} (in a pod, the service account token is mounted; elsewhere set KUBECONFIG)",
            kcp_plugin::logging::error_chain(&e)
        )
    })?;
    let agent = ("user-agent".parse(), USER_AGENT.parse());
    let (Ok(name), Ok(value)) = agent else {
        return Err("building the API client failed: its user agent is not a header".into());
    };
    config.headers.push((name, value));
    config.connect_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    let build = |config: kube::Config| {
        kube::Client::try_from(config).map_err(|e| {
            format!(
                "building the API client failed: {}",
                kcp_plugin::logging::error_chain(&e)
            )
        })
    };
    let watch = build(config.clone())?;
    config.read_timeout = Some(timeout);
    Ok(Clients {
        calls: build(config)?,
        watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_names_the_missing_rule() {
        let e = ApiError::Status {
            code: 403,
            reason: "Forbidden".into(),
        };
        let line = e.describe("update", "secrets", "kube-credential-providers", "tokens");
        assert!(line.contains("verbs [update] on secrets with resourceNames [tokens] in namespace kube-credential-providers"), "{line}");
        assert!(line.contains("deploy/"), "{line}");
        let missing = ApiError::Status {
            code: 404,
            reason: "NotFound".into(),
        };
        assert!(
            missing
                .describe("get", "leases", "ns", "l")
                .contains("--lease-name")
        );
        let deleted = missing.describe("get", "secrets", "ns", "s");
        assert!(
            deleted.contains("re-apply the manifests in deploy/"),
            "{deleted}"
        );
        let invalid = ApiError::Status {
            code: 422,
            reason: "Invalid".into(),
        };
        let line = invalid.describe("update", "secrets", "ns", "s");
        assert!(
            line.starts_with("update secrets ns/s: the API server refused it as invalid (422 Invalid): too large or malformed"),
            "{line}"
        );
        assert!(!line.contains("retrying"), "{line}");
    }
}
