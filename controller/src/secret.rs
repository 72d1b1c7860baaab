//! The Secret the entries go into: read, and set to exactly the current entries (keys the cache's
//! file names, values the entry bytes) with get + update only. An update carries the
//! resourceVersion of the read it is based on, so a concurrent writer makes it fail with 409 and
//! it is read and tried again; nothing is written when the data is already right, and nothing the
//! API server would refuse as too large is sent. Nothing here logs the data.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::api::{self, ApiError};

/// How many times an update answered 409 is read and tried again in one publish.
const MAX_CONFLICTS: u32 = 5;
/// kube-apiserver's limit on a Secret's data: the sum of its values' sizes (`MaxSecretSize`).
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// A Secret's data, decoded: key to bytes.
pub type Data = BTreeMap<String, Vec<u8>>;

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// The Secret already held exactly these entries.
    Unchanged,
    /// The Secret was updated; these keys it held are gone.
    Updated {
        /// The keys removed.
        removed: Vec<String>,
    },
}

/// Why a publish did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// An API call failed: its verb and error.
    Api(&'static str, ApiError),
    /// We stopped being the leader before the update.
    NotLeader,
    /// The data would be larger than the API server takes (bytes, as it counts them).
    TooLarge(usize),
}

/// The Secret the entries go into.
pub struct SecretStore {
    api: Api<Secret>,
    /// `--namespace` (the pod's own by default), shared with the Lease; named in error lines.
    pub namespace: String,
    /// `--secret-name`: the Secret the manifests create and the nodes' DaemonSet mounts.
    pub name: String,
    call_timeout: Duration,
}

/// The data of `secret`, decoded.
pub fn data_of(secret: &Secret) -> Data {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

/// The size of `data` as kube-apiserver's validation counts it: the sum of its values' lengths.
pub fn data_size(data: &Data) -> usize {
    data.values().map(Vec::len).sum()
}

impl SecretStore {
    /// The Secret `namespace/name`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, call_timeout: Duration) -> Self {
        SecretStore {
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

    /// The line for a publish that failed.
    pub fn explain(&self, error: &PublishError) -> String {
        match error {
            PublishError::Api(verb, e) => self.describe(verb, e),
            PublishError::NotLeader => {
                "not the Lease holder any more: the Secret was not written".into()
            }
            PublishError::TooLarge(bytes) => format!(
                "the Secret {}/{} would hold {bytes} bytes of entries, over the API server's limit of {MAX_DATA_BYTES} bytes (1 MiB) for a Secret's data: not written (it keeps what it holds); configure fewer targets",
                self.namespace, self.name
            ),
        }
    }

    /// Reads the Secret.
    pub async fn read(&self) -> Result<Secret, ApiError> {
        api::call(self.call_timeout, self.api.get(&self.name)).await
    }

    /// Makes the Secret's data `decide(current data)`, starting from `base` when given (a read
    /// just made) and reading it otherwise; `before_write` is asked right before each update with
    /// the data it would write (false stops it: a lost Lease). Returns what it did and the data
    /// the Secret now holds.
    pub async fn publish(
        &self,
        mut base: Option<Secret>,
        mut decide: impl FnMut(&Data) -> Data,
        before_write: impl Fn(&Data) -> bool,
    ) -> Result<(Published, Data), PublishError> {
        let mut conflicts = 0;
        loop {
            let mut secret = match base.take() {
                Some(secret) => secret,
                None => self.read().await.map_err(|e| PublishError::Api("get", e))?,
            };
            let current = data_of(&secret);
            let wanted = decide(&current);
            if current == wanted {
                return Ok((Published::Unchanged, wanted));
            }
            if data_size(&wanted) > MAX_DATA_BYTES {
                return Err(PublishError::TooLarge(data_size(&wanted)));
            }
            if !before_write(&wanted) {
                return Err(PublishError::NotLeader);
            }
            let removed = current
                .keys()
                .filter(|k| !wanted.contains_key(*k))
                .cloned()
                .collect();
            secret.data = Some(
                wanted
                    .iter()
                    .map(|(k, v)| (k.clone(), ByteString(v.clone())))
                    .collect(),
            );
            secret.string_data = None;
            secret.metadata.managed_fields = None;
            let params = api::post_params();
            let update = self.api.replace(&self.name, &params, &secret);
            match api::call(self.call_timeout, update).await {
                Ok(_) => return Ok((Published::Updated { removed }, wanted)),
                Err(e) if e.code() == Some(409) && conflicts < MAX_CONFLICTS => {
                    conflicts += 1;
                    tracing::info!("{}", self.describe("update", &e));
                }
                Err(e) => return Err(PublishError::Api("update", e)),
            }
        }
    }
}
