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

use common::assert_contains;
use common::install::{self, assert_up_to_date};

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
    let deploy = common::workspace("deploy");
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

/// The oidc overlay (issue #37): the generic profile plus oidc-credential-provider, whose
/// registries file comes from a ConfigMap mounted read-only into the install container only. The
/// rendered install arguments, run as the init container runs them (a fake host root for
/// `/host`, a fake release for `/bin`, the ConfigMap's file where the mount puts it), install the
/// example file at the path the config names, and a rerun changes nothing.
#[test]
fn the_oidc_overlay_installs_the_configmaps_registries_file() {
    if kcp_testkit::skip_on_windows(
        "the_oidc_overlay_installs_the_configmaps_registries_file",
        "runs the Linux installer's rendered arguments against a Linux tree",
    ) {
        return;
    }
    let deploy = common::workspace("deploy");
    let text = std::fs::read_to_string(deploy.join("rendered/oidc.yaml")).unwrap();
    let kinds: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
        .collect();
    assert_eq!(
        kinds,
        [
            "\"Namespace\"",
            "\"ServiceAccount\"",
            "\"ConfigMap\"",
            "\"DaemonSet\""
        ]
    );
    for want in [
        "            - name: \"oidc-registries\"\n              mountPath: \"/etc/oidc-registries\"\n              readOnly: true\n",
        "        - name: \"oidc-registries\"\n          configMap:\n            name: \"kubelet-credential-providers-oidc\"\n",
    ] {
        assert!(text.contains(want), "{want}");
    }
    assert_eq!(
        text.matches("mountPath: \"/etc/oidc-registries\"").count(),
        1,
        "install only"
    );
    let overlay = std::fs::read_to_string(deploy.join("overlays/oidc/kustomization.yaml")).unwrap();
    assert!(
        overlay.contains("  - \"../generic\"\n  - \"configmap.yaml\"\n"),
        "{overlay}"
    );

    // The ConfigMap's file (the literal block under `registries.yaml: |`).
    let registries: String = text
        .lines()
        .skip_while(|l| *l != "  registries.yaml: |")
        .skip(1)
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    assert!(registries.contains("\nregistries:\n"), "{registries}");

    // install's arguments as rendered, in the init container's environment.
    let args: Vec<String> = text
        .lines()
        .skip_while(|l| *l != "        - name: \"install\"")
        .skip_while(|l| *l != "          args:")
        .skip(1)
        .take_while(|l| l.starts_with("            - "))
        .map(|l| serde_json::from_str::<String>(&l["            - ".len()..]).unwrap())
        .collect();
    assert_eq!(args[0], "install");
    let head = install::elf_header("oidc-credential-provider");
    let host = install::env_root("deploy-oidc-host", &head);
    let release = install::release(
        "deploy-oidc-release",
        ["ecr", "acr", "gcr", "oidc"].map(|name| {
            (
                format!("{name}-credential-provider"),
                install::with_tail(&head, name),
            )
        }),
    );
    let configmap = kcp_testkit::TempDir::new("deploy-oidc-configmap");
    std::fs::write(configmap.path().join("registries.yaml"), &registries).unwrap();
    let run_install = || {
        let mapped: Vec<String> = args
            .iter()
            .map(|a| match a.as_str() {
                "--host-root=/host" => format!("--host-root={}", host.path().display()),
                "--from=/bin" => format!("--from={}", release.path().display()),
                "--oidc-registries-from=/etc/oidc-registries/registries.yaml" => format!(
                    "--oidc-registries-from={}/registries.yaml",
                    configmap.path().display()
                ),
                other => other.to_owned(),
            })
            .collect();
        assert!(
            mapped
                .iter()
                .all(|a| !a.contains("=/host") && !a.contains("/etc/oidc-registries/")),
            "{mapped:?}"
        );
        common::check(&mapped)
    };
    let run = run_install();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(
        &run.stdout,
        "install: /etc/kubernetes/oidc-registries.yaml\n",
    );
    let installed =
        std::fs::read_to_string(host.path().join("etc/kubernetes/oidc-registries.yaml")).unwrap();
    assert!(installed.ends_with(&registries), "{installed}");
    let config = std::fs::read_to_string(
        host.path()
            .join("etc/kubernetes/credential-provider-config.yaml"),
    )
    .unwrap();
    assert!(
        config.contains("\"--config=/etc/kubernetes/oidc-registries.yaml\""),
        "{config}"
    );
    let again = run_install();
    assert_up_to_date(&again);
}

/// The alibaba profile (issue #34): for self-managed clusters on Alibaba Cloud ECS, the generic
/// profile (same mounts, same everything) with alibaba-credential-provider added to install's
/// providers. Its rendered install arguments, run as the init container runs them, install the
/// four binaries and a config whose alibaba entry is `init --provider alibaba`'s; a rerun changes
/// nothing.
#[test]
fn the_alibaba_overlay_is_the_generic_profile_plus_alibaba() {
    if kcp_testkit::skip_on_windows(
        "the_alibaba_overlay_is_the_generic_profile_plus_alibaba",
        "runs the Linux installer's rendered arguments against a Linux tree",
    ) {
        return;
    }
    let deploy = common::workspace("deploy");
    let text = std::fs::read_to_string(deploy.join("rendered/alibaba.yaml")).unwrap();
    let generic = std::fs::read_to_string(deploy.join("rendered/generic.yaml")).unwrap();
    assert_eq!(
        text,
        generic.replace(
            "\"--providers=ecr,acr,gcr\"\n",
            "\"--providers=ecr,acr,gcr,alibaba\"\n"
        ),
        "the generic profile, alibaba added"
    );
    assert_ne!(text, generic);
    let overlay =
        std::fs::read_to_string(deploy.join("overlays/alibaba/kustomization.yaml")).unwrap();
    assert!(
        overlay.contains(
            "resources:\n  - \"../generic\"\npatches:\n  - path: \"daemonset-patch.yaml\"\n"
        ),
        "{overlay}"
    );

    let args: Vec<String> = text
        .lines()
        .skip_while(|l| *l != "        - name: \"install\"")
        .skip_while(|l| *l != "          args:")
        .skip(1)
        .take_while(|l| l.starts_with("            - "))
        .map(|l| serde_json::from_str::<String>(&l["            - ".len()..]).unwrap())
        .collect();
    assert_eq!(args[0], "install");
    let head = install::elf_header("ecr-credential-provider");
    let host = install::env_root("deploy-alibaba-host", &head);
    let names = ["ecr", "acr", "gcr", "alibaba"].map(|name| format!("{name}-credential-provider"));
    let release = install::release(
        "deploy-alibaba-release",
        names
            .iter()
            .map(|name| (name.clone(), install::with_tail(&head, name))),
    );
    let run_install = || {
        let mapped: Vec<String> = args
            .iter()
            .map(|a| match a.as_str() {
                "--host-root=/host" => format!("--host-root={}", host.path().display()),
                "--from=/bin" => format!("--from={}", release.path().display()),
                other => other.to_owned(),
            })
            .collect();
        assert!(mapped.iter().all(|a| !a.contains("=/host")), "{mapped:?}");
        common::check(&mapped)
    };
    let run = run_install();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let bin_dir = "usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
    for name in &names {
        assert_eq!(
            std::fs::read(host.path().join(bin_dir).join(name)).unwrap(),
            install::with_tail(&head, name),
            "{name}"
        );
    }
    let config = host
        .path()
        .join("etc/kubernetes/credential-provider-config.yaml");
    let installed = kcp_kubelet_emulation::config::load_file(&config).unwrap();
    let names_in_config: Vec<&str> = installed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names_in_config,
        names.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let init = common::check(["init", "--provider", "alibaba"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let alone = host.path().join("alibaba-alone.yaml");
    std::fs::write(&alone, &init.stdout).unwrap();
    let want = kcp_kubelet_emulation::config::load_file(&alone).unwrap();
    let strip =
        |p: &kcp_kubelet_emulation::config::Provider| kcp_kubelet_emulation::config::Provider {
            source: Default::default(),
            ..p.clone()
        };
    assert_eq!(strip(&installed[3]), strip(&want[0]));
    let again = run_install();
    assert_up_to_date(&again);
}

/// The Windows profile (issue #37): a HostProcess DaemonSet of its own beside the Linux one, as
/// SYSTEM on the host network, on Windows nodes only, mounting nothing (a HostProcess container
/// sees the node's C: drive), running the Windows installer from the image into AKS's
/// `C:\var\lib\kubelet\credential-provider` against AgentBaker's `C:\k\credential-provider-config.yaml`,
/// then waiting. render-deploy --check validates it against the schemas and `kubectl kustomize`.
#[test]
fn the_windows_overlay_is_a_hostprocess_daemonset() {
    let deploy = common::workspace("deploy");
    let text = std::fs::read_to_string(deploy.join("rendered/aks-windows.yaml")).unwrap();
    for want in [
        "\nkind: \"DaemonSet\"\nmetadata:\n  name: \"kubelet-credential-providers-windows\"\n",
        "      os:\n        name: \"windows\"\n",
        "      nodeSelector:\n        kubernetes.io/os: \"windows\"\n",
        "      hostNetwork: true\n",
        "      securityContext:\n        windowsOptions:\n          hostProcess: true\n          runAsUserName: \"NT AUTHORITY\\\\SYSTEM\"\n",
        "          command:\n            - \"%CONTAINER_SANDBOX_MOUNT_POINT%\\\\bin\\\\credential-provider-check.exe\"\n          args:\n            - \"install\"\n            - \"--host-root=C:\\\\\"\n            - \"--from=%CONTAINER_SANDBOX_MOUNT_POINT%\\\\bin\"\n            - \"--platform=aks-windows\"\n            - \"--providers=acr\"\n            - \"--bin-dir=C:\\\\var\\\\lib\\\\kubelet\\\\credential-provider\"\n            - \"--binaries-only\"\n            - \"--replace-platform-binaries\"\n",
        "          args:\n            - \"wait\"\n",
    ] {
        assert!(text.contains(want), "missing:\n{want}\nin:\n{text}");
    }
    for linux_only in [
        "hostPath",
        "volumes:",
        "runAsUser:",
        "capabilities:",
        "readOnlyRootFilesystem",
        "seccompProfile",
        "kubernetes.io/os: \"linux\"",
    ] {
        assert!(!text.contains(linux_only), "{linux_only} in a Windows pod");
    }
    // The paths are init's for the platform (render-deploy takes them from init --explain).
    let init = common::check([
        "init",
        "--explain",
        "--platform",
        "aks-windows",
        "--provider",
        "acr",
        "--bin-dir",
        r"C:\var\lib\kubelet\credential-provider",
    ]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(
        init.stderr
            .contains(r"--image-credential-provider-config=C:\k\credential-provider-config.yaml"),
        "{}",
        init.stderr
    );
    let overlay =
        std::fs::read_to_string(deploy.join("overlays/aks-windows/kustomization.yaml")).unwrap();
    assert!(
        overlay.contains(
            "  - \"namespace.yaml\"\n  - \"serviceaccount.yaml\"\n  - \"daemonset.yaml\"\n"
        ),
        "{overlay}"
    );
}

/// Whether `program` is a file in a directory of `PATH`, where render-deploy looks for it.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
