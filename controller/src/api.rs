//! The API server client and its errors, reduced to what may be logged.
//!
//! kube's own error texts can quote a response body; the controller keeps only the HTTP status
//! and the `Status` reason (or the kind of transport failure), and says what to check.

use std::time::Duration;

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
                "{verb} {object}: not found (404): the manifests in deploy/ create it; apply them, or check --namespace and the {} flag",
                if resource == "leases" {
                    "--lease-name"
                } else {
                    "--secret-name"
                }
            ),
            ApiError::Status { code: 409, .. } => format!(
                "{verb} {object}: conflict (409): someone else changed it since it was read; reading it again"
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

/// A client from the pod's service account, or from `KUBECONFIG` (and `~/.kube/config`) when
/// that is set, as kubectl finds it; every request ends after `timeout`.
pub async fn client(timeout: Duration) -> Result<kube::Client, String> {
    let mut config = kube::Config::infer().await.map_err(|e| {
        format!(
            "no API server configuration: {} (in a pod, the service account token is mounted; elsewhere set KUBECONFIG)",
            kcp_plugin::logging::error_chain(&e)
        )
    })?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    kube::Client::try_from(config).map_err(|e| {
        format!(
            "building the API client failed: {}",
            kcp_plugin::logging::error_chain(&e)
        )
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
    }
}
