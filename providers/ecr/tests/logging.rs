//! What ecr-credential-provider logs around the AWS SDK: when the credential chain fails, one
//! line, never the raw response of a failed provider (aws-config's own warnings dump headers and
//! bodies); the SDK's own events only from `--v=6` on, one line each, and never a body.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::Plugin;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use support::*;

#[test]
fn a_failing_instance_metadata_service_is_one_line_without_its_body() {
    const BODY_SECRET: &str = "imds-body-SecretAccessKey-Qx71";
    const HEADER_SECRET: &str = "imds-header-secret-Zr44";
    let imds = FakeServer::start(|_| {
        FakeResponse::new(500, format!(r#"{{"SecretAccessKey":"{BODY_SECRET}"}}"#))
            .header("x-debug", HEADER_SECRET)
    });
    for verbosity in ["--v=0", "--v=6"] {
        let out = Plugin::new(BIN)
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url())
            .args([verbosity, "--deadline=10s"])
            .request(ApiVersion::V1, PRIVATE_HOST);
        let stderr = out.stderr();
        assert!(
            !stderr.contains(BODY_SECRET),
            "{verbosity}: body leaked:\n{stderr}"
        );
        assert!(
            !stderr.contains(HEADER_SECRET),
            "{verbosity}: header leaked:\n{stderr}"
        );
        if verbosity == "--v=0" {
            let line = out.rejected();
            assert!(line.contains("failed to load IMDS session token"), "{line}");
            assert!(line.contains("instance metadata"), "{line}");
        }
    }
    assert!(
        !imds.requests().is_empty(),
        "the chain reached the fake IMDS"
    );
}

/// Issue #25: an upstream error that quotes the static secret key (an AWS key holds `/`, so the
/// token-run heuristic lets it through) reaches neither the failure line nor any log line, even
/// at `--v=10`. The key is known to the process because the credentials it resolved are
/// remembered; the test kit's scan of stderr fails the run on any registered secret.
#[test]
fn an_error_body_quoting_the_secret_key_is_redacted_at_every_verbosity() {
    const KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYQUOTEDKEY01";
    kcp_testkit::secrets::register(KEY);
    let ecr = FakeServer::start(|_| {
        FakeResponse::new(
            400,
            format!(
                r#"{{"__type":"InvalidSignatureException","message":"The request signature we calculated does not match; secret key {KEY} rejected"}}"#
            ),
        )
        .header("content-type", "application/x-amz-json-1.1")
    });
    for verbosity in ["--v=0", "--v=10"] {
        let out = Plugin::new(BIN)
            .env("AWS_ACCESS_KEY_ID", "AKIDTESTSTATIC")
            .env("AWS_SECRET_ACCESS_KEY", KEY)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ENDPOINT_URL_ECR", ecr.url())
            .args([verbosity, "--deadline=10s"])
            .request(ApiVersion::V1, PRIVATE_HOST);
        let stderr = out.stderr();
        assert!(!stderr.contains("K7MDENG"), "{verbosity}:\n{stderr}");
        let line = stderr.lines().last().unwrap_or_default();
        assert!(
            line.contains("InvalidSignatureException")
                && line.contains("secret key <redacted> rejected"),
            "{verbosity}: {line}"
        );
    }
}

/// The module a log line names (`--v=1` and up print it): the word after the level, without its
/// colon. Our crates open no spans, so below `--v=6` nothing stands between the two.
fn module(line: &str) -> &str {
    line.split_whitespace()
        .nth(2)
        .unwrap_or("")
        .trim_end_matches(':')
}

#[test]
fn dependencies_log_from_v6_on_one_line_each_and_never_a_body() {
    const BODY_MARKER: &str = "ecr-error-body-detail-Kd82";
    const SESSION_TOKEN: &str = "static-session-token-Wm35";
    let ecr = FakeServer::start(|_| {
        FakeResponse::new(
            500,
            format!(
                r#"{{"__type":"ServerException","message":"injected","detail":"{BODY_MARKER}"}}"#
            ),
        )
        .header("content-type", "application/x-amz-json-1.1")
    });
    let run = |verbosity: &str| {
        plugin()
            .env("AWS_ENDPOINT_URL_ECR", ecr.url())
            .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
            .secret(SESSION_TOKEN)
            .args([verbosity, "--deadline=3s"])
            .request(ApiVersion::V1, PRIVATE_HOST)
    };

    // Below trace: our own events only, however much the SDK logs about its four attempts.
    let out = run("--v=5");
    assert_eq!(out.exec.exit_code, Some(1), "{}", out.stderr());
    let stderr = out.stderr();
    for line in stderr.lines() {
        let module = module(line);
        assert!(
            module.starts_with("kcp_") || module.starts_with("ecr_credential_provider"),
            "a dependency's event at --v=5: {line}\n{stderr}"
        );
    }
    assert!(
        stderr.contains("kcp_plugin::runner: getting an ECR authorization token"),
        "{stderr}"
    );

    // Trace: the SDK's own events too, each on one line, and still no body.
    let out = run("--v=6");
    let stderr = out.stderr();
    assert!(
        stderr
            .lines()
            .any(|l| module(l).starts_with("aws_smithy_runtime")
                || l.contains(" aws_smithy_runtime::")),
        "the SDK's events are shown at --v=6:\n{stderr}"
    );
    for line in stderr.lines() {
        assert!(
            line.len() > 5 && line.as_bytes()[..4].iter().all(u8::is_ascii_digit),
            "every entry is one line starting with its timestamp: {line:?}"
        );
    }
    assert!(
        !stderr.contains(BODY_MARKER),
        "a body was logged:\n{stderr}"
    );
    assert!(ecr.requests().len() >= 4, "each run retried");
}
