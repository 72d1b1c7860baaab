//! kcp-plugin's fuzz bodies (`kcp_plugin::tls::fuzz`, `kcp_plugin::jwt::fuzz`,
//! `kcp_plugin::token_cache::fuzz`) on stable Rust,
//! through the shared runner `kcp_testkit::fuzz_smoke`. A unit test, as the bodies exist only in
//! unit tests and fuzz builds (`cfg(any(fuzzing, test))`). Also checks that every cargo-fuzz target
//! in `fuzz/` is built and seeded, whichever crate holds its body.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use kcp_testkit::fuzz_smoke::{Target, assert_wired, run};

/// This crate's targets.
const TARGETS: &[Target] = &[
    Target {
        name: "tls_bundle",
        call: "kcp_plugin::tls::fuzz::trust_bundle",
        body: crate::tls::fuzz::trust_bundle,
    },
    Target {
        name: "jwt_claims",
        call: "kcp_plugin::jwt::fuzz::claims",
        body: crate::jwt::fuzz::claims,
    },
    Target {
        name: "published_entry",
        call: "kcp_plugin::token_cache::fuzz::published_entry",
        body: crate::token_cache::fuzz::published_entry,
    },
];

/// Bytes the grammars under test care about, to make mutations reach past the first check.
const DICTIONARY: &[&[u8]] = &[
    b"-----BEGIN CERTIFICATE-----\n",
    b"-----END CERTIFICATE-----\n",
    b"-----BEGIN CERTIFICATE-----",
    b"\r\n",
    b"\n",
    b"=",
    b"==",
    b"MII",
    b"\x30\x82",
    b"\x30\x81",
    b"\x30\x84\xff\xff\xff\xff",
    b"\xa0\x03\x02\x01\x02",
    b"\x02\x01\x00",
    b"{",
    b"}",
    b"\"",
    b":",
    b",",
    b".",
    b"\"exp\":",
    b"\"iat\":",
    b"\"nbf\":",
    b"\"aud\":",
    b"\"kubernetes.io\":",
    b"\"serviceaccount\":",
    b"\"namespace\":",
    b"\"name\":",
    b"\"uid\":",
    b"1e300",
    b"-5",
    b"3.5",
    b"18446744073709551616",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"null",
    b"\xff",
    b"\"version\":1",
    b"\"key\":\"provider=ecr;region=us-east-1;shared-identity=nodes;identity=sha256:00\"",
    b"\"expiresAt\":",
    b"\"fetchedAt\":",
    b"\"refreshAt\":",
    b"\"password\":",
    b"\"username\":",
    b"\"fleet\":",
    b".json",
    b"253402300799",
];

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn tls_bundle() {
    run(target("tls_bundle"), DICTIONARY);
}

#[test]
fn jwt_claims() {
    run(target("jwt_claims"), DICTIONARY);
}

#[test]
fn published_entry() {
    run(target("published_entry"), DICTIONARY);
}

#[test]
fn every_target_has_a_smoke_test_and_a_fuzz_target() {
    assert_wired(TARGETS);
}

/// Every file in `fuzz/fuzz_targets/` is a `[[bin]]` of `fuzz/Cargo.toml` with a seed corpus of
/// at least five files, whichever crate's smoke test runs its body (`scripts/fuzz` runs every
/// file there).
#[test]
fn every_fuzz_target_is_built_and_seeded() {
    let manifest =
        std::fs::read_to_string(kcp_testkit::fuzz_smoke::fuzz_dir().join("Cargo.toml")).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(kcp_testkit::fuzz_smoke::fuzz_dir().join("fuzz_targets"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
    names.sort();
    assert!(names.len() >= TARGETS.len(), "{names:?}");
    for name in &names {
        assert!(
            manifest.contains(&format!("name = \"{name}\""))
                && manifest.contains(&format!("path = \"fuzz_targets/{name}.rs\"")),
            "fuzz/Cargo.toml has no [[bin]] {name} at fuzz_targets/{name}.rs"
        );
        let seeds = std::fs::read_dir(
            kcp_testkit::fuzz_smoke::fuzz_dir()
                .join("corpus")
                .join(name),
        )
        .unwrap_or_else(|e| panic!("fuzz/corpus/{name}: {e}"))
        .count();
        assert!(seeds >= 5, "fuzz/corpus/{name}: only {seeds} seeds");
    }
}
