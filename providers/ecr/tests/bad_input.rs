//! The shared bad-input table (`kcp_testkit::bad_input`), and what only this binary
//! reads: its own flags and variables, and the AWS shared config.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeServer;
use kcp_testkit::{Plugin, bad_input};
use support::*;

#[test]
fn refuses_the_shared_bad_input_table() {
    let ecr = FakeServer::start(|_| ecr_token("AWS:bad-input-control-password", None));
    let p = plugin().env("AWS_ENDPOINT_URL_ECR", ecr.url());
    bad_input::assert_rejects_all(&p, &format!("{PRIVATE_HOST}/app"));
    assert_eq!(
        ecr.requests().len(),
        1,
        "only the control request reached ECR"
    );
}

#[test]
fn refuses_its_own_bad_flags_and_config() {
    let ecr = FakeServer::start(|_| ecr_token("AWS:bad-input-control-password", None));
    let base = || plugin().env("AWS_ENDPOINT_URL_ECR", ecr.url());
    let dir = kcp_testkit::TempDir::new("ecr-bad-config");
    let garbage = dir.path().join("garbage-config");
    std::fs::write(&garbage, "this is [not an ini file\n\0\u{1}").unwrap();
    let cases: Vec<(&str, kcp_testkit::Plugin, i32, &str)> = vec![
        (
            "--strict-hosts=banana",
            base().args(["--strict-hosts=banana"]),
            2,
            "invalid value 'banana' for '--strict-hosts",
        ),
        (
            "ECR_STRICT_HOSTS=banana",
            base().env("ECR_STRICT_HOSTS", "banana"),
            2,
            "invalid value 'banana' for '--strict-hosts",
        ),
        (
            "a mirror to a host that is not ECR",
            base().args(["--registry-mirror=docker.io:registry.example.com"]),
            2,
            "--registry-mirror docker.io:registry.example.com: registry.example.com is not an Amazon ECR private registry host",
        ),
        (
            "a mirror to ECR Public",
            base().args(["-r", "docker.io:public.ecr.aws"]),
            2,
            "public.ecr.aws is not an Amazon ECR private registry host",
        ),
        (
            "a malformed mirror entry",
            base().args(["--registry-mirror=docker.io:a:b"]),
            2,
            "--registry-mirror entry \"docker.io:a:b\": expected <source-host>:<destination-registry>",
        ),
        (
            "an 11-digit account",
            base().args(["--assume-role=12345678901=arn:aws:iam::123456789012:role/pull"]),
            2,
            "the account \"12345678901\" must be 12 digits",
        ),
        (
            "--assume-role without =",
            base().args(["--assume-role", "arn:aws:iam::123456789012:role/pull"]),
            2,
            "expected ACCOUNT=ROLE_ARN",
        ),
        (
            "a user ARN",
            base().args(["--assume-role=123456789012=arn:aws:iam::123456789012:user/pull"]),
            2,
            "is not an IAM role ARN (the resource must be role/<name>",
        ),
        (
            "an unknown partition",
            base().args(["--assume-role=123456789012=arn:aws-moon:iam::123456789012:role/pull"]),
            2,
            "unknown partition \"aws-moon\"",
        ),
        (
            "an external ID without a role",
            base().args(["--assume-role-external-id=tenant-42"]),
            2,
            "no --assume-role is given",
        ),
        (
            "an external ID with a space",
            base().args([
                "--assume-role=123456789012=arn:aws:iam::123456789012:role/pull",
                "--assume-role-external-id=tenant 42",
            ]),
            2,
            "--assume-role-external-id must be 2 to 1224 characters",
        ),
        (
            "a profile that does not exist",
            Plugin::new(BIN)
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_ENDPOINT_URL_ECR", ecr.url())
                .env("AWS_PROFILE", "no-such-profile"),
            1,
            "credentials: shared config profile",
        ),
        (
            "a shared config file that is not INI",
            Plugin::new(BIN)
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_ENDPOINT_URL_ECR", ecr.url())
                .env("AWS_PROFILE", "puller")
                .env("AWS_CONFIG_FILE", garbage.display().to_string()),
            1,
            "could not parse profile file",
        ),
    ];
    for (name, p, code, want) in cases {
        let out = p.request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"));
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(code), "{name}: {line}");
        assert!(line.contains(want), "{name}: {line:?} lacks {want:?}");
    }
    assert!(ecr.requests().is_empty(), "{:?}", ecr.requests());
}
