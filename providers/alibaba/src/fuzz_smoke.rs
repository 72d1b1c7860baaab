//! The Alibaba fuzz bodies (`alibaba_credential_provider::fuzz`) on stable Rust, through the
//! shared runner `kcp_testkit::fuzz_smoke`. A unit test, as the bodies exist only in unit tests
//! and fuzz builds (`cfg(any(fuzzing, test))`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use crate::fuzz;
use kcp_testkit::fuzz_smoke::{Target, assert_wired, run};

/// This crate's targets.
const TARGETS: &[Target] = &[Target {
    name: "alibaba_answers",
    call: "alibaba_credential_provider::fuzz::answers",
    body: fuzz::answers,
}];

/// Bytes the grammars under test care about, to make mutations reach past the first check.
const DICTIONARY: &[&[u8]] = &[
    b"M",
    b"S",
    b"E",
    b"P",
    b"L",
    b"X",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\\n",
    b"null",
    b"true",
    b"false",
    b"0",
    b"\"Code\":",
    b"\"code\":",
    b"\"Message\":",
    b"\"message\":",
    b"\"RequestId\":",
    b"\"requestId\":",
    b"\"Success\"",
    b"\"AccessKeyId\":",
    b"\"AccessKeySecret\":",
    b"\"SecurityToken\":",
    b"\"Expiration\":",
    b"\"Credentials\":",
    b"\"IsSuccess\":",
    b"\"AuthorizationToken\":",
    b"\"TempUsername\":",
    b"\"ExpireTime\":",
    b"\"data\":",
    b"\"authorizationToken\":",
    b"\"tempUserName\":",
    b"\"expireDate\":",
    b"\"TotalCount\":",
    b"\"Instances\":",
    b"\"InstanceName\":",
    b"\"InstanceId\":",
    b"\"RegionId\":",
    b"\"prod-registry\"",
    b"\"Throttling.User\"",
    b"\"Forbidden.RAM\"",
    b"planted/fuzz/secret/0123",
    b"2027-01-15T09:00:00Z",
    b"2027-01-15T08:00:00Z",
    b"9999-12-31T23:59:59Z",
    b"1800003600000",
    b"1800000000000",
    b"\"1800003600000\"",
    b"1.8000036e12",
    b"1e300",
    b"-5",
    b"18446744073709551616",
    b"9223372036854775807",
    b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    b"\xff",
    b"\xc3\xa9",
];

#[test]
fn answers() {
    run(&TARGETS[0], DICTIONARY);
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
