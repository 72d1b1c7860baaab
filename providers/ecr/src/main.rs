//! `ecr-credential-provider`: kubelet image credential provider for Amazon ECR (private
//! registries in every partition, FIPS and dual-stack hosts) and ECR Public.
//!
//! A drop-in replacement for the upstream Go binary of kubernetes/cloud-provider-aws: same
//! name, arguments, environment and answers (`Registry` cache key, half the token's life as
//! `cacheDuration`), with every API version answered, ports kept in auth keys, endpoints that
//! follow the host, service-account-token mode with fallback, and one deadline for the whole run.
//! Beyond upstream: `--registry-mirror` (a mirror host answered with an ECR registry's token),
//! `--assume-role` (a role per registry account), `--eks-pod-identity-cluster` (EKS Pod Identity)
//! and `--role-annotation-key`, all checked before stdin is read; IAM Roles Anywhere as the
//! node's identity without the signing helper (`--roles-anywhere-*`, or the helper's
//! `credential_process` in the AWS config read natively).

mod aws;
mod endpoint;
mod host;
mod mirrors_and_roles;
mod pod_identity;
mod provider;
mod roles_anywhere;
mod sdk_http;

use std::process::ExitCode;

use clap::Parser;
use kcp_plugin::cache_hint::CachePolicy;
use kcp_plugin::runner::usage_error;
use kcp_plugin::settings::CommonArgs;

use crate::provider::EcrProvider;

/// Kubelet image credential provider for Amazon ECR and ECR Public.
///
/// Reads one CredentialProviderRequest on stdin and writes one CredentialProviderResponse on stdout.
#[derive(Debug, Parser)]
#[command(name = "ecr-credential-provider", version, about, long_about = None)]
struct Cli {
    /// Refuse images whose host is not an ECR registry (mirrors, custom DNS) instead of answering
    /// with a token for the default region. Implied by --registry-mirror.
    #[arg(long, env = "ECR_STRICT_HOSTS", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    strict_hosts: bool,

    /// Service-account annotation naming the IAM role to assume in service-account-token mode
    /// (repeatable or comma-separated; the first present wins; replaces the default).
    #[arg(
        long = "role-annotation-key",
        visible_alias = "role-arn-annotation",
        value_name = "KEY",
        default_value = "eks.amazonaws.com/ecr-role-arn",
        value_delimiter = ','
    )]
    role_annotations: Vec<String>,

    /// Answer images on a mirror host with a token of an ECR private registry: SRC:DST[,SRC:DST]
    /// (SRC=DST for a source with a port); repeatable. Implies --strict-hosts.
    #[arg(short = 'r', long = "registry-mirror", value_name = "SRC:DST")]
    registry_mirror: Vec<String>,

    /// Pull from the registries of ACCOUNT (12 digits) as ROLE_ARN, assumed with STS AssumeRole
    /// and the node's credentials (session name ecr-credential-provider); repeatable.
    #[arg(long = "assume-role", value_name = "ACCOUNT=ROLE_ARN")]
    assume_role: Vec<String>,

    /// ExternalId sent with every --assume-role call.
    #[arg(long = "assume-role-external-id", value_name = "ID")]
    assume_role_external_id: Option<String>,

    /// EKS Pod Identity: with a service-account token and no role annotation, exchange the token
    /// with EKS Auth AssumeRoleForPodIdentity for this cluster (signed with the node's
    /// credentials) and pull as the associated role; without an association, pull as without
    /// this flag.
    #[arg(
        long = "eks-pod-identity-cluster",
        env = "ECR_EKS_POD_IDENTITY_CLUSTER",
        value_name = "CLUSTER"
    )]
    eks_pod_identity_cluster: Option<String>,

    /// The cluster's region for --eks-pod-identity-cluster, when it is not the registry's (ECR
    /// Public's API is in us-east-1; registries of other regions).
    #[arg(
        long = "eks-pod-identity-region",
        env = "ECR_EKS_POD_IDENTITY_REGION",
        value_name = "REGION"
    )]
    eks_pod_identity_region: Option<String>,

    #[command(flatten)]
    roles_anywhere: roles_anywhere::Flags,

    #[command(flatten)]
    common: CommonArgs,

    /// `get-credentials`, as configs pass it (ignored, as upstream); any other word is refused.
    #[arg(hide = true)]
    rest: Vec<String>,
}

fn main() -> ExitCode {
    let (cli, settings) =
        kcp_plugin::cli::start::<Cli>(std::env::args_os(), &kcp_provider_args::flags::ECR, |c| {
            &c.common
        });
    // Checked before the request is read: a bad mapping fails every run alike (exit 2).
    let configured = mirrors_and_roles::mirrors(&cli.registry_mirror).and_then(|mirrors| {
        let roles = mirrors_and_roles::Roles::parse(
            &cli.assume_role,
            cli.assume_role_external_id.as_deref(),
        )?;
        mirrors_and_roles::check(&mirrors, &roles)?;
        let pod_identity = pod_identity::PodIdentity::from_flags(
            cli.eks_pod_identity_cluster.as_deref(),
            cli.eks_pod_identity_region.as_deref(),
        )?;
        let roles_anywhere = roles_anywhere::RolesAnywhere::configured(&cli.roles_anywhere)?;
        Ok((mirrors, roles, pod_identity, roles_anywhere))
    });
    let (mirrors, roles, pod_identity, roles_anywhere) = match configured {
        Ok(configured) => configured,
        Err(e) => return usage_error(&e),
    };
    let provider = EcrProvider {
        strict_hosts: cli.strict_hosts || !mirrors.is_empty(),
        mirrors,
        roles,
        role_annotations: cli.role_annotations,
        pod_identity,
        roles_anywhere,
        cache_policy: CachePolicy::HalfRemaining,
        token_cache: settings.token_cache.clone(),
    };
    kcp_plugin::runner::serve(&settings, &provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker reads `kcp_provider_args::flags::ECR`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::ECR);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }
}
