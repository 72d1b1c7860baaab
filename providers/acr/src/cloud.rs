//! The Azure cloud a node is in: its Entra authority, its ACR DNS suffix and the token scope.
//!
//! Resolution, as upstream (`pkg/azclient/cloud.go`) plus the environment variables Azure SDKs
//! honour:
//! 1. `cloud` from `azure.json` (case-insensitive): `AzurePublicCloud`/`AzureCloud` (also the
//!    default for empty or unknown names), `AzureChinaCloud`, `AzureUSGovernment(Cloud)`.
//! 2. `resourceManagerEndpoint`, when set: the cloud's ARM metadata
//!    (`GET <endpoint>/metadata/endpoints?api-version=2019-05-01`) gives the authority and the
//!    `acrLoginServer` suffix. Upstream fetches it with no timeout; here it is one bounded call.
//! 3. `AZURE_ENVIRONMENT_FILEPATH` (Azure Stack): its `activeDirectoryEndpoint` and
//!    `containerRegistryDNSSuffix` override both.
//! 4. `AZURE_AUTHORITY_HOST` overrides the authority last, as azure_identity does when it is
//!    given no cloud (we always give it one, so we apply the variable ourselves).
//!
//! The scope is `https://containerregistry.azure.net/.default` in every cloud: ACR accepts that
//! audience everywhere (upstream since #8593, and the Azure SDKs' `azcontainerregistry`);
//! `--token-scope` overrides it.

use std::time::Duration;

use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, Route};
use reqwest::Method;
use serde_json::Value;

use crate::transport::USER_AGENT;

/// The default Entra scope for ACR, in every cloud.
pub const ACR_SCOPE: &str = "https://containerregistry.azure.net/.default";
/// Environment variable naming an Azure Stack environment file.
pub const ENVIRONMENT_FILE_ENV: &str = "AZURE_ENVIRONMENT_FILEPATH";
/// Environment variable overriding the Entra authority host.
pub const AUTHORITY_HOST_ENV: &str = "AZURE_AUTHORITY_HOST";
/// Longest wait for the ARM metadata document.
const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// The endpoints of one cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cloud {
    /// A name for messages: `AzurePublicCloud`, or where a custom cloud came from.
    pub name: String,
    /// The Entra authority, `https://login.microsoftonline.com/`.
    pub authority_host: String,
    /// This cloud's ACR DNS suffix, without a leading dot (`azurecr.io`).
    pub acr_suffix: String,
}

impl Cloud {
    /// Azure's public cloud, the default.
    pub fn public() -> Cloud {
        Cloud {
            name: "AzurePublicCloud".into(),
            authority_host: "https://login.microsoftonline.com/".into(),
            acr_suffix: "azurecr.io".into(),
        }
    }

    /// The three named clouds; `None` for an unknown name.
    pub fn named(name: &str) -> Option<Cloud> {
        let (canonical, authority, suffix) = match name.to_ascii_uppercase().as_str() {
            "" | "AZURECLOUD" | "AZUREPUBLICCLOUD" => return Some(Cloud::public()),
            "AZURECHINACLOUD" => (
                "AzureChinaCloud",
                "https://login.chinacloudapi.cn/",
                "azurecr.cn",
            ),
            "AZUREUSGOVERNMENT" | "AZUREUSGOVERNMENTCLOUD" => (
                "AzureUSGovernmentCloud",
                "https://login.microsoftonline.us/",
                "azurecr.us",
            ),
            _ => return None,
        };
        Some(Cloud {
            name: canonical.to_owned(),
            authority_host: authority.to_owned(),
            acr_suffix: suffix.to_owned(),
        })
    }

    /// Resolves the cloud from the config's `cloud` and `resourceManagerEndpoint` and the
    /// environment (see the module docs).
    pub async fn resolve(
        name: &str,
        resource_manager_endpoint: &str,
        env: &dyn Fn(&str) -> Option<String>,
        http: &HttpClient,
        deadline: Deadline,
    ) -> anyhow::Result<Cloud> {
        warn_if_unknown(name);
        let mut cloud = Cloud::named_or_public(name);
        let endpoint = resource_manager_endpoint.trim();
        if !endpoint.is_empty() {
            cloud = from_arm_metadata(endpoint, &cloud, http, deadline).await?;
        }
        cloud.with_environment(env)
    }

    /// [`Self::resolve`] without the network, for answering from the token cache: `None` when
    /// the config names a `resourceManagerEndpoint` (its metadata must be fetched) or the result
    /// is an error ([`Self::resolve`] then reports it). Logs nothing.
    pub fn resolve_offline(
        name: &str,
        resource_manager_endpoint: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Cloud> {
        if !resource_manager_endpoint.trim().is_empty() {
            return None;
        }
        Cloud::named_or_public(name).with_environment(env).ok()
    }

    /// A well-known cloud by name; upstream falls back to the public cloud for unknown names
    /// (AzureStackCloud included, which then relies on the environment file).
    fn named_or_public(name: &str) -> Cloud {
        Cloud::named(name).unwrap_or_else(Cloud::public)
    }

    /// The environment file and authority host applied, the authority checked.
    fn with_environment(mut self, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Cloud> {
        if let Some(path) = env(ENVIRONMENT_FILE_ENV).filter(|p| !p.trim().is_empty()) {
            self = apply_environment_file(self, &path)?;
        }
        if let Some(host) = env(AUTHORITY_HOST_ENV).filter(|h| !h.trim().is_empty()) {
            self.authority_host = host.trim().to_owned();
        }
        if !self.authority_host.starts_with("https://") {
            anyhow::bail!(
                "the Entra authority {} (cloud {}) is not https; Entra ID is only reached over https (check {AUTHORITY_HOST_ENV}, {ENVIRONMENT_FILE_ENV} and resourceManagerEndpoint)",
                self.authority_host,
                self.name
            );
        }
        Ok(self)
    }
}

/// The warning for a cloud name the provider does not know (it then uses the public cloud).
pub fn warn_if_unknown(name: &str) {
    if Cloud::named(name).is_none() && !name.eq_ignore_ascii_case("AzureStackCloud") {
        tracing::warn!(
            cloud = name,
            "unknown cloud name in the config; using AzurePublicCloud"
        );
    }
}

/// Reads a custom cloud's endpoints from its ARM metadata.
async fn from_arm_metadata(
    endpoint: &str,
    base: &Cloud,
    http: &HttpClient,
    deadline: Deadline,
) -> anyhow::Result<Cloud> {
    // The answer names the Entra authority the node's credentials are sent to, so it is read
    // over https only (plain http to loopback, as every endpoint: kcp_plugin::endpoint).
    let arm = kcp_plugin::endpoint::secure_url(endpoint, "resourceManagerEndpoint").map_err(|e| {
        anyhow::anyhow!(
            "{e}; the cloud config's resourceManagerEndpoint names where Entra tokens go, so it must be an https URL"
        )
    })?;
    let url_text = format!(
        "{}/metadata/endpoints?api-version=2019-05-01",
        arm.as_str().trim_end_matches('/')
    );
    let context = || {
        format!(
            "reading the cloud metadata of resourceManagerEndpoint {endpoint} ({url_text}); check the endpoint in the cloud config and network access to it"
        )
    };
    let url = reqwest::Url::parse(&url_text)
        .map_err(|e| anyhow::anyhow!("{}: invalid URL: {e}", context()))?;
    // A shorter limit than the client's: this one call must not eat the token calls' time.
    let limit = Deadline::after(deadline.cap(METADATA_TIMEOUT));
    let headers = [("user-agent", USER_AGENT)];
    let response = http
        .fetch(Route::Internet, Method::GET, &url, &headers, None, limit)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {}", context(), e.describe()))?;
    if response.status != 200 {
        anyhow::bail!("{}: HTTP {}", context(), response.status);
    }
    let value: Value = serde_json::from_slice(&response.body)
        .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", context()))?;
    parse_arm_metadata(&value, base).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: the answer has no authentication.loginEndpoint",
            context()
        )
    })
}

/// The first cloud of a `2019-05-01` metadata answer (a list; older versions answer one object).
fn parse_arm_metadata(value: &Value, base: &Cloud) -> Option<Cloud> {
    let first = match value {
        Value::Array(list) => list.first()?,
        object @ Value::Object(_) => object,
        _ => return None,
    };
    let login = first
        .pointer("/authentication/loginEndpoint")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())?;
    let suffix = first
        .pointer("/suffixes/acrLoginServer")
        .and_then(Value::as_str)
        .map(|s| s.trim().trim_start_matches('.').to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| base.acr_suffix.clone());
    let name = first
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("custom cloud");
    Some(Cloud {
        name: name.to_owned(),
        authority_host: login.to_owned(),
        acr_suffix: suffix,
    })
}

/// Applies an Azure Stack environment file (`activeDirectoryEndpoint`, `containerRegistryDNSSuffix`).
fn apply_environment_file(mut cloud: Cloud, path: &str) -> anyhow::Result<Cloud> {
    let context = || format!("reading the Azure environment file {path} ({ENVIRONMENT_FILE_ENV})");
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", context()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", context()))?;
    // Go's encoding/json matches these keys case-insensitively too.
    let field = |name: &str| {
        value.as_object().and_then(|m| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.as_str())
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
    };
    if let Some(authority) = field("activeDirectoryEndpoint") {
        cloud.authority_host = authority;
    }
    if let Some(suffix) = field("containerRegistryDNSSuffix") {
        cloud.acr_suffix = suffix.trim_start_matches('.').to_owned();
    }
    if let Some(name) = field("name") {
        cloud.name = name;
    }
    Ok(cloud)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_clouds_have_their_authority_and_suffix() {
        for (name, authority, suffix) in [
            ("", "https://login.microsoftonline.com/", "azurecr.io"),
            (
                "AzurePublicCloud",
                "https://login.microsoftonline.com/",
                "azurecr.io",
            ),
            (
                "azurecloud",
                "https://login.microsoftonline.com/",
                "azurecr.io",
            ),
            (
                "AzureChinaCloud",
                "https://login.chinacloudapi.cn/",
                "azurecr.cn",
            ),
            (
                "AZUREUSGOVERNMENT",
                "https://login.microsoftonline.us/",
                "azurecr.us",
            ),
            (
                "AzureUSGovernmentCloud",
                "https://login.microsoftonline.us/",
                "azurecr.us",
            ),
        ] {
            let c = Cloud::named(name).unwrap();
            assert_eq!(
                (c.authority_host.as_str(), c.acr_suffix.as_str()),
                (authority, suffix),
                "{name}"
            );
        }
        assert!(Cloud::named("AzureGermanCloud").is_none());
    }

    #[test]
    fn arm_metadata_gives_authority_and_suffix() {
        let base = Cloud::named("").unwrap();
        let v: Value = serde_json::from_str(
            r#"[{"name":"AzureStackUser","authentication":{"loginEndpoint":"https://login.stack.example/","audiences":["https://management.stack.example/x"]},
                 "resourceManager":"https://management.stack.example/","suffixes":{"acrLoginServer":"azurecr.stack.example"}}]"#,
        )
        .unwrap();
        let c = parse_arm_metadata(&v, &base).unwrap();
        assert_eq!(c.name, "AzureStackUser");
        assert_eq!(c.authority_host, "https://login.stack.example/");
        assert_eq!(c.acr_suffix, "azurecr.stack.example");
        // No ACR suffix in the metadata: keep the named cloud's.
        let v: Value =
            serde_json::from_str(r#"{"authentication":{"loginEndpoint":"https://l/"}}"#).unwrap();
        assert_eq!(
            parse_arm_metadata(&v, &base).unwrap().acr_suffix,
            "azurecr.io"
        );
        assert!(parse_arm_metadata(&serde_json::json!([]), &base).is_none());
        assert!(parse_arm_metadata(&serde_json::json!([{"authentication":{}}]), &base).is_none());
    }

    #[test]
    fn environment_file_overrides_authority_and_suffix() {
        let dir = std::env::temp_dir().join(format!("acr-envfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("env.json");
        std::fs::write(
            &path,
            r#"{"name":"AzureStackCloud","ActiveDirectoryEndpoint":"https://adfs.local/","containerRegistryDNSSuffix":".azurecr.local"}"#,
        )
        .unwrap();
        let c =
            apply_environment_file(Cloud::named("").unwrap(), &path.display().to_string()).unwrap();
        assert_eq!(c.authority_host, "https://adfs.local/");
        assert_eq!(c.acr_suffix, "azurecr.local");
        assert_eq!(c.name, "AzureStackCloud");
        let e = apply_environment_file(Cloud::named("").unwrap(), "/nonexistent/env.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("reading the Azure environment file /nonexistent/env.json (AZURE_ENVIRONMENT_FILEPATH)"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
