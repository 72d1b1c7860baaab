//! Building AWS SDK configuration the way a node needs it: ring-only TLS, proxies from the
//! environment but never for the metadata endpoints, timeouts and retries inside the run's deadline.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_http_client::proxy::ProxyConfig as SdkProxyConfig;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use aws_smithy_http_client::{Builder, Connector};
use kcp_common::deadline::Deadline;
use kcp_common::http::ProxyConfig;

/// Link-local ranges that hold IMDS (169.254.169.254, fd00:ec2::254) and container credentials
/// (169.254.170.2, 169.254.170.23): always reached directly.
const NEVER_PROXIED: &str = "169.254.0.0/16,fe80::/10,fd00:ec2::254";

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

/// Whether the environment overrides endpoints for `service_env` (e.g. `ECR`), in which case FIPS
/// and dual-stack must not be set: the SDK refuses a custom endpoint combined with either.
pub fn endpoint_overridden(service_env: &str) -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let ignored = std::env::var("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
        .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    !ignored && (set(&format!("AWS_ENDPOINT_URL_{service_env}")) || set("AWS_ENDPOINT_URL"))
}

/// Loads the SDK configuration: the default credential chain, region as given or from the chain
/// (environment, profile, IMDS), our HTTP client, timeouts and retries bounded by `deadline`.
pub async fn load(endpoints: &Endpoints, service_env: &str, deadline: Deadline) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_attempt_timeout(deadline.cap(ATTEMPT_TIMEOUT))
                .operation_timeout(deadline.remaining())
                .build(),
        );
    if std::env::var_os("AWS_MAX_ATTEMPTS").is_none()
        && std::env::var_os("AWS_RETRY_MODE").is_none()
    {
        // Standard mode: jittered exponential backoff on throttling, 5xx and connection errors.
        loader = loader.retry_config(
            RetryConfig::standard()
                .with_max_attempts(4)
                .with_initial_backoff(Duration::from_millis(300))
                .with_max_backoff(Duration::from_secs(5)),
        );
    }
    if let Some(region) = &endpoints.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if !endpoint_overridden(service_env) {
        // Only ever switch these on: AWS_USE_FIPS_ENDPOINT=true from the environment must survive.
        if endpoints.fips {
            loader = loader.use_fips(true);
        }
        if endpoints.dual_stack {
            loader = loader.use_dual_stack(true);
        }
    }
    loader.load().await
}

/// An HTTPS client with ring and the environment's proxies (metadata ranges excluded).
fn http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    let proxy = sdk_proxy_config(&ProxyConfig::from_env());
    Builder::new().build_with_connector_fn(move |settings, components| {
        // As the SDK's own builder does, plus our proxy settings.
        let mut builder = Connector::builder();
        builder.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            builder.set_sleep_impl(components.sleep_impl());
        }
        builder
            .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
            .proxy_config(proxy.clone())
            .build()
    })
}

/// Our proxy settings in the SDK's terms, with link-local ranges always bypassed.
fn sdk_proxy_config(env: &ProxyConfig) -> SdkProxyConfig {
    let no_proxy = match env.no_proxy.as_deref() {
        Some(user) => format!("{user},{NEVER_PROXIED}"),
        None => NEVER_PROXIED.to_owned(),
    };
    let (https, http) = (env.https.as_deref(), env.http.as_deref());
    let config = match (https, http) {
        (Some(url), _) => SdkProxyConfig::https(url),
        (None, Some(url)) => SdkProxyConfig::http(url),
        (None, None) => return SdkProxyConfig::disabled(),
    };
    match config {
        Ok(config) => config.no_proxy(no_proxy),
        Err(e) => {
            tracing::warn!("ignoring the proxy setting: {e}");
            SdkProxyConfig::disabled()
        }
    }
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
