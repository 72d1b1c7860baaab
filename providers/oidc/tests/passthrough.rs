//! `passthrough`: the service-account token itself is the password, cached for the token's own
//! life; nothing is sent anywhere.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::unix_now;
use serde_json::json;
use support::*;

const CONFIG: &str =
    "registries:\n  - host: harbor.acme.test\n    protocol: passthrough\n    username: jwt\n";

#[test]
fn answers_with_the_token_for_its_own_life() {
    let (p, _dir) = plugin(CONFIG);
    // The kubelet takes its own token back only with cacheType: Token (its echo guard).
    let p = p.cache_type_token(true);
    let token = sa_token();
    let out = p.request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(exp_of(&token)) - 300,
        "harbor.acme.test",
        "jwt",
        &token,
    );
    assert_eq!(out.stderr(), "");
    // At --v=10 too, the token never shows on stderr (the test kit scans every run).
    let out = p.clone().args(["--v=10"]).request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/team/app",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert!(
        out.stderr().contains("credential ready"),
        "{}",
        out.stderr()
    );
}

#[test]
fn a_token_about_to_expire_is_answered_but_not_cached() {
    let (p, _dir) = plugin(CONFIG);
    let token = jwt(&json!({"aud": [AUDIENCE], "exp": unix_now() + 120}));
    let out = p.cache_type_token(true).request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/app",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert_eq!(
        out.stdout(),
        expected(ApiVersion::V1, "0s", "harbor.acme.test", "jwt", &token)
    );
}

#[test]
fn older_api_versions_carry_no_token_and_are_told_what_to_set() {
    let (p, _dir) = plugin(CONFIG);
    let line = p
        .request_with_token(
            ApiVersion::V1beta1,
            "harbor.acme.test/app",
            Some(&sa_token()),
            &Default::default(),
        )
        .rejected();
    assert!(
        line.contains("is credentialprovider.kubelet.k8s.io/v1beta1, which carries no service-account token (registries[0] (host \"harbor.acme.test\", protocol passthrough))"),
        "{line}"
    );
}
