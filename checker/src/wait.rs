//! `wait`: the DaemonSet's main container once `install` (its init container) is done, and in
//! fleet mode the node's side of the token controller: it copies the registry tokens the
//! controller published in its Secret (mounted at `--fleet-tokens`) into the host's token cache.
//!
//! The image has no shell and no `sleep`; as PID 1 a process ignores SIGTERM unless it handles
//! it, so SIGTERM and SIGINT end `wait` at once (exit 0) instead of waiting out the pod's grace
//! period. A copy in progress is not cut short: entries are written to a temporary file and
//! renamed, and the signal is looked at between rounds.
//!
//! The sync runs every `--sync-interval` and as soon as the kubelet swaps the Secret volume's
//! content (its `..data` link changes, checked every second). What it copies, replaces, withdraws
//! and refuses is `kcp_plugin::token_cache::sync_from_dir`'s rule; nothing here fails the
//! container: an unusable cache directory or a bad entry is one warning line, and the next round
//! tries again. A refused entry is logged once per file and reason, not every round: a Secret
//! that stays wrong for a day is one line, and the same line again only after it changed.

use std::path::PathBuf;
use std::time::Duration;

use kcp_kubelet::duration::GoDuration;

/// `wait`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Fleet mode: the token controller's Secret, mounted here (its entries are copied into
    /// --token-cache-dir). Without it, `wait` only waits for SIGTERM.
    #[arg(long, value_name = "DIR", requires_all = ["token_cache_dir", "token_cache_shared_identity"])]
    pub fleet_tokens: Option<PathBuf>,
    /// The host's token cache directory as mounted in this container, e.g.
    /// /host/var/lib/kubelet-credential-provider/token-cache.
    #[arg(long, value_name = "DIR", requires = "fleet_tokens")]
    pub token_cache_dir: Option<PathBuf>,
    /// The shared identity this node's providers name (their --token-cache-shared-identity):
    /// only entries published for it are copied.
    #[arg(long, value_name = "NAME", requires = "fleet_tokens")]
    pub token_cache_shared_identity: Option<String>,
    /// Each copied entry is refreshed a random 0..PERCENT % of its life early, so nodes do not
    /// all fetch on their own in the same minutes when the controller is down (as the providers'
    /// --cache-jitter).
    #[arg(long, value_name = "PERCENT", default_value_t = kcp_plugin::cache_hint::DEFAULT_JITTER_PERCENT, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub cache_jitter: u8,
    /// How often to copy even when the Secret has not changed (a Go duration).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub sync_interval: GoDuration,
}

/// What `wait` was asked to keep in sync: the Secret volume and the host's token cache.
#[cfg_attr(not(unix), allow(dead_code))]
struct FleetSync {
    from: PathBuf,
    cache: kcp_plugin::token_cache::TokenCache,
    interval: Duration,
}

/// Checks the flags, then waits (and syncs) until SIGTERM; exit 0 then.
pub fn run(args: &WaitArgs) -> Result<u8, String> {
    let interval = args
        .sync_interval
        .to_std()
        .filter(|d| *d >= Duration::from_secs(1))
        .ok_or_else(|| {
            format!(
                "wait: --sync-interval must be at least 1s, got {}",
                args.sync_interval
            )
        })?;
    match (
        &args.fleet_tokens,
        &args.token_cache_dir,
        &args.token_cache_shared_identity,
    ) {
        (Some(from), Some(dir), Some(name)) => {
            let shared = kcp_plugin::token_cache::SharedIdentity::parse(name)
                .map_err(|e| format!("wait: --token-cache-shared-identity: {e}"))?;
            let cache = kcp_plugin::token_cache::TokenCache::new(dir)
                .with_refresh_jitter(args.cache_jitter)
                .with_shared_identity(Some(shared));
            platform::wait(Some(FleetSync {
                from: from.clone(),
                cache,
                interval,
            }))
        }
        (None, None, None) => platform::wait(None),
        _ => Err(
            "wait: --fleet-tokens, --token-cache-dir and --token-cache-shared-identity go together"
                .to_owned(),
        ),
    }
}

#[cfg(unix)]
mod platform {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant, SystemTime};

    use std::collections::BTreeMap;

    use super::FleetSync;

    /// Set by the signal handler; the loop looks at it between rounds.
    static STOP: AtomicBool = AtomicBool::new(false);

    /// How often the Secret volume's `..data` link is looked at.
    const WATCH: Duration = Duration::from_secs(1);

    pub(super) fn wait(sync: Option<FleetSync>) -> Result<u8, String> {
        extern "C" fn stop(_: libc::c_int) {
            STOP.store(true, Ordering::SeqCst);
        }
        let handler = stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for signal in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: installs a handler that only stores to an atomic (async-signal-safe).
            if unsafe { libc::signal(signal, handler) } == libc::SIG_ERR {
                return Err("wait: cannot handle SIGTERM".to_owned());
            }
        }
        if let Some(sync) = &sync {
            eprintln!(
                "credential-provider-check: wait: copying the fleet tokens for {:?} from {} into {} every {}s and when they change",
                sync.cache
                    .shared_identity()
                    .map(|s| s.name())
                    .unwrap_or_default(),
                sync.from.display(),
                sync.cache.dir().display(),
                sync.interval.as_secs()
            );
        }
        // Say so once the handlers are in place: a caller that waits for this line never races them.
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "waiting for SIGTERM");
        let _ = stdout.flush();
        drop(stdout);
        let Some(sync) = sync else {
            while !STOP.load(Ordering::SeqCst) {
                // SAFETY: pause has no preconditions; it returns after any handled signal.
                unsafe { libc::pause() };
            }
            return Ok(0);
        };
        let mut seen: Option<Option<std::path::PathBuf>> = None;
        let mut next = Instant::now();
        let mut logged = Logged::default();
        while !STOP.load(Ordering::SeqCst) {
            let data = std::fs::read_link(sync.from.join("..data")).ok();
            if seen.as_ref() != Some(&data) || Instant::now() >= next {
                round(&sync, &mut logged);
                seen = Some(data);
                next = Instant::now() + sync.interval;
            }
            // A signal does not cut the sleep short: SIGTERM is seen within a second.
            std::thread::sleep(WATCH);
        }
        Ok(0)
    }

    /// What was last said, so a state that lasts is said once.
    #[derive(Default)]
    struct Logged {
        /// The last round's error, if it failed.
        error: Option<String>,
        /// The refusals said, by file name: each is said again only when its reason changes,
        /// or after the file was fine (or gone) for a round.
        refused: BTreeMap<String, String>,
        /// The entries last found over the copies' cap.
        over_cap: Vec<String>,
    }

    /// One round; says what it wrote, withdrew or newly refused, and an error only when it
    /// differs from the last.
    fn round(sync: &FleetSync, logged: &mut Logged) {
        const PREFIX: &str = "credential-provider-check: wait:";
        let report = match kcp_plugin::token_cache::sync_from_dir(
            &sync.cache,
            &sync.from,
            SystemTime::now(),
        ) {
            Ok(report) => report,
            Err(e) => {
                if logged.error.as_deref() != Some(e.as_str()) {
                    eprintln!(
                        "{PREFIX} warning: fleet tokens not copied: {e}; the providers fetch on their own meanwhile"
                    );
                }
                logged.error = Some(e);
                return;
            }
        };
        if logged.error.take().is_some() {
            eprintln!("{PREFIX} fleet tokens: copying works again");
        }
        let dir = sync.cache.dir().display();
        if report.written > 0 {
            let s = if report.written == 1 { "y" } else { "ies" };
            eprintln!(
                "{PREFIX} fleet tokens: {} entr{s} written into {dir}",
                report.written
            );
        }
        for name in &report.withdrawn {
            eprintln!(
                "{PREFIX} fleet token {name} removed from {dir}: the Secret no longer publishes it"
            );
        }
        let refused: BTreeMap<String, String> = report.refused.into_iter().collect();
        for (name, reason) in &refused {
            if logged.refused.get(name) != Some(reason) {
                eprintln!("{PREFIX} warning: fleet token {name} not copied: {reason}");
            }
        }
        logged.refused = refused;
        if report.over_cap != logged.over_cap && !report.over_cap.is_empty() {
            eprintln!(
                "{PREFIX} warning: {} fleet tokens not copied: the Secret publishes more than the {} entries ({} KiB) a node keeps; the first by name are copied",
                report.over_cap.len(),
                kcp_plugin::token_cache::MAX_ADOPTED_ENTRIES,
                kcp_plugin::token_cache::MAX_ADOPTED_BYTES / 1024
            );
        }
        logged.over_cap = report.over_cap;
    }
}

#[cfg(not(unix))]
mod platform {
    use std::io::Write as _;

    /// The Windows DaemonSet's main container (deploy/overlays/aks-windows): it only waits, so
    /// the pod shows Running and a new node or image installs again. A HostProcess container is
    /// stopped by ending its job object: there is no signal to wait for. Fleet mode's copies are
    /// Linux only (the token controller's DaemonSets).
    pub(super) fn wait(sync: Option<super::FleetSync>) -> Result<u8, String> {
        if sync.is_some() {
            return Err(
                "wait: --fleet-tokens: fleet mode runs in the Linux DaemonSets only".to_owned(),
            );
        }
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "waiting until the container is stopped");
        let _ = stdout.flush();
        drop(stdout);
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
