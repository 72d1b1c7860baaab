//! The GCR fuzz bodies (`gcr_credential_provider::fuzz`) on stable Rust, through the shared
//! runner `kcp_testkit::fuzz_smoke`. A unit test, as the bodies exist only in unit tests and fuzz
//! builds (`cfg(any(fuzzing, test))`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use crate::fuzz;
use kcp_testkit::fuzz_smoke::{Target, assert_wired, run};

/// This crate's targets.
const TARGETS: &[Target] = &[
    Target {
        name: "gcr_token_answer",
        call: "gcr_credential_provider::fuzz::token_answer",
        body: fuzz::token_answer,
    },
    Target {
        name: "gcr_iam_answer",
        call: "gcr_credential_provider::fuzz::iam_answer",
        body: fuzz::iam_answer,
    },
    Target {
        name: "gcr_key_file",
        call: "gcr_credential_provider::fuzz::key_file",
        body: fuzz::key_file,
    },
    Target {
        name: "gcr_dockercfg",
        call: "gcr_credential_provider::fuzz::dockercfg",
        body: fuzz::dockercfg,
    },
];

/// Bytes the grammars under test care about, to make mutations reach past the first check.
const DICTIONARY: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b":",
    b",",
    b"\n",
    b"\\n",
    b"null",
    b"0",
    b"\"access_token\":",
    b"\"expires_in\":",
    b"\"token_type\":\"Bearer\"",
    b"\"accessToken\":",
    b"\"expireTime\":",
    b"2026-01-02T03:04:05Z",
    b"9999-12-31T23:59:59Z",
    b".999999999",
    b"+01:00",
    b"1e300",
    b"-5",
    b"3.5",
    b"\"3600\"",
    b"18446744073709551616",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"\"type\":\"service_account\"",
    b"\"client_email\":",
    b"\"private_key\":",
    b"\"private_key_id\":",
    b"\"token_uri\":",
    b"-----BEGIN PRIVATE KEY-----\\n",
    b"-----END PRIVATE KEY-----\\n",
    b"https://",
    b"http://",
    b"\"auths\":",
    b"\"auth\":",
    b"\"username\":",
    b"\"password\":",
    b"\"email\":",
    b"Zm9vOmJhcg==",
    b"=",
    b"\xff",
    b"\xc3\xa9",
];

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn token_answer() {
    run(target("gcr_token_answer"), DICTIONARY);
}

#[test]
fn iam_answer() {
    run(target("gcr_iam_answer"), DICTIONARY);
}

#[test]
fn key_file() {
    run(target("gcr_key_file"), DICTIONARY);
}

#[test]
fn dockercfg() {
    run(target("gcr_dockercfg"), DICTIONARY);
}

#[test]
fn every_target_has_a_smoke_test_and_a_fuzz_target() {
    let bodies: Vec<&str> = fuzz::TARGETS.iter().map(|(name, _)| *name).collect();
    let here: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        bodies, here,
        "a body without a smoke test, or the other way round"
    );
    assert_wired(TARGETS);
}
