//! `token-exchange` (RFC 8693) against a Keycloak-style fake token endpoint on 127.0.0.1: the
//! exact request (method, path, headers, form), client authentication, what the answer becomes
//! (user, password, `cacheDuration`), and the refusals an operator meets, each one stderr line.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::unix_now;
use serde_json::json;
use support::*;

const IMAGE: &str = "registry.acme.test/team/app:1.0";
const ACCESS_TOKEN: &str = "kc-access-token-0123456789abcdef";
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn exchanges_the_token_with_the_configured_parameters_and_answers_for_its_life() {
    let fake = token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":1800,"token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}}"#
    )));
    let (p, _dir) = plugin(&exchange_config(
        &fake,
        "    audience: harbor\n    scope: repository:pull\n    resource: https://registry.acme.test\n    requestedTokenType: urn:ietf:params:oauth:token-type:access_token\n",
    ));
    let token = sa_token();
    let out = p.request_with_token(ApiVersion::V1, IMAGE, Some(&token), &Default::default());
    out.accepted();
    // 30 minutes of life, minus the 5-minute margin.
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        1500,
        "registry.acme.test",
        "oauth2",
        ACCESS_TOKEN,
    );
    assert_eq!(out.stderr(), "");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", TOKEN_PATH));
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(
        r.header("authorization"),
        None,
        "a request without a client"
    );
    assert_eq!(
        form(r),
        pairs(&[
            ("grant_type", GRANT),
            ("resource", "https://registry.acme.test"),
            ("audience", "harbor"),
            ("scope", "repository:pull"),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token"
            ),
            ("subject_token", &token),
            ("subject_token_type", JWT_TYPE),
        ])
    );
}

#[test]
fn a_confidential_client_authenticates_with_http_basic_and_its_secret_never_shows() {
    let fake = token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":600}}"#
    )));
    let dir = kcp_testkit::TempDir::new("oidc-client-secret");
    let secret_file = dir.path().join("client-secret");
    // Characters form-encoding changes, and the newline a file usually ends with.
    let secret = "s3cr3t:client/secret+value";
    std::fs::write(&secret_file, format!("{secret}\n")).unwrap();
    let (p, _config) = plugin(&exchange_config(
        &fake,
        &format!(
            "    clientId: kubelet pull\n    clientSecretFile: {}\n    subjectTokenType: urn:ietf:params:oauth:token-type:id_token\n",
            secret_file.display()
        ),
    ));
    let p = p.secret(secret);
    let token = sa_token();
    // At the most verbose level: every run's stderr is scanned for the SA token, the client
    // secret and the issued token (kcp_testkit::secrets).
    let out = p.clone().args(["--v=10"]).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert!(
        out.stderr().lines().count() > 3,
        "--v=10 logs: {}",
        out.stderr()
    );
    let r = &fake.requests()[0];
    // base64("kubelet+pull:s3cr3t%3Aclient%2Fsecret%2Bvalue")
    assert_eq!(
        r.header("authorization"),
        Some("Basic a3ViZWxldCtwdWxsOnMzY3IzdCUzQWNsaWVudCUyRnNlY3JldCUyQnZhbHVl")
    );
    assert_eq!(
        form(r),
        pairs(&[
            ("grant_type", GRANT),
            ("subject_token", &token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token"
            ),
        ]),
        "no client_id in the form when the client authenticates"
    );
    // A refusal at --v=10 quotes no secret either.
    let refusing = token_endpoint(FakeResponse::new(
        401,
        r#"{"error":"unauthorized_client","error_description":"Invalid client or Invalid client credentials"}"#,
    ));
    let (p, _config2) = plugin(&exchange_config(
        &refusing,
        &format!(
            "    clientId: kubelet\n    clientSecretFile: {}\n",
            secret_file.display()
        ),
    ));
    let out = p.secret(secret).args(["--v=10"]).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&token),
        &Default::default(),
    );
    assert_eq!(out.exec.exit_code, Some(1));
    assert!(out.stdout().is_empty());
    let last = out.stderr().lines().last().unwrap().to_owned();
    assert!(
        last.contains(r#"answered HTTP 401: error "unauthorized_client" ("Invalid client or Invalid client credentials")"#)
            && last.contains("check clientId and the secret in clientSecretFile"),
        "{last}"
    );
}

#[test]
fn a_public_client_sends_its_id_in_the_form() {
    let fake = token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":600}}"#
    )));
    let (p, _dir) = plugin(&exchange_config(&fake, "    clientId: kubelet\n"));
    let token = sa_token();
    p.request_with_token(ApiVersion::V1, IMAGE, Some(&token), &Default::default())
        .accepted();
    let r = &fake.requests()[0];
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        form(r),
        pairs(&[
            ("grant_type", GRANT),
            ("subject_token", &token),
            ("subject_token_type", JWT_TYPE),
            ("client_id", "kubelet"),
        ])
    );
}

#[test]
fn an_oauth_error_is_quoted_in_one_line_and_not_retried() {
    let (out, fake) = exchange_once(
        FakeResponse::new(
            400,
            r#"{"error":"invalid_grant","error_description":"subject token issuer not trusted"}"#,
        ),
        "",
        IMAGE,
        &sa_token(),
    );
    let line = out.rejected();
    assert!(
        line.contains(
            r#"exchanging the service-account token for the image registry.acme.test/team/app:1.0 (registries[0] (host "registry.acme.test", protocol token-exchange)) failed: 127.0.0.1 answered HTTP 400: error "invalid_grant" ("subject token issuer not trusted"); check that the token endpoint trusts the cluster's service-account issuer"#
        ),
        "{line}"
    );
    assert_eq!(fake.requests().len(), 1, "a 400 is not retried");
}

#[test]
fn an_answer_without_a_token_is_an_error_naming_the_field() {
    for (body, says) in [
        (
            r#"{"token_type":"Bearer","expires_in":60}"#,
            r#"the answer has no "access_token" (fields: "expires_in", "token_type")"#,
        ),
        (
            r#"{"access_token":""}"#,
            r#"the answer's "access_token" is empty"#,
        ),
        (
            r#"{"access_token":42}"#,
            r#"the answer's "access_token" is not a string"#,
        ),
        ("[]", "the answer is not a JSON object"),
        ("<html>", "the answer is not JSON"),
    ] {
        let (out, _fake) = exchange_once(FakeResponse::json(body), "", IMAGE, &sa_token());
        let line = out.rejected();
        assert!(line.contains(says), "{body}: {line}");
    }
}

#[test]
fn cache_duration_is_capped_by_the_service_account_token_and_a_huge_expires_in() {
    let now = unix_now();
    // A service-account token with 20 minutes left: an hour-long credential is cached 15 minutes.
    let short =
        jwt(&json!({"aud": [AUDIENCE], "exp": now + 1200, "sub": "system:serviceaccount:a:b"}));
    let (out, _fake) = exchange_once(
        FakeResponse::json(format!(
            r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":3600}}"#
        )),
        "",
        IMAGE,
        &short,
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(now + 1200) - 300,
        "registry.acme.test",
        "oauth2",
        ACCESS_TOKEN,
    );

    // A huge expires_in is believed for 12 hours at most (the SA token here lives two days).
    let long = jwt(&json!({"aud": [AUDIENCE], "exp": now + 48 * 3600}));
    let (out, _fake) = exchange_once(
        FakeResponse::json(format!(
            r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":99999999999999}}"#
        )),
        "",
        IMAGE,
        &long,
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        12 * 3600 - 300,
        "registry.acme.test",
        "oauth2",
        ACCESS_TOKEN,
    );
}

#[test]
fn a_credential_without_a_stated_life_is_cached_briefly_or_for_its_jwt_exp() {
    let now = unix_now();
    // No expires_in, an opaque token: the documented 5-minute default.
    let (out, _fake) = exchange_once(
        FakeResponse::json(format!(r#"{{"access_token":"{ACCESS_TOKEN}"}}"#)),
        "",
        IMAGE,
        &sa_token(),
    );
    out.accepted();
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "5m0s",
            "registry.acme.test",
            "oauth2",
            ACCESS_TOKEN
        )
    );
    // No expires_in, a JWT access token: its own exp (40 minutes) counts.
    let access = jwt(&json!({"exp": now + 2400, "scope": "pull"}));
    let (out, _fake) = exchange_once(
        FakeResponse::json(format!(r#"{{"access_token":"{access}"}}"#)),
        "",
        IMAGE,
        &sa_token(),
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(now + 2400) - 300,
        "registry.acme.test",
        "oauth2",
        &access,
    );
}

#[test]
fn an_answer_that_echoes_the_service_account_token_is_refused() {
    let token = sa_token();
    let (out, _fake) = exchange_once(
        FakeResponse::json(format!(r#"{{"access_token":"{token}","expires_in":600}}"#)),
        "",
        IMAGE,
        &token,
    );
    let line = out.rejected();
    assert!(
        line.contains("answered with the service-account token itself"),
        "{line}"
    );
}

#[test]
fn an_unreadable_client_secret_file_fails_before_anything_is_sent() {
    let fake = token_endpoint(FakeResponse::json(r#"{"access_token":"x"}"#));
    let (p, _dir) = plugin(&exchange_config(
        &fake,
        "    clientId: kubelet\n    clientSecretFile: /nonexistent/client-secret\n",
    ));
    let out = p.request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&sa_token()),
        &Default::default(),
    );
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(1));
    assert!(
        line.contains(
            "reading the client secret file /nonexistent/client-secret (clientSecretFile)"
        ),
        "{line}"
    );
    assert!(fake.requests().is_empty());
}

#[test]
fn retries_a_throttled_endpoint_after_its_retry_after() {
    let fake = scripted(vec![(
        TOKEN_PATH,
        vec![
            FakeResponse::new(429, r#"{"error":"slow_down"}"#).header("retry-after", "1"),
            FakeResponse::json(format!(
                r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":600}}"#
            )),
        ],
    )]);
    let (p, _dir) = plugin(&exchange_config(&fake, ""));
    let out = p.request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&sa_token()),
        &Default::default(),
    );
    out.accepted();
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry sends the same form"
    );
}
