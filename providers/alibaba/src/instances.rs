//! Enterprise instance names resolved to IDs, remembered on disk for a day, so that a node does
//! not call `ListInstance` before every registry login.
//!
//! One small JSON file per (region, identity fingerprint) in the token cache's directory, only
//! when the token cache is on, under the same rules as its entries (`kcp_plugin::safe_file`: no
//! link followed, owned by us and closed to others, atomic writes, capped reads). A name is
//! trusted for [`MAX_AGE`]; a file that cannot be read or parsed is ignored and rewritten. The
//! file holds no secret (names and `cri-…` IDs), but another user able to write it could point
//! a registry host at another instance of the same account, hence the same checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kcp_plugin::safe_file;
use serde::{Deserialize, Serialize};

use crate::host::{InstanceId, Region};

/// How long a remembered ID is used before `ListInstance` is asked again.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// Largest file read; far above any real account's instances.
const MAX_BYTES: u64 = 64 * 1024;
/// Most names kept in one file.
const MAX_NAMES: usize = 200;
/// The file layout's version.
const VERSION: u32 = 1;

/// The remembered instances of one identity in one region.
#[derive(Debug, Clone)]
pub struct InstanceMap {
    path: PathBuf,
    owner: safe_file::Owner,
}

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    instances: BTreeMap<String, Remembered>,
}

/// One name's ID and when `ListInstance` gave it (Unix seconds).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Remembered {
    id: String,
    listed_at: u64,
}

impl InstanceMap {
    /// The map in the token cache directory `dir` for `region` and the identity `fingerprint`
    /// (what the identity part of the token cache key holds: never a secret).
    pub fn new(dir: &Path, region: &Region, fingerprint: &str) -> Self {
        let mut text = Vec::new();
        for part in [region.as_str(), fingerprint] {
            text.extend((part.len() as u64).to_be_bytes());
            text.extend(part.as_bytes());
        }
        let digest = ring::digest::digest(&ring::digest::SHA256, &text);
        let name = format!(
            "alibaba-instances-{}.json",
            kcp_plugin::hex::encode(&digest.as_ref()[..16])
        );
        InstanceMap {
            path: dir.join(name),
            owner: safe_file::current_owner(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The ID remembered for `name`, if it was listed less than [`MAX_AGE`] before `now`.
    pub fn get(&self, name: &str, now: SystemTime) -> Option<InstanceId> {
        let file = self.read()?;
        let entry = file.instances.get(name)?;
        let age = unix(now).checked_sub(entry.listed_at)?;
        if age >= MAX_AGE.as_secs() {
            tracing::debug!(name, "instance map: entry older than a day, listing again");
            return None;
        }
        InstanceId::parse(&entry.id)
    }

    /// Remembers `name` → `id` as listed at `now`. Failures are logged, never fatal.
    pub fn put(&self, name: &str, id: &InstanceId, now: SystemTime) {
        self.update(|file| {
            file.instances.insert(
                name.to_owned(),
                Remembered {
                    id: id.as_str().to_owned(),
                    listed_at: unix(now),
                },
            );
            // Keep the newest when an account has very many instances.
            while file.instances.len() > MAX_NAMES {
                let oldest = file
                    .instances
                    .iter()
                    .min_by_key(|(_, r)| r.listed_at)
                    .map(|(n, _)| n.clone());
                match oldest {
                    Some(n) => file.instances.remove(&n),
                    None => break,
                };
            }
        });
    }

    /// Drops what is remembered for `name` (Container Registry said the ID does not exist).
    pub fn forget(&self, name: &str) {
        self.update(|file| {
            file.instances.remove(name);
        });
    }

    /// The file, or `None` when absent, unsafe or unreadable (then the next write replaces it).
    fn read(&self) -> Option<File> {
        let bytes = match safe_file::read_owned_file(&self.path, &self.owner, MAX_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(reason) => {
                tracing::info!(path = %self.path.display(), "instance map: ignoring the file ({reason}); it will be replaced");
                return None;
            }
        };
        match serde_json::from_slice::<File>(&bytes) {
            Ok(file) if file.version == VERSION => Some(file),
            Ok(_) | Err(_) => {
                tracing::info!(path = %self.path.display(), "instance map: ignoring a file that is not one of ours; it will be replaced");
                None
            }
        }
    }

    /// Reads, changes and writes the file atomically.
    fn update(&self, change: impl FnOnce(&mut File)) {
        let mut file = self.read().unwrap_or(File {
            version: VERSION,
            instances: BTreeMap::new(),
        });
        change(&mut file);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let written = safe_file::prepare_dir(dir, &self.owner)
            .and_then(|()| serde_json::to_vec(&file).map_err(|e| e.to_string()))
            .and_then(|bytes| {
                safe_file::write_atomic(&self.path, &bytes, &self.owner).map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => tracing::debug!(path = %self.path.display(), "instance map written"),
            Err(e) => {
                tracing::info!(path = %self.path.display(), "instance map: writing failed: {e}")
            }
        }
    }
}

/// Unix seconds (0 before the epoch).
fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        std::env::temp_dir().join(format!(
            "alibaba-instances-test-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ))
    }

    fn region() -> Region {
        Region::parse("cn-hangzhou").unwrap()
    }

    fn id(text: &str) -> InstanceId {
        InstanceId::parse(text).unwrap()
    }

    /// A new directory and a map in it that holds `inst` as `cri-abc`, and the time it was put.
    fn holding_inst() -> (PathBuf, InstanceMap, SystemTime) {
        let dir = dir();
        let map = InstanceMap::new(&dir, &region(), "x");
        let now = SystemTime::now();
        map.put("inst", &id("cri-abc"), now);
        (dir, map, now)
    }

    #[test]
    fn remembers_for_a_day_per_identity_and_region() {
        let dir = dir();
        let map = InstanceMap::new(&dir, &region(), "node-role:a");
        let now = SystemTime::now();
        assert_eq!(map.get("inst", now), None);
        map.put("inst", &id("cri-abc"), now);
        map.put("other", &id("cri-def"), now);
        assert_eq!(map.get("inst", now), Some(id("cri-abc")));
        assert_eq!(
            map.get("inst", now + MAX_AGE - Duration::from_secs(1)),
            Some(id("cri-abc"))
        );
        assert_eq!(map.get("inst", now + MAX_AGE), None);
        // Another identity, another region: another file.
        let other = InstanceMap::new(&dir, &region(), "node-role:b");
        assert_ne!(other.path(), map.path());
        assert_eq!(other.get("inst", now), None);
        let elsewhere =
            InstanceMap::new(&dir, &Region::parse("cn-beijing").unwrap(), "node-role:a");
        assert_eq!(elsewhere.get("inst", now), None);
        map.forget("inst");
        assert_eq!(map.get("inst", now), None);
        assert_eq!(map.get("other", now), Some(id("cri-def")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_file_is_ignored_and_rewritten() {
        let (dir, map, now) = holding_inst();
        std::fs::write(map.path(), b"{not json").unwrap();
        assert_eq!(map.get("inst", now), None);
        map.put("inst", &id("cri-new"), now);
        assert_eq!(map.get("inst", now), Some(id("cri-new")));
        // An ID that is not one is not used.
        std::fs::write(
            map.path(),
            br#"{"version":1,"instances":{"inst":{"id":"evil","listed_at":99999999999}}}"#,
        )
        .unwrap();
        assert_eq!(map.get("inst", now), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn unsafe_files_are_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, map, now) = holding_inst();
        let mode = std::fs::metadata(map.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(map.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(map.get("inst", now), None);
        // A symlink in its place is not followed.
        let target = dir.join("elsewhere.json");
        std::fs::rename(map.path(), &target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, map.path()).unwrap();
        assert_eq!(map.get("inst", now), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
