//! The kubelet's 22 config validation rules with its exact messages (docs/kubelet-contract.md, “Config validation”),
//! the registration checks on the bin dir, and warnings for what the kubelet accepts but
//! can never work.
//!
//! Messages follow apimachinery's `field.Error` formatting: field paths carry no list index, and
//! the aggregate reads `failed to validate credential provider config: [a, b]` (no brackets for
//! a single error, duplicates folded).

use std::collections::BTreeSet;
use std::path::Path;

use kcp_kubelet::matching::{MatchOutcome, Side, explain, match_image};

use kcp_kubelet::duration::GoDuration;

use crate::config::{Config, Provider, TokenAttributes};
use crate::kubelet_version::{Feature, Kubelet, SA_TOKEN_GATE};

/// The provider API versions, sorted as the kubelet's message lists them, with the table row
/// that says which kubelets know each.
const API_VERSIONS: [(&str, Feature); 3] = [
    ("credentialprovider.kubelet.k8s.io/v1", Feature::ProviderV1),
    (
        "credentialprovider.kubelet.k8s.io/v1alpha1",
        Feature::ProviderV1alpha1,
    ),
    (
        "credentialprovider.kubelet.k8s.io/v1beta1",
        Feature::ProviderV1beta1,
    ),
];

/// One finding about a provider (or the whole config when `provider` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The provider's name, if the finding is about one.
    pub provider: Option<String>,
    /// In the kubelet's words where it has them, so a user can search its log for them.
    pub message: String,
}

/// Everything `validate` found.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// Validation errors in the kubelet's wording, in its order.
    pub errors: Vec<Finding>,
    /// Registration errors on the bin dir (the kubelet exits 1 on start).
    pub registration: Vec<Finding>,
    /// What kills a kubelet before 1.33 at registration, once validation and every earlier
    /// binary passed: a repeated provider name (`klog.Fatalf`, exit status 255). Never set
    /// alongside validation errors or an earlier binary's registration error.
    pub fatal: Option<Finding>,
    /// Accepted by the kubelet, but never works.
    pub warnings: Vec<Finding>,
    /// Fine, but worth knowing (version requirements).
    pub notes: Vec<Finding>,
    /// `args` that one of this project's providers refuses (see [`kcp_provider_args::flags`]): the kubelet
    /// starts, but every exec of that plugin fails with exit 2.
    pub arguments: Vec<Finding>,
}

impl Validation {
    /// True when a kubelet would start with this config.
    pub fn ok(&self) -> bool {
        self.errors.is_empty() && self.registration.is_empty() && self.fatal.is_none()
    }

    /// True when a kubelet would start with this config and none of this project's providers
    /// would refuse its `args`.
    pub fn valid(&self) -> bool {
        self.ok() && self.arguments.is_empty()
    }

    /// The single line the kubelet logs for the validation errors, if any.
    pub fn kubelet_message(&self) -> Option<String> {
        aggregate(&self.errors)
    }

    /// How a kubelet given this config stops at start-up, if it does: validation errors and
    /// bin-dir checks make it return an error (exit 1), a repeated name on a kubelet before 1.33
    /// makes it die at registration (exit 255).
    pub fn kubelet_exit(&self) -> Option<KubeletExit> {
        if let Some(line) = self.kubelet_message() {
            return Some(KubeletExit { status: 1, line });
        }
        // `fatal` is only set when no binary check before the repeated name stopped the kubelet
        // first; a failing check after it is never reached.
        if let Some(f) = &self.fatal {
            return Some(KubeletExit {
                status: 255,
                line: f.message.clone(),
            });
        }
        self.registration.first().map(|first| KubeletExit {
            status: 1,
            line: first.message.clone(),
        })
    }
}

/// A kubelet that stops at start-up: its exit status and the line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletExit {
    /// 1 when registration returns an error, 255 when `klog.Fatalf` ends the process.
    pub status: i32,
    /// The error it logs.
    pub line: String,
}

/// The kubelet's aggregate: one message as is, several in brackets, duplicates folded.
fn aggregate(errors: &[Finding]) -> Option<String> {
    let mut seen = BTreeSet::new();
    let unique: Vec<&str> = errors
        .iter()
        .map(|f| f.message.as_str())
        .filter(|m| seen.insert(*m))
        .collect();
    let body = match unique.as_slice() {
        [] => return None,
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    };
    Some(format!(
        "failed to validate credential provider config: {body}"
    ))
}

/// Validates a loaded config as the newest kubelet does; with `bin_dir`, also the kubelet's
/// start-up binary checks.
pub fn validate(config: &Config, bin_dir: Option<&Path>) -> Validation {
    validate_for(config, bin_dir, &Kubelet::newest())
}

/// Validates a loaded config as `kubelet` (its version and feature gates) does; with `bin_dir`,
/// also the start-up binary checks.
pub fn validate_for(config: &Config, bin_dir: Option<&Path>, kubelet: &Kubelet) -> Validation {
    let mut v = Validation::default();
    let fatal = |v: &mut Validation, p: Option<&Provider>, message: String| {
        v.errors.push(Finding {
            provider: p.map(|p| p.name.clone()),
            message,
        });
    };
    if config.providers.is_empty() {
        fatal(
            &mut v,
            None,
            "providers: Required value: at least 1 item in plugins is required".into(),
        );
    }
    let mut seen_names = BTreeSet::new();
    for p in &config.providers {
        for message in provider_errors(p, &mut seen_names, kubelet) {
            fatal(&mut v, Some(p), message);
        }
        warnings(p, &mut v.warnings);
        if p.token_attributes.is_some() && kubelet.is_default() {
            v.notes.push(Finding {
                provider: Some(p.name.clone()),
                message: format!("tokenAttributes needs the {SA_TOKEN_GATE} gate (beta, on since 1.34); with it off the kubelet fails with \"providers.tokenAttributes: Forbidden: {}\"", gate_off_detail()),
            });
        }
        v.arguments.extend(argument_errors(p));
    }
    if !kubelet.is_default() {
        v.notes.push(Finding {
            provider: None,
            message: kubelet.describe(),
        });
    }
    if let Some(dir) = bin_dir {
        registration(config, dir, &mut v.registration);
    }
    // Registration only runs once validation passed.
    if !kubelet.knows(Feature::DuplicateNameRule) && v.errors.is_empty() {
        v.fatal = registered_twice(config, bin_dir, &v.registration);
    }
    v
}

/// Before 1.33 nothing refuses a repeated name until registration, where the kubelet dies
/// (`klog.Fatalf`) on the second provider of that name, unless a binary check on a provider before
/// it returned first.
fn registered_twice(
    config: &Config,
    bin_dir: Option<&Path>,
    registration: &[Finding],
) -> Option<Finding> {
    let dir_missing = bin_dir.is_some() && registration.iter().any(|f| f.provider.is_none());
    if dir_missing {
        return None;
    }
    let mut seen = BTreeSet::new();
    for p in &config.providers {
        let lookup_failed = registration
            .iter()
            .any(|f| f.provider.as_deref() == Some(p.name.as_str()));
        if lookup_failed {
            return None;
        }
        if !seen.insert(p.name.as_str()) {
            return Some(Finding {
                provider: Some(p.name.clone()),
                message: format!("Credential provider {:?} was registered twice", p.name),
            });
        }
    }
    None
}

/// Rule 13's detail.
fn gate_off_detail() -> String {
    format!("tokenAttributes is not supported when {SA_TOKEN_GATE} feature gate is disabled")
}

/// A `Required value` error: kubelets before 1.34 repeat the field name as its detail.
fn required(path: &str, kubelet: &Kubelet) -> String {
    if kubelet.knows(Feature::TerseMessages) {
        format!("{path}: Required value")
    } else {
        let field = path.rsplit('.').next().unwrap_or(path);
        format!("{path}: Required value: {field} is required")
    }
}

/// The rules for one provider, in `validateCredentialProviderConfig`'s order, as `kubelet` has them.
fn provider_errors(
    p: &Provider,
    seen_names: &mut BTreeSet<String>,
    kubelet: &Kubelet,
) -> Vec<String> {
    let mut errs = name_errors(&p.name, seen_names, kubelet);
    errs.extend(api_version_errors(&p.api_version, kubelet));
    errs.extend(match_image_errors(&p.match_images));
    errs.extend(cache_duration_errors(p.default_cache_duration, kubelet));
    if let Some(ta) = &p.token_attributes {
        errs.extend(token_attribute_errors(ta, &p.api_version, kubelet));
    }
    errs
}

/// Rules 2 to 6: the name is a file name in the bin dir, and (from 1.33) unique.
fn name_errors(name: &str, seen_names: &mut BTreeSet<String>, kubelet: &Kubelet) -> Vec<String> {
    let invalid_name = |detail: &str| format!("providers.name: Invalid value: {name:?}: {detail}");
    let mut errs = Vec::new();
    if name.contains('/') {
        errs.push(invalid_name("provider name cannot contain '/'"));
    }
    if name.contains(' ') {
        errs.push(invalid_name("provider name cannot contain spaces"));
    }
    if name == "." {
        errs.push(invalid_name("provider name cannot be '.'"));
    }
    if name == ".." {
        errs.push(invalid_name("provider name cannot be '..'"));
    }
    // Older kubelets let a repeated name through to registration (see `registration`).
    if !seen_names.insert(name.to_owned()) && kubelet.knows(Feature::DuplicateNameRule) {
        errs.push(format!("providers.name: Duplicate value: {name:?}"));
    }
    errs
}

/// Rules 7 and 8: a provider API version this kubelet speaks.
fn api_version_errors(api_version: &str, kubelet: &Kubelet) -> Option<String> {
    let known: Vec<&str> = API_VERSIONS
        .iter()
        .filter(|(_, feature)| kubelet.knows(*feature))
        .map(|(version, _)| *version)
        .collect();
    if api_version.is_empty() {
        Some(required("providers.apiVersion", kubelet))
    } else if !known.contains(&api_version) {
        Some(format!(
            "providers.apiVersion: Unsupported value: {api_version:?}: supported values: {}",
            quoted_list(&known)
        ))
    } else {
        None
    }
}

/// Rules 9 and 10: at least one pattern, each a URL once `https://` is put in front.
fn match_image_errors(match_images: &[String]) -> Vec<String> {
    let mut errs = Vec::new();
    if match_images.is_empty() {
        errs.push(
            "providers.matchImages: Required value: at least 1 item in matchImages is required"
                .into(),
        );
    }
    for pattern in match_images {
        if let Some(reason) = url_error(pattern) {
            errs.push(format!(
                "providers.matchImages: Invalid value: {pattern:?}: match image is invalid: {reason}"
            ));
        }
    }
    errs
}

/// Rules 11 and 12: `defaultCacheDuration` set and not negative.
fn cache_duration_errors(duration: Option<GoDuration>, kubelet: &Kubelet) -> Option<String> {
    match duration {
        None => Some(required("providers.defaultCacheDuration", kubelet)),
        Some(d) if d.is_negative() && kubelet.knows(Feature::TerseMessages) => Some(format!(
            "providers.defaultCacheDuration: Invalid value: \"{d}\": must be greater than or equal to 0"
        )),
        Some(d) if d.is_negative() => Some(format!(
            "providers.defaultCacheDuration: Invalid value: {d}: defaultCacheDuration must be greater than or equal to 0"
        )),
        Some(_) => None,
    }
}

/// Rules 13 to 22: `tokenAttributes` (KEP-4412).
fn token_attribute_errors(
    ta: &TokenAttributes,
    api_version: &str,
    kubelet: &Kubelet,
) -> Vec<String> {
    let path = "providers.tokenAttributes";
    let mut errs = Vec::new();
    // Rule 13: the decode only lets tokenAttributes through on a kubelet that knows it, so here
    // only the gate decides.
    if !kubelet.allows(Feature::TokenAttributes) {
        errs.push(format!("{path}: Forbidden: {}", gate_off_detail()));
    }
    if ta.audience.is_empty() {
        errs.push(required(
            &format!("{path}.serviceAccountTokenAudience"),
            kubelet,
        ));
    }
    if ta.require_service_account.is_none() {
        errs.push(required(&format!("{path}.requireServiceAccount"), kubelet));
    }
    if api_version != "credentialprovider.kubelet.k8s.io/v1" {
        errs.push(format!(
            "{path}: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version"
        ));
    }
    if ta.require_service_account == Some(false) && !ta.required_keys.is_empty() {
        errs.push(format!(
            "{path}.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"
        ));
    }
    errs.extend(annotation_key_errors(
        &format!("{path}.requiredServiceAccountAnnotationKeys"),
        &ta.required_keys,
    ));
    errs.extend(annotation_key_errors(
        &format!("{path}.optionalServiceAccountAnnotationKeys"),
        &ta.optional_keys,
    ));
    errs.extend(required_and_optional_error(ta));
    errs.extend(cache_type_error(&ta.cache_type, kubelet));
    errs
}

/// Rule 20: no annotation key both required and optional (listed once each, sorted).
fn required_and_optional_error(ta: &TokenAttributes) -> Option<String> {
    let required: BTreeSet<&String> = ta.required_keys.iter().collect();
    let both: BTreeSet<&String> = ta
        .optional_keys
        .iter()
        .filter(|k| required.contains(k))
        .collect();
    (!both.is_empty()).then(|| {
        let items: Vec<String> = both.iter().map(|k| format!("{k:?}")).collect();
        format!(
            "providers.tokenAttributes: Invalid value: []string{{{}}}: annotation keys cannot be both required and optional",
            items.join(", ")
        )
    })
}

/// Rules 21 and 22: `cacheType` set to one of the two values (1.34+; 1.33 has no such field).
fn cache_type_error(cache_type: &str, kubelet: &Kubelet) -> Option<String> {
    let path = "providers.tokenAttributes.cacheType";
    match cache_type {
        _ if !kubelet.knows(Feature::CacheType) => None,
        "" => Some(format!(
            "{path}: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token"
        )),
        "Token" | "ServiceAccount" => None,
        other => Some(format!(
            "{path}: Unsupported value: {other:?}: supported values: \"ServiceAccount\", \"Token\""
        )),
    }
}

fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The kubelet parses each entry after prefixing `https://`; Go's error text when that fails.
fn url_error(pattern: &str) -> Option<String> {
    match explain(pattern, "x") {
        MatchOutcome::Unparsable {
            which: Side::Pattern,
            reason,
        } => Some(reason),
        _ => None,
    }
}

/// `validateServiceAccountAnnotationKeys`: qualified names (checked lower-cased), no repeats.
fn annotation_key_errors(path: &str, keys: &[String]) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for key in keys {
        for msg in qualified_name_errors(&key.to_lowercase()) {
            errs.push(format!("{path}: Invalid value: {key:?}: {msg}"));
        }
        if !seen.insert(key.as_str()) {
            errs.push(format!("{path}: Duplicate value: {key:?}"));
        }
    }
    errs
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// apimachinery's `RegexError`, double space included.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        shown.join(" or ")
    )
}

/// apimachinery's `IsQualifiedName`.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name_regex = || {
        regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                name_regex()
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_owned());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {}", name_regex()));
    }
    errs
}

fn is_qualified_name_part(name: &str) -> bool {
    let b = name.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(|label| {
        let b = label.as_bytes();
        let (Some(first), Some(last)) = (b.first(), b.last()) else {
            return false;
        };
        let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-')
    })
}

/// Things the kubelet accepts that never work, and traps across versions.
fn warnings(p: &Provider, out: &mut Vec<Finding>) {
    let mut warn = |message: String| {
        out.push(Finding {
            provider: Some(p.name.clone()),
            message,
        });
    };
    if p.name.is_empty() {
        warn("the provider has no name: the kubelet looks for the bin dir itself as the plugin and fails at start".into());
    }
    for pattern in &p.match_images {
        if let Some((scheme, _)) = pattern.split_once("://") {
            warn(format!(
                "matchImages entry {pattern:?} has a scheme ({scheme}://): the kubelet prefixes https:// itself, so it never matches any image"
            ));
            continue;
        }
        if url_error(pattern).is_some() {
            continue;
        }
        if let Some((host, path)) = pattern.split_once('/')
            && path.contains(['*', '?', '['])
        {
            warn(format!(
                "matchImages entry {pattern:?}: paths are literal prefixes, not globs, so it only matches images under the literal path \"/{path}\"; use {host:?} to match the whole registry"
            ));
        }
        if let MatchOutcome::BadGlob { pattern_label } = explain(pattern, pattern) {
            warn(format!(
                "matchImages entry {pattern:?}: host label {pattern_label:?} is a malformed glob, so it never matches"
            ));
        }
    }
    mirror_warnings(p, &mut warn);
    if let Some(ta) = &p.token_attributes
        && ta.cache_type.is_empty()
    {
        warn("tokenAttributes without cacheType was accepted by kubelet 1.33 but stops a 1.34+ kubelet from starting (kubernetes/kubernetes#132617)".into());
    }
}

/// `--registry-mirror` in a provider's args: the kubelet runs the plugin only for images
/// `matchImages` lets through, so a mirror source outside it is never answered.
fn mirror_warnings(p: &Provider, warn: &mut impl FnMut(String)) {
    let (mirrors, problems) = kcp_provider_args::mirror::parse_mirrors(
        &kcp_provider_args::mirror::values_in_args(&p.args),
    );
    for problem in problems {
        warn(format!(
            "{problem} (acr-credential-provider skips it, ecr-credential-provider refuses to start)"
        ));
    }
    for m in mirrors {
        if !p
            .match_images
            .iter()
            .any(|pattern| match_image(pattern, &m.source))
        {
            warn(format!(
                "--registry-mirror source {:?} is not covered by matchImages, so the kubelet never runs the plugin for its images; add {:?} to matchImages",
                m.source, m.source
            ));
        }
    }
}

/// What one of this project's providers, recognised by `name` (its binary), would refuse in
/// `args`: unknown flags (with the closest known one), a missing value, a boolean's value as a
/// separate word, stray words, `--help`/`--version`.
fn argument_errors(p: &Provider) -> Vec<Finding> {
    let Some(flags) = kcp_provider_args::flags::for_binary(&p.name) else {
        return Vec::new();
    };
    let mut found: Vec<Finding> = flags
        .problems(&p.args)
        .into_iter()
        .map(|problem| Finding {
            provider: Some(p.name.clone()),
            message: format!(
                "args: {problem}; {} refuses its arguments and exits 2 on every exec",
                flags.binary
            ),
        })
        .collect();
    // The key-only mode of the token controller and `doctor`: it prints a key, never an answer.
    if p.env
        .iter()
        .any(|(name, value)| name == PRINT_KEY_ENV && matches!(value.as_str(), "true" | "1"))
    {
        found.push(Finding {
            provider: Some(p.name.clone()),
            message: format!(
                "env: {PRINT_KEY_ENV} makes {} print its token cache key instead of an answer, so the kubelet refuses every exec; remove it",
                flags.binary
            ),
        });
    }
    found
}

/// Mirrors `kcp_plugin::token_cache::PRINT_KEY_ENV` (this crate does not depend on the plugin
/// runtime).
const PRINT_KEY_ENV: &str = "CREDENTIAL_PROVIDER_PRINT_CACHE_KEY";

/// The file the kubelet runs for provider `name` in the bin dir, as Go's `exec.LookPath` finds
/// it: `<dir>/<name>` on Linux; on Windows, a name without an extension gets the first of
/// `PATHEXT`'s extensions (`.COM;.EXE;.BAT;.CMD` when unset) that exists, so `name:
/// acr-credential-provider` runs `acr-credential-provider.exe`. When none exists the bare path is
/// returned, for the "did not exist" message.
pub fn plugin_binary(dir: &Path, name: &str) -> std::path::PathBuf {
    let bare = dir.join(name);
    if !cfg!(windows) || Path::new(name).extension().is_some() {
        return bare;
    }
    let pathext = std::env::var("PATHEXT").unwrap_or_default();
    let pathext = if pathext.trim().is_empty() {
        ".COM;.EXE;.BAT;.CMD".to_owned()
    } else {
        pathext
    };
    pathext
        .split(';')
        .filter(|ext| ext.starts_with('.'))
        .map(|ext| dir.join(format!("{name}{}", ext.to_ascii_lowercase())))
        .find(|candidate| candidate.is_file())
        .unwrap_or(bare)
}

/// Whether Go's `exec.LookPath` would take this file: any execute bit on Unix; on Windows, a
/// file reached through `PATHEXT` is executable by its extension.
#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// Whether Go's `exec.LookPath` would take this file: any execute bit on Unix; on Windows, a
/// file reached through `PATHEXT` is executable by its extension.
#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

/// The kubelet's start-up checks on the bin dir and each binary (`exec.LookPath`).
fn registration(config: &Config, dir: &Path, out: &mut Vec<Finding>) {
    if !dir.is_dir() {
        out.push(Finding {
            provider: None,
            message: format!("plugin binary directory {} did not exist", dir.display()),
        });
        return;
    }
    for p in &config.providers {
        let path = plugin_binary(dir, &p.name);
        let message = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
                "plugin binary executable {} did not exist",
                path.display()
            )),
            Err(e) => Some(format!(
                "error inspecting binary executable {}: {e}",
                path.display()
            )),
            Ok(meta) if meta.is_dir() => Some(format!(
                "error inspecting binary executable {}: exec: {:?}: is a directory",
                path.display(),
                path.display().to_string()
            )),
            Ok(meta) if !is_executable(&meta) => Some(format!(
                "error inspecting binary executable {}: exec: {:?}: permission denied",
                path.display(),
                path.display().to_string()
            )),
            Ok(_) => None,
        };
        if let Some(message) = message {
            out.push(Finding {
                provider: Some(p.name.clone()),
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests;
