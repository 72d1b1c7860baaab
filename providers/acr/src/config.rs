//! The cloud configuration file (`/etc/kubernetes/azure.json`), read as upstream reads it.
//!
//! Upstream's plugin loads it with cloud-provider-azure's config loader, which trims the file's
//! surrounding whitespace and decodes it with `sigs.k8s.io/yaml`'s `Unmarshal` twice: once for
//! `cloudConfigType`, once for the settings. That is YAML 1.1 (go-yaml v2, read here by the same
//! [`kcp_kubelet::yaml11`] the kubelet's config uses), turned into JSON and decoded by Go's
//! `encoding/json`. So the file may be JSON or YAML; an unquoted `yes`, `on` or `y` is `true`; only
//! the first YAML document counts; a repeated key is no error (the last wins); keys match
//! case-insensitively (`tenantID` is `tenantId`), and when two spellings of one key appear, the
//! one that sorts last wins (Go decodes the converted JSON in sorted key order); unknown keys are
//! ignored and an empty file means all defaults. The fields this plugin uses are promoted from
//! embedded structs, which `sigs.k8s.io/yaml`'s number-to-string coercion does not reach: a number
//! where a string belongs is an error there too. Only those fields are read; a field of the wrong
//! type is an error naming the file and the field, where Go would stop with a bare
//! `json: cannot unmarshal`.

use std::collections::BTreeMap;
use std::path::Path;

use kcp_kubelet::{Secret, yaml11};
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
        /// The cloud config file as the plugin's argument names it.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// Neither JSON nor YAML, or not a mapping.
    #[error(
        "failed to load config: the cloud config file {path} is not valid JSON or YAML: {reason}"
    )]
    Syntax {
        /// The cloud config file as the plugin's argument names it.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A known field of the wrong type.
    #[error(
        "failed to load config: the cloud config file {path}: field {field:?} must be {expected}, got {got}"
    )]
    Field {
        /// The cloud config file as the plugin's argument names it.
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
        // Read first, into a string (sigs.k8s.io/yaml turns a number or boolean into one); only a
        // list or a mapping fails there.
        if let Some(v @ (Value::Array(_) | Value::Object(_))) =
            get.map.get(&fold("cloudConfigType"))
        {
            return Err(get.wrong("cloudConfigType", "a string", v));
        }
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

/// The top-level mapping with case-folded keys, each holding the value Go would store.
fn document(text: &str) -> Result<BTreeMap<String, Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(BTreeMap::new());
    }
    let doc = yaml11::parse(text).map_err(|yaml_error| {
        // For a file meant as JSON, the JSON parser's message says more.
        match serde_json::from_str::<Value>(text) {
            Err(json_error) if text.starts_with('{') => json_error.to_string(),
            _ => yaml_error,
        }
    })?;
    match yaml11::to_json(&doc.root)? {
        Value::Object(map) => {
            // encoding/json decodes the converted document in sorted key order and lets a later
            // key overwrite an earlier one that folds to the same field.
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(entries.into_iter().map(|(k, v)| (fold(&k), v)).collect())
        }
        Value::Null => Ok(BTreeMap::new()),
        other => Err(format!(
            "expected a mapping of settings, got {}",
            yaml11::kind_of(&other)
        )),
    }
}

/// A key as Go's `encoding/json` compares it with a field name: Unicode simple case folding,
/// under which `ſ` is `s` and the Kelvin sign is `k`.
fn fold(key: &str) -> String {
    key.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ſ' { 's' } else { c })
        .collect()
}

struct Fields<'a> {
    map: BTreeMap<String, Value>,
    path: &'a str,
}

impl Fields<'_> {
    fn string(&self, field: &'static str) -> Result<String, ConfigError> {
        match self.map.get(&fold(field)) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.wrong(field, "a string", other)),
        }
    }

    fn bool(&self, field: &'static str) -> Result<bool, ConfigError> {
        match self.map.get(&fold(field)) {
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
            got: yaml11::kind_of(got),
        }
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

    /// Upstream reads azure.json with sigs.k8s.io/yaml, i.e. YAML 1.1 (docs/providers/acr.md,
    /// “The cloud config file”).
    #[test]
    fn yaml_1_1_scalars_as_upstream_reads_them() {
        for word in ["yes", "Yes", "y", "on", "ON", "true"] {
            let c = parse(&format!("useManagedIdentityExtension: {word}\n")).unwrap();
            assert!(c.use_managed_identity_extension, "{word}");
        }
        for word in ["no", "N", "off", "false", "~", ""] {
            let c = parse(&format!(
                "useManagedIdentityExtension: {word}\nuseFederatedWorkloadIdentityExtension: yes\n"
            ))
            .unwrap();
            assert!(!c.use_managed_identity_extension, "{word}");
            assert!(c.use_federated_workload_identity_extension, "{word}");
        }
        // JSON is YAML: the same values, JSON's own spelling.
        let c = parse(r#"{"useManagedIdentityExtension": true, "tenantId": "t"}"#).unwrap();
        assert!(c.use_managed_identity_extension);
        assert_eq!(c.tenant_id, "t");
        // Quoted, `yes` is a string, which a bool field refuses.
        let e = parse("useManagedIdentityExtension: 'yes'\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "field \"useManagedIdentityExtension\" must be true or false, got a string"
            ),
            "{e}"
        );
        // An unquoted 0755 is the number 493, not a string (no coercion for these fields).
        let e = parse("aadClientId: 0755\n").unwrap_err().to_string();
        assert!(
            e.ends_with("field \"aadClientId\" must be a string, got a number"),
            "{e}"
        );
        // ...and `1:30` or a date stay strings.
        let c = parse("aadClientId: 1:30\ntenantId: 2001-12-14\n").unwrap();
        assert_eq!(
            (c.aad_client_id.as_str(), c.tenant_id.as_str()),
            ("1:30", "2001-12-14")
        );
    }

    #[test]
    fn a_yaml_azure_json() {
        let c = parse(
            "---\ncloud: AzurePublicCloud\ntenantId: 72f988bf-86f1-41af-91ab-2d7cd011db47\n\
             useManagedIdentityExtension: yes\nuserAssignedIdentityID: &id 6e4b5d3c-1111-2222-3333-444455556666\n\
             aadClientId: *id\ncloudProviderRateLimitQPS: 0x10\nvmType: vmss\n",
        )
        .unwrap();
        assert_eq!(c.cloud, "AzurePublicCloud");
        assert_eq!(c.tenant_id, "72f988bf-86f1-41af-91ab-2d7cd011db47");
        assert!(c.use_managed_identity_extension);
        assert_eq!(
            c.user_assigned_identity_id,
            "6e4b5d3c-1111-2222-3333-444455556666"
        );
        assert_eq!(c.aad_client_id, c.user_assigned_identity_id);
    }

    #[test]
    fn keys_and_documents_as_go_decodes_them() {
        // Two spellings of one key: the one that sorts last wins, wherever it stands.
        for text in [
            r#"{"tenantId": "a", "TENANTID": "b"}"#,
            r#"{"TENANTID": "b", "tenantId": "a"}"#,
        ] {
            assert_eq!(parse(text).unwrap().tenant_id, "a", "{text}");
        }
        // The same key twice: the last one wins, no error (upstream decodes leniently).
        assert_eq!(parse("tenantId: a\ntenantId: b\n").unwrap().tenant_id, "b");
        // Go folds the long s like an s.
        assert_eq!(
            parse("aadClientſecret: x\n")
                .unwrap()
                .aad_client_secret
                .map(|s| s.expose().to_owned()),
            Some("x".to_owned())
        );
        // Only the first document counts; what follows is not even read.
        assert_eq!(
            parse("tenantId: a\n---\ntenantId: [b\n").unwrap().tenant_id,
            "a"
        );
        // Surrounding whitespace is trimmed before parsing: an indented document marker is one.
        assert_eq!(parse("  ---\ntenantId: a\n").unwrap().tenant_id, "a");
        assert!(yaml11::parse("  ---\ntenantId: a\n").is_err());
        // cloudConfigType is decoded first into a string: a number is coerced, a list is not.
        assert!(parse("cloudConfigType: 1\n").is_ok());
        let e = parse("cloudConfigType: [file]\n").unwrap_err().to_string();
        assert!(
            e.ends_with("field \"cloudConfigType\" must be a string, got a list"),
            "{e}"
        );
        // What JSON cannot carry fails the conversion, wherever it is.
        let e = parse("cloudProviderRateLimitQPS: .inf\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("is not valid JSON or YAML: json: unsupported value: +Inf"),
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
