//! The shipped kubelet configurations: valid YAML with the fields the kubelet requires, and the
//! token variant set up the way this plugin reads it.

use yaml_rust2::{Yaml, YamlLoader};

fn load(name: &str) -> Yaml {
    let path = format!("{}/config/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(docs.len(), 1, "{path}");
    docs.remove(0)
}

fn provider(doc: &Yaml) -> &Yaml {
    assert_eq!(doc["apiVersion"].as_str(), Some("kubelet.config.k8s.io/v1"));
    assert_eq!(doc["kind"].as_str(), Some("CredentialProviderConfig"));
    let p = &doc["providers"][0];
    assert_eq!(p["name"].as_str(), Some("acr-credential-provider"));
    assert_eq!(
        p["apiVersion"].as_str(),
        Some("credentialprovider.kubelet.k8s.io/v1")
    );
    assert!(p["defaultCacheDuration"].as_str().is_some());
    assert!(!p["matchImages"].as_vec().map(Vec::is_empty).unwrap_or(true));
    assert_eq!(p["args"][0].as_str(), Some("/etc/kubernetes/azure.json"));
    p
}

#[test]
fn node_identity_config_is_complete() {
    let doc = load("credential-provider-config.yaml");
    let p = provider(&doc);
    assert!(p["tokenAttributes"].is_badvalue());
    assert_eq!(
        p["args"][1].as_str(),
        Some("--registry-mirror=mcr.microsoft.com:myregistry.azurecr.io")
    );
}

#[test]
fn token_config_names_the_annotations_the_plugin_reads() {
    let doc = load("credential-provider-config-sa.yaml");
    let t = &provider(&doc)["tokenAttributes"];
    assert_eq!(
        t["serviceAccountTokenAudience"].as_str(),
        Some("api://AzureADTokenExchange")
    );
    // kubelet 1.34+ refuses a tokenAttributes block without cacheType.
    assert_eq!(t["cacheType"].as_str(), Some("ServiceAccount"));
    assert_eq!(t["requireServiceAccount"].as_bool(), Some(false));
    let keys: Vec<&str> = t["optionalServiceAccountAnnotationKeys"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "kubernetes.azure.com/acr-client-id",
            "kubernetes.azure.com/acr-tenant-id"
        ]
    );
}
