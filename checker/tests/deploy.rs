//! deploy/ (the DaemonSet per platform, its kustomize overlays and the Cluster API example) is what
//! `scripts/render-deploy` writes from `credential-provider-check init`, and every rendered
//! manifest validates: against the Kubernetes schemas (kubernetes-validate, from scripts/setup-venv),
//! structurally (the hostPath mounts are exactly the platform's paths), and, with kubectl on PATH,
//! `kubectl kustomize` of each overlay equals its rendered file.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn deploy_is_rendered_from_init_and_validates() {
    if kcp_testkit::skip_on_windows(
        "deploy_is_rendered_from_init_and_validates",
        "the manifests take their paths from the Linux build of the checker",
    ) {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/render-deploy");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .arg("--checker")
        .arg(common::checker())
        .arg("--check");
    // scripts/test sets it, with .venv/bin (where scripts/setup-venv installs kubernetes-validate)
    // first on PATH; elsewhere a venv without it gets the structural checks only.
    if std::env::var("KCP_REQUIRE_SCHEMAS").is_ok_and(|v| v == "1") {
        cmd.arg("--require-schemas");
    }
    let out = cmd.output().expect("running python3 scripts/render-deploy");
    assert!(
        out.status.success(),
        "scripts/render-deploy --check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
