//! The default flow: the node service account's token from the metadata server.

use std::time::{Duration, Instant};

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};

use crate::support::*;

const IMAGE: &str = "us-docker.pkg.dev/my-project/repo/app";

#[test]
fn answers_every_api_version_with_the_node_token() {
    let md = node_metadata(r#","expires_in":3599"#);
    let p = plugin_with_metadata(&md);
    for v in ApiVersion::ALL {
        let out = p.request(v, IMAGE);
        // 3599 s of life minus the 120 s margin.
        assert_eq!(
            out.stdout(),
            expected(
                v,
                "Registry",
                Some("57m59s"),
                &google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN)
            )
        );
        let ok = out.accepted();
        assert_eq!(ok.api_version, v);
        assert_eq!(out.stderr(), "", "nothing on stderr by default on success");
    }
    let requests = md.requests();
    assert_eq!(
        requests.len(),
        3,
        "one metadata call per run, no /email: {requests:?}"
    );
    for r in &requests {
        assert_eq!((r.method.as_str(), r.target.as_str()), ("GET", TOKEN_PATH));
        assert_eq!(r.header("metadata-flavor"), Some("Google"));
        assert!(r.body.is_empty());
    }
}

/// Exactly one auth key of the answer matches each image, as the kubelet matches (its keyring
/// hands the runtime every matching entry: two would mean the same token tried twice, and a
/// failed pull retried and reported twice). Upstream answers the four globs plus the image's
/// registry, so `eu.gcr.io` and `*-docker.pkg.dev` images got two; here the registry is added
/// only when no glob covers the image. Checked with both the kubelet's keyring lookup
/// (`kcp_kubelet::matching`) and the rule written out in the test.
#[test]
fn exactly_one_auth_key_matches_each_image() {
    let md = node_metadata(r#","expires_in":3599"#);
    let p = plugin_with_metadata(&md);
    // (image, the one key that matches it, the keys of the answer besides the four globs)
    let cases: &[(&str, &str, &[&str])] = &[
        ("gcr.io/p/app", "gcr.io", &[]),
        ("eu.gcr.io/p/app", "*.gcr.io", &[]),
        ("us.gcr.io/p/app", "*.gcr.io", &[]),
        ("asia.gcr.io/p/app", "*.gcr.io", &[]),
        ("marketplace.gcr.io/google/ubuntu2004", "*.gcr.io", &[]),
        ("us-docker.pkg.dev/p/r/app", "*.pkg.dev", &[]),
        ("europe-west1-docker.pkg.dev/p/r/app", "*.pkg.dev", &[]),
        (
            "us-central1-docker.pkg.dev/p/r/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "*.pkg.dev",
            &[],
        ),
        (
            "asia-northeast1-docker.pkg.dev/p/r/app:v1",
            "*.pkg.dev",
            &[],
        ),
        (
            "container.cloud.google.com/x/app",
            "container.cloud.google.com",
            &[],
        ),
        // One label per glob, as the kubelet matches: only the image's own host covers these.
        ("a.b.gcr.io/p/app", "a.b.gcr.io", &["a.b.gcr.io"]),
        ("gcr.io:443/p/app", "gcr.io:443", &["gcr.io:443"]),
        (
            "registry.k8s.io/pause",
            "registry.k8s.io",
            &["registry.k8s.io"],
        ),
        ("localhost:5000/app", "localhost:5000", &["localhost:5000"]),
        ("docker.io/library/nginx", "docker.io", &["docker.io"]),
    ];
    for (image, want, extra) in cases {
        let out = p.request(ApiVersion::V1, image);
        let ok = out.accepted();
        let mut keys: Vec<&str> = GOOGLE_KEYS.iter().chain(extra.iter()).copied().collect();
        keys.sort_unstable();
        assert_eq!(
            ok.auth.keys().map(String::as_str).collect::<Vec<_>>(),
            keys,
            "{image}"
        );
        assert_eq!(
            ok.keys_for_image(image),
            [*want],
            "{image}: the kubelet's keyring"
        );
        let matching: Vec<&str> = ok
            .auth
            .keys()
            .map(String::as_str)
            .filter(|k| kubelet_matches(k, image))
            .collect();
        assert_eq!(matching, [*want], "{image}: the rule written out");
        assert!(
            ok.auth
                .values()
                .all(|(u, pw)| u == "_token" && pw == NODE_TOKEN)
        );
    }
}

#[test]
fn the_metadata_host_flag_wins_over_the_environment() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin()
        .env("GCE_METADATA_HOST", format!("127.0.0.1:{}", closed_port()))
        .args([format!("--metadata-host={}", md.addr())])
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(md.requests().len(), 1);
}

#[test]
fn proxy_variables_never_capture_metadata_traffic() {
    let proxy = FakeServer::start(|_| FakeResponse::new(502, "proxy says no"));
    let md = node_metadata(r#","expires_in":3599"#);
    let mut p = plugin_with_metadata(&md);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        p = p.env(var, proxy.url());
    }
    let out = p.request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("57m59s"),
            &google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN)
        )
    );
    assert!(
        proxy.requests().is_empty(),
        "the proxy saw {:?}",
        proxy.requests()
    );
    assert_eq!(md.requests().len(), 1);
}

#[test]
fn transient_errors_are_retried() {
    for first in [
        FakeResponse::new(500, "backend error"),
        FakeResponse::new(503, "unavailable"),
        FakeResponse::new(429, "slow down"),
        FakeResponse::drop_connection(),
    ] {
        let md = metadata_fake(vec![(
            "instance/service-accounts/default/token",
            vec![
                first,
                FakeResponse::json(format!(
                    r#"{{"access_token":"{NODE_TOKEN}","expires_in":600}}"#
                )),
            ],
        )]);
        let out = plugin_with_metadata(&md).request(ApiVersion::V1beta1, IMAGE);
        assert_eq!(
            out.stdout(),
            expected(
                ApiVersion::V1beta1,
                "Registry",
                Some("8m0s"),
                &google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN)
            )
        );
        out.accepted();
        assert_eq!(md.requests().len(), 2);
    }
}

#[test]
fn permanent_errors_fail_at_once_with_one_clear_line() {
    let cases = [
        (
            FakeResponse::new(404, "Not Found"),
            "no default service account token (HTTP 404)",
        ),
        (FakeResponse::new(403, "Forbidden"), "access scopes"),
        (
            FakeResponse::new(400, "bad request"),
            "answered HTTP 400: bad request",
        ),
    ];
    for (response, want) in cases {
        let md = metadata_fake(vec![(
            "instance/service-accounts/default/token",
            vec![response],
        )]);
        let line = plugin_with_metadata(&md)
            .request(ApiVersion::V1, IMAGE)
            .rejected();
        assert!(line.contains(want), "{line}");
        assert!(
            line.contains(&format!("metadata server at {}", md.addr())),
            "{line}"
        );
        assert_eq!(md.requests().len(), 1, "4xx is not retried");
    }
}

#[test]
fn persistent_5xx_gives_up_after_bounded_attempts() {
    let md = metadata_fake(vec![(
        "instance/service-accounts/default/token",
        vec![FakeResponse::new(503, "down")],
    )]);
    let line = plugin_with_metadata(&md)
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("HTTP 503") && line.contains("(after 4 attempts)"),
        "{line}"
    );
    assert_eq!(md.requests().len(), 4);
}

#[test]
fn a_refused_connection_names_the_metadata_host() {
    let host = format!("127.0.0.1:{}", closed_port());
    let out = plugin()
        .env("GCE_METADATA_HOST", &host)
        .request(ApiVersion::V1, IMAGE);
    let line = out.rejected();
    assert!(
        line.contains(&format!("metadata server at {host}")),
        "{line}"
    );
    assert!(line.to_lowercase().contains("refused"), "{line}");
    assert!(line.contains("GCE_METADATA_HOST"), "{line}");
    assert_eq!(out.exec.exit_code, Some(1));
}

#[test]
fn a_hanging_metadata_server_is_cut_off_by_the_deadline() {
    let md = metadata_fake(vec![(
        "instance/service-accounts/default/token",
        vec![FakeResponse::hang()],
    )]);
    let started = Instant::now();
    let out = plugin_with_metadata(&md)
        .args(["--deadline=2s"])
        .request(ApiVersion::V1, IMAGE);
    let line = out.rejected();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    assert!(line.contains("metadata server at"), "{line}");
    assert!(
        line.contains("timed out") || line.contains("deadline"),
        "{line}"
    );
}

#[test]
fn a_slow_but_timely_answer_is_waited_for() {
    let md = FakeServer::start(|req| {
        std::thread::sleep(Duration::from_millis(700));
        if req.path() == TOKEN_PATH {
            FakeResponse::json(format!(
                r#"{{"access_token":"{NODE_TOKEN}","expires_in":3599}}"#
            ))
            .header("Metadata-Flavor", "Google")
        } else {
            FakeResponse::new(404, "")
        }
    });
    let out = plugin_with_metadata(&md).request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(md.requests().len(), 1);
}

#[test]
fn malformed_answers_fail_without_echoing_the_body() {
    let leak = "ya29.leaked-token-in-a-broken-body";
    let cases = [
        (format!("not json {leak}"), "is not valid JSON"),
        (format!(r#"{{"token":"{leak}"}}"#), "has no access_token"),
        (
            r#"{"access_token":""}"#.to_owned(),
            "has an empty access_token",
        ),
        (
            format!(r#"{{"access_token":"{leak}","expires_in":"{leak}"}}"#),
            "bad expires_in",
        ),
    ];
    for (body, want) in cases {
        let md = metadata_fake(vec![(
            "instance/service-accounts/default/token",
            vec![FakeResponse::json(body)],
        )]);
        let line = plugin_with_metadata(&md)
            .request(ApiVersion::V1, IMAGE)
            .rejected();
        assert!(line.contains(want), "{line}");
        let verbose = plugin_with_metadata(&md)
            .args(["--v=6"])
            .request(ApiVersion::V1, IMAGE);
        assert_eq!(verbose.exec.exit_code, Some(1));
        assert!(!verbose.stderr().contains(leak), "{}", verbose.stderr());
        assert!(verbose.stdout().is_empty());
    }
}

#[test]
fn cache_duration_follows_expires_in() {
    // (expires_in fragment, cacheDuration): unknown or nearly expired → "0s".
    let cases = [
        ("", "0s"),
        (r#","expires_in":null"#, "0s"),
        (r#","expires_in":60"#, "0s"),
        (r#","expires_in":120"#, "0s"),
        (r#","expires_in":301"#, "3m1s"),
        (r#","expires_in":"3600""#, "58m0s"),
    ];
    for (fragment, want) in cases {
        let md = node_metadata(fragment);
        let out = plugin_with_metadata(&md).request(ApiVersion::V1, IMAGE);
        assert_eq!(
            out.stdout(),
            expected(
                ApiVersion::V1,
                "Registry",
                Some(want),
                &google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN)
            ),
            "{fragment}"
        );
        out.accepted();
    }
}

#[test]
fn kube_sidecar_cache_variables_are_honoured() {
    let md = node_metadata(r#","expires_in":3599"#);
    let auth = google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN);
    let cases = [
        ("image", "10m", "Image", "10m0s"),
        ("registry", "0s", "Registry", "0s"),
        ("global", "90s", "Global", "1m30s"),
        // Never past the token's end (3599 s − 120 s).
        ("Registry", "2h", "Registry", "57m59s"),
        ("image", "-5m", "Image", "0s"),
    ];
    for (kind, duration, want_kind, want_duration) in cases {
        let out = plugin_with_metadata(&md)
            .env("KUBE_SIDECAR_CACHE_TYPE", kind)
            .env("KUBE_SIDECAR_CACHE_DURATION", duration)
            .request(ApiVersion::V1, IMAGE);
        assert_eq!(
            out.stdout(),
            expected(ApiVersion::V1, want_kind, Some(want_duration), &auth)
        );
        out.accepted();
    }
    let line = plugin_with_metadata(&md)
        .env("KUBE_SIDECAR_CACHE_TYPE", "pod")
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("KUBE_SIDECAR_CACHE_TYPE: Unknown cache key \"pod\""),
        "{line}"
    );
    let out = plugin_with_metadata(&md)
        .env("KUBE_SIDECAR_CACHE_DURATION", "soon")
        .request(ApiVersion::V1, IMAGE);
    let line = out.rejected();
    assert!(
        line.contains("KUBE_SIDECAR_CACHE_DURATION") && line.contains("soon"),
        "{line}"
    );
    assert_eq!(out.exec.exit_code, Some(2));
}

#[test]
fn oauth2accesstoken_username_by_flag() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin_with_metadata(&md)
        .args(["--username=oauth2accesstoken"])
        .request(ApiVersion::V1, "gcr.io/p/app");
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("57m59s"),
            &google_auth("gcr.io", "oauth2accesstoken", NODE_TOKEN)
        )
    );
    out.accepted();
}

#[test]
fn the_token_never_reaches_stderr_even_at_v6() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin_with_metadata(&md)
        .args(["--v=6"])
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    let stderr = out.stderr();
    assert!(
        stderr.contains("access token obtained"),
        "--v=6 logs the flow: {stderr}"
    );
    assert!(!stderr.contains(NODE_TOKEN), "{stderr}");
    assert!(!stderr.contains("ya29"), "{stderr}");
}

#[test]
fn strict_hosts_refuse_non_google_registries_before_any_token_is_fetched() {
    let md = node_metadata(r#","expires_in":3599"#);
    for p in [
        plugin_with_metadata(&md).args(["--strict-hosts"]),
        plugin_with_metadata(&md).env("GCR_STRICT_HOSTS", "true"),
    ] {
        let line = p
            .request(ApiVersion::V1, "registry.example.com/team/app")
            .rejected();
        assert!(
            line.contains("registry.example.com is not a Google registry"),
            "{line}"
        );
        // A look-alike with a Google name inside it is not Google either.
        let line = p
            .request(ApiVersion::V1, "gcr.io.evil.example/app")
            .rejected();
        assert!(line.contains("is not a Google registry"), "{line}");
    }
    assert!(
        md.requests().is_empty(),
        "no token was fetched for a refused host"
    );
    // Google's own registries still work in strict mode.
    let ok = plugin_with_metadata(&md)
        .args(["--strict-hosts"])
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(ok.keys_for_image(IMAGE), ["*.pkg.dev"]);
}
