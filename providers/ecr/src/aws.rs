//! Building AWS SDK configuration the way a node needs it: our shared HTTP transport (ring TLS,
//! proxies from the environment but never for metadata endpoints), timeouts and retries inside
//! the run's deadline.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, HttpError};

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

/// Loads the SDK configuration: the default credential chain, region as given or from the chain
/// (environment, profile, IMDS), our HTTP transport, timeouts and retries bounded by `deadline`.
pub async fn load(
    endpoints: &Endpoints,
    service_env: &str,
    deadline: Deadline,
) -> Result<SdkConfig, HttpError> {
    let transport = SharedTransport::new(
        HttpClient::new(
            &kcp_plugin::http::ProxyConfig::from_env(),
            CONNECT_TIMEOUT,
            ATTEMPT_TIMEOUT,
        )?,
        deadline,
    );
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(transport)
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
    if endpoint_override(service_env).is_none() {
        // Only ever switch these on: AWS_USE_FIPS_ENDPOINT=true from the environment must survive.
        if endpoints.fips {
            loader = loader.use_fips(true);
        }
        if endpoints.dual_stack {
            loader = loader.use_dual_stack(true);
        }
    }
    Ok(loader.load().await)
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
