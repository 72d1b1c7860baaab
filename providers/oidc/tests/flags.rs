//! The command line through the shared table `kcp_testkit::flags`: unknown flags and stray words
//! refused before the request is read (and before any exchange), every klog flag of the other
//! providers' upstreams taken in every Go spelling, one meaning for `-v 4`; `--help` and
//! `--version`.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::flags::{self, Refusal};
use kcp_testkit::{Plugin, TempDir};
use support::*;

const IMAGE: &str = "registry.acme.test/team/app";

fn with_endpoint() -> (Plugin, FakeServer, TempDir) {
    let fake = token_endpoint(FakeResponse::json(
        r#"{"access_token":"flags-access-token-0123456","expires_in":600}"#,
    ));
    let (p, dir) = plugin(&exchange_config(&fake, ""));
    (p.service_account_token(sa_token()), fake, dir)
}

#[test]
fn unknown_flags_and_stray_words_are_refused_before_the_request() {
    let (p, fake, _dir) = with_endpoint();
    let mut cases = flags::shared_refusals();
    cases.extend([
        Refusal::new(
            &["--confg=x"],
            "unknown flag --confg (did you mean --config?)",
        ),
        Refusal::new(
            &["get-credentials", "quay.io"],
            "unexpected argument \"quay.io\": this provider takes no arguments but get-credentials",
        ),
    ]);
    flags::assert_refuses(&p, IMAGE, &cases);
    assert!(fake.requests().is_empty(), "nothing was exchanged");
}

#[test]
fn every_klog_flag_is_taken_in_every_spelling() {
    let (p, fake, _dir) = with_endpoint();
    let all: Vec<_> = flags::KLOG_INIT_FLAGS
        .into_iter()
        .chain(flags::COMPONENT_BASE_FLAGS)
        .collect();
    let out = p
        .args(flags::klog_spellings(&all))
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(out.stderr(), "", "klog flags are taken silently");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn every_spelling_of_verbosity_4_is_the_same() {
    let (p, _fake, _dir) = with_endpoint();
    flags::assert_verbosity_spellings(&p, IMAGE, Some("get-credentials"));
}

#[test]
fn help_and_version_print_and_exit_0_without_a_config() {
    for (flag, says) in [
        ("--help", "--config <FILE>"),
        ("--version", "oidc-credential-provider 0.1.0"),
    ] {
        let out = base().args([flag]).raw(b"");
        assert_eq!(out.exec.exit_code, Some(0), "{flag}");
        assert!(out.stdout().contains(says), "{flag}: {}", out.stdout());
    }
}
