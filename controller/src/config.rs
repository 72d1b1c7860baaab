//! The controller's config file (`--config`, YAML): the shared identity nodes opt in with and the
//! targets whose tokens it fetches. Read strictly: unknown fields, repeated keys and targets the
//! controller cannot serve are refused with a message naming the field. It owns the one table of
//! what a target may not set ([`RESERVED`]), by flag or by environment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use kcp_kubelet::yaml11;
use kcp_plugin::cache_hint::JITTER_ENV;
use kcp_plugin::token_cache::{
    DIR_ENV, ENABLE_ENV, MAX_ADOPTED_ENTRIES, PRINT_KEY_ENV, SHARED_IDENTITY_ENV,
};
use kcp_provider_args::flags;

/// A setting the controller makes itself for every provider run (see `fetch`): a target may set
/// it neither in `args` nor in `env`, since it would change where the entry goes, under which
/// key, or whether there is one.
pub struct Reserved {
    /// The providers' flag for it (without dashes), if there is one.
    pub flag: Option<&'static str>,
    /// The environment variable for it.
    pub env: &'static str,
    /// What it is, for the refusal.
    pub what: &'static str,
}

/// Every setting a target may not make. The controller sets each of these variables itself.
pub const RESERVED: &[Reserved] = &[
    Reserved {
        flag: Some("token-cache"),
        env: ENABLE_ENV,
        what: "the token cache switch",
    },
    Reserved {
        flag: Some("token-cache-dir"),
        env: DIR_ENV,
        what: "the token cache directory",
    },
    Reserved {
        flag: Some("token-cache-shared-identity"),
        env: SHARED_IDENTITY_ENV,
        what: "the shared identity (the config's sharedIdentity)",
    },
    Reserved {
        flag: Some("cache-jitter"),
        env: JITTER_ENV,
        what: "the jitter",
    },
    Reserved {
        flag: None,
        env: PRINT_KEY_ENV,
        what: "key-only mode",
    },
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
    /// Passed to the provider as written; the config file is read only at start.
    pub value: String,
}

/// The providers whose tokens a fleet can share. GCR's tokens come from each node's own
/// metadata server, which no controller can stand in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// `provider: ecr`: the target's args are checked against `ecr-credential-provider`'s flags,
    /// and that binary fetches its token.
    Ecr,
    /// `provider: acr`: the same for `acr-credential-provider`.
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
        if self.targets.len() > MAX_ADOPTED_ENTRIES {
            return Err(format!(
                "{} targets: at most {MAX_ADOPTED_ENTRIES}, as many entries as a node copies from the Secret",
                self.targets.len()
            ));
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
            if let Some(reserved) = RESERVED.iter().find(|r| r.env == var.name) {
                return Err(format!(
                    "env sets {}, {}, which the controller sets itself for every provider run",
                    var.name, reserved.what
                ));
            }
        }
        if let Some((written, reserved)) = self.reserved_flag() {
            return Err(format!(
                "args set {written}, {}, which the controller sets itself for every provider run: remove it",
                reserved.what
            ));
        }
        Ok(())
    }

    /// The first flag in `args` that makes a [`RESERVED`] setting, read as the provider's own
    /// parser reads them (`--x=v`, `--x v`, `-x=v`, `-x v`, a boolean's bare `--x`), written as
    /// the target wrote it.
    fn reserved_flag(&self) -> Option<(String, &'static Reserved)> {
        let table = match self.provider {
            ProviderKind::Ecr => &flags::ECR,
            ProviderKind::Acr => &flags::ACR,
        };
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let parsed = flags::parse(&table.known(), table.klog, table.binary, &args);
        parsed.flags.iter().find_map(|flag| {
            let name = flag.trim_start_matches('-').split('=').next()?;
            let reserved = RESERVED.iter().find(|r| r.flag == Some(name))?;
            let written = self
                .args
                .iter()
                .find(|a| a.trim_start_matches('-').split('=').next() == Some(name))
                .map_or_else(
                    || format!("--{name}"),
                    |a| a.split('=').next().unwrap_or(a).to_owned(),
                );
            Some((written, reserved))
        })
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
        let many: String = (0..=MAX_ADOPTED_ENTRIES)
            .map(|i| format!("  - {{name: t{i}, provider: ecr, command: /x, image: a.b/c}}\n"))
            .collect();
        assert!(refused(&format!("{id}\ntargets:\n{many}")).contains("101 targets: at most 100"));
    }

    /// Every spelling the providers' parser takes for a setting the controller makes, in `args`
    /// and in `env`; and what stays allowed.
    #[test]
    fn refuses_a_target_that_sets_what_the_controller_sets() {
        let args = r#"args: ["get-credentials"]"#;
        for (set, flag, what) in [
            (
                r#"["--token-cache-dir=/x"]"#,
                "--token-cache-dir",
                "directory",
            ),
            (
                r#"["--token-cache-dir", "/x"]"#,
                "--token-cache-dir",
                "directory",
            ),
            (
                r#"["-token-cache-dir=/x"]"#,
                "-token-cache-dir",
                "directory",
            ),
            (
                r#"["get-credentials", "-token-cache-dir", "/x"]"#,
                "-token-cache-dir",
                "directory",
            ),
            (r#"["--token-cache"]"#, "--token-cache", "switch"),
            (r#"["--token-cache=false"]"#, "--token-cache", "switch"),
            (r#"["-token-cache"]"#, "-token-cache", "switch"),
            (
                r#"["--token-cache-shared-identity=n"]"#,
                "--token-cache-shared-identity",
                "shared identity",
            ),
            (
                r#"["--token-cache-shared-identity", "n"]"#,
                "--token-cache-shared-identity",
                "shared identity",
            ),
            (r#"["--cache-jitter", "5"]"#, "--cache-jitter", "jitter"),
            (r#"["-cache-jitter=0"]"#, "-cache-jitter", "jitter"),
        ] {
            let why = refused(&GOOD.replace(args, &format!("args: {set}")));
            assert!(
                why.contains(&format!("args set {flag}, the token cache"))
                    || why.contains(&format!("args set {flag}, the {what}")),
                "{set}: {why}"
            );
            assert!(why.contains(what), "{set}: {why}");
            assert!(
                why.contains("which the controller sets itself"),
                "{set}: {why}"
            );
            assert!(!why.contains("/x"), "{set}: {why}");
        }
        for env in RESERVED.iter().map(|r| r.env) {
            let why = refused(&GOOD.replace("AWS_REGION", env));
            assert!(why.contains(&format!("env sets {env}, ")), "{why}");
        }
        // A value that looks like a reserved flag, after `--` or as another flag's value, sets nothing.
        for ok in [
            r#"["--", "--token-cache-dir=/x"]"#,
            r#"["--role-annotation-key", "--token-cache"]"#,
            r#"["--strict-hosts", "get-credentials"]"#,
        ] {
            assert!(
                Config::parse(&GOOD.replace(args, &format!("args: {ok}"))).is_ok(),
                "{ok}"
            );
        }
        let acr = GOOD.replace("provider: ecr", "provider: acr").replace(
            args,
            r#"args: ["/etc/azure.json", "--token-cache-dir", "/x"]"#,
        );
        assert!(refused(&acr).contains("args set --token-cache-dir"));
    }
}
