//! ecr-credential-provider against moto, the AWS emulator: private ECR with static credentials,
//! web identity (IRSA) through STS, and service-account-token mode with the role from the
//! pod's annotation. moto's tokens expire in 2015, which exercises the expired path (`0s`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use support::{Moto, PRIVATE_HOST, plugin};

#[test]
fn private_ecr_with_static_credentials_in_every_api_version() {
    let Some(moto) = Moto::start("private_ecr_with_static_credentials_in_every_api_version") else {
        return;
    };
    let p = plugin().env("AWS_ENDPOINT_URL", &moto.url);
    for v in ApiVersion::ALL {
        let out = p.request(v, &format!("{PRIVATE_HOST}/team/app"));
        let ok = out.accepted();
        assert_eq!(ok.api_version, v);
        // moto's expiresAt lies in 2015: the token is reported expired, never cached.
        assert_eq!(ok.cache_duration, Some(GoDuration::ZERO));
        assert_eq!(ok.auth.len(), 1);
        let (user, password) = &ok.auth[PRIVATE_HOST];
        assert_eq!(user, "AWS");
        assert_eq!(password, "123456789012-auth-token");
        assert_eq!(
            out.stderr(),
            "",
            "a successful run prints nothing at the default level"
        );
    }
}

#[test]
fn the_auth_key_keeps_the_port() {
    let Some(moto) = Moto::start("the_auth_key_keeps_the_port") else {
        return;
    };
    let image = format!("{PRIVATE_HOST}:443/app");
    let ok = plugin()
        .env("AWS_ENDPOINT_URL_ECR", &moto.url)
        .request(ApiVersion::V1, &image)
        .accepted();
    assert_eq!(
        ok.auth.keys().collect::<Vec<_>>(),
        vec![&format!("{PRIVATE_HOST}:443")]
    );
}

#[test]
fn web_identity_credentials_from_the_environment() {
    let Some(moto) = Moto::start("web_identity_credentials_from_the_environment") else {
        return;
    };
    let p = kcp_testkit::Plugin::new(support::BIN);
    let token_file = p.home().join("web-identity-token");
    std::fs::write(&token_file, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJub2RlIn0.c2ln").unwrap();
    let out = p
        .env(
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            token_file.display().to_string(),
        )
        .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/kubelet-ecr")
        .env("AWS_ENDPOINT_URL_STS", &moto.url)
        .env("AWS_ENDPOINT_URL_ECR", &moto.url)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        // aws-config names the provider that loaded credentials: a dependency's event, shown
        // from --v=6 on.
        .args(["--v=6"])
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"));
    let ok = out.accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].0, "AWS");
    assert!(
        out.stderr().contains("provider=WebIdentityToken"),
        "credentials must come from web identity:\n{}",
        out.stderr()
    );
}

#[test]
fn service_account_token_mode_assumes_the_annotated_role() {
    let Some(moto) = Moto::start("service_account_token_mode_assumes_the_annotated_role") else {
        return;
    };
    let annotations = BTreeMap::from([(
        "eks.amazonaws.com/ecr-role-arn".to_owned(),
        "arn:aws:iam::123456789012:role/team-pull".to_owned(),
    )]);
    let out = plugin()
        .env("AWS_ENDPOINT_URL", &moto.url)
        .args(["--v=4"])
        .request_with_token(
            ApiVersion::V1,
            &format!("{PRIVATE_HOST}/app"),
            Some("eyJhbGciOiJSUzI1NiJ9.sa.token"),
            &annotations,
        );
    let ok = out.accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].0, "AWS");
    assert!(
        out.stderr()
            .contains("assumed role with the service-account token"),
        "{}",
        out.stderr()
    );
    assert!(
        !out.stderr().contains("eyJhbGciOiJSUzI1NiJ9.sa.token"),
        "the SA token must never be logged"
    );
}

/// The string value of the first `"name":"…"` in moto's whitespace-free state.
fn state_value<'a>(state: &'a str, name: &str) -> Option<&'a str> {
    let start = state.find(&format!("\"{name}\":\""))? + name.len() + 4;
    state[start..].split('"').next()
}

#[test]
fn a_mirrored_image_is_pulled_as_the_role_assumed_for_the_destination_account() {
    let Some(moto) =
        Moto::start("a_mirrored_image_is_pulled_as_the_role_assumed_for_the_destination_account")
    else {
        return;
    };
    let dst = "210987654321.dkr.ecr.eu-west-1.amazonaws.com";
    let role = "arn:aws:iam::210987654321:role/ecr-pull";
    let out = plugin()
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", &moto.url)
        .args([
            format!("--registry-mirror=docker.io:{dst}"),
            format!("--assume-role=210987654321={role}"),
            "--assume-role-external-id=tenant-42".to_owned(),
        ])
        .request(ApiVersion::V1, "docker.io/library/nginx");
    let ok = out.accepted();
    // moto names the token after the caller's account: the role's, not the node's 123456789012.
    assert_eq!(ok.auth.keys().collect::<Vec<_>>(), vec![dst, "docker.io"]);
    for key in [dst, "docker.io"] {
        assert_eq!(
            ok.auth[key],
            ("AWS".to_owned(), "210987654321-auth-token".to_owned())
        );
    }
    assert_eq!(ok.cache_duration, Some(GoDuration::ZERO));

    let state = moto.state();
    let sessions = state.matches("\"session_name\":").count();
    assert_eq!(sessions, 1, "one AssumeRole: {state}");
    assert_eq!(state_value(&state, "role_arn"), Some(role));
    assert_eq!(
        state_value(&state, "session_name"),
        Some("ecr-credential-provider")
    );
    assert_eq!(state_value(&state, "external_id"), Some("tenant-42"));
    // STS was called in the registry's region, not the environment's.
    assert_eq!(state_value(&state, "region_name"), Some("eu-west-1"));
    for name in ["secret_access_key", "session_token"] {
        let secret = state_value(&state, name).unwrap();
        assert!(secret.len() > 16, "{name}: {secret}");
        assert!(!out.stdout().contains(secret), "{name} on stdout");
        assert!(!out.stderr().contains(secret), "{name} on stderr");
    }
}
