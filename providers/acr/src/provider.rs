//! One request, end to end: config → cloud → login server → identity → Entra token and
//! registry challenge (in parallel) → realm check → exchange → kubelet answer.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::{AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret};
use kcp_plugin::Provider;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use kcp_plugin::token_cache::{self, CacheKey, Issuer, RegistryToken, TokenCache};

use crate::annotations::{CLIENT_ID_ANNOTATION, TENANT_ID_ANNOTATION};
use crate::cloud::{ACR_SCOPE, Cloud};
use crate::config::AzureConfig;
use crate::exchange;
use crate::host::{self, Mirror, STANDARD_SUFFIXES, Suffixes, Target};
use crate::identity::{self, Identity};
use crate::identity_bindings::{self, IbConfig};

/// The user name that tells ACR the password is a refresh token.
pub const NULL_GUID: &str = "00000000-0000-0000-0000-000000000000";
/// The anonymous entry upstream adds to every ACR answer, so public repositories still pull
/// when the identity is refused (kubernetes/kubernetes#74715).
pub const ANONYMOUS_KEY: &str = "*.azurecr.*";
/// Upstream's fixed cache time, used when the refresh token's expiry cannot be read.
pub const FALLBACK_CACHE: Duration = Duration::from_secs(60 * 60);
/// Time kept between the kubelet's cache expiry and the refresh token's.
pub const CACHE_MARGIN: Duration = Duration::from_secs(5 * 60);
/// The longest life believed of a refresh token: ACR's live 3 hours. An `exp` further ahead (a
/// broken or hostile token: `exp: 1e18` reads as a date in the year 3e10) is capped here, the
/// same bound the token cache and the runner hold every ACR token to.
pub const MAX_REFRESH_LIFE: Duration = Issuer::Acr.longest_life();
/// At most this much of what is left is kept back from the Entra call for the exchange.
const EXCHANGE_RESERVE: Duration = Duration::from_secs(10);

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct AcrProvider {
    /// The cloud config file's path (part of the token cache key and of messages).
    pub config_path: PathBuf,
    /// The cloud config, read once before the request (see `main`).
    pub config: AzureConfig,
    /// `--registry-mirror` entries.
    pub mirrors: Vec<Mirror>,
    /// Answer service-principal nodes with the raw client ID and secret, as upstream.
    pub sp_passthrough: bool,
    /// An Entra scope other than [`ACR_SCOPE`].
    pub token_scope: Option<String>,
    /// AKS identity bindings (`--ib-*`), when configured.
    pub identity_bindings: Option<IbConfig>,
    /// The on-disk token cache, when turned on.
    pub token_cache: Option<TokenCache>,
}

/// What [`Provider::plan`] decided for a request: everything, when the cloud is known without
/// the network; else nothing yet (a custom cloud's metadata must be fetched first, or its
/// settings are wrong and the fetch reports it), and the fetch plans with the same
/// `AcrProvider::plan_for_cloud` once the cloud is resolved.
pub struct Plan {
    ready: Option<Ready>,
}

/// A plan whose cloud was known offline.
struct Ready {
    cloud: Cloud,
    settled: Settled,
}

/// What a request needs once its cloud is known, decided without any network: the login server
/// (after mirrors), the identity, and the cache key.
struct Settled {
    suffixes: Suffixes,
    target: Target,
    identity: Identity,
    key: Option<CacheKey>,
}

impl Provider for AcrProvider {
    type Plan<'a> = Plan;
    type Error = anyhow::Error;
    const ISSUER: Option<Issuer> = Some(Issuer::Acr);

    /// `None` as well for a cloud whose metadata must be fetched first.
    fn cache_key<'p>(&self, plan: &'p Plan) -> Option<&'p CacheKey> {
        plan.ready.as_ref()?.settled.key.as_ref()
    }

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Plan> {
        let config = &self.config;
        let env = |name: &str| std::env::var(name).ok();
        let Some(cloud) =
            Cloud::resolve_offline(&config.cloud, &config.resource_manager_endpoint, &env)
        else {
            return Ok(Plan { ready: None });
        };
        // A refusal comes after the warning resolving the cloud gives, as on the fetch's way.
        let settled = self
            .plan_for_cloud(request, &cloud)
            .inspect_err(|_| crate::cloud::warn_if_unknown(&config.cloud))?;
        Ok(Plan {
            ready: Some(Ready { cloud, settled }),
        })
    }

    /// The refresh token of `plan` from the token cache alone: `None` as well for a cloud whose
    /// metadata must be fetched and for passthrough. Runs before any async runtime or HTTP
    /// client exists.
    fn answer_from_cache<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: &Plan,
    ) -> Option<Credentials> {
        let cache = self.token_cache.as_ref()?;
        let Ready { cloud, settled } = plan.ready.as_ref()?;
        if self.passthrough_of(&settled.identity).is_some() {
            return None;
        }
        let token = cache.get(settled.key.as_ref()?)?;
        crate::cloud::warn_if_unknown(&self.config.cloud);
        log_plan(self, request, &settled.target, cloud);
        Some(token_answer(
            &settled.target,
            token,
            token_cache::Source::Cache,
        ))
    }

    /// Fetches ACR credentials for `plan` (resolving the cloud first when the plan waits for it).
    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Plan,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let config = &self.config;
        // One client for every call of the run; its connections and trust store are set up on
        // first use, so the passthrough answer loads no certificates.
        let http = HttpClient::from_env();
        let (cloud, settled) = match plan.ready {
            Some(Ready { cloud, settled }) => {
                crate::cloud::warn_if_unknown(&config.cloud);
                (cloud, settled)
            }
            None => {
                let env = |name: &str| std::env::var(name).ok();
                let cloud = Cloud::resolve(
                    &config.cloud,
                    &config.resource_manager_endpoint,
                    &env,
                    &http,
                    deadline,
                )
                .await?;
                let settled = self.plan_for_cloud(request, &cloud)?;
                (cloud, settled)
            }
        };
        let Settled {
            suffixes,
            target,
            identity,
            key,
        } = settled;
        log_plan(self, request, &target, &cloud);

        if let Some((client_id, secret)) = self.passthrough_of(&identity) {
            if !self.sp_passthrough {
                tracing::warn!(
                    "{}",
                    identity::no_tenant_warning(&self.config_path.display().to_string())
                );
            }
            tracing::info!(
                client_id,
                "service-principal passthrough: answering with the client ID and secret"
            );
            return Ok(passthrough(client_id, secret, &cloud.acr_suffix));
        }

        let scope = self.scope();
        let (token, source) = token_cache::get_or_fetch(
            self.token_cache.as_ref(),
            key.as_ref(),
            deadline,
            async || {
                let left = deadline.remaining();
                let budget = left.saturating_sub(EXCHANGE_RESERVE.min(left / 4));
                tracing::info!(identity = %identity.describe(), scope, "getting an Entra token");
                // The challenge needs no secret, so it runs alongside the token request; the
                // token only leaves once the realm has passed the check.
                let (entra, exchange_target) = tokio::try_join!(
                    identity::entra_token(&identity, &cloud, scope, &http, budget, deadline),
                    exchange::discover(&http, &target.login, &suffixes, deadline),
                )?;
                let (refresh, registry_now) = exchange::exchange(
                    &http,
                    &exchange_target,
                    &entra,
                    identity.exchange_tenant(config),
                    deadline,
                )
                .await?;
                anyhow::Ok(refresh_token(refresh, registry_now))
            },
        )
        .await?;
        Ok(token_answer(&target, token, source))
    }
}

impl AcrProvider {
    /// Every check and choice that needs no network once the cloud is known: login server,
    /// mirrors, identity, cache key. Logs nothing (the cache look and the fetch log the plan).
    fn plan_for_cloud(
        &self,
        request: &CredentialProviderRequest,
        cloud: &Cloud,
    ) -> anyhow::Result<Settled> {
        let config = &self.config;
        let config_path = self.config_path.display().to_string();
        let env = |name: &str| std::env::var(name).ok();
        let suffixes = Suffixes::new([cloud.acr_suffix.as_str()]);
        let image = &request.image_ref;
        let target = host::resolve(
            image.registry(),
            image.host(),
            image.port().is_some(),
            &self.mirrors,
            &suffixes,
        )?;
        // A mirrored image is pulled with the node's identity, as upstream (#9841): the pod's
        // federated identity is scoped to the registries it names, not to a mirror's source.
        let sa_identity = if target.mirrored_from.is_some() {
            None
        } else if let Some(ib_config) = &self.identity_bindings {
            Some(binding_identity(request, ib_config)?)
        } else {
            identity::service_account_identity(
                request.service_account_token.as_ref(),
                &request.service_account_annotations,
                &config.tenant_id,
            )?
        };
        let identity = match sa_identity {
            Some(identity) => identity,
            None => identity::node_identity(config, &config_path, &env)?,
        };
        let key = cache_key(
            &target.login.host,
            cloud,
            self.scope(),
            &identity,
            &config_path,
        );
        Ok(Settled {
            suffixes,
            target,
            identity,
            key,
        })
    }

    /// The Entra scope tokens are requested for.
    fn scope(&self) -> &str {
        self.token_scope.as_deref().unwrap_or(ACR_SCOPE)
    }

    /// The client ID and secret to answer with, when `identity` is a service principal and
    /// passthrough is on, or the principal has no tenant to exchange in (as upstream answers it).
    fn passthrough_of<'a>(&self, identity: &'a Identity) -> Option<(&'a str, &'a Secret)> {
        match identity {
            Identity::ServicePrincipal {
                client_id, secret, ..
            } if self.sp_passthrough || identity::lacks_tenant(identity) => {
                Some((client_id, secret))
            }
            _ => None,
        }
    }
}

/// The info lines naming the login server and, when a pod's token is sent but unused, why.
fn log_plan(
    provider: &AcrProvider,
    request: &CredentialProviderRequest,
    target: &Target,
    cloud: &Cloud,
) {
    tracing::info!(login_server = %target.login.host, mirrored_from = ?target.mirrored_from, cloud = %cloud.name, "ACR login server");
    if request.service_account_token.is_none() {
        return;
    }
    if target.mirrored_from.is_some() {
        tracing::info!(
            "mirrored image: the service-account token is not used; pulling with the node's identity"
        );
    } else if provider.identity_bindings.is_none()
        && !request
            .service_account_annotations
            .contains_key(CLIENT_ID_ANNOTATION)
    {
        tracing::info!(
            "the request has a service-account token but no {} annotation; using the node's identity",
            CLIENT_ID_ANNOTATION
        );
    }
}

/// The answer for a refresh token, fetched or cached.
fn token_answer(target: &Target, token: RegistryToken, source: token_cache::Source) -> Credentials {
    let cache_duration = cache_duration(token.expires_at, token.obtained_at);
    tracing::info!(login_server = %target.login.host, %cache_duration, ?source, "ACR refresh token ready");
    answer(&target.auth_keys, &token.password, cache_duration)
}

/// The identity-bindings identity of a request: as upstream, every image that is not mirrored
/// needs the pod's service-account token (static pods have none, and fail), and a client ID from
/// the service account's annotation or `--ib-default-client-id`.
fn binding_identity(
    request: &CredentialProviderRequest,
    config: &IbConfig,
) -> anyhow::Result<Identity> {
    let Some(token) = &request.service_account_token else {
        anyhow::bail!(
            "identity bindings (--ib-sni-name) are configured but the request has no service-account token: \
             service account token not found in request; the kubelet sends one when the CredentialProviderConfig \
             has tokenAttributes (serviceAccountTokenAudience api://AKSIdentityBinding) and the pod runs as a service account \
             (static pods have none)"
        );
    };
    let annotations = &request.service_account_annotations;
    let client_id = identity_bindings::client_id(
        annotations.get(CLIENT_ID_ANNOTATION).map(String::as_str),
        config,
    )?;
    let tenant = identity_bindings::tenant_id(
        annotations.get(TENANT_ID_ANNOTATION).map(String::as_str),
        config,
    );
    Ok(Identity::IdentityBinding {
        client_id,
        tenant,
        token: token.clone(),
        config: Box::new(config.clone()),
    })
}

/// Where Entra and managed-identity endpoints can be redirected, and the workload-identity
/// variables: part of who a token is for. All of it says how this node signs in to Entra, so a
/// shared identity (fleet mode) stands in for it together with azure.json's identity.
const ENDPOINT_ENV: &[&str] = &[
    "AZURE_AUTHORITY_HOST",
    "IDENTITY_ENDPOINT",
    "IMDS_ENDPOINT",
    "MSI_ENDPOINT",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_FEDERATED_TOKEN_FILE",
];

/// The token-cache key: login server, cloud and scope, and the identity (never its secret; a
/// pod's identity by its service account's claims). `None` (no caching) for a service-account
/// token whose claims cannot be read.
fn cache_key(
    login_server: &str,
    cloud: &Cloud,
    scope: &str,
    identity: &Identity,
    config_path: &str,
) -> Option<CacheKey> {
    let key = CacheKey::new(Issuer::Acr)
        .scope("login-server", login_server)
        .scope("cloud", &cloud.name)
        .scope("scope", scope)
        .node_identity_env(ENDPOINT_ENV)
        .node_identity("identity", &identity.describe())
        .node_identity("config", config_path);
    match identity {
        Identity::ServiceAccount { token, .. } | Identity::IdentityBinding { token, .. } => {
            key.service_account(token)
        }
        _ => Some(key),
    }
}

/// The refresh token as the registry handed it out just now: the null GUID, and its `exp` claim
/// (unknown when unreadable), written by the registry's clock, which read `registry_now` (the
/// answer's `Date`). [`RegistryToken::with_issuer_clock`] counts its life from the later clock;
/// a life longer than [`MAX_REFRESH_LIFE`] is capped to it.
pub fn refresh_token(refresh: Secret, registry_now: Option<SystemTime>) -> RegistryToken {
    let exp = kcp_plugin::jwt::expiry(refresh.expose());
    let mut token =
        RegistryToken::obtained_now(NULL_GUID, refresh, exp).with_issuer_clock(registry_now);
    token.expires_at = cap_life(token.expires_at, token.obtained_at);
    token
}

/// `expires_at`, but no later than [`MAX_REFRESH_LIFE`] after `obtained_at`.
fn cap_life(expires_at: Option<SystemTime>, obtained_at: SystemTime) -> Option<SystemTime> {
    match obtained_at.checked_add(MAX_REFRESH_LIFE) {
        Some(latest) => expires_at.map(|exp| exp.min(latest)),
        None => expires_at,
    }
}

/// `cacheDuration`: the refresh token's remaining life minus [`CACHE_MARGIN`], or
/// [`FALLBACK_CACHE`] when its expiry is unknown.
pub fn cache_duration(expires_at: Option<SystemTime>, now: SystemTime) -> GoDuration {
    match expires_at {
        Some(exp) => CachePolicy::RemainingMinus(CACHE_MARGIN).cache_duration(Some(exp), now),
        None => GoDuration::from_std(FALLBACK_CACHE),
    }
}

/// The token answer: the null GUID and the refresh token under every key, plus the anonymous entry.
fn answer(keys: &[String], refresh: &Secret, cache_duration: GoDuration) -> Credentials {
    let mut auth = std::collections::BTreeMap::new();
    for key in keys {
        auth.insert(key.clone(), AuthConfig::new(NULL_GUID, refresh.clone()));
    }
    auth.entry(ANONYMOUS_KEY.to_owned())
        .or_insert_with(|| AuthConfig::new("", ""));
    Credentials {
        cache_key_type: CacheKeyType::Registry,
        cache_duration: Some(cache_duration),
        auth,
    }
}

/// Upstream's service-principal answer: the raw client ID and secret under the standard ACR
/// wildcards (and the custom suffix when it is an `.azurecr.` one), plus the anonymous entry.
fn passthrough(client_id: &str, secret: &Secret, suffix: &str) -> Credentials {
    let mut auth = std::collections::BTreeMap::new();
    for s in STANDARD_SUFFIXES {
        auth.insert(format!("*.{s}"), AuthConfig::new(client_id, secret.clone()));
    }
    let custom = format!("*.{suffix}");
    if suffix.contains("azurecr.") && !auth.contains_key(&custom) {
        auth.insert(custom, AuthConfig::new(client_id, secret.clone()));
    }
    auth.insert(ANONYMOUS_KEY.to_owned(), AuthConfig::new("", ""));
    Credentials {
        cache_key_type: CacheKeyType::Registry,
        cache_duration: Some(GoDuration::from_std(FALLBACK_CACHE)),
        auth,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn jwt(exp: u64) -> Secret {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        Secret::new(format!(
            "{}.{}.sig",
            b64("{}"),
            b64(&format!(r#"{{"exp":{exp}}}"#))
        ))
    }

    #[test]
    fn cache_duration_follows_the_refresh_token() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(
            cache_duration(at(1_800_000_000 + 3 * 3600), now).to_string(),
            "2h55m0s"
        );
        assert_eq!(
            cache_duration(at(1_800_000_000 + 60), now),
            GoDuration::ZERO
        );
        assert_eq!(cache_duration(None, now).to_string(), "1h0m0s");
    }

    #[test]
    fn a_registry_clock_ahead_of_the_node_shortens_the_life() {
        let secs = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        let date = kcp_plugin::time::parse_http_date;
        let node_clock_expiry = |refresh: &Secret, server_date: Option<&str>| {
            refresh_token(refresh.clone(), server_date.and_then(date)).expires_at
        };
        let exp = secs(SystemTime::now()) + 3 * 3600;
        // A registry clock behind the node's changes nothing: the node's clock counts.
        let behind = node_clock_expiry(&jwt(exp), Some("Sun, 06 Nov 1994 08:49:37 GMT")).unwrap();
        assert!(secs(behind).abs_diff(exp) <= 1, "{} vs {exp}", secs(behind));
        assert_eq!(node_clock_expiry(&jwt(exp), None).map(secs), Some(exp));
        // A registry clock past the token's exp: no life left, whatever the node thinks.
        let ahead = node_clock_expiry(&jwt(exp), Some("Fri, 01 Jan 2100 00:00:00 GMT")).unwrap();
        assert!(secs(ahead) <= secs(SystemTime::now()));
        assert_eq!(node_clock_expiry(&Secret::new("opaque"), None), None);
        // The token is the null GUID's, obtained now, and counts its answer from then.
        let token = refresh_token(jwt(exp), None);
        assert_eq!(token.username, NULL_GUID);
        let left = i64::try_from(exp - secs(token.obtained_at)).unwrap();
        assert_eq!(
            cache_duration(token.expires_at, token.obtained_at),
            GoDuration::from_secs(left - 300)
        );
    }

    /// A refresh token whose `exp` is `value` (any JSON), as the registry would hand it out.
    fn jwt_with_exp(value: &str) -> Secret {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        Secret::new(format!(
            "{}.{}.sig",
            b64("{}"),
            b64(&format!(r#"{{"exp":{value}}}"#))
        ))
    }

    /// Odd `exp` values from the registry: a date in the year 3e10 used to become a 292-year
    /// `cacheDuration` (GoDuration's ceiling); now the life is capped at [`MAX_REFRESH_LIFE`].
    /// Unreadable ones fall back to upstream's hour, past ones are not cached, none panics.
    #[test]
    fn odd_refresh_token_expiries_are_capped_or_unknown_never_a_panic() {
        let capped = GoDuration::from_std(MAX_REFRESH_LIFE - CACHE_MARGIN);
        let far_dates = ["1000000000000000000", "9223372036854775807", "9.2e18"];
        for exp in far_dates {
            // A registry clock in 9999 still leaves the token centuries: capped all the same.
            for date in [None, Some("Fri, 31 Dec 9999 23:59:59 GMT")] {
                let token = refresh_token(
                    jwt_with_exp(exp),
                    date.and_then(kcp_plugin::time::parse_http_date),
                );
                assert_eq!(
                    cache_duration(token.expires_at, token.obtained_at),
                    capped,
                    "exp {exp}, Date {date:?}"
                );
            }
        }
        for (exp, want) in [
            ("1e300", "1h0m0s"),
            ("-5", "1h0m0s"),
            ("0", "0s"),
            ("3.5", "0s"),
            ("\"3600\"", "1h0m0s"),
            ("18446744073709551616", "1h0m0s"),
            ("-9223372036854775808", "1h0m0s"),
        ] {
            let token = refresh_token(jwt_with_exp(exp), None);
            assert_eq!(
                cache_duration(token.expires_at, token.obtained_at).to_string(),
                want,
                "exp {exp}"
            );
        }
    }

    /// docs/providers/acr.md “Test vectors”: upstream's SP answer has 5 entries for
    /// `foo.azurecr.io` on public cloud.
    #[test]
    fn passthrough_matches_upstream() {
        let c = passthrough("foo", &Secret::new("bar"), "azurecr.io");
        let keys: Vec<&str> = c.auth.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "*.azurecr.*",
                "*.azurecr.cn",
                "*.azurecr.de",
                "*.azurecr.io",
                "*.azurecr.us"
            ]
        );
        let c = passthrough("foo", &Secret::new("bar"), "azurecr.my.cloud");
        assert!(c.auth.contains_key("*.azurecr.my.cloud"));
        let c = passthrough("foo", &Secret::new("bar"), "registry.stack.local");
        assert_eq!(
            c.auth.len(),
            5,
            "a suffix without .azurecr. never gets the secret"
        );
    }
}
