//! The one way a provider binary runs: stdin → request → provider → exactly one response on stdout.
//!
//! A provider's `main` parses its own flags and calls [`run`] with an async closure that turns a
//! request into [`Credentials`] (or [`run_with_fast_path`], with a synchronous answer tried first:
//! a token-cache hit is answered before any async runtime, HTTP client or SDK exists). The runner
//! owns everything the kubelet contract demands of every plugin: read stdin to EOF with a size cap,
//! validate the request, start logging on stderr, run the provider under one overall [`Deadline`],
//! answer in the request's apiVersion, and on any failure print one clear line on stderr, nothing
//! on stdout, and exit non-zero.

use std::future::Future;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use crate::deadline::Deadline;
use crate::logging::{self, error_chain};
use crate::metrics::{self, ErrorClass, MetricsFile, Outcome};
use crate::settings::Settings;
use kcp_kubelet::cache_hint;
use kcp_kubelet::protocol::{
    CredentialProviderRequest, CredentialProviderResponse, Credentials, MAX_REQUEST_BYTES,
};

/// The error a provider returns: anything that can be shown as a chain of causes.
pub type ProviderError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Exit status when credentials could not be obtained (what upstream plugins exit with).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status for a bad request, bad flags or a bad configuration file.
pub const EXIT_USAGE: u8 = 2;

/// Runs `provide` against the request on stdin, writing the response to stdout. Returns the
/// process exit code. `settings` come from [`crate::cli::start`], which also started logging.
/// Network calls in `provide` must respect the deadline it is given; the runner also cancels the
/// whole future when it passes.
pub fn run<E: Into<ProviderError>>(
    settings: &Settings,
    provide: impl AsyncFn(&CredentialProviderRequest, Deadline) -> Result<Credentials, E>,
) -> ExitCode {
    run_with_fast_path(settings, |_| None, provide)
}

/// [`run`] with a fast path: `fast` answers a request synchronously when it can (a token-cache
/// hit; the static provider always) or says `None` (no cache, a miss, or anything it would not
/// answer itself: `provide` then runs as usual and reports it). A cache hit then costs no async
/// runtime, no HTTP client and no trust store. `fast` must apply every check `provide` applies
/// before it would give the same answer.
pub fn run_with_fast_path<E: Into<ProviderError>>(
    settings: &Settings,
    fast: impl FnOnce(&CredentialProviderRequest) -> Option<Credentials>,
    provide: impl AsyncFn(&CredentialProviderRequest, Deadline) -> Result<Credentials, E>,
) -> ExitCode {
    let deadline = Deadline::after(settings.deadline);
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        tracing::warn!("reading a CredentialProviderRequest from stdin; end it with Ctrl-D");
    }
    let bytes = match read_capped(stdin.lock(), MAX_REQUEST_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => return fail(EXIT_USAGE, &e),
    };
    answer(
        &bytes,
        deadline,
        settings.cache_jitter,
        settings.metrics.as_ref(),
        fast,
        provide,
        &mut std::io::stdout().lock(),
    )
}

/// The exit for a provider's own configuration error found before the request is read: one
/// line on stderr, [`EXIT_USAGE`].
pub fn usage_error(message: &str) -> ExitCode {
    fail(EXIT_USAGE, message)
}

/// Everything after stdin is read, with the output stream injected (for tests). `jitter` is the
/// percentage `cacheDuration` may be lowered by (see [`cache_hint::with_jitter`]).
pub fn run_with_input<E: Into<ProviderError>>(
    input: &[u8],
    deadline: Deadline,
    jitter: u8,
    provide: impl AsyncFn(&CredentialProviderRequest, Deadline) -> Result<Credentials, E>,
    stdout: &mut dyn Write,
) -> ExitCode {
    answer(input, deadline, jitter, None, |_| None, provide, stdout)
}

/// [`run_with_input`] with a fast path tried first (see [`run_with_fast_path`]), each run's
/// outcome added to `metrics` when there is one.
fn answer<E: Into<ProviderError>>(
    input: &[u8],
    deadline: Deadline,
    jitter: u8,
    metrics: Option<&MetricsFile>,
    fast: impl FnOnce(&CredentialProviderRequest) -> Option<Credentials>,
    provide: impl AsyncFn(&CredentialProviderRequest, Deadline) -> Result<Credentials, E>,
    stdout: &mut dyn Write,
) -> ExitCode {
    // Cleared so a note can only come from this run's token cache.
    metrics::take_noted();
    let mut fetch_time = None;
    let result = respond(
        input,
        deadline,
        jitter,
        metrics.is_some(),
        fast,
        provide,
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
    file.record(&run, metrics::LOCK_WAIT.min(deadline.remaining()));
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

/// The run up to the answer on stdout: the auth keys answered (only when `keys` asks, so a run
/// without metrics copies nothing), or the exit code and failure.
#[allow(clippy::too_many_arguments)]
fn respond<E: Into<ProviderError>>(
    input: &[u8],
    deadline: Deadline,
    jitter: u8,
    keys: bool,
    fast: impl FnOnce(&CredentialProviderRequest) -> Option<Credentials>,
    provide: impl AsyncFn(&CredentialProviderRequest, Deadline) -> Result<Credentials, E>,
    fetch_time: &mut Option<Duration>,
    stdout: &mut dyn Write,
) -> Result<Vec<String>, (u8, Failure)> {
    let request = CredentialProviderRequest::from_bytes(input)
        .map_err(|e| (EXIT_USAGE, Failure::new(e.to_string(), ErrorClass::Usage)))?;
    tracing::info!(image = %request.image, api_version = %request.api_version, service_account_token = request.service_account_token.is_some(), "request received");

    let mut credentials = match fast(&request) {
        Some(credentials) => credentials,
        None => {
            let started = Instant::now();
            // Boxed at once: a provider's future holds its SDK calls' state (tens of KiB), and
            // every move of it on the stack would touch fresh stack pages.
            let result = block_on_with_deadline(Box::pin(provide(&request, deadline)), deadline);
            *fetch_time = Some(started.elapsed());
            match result {
                Ok(Ok(credentials)) => credentials,
                Ok(Err(e)) => {
                    let e: ProviderError = e.into();
                    let class = ErrorClass::of(e.as_ref());
                    return Err((EXIT_FAILURE, Failure::new(error_chain(e.as_ref()), class)));
                }
                Err(e) => return Err((EXIT_FAILURE, Failure::new(e, ErrorClass::Deadline))),
            }
        }
    };
    if let Some(computed) = credentials.cache_duration {
        let jittered = cache_hint::with_jitter(computed, jitter);
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

/// Drives `future` on a single-threaded runtime, cancelling it when `deadline` passes.
pub fn block_on_with_deadline<F: Future>(
    future: F,
    deadline: Deadline,
) -> Result<F::Output, String> {
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
    use kcp_kubelet::duration::GoDuration;
    use kcp_kubelet::protocol::{AuthConfig, CacheKeyType};

    async fn fixed(
        request: &CredentialProviderRequest,
        _: Deadline,
    ) -> Result<Credentials, ProviderError> {
        Ok(Credentials::single(
            CacheKeyType::Registry,
            GoDuration::from_secs(60),
            request.image_ref.registry(),
            AuthConfig::new("u", "p"),
        ))
    }

    async fn failing(
        _: &CredentialProviderRequest,
        _: Deadline,
    ) -> Result<Credentials, ProviderError> {
        Err("token endpoint said 403".into())
    }

    async fn hanging(
        _: &CredentialProviderRequest,
        _: Deadline,
    ) -> Result<Credentials, ProviderError> {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Err("unreachable".into())
    }

    const REQ: &[u8] = br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","image":"reg.io:5000/a/b"}"#;

    fn exec(
        input: &[u8],
        provide: impl AsyncFn(
            &CredentialProviderRequest,
            Deadline,
        ) -> Result<Credentials, ProviderError>,
        budget: Duration,
    ) -> (ExitCode, String) {
        let mut out = Vec::new();
        let code = run_with_input(input, Deadline::after(budget), 0, provide, &mut out);
        (code, String::from_utf8(out).unwrap())
    }

    #[test]
    fn answers_in_the_request_version_with_one_line() {
        let (code, out) = exec(REQ, fixed, Duration::from_secs(5));
        assert_eq!(code, ExitCode::SUCCESS);
        assert_eq!(
            out,
            "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"1m0s\",\"auth\":{\"reg.io:5000\":{\"username\":\"u\",\"password\":\"p\"}}}\n"
        );
    }

    #[test]
    fn jitter_lowers_the_cache_duration() {
        let answered = |jitter: u8| -> u64 {
            let mut out = Vec::new();
            let code = run_with_input(
                REQ,
                Deadline::after(Duration::from_secs(5)),
                jitter,
                fixed,
                &mut out,
            );
            assert_eq!(code, ExitCode::SUCCESS);
            let out = String::from_utf8(out).unwrap();
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

    #[test]
    fn a_cached_answer_skips_the_provider_and_a_miss_reaches_it() {
        let hit = |request: &CredentialProviderRequest| {
            Some(Credentials::single(
                CacheKeyType::Registry,
                GoDuration::from_secs(30),
                request.image_ref.registry(),
                AuthConfig::new("cached", "c"),
            ))
        };
        let mut out = Vec::new();
        let deadline = Deadline::after(Duration::from_secs(5));
        let code = answer(REQ, deadline, 0, None, hit, failing, &mut out);
        assert_eq!(code, ExitCode::SUCCESS);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"30s\",\"auth\":{\"reg.io:5000\":{\"username\":\"cached\",\"password\":\"c\"}}}\n"
        );
        let mut out = Vec::new();
        let code = answer(REQ, deadline, 0, None, |_| None, failing, &mut out);
        assert_eq!(
            (code, out.as_slice()),
            (ExitCode::from(EXIT_FAILURE), &b""[..])
        );
    }

    #[test]
    fn failures_write_nothing_to_stdout() {
        let (code, out) = exec(REQ, failing, Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
        let (code, out) = exec(b"not json", fixed, Duration::from_secs(5));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_USAGE), ""));
    }

    #[test]
    fn the_deadline_cancels_a_hanging_provider() {
        let started = Instant::now();
        let (code, out) = exec(REQ, hanging, Duration::from_millis(200));
        assert_eq!((code, out.as_str()), (ExitCode::from(EXIT_FAILURE), ""));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the deadline did not fire"
        );
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
