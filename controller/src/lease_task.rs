//! The Lease task: every retry period it takes or renews the Lease through the `lease` elector
//! and notes the outcome in the shared `leadership`, logging each change once. It never writes
//! the Secret; the worker asks `leadership` before it does.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::Level;

use crate::api::ApiError;
use crate::leadership::Leadership;
use crate::lease::{Attempt, Elector};
use crate::lines::Repeats;

/// Takes or renews the Lease every `retry_period` until told to stop; returns the elector so
/// the caller can release the Lease.
pub async fn run(
    mut elector: Elector,
    leadership: Arc<Leadership>,
    retry_period: Duration,
    mut stop: watch::Receiver<bool>,
) -> Elector {
    let mut repeats = Repeats::default();
    loop {
        match elector.try_acquire_or_renew().await {
            Ok(Attempt::Leader { sent }) => {
                leadership.note_error(None);
                leadership.note_holder(None);
                repeats.clear();
                if leadership.renew(sent) {
                    tracing::info!("acquired the Lease: this replica is now the active controller");
                }
            }
            Ok(Attempt::HeldBy(holder)) => {
                if leadership.clear() {
                    tracing::warn!("lost the Lease to {holder}: Secret writes stopped");
                }
                crate::log_once!(
                    repeats,
                    Level::INFO,
                    &format!("the Lease is held by {holder}; standing by"),
                );
                leadership.note_holder(Some(holder));
            }
            Err((verb, e)) => failed(&elector, &leadership, &mut repeats, verb, &e),
        }
        tokio::select! {
            _ = tokio::time::sleep(retry_period) => {}
            _ = stop.changed() => return elector,
        }
    }
}

/// A failed Lease call: logged once; leadership ends when the renew deadline has passed.
fn failed(
    elector: &Elector,
    leadership: &Leadership,
    repeats: &mut Repeats,
    verb: &str,
    e: &ApiError,
) {
    let line = elector.describe(verb, e);
    let level = match e.code() {
        // Two replicas starting together both try to take the Lease: one of them loses that
        // race. Someone else writing a Lease we hold is worth a warning.
        Some(409) if !leadership.is_leader() => Level::INFO,
        Some(409) => Level::WARN,
        _ => e.level(),
    };
    crate::log_once!(repeats, level, &line);
    leadership.note_error(Some(line));
    if e.code() != Some(409) && !leadership.is_leader() && leadership.clear() {
        tracing::warn!(
            "could not renew the Lease within the renew deadline: Secret writes stopped"
        );
    }
}
