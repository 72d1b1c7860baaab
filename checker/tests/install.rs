//! `scripts/install`, the wrapper over `credential-provider-check install`, against a `--root`
//! temp dir holding a node's `/bin/sh` (the installer reads the host's architecture there), with
//! the workspace's built binaries (`--from` the target dir): fresh install, idempotent rerun, dry
//! run, refusal of foreign files, upgrades of its own, the config-directory drop-in, that what it
//! writes passes the checker, and that the config is `credential-provider-check init`'s (its
//! refusals, warnings and run-time files included); and that the wrapper only maps its options
//! onto the checker's and finds the checker where a user has it.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use common::install::{
    assert_one_line, assert_up_to_date, elf_header, mode, node_root, script_command, wrapper,
};
use common::{Run, check, provider_names, snapshot, target_bin_dir, validate_clean, write_script};
use kcp_testkit::TempDir;

const BIN_DIR: &str = "usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
const CONFIG: &str = "etc/kubernetes/credential-provider-config.yaml";
const MANIFEST: &str = ".kubelet-credential-providers.sha256";
/// The node paths of the defaults, as the report names them.
const NODE_BIN_DIR: &str = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
const NODE_CONFIG: &str = "/etc/kubernetes/credential-provider-config.yaml";
/// What [`node_root`] puts in a root before any install.
const HOST_FILES: [&str; 2] = ["bin/sh", "usr/bin/env"];

/// Runs `scripts/install --root ROOT --from <target dir> ARGS`.
fn install(root: &Path, args: &[&str]) -> Run {
    install_from(root, &target_bin_dir(), args)
}

fn install_from(root: &Path, from: &Path, args: &[&str]) -> Run {
    wrapper(root, from, &common::checker(), args)
}

/// A config directory under `root` holding the real platform config `real` as `name`.
fn platform_drop_in(root: &Path, real: &str, name: &str) -> PathBuf {
    let conf_d = root.join("etc/kubernetes/image-credential-providers.d");
    std::fs::create_dir_all(&conf_d).unwrap();
    std::fs::copy(
        common::configs_dir().join("real").join(real),
        conf_d.join(name),
    )
    .unwrap();
    conf_d
}

/// Every file and symlink under `root` the install put there (not the node's own `/bin/sh`).
fn files(root: &Path) -> Vec<String> {
    snapshot(root)
        .into_iter()
        .filter(|(p, _)| root.join(p).is_file() || root.join(p).is_symlink())
        .map(|(p, _)| p.display().to_string())
        .filter(|p| !HOST_FILES.contains(&p.as_str()))
        .collect()
}

/// Whether `root` holds only what [`node_root`] put there.
fn untouched(root: &Path) -> bool {
    files(root).is_empty() && snapshot(root).len() == 5
}

/// The failure contract: exit 1, one stderr line saying why, nothing on stdout claiming success.
fn refused(out: &Run, why: &str) {
    assert_eq!(
        out.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("credential-provider-check: install: ")
            && out.stderr.contains(why),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("(nothing was changed)"),
        "{}",
        out.stderr
    );
}

#[test]
fn fresh_install_writes_binaries_and_a_valid_config_then_a_rerun_changes_nothing() {
    if kcp_testkit::skip_on_windows(
        "fresh_install_writes_binaries_and_a_valid_config_then_a_rerun_changes_nothing",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-fresh");
    let root = dir.path();
    let out = install(root, &["--providers", "ecr,acr,gcr"]);
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    assert_eq!(out.stderr, "");

    let bin = root.join(BIN_DIR);
    let target = target_bin_dir();
    for name in [
        "ecr-credential-provider",
        "acr-credential-provider",
        "gcr-credential-provider",
    ] {
        assert_eq!(
            std::fs::read(bin.join(name)).unwrap(),
            std::fs::read(target.join(name)).unwrap(),
            "{name} is a copy of the build"
        );
        assert_eq!(mode(&bin.join(name)), 0o755, "{name}");
        assert!(
            out.stdout
                .contains(&format!("install: {NODE_BIN_DIR}/{name}\n")),
            "{}",
            out.stdout
        );
    }
    let config = root.join(CONFIG);
    assert_eq!(mode(&config), 0o644);
    assert_eq!(mode(&bin.join(MANIFEST)), 0o644);
    // Only what it announced: no temp files left behind, static not installed.
    assert_eq!(
        files(root),
        [
            CONFIG.to_owned(),
            format!("{BIN_DIR}/{MANIFEST}"),
            format!("{BIN_DIR}/acr-credential-provider"),
            format!("{BIN_DIR}/ecr-credential-provider"),
            format!("{BIN_DIR}/gcr-credential-provider"),
        ]
    );
    let manifest = std::fs::read_to_string(bin.join(MANIFEST)).unwrap();
    assert_eq!(manifest.lines().count(), 3, "{manifest}");
    assert!(
        manifest
            .lines()
            .all(|l| l.len() == 64 + 2 + "ecr-credential-provider".len())
    );

    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with(
            "# Managed by kubelet-credential-providers credential-provider-check install (sha256:"
        ),
        "{text}"
    );
    assert!(
        text.contains("      - \"/etc/kubernetes/azure.json\"\n"),
        "{text}"
    );
    assert!(!text.contains("tokenAttributes"), "{text}");
    let report = validate_clean(&config, &bin);
    assert_eq!(
        provider_names(&report),
        [
            "ecr-credential-provider",
            "acr-credential-provider",
            "gcr-credential-provider"
        ]
    );
    assert!(
        out.stdout.ends_with(
            "5 change(s) made\n\
             Kubelet flags:\n  \
             --image-credential-provider-config=/etc/kubernetes/credential-provider-config.yaml\n  \
             --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec\n\
             Platform generic: put both flags in KUBELET_EXTRA_ARGS (/etc/default/kubelet or /etc/sysconfig/kubelet) or in kubeadm's nodeRegistration.kubeletExtraArgs (Cluster API: the KubeadmConfig), then restart the kubelet.\n\
             file read at run time: /etc/kubernetes/azure.json (acr-credential-provider)\n\
             restart the kubelet to load the new config: systemctl restart kubelet on the node\n"
        ),
        "{}",
        out.stdout
    );

    // The installed config matches what the ready kubeadm config says for the same images.
    let run = check([
        "match".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "myregistry.westeurope.geo.azurecr.io/app".as_ref(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);

    let before = snapshot(root);
    let again = install(root, &["--providers", "ecr,acr,gcr"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_up_to_date(&again);
    assert_eq!(
        again.stdout.matches("unchanged: ").count(),
        4,
        "{}",
        again.stdout
    );
    assert!(
        !again
            .stdout
            .contains("restart the kubelet to load the new config"),
        "{}",
        again.stdout
    );
    assert_eq!(snapshot(root), before, "a rerun touched something");
}

#[test]
fn dry_run_touches_nothing_and_shows_the_config() {
    if kcp_testkit::skip_on_windows(
        "dry_run_touches_nothing_and_shows_the_config",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-dry");
    let root = dir.path();
    let out = install(root, &["--providers", "ecr,gcr", "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(untouched(root), "dry run wrote {:?}", files(root));
    assert!(
        out.stdout.contains(&format!(
            "would install: {NODE_BIN_DIR}/ecr-credential-provider\n"
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("would install: {NODE_CONFIG}\n")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("  - name: gcr-credential-provider\n"));
    assert!(
        out.stdout
            .contains("dry run: 4 change(s) planned, nothing was touched\n"),
        "{}",
        out.stdout
    );

    // After a real install, a dry run of a different config plans an update and keeps the old one.
    assert_eq!(install(root, &["--providers", "ecr,gcr"]).code, 0);
    let before = snapshot(root);
    let out = install(
        root,
        &[
            "--providers",
            "ecr,gcr",
            "--cache-duration",
            "30m",
            "--dry-run",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "would update: {NODE_CONFIG} (previous version kept as {NODE_CONFIG}.previous)\n"
        )),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("    defaultCacheDuration: \"30m\"\n"));
    assert_eq!(snapshot(root), before);
}

#[test]
fn a_foreign_binary_is_never_replaced_without_force() {
    if kcp_testkit::skip_on_windows(
        "a_foreign_binary_is_never_replaced_without_force",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-foreign-bin");
    let root = dir.path();
    let bin = root.join(BIN_DIR);
    std::fs::create_dir_all(&bin).unwrap();
    // E.g. the upstream Go plugin of the same name.
    write_script(&bin.join("ecr-credential-provider"), "echo upstream");
    let before = snapshot(root);
    let out = install(root, &["--providers", "ecr,gcr"]);
    refused(
        &out,
        &format!(
            "{NODE_BIN_DIR}/ecr-credential-provider exists and was not installed by this project (its checksum is not in {MANIFEST})"
        ),
    );
    assert!(
        out.stderr
            .contains("take it over with --replace-platform-binaries"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(root), before, "a refusal must change nothing");

    // A symlink in its place is not ours either.
    std::fs::remove_file(bin.join("ecr-credential-provider")).unwrap();
    std::os::unix::fs::symlink("/bin/true", bin.join("ecr-credential-provider")).unwrap();
    let out = install(root, &["--providers", "ecr"]);
    refused(&out, "exists and is not a regular file");

    let out = install(root, &["--providers", "ecr,gcr", "--force"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "replace: {NODE_BIN_DIR}/ecr-credential-provider (previous version kept as {NODE_BIN_DIR}/ecr-credential-provider.previous)\n"
        )),
        "{}",
        out.stdout
    );
    assert!(!bin.join("ecr-credential-provider").is_symlink());
    // The symlink it replaced is kept as it was, its target untouched.
    assert_eq!(
        std::fs::read_link(bin.join("ecr-credential-provider.previous")).unwrap(),
        Path::new("/bin/true")
    );
    assert_eq!(
        std::fs::read(bin.join("ecr-credential-provider")).unwrap(),
        std::fs::read(target_bin_dir().join("ecr-credential-provider")).unwrap()
    );
    validate_clean(&root.join(CONFIG), &bin);
}

#[test]
fn its_own_older_binaries_are_upgraded() {
    if kcp_testkit::skip_on_windows(
        "its_own_older_binaries_are_upgraded",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-upgrade");
    let root = dir.path();
    // A previous release: stand-ins that answer --version like the real ones.
    let old = dir.path().join("old-release");
    std::fs::create_dir_all(&old).unwrap();
    let mut older = elf_header("ecr-credential-provider");
    older.extend_from_slice(b"ecr-credential-provider 0.0.1\n");
    std::fs::write(old.join("ecr-credential-provider"), older).unwrap();
    let out = install_from(root, &old, &["--providers", "ecr", "--no-config"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.ends_with(
            "Kubelet flags:\n  --image-credential-provider-bin-dir=/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec\nno config was written (--no-config): the kubelet's config must name these binaries\n"
        ),
        "{}",
        out.stdout
    );
    assert!(!root.join(CONFIG).exists());

    let out = install(root, &["--providers", "ecr"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let bin = root.join(BIN_DIR);
    assert!(
        out.stdout.contains(&format!(
            "update: {NODE_BIN_DIR}/ecr-credential-provider (previous version kept as {NODE_BIN_DIR}/ecr-credential-provider.previous)\n"
        )),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read(bin.join("ecr-credential-provider")).unwrap(),
        std::fs::read(target_bin_dir().join("ecr-credential-provider")).unwrap()
    );
}

#[test]
fn a_config_it_did_not_write_or_that_was_edited_is_refused() {
    if kcp_testkit::skip_on_windows(
        "a_config_it_did_not_write_or_that_was_edited_is_refused",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-foreign-config");
    let root = dir.path();
    let config = root.join(CONFIG);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let platform = std::fs::read(common::configs_dir().join("real/kops-aws.yaml")).unwrap();
    std::fs::write(&config, &platform).unwrap();
    let before = snapshot(root);
    let out = install(root, &["--providers", "ecr"]);
    refused(
        &out,
        &format!(
            "{NODE_CONFIG} exists and was not written by this project; use --drop-in (kubelet >= 1.34) or another --config-path"
        ),
    );
    assert_eq!(snapshot(root), before);

    // Its own file, edited by hand afterwards.
    std::fs::remove_file(&config).unwrap();
    assert_eq!(install(root, &["--providers", "ecr"]).code, 0);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replace("\"12h\"", "\"24h\"");
    std::fs::write(&config, &text).unwrap();
    let before = snapshot(root);
    let out = install(root, &["--providers", "ecr"]);
    refused(
        &out,
        "was edited by hand since this project wrote it; move your edits to another file, then remove it",
    );
    assert_eq!(snapshot(root), before);

    let out = install(root, &["--providers", "ecr", "--force"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "replace: {NODE_CONFIG} (previous version kept as {NODE_CONFIG}.previous)\n"
        )),
        "{}",
        out.stdout
    );
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("\"12h\"")
    );
    // The edits are kept beside it.
    assert_eq!(
        std::fs::read_to_string(format!("{}.previous", config.display())).unwrap(),
        text
    );

    // A config it wrote and nobody edited is updated without --force.
    let out = install(root, &["--providers", "ecr,gcr"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(&format!("update: {NODE_CONFIG} (previous")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("restart the kubelet to load the new config"),
        "{}",
        out.stdout
    );
}

#[test]
fn config_dir_mode_adds_a_drop_in_next_to_the_platform_files() {
    if kcp_testkit::skip_on_windows(
        "config_dir_mode_adds_a_drop_in_next_to_the_platform_files",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-dropin");
    let root = dir.path();
    // The platform's own file and binary (AKS-style), which must stay as they are.
    let conf_d = platform_drop_in(root, "aks.yaml", "10-platform.yaml");
    let bin = root.join(BIN_DIR);
    std::fs::create_dir_all(&bin).unwrap();
    write_script(&bin.join("acr-credential-provider"), "exit 1");
    let platform_before = snapshot(&conf_d);

    let args = [
        "--providers",
        "ecr,gcr",
        "--config-dir",
        "/etc/kubernetes/image-credential-providers.d",
        "--service-account",
        "--gcr-identity-provider",
        "https://container.googleapis.com/v1/projects/p/locations/l/clusters/c",
        "--gcr-project-id",
        "p",
    ];
    let out = install(root, &args);
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let dropin = conf_d.join("50-kubelet-credential-providers.yaml");
    assert_eq!(mode(&dropin), 0o644);
    assert!(
        platform_before
            .iter()
            .all(|(p, v)| snapshot(&conf_d).get(p) == Some(v))
    );
    assert!(
        out.stdout.contains(
            "  --image-credential-provider-config=/etc/kubernetes/image-credential-providers.d (a directory: kubelet >= 1.34)\n"
        ),
        "{}",
        out.stdout
    );

    // The kubelet's view of the directory: the platform's provider, then ours.
    let report = validate_clean(&conf_d, &bin);
    assert_eq!(report["config"]["directory"], true);
    assert_eq!(
        provider_names(&report),
        [
            "acr-credential-provider",
            "ecr-credential-provider",
            "gcr-credential-provider"
        ]
    );
    let token_mode: Vec<bool> = report["config"]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tokenAttributes"].as_bool().unwrap())
        .collect();
    assert_eq!(token_mode, [false, true, true]);
    let text = std::fs::read_to_string(&dropin).unwrap();
    assert!(text.contains("      serviceAccountTokenAudience: \"sts.amazonaws.com\"\n"));
    assert!(text.contains("      serviceAccountTokenAudience: \"p.svc.id.goog\"\n"));
    assert!(text.contains("      - \"--project-id=p\"\n"));

    let before = snapshot(root);
    let again = install(root, &args);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_up_to_date(&again);
    assert_eq!(snapshot(root), before);

    // A provider the platform already configures: the kubelet would refuse the directory.
    let out = install(
        root,
        &[
            "--providers",
            "acr",
            "--bin-dir",
            "/opt/bin",
            "--config-dir",
            "/etc/kubernetes/image-credential-providers.d",
            "--config-name",
            "60-acr.yaml",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "/etc/kubernetes/image-credential-providers.d/60-acr.yaml: duplicate provider name \"acr-credential-provider\" found in configuration file(s)"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.starts_with(
            "credential-provider-check: install: the kubelet would refuse /etc/kubernetes/image-credential-providers.d with this config: "
        ) && out.stderr.ends_with(" (nothing was changed)\n"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(root), before);
}

#[test]
fn options_shape_the_config() {
    if kcp_testkit::skip_on_windows(
        "options_shape_the_config",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-options");
    let root = dir.path();
    std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap();
    std::fs::write(root.join("etc/kubernetes/harbor-password"), "x\n").unwrap();
    let out = install(
        root,
        &[
            "--providers",
            "static,ecr",
            "--config=/etc/kubernetes/custom.yml",
            "--bin-dir=/opt/bin",
            "--static-registry",
            "harbor.example.com, *.harbor.example.com",
            "--static-username",
            "robot$puller",
            "--static-password-file",
            "/etc/kubernetes/harbor-password",
            "--match-images",
            "ecr=123456789012.dkr.ecr.us-east-1.amazonaws.com",
            "--arg",
            "ecr=--strict-hosts",
            "--env",
            "ecr=HTTPS_PROXY=http://proxy.internal:3128",
            "--cache-duration",
            "2h",
        ],
    );
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let config = root.join("etc/kubernetes/custom.yml");
    validate_clean(&config, &root.join("opt/bin"));
    let text = std::fs::read_to_string(&config).unwrap();
    let body = text.split_once("providers:\n").unwrap().1;
    assert_eq!(
        body,
        r#"  - name: static-credential-provider
    matchImages:
      - "harbor.example.com"
      - "*.harbor.example.com"
    defaultCacheDuration: "2h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "--registry=harbor.example.com,*.harbor.example.com"
      - "--username=robot$puller"
      - "--password-file=/etc/kubernetes/harbor-password"
  - name: ecr-credential-provider
    matchImages:
      - "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    defaultCacheDuration: "2h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
      - "get-credentials"
      - "--strict-hosts"
    env:
      - name: "HTTPS_PROXY"
        value: "http://proxy.internal:3128"
"#
    );
    assert!(
        out.stdout
            .contains("  --image-credential-provider-bin-dir=/opt/bin\n")
    );
    assert!(!out.stdout.contains("note:"), "{}", out.stdout);

    // Older kubelets: the whole config in v1beta1.
    let out = install(
        root,
        &[
            "--providers",
            "gcr",
            "--config",
            "/etc/kubernetes/old.yaml",
            "--api-version",
            "v1beta1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(root.join("etc/kubernetes/old.yaml")).unwrap();
    assert!(text.contains("apiVersion: kubelet.config.k8s.io/v1beta1\n"));
    assert!(text.contains("    apiVersion: credentialprovider.kubelet.k8s.io/v1beta1\n"));
}

#[test]
fn usage_errors_are_one_line_and_touch_nothing() {
    if kcp_testkit::skip_on_windows(
        "usage_errors_are_one_line_and_touch_nothing",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-usage");
    let root = dir.path();
    // The checker's usage errors, and the wrapper's own (its options only).
    let checker = "credential-provider-check: ";
    let wrapper = "install: error: ";
    for (args, why) in [
        (
            &[][..],
            format!(
                "{checker}the following required arguments were not provided: --provider <PROVIDER>"
            ),
        ),
        (
            &[
                "--providers",
                "oidc",
                "--match-images",
                "oidc=quay.io",
                "--registries-skeleton",
            ][..],
            format!(
                "{checker}--registries-skeleton prints a file to edit, not one to install: run it with init"
            ),
        ),
        (
            &["--providers", "ecr,quay"][..],
            format!("{checker}invalid value 'quay' for '--provider <PROVIDER>'"),
        ),
        (
            &["--providers", "ecr", "--bogus"][..],
            format!("{checker}unexpected argument '--bogus' found"),
        ),
        (
            &[
                "--providers",
                "ecr",
                "--config",
                "/a.yaml",
                "--config-dir",
                "/b",
            ][..],
            format!("{wrapper}use either --config or --config-dir, not both"),
        ),
        (
            &["--providers", "ecr", "--no-exec-check"][..],
            format!(
                "{wrapper}--no-exec-check is gone: install no longer runs the binaries, it checks that they are built for the architecture of the node"
            ),
        ),
        (
            &["--providers", "ecr", "--bin-dir", "relative/dir"][..],
            format!("{checker}--bin-dir must be an absolute path"),
        ),
        (
            &["--providers", "gcr", "--service-account"][..],
            format!(
                "{checker}gcr with --service-account needs --gcr-identity-provider and --gcr-project-id (GKE), or --gcr-wif-audience"
            ),
        ),
        (
            &[
                "--providers",
                "ecr",
                "--service-account",
                "--api-version",
                "v1beta1",
            ][..],
            format!("{checker}--service-account needs --api-version v1"),
        ),
        (
            &["--providers", "ecr", "--cache-duration", "1d"][..],
            format!("{checker}--cache-duration must be a Go duration"),
        ),
        (
            &["--providers", "static"][..],
            format!(
                "{checker}static needs --static-registry, --static-username and --static-password-file"
            ),
        ),
        (
            &["--providers", "ecr", "--arg", "gcr=-v"][..],
            format!("{checker}--arg: options for gcr given, but gcr is not in --provider"),
        ),
    ] {
        let out = install(root, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with(&why), "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
    assert!(untouched(root));

    // Missing binaries in --from: exit 1, named.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = install_from(root, &empty, &["--providers", "ecr"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!(
            "ecr-credential-provider not found in {}",
            empty.display()
        )),
        "{}",
        out.stderr
    );
    // A binary that cannot run here (not a Linux executable, another architecture) is caught
    // before install.
    write_script(&empty.join("ecr-credential-provider"), "exit 126");
    let out = install_from(root, &empty, &["--providers", "ecr"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!(
            "{} is not a Linux (ELF) executable",
            empty.join("ecr-credential-provider").display()
        )),
        "{}",
        out.stderr
    );
    assert!(!root.join(BIN_DIR).exists());
}

#[test]
fn a_drop_in_the_kubelet_could_not_start_with_is_refused_before_any_write() {
    if kcp_testkit::skip_on_windows(
        "a_drop_in_the_kubelet_could_not_start_with_is_refused_before_any_write",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-dropin-bins");
    let root = dir.path();
    // GKE's file names auth-provider-gcp, which is not in the bin dir we install into.
    platform_drop_in(root, "gke.yaml", "00-gke.yaml");
    let before = snapshot(root);
    let out = install(
        root,
        &[
            "--providers",
            "ecr",
            "--config-dir",
            "/etc/kubernetes/image-credential-providers.d",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "plugin binary executable {NODE_BIN_DIR}/auth-provider-gcp did not exist"
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.ends_with("nothing was changed)\n"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(root), before);
}

/// The config is `credential-provider-check init`'s output for the same options, behind the marker;
/// the report ends with init's explanation (the files the providers read at run time among it).
#[test]
fn the_config_is_what_init_prints_for_the_same_options() {
    if kcp_testkit::skip_on_windows(
        "the_config_is_what_init_prints_for_the_same_options",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-init");
    let root = dir.path();
    let shaping = [
        "--service-account",
        "--azure-config",
        "/etc/azure/cloud.json",
        "--arg",
        "ecr=--strict-hosts",
        "--static-registry",
        "registry.example.com",
        "--static-username",
        "robot",
        "--static-password-file",
        "/etc/kubernetes/registry.password",
        "--cache-duration",
        "45m",
    ];
    let out = install(
        root,
        &[
            &["--providers", "ecr,acr,static", "--bin-dir", "/opt/bin"],
            &shaping[..],
        ]
        .concat(),
    );
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let written = std::fs::read_to_string(root.join(CONFIG)).unwrap();
    let (marker, body) = written.split_once('\n').unwrap();
    assert!(marker.starts_with(
        "# Managed by kubelet-credential-providers credential-provider-check install (sha256:"
    ));

    let init = check(
        [
            &[
                "init",
                "--explain",
                "--provider",
                "ecr,acr,static",
                "--bin-dir",
                "/opt/bin",
                "--config-path",
                "/etc/kubernetes/credential-provider-config.yaml",
            ],
            &shaping[..],
        ]
        .concat(),
    );
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert_eq!(body, init.stdout);
    assert!(
        init.stderr.contains(
            "file read at run time: /etc/azure/cloud.json (acr-credential-provider)\n\
             file read at run time: /etc/kubernetes/registry.password (static-credential-provider)\n"
        ) && init.stderr.contains(
            "Nodes need RBAC verb request-serviceaccounts-token-audience on each serviceAccountTokenAudience.\n"
        ),
        "{}",
        init.stderr
    );
    assert!(
        out.stdout.ends_with(&format!(
            "{}restart the kubelet to load the new config: systemctl restart kubelet on the node\n",
            init.stderr
        )),
        "{}",
        out.stdout
    );
}

/// oidc installs like the others: its binary, init's entry (tokenAttributes, the registries file
/// in args), and the report names the registries file the operator still has to write.
#[test]
fn oidc_installs_its_binary_and_entry() {
    if kcp_testkit::skip_on_windows(
        "oidc_installs_its_binary_and_entry",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-oidc");
    let root = dir.path();
    let options = [
        "--match-images",
        "oidc=registry.acme.internal",
        "--oidc-audience",
        "registry.acme.internal",
    ];
    let out = install(root, &[&["--providers", "oidc"][..], &options[..]].concat());
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let bin = root.join(BIN_DIR).join("oidc-credential-provider");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(target_bin_dir().join("oidc-credential-provider")).unwrap()
    );
    assert_eq!(mode(&bin), 0o755);
    let written = std::fs::read_to_string(root.join(CONFIG)).unwrap();
    let body = written.split_once('\n').unwrap().1;
    let init = check([&["init", "--provider", "oidc"][..], &options[..]].concat());
    assert_eq!(body, init.stdout);
    assert!(
        out.stdout.contains(
            "file read at run time: /etc/kubernetes/oidc-registries.yaml (oidc-credential-provider)\n"
        ),
        "{}",
        out.stdout
    );
}

/// alibaba installs like the others: its binary (a copy of the build, 0755), init's entry with
/// RRSA's tokenAttributes and the OIDC provider in args, and a rerun changes nothing.
#[test]
fn alibaba_installs_its_binary_and_entry() {
    if kcp_testkit::skip_on_windows(
        "alibaba_installs_its_binary_and_entry",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-alibaba");
    let root = dir.path();
    let options = [
        "--service-account",
        "--alibaba-oidc-provider-arn",
        "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1",
    ];
    let out = install(
        root,
        &[&["--providers", "alibaba"][..], &options[..]].concat(),
    );
    assert_eq!(
        out.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let bin = root.join(BIN_DIR).join("alibaba-credential-provider");
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(target_bin_dir().join("alibaba-credential-provider")).unwrap()
    );
    assert_eq!(mode(&bin), 0o755);
    assert!(
        out.stdout.contains(&format!(
            "install: {NODE_BIN_DIR}/alibaba-credential-provider\n"
        )),
        "{}",
        out.stdout
    );
    assert_eq!(
        files(root),
        [
            CONFIG.to_owned(),
            format!("{BIN_DIR}/{MANIFEST}"),
            format!("{BIN_DIR}/alibaba-credential-provider"),
        ]
    );
    let written = std::fs::read_to_string(root.join(CONFIG)).unwrap();
    let body = written.split_once('\n').unwrap().1;
    let init = check([&["init", "--provider", "alibaba"][..], &options[..]].concat());
    assert_eq!(body, init.stdout);
    assert!(
        body.contains("serviceAccountTokenAudience: \"sts.aliyuncs.com\""),
        "{body}"
    );
    let again = install(
        root,
        &[&["--providers", "alibaba"][..], &options[..]].concat(),
    );
    assert_up_to_date(&again);
}

/// A config the kubelet would refuse is refused by init before anything is planned: one line, the
/// kubelet's message, nothing changed.
#[test]
fn a_config_init_refuses_is_one_line_and_changes_nothing() {
    if kcp_testkit::skip_on_windows(
        "a_config_init_refuses_is_one_line_and_changes_nothing",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-init-refuses");
    let root = dir.path();
    let out = install(root, &["--providers", "ecr", "--match-images", "ecr=a b"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            r#"credential-provider-check: install: init: the kubelet would refuse this config: failed to validate credential provider config: providers.matchImages: Invalid value: "a b""#
        ),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
    assert!(untouched(root));
}

/// What the kubelet accepts but can never work is installed, with init's warning on stderr.
#[test]
fn init_warnings_are_shown_and_do_not_stop_the_install() {
    if kcp_testkit::skip_on_windows(
        "init_warnings_are_shown_and_do_not_stop_the_install",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = node_root("install-init-warns");
    let root = dir.path();
    let out = install(
        root,
        &[
            "--providers",
            "ecr",
            "--match-images",
            "ecr=https://r.example.com",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().collect::<Vec<_>>(),
        [
            r#"credential-provider-check: install: warning: ecr-credential-provider: matchImages entry "https://r.example.com" has a scheme (https://): the kubelet prefixes https:// itself, so it never matches any image"#
        ]
    );
    assert!(root.join(CONFIG).is_file());
}

/// An older checker (no `install`) is named as the problem, not reported as a usage error.
#[test]
fn a_checker_without_install_is_named() {
    if kcp_testkit::skip_on_windows(
        "a_checker_without_install_is_named",
        "scripts/install wraps the installer for Linux nodes (bash, file modes, ELF); Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = TempDir::new("install-old-checker");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let old = dir.path().join("credential-provider-check");
    write_script(
        &old,
        "echo \"error: unrecognized subcommand 'install'\" >&2; echo >&2; echo 'Usage: credential-provider-check <COMMAND>' >&2; exit 2",
    );
    let out = wrapper(&root, &target_bin_dir(), &old, ["--providers", "ecr"]);
    assert_one_line(
        &out,
        1,
        &format!(
            "install: error: {} has no install command (an older release?)",
            old.display()
        ),
    );
    assert!(snapshot(&root).is_empty());
}

/// A stand-in checker that answers `install --help` and otherwise writes each argument it got on
/// a line of `<dir>/args`, prints a line on stdout and one on stderr, and exits 3.
fn fake_checker(dir: &Path) -> PathBuf {
    let path = dir.join("credential-provider-check");
    write_script(
        &path,
        &format!(
            "[ \"$1 $2\" = 'install --help' ] && exit 0\nprintf '%s\\n' \"$@\" > '{}'\necho 'the report'\necho 'a refusal' >&2\nexit 3",
            dir.join("args").display()
        ),
    );
    path
}

/// The wrapper only maps its options: the checker gets `install --host-root ROOT --from DIR`, the
/// mapped options and every other argument as given, and its output and exit status are the
/// wrapper's.
#[test]
fn the_wrapper_only_maps_options_onto_the_checker() {
    if kcp_testkit::skip_on_windows(
        "the_wrapper_only_maps_options_onto_the_checker",
        "scripts/install is bash; Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = TempDir::new("install-wrapper-args");
    let fake = fake_checker(dir.path());
    let from = dir.path().join("release");
    std::fs::create_dir(&from).unwrap();
    let run = |args: &[&str]| -> (Run, Vec<String>) {
        let _ = std::fs::remove_file(dir.path().join("args"));
        let out = script_command()
            .args(args)
            .output()
            .expect("running scripts/install");
        let got = std::fs::read_to_string(dir.path().join("args")).unwrap_or_default();
        (
            Run::from_output(out),
            got.lines().map(str::to_owned).collect(),
        )
    };
    let checker_opt = format!("--checker={}", fake.display());
    let from_s = from.display().to_string();
    // The checker's own options, inline values included: passed as given, in order.
    let passed = [
        "--bin-dir=/opt/bin",
        "--cache-duration",
        "30m",
        "--arg",
        "ecr=--strict-hosts",
        "--no-config",
        "--dry-run",
        "--force",
        "--platform",
        "k3s",
    ];
    let (out, got) = run(&[
        &[
            "--providers",
            "ecr,gcr",
            &checker_opt,
            "--from",
            &from_s,
            "--root",
            "/image/tree",
            "--config",
            "-odd.yaml",
        ],
        &passed[..],
    ]
    .concat());
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (3, "the report\n", "a refusal\n")
    );
    assert_eq!(
        got,
        [
            &[
                "install",
                "--host-root",
                "/image/tree",
                "--from",
                &from_s,
                "--providers",
                "ecr,gcr",
                "--config-path=-odd.yaml",
            ],
            &passed[..],
        ]
        .concat()
    );
    // --config-dir is a drop-in; without --root, the host root is /.
    let (out, got) = run(&[
        "--checker",
        &fake.display().to_string(),
        "--from",
        &from_s,
        "--providers=acr",
        "--config-dir=/etc/kubernetes/credential-providers.d",
    ]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(
        got,
        [
            "install",
            "--host-root",
            "/",
            "--from",
            &from_s,
            "--providers=acr",
            "--drop-in",
            "--config-path=/etc/kubernetes/credential-providers.d",
        ]
    );
}

/// Without --checker, the checker is the one beside the provider binaries (a release unpacked
/// into one directory, or target/release), then beside the script, then on PATH; when there is
/// none, one line says where it looked and what to do.
#[test]
fn the_wrapper_finds_the_checker_beside_the_binaries_or_says_it_is_missing() {
    if kcp_testkit::skip_on_windows(
        "the_wrapper_finds_the_checker_beside_the_binaries_or_says_it_is_missing",
        "scripts/install is bash; Windows nodes: docs/install.md",
    ) {
        return;
    }
    let dir = TempDir::new("install-wrapper-find");
    let release = dir.path().join("release");
    std::fs::create_dir(&release).unwrap();
    let run = |extra_path: Option<&Path>| {
        let path = match extra_path {
            Some(p) => format!("{}:/usr/bin:/bin", p.display()),
            None => "/usr/bin:/bin".to_owned(),
        };
        let out = script_command()
            .args(["--providers", "ecr", "--from"])
            .arg(&release)
            .env("PATH", path)
            .output()
            .expect("running scripts/install");
        Run::from_output(out)
    };
    let out = run(None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "install: error: credential-provider-check not found in {}, beside this script nor on PATH: it does the install; take it from the same release as the providers (its own archive) and put it beside them, or pass --checker PATH\n",
            release.display()
        )
    );
    assert_eq!(out.stdout, "");

    // On PATH.
    let on_path = dir.path().join("path");
    std::fs::create_dir(&on_path).unwrap();
    fake_checker(&on_path);
    let out = run(Some(&on_path));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(on_path.join("args").is_file());

    // Beside the binaries: taken before the one on PATH.
    fake_checker(&release);
    let out = run(Some(&on_path));
    assert_eq!(out.code, 3, "{}", out.stderr);
    let got = std::fs::read_to_string(release.join("args")).unwrap();
    assert!(
        got.starts_with("install\n--host-root\n/\n--from\n"),
        "{got}"
    );
}
