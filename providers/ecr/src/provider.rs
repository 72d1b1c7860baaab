//! The ECR token source: which API to call for an image, with which credentials, and how its
//! answer maps into the kubelet response.

use std::time::SystemTime;

use anyhow::{Context, anyhow, bail};
use aws_credential_types::Credentials as AwsCredentials;
use aws_sdk_ecr::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;
use base64::Engine;
use kcp_common::cache_hint::CachePolicy;
use kcp_common::deadline::Deadline;
use kcp_common::logging::error_chain;
use kcp_common::{AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret};

use crate::aws::{self, Endpoints};
use crate::host::{self, RegistryKind};

/// ECR Public's API lives in us-east-1 only (for the `aws` partition).
const PUBLIC_REGION: &str = "us-east-1";
/// Session name for AssumeRoleWithWebIdentity, as upstream.
const SESSION_NAME: &str = "ecr-credential-provider";
/// Upstream's fallback role ARN variable for service-account mode.
pub const ROLE_ARN_ENV: &str = "AWS_ECR_ROLE_ARN";

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct EcrProvider {
    /// Refuse hosts that are not ECR instead of answering with a default-region token.
    pub strict_hosts: bool,
    /// Service-account annotations that may name the role to assume, first found wins.
    pub role_annotations: Vec<String>,
    /// How `cacheDuration` follows the token's expiry.
    pub cache_policy: CachePolicy,
}

/// A token as ECR returns it.
struct Token {
    encoded: Option<String>,
    expires_at: Option<SystemTime>,
}

/// Credentials obtained from a service-account token.
struct AssumedRole {
    credentials: AwsCredentials,
    role_arn: String,
}

impl EcrProvider {
    /// Fetches an ECR token for `request` and maps it into the kubelet response.
    pub async fn credentials(
        &self,
        request: &CredentialProviderRequest,
        deadline: Deadline,
    ) -> anyhow::Result<Credentials> {
        let registry = request.image_ref.registry();
        let kind = host::classify(request.image_ref.host());
        let endpoints = match &kind {
            RegistryKind::Private(p) => {
                tracing::info!(registry, region = %p.region, partition = p.partition(), fips = p.fips, dual_stack = p.dual_stack(), "private ECR registry");
                Endpoints {
                    region: Some(p.region.clone()),
                    fips: p.fips,
                    dual_stack: p.dual_stack(),
                }
            }
            RegistryKind::Public => {
                tracing::info!(registry, "ECR Public registry");
                Endpoints {
                    region: Some(PUBLIC_REGION.to_owned()),
                    ..Endpoints::default()
                }
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
        let config = aws::load(&endpoints, service_env, deadline).await?;
        let Some(region) = config.region().map(|r| r.to_string()) else {
            bail!(
                "no AWS region for {registry}: the host names none; set AWS_REGION (provider env in the kubelet config), \
                 a profile region, or run on EC2 with instance metadata reachable"
            );
        };

        if kind == RegistryKind::Other {
            // Upstream's warning, once we know the default region exists (else the error says it all).
            tracing::warn!(
                registry,
                %region,
                "No region found in the image reference, the default region will be used. Please refer to AWS SDK documentation for configuration purpose."
            );
        }
        let assumed = self.assume_role(request, &config).await?;
        let source = match &assumed {
            Some(a) => format!("assumed role {} via the service-account token", a.role_arn),
            None => aws::credential_source().to_owned(),
        };
        let context = || {
            // Resolving the endpoint parses the SDK's partition table again: only worth it for an error.
            let endpoint = endpoint_description(&kind, &region, &endpoints, service_env);
            format!(
                "getting an ECR authorization token for {registry} (region {region}, endpoint {endpoint}, credentials: {source})"
            )
        };

        let token = if kind == RegistryKind::Public {
            let mut builder = aws_sdk_ecrpublic::config::Builder::from(&config)
                .retry_classifier(aws::retry_on_429());
            if let Some(a) = &assumed {
                builder = builder.credentials_provider(a.credentials.clone());
            }
            let client = aws_sdk_ecrpublic::Client::from_conf(builder.build());
            let out = client
                .get_authorization_token()
                .send()
                .await
                .map_err(|e| anyhow!(describe(&e)))
                .with_context(context)?;
            let data = out
                .authorization_data()
                .ok_or_else(|| anyhow!("authorization data was empty"))
                .with_context(context)?;
            Token {
                encoded: data.authorization_token().map(str::to_owned),
                expires_at: data.expires_at().and_then(to_system_time),
            }
        } else {
            let mut builder =
                aws_sdk_ecr::config::Builder::from(&config).retry_classifier(aws::retry_on_429());
            if let Some(a) = &assumed {
                builder = builder.credentials_provider(a.credentials.clone());
            }
            let client = aws_sdk_ecr::Client::from_conf(builder.build());
            let out = client
                .get_authorization_token()
                .send()
                .await
                .map_err(|e| anyhow!(describe(&e)))
                .with_context(context)?;
            let data = out
                .authorization_data()
                .first()
                .ok_or_else(|| anyhow!("authorization data was empty"))
                .with_context(context)?;
            Token {
                encoded: data.authorization_token().map(str::to_owned),
                expires_at: data.expires_at().and_then(to_system_time),
            }
        };

        let encoded = token
            .encoded
            .ok_or_else(|| anyhow!("authorization token in response was nil"))
            .with_context(context)?;
        let (username, password) = decode_token(&encoded).with_context(context)?;
        let session_expiry = assumed.as_ref().and_then(|a| a.credentials.expiry());
        let cache_duration = self.cache_policy.cache_duration_capped(
            token.expires_at,
            session_expiry,
            SystemTime::now(),
        );
        tracing::info!(registry, %cache_duration, "ECR token obtained");
        Ok(Credentials::single(
            CacheKeyType::Registry,
            cache_duration,
            registry,
            AuthConfig::new(username, password),
        ))
    }

    /// In service-account mode with a role to assume, exchanges the pod's token for role
    /// credentials. Without a role ARN the node's credentials are used, as upstream since v1.35.
    async fn assume_role(
        &self,
        request: &CredentialProviderRequest,
        config: &aws_config::SdkConfig,
    ) -> anyhow::Result<Option<AssumedRole>> {
        let Some(token) = &request.service_account_token else {
            return Ok(None);
        };
        let from_annotation = self.role_annotations.iter().find_map(|key| {
            request
                .service_account_annotations
                .get(key)
                .filter(|v| !v.trim().is_empty())
        });
        let role_arn = match from_annotation {
            Some(arn) => arn.trim().to_owned(),
            None => match std::env::var(ROLE_ARN_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
            {
                Some(arn) => arn.trim().to_owned(),
                None => {
                    tracing::info!(
                        annotations = ?self.role_annotations,
                        "no role ARN in the service-account annotations or {ROLE_ARN_ENV}; using the node's credentials"
                    );
                    return Ok(None);
                }
            },
        };
        // AssumeRoleWithWebIdentity needs no AWS credentials: the pod's token is the proof.
        let mut sts_config =
            aws_sdk_sts::config::Builder::from(config).retry_classifier(aws::retry_on_429());
        sts_config.set_credentials_provider(None);
        let sts_config = sts_config.build();
        let sts = aws_sdk_sts::Client::from_conf(sts_config);
        let region = config.region().map(|r| r.to_string()).unwrap_or_default();
        let out = sts
            .assume_role_with_web_identity()
            .role_arn(&role_arn)
            .role_session_name(SESSION_NAME)
            .web_identity_token(token.expose())
            .send()
            .await
            .map_err(|e| anyhow!(describe(&e)))
            .with_context(|| format!("failed to assume role {role_arn} with the service-account token (STS in region {region})"))?;
        let c = out.credentials().ok_or_else(|| {
            anyhow!("STS AssumeRoleWithWebIdentity for {role_arn} returned no credentials")
        })?;
        let credentials = AwsCredentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            Some(c.session_token().to_owned()),
            to_system_time(c.expiration()),
            "AssumeRoleWithWebIdentity",
        );
        tracing::info!(role_arn, "assumed role with the service-account token");
        Ok(Some(AssumedRole {
            credentials,
            role_arn,
        }))
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

fn to_system_time(t: &aws_smithy_types::DateTime) -> Option<SystemTime> {
    SystemTime::try_from(*t).ok()
}

/// The API endpoint host we expect the SDK to call, for error messages.
fn endpoint_description(
    kind: &RegistryKind,
    region: &str,
    endpoints: &Endpoints,
    service_env: &str,
) -> String {
    if let Some((variable, url)) = aws::endpoint_override(service_env) {
        // Only the host: a URL could carry credentials in its user-info.
        let host = reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned));
        return format!(
            "{} (from {variable})",
            host.unwrap_or_else(|| "an unparsable URL".to_owned())
        );
    }
    crate::endpoint::resolve(kind, region, endpoints.fips, endpoints.dual_stack)
        .unwrap_or_else(|e| format!("unresolved ({e})"))
}
