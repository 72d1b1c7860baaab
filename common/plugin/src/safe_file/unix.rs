//! [`super`]'s file operations on Unix: every file is opened with `O_NOFOLLOW` (a symlink
//! is refused, never followed) and `O_NONBLOCK` (a FIFO cannot hold `open()`), and trusted only
//! after `fstat` on the open descriptor shows a regular file of the running user, closed to group
//! and others.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::SystemTime;

/// Who the cache's files must belong to: the effective uid.
pub type Owner = u32;

/// The running process's effective uid.
pub fn current_owner() -> Owner {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` `0700`, refuses one that is not a real directory of `owner`, and closes one that
/// is open to others.
pub fn prepare_dir(dir: &Path, owner: &Owner) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating it failed: {e}"))?;
    let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("it is not a directory (a symlink is not followed)".into());
    }
    if meta.uid() != *owner {
        return Err(format!(
            "it is owned by uid {}, not by this process (uid {owner})",
            meta.uid(),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        tracing::warn!(dir = %dir.display(), mode = format!("{:o}", meta.mode() & 0o777), "token cache directory is open to other users; setting it to 0700");
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("setting its mode to 0700 failed: {e}"))?;
    }
    Ok(())
}

/// Opens a lock file without following a link or blocking on a FIFO, and checks the open file:
/// a regular file of `owner`, closed to others. `create`: make it (`0600`) when missing;
/// otherwise a missing lock is `Ok(None)`.
pub fn open_lock(path: &Path, owner: &Owner, create: bool) -> Result<Option<File>, String> {
    let file = match OpenOptions::new()
        .create(create)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("it is a symlink".into()),
        // A FIFO nobody reads: opening it for writing without blocking fails with ENXIO.
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err("it is not a regular file".into());
        }
        Err(e) => return Err(format!("opening it failed: {e}")),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    check_mode(&meta, owner, 0o077)?;
    Ok(Some(file))
}

/// Reads a cache file of at most `max_bytes` only if it is a regular file owned by `owner` and
/// closed to others. `Ok(None)`: no such file.
pub fn read_owned_file(
    path: &Path,
    owner: &Owner,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, String> {
    read_checked(path, owner, max_bytes, 0o077)
}

/// [`read_owned_file`] for a file others may read but not write (the metrics file, which holds
/// no secret and is read by an exporter running as another user).
pub fn read_shared_file(
    path: &Path,
    owner: &Owner,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, String> {
    read_checked(path, owner, max_bytes, 0o022)
}

/// Opens without following a link or blocking, then checks the open file: regular, of `owner`,
/// no mode bit of `forbidden` set.
fn read_checked(
    path: &Path,
    owner: &Owner,
    max_bytes: u64,
    forbidden: u32,
) -> Result<Option<Vec<u8>>, String> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        // A missing directory (or a file in its place) is reported once, when it is created.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("it is a symlink".into()),
        Err(e) => return Err(format!("opening it failed: {e}")),
    };
    check_mode(
        &file.metadata().map_err(|e| e.to_string())?,
        owner,
        forbidden,
    )?;
    super::read_capped(file, max_bytes).map(Some)
}

/// When `path` was last written, if it is a regular file of `owner` (not followed if a link).
pub fn own_file_modified(path: &Path, owner: &Owner) -> Option<SystemTime> {
    let meta = fs::symlink_metadata(path).ok()?;
    (meta.is_file() && meta.uid() == *owner)
        .then(|| meta.modified().ok())
        .flatten()
}

/// A file we may trust: regular, owned by `owner`, none of the `forbidden` mode bits set
/// (`0o077`: no access for group or others).
fn check_mode(meta: &fs::Metadata, owner: &Owner, forbidden: u32) -> Result<(), String> {
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.uid() != *owner {
        return Err(format!("it is owned by uid {}, not {owner}", meta.uid()));
    }
    if meta.mode() & forbidden != 0 {
        return Err(format!(
            "its mode {:o} lets other users {} it",
            meta.mode() & 0o777,
            if forbidden & 0o044 != 0 {
                "read or write"
            } else {
                "write"
            }
        ));
    }
    Ok(())
}

/// Writes `bytes` to a new `0600` file next to `path` and renames it over `path`, so a reader
/// sees the old entry or the new one, never half of one. The temporary file is created
/// exclusively (`O_EXCL`: whatever already has its name, link or FIFO, is never opened).
pub fn write_atomic(path: &Path, bytes: &[u8], _owner: &Owner) -> std::io::Result<()> {
    write_atomic_mode(path, bytes, 0o600, false)
}

/// [`write_atomic`], synced to disk before the rename: a crash leaves the old file or the whole
/// new one (the token controller's saved entries).
pub fn write_atomic_durable(path: &Path, bytes: &[u8], _owner: &Owner) -> std::io::Result<()> {
    write_atomic_mode(path, bytes, 0o600, true)
}

/// [`write_atomic`] of a file others may read (`0644`: the metrics file, no secret in it),
/// synced to disk before the rename so a crash leaves the old file or the whole new one.
pub fn write_atomic_shared(path: &Path, bytes: &[u8], _owner: &Owner) -> std::io::Result<()> {
    write_atomic_mode(path, bytes, 0o644, true)
}

fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32, sync: bool) -> std::io::Result<()> {
    let tmp = super::temporary_name(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.flush()?;
        if sync {
            file.sync_all()?;
        }
        // The umask may have narrowed the mode at creation.
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
