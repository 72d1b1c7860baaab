//! Which kubelet the config is judged for: its minor version (1.26 to 1.37) and its feature gates.
//!
//! Everything version-dependent that [`crate::config`] and [`crate::validate`] check comes from the
//! one table [`TABLE`] below: a feature, the first minor version that has it, and the feature gate
//! it needs (with the version its default turned on). Without a version the newest kubelet is
//! assumed, so the checker's default output does not depend on this module. The table is written
//! up for users in docs/kubelet-contract.md, “Kubelet versions”.

use std::collections::BTreeMap;
use std::fmt;

/// The oldest kubelet minor version the table describes (`v1` config and provider APIs are GA).
pub const OLDEST_MINOR: u32 = 26;
/// The newest kubelet minor version the table describes.
pub const NEWEST_MINOR: u32 = 37;

/// The feature gate that lets a provider receive the pod's service-account token (KEP-4412).
pub const SA_TOKEN_GATE: &str = "KubeletServiceAccountTokenForCredentialProviders";

/// Something a kubelet version understands or does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Config `apiVersion: kubelet.config.k8s.io/v1alpha1`.
    ConfigV1alpha1,
    /// Config `apiVersion: kubelet.config.k8s.io/v1beta1`.
    ConfigV1beta1,
    /// Config `apiVersion: kubelet.config.k8s.io/v1`.
    ConfigV1,
    /// Provider `apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1`.
    ProviderV1alpha1,
    /// Provider `apiVersion: credentialprovider.kubelet.k8s.io/v1beta1`.
    ProviderV1beta1,
    /// Provider `apiVersion: credentialprovider.kubelet.k8s.io/v1`.
    ProviderV1,
    /// `providers[].tokenAttributes` is a known field (config `v1` only); without the gate the
    /// validation forbids it.
    TokenAttributes,
    /// `tokenAttributes.cacheType` is a known field, and required.
    CacheType,
    /// `--image-credential-provider-config` may name a directory of files.
    ConfigDirectory,
    /// Validation refuses a repeated provider name (`providers.name: Duplicate value`); older
    /// kubelets pass it and die at registration (`Credential provider "p" was registered twice`,
    /// exit 255).
    DuplicateNameRule,
    /// The config reader refuses a repeated provider name, in one file or across a directory's
    /// files, before validation runs (`duplicate provider name "p" found in configuration
    /// file(s)`).
    DuplicateNameOnRead,
    /// Validation messages without the older repeated detail (`Required value` instead of
    /// `Required value: apiVersion is required`).
    TerseMessages,
}

/// A feature gate with the minor version its default turned on (`None`: still off by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// The gate's name, as in `--feature-gates`.
    pub name: &'static str,
    /// The first minor version that knows the gate.
    pub since: u32,
    /// The first minor version where it is on by default.
    pub on_by_default_since: Option<u32>,
}

/// One row: a feature, the first minor version with it, and the gate it also needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// What a kubelet from `since` on understands or does.
    pub feature: Feature,
    /// The first minor version (1.x) that has it.
    pub since: u32,
    /// The gate that must be on as well, if any.
    pub gate: Option<Gate>,
}

/// KEP-4412's gate: alpha (off) in 1.33, beta (on) since 1.34.
const SA_TOKEN: Gate = Gate {
    name: SA_TOKEN_GATE,
    since: 33,
    on_by_default_since: Some(34),
};

/// The version table (docs/kubelet-contract.md, “Kubelet versions”).
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    Row { feature: Feature::ConfigV1alpha1, since: 20, gate: None },
    Row { feature: Feature::ConfigV1beta1, since: 24, gate: None },
    Row { feature: Feature::ConfigV1, since: 26, gate: None },
    Row { feature: Feature::ProviderV1alpha1, since: 20, gate: None },
    Row { feature: Feature::ProviderV1beta1, since: 24, gate: None },
    Row { feature: Feature::ProviderV1, since: 26, gate: None },
    Row { feature: Feature::TokenAttributes, since: 33, gate: Some(SA_TOKEN) },
    Row { feature: Feature::CacheType, since: 34, gate: None },
    Row { feature: Feature::ConfigDirectory, since: 34, gate: None },
    Row { feature: Feature::TerseMessages, since: 34, gate: None },
    Row { feature: Feature::DuplicateNameRule, since: 33, gate: None },
    Row { feature: Feature::DuplicateNameOnRead, since: 34, gate: None },
];

/// The gates the table knows.
const GATES: &[Gate] = &[SA_TOKEN];

/// The kubelet a config is judged for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kubelet {
    /// Minor version (1.x); `None` is the newest kubelet.
    minor: Option<u32>,
    /// `--feature-gates` as given.
    gates: BTreeMap<String, bool>,
}

impl fmt::Display for Kubelet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            Some(minor) => write!(f, "kubelet 1.{minor}"),
            None => f.write_str("the newest kubelet"),
        }
    }
}

impl Kubelet {
    /// The newest kubelet with default gates: what the checker assumes without flags.
    pub fn newest() -> Self {
        Kubelet::default()
    }

    /// A kubelet from `--kubelet-version` (`1.32`, `v1.32`, `1.32.4`, `v1.32.4`) and
    /// `--feature-gates` (`Name=true,Other=false`); `Err` is a one-line usage message.
    pub fn new(version: Option<&str>, feature_gates: Option<&str>) -> Result<Self, String> {
        let minor = version.map(parse_version).transpose()?;
        let gates = feature_gates
            .map(parse_gates)
            .transpose()?
            .unwrap_or_default();
        let kubelet = Kubelet { minor, gates };
        for name in kubelet.gates.keys() {
            if let Some(gate) = GATES.iter().find(|g| g.name == name)
                && kubelet.minor() < gate.since
            {
                // The kubelet itself refuses to start with a gate it does not know.
                return Err(format!(
                    "--feature-gates: {} does not know the gate {name} (it exists since 1.{}); the kubelet would refuse to start: unrecognized feature gate: {name}",
                    kubelet, gate.since
                ));
            }
        }
        Ok(kubelet)
    }

    /// The minor version judged (the newest when none was given).
    pub fn minor(&self) -> u32 {
        self.minor.unwrap_or(NEWEST_MINOR)
    }

    /// True when neither a version nor gates were given: judge as today's checker does.
    pub fn is_default(&self) -> bool {
        self.minor.is_none() && self.gates.is_empty()
    }

    /// Whether a gate is on: as given in `--feature-gates`, else the version's default.
    pub fn gate_on(&self, gate: &Gate) -> bool {
        if self.minor() < gate.since {
            return false;
        }
        match self.gates.get(gate.name) {
            Some(on) => *on,
            None => gate.on_by_default_since.is_some_and(|v| self.minor() >= v),
        }
    }

    /// What is judged, for a report: the version and the state of each gate it knows.
    pub fn describe(&self) -> String {
        let mut text = format!("judged as {self}");
        for gate in GATES.iter().filter(|g| self.minor() >= g.since) {
            let state = if self.gate_on(gate) { "on" } else { "off" };
            let how = if self.gates.contains_key(gate.name) {
                "as given"
            } else {
                "its default"
            };
            text.push_str(&format!(" with {} {state} ({how})", gate.name));
        }
        text
    }

    /// Whether this kubelet knows the feature (its field decodes, its value is accepted).
    pub fn knows(&self, feature: Feature) -> bool {
        row(feature).since <= self.minor()
    }

    /// Whether the feature is usable: known, and its gate (if any) on.
    pub fn allows(&self, feature: Feature) -> bool {
        let row = row(feature);
        self.knows(feature) && row.gate.is_none_or(|g| self.gate_on(&g))
    }
}

fn row(feature: Feature) -> Row {
    // Every feature has a row (see the `every_feature_has_one_row` test).
    TABLE
        .iter()
        .copied()
        .find(|r| r.feature == feature)
        .unwrap_or(Row {
            feature,
            since: 0,
            gate: None,
        })
}

/// `1.32`, `v1.32`, `1.32.4`, `v1.32.4` → 32, within [`OLDEST_MINOR`]..=[`NEWEST_MINOR`].
fn parse_version(text: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "--kubelet-version: expected 1.X or 1.X.Y (optionally with a leading v) with X from {OLDEST_MINOR} to {NEWEST_MINOR}, got {text:?}"
        )
    };
    let bare = text.strip_prefix('v').unwrap_or(text);
    let parts: Vec<&str> = bare.split('.').collect();
    let number = |s: &str| -> Option<u32> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let minor = match parts.as_slice() {
        ["1", minor] => number(minor),
        ["1", minor, patch] => number(patch).and(number(minor)),
        _ => None,
    }
    .ok_or_else(bad)?;
    if (OLDEST_MINOR..=NEWEST_MINOR).contains(&minor) {
        Ok(minor)
    } else {
        Err(bad())
    }
}

/// `Name=bool,...` as the kubelet's `--feature-gates` takes it.
fn parse_gates(text: &str) -> Result<BTreeMap<String, bool>, String> {
    let mut gates = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parsed = item.split_once('=').and_then(|(name, value)| {
            let value = match value.trim() {
                "true" | "True" | "TRUE" | "1" | "t" | "T" => Some(true),
                "false" | "False" | "FALSE" | "0" | "f" | "F" => Some(false),
                _ => None,
            }?;
            let name = name.trim();
            (!name.is_empty()).then(|| (name.to_owned(), value))
        });
        let Some((name, value)) = parsed else {
            return Err(format!(
                "--feature-gates: expected Name=true|false[,Name=true|false...], got {item:?}"
            ));
        };
        gates.insert(name, value);
    }
    Ok(gates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_has_one_row() {
        for f in [
            Feature::ConfigV1alpha1,
            Feature::ConfigV1beta1,
            Feature::ConfigV1,
            Feature::ProviderV1alpha1,
            Feature::ProviderV1beta1,
            Feature::ProviderV1,
            Feature::TokenAttributes,
            Feature::CacheType,
            Feature::ConfigDirectory,
            Feature::TerseMessages,
            Feature::DuplicateNameRule,
            Feature::DuplicateNameOnRead,
        ] {
            assert_eq!(TABLE.iter().filter(|r| r.feature == f).count(), 1, "{f:?}");
        }
    }

    #[test]
    fn versions_parse_in_all_spellings_and_range() {
        for text in ["1.32", "v1.32", "1.32.4", "v1.32.4"] {
            assert_eq!(parse_version(text), Ok(32), "{text}");
        }
        assert_eq!(parse_version("1.26"), Ok(26));
        assert_eq!(parse_version("v1.37.0"), Ok(37));
        for text in [
            "1.25", "1.38", "2.32", "1", "1.x", "1.32.", "v", "", "1.32.4.1", "1.+3",
        ] {
            assert!(parse_version(text).is_err(), "{text}");
        }
    }

    #[test]
    fn the_token_gate_follows_version_and_flags() {
        let k = |v: &str, g: Option<&str>| Kubelet::new(Some(v), g).unwrap();
        let gate = &SA_TOKEN;
        assert!(!k("1.32", None).allows(Feature::TokenAttributes));
        assert!(!k("1.32", None).knows(Feature::TokenAttributes));
        assert!(k("1.33", None).knows(Feature::TokenAttributes));
        assert!(!k("1.33", None).gate_on(gate));
        assert!(k("1.33", Some(&format!("{SA_TOKEN_GATE}=true"))).gate_on(gate));
        assert!(k("1.34", None).gate_on(gate));
        assert!(!k("1.34", Some(&format!("Other=true,{SA_TOKEN_GATE}=false"))).gate_on(gate));
        assert!(Kubelet::newest().gate_on(gate));
        assert!(Kubelet::new(Some("1.32"), Some(&format!("{SA_TOKEN_GATE}=true"))).is_err());
        assert!(Kubelet::new(None, Some("Foo")).is_err());
        assert!(Kubelet::new(None, Some("Foo=maybe")).is_err());
    }
}
