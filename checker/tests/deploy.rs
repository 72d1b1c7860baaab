//! deploy/ (the DaemonSet per platform, its kustomize overlays and the Cluster API example) is what
//! `scripts/render-deploy` writes from `credential-provider-check init`, and every rendered
//! manifest validates: against the Kubernetes schemas (kubernetes-validate, from scripts/setup-venv),
//! structurally (the hostPath mounts are exactly the platform's paths), and `kubectl kustomize` of
//! each overlay equals its rendered file. Without kubernetes-validate or kubectl the rest still
//! runs and the missing check is recorded as a skip (a failure under `KCP_REQUIRE_ALL=1`).
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
    // scripts/test puts .venv/bin (where scripts/setup-venv installs kubernetes-validate) first
    // on PATH; render-deploy uses kubectl when it is on PATH.
    let schemas = Command::new("python3")
        .args(["-c", "import kubernetes_validate"])
        .output()
        .is_ok_and(|o| o.status.success());
    if schemas {
        cmd.arg("--require-schemas");
    } else {
        kcp_testkit::skip::missing(
            "kubernetes-validate (scripts/setup-venv, .venv/bin first on PATH)",
            "validates the manifests against the Kubernetes schemas; structural checks only",
        );
    }
    if !on_path("kubectl") {
        kcp_testkit::skip::missing(
            "kubectl",
            "compares `kubectl kustomize` of each overlay with its rendered file",
        );
    }
    let out = cmd.output().expect("running python3 scripts/render-deploy");
    assert!(
        out.status.success(),
        "scripts/render-deploy --check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether `program` is a file in a directory of `PATH`, where render-deploy looks for it.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
