//! `acr-credential-provider`: kubelet image credential provider for Azure Container Registry.
//!
//! A drop-in replacement for the upstream Go binary of kubernetes-sigs/cloud-provider-azure: same
//! name, positional `azure.json` argument, `--registry-mirror`, answers (null-GUID user with an
//! ACR refresh token, `Registry` cache key, the anonymous `*.azurecr.*` entry). It fixes upstream's
//! weak points: login servers matched by whole DNS labels, the challenge realm checked before an
//! Entra token leaves the node, service principals exchanged instead of handing their secret to
//! the runtime, service-account tokens honoured on every node, workload identity, bounded retries
//! inside one deadline, `cacheDuration` from the refresh token's expiry. AKS identity bindings
//! (`--ib-*`) and Azure Arc's managed identity are supported too.
//!
//! The command line lives here; everything else is the `acr_credential_provider` library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use acr_credential_provider::config::AzureConfig;
use acr_credential_provider::host;
use acr_credential_provider::ib::{IbConfig, IbFlags};
use acr_credential_provider::provider::AcrProvider;
use clap::Parser;
use kcp_plugin::runner::usage_error;
use kcp_plugin::settings::CommonArgs;

/// Kubelet image credential provider for Azure Container Registry.
///
/// Reads one CredentialProviderRequest on stdin and writes one CredentialProviderResponse on
/// stdout. The argument is the cloud config file, usually /etc/kubernetes/azure.json.
#[derive(Debug, Parser)]
#[command(name = "acr-credential-provider", version, about, long_about = None)]
struct Cli {
    /// The cloud config file (azure.json), JSON or YAML.
    #[arg(value_name = "CONFIG_FILE")]
    config: Option<PathBuf>,

    /// Extra positional arguments (refused: exactly one config file is expected).
    #[arg(hide = true)]
    extra: Vec<String>,

    /// Map a mirror host to a login server: SRC:DST[,SRC:DST] (or SRC=DST for a source with a
    /// port); repeatable. Images on SRC get DST's token, under both hosts.
    #[arg(short = 'r', long = "registry-mirror", value_name = "SRC:DST")]
    registry_mirror: Vec<String>,

    /// Answer service-principal nodes with the raw aadClientId/aadClientSecret, as upstream
    /// does, instead of exchanging them for a short-lived ACR token (also ACR_SERVICE_PRINCIPAL_PASSTHROUGH).
    #[arg(long, env = "ACR_SERVICE_PRINCIPAL_PASSTHROUGH", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    service_principal_passthrough: bool,

    /// Entra scope of the token exchanged at the registry [default: https://containerregistry.azure.net/.default].
    #[arg(long, value_name = "SCOPE")]
    token_scope: Option<String>,

    /// AKS identity bindings: the TLS name of the cluster's identity-bindings endpoint. Turns
    /// them on: pods' service-account tokens are traded there for Entra tokens.
    #[arg(long, value_name = "NAME")]
    ib_sni_name: Option<String>,
    /// Identity bindings: the API server's address (IP or host name, optionally :PORT; default port 443).
    #[arg(long, value_name = "ADDRESS")]
    ib_apiserver_ip: Option<String>,
    /// Identity bindings: the client ID for service accounts without the
    /// kubernetes.azure.com/acr-client-id annotation.
    #[arg(long, value_name = "CLIENT_ID")]
    ib_default_client_id: Option<String>,
    /// Identity bindings: the tenant for service accounts without the
    /// kubernetes.azure.com/acr-tenant-id annotation (reserved).
    #[arg(long, value_name = "TENANT_ID")]
    ib_default_tenant_id: Option<String>,
    /// Identity bindings: the only CA trusted for the endpoint [default: /etc/kubernetes/certs/ca.crt; C:\k\ca.crt on Windows].
    #[arg(long, value_name = "FILE")]
    ib_ca_file: Option<PathBuf>,

    /// klog flags upstream accepts (ignored).
    #[arg(long, hide = true)]
    vmodule: Option<String>,
    #[arg(long, hide = true)]
    log_flush_frequency: Option<String>,

    #[command(flatten)]
    common: CommonArgs,
}

/// pflag reads `-v 4` as `--v=4`; clap would read a count and a positional. Merge them.
fn klog_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let is_level = |a: &OsString| {
            a.to_str()
                .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        };
        if arg == "-v" && args.peek().is_some_and(is_level) {
            let level = args.next().unwrap_or_default();
            let mut merged = OsString::from("--v=");
            merged.push(level);
            out.push(merged);
        } else {
            out.push(arg);
        }
    }
    out
}

fn main() -> ExitCode {
    kcp_plugin::http::install_crypto_provider();
    let (cli, settings) =
        kcp_plugin::cli::start::<Cli>(klog_args(std::env::args_os()), |c| &c.common, |_| &[]);
    let Some(config_path) = cli.config else {
        return usage_error(
            "config file is not specified: pass the cloud config file (usually /etc/kubernetes/azure.json) as the only argument in the kubelet's CredentialProviderConfig args",
        );
    };
    if !cli.extra.is_empty() {
        return usage_error(&format!(
            "expected exactly one argument (config file); got arguments: {:?}",
            std::iter::once(config_path.display().to_string())
                .chain(cli.extra.iter().cloned())
                .collect::<Vec<_>>()
        ));
    }
    // Read once, before the request: a broken file is a configuration error (exit 2).
    let config = match AzureConfig::load(&config_path) {
        Ok(config) => config,
        Err(e) => return usage_error(&e.to_string()),
    };
    let (mirrors, warnings) = host::parse_mirrors(&cli.registry_mirror);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let identity_bindings = match IbConfig::from_flags(&IbFlags {
        sni_name: cli.ib_sni_name.as_deref(),
        apiserver: cli.ib_apiserver_ip.as_deref(),
        default_client_id: cli.ib_default_client_id.as_deref(),
        default_tenant_id: cli.ib_default_tenant_id.as_deref(),
        ca_file: cli.ib_ca_file.as_deref(),
    }) {
        Ok(config) => config,
        Err(e) => return usage_error(&e),
    };
    let provider = AcrProvider {
        config_path,
        config,
        mirrors,
        sp_passthrough: cli.service_principal_passthrough,
        token_scope: cli.token_scope.filter(|s| !s.trim().is_empty()),
        identity_bindings,
        token_cache: settings.token_cache.clone(),
    };
    kcp_plugin::runner::run_with_fast_path(
        &settings,
        |request| provider.answer_from_cache(request),
        async |request, deadline| provider.credentials(request, deadline).await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        kcp_plugin::cli::parse_lenient::<Cli>(klog_args(
            std::iter::once("acr-credential-provider")
                .chain(args.iter().copied())
                .map(OsString::from),
        ))
        .0
    }

    #[test]
    fn upstream_command_lines_parse() {
        let cli = parse(&[
            "/etc/kubernetes/azure.json",
            "--registry-mirror=mcr.microsoft.com:xxx.azurecr.io",
        ]);
        assert_eq!(
            cli.config,
            Some(PathBuf::from("/etc/kubernetes/azure.json"))
        );
        assert_eq!(
            cli.registry_mirror,
            vec!["mcr.microsoft.com:xxx.azurecr.io"]
        );
        assert!(cli.extra.is_empty());
        let cli = parse(&[
            "c:\\k\\azure.json",
            "-r",
            "a:b.azurecr.io",
            "-r=c:d.azurecr.io",
            "-v",
            "4",
            "--vmodule",
            "x=2",
            "--log-flush-frequency",
            "5s",
        ]);
        assert_eq!(cli.registry_mirror.len(), 2);
        assert_eq!(cli.common.v, Some(4));
        assert!(cli.extra.is_empty(), "{:?}", cli.extra);
        let cli = parse(&["a.json", "b.json"]);
        assert_eq!(cli.extra, vec!["b.json"]);
        let cli = parse(&[
            "--ib-sni-name",
            "api.example.com",
            "--ib-apiserver-ip=10.0.0.1",
            "azure.json",
        ]);
        assert_eq!(cli.ib_sni_name.as_deref(), Some("api.example.com"));
        assert_eq!(cli.config, Some(PathBuf::from("azure.json")));
        assert!(!cli.service_principal_passthrough);
        assert!(
            parse(&["azure.json", "--service-principal-passthrough"]).service_principal_passthrough
        );
    }
}
