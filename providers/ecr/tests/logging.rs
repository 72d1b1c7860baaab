//! What ecr-credential-provider prints when the AWS credential chain fails: one line, never the
//! raw response of a failed provider (aws-config's own warnings dump headers and bodies).
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
