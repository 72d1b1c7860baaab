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
//! - an entry must also be small, well-formed, written for exactly this key, and have at least
//!   the safety margin of life left. Anything else is ignored and replaced by the next fetch;
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
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::deadline::Deadline;
use crate::jwt::ServiceAccountClaims;
use crate::time::{from_unix_secs, unix_secs};
use kcp_kubelet::secret::Secret;

/// The file operations whose safety depends on the platform: no link following, no blocking
/// open, ownership and permission checks on the open file. The metrics file uses them too.
#[cfg_attr(unix, path = "token_cache/unix.rs")]
#[cfg_attr(windows, path = "token_cache/windows.rs")]
pub(crate) mod files;

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

/// What a cache entry is for: a provider, the scope of its tokens and a fingerprint of the
/// identity that obtained them. Build one with [`CacheKey::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    canonical: String,
    /// Length-prefixed identity parts; only their hash leaves this type.
    identity: Vec<u8>,
}

impl CacheKey {
    /// A key for `provider` (e.g. `ecr`). Add scope and identity parts, then use it.
    pub fn new(provider: &str) -> Self {
        CacheKey {
            canonical: format!("provider={}", escape(provider)),
            identity: lp(provider),
        }
    }

    /// Adds a scope part (region, login server, audience…), kept readable in the entry.
    pub fn scope(mut self, name: &str, value: &str) -> Self {
        self.canonical
            .push_str(&format!(";{}={}", escape(name), escape(value)));
        self
    }

    /// Adds an identity part; only its hash is kept. Never pass a secret: a hash of a
    /// low-entropy secret can be guessed.
    pub fn identity(mut self, name: &str, value: &str) -> Self {
        self.identity.extend(lp(name));
        self.identity.extend(lp(value));
        self
    }

    /// Adds each environment variable in `names` (set or not) to the identity.
    pub fn identity_env(self, names: &[&str]) -> Self {
        names.iter().fold(self, |key, name| {
            let value = std::env::var(name).ok();
            key.identity(name, value.as_deref().unwrap_or("\u{0}unset"))
        })
    }

    /// Adds the service account a pod's token was minted for (namespace, name, UID and the
    /// token's audiences, from its claims) to the identity: pods of one service account share an
    /// entry, other accounts never do, and the token itself stays out of the key. `None` (do not
    /// cache) for a token without those claims.
    pub fn service_account(self, token: &Secret) -> Option<Self> {
        match ServiceAccountClaims::from_token(token.expose()) {
            Some(claims) => Some(self.with_claims(&claims)),
            None => {
                tracing::info!(
                    "token cache not used: the service-account token carries no namespace/name/uid claims"
                );
                None
            }
        }
    }

    /// [`Self::service_account`] with the claims already read.
    fn with_claims(self, claims: &ServiceAccountClaims) -> Self {
        let key = self
            .identity("sa.namespace", &claims.namespace)
            .identity("sa.name", &claims.name)
            .identity("sa.uid", &claims.uid);
        claims
            .audiences
            .iter()
            .fold(key, |key, aud| key.identity("sa.aud", aud))
    }

    /// The text stored in the entry and compared on read: scope in clear, identity hashed.
    pub fn canonical(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, &self.identity);
        format!(
            "{};identity=sha256:{}",
            self.canonical,
            kcp_kubelet::hex::encode(digest.as_ref())
        )
    }

    /// The entry's file name stem: a hash of the canonical text.
    fn file_stem(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, self.canonical().as_bytes());
        kcp_kubelet::hex::encode(&digest.as_ref()[..16])
    }
}

/// How a run's credential was obtained, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Read from the cache.
    Cache,
    /// Fetched from upstream (and written to the cache when it is on).
    Upstream,
}

/// The on-disk cache: a directory, the margin an entry must have left to be served, and how far
/// before that entries refresh at random.
#[derive(Debug, Clone)]
pub struct TokenCache {
    dir: PathBuf,
    margin: Duration,
    jitter_percent: u8,
    owner: files::Owner,
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

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry for `key`, when one is valid now.
    pub fn get(&self, key: &CacheKey) -> Option<RegistryToken> {
        let hit = self.read(key, SystemTime::now());
        if let Some(token) = &hit {
            crate::metrics::note_token(Source::Cache, token.expires_at);
        }
        hit
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
        if let Some(hit) = self.get(key) {
            return Ok((hit, Source::Cache));
        }
        let lock = match self.prepare_dir() {
            Ok(()) => self.lock(key, deadline).await,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "token cache unusable, fetching without it: {e}");
                None
            }
        };
        if lock.is_some()
            && let Some(hit) = self.get(key)
        {
            tracing::debug!("token cache: filled by a concurrent exec");
            return Ok((hit, Source::Cache));
        }
        let token = fetch().await?;
        if lock.is_some() {
            self.store(key, &token);
            self.prune(key, SystemTime::now());
        }
        drop(lock);
        crate::metrics::note_token(Source::Upstream, token.expires_at);
        Ok((token, Source::Upstream))
    }

    /// Reads and checks the entry for `key` as seen at `now`.
    fn read(&self, key: &CacheKey, now: SystemTime) -> Option<RegistryToken> {
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
        match entry.check(key, now, self.margin) {
            Ok(token) => {
                tracing::info!(path = %path.display(), "token cache hit");
                Some(token)
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
        let lifetime = expires_at.saturating_sub(fetched_at).max(0);
        let early =
            (lifetime as f64 * f64::from(self.jitter_percent) / 100.0 * fastrand::f64()) as i64;
        let entry = Entry {
            version: ENTRY_VERSION,
            key: key.canonical(),
            username: token.username.clone(),
            password: token.password.clone(),
            expires_at,
            fetched_at,
            refresh_at: expires_at
                .saturating_sub(secs(self.margin))
                .saturating_sub(early),
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

    /// Removes what the cache itself left behind and no longer needs, then holds the rest under
    /// [`MAX_ENTRIES`] and [`MAX_TOTAL_BYTES`] by dropping the entries that expire first. Called
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
                    let expires_at = serde_json::from_slice::<Entry>(&bytes)
                        .ok()
                        .filter(|e| e.version == ENTRY_VERSION)
                        .map(|e| e.expires_at);
                    match expires_at {
                        Some(at) if at > now_s => {
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
            crate::metrics::note_token(Source::Upstream, token.expires_at);
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
}

impl Entry {
    /// The token when this entry belongs to `key` and has at least `margin` left at `now`.
    fn check(
        self,
        key: &CacheKey,
        now: SystemTime,
        margin: Duration,
    ) -> Result<RegistryToken, String> {
        if self.version != ENTRY_VERSION {
            return Err(format!(
                "layout version {} is not {ENTRY_VERSION}",
                self.version
            ));
        }
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

/// Reads an open cache file whose checks passed; one larger than `max_bytes`, by its size or
/// by what could be read (it may grow meanwhile), is refused.
fn read_capped(file: File, max_bytes: u64) -> Result<Vec<u8>, String> {
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

/// Length-prefixed bytes, so `("ab","c")` and `("a","bc")` hash differently.
fn lp(text: &str) -> Vec<u8> {
    let mut out = (text.len() as u64).to_be_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out
}

/// Keeps `;` and `=` unambiguous in the canonical text.
fn escape(text: &str) -> String {
    text.replace('%', "%25")
        .replace(';', "%3B")
        .replace('=', "%3D")
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new() -> Self {
            let p = std::env::temp_dir().join(format!(
                "kcp-token-cache-{}-{:016x}",
                std::process::id(),
                fastrand::u64(..)
            ));
            Scratch(p)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn key() -> CacheKey {
        CacheKey::new("ecr")
            .scope("region", "us-east-1")
            .identity("AWS_PROFILE", "nodes")
    }

    fn token(expires_in: Duration) -> RegistryToken {
        RegistryToken::obtained_now(
            "AWS",
            Secret::new("registry-password-1"),
            Some(SystemTime::now() + expires_in),
        )
    }

    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn deadline() -> Deadline {
        Deadline::after(Duration::from_secs(10))
    }

    /// Fetches through `cache`, counting upstream calls.
    fn fetch_counted(
        cache: &TokenCache,
        key: &CacheKey,
        calls: &AtomicUsize,
        life: Duration,
    ) -> (RegistryToken, Source) {
        block(cache.get_or_fetch(key, deadline(), async || {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(token(life))
        }))
        .unwrap()
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn keys_show_scope_and_hide_identity() {
        let k = key();
        let text = k.canonical();
        assert!(
            text.starts_with("provider=ecr;region=us-east-1;identity=sha256:"),
            "{text}"
        );
        assert!(!text.contains("nodes"), "{text}");
        assert_ne!(
            k.file_stem(),
            key().identity("AWS_ROLE_ARN", "x").file_stem()
        );
        assert_ne!(
            k.file_stem(),
            CacheKey::new("ecr")
                .scope("region", "us-west-2")
                .identity("AWS_PROFILE", "nodes")
                .file_stem()
        );
        // Parts are length-prefixed and escaped: no two spellings collide.
        assert_ne!(
            CacheKey::new("p").identity("ab", "c").canonical(),
            CacheKey::new("p").identity("a", "bc").canonical()
        );
        assert_ne!(
            CacheKey::new("p").scope("a", "b;c=d").canonical(),
            CacheKey::new("p")
                .scope("a", "b")
                .scope("c", "d")
                .canonical()
        );
        let sa = ServiceAccountClaims {
            namespace: "ns".into(),
            name: "puller".into(),
            uid: "u1".into(),
            audiences: vec!["sts.amazonaws.com".into()],
        };
        let other_uid = ServiceAccountClaims {
            uid: "u2".into(),
            ..sa.clone()
        };
        assert_ne!(
            key().with_claims(&sa).canonical(),
            key().with_claims(&other_uid).canonical()
        );
        assert_eq!(
            key().with_claims(&sa).canonical(),
            key().with_claims(&sa.clone()).canonical()
        );
    }

    #[test]
    fn a_second_exec_is_served_from_disk() {
        let dir = Scratch::new();
        let cache = TokenCache::new(dir.0.join("nested/cache"));
        let calls = AtomicUsize::new(0);
        let (first, source) = fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600));
        assert_eq!(
            (source, calls.load(Ordering::SeqCst)),
            (Source::Upstream, 1)
        );
        let (second, source) = fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600));
        assert_eq!((source, calls.load(Ordering::SeqCst)), (Source::Cache, 1));
        // Whole seconds survive the round trip.
        let secs = |t: &RegistryToken| unix_secs(t.expires_at.unwrap());
        assert_eq!(
            (
                second.username.as_str(),
                second.password.expose(),
                secs(&second)
            ),
            ("AWS", "registry-password-1", secs(&first))
        );
        assert_eq!(mode(cache.dir()), 0o700);
        assert_eq!(mode(&cache.entry_path(&key())), 0o600);
        let on_disk = fs::read_to_string(cache.entry_path(&key())).unwrap();
        assert!(
            on_disk.contains(&key().canonical()) && !on_disk.contains("nodes"),
            "{on_disk}"
        );
        // Another identity is another entry.
        let other = key().identity("AWS_ROLE_ARN", "arn:aws:iam::1:role/x");
        assert_eq!(
            fetch_counted(&cache, &other, &calls, Duration::from_secs(3600)).1,
            Source::Upstream
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn entries_inside_the_margin_are_refetched() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let calls = AtomicUsize::new(0);
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(4 * 60));
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Upstream
        );
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Cache
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let tight = TokenCache::new(&dir.0).with_margin(Duration::from_secs(2 * 3600));
        assert_eq!(
            fetch_counted(&tight, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Upstream
        );
    }

    #[test]
    fn refresh_points_are_spread_by_the_jitter() {
        let dir = Scratch::new();
        let calls = AtomicUsize::new(0);
        let life = Duration::from_secs(12 * 3600);
        let points: Vec<i64> = (0..20)
            .map(|i| {
                let cache = TokenCache::new(dir.0.join(i.to_string())).with_refresh_jitter(10);
                fetch_counted(&cache, &key(), &calls, life);
                let entry: serde_json::Value =
                    serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
                let (exp, fetched) = (
                    entry["expiresAt"].as_i64().unwrap(),
                    entry["fetchedAt"].as_i64().unwrap(),
                );
                let early = exp - 300 - entry["refreshAt"].as_i64().unwrap();
                assert!((0..=(exp - fetched) / 10).contains(&early), "{entry}");
                early
            })
            .collect();
        let distinct: std::collections::BTreeSet<_> = points.iter().collect();
        assert!(distinct.len() > 10, "{points:?}");

        // Past its refresh point, an entry with life left is fetched again.
        let cache = TokenCache::new(&dir.0);
        fetch_counted(&cache, &key(), &calls, life);
        let path = cache.entry_path(&key());
        let mut entry: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        entry["refreshAt"] = serde_json::json!(unix_secs(SystemTime::now()) - 1);
        fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
        let before = calls.load(Ordering::SeqCst);
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, life).1,
            Source::Upstream
        );
        assert_eq!(calls.load(Ordering::SeqCst), before + 1);
        // Without jitter the refresh point is the margin.
        let entry: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            entry["refreshAt"].as_i64().unwrap(),
            entry["expiresAt"].as_i64().unwrap() - 300
        );
    }

    #[test]
    fn unknown_lifetimes_are_not_stored() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let fetch = async || {
            Ok::<_, String>(RegistryToken {
                expires_at: None,
                ..token(Duration::ZERO)
            })
        };
        assert_eq!(
            block(cache.get_or_fetch(&key(), deadline(), fetch))
                .unwrap()
                .1,
            Source::Upstream
        );
        assert!(!cache.entry_path(&key()).exists());
    }

    #[test]
    fn untrustworthy_entries_are_ignored_and_replaced() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let calls = AtomicUsize::new(0);
        let path = cache.entry_path(&key());
        let good = || {
            let c = AtomicUsize::new(0);
            fetch_counted(
                &TokenCache::new(dir.0.join("donor")),
                &key(),
                &c,
                Duration::from_secs(3600),
            );
            fs::read(TokenCache::new(dir.0.join("donor")).entry_path(&key())).unwrap()
        };
        let valid = good();
        // Private files, so each case is refused for its own reason, not for its mode.
        let private = |bytes: &[u8]| {
            fs::write(&path, bytes).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        };
        // The valid entry with one piece of text replaced.
        let edited = |from: &str, to: &str| {
            String::from_utf8(valid.clone())
                .unwrap()
                .replace(from, to)
                .into_bytes()
        };
        type Plant<'a> = Box<dyn Fn() + 'a>;
        let cases: Vec<(&str, Plant)> = vec![
            ("corrupt", Box::new(|| private(b"{\"version\":1,\"key\":"))),
            ("empty", Box::new(|| private(b""))),
            ("truncated", Box::new(|| private(&valid[..valid.len() / 2]))),
            ("not json", Box::new(|| private(&[0xff, 0x00, 0x13]))),
            (
                "world-readable",
                Box::new(|| {
                    fs::write(&path, &valid).unwrap();
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
                }),
            ),
            (
                "group-writable",
                Box::new(|| {
                    fs::write(&path, &valid).unwrap();
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o620)).unwrap();
                }),
            ),
            (
                "another key",
                Box::new(|| private(&edited("region=us-east-1", "region=us-west-2"))),
            ),
            (
                "another layout version",
                Box::new(|| private(&edited("\"version\":1", "\"version\":9"))),
            ),
            ("oversized", Box::new(|| private(&vec![b' '; 70_000]))),
            (
                "symlink",
                Box::new(|| {
                    let target = dir.0.join("elsewhere.json");
                    fs::write(&target, &valid).unwrap();
                    fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
                    std::os::unix::fs::symlink(&target, &path).unwrap();
                }),
            ),
            ("directory", Box::new(|| fs::create_dir(&path).unwrap())),
            (
                "written in the future",
                Box::new(|| {
                    let mut entry: serde_json::Value = serde_json::from_slice(&valid).unwrap();
                    entry["fetchedAt"] = serde_json::json!(unix_secs(SystemTime::now()) + 86_400);
                    private(&serde_json::to_vec(&entry).unwrap());
                }),
            ),
        ];
        // The donor entry itself is served when planted as is: the cases above fail for their reason.
        private(&valid);
        assert!(cache.get(&key()).is_some());
        cache.prepare_dir().unwrap();
        for (name, plant) in cases {
            let _ = fs::remove_file(&path);
            let _ = fs::remove_dir(&path);
            plant();
            if name == "directory" {
                // A directory cannot be renamed over: the fetch still answers, nothing is trusted.
                assert_eq!(
                    fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
                    Source::Upstream,
                    "{name}"
                );
                continue;
            }
            assert_eq!(cache.get(&key()), None, "{name} was trusted");
            let before = calls.load(Ordering::SeqCst);
            assert_eq!(
                fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
                Source::Upstream,
                "{name}"
            );
            assert_eq!(calls.load(Ordering::SeqCst), before + 1, "{name}");
            // Replaced by a good entry: a regular 0600 file that is served.
            assert!(fs::symlink_metadata(&path).unwrap().is_file(), "{name}");
            assert_eq!(mode(&path), 0o600, "{name}");
            assert_eq!(
                fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
                Source::Cache,
                "{name}"
            );
        }
    }

    #[test]
    fn foreign_owned_files_and_directories_are_not_trusted() {
        let dir = Scratch::new();
        let calls = AtomicUsize::new(0);
        fetch_counted(
            &TokenCache::new(&dir.0),
            &key(),
            &calls,
            Duration::from_secs(3600),
        );
        // The same files seen by a process of another user: owned by someone else.
        let stranger = TokenCache {
            owner: TokenCache::new(&dir.0).owner.wrapping_add(4242),
            ..TokenCache::new(&dir.0)
        };
        assert_eq!(stranger.get(&key()), None);
        assert!(stranger.prepare_dir().unwrap_err().contains("owned by uid"));
        // It still answers, without the cache and without touching the entry.
        let entry = fs::read(stranger.entry_path(&key())).unwrap();
        assert_eq!(
            fetch_counted(&stranger, &key(), &calls, Duration::from_secs(7200)).1,
            Source::Upstream
        );
        assert_eq!(fs::read(stranger.entry_path(&key())).unwrap(), entry);
    }

    #[test]
    fn an_open_directory_is_closed_to_others() {
        let dir = Scratch::new();
        fs::create_dir_all(&dir.0).unwrap();
        fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
        let calls = AtomicUsize::new(0);
        fetch_counted(
            &TokenCache::new(&dir.0),
            &key(),
            &calls,
            Duration::from_secs(3600),
        );
        assert_eq!(mode(&dir.0), 0o700);
    }

    /// Runs `f` on its own thread and fails the test when it has not returned within 20 s: a
    /// blocking `open()` must fail the test, not hang it.
    fn within_watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{what}: the run blocked"))
    }

    #[test]
    fn nothing_at_the_lock_path_can_block_or_be_followed() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        cache.prepare_dir().unwrap();
        let lock = cache.lock_path(&key());
        let outside = dir.0.join("outside");
        type Plant<'a> = Box<dyn Fn() + 'a>;
        let cases: Vec<(&str, Plant)> = vec![
            (
                "fifo",
                Box::new(|| {
                    let c = std::ffi::CString::new(lock.as_os_str().as_encoded_bytes()).unwrap();
                    // SAFETY: a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                }),
            ),
            (
                "symlink",
                Box::new(|| {
                    fs::write(&outside, b"").unwrap();
                    fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
                    std::os::unix::fs::symlink(&outside, &lock).unwrap();
                }),
            ),
            ("directory", Box::new(|| fs::create_dir(&lock).unwrap())),
            (
                "group-writable",
                Box::new(|| {
                    fs::write(&lock, b"").unwrap();
                    fs::set_permissions(&lock, fs::Permissions::from_mode(0o620)).unwrap();
                }),
            ),
        ];
        for (name, plant) in cases {
            let _ = fs::remove_file(&lock);
            let _ = fs::remove_dir(&lock);
            let _ = fs::remove_file(cache.entry_path(&key()));
            plant();
            let run = cache.clone();
            let (_, source) = within_watchdog(name, move || {
                let calls = AtomicUsize::new(0);
                let got = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600));
                assert_eq!(calls.load(Ordering::SeqCst), 1);
                got
            });
            assert_eq!(source, Source::Upstream, "{name}");
            // Without its lock the run wrote nothing and left the planted file alone.
            assert!(!cache.entry_path(&key()).exists(), "{name}");
            let planted = fs::symlink_metadata(&lock).unwrap();
            match name {
                "fifo" => assert!(planted.file_type().is_fifo(), "{name}"),
                "symlink" => assert!(planted.file_type().is_symlink(), "{name}"),
                "directory" => assert!(planted.is_dir(), "{name}"),
                _ => assert_eq!(planted.mode() & 0o777, 0o620, "{name}"),
            }
        }
        assert_eq!(fs::read(&outside).unwrap(), b"");
    }

    #[test]
    fn a_fifo_in_place_of_an_entry_never_blocks_and_is_replaced() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        cache.prepare_dir().unwrap();
        let entry = cache.entry_path(&key());
        let c = std::ffi::CString::new(entry.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(fs::symlink_metadata(&entry).unwrap().file_type().is_fifo());
        let run = cache.clone();
        let sources = within_watchdog("fifo entry", move || {
            let calls = AtomicUsize::new(0);
            let first = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600)).1;
            let second = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600)).1;
            (first, second, calls.load(Ordering::SeqCst))
        });
        assert_eq!(sources, (Source::Upstream, Source::Cache, 1));
        assert!(fs::symlink_metadata(&entry).unwrap().is_file());
    }

    /// Writes an entry for `stem` expiring at `expires_at`, padded to about `size` bytes.
    fn plant_entry(dir: &Path, stem: &str, expires_at: i64, size: usize) {
        let entry = Entry {
            version: ENTRY_VERSION,
            key: "provider=test".into(),
            username: "u".repeat(size.saturating_sub(200).max(1)),
            password: Secret::new("p"),
            expires_at,
            fetched_at: expires_at - 3600,
            refresh_at: expires_at - 300,
        };
        let path = dir.join(format!("{stem}.json"));
        fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn stem(n: usize) -> String {
        format!("{n:032x}")
    }

    fn names(dir: &Path, suffix: &str) -> std::collections::BTreeSet<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(suffix))
            .collect()
    }

    #[test]
    fn writes_prune_expired_entries_and_hold_the_entry_cap() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        cache.prepare_dir().unwrap();
        let now = unix_secs(SystemTime::now());
        // 2,500 expired entries with their locks, 1,200 live ones expiring one second apart.
        for n in 0..2500 {
            plant_entry(&dir.0, &stem(n), now - 10 - n as i64, 300);
            fs::write(dir.0.join(format!("{}.lock", stem(n))), b"").unwrap();
            fs::set_permissions(
                dir.0.join(format!("{}.lock", stem(n))),
                fs::Permissions::from_mode(0o600),
            )
            .unwrap();
        }
        for n in 10_000..11_200 {
            plant_entry(&dir.0, &stem(n), now + 3600 + n as i64, 300);
        }
        // An expired entry whose lock a running exec holds is left to that exec.
        let held = stem(7);
        let guard = File::open(dir.0.join(format!("{held}.lock"))).unwrap();
        guard.lock().unwrap();
        // Not the cache's: other names, an entry name that is a symlink or open to others.
        fs::write(dir.0.join("README"), b"mine").unwrap();
        std::os::unix::fs::symlink(
            "/etc/hostname",
            dir.0.join(format!("{}.json", stem(1 << 40))),
        )
        .unwrap();
        plant_entry(&dir.0, &stem(1 << 41), now - 100, 300);
        fs::set_permissions(
            dir.0.join(format!("{}.json", stem(1 << 41))),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        // Temporary files: one orphaned long ago, one being written right now.
        let old_tmp = dir.0.join(format!(".{}.json.42.0000abcd.tmp", stem(3)));
        let new_tmp = dir.0.join(format!(".{}.json.43.0000abce.tmp", stem(4)));
        fs::write(&old_tmp, b"").unwrap();
        fs::write(&new_tmp, b"").unwrap();
        File::options()
            .write(true)
            .open(&old_tmp)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();

        let calls = AtomicUsize::new(0);
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(600));

        let entries = names(&dir.0, ".json");
        let own = format!("{}.json", key().file_stem());
        assert!(entries.contains(&own), "the entry just written stays");
        assert!(
            entries.contains(&format!("{held}.json")),
            "a locked entry stays"
        );
        assert!(entries.contains(&format!("{}.json", stem(1 << 40))));
        assert!(entries.contains(&format!("{}.json", stem(1 << 41))));
        let expired: Vec<_> = (0..2500)
            .filter(|n| *n != 7 && entries.contains(&format!("{}.json", stem(*n))))
            .collect();
        assert_eq!(expired, Vec::<usize>::new(), "expired entries are pruned");
        // 1,000 of ours in all: the new one and the 999 live ones that expire last.
        let live: Vec<usize> = (10_000..11_200)
            .filter(|n| entries.contains(&format!("{}.json", stem(*n))))
            .collect();
        assert_eq!(live, (10_201..11_200).collect::<Vec<_>>());
        // Locks go with their entries; the held one stays.
        let locks = names(&dir.0, ".lock");
        assert!(locks.contains(&format!("{held}.lock")));
        assert!(locks.contains(&format!("{}.lock", key().file_stem())));
        assert_eq!(
            locks.len(),
            2,
            "{:?}",
            locks.iter().take(5).collect::<Vec<_>>()
        );
        assert!(!old_tmp.exists());
        assert!(new_tmp.exists());
        assert_eq!(fs::read(dir.0.join("README")).unwrap(), b"mine");
        drop(guard);
        // The cache still serves.
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(600)).1,
            Source::Cache
        );
    }

    #[test]
    fn writes_hold_the_byte_cap() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        cache.prepare_dir().unwrap();
        let now = unix_secs(SystemTime::now());
        // 100 live entries of 60 KiB: about 6 MiB, over the 4 MiB cap.
        for n in 0..100 {
            plant_entry(&dir.0, &stem(n), now + 3600 + n as i64, 60 * 1024);
        }
        let calls = AtomicUsize::new(0);
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(600));
        let total: u64 = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(total <= MAX_TOTAL_BYTES, "{total}");
        let kept: Vec<usize> = (0..100)
            .filter(|n| dir.0.join(format!("{}.json", stem(*n))).exists())
            .collect();
        // The ones that expire last stay, as many as fit.
        let first = kept[0];
        assert_eq!(kept, (first..100).collect::<Vec<_>>());
        assert!(kept.len() >= 60, "{}", kept.len());
    }

    #[test]
    fn only_the_cache_file_names_are_recognised() {
        let s = stem(0xabc);
        assert_eq!(
            cache_file_name(&format!("{s}.json")),
            Some((s.as_str(), CacheFile::Entry))
        );
        assert_eq!(
            cache_file_name(&format!("{s}.lock")),
            Some((s.as_str(), CacheFile::Lock))
        );
        assert_eq!(
            cache_file_name(&format!(".{s}.json.1234.0a0b0c0d.tmp")),
            Some((s.as_str(), CacheFile::Temporary))
        );
        for other in [
            "README".to_string(),
            format!("{s}.json.bak"),
            format!("{s}.JSON"),
            format!("{}.json", &s[1..]),
            format!("{}.json", s.to_uppercase()),
            format!("x{s}.json"),
            format!(".{s}.json.tmp"),
            format!(".{s}.json.12.zz.tmp"),
            format!(".{s}.lock.12.ab.tmp"),
            ".json".to_string(),
        ] {
            assert_eq!(cache_file_name(&other), None, "{other}");
        }
    }

    #[test]
    fn concurrent_fetches_for_one_key_make_one_call() {
        let dir = Scratch::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let calls = Arc::clone(&calls);
                let path = dir.0.clone();
                std::thread::spawn(move || {
                    let cache = TokenCache::new(path);
                    block(cache.get_or_fetch(&key(), deadline(), async || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Ok::<_, String>(token(Duration::from_secs(3600)))
                    }))
                    .unwrap()
                    .1
                })
            })
            .collect();
        let sources: Vec<Source> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            sources.iter().filter(|s| **s == Source::Upstream).count(),
            1
        );
    }

    #[test]
    fn a_failed_fetch_stores_nothing_and_releases_the_lock() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let err = block(cache.get_or_fetch(&key(), deadline(), async || {
            Err::<RegistryToken, _>("HTTP 503")
        }))
        .unwrap_err();
        assert_eq!(err, "HTTP 503");
        assert!(!cache.entry_path(&key()).exists());
        let calls = AtomicUsize::new(0);
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Upstream
        );
    }

    #[test]
    fn the_issuer_clock_ahead_shortens_the_life_behind_changes_nothing() {
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let node = at(784_111_777);
        let issued = |expires_at: Option<SystemTime>, issuer_now: Option<SystemTime>| {
            RegistryToken {
                obtained_at: node,
                ..RegistryToken::obtained_now("u", Secret::new("p"), expires_at)
            }
            .with_issuer_clock(issuer_now)
        };
        let exp = Some(at(784_111_777 + 3 * 3600));
        // Two hours ahead: one hour of the three is left, counted from the node's clock.
        let ahead = issued(exp, Some(at(784_111_777 + 7200)));
        assert_eq!(ahead.expires_at, Some(at(784_111_777 + 3600)));
        assert_eq!(ahead.obtained_at, node);
        // Behind or unknown: the node's clock counts.
        assert_eq!(issued(exp, Some(at(784_111_777 - 7200))).expires_at, exp);
        assert_eq!(issued(exp, None).expires_at, exp);
        // Past by the issuer's clock: no life left. Unknown expiry: still unknown.
        let over = issued(exp, Some(at(784_111_777 + 4 * 3600)));
        assert_eq!(over.expires_at, Some(node));
        assert_eq!(issued(None, Some(at(784_111_777 + 7200))).expires_at, None);
        // Past by the node's own clock: no life left either.
        assert_eq!(
            issued(Some(at(784_111_777 - 60)), None).expires_at,
            Some(node)
        );
    }

    #[test]
    fn the_obtained_at_time_is_stored_and_a_hit_counts_from_its_read() {
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let obtained_at = SystemTime::now() - Duration::from_secs(100);
        let fetched = RegistryToken {
            obtained_at,
            ..token(Duration::from_secs(3600))
        };
        let (fresh, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
            Ok::<_, String>(fetched.clone())
        }))
        .unwrap();
        assert_eq!((fresh, source), (fetched, Source::Upstream));
        let entry: serde_json::Value =
            serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
        assert_eq!(entry["fetchedAt"].as_i64(), Some(unix_secs(obtained_at)));
        let before = SystemTime::now();
        let hit = cache.get(&key()).unwrap();
        assert!(
            hit.obtained_at >= before && hit.obtained_at <= SystemTime::now(),
            "a hit is obtained when it is read"
        );
    }

    /// A registry whose `Date` is two hours ahead of the node, a token of three hours by its
    /// clock: the fresh answer, the entry and the answer from the entry all count three hours
    /// (the node's clock would say five), as when ACR counted from the later clock itself.
    #[test]
    fn a_token_from_an_issuer_clock_ahead_is_cached_and_answered_as_before() {
        use kcp_kubelet::cache_hint::CachePolicy;
        let dir = Scratch::new();
        let cache = TokenCache::new(&dir.0);
        let policy = CachePolicy::RemainingMinus(Duration::from_secs(300));
        let issuer_now = SystemTime::now() + Duration::from_secs(7200);
        let exp = issuer_now + Duration::from_secs(3 * 3600);
        let (fresh, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
            Ok::<_, String>(
                RegistryToken::obtained_now("u", Secret::new("refresh"), Some(exp))
                    .with_issuer_clock(Some(issuer_now)),
            )
        }))
        .unwrap();
        assert_eq!(source, Source::Upstream);
        // What ACR computed before the token carried the time: node now + (exp - later clock).
        let node_now = fresh.obtained_at;
        let before = node_now + exp.duration_since(issuer_now.max(node_now)).unwrap();
        assert_eq!(fresh.expires_at, Some(before));
        assert_eq!(
            policy.cache_duration(fresh.expires_at, fresh.obtained_at),
            kcp_kubelet::duration::GoDuration::from_secs(3 * 3600 - 300)
        );
        let entry: serde_json::Value =
            serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
        let (exp_s, fetched_s) = (
            entry["expiresAt"].as_i64().unwrap(),
            entry["fetchedAt"].as_i64().unwrap(),
        );
        assert_eq!(fetched_s, unix_secs(node_now));
        assert!((10_799..=10_800).contains(&(exp_s - fetched_s)), "{entry}");
        let (hit, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
            Err::<RegistryToken, _>("not called")
        }))
        .unwrap();
        assert_eq!(source, Source::Cache);
        assert_eq!(hit.expires_at.map(unix_secs), Some(unix_secs(before)));
        let secs = policy
            .cache_duration(hit.expires_at, hit.obtained_at)
            .as_nanos()
            / 1_000_000_000;
        assert!((10_498..=10_500).contains(&secs), "{secs}");
    }
}
