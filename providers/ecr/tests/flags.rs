//! The command line (issue #25), through the shared table `kcp_testkit::flags`: a typo such as
//! `--strict-host` is refused before the request is read and nothing reaches ECR (it used to be
//! dropped, and quay.io got a token as if strict mode were off); upstream registers no klog
//! flags, so they are refused as upstream refuses them; booleans never take the next word; one
//! meaning for `-v 4`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeServer;
use kcp_testkit::flags::{self, Refusal};
use support::*;

const BINARY: &str = "ecr-credential-provider";

fn fake_ecr() -> FakeServer {
    FakeServer::start(|_| ecr_token("AWS:flags-password", None))
}

fn ecr_plugin(ecr: &FakeServer) -> Plugin {
    plugin()
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .env("AWS_REGION", "us-west-2")
}

#[test]
fn a_typo_of_a_safety_flag_is_refused_and_nothing_is_sent() {
    let ecr = fake_ecr();
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(
            &["--strict-host", "get-credentials"],
            "unknown flag --strict-host (did you mean --strict-hosts?)",
        ),
        Refusal::new(
            &["get-credentials", "-strict-host"],
            "unknown flag -strict-host (did you mean --strict-hosts?)",
        ),
        Refusal::new(
            &["--registy-mirror=quay.io:123456789012.dkr.ecr.us-west-2.amazonaws.com"],
            "unknown flag --registy-mirror (did you mean --registry-mirror?)",
        ),
        Refusal::new(
            &["--assume-roles", "123456789012=arn:aws:iam::123456789012:role/r"],
            "unknown flag --assume-roles (did you mean --assume-role?)",
        ),
        Refusal::new(
            &["get-credentials", "strict-hosts"],
            "unexpected argument \"strict-hosts\": this provider takes no arguments but get-credentials",
        ),
        Refusal::new(
            &["--strict-hosts", "false"],
            "unexpected argument \"false\" after --strict-hosts: a boolean flag takes its value as --strict-hosts=false",
        ),
    ]);
    // The issue's case: an image outside ECR, which a dropped --strict-host would have answered.
    flags::assert_refuses(&ecr_plugin(&ecr), "quay.io/team/app", &cases);
    flags::assert_refuses(&ecr_plugin(&ecr), &format!("{PRIVATE_HOST}/app"), &cases);
    assert_eq!(ecr.requests().len(), 0, "nothing reached ECR");
}

#[test]
fn klog_flags_are_refused_as_upstream_refuses_them() {
    let ecr = fake_ecr();
    let names: Vec<&str> = flags::KLOG_INIT_FLAGS
        .iter()
        .chain(&flags::COMPONENT_BASE_FLAGS)
        .map(|(name, _)| *name)
        .collect();
    let mut cases = flags::klog_refusals(BINARY, &names);
    cases.push(Refusal::new(
        &["-logtostderr"],
        "unknown flag -logtostderr (upstream's ecr-credential-provider does not take this klog flag either)",
    ));
    flags::assert_refuses(&ecr_plugin(&ecr), &format!("{PRIVATE_HOST}/app"), &cases);
    assert_eq!(ecr.requests().len(), 0, "nothing reached ECR");
}

#[test]
fn a_boolean_flag_never_takes_the_next_word() {
    let ecr = fake_ecr();
    let p = ecr_plugin(&ecr).args(["--strict-hosts", "get-credentials"]);
    let ok = p
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"))
        .accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "flags-password");
    // ... and strict mode is on.
    let line = p.request(ApiVersion::V1, "quay.io/team/app").rejected();
    assert!(
        line.contains("quay.io is not an Amazon ECR registry host"),
        "{line}"
    );
    let dir = kcp_testkit::TempDir::new("ecr-flags-cache");
    ecr_plugin(&ecr)
        .args([
            format!("--token-cache-dir={}", dir.path().display()),
            "--token-cache".to_owned(),
            "get-credentials".to_owned(),
        ])
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"))
        .accepted();
    assert_eq!(
        ecr.requests().len(),
        2,
        "strict mode sent nothing for quay.io"
    );
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let ecr = fake_ecr();
    flags::assert_verbosity_spellings(
        &ecr_plugin(&ecr),
        &format!("{PRIVATE_HOST}/app"),
        Some("get-credentials"),
    );
}
