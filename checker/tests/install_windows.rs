//! The Windows installer: `credential-provider-check.exe install`, as the HostProcess DaemonSet
//! (deploy/overlays/aks-windows) runs it, against a fake node C: drive in a temp dir, and `wait`,
//! its main container. These run where the binaries under test are the Windows ones
//! (`scripts/cross-test --target x86_64-pc-windows-gnu`, under wine); a Linux build refuses the
//! Windows platforms (checker/tests/fleet_install.rs), so natively they do not apply.
//!
//! What is checked: the `.exe` files go into the bin dir and the config where the platform says,
//! with node paths (`C:\...`) in the report, a rerun changes nothing, an upgrade keeps
//! `<name>.exe.previous`; the AKS profile (`--binaries-only --replace-platform-binaries`) takes
//! over AgentBaker's binary and leaves its config byte for byte; the oidc registries file lands
//! at `C:\k\oidc-registries.yaml`; a binary that is not a Windows executable of the host's
//! architecture, a Linux platform and a path off C: are refused with one line and nothing written.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::install::{assert_one_line, assert_up_to_date, with_tail};
use common::{Run, assert_contains, check, exe, target_bin_dir};
use kcp_testkit::TempDir;

const BIN_DIR: &str = r"C:\var\lib\kubelet\credential-provider";
const CONFIG: &str = r"C:\k\credential-provider-config.yaml";

/// Whether the binaries under test are Windows ones; natively the test does not apply.
fn windows() -> bool {
    if kcp_testkit::windows_target() {
        return true;
    }
    kcp_testkit::skip::not_applicable(
        "the Windows installer runs under scripts/cross-test --target x86_64-pc-windows-gnu (wine); the Linux build refuses Windows platforms",
    );
    false
}

/// The node path `node` (`C:\...`) under the fake drive `root`.
fn under(root: &Path, node: &str) -> PathBuf {
    node[3..]
        .split('\\')
        .fold(root.to_path_buf(), |p, c| p.join(c))
}

/// The first 4 KiB of a Windows binary under test: its PE headers (the installer reads those).
fn pe_head() -> Vec<u8> {
    let mut head = std::fs::read(target_bin_dir().join(exe("acr-credential-provider"))).unwrap();
    head.truncate(4096);
    head
}

/// A node's C: drive with `Windows\System32\cmd.exe` of the binaries' architecture.
fn node(name: &str) -> TempDir {
    let root = TempDir::new(name);
    let cmd = under(root.path(), r"C:\Windows\System32\cmd.exe");
    std::fs::create_dir_all(cmd.parent().unwrap()).unwrap();
    std::fs::write(cmd, pe_head()).unwrap();
    root
}

/// A release directory: `<name>.exe` files with the real PE headers and `tag`.
fn release(tag: &str, names: &[&str]) -> TempDir {
    let head = pe_head();
    common::install::release(
        &format!("windows-release-{tag}"),
        names.iter().map(|name| {
            (
                format!("{name}.exe"),
                with_tail(&head, &format!("{tag} {name}\n")),
            )
        }),
    )
}

fn install<S: AsRef<OsStr>>(root: &Path, from: &Path, args: &[S]) -> Run {
    let fixed = ["--platform", "aks-windows", "--bin-dir", BIN_DIR].map(OsStr::new);
    common::install::run(
        root,
        from,
        fixed.into_iter().chain(args.iter().map(AsRef::as_ref)),
    )
}

/// Every file under `root` with its content, the fake `cmd.exe` left out.
fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.retain(|(p, _)| p != "Windows/System32/cmd.exe");
    out.sort();
    out
}

fn names(root: &Path) -> Vec<String> {
    files(root).into_iter().map(|(p, _)| p).collect()
}

#[test]
fn the_windows_installer_writes_the_exe_files_and_the_config_then_a_rerun_changes_nothing() {
    if !windows() {
        return;
    }
    let root = node("win-install");
    let v1 = release("v1", &["acr-credential-provider"]);
    let run = install(root.path(), v1.path(), &["--providers", "acr"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    for line in [
        format!("install: {BIN_DIR}\\acr-credential-provider.exe"),
        format!("record checksums: {BIN_DIR}\\.kubelet-credential-providers.sha256"),
        format!("install: {CONFIG}"),
        format!("validated: {CONFIG} with --bin-dir {BIN_DIR}"),
        "3 change(s) made".to_owned(),
        format!("  --image-credential-provider-bin-dir={BIN_DIR}"),
        "restart the kubelet to load the new config: Restart-Service kubelet on the node (PowerShell)".to_owned(),
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{}",
            run.stdout
        );
    }
    assert_eq!(
        names(root.path()),
        [
            "k/credential-provider-config.yaml",
            "var/lib/kubelet/credential-provider/.kubelet-credential-providers.sha256",
            "var/lib/kubelet/credential-provider/acr-credential-provider.exe",
        ]
    );
    // The config is init's, names the provider without .exe, and reads C:\k\azure.json.
    let config = std::fs::read_to_string(under(root.path(), CONFIG)).unwrap();
    let init = check([
        "init",
        "--platform",
        "aks-windows",
        "--provider",
        "acr",
        "--bin-dir",
        BIN_DIR,
    ]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(config.ends_with(&init.stdout), "{config}");
    assert!(
        config.contains("  - name: acr-credential-provider\n"),
        "{config}"
    );
    assert!(config.contains(r#""C:\\k\\azure.json""#), "{config}");
    assert_eq!(
        std::fs::read(under(
            root.path(),
            &format!("{BIN_DIR}\\acr-credential-provider.exe")
        ))
        .unwrap(),
        std::fs::read(v1.path().join("acr-credential-provider.exe")).unwrap()
    );

    let before = files(root.path());
    let again = install(root.path(), v1.path(), &["--providers", "acr"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_up_to_date(&again);
    assert_eq!(files(root.path()), before);

    let v2 = release("v2", &["acr-credential-provider"]);
    let upgrade = install(root.path(), v2.path(), &["--providers", "acr"]);
    assert_eq!(upgrade.code, 0, "{}", upgrade.stderr);
    assert_contains(
        &upgrade.stdout,
        &format!(
            "update: {BIN_DIR}\\acr-credential-provider.exe (previous version kept as {BIN_DIR}\\acr-credential-provider.exe.previous)\n"
        ),
    );
    assert_eq!(
        std::fs::read(under(
            root.path(),
            &format!("{BIN_DIR}\\acr-credential-provider.exe.previous")
        ))
        .unwrap(),
        std::fs::read(v1.path().join("acr-credential-provider.exe")).unwrap()
    );
}

#[test]
fn the_aks_profile_takes_over_agentbakers_binary_and_leaves_its_config() {
    if !windows() {
        return;
    }
    let root = node("win-aks");
    let theirs = under(
        root.path(),
        &format!("{BIN_DIR}\\acr-credential-provider.exe"),
    );
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, b"AgentBaker's acr-credential-provider.exe").unwrap();
    let config = under(root.path(), CONFIG);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let agentbaker = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: acr-credential-provider\n    matchImages:\n      - \"*.azurecr.io\"\n    defaultCacheDuration: \"10m\"\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    args:\n      - C:\\k\\azure.json\n";
    std::fs::write(&config, agentbaker).unwrap();
    let ours = release("v1", &["acr-credential-provider"]);
    let profile = [
        "--providers",
        "acr",
        "--binaries-only",
        "--replace-platform-binaries",
    ];

    // Without --replace-platform-binaries the foreign binary is refused, nothing written.
    let before = files(root.path());
    let refused = install(
        root.path(),
        ours.path(),
        &["--providers", "acr", "--binaries-only"],
    );
    assert_one_line(&refused, 1, "was not installed by this project");
    assert_eq!(files(root.path()), before);

    let run = install(root.path(), ours.path(), &profile);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(
        &run.stdout,
        &format!("validated: {CONFIG} with --bin-dir {BIN_DIR}\n"),
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), agentbaker);
    let mut previous = theirs.clone().into_os_string();
    previous.push(".previous");
    assert_eq!(
        std::fs::read(previous).unwrap(),
        b"AgentBaker's acr-credential-provider.exe"
    );
    let again = install(root.path(), ours.path(), &profile);
    assert_up_to_date(&again);
}

#[test]
fn the_oidc_registries_file_goes_where_the_windows_config_names_it() {
    if !windows() {
        return;
    }
    let root = node("win-oidc");
    let from = release("v1", &["oidc-credential-provider"]);
    let cm = TempDir::new("win-oidc-configmap");
    let good = cm.path().join("registries.yaml");
    std::fs::write(
        &good,
        "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n    username: \"puller\"\n",
    )
    .unwrap();
    let args = |source: &Path| -> Vec<OsString> {
        vec![
            "--providers".into(),
            "oidc".into(),
            "--match-images".into(),
            "oidc=registry.example.com".into(),
            "--oidc-audience".into(),
            "registry.example.com".into(),
            "--oidc-registries-from".into(),
            source.into(),
        ]
    };
    let run = install(root.path(), from.path(), &args(&good));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(
        &run.stdout,
        "validated: C:\\k\\oidc-registries.yaml (as oidc-credential-provider reads it)\n",
    );
    let written =
        std::fs::read_to_string(under(root.path(), r"C:\k\oidc-registries.yaml")).unwrap();
    assert!(written.ends_with("username: \"puller\"\n"), "{written}");

    let bad = cm.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n",
    )
    .unwrap();
    let before = files(root.path());
    let refused = install(root.path(), from.path(), &args(&bad));
    assert_one_line(&refused, 1, "missing field \"username\"");
    assert_eq!(files(root.path()), before, "the node kept its file");
}

#[test]
fn refusals_are_one_line_and_write_nothing() {
    if !windows() {
        return;
    }
    let root = node("win-refuse");
    let from = release("v1", &["acr-credential-provider"]);
    // A Linux binary under the .exe name.
    let linux = TempDir::new("win-refuse-elf");
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[18] = 62;
    std::fs::write(linux.path().join("acr-credential-provider.exe"), elf).unwrap();
    let before = files(root.path());
    for (from, args, code, expect) in [
        (
            linux.path(),
            vec!["--providers", "acr"],
            1,
            "is not a Windows (PE) executable".to_owned(),
        ),
        (
            from.path(),
            vec!["--providers", "acr", "--arch", "arm64"],
            1,
            "--arch arm64 contradicts the host".to_owned(),
        ),
        (
            from.path(),
            vec!["--providers", "acr", "--config-path", r"D:\k\config.yaml"],
            2,
            r"--config-path D:\k\config.yaml: install writes the node's C: drive (--host-root), so every path must be on C:".to_owned(),
        ),
    ] {
        let run = install(root.path(), from, &args);
        assert_eq!(run.code, code, "{args:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(&expect), "{args:?}: {}", run.stderr);
        assert_eq!(files(root.path()), before, "{args:?}");
    }
    // The Windows build writes Windows nodes only.
    let run = common::install::run(
        root.path(),
        from.path(),
        ["--platform", "generic", "--providers", "acr"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "credential-provider-check: install on Windows writes Windows nodes (--platform aks-windows or eks-windows), not --platform generic\n"
    );
    assert_eq!(files(root.path()), before);
}

#[test]
fn wait_says_it_waits_and_keeps_running() {
    if !windows() {
        return;
    }
    let (mut child, line) = common::start_wait(&[], Stdio::null(), Stdio::null());
    assert_eq!(line.trim_end(), "waiting until the container is stopped");
    assert!(child.try_wait().unwrap().is_none(), "wait exited");
    child.kill().unwrap();
    child.wait().unwrap();

    let fleet = check([
        "wait",
        "--fleet-tokens",
        "x",
        "--token-cache-dir",
        "y",
        "--token-cache-shared-identity",
        "nodes",
    ]);
    assert_ne!(fleet.code, 0);
    assert_contains(
        &fleet.stderr,
        "fleet mode runs in the Linux DaemonSets only",
    );
}
