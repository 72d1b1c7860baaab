//! Fleet mode, the node's side: entries that the token controller published for a shared
//! identity, copied into this node's token cache.
//!
//! The controller (`controller/`) runs a provider with `--token-cache-shared-identity NAME` and
//! publishes the entry the provider wrote, file name and bytes unchanged, in one Secret; the
//! DaemonSet mounts that Secret and `credential-provider-check wait` calls [`sync_from_dir`].
//! The providers themselves do not change: a node started with the same shared identity looks up
//! the same key, finds the copied entry and answers without an upstream call; a node whose entry
//! is missing, expired or refused fetches on its own as before.
//!
//! An entry from the Secret is held to every check a local entry is, and more, before it is
//! written (a Secret is input from the cluster, not from this node):
//! - its name is one of the cache's own entry names, and its key hashes to that name;
//! - its key says it is for exactly this node's shared identity (entries for other identities are
//!   never copied, and the provider would never read them: their keys differ);
//! - it is well-formed, of the current layout, not written in the future, with at least the
//!   cache's margin of life left;
//! - it never replaces a local entry for the same key that lives as long or longer, and it is
//!   written only while no exec holds that key's lock, atomically, with the cache's own modes;
//! - it gets a refresh point of this node's own (the cache's jitter), so a fleet whose controller
//!   is down does not fall back to its own fetches all in the same minutes.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use super::{CacheFile, Entry, MAX_ENTRY_BYTES, SHARED_PART, TokenCache, cache_file_name, files};
use crate::time::unix_secs;

/// The name of a group of nodes that share one cloud identity (e.g. one node role), and so may
/// share registry tokens: `--token-cache-shared-identity`. Lowercase letters, digits, `-` and
/// `.`, starting and ending with a letter or digit, at most 63 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedIdentity(String);

impl SharedIdentity {
    /// Checks `name`; the error says what is wrong with it.
    pub fn parse(name: &str) -> Result<Self, String> {
        let ok_edge =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            && ok_edge(name.chars().next())
            && ok_edge(name.chars().last());
        if valid {
            Ok(SharedIdentity(name.to_owned()))
        } else {
            Err(format!(
                "shared identity {name:?} is not a name: use 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit"
            ))
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// What happened to one published entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adopted {
    /// Written into the cache.
    Written,
    /// The local entry for that key lives as long or longer: left alone.
    LocalIsFresher,
    /// An exec holds the key's lock right now: left for the next round.
    Busy,
    /// Not copied; the reason says why (never quotes the entry's secret).
    Refused(String),
}

/// The outcome of one [`sync_from_dir`] round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Entries written into the cache.
    pub written: usize,
    /// Entries left alone: a local one is as fresh, or an exec held the lock.
    pub kept: usize,
    /// Entries refused, each with its file name and reason.
    pub refused: Vec<(String, String)>,
}

/// Copies every published entry in `from` (the Secret volume: one file per entry, named as the
/// cache names it) that is for this cache's shared identity into the cache. Files of other names
/// (the volume's own `..data` links, anything else) are skipped silently. An error only when the
/// cache is not in fleet mode or its directory is unusable; each entry's fate is in the report.
pub fn sync_from_dir(
    cache: &TokenCache,
    from: &Path,
    now: SystemTime,
) -> Result<SyncReport, String> {
    if cache.shared.is_none() {
        return Err(
            "the token cache has no shared identity (--token-cache-shared-identity)".into(),
        );
    }
    let listing = match fs::read_dir(from) {
        Ok(listing) => listing,
        // The Secret is optional: before the controller has written it, nothing is mounted.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SyncReport::default()),
        Err(e) => return Err(format!("reading {} failed: {e}", from.display())),
    };
    cache
        .prepare_dir()
        .map_err(|e| format!("token cache {}: {e}", cache.dir.display()))?;
    let mut report = SyncReport::default();
    let mut names: Vec<String> = listing
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| PublishedEntry::is_entry_name(name))
        .take(super::MAX_ENTRIES)
        .collect();
    names.sort();
    for name in names {
        let bytes = match read_published(&from.join(&name)) {
            Ok(bytes) => bytes,
            Err(reason) => {
                report.refused.push((name, reason));
                continue;
            }
        };
        match cache.adopt(&name, &bytes, now) {
            Adopted::Written => report.written += 1,
            Adopted::LocalIsFresher | Adopted::Busy => report.kept += 1,
            Adopted::Refused(reason) => report.refused.push((name, reason)),
        }
    }
    Ok(report)
}

/// Reads one published file: a regular file (the volume's own link to it is followed) of at most
/// an entry's size.
fn read_published(path: &Path) -> Result<Vec<u8>, String> {
    let meta = fs::metadata(path).map_err(|e| format!("reading it failed: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    let file = fs::File::open(path).map_err(|e| format!("opening it failed: {e}"))?;
    super::read_capped(file, MAX_ENTRY_BYTES)
}

/// A token cache entry file as a provider wrote it and fleet mode passes it on (the controller
/// publishes it, `wait` copies it), checked for what both sides need: one of the cache's entry
/// names, at most an entry's size, exactly the cache's layout, times in order. Its token is
/// never shown; what decides whether a node may use it is [`TokenCache::adopt`]'s.
pub struct PublishedEntry {
    stem: String,
    entry: Entry,
}

impl PublishedEntry {
    /// Checks the file `name` holding `bytes`; a refusal quotes nothing from the bytes.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Self, String> {
        let Some((stem, CacheFile::Entry)) = cache_file_name(name) else {
            return Err("not a token cache entry name".into());
        };
        if u64::try_from(bytes.len()).map_or(true, |len| len > MAX_ENTRY_BYTES) {
            return Err(format!("{} bytes, too large for an entry", bytes.len()));
        }
        // serde's message could quote a value; say only where it went wrong.
        let entry: Entry = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "not a token cache entry (line {}, column {})",
                e.line(),
                e.column()
            )
        })?;
        if entry.version != super::ENTRY_VERSION {
            return Err(format!(
                "layout version {} is not {}",
                entry.version,
                super::ENTRY_VERSION
            ));
        }
        if entry.refresh_at > entry.expires_at || entry.fetched_at > entry.expires_at {
            return Err("its times are out of order".into());
        }
        Ok(PublishedEntry {
            stem: stem.to_owned(),
            entry,
        })
    }

    /// Whether `name` is one of the cache's entry file names (`<32 lowercase hex>.json`).
    pub fn is_entry_name(name: &str) -> bool {
        matches!(cache_file_name(name), Some((_, CacheFile::Entry)))
    }

    /// The file name's stem: the hash of the entry's key.
    pub fn stem(&self) -> &str {
        &self.stem
    }

    /// When the token was fetched, Unix seconds.
    pub fn fetched_at(&self) -> i64 {
        self.entry.fetched_at
    }

    /// When the token expires, Unix seconds.
    pub fn expires_at(&self) -> i64 {
        self.entry.expires_at
    }
}

impl TokenCache {
    /// `entry` with a refresh point of this node's own: a random 0..jitter % of its life before
    /// the margin, never later than the published one. Every node copies the same entry, so
    /// without this all of them would reach its refresh point, and fetch on their own if the
    /// controller has not replaced it by then, in the same few minutes.
    fn with_own_refresh_point(&self, mut entry: Entry) -> Entry {
        let own = self.refresh_point(entry.fetched_at, entry.expires_at);
        entry.refresh_at = entry.refresh_at.min(own);
        entry
    }

    /// Copies one published entry (`name`, `bytes`) into the cache when it passes every check
    /// (see the module's doc). The cache directory must already be prepared.
    pub fn adopt(&self, name: &str, bytes: &[u8], now: SystemTime) -> Adopted {
        let Some(shared) = &self.shared else {
            return Adopted::Refused("this node has no shared identity".into());
        };
        let PublishedEntry {
            stem,
            entry: incoming,
        } = match PublishedEntry::parse(name, bytes) {
            Ok(published) => published,
            Err(reason) => return Adopted::Refused(reason),
        };
        let stem = stem.as_str();
        if super::stem_of(&incoming.key) != stem {
            return Adopted::Refused("its key does not hash to its file name".into());
        }
        let wanted = format!(";{SHARED_PART}={};identity=", super::escape(shared.name()));
        if !incoming.key.contains(&wanted) {
            return Adopted::Refused(format!(
                "it is not for the shared identity {:?}",
                shared.name()
            ));
        }
        let now_s = unix_secs(now);
        if incoming.fetched_at > now_s.saturating_add(super::secs(super::FUTURE_TOLERANCE)) {
            return Adopted::Refused("it was written in the future (a clock is wrong)".into());
        }
        let left = incoming.expires_at.saturating_sub(now_s);
        if left < super::secs(self.margin) {
            return Adopted::Refused(format!("{left}s of life left, less than the margin"));
        }
        let path = self.stem_path(stem, "json");
        let lock_path = self.stem_path(stem, "lock");
        let lock = match files::open_lock(&lock_path, &self.owner, true) {
            Ok(Some(lock)) => lock,
            Ok(None) => return Adopted::Busy,
            Err(reason) => return Adopted::Refused(format!("its lock file: {reason}")),
        };
        if lock.try_lock().is_err() {
            return Adopted::Busy;
        }
        // A local entry of ours for this key that lives as long or longer stays.
        if let Ok(Some(local)) = files::read_owned_file(&path, &self.owner, MAX_ENTRY_BYTES)
            && let Ok(local) = serde_json::from_slice::<Entry>(&local)
            && local.version == super::ENTRY_VERSION
            && local.key == incoming.key
            && local.expires_at >= incoming.expires_at
        {
            return Adopted::LocalIsFresher;
        }
        let bytes = match serde_json::to_vec(&self.with_own_refresh_point(incoming)) {
            Ok(bytes) => bytes,
            Err(e) => return Adopted::Refused(format!("writing it failed: {e}")),
        };
        match files::write_atomic(&path, &bytes, &self.owner) {
            Ok(()) => Adopted::Written,
            Err(e) => Adopted::Refused(format!("writing it failed: {e}")),
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests;
