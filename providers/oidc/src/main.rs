//! `oidc-credential-provider`: trades the pod's service-account token (the kubelet's
//! `tokenAttributes`, KEP-4412) for a short-lived pull credential, per registry as the registries
//! file (`--config`) says: JFrog Artifactory, Quay, Cloudsmith, Chainguard, IBM Cloud IAM (for
//! IBM Cloud Container Registry), an OAuth 2.0 token exchange, or the token itself as the password
//! (Harbor's workload-identity build, Zot).
//!
//! The command line lives here; everything else is the `oidc_credential_provider` library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kcp_oidc_registries::Registries;
use kcp_plugin::settings::CommonArgs;
use oidc_credential_provider::provider::OidcProvider;

/// Kubelet image credential provider that trades the pod's service-account token for a
/// short-lived registry credential.
///
/// Reads one CredentialProviderRequest on stdin and writes one CredentialProviderResponse on
/// stdout. `get-credentials` is optional.
#[derive(Debug, Parser)]
#[command(name = "oidc-credential-provider", version, about, long_about = None, args_override_self = true)]
struct Cli {
    /// The registries file (YAML or JSON): which registry host uses which exchange.
    #[arg(
        long,
        value_name = "FILE",
        env = "OIDC_CREDENTIAL_PROVIDER_CONFIG",
        required = true
    )]
    config: PathBuf,

    #[command(flatten)]
    common: CommonArgs,

    /// `get-credentials` (optional, as other providers' configs pass it); any other word is
    /// refused.
    #[arg(hide = true)]
    rest: Vec<String>,
}

fn main() -> ExitCode {
    let (cli, settings) =
        kcp_plugin::cli::start::<Cli>(std::env::args_os(), &kcp_provider_args::flags::OIDC, |c| {
            &c.common
        });
    // A bad registries file is the operator's config error: exit 2 before stdin is read.
    match Registries::load(&cli.config) {
        Ok(registries) => {
            let provider = OidcProvider {
                registries,
                config: cli.config,
                token_cache: settings.token_cache.clone(),
            };
            kcp_plugin::runner::serve(&settings, &provider)
        }
        Err(e) => kcp_plugin::runner::usage_error(&format!("{e} (--config)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker reads `kcp_provider_args::flags::OIDC`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::OIDC);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }
}
