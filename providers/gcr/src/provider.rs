//! Which token source answers a request, and how its token becomes the kubelet's response.
//!
//! `--authFlow=gcr` (default) picks, in order: Workload Identity Federation when it is configured
//! and the pod's service account opted in; a service-account key file when one is configured; the
//! metadata server's default service account. The token is returned under the four Google
//! registry globs plus, when none of them covers the image, the image's own registry (upstream
//! adds it always; see [`token_auth`]). `dockercfg` and `dockercfg-url`
//! return the document's registries as they are.
//!
//! Unlike upstream, a failure of the chosen source is an error (non-zero exit, one stderr line),
//! never an empty answer that the kubelet would cache and turn into an anonymous pull.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::{
    AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret, matching,
};
use kcp_plugin::Provider;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use kcp_plugin::token_cache::{self, CacheKey, Issuer, RegistryToken, TokenCache};

use crate::dockercfg;
use crate::keyfile::ServiceAccountKey;
use crate::metadata::Metadata;
use crate::token::AccessToken;
use crate::wif::{self, Wif};

/// The `auth` map of a token answer: upstream's [`GOOGLE_REGISTRIES`] globs, plus the image's own
/// registry when no glob covers the image. Upstream always adds the registry, so `eu.gcr.io` and
/// `us-docker.pkg.dev` images got two matching entries (`*.gcr.io` and `eu.gcr.io`); the kubelet
/// hands the runtime every matching entry, so a pull tried the same token twice and a failed pull
/// was retried and reported twice. Whether a glob covers the image is decided by the kubelet's
/// own keyring lookup, so exactly one key matches. The globs stay whole: with a `Global` or
/// `Image` cache key the kubelet reuses this answer for other Google registries.
fn token_auth(
    request: &CredentialProviderRequest,
    entry: &AuthConfig,
) -> BTreeMap<String, AuthConfig> {
    let mut auth: BTreeMap<String, AuthConfig> = GOOGLE_REGISTRIES
        .iter()
        .map(|k| ((*k).to_owned(), entry.clone()))
        .collect();
    if matching::keyring_lookup(&GOOGLE_REGISTRIES, &request.image).is_empty() {
        auth.insert(request.image_ref.registry().to_owned(), entry.clone());
    }
    auth
}

/// Registries every Google token is offered to (upstream's `containerRegistryUrls`).
pub const GOOGLE_REGISTRIES: [&str; 4] = [
    "container.cloud.google.com",
    "gcr.io",
    "*.gcr.io",
    "*.pkg.dev",
];

/// Time kept between the end of the kubelet's cache entry and the token's expiry. The metadata
/// server hands out cached tokens until about five minutes before they expire, so a larger
/// margin would often mean no caching at all.
pub const CACHE_MARGIN: Duration = Duration::from_secs(120);

/// Upstream's `--authFlow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFlow {
    /// An access token for Google's registries.
    Gcr,
    /// The `google-dockercfg` attribute.
    Dockercfg,
    /// The document at `google-dockercfg-url`.
    DockercfgUrl,
}

impl AuthFlow {
    /// Parses the flag value, case-sensitively as upstream.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "gcr" => Ok(AuthFlow::Gcr),
            "dockercfg" => Ok(AuthFlow::Dockercfg),
            "dockercfg-url" => Ok(AuthFlow::DockercfgUrl),
            other => Err(format!(
                "invalid value {other:?} for authFlow (must be one of \"gcr\", \"dockercfg\", or \"dockercfg-url\")"
            )),
        }
    }
}

/// What to answer with besides credentials.
#[derive(Debug, Clone, Copy)]
pub struct CacheSettings {
    /// `cacheKeyType` (`KUBE_SIDECAR_CACHE_TYPE`, default `Registry`).
    pub key_type: CacheKeyType,
    /// `KUBE_SIDECAR_CACHE_DURATION`, when set.
    pub duration: Option<GoDuration>,
}

/// Everything one run needs.
#[derive(Debug)]
pub struct GcrProvider {
    /// `--authFlow`: a token for Google's registries, or a docker config from the metadata server.
    pub flow: AuthFlow,
    /// The metadata server.
    pub metadata: Metadata,
    /// A key file to use instead of the metadata server.
    pub key_file: Option<PathBuf>,
    /// Federation for opted-in pods.
    pub wif: Option<Wif>,
    /// Registry user name for tokens: `_token` or `oauth2accesstoken`.
    pub username: String,
    /// Refuse images outside [`GOOGLE_REGISTRIES`] before any token is fetched.
    pub strict_hosts: bool,
    /// Cache answer settings.
    pub cache: CacheSettings,
    /// The on-disk token cache, when turned on.
    pub token_cache: Option<TokenCache>,
}

/// What [`Provider::plan`] decided: for `--authFlow=gcr`, the token source and its cache key;
/// nothing for the dockercfg flows (their documents are read by the fetch, never cached).
pub struct Plan<'a> {
    token: Option<TokenPlan<'a>>,
}

impl Provider for GcrProvider {
    type Plan<'a> = Plan<'a>;
    type Error = anyhow::Error;
    const ISSUER: Option<Issuer> = Some(Issuer::Gcr);

    fn cache_key<'p>(&self, plan: &'p Plan<'_>) -> Option<&'p CacheKey> {
        plan.token.as_ref()?.cache_key.as_ref()
    }

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Plan<'a>> {
        let token = match self.flow {
            AuthFlow::Gcr => Some(self.token_plan(request)?),
            AuthFlow::Dockercfg | AuthFlow::DockercfgUrl => None,
        };
        Ok(Plan { token })
    }

    /// A `--authFlow=gcr` answer from the token cache alone. Runs before any async runtime or
    /// HTTP client exists.
    fn answer_from_cache<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: &Plan<'a>,
    ) -> Option<Credentials> {
        let cache = self.token_cache.as_ref()?;
        let plan = plan.token.as_ref()?;
        let hit = cache.get(plan.cache_key.as_ref()?)?;
        self.log_source(plan);
        let token = AccessToken {
            token: hit.password,
            expires_at: hit.expires_at,
            received_at: hit.obtained_at,
        };
        Some(self.token_credentials(request, &token, plan.also_expires_at))
    }

    /// Answers `request`: a token of the planned source, or the flow's dockercfg document.
    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Plan<'a>,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let http = HttpClient::from_env();
        match plan.token {
            Some(plan) => self.gcr(&http, request, plan, deadline).await,
            None => self.dockercfg(&http, request, deadline).await,
        }
    }
}

impl GcrProvider {
    /// A `--authFlow=dockercfg` or `dockercfg-url` answer: the document's registries as they are.
    async fn dockercfg(
        &self,
        http: &HttpClient,
        request: &CredentialProviderRequest,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let (auth, what) = if self.flow == AuthFlow::Dockercfg {
            let auth = dockercfg::from_attribute(http, &self.metadata, deadline).await;
            (auth, dockercfg::DOCKERCFG_ATTRIBUTE)
        } else {
            let auth = dockercfg::from_url_attribute(http, &self.metadata, deadline).await;
            (auth, dockercfg::DOCKERCFG_URL_ATTRIBUTE)
        };
        let auth = auth.map_err(|e| {
            anyhow!(
                "--authFlow={} (metadata server {}): {e:#}",
                if self.flow == AuthFlow::Dockercfg {
                    "dockercfg"
                } else {
                    "dockercfg-url"
                },
                self.metadata.host()
            )
        })?;
        let keys: Vec<&str> = auth.keys().map(String::as_str).collect();
        if matching::keyring_lookup(&keys, &request.image).is_empty() {
            tracing::warn!(image = %request.image, registries = ?keys, "no registry in {what} matches the image; the kubelet will not use these credentials for it");
        }
        tracing::info!(registries = ?keys, "dockercfg credentials read");
        Ok(Credentials {
            cache_key_type: self.cache.key_type,
            // Static credentials have no expiry: the config's defaultCacheDuration
            // applies unless KUBE_SIDECAR_CACHE_DURATION says otherwise.
            cache_duration: self.cache.duration.map(|d| d.max(GoDuration::ZERO)),
            auth,
        })
    }

    /// Which token answers `request`, and its cache key: every check and choice of the `gcr`
    /// flow that needs no network. Logs nothing (the cache look and the fetch log the source).
    fn token_plan<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
    ) -> anyhow::Result<TokenPlan<'a>> {
        let registry = request.image_ref.registry();
        if self.strict_hosts
            && !GOOGLE_REGISTRIES
                .iter()
                .any(|glob| matching::match_image(glob, registry))
        {
            bail!(
                "{registry} is not a Google registry (gcr.io, *.gcr.io, *.pkg.dev, container.cloud.google.com) and \
                 strict host checking is on (--strict-hosts / GCR_STRICT_HOSTS): refusing to send a Google token to it; \
                 narrow matchImages or turn strict checking off"
            );
        }
        let opted_in = request
            .service_account_annotations
            .get(wif::OPT_IN_ANNOTATION)
            .is_some_and(|v| v == "true");
        if let Some(wif) = self.wif.as_ref().filter(|_| opted_in) {
            return federated_plan(wif, request);
        }
        let declined_wif = self.wif.is_some();
        Ok(match &self.key_file {
            Some(path) => {
                let key = ServiceAccountKey::load(path)
                    .map_err(|e| anyhow!("{e:#} (GOOGLE_APPLICATION_CREDENTIALS / --json-key)"))?;
                let cache_key = CacheKey::new(Issuer::Gcr)
                    .scope("source", "key-file")
                    .scope("token-uri", key.token_uri.as_str())
                    .identity("client_email", &key.client_email)
                    .identity(
                        "private_key_id",
                        key.private_key_id.as_deref().unwrap_or(""),
                    )
                    .identity("path", &path.display().to_string());
                TokenPlan {
                    source: TokenSource::KeyFile {
                        path,
                        key: Box::new(key),
                    },
                    cache_key: Some(cache_key),
                    also_expires_at: None,
                    declined_wif,
                }
            }
            None => TokenPlan {
                source: TokenSource::Metadata,
                cache_key: Some(
                    CacheKey::new(Issuer::Gcr)
                        .scope("source", "metadata")
                        .scope("host", self.metadata.host()),
                ),
                also_expires_at: None,
                declined_wif,
            },
        })
    }

    /// The info lines that say which source a run uses.
    fn log_source(&self, plan: &TokenPlan<'_>) {
        if plan.declined_wif {
            tracing::info!(
                "Workload Identity is configured but the service account did not opt in ({}: \"true\"); using the node's credentials",
                wif::OPT_IN_ANNOTATION
            );
        }
        match &plan.source {
            TokenSource::KeyFile { path, .. } => {
                tracing::info!(key_file = %path.display(), "token source: service-account key file");
            }
            TokenSource::Metadata => {
                tracing::info!(host = %self.metadata.host(), "token source: metadata server");
            }
            TokenSource::Federated {
                wif,
                service_account,
                ..
            } => {
                tracing::info!(audience = %wif.audience, impersonate = ?service_account, "token source: Workload Identity Federation");
            }
        }
    }

    /// A `--authFlow=gcr` token for `plan`, through the token cache.
    async fn gcr(
        &self,
        http: &HttpClient,
        request: &CredentialProviderRequest,
        plan: TokenPlan<'_>,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        self.log_source(&plan);
        let token = match &plan.source {
            TokenSource::KeyFile { path, key } => {
                self.cached(plan.cache_key.clone(), deadline, async || {
                    tracing::info!(service_account = %key.client_email, token_uri = %key.token_uri, "exchanging a signed JWT");
                    key.token(http, deadline).await.map_err(|e| {
                        anyhow!(
                            "getting an access token for {} from {} (key file {}) failed: {e:#}; check that the key is not disabled or deleted and that this node can reach the token endpoint (HTTPS_PROXY/NO_PROXY)",
                            key.client_email,
                            kcp_plugin::endpoint::describe(&key.token_uri),
                            path.display()
                        )
                    })
                })
                .await?
            }
            TokenSource::Metadata => {
                self.cached(plan.cache_key.clone(), deadline, async || {
                    self.metadata.token(http, deadline).await.map_err(|e| {
                        anyhow!(
                            "getting the node service account's token from the metadata server at {} failed: {e:#}; \
                             check that this node runs on Google Cloud with a service account attached, that GCE_METADATA_HOST/--metadata-host is right, \
                             or configure a key file (GOOGLE_APPLICATION_CREDENTIALS / --json-key)",
                            self.metadata.host()
                        )
                    })
                })
                .await?
            }
            TokenSource::Federated {
                wif,
                subject,
                service_account,
            } => {
                self.cached(plan.cache_key.clone(), deadline, async || {
                    wif.token(http, subject, *service_account, deadline)
                        .await
                        .map_err(|e| {
                            anyhow!(
                                "Workload Identity Federation for image {}: {e:#}",
                                request.image
                            )
                        })
                })
                .await?
            }
        };
        Ok(self.token_credentials(request, &token, plan.also_expires_at))
    }

    /// `fetch` through the token cache when it is on. The token carries when it was obtained (a
    /// fresh one the moment its answer arrived), so its `cacheDuration` reads exactly as without
    /// the cache.
    async fn cached(
        &self,
        key: Option<CacheKey>,
        deadline: Deadline,
        fetch: impl AsyncFnOnce() -> anyhow::Result<AccessToken>,
    ) -> anyhow::Result<AccessToken> {
        let (token, source) = token_cache::get_or_fetch(
            self.token_cache.as_ref(),
            key.as_ref(),
            deadline,
            async || {
                let token = fetch().await?;
                anyhow::Ok(RegistryToken {
                    username: self.username.clone(),
                    password: token.token,
                    expires_at: token.expires_at,
                    obtained_at: token.received_at,
                })
            },
        )
        .await?;
        tracing::debug!(?source, "access token ready");
        Ok(AccessToken {
            token: token.password,
            expires_at: token.expires_at,
            received_at: token.obtained_at,
        })
    }

    /// The response for an access token: every Google registry glob plus the image's registry.
    pub fn token_credentials(
        &self,
        request: &CredentialProviderRequest,
        token: &AccessToken,
        also_expires_at: Option<SystemTime>,
    ) -> Credentials {
        // Counted from the moment the answer arrived, so `expires_in: 3599` always reads as the
        // same duration however long the rest of the run takes.
        let now = token.received_at;
        let entry = AuthConfig::new(self.username.clone(), token.token.clone());
        let auth = token_auth(request, &entry);
        let policy = CachePolicy::RemainingMinus(CACHE_MARGIN);
        let computed = policy.cache_duration_capped(token.expires_at, also_expires_at, now);
        if token.expires_at.is_none() {
            tracing::warn!(
                "the token answer has no expires_in; answering cacheDuration 0s so the kubelet does not cache a token of unknown life"
            );
        }
        let cache_duration = match self.cache.duration {
            None => computed,
            // The operator's value, but never past the token's end: the kubelet does not
            // refresh early and would keep handing out an expired token.
            Some(wanted) if token.expires_at.is_some() && wanted > computed => {
                tracing::info!(%wanted, %computed, "KUBE_SIDECAR_CACHE_DURATION is longer than the token's remaining life; using the latter");
                computed
            }
            Some(wanted) => wanted.max(GoDuration::ZERO),
        };
        tracing::info!(
            %cache_duration,
            expires_in_s = token.expires_at.and_then(|t| t.duration_since(now).ok()).map(|d| d.as_secs()),
            "access token obtained"
        );
        Credentials {
            cache_key_type: self.cache.key_type,
            cache_duration: Some(cache_duration),
            auth,
        }
    }
}

/// The source of a `gcr`-flow token, chosen by [`GcrProvider::token_plan`].
enum TokenSource<'a> {
    /// A service-account key file, already read.
    KeyFile {
        path: &'a std::path::Path,
        key: Box<ServiceAccountKey>,
    },
    /// The metadata server's default service account.
    Metadata,
    /// Workload Identity Federation with the pod's token.
    Federated {
        wif: &'a Wif,
        subject: &'a Secret,
        service_account: Option<&'a str>,
    },
}

/// A request's token source with its cache key (`None`: never cached) and any expiry besides the
/// token's own that caps `cacheDuration`.
struct TokenPlan<'a> {
    source: TokenSource<'a>,
    cache_key: Option<CacheKey>,
    also_expires_at: Option<SystemTime>,
    /// Federation is configured but this pod's service account did not opt in.
    declined_wif: bool,
}

/// The plan of an opted-in pod: its token, the service account to impersonate, and a key shared
/// by pods of one Kubernetes service account (none without readable claims).
fn federated_plan<'a>(
    wif: &'a Wif,
    request: &'a CredentialProviderRequest,
) -> anyhow::Result<TokenPlan<'a>> {
    let Some(subject) = &request.service_account_token else {
        bail!(
            "the service account opted in to Workload Identity ({}: \"true\") but the kubelet sent no service-account token: \
             configure tokenAttributes (serviceAccountTokenAudience, requireServiceAccount) for this provider with apiVersion credentialprovider.kubelet.k8s.io/v1",
            wif::OPT_IN_ANNOTATION
        );
    };
    let service_account = match request.service_account_annotations.get(wif::GSA_ANNOTATION) {
        Some(email) if !email.trim().is_empty() => {
            wif::check_service_account(
                email.trim(),
                &format!("the annotation {}", wif::GSA_ANNOTATION),
            )?;
            Some(email.trim())
        }
        _ => wif.default_service_account.as_deref(),
    };
    let cache_key = CacheKey::new(Issuer::Gcr)
        .scope("source", "workload-identity")
        .scope("audience", &wif.audience)
        .scope("sts", wif.sts_endpoint.as_str())
        .scope("impersonate", service_account.unwrap_or(""))
        .scope("iam", wif.iam_endpoint.as_str())
        .service_account(subject);
    Ok(TokenPlan {
        source: TokenSource::Federated {
            wif,
            subject,
            service_account,
        },
        cache_key,
        // The kubelet caches per service account in this mode; never beyond the pod token's life.
        also_expires_at: kcp_plugin::jwt::expiry(subject.expose()),
        declined_wif: false,
    })
}
