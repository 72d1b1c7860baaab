//! `validate` and `run`: `oidc-credential-provider`'s registries file (its `--config`, or the
//! `OIDC_CREDENTIAL_PROVIDER_CONFIG` entry of `env`), read and checked with the provider's own
//! rules (`kcp_oidc_registries`). A file the provider refuses makes it exit 2 on every exec, so
//! its problems are argument errors; a file that is not on this machine is a note, as `validate`
//! often runs away from the node. `install --oidc-registries-from` checks the file it installs
//! with the same functions ([`load`], [`refusal`]), before and after writing it.

use std::path::Path;

use kcp_kubelet_emulation::config::{Config, Provider};
use kcp_kubelet_emulation::validate::{Finding, Validation};
use kcp_oidc_registries::{FileError, Registries};

use crate::argv::provider_setting;

/// The provider's `--config` environment variable (providers/oidc/src/main.rs).
pub const CONFIG_ENV: &str = "OIDC_CREDENTIAL_PROVIDER_CONFIG";

/// Whether the entry runs this project's `oidc-credential-provider`.
pub fn is_oidc(p: &Provider) -> bool {
    kcp_provider_args::flags::for_binary(&p.name)
        .is_some_and(|f| f.binary == kcp_provider_args::flags::OIDC.binary)
}

/// The registries file an oidc entry names (its `--config`, else `env`'s [`CONFIG_ENV`]), as the
/// provider reads it; `None` when it names none.
pub fn registries_file(p: &Provider) -> Option<String> {
    provider_setting(p, "config", CONFIG_ENV).filter(|f| !f.is_empty())
}

/// Reads and checks a registries file exactly as the provider does at start-up.
pub fn load(path: &Path) -> Result<Registries, FileError> {
    Registries::load(path)
}

/// What a refused registries file means, on one line: the provider's own message, and that it
/// exits 2 on every exec with it.
pub fn refusal(e: &FileError, provider: &str) -> String {
    format!("{e}; {provider} refuses it and exits 2 on every exec")
}

/// Adds the findings about each oidc entry's registries file to `v`.
pub fn check(config: &Config, v: &mut Validation) {
    for p in config.providers.iter().filter(|p| is_oidc(p)) {
        let finding = |message: String| Finding {
            provider: Some(p.name.clone()),
            message,
        };
        let Some(file) = registries_file(p) else {
            v.arguments.push(finding(format!(
                "args: no --config: name the registries file (--config=FILE, or env {CONFIG_ENV}); {} exits 2 on every exec without it",
                p.name
            )));
            continue;
        };
        match std::fs::metadata(Path::new(&file)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                v.notes.push(finding(format!(
                    "registries file {file} is not on this machine, so it was not checked: run validate where the kubelet runs (without it {} exits 2 on every exec)",
                    p.name
                )));
                continue;
            }
            _ => {}
        }
        if let Err(e) = load(Path::new(&file)) {
            v.arguments.push(finding(refusal(&e, &p.name)));
        }
    }
}
