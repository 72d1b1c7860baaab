//! `match` on the kubelet's matching vectors (docs/kubelet-contract.md, “Test vectors”), with the
//! reason for each non-match, Docker Hub normalisation and exit codes.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{check, v1_config};
use kcp_testkit::TempDir;

/// Runs `match --output json` for `pattern` against `image`; returns (exit, pattern report).
fn match_one(pattern: &str, image: &str) -> (i32, serde_json::Value) {
    let dir = TempDir::new("match");
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        v1_config(&format!(
            "  - name: p\n    matchImages: [{pattern:?}]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        )),
    )
    .unwrap();
    let run = check([
        "match".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        image.as_ref(),
    ]);
    let report = run.json();
    (run.code, report["providers"][0]["patterns"][0].clone())
}

#[test]
fn upstream_matching_vectors_match() {
    for (pattern, image) in [
        ("*.kubernetes.io", "prefix.kubernetes.io"),
        ("prefix.*.io", "prefix.kubernetes.io"),
        ("prefix.kubernetes.*", "prefix.kubernetes.io"),
        ("*-good.kubernetes.io", "prefix-good.kubernetes.io"),
        ("*.kubernetes.io/blah", "prefix.kubernetes.io/blah"),
        ("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar"),
        (
            "*.kubernetes.io:1111/blah",
            "prefix.kubernetes.io:1111/blah",
        ),
        ("prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar"),
        ("test.registry.io", "test.registry.io/foo/bar"),
        ("test.registry.io/foo/bar", "test.registry.io/foo/bar"),
        ("*.registry.io:8080", "test.registry.io:8080/foo"),
        ("*.*.registry.io", "foo.bar.registry.io/foo/bar"),
        ("*.registry.io", "test.registry.io/foo/bar"),
    ] {
        let (code, p) = match_one(pattern, image);
        assert_eq!(code, 0, "{pattern} vs {image}: {p}");
        assert_eq!(p["matches"], true);
        assert!(p["reason"].is_null());
    }
}

#[test]
fn upstream_non_matches_carry_the_reason() {
    for (pattern, image, reason) in [
        (
            "*.kubernetes.io",
            "kubernetes.io",
            "the pattern host has 3 dot-separated labels but the image host has 2",
        ),
        (
            "*.*.kubernetes.io",
            "prefix.kubernetes.io",
            "the pattern host has 4 dot-separated labels but the image host has 3",
        ),
        (
            "kubernetes.io",
            "kubernetes.com",
            "host label 2 of the pattern, \"io\", does not match \"com\" in the image",
        ),
        (
            "k*.io",
            "quay.io",
            "host label 1 of the pattern, \"k*\", does not match \"quay\" in the image",
        ),
        (
            "*.kubernetes.io:1234/blah",
            "prefix.kubernetes.io:1111/blah",
            "port 1234 in the pattern differs from port 1111 in the image",
        ),
        (
            "prefix.*.io/foo",
            "prefix.kubernetes.io:1111/foo/bar",
            "the pattern has no port but the image has port 1111",
        ),
        (
            "harbor.example.com/*",
            "harbor.example.com/team/app",
            "does not start with the pattern path \"/*\"",
        ),
    ] {
        let (code, p) = match_one(pattern, image);
        assert_eq!(code, 1, "{pattern} vs {image}: {p}");
        assert_eq!(p["matches"], false);
        let got = p["reason"].as_str().unwrap();
        assert!(got.contains(reason), "{pattern} vs {image}: {got}");
    }
}

#[test]
fn images_are_normalised_as_the_kubelet_does() {
    let dir = TempDir::new("match-hub");
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        v1_config("  - name: hub\n    matchImages: [docker.io]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n  - name: other\n    matchImages: [\"*.example.com\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"),
    )
    .unwrap();
    let run = check([
        "match".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "nginx:1.27".as_ref(),
    ]);
    assert_eq!(run.code, 0);
    let report = run.json();
    assert_eq!(report["normalized"], "docker.io/library/nginx");
    assert_eq!(report["matching"], serde_json::json!(["hub"]));
    // Human output lists the matching provider and the reason for the other.
    let run = check([
        "match".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "nginx:1.27".as_ref(),
    ]);
    assert!(
        run.stdout
            .contains("image: nginx:1.27 -> docker.io/library/nginx"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("MATCH    hub"));
    assert!(run.stdout.contains(
        "    - *.example.com: the pattern host has 3 dot-separated labels but the image host has 2"
    ));
}

#[test]
fn an_invalid_image_is_a_usage_error() {
    let cfg = common::configs_dir().join("ecr.yaml");
    let run = check([
        "match".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "UPPER CASE:!".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{} {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("invalid image"));
}

#[test]
fn ecr_with_a_port_explains_the_port() {
    let cfg = common::configs_dir().join("real/eks-nodeadm-al2023.json");
    let run = check([
        "match".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "123456789012.dkr.ecr.us-east-1.amazonaws.com:443/app:v1".as_ref(),
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains(
        "- *.dkr.ecr.*.amazonaws.com: the pattern has no port but the image has port 443"
    ));
}
