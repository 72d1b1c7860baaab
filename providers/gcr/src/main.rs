//! `gcr-credential-provider`: kubelet image credential provider for Google Container Registry and
//! Artifact Registry.
//!
//! Command-line compatible with upstream `auth-provider-gcp` (kubernetes/cloud-provider-gcp):
//! `get-credentials`, `--authFlow`/`-a gcr|dockercfg|dockercfg-url`, `--identity-provider`,
//! `--project-id`, klog's `--v`, `KUBE_SIDECAR_CACHE_TYPE`/`KUBE_SIDECAR_CACHE_DURATION`. Without
//! upstream's traps: it fails loudly instead of answering with no credentials, honours
//! `GCE_METADATA_HOST`, never proxies metadata traffic, never logs a token, caches for the token's
//! real life, answers in the request's apiVersion, and adds key files, generic Workload Identity
//! Federation and service-account impersonation.
//!
//! The command line lives here; everything else is the `gcr_credential_provider` library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use gcr_credential_provider::metadata::{self, Metadata};
use gcr_credential_provider::provider::{AuthFlow, CacheSettings, GcrProvider};
use gcr_credential_provider::wif::{self, Wif};
use kcp_kubelet::CacheKeyType;
use kcp_kubelet::duration::GoDuration;
use kcp_plugin::endpoint;
use kcp_plugin::settings::{CommonArgs, Settings};

/// Upstream's cache key type variable: `image`, `registry` or `global`.
const CACHE_TYPE_ENV: &str = "KUBE_SIDECAR_CACHE_TYPE";
/// Upstream's cache duration variable, a Go duration.
const CACHE_DURATION_ENV: &str = "KUBE_SIDECAR_CACHE_DURATION";

/// Kubelet image credential provider for Google Container Registry and Artifact Registry.
///
/// Reads one CredentialProviderRequest on stdin and writes one CredentialProviderResponse on
/// stdout. `get-credentials` is optional.
#[derive(Debug, Parser)]
#[command(name = "gcr-credential-provider", version, about, long_about = None, args_override_self = true)]
struct Cli {
    /// Where credentials come from: gcr (an access token), dockercfg (the google-dockercfg
    /// instance attribute) or dockercfg-url (the document at google-dockercfg-url).
    #[arg(
        long = "authFlow",
        short = 'a',
        value_name = "FLOW",
        default_value = "gcr"
    )]
    auth_flow: String,

    /// Workload Identity: the cluster's identity provider, e.g.
    /// https://container.googleapis.com/v1/projects/P/locations/L/clusters/C (needs --project-id).
    #[arg(long = "identity-provider", value_name = "URL", default_value = "")]
    identity_provider: String,

    /// Workload Identity: the project whose workload identity pool (<project>.svc.id.goog) is used.
    #[arg(long = "project-id", value_name = "ID", default_value = "")]
    project_id: String,

    /// Workload Identity Federation outside GKE: the full STS audience, e.g.
    /// //iam.googleapis.com/projects/NUM/locations/global/workloadIdentityPools/POOL/providers/PROV.
    #[arg(long = "wif-audience", value_name = "AUDIENCE")]
    wif_audience: Option<String>,

    /// Workload Identity: Google service account to impersonate when the pod's service account
    /// has no iam.gke.io/gcp-service-account annotation.
    #[arg(long = "impersonate-service-account", value_name = "EMAIL")]
    impersonate_service_account: Option<String>,

    /// STS token endpoint (Private Service Connect, other universes).
    #[arg(long = "sts-endpoint", value_name = "URL", default_value = wif::DEFAULT_STS_ENDPOINT)]
    sts_endpoint: String,

    /// IAM Credentials base URL.
    #[arg(long = "iam-endpoint", value_name = "URL", default_value = wif::DEFAULT_IAM_ENDPOINT)]
    iam_endpoint: String,

    /// Metadata server host[:port] (plain HTTP, never proxied).
    #[arg(long = "metadata-host", value_name = "HOST", env = "GCE_METADATA_HOST", default_value = metadata::DEFAULT_HOST)]
    metadata_host: String,

    /// Service-account key file to use instead of the metadata server.
    #[arg(
        long = "json-key",
        alias = "google-json-key",
        value_name = "FILE",
        env = "GOOGLE_APPLICATION_CREDENTIALS"
    )]
    json_key: Option<PathBuf>,

    /// Registry user name for access tokens: _token or oauth2accesstoken.
    #[arg(long, value_name = "NAME", default_value = "_token")]
    username: String,

    /// Refuse images whose registry is not one of Google's (gcr.io, *.gcr.io, *.pkg.dev,
    /// container.cloud.google.com) instead of also offering the token to the image's registry.
    #[arg(long, env = "GCR_STRICT_HOSTS", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    strict_hosts: bool,

    #[command(flatten)]
    common: CommonArgs,

    /// `get-credentials` (optional, as upstream's subcommand); any other word is refused.
    #[arg(hide = true)]
    rest: Vec<String>,
}

fn main() -> ExitCode {
    let (cli, settings) =
        kcp_plugin::cli::start::<Cli>(std::env::args_os(), &kcp_provider_args::flags::GCR, |c| {
            &c.common
        });
    match build(cli, &settings) {
        Ok(provider) => kcp_plugin::runner::serve(&settings, &provider),
        Err(message) => kcp_plugin::runner::usage_error(&message),
    }
}

/// Checks the flags and environment and builds the provider; errors are one operator-facing line.
fn build(cli: Cli, settings: &Settings) -> Result<GcrProvider, String> {
    let flow = AuthFlow::parse(&cli.auth_flow)?;
    if !matches!(cli.username.as_str(), "_token" | "oauth2accesstoken") {
        return Err(format!(
            "--username {:?} is not accepted by Google's registries: use _token or oauth2accesstoken",
            cli.username
        ));
    }
    let identity_provider = cli.identity_provider.trim();
    let project_id = cli.project_id.trim();
    if !identity_provider.is_empty() && project_id.is_empty() {
        return Err("--project-id is required when --identity-provider is set".to_owned());
    }
    let audience = match (
        cli.wif_audience.as_deref().map(str::trim),
        identity_provider,
    ) {
        (Some(""), _) => return Err("--wif-audience is empty".to_owned()),
        (Some(_), ip) if !ip.is_empty() => {
            return Err(
                "use either --wif-audience or --identity-provider/--project-id, not both"
                    .to_owned(),
            );
        }
        (Some(aud), _) => Some(aud.to_owned()),
        (None, "") => None,
        (None, ip) => Some(wif::gke_audience(project_id, ip)),
    };
    let wif = match audience {
        None => {
            if cli.impersonate_service_account.is_some() {
                return Err("--impersonate-service-account needs Workload Identity: set --identity-provider/--project-id or --wif-audience".to_owned());
            }
            None
        }
        Some(audience) => {
            if flow != AuthFlow::Gcr {
                tracing::warn!(
                    "Workload Identity flags only apply to --authFlow=gcr; ignored for this flow"
                );
            }
            let default_service_account =
                match cli.impersonate_service_account.as_deref().map(str::trim) {
                    Some(email) => {
                        wif::check_service_account(email, "--impersonate-service-account")
                            .map_err(|e| e.to_string())?;
                        Some(email.to_owned())
                    }
                    None => None,
                };
            let sts_endpoint = endpoint::secure_url(&cli.sts_endpoint, "--sts-endpoint")
                .map_err(|e| e.to_string())?;
            let iam_endpoint = endpoint::secure_url(&cli.iam_endpoint, "--iam-endpoint")
                .map_err(|e| e.to_string())?;
            Some(Wif {
                audience,
                sts_endpoint,
                iam_endpoint,
                default_service_account,
            })
        }
    };
    let metadata = Metadata::new(&cli.metadata_host)
        .map_err(|e| format!("{e} (GCE_METADATA_HOST / --metadata-host)"))?;
    let key_file = cli.json_key.filter(|p| !p.as_os_str().is_empty());
    let cache = CacheSettings {
        key_type: cache_key_type(std::env::var(CACHE_TYPE_ENV).ok().as_deref())?,
        duration: cache_duration(std::env::var(CACHE_DURATION_ENV).ok().as_deref())?,
    };
    let provider = GcrProvider {
        flow,
        metadata,
        key_file,
        wif,
        username: cli.username,
        strict_hosts: cli.strict_hosts,
        cache,
        token_cache: settings.token_cache.clone(),
    };
    Ok(provider)
}

/// `KUBE_SIDECAR_CACHE_TYPE`: upstream's lowercase values (the kubelet's spelling is accepted
/// too); unset means `Registry`, as a token is good for every image of a registry.
fn cache_key_type(value: Option<&str>) -> Result<CacheKeyType, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(CacheKeyType::Registry),
        Some(v) => match v.to_ascii_lowercase().as_str() {
            "image" => Ok(CacheKeyType::Image),
            "registry" => Ok(CacheKeyType::Registry),
            "global" => Ok(CacheKeyType::Global),
            _ => Err(format!(
                "{CACHE_TYPE_ENV}: Unknown cache key {v:?} (use image, registry or global)"
            )),
        },
    }
}

/// `KUBE_SIDECAR_CACHE_DURATION`: a Go duration; unset means "from the token's lifetime".
fn cache_duration(value: Option<&str>) -> Result<Option<GoDuration>, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => GoDuration::parse(v)
            .map(Some)
            .map_err(|e| format!("{CACHE_DURATION_ENV}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker reads `kcp_provider_args::flags::GCR`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::GCR);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }

    #[test]
    fn cache_environment() {
        assert_eq!(cache_key_type(None), Ok(CacheKeyType::Registry));
        assert_eq!(cache_key_type(Some("")), Ok(CacheKeyType::Registry));
        assert_eq!(cache_key_type(Some("image")), Ok(CacheKeyType::Image));
        assert_eq!(cache_key_type(Some("Global")), Ok(CacheKeyType::Global));
        assert!(
            cache_key_type(Some("pod"))
                .unwrap_err()
                .contains("Unknown cache key \"pod\"")
        );
        assert_eq!(cache_duration(None), Ok(None));
        assert_eq!(
            cache_duration(Some("1m30s")),
            Ok(Some(GoDuration::from_secs(90)))
        );
        assert!(
            cache_duration(Some("soon"))
                .unwrap_err()
                .starts_with(CACHE_DURATION_ENV)
        );
    }

    #[test]
    fn auth_flows_as_upstream() {
        assert_eq!(AuthFlow::parse("gcr"), Ok(AuthFlow::Gcr));
        assert_eq!(AuthFlow::parse("dockercfg"), Ok(AuthFlow::Dockercfg));
        assert_eq!(AuthFlow::parse("dockercfg-url"), Ok(AuthFlow::DockercfgUrl));
        for bad in ["bad-flow", "", "Gcrauthflow", "GCR"] {
            assert_eq!(
                AuthFlow::parse(bad).unwrap_err(),
                format!(
                    "invalid value {bad:?} for authFlow (must be one of \"gcr\", \"dockercfg\", or \"dockercfg-url\")"
                )
            );
        }
    }
}
