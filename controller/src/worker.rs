//! The worker: while this replica leads, it fetches each target when its entry is missing,
//! failed or past its refresh point, drops expired entries and keeps the Secret equal to the
//! current entries. On gaining the Lease it first reads the Secret and takes over every newer
//! valid entry, so a new leader fetches nothing that is fresh and never publishes an older
//! entry over a newer one. Every publish does the same with what it reads. `--once` is in `once`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Secret;
use tokio::sync::watch;
use tracing::Level;

use crate::leadership::Leadership;
use crate::lines::Repeats;
use crate::schedule::{Backoff, expiry_instant};
use crate::secret::{Data, PublishError, Published, SecretStore, data_of};
use crate::secret_watch::Shared;
use crate::slot::Slot;
use kcp_plugin::time::unix_secs;

/// The longest wait after repeated failed Secret writes.
const MAX_PUBLISH_BACKOFF: Duration = Duration::from_secs(30);
/// At most this many keys are named in the line about keys that match no target.
const MAX_NAMED_KEYS: usize = 5;

/// The targets' slots and the Secret they are published in.
pub struct Worker {
    /// One per target, in the config's order.
    pub slots: Vec<Slot>,
    /// Where each round publishes every slot's entry.
    pub secret: SecretStore,
    /// Whether we lead.
    pub leadership: Arc<Leadership>,
    /// The wait after a failed publish: from the retry period, doubling to 30 s.
    pub publish_backoff: Backoff,
    repeats: Repeats,
    shared: Arc<Shared>,
}

/// Offers the Secret's `current` entries to the slots (each takes a newer valid one for its own
/// file) and returns the data the Secret should hold: every slot's entry, nothing else.
fn adopt(slots: &mut [Slot], current: &Data) -> Data {
    for slot in slots.iter_mut() {
        slot.offer(current.get(&slot.file).map(Vec::as_slice));
    }
    slots
        .iter()
        .filter_map(|s| s.entry.as_ref())
        .map(|e| (e.file_name(), e.bytes.clone()))
        .collect()
}

/// How one target's fetch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// The provider answered: the slot holds a new entry to publish.
    NewEntry,
    /// The provider failed; the slot keeps the entry it had and backs off.
    Failed,
    /// The controller is stopping; nothing more is done.
    Stopped,
}

impl Worker {
    /// The worker for `slots`, publishing into `secret`; `shared` is what the watch reports to.
    pub fn new(
        slots: Vec<Slot>,
        secret: SecretStore,
        leadership: Arc<Leadership>,
        retry_period: Duration,
        shared: Arc<Shared>,
    ) -> Self {
        Worker {
            slots,
            secret,
            leadership,
            publish_backoff: Backoff::new(retry_period, MAX_PUBLISH_BACKOFF),
            repeats: Repeats::default(),
            shared,
        }
    }

    /// A new term: reads the Secret and takes over its newer valid entries. Returns the read
    /// for the first publish (`None` if it failed; the publish reads again).
    pub async fn begin_term(&mut self) -> Option<Secret> {
        match self.secret.read().await {
            Ok(secret) => {
                adopt(&mut self.slots, &data_of(&secret));
                Some(secret)
            }
            Err(e) => {
                crate::log_once!(self.repeats, e.level(), &self.secret.describe("get", &e));
                None
            }
        }
    }

    /// Runs slot `i`'s provider, unless stopped meanwhile.
    pub async fn fetch(&mut self, i: usize, stop: &mut watch::Receiver<bool>) -> Fetch {
        let fetcher = self.slots[i].fetcher.clone();
        let file = self.slots[i].file.clone();
        let run = tokio::task::spawn_blocking(move || fetcher.fetch(&file));
        let result = tokio::select! {
            r = run => r.unwrap_or_else(|e| Err(format!("the provider run failed: {e}"))),
            _ = stop.changed() => return Fetch::Stopped,
        };
        if self.slots[i].fetched(result) {
            Fetch::NewEntry
        } else {
            Fetch::Failed
        }
    }

    /// Drops expired entries; true when one was dropped.
    pub fn drop_expired(&mut self) -> bool {
        let now = unix_secs(SystemTime::now());
        let mut dropped = false;
        for slot in &mut self.slots {
            dropped |= slot.expire(now);
        }
        dropped
    }

    /// One publish from `base` (or a fresh read): the Secret's newer entries are taken over, and
    /// it is set to the current entries. Failures are logged once until they change.
    pub async fn publish(&mut self, base: Option<Secret>) -> Result<(), PublishError> {
        let (leadership, shared) = (self.leadership.clone(), self.shared.clone());
        let slots = &mut self.slots;
        // Noted before the update is sent: the watch may report it before its answer comes.
        let before_write = |data: &Data| {
            shared.published(data.clone());
            leadership.is_leader()
        };
        let result = self
            .secret
            .publish(base, |current| adopt(slots, current), before_write)
            .await;
        let (published, data) = match result {
            Ok(done) => done,
            Err(e) => {
                let level = match &e {
                    PublishError::Api(_, api) => api.level(),
                    PublishError::TooLarge(_) => Level::ERROR,
                    PublishError::NotLeader => Level::INFO,
                };
                crate::log_once!(self.repeats, level, &self.secret.explain(&e));
                return Err(e);
            }
        };
        let (namespace, name) = (&self.secret.namespace, &self.secret.name);
        match published {
            Published::Updated { removed } => {
                let n = data.len();
                let plural = if n == 1 { "y" } else { "ies" };
                tracing::info!("Secret {namespace}/{name} updated: {n} entr{plural}");
                self.note_strays(&removed);
            }
            Published::Unchanged => {
                tracing::debug!("Secret {namespace}/{name} already up to date");
            }
        }
        self.shared.published(data);
        self.repeats.clear();
        self.publish_backoff.reset();
        Ok(())
    }

    /// One line for keys removed from the Secret that are no target's entry.
    fn note_strays(&self, removed: &[String]) {
        let files: BTreeSet<&str> = self.slots.iter().map(|s| s.file.as_str()).collect();
        let strays: Vec<&str> = removed
            .iter()
            .map(String::as_str)
            .filter(|k| !files.contains(k))
            .collect();
        if strays.is_empty() {
            return;
        }
        let mut named: Vec<&str> = strays.iter().take(MAX_NAMED_KEYS).copied().collect();
        let more = strays.len().saturating_sub(MAX_NAMED_KEYS).to_string() + " more";
        if strays.len() > MAX_NAMED_KEYS {
            named.push(&more);
        }
        tracing::info!(
            "removed {} key(s) from the Secret {}/{} that match no configured target: {}",
            strays.len(),
            self.secret.namespace,
            self.secret.name,
            named.join(", ")
        );
    }

    /// Serves until `stop`.
    pub async fn serve(&mut self, mut stop: watch::Receiver<bool>) {
        let mut round = Round::default();
        loop {
            if *stop.borrow() {
                return;
            }
            if !self.leadership.is_leader() {
                tokio::select! {
                    _ = self.leadership.gained.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
            let Some(next) = self.lead(&mut round, &mut stop).await else {
                return;
            };
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => {}
                _ = self.shared.changed.notified() => round.publish_due = Some(Instant::now()),
                _ = stop.changed() => return,
            }
        }
    }

    /// One pass while leading: a new term's read, due fetches, expiries and a due publish.
    /// Returns when to look again (`None`: stopped).
    async fn lead(
        &mut self,
        round: &mut Round,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<Instant> {
        let term = self.leadership.term();
        if round.term != Some(term) {
            round.term = Some(term);
            round.base = self.begin_term().await;
            round.publish_due = Some(Instant::now());
        }
        for i in 0..self.slots.len() {
            if self.slots[i].due > Instant::now() || !self.leadership.is_leader() {
                continue;
            }
            match self.fetch(i, stop).await {
                Fetch::NewEntry => round.publish_due = Some(Instant::now()),
                Fetch::Failed => {}
                Fetch::Stopped => return None,
            }
        }
        if self.drop_expired() {
            round.publish_due = Some(Instant::now());
        }
        if round.publish_due.is_some_and(|at| at <= Instant::now()) && self.leadership.is_leader() {
            let base = round.base.take();
            round.publish_due = Some(match self.publish(base).await {
                Ok(()) => Instant::now() + self.shared.resync_interval(),
                Err(PublishError::NotLeader) => Instant::now(),
                Err(_) => Instant::now() + self.publish_backoff.next_delay(),
            });
        }
        let now = Instant::now();
        let expiries = self
            .slots
            .iter()
            .filter_map(|s| s.entry.as_ref())
            .map(expiry_instant);
        let next = self
            .slots
            .iter()
            .map(|s| s.due)
            .chain(expiries)
            .chain(round.publish_due)
            .min()
            .unwrap_or(now + self.shared.resync_interval());
        Some(next.max(now + Duration::from_millis(10)))
    }
}

/// What the serving loop carries between passes.
#[derive(Default)]
struct Round {
    /// The term the slots were last synced with the Secret for.
    term: Option<u64>,
    /// The new term's read, for its first publish.
    base: Option<Secret>,
    /// When to publish next.
    publish_due: Option<Instant>,
}
