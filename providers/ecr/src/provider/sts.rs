//! The role sessions an ECR call can be made with, from STS: AssumeRoleWithWebIdentity with the
//! pod's service-account token, and `--assume-role`'s AssumeRole with the node's credentials.
//! (EKS Pod Identity's session is `crate::pod_identity`'s.)

use anyhow::{Context, anyhow};
use aws_credential_types::Credentials as AwsCredentials;
use kcp_kubelet::Secret;

use super::{describe, overridden_endpoint, to_system_time};
use crate::aws::{self, Endpoints};
use crate::mirrors_and_roles::RoleArn;

/// Session name for AssumeRoleWithWebIdentity (as upstream) and for `--assume-role`'s AssumeRole:
/// CloudTrail shows `assumed-role/<role>/ecr-credential-provider` for every pull token.
const SESSION_NAME: &str = "ecr-credential-provider";

/// Credentials of an assumed role.
pub(super) struct AssumedRole {
    /// The session's credentials, which sign the ECR call.
    pub(super) credentials: AwsCredentials,
    /// How they were obtained, for error messages.
    pub(super) source: String,
}

/// Exchanges the pod's token for credentials of `role_arn`.
pub(super) async fn assume_role(
    role_arn: &str,
    token: &Secret,
    config: &aws_config::SdkConfig,
) -> anyhow::Result<AssumedRole> {
    // AssumeRoleWithWebIdentity needs no AWS credentials: the pod's token is the proof.
    let mut sts_config =
        aws_sdk_sts::config::Builder::from(config).retry_classifier(aws::retry_on_429());
    sts_config.set_credentials_provider(None);
    let sts_config = sts_config.build();
    let sts = aws_sdk_sts::Client::from_conf(sts_config);
    let region = config.region().map(|r| r.to_string()).unwrap_or_default();
    let out = sts
            .assume_role_with_web_identity()
            .role_arn(role_arn)
            .role_session_name(SESSION_NAME)
            .web_identity_token(token.expose())
            .send()
            .await
            .map_err(|e| anyhow!(describe(&e)))
            .with_context(|| format!("failed to assume role {role_arn} with the service-account token (STS in region {region})"))?;
    let credentials =
        session_credentials(out.credentials(), "AssumeRoleWithWebIdentity", role_arn)?;
    tracing::info!(role_arn, "assumed role with the service-account token");
    Ok(AssumedRole {
        credentials,
        source: format!("assumed role {role_arn} via the service-account token"),
    })
}

/// `--assume-role`: STS AssumeRole with the node's credentials (the default chain of `config`),
/// in the registry's region, partition and endpoint flavour, as `config` is set up for it.
pub(super) async fn assume_role_as_node(
    role: &RoleArn,
    external_id: Option<&str>,
    config: &aws_config::SdkConfig,
    region: &str,
    endpoints: &Endpoints,
) -> anyhow::Result<AssumedRole> {
    let role_arn = role.arn.as_str();
    let sts_config = aws_sdk_sts::config::Builder::from(config)
        .retry_classifier(aws::retry_on_429())
        .build();
    let sts = aws_sdk_sts::Client::from_conf(sts_config);
    let out = sts
        .assume_role()
        .role_arn(role_arn)
        .role_session_name(SESSION_NAME)
        .set_external_id(external_id.map(str::to_owned))
        .send()
        .await
        .map_err(|e| anyhow!(describe(&e)))
        .with_context(|| {
            format!(
                "failed to assume role {role_arn} (--assume-role) with the node's credentials ({}; STS in region {region}, endpoint {}); check the role's trust policy{}",
                aws::credential_source(),
                sts_endpoint_description(region, endpoints),
                if external_id.is_some() { " and its sts:ExternalId condition" } else { "" }
            )
        })?;
    let credentials = session_credentials(out.credentials(), "AssumeRole", role_arn)?;
    tracing::info!(role_arn, "assumed role with the node's credentials");
    Ok(AssumedRole {
        credentials,
        source: format!("assumed role {role_arn} with the node's credentials (--assume-role)"),
    })
}

/// The role session STS answered `call` with, as the credentials of the ECR call.
fn session_credentials(
    credentials: Option<&aws_sdk_sts::types::Credentials>,
    call: &'static str,
    role_arn: &str,
) -> anyhow::Result<AwsCredentials> {
    let c =
        credentials.ok_or_else(|| anyhow!("STS {call} for {role_arn} returned no credentials"))?;
    kcp_kubelet::secret::remember(c.secret_access_key());
    kcp_kubelet::secret::remember(c.session_token());
    Ok(AwsCredentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_owned()),
        to_system_time(c.expiration()),
        call,
    ))
}

/// The STS endpoint we expect the SDK to call, for error messages.
fn sts_endpoint_description(region: &str, endpoints: &Endpoints) -> String {
    if let Some(overridden) = overridden_endpoint("STS") {
        return overridden;
    }
    crate::endpoint::resolve_sts(region, endpoints.fips, endpoints.dual_stack)
        .unwrap_or_else(|e| format!("unresolved ({e})"))
}
