//! `install`'s architecture: from `--arch`, else from the tree's own `/bin/sh` (a node), else
//! from the binaries being installed when they all agree (an extension root or a distroless image
//! has no shell to ask). Every refusal is one line naming what to do, and changes nothing. The
//! binaries here are small files holding only an ELF header of the wanted machine (the installer
//! reads nothing else), so the tests do not depend on the architecture they run on.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::install::{assert_up_to_date, mode, script_command, wrapper};
use common::{Run, assert_contains, snapshot};
use kcp_testkit::TempDir;

/// The ELF machines of amd64 and arm64 (`e_machine`).
const AMD64: u16 = 62;
const ARM64: u16 = 183;
const PROVIDERS: &str = "ecr,acr,gcr";
const BINARIES: [&str; 3] = [
    "ecr-credential-provider",
    "acr-credential-provider",
    "gcr-credential-provider",
];
const BIN_DIR: &str = "usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec";

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(
        test,
        "install writes Linux nodes (file modes, ELF binaries); Windows nodes: docs/install.md",
    )
}

/// A 64-bit little-endian ELF header for `machine`, followed by `tag`.
fn elf(machine: u16, tag: &str) -> Vec<u8> {
    let mut head = vec![0u8; 64];
    head[..4].copy_from_slice(b"\x7fELF");
    head[4] = 2; // ELFCLASS64
    head[5] = 1; // little-endian
    head[6] = 1; // EV_CURRENT
    head[16] = 2; // ET_EXEC
    head[18..20].copy_from_slice(&machine.to_le_bytes());
    head.extend_from_slice(tag.as_bytes());
    head
}

/// A release directory: each of [`BINARIES`] built for `machine(name)`.
fn release(name: &str, machine: impl Fn(&str) -> u16) -> TempDir {
    let dir = common::install::release(name, BINARIES.map(|b| (b.to_owned(), elf(machine(b), b))));
    for b in BINARIES {
        std::fs::set_permissions(dir.path().join(b), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    dir
}

/// An empty tree, as an extension root starts: no `/bin/sh`, no ELF file at all.
fn bare_tree(name: &str) -> TempDir {
    TempDir::new(name)
}

/// A node's tree whose `/bin/sh` is an ELF file for `machine`.
fn node_tree(name: &str, machine: u16) -> TempDir {
    let dir = TempDir::new(name);
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::fs::write(dir.path().join("bin/sh"), elf(machine, "sh")).unwrap();
    dir
}

fn install(root: &Path, from: &Path, args: &[&str]) -> Run {
    common::install::run(root, from, ["--providers", PROVIDERS].iter().chain(args))
}

/// What a refusal looks like: exit 1, nothing on stdout, exactly `line` on stderr.
fn refused(run: &Run, line: &str) {
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            1,
            "",
            format!("credential-provider-check: install: {line}\n").as_str()
        )
    );
}

/// The installed binaries under `root`, with their modes, and whether each is `from`'s.
fn installed(root: &Path, from: &Path) -> Vec<(String, u32)> {
    BINARIES
        .iter()
        .map(|b| {
            let path = root.join(BIN_DIR).join(b);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                std::fs::read(from.join(b)).unwrap(),
                "{} is {}'s",
                path.display(),
                from.display()
            );
            ((*b).to_owned(), mode(&path))
        })
        .collect()
}

fn all_0755() -> Vec<(String, u32)> {
    BINARIES.iter().map(|b| ((*b).to_owned(), 0o755)).collect()
}

/// A root with no `/bin/sh` (an extension root): without `--arch` the binaries tell, when they
/// agree; the report says where the architecture came from; a rerun changes nothing.
#[test]
fn a_tree_without_a_shell_takes_the_binaries_architecture() {
    if skip("a_tree_without_a_shell_takes_the_binaries_architecture") {
        return;
    }
    for (machine, name) in [(AMD64, "amd64"), (ARM64, "arm64")] {
        let tree = bare_tree(&format!("arch-bare-{name}"));
        let from = release(&format!("arch-release-{name}"), |_| machine);
        let run = install(tree.path(), from.path(), &["--no-config"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert_eq!(run.stderr, "");
        assert_contains(
            &run.stdout,
            &format!("\narchitecture: {name} (the binaries'; the tree has no /bin/sh to tell)\n"),
        );
        assert_eq!(installed(tree.path(), from.path()), all_0755());
        let again = install(tree.path(), from.path(), &["--no-config"]);
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_up_to_date(&again);
    }
}

/// `--arch` names the architecture: accepted when the binaries are built for it, with a config
/// too (validated against the tree's bin dir as the kubelet would), and its uname spellings.
#[test]
fn arch_option_installs_into_a_tree_without_a_shell() {
    if skip("arch_option_installs_into_a_tree_without_a_shell") {
        return;
    }
    for (machine, option, name) in [
        (ARM64, "arm64", "arm64"),
        (AMD64, "amd64", "amd64"),
        (ARM64, "aarch64", "arm64"),
        (AMD64, "x86_64", "amd64"),
    ] {
        let tree = bare_tree(&format!("arch-option-{option}"));
        let from = release(&format!("arch-option-release-{option}"), |_| machine);
        let run = install(tree.path(), from.path(), &["--arch", option]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert_contains(&run.stdout, &format!("\narchitecture: {name} (--arch)\n"));
        assert_contains(
            &run.stdout,
            "validated: /etc/kubernetes/credential-provider-config.yaml",
        );
        assert_eq!(installed(tree.path(), from.path()), all_0755());
        assert!(
            tree.path()
                .join("etc/kubernetes/credential-provider-config.yaml")
                .is_file()
        );
    }
}

/// `--arch` and binaries of another architecture: one line naming both, nothing written.
#[test]
fn arch_option_refuses_binaries_of_another_architecture() {
    if skip("arch_option_refuses_binaries_of_another_architecture") {
        return;
    }
    let tree = bare_tree("arch-mismatch");
    let from = release("arch-mismatch-release", |_| AMD64);
    let before = snapshot(tree.path());
    let run = install(
        tree.path(),
        from.path(),
        &["--arch", "arm64", "--no-config"],
    );
    refused(
        &run,
        &format!(
            "{}/ecr-credential-provider is built for amd64, but --arch is arm64: unpack the release archives of that architecture into --from (or give --arch amd64); nothing was changed",
            from.path().display()
        ),
    );
    assert_eq!(snapshot(tree.path()), before);

    // One binary of another architecture among the right ones: that one is named.
    let mixed = release("arch-mismatch-mixed", |b| {
        if b == "gcr-credential-provider" {
            ARM64
        } else {
            AMD64
        }
    });
    let run = install(tree.path(), mixed.path(), &["--arch=amd64", "--no-config"]);
    refused(
        &run,
        &format!(
            "{}/gcr-credential-provider is built for arm64, but --arch is amd64: unpack the release archives of that architecture into --from (or give --arch arm64); nothing was changed",
            mixed.path().display()
        ),
    );
    assert_eq!(snapshot(tree.path()), before);
}

/// No `--arch`, no `/bin/sh`, and binaries that disagree: nothing can tell; the line names
/// `--arch` and what each binary is built for.
#[test]
fn binaries_that_disagree_in_a_tree_without_a_shell_need_arch() {
    if skip("binaries_that_disagree_in_a_tree_without_a_shell_need_arch") {
        return;
    }
    let tree = bare_tree("arch-disagree");
    let from = release("arch-disagree-release", |b| {
        if b == "acr-credential-provider" {
            ARM64
        } else {
            AMD64
        }
    });
    let before = snapshot(tree.path());
    let run = install(tree.path(), from.path(), &["--no-config"]);
    let f = from.path().display();
    refused(
        &run,
        &format!(
            "cannot tell the architecture to install for: none of /bin/sh, /usr/bin/sh, /usr/bin/env, /bin/busybox under {} is an ELF file, and the binaries are built for different ones ({f}/ecr-credential-provider: amd64, {f}/acr-credential-provider: arm64, {f}/gcr-credential-provider: amd64); pass --arch amd64|arm64; nothing was changed",
            tree.path().display()
        ),
    );
    assert_eq!(snapshot(tree.path()), before);
    // With --arch the one of the other architecture is named instead.
    let run = install(
        tree.path(),
        from.path(),
        &["--arch", "amd64", "--no-config"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_contains(
        &run.stderr,
        "acr-credential-provider is built for arm64, but --arch is amd64",
    );
}

/// A node's tree keeps the node's check: binaries of another architecture than its `/bin/sh` are
/// refused as before, and an `--arch` that contradicts the tree's `/bin/sh` is refused too.
#[test]
fn a_tree_with_a_shell_is_checked_against_it() {
    if skip("a_tree_with_a_shell_is_checked_against_it") {
        return;
    }
    let tree = node_tree("arch-node", AMD64);
    let arm = release("arch-node-arm", |_| ARM64);
    let amd = release("arch-node-amd", |_| AMD64);
    let before = snapshot(tree.path());
    // The binaries agree with each other, but not with the node: the node wins.
    let run = install(tree.path(), arm.path(), &["--no-config"]);
    refused(
        &run,
        &format!(
            "{}/ecr-credential-provider is built for arm64, but the host is amd64 (by /bin/sh): use the image for the node's architecture; nothing was changed",
            arm.path().display()
        ),
    );
    let run = install(tree.path(), arm.path(), &["--arch", "arm64", "--no-config"]);
    refused(
        &run,
        &format!(
            "--arch arm64 contradicts the tree under {}, whose /bin/sh is built for amd64; nothing was changed",
            tree.path().display()
        ),
    );
    assert_eq!(snapshot(tree.path()), before);
    // Agreeing: installed, and the report adds no architecture line (the node's, as before).
    let run = install(tree.path(), amd.path(), &["--arch", "amd64", "--no-config"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_contains(&run.stdout, "architecture: amd64 (--arch)");
    let tree2 = node_tree("arch-node-plain", AMD64);
    let run = install(tree2.path(), amd.path(), &["--no-config"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("architecture:"), "{}", run.stdout);
}

/// A value `--arch` does not know is a usage error (exit 2) naming the accepted ones.
#[test]
fn an_unknown_arch_is_a_usage_error() {
    if skip("an_unknown_arch_is_a_usage_error") {
        return;
    }
    let tree = bare_tree("arch-usage");
    let from = release("arch-usage-release", |_| AMD64);
    let before = snapshot(tree.path());
    let run = install(
        tree.path(),
        from.path(),
        &["--arch", "riscv64", "--no-config"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("riscv64")
            && run.stderr.contains("amd64")
            && run.stderr.contains("arm64"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot(tree.path()), before);
}

/// `scripts/install --root TREE --arch A`: the wrapper hands `--arch` to the checker, which
/// installs into a tree without a shell; its uname spellings reach the checker as `--arch`'s
/// values (`x86_64`, `aarch64`).
#[test]
fn the_wrapper_passes_arch_to_the_checker() {
    if skip("the_wrapper_passes_arch_to_the_checker") {
        return;
    }
    for (machine, option, name) in [(ARM64, "aarch64", "arm64"), (AMD64, "amd64", "amd64")] {
        let tree = bare_tree(&format!("arch-wrapper-{option}"));
        let from = release(&format!("arch-wrapper-release-{option}"), |_| machine);
        let run = wrapper(
            tree.path(),
            from.path(),
            &common::checker(),
            ["--providers", PROVIDERS, "--no-config", "--arch", option],
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert_contains(&run.stdout, &format!("\narchitecture: {name} (--arch)\n"));
        assert_eq!(installed(tree.path(), from.path()), all_0755());
    }
    // Without its value: the wrapper's usage error, before any checker runs.
    let out = script_command()
        .args(["--providers", PROVIDERS, "--arch"])
        .output()
        .expect("running scripts/install");
    let run = Run::from_output(out);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (2, "", "install: error: --arch needs a value (see --help)\n")
    );
}
