//! Every refusal made before anything is sent: images no entry matches (look-alike hosts among
//! them), requests without a usable service-account token, and registries files the provider
//! will not start with. Each is one stderr line saying what to set, and the token endpoint hears
//! nothing.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::{TempDir, unix_now};
use serde_json::json;
use support::*;

const ACCESS_TOKEN: &str = "kc-access-token-plan-0123456789";

/// Entries for `quay.io` and `registry.acme.test:5000`, both exchanging at `fake`.
fn two_entries(fake: &FakeServer) -> String {
    format!(
        "registries:\n  - host: quay.io\n    protocol: token-exchange\n    endpoint: {url}{TOKEN_PATH}\n    username: oauth2\n  - host: registry.acme.test:5000\n    protocol: token-exchange\n    endpoint: {url}{TOKEN_PATH}\n    username: oauth2\n",
        url = fake.url()
    )
}

fn ok_endpoint() -> FakeServer {
    token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":600}}"#
    )))
}

#[test]
fn look_alike_hosts_get_nothing_and_send_nothing() {
    let fake = ok_endpoint();
    let (p, _dir) = plugin(&two_entries(&fake));
    let token = sa_token();
    for image in [
        "quay.io.evil.test/acme/app",
        "evilquay.io/acme/app",
        "quay.io:8443/acme/app",
        "evil.test/quay.io/app",
        "registry.acme.test/app",
        "registry.acme.test:5001/app",
        "sub.registry.acme.test:5000/app",
        "docker.io/library/nginx",
    ] {
        let line = p
            .request_with_token(ApiVersion::V1, image, Some(&token), &Default::default())
            .rejected();
        assert!(
            line.contains(&format!(
                "no entry of the registries file {} matches the image {image} (hosts: quay.io, registry.acme.test:5000)",
                _dir.path().join("registries.yaml").display()
            )) && line.ends_with("nothing was sent"),
            "{image}: {line}"
        );
    }
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
    // The real hosts are answered, each under its own key.
    for (image, key) in [
        ("quay.io/acme/app", "quay.io"),
        ("registry.acme.test:5000/app", "registry.acme.test:5000"),
    ] {
        let out = p.request_with_token(ApiVersion::V1, image, Some(&token), &Default::default());
        out.accepted();
        assert_eq!(
            out.stdout(),
            expected(ApiVersion::V1, "5m0s", key, "oauth2", ACCESS_TOKEN)
        );
    }
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn the_first_matching_entry_answers_and_globs_match_as_the_kubelet_matches() {
    let first = ok_endpoint();
    let second = token_endpoint(FakeResponse::json(
        r#"{"access_token":"second-entry-token-0123456789","expires_in":600}"#,
    ));
    let yaml = format!(
        "registries:\n  - host: '*.acme.test'\n    protocol: token-exchange\n    endpoint: {}{TOKEN_PATH}\n    username: first\n  - host: eu.acme.test\n    protocol: token-exchange\n    endpoint: {}{TOKEN_PATH}\n    username: second\n",
        first.url(),
        second.url()
    );
    let (p, _dir) = plugin(&yaml);
    let out = p.request_with_token(
        ApiVersion::V1,
        "eu.acme.test/app",
        Some(&sa_token()),
        &Default::default(),
    );
    out.accepted();
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "5m0s",
            "eu.acme.test",
            "first",
            ACCESS_TOKEN
        )
    );
    assert!(second.requests().is_empty());
    // One label per `*`: a deeper host is not covered.
    let line = p
        .request_with_token(
            ApiVersion::V1,
            "a.eu.acme.test/app",
            Some(&sa_token()),
            &Default::default(),
        )
        .rejected();
    assert!(line.contains("no entry of the registries file"), "{line}");
}

#[test]
fn a_request_without_a_service_account_token_says_what_to_set() {
    let fake = ok_endpoint();
    let (p, _dir) = plugin(&two_entries(&fake));
    let line = p.request(ApiVersion::V1, "quay.io/acme/app").rejected();
    for word in [
        "the kubelet sent no service-account token for the image quay.io/acme/app (registries[0] (host \"quay.io\", protocol token-exchange))",
        "tokenAttributes",
        "serviceAccountTokenAudience",
        "requireServiceAccount: true",
        "request-serviceaccounts-token-audience",
        "nothing was sent",
    ] {
        assert!(line.contains(word), "{word}: {line}");
    }
    for version in [ApiVersion::V1beta1, ApiVersion::V1alpha1] {
        let line = p
            .request_with_token(
                version,
                "quay.io/acme/app",
                Some(&sa_token()),
                &Default::default(),
            )
            .rejected();
        assert!(
            line.contains(&format!(
                "the request for the image quay.io/acme/app is {version}, which carries no service-account token"
            )) && line.contains("set apiVersion credentialprovider.kubelet.k8s.io/v1 and tokenAttributes"),
            "{version}: {line}"
        );
    }
    assert!(fake.requests().is_empty());
}

#[test]
fn an_expired_or_malformed_service_account_token_is_refused_before_sending() {
    let fake = ok_endpoint();
    let (p, _dir) = plugin(&two_entries(&fake));
    let now = unix_now();
    let cases = [
        (
            jwt(&json!({"aud": [AUDIENCE], "exp": now - 600})),
            "the service-account token expired",
        ),
        (
            jwt(&json!({"aud": [AUDIENCE]})),
            "the service-account token is not a JWT with an exp claim",
        ),
        (
            jwt(&json!({"aud": [AUDIENCE], "exp": "tomorrow"})),
            "the service-account token is not a JWT with an exp claim",
        ),
        (
            "not-a-jwt-at-all-but-long-enough".to_owned(),
            "the service-account token is not a JWT with an exp claim",
        ),
    ];
    for (token, says) in cases {
        let line = p
            .request_with_token(
                ApiVersion::V1,
                "quay.io/acme/app",
                Some(&token),
                &Default::default(),
            )
            .rejected();
        assert!(
            line.contains(says)
                && line.contains("for the image quay.io/acme/app (registries[0] (host \"quay.io\", protocol token-exchange)); nothing was sent"),
            "{says}: {line}"
        );
    }
    assert!(fake.requests().is_empty());
}

#[test]
fn a_bad_registries_file_stops_the_provider_before_the_request() {
    let dir = TempDir::new("oidc-bad-config");
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let cases = [
        (
            file(
                "unknown.yaml",
                "registries:\n  - host: quay.io\n    protocol: quay-robot\n    robotAcount: acme+puller\n",
            ),
            r#"registries[0] (host "quay.io"): unknown field "robotAcount", expected "robotAccount" or "robotAccountAnnotation""#,
        ),
        (
            file(
                "http.yaml",
                "registries:\n  - host: registry.acme.test\n    protocol: token-exchange\n    endpoint: http://sso.acme.test/token\n    username: oauth2\n",
            ),
            r#"registries[0] (host "registry.acme.test"): endpoint "http://sso.acme.test/token" uses plain http"#,
        ),
        (
            file(
                "glob.yaml",
                "registries:\n  - host: 'quay.[io'\n    protocol: passthrough\n    username: jwt\n",
            ),
            r#"registries[0] (host "quay.[io"): host "quay.[io" is not a valid matchImages pattern: parse "https://quay.[io": invalid IP-literal"#,
        ),
        (
            file(
                "path.yaml",
                "registries:\n  - host: quay.io/acme\n    protocol: passthrough\n    username: jwt\n",
            ),
            r#"host "quay.io/acme" has a path"#,
        ),
        (
            file(
                "scheme.yaml",
                "{\"registries\": [{\"host\": \"https://quay.io\", \"protocol\": \"passthrough\", \"username\": \"jwt\"}]}",
            ),
            r#"host "https://quay.io" has a scheme"#,
        ),
        (
            file(
                "protocol.yaml",
                "registries:\n  - host: quay.io\n    protocol: quay\n",
            ),
            r#"registries[0] (host "quay.io"): unknown protocol "quay": use one of passthrough, token-exchange, jfrog, quay-robot, cloudsmith, chainguard, ibm-iam"#,
        ),
        (
            file(
                "missing.yaml",
                "registries:\n  - host: acme.jfrog.io\n    protocol: jfrog\n",
            ),
            r#"registries[0] (host "acme.jfrog.io"): missing field "providerName""#,
        ),
        (
            file(
                "type.yaml",
                "registries:\n  - host: acme.jfrog.io\n    protocol: jfrog\n    providerName: 5\n",
            ),
            r#"registries[0] (host "acme.jfrog.io"): field "providerName" must be a string, got a number"#,
        ),
        (
            file(
                "dup.yaml",
                "registries:\n  - host: quay.io\n    protocol: passthrough\n    username: jwt\n  - host: QUAY.io\n    protocol: passthrough\n    username: jwt\n",
            ),
            r#"registries[1] (host "QUAY.io") repeats the host of registries[0]"#,
        ),
        (
            file(
                "repeated-key.yaml",
                "registries:\n  - host: quay.io\n    host: docker.io\n    protocol: passthrough\n    username: jwt\n",
            ),
            r#"key "host" already set in map"#,
        ),
        (
            file("empty.yaml", ""),
            "is empty: list at least one registry",
        ),
        (file("none.yaml", "registries: []\n"), "registries is empty"),
        (
            file("top.yaml", "registries:\n  - host: quay.io\nextra: 1\n"),
            r#"unknown field "extra" at the top level"#,
        ),
        (file("json.json", "{\"registries\": ["), "EOF while parsing"),
        (
            dir.path().join("absent.yaml").display().to_string(),
            "cannot be read",
        ),
    ];
    for (path, says) in cases {
        let out = base()
            .args([format!("--config={path}")])
            .request_with_token(
                ApiVersion::V1,
                "quay.io/acme/app",
                Some(&sa_token()),
                &Default::default(),
            );
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(2), "{path}: {line}");
        assert!(
            line.contains(&format!("registries file {path}: ")) && line.contains(says),
            "{path}: {line:?} lacks {says:?}"
        );
    }
    // The environment variable names the file too; without either, the flag is asked for.
    let out = base()
        .env(
            "OIDC_CREDENTIAL_PROVIDER_CONFIG",
            dir.path().join("absent.yaml").display().to_string(),
        )
        .request(ApiVersion::V1, "quay.io/acme/app");
    assert_eq!(out.exec.exit_code, Some(2));
    assert!(out.rejected().contains("absent.yaml: cannot be read"));
    let out = base().request(ApiVersion::V1, "quay.io/acme/app");
    assert_eq!(out.exec.exit_code, Some(2));
    assert!(out.rejected().contains("--config <FILE>"));
}
