//! Reading a `CredentialProviderConfig` the way the kubelet does: one file or (kubelet 1.34+) a
//! directory of `.json`/`.yaml`/`.yml` files, the type header checked first, then a strict decode
//! that rejects unknown and duplicate fields (docs/kubelet-contract.md, “Config files”).
//!
//! The kubelet converts YAML to JSON and decodes that into Go structs, so a YAML number where a
//! string is expected is an error, `null` means "absent", and an absent `defaultCacheDuration` is
//! distinguishable from `"0s"`. The walk below reproduces exactly that, field set per version.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::duration::GoDuration;
use yaml_rust2::{Yaml, YamlLoader};

/// The config kind.
pub const CONFIG_KIND: &str = "CredentialProviderConfig";

/// A config version (`kubelet.config.k8s.io/<v>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigVersion {
    /// `kubelet.config.k8s.io/v1alpha1` (kubelet 1.20+).
    V1alpha1,
    /// `kubelet.config.k8s.io/v1beta1` (kubelet 1.24+).
    V1beta1,
    /// `kubelet.config.k8s.io/v1` (kubelet 1.26+); the only one with `tokenAttributes`.
    V1,
}

impl ConfigVersion {
    fn parse(api_version: &str) -> Option<Self> {
        match api_version {
            "kubelet.config.k8s.io/v1alpha1" => Some(ConfigVersion::V1alpha1),
            "kubelet.config.k8s.io/v1beta1" => Some(ConfigVersion::V1beta1),
            "kubelet.config.k8s.io/v1" => Some(ConfigVersion::V1),
            _ => None,
        }
    }
}

/// `tokenAttributes` as decoded; absent fields are empty / `None`, as in Go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenAttributes {
    /// `serviceAccountTokenAudience`.
    pub audience: String,
    /// `cacheType` (validated later, case-sensitive).
    pub cache_type: String,
    /// `requireServiceAccount` (a Go `*bool`: must be explicit).
    pub require_service_account: Option<bool>,
    /// `requiredServiceAccountAnnotationKeys`.
    pub required_keys: Vec<String>,
    /// `optionalServiceAccountAnnotationKeys`.
    pub optional_keys: Vec<String>,
}

/// One `providers[]` entry as decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provider {
    /// `name` (empty when absent).
    pub name: String,
    /// `matchImages`.
    pub match_images: Vec<String>,
    /// `defaultCacheDuration`; `None` when absent or null.
    pub default_cache_duration: Option<GoDuration>,
    /// `apiVersion` (empty when absent).
    pub api_version: String,
    /// `args`.
    pub args: Vec<String>,
    /// `env` as (name, value) in order.
    pub env: Vec<(String, String)>,
    /// `tokenAttributes`.
    pub token_attributes: Option<TokenAttributes>,
    /// The file this provider came from.
    pub source: PathBuf,
}

/// A loaded config: every file read and their providers in the kubelet's order.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Files read, in order (one for a file path).
    pub files: Vec<PathBuf>,
    /// Whether the path was a directory (1.34+ merge semantics).
    pub directory: bool,
    /// Providers, concatenated in file order.
    pub providers: Vec<Provider>,
}

/// Why the kubelet would refuse to read the config at all (it then exits 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file concerned, if one.
    pub file: Option<PathBuf>,
    /// The kubelet's message (or as close as the contract pins it).
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl LoadError {
    fn new(file: Option<&Path>, message: impl Into<String>) -> Self {
        LoadError {
            file: file.map(Path::to_path_buf),
            message: message.into(),
        }
    }
}

/// Loads a config file or directory as a 1.34+ kubelet does.
pub fn load(path: &Path) -> Result<Config, LoadError> {
    if path.as_os_str().is_empty() {
        return Err(LoadError::new(
            None,
            "credential provider config path is empty",
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| {
        LoadError::new(
            None,
            format!(
                "unable to access path {:?}: {e}",
                path.display().to_string()
            ),
        )
    })?;
    if !meta.is_dir() {
        let providers = load_file(path)?;
        return Ok(Config {
            files: vec![path.to_path_buf()],
            directory: false,
            providers,
        });
    }
    let files = config_files(path)?;
    let mut config = Config {
        files: files.clone(),
        directory: true,
        providers: Vec::new(),
    };
    for file in &files {
        config.providers.extend(load_file(file)?);
    }
    // The directory merge rejects repeated names before validation runs.
    let mut seen = std::collections::HashSet::new();
    for p in &config.providers {
        if !seen.insert(p.name.as_str()) {
            return Err(LoadError::new(
                Some(&p.source),
                format!(
                    "duplicate provider name {:?} found in configuration file(s)",
                    p.name
                ),
            ));
        }
    }
    Ok(config)
}

/// The files a 1.34+ kubelet reads from `dir`: regular entries ending exactly in `.json`,
/// `.yaml` or `.yml`, sorted by full path.
fn config_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        LoadError::new(
            None,
            format!("unable to access path {:?}: {e}", dir.display().to_string()),
        )
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| LoadError::new(Some(dir), e.to_string()))?;
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        let path = entry.path();
        let wanted = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "yaml" | "yml")
        );
        if is_file && wanted {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(LoadError::new(
            None,
            format!(
                "no configuration files found in directory {:?}",
                dir.display().to_string()
            ),
        ));
    }
    Ok(files)
}

/// Reads and decodes one file.
pub fn load_file(file: &Path) -> Result<Vec<Provider>, LoadError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| LoadError::new(Some(file), format!("unable to read config file: {e}")))?;
    decode(&text, file).map_err(|message| LoadError::new(Some(file), message))
}

/// Decodes one document (YAML or JSON) strictly; `Err` holds the kubelet's message.
pub fn decode(text: &str, source: &Path) -> Result<Vec<Provider>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("yaml: {e}"))?;
    let root = docs.into_iter().next().unwrap_or(Yaml::Null);
    let map = match &root {
        Yaml::Hash(map) => map,
        Yaml::Null => return Err("Object 'Kind' is missing in ''".to_owned()),
        _ => {
            return Err(
                "couldn't get version/kind; json parse error: the document is not an object"
                    .to_owned(),
            );
        }
    };
    // The type header is read before anything else, as the codec factory does.
    let header = |key: &str| match get(map, key) {
        Some(Yaml::String(s)) => Ok(s.clone()),
        None | Some(Yaml::Null) => Ok(String::new()),
        Some(_) => Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal non-string into Go struct field .{key} of type string"
        )),
    };
    let api_version = header("apiVersion")?;
    let kind = header("kind")?;
    if kind.is_empty() {
        return Err("Object 'Kind' is missing in config".to_owned());
    }
    if api_version.is_empty() {
        return Err("Object 'apiVersion' is missing in config".to_owned());
    }
    let version = match ConfigVersion::parse(&api_version) {
        Some(v) if kind == CONFIG_KIND => v,
        _ => {
            return Err(format!(
                "no kind {kind:?} is registered for version {api_version:?}"
            ));
        }
    };
    let mut walk = Walk {
        version,
        unknown: Vec::new(),
        source: source.to_path_buf(),
    };
    let providers = walk.config(map)?;
    if !walk.unknown.is_empty() {
        let fields: Vec<String> = walk
            .unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        return Err(format!("strict decoding error: {}", fields.join(", ")));
    }
    Ok(providers)
}

fn get<'a>(map: &'a yaml_rust2::yaml::Hash, key: &str) -> Option<&'a Yaml> {
    map.get(&Yaml::String(key.to_owned()))
}

/// The JSON type name Go's decoder reports for a value it cannot store.
fn json_type(value: &Yaml) -> &'static str {
    match value {
        Yaml::Integer(_) | Yaml::Real(_) => "number",
        Yaml::String(_) => "string",
        Yaml::Boolean(_) => "bool",
        Yaml::Array(_) => "array",
        Yaml::Hash(_) => "object",
        _ => "value",
    }
}

fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => "?".to_owned(),
    }
}

/// Walks the tree against the known field sets, collecting unknown fields (strict errors are
/// reported together, after the decode) and failing at once on a type error (as Go does).
struct Walk {
    version: ConfigVersion,
    unknown: Vec<String>,
    source: PathBuf,
}

impl Walk {
    fn check_fields(&mut self, map: &yaml_rust2::yaml::Hash, known: &[&str], prefix: &str) {
        for key in map.keys() {
            let name = key_text(key);
            if !known.contains(&name.as_str()) {
                self.unknown.push(format!("{prefix}{name}"));
            }
        }
    }

    fn config(&mut self, map: &yaml_rust2::yaml::Hash) -> Result<Vec<Provider>, String> {
        self.check_fields(map, &["apiVersion", "kind", "providers"], "");
        let items = match get(map, "providers") {
            None | Some(Yaml::Null) => return Ok(Vec::new()),
            Some(Yaml::Array(items)) => items,
            Some(other) => {
                return Err(type_error(
                    other,
                    "CredentialProviderConfig.providers",
                    "[]v1.CredentialProvider",
                ));
            }
        };
        let mut providers = Vec::new();
        for (i, item) in items.iter().enumerate() {
            providers.push(self.provider(i, item)?);
        }
        Ok(providers)
    }

    fn provider(&mut self, index: usize, item: &Yaml) -> Result<Provider, String> {
        let mut provider = Provider {
            source: self.source.clone(),
            ..Provider::default()
        };
        let map = match item {
            Yaml::Null => return Ok(provider),
            Yaml::Hash(map) => map,
            other => {
                return Err(type_error(
                    other,
                    "CredentialProviderConfig.providers",
                    "v1.CredentialProvider",
                ));
            }
        };
        let mut known = vec![
            "name",
            "matchImages",
            "defaultCacheDuration",
            "apiVersion",
            "args",
            "env",
        ];
        // tokenAttributes exists only in the v1 config types (KEP-4412).
        if self.version == ConfigVersion::V1 {
            known.push("tokenAttributes");
        }
        let prefix = format!("providers[{index}].");
        self.check_fields(map, &known, &prefix);
        let field = |name: &str| format!("CredentialProvider.providers.{name}");
        provider.name = string(get(map, "name"), &field("name"))?;
        provider.match_images = strings(get(map, "matchImages"), &field("matchImages"))?;
        provider.api_version = string(get(map, "apiVersion"), &field("apiVersion"))?;
        provider.args = strings(get(map, "args"), &field("args"))?;
        provider.default_cache_duration = match get(map, "defaultCacheDuration") {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(s)) => {
                Some(GoDuration::parse(s).map_err(|_| format!("time: invalid duration {s:?}"))?)
            }
            Some(other) => {
                return Err(type_error(other, &field("defaultCacheDuration"), "string"));
            }
        };
        match get(map, "env") {
            None | Some(Yaml::Null) => {}
            Some(Yaml::Array(entries)) => {
                for (j, entry) in entries.iter().enumerate() {
                    match entry {
                        Yaml::Null => provider.env.push((String::new(), String::new())),
                        Yaml::Hash(env) => {
                            self.check_fields(
                                env,
                                &["name", "value"],
                                &format!("{prefix}env[{j}]."),
                            );
                            let name = string(get(env, "name"), "ExecEnvVar.providers.env.name")?;
                            let value =
                                string(get(env, "value"), "ExecEnvVar.providers.env.value")?;
                            provider.env.push((name, value));
                        }
                        other => {
                            return Err(type_error(other, &field("env"), "v1.ExecEnvVar"));
                        }
                    }
                }
            }
            Some(other) => return Err(type_error(other, &field("env"), "[]v1.ExecEnvVar")),
        }
        if known.contains(&"tokenAttributes") {
            provider.token_attributes = match get(map, "tokenAttributes") {
                None | Some(Yaml::Null) => None,
                Some(Yaml::Hash(attrs)) => Some(self.token_attributes(attrs, &prefix)?),
                Some(other) => {
                    return Err(type_error(
                        other,
                        &field("tokenAttributes"),
                        "v1.ServiceAccountTokenAttributes",
                    ));
                }
            };
        }
        Ok(provider)
    }

    fn token_attributes(
        &mut self,
        attrs: &yaml_rust2::yaml::Hash,
        prefix: &str,
    ) -> Result<TokenAttributes, String> {
        self.check_fields(
            attrs,
            &[
                "serviceAccountTokenAudience",
                "cacheType",
                "requireServiceAccount",
                "requiredServiceAccountAnnotationKeys",
                "optionalServiceAccountAnnotationKeys",
            ],
            &format!("{prefix}tokenAttributes."),
        );
        let field =
            |name: &str| format!("ServiceAccountTokenAttributes.providers.tokenAttributes.{name}");
        Ok(TokenAttributes {
            audience: string(
                get(attrs, "serviceAccountTokenAudience"),
                &field("serviceAccountTokenAudience"),
            )?,
            cache_type: string(get(attrs, "cacheType"), &field("cacheType"))?,
            require_service_account: match get(attrs, "requireServiceAccount") {
                None | Some(Yaml::Null) => None,
                Some(Yaml::Boolean(b)) => Some(*b),
                Some(other) => {
                    return Err(type_error(other, &field("requireServiceAccount"), "bool"));
                }
            },
            required_keys: strings(
                get(attrs, "requiredServiceAccountAnnotationKeys"),
                &field("requiredServiceAccountAnnotationKeys"),
            )?,
            optional_keys: strings(
                get(attrs, "optionalServiceAccountAnnotationKeys"),
                &field("optionalServiceAccountAnnotationKeys"),
            )?,
        })
    }
}

fn type_error(value: &Yaml, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {field} of type {go_type}",
        json_type(value)
    )
}

fn string(value: Option<&Yaml>, field: &str) -> Result<String, String> {
    match value {
        None | Some(Yaml::Null) => Ok(String::new()),
        Some(Yaml::String(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, field, "string")),
    }
}

fn strings(value: Option<&Yaml>, field: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        Some(Yaml::Array(items)) => items
            .iter()
            .map(|item| match item {
                Yaml::Null => Ok(String::new()),
                Yaml::String(s) => Ok(s.clone()),
                other => Err(type_error(other, field, "string")),
            })
            .collect(),
        Some(other) => Err(type_error(other, field, "[]string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_str(text: &str) -> Result<Vec<Provider>, String> {
        decode(text, Path::new("t.yaml"))
    }

    #[test]
    fn unknown_fields_are_reported_with_their_path() {
        let err = decode_str(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  unknownField: 1\n",
        )
        .unwrap_err();
        assert_eq!(
            err,
            r#"strict decoding error: unknown field "providers[0].unknownField""#
        );
    }

    #[test]
    fn token_attributes_only_exist_in_v1() {
        let doc = |v: &str| {
            format!(
                "apiVersion: kubelet.config.k8s.io/{v}\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  tokenAttributes: {{}}\n"
            )
        };
        assert!(decode_str(&doc("v1")).is_ok());
        assert_eq!(
            decode_str(&doc("v1beta1")).unwrap_err(),
            r#"strict decoding error: unknown field "providers[0].tokenAttributes""#
        );
    }

    #[test]
    fn wrong_kind_and_group_name_the_registered_version() {
        assert_eq!(
            decode_str("apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: WrongKind\n")
                .unwrap_err(),
            r#"no kind "WrongKind" is registered for version "kubelet.config.k8s.io/v1alpha1""#
        );
        assert_eq!(
            decode_str("apiVersion: foobar/v1alpha1\nkind: CredentialProviderConfig\n")
                .unwrap_err(),
            r#"no kind "CredentialProviderConfig" is registered for version "foobar/v1alpha1""#
        );
    }

    #[test]
    fn absent_and_zero_cache_durations_differ() {
        let p = decode_str(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n- name: b\n  defaultCacheDuration: 0s\n",
        )
        .unwrap();
        assert_eq!(p[0].default_cache_duration, None);
        assert_eq!(p[1].default_cache_duration, Some(GoDuration::ZERO));
    }

    #[test]
    fn a_number_where_a_string_belongs_is_a_type_error() {
        let err = decode_str(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  defaultCacheDuration: 600\n",
        )
        .unwrap_err();
        assert!(err.starts_with("json: cannot unmarshal number"), "{err}");
    }
}
