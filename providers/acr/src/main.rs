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

use std::path::PathBuf;
use std::process::ExitCode;

use acr_credential_provider::config::AzureConfig;
use acr_credential_provider::host;
use acr_credential_provider::identity_bindings::{IbConfig, IbFlags};
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
    /// The cloud config file (azure.json), JSON or YAML: exactly one, as upstream.
    #[arg(value_name = "CONFIG_FILE")]
    config: Option<PathBuf>,

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

    #[command(flatten)]
    common: CommonArgs,
}

fn main() -> ExitCode {
    kcp_plugin::http::install_crypto_provider();
    // `start` refuses anything but exactly one positional word, the config file.
    let (cli, settings) =
        kcp_plugin::cli::start::<Cli>(std::env::args_os(), &kcp_provider_args::flags::ACR, |c| {
            &c.common
        });
    let Some(config_path) = cli.config else {
        return usage_error("config file is not specified");
    };
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
    kcp_plugin::runner::serve(&settings, &provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, String> {
        kcp_plugin::cli::parse::<Cli>(
            std::iter::once("acr-credential-provider")
                .chain(args.iter().copied())
                .map(std::ffi::OsString::from),
            &kcp_provider_args::flags::ACR,
        )
        .map_err(|e| e.to_string())
    }

    /// The checker reads `kcp_provider_args::flags::ACR`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::ACR);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }

    #[test]
    fn upstream_command_lines_parse() {
        let cli = parse(&[
            "/etc/kubernetes/azure.json",
            "--registry-mirror=mcr.microsoft.com:xxx.azurecr.io",
        ])
        .unwrap();
        assert_eq!(
            cli.config,
            Some(PathBuf::from("/etc/kubernetes/azure.json"))
        );
        assert_eq!(
            cli.registry_mirror,
            vec!["mcr.microsoft.com:xxx.azurecr.io"]
        );
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
        ])
        .unwrap();
        assert_eq!(cli.registry_mirror.len(), 2);
        assert_eq!(cli.common.v, Some(4));
        assert!(parse(&["a.json", "b.json"]).unwrap_err().contains(
            "expected exactly one argument (config file); got arguments: [\"a.json\", \"b.json\"]"
        ));
        assert!(
            parse(&[])
                .unwrap_err()
                .contains("config file is not specified")
        );
        let cli = parse(&[
            "--ib-sni-name",
            "api.example.com",
            "--ib-apiserver-ip=10.0.0.1",
            "azure.json",
        ])
        .unwrap();
        assert_eq!(cli.ib_sni_name.as_deref(), Some("api.example.com"));
        assert_eq!(cli.config, Some(PathBuf::from("azure.json")));
        assert!(!cli.service_principal_passthrough);
        let cli = parse(&["--service-principal-passthrough", "azure.json"]).unwrap();
        assert!(cli.service_principal_passthrough);
        assert_eq!(cli.config, Some(PathBuf::from("azure.json")));
    }
}
