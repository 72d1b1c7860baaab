//! The running controller: builds the API clients, starts the Lease task and (when serving) the
//! Secret's watch, runs the worker (or `--once`), and on SIGTERM stops the worker first and then
//! releases the Lease, so no write can follow the release.

use std::process::ExitCode;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cli::Cli;
use crate::leadership::Leadership;
use crate::lease::Elector;
use crate::secret::SecretStore;
use crate::secret_watch::{SecretWatch, Shared};
use crate::slot::Slot;
use crate::startup::Setup;
use crate::worker::Worker;

/// Runs the controller until SIGTERM (or one round with `--once`).
pub async fn run(cli: Cli, setup: Setup) -> ExitCode {
    let clients = match crate::api::clients(cli.api_timeout).await {
        Ok(clients) => clients,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = crate::fetch::prepare_work_dir(&cli.work_dir) {
        tracing::error!("work directory: {e} (--work-dir)");
        return ExitCode::FAILURE;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(wait_for_signals(stop_tx));

    let leadership = Arc::new(Leadership::new(cli.renew_deadline));
    let elector = Elector::new(
        clients.calls.clone(),
        &cli.namespace,
        &cli.lease_name,
        &setup.identity,
        cli.lease_duration,
        cli.api_timeout,
    );
    let (lease_stop_tx, lease_stop_rx) = watch::channel(false);
    let lease_task = tokio::spawn(crate::lease_task::run(
        elector,
        leadership.clone(),
        cli.retry_period,
        lease_stop_rx,
    ));
    let shared = Arc::new(Shared::default());
    tracing::info!(
        "token controller {} started: {} target(s), Secret {}/{}, Lease {}/{}",
        setup.identity,
        setup.config.targets.len(),
        cli.namespace,
        cli.secret_name,
        cli.namespace,
        cli.lease_name
    );
    let mut worker = worker(&cli, setup, clients.calls, &leadership, &shared);
    let code = if cli.once {
        worker.once(&cli, stop_rx).await
    } else {
        let watch = SecretWatch::new(
            clients.watch,
            &cli.namespace,
            &cli.secret_name,
            cli.api_timeout,
            shared,
        );
        tokio::spawn(watch.run(cli.retry_period, stop_rx.clone()));
        worker.serve(stop_rx).await;
        ExitCode::SUCCESS
    };
    // Writes have stopped: now the Lease may go.
    let _ = lease_stop_tx.send(true);
    if let Ok(elector) = lease_task.await {
        release(elector, &leadership).await;
    }
    code
}

/// The worker over one slot per target, publishing into the Secret through `calls`.
fn worker(
    cli: &Cli,
    setup: Setup,
    calls: kube::Client,
    leadership: &Arc<Leadership>,
    shared: &Arc<Shared>,
) -> Worker {
    let secret = SecretStore::new(calls, &cli.namespace, &cli.secret_name, cli.api_timeout);
    let targets = setup
        .config
        .targets
        .iter()
        .zip(setup.fetchers)
        .zip(setup.keys);
    let slots = targets
        .map(|((target, fetcher), key)| {
            Slot::new(target, key, fetcher, &cli.work_dir, cli.failure_backoff)
        })
        .collect();
    Worker::new(
        slots,
        secret,
        leadership.clone(),
        cli.retry_period,
        shared.clone(),
    )
}

/// Releases the Lease if we hold it (one attempt; it expires by itself otherwise).
async fn release(mut elector: Elector, leadership: &Leadership) {
    leadership.clear();
    match elector.release().await {
        Ok(true) => tracing::info!("released the Lease"),
        Ok(false) => {}
        Err(e) => tracing::warn!(
            "{} (the Lease expires by itself)",
            elector.describe("update", &e)
        ),
    }
}

async fn wait_for_signals(stop: watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM; the controller stops only when killed");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
    let _ = stop.send(true);
}
