//! `credential-provider-token-controller`: fleet mode's token controller (docs/fleet-controller.md).
//!
//! It owns the fetching side of fleet mode: one active replica (elected through a Lease) runs
//! each configured target's provider binary as the kubelet would, under the shared identity
//! nodes opt in with, refreshes each token at a jittered fraction of its life, and writes the
//! resulting token cache entries, unchanged, into one Secret. It owns nothing on the nodes: the
//! DaemonSet copies the Secret's entries into each host's token cache, where the unchanged
//! providers find them. Linux only (it ships in the Linux image).
//!
//! Modules, by what they own:
//! - start-up: `cli` (flags), `config` (the config file and what a target may not set), `keys`
//!   (each target's entry file, from its provider in key-only mode), `startup` (all of these
//!   checked before any API call: a problem is exit code 2);
//! - running providers: `fetch` (a fetch as the kubelet would run it), `entry` (an entry's
//!   checks before it is published or taken over);
//! - scheduling: `slot` (one target's entry, refresh point, back-off, taking over the Secret's
//!   newer entry), `schedule` (refresh points and back-off), `saved` (persistence in the work
//!   directory);
//! - the API server: `api` (clients, user agent, field manager, errors), `lease` (one Lease
//!   attempt as client-go makes it), `leadership` (whether we lead, and since which term),
//!   `lease_task` (the Lease loop), `secret` (reading and publishing the Secret), `secret_watch`
//!   (noticing someone else's change);
//! - the loop: `worker` (serving), `once` (`--once`), `run` (tasks, SIGTERM, release), and
//!   `lines` (failures logged once until they change).

#[cfg(target_os = "linux")]
mod api;
#[cfg(target_os = "linux")]
mod cli;
#[cfg(target_os = "linux")]
mod config;
#[cfg(target_os = "linux")]
mod entry;
#[cfg(target_os = "linux")]
mod fetch;
#[cfg(target_os = "linux")]
mod keys;
#[cfg(target_os = "linux")]
mod leadership;
#[cfg(target_os = "linux")]
mod lease;
#[cfg(target_os = "linux")]
mod lease_task;
#[cfg(target_os = "linux")]
mod lines;
#[cfg(target_os = "linux")]
mod once;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
mod saved;
#[cfg(target_os = "linux")]
mod schedule;
#[cfg(target_os = "linux")]
mod secret;
#[cfg(target_os = "linux")]
mod secret_watch;
#[cfg(target_os = "linux")]
mod slot;
#[cfg(target_os = "linux")]
mod startup;
#[cfg(target_os = "linux")]
mod worker;

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
    let setup = match startup::prepare(&cli) {
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
    let code = runtime.block_on(run::run(cli, setup));
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
