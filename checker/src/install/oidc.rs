//! `install --oidc-registries-from FILE`: `oidc-credential-provider`'s registries file, taken
//! from a file the DaemonSet mounts from a ConfigMap and put where the config being installed
//! names it (its oidc entry's `--config`), under the host root.
//!
//! The file is checked exactly as `validate` checks it (`crate::oidc_file`, the provider's own
//! rules) before anything is written, so a file the provider would refuse is refused with one
//! line and the node keeps the one it has; written with the installer's atomic writer (temp file,
//! fsync, rename, the replaced version kept as `<name>.previous`); and checked again on the node
//! once written. Its first line is a marker like the config's (a YAML comment, which the provider
//! reads past, JSON files included), so a rerun knows the file as this project's and a file
//! someone else put there is never replaced without `--force`.

use std::path::Path;

use kcp_kubelet_emulation::config;
use kcp_oidc_registries::{MAX_FILE_BYTES, Registries};

use super::records::{ConfigOwner, MARKER_PREFIX, config_owner};
use super::write::{PREVIOUS, Planned, plan};
use crate::{CommandError, oidc_file, refused, sha256};

/// The provider the file is for, in messages.
const PROVIDER: &str = "oidc-credential-provider";

/// The registries file as written on the node: the marker line, then the source's text.
fn marked(text: &str) -> String {
    format!(
        "{MARKER_PREFIX}credential-provider-check install --oidc-registries-from (sha256:{}); change its source (the ConfigMap), not this file.\n{text}",
        sha256::hex(text.as_bytes())
    )
}

/// The node path of the registries file `config_text` (the config about to be installed) names
/// for its oidc entry.
fn destination(config_text: &str) -> Result<String, CommandError> {
    let providers = config::decode(config_text, Path::new("<install>"))
        .or_else(|e| refused(format!("reading back the config to install: {e}")))?;
    let oidc: Vec<_> = providers.iter().filter(|p| oidc_file::is_oidc(p)).collect();
    match oidc.as_slice() {
        [p] => match oidc_file::registries_file(p) {
            Some(file) => Ok(file),
            None => refused(format!(
                "--oidc-registries-from: the config's {} entry names no registries file (--config)",
                p.name
            )),
        },
        [] => refused("--oidc-registries-from: the config has no oidc-credential-provider entry"),
        _ => refused(
            "--oidc-registries-from: the config has more than one oidc-credential-provider entry",
        ),
    }
}

/// Why the registries file now at `node` may not be replaced (`Ok`: it may).
fn may_be_replaced(node: &str, have: &[u8]) -> Result<(), String> {
    match config_owner(have) {
        ConfigOwner::Ours => Ok(()),
        ConfigOwner::Edited => Err(format!(
            "{node} was edited by hand since this project wrote it; put your edits into the ConfigMap --oidc-registries-from reads, then remove it"
        )),
        ConfigOwner::Foreign => Err(format!(
            "{node} exists and was not written by this project; remove it (the ConfigMap's file takes its place), or --force replaces it (keeping it as {node}{PREVIOUS})"
        )),
    }
}

/// The planned registries file: `Ok(Err(why))` when the file now on the node may not be
/// replaced (a refusal the caller reports with the others, before anything is written); a source
/// the provider would refuse is refused here, with one line.
pub(super) fn plan_registries(
    source: &Path,
    config_text: &str,
    root: &Path,
    force: bool,
    windows: bool,
) -> Result<Result<Planned, String>, CommandError> {
    let node = destination(config_text)?;
    if windows && super::windows_drive(&node).is_none_or(|d| !d.eq_ignore_ascii_case(&'C')) {
        return Err(CommandError::Usage(format!(
            "--oidc-config {node}: install writes the node's C: drive (--host-root), so the registries file must be on C:"
        )));
    }
    let real = super::under(root, &node);
    // The provider's own check, on the file as mounted (validate's message, naming it).
    if let Err(e) = oidc_file::load(source) {
        return refused(format!(
            "--oidc-registries-from: {}; {node} was left as it is (nothing was changed)",
            oidc_file::refusal(&e, PROVIDER)
        ));
    }
    let text = std::fs::read_to_string(source).or_else(|e| {
        refused(format!(
            "--oidc-registries-from: reading {}: {e}",
            source.display()
        ))
    })?;
    let content = marked(&text);
    // What is written is checked too: the marker line keeps it within the provider's limit, and
    // the text read is the text checked even if the ConfigMap changed in between.
    if content.len() as u64 > MAX_FILE_BYTES {
        return refused(format!(
            "--oidc-registries-from: {} with the marker line is larger than {MAX_FILE_BYTES} bytes, which {PROVIDER} refuses (nothing was changed)",
            source.display()
        ));
    }
    if let Err(e) = Registries::parse(&content, &source.display().to_string()) {
        return refused(format!(
            "--oidc-registries-from: {}; {node} was left as it is (nothing was changed)",
            oidc_file::refusal(&e, PROVIDER)
        ));
    }
    Ok(plan(
        node.clone(),
        real,
        content.into_bytes(),
        0o644,
        force,
        |have| may_be_replaced(&node, have),
    ))
}

/// After writing: the file on the node, read back and checked as the provider will read it.
pub(super) fn check_written(p: &Planned) -> Result<(), CommandError> {
    match oidc_file::load(&p.real) {
        Ok(_) => Ok(()),
        Err(e) => refused(format!(
            "{} as written: {}; roll back by renaming {}{PREVIOUS} over it",
            p.node,
            oidc_file::refusal(&e, PROVIDER).replace(&*p.real.to_string_lossy(), &p.node),
            p.node
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_makes_the_file_ours_and_the_provider_reads_past_it() {
        let text = "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n    username: \"puller\"\n";
        let content = marked(text);
        assert_eq!(config_owner(content.as_bytes()), ConfigOwner::Ours);
        assert_eq!(
            Registries::parse(&content, "x"),
            Ok(Registries::parse(text, "x").unwrap_or_else(|e| panic!("{e}")))
        );
        let json = "{\"registries\": [{\"host\": \"registry.example.com\", \"protocol\": \"passthrough\", \"username\": \"puller\"}]}\n";
        assert!(Registries::parse(&marked(json), "x").is_ok());
        let edited = content.replace("registry.example.com", "registry.example.org");
        assert_eq!(config_owner(edited.as_bytes()), ConfigOwner::Edited);
        assert_eq!(config_owner(text.as_bytes()), ConfigOwner::Foreign);
        assert_eq!(
            super::super::under(Path::new("/host"), "/etc/kubernetes/oidc-registries.yaml"),
            Path::new("/host/etc/kubernetes/oidc-registries.yaml")
        );
    }
}
