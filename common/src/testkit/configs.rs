//! The example kubelet configurations under `testdata/configs/`, read with a real YAML parser and
//! checked against the kubelet's basic rules, so every provider's config test starts from the same
//! ground: the files parse, and the kubelet would accept them.

use std::path::PathBuf;

use yaml_rust2::{Yaml, YamlLoader};

use crate::duration::GoDuration;
use crate::protocol::ApiVersion;

/// One provider entry of an example config.
#[derive(Debug, Clone)]
pub struct ExampleProvider {
    /// `name`: the binary in the bin dir.
    pub name: String,
    /// `matchImages`.
    pub match_images: Vec<String>,
    /// `defaultCacheDuration`.
    pub default_cache_duration: GoDuration,
    /// `args`.
    pub args: Vec<String>,
    /// `tokenAttributes`, when present (the raw YAML).
    pub token_attributes: Option<Yaml>,
}

impl ExampleProvider {
    /// `tokenAttributes.optionalServiceAccountAnnotationKeys` and `required…`, in file order.
    pub fn annotation_keys(&self) -> Vec<String> {
        let Some(t) = &self.token_attributes else {
            return Vec::new();
        };
        [
            "requiredServiceAccountAnnotationKeys",
            "optionalServiceAccountAnnotationKeys",
        ]
        .iter()
        .flat_map(|k| strings(&t[*k]))
        .collect()
    }
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The path of an example config.
pub fn example_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/configs")
        .join(file)
}

/// Loads `testdata/configs/<file>` and asserts what the kubelet requires of it: kind and
/// group, at least one provider, each with a name, a known credential-provider apiVersion, at
/// least one `matchImages` entry, a non-negative `defaultCacheDuration`, and a complete
/// `tokenAttributes` block (audience, `cacheType`, explicit `requireServiceAccount`) on v1 only.
pub fn example_config(file: &str) -> Vec<ExampleProvider> {
    let path = example_path(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs =
        YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let [doc] = docs.as_slice() else {
        panic!("{}: expected one YAML document", path.display())
    };
    let at = |what: &str| format!("{}: {what}", path.display());
    assert_eq!(
        doc["kind"].as_str(),
        Some("CredentialProviderConfig"),
        "{}",
        at("kind")
    );
    assert!(
        matches!(
            doc["apiVersion"].as_str(),
            Some(
                "kubelet.config.k8s.io/v1"
                    | "kubelet.config.k8s.io/v1beta1"
                    | "kubelet.config.k8s.io/v1alpha1"
            )
        ),
        "{}",
        at("apiVersion")
    );
    let providers = doc["providers"]
        .as_vec()
        .unwrap_or_else(|| panic!("{}", at("providers")));
    assert!(
        !providers.is_empty(),
        "{}",
        at("at least 1 item in plugins is required")
    );
    providers
        .iter()
        .map(|p| {
            let name = p["name"]
                .as_str()
                .unwrap_or_else(|| panic!("{}", at("providers.name")))
                .to_owned();
            let version = p["apiVersion"]
                .as_str()
                .unwrap_or_else(|| panic!("{}", at("providers.apiVersion")));
            let version: ApiVersion = version
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", at("providers.apiVersion")));
            let match_images = strings(&p["matchImages"]);
            assert!(!match_images.is_empty(), "{}", at("providers.matchImages"));
            let duration = p["defaultCacheDuration"]
                .as_str()
                .unwrap_or_else(|| panic!("{}", at("providers.defaultCacheDuration")));
            let default_cache_duration = GoDuration::parse(duration)
                .unwrap_or_else(|e| panic!("{}: {e}", at("defaultCacheDuration")));
            assert!(
                !default_cache_duration.is_negative(),
                "{}",
                at("defaultCacheDuration must be >= 0")
            );
            let token_attributes =
                (!p["tokenAttributes"].is_badvalue()).then(|| p["tokenAttributes"].clone());
            if let Some(t) = &token_attributes {
                assert_eq!(
                    version,
                    ApiVersion::V1,
                    "{}",
                    at("tokenAttributes needs credentialprovider v1")
                );
                assert!(
                    t["serviceAccountTokenAudience"]
                        .as_str()
                        .is_some_and(|a| !a.is_empty()),
                    "{}",
                    at("audience")
                );
                assert!(
                    matches!(t["cacheType"].as_str(), Some("ServiceAccount" | "Token")),
                    "{}",
                    at("cacheType")
                );
                assert!(
                    t["requireServiceAccount"].as_bool().is_some(),
                    "{}",
                    at("requireServiceAccount")
                );
            }
            ExampleProvider {
                name,
                match_images,
                default_cache_duration,
                args: strings(&p["args"]),
                token_attributes,
            }
        })
        .collect()
}
