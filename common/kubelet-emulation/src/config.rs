//! Reading a `CredentialProviderConfig` the way the kubelet does: one file or (kubelet 1.34+) a
//! directory of `.json`/`.yaml`/`.yml` files, the type header checked first, then a strict decode
//! that rejects unknown and duplicate fields (docs/kubelet-contract.md, “Config files”).
//!
//! The kubelet converts YAML to JSON with `sigs.k8s.io/yaml` (YAML 1.1, read by [`kcp_kubelet::yaml11`])
//! and decodes that into Go structs, so a YAML number where a string is expected is an error, an
//! unquoted `yes` is a boolean, `null` means "absent", and an absent `defaultCacheDuration` is
//! distinguishable from `"0s"`. The walk below reproduces exactly that, field set per version.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::kubelet_version::{Feature, Kubelet};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::yaml11::{self, Entry, Node};

/// The only `kind` the kubelet decodes from its config file; any other is refused by name.
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
    /// The version, if `kubelet` registers it.
    fn parse(api_version: &str, kubelet: &Kubelet) -> Option<Self> {
        let (version, feature) = match api_version {
            "kubelet.config.k8s.io/v1alpha1" => (ConfigVersion::V1alpha1, Feature::ConfigV1alpha1),
            "kubelet.config.k8s.io/v1beta1" => (ConfigVersion::V1beta1, Feature::ConfigV1beta1),
            "kubelet.config.k8s.io/v1" => (ConfigVersion::V1, Feature::ConfigV1),
            _ => return None,
        };
        kubelet.knows(feature).then_some(version)
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
    /// `matchImages` as written (the kubelet checks each pattern during validation, not here).
    pub match_images: Vec<String>,
    /// `defaultCacheDuration`; `None` when absent or null.
    pub default_cache_duration: Option<GoDuration>,
    /// `apiVersion` (empty when absent).
    pub api_version: String,
    /// `args`, passed to the plugin in order; the checker checks our providers' flags in them.
    pub args: Vec<String>,
    /// `env` as (name, value) in order.
    pub env: Vec<(String, String)>,
    /// `tokenAttributes` (config `v1` on a 1.33+ kubelet); `None` means the plugin gets no
    /// service-account token.
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

/// Loads a config file or directory as the newest kubelet does.
pub fn load(path: &Path) -> Result<Config, LoadError> {
    load_for(path, &Kubelet::newest())
}

/// Loads a config file or (1.34+) directory as `kubelet` does.
pub fn load_for(path: &Path, kubelet: &Kubelet) -> Result<Config, LoadError> {
    if path.as_os_str().is_empty() {
        return Err(LoadError::new(
            None,
            "credential provider config path is empty",
        ));
    }
    if !kubelet.knows(Feature::ConfigDirectory) {
        return load_single_file(path, kubelet);
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
    let directory = meta.is_dir();
    let files = if directory {
        config_files(path)?
    } else {
        vec![path.to_path_buf()]
    };
    let mut config = Config {
        files: files.clone(),
        directory,
        providers: Vec::new(),
    };
    for file in &files {
        config.providers.extend(load_file_for(file, kubelet)?);
    }
    if kubelet.knows(Feature::DuplicateNameOnRead) {
        refuse_repeated_names(&config.providers)?;
    }
    Ok(config)
}

/// The 1.34+ reader merges every file's providers and refuses a repeated name before validation
/// runs, in a single file as across a directory.
fn refuse_repeated_names(providers: &[Provider]) -> Result<(), LoadError> {
    let mut seen = std::collections::HashSet::new();
    match providers.iter().find(|p| !seen.insert(p.name.as_str())) {
        Some(p) => Err(LoadError::new(
            Some(&p.source),
            format!(
                "duplicate provider name {:?} found in configuration file(s)",
                p.name
            ),
        )),
        None => Ok(()),
    }
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

/// A kubelet before 1.34 reads the path as one file (`os.ReadFile`), so a directory fails with
/// Go's `read <path>: is a directory`.
fn load_single_file(path: &Path, kubelet: &Kubelet) -> Result<Config, LoadError> {
    let unreadable = |reason: String| {
        LoadError::new(
            None,
            format!(
                "unable to read external registry credential provider configuration from {:?}: {reason}",
                path.display().to_string()
            ),
        )
    };
    if path.is_dir() {
        return Err(unreadable(format!(
            "read {}: is a directory",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let providers =
        decode_for(&text, path, kubelet).map_err(|message| LoadError::new(Some(path), message))?;
    Ok(Config {
        files: vec![path.to_path_buf()],
        directory: false,
        providers,
    })
}

/// Reads and decodes one file as the newest kubelet does.
pub fn load_file(file: &Path) -> Result<Vec<Provider>, LoadError> {
    load_file_for(file, &Kubelet::newest())
}

/// Reads and decodes one file as `kubelet` does.
pub fn load_file_for(file: &Path, kubelet: &Kubelet) -> Result<Vec<Provider>, LoadError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| LoadError::new(Some(file), format!("unable to read config file: {e}")))?;
    decode_for(&text, file, kubelet).map_err(|message| LoadError::new(Some(file), message))
}

/// Decodes one document (YAML or JSON) strictly as the newest kubelet does; `Err` holds its
/// message.
pub fn decode(text: &str, source: &Path) -> Result<Vec<Provider>, String> {
    decode_for(text, source, &Kubelet::newest())
}

/// Decodes one document (YAML or JSON) strictly as `kubelet` does: the fields it knows depend on
/// its version (see [`crate::kubelet_version`]).
pub fn decode_for(text: &str, source: &Path, kubelet: &Kubelet) -> Result<Vec<Provider>, String> {
    let mut doc = yaml11::parse(text)?;
    // The conversion to JSON fails on its own (a null key, an infinite number) before any decoding.
    yaml11::check_json(&doc.root)?;
    // A document that starts with `{` goes to the kubelet's JSON decoder as written; any other goes
    // through the YAML-to-JSON conversion first, which sorts every mapping's keys.
    if !text.trim_start().starts_with('{') {
        yaml11::sort_keys(&mut doc.root);
    }
    let map = match &doc.root {
        Node::Map(map) => map,
        Node::Null => return Err("Object 'Kind' is missing in ''".to_owned()),
        _ => {
            return Err(
                "couldn't get version/kind; json parse error: the document is not an object"
                    .to_owned(),
            );
        }
    };
    // The type header is read before anything else, as the codec factory does.
    let header = |key: &str| match yaml11::get(map, key) {
        Some(Node::Str(s)) => Ok(s.clone()),
        None | Some(Node::Null) => Ok(String::new()),
        Some(other) => Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{key} of type string",
            other.json_type()
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
    let version = match ConfigVersion::parse(&api_version, kubelet) {
        Some(v) if kind == CONFIG_KIND => v,
        _ => {
            return Err(format!(
                "no kind {kind:?} is registered for version {api_version:?}"
            ));
        }
    };
    let mut walk = Walk {
        version,
        kubelet: kubelet.clone(),
        unknown: Vec::new(),
        source: source.to_path_buf(),
    };
    let providers = walk.config(map)?;
    // Strict errors come after a clean decode: first a repeated key (from the strict YAML
    // conversion), then the unknown fields.
    let strict: Vec<String> = doc
        .strict_error()
        .into_iter()
        .chain(walk.unknown.iter().map(|f| format!("unknown field {f:?}")))
        .collect();
    if !strict.is_empty() {
        return Err(format!("strict decoding error: {}", strict.join(", ")));
    }
    Ok(providers)
}

fn get<'a>(map: &'a [Entry], key: &str) -> Option<&'a Node> {
    yaml11::get(map, key)
}

/// Walks the tree against the known field sets, collecting unknown fields (strict errors are
/// reported together, after the decode) and failing at once on a type error (as Go does).
struct Walk {
    version: ConfigVersion,
    kubelet: Kubelet,
    unknown: Vec<String>,
    source: PathBuf,
}

impl Walk {
    fn check_fields(&mut self, map: &[Entry], known: &[&str], prefix: &str) {
        for entry in map {
            // `decode` has checked that every key converts.
            let name = yaml11::key_string(&entry.key).unwrap_or_default();
            if !known.contains(&name.as_str()) {
                self.unknown.push(format!("{prefix}{name}"));
            }
        }
    }

    fn config(&mut self, map: &[Entry]) -> Result<Vec<Provider>, String> {
        self.check_fields(map, &["apiVersion", "kind", "providers"], "");
        let items = match get(map, "providers") {
            None | Some(Node::Null) => return Ok(Vec::new()),
            Some(Node::Seq(items)) => items,
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

    fn provider(&mut self, index: usize, item: &Node) -> Result<Provider, String> {
        let mut provider = Provider {
            source: self.source.clone(),
            ..Provider::default()
        };
        let map = match item {
            Node::Null => return Ok(provider),
            Node::Map(map) => map,
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
        // tokenAttributes exists only in the v1 config types (KEP-4412), since 1.33.
        if self.version == ConfigVersion::V1 && self.kubelet.knows(Feature::TokenAttributes) {
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
            None | Some(Node::Null) => None,
            Some(Node::Str(s)) => {
                Some(GoDuration::parse(s).map_err(|_| format!("time: invalid duration {s:?}"))?)
            }
            Some(other) => {
                return Err(type_error(other, &field("defaultCacheDuration"), "string"));
            }
        };
        match get(map, "env") {
            None | Some(Node::Null) => {}
            Some(Node::Seq(entries)) => {
                for (j, entry) in entries.iter().enumerate() {
                    match entry {
                        Node::Null => provider.env.push((String::new(), String::new())),
                        Node::Map(env) => {
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
                None | Some(Node::Null) => None,
                Some(Node::Map(attrs)) => Some(self.token_attributes(attrs, &prefix)?),
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
        attrs: &[Entry],
        prefix: &str,
    ) -> Result<TokenAttributes, String> {
        let mut known = vec![
            "serviceAccountTokenAudience",
            "requireServiceAccount",
            "requiredServiceAccountAnnotationKeys",
            "optionalServiceAccountAnnotationKeys",
        ];
        // 1.33 had no cacheType.
        let cache_type_known = self.kubelet.knows(Feature::CacheType);
        if cache_type_known {
            known.push("cacheType");
        }
        self.check_fields(attrs, &known, &format!("{prefix}tokenAttributes."));
        let field =
            |name: &str| format!("ServiceAccountTokenAttributes.providers.tokenAttributes.{name}");
        Ok(TokenAttributes {
            audience: string(
                get(attrs, "serviceAccountTokenAudience"),
                &field("serviceAccountTokenAudience"),
            )?,
            cache_type: if cache_type_known {
                string(get(attrs, "cacheType"), &field("cacheType"))?
            } else {
                String::new()
            },
            require_service_account: match get(attrs, "requireServiceAccount") {
                None | Some(Node::Null) => None,
                Some(Node::Bool(b)) => Some(*b),
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

fn type_error(value: &Node, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {field} of type {go_type}",
        value.json_type()
    )
}

fn string(value: Option<&Node>, field: &str) -> Result<String, String> {
    match value {
        None | Some(Node::Null) => Ok(String::new()),
        Some(Node::Str(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, field, "string")),
    }
}

fn strings(value: Option<&Node>, field: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Node::Null) => Ok(Vec::new()),
        Some(Node::Seq(items)) => items
            .iter()
            .map(|item| match item {
                Node::Null => Ok(String::new()),
                Node::Str(s) => Ok(s.clone()),
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
    fn unknown_fields_come_in_key_order_from_yaml_and_document_order_from_json() {
        // The YAML path converts to JSON first (keys sorted); a JSON file is decoded as written.
        let yaml = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: a\n  matchImage: [x]\n  cacheDuration: 1h\n";
        assert_eq!(
            decode_str(yaml).unwrap_err(),
            r#"strict decoding error: unknown field "providers[0].cacheDuration", unknown field "providers[0].matchImage""#
        );
        let json = r#"{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"a","matchImage":["x"],"cacheDuration":"1h"}]}"#;
        assert_eq!(
            decode_str(json).unwrap_err(),
            r#"strict decoding error: unknown field "providers[0].matchImage", unknown field "providers[0].cacheDuration""#
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

    fn v1(providers: &str) -> String {
        format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n{providers}"
        )
    }

    /// issue #25 point 4: plain scalars are YAML 1.1, as `sigs.k8s.io/yaml` reads them.
    #[test]
    fn plain_scalars_resolve_as_yaml_1_1() {
        let p = decode_str(&v1(
            "- name: a\n  tokenAttributes:\n    requireServiceAccount: yes\n- name: b\n  tokenAttributes:\n    requireServiceAccount: Off\n",
        ))
        .unwrap();
        let require = |i: usize| {
            p[i].token_attributes
                .as_ref()
                .and_then(|t| t.require_service_account)
        };
        assert_eq!(require(0), Some(true));
        assert_eq!(require(1), Some(false));
        let table: &[(&str, &str)] = &[
            (
                "- name: a\n  matchImages: [a.example.com, on]\n",
                "json: cannot unmarshal bool into Go struct field CredentialProvider.providers.matchImages of type string",
            ),
            (
                "- name: a\n  args: [0755]\n",
                "json: cannot unmarshal number into Go struct field CredentialProvider.providers.args of type string",
            ),
            (
                "- name: no\n",
                "json: cannot unmarshal bool into Go struct field CredentialProvider.providers.name of type string",
            ),
            (
                "- name: a\n  defaultCacheDuration: .5\n",
                "json: cannot unmarshal number into Go struct field CredentialProvider.providers.defaultCacheDuration of type string",
            ),
            (
                "- name: a\n  tokenAttributes:\n    requireServiceAccount: 'yes'\n",
                "json: cannot unmarshal string into Go struct field ServiceAccountTokenAttributes.providers.tokenAttributes.requireServiceAccount of type bool",
            ),
        ];
        for (providers, want) in table {
            assert_eq!(
                decode_str(&v1(providers)).unwrap_err(),
                *want,
                "{providers}"
            );
        }
        // Strings that stay strings.
        let p = decode_str(&v1(
            "- name: a\n  args: [\"0755\", 'on', 1:30, 10.0.0.1, 2001-12-14, ~]\n",
        ))
        .unwrap();
        assert_eq!(
            p[0].args,
            ["0755", "on", "1:30", "10.0.0.1", "2001-12-14", ""]
        );
    }

    #[test]
    fn the_type_header_reports_the_json_type_it_got() {
        assert_eq!(
            decode_str("apiVersion: kubelet.config.k8s.io/v1\nkind: yes\n").unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal bool into Go struct field .kind of type string"
        );
        assert_eq!(
            decode_str("apiVersion: 1\nkind: CredentialProviderConfig\n").unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string"
        );
    }

    #[test]
    fn repeated_keys_are_strict_errors_before_unknown_fields() {
        let err = decode_str(&v1("- name: a\n  name: b\n  x: 1\n")).unwrap_err();
        assert_eq!(
            err,
            "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map, unknown field \"providers[0].x\""
        );
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
