//! The ECR token source: which API to call for an image, with which credentials, and how its
//! answer maps into the kubelet response.

use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};
use aws_credential_types::Credentials as AwsCredentials;
use aws_sdk_ecr::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;
use base64::Engine;
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::{AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret};
use kcp_plugin::Provider;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::logging::error_chain;
use kcp_plugin::token_cache::{self, CacheKey, Issuer, RegistryToken, TokenCache};

use crate::aws::{self, Endpoints};
use crate::host::{self, RegistryKind};
use crate::mirrors_and_roles::{EcrMirror, RoleArn, Roles};
use crate::pod_identity::{self, NoAssociation, PodIdentity};
use crate::roles_anywhere::{Loaded, RolesAnywhere};

mod sts;
use sts::{AssumedRole, assume_role, assume_role_as_node};

/// ECR Public's API lives in us-east-1 only (for the `aws` partition).
const PUBLIC_REGION: &str = "us-east-1";
/// Upstream's fallback role ARN variable for service-account mode.
pub const ROLE_ARN_ENV: &str = "AWS_ECR_ROLE_ARN";
/// How long an ECR authorization token is valid (AWS documents 12 hours). A later `expiresAt` (a
/// broken or hostile answer: `1e300` reads as the year 292 billion) is capped to this, so neither
/// the kubelet nor the token cache keeps the token for centuries.
pub const MAX_TOKEN_LIFE: Duration = Issuer::Ecr.longest_life();

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct EcrProvider {
    /// Refuse hosts that are not ECR (nor a mirror source) instead of answering with a
    /// default-region token; set by `--strict-hosts` and implied by any mirror.
    pub strict_hosts: bool,
    /// `--registry-mirror`: sources answered with a token of an ECR private registry.
    pub mirrors: Vec<EcrMirror>,
    /// `--assume-role`: the role to assume per registry account.
    pub roles: Roles,
    /// Service-account annotations that may name the role to assume, first found wins.
    pub role_annotations: Vec<String>,
    /// `--eks-pod-identity-cluster`: exchange the pod's token with EKS Pod Identity for this
    /// cluster when no annotation names a role.
    pub pod_identity: Option<PodIdentity>,
    /// IAM Roles Anywhere as the node's identity (flags or the AWS config's drop-in), in place
    /// of the default credential chain.
    pub roles_anywhere: Option<RolesAnywhere>,
    /// How `cacheDuration` follows the token's expiry.
    pub cache_policy: CachePolicy,
    /// The on-disk token cache, when turned on.
    pub token_cache: Option<TokenCache>,
}

/// What the node's AWS identity and endpoints depend on, read without any network call: the
/// same values on one node mean the same principal, so its tokens may be shared. The secret
/// access key is not among them.
const NODE_IDENTITY_ENV: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "HOME",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
];

/// Where the registry's token comes from: a token from one endpoint is no answer for another.
const ENDPOINT_ENV: &[&str] = &[
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_ECR",
    "AWS_ENDPOINT_URL_ECR_PUBLIC",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
];

/// How the node reaches STS for its own credentials: part of the node's identity (a node's
/// entries stay its own), but not of which token ECR issues, so a shared identity stands in for
/// them with the rest of the node's parts. IRSA injects `AWS_STS_REGIONAL_ENDPOINTS=regional`
/// into the token controller's pod and nodes do not have it: in the key, every node would compute
/// another entry than the controller publishes.
const STS_ENDPOINT_ENV: &[&str] = &["AWS_ENDPOINT_URL_STS", "AWS_STS_REGIONAL_ENDPOINTS"];

/// A token as ECR returns it.
struct Token {
    encoded: Option<String>,
    expires_at: Option<SystemTime>,
}

/// Whose credentials ask ECR for the token.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Principal {
    /// The default chain, as is.
    Node,
    /// AssumeRoleWithWebIdentity with the pod's service-account token.
    WebIdentity(String),
    /// AssumeRole with the node's credentials (`--assume-role`).
    NodeAssumes(RoleArn),
    /// EKS Auth AssumeRoleForPodIdentity for this cluster, with the pod's token, signed with the
    /// node's credentials.
    PodIdentity(PodIdentity),
}

impl Principal {
    /// Whose credentials these are, for the fallback's log line (where a web identity can only
    /// come from [`ROLE_ARN_ENV`]: an annotation would have come before Pod Identity).
    fn describe(&self) -> String {
        match self {
            Principal::Node => "the node's credentials".to_owned(),
            Principal::WebIdentity(role) => {
                format!("role {role} with the service-account token ({ROLE_ARN_ENV})")
            }
            Principal::NodeAssumes(role) => {
                format!(
                    "role {} with the node's credentials (--assume-role)",
                    role.arn
                )
            }
            Principal::PodIdentity(target) => {
                format!("the EKS Pod Identity role (cluster {})", target.cluster)
            }
        }
    }
}

/// What a request needs, decided without any network: the registry (after mirrors), its
/// endpoints, whose credentials ask, and the cache key. Made once by [`Provider::plan`] and taken
/// by both the cache look before any async runtime exists and the fetch.
pub struct Plan<'a> {
    mirror: Option<&'a EcrMirror>,
    kind: RegistryKind,
    endpoints: Endpoints,
    service_env: &'static str,
    principal: Principal,
    key: Option<CacheKey>,
    /// Chosen because EKS Auth found no Pod Identity association for the ServiceAccount: the
    /// answer's `cacheDuration` is capped at [`pod_identity::FALLBACK_CACHE`].
    no_association: bool,
    /// The IAM Roles Anywhere files, read and checked, when the node's credentials sign.
    roles_anywhere: Option<Loaded>,
}

impl Provider for EcrProvider {
    type Plan<'a> = Plan<'a>;
    type Error = anyhow::Error;
    const ISSUER: Option<Issuer> = Some(Issuer::Ecr);

    fn cache_key<'p>(&self, plan: &'p Plan<'_>) -> Option<&'p CacheKey> {
        plan.key.as_ref()
    }

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Plan<'a>> {
        self.plan_with(request, true)
    }

    /// The token of `plan` from the token cache alone. Runs before any async runtime, SDK config
    /// or HTTP client exists.
    fn answer_from_cache<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: &Plan<'a>,
    ) -> Option<Credentials> {
        let cache = self.token_cache.as_ref()?;
        let token = cache.get(plan.key.as_ref()?)?;
        log_plan(self, request, plan);
        Some(self.answer(request, plan, token, token_cache::Source::Cache))
    }

    /// Fetches an ECR token for `plan` and maps it into the kubelet response.
    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Plan<'a>,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        log_plan(self, request, &plan);
        let (plan, (token, source)) = match self.get_or_fetch(request, &plan, deadline).await {
            Ok(fetched) => (plan, fetched),
            Err(e) => {
                let Some(none) = e.downcast_ref::<NoAssociation>() else {
                    return Err(e);
                };
                // No association is no role for this ServiceAccount: the precedence goes on as
                // without Pod Identity (upstream uses the node when a token comes with no role).
                let fallback = self.plan_with(request, false)?;
                tracing::info!(
                    "{none}; pulling with {} instead, answer cached for at most {}",
                    fallback.principal.describe(),
                    GoDuration::from_std(pod_identity::FALLBACK_CACHE)
                );
                let fetched = self.get_or_fetch(request, &fallback, deadline).await?;
                (fallback, fetched)
            }
        };
        Ok(self.answer(request, &plan, token, source))
    }
}

impl EcrProvider {
    /// The token for `plan`, from the token cache or fetched (and then stored).
    async fn get_or_fetch(
        &self,
        request: &CredentialProviderRequest,
        plan: &Plan<'_>,
        deadline: Deadline,
    ) -> anyhow::Result<(RegistryToken, token_cache::Source)> {
        token_cache::get_or_fetch(
            self.token_cache.as_ref(),
            plan.key.as_ref(),
            deadline,
            async || self.fetch_token(request, plan, deadline).await,
        )
        .await
    }

    /// Every check and choice that needs no network: mirrors, host class, strict refusal, the
    /// principal and the cache key. Logs nothing (the cache look and the fetch log it).
    /// `pod_identity: false` plans the fallback after EKS Auth found no association.
    fn plan_with<'a>(
        &'a self,
        request: &CredentialProviderRequest,
        pod_identity: bool,
    ) -> anyhow::Result<Plan<'a>> {
        let registry = request.image_ref.registry();
        // A mirror source is matched as written, port included, before the host is classified:
        // the mapping is what the operator asked for, even for a host that looks like ECR.
        let mirror = self
            .mirrors
            .iter()
            .find(|m| m.source.eq_ignore_ascii_case(registry));
        let kind = match mirror {
            Some(m) => RegistryKind::Private(m.target.clone()),
            None => host::classify(request.image_ref.host()),
        };
        let endpoints = match &kind {
            RegistryKind::Private(p) => Endpoints {
                region: Some(p.region.clone()),
                fips: p.fips,
                dual_stack: p.dual_stack(),
            },
            RegistryKind::Public => Endpoints {
                region: Some(PUBLIC_REGION.to_owned()),
                ..Endpoints::default()
            },
            RegistryKind::Other if !self.mirrors.is_empty() => {
                // A source with a port is written `host:port=dst` (one colon per `src:dst`).
                let separator = if registry.contains(':') { '=' } else { ':' };
                bail!(
                    "{registry} is not an Amazon ECR registry host nor a --registry-mirror source, and strict host checking is on (implied by --registry-mirror): \
                     refusing to send an ECR token to it; map it with --registry-mirror={registry}{separator}<account>.dkr.ecr.<region>.amazonaws.com or narrow matchImages"
                )
            }
            RegistryKind::Other if self.strict_hosts => bail!(
                "{registry} is not an Amazon ECR registry host and strict host checking is on (--strict-hosts / ECR_STRICT_HOSTS): \
                 refusing to send an ECR token to it; narrow matchImages to ECR hosts or turn strict checking off for mirrors"
            ),
            RegistryKind::Other => Endpoints::default(),
        };
        let service_env = if kind == RegistryKind::Public {
            "ECR_PUBLIC"
        } else {
            "ECR"
        };
        let principal = self
            .principal(request, &kind, pod_identity)
            .map_err(|e| anyhow!(e))?;
        // The node's credentials sign for every principal but a web identity (whose proof is the
        // pod's token): only then are the Roles Anywhere files read, per exec.
        let roles_anywhere = match (&self.roles_anywhere, &principal) {
            (Some(_), Principal::WebIdentity(_)) | (None, _) => None,
            (Some(ra), _) => Some(ra.load(SystemTime::now()).map_err(|e| anyhow!(e))?),
        };
        let key = cache_key(
            &kind,
            &principal,
            self.roles.external_id.as_deref(),
            request,
        )
        .map(|key| match (&self.roles_anywhere, &roles_anywhere) {
            (Some(ra), Some(loaded)) => ra.identify(key, loaded),
            _ => key,
        });
        Ok(Plan {
            mirror,
            kind,
            endpoints,
            service_env,
            principal,
            key,
            no_association: !pod_identity,
            roles_anywhere,
        })
    }

    /// The kubelet's answer for a token, fetched or cached.
    fn answer(
        &self,
        request: &CredentialProviderRequest,
        plan: &Plan<'_>,
        token: RegistryToken,
        source: token_cache::Source,
    ) -> Credentials {
        let registry = request.image_ref.registry();
        let mut cache_duration = self
            .cache_policy
            .cache_duration(token.expires_at, token.obtained_at);
        if plan.no_association {
            cache_duration = cache_duration.min(GoDuration::from_std(pod_identity::FALLBACK_CACHE));
        }
        tracing::info!(registry, %cache_duration, ?source, "ECR token ready");
        let auth = AuthConfig::new(token.username, token.password);
        let mut credentials = Credentials::single(
            CacheKeyType::Registry,
            cache_duration,
            registry,
            auth.clone(),
        );
        if let Some(m) = plan.mirror {
            // The destination's key too, as ACR answers a mirrored image
            // (providers/acr/src/host.rs `resolve`): one shape of answer for both providers.
            credentials.auth.insert(m.target_host.clone(), auth);
        }
        credentials
    }

    /// Calls ECR (after STS when `principal` is a role) for a token. Its expiry is the
    /// earlier of the token's and the assumed role session's.
    async fn fetch_token(
        &self,
        request: &CredentialProviderRequest,
        plan: &Plan<'_>,
        deadline: Deadline,
    ) -> anyhow::Result<RegistryToken> {
        let (kind, endpoints, service_env) = (&plan.kind, &plan.endpoints, plan.service_env);
        let registry = request.image_ref.registry();
        let node = self.node_credentials(plan, deadline).await?;
        let node_credentials = node.as_ref().map(|(c, _)| c.clone());
        let config = aws::load(endpoints, service_env, deadline, node_credentials).await;
        let Some(region) = config.region().map(|r| r.to_string()) else {
            bail!(
                "no AWS region for {registry}: the host names none; set AWS_REGION (provider env in the kubelet config), \
                 a profile region, or run on EC2 with instance metadata reachable"
            );
        };

        if *kind == RegistryKind::Other {
            // Upstream's warning, once we know the default region exists (else the error says it all).
            tracing::warn!(
                registry,
                %region,
                "No region found in the image reference, the default region will be used. Please refer to AWS SDK documentation for configuration purpose."
            );
        }
        let assumed = self.assume(request, plan, &config, &region).await?;
        let source = match (&assumed, &node) {
            (Some(a), _) => a.source.clone(),
            (None, Some((_, described))) => described.clone(),
            (None, None) => aws::credential_source().to_owned(),
        };
        let context = || {
            // Resolving the endpoint parses the SDK's partition table again: only worth it for an error.
            let endpoint = endpoint_description(kind, &region, endpoints, service_env);
            format!(
                "getting an ECR authorization token for {registry} (region {region}, endpoint {endpoint}, credentials: {source})"
            )
        };
        let token = authorization_token(kind, &config, assumed.as_ref())
            .await
            .with_context(context)?;
        let encoded = token
            .encoded
            .ok_or_else(|| anyhow!("authorization token in response was nil"))
            .with_context(context)?;
        let (username, password) = decode_token(&encoded).with_context(context)?;
        // No later than the assumed role's session, nor the node's own (IAM Roles Anywhere).
        let node_expiry = node.as_ref().and_then(|(c, _)| c.expiry());
        let assumed_expiry = assumed.as_ref().and_then(|a| a.credentials.expiry());
        let session_expiry = [assumed_expiry, node_expiry].into_iter().flatten().min();
        let expires_at = token_expiry(token.expires_at, session_expiry, SystemTime::now());
        tracing::info!(registry, "ECR token obtained");
        Ok(RegistryToken::obtained_now(username, password, expires_at))
    }

    /// The node's own credentials from IAM Roles Anywhere, and how they were obtained, when the
    /// plan read its files; `None`: the SDK's default chain signs for the node.
    async fn node_credentials(
        &self,
        plan: &Plan<'_>,
        deadline: Deadline,
    ) -> anyhow::Result<Option<(AwsCredentials, String)>> {
        Ok(match (&self.roles_anywhere, &plan.roles_anywhere) {
            (Some(ra), Some(loaded)) => Some((
                crate::roles_anywhere::credentials(ra, loaded, deadline).await?,
                ra.describe(loaded),
            )),
            _ => None,
        })
    }

    /// The role session the ECR call is made with, when the plan's principal is a role: STS with
    /// the pod's token, EKS Pod Identity, or `--assume-role` with the node's credentials.
    async fn assume(
        &self,
        request: &CredentialProviderRequest,
        plan: &Plan<'_>,
        config: &aws_config::SdkConfig,
        region: &str,
    ) -> anyhow::Result<Option<AssumedRole>> {
        Ok(match (&plan.principal, &request.service_account_token) {
            (Principal::WebIdentity(role_arn), Some(token)) => {
                Some(assume_role(role_arn, token, config).await?)
            }
            (Principal::PodIdentity(target), Some(token)) => Some(AssumedRole {
                credentials: pod_identity::assume_role(target, token, config).await?,
                source: format!(
                    "EKS Pod Identity role of the service account (cluster {})",
                    target.cluster
                ),
            }),
            (Principal::NodeAssumes(role), _) => Some(
                assume_role_as_node(
                    role,
                    self.roles.external_id.as_deref(),
                    config,
                    region,
                    &plan.endpoints,
                )
                .await?,
            ),
            _ => None,
        })
    }

    /// Whose credentials get the token, first that applies: the role a service-account
    /// annotation names (with the pod's token); with `--eks-pod-identity-cluster`, the pod's
    /// Pod Identity association (with the pod's token), unless `pod_identity` is false (EKS Auth
    /// found none); the `--assume-role` role of the private registry's account (with the node's
    /// credentials); in service-account mode [`ROLE_ARN_ENV`]; else the node. An `--assume-role`
    /// of another partition than the registry's is an error, before any call.
    fn principal(
        &self,
        request: &CredentialProviderRequest,
        kind: &RegistryKind,
        pod_identity: bool,
    ) -> Result<Principal, String> {
        let sa_mode = request.service_account_token.is_some();
        if sa_mode {
            let from_annotation = self.role_annotations.iter().find_map(|key| {
                request
                    .service_account_annotations
                    .get(key)
                    .filter(|v| !v.trim().is_empty())
            });
            if let Some(role_arn) = from_annotation {
                return Ok(Principal::WebIdentity(role_arn.trim().to_owned()));
            }
            if let Some(target) = self.pod_identity.as_ref().filter(|_| pod_identity) {
                return Ok(Principal::PodIdentity(target.clone()));
            }
        }
        if let RegistryKind::Private(p) = kind
            && let Some(role) = self.roles.for_registry(p)?
        {
            return Ok(Principal::NodeAssumes(role.clone()));
        }
        if !sa_mode {
            return Ok(Principal::Node);
        }
        let from_env = std::env::var(ROLE_ARN_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.trim().to_owned());
        Ok(from_env.map_or(Principal::Node, Principal::WebIdentity))
    }
}

/// The GetAuthorizationToken call of ECR Public or ECR, with the assumed role's credentials when
/// there are any: the two APIs are separate SDK clients with separate answer shapes.
async fn authorization_token(
    kind: &RegistryKind,
    config: &aws_config::SdkConfig,
    assumed: Option<&AssumedRole>,
) -> anyhow::Result<Token> {
    if *kind == RegistryKind::Public {
        let mut builder =
            aws_sdk_ecrpublic::config::Builder::from(config).retry_classifier(aws::retry_on_429());
        if let Some(a) = assumed {
            builder = builder.credentials_provider(a.credentials.clone());
        }
        let client = aws_sdk_ecrpublic::Client::from_conf(builder.build());
        let out = client
            .get_authorization_token()
            .send()
            .await
            .map_err(|e| anyhow!(describe(&e)))?;
        let data = out
            .authorization_data()
            .ok_or_else(|| anyhow!("authorization data was empty"))?;
        return Ok(Token {
            encoded: data.authorization_token().map(str::to_owned),
            expires_at: data.expires_at().and_then(to_system_time),
        });
    }
    let mut builder =
        aws_sdk_ecr::config::Builder::from(config).retry_classifier(aws::retry_on_429());
    if let Some(a) = assumed {
        builder = builder.credentials_provider(a.credentials.clone());
    }
    let client = aws_sdk_ecr::Client::from_conf(builder.build());
    let out = client
        .get_authorization_token()
        .send()
        .await
        .map_err(|e| anyhow!(describe(&e)))?;
    let data = out
        .authorization_data()
        .first()
        .ok_or_else(|| anyhow!("authorization data was empty"))?;
    Ok(Token {
        encoded: data.authorization_token().map(str::to_owned),
        expires_at: data.expires_at().and_then(to_system_time),
    })
}

/// The token-cache key: API scope (kind, partition, region, endpoint flavour: a mirror's are its
/// destination's) and the identity the token is fetched as, the assumed role included. `None`
/// (no caching) for a service-account token whose claims cannot be read.
fn cache_key(
    kind: &RegistryKind,
    principal: &Principal,
    external_id: Option<&str>,
    request: &CredentialProviderRequest,
) -> Option<CacheKey> {
    let key = match kind {
        RegistryKind::Private(p) => CacheKey::new(Issuer::Ecr)
            .scope("api", "ecr")
            .scope("partition", p.partition())
            .scope("region", &p.region)
            .scope("fips", &p.fips.to_string())
            .scope("dual-stack", &p.dual_stack().to_string()),
        RegistryKind::Public => CacheKey::new(Issuer::Ecr)
            .scope("api", "ecr-public")
            .scope("region", PUBLIC_REGION),
        // The default region comes from the environment, which the identity covers.
        RegistryKind::Other => CacheKey::new(Issuer::Ecr)
            .scope("api", "ecr")
            .scope("region", "default"),
    }
    .identity_env(ENDPOINT_ENV);
    match (principal, &request.service_account_token) {
        (Principal::WebIdentity(role_arn), Some(token)) => key
            .identity("role", role_arn)
            .identity_env(STS_ENDPOINT_ENV)
            .service_account(token),
        // The association (cluster, service account) names the role; the node's identity
        // signs the exchange.
        (Principal::PodIdentity(target), Some(token)) => key
            .identity("eks-pod-identity-cluster", &target.cluster)
            .identity(
                "eks-pod-identity-region",
                target.region.as_deref().unwrap_or_default(),
            )
            .identity_env(&["AWS_ENDPOINT_URL_EKS_AUTH"])
            .identity_env(NODE_IDENTITY_ENV)
            .identity_env(STS_ENDPOINT_ENV)
            .service_account(token),
        // The node's identity assumes the role: both are part of who the token is for.
        (Principal::NodeAssumes(role), _) => Some(
            key.identity("assume-role", &role.arn)
                .identity("external-id", external_id.unwrap_or_default())
                .node_identity_env(NODE_IDENTITY_ENV)
                .node_identity_env(STS_ENDPOINT_ENV),
        ),
        _ => Some(
            key.node_identity_env(NODE_IDENTITY_ENV)
                .node_identity_env(STS_ENDPOINT_ENV),
        ),
    }
}

/// An SDK error as one line without the raw response: the SDK's own verbose form ends in a Debug
/// dump of the HTTP response, body included, and a body may hold a token.
fn describe<E>(error: &SdkError<E, HttpResponse>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
{
    match error {
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let err = service.err();
            match (err.code(), err.message()) {
                (Some(code), Some(message)) => format!("HTTP {status} {code}: {message}"),
                (Some(code), None) => format!("HTTP {status} {code}"),
                _ => format!("HTTP {status}: {}", error_chain(err)),
            }
        }
        other => error_chain(other),
    }
}

/// `base64(user:password)` → (user, password); a `:` in the password survives.
pub fn decode_token(encoded: &str) -> anyhow::Result<(String, Secret)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| anyhow!("authorization token is not base64: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("authorization token is not UTF-8"))?;
    match text.split_once(':') {
        Some((user, password)) => Ok((user.to_owned(), Secret::new(password))),
        None => bail!("error parsing username and password from authorization token"),
    }
}

/// A timestamp of an AWS answer (`expiresAt`, a session's `Expiration`), when the platform's
/// clock can hold it.
fn to_system_time(t: &aws_smithy_types::DateTime) -> Option<SystemTime> {
    SystemTime::try_from(*t).ok()
}

/// The token's expiry as this run counts it, seen at `now`: ECR's `expiresAt`, no later than the
/// role session that obtained it (`session_expiry`), and no later than [`MAX_TOKEN_LIFE`] after
/// `now`.
///
/// The SDK turns any JSON number into a timestamp (`1e300` and `-1e300` become the largest and
/// smallest it holds); uncapped, the first made `cacheDuration` 292 years. The second is simply
/// expired: `CachePolicy` saturates its subtraction.
fn token_expiry(
    expires_at: Option<SystemTime>,
    session_expiry: Option<SystemTime>,
    now: SystemTime,
) -> Option<SystemTime> {
    let expires_at = expires_at?;
    // The answer may not outlive the role session that obtained it.
    let expires_at = session_expiry.map_or(expires_at, |s| s.min(expires_at));
    Some(match now.checked_add(MAX_TOKEN_LIFE) {
        Some(latest) => expires_at.min(latest),
        None => expires_at,
    })
}

/// The endpoint the environment sets for `service_env`, as its host and the variable.
fn overridden_endpoint(service_env: &str) -> Option<String> {
    let (variable, url) = aws::endpoint_override(service_env)?;
    // Only the host: a URL could carry credentials in its user-info.
    let host = reqwest::Url::parse(&url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned));
    Some(format!(
        "{} (from {variable})",
        host.unwrap_or_else(|| "an unparsable URL".to_owned())
    ))
}

/// The API endpoint host we expect the SDK to call, for error messages.
fn endpoint_description(
    kind: &RegistryKind,
    region: &str,
    endpoints: &Endpoints,
    service_env: &str,
) -> String {
    if let Some(overridden) = overridden_endpoint(service_env) {
        return overridden;
    }
    crate::endpoint::resolve(kind, region, endpoints.fips, endpoints.dual_stack)
        .unwrap_or_else(|e| format!("unresolved ({e})"))
}

/// The info lines naming the registry a run serves and, in service-account mode, why the node's
/// own credentials are used.
fn log_plan(provider: &EcrProvider, request: &CredentialProviderRequest, plan: &Plan<'_>) {
    let registry = request.image_ref.registry();
    match &plan.kind {
        RegistryKind::Private(p) => {
            let mirrored_to = plan.mirror.map(|m| m.target_host.as_str());
            tracing::info!(registry, ?mirrored_to, region = %p.region, partition = p.partition(), fips = p.fips, dual_stack = p.dual_stack(), "private ECR registry");
        }
        RegistryKind::Public => tracing::info!(registry, "ECR Public registry"),
        RegistryKind::Other => {}
    }
    if let Principal::PodIdentity(target) = &plan.principal {
        tracing::info!(
            cluster = target.cluster,
            region = target.region,
            "no role ARN in the service-account annotations; using EKS Pod Identity"
        );
    }
    if request.service_account_token.is_some() && plan.principal == Principal::Node {
        tracing::info!(
            annotations = ?provider.role_annotations,
            "no role ARN in the service-account annotations or {ROLE_ARN_ENV}; using the node's credentials"
        );
    }
}

#[cfg(test)]
mod tests;
