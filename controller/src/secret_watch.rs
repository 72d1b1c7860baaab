//! Noticing within seconds that someone else changed or deleted the Secret: a watch on the one
//! Secret by name (`fieldSelector=metadata.name=<name>`, which RBAC's `watch` with
//! `resourceNames` permits), re-established when it ends. Every event whose data is not what the
//! controller last published wakes the worker, which puts it right at once (when it leads). When
//! the watch cannot be had (an older Role without `watch`), the worker polls instead: see
//! [`Shared::resync_interval`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{WatchEvent, WatchParams};
use tokio::sync::{Notify, watch};
use tracing::Level;

use crate::api::{self, ApiError};
use crate::lines::Repeats;
use crate::schedule::Backoff;
use crate::secret::{Data, data_of};

/// How long the API server keeps one watch open (kube's default); it is then re-established.
const WATCH_SECONDS: u32 = 290;
/// A watch that sent nothing for this long past its own end is taken as a dropped connection.
const IDLE_SLACK: Duration = Duration::from_secs(30);
/// With a watch, the Secret is still read this often, in case an event was missed.
const RESYNC_WATCHED: Duration = Duration::from_secs(60);
/// Without one, the Secret is read this often.
const RESYNC_POLLED: Duration = Duration::from_secs(10);
/// The longest wait before trying to watch again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What the watch and the worker share.
#[derive(Default)]
pub struct Shared {
    /// The data the Secret held when the worker last read or wrote it.
    published: Mutex<Option<Data>>,
    /// Woken when the Secret changed to something else than that.
    pub changed: Notify,
    /// Whether a watch is established now.
    watching: AtomicBool,
}

impl Shared {
    /// Notes the data the Secret holds after a publish, or is about to hold (an update being
    /// sent: its own event is not someone else's change).
    pub fn published(&self, data: Data) {
        if let Ok(mut p) = self.published.lock() {
            *p = Some(data);
        }
    }

    /// How long the worker may go without reading the Secret.
    pub fn resync_interval(&self) -> Duration {
        if self.watching.load(Ordering::SeqCst) {
            RESYNC_WATCHED
        } else {
            RESYNC_POLLED
        }
    }

    /// An event showed the Secret holding `data` (`None`: deleted): the worker is woken unless
    /// that is what it published.
    fn saw(&self, data: Option<Data>) {
        let ours = self
            .published
            .lock()
            .map(|p| data.is_some() && *p == data)
            .unwrap_or(false);
        if !ours {
            self.changed.notify_one();
        }
    }
}

/// The watch on one Secret.
pub struct SecretWatch {
    api: Api<Secret>,
    /// `secrets NAMESPACE/NAME`, for log lines.
    namespace: String,
    name: String,
    call_timeout: Duration,
    shared: Arc<Shared>,
}

impl SecretWatch {
    /// A watch on `namespace/name` through `client` (one without a read timeout).
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        call_timeout: Duration,
        shared: Arc<Shared>,
    ) -> Self {
        SecretWatch {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            call_timeout,
            shared,
        }
    }

    /// Watches until `stop`, re-establishing the watch when it ends; a watch that cannot be had
    /// is logged once and tried again after a back-off from `retry_period` to 30 s.
    pub async fn run(self, retry_period: Duration, mut stop: watch::Receiver<bool>) {
        let mut backoff = Backoff::new(retry_period, MAX_BACKOFF);
        let mut repeats = Repeats::default();
        let params = WatchParams::default()
            .fields(&format!("metadata.name={}", self.name))
            .timeout(WATCH_SECONDS);
        loop {
            let started = Instant::now();
            // "": the API server starts with the Secret as it is now (one ADDED event), so
            // nothing that happened between two watches goes unseen.
            let opened = tokio::select! {
                opened = api::call(self.call_timeout, self.api.watch(&params, "")) => opened,
                _ = stop.changed() => return,
            };
            let pause = match opened {
                Ok(events) => {
                    self.shared.watching.store(true, Ordering::SeqCst);
                    repeats.clear();
                    backoff.reset();
                    if let Some(e) = self.follow(events, &mut stop).await {
                        crate::log_once!(repeats, Level::WARN, &self.describe(&e));
                    }
                    if *stop.borrow() {
                        return;
                    }
                    // A watch that ends at once is not re-established in a tight loop.
                    retry_period.saturating_sub(started.elapsed())
                }
                Err(e) => {
                    self.shared.watching.store(false, Ordering::SeqCst);
                    crate::log_once!(repeats, Level::WARN, &self.describe(&e));
                    backoff.next_delay()
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// One failed watch, with what the controller does instead.
    fn describe(&self, error: &ApiError) -> String {
        let line = error.describe("watch", "secrets", &self.namespace, &self.name);
        let line = line.strip_suffix("; retrying").unwrap_or(&line);
        format!(
            "{line}; reading the Secret every {}s instead until the watch works",
            RESYNC_POLLED.as_secs()
        )
    }

    /// Follows one watch's events until it ends; an error that ended it is returned (a 410
    /// Gone, the normal end of an old watch, is not).
    async fn follow(
        &self,
        events: impl futures_util::Stream<Item = Result<WatchEvent<Secret>, kube::Error>>,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<ApiError> {
        let mut events = std::pin::pin!(events);
        let idle = Duration::from_secs(u64::from(WATCH_SECONDS)) + IDLE_SLACK;
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout(idle, events.next()) => next,
                _ = stop.changed() => return None,
            };
            let event = match next {
                Err(_) | Ok(None) => return None,
                Ok(Some(Err(e))) => {
                    return Some(ApiError::from_kube(e)).filter(|e| e.code() != Some(410));
                }
                Ok(Some(Ok(event))) => event,
            };
            match event {
                WatchEvent::Added(secret) | WatchEvent::Modified(secret) => {
                    self.shared.saw(Some(data_of(&secret)));
                }
                WatchEvent::Deleted(_) => self.shared.saw(None),
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(status) if status.code == 410 => return None,
                WatchEvent::Error(status) => {
                    return Some(ApiError::from_kube(kube::Error::Api(status)));
                }
            }
        }
    }
}
