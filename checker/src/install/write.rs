//! Putting files in place on the node: the plan for one file (what to do, or why not), and writes
//! that no reader ever sees half done and that an interrupt never leaves half done.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::{CommandError, refused};

/// The suffix of the kept previous version of a replaced file.
pub(super) const PREVIOUS: &str = ".previous";
/// The middle of a temporary file's name: `.<name>.tmp-<pid>`, beside the file it becomes.
const TMP: &str = ".tmp-";

/// What is done to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    /// Not there yet: written.
    Install,
    /// This project's own older version (or one it was told to take over) is replaced and kept
    /// as `<name>.previous`.
    Update,
    /// `--force`: a file or symlink this project did not write is replaced and kept as
    /// `<name>.previous`.
    Replace,
    /// The content is right, the mode is not.
    Chmod,
    /// Nothing to do.
    Unchanged,
}

/// One file to put in place.
pub(super) struct Planned {
    /// The path on the node, for the report.
    pub(super) node: String,
    /// The path under the host root.
    pub(super) real: PathBuf,
    pub(super) verb: Verb,
    pub(super) content: Vec<u8>,
    pub(super) mode: u32,
}

fn read(path: &Path) -> Result<Vec<u8>, CommandError> {
    fs::read(path).or_else(|e| refused(format!("reading {}: {e}", path.display())))
}

fn mode_of(meta: &fs::Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

/// Plans one file: what to do, or why not. `ours` tells whether the regular file now there was
/// written by this project (or may be taken over); `force` replaces what it refuses, and a
/// symlink, keeping either as `<name>.previous`.
pub(super) fn plan(
    node: String,
    real: PathBuf,
    content: Vec<u8>,
    mode: u32,
    force: bool,
    ours: impl FnOnce(&[u8]) -> Result<(), String>,
) -> Result<Planned, String> {
    let verb = match fs::symlink_metadata(&real) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Verb::Install,
        Err(e) => return Err(format!("{node}: {e}")),
        Ok(meta) if meta.is_dir() => return Err(format!("{node} is a directory")),
        Ok(meta) if meta.file_type().is_symlink() && force => Verb::Replace,
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(format!(
                "{node} exists and is not a regular file (a symlink); install replaces only files it wrote: remove it, or --force replaces it (keeping it as {node}{PREVIOUS})"
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(format!(
                "{node} exists and is not a regular file; install replaces only files it wrote"
            ));
        }
        Ok(meta) => {
            let have = fs::read(&real).map_err(|e| format!("reading {node}: {e}"))?;
            if have == content {
                if mode_of(&meta) == mode {
                    Verb::Unchanged
                } else {
                    Verb::Chmod
                }
            } else {
                match ours(&have) {
                    Ok(()) => Verb::Update,
                    Err(_) if force => Verb::Replace,
                    Err(why) => return Err(why),
                }
            }
        }
    };
    Ok(Planned {
        node,
        real,
        verb,
        content,
        mode,
    })
}

/// The temporary file `path` is written through.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}{TMP}{}", std::process::id()))
}

/// Temporary files of `path` and of its `.previous` that a run killed mid-write (SIGKILL, a
/// power cut) left beside it: `.<name>.tmp-<digits>`, the names [`atomic_write`] uses.
pub(super) fn leftovers(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let prefixes = [format!(".{name}{TMP}"), format!(".{name}{PREVIOUS}{TMP}")];
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let file = e.file_name();
            let file = file.to_string_lossy();
            prefixes.iter().any(|p| {
                file.strip_prefix(p.as_str())
                    .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Writes `content` to `path` with `mode` so that no reader ever sees a partial file: a temp
/// file in the same directory, fsynced, renamed over `path`, then the directory fsynced.
pub(super) fn atomic_write(path: &Path, content: &[u8], mode: u32) -> Result<(), CommandError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let tmp = temp_path(path);
    let write = || -> std::io::Result<()> {
        let _ = fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(content)?;
        // The umask must not decide the mode the kubelet sees.
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    };
    write().or_else(|e| {
        let _ = fs::remove_file(&tmp);
        refused(format!("writing {}: {e}", path.display()))
    })
}

/// Keeps the file now at `p.real` as `<name>.previous`, atomically: a symlink as a symlink (its
/// target is the node's, not this container's), a file as a copy with the planned mode.
fn keep_previous(p: &Planned) -> Result<(), CommandError> {
    let mut previous = p.real.clone().into_os_string();
    previous.push(PREVIOUS);
    let previous = PathBuf::from(previous);
    let is_link = fs::symlink_metadata(&p.real).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return atomic_write(&previous, &read(&p.real)?, p.mode);
    }
    let tmp = temp_path(&previous);
    let copy = || -> std::io::Result<()> {
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(fs::read_link(&p.real)?, &tmp)?;
        fs::rename(&tmp, &previous)?;
        File::open(previous.parent().unwrap_or(Path::new("/")))?.sync_all()
    };
    copy().or_else(|e| {
        let _ = fs::remove_file(&tmp);
        refused(format!("keeping {}{PREVIOUS}: {e}", p.node))
    })
}

/// Creates `dir` and its missing parents with mode 0755.
pub(super) fn make_dirs(dir: &Path) -> Result<(), CommandError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .or_else(|e| refused(format!("creating {}: {e}", dir.display())))
}

/// Carries out one planned step (or, in a dry run, only says what it would do).
pub(super) fn apply(p: &Planned, dry_run: bool, out: &mut String) -> Result<(), CommandError> {
    let would = if dry_run { "would " } else { "" };
    match p.verb {
        Verb::Unchanged => out.push_str(&format!("unchanged: {}\n", p.node)),
        Verb::Chmod => {
            out.push_str(&format!("{would}fix mode {:04o}: {}\n", p.mode, p.node));
            if !dry_run {
                fs::set_permissions(&p.real, fs::Permissions::from_mode(p.mode))
                    .or_else(|e| refused(format!("chmod {}: {e}", p.node)))?;
            }
        }
        Verb::Install => {
            out.push_str(&format!("{would}install: {}\n", p.node));
            if !dry_run {
                if let Some(dir) = p.real.parent() {
                    make_dirs(dir)?;
                }
                atomic_write(&p.real, &p.content, p.mode)?;
            }
        }
        Verb::Update | Verb::Replace => {
            let verb = if p.verb == Verb::Update {
                "update"
            } else {
                "replace"
            };
            out.push_str(&format!(
                "{would}{verb}: {} (previous version kept as {}{PREVIOUS})\n",
                p.node, p.node
            ));
            if !dry_run {
                // The old version first: whatever happens next, it can be renamed back.
                keep_previous(p)?;
                atomic_write(&p.real, &p.content, p.mode)?;
            }
        }
    }
    Ok(())
}

/// Holds back SIGINT, SIGTERM, SIGHUP and SIGQUIT while alive: an install interrupted while it
/// writes finishes every write first (no temporary file left in the bin dir, no binary without
/// its checksum recorded), then the signal takes effect when this is dropped.
pub(super) struct HoldSignals(Option<libc::sigset_t>);

impl HoldSignals {
    /// Blocks the signals for this thread (the installer has no other).
    pub(super) fn new() -> Self {
        // SAFETY: sigset_t is plain data that sigemptyset initialises; pthread_sigmask only
        // reads `set` and writes `old`, both valid for the call.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::sigaddset(&mut set, signal);
            }
            let ok = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0;
            Self(ok.then_some(old))
        }
    }
}

impl Drop for HoldSignals {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores the mask saved by `new`; a pending signal is delivered now.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_only_temp_files_of_that_name() {
        let dir = kcp_testkit::TempDir::new("install-leftovers");
        let target = dir.path().join("ecr-credential-provider");
        for name in [
            ".ecr-credential-provider.tmp-12",
            ".ecr-credential-provider.previous.tmp-7",
            ".ecr-credential-provider.tmp-",
            ".ecr-credential-provider.tmp-1x",
            ".gcr-credential-provider.tmp-12",
            "ecr-credential-provider.tmp-12",
        ] {
            fs::write(dir.path().join(name), b"").unwrap_or_else(|e| panic!("{e}"));
        }
        let names: Vec<String> = leftovers(&target)
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(
            names,
            [
                ".ecr-credential-provider.previous.tmp-7",
                ".ecr-credential-provider.tmp-12"
            ]
        );
        assert_eq!(
            temp_path(&target).file_name(),
            Some(std::ffi::OsStr::new(&format!(
                ".ecr-credential-provider.tmp-{}",
                std::process::id()
            )))
        );
    }
}
