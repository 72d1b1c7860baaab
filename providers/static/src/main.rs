//! `static-credential-provider`: answers the kubelet with a fixed username and password read from
//! files, for registries with long-lived robot accounts (Harbor, Nexus, Artifactory, a lab
//! registry). It is also the smallest example of a provider built on `kcp-plugin`.
//!
//! The password is read from a file at every exec (so rotating it needs no kubelet restart) and is
//! only ever sent for registries named by `--registry` globs: a request for any other registry is
//! refused, so a broad `matchImages` cannot leak the password elsewhere.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::{
    AuthConfig, CacheKeyType, CredentialProviderRequest, Credentials, Secret, matching,
};
use kcp_plugin::settings::{CommonArgs, parse_go_duration};

/// Kubelet image credential provider that answers with a fixed username and password.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Registry the credential belongs to, as a matchImages glob (repeatable, comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        env = "STATIC_CREDENTIAL_REGISTRIES"
    )]
    registry: Vec<String>,

    /// The registry user name.
    #[arg(long, env = "STATIC_CREDENTIAL_USERNAME")]
    username: String,

    /// File holding the password (a trailing newline is ignored).
    #[arg(long, env = "STATIC_CREDENTIAL_PASSWORD_FILE")]
    password_file: PathBuf,

    /// cacheDuration to answer with, a Go duration.
    #[arg(long, default_value = "1h", value_parser = parse_go_duration)]
    cache_duration: GoDuration,

    #[command(flatten)]
    common: CommonArgs,

    /// `get-credentials`, as configs of other providers pass it (ignored); any other word is
    /// refused.
    #[arg(hide = true)]
    rest: Vec<String>,
}

/// The robot account: the registries it is for, its user name and where its password is.
struct StaticProvider {
    registries: Vec<String>,
    username: String,
    password_file: PathBuf,
    cache_duration: GoDuration,
}

/// The robot account's answer is known before any network: `plan` does all the work (the
/// registry check and the password read) and the "cache" always answers with it.
impl kcp_plugin::Provider for StaticProvider {
    type Plan<'a> = Credentials;
    type Error = anyhow::Error;
    /// A robot account's password does not expire: `cacheDuration` is the configured one.
    const ISSUER: Option<kcp_plugin::token_cache::Issuer> = None;

    /// Nothing is cached: the answer is read from the password file on every exec.
    fn cache_key<'p>(&self, _: &'p Credentials) -> Option<&'p kcp_plugin::token_cache::CacheKey> {
        None
    }

    fn plan<'a>(&'a self, request: &'a CredentialProviderRequest) -> anyhow::Result<Credentials> {
        let registry = request.image_ref.registry();
        if !self
            .registries
            .iter()
            .any(|glob| matching::match_image(glob, registry))
        {
            bail!(
                "registry {registry} is not one of --registry {}; refusing to send the password to it",
                self.registries.join(",")
            );
        }
        let password = read_password(&self.password_file)?;
        Ok(Credentials::single(
            CacheKeyType::Registry,
            self.cache_duration,
            registry,
            AuthConfig::new(self.username.clone(), password),
        ))
    }

    fn answer_from_cache<'a>(
        &'a self,
        _: &'a CredentialProviderRequest,
        plan: &Credentials,
    ) -> Option<Credentials> {
        Some(plan.clone())
    }

    /// Not reached (the cache look always answers), but the same answer all the same.
    async fn fetch<'a>(
        &'a self,
        _: &'a CredentialProviderRequest,
        plan: Credentials,
        _: kcp_plugin::deadline::Deadline,
    ) -> anyhow::Result<Credentials> {
        Ok(plan)
    }
}

fn read_password(path: &Path) -> anyhow::Result<Secret> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the password file {} (--password-file)",
            path.display()
        )
    })?;
    let password = text.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        bail!("the password file {} is empty", path.display());
    }
    Ok(Secret::new(password))
}

fn main() -> ExitCode {
    let (cli, settings) = kcp_plugin::cli::start::<Cli>(
        std::env::args_os(),
        &kcp_provider_args::flags::STATIC,
        |c| &c.common,
    );
    let provider = StaticProvider {
        registries: cli.registry,
        username: cli.username,
        password_file: cli.password_file,
        cache_duration: cli.cache_duration,
    };
    // Nothing to wait for: answered without an async runtime.
    kcp_plugin::runner::serve(&settings, &provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker reads `kcp_provider_args::flags::STATIC`: a flag added to `Cli` goes there too.
    #[test]
    fn flag_table_matches_the_parser() {
        let (only_parser, only_table) =
            kcp_plugin::cli::table_drift::<Cli>(&kcp_provider_args::flags::STATIC);
        assert_eq!((only_parser, only_table), (vec![], vec![]));
    }
}
