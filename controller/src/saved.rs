//! The controller's own persistence: each target's current entry kept in the work directory
//! (`<work-dir>/.published/<target>`, written with the token cache's atomic, durable writer and
//! read back with its owner checks), so a restarted container (same `emptyDir`) still has what it
//! published. A new pod starts empty and takes the Secret's entries instead (see `slot`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use kcp_plugin::safe_file::{self, Owner};

use crate::entry::Entry;

/// The directory under the work directory: a name no target can have (target names have no `.`).
const DIR: &str = ".published";
/// A kept entry is read up to this size.
const MAX_BYTES: u64 = 64 * 1024;

/// Where one target's current entry is kept.
#[derive(Debug, Clone)]
pub struct Saved {
    path: PathBuf,
    owner: Owner,
}

impl Saved {
    /// The copy of target `name`'s entry under `work_dir`.
    pub fn new(work_dir: &Path, name: &str) -> Saved {
        Saved {
            path: work_dir.join(DIR).join(name),
            owner: safe_file::current_owner(),
        }
    }

    /// The kept entry, if it is still a valid, unexpired entry named `file` (the target's entry
    /// file now: a copy kept under another key is not used).
    pub fn load(&self, file: &str) -> Option<Entry> {
        let bytes = match safe_file::read_owned_file(&self.path, &self.owner, MAX_BYTES) {
            Ok(bytes) => bytes?,
            Err(why) => {
                tracing::info!("not using the kept entry {}: {why}", self.path.display());
                return None;
            }
        };
        match Entry::check(file, bytes, SystemTime::now()) {
            Ok(entry) => Some(entry),
            Err(reason) => {
                tracing::info!("not using the kept entry {}: {reason}", self.path.display());
                None
            }
        }
    }

    /// Keeps `entry` (best effort: a failure is one warning).
    pub fn store(&self, entry: &Entry) {
        let written = self
            .path
            .parent()
            .map_or(Ok(()), |dir| safe_file::prepare_dir(dir, &self.owner))
            .and_then(|()| {
                safe_file::write_atomic_durable(&self.path, &entry.bytes, &self.owner)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!(
                "keeping a copy of the entry in {} failed: {e}",
                self.path.display()
            );
        }
    }

    /// Forgets the kept entry.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_plugin::time::unix_secs;
    use kcp_plugin::token_cache::{CacheKey, Issuer};

    #[test]
    fn keeps_an_entry_and_reads_it_back_only_under_its_own_name() {
        let dir = std::env::temp_dir().join(format!("ctl-saved-{}", std::process::id()));
        let key = CacheKey::new(Issuer::Ecr).scope("region", "us-east-1");
        let now = unix_secs(SystemTime::now());
        let bytes = format!(
            r#"{{"version":1,"key":"{}","username":"AWS","password":"p","expiresAt":{},"fetchedAt":{now},"refreshAt":{now}}}"#,
            key.canonical(),
            now + 3600
        );
        let entry = Entry::check(&key.file_name(), bytes.into_bytes(), SystemTime::now()).unwrap();
        let saved = Saved::new(&dir, "ecr-prod");
        assert_eq!(saved.load(&key.file_name()), None);
        saved.store(&entry);
        assert_eq!(saved.load(&key.file_name()), Some(entry));
        let other = CacheKey::new(Issuer::Ecr).scope("region", "eu-west-1");
        assert_eq!(saved.load(&other.file_name()), None);
        saved.remove();
        assert_eq!(saved.load(&key.file_name()), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
