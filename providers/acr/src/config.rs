//! The cloud configuration file (`/etc/kubernetes/azure.json`), read as upstream reads it.
//!
//! Upstream decodes it with `sigs.k8s.io/yaml` (YAML → JSON → Go `encoding/json`): the file may be
//! JSON or YAML, keys match case-insensitively (`tenantID` is `tenantId`), unknown keys are
//! ignored and an empty file means all defaults. Only the fields this plugin uses are read; a
//! field of the wrong type is an error naming the file and the field, where Go would stop with a
//! bare `json: cannot unmarshal`.

use std::collections::BTreeMap;
use std::path::Path;

use kcp_kubelet::Secret;
use serde_json::Value;

/// The largest configuration file read; a real `azure.json` is about 2 KiB.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The fields of `azure.json` this plugin uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AzureConfig {
    /// `cloud`: `AzurePublicCloud` (default), `AzureChinaCloud`, `AzureUSGovernmentCloud`, `AzureStackCloud`.
    pub cloud: String,
    /// `tenantId`: the tenant of the node's identity, also sent with every exchange.
    pub tenant_id: String,
    /// `aadClientId`: the service principal's (or workload identity's) client ID.
    pub aad_client_id: String,
    /// `aadClientSecret`: the service principal's secret.
    pub aad_client_secret: Option<Secret>,
    /// `useManagedIdentityExtension`: use the node's managed identity.
    pub use_managed_identity_extension: bool,
    /// `userAssignedIdentityID`: a user-assigned identity's client ID or ARM resource ID.
    pub user_assigned_identity_id: String,
    /// `resourceManagerEndpoint`: a custom cloud's ARM endpoint, whose metadata names its endpoints.
    pub resource_manager_endpoint: String,
    /// `aadFederatedTokenFile`: the projected token of workload identity.
    pub aad_federated_token_file: String,
    /// `useFederatedWorkloadIdentityExtension`: use workload identity.
    pub use_federated_workload_identity_extension: bool,
}

/// Where AKS keeps the cloud configuration file: Linux nodes and Windows nodes.
pub const USUAL_PATH: &str = if cfg!(windows) {
    r"C:\k\azure.json"
} else {
    "/etc/kubernetes/azure.json"
};

/// Why the configuration file could not be used. Each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Missing or unreadable.
    #[error(
        "failed to load config: reading the cloud config file {path}: {reason} (pass its path as the plugin's argument in the kubelet's CredentialProviderConfig, usually {USUAL_PATH})"
    )]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// Neither JSON nor YAML, or not a mapping.
    #[error(
        "failed to load config: the cloud config file {path} is not valid JSON or YAML: {reason}"
    )]
    Syntax {
        /// The path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A known field of the wrong type.
    #[error(
        "failed to load config: the cloud config file {path}: field {field:?} must be {expected}, got {got}"
    )]
    Field {
        /// The path.
        path: String,
        /// The field as upstream spells it.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What it was.
        got: &'static str,
    },
}

impl AzureConfig {
    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let display = path.display().to_string();
        let read_error = |reason: String| ConfigError::Read {
            path: display.clone(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| read_error(e.to_string()))?;
        if meta.is_dir() {
            return Err(read_error("it is a directory".into()));
        }
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(read_error(format!("larger than {MAX_CONFIG_BYTES} bytes")));
        }
        let bytes = std::fs::read(path).map_err(|e| read_error(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::Syntax {
            path: display.clone(),
            reason: format!(
                "not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        })?;
        Self::parse(&text, &display)
    }

    /// Parses the text of a configuration file; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let fields = document(text).map_err(|reason| ConfigError::Syntax {
            path: path.to_owned(),
            reason,
        })?;
        let get = Fields { map: fields, path };
        Ok(AzureConfig {
            cloud: get.string("cloud")?,
            tenant_id: get.string("tenantId")?,
            aad_client_id: get.string("aadClientId")?,
            aad_client_secret: Some(get.string("aadClientSecret")?)
                .filter(|s| !s.is_empty())
                .map(Secret::from),
            use_managed_identity_extension: get.bool("useManagedIdentityExtension")?,
            user_assigned_identity_id: get.string("userAssignedIdentityID")?,
            resource_manager_endpoint: get.string("resourceManagerEndpoint")?,
            aad_federated_token_file: get.string("aadFederatedTokenFile")?,
            use_federated_workload_identity_extension: get
                .bool("useFederatedWorkloadIdentityExtension")?,
        })
    }
}

/// The top-level mapping with lower-cased keys (a later spelling of a key wins, as in Go).
fn document(text: &str) -> Result<BTreeMap<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    // JSON first: it is what nearly every node has, and its errors are the clearest for it.
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(json_error) => match yaml_to_json(text) {
            Ok(value) => value,
            Err(_) if text.trim_start().starts_with('{') => {
                return Err(format!("{json_error}"));
            }
            Err(yaml_error) => return Err(yaml_error),
        },
    };
    match value {
        Value::Object(map) => Ok(map
            .into_iter()
            .map(|(k, v)| (k.to_lowercase(), v))
            .collect()),
        Value::Null => Ok(BTreeMap::new()),
        other => Err(format!(
            "expected a mapping of settings, got {}",
            type_name(&other)
        )),
    }
}

/// Parses YAML into the JSON value `sigs.k8s.io/yaml` would produce.
fn yaml_to_json(text: &str) -> Result<Value, String> {
    use yaml_rust2::{Yaml, YamlLoader};
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    fn convert(y: &Yaml) -> Result<Value, String> {
        Ok(match y {
            Yaml::Null | Yaml::BadValue => Value::Null,
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Integer(i) => Value::from(*i),
            Yaml::Real(r) => r
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or_else(|| Value::String(r.clone()), Value::Number),
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Array(items) => {
                Value::Array(items.iter().map(convert).collect::<Result<_, _>>()?)
            }
            Yaml::Hash(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => return Err("mapping keys must be strings".into()),
                    };
                    out.insert(key, convert(v)?);
                }
                Value::Object(out)
            }
            Yaml::Alias(_) => return Err("YAML aliases are not supported".into()),
        })
    }
    match docs.as_slice() {
        [] => Ok(Value::Null),
        [doc] => convert(doc),
        _ => Err("expected one YAML document, found several".into()),
    }
}

struct Fields<'a> {
    map: BTreeMap<String, Value>,
    path: &'a str,
}

impl Fields<'_> {
    fn string(&self, field: &'static str) -> Result<String, ConfigError> {
        match self.map.get(&field.to_lowercase()) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.wrong(field, "a string", other)),
        }
    }

    fn bool(&self, field: &'static str) -> Result<bool, ConfigError> {
        match self.map.get(&field.to_lowercase()) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.wrong(field, "true or false", other)),
        }
    }

    fn wrong(&self, field: &'static str, expected: &'static str, got: &Value) -> ConfigError {
        ConfigError::Field {
            path: self.path.to_owned(),
            field,
            expected,
            got: type_name(got),
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AzureConfig, ConfigError> {
        AzureConfig::parse(text, "/etc/kubernetes/azure.json")
    }

    #[test]
    fn reads_json_with_case_insensitive_keys_and_ignores_unknown_ones() {
        let c = parse(
            r#"{"cloud":"AzurePublicCloud","tenantID":"t-1","AADClientID":"c-1","aadClientSecret":"s3cr3t",
                "useManagedIdentityExtension":true,"userAssignedIdentityID":"u-1","subscriptionId":"x",
                "cloudProviderBackoff":true,"vmType":"vmss","resourceManagerEndpoint":"",
                "aadFederatedTokenFile":"/var/run/token","useFederatedWorkloadIdentityExtension":false}"#,
        )
        .unwrap();
        assert_eq!(c.cloud, "AzurePublicCloud");
        assert_eq!(c.tenant_id, "t-1");
        assert_eq!(c.aad_client_id, "c-1");
        assert_eq!(
            c.aad_client_secret.as_ref().map(Secret::expose),
            Some("s3cr3t")
        );
        assert!(c.use_managed_identity_extension);
        assert_eq!(c.user_assigned_identity_id, "u-1");
        assert_eq!(c.aad_federated_token_file, "/var/run/token");
        assert!(!c.use_federated_workload_identity_extension);
    }

    #[test]
    fn reads_yaml_like_json() {
        let c = parse(
            "# node config\ncloud: AzureChinaCloud\ntenantId: \"t-2\"\nuseManagedIdentityExtension: true\nuserAssignedIdentityID: 'u-2'\nnested: {a: 1}\n",
        )
        .unwrap();
        assert_eq!(c.cloud, "AzureChinaCloud");
        assert_eq!(c.tenant_id, "t-2");
        assert!(c.use_managed_identity_extension);
        assert_eq!(c.user_assigned_identity_id, "u-2");
    }

    #[test]
    fn empty_files_are_all_defaults() {
        assert_eq!(parse("").unwrap(), AzureConfig::default());
        assert_eq!(parse("  \n").unwrap(), AzureConfig::default());
        assert_eq!(parse("{}").unwrap(), AzureConfig::default());
        assert_eq!(parse("---\n").unwrap(), AzureConfig::default());
        // An empty secret is no secret.
        assert!(
            parse(r#"{"aadClientSecret":""}"#)
                .unwrap()
                .aad_client_secret
                .is_none()
        );
    }

    #[test]
    fn malformed_files_name_the_file_and_the_problem() {
        // docs/providers/acr.md “Test vectors”: `{invalid json` and `random-config` fail with
        // "failed to load config".
        let e = parse("{invalid json").unwrap_err().to_string();
        assert!(
            e.starts_with("failed to load config: the cloud config file /etc/kubernetes/azure.json is not valid JSON or YAML: key must be a string"),
            "{e}"
        );
        let e = parse("random-config").unwrap_err().to_string();
        assert!(
            e.contains("expected a mapping of settings, got a string"),
            "{e}"
        );
        let e = parse("a: [1\n").unwrap_err().to_string();
        assert!(e.contains("is not valid JSON or YAML"), "{e}");
    }

    #[test]
    fn wrong_types_name_the_field() {
        let e = parse(r#"{"useManagedIdentityExtension":"true"}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "failed to load config: the cloud config file /etc/kubernetes/azure.json: field \"useManagedIdentityExtension\" must be true or false, got a string"
        );
        let e = parse("tenantId: 42\n").unwrap_err().to_string();
        assert!(
            e.contains("field \"tenantId\" must be a string, got a number"),
            "{e}"
        );
    }

    #[test]
    fn load_reports_missing_files_and_directories() {
        let e = AzureConfig::load(Path::new("/nonexistent/azure.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("failed to load config: reading the cloud config file /nonexistent/azure.json: No such file or directory"),
            "{e}"
        );
        let e = AzureConfig::load(Path::new("/")).unwrap_err().to_string();
        assert!(e.contains("it is a directory"), "{e}");
    }
}
