//! The loop: the Lease task keeps (or waits for) leadership; while leader, the worker fetches each
//! target when its entry is missing, failed or past its refresh point, drops expired entries and
//! keeps the Secret equal to the current entries. SIGTERM stops both and releases the Lease.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Notify, watch};

use crate::cli::Cli;
use crate::config::Config;
use crate::entry::Entry;
use crate::fetch::{self, Fetcher};
use crate::lease::{Attempt, Elector};
use crate::schedule::{self, Backoff};
use crate::secret::{self, PublishError, Published};
use kcp_plugin::time::unix_secs;

/// The longest wait after repeated failures (provider runs and Secret writes).
const MAX_BACKOFF: Duration = Duration::from_secs(5 * 60);
/// Even with nothing to change, the Secret is read this often and put right if someone else
/// changed it.
const RESYNC: Duration = Duration::from_secs(60);
/// `--once`: how many times a failed Secret write is tried.
const ONCE_PUBLISH_ATTEMPTS: u32 = 4;

/// Whether we lead: the time of our last successful renewal, valid for the renew deadline.
struct Leadership {
    renewed: Mutex<Option<Instant>>,
    renew_deadline: Duration,
    /// Wakes the worker when we become leader.
    gained: Notify,
    /// The other holder last seen, for `--once`'s message.
    holder: Mutex<Option<String>>,
    /// The last failure of a Lease call, for `--once`'s message.
    last_error: Mutex<Option<String>>,
}

impl Leadership {
    fn is_leader(&self) -> bool {
        self.renewed
            .lock()
            .map(|r| r.is_some_and(|at| at.elapsed() < self.renew_deadline))
            .unwrap_or(false)
    }

    /// Notes a renewal; true when we were not leader before.
    fn renew(&self) -> bool {
        let fresh = !self.is_leader();
        if let Ok(mut r) = self.renewed.lock() {
            *r = Some(Instant::now());
        }
        if fresh {
            self.gained.notify_one();
        }
        fresh
    }

    /// Ends leadership; true when we had it (even if it had already run out).
    fn clear(&self) -> bool {
        self.renewed
            .lock()
            .map(|mut r| r.take().is_some())
            .unwrap_or(false)
    }

    fn note<T>(slot: &Mutex<Option<T>>, value: Option<T>) {
        if let Ok(mut s) = slot.lock() {
            *s = value;
        }
    }
}

/// Runs the controller until SIGTERM (or one round with `--once`).
pub async fn run(cli: Cli, config: Config, identity: String) -> ExitCode {
    let client = match crate::api::client(cli.api_timeout).await {
        Ok(client) => client,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = fetch::prepare_dir(&cli.work_dir) {
        tracing::error!("work directory: {e} (--work-dir)");
        return ExitCode::FAILURE;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(wait_for_signals(stop_tx));

    let leadership = Arc::new(Leadership {
        renewed: Mutex::new(None),
        renew_deadline: cli.renew_deadline,
        gained: Notify::new(),
        holder: Mutex::new(None),
        last_error: Mutex::new(None),
    });
    let elector = Elector::new(
        client.clone(),
        &cli.namespace,
        &cli.lease_name,
        &identity,
        cli.lease_duration,
        cli.api_timeout,
    );
    let (lease_stop_tx, lease_stop_rx) = watch::channel(false);
    let lease_task = tokio::spawn(lease_loop(
        elector,
        leadership.clone(),
        cli.retry_period,
        lease_stop_rx,
    ));
    let target = secret::Target::new(client, &cli.namespace, &cli.secret_name, cli.api_timeout);
    let mut worker = Worker::new(&cli, &config, target, leadership.clone());
    tracing::info!(
        "token controller {identity} started: {} target(s), Secret {}/{}, Lease {}/{}",
        config.targets.len(),
        cli.namespace,
        cli.secret_name,
        cli.namespace,
        cli.lease_name
    );
    let code = if cli.once {
        worker.once(&cli, stop_rx).await
    } else {
        worker.serve(stop_rx).await;
        ExitCode::SUCCESS
    };
    // Writes have stopped: now the Lease may go.
    let _ = lease_stop_tx.send(true);
    if let Ok(mut elector) = lease_task.await {
        leadership.clear();
        match elector.release().await {
            Ok(true) => tracing::info!("released the Lease"),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                "{} (the Lease expires by itself)",
                elector.describe("update", &e)
            ),
        }
    }
    code
}

async fn wait_for_signals(stop: watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM; the controller stops only when killed");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
    let _ = stop.send(true);
}

/// Takes or renews the Lease every retry period until told to stop; returns the elector so the
/// caller can release the Lease.
async fn lease_loop(
    mut elector: Elector,
    leadership: Arc<Leadership>,
    retry_period: Duration,
    mut stop: watch::Receiver<bool>,
) -> Elector {
    let mut last_line = String::new();
    loop {
        match elector.try_acquire_or_renew().await {
            Ok(Attempt::Leader) => {
                Leadership::note(&leadership.last_error, None);
                Leadership::note(&leadership.holder, None);
                last_line.clear();
                if leadership.renew() {
                    tracing::info!("acquired the Lease: this replica is now the active controller");
                }
            }
            Ok(Attempt::HeldBy(holder)) => {
                if leadership.clear() {
                    tracing::warn!("lost the Lease to {holder}: Secret writes stopped");
                }
                let line = format!("the Lease is held by {holder}; standing by");
                if line != last_line {
                    tracing::info!("{line}");
                    last_line = line;
                }
                Leadership::note(&leadership.holder, Some(holder));
            }
            Err((verb, e)) => {
                let line = elector.describe(verb, &e);
                if line != last_line {
                    match e.code() {
                        Some(401 | 403 | 404) => tracing::error!("{line}"),
                        _ => tracing::warn!("{line}"),
                    }
                    last_line = line.clone();
                } else {
                    tracing::debug!("{line}");
                }
                Leadership::note(&leadership.last_error, Some(line));
                if e.code() != Some(409) && !leadership.is_leader() && leadership.clear() {
                    tracing::warn!(
                        "could not renew the Lease within the renew deadline: Secret writes stopped"
                    );
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(retry_period) => {}
            _ = stop.changed() => return elector,
        }
    }
}

/// One target and its current entry.
struct Slot {
    name: String,
    fetcher: Arc<Fetcher>,
    /// The entry published for it (kept while a refresh fails, until it expires).
    entry: Option<Entry>,
    /// When to fetch next.
    due: Instant,
    backoff: Backoff,
    /// Where the current entry is kept across restarts.
    saved: PathBuf,
}

struct Worker {
    slots: Vec<Slot>,
    target: secret::Target,
    leadership: Arc<Leadership>,
    publish_backoff: Backoff,
}

impl Worker {
    fn new(
        cli: &Cli,
        config: &Config,
        target: secret::Target,
        leadership: Arc<Leadership>,
    ) -> Self {
        let now = Instant::now();
        let slots = config
            .targets
            .iter()
            .map(|t| {
                tracing::debug!(
                    "target {}: {} provider {}",
                    t.name,
                    t.provider.as_str(),
                    t.command.display()
                );
                let saved = cli.work_dir.join(format!("{}.published", t.name));
                let entry = load_saved(&saved);
                let due = entry.as_ref().map_or(now, refresh_instant);
                if let Some(e) = &entry {
                    tracing::info!(
                        "target {}: kept entry {} from before the restart",
                        t.name,
                        e.file_name()
                    );
                }
                Slot {
                    name: t.name.clone(),
                    fetcher: Arc::new(Fetcher::new(
                        t,
                        &config.shared_identity,
                        &cli.work_dir,
                        cli.provider_timeout,
                    )),
                    entry,
                    due,
                    backoff: Backoff::new(cli.failure_backoff, MAX_BACKOFF),
                    saved,
                }
            })
            .collect();
        Worker {
            slots,
            target,
            leadership,
            publish_backoff: Backoff::new(cli.retry_period, MAX_BACKOFF),
        }
    }

    /// The Secret's data: every current, unexpired entry.
    fn wanted(&self) -> BTreeMap<String, Vec<u8>> {
        self.slots
            .iter()
            .filter_map(|s| s.entry.as_ref())
            .map(|e| (e.file_name(), e.bytes.clone()))
            .collect()
    }

    /// Fetches for slot `i`; true when it got a new entry.
    async fn fetch(&mut self, i: usize, stop: &mut watch::Receiver<bool>) -> Option<bool> {
        let fetcher = self.slots[i].fetcher.clone();
        let run = tokio::task::spawn_blocking(move || fetcher.fetch());
        let result = tokio::select! {
            r = run => r.unwrap_or_else(|e| Err(format!("the provider run failed: {e}"))),
            _ = stop.changed() => return None,
        };
        let slot = &mut self.slots[i];
        match result {
            Ok(entry) => {
                let now = unix_secs(SystemTime::now());
                slot.backoff.reset();
                slot.due = refresh_instant(&entry);
                tracing::info!(
                    "target {}: fetched entry {} (expires in {}s, next refresh in {}s)",
                    slot.name,
                    entry.file_name(),
                    entry.expires_at - now,
                    slot.due.saturating_duration_since(Instant::now()).as_secs()
                );
                save(&slot.saved, &entry);
                slot.entry = Some(entry);
                Some(true)
            }
            Err(why) => {
                let delay = slot.backoff.next_delay();
                slot.due = Instant::now() + delay;
                let kept = match &slot.entry {
                    Some(e) => format!(
                        "keeping entry {} (expires in {}s)",
                        e.file_name(),
                        e.expires_at - unix_secs(SystemTime::now())
                    ),
                    None => "no entry to publish for it".to_owned(),
                };
                tracing::warn!(
                    "target {}: {why}; {kept}; retrying in {}s",
                    slot.name,
                    delay.as_secs()
                );
                Some(false)
            }
        }
    }

    /// Drops expired entries; true when one was dropped.
    fn drop_expired(&mut self) -> bool {
        let now = unix_secs(SystemTime::now());
        let mut dropped = false;
        for slot in &mut self.slots {
            if slot.entry.as_ref().is_some_and(|e| e.expired(now)) {
                tracing::warn!(
                    "target {}: its entry expired and is withdrawn from the Secret",
                    slot.name
                );
                slot.entry = None;
                let _ = std::fs::remove_file(&slot.saved);
                dropped = true;
            }
        }
        dropped
    }

    /// One publish; `Ok` when the Secret holds the current entries.
    async fn publish(&mut self) -> Result<(), String> {
        let wanted = self.wanted();
        let leadership = self.leadership.clone();
        match self
            .target
            .publish(&wanted, || leadership.is_leader())
            .await
        {
            Ok(Published::Updated) => {
                tracing::info!(
                    "Secret {}/{} updated: {} entr{}",
                    self.target.namespace,
                    self.target.name,
                    wanted.len(),
                    if wanted.len() == 1 { "y" } else { "ies" }
                );
                self.publish_backoff.reset();
                Ok(())
            }
            Ok(Published::Unchanged) => {
                tracing::debug!(
                    "Secret {}/{} already up to date",
                    self.target.namespace,
                    self.target.name
                );
                self.publish_backoff.reset();
                Ok(())
            }
            Err(PublishError::NotLeader) => {
                Err("not the Lease holder any more: the Secret was not written".into())
            }
            Err(PublishError::Api(verb, e)) => {
                let line = self.target.describe(verb, &e);
                match e.code() {
                    Some(401 | 403 | 404) => tracing::error!("{line}"),
                    _ => tracing::warn!("{line}"),
                }
                Err(line)
            }
        }
    }

    /// Serves until `stop`.
    async fn serve(&mut self, mut stop: watch::Receiver<bool>) {
        let mut publish_due: Option<Instant> = None;
        let mut was_leader = false;
        loop {
            if *stop.borrow() {
                return;
            }
            let leader = self.leadership.is_leader();
            if !leader {
                was_leader = false;
                tokio::select! {
                    _ = self.leadership.gained.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
            if !was_leader {
                // A new term: whatever the Secret holds now is put right at once.
                publish_due = Some(Instant::now());
                was_leader = true;
            }
            for i in 0..self.slots.len() {
                if self.slots[i].due > Instant::now() || !self.leadership.is_leader() {
                    continue;
                }
                match self.fetch(i, &mut stop).await {
                    None => return,
                    Some(true) => publish_due = Some(Instant::now()),
                    Some(false) => {}
                }
            }
            if self.drop_expired() {
                publish_due = Some(Instant::now());
            }
            if publish_due.is_some_and(|at| at <= Instant::now()) && self.leadership.is_leader() {
                publish_due = Some(match self.publish().await {
                    Ok(()) => Instant::now() + RESYNC,
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
                .chain(publish_due)
                .min()
                .unwrap_or(now + RESYNC)
                .max(now + Duration::from_millis(10));
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// `--once`: wait for the Lease (at most two lease durations and two retry periods, long
    /// enough to see a silent holder expire), fetch every target, publish, and say how it went.
    async fn once(&mut self, cli: &Cli, mut stop: watch::Receiver<bool>) -> ExitCode {
        let give_up = Instant::now() + cli.lease_duration * 2 + cli.retry_period * 2;
        while !self.leadership.is_leader() {
            if Instant::now() >= give_up {
                let why = match (
                    lock_clone(&self.leadership.holder),
                    lock_clone(&self.leadership.last_error),
                ) {
                    (Some(holder), _) => format!(
                        "the Lease {}/{} is held by {holder}, which keeps renewing it: another controller is active; nothing written",
                        cli.namespace, cli.lease_name
                    ),
                    (None, Some(error)) => format!("could not take the Lease: {error}"),
                    (None, None) => "could not take the Lease in time".to_owned(),
                };
                tracing::error!("{why}");
                return ExitCode::FAILURE;
            }
            tokio::select! {
                _ = self.leadership.gained.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.changed() => return ExitCode::FAILURE,
            }
        }
        let mut failed = 0;
        for i in 0..self.slots.len() {
            match self.fetch(i, &mut stop).await {
                None => return ExitCode::FAILURE,
                Some(true) => {}
                Some(false) => failed += 1,
            }
        }
        self.drop_expired();
        let mut published = false;
        for attempt in 1..=ONCE_PUBLISH_ATTEMPTS {
            match self.publish().await {
                Ok(()) => {
                    published = true;
                    break;
                }
                Err(_) if attempt < ONCE_PUBLISH_ATTEMPTS => {
                    tokio::select! {
                        _ = tokio::time::sleep(self.publish_backoff.next_delay()) => {}
                        _ = stop.changed() => return ExitCode::FAILURE,
                    }
                }
                Err(line) => {
                    tracing::error!("giving up on the Secret after {attempt} attempts: {line}")
                }
            }
        }
        if published && failed == 0 {
            ExitCode::SUCCESS
        } else {
            if published {
                tracing::error!(
                    "{failed} target(s) could not be fetched (see above); the Secret holds the others"
                );
            }
            ExitCode::FAILURE
        }
    }
}

fn lock_clone(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock().ok().and_then(|s| s.clone())
}

/// The monotonic instant of an entry's (jittered) refresh point.
fn refresh_instant(entry: &Entry) -> Instant {
    let at = schedule::refresh_at(entry.fetched_at, entry.expires_at, fastrand::f64());
    instant_of(at)
}

fn expiry_instant(entry: &Entry) -> Instant {
    instant_of(entry.expires_at)
}

/// The monotonic instant of a Unix time (now when it is past).
fn instant_of(unix: i64) -> Instant {
    let left = unix.saturating_sub(unix_secs(SystemTime::now())).max(0);
    Instant::now() + Duration::from_secs(u64::try_from(left).unwrap_or(0))
}

/// Keeps a copy of the current entry beside the provider's cache directory (`<name>\n<bytes>`),
/// so a restarted controller still has it if its next refresh fails. Best effort.
fn save(path: &PathBuf, entry: &Entry) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(entry.file_name().as_bytes())?;
            f.write_all(b"\n")?;
            f.write_all(&entry.bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        tracing::warn!(
            "keeping a copy of the entry in {} failed: {e}",
            path.display()
        );
    }
}

/// The copy [`save`] kept, if it is still a valid, unexpired entry.
fn load_saved(path: &PathBuf) -> Option<Entry> {
    let bytes = std::fs::read(path).ok()?;
    let split = bytes.iter().position(|&b| b == b'\n')?;
    let name = std::str::from_utf8(&bytes[..split]).ok()?;
    match Entry::check(name, bytes[split + 1..].to_vec(), SystemTime::now()) {
        Ok(entry) => Some(entry),
        Err(reason) => {
            tracing::info!("not using the kept entry {}: {reason}", path.display());
            None
        }
    }
}
