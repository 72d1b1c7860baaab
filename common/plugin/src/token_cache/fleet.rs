//! Fleet mode: one registry token for every node that shares a cloud identity.
//!
//! The token controller (`controller/`) runs a provider with `--token-cache-shared-identity NAME`
//! and publishes the entry file the provider wrote, name and bytes unchanged, in one Secret
//! ([`PublishedEntry`] is what both sides check). The DaemonSet mounts that Secret and
//! `credential-provider-check wait` calls [`sync_from_dir`], which makes the node's copies follow
//! it. The providers do not change: a node started with the same shared identity looks up the
//! same key ([`SharedIdentity`](super::SharedIdentity), `CacheKey::shared_as`), finds the copy
//! and answers without an upstream call; a node whose copy is missing, expired or refused
//! fetches on its own.
//!
//! A Secret is input from the cluster, not from this node, so a published entry passes every
//! check a local entry does and more before it is copied:
//! - its name is one of the cache's entry names, its key hashes to that name and names exactly
//!   this node's shared identity;
//! - it is well-formed, of the current layout, claims no longer a life than its issuer grants
//!   (an `expiresAt` of 9999 is refused, not believed), was not written in the future, and has at
//!   least the cache's margin of life left;
//! - at most [`MAX_ADOPTED_ENTRIES`] copies of at most [`MAX_ADOPTED_BYTES`] in all are kept
//!   (the first by name; the rest are reported, never copied), and the cache's own pruning never
//!   removes an entry of the node's to make room for them.
//!
//! **The Secret is the authority for what it published.** A copy is marked as one
//! ([`FleetCopy`]: which publication, seen when), so the node knows its copies from the entries
//! it fetched itself:
//! - a different publication for the same key replaces the copy, even one that lives shorter (a
//!   corrected Secret corrects every node within one sync);
//! - a copy whose entry the Secret no longer publishes (withdrawn, or replaced by one that is
//!   refused) is removed;
//! - an entry the node fetched itself is never removed or shortened: a publication replaces it
//!   only when it lives longer, and then counts as a copy;
//! - nothing is written or removed while an exec holds the key's lock (the next round does it).
//!
//! **Copies do not trust the node's clock against the controller's.** A copy's life is the
//! published one (`expiresAt − fetchedAt`, both written by one clock) counted from when this node
//! first saw the publication, and never later than the published expiry: a node whose clock
//! lags the controller's by minutes still ends the copy, and so every `cacheDuration` answered
//! from it, when the token ends (give or take the time the publication took to reach the node).
//!
//! **Each node refreshes a copy at its own point** (the cache's jitter, never later than the
//! published one), so a fleet whose controller is down does not fall back to its own fetches
//! all in the same minutes.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::key::{escape, stem_of};
use super::{
    CacheFile, Entry, MAX_ENTRY_BYTES, MAX_SCANNED, SHARED_PART, TokenCache, cache_file_name, files,
};
use crate::time::unix_secs;

/// At most this many copies of published entries are kept in a node's cache; a Secret that
/// publishes more for one shared identity has the rest refused (by name order). A fleet
/// publishes one entry per registry region or login server, so this is far above any real one.
pub const MAX_ADOPTED_ENTRIES: usize = 100;
/// At most this many bytes of copies are kept (what one Secret can hold at most).
pub const MAX_ADOPTED_BYTES: u64 = 1024 * 1024;

/// The mark on a copied entry: which publication it was made from and when this node first saw
/// it. Entries that providers write never carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct FleetCopy {
    /// `sha256:<hex>` of the published file's bytes.
    published: String,
    /// Unix seconds, this node's clock: when the publication was first seen here.
    seen_at: i64,
}

/// What happened to one published entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adopted {
    /// Copied into the cache (new, or replacing an older copy or a shorter-lived own entry).
    Written,
    /// The copy of this very publication is already there.
    Unchanged,
    /// The node's own entry for that key lives as long or longer: left alone.
    LocalIsFresher,
    /// An exec holds the key's lock right now: left for the next round.
    Busy,
    /// Not copied; the reason says why in fixed words (never a value from the entry).
    Refused(String),
}

/// The outcome of one [`sync_from_dir`] round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Entries written into the cache.
    pub written: usize,
    /// Entries left as they are: already copied, the node's own lives as long, or an exec held
    /// the lock.
    pub kept: usize,
    /// Entries refused, each with its file name and reason.
    pub refused: Vec<(String, String)>,
    /// Entries not copied because [`MAX_ADOPTED_ENTRIES`] or [`MAX_ADOPTED_BYTES`] were
    /// reached (by name order), by file name: one fact about the Secret, not one per entry.
    pub over_cap: Vec<String>,
    /// Copies removed because the Secret no longer publishes them, by file name.
    pub withdrawn: Vec<String>,
    /// The Secret volume is not there at all: nothing was copied or withdrawn.
    pub no_volume: bool,
}

/// Makes this node's copies follow the published entries in `from` (the Secret volume: one file
/// per entry, named as the cache names it; its `..data` snapshot is read when there is one) for
/// this cache's shared identity, as the module's doc says. Files of other names are skipped
/// silently. An error only when the cache is not in fleet mode, its directory is unusable or the
/// volume cannot be listed (then nothing is withdrawn); each entry's fate is in the report.
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
    let mut report = SyncReport::default();
    let Some(names) = published_names(from)? else {
        report.no_volume = true;
        return Ok(report);
    };
    cache
        .prepare_dir()
        .map_err(|e| format!("token cache {}: {e}", cache.dir.display()))?;
    // Stems whose copy (or own entry) stays this round.
    let mut keep = BTreeSet::new();
    let (mut count, mut bytes_kept) = (0usize, 0u64);
    for (name, path) in names {
        let stem = name.trim_end_matches(".json").to_owned();
        let bytes = match read_published(&path) {
            Ok(bytes) => bytes,
            Err(reason) => {
                // A file that cannot be read right now is not a withdrawal.
                keep.insert(stem);
                report.refused.push((name, reason));
                continue;
            }
        };
        let candidate = match cache.candidate(&name, &bytes, now) {
            Ok(candidate) => candidate,
            Err(reason) => {
                report.refused.push((name, reason));
                continue;
            }
        };
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if count >= MAX_ADOPTED_ENTRIES || bytes_kept.saturating_add(size) > MAX_ADOPTED_BYTES {
            report.over_cap.push(name);
            continue;
        }
        let adopted = match cache.place(candidate) {
            Adopted::Written => {
                report.written += 1;
                true
            }
            Adopted::Unchanged | Adopted::Busy => {
                report.kept += 1;
                true
            }
            Adopted::LocalIsFresher => {
                report.kept += 1;
                false
            }
            Adopted::Refused(reason) => {
                report.refused.push((name, reason));
                continue;
            }
        };
        if adopted {
            count += 1;
            bytes_kept = bytes_kept.saturating_add(size);
        }
        keep.insert(stem);
    }
    report.withdrawn = cache.withdraw_all_but(&keep);
    Ok(report)
}

/// The published entry files in `from`, sorted by name, with the paths to read them at: in the
/// `..data` snapshot the kubelet swaps atomically when there is one (so one round never sees
/// half of an update), else in `from` itself. `None`: there is no volume at all.
fn published_names(from: &Path) -> Result<Option<Vec<(String, PathBuf)>>, String> {
    let snapshot = from.join("..data");
    let dir = if snapshot.is_dir() {
        snapshot
    } else {
        from.to_path_buf()
    };
    let listing = match fs::read_dir(&dir) {
        Ok(listing) => listing,
        // The Secret is optional: before the controller has written it, nothing is mounted.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {} failed: {e}", from.display())),
    };
    let mut names: Vec<(String, PathBuf)> = listing
        .filter_map(Result::ok)
        .take(MAX_SCANNED)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| PublishedEntry::is_entry_name(name))
        .map(|name| {
            let path = dir.join(&name);
            (name, path)
        })
        .collect();
    names.sort();
    Ok(Some(names))
}

/// Reads one published file: a regular file (the volume's own link to it is followed) of at most
/// an entry's size.
fn read_published(path: &Path) -> Result<Vec<u8>, String> {
    let meta = fs::metadata(path).map_err(|e| format!("reading it failed: {}", e.kind()))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    let file = fs::File::open(path).map_err(|e| format!("opening it failed: {}", e.kind()))?;
    files::read_capped(file, MAX_ENTRY_BYTES)
        .map_err(|_| "it is too large for an entry, or could not be read".into())
}

/// A token cache entry file as a provider wrote it and fleet mode passes it on (the controller
/// publishes it, `wait` copies it), checked for what both sides need: one of the cache's entry
/// names, at most an entry's size, exactly the cache's layout, times in order, a life its issuer
/// grants, no copy's mark. Its token is never shown; what decides whether a node may use it is
/// [`sync_from_dir`]'s.
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
            return Err("too large for an entry".into());
        }
        // serde's message could quote a value; say only where it went wrong.
        let entry: Entry = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "not a token cache entry (line {}, column {})",
                e.line(),
                e.column()
            )
        })?;
        entry.check_shape()?;
        if entry.fleet.is_some() {
            return Err("it is a node's copy, not an entry a provider wrote".into());
        }
        if stem_of(&entry.key) != stem {
            return Err("its key does not hash to its file name".into());
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

    /// The key's canonical text: scope in clear, identity hashed, no secret.
    pub fn key(&self) -> &str {
        &self.entry.key
    }

    /// When the token was fetched, Unix seconds (the fetching machine's clock).
    pub fn fetched_at(&self) -> i64 {
        self.entry.fetched_at
    }

    /// When the token expires, Unix seconds (the fetching machine's clock).
    pub fn expires_at(&self) -> i64 {
        self.entry.expires_at
    }
}

/// A published entry that passed every check that does not depend on what the cache holds.
struct Candidate {
    stem: String,
    /// The copy to write: times moved onto this node's clock, its own refresh point, the mark.
    copy: Entry,
}

impl TokenCache {
    /// Checks one published entry (`name`, `bytes`) against everything but the cache's current
    /// content, and makes the copy this node would write (see the module's doc for the times).
    fn candidate(&self, name: &str, bytes: &[u8], now: SystemTime) -> Result<Candidate, String> {
        let Some(shared) = &self.shared else {
            return Err("this node has no shared identity".into());
        };
        let PublishedEntry { stem, entry } = PublishedEntry::parse(name, bytes)?;
        let wanted = format!(";{SHARED_PART}={};identity=", escape(shared.name()));
        if !entry.key.contains(&wanted) {
            return Err(format!(
                "it is not for the shared identity {:?}",
                shared.name()
            ));
        }
        let seen = unix_secs(now);
        if entry.fetched_at > seen.saturating_add(super::secs(super::FUTURE_TOLERANCE)) {
            return Err(
                "it was written more than 5 minutes in the future (a clock is wrong)".into(),
            );
        }
        let life = entry.expires_at - entry.fetched_at;
        let expires_at = entry.expires_at.min(seen.saturating_add(life));
        if expires_at.saturating_sub(seen) < super::secs(self.margin) {
            return Err(format!(
                "less than the {}-minute margin of its life is left",
                self.margin.as_secs() / 60
            ));
        }
        let fetched_at = entry.fetched_at.min(seen);
        let moved_back = entry.expires_at - expires_at;
        let own = self.refresh_point(fetched_at, expires_at);
        let copy = Entry {
            fetched_at,
            expires_at,
            refresh_at: (entry.refresh_at - moved_back).min(own),
            fleet: Some(FleetCopy {
                published: digest(bytes),
                seen_at: seen,
            }),
            ..entry
        };
        Ok(Candidate { stem, copy })
    }

    /// Checks and copies one published entry (`name`, `bytes`) as [`sync_from_dir`] does for
    /// each file, caps and withdrawals aside. The cache directory must already be prepared.
    pub fn adopt(&self, name: &str, bytes: &[u8], now: SystemTime) -> Adopted {
        match self.candidate(name, bytes, now) {
            Ok(candidate) => self.place(candidate),
            Err(reason) => Adopted::Refused(reason),
        }
    }

    /// Writes `candidate` unless the cache already holds this publication, or an entry of the
    /// node's own that lives as long, or an exec holds the key's lock. The directory must be
    /// prepared.
    fn place(&self, candidate: Candidate) -> Adopted {
        let Candidate { stem, copy } = candidate;
        let path = self.stem_path(&stem, "json");
        let lock = match files::open_lock(&self.stem_path(&stem, "lock"), &self.owner, true) {
            Ok(Some(lock)) => lock,
            Ok(None) => return Adopted::Busy,
            Err(reason) => return Adopted::Refused(format!("its lock file: {reason}")),
        };
        if lock.try_lock().is_err() {
            return Adopted::Busy;
        }
        // An entry that fails the shape every entry must have is no entry (an old version's
        // copy of a 9999 expiry, say): the copy replaces it.
        if let Some(local) = self.read_entry(&path).filter(|e| e.check_shape().is_ok())
            && local.key == copy.key
        {
            match (&local.fleet, &copy.fleet) {
                (Some(held), Some(new)) if held.published == new.published => {
                    return Adopted::Unchanged;
                }
                // Another publication: the Secret says what the copy is.
                (Some(_), _) => {}
                (None, _) if local.expires_at >= copy.expires_at => return Adopted::LocalIsFresher,
                (None, _) => {}
            }
        }
        let bytes = match serde_json::to_vec(&copy) {
            Ok(bytes) => bytes,
            Err(e) => return Adopted::Refused(format!("writing it failed: {e}")),
        };
        match files::write_atomic(&path, &bytes, &self.owner) {
            Ok(()) => Adopted::Written,
            Err(e) => Adopted::Refused(format!("writing it failed: {}", e.kind())),
        }
    }

    /// The entry at `path` when it is a readable entry of ours of the current layout.
    fn read_entry(&self, path: &Path) -> Option<Entry> {
        let bytes = files::read_owned_file(path, &self.owner, MAX_ENTRY_BYTES).ok()??;
        serde_json::from_slice::<Entry>(&bytes)
            .ok()
            .filter(|e| e.version == super::ENTRY_VERSION)
    }

    /// Removes every copy of a published entry whose stem is not in `keep`, each under its
    /// key's lock (a held lock leaves it for the next round); entries the node fetched itself
    /// are never touched. Returns the file names removed.
    fn withdraw_all_but(&self, keep: &BTreeSet<String>) -> Vec<String> {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut stems: Vec<String> = listing
            .filter_map(Result::ok)
            .take(MAX_SCANNED)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|name| match cache_file_name(&name) {
                Some((stem, CacheFile::Entry)) if !keep.contains(stem) => Some(stem.to_owned()),
                _ => None,
            })
            .collect();
        stems.sort();
        stems
            .into_iter()
            .filter(|stem| self.withdraw(stem))
            .map(|stem| format!("{stem}.json"))
            .collect()
    }

    /// Removes the entry of `stem` if, under its lock, it is a copy of a published entry.
    fn withdraw(&self, stem: &str) -> bool {
        let path = self.stem_path(stem, "json");
        if self.read_entry(&path).is_none_or(|e| e.fleet.is_none()) {
            return false;
        }
        let Ok(Some(lock)) = files::open_lock(&self.stem_path(stem, "lock"), &self.owner, true)
        else {
            return false;
        };
        if lock.try_lock().is_err() {
            return false;
        }
        // Read again under the lock: an exec may have replaced it with its own meanwhile.
        self.read_entry(&path).is_some_and(|e| e.fleet.is_some()) && fs::remove_file(&path).is_ok()
    }
}

/// `sha256:<hex>` of `bytes`.
fn digest(bytes: &[u8]) -> String {
    let hash = ring::digest::digest(&ring::digest::SHA256, bytes);
    format!("sha256:{}", crate::hex::encode(hash.as_ref()))
}

/// The fuzz target body for what a Secret publishes (`fuzz/fuzz_targets/published_entry.rs`, and
/// `common/plugin/src/fuzz_smoke.rs` on stable): arbitrary bytes in, a panic when an invariant
/// breaks. Built only for cargo-fuzz (`--cfg fuzzing`) and unit tests: no release binary has it.
#[cfg(any(fuzzing, test))]
pub mod fuzz {
    use super::PublishedEntry;

    /// The first line is the file name, the rest the file's bytes; both also as a well-formed
    /// name with the input as the entry. Invariants: a refusal is one line, and the outcome never
    /// depends on the password (the same entry with another password of the same length reads
    /// the same, so no reason can quote it); an accepted entry's key hashes to its name, its
    /// times are in order and its life is within its issuer's bound.
    pub fn published_entry(data: &[u8]) {
        let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
        let name = String::from_utf8_lossy(&data[..split]).into_owned();
        let bytes = data.get(split + 1..).unwrap_or_default();
        check(&name, bytes);
        check("0123456789abcdef0123456789abcdef.json", data);
    }

    fn check(name: &str, bytes: &[u8]) {
        let outcome = PublishedEntry::parse(name, bytes);
        match &outcome {
            Err(reason) => assert!(
                !reason.is_empty() && !reason.contains(['\n', '\r']),
                "{reason:?}"
            ),
            Ok(entry) => {
                assert_eq!(super::stem_of(entry.key()), entry.stem());
                assert_eq!(format!("{}.json", entry.stem()), name);
                assert!(entry.fetched_at() <= entry.expires_at());
                let issuer = super::super::Issuer::of_key(entry.key())
                    .unwrap_or_else(|| panic!("accepted an entry of no issuer: {:?}", entry.key()));
                let life = u64::try_from(entry.expires_at() - entry.fetched_at()).unwrap_or(0);
                assert!(life <= issuer.longest_life().as_secs());
            }
        }
        if let Some((mine, other)) = with_two_passwords(bytes) {
            // Where a parse error is may move with the password's escapes; what it says may not.
            let reason = |b: &[u8]| {
                PublishedEntry::parse(name, b)
                    .err()
                    .map(|r| r.split(", column ").next().unwrap_or_default().to_owned())
            };
            assert_eq!(
                reason(&mine),
                reason(&other),
                "the outcome depends on the password"
            );
        }
    }

    /// The entry re-serialized twice, with its password and with another of as many bytes:
    /// `None` unless `bytes` is a JSON object with a string password.
    fn with_two_passwords(bytes: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let password = value.get("password")?.as_str()?.to_owned();
        let mine = serde_json::to_vec(&value).ok()?;
        // Byte for byte as long (the size check counts bytes), and different in every byte.
        let swapped: String = password
            .chars()
            .map(|c| if c == 'x' { "y" } else { "x" }.repeat(c.len_utf8()))
            .collect();
        value["password"] = serde_json::Value::String(swapped);
        Some((mine, serde_json::to_vec(&value).ok()?))
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests;
