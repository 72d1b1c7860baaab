//! The metrics file's unit tests: rendering, parsing back, merging, caps, error classes.

use super::*;

fn run(outcome: Outcome, fetch_ms: Option<u64>) -> Run {
    Run {
        outcome,
        fetch_time: fetch_ms.map(Duration::from_millis),
        registries: vec!["123.dkr.ecr.us-east-1.amazonaws.com".into()],
        expires_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
        at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
    }
}

#[test]
fn renders_every_family_in_a_stable_order() {
    let mut m = Metrics::default();
    m.add("ecr", &run(Outcome::Fetched, Some(300)));
    m.add("ecr", &run(Outcome::CacheHit, None));
    m.add(
        "ecr",
        &run(Outcome::Error(ErrorClass::Upstream5xx), Some(70)),
    );
    assert_eq!(
        m.render(),
        format!(
            "{MARKER}
# HELP credential_provider_requests_total Credential requests answered by this plugin, by outcome (cache_hit, fleet_copy, fetched, error) and error class.
# TYPE credential_provider_requests_total counter
credential_provider_requests_total{{provider=\"ecr\",outcome=\"cache_hit\"}} 1
credential_provider_requests_total{{provider=\"ecr\",outcome=\"error\",class=\"upstream_5xx\"}} 1
credential_provider_requests_total{{provider=\"ecr\",outcome=\"fetched\"}} 1
# HELP credential_provider_fetch_duration_seconds Time spent fetching a credential (runs that reached the provider's fetch).
# TYPE credential_provider_fetch_duration_seconds histogram
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"0.05\"}} 0
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"0.1\"}} 1
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"0.25\"}} 1
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"0.5\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"1\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"2.5\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"5\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"10\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"30\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"60\"}} 2
credential_provider_fetch_duration_seconds_bucket{{provider=\"ecr\",le=\"+Inf\"}} 2
credential_provider_fetch_duration_seconds_sum{{provider=\"ecr\"}} 0.37
credential_provider_fetch_duration_seconds_count{{provider=\"ecr\"}} 2
# HELP credential_provider_token_expiry_timestamp_seconds Unix time at which the token last handed out for a registry expires.
# TYPE credential_provider_token_expiry_timestamp_seconds gauge
credential_provider_token_expiry_timestamp_seconds{{provider=\"ecr\",registry=\"123.dkr.ecr.us-east-1.amazonaws.com\"}} 1800000000
# HELP credential_provider_last_success_timestamp_seconds Unix time of the last run that answered the kubelet with credentials.
# TYPE credential_provider_last_success_timestamp_seconds gauge
credential_provider_last_success_timestamp_seconds{{provider=\"ecr\"}} 1700000000
"
        )
    );
}

#[test]
fn what_is_rendered_parses_back_and_merges() {
    let mut m = Metrics::default();
    m.add("acr", &run(Outcome::Fetched, Some(1200)));
    m.add("static", &run(Outcome::Error(ErrorClass::Usage), None));
    let mut back = Metrics::parse(m.render().as_bytes()).unwrap();
    assert_eq!(back, m);
    back.add("acr", &run(Outcome::Fetched, Some(10)));
    assert_eq!(
        back.requests[&("acr".into(), "fetched".into(), String::new())],
        2
    );
    assert_eq!(back.durations["acr"].count, 2);
    assert_eq!(back.durations["acr"].buckets[0], 1);
}

#[test]
fn label_values_are_escaped_and_read_back() {
    let mut m = Metrics::default();
    let mut odd = run(Outcome::Fetched, None);
    odd.registries = vec!["a\"b\\c\nd".into()];
    m.add("gcr", &odd);
    let text = m.render();
    assert!(text.contains(r#"registry="a\"b\\c\nd""#), "{text}");
    assert_eq!(Metrics::parse(text.as_bytes()).unwrap(), m);
}

#[test]
fn a_file_without_the_marker_is_foreign_and_a_broken_one_damaged() {
    assert_eq!(Metrics::parse(b"node_thing 1\n"), Err(Unreadable::Foreign));
    assert_eq!(Metrics::parse(b"\xff\xfe"), Err(Unreadable::Foreign));
    let broken = format!("{MARKER}\ncredential_provider_requests_total{{provider=\"x\"");
    assert!(matches!(
        Metrics::parse(broken.as_bytes()),
        Err(Unreadable::Damaged(_))
    ));
    let unknown = format!("{MARKER}\nsomething_else{{provider=\"x\"}} 1\n");
    assert!(matches!(
        Metrics::parse(unknown.as_bytes()),
        Err(Unreadable::Damaged(_))
    ));
}

#[test]
fn registries_are_capped_dropping_the_earliest_expiry() {
    let mut m = Metrics::default();
    for i in 0..=MAX_REGISTRIES as u64 {
        let mut r = run(Outcome::Fetched, None);
        r.registries = vec![format!("r{i}.example")];
        r.expires_at = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + i));
        m.add("ecr", &r);
    }
    assert_eq!(m.expiry.len(), MAX_REGISTRIES);
    assert!(!m.expiry.contains_key(&("ecr".into(), "r0.example".into())));
    assert!(m.expiry.contains_key(&("ecr".into(), "r1.example".into())));
}

#[test]
fn classifies_errors() {
    let status = |status: u16| HttpError::Status {
        host: "h".into(),
        status,
        detail: String::new(),
    };
    assert_eq!(ErrorClass::of(&status(429)), ErrorClass::Throttled);
    assert_eq!(ErrorClass::of(&status(403)), ErrorClass::Upstream4xx);
    let call = CallError {
        error: status(503),
        attempts: 3,
    };
    assert_eq!(ErrorClass::of(&call), ErrorClass::Upstream5xx);
    let transport = HttpError::Transport {
        host: "h".into(),
        reason: "refused".into(),
        timeout: false,
    };
    assert_eq!(ErrorClass::of(&transport), ErrorClass::Network);
    let text = |t: &str| {
        let e: Box<dyn std::error::Error + Send + Sync> = t.into();
        ErrorClass::of(e.as_ref())
    };
    assert_eq!(
        text("service error: ThrottlingException: Rate exceeded"),
        ErrorClass::Throttled
    );
    assert_eq!(
        text("GetAuthorizationToken: unhandled error (status code: 403)"),
        ErrorClass::Upstream4xx
    );
    assert_eq!(
        text("dispatch failure: io error: dns error"),
        ErrorClass::Network
    );
    assert_eq!(text("no region configured"), ErrorClass::Other);
}

#[test]
fn noted_tokens_are_taken_once() {
    assert_eq!(take_noted(), None);
    note_token(Source::Cache, None);
    assert_eq!(take_noted(), Some((Source::Cache, None)));
    assert_eq!(take_noted(), None);
}

/// An answer from a copy of the fleet's entry is told apart from the node's own cache hits, in
/// the file and after reading it back.
#[test]
fn fleet_copies_are_counted_apart_from_cache_hits() {
    assert_eq!(
        Outcome::answered(Some(Source::FleetCopy)),
        Outcome::FleetCopy
    );
    assert_eq!(Outcome::answered(Some(Source::Cache)), Outcome::CacheHit);
    assert_eq!(Outcome::answered(Some(Source::Upstream)), Outcome::Fetched);
    let mut m = Metrics::default();
    m.add("ecr", &run(Outcome::FleetCopy, None));
    m.add("ecr", &run(Outcome::FleetCopy, None));
    m.add("ecr", &run(Outcome::CacheHit, None));
    let text = m.render();
    assert!(
        text.contains(
            "credential_provider_requests_total{provider=\"ecr\",outcome=\"fleet_copy\"} 2\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "credential_provider_requests_total{provider=\"ecr\",outcome=\"cache_hit\"} 1\n"
        ),
        "{text}"
    );
    let back = Metrics::parse(text.as_bytes()).unwrap_or_else(|_| panic!("{text}"));
    assert_eq!(back.render(), text);
}
