//! Files that hold secrets on a node, opened and written so that nobody else's file is ever
//! trusted: the token cache's entries and locks, the metrics file, and the token controller's
//! saved entries use these and nothing else.
//!
//! What every function here guarantees, on both platforms:
//! - a symlink (or junction) is refused, never followed, and opening never blocks (a planted FIFO
//!   cannot hold `open()`);
//! - a file is trusted only after the *open* handle shows a regular file of the expected owner
//!   that no other user can write (for secrets: read either);
//! - a write goes to a fresh file beside the target, created exclusively with its final
//!   permissions, then renamed over it, so a reader sees the old content or the new, never half;
//! - a read is capped, by the file's size and by what can actually be read.
//!
//! How: `safe_file/unix.rs` (modes, `O_NOFOLLOW`, `O_NONBLOCK`, `fstat`) and
//! `safe_file/windows.rs` (protected access lists given at creation, reparse points opened as
//! themselves, owner and access checks on the handle).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg_attr(unix, path = "safe_file/unix.rs")]
#[cfg_attr(windows, path = "safe_file/windows.rs")]
mod platform;

pub use platform::{
    Owner, current_owner, open_lock, own_file_modified, prepare_dir, read_owned_file,
    read_shared_file, write_atomic, write_atomic_durable, write_atomic_shared,
};

/// Reads an open file whose checks passed; one larger than `max_bytes`, by its size or by what
/// could be read (it may grow meanwhile), is refused.
pub fn read_capped(file: File, max_bytes: u64) -> Result<Vec<u8>, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let too_large = |len: u64| format!("it is {len} bytes, too large for an entry");
    if len > max_bytes {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading it failed: {e}"))?;
    match u64::try_from(bytes.len()) {
        Ok(read) if read <= max_bytes => Ok(bytes),
        _ => Err(too_large(max_bytes + 1)),
    }
}

/// A fresh name beside `path` for writing its next version: `.<name>.<pid>.<random>.tmp`.
fn temporary_name(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        fastrand::u32(..)
    ))
}
