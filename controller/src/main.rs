//! `credential-provider-token-controller`: fleet mode's token controller (docs/fleet-controller.md).
//!
//! It owns the fetching side of fleet mode: one active replica (elected through a Lease) runs
//! each configured target's provider binary as the kubelet would, under the shared identity
//! nodes opt in with, refreshes each token at a jittered fraction of its life, and writes the
//! resulting token cache entries, unchanged, into one Secret. It owns nothing on the nodes: the
//! DaemonSet copies the Secret's entries into each host's token cache, where the unchanged
//! providers find them. Linux only (it ships in the Linux image).
//!
//! Modules: `cli` (flags), `config` (the config file), `fetch` (running a provider), `entry`
//! (checking an entry before it is published), `schedule` (refresh points, back-off), `api`
//! (the API client and its errors), `lease` (leader election), `secret` (publishing),
//! `controller` (the loop that ties them together).

#[cfg(target_os = "linux")]
mod api;
#[cfg(target_os = "linux")]
mod cli;
#[cfg(target_os = "linux")]
mod config;
#[cfg(target_os = "linux")]
mod controller;
#[cfg(target_os = "linux")]
mod entry;
#[cfg(target_os = "linux")]
mod fetch;
#[cfg(target_os = "linux")]
mod lease;
#[cfg(target_os = "linux")]
mod schedule;
#[cfg(target_os = "linux")]
mod secret;

use std::process::ExitCode;

#[cfg(target_os = "linux")]
fn main() -> ExitCode {
    use clap::Parser;

    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap prints them on stdout as every command line tool does.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("{}", line.trim());
            return ExitCode::from(2);
        }
    };
    kcp_plugin::logging::init(cli.verbosity);
    if let Err(e) = kcp_plugin::hygiene::apply() {
        tracing::warn!("process hygiene incomplete: {e}");
    }
    let setup = cli.check().and_then(|()| {
        let config = config::Config::load(&cli.config)?;
        Ok((config, cli.identity()?))
    });
    let (config, identity) = match setup {
        Ok(setup) => setup,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("starting the async runtime failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(controller::run(cli, config, identity));
    // A provider run interrupted by SIGTERM may still be going on a blocking thread: do not wait
    // for it (dropping the runtime would), it ends with its own timeout.
    runtime.shutdown_background();
    code
}

#[cfg(not(target_os = "linux"))]
fn main() -> ExitCode {
    eprintln!("credential-provider-token-controller runs on Linux only");
    ExitCode::from(2)
}
