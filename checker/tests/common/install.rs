//! Shared scaffolding of the `install` tests: fake host roots and releases, running
//! `credential-provider-check install` (or `scripts/install`, its wrapper) and reading what it
//! reported and wrote.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use kcp_testkit::TempDir;

use super::{Run, check, target_bin_dir, workspace};

/// `credential-provider-check install --host-root ROOT --from FROM ARGS`.
pub fn run<I, S>(root: &Path, from: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut all: Vec<OsString> = vec![
        "install".into(),
        "--host-root".into(),
        root.into(),
        "--from".into(),
        from.into(),
    ];
    all.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
    check(all)
}

/// `scripts/install`, the wrapper over `install`.
pub fn script() -> PathBuf {
    workspace("scripts/install")
}

/// `bash scripts/install ARGS`, as a command to add to.
pub fn script_command() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(script());
    cmd
}

/// `scripts/install --root ROOT --from FROM --checker CHECKER ARGS`.
pub fn wrapper<I, S>(root: &Path, from: &Path, checker: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = script_command()
        .arg("--root")
        .arg(root)
        .arg("--from")
        .arg(from)
        .arg("--checker")
        .arg(checker)
        .args(args)
        .output()
        .expect("running scripts/install");
    Run::from_output(out)
}

/// The first bytes of the built binary `name`: an ELF header of the binaries' architecture (the
/// installer reads nothing else of a binary).
pub fn elf_header(name: &str) -> Vec<u8> {
    let mut head = vec![0u8; 64];
    std::io::Read::read_exact(
        &mut std::fs::File::open(target_bin_dir().join(name)).unwrap(),
        &mut head,
    )
    .unwrap();
    head
}

/// A tree whose `/usr/bin/env` holds `header` (where the installer reads the host's
/// architecture), and nothing else.
pub fn env_root(name: &str, header: &[u8]) -> TempDir {
    let dir = TempDir::new(name);
    std::fs::create_dir_all(dir.path().join("usr/bin")).unwrap();
    std::fs::write(dir.path().join("usr/bin/env"), header).unwrap();
    dir
}

/// A node's root filesystem to install into: `/usr/bin/env` an ELF file of the binaries'
/// architecture and `/bin/sh` an absolute symlink to it, resolved under the root as the node would.
pub fn node_root(name: &str) -> TempDir {
    let dir = env_root(name, &elf_header("ecr-credential-provider"));
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/env", dir.path().join("bin/sh")).unwrap();
    dir
}

/// A release directory to install from, holding `files` as (file name, content).
pub fn release(name: &str, files: impl IntoIterator<Item = (String, Vec<u8>)>) -> TempDir {
    let dir = TempDir::new(name);
    for (file, content) in files {
        std::fs::write(dir.path().join(file), content).unwrap();
    }
    dir
}

/// `head` followed by `tail`: a small stand-in binary (the installer reads only the header).
pub fn with_tail(head: &[u8], tail: &str) -> Vec<u8> {
    [head, tail.as_bytes()].concat()
}

/// The node path `node` (`/etc/...`) under the fake root `root`.
pub fn under(root: &Path, node: &str) -> PathBuf {
    root.join(node.trim_start_matches('/'))
}

/// A file's permission bits (through symlinks).
pub fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The sha256 of `data`, in hex, as `sha256sum` prints it.
pub fn sha256(data: &[u8]) -> String {
    let dir = TempDir::new("sha");
    let file = dir.path().join("f");
    std::fs::write(&file, data).unwrap();
    let out = Command::new("sha256sum").arg(&file).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

/// A rerun's report: nothing to do.
#[track_caller]
pub fn assert_up_to_date(run: &Run) {
    super::assert_contains(&run.stdout, "nothing to do: everything is up to date\n");
}

/// A refusal: exit `code`, one line on stderr, and that line names `why`.
#[track_caller]
pub fn assert_one_line(run: &Run, code: i32, why: &str) {
    assert_eq!(run.code, code, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(why), "{}", run.stderr);
}
