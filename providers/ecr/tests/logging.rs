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
