//! The kubelet protocol's fuzz bodies (`kcp_testkit::fuzz_bodies`) on stable Rust, through the
//! shared runner `kcp_testkit::fuzz_smoke`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use kcp_testkit::fuzz_bodies;
use kcp_testkit::fuzz_smoke::{Target, assert_wired, run};

/// This crate's targets.
const TARGETS: &[Target] = &[
    Target {
        name: "request",
        call: "kcp_testkit::fuzz_bodies::request",
        body: fuzz_bodies::request,
    },
    Target {
        name: "image",
        call: "kcp_testkit::fuzz_bodies::image",
        body: fuzz_bodies::image,
    },
    Target {
        name: "matching",
        call: "kcp_testkit::fuzz_bodies::matching",
        body: fuzz_bodies::matching,
    },
    Target {
        name: "duration",
        call: "kcp_testkit::fuzz_bodies::duration",
        body: fuzz_bodies::duration,
    },
    Target {
        name: "kubelet_response",
        call: "kcp_testkit::fuzz_bodies::kubelet_response",
        body: fuzz_bodies::kubelet_response,
    },
    Target {
        name: "oidc_registries",
        call: "kcp_testkit::fuzz_bodies::oidc_registries",
        body: fuzz_bodies::oidc_registries,
    },
];

/// Bytes the grammars under test care about, to make mutations reach past the first check.
const DICTIONARY: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b":",
    b",",
    b"/",
    b".",
    b"*",
    b"?",
    b"[",
    b"]",
    b"\\",
    b"%",
    b"%25",
    b"@",
    b"\n",
    b"0",
    b"9",
    b"h",
    b"m",
    b"s",
    b"ms",
    "\u{b5}s".as_bytes(),
    b"null",
    b"\"auth\":",
    b"\"cacheDuration\":",
    b"\"cacheKeyType\":\"Registry\"",
    b"\"kind\":\"CredentialProviderResponse\"",
    b"\"kind\":\"CredentialProviderRequest\"",
    b"\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\"",
    b"\"image\":",
    b"\"serviceAccountToken\":",
    b"sha256:",
    b"docker.io",
    b"localhost",
    b":5000",
    b"\xff",
    b"\xc3\xa9",
];

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn request() {
    run(target("request"), DICTIONARY);
}

#[test]
fn image() {
    run(target("image"), DICTIONARY);
}

#[test]
fn matching() {
    run(target("matching"), DICTIONARY);
}

#[test]
fn duration() {
    run(target("duration"), DICTIONARY);
}

#[test]
fn kubelet_response() {
    run(target("kubelet_response"), DICTIONARY);
}

#[test]
fn oidc_registries() {
    run(target("oidc_registries"), DICTIONARY);
}

#[test]
fn every_target_has_a_smoke_test_and_a_fuzz_target() {
    let bodies: Vec<&str> = fuzz_bodies::TARGETS.iter().map(|(name, _)| *name).collect();
    let here: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        bodies, here,
        "a body without a smoke test, or the other way round"
    );
    assert_wired(TARGETS);
}
