//! The ACR fuzz bodies (`acr_credential_provider::fuzz`) on stable Rust, through the shared
//! runner `kcp_testkit::fuzz_smoke`. A unit test, as the bodies exist only in unit tests and fuzz
//! builds (`cfg(any(fuzzing, test))`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use crate::fuzz;
use kcp_testkit::fuzz_smoke::{Target, assert_wired, run};

/// This crate's targets.
const TARGETS: &[Target] = &[
    Target {
        name: "acr_config",
        call: "acr_credential_provider::fuzz::config",
        body: fuzz::config,
    },
    Target {
        name: "acr_challenge",
        call: "acr_credential_provider::fuzz::challenge",
        body: fuzz::challenge,
    },
    Target {
        name: "acr_exchange",
        call: "acr_credential_provider::fuzz::exchange",
        body: fuzz::exchange,
    },
    Target {
        name: "acr_refresh_token",
        call: "acr_credential_provider::fuzz::refresh_token",
        body: fuzz::refresh_token,
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
    b"\n\n",
    b"\r\n",
    b"=",
    b"\\",
    b"0",
    b"null",
    b"true",
    b"\"refresh_token\":",
    b"\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"x\"}]",
    b"\"exp\":",
    b"1e300",
    b"-5",
    b"3.5",
    b"18446744073709551616",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"Bearer ",
    b"Basic ",
    b"realm=",
    b"service=",
    b"https://",
    b"myreg.azurecr.io",
    b".azurecr.io",
    b".geo.",
    b":443",
    b"/oauth2/token",
    b"date: ",
    b"x-ms-correlation-request-id: ",
    b"Sun, 06 Nov 1994 08:49:37 GMT",
    b"\"tenantId\":",
    b"\"aadClientSecret\":",
    b"\"useManagedIdentityExtension\":",
    b"tenantId: ",
    b"- ",
    b"&a ",
    b"*a",
    b"---\n",
    b"\xff",
    b"\xc3\xa9",
];

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn config() {
    run(target("acr_config"), DICTIONARY);
}

#[test]
fn challenge() {
    run(target("acr_challenge"), DICTIONARY);
}

#[test]
fn exchange() {
    run(target("acr_exchange"), DICTIONARY);
}

#[test]
fn refresh_token() {
    run(target("acr_refresh_token"), DICTIONARY);
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
