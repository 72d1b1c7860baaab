//! The one way a provider binary runs: stdin → request → provider → exactly one response on stdout.
//!
//! A provider's `main` parses its own flags and calls [`serve`] with its [`Provider`]: the runner
//! plans the request (before any async runtime), tries the token cache, and only on a miss starts
//! a single-threaded runtime for the fetch; a cache hit is answered before any async runtime,
//! HTTP client or SDK exists. The runner owns everything the kubelet contract demands of every
//! plugin: read stdin to EOF with a size cap, validate the request, run the provider under one
//! overall [`Deadline`], answer in the request's apiVersion, and on any failure print one clear
//! line on stderr, nothing on stdout, and exit non-zero.

use std::future::Future;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use crate::cache_hint;
use crate::deadline::Deadline;
use crate::logging::{self, error_chain};
use crate::metrics::{self, ErrorClass, MetricsFile, Outcome};
use crate::provider::Provider;
/// Also reachable here, where [`serve`] turns it into the run's one stderr line.
pub use crate::provider::ProviderError;
use crate::settings::Settings;
use crate::time::unix_secs;
use crate::token_cache::{Issuer, SharedIdentity};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::protocol::{
    CredentialProviderRequest, CredentialProviderResponse, MAX_REQUEST_BYTES,
};

/// Exit status when credentials could not be obtained (what upstream plugins exit with).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status for a bad request, bad flags or a bad configuration file.
pub const EXIT_USAGE: u8 = 2;

/// Answers the request on stdin with `provider`, writing the response to stdout. Returns the
/// process exit code. `settings` come from [`crate::cli::start`], which also started logging.
pub fn serve<P: Provider>(settings: &Settings, provider: &P) -> ExitCode {
    let deadline = Deadline::after(settings.deadline);
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        tracing::warn!("reading a CredentialProviderRequest from stdin; end it with Ctrl-D");
    }
    let bytes = match read_capped(stdin.lock(), MAX_REQUEST_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => return fail(EXIT_USAGE, &e),
    };
    let options = Options {
        deadline,
        jitter: settings.cache_jitter,
        print_key: settings.print_cache_key.then(|| {
            settings
                .token_cache
                .as_ref()
                .and_then(|c| c.shared_identity())
        }),
    };
    answer(
        &bytes,
        &options,
        settings.metrics.as_ref(),
        provider,
        &mut std::io::stdout().lock(),
    )
}

/// How one run answers.
struct Options<'a> {
    /// The overall deadline.
    deadline: Deadline,
    /// The percentage `cacheDuration` may be lowered by (see [`cache_hint::with_jitter`]).
    jitter: u8,
    /// `CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`: print the request's token cache key (as a node of
    /// this shared identity computes it, if any) instead of answering.
    print_key: Option<Option<&'a SharedIdentity>>,
}

/// The exit for a provider's own configuration error found before the request is read: one
/// line on stderr, [`EXIT_USAGE`].
pub fn usage_error(message: &str) -> ExitCode {
    fail(EXIT_USAGE, message)
}

/// Everything after stdin is read, with the output stream injected (for tests); each run's
/// outcome is added to `metrics` when there is one.
fn answer<P: Provider>(
    input: &[u8],
    options: &Options<'_>,
    metrics: Option<&MetricsFile>,
    provider: &P,
    stdout: &mut dyn Write,
) -> ExitCode {
    // Cleared so a note can only come from this run's token cache.
    metrics::take_noted();
    let mut fetch_time = None;
    let result = respond(
        input,
        options,
        metrics.is_some(),
        provider,
        &mut fetch_time,
        stdout,
    );
    let Some(file) = metrics else {
        return match result {
            Ok(_) => ExitCode::SUCCESS,
            Err((code, message)) => fail(code, &message.text),
        };
    };
    let noted = metrics::take_noted();
    let (outcome, registries, code) = match result {
        Ok(registries) => (
            Outcome::answered(noted.map(|(source, _)| source)),
            registries,
            ExitCode::SUCCESS,
        ),
        Err((code, message)) => {
            let class = match code {
                EXIT_USAGE => ErrorClass::Usage,
                _ => message.class,
            };
            (Outcome::Error(class), Vec::new(), fail(code, &message.text))
        }
    };
    let run = metrics::Run {
        outcome,
        fetch_time,
        registries,
        expires_at: noted.and_then(|(_, expires_at)| expires_at),
        at: SystemTime::now(),
    };
    // The answer is out; the kubelet still waits for the exit, so the wait is bounded.
    file.record(&run, metrics::LOCK_WAIT.min(options.deadline.remaining()));
    code
}

/// Why a run failed: the one stderr line and its metrics class.
struct Failure {
    text: String,
    class: ErrorClass,
}

impl Failure {
    fn new(text: impl Into<String>, class: ErrorClass) -> Self {
        Failure {
            text: text.into(),
            class,
        }
    }
}

/// How a run ended: the auth keys answered (only when asked for, so a run without metrics copies
/// nothing), or the exit code and failure.
type Responded = Result<Vec<String>, (u8, Failure)>;

/// The run up to the answer on stdout.
fn respond<P: Provider>(
    input: &[u8],
    options: &Options<'_>,
    keys: bool,
    provider: &P,
    fetch_time: &mut Option<Duration>,
    stdout: &mut dyn Write,
) -> Responded {
    let request = CredentialProviderRequest::from_bytes(input)
        .map_err(|e| (EXIT_USAGE, Failure::new(e.to_string(), ErrorClass::Usage)))?;
    tracing::info!(image = %request.image, api_version = %request.api_version, service_account_token = request.service_account_token.is_some(), "request received");

    let started = Instant::now();
    let plan = match provider.plan(&request) {
        Ok(plan) => plan,
        Err(e) => {
            // Timed as the fetch it stands for: every answer that is not a cache hit counts.
            *fetch_time = Some(started.elapsed());
            return Err(provider_failure(e));
        }
    };
    if let Some(shared) = options.print_key {
        return print_cache_key(provider, &plan, shared, stdout);
    }
    let deadline = options.deadline;
    let mut credentials = match provider.answer_from_cache(&request, &plan) {
        Some(credentials) => credentials,
        None => {
            let started = Instant::now();
            // Boxed at once: a provider's future holds its SDK calls' state (tens of KiB), and
            // every move of it on the stack would touch fresh stack pages.
            let result = block_on_with_deadline(
                Box::pin(provider.fetch(&request, plan, deadline)),
                deadline,
            );
            *fetch_time = Some(started.elapsed());
            match result {
                Ok(Ok(credentials)) => credentials,
                Ok(Err(e)) => return Err(provider_failure(e)),
                Err(e) => return Err((EXIT_FAILURE, Failure::new(e, ErrorClass::Deadline))),
            }
        }
    };
    if let Some(computed) = credentials.cache_duration {
        let expiry = metrics::noted().and_then(|(_, expires_at)| expires_at);
        let computed = ceiling(computed, P::ISSUER, expiry, SystemTime::now());
        let jittered = cache_hint::with_jitter(computed, options.jitter);
        if jittered != computed {
            tracing::debug!(%computed, %jittered, "cacheDuration lowered by fleet jitter (--cache-jitter)");
        }
        credentials.cache_duration = Some(jittered);
    }
    let registries = if keys {
        credentials.auth.keys().cloned().collect()
    } else {
        Vec::new()
    };
    let response = CredentialProviderResponse::answer(&request, credentials);
    // One write of the whole document, so a reader never sees half a response.
    stdout
        .write_all(&response.to_json_line())
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            (
                EXIT_FAILURE,
                Failure::new(
                    format!("writing the response to stdout failed: {e}"),
                    ErrorClass::Other,
                ),
            )
        })?;
    tracing::info!("response written");
    Ok(registries)
}

/// The one ceiling on every answer's `cacheDuration`, fetched or from the cache, whatever the
/// provider computed: never longer than its issuer's tokens ever live ([`Issuer::longest_life`]),
/// and never past the expiry of the token this run handed out (when the token cache noted one).
/// A provider's own policy is always inside it; this is the guard for when it is not (a bug, an
/// entry that lies), so a capped answer is a warning.
fn ceiling(
    computed: GoDuration,
    issuer: Option<Issuer>,
    expires_at: Option<SystemTime>,
    now: SystemTime,
) -> GoDuration {
    let mut longest = issuer.map(|i| GoDuration::from_std(i.longest_life()));
    if let Some(at) = expires_at {
        let left = GoDuration::from_secs(unix_secs(at).saturating_sub(unix_secs(now)).max(0));
        longest = Some(longest.map_or(left, |l| l.min(left)));
    }
    match longest {
        Some(longest) if computed > longest => {
            tracing::warn!(%computed, capped = %longest, "cacheDuration capped: longer than the token can live");
            longest
        }
        _ => computed,
    }
}

/// `CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`: writes the token cache key `plan` has (as a node of
/// `shared` computes it) as one JSON line, `{"kind":"TokenCacheKey","file":…,"key":…}`, instead
/// of answering. No cache is read and nothing leaves the node: the token controller and
/// `credential-provider-check doctor` use it to see which published entry a provider would read.
fn print_cache_key<P: Provider>(
    provider: &P,
    plan: &P::Plan<'_>,
    shared: Option<&SharedIdentity>,
    stdout: &mut dyn Write,
) -> Responded {
    let Some(key) = provider.cache_key(plan) else {
        return Err((
            EXIT_FAILURE,
            Failure::new(
                "this request has no token cache key: its token is never cached (a service-account token without namespace, name and uid claims, or a provider that caches nothing)",
                ErrorClass::Other,
            ),
        ));
    };
    let shared_key = shared.and_then(|s| key.shared_as(s));
    let key = shared_key.as_ref().unwrap_or(key);
    let line = serde_json::json!({
        "kind": "TokenCacheKey",
        "file": key.file_name(),
        "key": key.canonical(),
    });
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    stdout
        .write_all(&bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            (
                EXIT_FAILURE,
                Failure::new(format!("writing to stdout failed: {e}"), ErrorClass::Other),
            )
        })?;
    Ok(Vec::new())
}

/// A provider's error (from its plan or its fetch) as the run's failure, with its metrics class.
fn provider_failure(e: impl Into<ProviderError>) -> (u8, Failure) {
    let e: ProviderError = e.into();
    let class = ErrorClass::of(e.as_ref());
    (EXIT_FAILURE, Failure::new(error_chain(e.as_ref()), class))
}

/// Drives `future` on a single-threaded runtime, cancelling it when `deadline` passes.
fn block_on_with_deadline<F: Future>(future: F, deadline: Deadline) -> Result<F::Output, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime failed: {e}"))?;
    runtime.block_on(async {
        tokio::time::timeout_at(deadline.instant().into(), future)
            .await
            .map_err(|_| deadline_message(deadline.budget()))
    })
}

fn deadline_message(budget: Duration) -> String {
    format!(
        "no credentials within the overall deadline of {}s (--deadline / CREDENTIAL_PROVIDER_DEADLINE): \
         a token endpoint did not answer in time; check network access and proxy settings (HTTPS_PROXY, NO_PROXY) from this node",
        budget.as_secs_f64()
    )
}

/// Reads `reader` to EOF, refusing more than `limit` bytes without reading the rest.
pub fn read_capped(reader: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(1024);
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading the request from stdin failed: {e}"))?;
    if bytes.len() > limit {
        return Err(format!(
            "request on stdin is larger than {limit} bytes; a CredentialProviderRequest is a few hundred bytes"
        ));
    }
    Ok(bytes)
}

/// Logs the one failure line and returns the exit code. Every secret the process holds is
/// replaced first (`kcp_kubelet::secret::redact_known`): the line carries upstream messages,
/// which may quote the key or token they refused.
fn fail(code: u8, message: &str) -> ExitCode {
    let message = kcp_kubelet::secret::redact_known(message);
    tracing::error!("{}", logging::one_line(&message));
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_cache::CacheKey;
    use kcp_kubelet::duration::GoDuration;
    use kcp_kubelet::protocol::{AuthConfig, CacheKeyType, Credentials};
    use std::cell::{Cell, RefCell};

    /// What the test provider's fetch does.
    #[derive(Clone, Copy)]
    enum Fetch {
        /// Answers `u`/`p` for a minute.
        Fixed,
        /// Fails as a token endpoint's 403.
        Failing,
        /// Never answers.
        Hanging,
    }

    /// A provider whose every step is scripted, and which records which steps ran.
    struct Scripted {
        /// The plan's refusal, when it refuses.
        refuse: Option<&'static str>,
        /// Whether the cache answers (`cached`/`c` for 30 seconds).
        hit: bool,
        fetch: Fetch,
        /// Plans made, so each plan has its own number.
        plans: Cell<u32>,
        /// The plan numbers `answer_from_cache` and `fetch` were given.
        cache_looks: RefCell<Vec<u32>>,
        fetches: RefCell<Vec<u32>>,
    }

    impl Scripted {
        fn new(fetch: Fetch) -> Self {
            Scripted {
                refuse: None,
                hit: false,
                fetch,
                plans: Cell::new(0),
                cache_looks: RefCell::new(Vec::new()),
                fetches: RefCell::new(Vec::new()),
            }
        }
    }

    /// A plan: its number, the registry it is for and its cache key.
    struct TestPlan<'a> {
        number: u32,
        registry: &'a str,
        key: Option<CacheKey>,
    }

    impl Provider for Scripted {
        type Plan<'a> = TestPlan<'a>;
        type Error = ProviderError;
        const ISSUER: Option<Issuer> = Some(Issuer::Ecr);

        fn cache_key<'p>(&self, plan: &'p TestPlan<'_>) -> Option<&'p CacheKey> {
            plan.key.as_ref()
        }

        fn plan<'a>(
            &'a self,
            request: &'a CredentialProviderRequest,
        ) -> Result<TestPlan<'a>, ProviderError> {
            if let Some(refusal) = self.refuse {
                return Err(refusal.into());
            }
            self.plans.set(self.plans.get() + 1);
            Ok(TestPlan {
                number: self.plans.get(),
                registry: request.image_ref.registry(),
                key: Some(
                    CacheKey::new(Issuer::Ecr)
                        .scope("registry", request.image_ref.registry())
                        .node_identity("node", "n1"),
                ),
            })
        }

        fn answer_from_cache<'a>(
            &'a self,
            _: &'a CredentialProviderRequest,
            plan: &TestPlan<'a>,
        ) -> Option<Credentials> {
            self.cache_looks.borrow_mut().push(plan.number);
            self.hit.then(|| {
                Credentials::single(
                    CacheKeyType::Registry,
                    GoDuration::from_secs(30),
                    plan.registry,
                    AuthConfig::new("cached", "c"),
                )
            })
        }

        async fn fetch<'a>(
            &'a self,
            _: &'a CredentialProviderRequest,
            plan: TestPlan<'a>,
            _: Deadline,
        ) -> Result<Credentials, ProviderError> {
            self.fetches.borrow_mut().push(plan.number);
            match self.fetch {
                Fetch::Fixed => Ok(Credentials::single(
                    CacheKeyType::Registry,
                    GoDuration::from_secs(60),
                    plan.registry,
                    AuthConfig::new("u", "p"),
                )),
                Fetch::Failing => Err("token endpoint said 403".into()),
                Fetch::Hanging => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Err("unreachable".into())
                }
            }
        }
    }

    const REQ: &[u8] = br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","image":"reg.io:5000/a/b"}"#;

    fn exec_with(
        input: &[u8],
        provider: &Scripted,
        budget: Duration,
        jitter: u8,
    ) -> (ExitCode, String) {
        let mut out = Vec::new();
        let options = Options {
            deadline: Deadline::after(budget),
            jitter,
            print_key: None,
        };
        let code = answer(input, &options, None, provider, &mut out);
        (code, String::from_utf8(out).unwrap())
    }

    fn exec(input: &[u8], provider: &Scripted, budget: Duration) -> (ExitCode, String) {
        exec_with(input, provider, budget, 0)
    }

    #[test]
    fn answers_in_the_request_version_with_one_line() {
        let (code, out) = exec(REQ, &Scripted::new(Fetch::Fixed), Duration::from_secs(5));
        assert_eq!(code, ExitCode::SUCCESS);
        assert_eq!(
            out,
            "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"1m0s\",\"auth\":{\"reg.io:5000\":{\"username\":\"u\",\"password\":\"p\"}}}\n"
        );
    }

    #[test]
    fn jitter_lowers_the_cache_duration() {
        let answered = |jitter: u8| -> u64 {
            let provider = Scripted::new(Fetch::Fixed);
            let (code, out) = exec_with(REQ, &provider, Duration::from_secs(5), jitter);
            assert_eq!(code, ExitCode::SUCCESS);
            let text = out
                .split("\"cacheDuration\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (GoDuration::parse(text).unwrap().as_nanos() / 1_000_000_000) as u64
        };
        let jittered: Vec<u64> = (0..20).map(|_| answered(100)).collect();
        assert!(jittered.iter().all(|s| *s <= 60), "{jittered:?}");
        assert!(jittered.iter().any(|s| *s < 60), "{jittered:?}");
        assert!((0..20).all(|_| answered(0) == 60));
    }

    /// [`respond`] to [`REQ`]: its result, the fetch time it noted and what it wrote.
    fn respond_to(provider: &Scripted) -> (Responded, Option<Duration>, String) {
        let mut fetch_time = None;
        let mut out = Vec::new();
        let options = Options {
            deadline: Deadline::after(Duration::from_secs(5)),
            jitter: 0,
            print_key: None,
        };
        let result = respond(REQ, &options, true, provider, &mut fetch_time, &mut out);
        (result, fetch_time, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_cache_hit_never_calls_fetch() {
        let provider = Scripted {
            hit: true,
            ..Scripted::new(Fetch::Failing)
        };
        let (result, fetch_time, out) = respond_to(&provider);
        assert_eq!(result.ok(), Some(vec!["reg.io:5000".to_owned()]));
        assert_eq!(
            out,
            "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"30s\",\"auth\":{\"reg.io:5000\":{\"username\":\"cached\",\"password\":\"c\"}}}\n"
        );
        assert_eq!(*provider.cache_looks.borrow(), [1]);
        assert!(provider.fetches.borrow().is_empty(), "a hit fetched");
        assert_eq!(fetch_time, None, "a hit is no fetch to time");
        let (code, _) = exec(REQ, &provider, Duration::from_secs(5));
        assert_eq!(code, ExitCode::SUCCESS);
    }

    #[test]
    fn a_miss_calls_fetch_with_the_same_plan() {
        let provider = Scripted::new(Fetch::Failing);
        let (result, fetch_time, out) = respond_to(&provider);
        let Err((code, failure)) = result else {
            panic!("a failed fetch answered");
        };
        assert_eq!(
            (code, failure.text.as_str(), out.as_str()),
            (EXIT_FAILURE, "token endpoint said 403", "")
        );
        assert_eq!(provider.plans.get(), 1, "planned once");
        assert_eq!(*provider.cache_looks.borrow(), [1]);
        assert_eq!(*provider.fetches.borrow(), [1], "the cache look's plan");
        assert!(fetch_time.is_some(), "the fetch is timed");
        let (code, out) = exec(REQ, &Scripted::new(Fetch::Failing), Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
    }

    #[test]
    fn a_plan_refusal_answers_nothing_and_reaches_neither_the_cache_nor_the_fetch() {
        let provider = Scripted {
            refuse: Some("reg.io:5000 is not a registry of this provider"),
            hit: true,
            ..Scripted::new(Fetch::Fixed)
        };
        let (result, fetch_time, out) = respond_to(&provider);
        let Err((code, failure)) = result else {
            panic!("a refused plan was answered");
        };
        assert_eq!(code, EXIT_FAILURE);
        assert_eq!(
            failure.text,
            "reg.io:5000 is not a registry of this provider"
        );
        assert_eq!(failure.class, ErrorClass::Other);
        assert_eq!(out, "");
        assert!(provider.cache_looks.borrow().is_empty(), "cache looked");
        assert!(provider.fetches.borrow().is_empty(), "fetched");
        // As when the refusal came from the fetch: the metrics count it as a timed fetch.
        assert!(fetch_time.is_some(), "a refusal is timed as the fetch");
        let (code, out) = exec(REQ, &provider, Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
    }

    #[test]
    fn failures_write_nothing_to_stdout() {
        let (code, out) = exec(REQ, &Scripted::new(Fetch::Failing), Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
        let provider = Scripted::new(Fetch::Fixed);
        let (code, out) = exec(b"not json", &provider, Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_USAGE), ""));
        assert_eq!(provider.plans.get(), 0, "a bad request is not planned");
    }

    #[test]
    fn the_deadline_cancels_a_hanging_provider() {
        let started = Instant::now();
        let (code, out) = exec(
            REQ,
            &Scripted::new(Fetch::Hanging),
            Duration::from_millis(200),
        );
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the deadline did not fire"
        );
    }

    /// `CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`: the plan's key (the shared one for a node of a
    /// shared identity) as one JSON line, and neither the cache nor the fetch is reached.
    #[test]
    fn the_key_only_mode_prints_the_plans_key_and_fetches_nothing() {
        let shared = SharedIdentity::parse("nodes").unwrap();
        for identity in [None, Some(&shared)] {
            let provider = Scripted::new(Fetch::Failing);
            let options = Options {
                deadline: Deadline::after(Duration::from_secs(5)),
                jitter: 0,
                print_key: Some(identity),
            };
            let mut out = Vec::new();
            let code = answer(REQ, &options, None, &provider, &mut out);
            assert_eq!(code, ExitCode::SUCCESS);
            let line: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let key = CacheKey::new(Issuer::Ecr)
                .scope("registry", "reg.io:5000")
                .node_identity("node", "n1");
            let key = identity.map_or(key.clone(), |s| key.shared_as(s).unwrap());
            assert_eq!(
                line,
                serde_json::json!({"kind": "TokenCacheKey", "file": key.file_name(), "key": key.canonical()})
            );
            assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
            assert!(provider.cache_looks.borrow().is_empty());
            assert!(provider.fetches.borrow().is_empty());
        }
    }

    /// The runner's ceiling: whatever a provider computed, never longer than its issuer's
    /// longest token life, nor than the noted token has left.
    #[test]
    fn cache_durations_are_capped_by_the_issuer_and_the_tokens_expiry() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let hours = |h: i64| GoDuration::from_secs(h * 3600);
        let cases = [
            // (computed, issuer, expiry in seconds from now, expected)
            (hours(2_400_000), Some(Issuer::Ecr), None, hours(12)),
            (hours(5), Some(Issuer::Acr), None, hours(3)),
            (hours(6), Some(Issuer::Ecr), Some(3600), hours(1)),
            (hours(6), Some(Issuer::Ecr), Some(-60), GoDuration::ZERO),
            (hours(6), Some(Issuer::Ecr), Some(7 * 3600), hours(6)),
            (hours(48), None, None, hours(48)),
            (hours(48), None, Some(3600), hours(1)),
        ];
        for (computed, issuer, expiry, expected) in cases {
            let expires_at = expiry.map(|s: i64| {
                if s >= 0 {
                    now + Duration::from_secs(s.unsigned_abs())
                } else {
                    now - Duration::from_secs(s.unsigned_abs())
                }
            });
            assert_eq!(
                ceiling(computed, issuer, expires_at, now),
                expected,
                "{computed} {issuer:?} {expiry:?}"
            );
        }
    }

    #[test]
    fn read_capped_refuses_oversized_input() {
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), b"abc");
        assert!(
            read_capped(&b"abcd"[..], 3)
                .unwrap_err()
                .contains("larger than 3 bytes")
        );
    }
}
