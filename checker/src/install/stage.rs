//! The kubelet's view of what `install` is about to write, checked before anything is written:
//! the config in a scratch directory (in drop-in mode merged with the directory's other files)
//! against the bin dir as it will be (what is there now, plus the binaries about to be
//! installed), with the kubelet's rules and start-up checks.

use std::fs;
use std::path::{Path, PathBuf};

use kcp_kubelet_emulation::{config, validate};

use super::under;
use super::write::make_dirs;
use crate::{CommandError, refused, sha256};

/// What the kubelet will read, as node paths.
pub(super) struct Staging<'a> {
    /// The node's root filesystem as mounted here.
    pub(super) root: &'a Path,
    /// `--image-credential-provider-config`: the file, or in drop-in mode the directory.
    pub(super) target: &'a str,
    /// In drop-in mode, the drop-in's file name.
    pub(super) drop_in: Option<&'a str>,
    /// `--image-credential-provider-bin-dir`.
    pub(super) bin_dir: &'a str,
    /// The binaries about to be installed there.
    pub(super) binaries: &'a [&'a str],
}

/// A scratch directory, removed when dropped.
struct Stage(PathBuf);

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One entry of the node's bin dir in the staged one: a symlink to it, resolved under the root as
/// the node would (its mode is what the kubelet looks at).
#[cfg(unix)]
fn stage_entry(s: &Staging, entry: &fs::DirEntry, staged: &Path) {
    let node = Path::new(s.bin_dir).join(entry.file_name());
    if let Some(real) = super::elf::resolve_under(s.root, &node) {
        let _ = std::os::unix::fs::symlink(real, staged);
    }
}

/// One entry of the node's bin dir in the staged one: on Windows the kubelet looks only at the
/// name (an `.exe` is executable by its extension), so an empty file, or a directory.
#[cfg(not(unix))]
fn stage_entry(_s: &Staging, entry: &fs::DirEntry, staged: &Path) {
    let _ = if entry.path().is_dir() {
        fs::create_dir(staged)
    } else {
        fs::write(staged, b"")
    };
}

/// Mode 0755 (Windows: executable by its `.exe` name, nothing to set).
fn executable(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Validates `config_path` (a file or a directory) as the kubelet would, with its start-up checks
/// on `bin_dir` when given; the kubelet's message when it would refuse.
pub(super) fn kubelet_refusal(config_path: &Path, bin_dir: Option<&Path>) -> Option<String> {
    match config::load(config_path) {
        Err(e) => Some(e.to_string()),
        Ok(loaded) => {
            let v = validate::validate(&loaded, bin_dir);
            if v.ok() {
                None
            } else {
                Some(
                    v.errors
                        .iter()
                        .chain(&v.registration)
                        .map(|f| match &f.provider {
                            Some(p) => format!("{p}: {}", f.message),
                            None => f.message.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            }
        }
    }
}

/// The config as `install` would write it (`config_file`), checked in a scratch directory
/// before anything is written; a refusal names the node's paths, not the scratch ones.
pub(super) fn validate_staged(s: &Staging, config_file: &str) -> Result<(), CommandError> {
    let stage = Stage(std::env::temp_dir().join(format!(
        "kcp-install-{}-{}",
        std::process::id(),
        sha256::hex(s.root.as_os_str().as_encoded_bytes())
    )));
    let _ = fs::remove_dir_all(&stage.0);
    let staging = |e: std::io::Error| CommandError::Refused(format!("staging the config: {e}"));

    // The bin dir as it will be; the start-up checks only look at names and modes.
    let bin = stage.0.join("bin");
    make_dirs(&bin)?;
    if let Ok(entries) = fs::read_dir(under(s.root, s.bin_dir)) {
        for entry in entries.flatten() {
            stage_entry(s, &entry, &bin.join(entry.file_name()));
        }
    }
    for name in s.binaries {
        let path = bin.join(name);
        let _ = fs::remove_file(&path);
        fs::write(&path, b"").map_err(staging)?;
        executable(&path).map_err(staging)?;
    }

    let (staged, shown) = match s.drop_in {
        Some(name) => {
            let dir = stage.0.join("dir");
            make_dirs(&dir)?;
            if let Ok(entries) = fs::read_dir(under(s.root, s.target)) {
                for entry in entries.flatten() {
                    let file = entry.file_name();
                    let file = file.to_string_lossy();
                    let kubelet_reads = [".json", ".yaml", ".yml"]
                        .iter()
                        .any(|ext| file.ends_with(ext));
                    if kubelet_reads && *file != *name {
                        let _ = fs::copy(entry.path(), dir.join(&*file));
                    }
                }
            }
            fs::write(dir.join(name), config_file).map_err(staging)?;
            (dir.clone(), dir)
        }
        None => {
            let name = Path::new(s.target)
                .file_name()
                .map_or_else(|| "config.yaml".into(), ToOwned::to_owned);
            let dir = stage.0.join("file");
            make_dirs(&dir)?;
            fs::write(dir.join(&name), config_file).map_err(staging)?;
            (dir.join(&name), dir.join(&name))
        }
    };
    if let Some(why) = kubelet_refusal(&staged, Some(&bin)) {
        let why = why
            .replace(&*bin.to_string_lossy(), s.bin_dir.trim_end_matches('/'))
            .replace(&*shown.to_string_lossy(), s.target.trim_end_matches('/'));
        return refused(format!(
            "the kubelet would refuse {} with this config: {why} (nothing was changed)",
            s.target
        ));
    }
    Ok(())
}
