//! The opt-in metrics file (`--metrics-file PATH`): every exec adds its outcome to a Prometheus
//! text-format file (exposition format 0.0.4) for node-exporter's textfile collector.
//!
//! A plugin process lives for one request, so there is nothing to scrape: each exec instead reads
//! the file, adds what it did and writes it back. The runner records every run (so every provider
//! gets it without code of its own), after the kubelet's answer is written:
//!
//! - `credential_provider_requests_total{provider,outcome}`: `outcome` is `cache_hit` (the token
//!   came from the on-disk token cache, an entry this node fetched), `fleet_copy` (from the cache,
//!   a copy of the fleet's published entry), `fetched` (anything else that answered) or `error`, which
//!   also carries `class` (one of [`ErrorClass::ALL`]);
//! - `credential_provider_fetch_duration_seconds{provider}`: a histogram of the time spent in the
//!   provider's fetch, for runs that reached it (not token-cache hits answered up front);
//! - `credential_provider_token_expiry_timestamp_seconds{provider,registry}`: when the token last
//!   handed out for `registry` expires. `registry` is an auth key of the answer, which the kubelet
//!   matched from its config (a registry host, never an image path). Only tokens with a known
//!   expiry are shown (the static provider's are not);
//! - `credential_provider_last_success_timestamp_seconds{provider}`.
//!
//! Label values are bounded (provider names, fixed outcome and class sets, at most
//! [`MAX_REGISTRIES`] registries) and nothing secret is ever written.
//!
//! Concurrent execs lose no count: the read-merge-write happens under an advisory lock on
//! `PATH.lock`, and the new file is written beside the old one, synced and renamed over it. The
//! file is a convenience, so it never fails or wedges a run: a lock held longer than
//! [`LOCK_WAIT`], a file that is a symlink, a FIFO, not a regular file, owned by someone else,
//! writable by others, larger than [`MAX_FILE_BYTES`] or without our first line is left alone
//! with one warning, and the run answers the kubelet as usual. A file that starts with our first
//! line but no longer parses is ours and damaged: it is replaced, its counts starting again from
//! zero (Prometheus' `rate()` treats that as a counter reset).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::http::{CallError, HttpError};
use crate::safe_file as files;
use crate::time::unix_secs;
use crate::token_cache::Source;
/// Also reachable here, beside the runner's other metrics calls; the note lives with the token
/// cache, which leaves it.
pub use crate::token_cache::{note_token, noted, take_noted};

/// Environment variable naming the metrics file (the flag wins).
pub const FILE_ENV: &str = "CREDENTIAL_PROVIDER_METRICS_FILE";
/// A metrics file larger than this was not written by us and is left alone.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// At most this many registries keep a token-expiry series; past it the earliest expiries go.
pub const MAX_REGISTRIES: usize = 256;
/// The longest a run waits for another exec's write before it skips its own.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The first line of every file we write: a file without it is someone else's.
pub const MARKER: &str =
    "# kubelet credential provider metrics (kcp-plugin); rewritten by each exec, do not edit";
/// Upper bounds (seconds) of the fetch-duration histogram's buckets, `+Inf` aside.
pub const BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// How often a waiting exec tries the lock again.
const LOCK_POLL: Duration = Duration::from_millis(5);

const REQUESTS: &str = "credential_provider_requests_total";
const DURATION: &str = "credential_provider_fetch_duration_seconds";
const EXPIRY: &str = "credential_provider_token_expiry_timestamp_seconds";
const LAST_SUCCESS: &str = "credential_provider_last_success_timestamp_seconds";

/// Why a run failed, as a bounded label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request on stdin was not a valid CredentialProviderRequest.
    Usage,
    /// The overall deadline passed.
    Deadline,
    /// The upstream answered 429 or said it throttled.
    Throttled,
    /// The upstream refused (any other 4xx: credentials, permissions, not found).
    Upstream4xx,
    /// The upstream failed (5xx).
    Upstream5xx,
    /// No answer: connection, DNS, TLS or a broken body.
    Network,
    /// Anything else (configuration found wrong at request time, an unexpected answer).
    Other,
}

impl ErrorClass {
    /// Every class, in the order the file lists them.
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Usage,
        ErrorClass::Deadline,
        ErrorClass::Throttled,
        ErrorClass::Upstream4xx,
        ErrorClass::Upstream5xx,
        ErrorClass::Network,
        ErrorClass::Other,
    ];

    /// The `class` label of an `error` outcome in `credential_provider_requests_total`.
    pub fn label(self) -> &'static str {
        match self {
            ErrorClass::Usage => "usage",
            ErrorClass::Deadline => "deadline",
            ErrorClass::Throttled => "throttled",
            ErrorClass::Upstream4xx => "upstream_4xx",
            ErrorClass::Upstream5xx => "upstream_5xx",
            ErrorClass::Network => "network",
            ErrorClass::Other => "other",
        }
    }

    /// The class of a provider's error: from our HTTP error types anywhere in its chain of
    /// causes, else from what its text says (SDK errors), else [`ErrorClass::Other`].
    pub fn of(error: &(dyn std::error::Error + 'static)) -> ErrorClass {
        let mut cause = Some(error);
        while let Some(e) = cause {
            let http = e
                .downcast_ref::<HttpError>()
                .or_else(|| e.downcast_ref::<CallError>().map(|c| &c.error));
            if let Some(http) = http {
                return ErrorClass::of_http(http);
            }
            cause = e.source();
        }
        ErrorClass::of_text(&crate::logging::error_chain(error))
    }

    fn of_http(error: &HttpError) -> ErrorClass {
        match error {
            HttpError::Status { status, .. } => ErrorClass::of_status(*status),
            HttpError::Transport { .. } | HttpError::Tls { .. } | HttpError::Body { .. } => {
                ErrorClass::Network
            }
            HttpError::DeadlinePassed(_) => ErrorClass::Deadline,
            HttpError::Setup(_) | HttpError::PlainHttp(_) => ErrorClass::Other,
        }
    }

    fn of_status(status: u16) -> ErrorClass {
        match status {
            429 => ErrorClass::Throttled,
            400..=499 => ErrorClass::Upstream4xx,
            500..=599 => ErrorClass::Upstream5xx,
            _ => ErrorClass::Other,
        }
    }

    /// Best effort for errors that are not ours (cloud SDKs): their messages.
    fn of_text(text: &str) -> ErrorClass {
        let lower = text.to_ascii_lowercase();
        if ["throttl", "too many requests", "rate exceeded"]
            .iter()
            .any(|w| lower.contains(w))
        {
            return ErrorClass::Throttled;
        }
        if let Some(status) = http_status_in(&lower) {
            return ErrorClass::of_status(status);
        }
        if lower.contains("deadline") || lower.contains("timed out") {
            return ErrorClass::Deadline;
        }
        if [
            "dns error",
            "connection",
            "connect error",
            "dispatch failure",
            "tls",
        ]
        .iter()
        .any(|w| lower.contains(w))
        {
            return ErrorClass::Network;
        }
        ErrorClass::Other
    }
}

/// The first `http NNN` / `status code NNN` / `status: NNN` in `lower`.
fn http_status_in(lower: &str) -> Option<u16> {
    ["http ", "status code ", "status: ", "status code: "]
        .iter()
        .filter_map(|prefix| {
            lower.match_indices(prefix).find_map(|(at, p)| {
                let digits = lower.get(at + p.len()..at + p.len() + 3)?;
                digits
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| digits.parse().ok())
                    .flatten()
            })
        })
        .next()
}

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered from the on-disk token cache, from an entry this node fetched.
    CacheHit,
    /// Answered from the on-disk token cache, from a copy of the fleet's published entry.
    FleetCopy,
    /// Answered with a token obtained by this run (or, for the static provider, its configured one).
    Fetched,
    /// No answer.
    Error(ErrorClass),
}

impl Outcome {
    /// `cache_hit` / `fleet_copy` when the token cache said the token came from it, else `fetched`.
    pub fn answered(noted: Option<Source>) -> Outcome {
        match noted {
            Some(Source::Cache) => Outcome::CacheHit,
            Some(Source::FleetCopy) => Outcome::FleetCopy,
            _ => Outcome::Fetched,
        }
    }
}

/// What one run adds to the file.
#[derive(Debug, Clone)]
pub struct Run {
    /// How it ended.
    pub outcome: Outcome,
    /// Time spent in the provider's fetch, when it ran.
    pub fetch_time: Option<Duration>,
    /// The auth keys answered (registry hosts).
    pub registries: Vec<String>,
    /// When the token handed out expires, when known.
    pub expires_at: Option<SystemTime>,
    /// When the run ended.
    pub at: SystemTime,
}

/// The metrics file of one provider binary.
#[derive(Debug, Clone)]
pub struct MetricsFile {
    path: PathBuf,
    provider: String,
    owner: files::Owner,
}

impl MetricsFile {
    /// The file at `path`; nothing is touched until a run is recorded.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        MetricsFile {
            path: path.into(),
            provider: String::new(),
            owner: files::current_owner(),
        }
    }

    /// The `provider` label value (e.g. `ecr`).
    pub fn with_provider(mut self, provider: &str) -> Self {
        provider.clone_into(&mut self.provider);
        self
    }

    /// `--metrics-file` (or its env twin), as named in the start-up log line.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds `run` to the file, waiting at most `wait` for another exec's write. Never fails: a
    /// problem is one warning and the file is left as it was.
    pub fn record(&self, run: &Run, wait: Duration) {
        if let Err(reason) = self.try_record(run, wait) {
            tracing::warn!(path = %self.path.display(), "metrics file not updated: {reason}");
        }
    }

    fn try_record(&self, run: &Run, wait: Duration) -> Result<(), String> {
        // The textfile directory may not exist yet on a fresh node (node-exporter's DaemonSet
        // may come later); it holds nothing secret, so it is made with the usual modes.
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("creating its directory {} failed: {e}", dir.display()))?;
        }
        let lock_path = sibling(&self.path, ".lock");
        let lock = files::open_lock(&lock_path, &self.owner, true)
            .map_err(|e| {
                format!(
                    "its lock file {} is unusable ({e}); check that the directory is writable by the kubelet",
                    lock_path.display()
                )
            })?
            .ok_or("its lock file could not be created")?;
        let give_up = Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < give_up => {
                    std::thread::sleep(LOCK_POLL);
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(format!(
                        "another exec held {} for over {}s",
                        lock_path.display(),
                        wait.as_secs_f64()
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(format!("locking failed: {e}")),
            }
        }
        let mut metrics = match files::read_shared_file(&self.path, &self.owner, MAX_FILE_BYTES) {
            Ok(None) => Metrics::default(),
            Ok(Some(bytes)) => match Metrics::parse(&bytes) {
                Ok(metrics) => metrics,
                Err(Unreadable::Foreign) => {
                    return Err(format!(
                        "it does not start with our first line ({MARKER:?}): another program's file is left alone; choose another path"
                    ));
                }
                Err(Unreadable::Damaged(why)) => {
                    tracing::warn!(path = %self.path.display(), "metrics file is damaged ({why}); replacing it, its counts start again from zero");
                    Metrics::default()
                }
            },
            Err(reason) => return Err(format!("{reason}; it is left alone")),
        };
        metrics.add(&self.provider, run);
        files::write_atomic_shared(&self.path, metrics.render().as_bytes(), &self.owner)
            .map_err(|e| format!("writing it failed: {e}"))?;
        drop(lock);
        Ok(())
    }
}

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Why a file's content is not taken.
#[derive(Debug, PartialEq, Eq)]
enum Unreadable {
    /// Not ours: no [`MARKER`].
    Foreign,
    /// Ours, but it does not parse.
    Damaged(String),
}

/// Cumulative bucket counts (one per [`BUCKETS`] entry), sum and count.
#[derive(Debug, Clone, Default, PartialEq)]
struct Histogram {
    buckets: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.buckets.resize(BUCKETS.len(), 0);
        for (count, bound) in self.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// The file's content.
#[derive(Debug, Clone, Default, PartialEq)]
struct Metrics {
    /// (provider, outcome, class) → count; class is empty unless the outcome is `error`.
    requests: BTreeMap<(String, String, String), u64>,
    durations: BTreeMap<String, Histogram>,
    /// (provider, registry) → Unix seconds.
    expiry: BTreeMap<(String, String), i64>,
    /// provider → Unix seconds.
    last_success: BTreeMap<String, i64>,
}

impl Metrics {
    fn add(&mut self, provider: &str, run: &Run) {
        let (outcome, class) = match run.outcome {
            Outcome::CacheHit => ("cache_hit", ""),
            Outcome::FleetCopy => ("fleet_copy", ""),
            Outcome::Fetched => ("fetched", ""),
            Outcome::Error(class) => ("error", class.label()),
        };
        *self
            .requests
            .entry((provider.to_owned(), outcome.to_owned(), class.to_owned()))
            .or_default() += 1;
        if let Some(time) = run.fetch_time {
            self.durations
                .entry(provider.to_owned())
                .or_default()
                .observe(time.as_secs_f64());
        }
        if matches!(run.outcome, Outcome::Error(_)) {
            return;
        }
        self.last_success
            .insert(provider.to_owned(), unix_secs(run.at));
        if let Some(expires_at) = run.expires_at {
            for registry in &run.registries {
                self.expiry.insert(
                    (provider.to_owned(), registry.clone()),
                    unix_secs(expires_at),
                );
            }
        }
        // Bounded: the registries whose tokens expire first (long unused) go first.
        while self.expiry.len() > MAX_REGISTRIES {
            let Some(oldest) = self
                .expiry
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.expiry.remove(&oldest);
        }
    }

    /// The file's text: HELP and TYPE lines, then the series, in a stable order.
    fn render(&self) -> String {
        let mut out = format!("{MARKER}\n");
        family(
            &mut out,
            REQUESTS,
            "counter",
            "Credential requests answered by this plugin, by outcome (cache_hit, fleet_copy, fetched, error) and error class.",
        );
        for ((provider, outcome, class), count) in &self.requests {
            let mut labels = vec![("provider", provider.as_str()), ("outcome", outcome)];
            if !class.is_empty() {
                labels.push(("class", class));
            }
            sample(&mut out, REQUESTS, &labels, &count.to_string());
        }
        family(
            &mut out,
            DURATION,
            "histogram",
            "Time spent fetching a credential (runs that reached the provider's fetch).",
        );
        for (provider, histogram) in &self.durations {
            let bucket = format!("{DURATION}_bucket");
            for (bound, count) in BUCKETS.iter().zip(&histogram.buckets) {
                let le = bound.to_string();
                let labels = [("provider", provider.as_str()), ("le", le.as_str())];
                sample(&mut out, &bucket, &labels, &count.to_string());
            }
            let labels = [("provider", provider.as_str()), ("le", "+Inf")];
            sample(&mut out, &bucket, &labels, &histogram.count.to_string());
            let labels = [("provider", provider.as_str())];
            sample(
                &mut out,
                &format!("{DURATION}_sum"),
                &labels,
                &histogram.sum.to_string(),
            );
            sample(
                &mut out,
                &format!("{DURATION}_count"),
                &labels,
                &histogram.count.to_string(),
            );
        }
        family(
            &mut out,
            EXPIRY,
            "gauge",
            "Unix time at which the token last handed out for a registry expires.",
        );
        for ((provider, registry), at) in &self.expiry {
            let labels = [("provider", provider.as_str()), ("registry", registry)];
            sample(&mut out, EXPIRY, &labels, &at.to_string());
        }
        family(
            &mut out,
            LAST_SUCCESS,
            "gauge",
            "Unix time of the last run that answered the kubelet with credentials.",
        );
        for (provider, at) in &self.last_success {
            sample(
                &mut out,
                LAST_SUCCESS,
                &[("provider", provider)],
                &at.to_string(),
            );
        }
        out
    }

    /// Reads a file this module wrote.
    fn parse(bytes: &[u8]) -> Result<Metrics, Unreadable> {
        let text = std::str::from_utf8(bytes).map_err(|_| Unreadable::Foreign)?;
        let mut lines = text.lines();
        if lines.next() != Some(MARKER) {
            return Err(Unreadable::Foreign);
        }
        let mut metrics = Metrics::default();
        for (n, line) in lines.enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            metrics
                .take(line)
                .map_err(|why| Unreadable::Damaged(format!("line {}: {why}", n + 2)))?;
        }
        Ok(metrics)
    }

    /// Adds one sample line to what was read.
    fn take(&mut self, line: &str) -> Result<(), String> {
        let (name, labels, value) = parse_sample(line)?;
        let label = |key: &str| -> Result<String, String> {
            labels
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("{name} without a {key} label"))
        };
        let count = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("bad count {value:?}"))
        };
        let seconds = || {
            value
                .parse::<i64>()
                .map_err(|_| format!("bad timestamp {value:?}"))
        };
        let provider = label("provider")?;
        match name.as_str() {
            REQUESTS => {
                let class = label("class").unwrap_or_default();
                self.requests
                    .insert((provider, label("outcome")?, class), count()?);
            }
            EXPIRY => {
                self.expiry
                    .insert((provider, label("registry")?), seconds()?);
            }
            LAST_SUCCESS => {
                self.last_success.insert(provider, seconds()?);
            }
            _ => {
                let histogram = self.durations.entry(provider).or_default();
                histogram.buckets.resize(BUCKETS.len(), 0);
                match name.strip_prefix(DURATION) {
                    Some("_bucket") => {
                        let le = label("le")?;
                        if le != "+Inf" {
                            let at = BUCKETS
                                .iter()
                                .position(|b| b.to_string() == le)
                                .ok_or_else(|| format!("unknown bucket le={le:?}"))?;
                            histogram.buckets[at] = count()?;
                        }
                    }
                    Some("_sum") => {
                        histogram.sum = value
                            .parse::<f64>()
                            .ok()
                            .filter(|s| s.is_finite())
                            .ok_or_else(|| format!("bad sum {value:?}"))?;
                    }
                    Some("_count") => histogram.count = count()?,
                    _ => return Err(format!("unknown metric {name:?}")),
                }
            }
        }
        Ok(())
    }
}

/// Appends a family's HELP and TYPE lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Appends one sample line, label values escaped as the format requires.
fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: &str) {
    out.push_str(name);
    out.push('{');
    for (i, (key, value)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let escaped = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = write!(out, "{key}=\"{escaped}\"");
    }
    let _ = writeln!(out, "}} {value}");
}

/// A sample line's name, labels (values unescaped) and value.
type Sample = (String, Vec<(String, String)>, String);

/// `name{k="v",...} value` → its parts, label values unescaped.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let (name, rest) = line.split_once('{').ok_or("a sample without labels")?;
    let mut labels = Vec::new();
    let mut chars = rest.chars();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if chars.next() != Some('"') {
            return Err("a label value without quotes".into());
        }
        let mut value = String::new();
        loop {
            match chars.next().ok_or("an unterminated label value")? {
                '"' => break,
                '\\' => match chars.next().ok_or("an unterminated escape")? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                c => value.push(c),
            }
        }
        labels.push((key, value));
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            _ => return Err("labels not closed by '}'".into()),
        }
    }
    let value = chars.as_str().strip_prefix(' ').ok_or("no value")?.trim();
    if value.is_empty() || value.contains(' ') {
        return Err(format!("bad value {value:?}"));
    }
    Ok((name.to_owned(), labels, value.to_owned()))
}

#[cfg(test)]
mod tests;
