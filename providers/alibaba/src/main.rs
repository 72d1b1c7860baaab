//! `alibaba-credential-provider`: kubelet image credential provider for Alibaba Cloud Container
//! Registry (Enterprise Edition instances, their custom domains, and the Personal Edition).
//!
//! Identities, first that applies: a pod's RAM role through its service-account token (RRSA,
//! `AssumeRoleWithOIDC`), static access keys from the environment, the node's RAM role from the
//! ECS metadata server. Every flag and variable is checked before stdin is read (a bad one is a
//! usage error: one line, exit 2).
//!
//! The command line lives here; everything else is the `alibaba_credential_provider` library.

use std::process::ExitCode;

use alibaba_credential_provider::host::{self, ConfiguredInstances, Region};
use alibaba_credential_provider::metadata;
use alibaba_credential_provider::provider::config::{self, OidcProviderArn};
use alibaba_credential_provider::provider::{
    AlibabaProvider, DEFAULT_ROLE_ANNOTATION, Endpoints, NodeIdentity, Rrsa,
};
use clap::Parser;
use kcp_plugin::settings::{CommonArgs, Settings};

/// Kubelet image credential provider for Alibaba Cloud Container Registry.
///
/// Reads one CredentialProviderRequest on stdin and writes one CredentialProviderResponse on
/// stdout. `get-credentials` is optional.
#[derive(Debug, Parser)]
#[command(name = "alibaba-credential-provider", version, about, long_about = None, args_override_self = true)]
struct Cli {
    /// A registry host (an Enterprise instance's custom domain, or any Enterprise host) answered
    /// with the Enterprise instance ID: HOST[:PORT]=cri-…; repeatable (env: comma-separated).
    #[arg(
        long = "instance",
        value_name = "HOST=ID",
        env = "ALIBABA_CR_INSTANCES",
        value_delimiter = ','
    )]
    instance: Vec<String>,

    /// The region of hosts that name none (custom domains) [default: the metadata server's
    /// region-id].
    #[arg(long, value_name = "REGION", env = "ALIBABA_CLOUD_REGION_ID")]
    region: Option<String>,

    /// RRSA: the cluster's OIDC provider, acs:ram::<account>:oidc-provider/<name>.
    #[arg(
        long = "oidc-provider-arn",
        value_name = "ARN",
        env = "ALIBABA_CLOUD_OIDC_PROVIDER_ARN"
    )]
    oidc_provider_arn: Option<String>,

    /// RRSA: the account of a role annotated by name only [default: the OIDC provider ARN's].
    #[arg(
        long = "account-id",
        value_name = "ID",
        env = "ALIBABA_CLOUD_ACCOUNT_ID"
    )]
    account_id: Option<String>,

    /// RRSA: the service-account annotation naming the pod's RAM role (a name or a full ARN).
    #[arg(long = "role-annotation-key", value_name = "KEY", default_value = DEFAULT_ROLE_ANNOTATION)]
    role_annotation_key: String,

    /// RRSA: DurationSeconds of AssumeRoleWithOIDC, a Go duration or seconds, 15m to 12h.
    #[arg(
        long = "session-duration",
        value_name = "DURATION",
        default_value = "1h"
    )]
    session_duration: String,

    /// The ECS metadata server: plain http only to 100.100.100.200 or a loopback host.
    #[arg(
        long = "metadata-endpoint",
        value_name = "URL",
        env = "ALIBABA_CLOUD_METADATA_ENDPOINT",
        default_value = metadata::DEFAULT_ENDPOINT
    )]
    metadata_endpoint: String,

    /// STS endpoint, a host or URL [default: https://sts.<region>.aliyuncs.com, sts-vpc with
    /// ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED=true].
    #[arg(
        long = "sts-endpoint",
        value_name = "URL",
        env = "ALIBABA_CLOUD_STS_ENDPOINT"
    )]
    sts_endpoint: Option<String>,

    /// Container Registry API endpoint, a host or URL [default: https://cr.<region>.aliyuncs.com].
    #[arg(
        long = "cr-endpoint",
        value_name = "URL",
        env = "ALIBABA_CLOUD_CR_ENDPOINT"
    )]
    cr_endpoint: Option<String>,

    #[command(flatten)]
    common: CommonArgs,

    /// `get-credentials` (optional); any other word is refused.
    #[arg(hide = true)]
    rest: Vec<String>,
}

fn main() -> ExitCode {
    let (cli, settings) = kcp_plugin::cli::start::<Cli>(
        std::env::args_os(),
        &kcp_provider_args::flags::ALIBABA,
        |c| &c.common,
    );
    match build(cli, &settings, |name| std::env::var(name).ok()) {
        Ok(provider) => kcp_plugin::runner::serve(&settings, &provider),
        Err(message) => kcp_plugin::runner::usage_error(&message),
    }
}

/// Checks the flags and environment (`env` reads a variable) and builds the provider; errors are
/// one operator-facing line.
fn build(
    cli: Cli,
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<AlibabaProvider, String> {
    let mut instances = ConfiguredInstances::new();
    for item in cli.instance.iter().filter(|i| !i.trim().is_empty()) {
        let (host, id) = host::parse_instance_flag(item)?;
        if let Some(before) = instances.insert(host.clone(), id.clone())
            && before != id
        {
            return Err(format!(
                "--instance names {host} twice, as {before} and {id}: keep one"
            ));
        }
    }
    let region = optional(cli.region.as_deref(), |text| {
        Region::parse(text).ok_or_else(|| {
            format!("--region {text:?} is not a region ID (like cn-hangzhou or ap-southeast-1)")
        })
    })?;
    let oidc_provider_arn = optional(cli.oidc_provider_arn.as_deref(), OidcProviderArn::parse)?;
    let account_id = optional(cli.account_id.as_deref(), config::parse_account_id)?;
    let role_annotation_key = cli.role_annotation_key.trim().to_owned();
    if role_annotation_key.is_empty() {
        return Err("--role-annotation-key is empty".to_owned());
    }
    let session_duration = config::parse_session_duration(&cli.session_duration)?;
    let metadata_endpoint = config::metadata_endpoint(&cli.metadata_endpoint)?;
    let endpoints = Endpoints {
        sts: optional(cli.sts_endpoint.as_deref(), |text| {
            config::service_endpoint(text, "--sts-endpoint (ALIBABA_CLOUD_STS_ENDPOINT)")
        })?,
        sts_vpc: config::vpc_enabled(env(config::VPC_ENDPOINT_ENV).as_deref())?,
        cr: optional(cli.cr_endpoint.as_deref(), |text| {
            config::service_endpoint(text, "--cr-endpoint (ALIBABA_CLOUD_CR_ENDPOINT)")
        })?,
    };
    let node = match config::static_key(
        env(config::ACCESS_KEY_ID_ENV),
        env(config::ACCESS_KEY_SECRET_ENV),
        env(config::SECURITY_TOKEN_ENV),
    )? {
        Some(key) => NodeIdentity::StaticKey(key),
        None => NodeIdentity::RamRole {
            role: config::ecs_role(env(config::ECS_METADATA_ENV).as_deref())?,
        },
    };
    Ok(AlibabaProvider {
        instances,
        region,
        rrsa: Rrsa {
            oidc_provider_arn,
            account_id,
            role_annotation_key,
            session_duration,
        },
        node,
        metadata_endpoint,
        endpoints,
        token_cache: settings.token_cache.clone(),
    })
}

/// `parse` of a flag's value, trimmed; `None` when it is unset or blank.
fn optional<T>(
    value: Option<&str>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    value
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(parse)
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker reads `kcp_provider_args::flags::ALIBABA`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::ALIBABA);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }
}
