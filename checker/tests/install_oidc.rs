//! `credential-provider-check install --oidc-registries-from FILE` (the `oidc` overlay of deploy/
//! mounts the file from a ConfigMap) against a fake host root: the registries file is written
//! where the installed config's oidc entry names it, after the checks `validate` makes (the same
//! code, checker/src/oidc_file.rs); a file the provider would refuse is refused with one line,
//! exit 1, and the node keeps the file it had; a rerun changes nothing; a changed file is
//! replaced with the old one kept as `.previous`; a file this project did not write is never
//! replaced without `--force`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use common::install::{
    assert_one_line, assert_up_to_date, elf_header, env_root, mode, sha256, under, with_tail,
};
use common::{Run, assert_contains, snapshot};
use kcp_testkit::TempDir;

/// The generic platform's paths, as the node sees them.
const NODE_CONFIG: &str = "/etc/kubernetes/credential-provider-config.yaml";
const NODE_REGISTRIES: &str = "/etc/kubernetes/oidc-registries.yaml";
const HOST: &str = "registry.example.com";
const OIDC: &str = "oidc-credential-provider";

const GOOD: &str = "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n    username: \"puller\"\n";
const GOOD_V2: &str = "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n    username: \"robot\"\n";
/// `passthrough` needs `username`: the provider refuses this file at every exec.
const BAD: &str =
    "registries:\n  - host: \"registry.example.com\"\n    protocol: \"passthrough\"\n";

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(
        test,
        "installs into a Linux tree (ELF binaries, file modes); the Windows installer: checker/tests/install_windows.rs",
    )
}

/// A node's root with `/usr/bin/env` of the binaries' architecture, and a release holding a small
/// `oidc-credential-provider` with that header (the installer reads only the header).
fn node_and_release(name: &str) -> (TempDir, TempDir) {
    let head = elf_header(OIDC);
    let root = env_root(name, &head);
    let release = common::install::release(
        &format!("{name}-release"),
        [(
            OIDC.to_owned(),
            with_tail(&head, "oidc-credential-provider\n"),
        )],
    );
    (root, release)
}

/// The ConfigMap's file, as the kubelet mounts one: a symlink into a `..data` directory.
fn configmap(dir: &Path, text: &str) -> PathBuf {
    let data = dir.join("..2026_01_01_00_00_00.000000001");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("registries.yaml"), text).unwrap();
    let link = dir.join("..data");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(data.file_name().unwrap(), &link).unwrap();
    let file = dir.join("registries.yaml");
    if !file.is_symlink() {
        std::os::unix::fs::symlink("..data/registries.yaml", &file).unwrap();
    }
    file
}

fn install(root: &Path, release: &Path, source: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<OsString> = vec![
        "--platform".into(),
        "generic".into(),
        "--providers".into(),
        "oidc".into(),
        "--match-images".into(),
        format!("oidc={HOST}").into(),
        "--oidc-audience".into(),
        HOST.into(),
        "--oidc-registries-from".into(),
        source.into(),
    ];
    args.extend(extra.iter().map(Into::into));
    common::install::run(root, release, args)
}

/// The file as `install` writes it: a marker line recording the checksum of the ConfigMap's
/// text, then that text.
fn marked(text: &str) -> String {
    format!(
        "# Managed by kubelet-credential-providers credential-provider-check install --oidc-registries-from (sha256:{}); change its source (the ConfigMap), not this file.\n{text}",
        sha256(text.as_bytes())
    )
}

/// `validate` of the installed config with its `--config` pointed at the installed registries
/// file under the root (validate reads the file where the config says, as on the node): no
/// argument error, so the provider would take the file.
fn assert_validate_takes_it(root: &Path) {
    let config = std::fs::read_to_string(under(root, NODE_CONFIG)).unwrap();
    let real = under(root, NODE_REGISTRIES);
    assert!(
        config.contains(&format!("\"--config={NODE_REGISTRIES}\"")),
        "{config}"
    );
    let copy = root.join("validate-me.yaml");
    std::fs::write(
        &copy,
        config.replace(NODE_REGISTRIES, &real.display().to_string()),
    )
    .unwrap();
    let run = common::validate(&copy);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert!(
        common::messages(&report, "argumentErrors").is_empty()
            && common::messages(&report, "errors").is_empty(),
        "{report}"
    );
    std::fs::remove_file(copy).unwrap();
}

#[test]
fn the_configmaps_file_is_installed_where_the_config_names_it_and_a_rerun_changes_nothing() {
    if skip(
        "the_configmaps_file_is_installed_where_the_config_names_it_and_a_rerun_changes_nothing",
    ) {
        return;
    }
    let (root, release) = node_and_release("oidc-install");
    let cm = TempDir::new("oidc-configmap");
    let source = configmap(cm.path(), GOOD);
    let run = install(root.path(), release.path(), &source, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{}", run.stdout))
    };
    // Written after the binary and before the config that names it, then checked on the node.
    let binary = at(
        "install: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/oidc-credential-provider",
    );
    let registries = at(&format!("install: {NODE_REGISTRIES}"));
    let config = at(&format!("install: {NODE_CONFIG}"));
    assert!(binary < registries && registries < config, "{}", run.stdout);
    at(&format!(
        "validated: {NODE_REGISTRIES} (as oidc-credential-provider reads it)"
    ));
    at("4 change(s) made");

    let real = under(root.path(), NODE_REGISTRIES);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), marked(GOOD));
    assert_eq!(mode(&real), 0o644);
    assert!(
        !real.is_symlink(),
        "the file itself, not the ConfigMap's link"
    );
    assert_validate_takes_it(root.path());

    // Again: nothing to do, nothing touched.
    let before = snapshot(root.path());
    let again = install(root.path(), release.path(), &source, &[]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_contains(&again.stdout, &format!("unchanged: {NODE_REGISTRIES}\n"));
    assert_up_to_date(&again);
    assert_eq!(snapshot(root.path()), before);

    // The ConfigMap changes: the file is replaced and the old one kept, the config unchanged
    // (the provider reads the file at every exec: no kubelet restart).
    let source = configmap(cm.path(), GOOD_V2);
    let update = install(root.path(), release.path(), &source, &[]);
    assert_eq!(update.code, 0, "{}{}", update.stdout, update.stderr);
    assert_contains(
        &update.stdout,
        &format!(
            "update: {NODE_REGISTRIES} (previous version kept as {NODE_REGISTRIES}.previous)\n"
        ),
    );
    assert_contains(&update.stdout, "1 change(s) made\n");
    assert!(
        !update
            .stdout
            .contains("restart the kubelet to load the new config"),
        "{}",
        update.stdout
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), marked(GOOD_V2));
    let previous = root
        .path()
        .join("etc/kubernetes/oidc-registries.yaml.previous");
    assert_eq!(std::fs::read_to_string(previous).unwrap(), marked(GOOD));
    assert_validate_takes_it(root.path());
}

#[test]
fn a_file_the_provider_would_refuse_is_refused_and_the_node_keeps_its_own() {
    if skip("a_file_the_provider_would_refuse_is_refused_and_the_node_keeps_its_own") {
        return;
    }
    let (root, release) = node_and_release("oidc-refuse");
    let cm = TempDir::new("oidc-configmap-bad");
    let good = configmap(cm.path(), GOOD);
    assert_eq!(install(root.path(), release.path(), &good, &[]).code, 0);
    let before = snapshot(root.path());

    let bad = configmap(cm.path(), BAD);
    let run = install(root.path(), release.path(), &bad, &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "credential-provider-check: install: --oidc-registries-from: registries file {}: registries[0] (host \"registry.example.com\"): missing field \"username\"; oidc-credential-provider refuses it and exits 2 on every exec; {NODE_REGISTRIES} was left as it is (nothing was changed)\n",
            bad.display()
        )
    );
    assert_eq!(snapshot(root.path()), before, "the node kept everything");

    // Not YAML at all, and a file that is not there: one line each, nothing changed.
    let garbage = configmap(cm.path(), "registries: [\n");
    let run = install(root.path(), release.path(), &garbage, &[]);
    assert_one_line(&run, 1, "--oidc-registries-from: registries file");
    let missing = cm.path().join("nothing-here.yaml");
    let run = install(root.path(), release.path(), &missing, &[]);
    assert_one_line(&run, 1, "cannot be read");
    assert_eq!(snapshot(root.path()), before);

    // A first install with a bad file writes nothing at all.
    let (fresh, release) = node_and_release("oidc-refuse-fresh");
    let empty = snapshot(fresh.path());
    let run = install(fresh.path(), release.path(), &bad, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(snapshot(fresh.path()), empty);
}

#[test]
fn a_registries_file_it_did_not_write_is_replaced_only_with_force() {
    if skip("a_registries_file_it_did_not_write_is_replaced_only_with_force") {
        return;
    }
    let (root, release) = node_and_release("oidc-foreign");
    let real = under(root.path(), NODE_REGISTRIES);
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, GOOD_V2).unwrap();
    let before = snapshot(root.path());
    let cm = TempDir::new("oidc-configmap-foreign");
    let source = configmap(cm.path(), GOOD);

    let run = install(root.path(), release.path(), &source, &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "credential-provider-check: install: {NODE_REGISTRIES} exists and was not written by this project; remove it (the ConfigMap's file takes its place), or --force replaces it (keeping it as {NODE_REGISTRIES}.previous) (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root.path()), before);

    // Edited by hand after this project wrote it: refused the same way.
    let (edited_root, release2) = node_and_release("oidc-edited");
    assert_eq!(
        install(edited_root.path(), release2.path(), &source, &[]).code,
        0
    );
    let edited = under(edited_root.path(), NODE_REGISTRIES);
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replace("puller", "someone")).unwrap();
    let run = install(edited_root.path(), release2.path(), &source, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_contains(
        &run.stderr,
        "was edited by hand since this project wrote it",
    );

    let forced = install(root.path(), release.path(), &source, &["--force"]);
    assert_eq!(forced.code, 0, "{}{}", forced.stdout, forced.stderr);
    assert_contains(
        &forced.stdout,
        &format!(
            "replace: {NODE_REGISTRIES} (previous version kept as {NODE_REGISTRIES}.previous)\n"
        ),
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), marked(GOOD));
    assert_eq!(
        std::fs::read_to_string(
            root.path()
                .join("etc/kubernetes/oidc-registries.yaml.previous")
        )
        .unwrap(),
        GOOD_V2
    );
}

#[test]
fn dry_run_and_usage_errors_touch_nothing() {
    if skip("dry_run_and_usage_errors_touch_nothing") {
        return;
    }
    let (root, release) = node_and_release("oidc-usage");
    let cm = TempDir::new("oidc-configmap-usage");
    let source = configmap(cm.path(), GOOD);
    let empty = snapshot(root.path());

    let dry = install(root.path(), release.path(), &source, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    assert_contains(&dry.stdout, &format!("would install: {NODE_REGISTRIES}\n"));
    assert_eq!(snapshot(root.path()), empty);

    for (extra, why) in [
        (
            &["--binaries-only"][..],
            "--oidc-registries-from writes the file the installed config names: it cannot go with --binaries-only or --no-config",
        ),
        (
            &["--no-config"][..],
            "--oidc-registries-from writes the file the installed config names: it cannot go with --binaries-only or --no-config",
        ),
    ] {
        let run = install(root.path(), release.path(), &source, extra);
        assert_eq!(run.code, 2, "{extra:?}: {}", run.stderr);
        assert_eq!(run.stderr, format!("credential-provider-check: {why}\n"));
    }
    let run = common::install::run(
        root.path(),
        release.path(),
        [
            "--providers".as_ref(),
            "ecr".as_ref(),
            "--oidc-registries-from".as_ref(),
            source.as_os_str(),
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "credential-provider-check: --oidc-registries-from is oidc-credential-provider's registries file: add oidc to --providers\n"
    );
    assert_eq!(snapshot(root.path()), empty);
}
