//! `HttpClient::send_retrying_with` against scripted fakes on 127.0.0.1: which statuses are retried
//! and which handed back under each set of rules, `Retry-After` in both forms and its cap, the
//! attempts an oversized answer gets, and the log line each retry writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{
    Call, CallError, HttpClient, HttpError, HttpResponse, MAX_BODY_BYTES, ProxyConfig, RetryRules,
    Route, Statuses,
};
use kcp_plugin::retry::RetryPolicy;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use reqwest::Url;

/// ACR's registry rules with millisecond backoffs: 408, 429 and 5xx transient, every answer
/// handed back, `Retry-After` honoured up to 5 s, oversized answers retried.
const TAKE_ANY: RetryRules = RetryRules {
    policy: RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
    },
    transient: Statuses(&[(408, 408), (429, 429), (500, u16::MAX)]),
    answers: Statuses::ANY,
    max_retry_after: Some(Duration::from_secs(5)),
    retry_body_errors: true,
};

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A fake that answers with `script` in order, then `200 ok`.
fn scripted(script: Vec<FakeResponse>) -> FakeServer {
    let script = Mutex::new(VecDeque::from(script));
    FakeServer::start(move |_| {
        script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| FakeResponse::new(200, "ok"))
    })
}

/// Sends a GET to `fake` under `rules`.
fn send(fake: &FakeServer, rules: &RetryRules) -> Result<HttpResponse, CallError> {
    let http = HttpClient::new(
        &ProxyConfig::default(),
        Duration::from_secs(5),
        Duration::from_secs(15),
    );
    let url = Url::parse(&format!("{}/v2/", fake.url())).unwrap();
    let call = Call::get(Route::Internet, &url, "GET the challenge");
    block_on(http.send_retrying_with(call, Deadline::after(Duration::from_secs(10)), rules))
}

#[test]
fn a_401_challenge_is_an_answer_only_under_rules_that_take_it() {
    let fake = scripted(vec![FakeResponse::new(401, "{}")]);
    assert_eq!(send(&fake, &TAKE_ANY).unwrap().status, 401);
    assert_eq!(fake.requests().len(), 1);

    let fake = scripted(vec![FakeResponse::new(401, "denied")]);
    let err = send(&fake, &RetryRules::DEFAULT).unwrap_err();
    assert_eq!((err.status(), err.attempts), (Some(401), 1));
    assert_eq!(err.to_string(), "127.0.0.1 answered HTTP 401: denied");
}

#[test]
fn retry_after_seconds_replace_the_backoff() {
    let fake = scripted(vec![
        FakeResponse::new(429, "slow down").header("retry-after", "1"),
    ]);
    let started = Instant::now();
    assert_eq!(send(&fake, &TAKE_ANY).unwrap().status, 200);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not waited for"
    );
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn retry_after_dates_are_honoured_up_to_the_cap() {
    let in_an_hour = kcp_testkit::http_date(kcp_testkit::unix_now() + 3600);
    let fake = scripted(vec![
        FakeResponse::new(503, "busy").header("retry-after", &in_an_hour),
    ]);
    let rules = RetryRules {
        max_retry_after: Some(Duration::from_millis(300)),
        ..TAKE_ANY
    };
    let started = Instant::now();
    assert_eq!(send(&fake, &rules).unwrap().status, 200);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn the_default_rules_keep_their_own_backoff() {
    let fake = scripted(vec![
        FakeResponse::new(429, "slow down").header("retry-after", "30"),
    ]);
    let started = Instant::now();
    let http = HttpClient::new(
        &ProxyConfig::default(),
        Duration::from_secs(5),
        Duration::from_secs(15),
    );
    let url = Url::parse(&fake.url()).unwrap();
    let call = Call::get(Route::Internet, &url, "token");
    let ok = block_on(http.send_retrying(call, Deadline::after(Duration::from_secs(10)))).unwrap();
    assert_eq!(ok.status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "Retry-After: 30 was honoured"
    );
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn a_transient_status_that_outlasts_the_retries() {
    // Handed back to a caller that judges every answer, after its three attempts.
    let fake = FakeServer::start(|_| FakeResponse::new(503, "busy"));
    assert_eq!(send(&fake, &TAKE_ANY).unwrap().status, 503);
    assert_eq!(fake.requests().len(), 3);
    // An error under the default rules, after their four.
    let fake = FakeServer::start(|_| FakeResponse::new(503, "busy"));
    let err = send(&fake, &RetryRules::DEFAULT).unwrap_err();
    assert_eq!((err.status(), err.attempts), (Some(503), 4));
    assert_eq!(
        err.to_string(),
        "127.0.0.1 answered HTTP 503: busy (after 4 attempts)"
    );
    assert_eq!(fake.requests().len(), 4);
}

#[test]
fn a_408_is_transient_only_when_the_rules_say_so() {
    let fake = scripted(vec![FakeResponse::new(408, "")]);
    assert_eq!(send(&fake, &TAKE_ANY).unwrap().status, 200);
    assert_eq!(fake.requests().len(), 2);

    let fake = scripted(vec![FakeResponse::new(408, "")]);
    let err = send(&fake, &RetryRules::DEFAULT).unwrap_err();
    assert_eq!((err.status(), err.attempts), (Some(408), 1));
}

#[test]
fn oversized_answers_are_retried_only_when_the_rules_say_so() {
    let fake = FakeServer::start(|_| FakeResponse::new(200, vec![b'a'; MAX_BODY_BYTES + 1]));
    let err = send(&fake, &TAKE_ANY).unwrap_err();
    assert!(matches!(err.error, HttpError::Body { .. }), "{err:?}");
    assert_eq!(err.attempts, 3);

    let fake = FakeServer::start(|_| FakeResponse::new(200, vec![b'a'; MAX_BODY_BYTES + 1]));
    let err = send(&fake, &RetryRules::DEFAULT).unwrap_err();
    assert!(matches!(err.error, HttpError::Body { .. }), "{err:?}");
    assert_eq!(err.attempts, 1);
}

#[test]
fn connection_failures_are_retried_under_any_rules() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = HttpClient::new(
        &ProxyConfig::default(),
        Duration::from_secs(5),
        Duration::from_secs(15),
    );
    let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    for rules in [TAKE_ANY, RetryRules::DEFAULT] {
        let call = Call::get(Route::Internet, &url, "token");
        let err = block_on(http.send_retrying_with(
            call,
            Deadline::after(Duration::from_secs(10)),
            &rules,
        ))
        .unwrap_err();
        assert!(matches!(err.error, HttpError::Transport { .. }), "{err:?}");
        assert_eq!(err.attempts, rules.policy.max_attempts);
    }
}

/// Collects what a `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines written while `f` runs, at info level.
fn logs_of(f: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    String::from_utf8(captured.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn each_retry_is_logged_once_on_one_line() {
    for rules in [&RetryRules::DEFAULT, &TAKE_ANY] {
        let fake = scripted(vec![FakeResponse::new(503, "busy")]);
        let logs = logs_of(|| assert_eq!(send(&fake, rules).unwrap().status, 200));
        assert!(
            logs.contains("127.0.0.1 answered HTTP 503: busy; retrying")
                && logs.contains("GET the challenge")
                && logs.contains("attempt=1"),
            "{logs}"
        );
        assert_eq!(logs.matches("; retrying").count(), 1, "{logs}");
    }
}
