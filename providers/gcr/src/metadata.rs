//! The GCE / GKE metadata server: the node service account's token and instance attributes.
//!
//! Our own client, because `gcp_auth` hard-codes the host: the base is `GCE_METADATA_HOST` (or
//! `--metadata-host`), default `metadata.google.internal`, always plain HTTP with
//! `Metadata-Flavor: Google`, and never through a proxy ([`Route::Metadata`]): the answers hold
//! tokens, and a proxy has no business seeing them. Unlike upstream there is no `/email` call
//! (the answer never used it) and a 404 on an attribute means "not configured", said plainly.

use std::time::SystemTime;

use anyhow::anyhow;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, Route};
use kcp_plugin::logging::error_chain;
use reqwest::Method;
use url::Url;

use crate::endpoint;
use crate::token::{self, AccessToken};
use kcp_plugin::http::{Call, CallError};

/// Default metadata host, as in Google's documentation.
pub const DEFAULT_HOST: &str = "metadata.google.internal";

/// The header every metadata request must carry (and every genuine answer carries back).
const FLAVOR: (&str, &str) = ("Metadata-Flavor", "Google");

/// Path of the default service account's token, relative to `…/computeMetadata/v1/`.
pub const TOKEN_PATH: &str = "instance/service-accounts/default/token";

/// A metadata server client.
#[derive(Debug, Clone)]
pub struct Metadata {
    base: Url,
    /// `GCE_METADATA_HOST` or `--metadata-host`, for messages.
    host: String,
}

/// Why a metadata read failed.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// The server answered 404: the entry does not exist on this instance.
    #[error("{0} is not set on this instance (HTTP 404)")]
    NotFound(String),
    /// Anything else.
    #[error(transparent)]
    Http(#[from] CallError),
    /// The path did not form a URL (a bug, not an operator error).
    #[error("bad metadata path {0:?}")]
    Path(String),
}

impl Metadata {
    /// A client for the server at `host` (`host[:port]`).
    pub fn new(host: &str) -> anyhow::Result<Self> {
        Ok(Metadata {
            base: endpoint::metadata_base(host)?,
            host: host.trim().to_owned(),
        })
    }

    /// `GCE_METADATA_HOST` or `--metadata-host` (or the default), so error lines name the server.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// GETs `path` under `…/computeMetadata/v1/`, with retries.
    pub async fn get(
        &self,
        http: &HttpClient,
        path: &str,
        what: &str,
        deadline: Deadline,
    ) -> Result<Vec<u8>, MetadataError> {
        let url = self
            .base
            .join(path)
            .map_err(|_| MetadataError::Path(path.to_owned()))?;
        let call = Call {
            route: Route::Metadata,
            method: Method::GET,
            url: &url,
            headers: &[FLAVOR],
            body: None,
            what,
        };
        match http.send_retrying(call, deadline).await {
            Ok(response) => {
                if response.header(FLAVOR.0) != Some(FLAVOR.1) {
                    // Google's libraries use this header to tell the real server from a captive
                    // portal or a hijacked name; we only warn, the answer is checked anyway.
                    tracing::info!(
                        host = %self.host,
                        "the answer for {what} lacks the Metadata-Flavor: Google header; is {} really a GCE metadata server?",
                        self.host
                    );
                }
                Ok(response.body)
            }
            Err(e) if e.status() == Some(404) => Err(MetadataError::NotFound(what.to_owned())),
            Err(e) => Err(e.into()),
        }
    }

    /// The default service account's access token, with its expiry.
    pub async fn token(
        &self,
        http: &HttpClient,
        deadline: Deadline,
    ) -> anyhow::Result<AccessToken> {
        let what = "the default service account's token";
        let body = self
            .get(http, TOKEN_PATH, what, deadline)
            .await
            .map_err(|e| match e {
                MetadataError::NotFound(_) => anyhow!(
                    "the metadata server has no default service account token (HTTP 404): attach a service account to the VM or node pool"
                ),
                MetadataError::Http(ref c) if c.status() == Some(403) => anyhow!(
                    "{}: the metadata server refused the token request; check the instance's service account and access scopes (devstorage.read_only or cloud-platform)",
                    error_chain(&e)
                ),
                other => anyhow!("{}", error_chain(&other)),
            })?;
        token::parse_oauth_token(
            &body,
            SystemTime::now(),
            "the metadata server's token answer",
        )
    }

    /// The text of the instance attribute `name`; `Ok(None)` when it is not set (HTTP 404).
    pub async fn attribute(
        &self,
        http: &HttpClient,
        name: &str,
        deadline: Deadline,
    ) -> anyhow::Result<Option<Vec<u8>>> {
        let what = format!("the instance attribute {name}");
        match self
            .get(
                http,
                &format!("instance/attributes/{name}"),
                &what,
                deadline,
            )
            .await
        {
            Ok(body) => Ok(Some(body)),
            Err(MetadataError::NotFound(_)) => Ok(None),
            Err(e) => Err(anyhow!("{}", error_chain(&e))),
        }
    }
}
