//! The token cache on Windows: not available yet. Its safety on Unix rests on file modes,
//! `O_NOFOLLOW` and `fstat`; the Windows equivalents (an owner-only ACL, no following of
//! symlinks or junctions) are not written, and a cache without them would let other local users
//! read registry credentials. So every operation reports the cache unusable, and the run warns
//! once and fetches without it, as for any unusable cache directory (docs/operations.md).

use std::fs::File;
use std::path::Path;
use std::time::SystemTime;

/// Unused on Windows until the cache is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Owner;

const UNAVAILABLE: &str = "the token cache is not available on Windows yet";

pub(super) fn current_owner() -> Owner {
    Owner
}

pub(super) fn prepare_dir(_dir: &Path, _owner: Owner) -> Result<(), String> {
    Err(UNAVAILABLE.into())
}

pub(super) fn open_lock(
    _path: &Path,
    _owner: Owner,
    _create: bool,
) -> Result<Option<File>, String> {
    Err(UNAVAILABLE.into())
}

pub(super) fn read_owned_file(
    _path: &Path,
    _owner: Owner,
    _max_bytes: u64,
) -> Result<Option<Vec<u8>>, String> {
    // Nothing is ever written, so there is nothing to read.
    Ok(None)
}

pub(super) fn own_file_modified(_path: &Path, _owner: Owner) -> Option<SystemTime> {
    None
}

pub(super) fn write_atomic(_path: &Path, _bytes: &[u8]) -> std::io::Result<()> {
    Err(std::io::Error::other(UNAVAILABLE))
}
