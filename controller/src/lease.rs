//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it,
//! with get and update only (the manifests create the Lease).
//!
//! - A candidate takes the Lease when it has no holder, or when its record has not changed for
//!   `leaseDurationSeconds` as measured on this process's own monotonic clock from the moment
//!   the record was last seen to change. The Lease's `renewTime` is never compared with our
//!   clock, so clock skew between nodes cannot hand the Lease to two holders.
//! - The holder renews every retry period; an update answered 409 means someone else wrote the
//!   Lease: it is read again on the next attempt.
//! - The holder counts as leader only while its last successful renewal is younger than the
//!   renew deadline (shorter than the lease duration), counted from when the renewal was sent
//!   (see `leadership`), so it stops writing before anyone else may take over.
//! - On shutdown the holder clears `holderIdentity` (client-go's `ReleaseOnCancel`), so a
//!   successor need not wait a lease duration.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;

use crate::api::{self, ApiError};

/// The outcome of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the Lease: the update that took or renewed it was sent at `sent`.
    Leader {
        /// When the successful update was sent (leadership counts from then).
        sent: Instant,
    },
    /// Another live holder has it.
    HeldBy(String),
}

/// The parts of a Lease's spec that say who holds it; a change in any of them is a sign of life.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Record {
    holder: Option<String>,
    lease_duration_seconds: Option<i32>,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    transitions: Option<i32>,
}

impl Record {
    fn of(spec: Option<&LeaseSpec>) -> Record {
        let Some(spec) = spec else {
            return Record::default();
        };
        Record {
            holder: spec.holder_identity.clone().filter(|h| !h.is_empty()),
            lease_duration_seconds: spec.lease_duration_seconds,
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            transitions: spec.lease_transitions,
        }
    }
}

/// One candidate for the Lease.
pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    call_timeout: Duration,
    /// The record last seen, and when (our clock) it was first seen so.
    observed: Option<(Record, Instant)>,
    /// The Lease as last read or written, for its resourceVersion.
    last: Option<Lease>,
}

impl Elector {
    /// A candidate named `identity` for the Lease `namespace/name`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        lease_duration: Duration,
        call_timeout: Duration,
    ) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration,
            call_timeout,
            observed: None,
            last: None,
        }
    }

    /// A one-line description of a failed call on the Lease.
    pub fn describe(&self, verb: &str, error: &ApiError) -> String {
        error.describe(verb, "leases", &self.namespace, &self.name)
    }

    /// Whether we held the Lease when it was last read or written.
    fn holding(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|(r, _)| r.holder.as_deref() == Some(self.identity.as_str()))
    }

    /// Reads the Lease and takes or renews it when we may. Errors name the verb that failed.
    pub async fn try_acquire_or_renew(&mut self) -> Result<Attempt, (&'static str, ApiError)> {
        let lease = api::call(self.call_timeout, self.api.get(&self.name))
            .await
            .map_err(|e| ("get", e))?;
        let record = Record::of(lease.spec.as_ref());
        let now = Instant::now();
        match &self.observed {
            Some((seen, _)) if *seen == record => {}
            _ => self.observed = Some((record.clone(), now)),
        }
        self.last = Some(lease.clone());
        if let Some(holder) = record.holder.as_deref().filter(|h| *h != self.identity) {
            let seen_at = self.observed.as_ref().map_or(now, |(_, at)| *at);
            let duration = record
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.lease_duration, Duration::from_secs);
            if now < seen_at + duration {
                return Ok(Attempt::HeldBy(holder.to_owned()));
            }
        }
        let already = self.holding();
        let stamp = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
            ),
            acquire_time: if already {
                record.acquire_time.clone()
            } else {
                Some(stamp.clone())
            },
            renew_time: Some(stamp),
            lease_transitions: if already {
                record.transitions
            } else {
                Some(record.transitions.unwrap_or(0).saturating_add(1))
            },
            ..lease.spec.clone().unwrap_or_default()
        };
        let sent = Instant::now();
        let written = self.write(lease, spec).await.map_err(|e| ("update", e))?;
        self.observed = Some((Record::of(written.spec.as_ref()), Instant::now()));
        self.last = Some(written);
        Ok(Attempt::Leader { sent })
    }

    /// Clears the holder if it is us (client-go's release: no holder, a one-second duration), so
    /// a successor need not wait a lease duration. One attempt; a failure is returned.
    pub async fn release(&mut self) -> Result<bool, ApiError> {
        if !self.holding() {
            return Ok(false);
        }
        let Some(lease) = self.last.clone() else {
            return Ok(false);
        };
        let record = Record::of(lease.spec.as_ref());
        let stamp = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let spec = LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(stamp.clone()),
            renew_time: Some(stamp),
            lease_transitions: record.transitions,
            ..lease.spec.clone().unwrap_or_default()
        };
        let written = self.write(lease, spec).await?;
        self.observed = Some((Record::of(written.spec.as_ref()), Instant::now()));
        self.last = Some(written);
        Ok(true)
    }

    /// PUT with the resourceVersion of what was read (a 409 if someone wrote it meanwhile),
    /// under the controller's field manager.
    async fn write(&self, mut lease: Lease, spec: LeaseSpec) -> Result<Lease, ApiError> {
        lease.spec = Some(spec);
        lease.metadata.managed_fields = None;
        api::call(
            self.call_timeout,
            self.api.replace(&self.name, &api::post_params(), &lease),
        )
        .await
    }
}
