//! EKS Pod Identity for image pulls: the pod's service-account token (audience
//! `pods.eks.amazonaws.com`) is exchanged with EKS Auth `AssumeRoleForPodIdentity`, signed with the
//! node's credentials, for the credentials of the role the cluster associates with that service
//! account. No annotation is involved: the association lives in the EKS API.

use anyhow::anyhow;
use aws_credential_types::Credentials as AwsCredentials;
use aws_sdk_eksauth::error::{ProvideErrorMetadata, SdkError};
use kcp_kubelet::Secret;
use kcp_plugin::jwt::ServiceAccountClaims;

use crate::aws;

/// The environment name of EKS Auth's endpoint variable (`AWS_ENDPOINT_URL_EKS_AUTH`).
pub const SERVICE_ENV: &str = "EKS_AUTH";

/// The longest `cacheDuration` of an answer given because the ServiceAccount has no Pod Identity
/// association. With `cacheType: ServiceAccount` the kubelet keeps that answer for the whole
/// ServiceAccount: uncapped (half the node's twelve-hour ECR token), an association made later
/// would go unused for up to six hours. Ten minutes bounds that wait while a busy ServiceAccount
/// still costs at most one EKS Auth call per node every ten minutes.
pub const FALLBACK_CACHE: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// EKS Auth answered `ResourceNotFoundException`: the cluster has no Pod Identity association for
/// the pod's ServiceAccount, so the request goes on down the precedence as without Pod Identity.
/// Carried as an error out of the fetch so the caller can tell it from a failure.
#[derive(Debug)]
pub struct NoAssociation {
    /// `namespace/name` from the token's claims.
    pub service_account: String,
    /// The cluster asked.
    pub cluster: String,
    /// The region EKS Auth was called in.
    pub region: String,
}

impl std::fmt::Display for NoAssociation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EKS Pod Identity: no association for service account {} in cluster {} (EKS Auth in region {}; a wrong cluster name or region may answer the same)",
            self.service_account, self.cluster, self.region
        )
    }
}

impl std::error::Error for NoAssociation {}

/// `--eks-pod-identity-cluster` and `--eks-pod-identity-region`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodIdentity {
    /// The EKS cluster's name.
    pub cluster: String,
    /// The cluster's region, when it is not the registry's.
    pub region: Option<String>,
}

impl PodIdentity {
    /// Reads the flags (an empty value, e.g. from the environment, is unset); `None` when Pod
    /// Identity is off. A malformed name or region is an error.
    pub fn from_flags(
        cluster: Option<&str>,
        region: Option<&str>,
    ) -> Result<Option<PodIdentity>, String> {
        let set = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let (cluster, region) = (set(cluster), set(region));
        if let Some(region) = &region
            && !crate::host::is_region(region)
        {
            return Err(format!(
                "--eks-pod-identity-region {region:?} is not an AWS region name (e.g. us-west-2)"
            ));
        }
        match cluster {
            Some(cluster) => {
                check_cluster(&cluster)?;
                Ok(Some(PodIdentity { cluster, region }))
            }
            None if region.is_some() => {
                Err("--eks-pod-identity-region needs --eks-pod-identity-cluster".to_owned())
            }
            None => Ok(None),
        }
    }
}

/// Checks a `--eks-pod-identity-cluster` value: EKS cluster names are 1 to 100 letters, digits,
/// `-` and `_`, starting with a letter or digit. It becomes a URL path segment, so nothing else
/// may pass.
fn check_cluster(name: &str) -> Result<(), String> {
    let ok = (1..=100).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--eks-pod-identity-cluster {name:?} is not an EKS cluster name (1-100 letters, digits, '-' or '_', starting with a letter or digit); give the cluster's name, not its ARN"
        ))
    }
}

/// Who the token was minted for, `namespace/name`, for error messages (no secret: the claims
/// name the account, they do not prove it).
fn service_account(token: &Secret) -> String {
    ServiceAccountClaims::from_token(token.expose()).map_or_else(
        || "(the token names none)".to_owned(),
        |c| format!("{}/{}", c.namespace, c.name),
    )
}

/// Calls `AssumeRoleForPodIdentity` for the cluster with the pod's `token`, signed with the
/// node's credentials from `config` (its region, unless the cluster's is given, and its FIPS
/// setting choose the endpoint), and returns the associated role's credentials with their expiry.
/// `ResourceNotFoundException` is a [`NoAssociation`] error, every other failure one line.
pub async fn assume_role(
    target: &PodIdentity,
    token: &Secret,
    config: &aws_config::SdkConfig,
) -> anyhow::Result<AwsCredentials> {
    let cluster = target.cluster.as_str();
    let mut builder =
        aws_sdk_eksauth::config::Builder::from(config).retry_classifier(aws::retry_on_429());
    if let Some(region) = &target.region {
        builder = builder.region(aws_config::Region::new(region.clone()));
    }
    let region = match &target.region {
        Some(region) => region.clone(),
        None => config.region().map(|r| r.to_string()).unwrap_or_default(),
    };
    if aws::endpoint_override(SERVICE_ENV).is_some() {
        // The SDK refuses a custom endpoint combined with FIPS; the override names the endpoint.
        builder = builder.use_fips(false);
    }
    let fips = config.use_fips().unwrap_or(false) && aws::endpoint_override(SERVICE_ENV).is_none();
    let client = aws_sdk_eksauth::Client::from_conf(builder.build());
    let out = client
        .assume_role_for_pod_identity()
        .cluster_name(cluster)
        .token(token.expose())
        .send()
        .await
        .map_err(|e| {
            if is_no_association(&e) {
                anyhow::Error::new(NoAssociation {
                    service_account: service_account(token),
                    cluster: cluster.to_owned(),
                    region: region.clone(),
                })
            } else {
                anyhow!(describe(&e, cluster, &region, fips, token))
            }
        })?;
    let c = out.credentials().ok_or_else(|| {
        anyhow!(
            "EKS Pod Identity: AssumeRoleForPodIdentity for cluster {cluster} (region {region}) returned no credentials"
        )
    })?;
    let expiry = std::time::SystemTime::try_from(*c.expiration()).ok();
    tracing::info!(
        cluster,
        role = out.assumed_role_user().map(|u| u.arn()),
        "assumed the Pod Identity role of the service account"
    );
    Ok(AwsCredentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_owned()),
        expiry,
        "AssumeRoleForPodIdentity",
    ))
}

/// Whether EKS Auth said the service account has no association (not a failure: the caller falls
/// back).
fn is_no_association<E>(error: &SdkError<E, aws_smithy_runtime_api::http::Response>) -> bool
where
    E: ProvideErrorMetadata,
{
    matches!(error, SdkError::ServiceError(s) if s.err().code() == Some("ResourceNotFoundException"))
}

/// One line naming EKS Pod Identity, the exception and what to check; never the token.
fn describe<E>(
    error: &SdkError<E, aws_smithy_runtime_api::http::Response>,
    cluster: &str,
    region: &str,
    fips: bool,
    token: &Secret,
) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
{
    let call = format!(
        "EKS Pod Identity: AssumeRoleForPodIdentity for cluster {cluster} (EKS Auth in region {region}, endpoint {})",
        endpoint_description(region, fips)
    );
    let SdkError::ServiceError(service) = error else {
        return format!("{call} failed: {}", kcp_plugin::logging::error_chain(error));
    };
    let status = service.raw().status().as_u16();
    let err = service.err();
    let code = err.code().unwrap_or("unknown error");
    let message = err.message().unwrap_or("no message");
    let hint = match code {
        "InvalidTokenException" | "ExpiredTokenException" => format!(
            "the service-account token of {} was refused: the kubelet config's tokenAttributes.serviceAccountTokenAudience must be pods.eks.amazonaws.com, and the token must come from this cluster and be unexpired (node clock)",
            service_account(token)
        ),
        "AccessDeniedException" => format!(
            "the node's credentials ({}) may not call it: the node role needs eks-auth:AssumeRoleForPodIdentity on the cluster (part of AmazonEKSWorkerNodePolicy)",
            aws::credential_source()
        ),
        _ => "check the node's network path to EKS Auth and its credentials".to_owned(),
    };
    format!("{call} failed: HTTP {status} {code}: {message}; {hint}")
}

/// The endpoint called, for error messages: the environment's host (never the whole URL, which
/// could carry credentials) or the SDK's resolution for the region.
fn endpoint_description(region: &str, fips: bool) -> String {
    match aws::endpoint_override(SERVICE_ENV) {
        Some((variable, url)) => {
            let host = reqwest::Url::parse(&url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "an unparsable URL".to_owned());
            format!("{host} from {variable}")
        }
        None => crate::endpoint::resolve_eks_auth(region, fips)
            .unwrap_or_else(|e| format!("unresolved ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_checked() {
        for ok in ["prod", "my-cluster_2", "0abc", &"a".repeat(100)] {
            assert_eq!(check_cluster(ok), Ok(()), "{ok}");
        }
        assert_eq!(PodIdentity::from_flags(Some(" "), None), Ok(None));
        assert_eq!(
            PodIdentity::from_flags(Some("prod"), Some("eu-west-1")),
            Ok(Some(PodIdentity {
                cluster: "prod".to_owned(),
                region: Some("eu-west-1".to_owned())
            }))
        );
        assert!(PodIdentity::from_flags(None, Some("eu-west-1")).is_err());
        assert!(PodIdentity::from_flags(Some("prod"), Some("eu west")).is_err());
        for bad in [
            "",
            "-lead",
            "_lead",
            "a/b",
            "a b",
            "arn:aws:eks:us-west-2:123456789012:cluster/prod",
            "prod?x=1",
            "clüster",
            &"a".repeat(101),
        ] {
            assert!(check_cluster(bad).is_err(), "{bad:?}");
        }
    }
}
