//! `credential-provider-check doctor --host-root DIR` against fake node roots, one per platform
//! profile of `init`: a `proc/<pid>/cmdline` (NUL-separated), an `exe` symlink to a fake kubelet
//! that prints its version, the kubelet's `--config` file and the credential-provider config.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{Run, check, v1_config, write_script};
use kcp_testkit::TempDir;
use serde_json::json;

const GATE: &str = "KubeletServiceAccountTokenForCredentialProviders";

/// Where one platform keeps the kubelet, its flags' files and the kubelet's own config.
struct Profile {
    name: &'static str,
    /// The kubelet's argv[0] (also the exe's node path).
    exe: &'static str,
    /// What `exe --version` prints.
    banner: &'static str,
    /// The credential-provider config and bin dir, as the node sees them.
    config: &'static str,
    bin_dir: &'static str,
    /// k3s embeds the kubelet: no flags on the command line.
    k3s: bool,
}

const PROFILES: [Profile; 6] = [
    Profile {
        name: "generic",
        exe: "/usr/bin/kubelet",
        banner: "Kubernetes v1.32.4",
        config: "/etc/kubernetes/credential-provider-config.yaml",
        bin_dir: "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
        k3s: false,
    },
    Profile {
        name: "eks",
        exe: "/usr/bin/kubelet",
        banner: "Kubernetes v1.32.4-eks-1234",
        config: "/etc/eks/image-credential-provider/config.json",
        bin_dir: "/etc/eks/image-credential-provider",
        k3s: false,
    },
    Profile {
        name: "aks",
        exe: "/usr/local/bin/kubelet",
        banner: "Kubernetes v1.32.4",
        config: "/var/lib/kubelet/credential-provider-config.yaml",
        bin_dir: "/var/lib/kubelet/credential-provider",
        k3s: false,
    },
    Profile {
        name: "gke",
        exe: "/home/kubernetes/bin/kubelet",
        banner: "Kubernetes v1.32.4-gke.100",
        config: "/etc/srv/kubernetes/cri_auth_config.yaml",
        bin_dir: "/home/kubernetes/bin",
        k3s: false,
    },
    Profile {
        name: "k3s",
        exe: "/usr/local/bin/k3s",
        banner: "k3s version v1.32.4+k3s1 (abcdef)\ngo version go1.23",
        config: "/var/lib/rancher/credentialprovider/config.yaml",
        bin_dir: "/var/lib/rancher/credentialprovider/bin",
        k3s: true,
    },
    Profile {
        name: "rke2",
        exe: "/var/lib/rancher/rke2/data/v1.32.4-rke2r1-abc/bin/kubelet",
        banner: "Kubernetes v1.32.4+rke2r1",
        config: "/var/lib/rancher/credentialprovider/config.yaml",
        bin_dir: "/var/lib/rancher/credentialprovider/bin",
        k3s: false,
    },
];

const KUBELET_CONFIG: &str = "/var/lib/kubelet/config.yaml";

/// A plain provider named `my-plugin`; `extra` lines appended (4-space indented).
fn provider(extra: &str) -> String {
    format!(
        "  - name: my-plugin\n    matchImages: [\"registry.example.com\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 1m\n{extra}"
    )
}

const TOKENS: &str = "    tokenAttributes:\n      serviceAccountTokenAudience: registry.example.com\n      requireServiceAccount: true\n      cacheType: ServiceAccount\n";

/// A fake node: `root` holds `proc/`, the kubelet and the files.
struct Node {
    _dir: TempDir,
    root: PathBuf,
}

fn on_node(root: &Path, node_path: &str) -> PathBuf {
    root.join(node_path.trim_start_matches('/'))
}

fn elf_header(machine: u16) -> Vec<u8> {
    let mut head = b"\x7fELF\x02\x01\x01".to_vec();
    head.resize(18, 0);
    head.extend_from_slice(&machine.to_le_bytes());
    head.resize(64, 0);
    head
}

/// This test binary's own architecture as an ELF machine (the tests run the checker here).
fn own_machine() -> u16 {
    match std::env::consts::ARCH {
        "aarch64" => 183,
        _ => 62,
    }
}

impl Node {
    fn new(p: &Profile, config: &str, kubelet_config: Option<&str>, extra_flags: &[&str]) -> Self {
        let dir = TempDir::new(&format!("doctor-{}", p.name));
        let root = dir.path().to_path_buf();
        // Some other process first, so the search has to look.
        let init = root.join("proc/1");
        std::fs::create_dir_all(&init).unwrap();
        std::fs::write(init.join("cmdline"), b"/sbin/init\0splash\0").unwrap();
        let pid = root.join("proc/812");
        std::fs::create_dir_all(&pid).unwrap();
        let mut argv: Vec<String> = vec![p.exe.to_owned()];
        if p.k3s {
            argv.push("agent".into());
        } else {
            argv.push(format!("--config={KUBELET_CONFIG}"));
            argv.push(format!("--image-credential-provider-config={}", p.config));
            argv.push("--image-credential-provider-bin-dir".into());
            argv.push(p.bin_dir.into());
        }
        argv.extend(extra_flags.iter().map(|s| (*s).to_owned()));
        let mut cmdline = argv.join("\0").into_bytes();
        cmdline.push(0);
        std::fs::write(pid.join("cmdline"), cmdline).unwrap();
        std::os::unix::fs::symlink(p.exe, pid.join("exe")).unwrap();
        let exe = on_node(&root, p.exe);
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        write_script(
            &exe,
            &format!("printf '%s\\n' '{}'", p.banner.replace('\n', "' '")),
        );
        if !p.k3s {
            let file = on_node(&root, KUBELET_CONFIG);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(
                file,
                kubelet_config.unwrap_or(
                    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
                ),
            )
            .unwrap();
        }
        let file = on_node(&root, p.config);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, config).unwrap();
        let bin = on_node(&root, p.bin_dir);
        std::fs::create_dir_all(&bin).unwrap();
        write_script(&bin.join("my-plugin"), "exit 0");
        // The node's architecture, as doctor reads it.
        let sh = root.join("bin/sh");
        std::fs::create_dir_all(sh.parent().unwrap()).unwrap();
        std::fs::write(sh, elf_header(own_machine())).unwrap();
        Node { _dir: dir, root }
    }

    fn doctor(&self, extra: &[&str]) -> Run {
        let mut args = vec![
            "doctor".to_owned(),
            "--output".into(),
            "json".into(),
            "--host-root".into(),
            self.root.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        check(args)
    }
}

fn problems(report: &serde_json::Value) -> Vec<String> {
    common::messages(report, "problems")
}

#[test]
fn a_healthy_node_of_every_platform() {
    for p in &PROFILES {
        let node = Node::new(p, &v1_config(&provider("")), None, &[]);
        let run = node.doctor(&[]);
        assert_eq!(run.stderr, "", "{}", p.name);
        let report = run.json();
        assert_eq!(run.code, 0, "{}: {report}", p.name);
        assert_eq!(report["healthy"], true);
        assert_eq!(report["kubelet"]["pid"], "812");
        assert_eq!(report["kubelet"]["embeddedInK3s"], p.k3s);
        assert_eq!(report["kubeletVersion"], "1.32", "{}", p.name);
        assert_eq!(
            report["kubeletVersionFrom"],
            format!("{} --version", p.exe),
            "{}",
            p.name
        );
        assert_eq!(report["imageCredentialProviderConfig"], p.config);
        assert_eq!(report["imageCredentialProviderBinDir"], p.bin_dir);
        assert_eq!(report["problems"], json!([]));
        assert_eq!(report["warnings"], json!([]));
        assert_eq!(report["rbac"], serde_json::Value::Null);
        assert_eq!(report["validation"]["valid"], true);
    }
}

#[test]
fn token_attributes_on_a_1_32_kubelet_break_every_platform() {
    for p in &PROFILES {
        let node = Node::new(p, &v1_config(&provider(TOKENS)), None, &[]);
        let run = node.doctor(&[]);
        let report = run.json();
        assert_eq!(run.code, 1, "{}: {report}", p.name);
        assert_eq!(report["healthy"], false);
        assert_eq!(
            problems(&report),
            vec![format!(
                "the kubelet cannot read its config and exits 1 at start: {}: strict decoding error: unknown field \"providers[0].tokenAttributes\"",
                on_node(&node.root, p.config).display()
            )],
            "{}",
            p.name
        );
    }
}

#[test]
fn gates_come_from_the_kubelet_config_file_and_flags_and_rbac_is_printed() {
    let kubelet_config = format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  {GATE}: true\nimagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\n"
    );
    let banner_133 = Profile {
        banner: "Kubernetes v1.33.1",
        ..PROFILES[0]
    };
    // 1.33 knows no cacheType: the config without it, gate on in the --config file.
    let tokens_133 = TOKENS.replace("      cacheType: ServiceAccount\n", "");
    let node = Node::new(
        &banner_133,
        &v1_config(&provider(&tokens_133)),
        Some(&kubelet_config),
        &[],
    );
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["kubeletVersion"], "1.33");
    assert_eq!(report["featureGates"], json!({GATE: true}));
    assert_eq!(
        report["imagePullCredentialsVerificationPolicy"],
        "NeverVerifyPreloadedImages"
    );
    assert_eq!(
        common::messages(&report, "warnings"),
        vec!["tokenAttributes without cacheType was accepted by kubelet 1.33 but stops a 1.34+ kubelet from starting (kubernetes/kubernetes#132617)".to_owned()]
    );
    assert_eq!(
        report["rbac"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: kubelet-credential-provider-audiences\nrules:\n  - apiGroups: [\"\"]\n    resources: [\"registry.example.com\"]\n    verbs: [\"request-serviceaccounts-token-audience\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: kubelet-credential-provider-audiences\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: kubelet-credential-provider-audiences\nsubjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: Group\n    name: system:nodes\n"
    );

    // The command-line flag wins over the file: gate off → Forbidden.
    let node = Node::new(
        &banner_133,
        &v1_config(&provider(&tokens_133)),
        Some(&kubelet_config),
        &[&format!("--feature-gates={GATE}=false")],
    );
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        problems(&report),
        vec![format!(
            "the kubelet exits 1 at start: failed to validate credential provider config: providers.tokenAttributes: Forbidden: tokenAttributes is not supported when {GATE} feature gate is disabled"
        )]
    );
}

#[test]
fn kubelet_version_flag_overrides_the_binary() {
    let node = Node::new(&PROFILES[0], &v1_config(&provider(TOKENS)), None, &[]);
    let run = node.doctor(&["--kubelet-version", "v1.34.0"]);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["kubeletVersion"], "v1.34.0");
    assert_eq!(report["kubeletVersionFrom"], "--kubelet-version");
    let run = node.doctor(&["--kubelet-version", "1.99"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
}

#[test]
fn a_missing_or_foreign_binary_is_a_problem() {
    let p = &PROFILES[1];
    let two = v1_config(&format!(
        "{}{}",
        provider(""),
        provider("").replace("my-plugin", "missing-plugin")
    ));
    let node = Node::new(p, &two, None, &[]);
    let foreign = if own_machine() == 62 { 183 } else { 62 };
    let bin = on_node(&node.root, p.bin_dir).join("my-plugin");
    std::fs::write(&bin, elf_header(foreign)).unwrap();
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    let names = |m: u16| if m == 62 { "amd64" } else { "arm64" };
    assert_eq!(
        problems(&report),
        vec![
            format!(
                "plugin binary executable {} did not exist",
                on_node(&node.root, p.bin_dir)
                    .join("missing-plugin")
                    .display()
            ),
            format!(
                "{} is built for {}, but the node is {}: every exec fails with \"exec format error\" and the pull goes anonymous",
                bin.display(),
                names(foreign),
                names(own_machine())
            ),
        ]
    );
}

#[test]
fn a_kubelet_without_provider_flags_goes_anonymous() {
    let dir = TempDir::new("doctor-noflags");
    let pid = dir.path().join("proc/77");
    std::fs::create_dir_all(&pid).unwrap();
    std::fs::write(pid.join("cmdline"), b"/usr/bin/kubelet\0--v=2\0").unwrap();
    let run = check([
        "doctor",
        "--output",
        "json",
        "--kubelet-version",
        "1.32",
        "--host-root",
        &dir.path().display().to_string(),
    ]);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        problems(&report),
        vec!["the kubelet runs without --image-credential-provider-config and --image-credential-provider-bin-dir: no plugin runs, so private images are pulled anonymously (or with pull secrets only)".to_owned()]
    );
}

#[test]
fn no_kubelet_and_a_wrong_root() {
    let dir = TempDir::new("doctor-empty");
    std::fs::create_dir_all(dir.path().join("proc/1")).unwrap();
    std::fs::write(dir.path().join("proc/1/cmdline"), b"/sbin/init\0").unwrap();
    let run = check([
        "doctor",
        "--output",
        "json",
        "--host-root",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["kubelet"], serde_json::Value::Null);
    let run = check([
        "doctor",
        "--host-root",
        &dir.path().join("nothing").display().to_string(),
    ]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn an_unusable_token_cache_directory_is_a_warning() {
    let p = &PROFILES[0];
    let config = v1_config(&provider(
        "    args: [\"--token-cache-dir=/var/lib/cache-link\"]\n",
    ));
    let node = Node::new(p, &config, None, &[]);
    std::os::unix::fs::symlink("/tmp", on_node(&node.root, "/var/lib/cache-link")).unwrap();
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 0, "a slower pull still works: {report}");
    assert_eq!(
        common::messages(&report, "warnings"),
        vec!["token cache directory /var/lib/cache-link: it is not a directory (a symlink is not followed); the provider fetches a new token on every exec".to_owned()]
    );
}
