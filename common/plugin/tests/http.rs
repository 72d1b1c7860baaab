//! `kcp_plugin::http` against scripted fakes on 127.0.0.1: statuses and their classification, the
//! body cap, redirects, redaction of error bodies, proxy routing (a `CONNECT` proxy that records
//! where it was asked to go), plain http refused off the node, and timeouts capped by the run's
//! deadline.
//!
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::net::{IpAddr, TcpListener};
use std::time::{Duration, Instant};

use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{
    HttpClient, HttpError, HttpResponse, MAX_BODY_BYTES, ProxyConfig, ProxyUrl, Route,
    is_link_local, is_link_local_url, redact_token_like,
};
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};
use reqwest::{Method, Url};

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn client(proxy: ProxyConfig) -> HttpClient {
    HttpClient::new(&proxy, Duration::from_secs(5), Duration::from_secs(15))
}

fn get(http: &HttpClient, route: Route, url: &str) -> Result<HttpResponse, HttpError> {
    block_on(http.send(
        route,
        Method::GET,
        &Url::parse(url).unwrap(),
        &[("X-Test", "1")],
        None,
        Deadline::after(Duration::from_secs(10)),
    ))
}

fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_2xx_answer_returns_status_body_and_headers() {
    let fake = FakeServer::start(|_| FakeResponse::json(r#"{"ok":true}"#).header("X-Answer", "42"));
    let http = client(ProxyConfig::default());
    let response = get(&http, Route::Internet, &format!("{}/a/b?c=d", fake.url())).unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, br#"{"ok":true}"#);
    assert_eq!(response.header("x-answer"), Some("42"));
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    let seen = fake.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].target.as_str()),
        ("GET", "/a/b?c=d")
    );
    assert_eq!(seen[0].header("x-test"), Some("1"));
    assert!(
        seen[0]
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("kubelet-credential-providers/"))
    );
}

#[test]
fn post_sends_the_body_and_headers_as_given() {
    let fake = FakeServer::start(|_| FakeResponse::new(201, "created"));
    let http = client(ProxyConfig::default());
    let response = block_on(http.send(
        Route::Internet,
        Method::POST,
        &Url::parse(&format!("{}/token", fake.url())).unwrap(),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(b"grant_type=x&assertion=y".to_vec()),
        Deadline::after(Duration::from_secs(10)),
    ))
    .unwrap();
    assert_eq!(
        (response.status, response.body.as_slice()),
        (201, &b"created"[..])
    );
    let seen = &fake.requests()[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.body, b"grant_type=x&assertion=y");
    assert_eq!(
        seen.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
}

#[test]
fn other_statuses_are_errors_classified_for_retry() {
    for (status, transient) in [
        (400, false),
        (401, false),
        (403, false),
        (404, false),
        (429, true),
        (500, true),
        (502, true),
        (503, true),
    ] {
        let fake = FakeServer::start(move |_| FakeResponse::new(status, "line one\nline two"));
        let err = get(
            &client(ProxyConfig::default()),
            Route::Internet,
            &fake.url(),
        )
        .unwrap_err();
        assert_eq!(err.status(), Some(status));
        assert_eq!(err.is_transient(), transient, "{status}");
        assert_eq!(
            err.to_string(),
            format!("127.0.0.1 answered HTTP {status}: line one line two")
        );
    }
}

#[test]
fn fetch_returns_any_status_with_the_whole_body() {
    let fake = FakeServer::start(|_| {
        FakeResponse::new(
            400,
            r#"{"__type":"InvalidParameterException","message":"bad"}"#,
        )
        .header("x-amzn-requestid", "r-1")
    });
    let http = client(ProxyConfig::default());
    let response = block_on(http.fetch(
        Route::Internet,
        Method::POST,
        &Url::parse(&fake.url()).unwrap(),
        &[],
        Some(b"{}".to_vec()),
        Deadline::after(Duration::from_secs(10)),
    ))
    .unwrap();
    assert_eq!(response.status, 400);
    assert_eq!(
        response.body,
        br#"{"__type":"InvalidParameterException","message":"bad"}"#
    );
    assert_eq!(response.header("X-Amzn-RequestId"), Some("r-1"));
    // Transport failures are still errors.
    let closed = format!("http://127.0.0.1:{}/", closed_port());
    let err = block_on(http.fetch(
        Route::Internet,
        Method::GET,
        &Url::parse(&closed).unwrap(),
        &[],
        None,
        Deadline::after(Duration::from_secs(10)),
    ))
    .unwrap_err();
    assert!(matches!(err, HttpError::Transport { .. }), "{err:?}");
}

/// The error text for a 400 answer with `body`.
fn error_for_400(body: String) -> String {
    let fake = FakeServer::start(move |_| FakeResponse::new(400, body.clone()));
    get(
        &client(ProxyConfig::default()),
        Route::Internet,
        &fake.url(),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn error_excerpts_are_short_and_redact_tokens() {
    let long = "x ".repeat(1000);
    let fake = FakeServer::start(move |_| FakeResponse::new(400, long.clone()));
    let HttpError::Status { detail, .. } = get(
        &client(ProxyConfig::default()),
        Route::Internet,
        &fake.url(),
    )
    .unwrap_err() else {
        panic!("expected a status error");
    };
    assert_eq!(detail.chars().count(), 201, "{detail}");
    assert!(detail.ends_with('…'));

    let jwt = format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.{}",
        "eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTpwdWxsZXIifQ",
        "c2lnbmF0dXJlLWJ5dGVzLXRoYXQtYXJlLWxvbmctZW5vdWdo"
    );
    let body =
        format!(r#"{{"error":"invalid_grant","error_description":"bad subject_token {jwt}"}}"#);
    let text = error_for_400(body);
    assert!(
        text.contains("invalid_grant") && text.contains("bad subject_token"),
        "{text}"
    );
    assert!(
        !text.contains("eyJzdWIi") && !text.contains("c2lnbmF0dXJl"),
        "{text}"
    );
    assert!(text.contains("<redacted>"), "{text}");
}

/// An AWS secret access key holds `/`, which breaks the token-run heuristic into short pieces:
/// only the exact value, held as a `Secret`, hides it.
#[test]
fn error_excerpts_hide_every_secret_held_exactly() {
    let key = "aXbY1234cDeF/5678gHiJ9012kLmN/3456oPqRsT";
    assert_eq!(key.len(), 40);
    assert_eq!(
        redact_token_like(key),
        key,
        "the heuristic alone lets it through"
    );
    let _held = kcp_kubelet::Secret::new(key);
    let text = error_for_400(format!(
        r#"{{"message":"The secret key {key} does not match"}}"#
    ));
    assert!(
        text.contains("The secret key <redacted> does not match"),
        "{text}"
    );
    assert!(
        !text.contains("aXbY1234cDeF") && !text.contains("3456oPqRsT"),
        "{text}"
    );
}

#[test]
fn redaction_keeps_ordinary_words_hosts_and_uuids() {
    assert_eq!(
        redact_token_like(
            "Permission denied on us-central1-docker.pkg.dev for 123e4567-e89b-12d3-a456-426614174000"
        ),
        "Permission denied on us-central1-docker.pkg.dev for 123e4567-e89b-12d3-a456-426614174000"
    );
    assert_eq!(
        redact_token_like("token ya29.a0AfH6SMBx3gZ9kq_7-LONGLONGLONGLONGLONGLONG end"),
        "token ya29.<redacted> end"
    );
    assert_eq!(
        redact_token_like("/computeMetadata/v1/instance/service-accounts/default/token"),
        "/computeMetadata/v1/instance/service-accounts/default/token"
    );
}

#[test]
fn the_body_cap_is_exact() {
    let fake = FakeServer::start(|req| {
        let n = if req.path() == "/at-cap" {
            MAX_BODY_BYTES
        } else {
            MAX_BODY_BYTES + 1
        };
        FakeResponse::new(200, vec![b'a'; n])
    });
    let http = client(ProxyConfig::default());
    let ok = get(&http, Route::Internet, &format!("{}/at-cap", fake.url())).unwrap();
    assert_eq!(ok.body.len(), MAX_BODY_BYTES);
    let err = get(&http, Route::Internet, &format!("{}/over", fake.url())).unwrap_err();
    assert!(matches!(err, HttpError::Body { .. }), "{err:?}");
    assert!(!err.is_transient());
    assert!(
        err.to_string()
            .contains(&format!("larger than {MAX_BODY_BYTES} bytes"))
    );
}

#[test]
fn redirects_are_not_followed() {
    let target = FakeServer::start(|_| FakeResponse::new(200, "followed"));
    let location = format!("{}/elsewhere", target.url());
    let fake = FakeServer::start(move |_| FakeResponse::new(302, "").header("Location", &location));
    let err = get(
        &client(ProxyConfig::default()),
        Route::Internet,
        &fake.url(),
    )
    .unwrap_err();
    assert_eq!(err.status(), Some(302));
    assert!(
        target.requests().is_empty(),
        "a token must not follow a redirect"
    );
}

#[test]
fn connection_failures_are_transient_and_never_show_the_query() {
    let http = client(ProxyConfig::default());
    let url = format!(
        "http://127.0.0.1:{}/x?access_token=SECRET123",
        closed_port()
    );
    let err = get(&http, Route::Internet, &url).unwrap_err();
    assert!(
        matches!(err, HttpError::Transport { timeout: false, .. }),
        "{err:?}"
    );
    assert!(err.is_transient());
    let text = err.to_string();
    assert!(text.starts_with("request to 127.0.0.1 failed:"), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
    assert!(!text.contains("SECRET123"), "{text}");

    let fake = FakeServer::start(|_| FakeResponse::drop_connection());
    let err = get(
        &http,
        Route::Internet,
        &format!("{}/?k=SECRET123", fake.url()),
    )
    .unwrap_err();
    assert!(matches!(err, HttpError::Transport { .. }), "{err:?}");
    assert!(!err.to_string().contains("SECRET123"));
}

/// The routing rules of the module docs, seen from a `CONNECT` proxy that records every target
/// and tunnels none of them (no route is configured, so it answers 502).
fn proxy() -> ConnectProxy {
    ConnectProxy::start(&[])
}

#[test]
fn https_requests_go_through_the_proxy() {
    let proxy = proxy();
    let http = client(ProxyConfig::https(proxy.url()));
    // An unresolvable origin: only the proxy can be asked for it.
    let err = get(
        &http,
        Route::Internet,
        "https://origin.invalid/v1/token?x=1",
    )
    .unwrap_err();
    assert!(matches!(err, HttpError::Transport { .. }), "{err:?}");
    assert_eq!(proxy.targets(), ["origin.invalid:443"]);
}

/// Plain http to anything but a node-local address would carry a token in cleartext: refused
/// before a connection is made, proxy or not. It used to be sent (through `HTTP_PROXY` when set).
#[test]
fn plain_http_to_a_remote_host_is_refused_before_anything_is_sent() {
    let proxy = proxy();
    for config in [ProxyConfig::https(proxy.url()), ProxyConfig::default()] {
        let http = client(config);
        for (url, shown) in [
            (
                "http://origin.invalid/v1/token?sig=x",
                "http://origin.invalid/v1/token",
            ),
            ("http://10.0.0.1:8080/t", "http://10.0.0.1:8080/t"),
            ("http://[fd00::1]/t", "http://[fd00::1]/t"),
            (
                "http://localhost.evil.example/t",
                "http://localhost.evil.example/t",
            ),
        ] {
            let err = get(&http, Route::Internet, url).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "refusing to call {shown} over plain http: a token would cross the network unencrypted; use https (plain http goes only to loopback and link-local metadata addresses)"
                )
            );
            assert!(!err.is_transient());
        }
    }
    assert!(proxy.targets().is_empty(), "{:?}", proxy.targets());
}

/// Loopback (a local relay, a node-local token endpoint) and link-local metadata go direct
/// whatever the proxy variables and `NO_PROXY` say. Loopback used to follow `HTTPS_PROXY`, so a
/// node-local token travelled to the proxy.
#[test]
fn loopback_and_metadata_go_direct_with_a_proxy_set() {
    let proxy = proxy();
    let origin = FakeServer::start(|_| FakeResponse::new(200, "direct"));
    let mut config = ProxyConfig::https(proxy.url());
    config.no_proxy = Some("example.com".to_owned());
    let http = client(config);
    let port = origin.addr().port();
    for url in [
        origin.url(),
        format!("http://localhost:{port}/x"),
        format!("http://LOCALHOST:{port}/x"),
    ] {
        assert_eq!(get(&http, Route::Internet, &url).unwrap().body, b"direct");
    }
    assert_eq!(
        get(&http, Route::Metadata, &origin.url()).unwrap().body,
        b"direct"
    );
    // https to loopback goes direct too: the handshake with the (untrusted) test CA fails at the
    // server itself, never at the proxy.
    let ca = TestCa::new();
    let tls = TlsFakeServer::start(&ca, &["127.0.0.1", "localhost"], |_| {
        FakeResponse::new(200, "tls")
    });
    let err = get(&http, Route::Internet, &tls.https_url()).unwrap_err();
    assert!(matches!(err, HttpError::Tls { .. }), "{err:?}");
    assert!(proxy.targets().is_empty(), "{:?}", proxy.targets());
    assert_eq!(origin.requests().len(), 4);
    assert_eq!(
        origin.requests()[0].target,
        "/",
        "origin-form, as sent to a server directly"
    );
}

#[test]
fn no_proxy_takes_a_host_off_the_proxy() {
    let proxy = proxy();
    let mut config = ProxyConfig::https(proxy.url());
    config.no_proxy = Some("a.invalid,.b.invalid".to_owned());
    let http = client(config);
    for bypassed in ["https://a.invalid/x", "https://x.b.invalid/x"] {
        let err = get(&http, Route::Internet, bypassed).unwrap_err();
        assert!(matches!(err, HttpError::Transport { .. }), "{err:?}");
    }
    assert!(proxy.targets().is_empty(), "{:?}", proxy.targets());
    let _ = get(&http, Route::Internet, "https://c.invalid/x");
    assert_eq!(proxy.targets(), ["c.invalid:443"]);
}

#[test]
fn proxy_settings_from_the_environment_spellings() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        ProxyConfig::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    };
    let https = |variable: &'static str, url: &str| {
        Some(ProxyUrl {
            variable,
            url: url.into(),
        })
    };
    assert_eq!(
        env(&[
            ("HTTPS_PROXY", "http://upper:1"),
            ("https_proxy", "http://lower:1"),
            ("NO_PROXY", "a.io")
        ]),
        ProxyConfig {
            https: https("https_proxy", "http://lower:1"),
            no_proxy: Some("a.io".into()),
        }
    );
    assert_eq!(
        env(&[("ALL_PROXY", "http://all:1"), ("HTTPS_PROXY", "  ")]),
        ProxyConfig {
            https: https("ALL_PROXY", "http://all:1"),
            no_proxy: None,
        }
    );
    // Plain http is never proxied, so HTTP_PROXY plays no part.
    assert_eq!(
        env(&[("HTTP_PROXY", "http://plain:1"), ("http_proxy", "x")]),
        ProxyConfig::default()
    );
}

/// A malformed proxy variable fails only requests that would use the proxy, with one line naming
/// the variable and never quoting its value (it may hold a password). It used to fail the client
/// itself, and so metadata-only runs.
#[test]
fn a_malformed_proxy_fails_only_the_requests_that_use_it() {
    let origin = FakeServer::start(|_| FakeResponse::new(200, "direct"));
    let bad = ProxyConfig::from_lookup(|name| {
        (name == "https_proxy").then(|| "http://user:proxy-s3cret@exa mple:1".to_owned())
    });
    let http = HttpClient::new(&bad, Duration::from_secs(1), Duration::from_secs(5));
    assert_eq!(
        get(&http, Route::Metadata, &origin.url()).unwrap().body,
        b"direct"
    );
    assert_eq!(
        get(&http, Route::Internet, &origin.url()).unwrap().body,
        b"direct"
    );
    let err = get(&http, Route::Internet, "https://registry.invalid/v2/").unwrap_err();
    assert!(matches!(err, HttpError::Setup(_)), "{err:?}");
    let line = err.to_string();
    assert!(
        line.starts_with("HTTP client setup failed: https_proxy is not a usable proxy URL (")
            && line.ends_with("): fix or unset it"),
        "{line}"
    );
    assert!(!line.contains("s3cret") && !line.contains('\n'), "{line}");
    assert!(!format!("{http:?}").contains("s3cret"));
}

#[test]
fn a_hanging_server_is_cut_off_by_the_deadline() {
    let fake = FakeServer::start(|_| FakeResponse::hang());
    let http = client(ProxyConfig::default());
    let started = Instant::now();
    let err = block_on(http.send(
        Route::Metadata,
        Method::GET,
        &Url::parse(&fake.url()).unwrap(),
        &[],
        None,
        Deadline::after(Duration::from_millis(500)),
    ))
    .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(err, HttpError::Transport { timeout: true, .. }),
        "{err:?}"
    );
    assert!(err.is_transient());
    assert!(
        took < Duration::from_millis(500),
        "ends before the deadline: {took:?}"
    );
    assert!(
        took >= Duration::from_millis(300),
        "but not much earlier: {took:?}"
    );
}

#[test]
fn the_request_timeout_applies_when_the_deadline_is_further() {
    let fake = FakeServer::start(|_| FakeResponse::hang());
    let http = HttpClient::new(
        &ProxyConfig::default(),
        Duration::from_secs(5),
        Duration::from_millis(300),
    );
    let started = Instant::now();
    let err = block_on(http.send(
        Route::Internet,
        Method::GET,
        &Url::parse(&fake.url()).unwrap(),
        &[],
        None,
        Deadline::after(Duration::from_secs(30)),
    ))
    .unwrap_err();
    assert!(
        matches!(err, HttpError::Transport { timeout: true, .. }),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn nothing_is_sent_once_the_deadline_has_passed() {
    let fake = FakeServer::start(|_| FakeResponse::new(200, "late"));
    let err = block_on(client(ProxyConfig::default()).send(
        Route::Internet,
        Method::GET,
        &Url::parse(&fake.url()).unwrap(),
        &[],
        None,
        Deadline::after(Duration::ZERO),
    ))
    .unwrap_err();
    assert!(
        matches!(err, HttpError::DeadlinePassed(ref h) if h == "127.0.0.1"),
        "{err:?}"
    );
    assert!(!err.is_transient());
    assert!(fake.requests().is_empty());
}

#[test]
fn link_local_addresses_are_recognised() {
    for ip in [
        "169.254.169.254",
        "169.254.0.1",
        "fe80::1",
        "fd00:ec2::254",
        "fd00:ec2::23",
    ] {
        assert!(is_link_local(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
    for ip in ["10.0.0.1", "127.0.0.1", "::1", "fd00::1", "8.8.8.8"] {
        assert!(!is_link_local(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
    assert!(is_link_local_url(
        &Url::parse("http://169.254.169.254/latest").unwrap()
    ));
    assert!(is_link_local_url(
        &Url::parse("http://[fe80::1]/x").unwrap()
    ));
    assert!(!is_link_local_url(
        &Url::parse("http://metadata.google.internal/x").unwrap()
    ));
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_and_not_retried() {
    use kcp_plugin::http::Call;
    // The test CA is in no trust store this process reads, so the handshake must fail.
    let ca = TestCa::new();
    let server = TlsFakeServer::start(&ca, &["127.0.0.1", "localhost"], |_| {
        FakeResponse::json("{}")
    });
    let http = client(ProxyConfig::default());
    let url = Url::parse(&format!("{}/token", server.https_url())).unwrap();
    let call = Call::get(Route::Internet, &url, "token");
    let err =
        block_on(http.send_retrying(call, Deadline::after(Duration::from_secs(10)))).unwrap_err();
    assert_eq!(err.attempts, 1, "{err}");
    assert!(
        matches!(err.error, HttpError::Tls { .. }),
        "{:?}",
        err.error
    );
    assert!(!err.error.is_transient());
    assert!(err.to_string().contains("SSL_CERT_FILE"), "{err}");
    assert!(server.requests().is_empty(), "nothing reached the server");
}

#[test]
fn timeouts_say_so_once() {
    let timeout = |reason: &str| HttpError::Transport {
        host: "h".into(),
        reason: reason.into(),
        timeout: true,
    };
    assert_eq!(
        timeout("connection closed").describe(),
        "request to h failed: connection closed (timed out)"
    );
    assert_eq!(
        timeout("operation timed out").describe(),
        "request to h failed: operation timed out"
    );
    let refused = HttpError::Transport {
        host: "h".into(),
        reason: "connection refused".into(),
        timeout: false,
    };
    assert_eq!(refused.describe(), refused.to_string());
}

#[test]
fn header_values_keeps_every_value_in_order() {
    let response = HttpResponse {
        status: 401,
        body: Vec::new(),
        headers: vec![
            ("www-authenticate".into(), "Basic realm=\"x\"".into()),
            ("x-other".into(), "y".into()),
            ("WWW-Authenticate".into(), "Bearer realm=\"r\"".into()),
        ],
    };
    assert_eq!(
        response.header_values("www-authenticate"),
        vec!["Basic realm=\"x\"", "Bearer realm=\"r\""]
    );
    assert_eq!(
        response.header("WWW-authenticate"),
        Some("Basic realm=\"x\"")
    );
    assert!(response.header_values("retry-after").is_empty());
}

#[test]
fn the_date_header_is_read_as_the_servers_clock() {
    let with_date = |value: &str| HttpResponse {
        status: 200,
        body: Vec::new(),
        headers: vec![("date".into(), value.into())],
    };
    assert_eq!(
        with_date("Sun, 06 Nov 1994 08:49:37 GMT").date(),
        Some(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777))
    );
    assert_eq!(with_date("yesterday").date(), None);
    let none = HttpResponse {
        status: 200,
        body: Vec::new(),
        headers: Vec::new(),
    };
    assert_eq!(none.date(), None);
}
