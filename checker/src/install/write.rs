//! Putting files in place on the node: the plan for one file (what to do, or why not), and writes
//! that no reader ever sees half done and that an interrupt never leaves half done.
//!
//! What differs between a Linux and a Windows node is in [`platform`]: modes (Windows files have
//! none: they inherit the directory's access list), the directory fsync (NTFS journals the
//! rename; a directory cannot be opened as a file there), symlinks kept as `.previous`, replacing
//! an `.exe` that is running (Windows refuses to delete or overwrite a mapped image but lets it be
//! renamed: the running file moves to `<name>.previous`, then the new one takes its name), and
//! holding back interrupts (Windows: none to hold; a HostProcess container is stopped by ending
//! its job object, which nothing can hold back).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub(super) use self::platform::{HoldSignals, make_dirs};
use self::platform::{mode_ok, open_new, rename_over, set_mode, sync_dir};
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
                if mode_ok(&meta, mode) {
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
        let mut file = open_new(&tmp)?;
        file.write_all(content)?;
        // The umask must not decide the mode the kubelet sees.
        set_mode(&file, mode)?;
        file.sync_all()?;
        drop(file);
        rename_over(&tmp, path)?;
        sync_dir(dir)
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
    platform::keep_link(&p.real, &previous, &temp_path(&previous))
        .or_else(|e| refused(format!("keeping {}{PREVIOUS}: {e}", p.node)))
}

/// Carries out one planned step (or, in a dry run, only says what it would do).
pub(super) fn apply(p: &Planned, dry_run: bool, out: &mut String) -> Result<(), CommandError> {
    let would = if dry_run { "would " } else { "" };
    match p.verb {
        Verb::Unchanged => out.push_str(&format!("unchanged: {}\n", p.node)),
        Verb::Chmod => {
            out.push_str(&format!("{would}fix mode {:04o}: {}\n", p.mode, p.node));
            if !dry_run {
                platform::chmod(&p.real, p.mode)
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

#[cfg(unix)]
mod platform {
    use std::fs::{self, File, OpenOptions};
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    use std::path::Path;

    use crate::{CommandError, refused};

    /// Whether the file's mode is `mode`.
    pub(super) fn mode_ok(meta: &fs::Metadata, mode: u32) -> bool {
        meta.permissions().mode() & 0o7777 == mode
    }

    /// A new file only this user can read until its mode is set.
    pub(super) fn open_new(path: &Path) -> std::io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
    }

    pub(super) fn set_mode(file: &File, mode: u32) -> std::io::Result<()> {
        file.set_permissions(fs::Permissions::from_mode(mode))
    }

    pub(super) fn chmod(path: &Path, mode: u32) -> std::io::Result<()> {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
    }

    /// `rename(2)`: atomic, also over a binary that is running.
    pub(super) fn rename_over(from: &Path, to: &Path) -> std::io::Result<()> {
        fs::rename(from, to)
    }

    /// The rename made durable.
    pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
        File::open(dir)?.sync_all()
    }

    /// A symlink kept as the same symlink (its target is the node's, not this container's).
    pub(super) fn keep_link(link: &Path, previous: &Path, tmp: &Path) -> std::io::Result<()> {
        let copy = || -> std::io::Result<()> {
            let _ = fs::remove_file(tmp);
            std::os::unix::fs::symlink(fs::read_link(link)?, tmp)?;
            fs::rename(tmp, previous)?;
            sync_dir(previous.parent().unwrap_or(Path::new("/")))
        };
        copy().inspect_err(|_| {
            let _ = fs::remove_file(tmp);
        })
    }

    /// Creates `dir` and its missing parents with mode 0755.
    pub(in crate::install) fn make_dirs(dir: &Path) -> Result<(), CommandError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .or_else(|e| refused(format!("creating {}: {e}", dir.display())))
    }

    /// Holds back SIGINT, SIGTERM, SIGHUP and SIGQUIT while alive: an install interrupted while
    /// it writes finishes every write first (no temporary file left in the bin dir, no binary
    /// without its checksum recorded), then the signal takes effect when this is dropped.
    pub(in crate::install) struct HoldSignals(Option<libc::sigset_t>);

    impl HoldSignals {
        /// Blocks the signals for this thread (the installer has no other).
        pub(in crate::install) fn new() -> Self {
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
}

#[cfg(not(unix))]
mod platform {
    use std::fs::{self, File, OpenOptions};
    use std::path::{Path, PathBuf};

    use super::PREVIOUS;
    use crate::{CommandError, refused};

    /// Windows files have no mode: every file inherits the directory's access list (SYSTEM and
    /// Administrators on `C:\var\lib\kubelet` and `C:\k`).
    pub(super) fn mode_ok(_meta: &fs::Metadata, _mode: u32) -> bool {
        true
    }

    pub(super) fn open_new(path: &Path) -> std::io::Result<File> {
        OpenOptions::new().write(true).create_new(true).open(path)
    }

    pub(super) fn set_mode(_file: &File, _mode: u32) -> std::io::Result<()> {
        Ok(())
    }

    pub(super) fn chmod(_path: &Path, _mode: u32) -> std::io::Result<()> {
        Ok(())
    }

    /// A rename over `to`; when that fails and `to` is a file (an `.exe` the kubelet is running
    /// at that moment: Windows refuses to replace a mapped image, but lets it be renamed), `to`
    /// is renamed to `<to>.previous` first (where the caller has just kept a copy of the same
    /// bytes) and the new file takes its name, so for that instant the name is absent. Should that
    /// second rename fail too, `to` is put back.
    pub(super) fn rename_over(from: &Path, to: &Path) -> std::io::Result<()> {
        let first = match fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if !to.is_file() || to.to_string_lossy().ends_with(PREVIOUS) {
            return Err(first);
        }
        let mut previous = to.as_os_str().to_owned();
        previous.push(PREVIOUS);
        let previous = PathBuf::from(previous);
        if fs::rename(to, &previous).is_err() {
            return Err(first);
        }
        fs::rename(from, to).inspect_err(|_| {
            let _ = fs::rename(&previous, to);
        })
    }

    /// NTFS journals the rename; a directory handle cannot be flushed from here.
    pub(super) fn sync_dir(_dir: &Path) -> std::io::Result<()> {
        Ok(())
    }

    /// A symlink (or junction) kept by renaming the link itself: creating one needs a privilege.
    pub(super) fn keep_link(link: &Path, previous: &Path, _tmp: &Path) -> std::io::Result<()> {
        fs::rename(link, previous)
    }

    /// Creates `dir` and its missing parents (they inherit their parent's access list).
    pub(in crate::install) fn make_dirs(dir: &Path) -> Result<(), CommandError> {
        fs::create_dir_all(dir).or_else(|e| refused(format!("creating {}: {e}", dir.display())))
    }

    /// Nothing to hold back: a HostProcess container is stopped by ending its job object.
    pub(in crate::install) struct HoldSignals;

    impl HoldSignals {
        pub(in crate::install) fn new() -> Self {
            HoldSignals
        }
    }

    impl Drop for HoldSignals {
        fn drop(&mut self) {}
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
