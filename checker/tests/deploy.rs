//! deploy/ (the DaemonSet per platform, its kustomize overlays and the Cluster API example) is what
//! `scripts/render-deploy` writes from `credential-provider-check init`, and every rendered
//! manifest validates: against the Kubernetes schemas (kubernetes-validate, from scripts/setup-venv),
//! structurally (the hostPath mounts are exactly the platform's paths), and `kubectl kustomize` of
//! each overlay equals its rendered file; the fleet-mode overlays (issue #30) hold the token
//! controller with exactly its narrow RBAC. Without kubernetes-validate or kubectl the rest still
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

/// Fleet mode (issue #30): one `<platform>-fleet` overlay and rendered file per platform with ECR
/// or ACR, none for GKE (its metadata server is node-local), each with the controller's whole
/// RBAC (get, update and watch on its one Secret, get and update on its one Lease, by name: a
/// watch with `resourceNames` is one whose field selector names that Secret), two controller
/// replicas and the Secret mounted optionally, so nodes work before the controller does.
/// render-deploy --check (above) proves these files are what the script writes and what
/// kustomize builds.
#[test]
fn fleet_overlays_hold_the_controller_and_its_narrow_rbac() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let role = r#"kind: "Role"
metadata:
  name: "credential-provider-token-controller"
  namespace: "kube-credential-providers"
rules:
  - apiGroups:
      - ""
    resources:
      - "secrets"
    resourceNames:
      - "kubelet-credential-provider-tokens"
    verbs:
      - "get"
      - "update"
      - "watch"
  - apiGroups:
      - "coordination.k8s.io"
    resources:
      - "leases"
    resourceNames:
      - "kubelet-credential-provider-token-controller"
    verbs:
      - "get"
      - "update"
---
"#;
    let secret_volume = r#"
        - name: "fleet-tokens"
          secret:
            secretName: "kubelet-credential-provider-tokens"
            optional: true
"#;
    for platform in ["generic", "eks", "aks", "k3s", "rke2", "kind"] {
        let path = deploy.join(format!("rendered/{platform}-fleet.yaml"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains(role), "{platform}: the Role");
        assert_eq!(text.matches("\nkind: \"Role\"\n").count(), 1, "{platform}");
        assert_eq!(
            text.matches("\n  - apiGroups:\n").count(),
            2,
            "{platform}: rules"
        );
        assert!(
            text.contains(secret_volume),
            "{platform}: the Secret volume"
        );
        assert!(text.contains("\n  replicas: 2\n"), "{platform}: replicas");
        assert!(
            deploy
                .join(format!("overlays/{platform}-fleet/kustomization.yaml"))
                .is_file(),
            "{platform}"
        );
    }
    assert!(!deploy.join("rendered/gke-fleet.yaml").exists());
    assert!(!deploy.join("overlays/gke-fleet").exists());
    let component = std::fs::read_to_string(deploy.join("fleet/kustomization.yaml")).unwrap();
    assert!(component.contains("\nkind: \"Component\"\n"), "{component}");
}

/// Whether `program` is a file in a directory of `PATH`, where render-deploy looks for it.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
