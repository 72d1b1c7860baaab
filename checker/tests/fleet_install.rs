//! `credential-provider-check install` (the DaemonSet's installer, deploy/) against a fake host
//! root in a temp dir, for every Linux platform: the files and modes it writes, that the config is
//! `init`'s and passes the checker, that a rerun changes nothing, that an upgrade keeps
//! `<name>.previous`, and its refusals (another architecture, files it did not write,
//! `--restart-kubelet`), each with its exact report; and `wait`, the DaemonSet's main container.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::install::{
    assert_up_to_date, elf_header, node_root, release, sha256, under, with_tail,
};
use common::{Run, check, snapshot, target_bin_dir};
use kcp_testkit::TempDir;

const MANIFEST: &str = ".kubelet-credential-providers.sha256";
const PROVIDERS: &str = "ecr,acr,gcr";
const BINARIES: [&str; 3] = [
    "ecr-credential-provider",
    "acr-credential-provider",
    "gcr-credential-provider",
];

/// One platform: its paths as the node sees them (what deploy/ mounts), and the restart hint.
struct Profile {
    platform: &'static str,
    bin_dir: &'static str,
    config: &'static str,
    restart: &'static str,
}

const GENERIC_BIN: &str = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";
const GENERIC_CONFIG: &str = "/etc/kubernetes/credential-provider-config.yaml";
const RANCHER_BIN: &str = "/var/lib/rancher/credentialprovider/bin";
const RANCHER_CONFIG: &str = "/var/lib/rancher/credentialprovider/config.yaml";
/// SIGTERM's number (15 on every Linux architecture).
const SIGTERM: i32 = 15;
const SYSTEMD: &str = "systemctl restart kubelet on the node";

const PROFILES: [Profile; 7] = [
    Profile {
        platform: "generic",
        bin_dir: GENERIC_BIN,
        config: GENERIC_CONFIG,
        restart: SYSTEMD,
    },
    Profile {
        platform: "eks",
        bin_dir: "/etc/eks/image-credential-provider",
        config: "/etc/eks/image-credential-provider/config.json",
        restart: SYSTEMD,
    },
    Profile {
        platform: "aks",
        bin_dir: "/var/lib/kubelet/credential-provider",
        config: "/var/lib/kubelet/credential-provider-config.yaml",
        restart: SYSTEMD,
    },
    Profile {
        platform: "gke",
        bin_dir: "/home/kubernetes/bin",
        config: "/etc/srv/kubernetes/cri_auth_config.yaml",
        restart: SYSTEMD,
    },
    Profile {
        platform: "k3s",
        bin_dir: RANCHER_BIN,
        config: RANCHER_CONFIG,
        restart: "systemctl restart k3s (servers) or k3s-agent (agents) on the node",
    },
    Profile {
        platform: "rke2",
        bin_dir: RANCHER_BIN,
        config: RANCHER_CONFIG,
        restart: "systemctl restart rke2-server (servers) or rke2-agent (agents) on the node",
    },
    Profile {
        platform: "kind",
        bin_dir: GENERIC_BIN,
        config: GENERIC_CONFIG,
        restart: "docker exec <node> systemctl restart kubelet, for each node container",
    },
];

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(
        test,
        "install writes Linux nodes (file modes, ELF binaries); Windows nodes: docs/install.md",
    )
}

/// A release to install: for each provider a small file with the binaries' ELF header and `tag`
/// (the installer reads only the header; debug builds are tens of MB, and hashing them unoptimized
/// would dominate the run; `real_binaries_install` installs the real ones once).
fn fake_release(tag: &str) -> TempDir {
    let head = elf_header(BINARIES[0]);
    release(
        &format!("fleet-release-{tag}"),
        BINARIES.map(|b| (b.to_owned(), with_tail(&head, &format!("{tag} {b}\n")))),
    )
}

/// `install --host-root ROOT --from FROM --providers ecr,acr,gcr --platform P ARGS`.
fn install_from(root: &Path, from: &Path, platform: &str, args: &[&str]) -> Run {
    let fixed = ["--providers", PROVIDERS, "--platform", platform];
    common::install::run(root, from, fixed.iter().chain(args))
}

/// `install_from` a fake release (the same one for the same tag).
fn install(root: &Path, platform: &str, args: &[&str]) -> Run {
    let release = fake_release("v1");
    install_from(root, release.path(), platform, args)
}

/// `init` with the same options: its config (stdout) and its `--explain` lines (stderr).
fn init(platform: &str, args: &[&str]) -> (String, String) {
    let mut all = vec![
        "init",
        "--explain",
        "--provider",
        PROVIDERS,
        "--platform",
        platform,
    ];
    all.extend(args);
    let run = check(all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    (run.stdout, run.stderr)
}

/// The config file `install` writes: a marker line with the checksum of init's text, then it.
fn expected_config(init_text: &str) -> String {
    format!(
        "# Managed by kubelet-credential-providers credential-provider-check install (sha256:{}); rerun it to change this file.\n{init_text}",
        sha256(init_text.as_bytes())
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Regular files and symlinks under `root`, as node paths, with their modes.
fn files(root: &Path) -> Vec<(String, u32)> {
    snapshot(root)
        .into_iter()
        .filter(|(p, _)| !root.join(p).is_dir() || root.join(p).is_symlink())
        .map(|(p, (m, ..))| (format!("/{}", p.display()), m & 0o7777))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The report's tail: init's `--explain` lines, then the restart hint when the config changed.
fn tail(explain: &str, restart: Option<&str>) -> String {
    let mut out = explain.to_owned();
    if let Some(hint) = restart {
        out.push_str(hint);
        out.push('\n');
    }
    out
}

#[test]
fn every_platform_fresh_install_rerun_and_upgrade() {
    if skip("every_platform_fresh_install_rerun_and_upgrade") {
        return;
    }
    for p in &PROFILES {
        let host = node_root(&format!("fleet-{}", p.platform));
        let root = host.path();
        let (init_text, explain) = init(p.platform, &[]);
        let v1 = fake_release("v1");

        // Fresh install: exact report, files, modes, contents.
        let run = install(root, p.platform, &[]);
        assert_eq!(run.code, 0, "{}: {}", p.platform, run.stderr);
        assert_eq!(run.stderr, "", "{}", p.platform);
        let mut expected = format!("host root: {}\n", root.display());
        for b in BINARIES {
            expected.push_str(&format!("install: {}/{b}\n", p.bin_dir));
        }
        expected.push_str(&format!(
            "record checksums: {}/{MANIFEST}\ninstall: {}\nvalidated: {} with --bin-dir {}\n5 change(s) made\n",
            p.bin_dir, p.config, p.config, p.bin_dir
        ));
        expected.push_str(&tail(
            &explain,
            Some(&format!(
                "restart the kubelet to load the new config: {}",
                p.restart
            )),
        ));
        assert_eq!(run.stdout, expected, "{}", p.platform);

        let mut want: Vec<(String, u32)> = vec![
            ("/bin/sh".to_owned(), 0o777),
            ("/usr/bin/env".to_owned(), 0o644),
            (p.config.to_owned(), 0o644),
            (format!("{}/{MANIFEST}", p.bin_dir), 0o644),
        ];
        want.extend(
            BINARIES
                .iter()
                .map(|b| (format!("{}/{b}", p.bin_dir), 0o755)),
        );
        want.sort();
        assert_eq!(files(root), want, "{}", p.platform);
        for b in BINARIES {
            assert_eq!(
                std::fs::read(under(root, &format!("{}/{b}", p.bin_dir))).unwrap(),
                std::fs::read(v1.path().join(b)).unwrap(),
                "{}: {b}",
                p.platform
            );
        }
        assert_eq!(
            std::fs::read_to_string(under(root, p.config)).unwrap(),
            expected_config(&init_text),
            "{}",
            p.platform
        );
        let manifest: String = {
            let mut lines: Vec<String> = BINARIES
                .iter()
                .map(|b| {
                    let hash = sha256(&std::fs::read(v1.path().join(b)).unwrap());
                    format!("{hash}  {b}\n")
                })
                .collect();
            lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
            lines.concat()
        };
        assert_eq!(
            std::fs::read_to_string(under(root, &format!("{}/{MANIFEST}", p.bin_dir))).unwrap(),
            manifest,
            "{}",
            p.platform
        );

        // The checker accepts what was written, binaries included.
        let v = check([
            "validate".as_ref(),
            "--config".as_ref(),
            under(root, p.config).as_os_str(),
            "--bin-dir".as_ref(),
            under(root, p.bin_dir).as_os_str(),
        ]);
        assert_eq!(v.code, 0, "{}: {}{}", p.platform, v.stdout, v.stderr);

        // A rerun changes nothing, and says so.
        let before = snapshot(root);
        let run = install(root, p.platform, &[]);
        assert_eq!(run.code, 0, "{}: {}", p.platform, run.stderr);
        let mut expected = format!("host root: {}\n", root.display());
        for b in BINARIES {
            expected.push_str(&format!("unchanged: {}/{b}\n", p.bin_dir));
        }
        expected.push_str(&format!(
            "unchanged: {}\nvalidated: {} with --bin-dir {}\nnothing to do: everything is up to date\n",
            p.config, p.config, p.bin_dir
        ));
        expected.push_str(&tail(&explain, None));
        assert_eq!(run.stdout, expected, "{}", p.platform);
        assert_eq!(
            snapshot(root),
            before,
            "{}: the rerun changed files",
            p.platform
        );

        // An upgrade: new binaries (here: other builds) and a new config replace the old ones,
        // each old one kept as <name>.previous.
        let (old, new) = (v1, fake_release("v2"));
        let (new_init, new_explain) = init(p.platform, &["--cache-duration", "30m"]);
        let old_config = std::fs::read_to_string(under(root, p.config)).unwrap();
        let run = install_from(root, new.path(), p.platform, &["--cache-duration", "30m"]);
        assert_eq!(run.code, 0, "{}: {}", p.platform, run.stderr);
        let mut expected = format!("host root: {}\n", root.display());
        for b in BINARIES {
            expected.push_str(&format!(
                "update: {d}/{b} (previous version kept as {d}/{b}.previous)\n",
                d = p.bin_dir
            ));
        }
        expected.push_str(&format!(
            "record checksums: {d}/{MANIFEST}\nupdate: {c} (previous version kept as {c}.previous)\nvalidated: {c} with --bin-dir {d}\n5 change(s) made\n",
            d = p.bin_dir,
            c = p.config
        ));
        expected.push_str(&tail(
            &new_explain,
            Some(&format!(
                "restart the kubelet to load the new config: {}",
                p.restart
            )),
        ));
        assert_eq!(run.stdout, expected, "{}", p.platform);
        for b in BINARIES {
            let installed = under(root, &format!("{}/{b}", p.bin_dir));
            assert_eq!(
                std::fs::read(&installed).unwrap(),
                std::fs::read(new.path().join(b)).unwrap()
            );
            let previous = under(root, &format!("{}/{b}.previous", p.bin_dir));
            assert_eq!(
                std::fs::read(&previous).unwrap(),
                std::fs::read(old.path().join(b)).unwrap(),
                "{}: {b}.previous",
                p.platform
            );
            assert_eq!((mode(&installed), mode(&previous)), (0o755, 0o755));
        }
        assert_eq!(
            std::fs::read_to_string(under(root, p.config)).unwrap(),
            expected_config(&new_init)
        );
        let previous_config = under(root, &format!("{}.previous", p.config));
        assert_eq!(
            std::fs::read_to_string(&previous_config).unwrap(),
            old_config
        );
        assert_eq!(mode(&previous_config), 0o644);
        // No temp file is left beside anything.
        assert!(
            files(root).iter().all(|(f, _)| !f.contains(".tmp-")),
            "{:?}",
            files(root)
        );
    }
}

#[test]
fn real_binaries_install() {
    if skip("real_binaries_install") {
        return;
    }
    let host = node_root("fleet-real");
    let root = host.path();
    let run = install_from(root, &target_bin_dir(), "rke2", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for b in BINARIES {
        let installed = under(root, &format!("{RANCHER_BIN}/{b}"));
        assert_eq!(mode(&installed), 0o755);
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            std::fs::read(target_bin_dir().join(b)).unwrap()
        );
        // What was installed runs.
        let out = Command::new(&installed).arg("--version").output().unwrap();
        assert!(out.status.success(), "{b} --version");
    }
}

#[test]
fn dry_run_writes_nothing_and_shows_the_config() {
    if skip("dry_run_writes_nothing_and_shows_the_config") {
        return;
    }
    let host = node_root("fleet-dry");
    let root = host.path();
    let before = snapshot(root);
    let run = install(root, "k3s", &["--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(snapshot(root), before);
    let (init_text, explain) = init("k3s", &[]);
    let mut expected = format!("host root: {}\n", root.display());
    for b in BINARIES {
        expected.push_str(&format!("would install: {RANCHER_BIN}/{b}\n"));
    }
    expected.push_str(&format!(
        "would record checksums: {RANCHER_BIN}/{MANIFEST}\nwould install: {RANCHER_CONFIG}\n--- {RANCHER_CONFIG} ---\n{}---\ndry run: 5 change(s) planned, nothing was touched\n",
        expected_config(&init_text)
    ));
    expected.push_str(&tail(
        &explain,
        Some("then restart the kubelet to load the new config: systemctl restart k3s (servers) or k3s-agent (agents) on the node"),
    ));
    assert_eq!(run.stdout, expected);
}

/// An ELF header naming another machine than the binaries'.
fn foreign_elf(path: &Path) {
    let ours = elf_header(BINARIES[0]);
    let mut head = ours[..64].to_vec();
    let other: u16 = if u16::from_le_bytes([ours[18], ours[19]]) == 183 {
        62
    } else {
        183
    };
    head[18..20].copy_from_slice(&other.to_le_bytes());
    std::fs::write(path, head).unwrap();
}

#[test]
fn another_architecture_is_refused_before_anything_is_written() {
    if skip("another_architecture_is_refused_before_anything_is_written") {
        return;
    }
    let host = node_root("fleet-arch");
    let root = host.path();
    std::fs::remove_file(root.join("usr/bin/env")).unwrap();
    foreign_elf(&root.join("usr/bin/env"));
    let before = snapshot(root);
    let release = fake_release("v1");
    let run = install_from(root, release.path(), "generic", &[]);
    let ours = elf_header(BINARIES[0]);
    let (bins, host_arch) = if u16::from_le_bytes([ours[18], ours[19]]) == 183 {
        ("arm64", "amd64")
    } else {
        ("amd64", "arm64")
    };
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr),
        (
            1,
            "",
            format!(
                "credential-provider-check: install: {}/{} is built for {bins}, but the host is {host_arch} (by /bin/sh): use the image for the node's architecture; nothing was changed\n",
                release.path().display(),
                BINARIES[0]
            )
        )
    );
    assert_eq!(snapshot(root), before);

    // A tree with no ELF file at all (an extension root) takes the binaries' architecture, or
    // --arch: checker/tests/install_arch.rs.
}

#[test]
fn files_it_did_not_write_are_never_replaced() {
    if skip("files_it_did_not_write_are_never_replaced") {
        return;
    }
    // A config someone else wrote (nodeadm's on EKS, say).
    let host = node_root("fleet-foreign");
    let root = host.path();
    let config = under(root, GENERIC_CONFIG);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n",
    )
    .unwrap();
    let before = snapshot(root);
    let run = install(root, "generic", &[]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "credential-provider-check: install: /etc/kubernetes/credential-provider-config.yaml exists and was not written by this project; use --drop-in (kubelet >= 1.34) or another --config-path (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root), before);

    // A binary of the same name someone else installed (the upstream Go ecr-credential-provider).
    let host = node_root("fleet-foreign-bin");
    let root = host.path();
    let bin = under(root, &format!("{GENERIC_BIN}/ecr-credential-provider"));
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::write(&bin, elf_header(BINARIES[0])).unwrap();
    let before = snapshot(root);
    let run = install(root, "generic", &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "credential-provider-check: install: /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/ecr-credential-provider exists and was not installed by this project (its checksum is not in .kubelet-credential-providers.sha256); remove it, choose another --bin-dir, or take it over with --replace-platform-binaries (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root), before);

    // Its own config, edited by hand since.
    let host = node_root("fleet-edited");
    let root = host.path();
    assert_eq!(install(root, "aks", &[]).code, 0);
    let config = under(root, "/var/lib/kubelet/credential-provider-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replace("10m", "5m");
    std::fs::write(&config, text).unwrap();
    let before = snapshot(root);
    let run = install(root, "aks", &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "credential-provider-check: install: /var/lib/kubelet/credential-provider-config.yaml was edited by hand since this project wrote it; move your edits to another file, then remove it (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root), before);
}

/// A stock EKS node: the AMI's ecr-credential-provider and nodeadm's config.json, which already
/// names it. What the eks overlay does (`--binaries-only --replace-platform-binaries`) replaces the
/// binary, keeps the AMI's as `.previous`, leaves the config byte for byte, and validates it
/// against the new binary.
#[test]
fn platform_binaries_are_taken_over_only_when_asked_and_the_platform_config_stays() {
    if skip("platform_binaries_are_taken_over_only_when_asked_and_the_platform_config_stays") {
        return;
    }
    let host = node_root("fleet-eks-ami");
    let root = host.path();
    let bin_dir = "/etc/eks/image-credential-provider";
    let bin = under(root, &format!("{bin_dir}/ecr-credential-provider"));
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    let mut ami = elf_header(BINARIES[0]);
    ami.extend_from_slice(b"the AMI's own build");
    std::fs::write(&bin, &ami).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = under(root, &format!("{bin_dir}/config.json"));
    let nodeadm = r#"{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"ecr-credential-provider","matchImages":["*.dkr.ecr.*.amazonaws.com"],"defaultCacheDuration":"12h","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}"#;
    std::fs::write(&config, nodeadm).unwrap();
    let release = fake_release("v1");
    let run_eks = |args: &[&str]| {
        let mut all: Vec<std::ffi::OsString> = vec![
            "install".into(),
            "--host-root".into(),
            root.into(),
            "--from".into(),
            release.path().into(),
            "--providers".into(),
            "ecr".into(),
            "--platform".into(),
            "eks".into(),
        ];
        all.extend(args.iter().map(Into::into));
        check(all)
    };

    // Not asked: nothing changes.
    let before = snapshot(root);
    let run = run_eks(&["--binaries-only"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "credential-provider-check: install: /etc/eks/image-credential-provider/ecr-credential-provider exists and was not installed by this project (its checksum is not in .kubelet-credential-providers.sha256); remove it, choose another --bin-dir, or take it over with --replace-platform-binaries (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root), before);

    // Asked: the binary is ours, the AMI's kept, the config untouched and valid.
    let run = run_eks(&["--binaries-only", "--replace-platform-binaries"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let new = std::fs::read(release.path().join("ecr-credential-provider")).unwrap();
    assert_eq!(std::fs::read(&bin).unwrap(), new);
    assert_eq!(mode(&bin), 0o755);
    let previous = under(root, &format!("{bin_dir}/ecr-credential-provider.previous"));
    assert_eq!(std::fs::read(&previous).unwrap(), ami);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), nodeadm);
    assert!(
        run.stdout.starts_with(&format!(
            "host root: {}\nupdate: {bin_dir}/ecr-credential-provider (previous version kept as {bin_dir}/ecr-credential-provider.previous)\nrecord checksums: {bin_dir}/{MANIFEST}\nvalidated: {bin_dir}/config.json with --bin-dir {bin_dir}\n2 change(s) made\n",
            root.display()
        )),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("restart the kubelet"),
        "{}",
        run.stdout
    );

    // A rerun: nothing to do, the AMI's binary still kept.
    let before = snapshot(root);
    let run = run_eks(&["--binaries-only", "--replace-platform-binaries"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_up_to_date(&run);
    assert_eq!(snapshot(root), before);

    // No platform config: --binaries-only would leave the binaries unused.
    let bare = node_root("fleet-eks-bare");
    let run = install(bare.path(), "eks", &["--binaries-only"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "credential-provider-check: install: --binaries-only: /etc/eks/image-credential-provider/config.json does not exist, so nothing would run these binaries; drop --binaries-only to write a config (nothing was changed)\n"
        )
    );
    let run = install(bare.path(), "eks", &["--binaries-only", "--drop-in"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_config_written_by_scripts_install_is_taken_over() {
    if skip("a_config_written_by_scripts_install_is_taken_over") {
        return;
    }
    let host = node_root("fleet-takeover");
    let root = host.path();
    let (init_text, _) = init("generic", &[]);
    let config = under(root, GENERIC_CONFIG);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let by_script = format!(
        "# Managed by kubelet-credential-providers scripts/install (sha256:{}); rerun it to change this file.\n{init_text}",
        sha256(init_text.as_bytes())
    );
    std::fs::write(&config, &by_script).unwrap();
    let run = install(root, "generic", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "\nupdate: {GENERIC_CONFIG} (previous version kept as {GENERIC_CONFIG}.previous)\n"
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read_to_string(format!("{}.previous", config.display())).unwrap(),
        by_script
    );
}

#[test]
fn drop_in_joins_the_config_directory_and_validates_merged() {
    if skip("drop_in_joins_the_config_directory_and_validates_merged") {
        return;
    }
    let host = node_root("fleet-dropin");
    let root = host.path();
    let dir = under(root, "/etc/kubernetes/credential-providers.d");
    std::fs::create_dir_all(&dir).unwrap();
    // Another team's drop-in, for another provider: left alone, validated together with ours.
    let other = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: other-provider\n  matchImages: [\"registry.example.com\"]\n  defaultCacheDuration: 1h\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n";
    std::fs::write(dir.join("10-other.yaml"), other).unwrap();
    // The other drop-in's binary is not in the bin dir: the kubelet would not start, which is
    // found before anything is written (the bin dir checked as it will be).
    let before = snapshot(root);
    let run = install(root, "generic", &["--drop-in"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            "credential-provider-check: install: the kubelet would refuse /etc/kubernetes/credential-providers.d with this config: other-provider: plugin binary executable /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec/other-provider did not exist (nothing was changed)\n"
        )
    );
    assert_eq!(snapshot(root), before);
    // Once it is there, the same run succeeds.
    let other_bin = under(root, &format!("{GENERIC_BIN}/other-provider"));
    std::fs::create_dir_all(other_bin.parent().unwrap()).unwrap();
    std::fs::write(&other_bin, elf_header(BINARIES[0])).unwrap();
    std::fs::set_permissions(&other_bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = install(root, "generic", &["--drop-in"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\nvalidated: /etc/kubernetes/credential-providers.d with --bin-dir /usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec\n"), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(dir.join("10-other.yaml")).unwrap(),
        other
    );
    let (init_text, _) = init("generic", &["--drop-in"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("50-kubelet-credential-providers.yaml")).unwrap(),
        expected_config(&init_text)
    );
    // A drop-in that claims a provider of ours is refused before anything is written.
    std::fs::write(
        dir.join("20-dup.yaml"),
        other.replace("other-provider", "ecr-credential-provider"),
    )
    .unwrap();
    let before = snapshot(root);
    let run = install(root, "generic", &["--drop-in", "--cache-duration", "1h"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.starts_with("credential-provider-check: install: the kubelet would refuse /etc/kubernetes/credential-providers.d with this config: "), "{}", run.stderr);
    assert!(
        run.stderr.ends_with(" (nothing was changed)\n"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot(root), before);
}

#[test]
fn usage_errors() {
    if skip("usage_errors") {
        return;
    }
    let host = node_root("fleet-usage");
    let root = host.path();
    for (args, message) in [
        (
            vec!["--restart-kubelet"],
            "--restart-kubelet: install never restarts the kubelet (a DaemonSet would restart every node's kubelet at once); restart it yourself: systemctl restart kubelet on the node",
        ),
        (
            vec!["--format", "json"],
            "install writes YAML: its first line records that this project wrote the file (drop --format json)",
        ),
        (
            vec!["--drop-in", "--config-name", "x.conf"],
            "--config-name must be a file name ending in .yaml or .yml (the kubelet skips other names), got \"x.conf\"",
        ),
    ] {
        let run = install(root, "generic", &args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr),
            (2, "", format!("credential-provider-check: {message}\n")),
            "{args:?}"
        );
    }
    let run = install(root, "aks-windows", &[]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "credential-provider-check: install writes Linux nodes; for --platform aks-windows see docs/install.md\n"
        )
    );
}

/// `--no-config`: the binaries and their checksums only; no config is read, written or checked.
#[test]
fn no_config_installs_the_binaries_only() {
    if skip("no_config_installs_the_binaries_only") {
        return;
    }
    let host = node_root("fleet-no-config");
    let root = host.path();
    let run = install(root, "generic", &["--no-config"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut expected = format!("host root: {}\n", root.display());
    for b in BINARIES {
        expected.push_str(&format!("install: {GENERIC_BIN}/{b}\n"));
    }
    expected.push_str(&format!(
        "record checksums: {GENERIC_BIN}/{MANIFEST}\n4 change(s) made\nKubelet flags:\n  --image-credential-provider-bin-dir={GENERIC_BIN}\nno config was written (--no-config): the kubelet's config must name these binaries\n"
    ));
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        (expected.as_str(), "")
    );
    assert!(!under(root, GENERIC_CONFIG).exists());
    // Options that need a config conflict with it.
    for other in ["--drop-in", "--binaries-only"] {
        let run = install(root, "generic", &["--no-config", other]);
        assert_eq!(run.code, 2, "{other}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

/// Fleet mode (issue #30): `--token-cache-shared-identity` shapes the config exactly as `init`
/// does; where install writes no config (`--binaries-only`, `--no-config`) it is refused, with
/// nothing changed, naming the kubelet's environment instead.
#[test]
fn shared_identity_goes_into_the_config_it_writes() {
    if skip("shared_identity_goes_into_the_config_it_writes") {
        return;
    }
    let host = node_root("fleet-shared-identity");
    let root = host.path();
    let fleet = ["--token-cache-shared-identity", "nodes"];
    let before = snapshot(root);
    for only in ["--binaries-only", "--no-config"] {
        let run = install(root, "generic", &[&[only][..], &fleet].concat());
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (
                2,
                "",
                "credential-provider-check: --token-cache-shared-identity goes into the config, which --binaries-only and --no-config leave alone: give the kubelet CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY in its environment instead (docs/install.md, Fleet mode)\n"
            ),
            "{only}"
        );
        assert_eq!(snapshot(root), before, "{only}");
    }
    let run = install(root, "generic", &fleet);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (text, _) = init("generic", &fleet);
    assert!(
        text.contains("\n      - \"--token-cache-shared-identity=nodes\"\n"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(under(root, GENERIC_CONFIG)).unwrap(),
        expected_config(&text)
    );
}

/// `--force`: a binary and a config this project did not write and a symlink
/// in a binary's place are replaced, each kept as `<name>.previous` (a symlink as a symlink).
#[test]
fn force_replaces_foreign_files_and_keeps_them_as_previous() {
    if skip("force_replaces_foreign_files_and_keeps_them_as_previous") {
        return;
    }
    let host = node_root("fleet-force");
    let root = host.path();
    let bin = under(root, GENERIC_BIN);
    std::fs::create_dir_all(&bin).unwrap();
    let mut upstream = elf_header(BINARIES[0]);
    upstream.extend_from_slice(b"upstream ecr");
    std::fs::write(bin.join(BINARIES[0]), &upstream).unwrap();
    std::os::unix::fs::symlink("/opt/acr/acr-credential-provider", bin.join(BINARIES[1])).unwrap();
    let config = under(root, GENERIC_CONFIG);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let theirs =
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n";
    std::fs::write(&config, theirs).unwrap();

    // Without --force: every refusal, nothing changed.
    let before = snapshot(root);
    let run = install(root, "generic", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        [
            format!(
                "credential-provider-check: install: {GENERIC_BIN}/ecr-credential-provider exists and was not installed by this project (its checksum is not in {MANIFEST}); remove it, choose another --bin-dir, or take it over with --replace-platform-binaries"
            ),
            format!(
                "credential-provider-check: install: {GENERIC_BIN}/acr-credential-provider exists and is not a regular file (a symlink); install replaces only files it wrote: remove it, or --force replaces it (keeping it as {GENERIC_BIN}/acr-credential-provider.previous)"
            ),
            format!(
                "credential-provider-check: install: {GENERIC_CONFIG} exists and was not written by this project; use --drop-in (kubelet >= 1.34) or another --config-path (nothing was changed)"
            ),
        ]
    );
    assert_eq!(snapshot(root), before);

    let run = install(root, "generic", &["--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut expected = format!("host root: {}\n", root.display());
    for (verb, b) in [("replace", BINARIES[0]), ("replace", BINARIES[1])] {
        expected.push_str(&format!(
            "{verb}: {GENERIC_BIN}/{b} (previous version kept as {GENERIC_BIN}/{b}.previous)\n"
        ));
    }
    expected.push_str(&format!(
        "install: {GENERIC_BIN}/{}\nrecord checksums: {GENERIC_BIN}/{MANIFEST}\nreplace: {GENERIC_CONFIG} (previous version kept as {GENERIC_CONFIG}.previous)\nvalidated: {GENERIC_CONFIG} with --bin-dir {GENERIC_BIN}\n5 change(s) made\n",
        BINARIES[2]
    ));
    assert!(run.stdout.starts_with(&expected), "{}", run.stdout);
    assert_eq!(
        std::fs::read(bin.join("ecr-credential-provider.previous")).unwrap(),
        upstream
    );
    assert_eq!(
        std::fs::read_link(bin.join("acr-credential-provider.previous")).unwrap(),
        Path::new("/opt/acr/acr-credential-provider")
    );
    assert!(!bin.join(BINARIES[1]).is_symlink());
    assert_eq!(
        std::fs::read_to_string(format!("{}.previous", config.display())).unwrap(),
        theirs
    );
    // Now they are ours: a rerun without --force has nothing to do.
    let run = install(root, "generic", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("\nnothing to do: everything is up to date\n"),
        "{}",
        run.stdout
    );
}

/// Temporary files a killed install left (SIGKILL, a power cut: the `.<name>.tmp-<pid>` it writes
/// through) are removed by the next run, and said so; others' files stay.
#[test]
fn leftover_temporary_files_of_a_killed_run_are_removed() {
    if skip("leftover_temporary_files_of_a_killed_run_are_removed") {
        return;
    }
    let host = node_root("fleet-leftovers");
    let root = host.path();
    let bin = under(root, GENERIC_BIN);
    std::fs::create_dir_all(&bin).unwrap();
    let config_dir = under(root, "/etc/kubernetes");
    std::fs::create_dir_all(&config_dir).unwrap();
    let left = [
        format!("{GENERIC_BIN}/.ecr-credential-provider.tmp-4242"),
        format!("{GENERIC_BIN}/.{MANIFEST}.tmp-4242"),
        "/etc/kubernetes/.credential-provider-config.yaml.tmp-4242".to_owned(),
    ];
    for f in &left {
        std::fs::write(under(root, f), b"half a file").unwrap();
    }
    std::fs::write(bin.join(".other.tmp-1"), b"not ours").unwrap();

    let before = snapshot(root);
    let run = install(root, "generic", &["--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(snapshot(root), before);
    for f in &left {
        assert!(
            run.stdout.contains(&format!(
                "would remove a temporary file an interrupted run left: {f}\n"
            )),
            "{}",
            run.stdout
        );
    }
    assert!(
        run.stdout
            .contains("dry run: 8 change(s) planned, nothing was touched\n"),
        "{}",
        run.stdout
    );

    let run = install(root, "generic", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!(
            "host root: {}\nremove a temporary file an interrupted run left: {}\nremove a temporary file an interrupted run left: {}\nremove a temporary file an interrupted run left: {}\ninstall: ",
            root.display(),
            left[0],
            left[1],
            left[2]
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n8 change(s) made\n"),
        "{}",
        run.stdout
    );
    assert!(
        files(root).iter().all(|(f, _)| !f.contains(".tmp-4242")),
        "{:?}",
        files(root)
    );
    assert!(bin.join(".other.tmp-1").is_file());
}

/// SIGTERM (or Ctrl-C) while the binaries are being written: the installer finishes its writes
/// before the signal takes effect, so no temporary file is left in the bin dir and every binary
/// there is whole and recorded. The signal is sent once a temporary file is seen (the real
/// binaries are large enough for that); a run that ends before one is seen is repeated.
#[test]
fn an_interrupted_install_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt as _;
    if skip("an_interrupted_install_leaves_no_temporary_file") {
        return;
    }
    for attempt in 0..20 {
        let host = node_root(&format!("fleet-interrupt-{attempt}"));
        let root = host.path();
        let bin = under(root, GENERIC_BIN);
        let mut child = Command::new(common::checker())
            .arg("install")
            .arg("--host-root")
            .arg(root)
            .arg("--from")
            .arg(target_bin_dir())
            .args(["--providers", PROVIDERS, "--no-config"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut caught = false;
        while child.try_wait().unwrap().is_none() {
            let mid_write = std::fs::read_dir(&bin).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            });
            if mid_write {
                let killed = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status()
                    .unwrap();
                caught = killed.success();
                break;
            }
        }
        let status = child.wait().unwrap();
        if !caught {
            continue;
        }
        assert_eq!(status.signal(), Some(SIGTERM), "{status:?}");
        let left: Vec<_> = files(root)
            .into_iter()
            .filter(|(f, _)| f.contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        // Every write finished: each binary whole, all recorded.
        for b in BINARIES {
            assert_eq!(
                std::fs::read(bin.join(b)).unwrap(),
                std::fs::read(target_bin_dir().join(b)).unwrap(),
                "{b}"
            );
        }
        let manifest = std::fs::read_to_string(bin.join(MANIFEST)).unwrap();
        assert_eq!(manifest.lines().count(), 3, "{manifest}");
        return;
    }
    panic!("in 20 runs, no install was seen writing a temporary file to send it SIGTERM");
}
