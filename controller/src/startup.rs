//! Everything checked before the API client is built, so that a config error is one line and
//! exit code 2 with no API call: the flags against each other, the config file, this replica's
//! identity, and each target's entry file name (its provider run in key-only mode).

use crate::cli::Cli;
use crate::config::Config;
use crate::fetch::Fetcher;
use crate::keys::{self, TargetKey};

/// What the controller runs with once every check passed.
pub struct Setup {
    /// The targets to fetch and the Secret and Lease to use, as read and checked at start.
    pub config: Config,
    /// This replica's name as Lease holder.
    pub identity: String,
    /// Each target's provider run, in the config's order.
    pub fetchers: Vec<Fetcher>,
    /// Each target's entry, in the config's order.
    pub keys: Vec<TargetKey>,
}

/// Checks the flags, reads the config, and learns each target's entry; the error is one line.
pub fn prepare(cli: &Cli) -> Result<Setup, String> {
    cli.check()?;
    let config = Config::load(&cli.config)?;
    let identity = cli.identity()?;
    let fetchers: Vec<Fetcher> = config
        .targets
        .iter()
        .map(|t| {
            Fetcher::new(
                t,
                &config.shared_identity,
                &cli.work_dir,
                cli.provider_timeout,
            )
        })
        .collect();
    let keys = keys::learn(&config.targets, &fetchers)?;
    Ok(Setup {
        config,
        identity,
        fetchers,
        keys,
    })
}
