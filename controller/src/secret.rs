//! Publishing the entries: the Secret's `data` is set to exactly the current entries (keys the
//! cache's file names, values the entry bytes), with get + update only. An update carries the
//! resourceVersion of the read it is based on, so a concurrent writer makes it fail with 409 and
//! it is read and tried again; nothing is written when the data is already right. Nothing here
//! logs the data.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

use crate::api::{self, ApiError};

/// How many times an update answered 409 is read and tried again in one publish.
const MAX_CONFLICTS: u32 = 5;

/// What a publish did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// The Secret already held exactly these entries.
    Unchanged,
    /// The Secret was updated.
    Updated,
}

/// Why a publish did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// An API call failed: its verb and error.
    Api(&'static str, ApiError),
    /// We stopped being the leader before the update.
    NotLeader,
}

/// The Secret the entries go into.
pub struct Target {
    api: Api<Secret>,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    call_timeout: Duration,
}

impl Target {
    /// The Secret `namespace/name`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, call_timeout: Duration) -> Self {
        Target {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            call_timeout,
        }
    }

    /// A one-line description of a failed call on the Secret.
    pub fn describe(&self, verb: &str, error: &ApiError) -> String {
        error.describe(verb, "secrets", &self.namespace, &self.name)
    }

    /// Makes the Secret's data exactly `entries`; `may_write` is asked right before each
    /// update (a lost Lease stops the write).
    pub async fn publish(
        &self,
        entries: &BTreeMap<String, Vec<u8>>,
        may_write: impl Fn() -> bool,
    ) -> Result<Published, PublishError> {
        let wanted: BTreeMap<String, ByteString> = entries
            .iter()
            .map(|(k, v)| (k.clone(), ByteString(v.clone())))
            .collect();
        let mut conflicts = 0;
        loop {
            let mut secret = api::call(self.call_timeout, self.api.get(&self.name))
                .await
                .map_err(|e| PublishError::Api("get", e))?;
            if secret.data.clone().unwrap_or_default() == wanted {
                return Ok(Published::Unchanged);
            }
            if !may_write() {
                return Err(PublishError::NotLeader);
            }
            secret.data = Some(wanted.clone());
            secret.string_data = None;
            secret.metadata.managed_fields = None;
            match api::call(
                self.call_timeout,
                self.api
                    .replace(&self.name, &PostParams::default(), &secret),
            )
            .await
            {
                Ok(_) => return Ok(Published::Updated),
                Err(e) if e.code() == Some(409) && conflicts < MAX_CONFLICTS => {
                    conflicts += 1;
                    tracing::info!("{}", self.describe("update", &e));
                }
                Err(e) => return Err(PublishError::Api("update", e)),
            }
        }
    }
}
