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
    if kcp_testkit::skip_on_windows(
        "a_healthy_node_of_every_platform",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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

/// A healthy node still says what was checked: one line per provider of the config with the
/// binary the kubelet execs, whether it can, what it is built for and what it matches; the
/// same facts under `providers` in JSON.
#[test]
fn a_healthy_node_lists_each_provider_it_checked() {
    if kcp_testkit::skip_on_windows(
        "a_healthy_node_lists_each_provider_it_checked",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
    let p = &PROFILES[0];
    let other = "  - name: other-plugin\n    matchImages: [\"*.registry.example.org\", \"registry.example.org\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 1m\n";
    let node = Node::new(
        p,
        &v1_config(&format!("{}{other}", provider(""))),
        None,
        &[],
    );
    let bin = on_node(&node.root, p.bin_dir).join("other-plugin");
    std::fs::write(&bin, elf_header(own_machine())).unwrap();
    let chmod = |mode: u32| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(0o755);
    let arch = if own_machine() == 62 {
        "amd64"
    } else {
        "arm64"
    };
    let root = node.root.display().to_string();

    let run = check(["doctor", "--host-root", &root]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
    assert_eq!(
        run.stdout,
        format!(
            "kubelet: pid 812 (/usr/bin/kubelet)\n\
             version: 1.32 (from /usr/bin/kubelet --version)\n\
             --image-credential-provider-config: /etc/kubernetes/credential-provider-config.yaml\n\
             --image-credential-provider-bin-dir: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec\n\
             provider my-plugin: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/my-plugin: executable, script (#!/bin/sh); matches registry.example.com\n\
             provider other-plugin: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/other-plugin: executable, {arch}; matches *.registry.example.org, registry.example.org\n\
             result: healthy\n"
        )
    );
    let report = node.doctor(&[]).json();
    assert_eq!(
        report["providers"],
        json!([
            {
                "name": "my-plugin",
                "binary": "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/my-plugin",
                "found": true,
                "executable": true,
                "state": "executable",
                "format": "script",
                "architecture": null,
                "interpreter": "/bin/sh",
                "matchImages": ["registry.example.com"],
            },
            {
                "name": "other-plugin",
                "binary": "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/other-plugin",
                "found": true,
                "executable": true,
                "state": "executable",
                "format": "ELF",
                "architecture": arch,
                "interpreter": null,
                "matchImages": ["*.registry.example.org", "registry.example.org"],
            },
        ])
    );

    // Without its execute bit the kubelet refuses to start: the line says why beside the problem.
    chmod(0o644);
    let run = check(["doctor", "--host-root", &root]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "provider other-plugin: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/other-plugin: not executable, {arch}; matches *.registry.example.org, registry.example.org\n"
        )),
        "{}",
        run.stdout
    );
    let report = node.doctor(&[]).json();
    assert_eq!(report["providers"][1]["executable"], false);
    assert_eq!(report["providers"][1]["state"], "not executable");
}

#[test]
fn token_attributes_on_a_1_32_kubelet_break_every_platform() {
    if kcp_testkit::skip_on_windows(
        "token_attributes_on_a_1_32_kubelet_break_every_platform",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "gates_come_from_the_kubelet_config_file_and_flags_and_rbac_is_printed",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "kubelet_version_flag_overrides_the_binary",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "a_missing_or_foreign_binary_is_a_problem",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "a_kubelet_without_provider_flags_goes_anonymous",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "no_kubelet_and_a_wrong_root",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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
    if kcp_testkit::skip_on_windows(
        "an_unusable_token_cache_directory_is_a_warning",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
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

/// A provider answering `registry.example.com` with a password that must never be printed.
const ANSWER: &str = r#"cat >/dev/null
printf '%s\n' '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"registry.example.com":{"username":"puller","password":"never-print-this-password"}}}'"#;

#[test]
fn images_run_their_matching_providers_as_the_kubelet_would() {
    if kcp_testkit::skip_on_windows("doctor --image", "the fake providers are shell scripts") {
        return;
    }
    let p = &PROFILES[0];
    let config = v1_config(&format!(
        "{}{}",
        provider(""),
        provider("")
            .replace("my-plugin", "bad-plugin")
            .replace("registry.example.com", "bad.example.com")
    ));
    let node = Node::new(p, &config, None, &[]);
    let bin = on_node(&node.root, p.bin_dir);
    write_script(&bin.join("my-plugin"), ANSWER);
    write_script(
        &bin.join("bad-plugin"),
        "cat >/dev/null\necho 'bad-plugin: no credentials for bad.example.com: access denied' >&2\nexit 1",
    );

    let run = node.doctor(&["--image", "registry.example.com/team/app:v1"]);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert!(
        !run.stdout.contains("never-print-this-password"),
        "{}",
        run.stdout
    );
    assert_eq!(problems(&report), Vec::<String>::new());
    let image = &report["images"][0];
    assert_eq!(image["image"], "registry.example.com/team/app:v1");
    assert_eq!(image["normalized"], "registry.example.com/team/app");
    assert_eq!(image["matching"], json!(["my-plugin"]));
    assert_eq!(image["result"], "healthy");
    assert_eq!(
        image["serviceAccountToken"],
        "none: doctor cannot mint a pod's service-account token"
    );
    let run_json = &image["providers"][0];
    assert_eq!(run_json["result"], "healthy");
    assert_eq!(run_json["keysUsed"], json!(["registry.example.com"]));
    assert_eq!(run_json["auth"][0]["password"], "<redacted>");
    assert_eq!(
        run_json["argv"],
        json!([bin.join("my-plugin").display().to_string()])
    );
    assert_eq!(
        run_json["request"],
        r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"registry.example.com/team/app"}"#
    );

    // A failing provider, an image nobody matches: each is a problem naming it; the healthy
    // image stays healthy.
    let run = node.doctor(&[
        "--image",
        "bad.example.com/app",
        "--image",
        "registry.example.com/team/app:v1",
        "--image",
        "nginx:1.27",
    ]);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        problems(&report),
        vec![
            "image bad.example.com/app: the kubelet would log: error execing credential provider plugin bad-plugin for image bad.example.com/app: exit status 1: bad-plugin: no credentials for bad.example.com: access denied".to_owned(),
            "image nginx:1.27: no provider matches docker.io/library/nginx, so the kubelet pulls it anonymously".to_owned(),
        ]
    );
    let results: Vec<&serde_json::Value> = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["result"])
        .collect();
    assert_eq!(results, vec!["broken", "healthy", "anonymous"]);
    assert_eq!(report["images"][0]["providers"][0]["result"], "broken");
    assert_eq!(report["images"][2]["providers"], json!([]));

    // The same for people.
    let run = check([
        "doctor",
        "--host-root",
        &node.root.display().to_string(),
        "--image",
        "bad.example.com/app",
        "--image",
        "nginx:1.27",
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("image bad.example.com/app -> bad.example.com/app: broken (run without a service-account token: doctor cannot mint one)\n  bad-plugin: broken: the kubelet would log: error execing credential provider plugin bad-plugin for image bad.example.com/app: exit status 1: bad-plugin: no credentials for bad.example.com: access denied\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("image nginx:1.27 -> docker.io/library/nginx: anonymous (run without a service-account token: doctor cannot mint one)\n  no provider matches: the kubelet pulls it anonymously\n"),
        "{}",
        run.stdout
    );

    // An image that is no image is a usage error.
    let run = node.doctor(&["--image", "nginx::1"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn providers_that_require_a_service_account_are_not_run_from_doctor() {
    if kcp_testkit::skip_on_windows("doctor --image", "the fake providers are shell scripts") {
        return;
    }
    let node = Node::new(&PROFILES[0], &v1_config(&provider(TOKENS)), None, &[]);
    // It would fail if it ran.
    write_script(
        &on_node(&node.root, PROFILES[0].bin_dir).join("my-plugin"),
        "exit 1",
    );
    let run = node.doctor(&[
        "--kubelet-version",
        "1.34",
        "--image",
        "registry.example.com/app",
    ]);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(
        common::messages(&report, "warnings"),
        vec!["image registry.example.com/app: not run from doctor: requireServiceAccount is true and doctor cannot mint a pod's service-account token (check it with `run --sa-token`)".to_owned()]
    );
    assert_eq!(report["images"][0]["result"], "not run");
    assert_eq!(report["images"][0]["providers"][0]["result"], "not run");
    assert_eq!(
        report["images"][0]["providers"][0]["exitCode"],
        serde_json::Value::Null
    );
}

#[test]
fn an_unusable_metrics_file_is_a_warning() {
    if kcp_testkit::skip_on_windows(
        "an_unusable_metrics_file_is_a_warning",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
    let p = &PROFILES[0];
    let dir = "/var/lib/kcp-metrics";
    let file = "/var/lib/kcp-metrics/ecr.prom";
    let warnings = |extra: &str, setup: &dyn Fn(&Path)| {
        let node = Node::new(p, &v1_config(&provider(extra)), None, &[]);
        setup(&node.root);
        let run = node.doctor(&[]);
        let report = run.json();
        assert_eq!(run.code, 0, "metrics never fail a pull: {report}");
        common::messages(&report, "warnings")
    };
    let args = format!("    args: [\"--metrics-file={file}\"]\n");
    let env = format!(
        "    env:\n      - name: CREDENTIAL_PROVIDER_METRICS_FILE\n        value: {file}\n"
    );
    let tail = "; the provider still answers, but its metrics are not written";

    // A usable directory, with or without the file: nothing to say, either spelling.
    let good = |root: &Path| std::fs::create_dir_all(on_node(root, dir)).unwrap();
    assert_eq!(warnings(&args, &good), Vec::<String>::new());
    assert_eq!(
        warnings(&env, &|root: &Path| {
            good(root);
            std::fs::write(on_node(root, file), "# metrics\n").unwrap();
        }),
        Vec::<String>::new()
    );
    let spaced = format!("    args: [\"--metrics-file\", \"{file}\"]\n");
    assert_eq!(warnings(&spaced, &good), Vec::<String>::new());

    // No directory.
    let missing = warnings(&args, &|_: &Path| {});
    assert_eq!(missing.len(), 1);
    assert!(
        missing[0].starts_with(&format!(
            "metrics file {file}: its directory {dir} cannot be used: "
        )) && missing[0].ends_with(tail),
        "{missing:?}"
    );
    // A symlinked directory.
    assert_eq!(
        warnings(&args, &|root: &Path| {
            std::os::unix::fs::symlink("/tmp", on_node(root, dir)).unwrap();
        }),
        vec![format!(
            "metrics file {file}: its directory {dir} is not a directory (a symlink is not followed){tail}"
        )]
    );
    // A directory someone else owns (the tests may not run as root: then skip this case only).
    if std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        assert_eq!(
            warnings(&env, &|root: &Path| {
                good(root);
                std::os::unix::fs::chown(on_node(root, dir), Some(1000), None).unwrap();
            }),
            vec![format!(
                "metrics file {file}: its directory {dir} is owned by uid 1000, not by root, whom the kubelet runs plugins as{tail}"
            )]
        );
    }
    // The file a symlink, or a FIFO.
    assert_eq!(
        warnings(&args, &|root: &Path| {
            good(root);
            std::os::unix::fs::symlink("/etc/passwd", on_node(root, file)).unwrap();
        }),
        vec![format!(
            "metrics file {file}: it is a symlink, not a regular file{tail}"
        )]
    );
    assert_eq!(
        warnings(&args, &|root: &Path| {
            good(root);
            let status = std::process::Command::new("mkfifo")
                .arg(on_node(root, file))
                .status()
                .unwrap();
            assert!(status.success());
        }),
        vec![format!(
            "metrics file {file}: it is a FIFO, not a regular file{tail}"
        )]
    );
    // A relative path.
    assert_eq!(
        warnings("    args: [\"--metrics-file=ecr.prom\"]\n", &|_: &Path| {}),
        vec![format!(
            "metrics file ecr.prom: it is not an absolute path, so it depends on the kubelet's working directory{tail}"
        )]
    );
}

/// `doctor --fleet-tokens`: which published entry each fleet-mode provider reads for an image,
/// found by running it in key-only mode with the kubelet's config (the shared identity from the
/// kubelet's own environment, as on EKS), a warning when the Secret publishes another key, and
/// the providers' metrics.
#[test]
fn fleet_tokens_say_whether_the_nodes_providers_read_the_published_entries() {
    if kcp_testkit::skip_on_windows("doctor --fleet-tokens", "the fake node runs Linux binaries") {
        return;
    }
    let host = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
    let fake = common::fake_ecr(host, "doctor-fleet-password", 12 * 3600);
    let ecr_bin = common::target_bin_dir().join("ecr-credential-provider");
    let env = [
        ("AWS_SECRET_ACCESS_KEY", "static-secret-key-value"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("CREDENTIAL_PROVIDER_CACHE_JITTER", "0"),
    ];
    kcp_testkit::secrets::register("static-secret-key-value");
    // The controller's run for `identity` publishes one entry: (name, bytes).
    let publish = |dir: &Path, identity: &str| -> (String, Vec<u8>) {
        let cache = dir.join(format!("controller-{identity}"));
        let mut plugin = kcp_testkit::Plugin::program(&ecr_bin)
            .env("AWS_ACCESS_KEY_ID", "AKIDCONTROLLER")
            .env("AWS_ENDPOINT_URL_ECR", fake.url())
            .env("AWS_STS_REGIONAL_ENDPOINTS", "regional")
            .args([
                format!("--token-cache-dir={}", cache.display()),
                format!("--token-cache-shared-identity={identity}"),
            ]);
        for (k, v) in env {
            plugin = plugin.env(k, v);
        }
        plugin
            .request(kcp_kubelet::ApiVersion::V1, &format!("{host}/app"))
            .accepted();
        common::only_entry(&cache)
    };
    let p = &PROFILES[1];
    // `--image` runs the provider here as the kubelet would on the node: its metrics file is a
    // real path here; doctor reads the node's under the host root.
    let real = TempDir::new("doctor-fleet-metrics");
    let metrics = real.path().join("kcp.prom").display().to_string();
    let config = v1_config(&format!(
        "  - name: ecr-credential-provider\n    matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 1m\n    args: [\"--metrics-file={metrics}\"]\n    env:\n      - {{name: AWS_ACCESS_KEY_ID, value: AKIDNODE}}\n      - {{name: AWS_SECRET_ACCESS_KEY, value: static-secret-key-value}}\n      - {{name: AWS_EC2_METADATA_DISABLED, value: \"true\"}}\n      - {{name: AWS_ENDPOINT_URL_ECR, value: \"{}\"}}\n",
        fake.url()
    ));
    let node = Node::new(p, &config, None, &[]);
    // EKS: the kubelet's environment names the shared identity.
    std::fs::write(
        node.root.join("proc/812/environ"),
        b"PATH=/usr/bin\0CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY=nodes\0",
    )
    .unwrap();
    let bin = on_node(&node.root, p.bin_dir);
    std::fs::copy(&ecr_bin, bin.join("ecr-credential-provider")).unwrap();
    let metrics_file = on_node(&node.root, &metrics);
    std::fs::create_dir_all(metrics_file.parent().unwrap()).unwrap();
    std::fs::write(
        &metrics_file,
        "# kubelet credential provider metrics (kcp-plugin); rewritten by each exec, do not edit\ncredential_provider_requests_total{provider=\"ecr\",outcome=\"fetched\"} 7\n",
    )
    .unwrap();
    let image = format!("{host}/app:v1");
    let tokens = node.root.join("fleet-tokens");
    std::fs::create_dir_all(&tokens).unwrap();

    // Published for another identity: the node's provider reads an entry nobody publishes.
    let (other, other_bytes) = publish(&node.root, "team-b");
    std::fs::write(tokens.join(&other), &other_bytes).unwrap();
    let run = node.doctor(&[
        "--image",
        &image,
        "--fleet-tokens",
        &tokens.display().to_string(),
    ]);
    let report = run.json();
    let warnings = common::messages(&report, "warnings");
    let mismatch = warnings
        .iter()
        .find(|w| w.contains("), not among "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        mismatch.starts_with(&format!(
            "image {host}/app: this node's provider reads entry "
        )),
        "{mismatch}"
    );
    assert!(mismatch.contains(";shared-identity=team-b;"), "{mismatch}");
    assert!(mismatch.contains(";shared-identity=nodes;"), "{mismatch}");
    let fleet: Vec<String> = serde_json::from_value(report["fleet"].clone()).unwrap();
    assert!(
        fleet.contains(
            &"ecr-credential-provider: shared identity \"nodes\", 0 published entries for it"
                .to_owned()
        ),
        "{fleet:?}"
    );

    // Published for this node's identity (by a controller with IRSA's STS settings): read.
    std::fs::remove_file(tokens.join(&other)).unwrap();
    let (name, bytes) = publish(&node.root, "nodes");
    std::fs::write(tokens.join(&name), &bytes).unwrap();
    let run = node.doctor(&[
        "--image",
        &image,
        "--fleet-tokens",
        &tokens.display().to_string(),
    ]);
    let report = run.json();
    let fleet: Vec<String> = serde_json::from_value(report["fleet"].clone()).unwrap();
    assert!(
        fleet.contains(&format!(
            "image {host}/app: ecr-credential-provider reads the published entry {name}"
        )),
        "{fleet:?}"
    );
    let warnings = common::messages(&report, "warnings");
    assert!(
        warnings.contains(&"its metrics show 7 fetches and no answer from a published entry although 1 are published for its shared identity: its keys may differ from the controller's (check with --image)".to_owned()),
        "{warnings:?}"
    );
    assert!(!run.stdout.contains("doctor-fleet-password"));

    // Without --fleet-tokens (doctor on the node itself): the copies `wait` made in the
    // provider's token cache stand for what is published.
    let cache = on_node(
        &node.root,
        "/var/lib/kubelet-credential-provider/token-cache",
    );
    std::fs::create_dir_all(&cache).unwrap();
    let mut copy: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    copy["fleet"] = json!({"published": "sha256:00", "seenAt": 1});
    std::fs::write(cache.join(&name), serde_json::to_vec(&copy).unwrap()).unwrap();
    let run = node.doctor(&["--image", &image]);
    let fleet: Vec<String> = serde_json::from_value(run.json()["fleet"].clone()).unwrap();
    assert_eq!(
        fleet[0],
        format!(
            "the copies in this node's token cache: 1 entry: {name} ({})",
            copy["key"].as_str().unwrap()
        )
    );
    assert!(
        fleet.contains(&format!(
            "image {host}/app: ecr-credential-provider reads the published entry {name}"
        )),
        "{fleet:?}"
    );
}

/// A node installed by the alibaba profile (deploy/overlays/alibaba: the generic paths) whose
/// alibaba entry is in service-account mode without an OIDC provider and for another audience:
/// the kubelet starts and the provider runs, so doctor says so as warnings naming the provider
/// (the same checks as `validate`), and the node stays healthy.
#[test]
fn an_alibaba_entry_that_cannot_use_rrsa_is_a_warning() {
    if kcp_testkit::skip_on_windows(
        "an_alibaba_entry_that_cannot_use_rrsa_is_a_warning",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
    let profile = Profile {
        name: "alibaba",
        banner: "Kubernetes v1.34.2",
        ..PROFILES[0]
    };
    let entry = "  - name: alibaba-credential-provider\n    matchImages: [\"registry*.*.aliyuncs.com\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 30m\n    args: [get-credentials]\n    tokenAttributes:\n      serviceAccountTokenAudience: registry.example.com\n      cacheType: ServiceAccount\n      requireServiceAccount: false\n      optionalServiceAccountAnnotationKeys: [\"pod-identity.alibabacloud.com/role-name\"]\n";
    let node = Node::new(&profile, &v1_config(entry), None, &[]);
    write_script(
        &on_node(&node.root, profile.bin_dir).join("alibaba-credential-provider"),
        "exit 0",
    );
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["healthy"], true, "{report}");
    assert_eq!(problems(&report), Vec::<String>::new());
    let warnings: Vec<(String, String)> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["provider"].as_str().unwrap_or_default().to_owned(),
                w["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        warnings,
        [
            (
                "alibaba-credential-provider".to_owned(),
                "tokenAttributes.serviceAccountTokenAudience \"registry.example.com\": STS AssumeRoleWithOIDC accepts only audiences the RAM OIDC provider lists as client IDs, and RRSA's is sts.aliyuncs.com; unless you added \"registry.example.com\" there, every annotated pod fails to pull".to_owned()
            ),
            (
                "alibaba-credential-provider".to_owned(),
                "tokenAttributes without --oidc-provider-arn (or env ALIBABA_CLOUD_OIDC_PROVIDER_ARN): the provider has no RAM OIDC provider to trade a pod's token through, so annotated pods cannot pull as their role".to_owned()
            ),
        ]
    );
}

#[test]
fn a_repeated_name_on_a_1_32_node_is_the_fatal_registration() {
    if kcp_testkit::skip_on_windows(
        "a_repeated_name_on_a_1_32_node_is_the_fatal_registration",
        "doctor reads a Linux node (/proc, ELF binaries, file owners)",
    ) {
        return;
    }
    // The fake node's kubelet says v1.32.4: validation passes, registration kills it.
    let twice = v1_config(&format!("{}{}", provider(""), provider("")));
    let node = Node::new(&PROFILES[0], &twice, None, &[]);
    let run = node.doctor(&[]);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        problems(&report),
        vec!["the kubelet passes validation, then dies at registration with exit status 255: Credential provider \"my-plugin\" was registered twice".to_owned()]
    );
}
