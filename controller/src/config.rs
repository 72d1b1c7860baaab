//! The controller's config file (`--config`, YAML): the shared identity nodes opt in with and the
//! targets whose tokens it fetches. Read strictly: unknown fields, repeated keys and targets the
//! controller cannot serve are refused with a message naming the field.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use kcp_kubelet::yaml11;

/// Environment variables the controller sets for every provider run (see `fetch`); a target may
/// not set them itself.
pub const RESERVED_ENV: &[&str] = &[
    "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR",
    "CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY",
    "CREDENTIAL_PROVIDER_CACHE_JITTER",
];

/// The whole config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The name nodes opt in with (`--token-cache-shared-identity`).
    pub shared_identity: String,
    /// What to fetch, one entry each.
    pub targets: Vec<Target>,
}

/// One token to keep fresh: a provider binary run as the kubelet's config would run it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// Unique, `[a-z0-9-]+`; names the target in logs and its work directory.
    pub name: String,
    /// Which provider it is.
    pub provider: ProviderKind,
    /// The provider binary.
    pub command: PathBuf,
    /// Its arguments, as in the kubelet's `CredentialProviderConfig`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment, as in the kubelet's `CredentialProviderConfig`.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// An image of the registry the token is for; the request sent to the provider names it.
    pub image: String,
}

/// One `env` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The providers whose tokens a fleet can share. GCR's tokens come from each node's own
/// metadata server, which no controller can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// `ecr-credential-provider`.
    Ecr,
    /// `acr-credential-provider`.
    Acr,
}

impl ProviderKind {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Ecr => "ecr",
            ProviderKind::Acr => "acr",
        }
    }
}

impl Config {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the config file {}: {e}", path.display()))?;
        Config::parse(&text).map_err(|e| format!("config file {}: {e}", path.display()))
    }

    /// Parses and checks a config document.
    pub fn parse(text: &str) -> Result<Config, String> {
        let doc = yaml11::parse(text)?;
        if let Some(error) = doc.strict_error() {
            return Err(kcp_plugin::logging::one_line(&error));
        }
        let json = yaml11::to_json(&doc.root)?;
        let config: Config = serde_json::from_value(json).map_err(|e| {
            // serde's messages name fields and expected types; values it quotes are from a
            // config file, which holds no secret (only names, paths and images).
            e.to_string()
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        let identity = &self.shared_identity;
        if identity.trim().is_empty() {
            return Err("sharedIdentity is empty: set the name nodes opt in with (their --token-cache-shared-identity)".into());
        }
        // The providers' own rule for --token-cache-shared-identity: a name they would refuse
        // would fail every run.
        kcp_plugin::token_cache::SharedIdentity::parse(identity)
            .map_err(|e| format!("sharedIdentity: {e}"))?;
        if self.targets.is_empty() {
            return Err("targets is empty: nothing to fetch".into());
        }
        let mut names = BTreeSet::new();
        for (i, target) in self.targets.iter().enumerate() {
            target
                .check()
                .map_err(|e| format!("targets[{i}] ({}): {e}", target.name))?;
            if !names.insert(target.name.as_str()) {
                return Err(format!(
                    "targets[{i}]: the name {:?} is used twice",
                    target.name
                ));
            }
        }
        Ok(())
    }
}

impl Target {
    fn check(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 63
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            return Err("name must be 1 to 63 characters of a-z, 0-9 and -".into());
        }
        if self.command.as_os_str().is_empty() {
            return Err("command is empty".into());
        }
        kcp_kubelet::image::ImageRef::parse(&self.image)
            .map_err(|e| format!("image {:?} is not an image reference: {e}", self.image))?;
        for var in &self.env {
            if var.name.is_empty() || var.name.contains('=') || var.name.contains('\0') {
                return Err(format!("env name {:?} is not a variable name", var.name));
            }
            if RESERVED_ENV.contains(&var.name.as_str()) {
                return Err(format!(
                    "env sets {}, which the controller sets itself for every provider run",
                    var.name
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
sharedIdentity: nodes
targets:
  - name: ecr-prod
    provider: ecr
    command: /bin/ecr-credential-provider
    args: ["get-credentials"]
    env: [{name: AWS_REGION, value: us-east-1}]
    image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/any
"#;

    #[test]
    fn reads_the_documented_example() {
        let config = Config::parse(GOOD).unwrap();
        assert_eq!(config.shared_identity, "nodes");
        let target = &config.targets[0];
        assert_eq!(target.name, "ecr-prod");
        assert_eq!(target.provider, ProviderKind::Ecr);
        assert_eq!(target.args, ["get-credentials"]);
        assert_eq!(target.env[0].name, "AWS_REGION");
        assert_eq!(target.env[0].value, "us-east-1");
    }

    fn refused(text: &str) -> String {
        Config::parse(text).unwrap_err()
    }

    #[test]
    fn refuses_what_it_cannot_serve() {
        let id = "sharedIdentity: nodes";
        for (from, to, expected) in [
            ("provider: ecr", "provider: gcr", "unknown variant `gcr`"),
            ("image:", "imag: x\n    image:", "unknown field `imag`"),
            ("ecr-prod", "ECR_prod", "name must be"),
            (
                "AWS_REGION",
                "CREDENTIAL_PROVIDER_CACHE_JITTER",
                "sets itself",
            ),
            (id, "sharedIdentity: Nodes", "is not a name"),
            (id, "sharedIdentity: nodes-", "is not a name"),
            (id, "sharedIdentity: \"\"", "sharedIdentity is empty"),
            (id, "sharedIdentity: a\nsharedIdentity: b", "already set"),
        ] {
            let why = refused(&GOOD.replace(from, to));
            assert!(why.contains(expected), "{to}: {why}");
        }
        let twice = format!(
            "{GOOD}  - name: ecr-prod\n    provider: ecr\n    command: /x\n    image: a.b/c\n"
        );
        assert!(refused(&twice).contains("used twice"));
        assert!(Config::parse(&GOOD.replace(id, "sharedIdentity: eks.prod-1")).is_ok());
        assert!(refused("sharedIdentity: nodes\ntargets: []\n").contains("nothing to fetch"));
    }
}
