//! The kubelet side of the provider: which registries-file entry answers a request, the checks on
//! the service-account token, the token cache and `cacheDuration`.
//!
//! Every check is in [`OidcProvider::plan`], before anything is sent: the image's registry must
//! match an entry's host as the kubelet matches `matchImages` (a look-alike such as
//! `quay.io.evil.test` matches nothing and gets nothing), and the request must carry a
//! service-account token that is a JWT still valid. Only then does [`OidcProvider::fetch`] run
//! the entry's exchange, which sends the token to that entry's endpoint alone.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::{AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret};
use kcp_oidc_registries::{Protocol, Registries, Registry};
use kcp_plugin::Provider;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use kcp_plugin::token_cache::{self, CacheKey, Issuer, RegistryToken, TokenCache};

use crate::protocols::{self, Exchange, Issued, passthrough};

/// Time kept between the end of the kubelet's cache entry and the credential's (or the
/// service-account token's) expiry.
pub const CACHE_MARGIN: Duration = kcp_plugin::cache_hint::DEFAULT_SAFETY_MARGIN;

/// `cacheDuration` for a credential whose answer states no life: short, so a credential that
/// dies early costs a few failed pulls at most; never past the service-account token's expiry.
pub const UNSTATED_LIFE_CACHE: Duration = Duration::from_secs(5 * 60);

/// Everything one run needs.
#[derive(Debug)]
pub struct OidcProvider {
    /// The registries file's entries.
    pub registries: Registries,
    /// The registries file, as named on the command line (for error messages).
    pub config: PathBuf,
    /// The on-disk token cache, when turned on.
    pub token_cache: Option<TokenCache>,
}

/// What [`Provider::plan`] decided for one request.
pub struct Plan<'a> {
    /// The matched entry and its index in the file.
    registry: &'a Registry,
    index: usize,
    /// The image's registry (`host[:port]`), the `auth` key of the answer.
    host: &'a str,
    /// The pod's service-account token, checked to be a JWT still valid.
    sa_token: &'a Secret,
    /// Its `exp`: no answer is cached past it.
    sa_expires_at: SystemTime,
    /// `token-exchange`'s client secret, read now so a rotated file is picked up per exec.
    client_secret: Option<Secret>,
    /// The token cache key (`None`: not cached).
    cache_key: Option<CacheKey>,
}

impl Provider for OidcProvider {
    type Plan<'a> = Plan<'a>;
    type Error = anyhow::Error;
    const ISSUER: Option<Issuer> = Some(Issuer::Oidc);

    fn cache_key<'p>(&self, plan: &'p Plan<'_>) -> Option<&'p CacheKey> {
        plan.cache_key.as_ref()
    }

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Plan<'a>> {
        let host = request.image_ref.registry();
        let Some((index, registry)) = self.registries.find(&request.image) else {
            bail!(
                "no entry of the registries file {} matches the image {} (hosts: {}): add an entry with host {host:?} (or a glob covering it), \
                 or narrow this provider's matchImages; nothing was sent",
                self.config.display(),
                request.image,
                self.registries.hosts()
            );
        };
        let at = || describe_entry(index, registry);
        let Some(sa_token) = &request.service_account_token else {
            if !request.api_version.has_service_account_fields() {
                bail!(
                    "the request for the image {} is {}, which carries no service-account token ({}): set apiVersion credentialprovider.kubelet.k8s.io/v1 \
                     and tokenAttributes (serviceAccountTokenAudience, requireServiceAccount: true, cacheType) in this provider's CredentialProviderConfig entry; nothing was sent",
                    request.image,
                    request.api_version,
                    at()
                );
            }
            bail!(
                "the kubelet sent no service-account token for the image {} ({}): set tokenAttributes in this provider's CredentialProviderConfig entry \
                 (apiVersion credentialprovider.kubelet.k8s.io/v1; serviceAccountTokenAudience: the audience the registry expects; requireServiceAccount: true; cacheType) \
                 and let the nodes request that audience (RBAC verb request-serviceaccounts-token-audience on serviceaccounts); nothing was sent",
                request.image,
                at()
            );
        };
        let sa_expires_at = sa_token_expiry(sa_token, SystemTime::now()).map_err(|e| {
            anyhow!(
                "{e} for the image {} ({}); nothing was sent",
                request.image,
                at()
            )
        })?;
        let client_secret = match &registry.protocol {
            Protocol::TokenExchange(t) => match &t.client_secret_file {
                Some(path) => {
                    Some(read_client_secret(path).map_err(|e| anyhow!("{e} ({})", at()))?)
                }
                None => None,
            },
            _ => None,
        };
        let cache_key = match &registry.protocol {
            // Nothing is fetched: there is nothing to cache.
            Protocol::Passthrough(_) => None,
            _ => cache_key(registry, host, sa_token, request),
        };
        Ok(Plan {
            registry,
            index,
            host,
            sa_token,
            sa_expires_at,
            client_secret,
            cache_key,
        })
    }

    /// A passthrough answer (no network at all), or an exchange's credential from the token
    /// cache.
    fn answer_from_cache<'a>(
        &'a self,
        _request: &'a CredentialProviderRequest,
        plan: &Plan<'a>,
    ) -> Option<Credentials> {
        if let Protocol::Passthrough(settings) = &plan.registry.protocol {
            let issued = passthrough::credential(plan.sa_token, settings);
            return Some(credentials(plan, &issued, SystemTime::now()));
        }
        let hit = self.token_cache.as_ref()?.get(plan.cache_key.as_ref()?)?;
        tracing::info!(entry = %describe_entry(plan.index, plan.registry), "credential from the token cache");
        let issued = Issued {
            username: hit.username,
            password: hit.password,
            expires_at: hit.expires_at,
        };
        Some(credentials(plan, &issued, hit.obtained_at))
    }

    /// Runs the entry's exchange, through the token cache when it is on.
    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Plan<'a>,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let http = HttpClient::from_env();
        let entry = describe_entry(plan.index, plan.registry);
        let x = Exchange {
            registry: plan.registry,
            host: plan.host,
            sa_token: plan.sa_token,
            annotations: &request.service_account_annotations,
            client_secret: plan.client_secret.as_ref(),
            http: &http,
            deadline,
        };
        tracing::info!(%entry, "exchanging the service-account token");
        let (token, source) = token_cache::get_or_fetch(
            self.token_cache.as_ref(),
            plan.cache_key.as_ref(),
            deadline,
            async || {
                let issued = protocols::exchange(&x).await.map_err(|e| {
                    anyhow!(
                        "exchanging the service-account token for the image {} ({entry}) failed: {e}",
                        request.image
                    )
                })?;
                anyhow::Ok(RegistryToken::obtained_now(
                    issued.username,
                    issued.password,
                    issued.expires_at,
                ))
            },
        )
        .await?;
        tracing::debug!(?source, "credential ready");
        let issued = Issued {
            username: token.username,
            password: token.password,
            expires_at: token.expires_at,
        };
        Ok(credentials(&plan, &issued, token.obtained_at))
    }
}

/// `registries[1] (host "quay.io", protocol quay-robot)`, as errors and logs name an entry.
pub fn describe_entry(index: usize, registry: &Registry) -> String {
    format!(
        "registries[{index}] (host {:?}, protocol {})",
        registry.host,
        registry.protocol.name()
    )
}

/// The service-account token's expiry, refusing one that is not a JWT with an `exp` or that has
/// expired at `now`. Never quotes the token.
pub fn sa_token_expiry(sa_token: &Secret, now: SystemTime) -> Result<SystemTime, String> {
    let Some(expires_at) = kcp_plugin::jwt::expiry(sa_token.expose()) else {
        return Err(
            "the service-account token is not a JWT with an exp claim: check that the kubelet's tokenAttributes are set and that nothing rewrites the request"
                .to_owned(),
        );
    };
    if expires_at <= now {
        let ago = now.duration_since(expires_at).unwrap_or_default().as_secs();
        return Err(format!(
            "the service-account token expired {ago}s ago: check the node's clock, and that the kubelet is not caching the token past its life (tokenAttributes.cacheType)"
        ));
    }
    Ok(expires_at)
}

/// Reads `clientSecretFile` (a trailing newline is ignored).
fn read_client_secret(path: &str) -> anyhow::Result<Secret> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("reading the client secret file {path} (clientSecretFile): {e}"))?;
    let secret = text.trim_end_matches(['\n', '\r']);
    if secret.is_empty() {
        bail!("the client secret file {path} (clientSecretFile) is empty");
    }
    Ok(Secret::new(secret))
}

/// The token cache key: the entry and the endpoint's host in scope, the service account's
/// identity, the token's digest (so different service-account tokens never share an entry) and
/// the annotations the kubelet passed (a robot account may come from one). `None` for a token
/// without service-account claims.
fn cache_key(
    registry: &Registry,
    host: &str,
    sa_token: &Secret,
    request: &CredentialProviderRequest,
) -> Option<CacheKey> {
    let digest = ring::digest::digest(&ring::digest::SHA256, sa_token.expose().as_bytes());
    let endpoint = match registry.endpoint_for(host) {
        Some(Ok(url)) => url.to_string(),
        _ => String::new(),
    };
    let key = CacheKey::new(Issuer::Oidc)
        .scope("registry", host)
        .scope("host", &registry.host)
        .scope("endpoint", &endpoint)
        // Every setting of the protocol: an edited entry never answers from an old credential.
        .scope("protocol", &format!("{:?}", registry.protocol))
        .identity("sa.token.sha256", &kcp_plugin::hex::encode(digest.as_ref()));
    let key = request
        .service_account_annotations
        .iter()
        .fold(key, |key, (name, value)| key.identity(name, value));
    key.service_account(sa_token)
}

/// The answer: the credential under the image's registry, cached for its life (or
/// [`UNSTATED_LIFE_CACHE`] when unstated) minus [`CACHE_MARGIN`], never past the
/// service-account token's expiry. `now` is when the credential was obtained.
fn credentials(plan: &Plan<'_>, issued: &Issued, now: SystemTime) -> Credentials {
    let cache_duration = cache_duration(issued.expires_at, plan.sa_expires_at, now);
    tracing::info!(%cache_duration, user = %issued.username, "credential ready for {}", plan.host);
    Credentials::single(
        CacheKeyType::Registry,
        cache_duration,
        plan.host,
        AuthConfig::new(issued.username.clone(), issued.password.clone()),
    )
}

/// [`credentials`]' `cacheDuration`.
pub fn cache_duration(
    expires_at: Option<SystemTime>,
    sa_expires_at: SystemTime,
    now: SystemTime,
) -> GoDuration {
    // At most `MAX_LIFE` whatever the token says: a passthrough token minted for a year (or a
    // test token valid until 2100) is still re-read twice a day.
    let longest = now + crate::answer::MAX_LIFE;
    let bounded = CachePolicy::RemainingMinus(CACHE_MARGIN).cache_duration(
        Some(
            expires_at
                .map_or(sa_expires_at, |t| t.min(sa_expires_at))
                .min(longest),
        ),
        now,
    );
    match expires_at {
        Some(_) => bounded,
        None => bounded.min(GoDuration::from_secs(UNSTATED_LIFE_CACHE.as_secs() as i64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn cache_duration_rules() {
        let now = 1_800_000_000;
        let sa = at(now + 3600);
        let d = |expires: Option<u64>| cache_duration(expires.map(at), sa, at(now)).to_string();
        // The credential's life minus the margin.
        assert_eq!(d(Some(now + 1800)), "25m0s");
        // Never past the service-account token.
        assert_eq!(d(Some(now + 7200)), "55m0s");
        // No stated life: the short default.
        assert_eq!(d(None), "5m0s");
        // Over or nearly over: not cached.
        assert_eq!(d(Some(now + 200)), "0s");
        assert_eq!(d(Some(now - 10)), "0s");
        // A long-lived service-account token (passthrough's life) is capped at 12 h.
        assert_eq!(
            cache_duration(
                Some(at(now + 86_400 * 365)),
                at(now + 86_400 * 365),
                at(now)
            )
            .to_string(),
            "11h55m0s"
        );
        // The short default is still bounded by the service-account token.
        assert_eq!(
            cache_duration(None, at(now + 400), at(now)).to_string(),
            "1m40s"
        );
    }

    #[test]
    fn service_account_tokens_must_be_jwts_still_valid() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let now = 1_800_000_000;
        let jwt = |claims: &str| Secret::new(format!("{}.{}.sig", b64("{}"), b64(claims)));
        assert_eq!(
            sa_token_expiry(&jwt(&format!("{{\"exp\":{}}}", now + 60)), at(now)),
            Ok(at(now + 60))
        );
        assert!(
            sa_token_expiry(&jwt(&format!("{{\"exp\":{}}}", now - 60)), at(now))
                .unwrap_err()
                .starts_with("the service-account token expired 60s ago")
        );
        for bad in [jwt("{}"), Secret::new("opaque"), jwt("{\"exp\":\"soon\"}")] {
            assert!(
                sa_token_expiry(&bad, at(now))
                    .unwrap_err()
                    .starts_with("the service-account token is not a JWT with an exp claim")
            );
        }
    }
}
