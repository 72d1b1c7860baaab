//! `--once`: wait for the Lease (at most two lease durations and two retry periods, long enough
//! to see a silent holder expire), take over the Secret's newer valid entries, fetch every
//! target, publish, and say how it went in the exit code. A failed fetch keeps the entry the
//! Secret (or the work directory) had for the target.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::cli::Cli;
use crate::secret::PublishError;
use crate::worker::{Fetch, Worker};

/// How many times a failed Secret write is tried.
const PUBLISH_ATTEMPTS: u32 = 4;

impl Worker {
    /// Runs `--once`: 0 when every target was fetched and the Secret written, 1 otherwise.
    pub async fn once(&mut self, cli: &Cli, mut stop: watch::Receiver<bool>) -> ExitCode {
        if !self.wait_for_lease(cli, &mut stop).await {
            return ExitCode::FAILURE;
        }
        let base = self.begin_term().await;
        let mut failed = 0;
        for i in 0..self.slots.len() {
            match self.fetch(i, &mut stop).await {
                Fetch::Stopped => return ExitCode::FAILURE,
                Fetch::NewEntry => {}
                Fetch::Failed => failed += 1,
            }
        }
        self.drop_expired();
        let published = match self.publish_retrying(base, &mut stop).await {
            Publish::Stopped => return ExitCode::FAILURE,
            Publish::Written => true,
            Publish::NotWritten => false,
        };
        if published && failed == 0 {
            return ExitCode::SUCCESS;
        }
        if published {
            tracing::error!(
                "{failed} target(s) could not be fetched (see above); the Secret holds the others and the entries it had for them"
            );
        }
        ExitCode::FAILURE
    }

    /// Waits until we lead; false (after one error line) when we do not in time or are stopped.
    async fn wait_for_lease(&mut self, cli: &Cli, stop: &mut watch::Receiver<bool>) -> bool {
        let give_up = Instant::now() + cli.lease_duration * 2 + cli.retry_period * 2;
        while !self.leadership.is_leader() {
            if Instant::now() >= give_up {
                let why = match (self.leadership.holder(), self.leadership.last_error()) {
                    (Some(holder), _) => format!(
                        "the Lease {}/{} is held by {holder}, which keeps renewing it: another controller is active; nothing written",
                        cli.namespace, cli.lease_name
                    ),
                    (None, Some(error)) => format!("could not take the Lease: {error}"),
                    (None, None) => "could not take the Lease in time".to_owned(),
                };
                tracing::error!("{why}");
                return false;
            }
            tokio::select! {
                _ = self.leadership.gained.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.changed() => return false,
            }
        }
        true
    }

    /// Publishes, trying a failed write up to [`PUBLISH_ATTEMPTS`] times (a Secret too large is
    /// sent only once: it cannot change).
    async fn publish_retrying(
        &mut self,
        mut base: Option<k8s_openapi::api::core::v1::Secret>,
        stop: &mut watch::Receiver<bool>,
    ) -> Publish {
        for attempt in 1..=PUBLISH_ATTEMPTS {
            match self.publish(base.take()).await {
                Ok(()) => return Publish::Written,
                Err(PublishError::TooLarge(_)) => return Publish::NotWritten,
                Err(_) if attempt < PUBLISH_ATTEMPTS => {
                    tokio::select! {
                        _ = tokio::time::sleep(self.publish_backoff.next_delay()) => {}
                        _ = stop.changed() => return Publish::Stopped,
                    }
                }
                Err(_) => {
                    tracing::error!(
                        "giving up on the Secret after {attempt} attempts (see above): nothing written"
                    );
                }
            }
        }
        Publish::NotWritten
    }
}

/// How `--once`'s publishing ended.
enum Publish {
    /// The Secret holds every entry.
    Written,
    /// Every attempt failed (each said why); the Secret is as it was.
    NotWritten,
    /// The controller is stopping.
    Stopped,
}
