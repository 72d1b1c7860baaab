//! Building AWS SDK configuration the way a node needs it: our shared HTTP transport (ring TLS,
//! proxies from the environment but never for metadata endpoints), timeouts and retries inside
//! the run's deadline.

use std::time::Duration;

use aws_config::ecs::EcsCredentialsProvider;
use aws_config::environment::credentials::EnvironmentVariableCredentialsProvider;
use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::meta::credentials::CredentialsProviderChain;
use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider};
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::HttpClient;

use crate::sdk_http::SharedTransport;

/// Connect timeout for AWS API endpoints.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest single attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Options that change how the SDK is set up for one call.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// The region, when the image host names one.
    pub region: Option<String>,
    /// Call the FIPS endpoint.
    pub fips: bool,
    /// Call the dual-stack endpoint.
    pub dual_stack: bool,
}

/// ECR answers throttling with a 400 ThrottlingException, which the SDK retries; a proxy or load
/// balancer in between may answer a bare 429, which it does not. Retry both.
pub fn retry_on_429() -> aws_smithy_runtime::client::retries::classifiers::HttpStatusCodeClassifier
{
    aws_smithy_runtime::client::retries::classifiers::HttpStatusCodeClassifier::new_from_codes(
        vec![429, 500, 502, 503, 504],
    )
}

/// The endpoint the environment sets for `service_env` (e.g. `ECR`), if any: the service's own
/// variable first, then the global one. While one is set, FIPS and dual-stack must stay off: the
/// SDK refuses a custom endpoint combined with either.
pub fn endpoint_override(service_env: &str) -> Option<(String, String)> {
    let ignored = std::env::var("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
        .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    if ignored {
        return None;
    }
    [
        format!("AWS_ENDPOINT_URL_{service_env}"),
        "AWS_ENDPOINT_URL".to_owned(),
    ]
    .into_iter()
    .find_map(|name| {
        std::env::var(&name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name, v))
    })
}

/// Loads the SDK configuration: the default credential chain (or `node_credentials`, the node's
/// identity when it comes from elsewhere: IAM Roles Anywhere), region as given or from the chain
/// (environment, profile, IMDS), our HTTP transport, timeouts and retries bounded by `deadline`.
pub async fn load(
    endpoints: &Endpoints,
    service_env: &str,
    deadline: Deadline,
    node_credentials: Option<aws_credential_types::Credentials>,
) -> SdkConfig {
    let transport = SharedTransport::new(
        HttpClient::new(
            &kcp_plugin::http::ProxyConfig::from_env(),
            CONNECT_TIMEOUT,
            ATTEMPT_TIMEOUT,
        ),
        deadline,
    );
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(deadline.cap(ATTEMPT_TIMEOUT))
        .operation_timeout(deadline.remaining())
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(transport.clone())
        .timeout_config(timeouts.clone());
    // Standard mode: jittered exponential backoff on throttling, 5xx and connection errors,
    // unless the environment chooses.
    let retry = (std::env::var_os("AWS_MAX_ATTEMPTS").is_none()
        && std::env::var_os("AWS_RETRY_MODE").is_none())
    .then(|| {
        RetryConfig::standard()
            .with_max_attempts(4)
            .with_initial_backoff(Duration::from_millis(300))
            .with_max_backoff(Duration::from_secs(5))
    });
    if let Some(retry) = &retry {
        loader = loader.retry_config(retry.clone());
    }
    if let Some(region) = &endpoints.region {
        loader = loader.region(Region::new(region.clone()));
    }
    // Only ever switch these on: AWS_USE_FIPS_ENDPOINT=true from the environment must survive.
    let own_endpoints = endpoint_override(service_env).is_none();
    let fips = own_endpoints && endpoints.fips;
    let dual_stack = own_endpoints && endpoints.dual_stack;
    if fips {
        loader = loader.use_fips(true);
    }
    if dual_stack {
        loader = loader.use_dual_stack(true);
    }
    if let Some(credentials) = node_credentials {
        loader = loader.credentials_provider(credentials);
    } else if let Some(region) = &endpoints.region
        && std::env::var_os(WEB_IDENTITY_TOKEN_FILE).is_none()
    {
        let chain =
            chain_without_web_identity(transport, region, fips, dual_stack, timeouts, retry).await;
        loader = loader.credentials_provider(chain);
    }
    remembering(loader.load().await)
}

/// `config` with its credential provider wrapped so that the keys it resolves are remembered as
/// secrets (`kcp_kubelet::secret::remember`): the SDK holds them in its own type, and an
/// upstream error may quote them; an AWS secret key holds `/`, which the token-shaped redaction
/// cannot see. Resolving is lazy as before: the wrapper only looks at what the chain returns.
fn remembering(config: SdkConfig) -> SdkConfig {
    let Some(inner) = config.credentials_provider() else {
        return config;
    };
    config
        .into_builder()
        .credentials_provider(SharedCredentialsProvider::new(Remembering(inner)))
        .build()
}

/// A credential provider that remembers the secrets of what it provides; see [`remembering`].
#[derive(Debug)]
struct Remembering(SharedCredentialsProvider);

impl ProvideCredentials for Remembering {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        provider::future::ProvideCredentials::new(async move {
            let credentials = self.0.provide_credentials().await?;
            remember_credentials(&credentials);
            Ok(credentials)
        })
    }
}

/// Remembers the secret parts of AWS credentials (the secret key and the session token) for
/// exact redaction of everything printed.
fn remember_credentials(credentials: &aws_credential_types::Credentials) {
    kcp_kubelet::secret::remember(credentials.secret_access_key());
    if let Some(token) = credentials.session_token() {
        kcp_kubelet::secret::remember(token);
    }
}

/// The variable that turns aws-config's web-identity credential provider on.
const WEB_IDENTITY_TOKEN_FILE: &str = "AWS_WEB_IDENTITY_TOKEN_FILE";

/// aws-config's default credential chain without its web-identity link, for runs where that
/// link would find nothing (no `AWS_WEB_IDENTITY_TOKEN_FILE`): aws-config builds an STS client for
/// it on every run, even when it is never asked, and that costs about 0.85M instructions (a
/// quarter of a cold exec, mostly parsing STS's endpoint rules). The same links in the same order
/// and with the settings `ConfigLoader::load` gives them: environment, profile (whose own
/// assume-role and web-identity entries build their STS clients only when used), container,
/// instance metadata.
async fn chain_without_web_identity(
    transport: SharedTransport,
    region: &str,
    fips: bool,
    dual_stack: bool,
    mut timeouts: TimeoutConfig,
    retry: Option<RetryConfig>,
) -> CredentialsProviderChain {
    use aws_config::default_provider::{retry_config, timeout_config, use_dual_stack, use_fips};
    let conf = ProviderConfig::default()
        .with_http_client(transport)
        .with_behavior_version(Some(BehaviorVersion::latest()))
        .with_region(Some(Region::new(region.to_owned())));
    let use_fips = if fips {
        Some(true)
    } else {
        use_fips::use_fips_provider(&conf).await
    };
    let use_dual_stack = if dual_stack {
        Some(true)
    } else {
        use_dual_stack::use_dual_stack_provider(&conf).await
    };
    let conf = conf
        .with_use_fips(use_fips)
        .with_use_dual_stack(use_dual_stack);
    let retry = match retry {
        Some(retry) => retry,
        None => {
            retry_config::default_provider()
                .configure(&conf)
                .retry_config()
                .await
        }
    };
    let base = timeout_config::default_provider()
        .configure(&conf)
        .timeout_config()
        .await;
    timeouts.take_defaults_from(&base);
    let conf = conf.with_retry_config(retry).with_timeout_config(timeouts);
    CredentialsProviderChain::first_try(
        "Environment",
        EnvironmentVariableCredentialsProvider::new(),
    )
    .or_else(
        "Profile",
        ProfileFileCredentialsProvider::builder()
            .configure(&conf)
            .build(),
    )
    .or_else(
        "EcsContainer",
        EcsCredentialsProvider::builder().configure(&conf).build(),
    )
    .or_else(
        "Ec2InstanceMetadata",
        ImdsCredentialsProvider::builder().configure(&conf).build(),
    )
}

/// Where the default chain will most likely take credentials from, for error messages. The SDK
/// does not report the source, so this mirrors its order from the environment.
pub fn credential_source() -> &'static str {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if set("AWS_ACCESS_KEY_ID") {
        "environment variables (AWS_ACCESS_KEY_ID)"
    } else if set("AWS_PROFILE") || set("AWS_CONFIG_FILE") || set("AWS_SHARED_CREDENTIALS_FILE") {
        "shared config profile"
    } else if set("AWS_WEB_IDENTITY_TOKEN_FILE") {
        "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN)"
    } else if set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    {
        "container credentials (EKS Pod Identity / ECS)"
    } else {
        "default chain (~/.aws, then instance metadata IMDS)"
    }
}
