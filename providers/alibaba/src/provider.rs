//! Which identity and which Container Registry call answer a request, and how the registry
//! login becomes the kubelet's answer.
//!
//! [`AlibabaProvider::plan`] decides everything without network: the host (refused unless it is
//! Container Registry's, see [`crate::host`]), the identity, in order: a pod's RAM role (RRSA: the
//! request carries a service-account token and the service account names a role), static keys
//! from the environment, the node's RAM role from the metadata server; and the token cache key.
//! The fetch then resolves the region when the host names none, obtains the access key, finds an
//! Enterprise instance's ID when only its name is known ([`crate::instances`]) and logs in.

pub mod config;

use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};
use kcp_kubelet::{AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret};
use kcp_plugin::Provider;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;
use kcp_plugin::token_cache::{self, CacheKey, Issuer, RegistryToken, TokenCache};
use url::Url;

use crate::api::ApiError;
use crate::cr::{self, RegistryLogin};
use crate::credentials::AccessKey;
use crate::host::{self, ConfiguredInstances, InstanceId, Region, Registry};
use crate::instances::InstanceMap;
use crate::metadata::Metadata;
use crate::sts;
use config::OidcProviderArn;

/// Time kept between the end of the kubelet's cache entry and the login's expiry.
pub const CACHE_MARGIN: Duration = Duration::from_secs(5 * 60);

/// The default service-account annotation naming a pod's RAM role (ACK's pod identity webhook
/// reads the same one).
pub const DEFAULT_ROLE_ANNOTATION: &str = "pod-identity.alibabacloud.com/role-name";

/// Role session names STS accepts: `[A-Za-z0-9.@_-]`, 2..64 characters.
const SESSION_NAME_MAX: usize = 64;

/// RRSA settings: how a pod's service-account token becomes a RAM role's credentials.
#[derive(Debug, Clone)]
pub struct Rrsa {
    /// `--oidc-provider-arn`: the cluster issuer's OIDC provider in RAM.
    pub oidc_provider_arn: Option<OidcProviderArn>,
    /// `--account-id`: the account of a role given by name (default: the provider ARN's).
    pub account_id: Option<String>,
    /// `--role-annotation-key`: the service-account annotation naming the role to assume
    /// (default `pod-identity.alibabacloud.com/role-name`).
    pub role_annotation_key: String,
    /// `--session-duration`: `DurationSeconds`.
    pub session_duration: Duration,
}

/// The node's own identity: static keys when the environment has them, else its RAM role.
#[derive(Debug, Clone)]
pub enum NodeIdentity {
    /// `ALIBABA_CLOUD_ACCESS_KEY_ID`/`_SECRET` (+ `ALIBABA_CLOUD_SECURITY_TOKEN`).
    StaticKey(AccessKey),
    /// The metadata server's role credentials; `role` from `ALIBABA_CLOUD_ECS_METADATA`, else
    /// the role the server lists.
    RamRole {
        /// The role name, when given.
        role: Option<String>,
    },
}

/// Endpoint overrides (private clouds, VPC endpoints, loopback fakes).
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// `--sts-endpoint`; default `https://sts[-vpc].<region>.aliyuncs.com`.
    pub sts: Option<Url>,
    /// `ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED=true`: the default STS endpoint is `sts-vpc`.
    pub sts_vpc: bool,
    /// `--cr-endpoint`; default `https://cr.<region>.aliyuncs.com`.
    pub cr: Option<Url>,
}

/// Everything one run needs, checked at start.
#[derive(Debug, Clone)]
pub struct AlibabaProvider {
    /// `--instance` hosts.
    pub instances: ConfiguredInstances,
    /// `--region`: for hosts that name none.
    pub region: Option<Region>,
    /// How a service-account token becomes a role's keys (RAM Roles for Service Accounts).
    pub rrsa: Rrsa,
    /// The node's identity.
    pub node: NodeIdentity,
    /// The metadata server (`--metadata-endpoint`).
    pub metadata_endpoint: Url,
    /// Endpoint overrides.
    pub endpoints: Endpoints,
    /// The on-disk token cache (and the instance map beside it), when turned on.
    pub token_cache: Option<TokenCache>,
}

/// Whose access key signs the registry calls.
#[derive(Debug)]
enum Identity<'a> {
    /// A pod's RAM role, assumed with its service-account token.
    Rrsa {
        role_arn: String,
        provider_arn: &'a OidcProviderArn,
        token: &'a Secret,
        session_name: String,
    },
    /// `ALIBABA_CLOUD_ACCESS_KEY_ID`/`_SECRET` (and `_SECURITY_TOKEN`) from the environment.
    StaticKey(&'a AccessKey),
    /// The node's RAM role.
    RamRole(Option<&'a str>),
}

/// What [`AlibabaProvider::plan`] decided for one request.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The image's registry as written: the auth key of the answer.
    host: &'a str,
    registry: Registry,
    identity: Identity<'a>,
    cache_key: Option<CacheKey>,
    /// A service-account token came without a role annotation: the node's identity is used.
    node_fallback: bool,
}

impl Provider for AlibabaProvider {
    type Plan<'a> = Plan<'a>;
    type Error = anyhow::Error;
    const ISSUER: Option<Issuer> = Some(Issuer::Alibaba);

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Plan<'a>> {
        let host = request.image_ref.registry();
        let registry = host::classify(host, &self.instances)?;
        let annotation = request
            .service_account_annotations
            .get(&self.rrsa.role_annotation_key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty());
        let (identity, node_fallback) = match (&request.service_account_token, annotation) {
            (Some(token), Some(role)) => (self.rrsa_identity(token, role)?, false),
            (token, _) => (self.node_identity(), token.is_some()),
        };
        let cache_key = self.cache_key_for(&registry, &identity);
        Ok(Plan {
            host,
            registry,
            identity,
            cache_key,
            node_fallback,
        })
    }

    fn answer_from_cache<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: &Plan<'a>,
    ) -> Option<Credentials> {
        let cache = self.token_cache.as_ref()?;
        let hit = cache.get(plan.cache_key.as_ref()?)?;
        self.log_plan(plan);
        Some(answer(request, plan, &hit))
    }

    fn cache_key<'p>(&self, plan: &'p Plan<'_>) -> Option<&'p CacheKey> {
        plan.cache_key.as_ref()
    }

    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Plan<'a>,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let http = HttpClient::from_env();
        self.log_plan(&plan);
        let (token, source) = token_cache::get_or_fetch(
            self.token_cache.as_ref(),
            plan.cache_key.as_ref(),
            deadline,
            async || self.login(&http, &plan, deadline).await,
        )
        .await?;
        tracing::debug!(?source, "registry login ready");
        Ok(answer(request, &plan, &token))
    }
}

impl AlibabaProvider {
    /// The pod's role from its annotation, or a one-line refusal.
    fn rrsa_identity<'a>(&'a self, token: &'a Secret, role: &str) -> anyhow::Result<Identity<'a>> {
        let Some(provider_arn) = &self.rrsa.oidc_provider_arn else {
            bail!(
                "the service account names a RAM role ({}) but no OIDC provider is configured: set --oidc-provider-arn \
                 (ALIBABA_CLOUD_OIDC_PROVIDER_ARN) to the cluster's acs:ram::<account>:oidc-provider/<name>",
                self.rrsa.role_annotation_key
            );
        };
        let account = self
            .rrsa
            .account_id
            .as_deref()
            .unwrap_or(provider_arn.account());
        let role_arn = config::role_arn(&self.rrsa.role_annotation_key, role, account)
            .map_err(anyhow::Error::msg)?;
        Ok(Identity::Rrsa {
            role_arn,
            provider_arn,
            token,
            session_name: session_name(token),
        })
    }

    /// The node's own identity.
    fn node_identity(&self) -> Identity<'_> {
        match &self.node {
            NodeIdentity::StaticKey(key) => Identity::StaticKey(key),
            NodeIdentity::RamRole { role } => Identity::RamRole(role.as_deref()),
        }
    }

    /// The token cache key: scope (which login: edition, instance, region, endpoint) in clear;
    /// whose identity hashed. The node's own credentials (static key ID, metadata role) are node
    /// parts, so fleet mode's shared identity stands in for them; a pod's role is the service
    /// account's (never shared between nodes). `None` (not cached) for a service-account token
    /// without readable claims.
    fn cache_key_for(&self, registry: &Registry, identity: &Identity<'_>) -> Option<CacheKey> {
        let key = CacheKey::new(Issuer::Alibaba);
        let key = match registry {
            Registry::Enterprise { name, region } => key
                .scope("edition", "enterprise")
                .scope("region", region.as_str())
                .scope("instance-name", name),
            Registry::Configured { id } => key
                .scope("edition", "enterprise")
                .scope("region", self.region.as_ref().map_or("", Region::as_str))
                .scope("instance", id.as_str()),
            Registry::Personal { region } | Registry::PersonalInstance { region, .. } => key
                .scope("edition", "personal")
                .scope("region", region.as_str()),
        };
        let key = key.scope(
            "cr-endpoint",
            self.endpoints.cr.as_ref().map_or("", Url::as_str),
        );
        match identity {
            Identity::Rrsa {
                role_arn,
                provider_arn,
                token,
                ..
            } => key
                .identity("role", role_arn)
                .identity("oidc-provider", provider_arn.as_str())
                .identity("sts-endpoint", &self.sts_setting())
                .service_account(token),
            Identity::StaticKey(access_key) => {
                Some(key.node_identity("access-key-id", &access_key.id))
            }
            Identity::RamRole(role) => Some(
                key.node_identity("metadata", self.metadata_endpoint.as_str())
                    .node_identity("ecs-role", role.unwrap_or("")),
            ),
        }
    }

    /// The STS endpoint setting, for the cache key.
    fn sts_setting(&self) -> String {
        match &self.endpoints.sts {
            Some(url) => url.to_string(),
            None if self.endpoints.sts_vpc => "default-vpc".to_owned(),
            None => "default".to_owned(),
        }
    }

    /// The info lines of a run: which registry, which identity, and why the node's.
    fn log_plan(&self, plan: &Plan<'_>) {
        let identity = match &plan.identity {
            Identity::Rrsa { role_arn, .. } => format!("RRSA role {role_arn}"),
            Identity::StaticKey(key) => format!("static access key {}", key.id),
            Identity::RamRole(Some(role)) => format!("the node's RAM role {role}"),
            Identity::RamRole(None) => "the node's RAM role".to_owned(),
        };
        if plan.node_fallback {
            tracing::info!(
                annotation = %self.rrsa.role_annotation_key,
                "the service account has no RAM role annotation; using the node's identity ({identity})"
            );
        } else {
            tracing::debug!(registry = plan.host, kind = ?plan.registry, "Container Registry login as {identity}");
        }
    }

    /// A registry login for `plan`: region, access key, instance ID, then the token call.
    async fn login(
        &self,
        http: &HttpClient,
        plan: &Plan<'_>,
        deadline: Deadline,
    ) -> anyhow::Result<RegistryToken> {
        let mut region = plan.registry.region().or(self.region.as_ref()).cloned();
        let metadata = Metadata::new(self.metadata_endpoint.clone());
        let key = self
            .access_key(http, &metadata, plan, &mut region, deadline)
            .await?;
        let cr = match &self.endpoints.cr {
            Some(url) => url.clone(),
            None => {
                let region = self
                    .resolve_region(http, &metadata, &mut region, deadline)
                    .await?;
                default_endpoint("cr", &region)?
            }
        };
        let login = match &plan.registry {
            Registry::Personal { .. } | Registry::PersonalInstance { .. } => {
                cr::personal_login(http, &cr, &key, deadline)
                    .await
                    .map_err(|e| call_failed(e, &plan.identity))?
            }
            Registry::Configured { id } => {
                cr::enterprise_login(http, &cr, &key, id.as_str(), deadline)
                    .await
                    .map_err(|e| call_failed(e, &plan.identity))?
            }
            Registry::Enterprise { name, region } => {
                self.enterprise_by_name(http, &cr, &key, plan, name, region, deadline)
                    .await?
            }
        };
        // The login never outlives the credentials that obtained it.
        let expires_at = key
            .expiration
            .map_or(login.expires_at, |k| k.min(login.expires_at));
        tracing::info!(registry = plan.host, "Container Registry login obtained");
        Ok(
            RegistryToken::obtained_now(login.username, login.password, Some(expires_at))
                .with_issuer_clock(login.issuer_now),
        )
    }

    /// The region of the run: the host's, `--region`, else the metadata server's (asked once).
    async fn resolve_region(
        &self,
        http: &HttpClient,
        metadata: &Metadata,
        region: &mut Option<Region>,
        deadline: Deadline,
    ) -> anyhow::Result<Region> {
        if let Some(region) = region {
            return Ok(region.clone());
        }
        let text = metadata.region(http, deadline).await.map_err(|e| {
            anyhow!("{e} (the host names no region: set --region / ALIBABA_CLOUD_REGION_ID, or check the metadata server)")
        })?;
        let found = Region::parse(text.trim()).ok_or_else(|| {
            anyhow!(
                "the metadata server's region-id {:?} is not a region ID: set --region / ALIBABA_CLOUD_REGION_ID",
                kcp_kubelet::protocol::clipped(&text)
            )
        })?;
        *region = Some(found.clone());
        Ok(found)
    }

    /// The access key of the plan's identity.
    async fn access_key(
        &self,
        http: &HttpClient,
        metadata: &Metadata,
        plan: &Plan<'_>,
        region: &mut Option<Region>,
        deadline: Deadline,
    ) -> anyhow::Result<AccessKey> {
        match &plan.identity {
            Identity::StaticKey(key) => Ok((*key).clone()),
            Identity::RamRole(role) => metadata
                .role_credentials(http, *role, deadline)
                .await
                .map_err(|e| anyhow!("{e}")),
            Identity::Rrsa {
                role_arn,
                provider_arn,
                token,
                session_name,
            } => {
                let endpoint = match &self.endpoints.sts {
                    Some(url) => url.clone(),
                    None => {
                        let region = self
                            .resolve_region(http, metadata, region, deadline)
                            .await?;
                        let service = if self.endpoints.sts_vpc {
                            "sts-vpc"
                        } else {
                            "sts"
                        };
                        default_endpoint(service, &region)?
                    }
                };
                let request = sts::AssumeRoleWithOidc {
                    role_arn,
                    oidc_provider_arn: provider_arn.as_str(),
                    oidc_token: token,
                    session_name,
                    duration: self.rrsa.session_duration,
                };
                let key = sts::assume_role_with_oidc(http, &endpoint, &request, deadline)
                    .await
                    .map_err(|e| anyhow!("{e} (RRSA role {role_arn})"))?;
                tracing::info!(role_arn = %role_arn, "assumed the pod's RAM role with its service-account token");
                Ok(key)
            }
        }
    }

    /// The login of an Enterprise instance known by name: its ID remembered on disk, else
    /// listed (and remembered); a remembered ID Container Registry no longer knows is dropped
    /// and the instances listed again, once.
    #[allow(clippy::too_many_arguments)]
    async fn enterprise_by_name(
        &self,
        http: &HttpClient,
        cr: &Url,
        key: &AccessKey,
        plan: &Plan<'_>,
        name: &str,
        region: &Region,
        deadline: Deadline,
    ) -> anyhow::Result<RegistryLogin> {
        let map = self
            .token_cache
            .as_ref()
            .map(|c| InstanceMap::new(c.dir(), region, &fingerprint(&plan.identity, self)));
        if let Some(map) = &map
            && let Some(id) = map.get(name, SystemTime::now())
        {
            match cr::enterprise_login(http, cr, key, id.as_str(), deadline).await {
                Ok(login) => return Ok(login),
                Err(e) if instance_gone(&e) => {
                    tracing::info!(name, id = %id, "the remembered instance ID is gone; listing instances again");
                    map.forget(name);
                }
                Err(e) => return Err(call_failed(e, &plan.identity)),
            }
        }
        let instance = cr::find_instance(http, cr, key, name, deadline)
            .await
            .map_err(|e| call_failed(e, &plan.identity))?
            .ok_or_else(|| {
                anyhow!(
                    "no Container Registry Enterprise instance named {name} in region {region} for this identity: \
                     check the host, or name it with --instance HOST=cri-…"
                )
            })?;
        let id = InstanceId::parse(&instance.id).with_context(|| {
            format!(
                "cr ListInstance answered instance {name} with ID {:?}, which is not an instance ID (cri-…): name it with --instance HOST=cri-…",
                kcp_kubelet::protocol::clipped(&instance.id)
            )
        })?;
        if let Some(map) = &map {
            map.put(name, &id, SystemTime::now());
        }
        cr::enterprise_login(http, cr, key, id.as_str(), deadline)
            .await
            .map_err(|e| call_failed(e, &plan.identity))
    }
}

/// A Container Registry call's failure, with whose identity it was made.
fn call_failed(e: ApiError, identity: &Identity<'_>) -> anyhow::Error {
    match identity {
        Identity::Rrsa { role_arn, .. } => anyhow!("{e} (as RRSA role {role_arn})"),
        Identity::StaticKey(key) => anyhow!("{e} (as access key {})", key.id),
        Identity::RamRole(_) => anyhow!("{e} (as the node's RAM role)"),
    }
}

/// Whether Container Registry said the instance ID does not exist.
fn instance_gone(e: &ApiError) -> bool {
    e.code().is_some_and(is_instance_gone_code)
}

/// The error codes meaning "no such instance" (`INSTANCE_NOT_EXIST` and its spellings).
fn is_instance_gone_code(code: &str) -> bool {
    let code = code.to_ascii_lowercase().replace(['_', '.'], "");
    code.contains("instance") && (code.contains("notexist") || code.contains("notfound"))
}

/// What identifies the caller for the instance map (never a secret).
fn fingerprint(identity: &Identity<'_>, provider: &AlibabaProvider) -> String {
    match identity {
        Identity::Rrsa { role_arn, .. } => format!("rrsa:{role_arn}"),
        Identity::StaticKey(key) => format!("access-key:{}", key.id),
        Identity::RamRole(role) => format!(
            "ecs-role:{}@{}",
            role.unwrap_or(""),
            provider.metadata_endpoint
        ),
    }
}

/// `https://<service>.<region>.aliyuncs.com`.
fn default_endpoint(service: &str, region: &Region) -> anyhow::Result<Url> {
    Url::parse(&format!("https://{service}.{region}.aliyuncs.com"))
        .map_err(|e| anyhow!("the {service} endpoint of region {region}: {e}"))
}

/// `RoleSessionName` for a pod's token: its namespace and service account, only the characters
/// STS accepts, 2..64 of them; the binary's name when the token has no such claims.
fn session_name(token: &Secret) -> String {
    let raw = kcp_plugin::jwt::ServiceAccountClaims::from_token(token.expose())
        .map(|c| format!("{}.{}", c.namespace, c.name))
        .unwrap_or_default();
    let clean: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '@' | '_' | '-'))
        .take(SESSION_NAME_MAX)
        .collect();
    if clean.len() < 2 {
        "alibaba-credential-provider".to_owned()
    } else {
        clean
    }
}

/// The kubelet's answer: the login under the image's registry host exactly, `Registry` cache
/// key, `cacheDuration` the login's remaining life minus [`CACHE_MARGIN`].
fn answer(
    request: &CredentialProviderRequest,
    plan: &Plan<'_>,
    token: &RegistryToken,
) -> Credentials {
    let _ = request;
    let cache_duration = CachePolicy::RemainingMinus(CACHE_MARGIN)
        .cache_duration(token.expires_at, token.obtained_at);
    Credentials::single(
        CacheKeyType::Registry,
        cache_duration,
        plan.host,
        AuthConfig::new(token.username.clone(), token.password.clone()),
    )
}

#[cfg(test)]
mod tests;
