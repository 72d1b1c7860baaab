//! One target's slot, the scheduling state of one token: the entry file its provider writes, the
//! entry published for it, when to fetch next and the back-off after failures. What changes a
//! slot: a fetch's outcome, a newer valid entry found in the Secret (taken over, so a new leader
//! or a `--once` run never withdraws or overwrites a newer token), and expiry.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kcp_plugin::time::unix_secs;

use crate::config::Target;
use crate::entry::Entry;
use crate::fetch::Fetcher;
use crate::keys::TargetKey;
use crate::saved::Saved;
use crate::schedule::{Backoff, refresh_instant};

/// The longest wait after repeated failed provider runs.
const MAX_FETCH_BACKOFF: Duration = Duration::from_secs(5 * 60);

/// One target and its current entry.
pub struct Slot {
    /// The target's name.
    pub name: String,
    /// Its entry file name: the Secret's key for it.
    pub file: String,
    /// Runs its provider.
    pub fetcher: Arc<Fetcher>,
    /// The entry published for it (kept while a refresh fails, until it expires).
    pub entry: Option<Entry>,
    /// When to fetch next.
    pub due: Instant,
    backoff: Backoff,
    saved: Saved,
    /// The last refusal of the Secret's entry that was logged.
    refused: Option<String>,
}

impl Slot {
    /// The slot of `target`, whose entry is `key.file`, starting from the entry kept in
    /// `work_dir` if there is a valid one.
    pub fn new(
        target: &Target,
        key: TargetKey,
        fetcher: Fetcher,
        work_dir: &Path,
        failure_backoff: Duration,
    ) -> Slot {
        tracing::debug!(
            "target {}: {} provider {}, entry {}",
            target.name,
            target.provider.as_str(),
            target.command.display(),
            key.file
        );
        let saved = Saved::new(work_dir, &target.name);
        let entry = saved.load(&key.file);
        if let Some(e) = &entry {
            tracing::info!(
                "target {}: kept entry {} from before the restart",
                target.name,
                e.file_name()
            );
        }
        Slot {
            name: target.name.clone(),
            file: key.file,
            fetcher: Arc::new(fetcher),
            due: entry.as_ref().map_or_else(Instant::now, refresh_instant),
            entry,
            backoff: Backoff::new(failure_backoff, MAX_FETCH_BACKOFF),
            saved,
            refused: None,
        }
    }

    /// Takes a fetch's outcome; true when it brought a new entry.
    pub fn fetched(&mut self, result: Result<Entry, String>) -> bool {
        let now = unix_secs(SystemTime::now());
        match result {
            Ok(entry) => {
                self.backoff.reset();
                self.due = refresh_instant(&entry);
                tracing::info!(
                    "target {}: fetched entry {} (expires in {}s, next refresh in {}s)",
                    self.name,
                    entry.file_name(),
                    entry.life_left(now),
                    self.due.saturating_duration_since(Instant::now()).as_secs()
                );
                self.saved.store(&entry);
                self.entry = Some(entry);
                true
            }
            Err(why) => {
                let delay = self.backoff.next_delay();
                self.due = Instant::now() + delay;
                let kept = match &self.entry {
                    Some(e) => format!(
                        "keeping entry {} (expires in {}s)",
                        e.file_name(),
                        e.life_left(now)
                    ),
                    None => "no entry to publish for it".to_owned(),
                };
                tracing::warn!(
                    "target {}: {why}; {kept}; retrying in {}s",
                    self.name,
                    delay.as_secs()
                );
                false
            }
        }
    }

    /// Offers the Secret's entry for this target (`None`: it has none). A valid one with life
    /// left that is not older (`fetchedAt`) than ours becomes ours, and the next fetch is
    /// scheduled from it; true when taken.
    pub fn offer(&mut self, bytes: Option<&[u8]>) -> bool {
        let Some(bytes) = bytes else {
            return false;
        };
        if self.entry.as_ref().is_some_and(|e| e.bytes == bytes) {
            return false;
        }
        let now = SystemTime::now();
        let entry = match Entry::parse(&self.file, bytes.to_vec()) {
            // Ours stays when strictly newer: on a tie the Secret's is as good, and keeping it
            // spares a write.
            Ok(entry)
                if self
                    .entry
                    .as_ref()
                    .is_some_and(|mine| mine.fetched_at > entry.fetched_at) =>
            {
                return false;
            }
            Ok(entry) => entry.adoptable(now).map(|()| entry),
            Err(reason) => Err(reason),
        };
        let entry = match entry {
            Ok(entry) => entry,
            Err(reason) => {
                if self.refused.as_deref() != Some(reason.as_str()) {
                    tracing::info!(
                        "target {}: not taking the Secret's entry {}: {reason}",
                        self.name,
                        self.file
                    );
                    self.refused = Some(reason);
                }
                return false;
            }
        };
        self.refused = None;
        self.take(entry);
        true
    }

    fn take(&mut self, entry: Entry) {
        let now = unix_secs(SystemTime::now());
        self.backoff.reset();
        self.due = refresh_instant(&entry);
        tracing::info!(
            "target {}: took entry {} from the Secret, as new as this replica's or newer (fetched {}s ago, expires in {}s, next refresh in {}s)",
            self.name,
            entry.file_name(),
            now.saturating_sub(entry.fetched_at).max(0),
            entry.life_left(now),
            self.due.saturating_duration_since(Instant::now()).as_secs()
        );
        self.saved.store(&entry);
        self.entry = Some(entry);
    }

    /// Drops the entry when it has expired at `now` (Unix seconds); true when it did.
    pub fn expire(&mut self, now: i64) -> bool {
        if !self.entry.as_ref().is_some_and(|e| e.expired(now)) {
            return false;
        }
        tracing::warn!(
            "target {}: its entry expired and is withdrawn from the Secret",
            self.name
        );
        self.entry = None;
        self.saved.remove();
        true
    }
}
