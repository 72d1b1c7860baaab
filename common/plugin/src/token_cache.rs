//! The opt-in on-disk token cache every provider shares.
//!
//! The kubelet starts a fresh plugin process per cache miss and forgets its own cache on restart,
//! so a node that starts many pods at once, or a fleet whose kubelets restart together, asks the
//! token API once per exec. With this cache the first exec for a [`CacheKey`] fetches and writes
//! the registry credential; concurrent execs wait on an advisory lock and read what it wrote;
//! later execs and restarted kubelets read it until it is about to expire.
//!
//! What is trusted on disk is deliberately narrow:
//! - the directory must be a real directory owned by the running user (it is created `0700`, and
//!   tightened to `0700` if it is more open);
//! - every file it opens (entry, lock, temporary file) is opened without following a symlink
//!   and without blocking, so a planted FIFO cannot hold `open()`, and is checked on the open
//!   descriptor: a regular file owned by the running user, mode `0600` or stricter;
//! - an entry must also be small, well-formed, written for exactly this key, claim no longer a
//!   life than its [`Issuer`] ever grants (ECR 12 h, ACR 3 h…), and have at least the safety
//!   margin of life left. Anything else is ignored and replaced by the next fetch;
//! - each write prunes expired entries and holds the directory under [`MAX_ENTRIES`] and
//!   [`MAX_TOTAL_BYTES`], touching only the cache's own file names;
//! - an entry's `fetchedAt` is the token's own [`RegistryToken::obtained_at`], and one written
//!   more than a few minutes in the future is not trusted (the clock went back);
//! - each entry carries its own refresh point, a random 0..jitter % of its lifetime before the
//!   margin: nodes that fetched together (a scale-up) refresh at different times instead of all
//!   when their tokens reach the margin together;
//! - a key holds no secret: scope in clear, identity as a SHA-256 fingerprint. In
//!   service-account-token mode the identity is the token's namespace, name and UID claims; the
//!   token itself never reaches the disk.
//!
//! The cache never fails a pull: when the directory cannot be used, a warning is logged and the
//! run fetches as if the cache were off.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::deadline::Deadline;
use crate::time::{from_unix_secs, unix_secs};
use kcp_kubelet::secret::Secret;

use crate::safe_file as files;

mod fleet;
mod issuer;
mod key;
mod source;

#[cfg(any(fuzzing, test))]
pub use fleet::fuzz;
pub use fleet::{
    Adopted, MAX_ADOPTED_BYTES, MAX_ADOPTED_ENTRIES, PublishedEntry, SyncReport, sync_from_dir,
};
pub use issuer::Issuer;
pub use key::{CacheKey, SharedIdentity};
pub use source::{Source, note_token, noted, take_noted};

/// Where the cache lives unless `--token-cache-dir` says otherwise.
pub const DEFAULT_DIR: &str = if cfg!(windows) {
    r"C:\ProgramData\kubelet-credential-provider\token-cache"
} else {
    "/var/lib/kubelet-credential-provider/token-cache"
};
/// Environment variable that turns the cache on (`true`/`false`).
pub const ENABLE_ENV: &str = "CREDENTIAL_PROVIDER_TOKEN_CACHE";
/// Environment variable naming the cache directory (turns the cache on).
pub const DIR_ENV: &str = "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR";
/// Environment variable naming the node's shared identity (fleet mode; turns the cache on).
pub const SHARED_IDENTITY_ENV: &str = "CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY";
/// Environment variable (`true`): a provider prints the request's cache key as one JSON line
/// (`{"kind":"TokenCacheKey","file":…,"key":…}`) instead of answering, with no network call and
/// no cache read. For the token controller and `credential-provider-check doctor`, never for a
/// kubelet's config (the kubelet would refuse that answer).
pub const PRINT_KEY_ENV: &str = "CREDENTIAL_PROVIDER_PRINT_CACHE_KEY";
/// The part of a key's canonical text that names its shared identity.
const SHARED_PART: &str = "shared-identity";
/// An entry is served only while at least this much of its life is left.
pub const DEFAULT_MARGIN: Duration = Duration::from_secs(5 * 60);
/// Entries are a few hundred bytes; anything much larger was not written by us.
const MAX_ENTRY_BYTES: u64 = 64 * 1024;
/// Layout version of an entry; a different one is ignored and replaced.
const ENTRY_VERSION: u32 = 1;
/// How often a waiting exec tries the lock again.
const LOCK_POLL: Duration = Duration::from_millis(5);
/// An entry written more than this far in the future means the clock went back: not trusted.
const FUTURE_TOLERANCE: Duration = Duration::from_secs(5 * 60);
/// At most this many entries are kept; past it, those that expire first are removed.
pub const MAX_ENTRIES: usize = 1000;
/// At most this many bytes of entries are kept; past it, those that expire first are removed.
pub const MAX_TOTAL_BYTES: u64 = 4 * 1024 * 1024;
/// Pruning looks at no more directory entries than this, so a directory filled by someone else
/// cannot make a write slow.
const MAX_SCANNED: usize = 10 * MAX_ENTRIES;
/// A temporary file older than this was left by a writer that died before its rename.
const STALE_TEMPORARY: Duration = Duration::from_secs(10 * 60);

/// A registry credential with its expiry and when it was obtained, as a provider fetches it and
/// the cache stores it. Both times are on this node's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryToken {
    /// Registry user name.
    pub username: String,
    /// Registry password or token.
    pub password: Secret,
    /// When the registry stops accepting it; `None` (unknown) is never cached.
    pub expires_at: Option<SystemTime>,
    /// When this run obtained it: when the registry's answer arrived (the cache stores that as
    /// the entry's `fetchedAt`), or when the cache entry was read. A `cacheDuration` is counted
    /// from it, so an answer reads the same however long the rest of the run takes.
    pub obtained_at: SystemTime,
}

impl RegistryToken {
    /// A token whose answer arrived just now, its expiry (when known) on this node's clock.
    pub fn obtained_now(
        username: impl Into<String>,
        password: Secret,
        expires_at: Option<SystemTime>,
    ) -> Self {
        RegistryToken {
            username: username.into(),
            password,
            expires_at,
            obtained_at: SystemTime::now(),
        }
    }

    /// Moves an expiry written by the issuer's clock onto this node's, given what the issuer's
    /// clock said when it answered (its `Date` header, `issuer_now`).
    ///
    /// The life left is counted from the later of the two clocks at [`Self::obtained_at`]: when
    /// the node's clock lags the issuer's, `expiry - node now` overstates it and the kubelet would
    /// cache a dead credential. Taking the later clock can only shorten the life, so whichever
    /// clock is right, the cache entry and the kubelet's both end before the credential does. An
    /// issuer clock behind the node's, or unknown, changes nothing; an expiry already past by the
    /// later clock leaves no life at all.
    pub fn with_issuer_clock(mut self, issuer_now: Option<SystemTime>) -> Self {
        let Some(expires_at) = self.expires_at else {
            return self;
        };
        let counted_from = issuer_now.map_or(self.obtained_at, |i| i.max(self.obtained_at));
        let left = expires_at
            .duration_since(counted_from)
            .unwrap_or(Duration::ZERO);
        // Cannot overflow: `left` is at most `expires_at - obtained_at`.
        self.expires_at = self.obtained_at.checked_add(left);
        self
    }
}

/// The on-disk cache: a directory, the margin an entry must have left to be served, how far
/// before that entries refresh at random, and the shared identity the node belongs to (fleet mode).
#[derive(Debug, Clone)]
pub struct TokenCache {
    dir: PathBuf,
    margin: Duration,
    jitter_percent: u8,
    owner: files::Owner,
    shared: Option<SharedIdentity>,
}

impl TokenCache {
    /// A cache in `dir`, owned by the running user. Nothing is touched until first use.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let owner = files::current_owner();
        TokenCache {
            dir: dir.into(),
            margin: DEFAULT_MARGIN,
            jitter_percent: 0,
            owner,
            shared: None,
        }
    }

    /// Fleet mode: keys for the node's own identity use `shared` instead (see
    /// [`CacheKey::shared_as`]), so the entries the token controller publishes, copied here by
    /// `credential-provider-check wait`, answer this node's requests. Keys of a pod's identity
    /// are unchanged.
    pub fn with_shared_identity(mut self, shared: Option<SharedIdentity>) -> Self {
        self.shared = shared;
        self
    }

    /// The shared identity this node belongs to, when in fleet mode.
    pub fn shared_identity(&self) -> Option<&SharedIdentity> {
        self.shared.as_ref()
    }

    /// The key this cache stores `key` under: the shared one in fleet mode, else `key`.
    fn effective<'k>(&self, key: &'k CacheKey) -> std::borrow::Cow<'k, CacheKey> {
        match self.shared.as_ref().and_then(|s| key.shared_as(s)) {
            Some(shared) => std::borrow::Cow::Owned(shared),
            None => std::borrow::Cow::Borrowed(key),
        }
    }

    /// Refreshes each entry a random 0..`percent` % of its lifetime before the margin (the
    /// fleet jitter, `--cache-jitter`).
    pub fn with_refresh_jitter(mut self, percent: u8) -> Self {
        self.jitter_percent = percent.min(100);
        self
    }

    /// Serves entries only while at least `margin` of their life is left.
    pub fn with_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// Where the entries live (shown in the start-up log line and by the checker's `wait`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry for `key`, when one is valid now.
    pub fn get(&self, key: &CacheKey) -> Option<RegistryToken> {
        let (token, source) = self.read(&self.effective(key), SystemTime::now())?;
        note_token(source, token.expires_at);
        Some(token)
    }

    /// The credential for `key`: from the cache while valid, else from `fetch`, whose answer is
    /// stored for the next exec. Concurrent execs for one key make one `fetch`: the others wait
    /// on the key's lock (at most half of what is left of `deadline`, then fetch themselves).
    pub async fn get_or_fetch<E>(
        &self,
        key: &CacheKey,
        deadline: Deadline,
        fetch: impl AsyncFnOnce() -> Result<RegistryToken, E>,
    ) -> Result<(RegistryToken, Source), E> {
        let key = &*self.effective(key);
        if let Some((hit, source)) = self.read(key, SystemTime::now()) {
            note_token(source, hit.expires_at);
            return Ok((hit, source));
        }
        let lock = match self.prepare_dir() {
            Ok(()) => self.lock(key, deadline).await,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "token cache unusable, fetching without it: {e}");
                None
            }
        };
        if lock.is_some()
            && let Some((hit, source)) = self.read(key, SystemTime::now())
        {
            note_token(source, hit.expires_at);
            tracing::debug!("token cache: filled by a concurrent exec");
            return Ok((hit, source));
        }
        let token = fetch().await?;
        if lock.is_some() {
            self.store(key, &token);
            self.prune(key, SystemTime::now());
        }
        drop(lock);
        note_token(Source::Upstream, token.expires_at);
        Ok((token, Source::Upstream))
    }

    /// Reads and checks the entry for `key` as seen at `now`, and says whose it is.
    fn read(&self, key: &CacheKey, now: SystemTime) -> Option<(RegistryToken, Source)> {
        let path = self.entry_path(key);
        let bytes = match files::read_owned_file(&path, &self.owner, MAX_ENTRY_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                tracing::debug!(path = %path.display(), "token cache: no entry");
                return None;
            }
            Err(reason) => {
                tracing::warn!(path = %path.display(), "token cache: ignoring the entry ({reason}); it will be replaced");
                return None;
            }
        };
        let entry: Entry = match serde_json::from_slice(&bytes) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(path = %path.display(), "token cache: ignoring a malformed entry ({e}); it will be replaced");
                return None;
            }
        };
        let source = match entry.fleet {
            Some(_) => Source::FleetCopy,
            None => Source::Cache,
        };
        match entry.check(key, now, self.margin) {
            Ok(token) => {
                tracing::info!(path = %path.display(), copied_from_the_fleet = source == Source::FleetCopy, "token cache hit");
                Some((token, source))
            }
            Err(reason) => {
                tracing::info!(path = %path.display(), "token cache: not serving the entry: {reason}");
                None
            }
        }
    }

    /// Writes the entry for `key` atomically; failures are logged, never fatal.
    fn store(&self, key: &CacheKey, token: &RegistryToken) {
        let Some(expires_at) = token.expires_at else {
            tracing::info!("token cache: not storing a token of unknown lifetime");
            return;
        };
        let fetched_at = unix_secs(token.obtained_at);
        let expires_at = unix_secs(expires_at);
        let entry = Entry {
            version: ENTRY_VERSION,
            key: key.canonical(),
            username: token.username.clone(),
            password: token.password.clone(),
            expires_at,
            fetched_at,
            refresh_at: self.refresh_point(fetched_at, expires_at),
            fleet: None,
        };
        let path = self.entry_path(key);
        match serde_json::to_vec(&entry)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                files::write_atomic(&path, &bytes, &self.owner).map_err(|e| e.to_string())
            }) {
            Ok(()) => tracing::info!(path = %path.display(), "token cache: entry written"),
            Err(e) => {
                tracing::warn!(path = %path.display(), "token cache: writing the entry failed: {e}")
            }
        }
    }

    /// When an entry fetched at `fetched_at` and expiring at `expires_at` (Unix seconds) is
    /// refetched: the margin before its expiry, less a random 0..jitter % of its life.
    fn refresh_point(&self, fetched_at: i64, expires_at: i64) -> i64 {
        let lifetime = expires_at.saturating_sub(fetched_at).max(0);
        let early =
            (lifetime as f64 * f64::from(self.jitter_percent) / 100.0 * fastrand::f64()) as i64;
        expires_at
            .saturating_sub(secs(self.margin))
            .saturating_sub(early)
    }

    /// Creates the directory (closed to other users), and refuses one that is not ours.
    fn prepare_dir(&self) -> Result<(), String> {
        files::prepare_dir(&self.dir, &self.owner)
    }

    /// Takes the key's advisory lock, waiting at most half of what is left of `deadline`.
    async fn lock(&self, key: &CacheKey, deadline: Deadline) -> Option<File> {
        let path = self.lock_path(key);
        let file = match files::open_lock(&path, &self.owner, true) {
            Ok(Some(file)) => file,
            Ok(None) => return None,
            Err(reason) => {
                tracing::warn!(path = %path.display(), "token cache: not using the lock file ({reason}); fetching without the cache");
                return None;
            }
        };
        let give_up = std::time::Instant::now() + deadline.remaining() / 2;
        let mut waited = false;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    if waited {
                        tracing::debug!("token cache: lock acquired after waiting");
                    }
                    return Some(file);
                }
                Err(fs::TryLockError::WouldBlock) => {
                    if !waited {
                        tracing::debug!(path = %path.display(), "token cache: another exec is fetching this token; waiting");
                        waited = true;
                    }
                    if std::time::Instant::now() >= give_up {
                        tracing::warn!(path = %path.display(), "token cache: the lock is still held; fetching without waiting longer");
                        return None;
                    }
                    tokio::time::sleep(LOCK_POLL).await;
                }
                Err(fs::TryLockError::Error(e)) => {
                    tracing::warn!(path = %path.display(), "token cache: locking failed, fetching without the lock: {e}");
                    return None;
                }
            }
        }
    }

    fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.stem_path(&key.file_stem(), "json")
    }

    fn lock_path(&self, key: &CacheKey) -> PathBuf {
        self.stem_path(&key.file_stem(), "lock")
    }

    /// `<dir>/<stem>.<ext>`: a key's entry (`json`) or lock (`lock`).
    fn stem_path(&self, stem: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{stem}.{ext}"))
    }

    /// Removes what the cache itself left behind and no longer needs, then holds this node's own
    /// entries under [`MAX_ENTRIES`] and [`MAX_TOTAL_BYTES`] by dropping those that expire first
    /// (copies of the fleet's entries are capped by `wait` instead, and only removed here once
    /// expired). Called
    /// after each write, so the directory cannot grow without bound (service-account mode writes
    /// one entry per identity).
    ///
    /// Only names the cache writes are touched (`<32 hex>.json`, `<32 hex>.lock` and its
    /// temporary files), and only regular files owned by the running user: whatever else is in
    /// the directory is someone else's. Another key's entry is removed only while its lock can be
    /// taken without waiting, so an entry being written is never removed under its writer.
    fn prune(&self, keep: &CacheKey, now: SystemTime) {
        let keep = keep.file_stem();
        let listing = match fs::read_dir(&self.dir) {
            Ok(listing) => listing,
            Err(e) => {
                tracing::debug!(dir = %self.dir.display(), "token cache: not pruning: {e}");
                return;
            }
        };
        let now_s = unix_secs(now);
        // (expiry, size, stem) of the entries that stay unless a cap says otherwise.
        let mut live: Vec<(i64, u64, String)> = Vec::new();
        let mut removed = 0usize;
        for name in listing
            .filter_map(Result::ok)
            .take(MAX_SCANNED)
            .filter_map(|e| e.file_name().into_string().ok())
        {
            let Some((stem, kind)) = cache_file_name(&name) else {
                continue;
            };
            let path = self.dir.join(&name);
            match kind {
                CacheFile::Temporary => {
                    // A writer renames its file within moments; one left for minutes was orphaned.
                    let stale = files::own_file_modified(&path, &self.owner)
                        .and_then(|t| now.duration_since(t).ok())
                        .is_some_and(|age| age > STALE_TEMPORARY);
                    if stale && fs::remove_file(&path).is_ok() {
                        removed += 1;
                    }
                }
                CacheFile::Lock => {
                    // A lock whose entry is gone is taken and removed with nothing to protect.
                    if stem != keep
                        && !self.stem_path(stem, "json").exists()
                        && self.remove_locked(stem, None)
                    {
                        removed += 1;
                    }
                }
                CacheFile::Entry if stem == keep => {}
                CacheFile::Entry => {
                    let bytes = match files::read_owned_file(&path, &self.owner, MAX_ENTRY_BYTES) {
                        Ok(Some(bytes)) => bytes,
                        // Gone, or not a file of ours: not ours to remove.
                        Ok(None) | Err(_) => continue,
                    };
                    let entry = serde_json::from_slice::<Entry>(&bytes)
                        .ok()
                        .filter(|e| e.version == ENTRY_VERSION);
                    match entry.map(|e| (e.expires_at, e.fleet.is_some())) {
                        // A live copy of the fleet's: `wait` keeps those under their own caps,
                        // so they never push out an entry of this node's.
                        Some((at, true)) if at > now_s => {}
                        Some((at, false)) if at > now_s => {
                            let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                            live.push((at, size, stem.to_owned()));
                        }
                        // Expired, or ours but unreadable as an entry: replaced on next use anyway.
                        _ => {
                            if self.remove_locked(stem, Some(&path)) {
                                removed += 1;
                            }
                        }
                    }
                }
            }
        }
        // Over a cap: the entries that expire first go first (the one just written stays).
        live.sort();
        let mut count = live.len() + 1;
        let mut bytes: u64 = live.iter().map(|(_, size, _)| size).sum();
        for (_, size, stem) in &live {
            if count <= MAX_ENTRIES && bytes <= MAX_TOTAL_BYTES {
                break;
            }
            if self.remove_locked(stem, Some(&self.stem_path(stem, "json"))) {
                removed += 1;
                count -= 1;
                bytes = bytes.saturating_sub(*size);
            }
        }
        if removed > 0 {
            tracing::debug!(dir = %self.dir.display(), removed, "token cache: pruned");
        }
    }

    /// Removes `entry` (when given) and the lock of `stem`, holding that lock meanwhile; `false`
    /// when its lock is held by a running exec, or is not a file of ours.
    fn remove_locked(&self, stem: &str, entry: Option<&Path>) -> bool {
        let lock_path = self.stem_path(stem, "lock");
        let lock = match files::open_lock(&lock_path, &self.owner, false) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => None,
            Err(_) => return false,
        };
        if let Some(lock) = &lock
            && lock.try_lock().is_err()
        {
            return false;
        }
        let removed_entry = entry.is_none_or(|path| fs::remove_file(path).is_ok());
        if lock.is_some() {
            // An exec that opened this lock before the unlink and waits on it fetches once more
            // than needed when it gets it: harmless, and only for a key that had expired.
            let _ = fs::remove_file(&lock_path);
        }
        removed_entry
    }
}

/// Which of the cache's own files a directory entry is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheFile {
    /// `<stem>.json`
    Entry,
    /// `<stem>.lock`
    Lock,
    /// `.<stem>.json.<pid>.<random>.tmp`, from [`files::write_atomic`]
    Temporary,
}

/// The key stem and kind of a file the cache writes; `None` for any other name.
fn cache_file_name(name: &str) -> Option<(&str, CacheFile)> {
    let is_stem =
        |s: &str| s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if let Some(rest) = name.strip_prefix('.') {
        let (stem, tail) = rest.split_once(".json.")?;
        let (pid, random) = tail.strip_suffix(".tmp")?.split_once('.')?;
        let digits = |s: &str, max: usize| {
            !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_hexdigit())
        };
        return (is_stem(stem) && digits(pid, 10) && digits(random, 8))
            .then_some((stem, CacheFile::Temporary));
    }
    let (stem, ext) = name.split_once('.')?;
    let kind = match ext {
        "json" => CacheFile::Entry,
        "lock" => CacheFile::Lock,
        _ => return None,
    };
    is_stem(stem).then_some((stem, kind))
}

/// Fetches through `cache` when there is one, else straight from `fetch`.
pub async fn get_or_fetch<E>(
    cache: Option<&TokenCache>,
    key: Option<&CacheKey>,
    deadline: Deadline,
    fetch: impl AsyncFnOnce() -> Result<RegistryToken, E>,
) -> Result<(RegistryToken, Source), E> {
    match (cache, key) {
        (Some(cache), Some(key)) => cache.get_or_fetch(key, deadline, fetch).await,
        _ => {
            let token = fetch().await?;
            note_token(Source::Upstream, token.expires_at);
            Ok((token, Source::Upstream))
        }
    }
}

/// An entry as stored on disk.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Entry {
    version: u32,
    key: String,
    username: String,
    password: Secret,
    /// Unix seconds.
    expires_at: i64,
    /// Unix seconds.
    fetched_at: i64,
    /// Unix seconds: from then on the entry is refetched (before the margin, by its jitter).
    refresh_at: i64,
    /// Set on a copy of an entry the fleet's token controller published (see `fleet`); absent
    /// on every entry a provider writes, and so on every published one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fleet: Option<fleet::FleetCopy>,
}

impl Entry {
    /// What every entry must be, wherever it comes from (this node's cache, the fleet's Secret,
    /// a provider run of the token controller): the current layout, times in order, a key of a
    /// known [`Issuer`] and no longer a life than that issuer ever grants. Returns the issuer.
    /// The reasons quote nothing from the entry.
    fn check_shape(&self) -> Result<Issuer, String> {
        if self.version != ENTRY_VERSION {
            return Err(format!(
                "layout version {} is not {ENTRY_VERSION}",
                self.version
            ));
        }
        // (A refresh point past the expiry is harmless: the margin still applies, and a copy
        // gets a refresh point of the node's own.)
        if self.fetched_at > self.expires_at {
            return Err("its times are out of order".into());
        }
        let issuer = Issuer::of_key(&self.key).ok_or("its key names no provider of ours")?;
        issuer.refuse_life(self.expires_at.saturating_sub(self.fetched_at))?;
        Ok(issuer)
    }

    /// The token when this entry belongs to `key` and has at least `margin` left at `now`.
    fn check(
        self,
        key: &CacheKey,
        now: SystemTime,
        margin: Duration,
    ) -> Result<RegistryToken, String> {
        self.check_shape()?;
        if self.key != key.canonical() {
            return Err("it was written for another key".into());
        }
        let now_s = unix_secs(now);
        if self.fetched_at > now_s.saturating_add(secs(FUTURE_TOLERANCE)) {
            return Err("it was written in the future (the clock went back)".into());
        }
        let left = self.expires_at.saturating_sub(now_s);
        if now_s >= self.refresh_at && left >= secs(margin) {
            return Err(format!(
                "past its refresh point ({left}s of life left; refreshing early spreads a fleet's refreshes)"
            ));
        }
        if left < secs(margin) {
            return Err(format!(
                "{left}s of life left, less than the {}s margin",
                margin.as_secs()
            ));
        }
        let expires_at = from_unix_secs(self.expires_at).ok_or("its expiry is out of range")?;
        // Obtained by this run now: its `cacheDuration` counts from the moment it was checked.
        Ok(RegistryToken {
            username: self.username,
            password: self.password,
            expires_at: Some(expires_at),
            obtained_at: now,
        })
    }
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[cfg(unix)]
mod tests;
