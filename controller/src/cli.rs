//! The command line: flags (some also from the pod's environment), checked once at start.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use kcp_kubelet::duration::GoDuration;
use kcp_plugin::logging::Verbosity;

/// The fleet token controller: fetches each configured registry token once and publishes the
/// token cache entries in one Secret that every node copies (docs/fleet-controller.md).
#[derive(Debug, Parser)]
#[command(name = "credential-provider-token-controller", version, about)]
pub struct Cli {
    /// The config file (YAML): sharedIdentity and targets.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Namespace of the Secret and the Lease.
    #[arg(
        long,
        env = "POD_NAMESPACE",
        default_value = "kube-credential-providers"
    )]
    pub namespace: String,
    /// The Secret the entries are written to (created by the manifests).
    #[arg(long, default_value = "kubelet-credential-provider-tokens")]
    pub secret_name: String,
    /// The Lease that elects the active replica (created by the manifests).
    #[arg(long, default_value = "kubelet-credential-provider-token-controller")]
    pub lease_name: String,
    /// This replica's name as Lease holder (default: the pod's name, else the host name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Where providers write their token cache entries (an emptyDir).
    #[arg(long, default_value = "/var/run/token-controller")]
    pub work_dir: PathBuf,
    /// How long a Lease holder that stopped renewing keeps it (client-go's default).
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    pub lease_duration: Duration,
    /// The holder stops writing when it could not renew for this long.
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    pub renew_deadline: Duration,
    /// How often the Lease is renewed, or tried by a replica that does not hold it.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    pub retry_period: Duration,
    /// The first wait after a failed provider run (doubling up to 5m).
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    pub failure_backoff: Duration,
    /// A provider run is stopped after this long (the kubelet's own limit).
    #[arg(long, default_value = "1m0s", value_parser = go_duration)]
    pub provider_timeout: Duration,
    /// Every API server call is given up after this long; shorter than the lease duration minus
    /// the renew deadline, so a write sent just before leadership ran out lands before anyone
    /// else may take the Lease.
    #[arg(long, default_value = "4s", value_parser = go_duration)]
    pub api_timeout: Duration,
    /// Take the Lease, fetch every target once, write the Secret, release the Lease and exit
    /// (0: all fetched and written; 1: otherwise, or another replica holds the Lease).
    #[arg(long)]
    pub once: bool,
    /// Log verbosity: 0 warnings, 1-3 info, 4-5 debug, 6+ trace (also error, warn, info, debug, trace).
    #[arg(short = 'v', long = "v", default_value = "2", value_name = "LEVEL")]
    pub verbosity: Verbosity,
}

fn go_duration(text: &str) -> Result<Duration, String> {
    let d = GoDuration::parse(text).map_err(|e| e.to_string())?;
    match d.to_std() {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{text} is not a positive duration")),
    }
}

impl Cli {
    /// Checks across flags, as client-go's `NewLeaderElector` does for its durations.
    pub fn check(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err("--lease-duration must be longer than --renew-deadline".into());
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err("--renew-deadline must be longer than 1.2 x --retry-period".into());
        }
        let gap = self.lease_duration.saturating_sub(self.renew_deadline);
        if self.api_timeout >= gap {
            return Err(format!(
                "--api-timeout ({}) must be shorter than --lease-duration minus --renew-deadline ({}): a Secret write sent just before this replica stops leading could otherwise land after another replica took over",
                GoDuration::from_std(self.api_timeout),
                GoDuration::from_std(gap)
            ));
        }
        if self.identity.as_deref().is_some_and(str::is_empty) {
            return Err("--identity is empty".into());
        }
        Ok(())
    }

    /// The Lease holder name: `--identity`, else the host name.
    pub fn identity(&self) -> Result<String, String> {
        if let Some(identity) = &self.identity {
            return Ok(identity.clone());
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| "no --identity and no host name: set --identity or POD_NAME".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_go_durations_and_must_fit_together() {
        let cli =
            Cli::try_parse_from(["c", "--config", "f", "--lease-duration=1m30s", "--v=4"]).unwrap();
        assert_eq!(cli.lease_duration, Duration::from_secs(90));
        assert_eq!(cli.renew_deadline, Duration::from_secs(10));
        assert!(cli.check().is_ok());
        let bad = Cli::try_parse_from(["c", "--config", "f", "--renew-deadline", "20s"]).unwrap();
        assert!(bad.check().unwrap_err().contains("--lease-duration"));
        assert!(Cli::try_parse_from(["c", "--config", "f", "--retry-period", "2"]).is_err());
        let slow = Cli::try_parse_from(["c", "--config", "f", "--api-timeout=5s"]).unwrap();
        assert_eq!(
            slow.check().unwrap_err(),
            "--api-timeout (5s) must be shorter than --lease-duration minus --renew-deadline (5s): a Secret write sent just before this replica stops leading could otherwise land after another replica took over"
        );
        let fits = [
            "c",
            "--config",
            "f",
            "--lease-duration=20s",
            "--api-timeout=9s",
        ];
        assert!(Cli::try_parse_from(fits).unwrap().check().is_ok());
        assert!(Cli::try_parse_from(["c", "--config", "f", "--retry-period", "0s"]).is_err());
    }
}
