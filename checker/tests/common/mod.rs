//! Shared helpers: run the checker binary and read its JSON report.

#![allow(dead_code)]

pub mod install;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader};
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// What one checker run produced.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
}

impl Run {
    /// Exit code and text of a finished process.
    pub fn from_output(out: std::process::Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// stdout parsed as the one JSON document `--output json` promises.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", self.stdout))
    }
}

/// Runs `credential-provider-check` with `args`.
pub fn check<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    check_env(args, &[])
}

/// Runs `credential-provider-check` with `args` and extra environment variables.
pub fn check_env<I, S>(args: I, env: &[(&str, &str)]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = Command::new(checker())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("running the checker");
    let run = Run::from_output(out);
    // Like every plugin run of the test kit: no secret any fake issued may reach stderr.
    kcp_testkit::secrets::assert_no_leak(&run.stderr, "the checker's stderr");
    run
}

/// `rel`, a path from the top of the workspace.
pub fn workspace(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// `testdata/configs` of the workspace.
pub fn configs_dir() -> PathBuf {
    workspace("testdata/configs")
}

/// `validate --output json --config PATH`.
pub fn validate(path: &Path) -> Run {
    validate_with(path, &[])
}

/// `validate --output json --config PATH --bin-dir BIN`: with the kubelet's start-up checks on
/// the binaries in `bin`.
pub fn validate_bin_dir(path: &Path, bin: &Path) -> Run {
    validate_with(path, &["--bin-dir".as_ref(), bin.as_os_str()])
}

/// `validate --output json --config PATH EXTRA`.
pub fn validate_with(path: &Path, extra: &[&OsStr]) -> Run {
    let mut args: Vec<&OsStr> = vec![
        "validate".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
    ];
    args.extend(extra);
    check(args)
}

/// [`validate_bin_dir`] of a config that must pass clean (exit 0, no error, no registration
/// error, no warning); its report.
pub fn validate_clean(path: &Path, bin: &Path) -> Value {
    let run = validate_bin_dir(path, bin);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    for field in ["errors", "registrationErrors", "warnings"] {
        assert!(messages(&report, field).is_empty(), "{field}: {report}");
    }
    report
}

/// The names of the providers of a validate JSON report's config, in order.
pub fn provider_names(report: &Value) -> Vec<String> {
    report["config"]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts that `text` contains `part`, showing `text` when it does not.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{text}");
}

/// `credential-provider-check wait ARGS` started with `stdin` and `stderr` as given, stdout piped,
/// and the first line it printed (read off its stdout, which is then dropped).
pub fn start_wait(args: &[String], stdin: Stdio, stderr: Stdio) -> (Child, String) {
    let mut child = Command::new(checker())
        .arg("wait")
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// Error messages of a validate JSON report.
pub fn messages(report: &Value, field: &str) -> Vec<String> {
    report[field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["message"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A v1 config with `providers` (YAML list items, already indented by two spaces).
pub fn v1_config(providers: &str) -> String {
    format!(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n{providers}"
    )
}

/// Writes an executable shell script.
pub fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("writing script");
    let mut perm = std::fs::metadata(path).expect("stat").permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(path, perm).expect("chmod");
}

/// Our provider binaries, by file name.
pub const PROVIDERS: [&str; 6] = [
    "ecr-credential-provider",
    "acr-credential-provider",
    "gcr-credential-provider",
    "static-credential-provider",
    "oidc-credential-provider",
    "alibaba-credential-provider",
];

/// The directory holding the workspace's built binaries: the checker's own. `cargo test
/// --workspace` (what `scripts/test` runs) builds every binary of the workspace before any test.
pub fn target_bin_dir() -> PathBuf {
    let dir = checker()
        .parent()
        .expect("the checker lives in a directory")
        .to_path_buf();
    for name in PROVIDERS {
        assert!(
            dir.join(exe(name)).is_file(),
            "{} is missing: build the whole workspace first (cargo test --workspace, as scripts/test does)",
            dir.join(exe(name)).display()
        );
    }
    dir
}

/// The checker binary under test (`kcp_testkit::binary_under_test`: the host build, or a
/// cross-built one).
pub fn checker() -> PathBuf {
    kcp_testkit::binary_under_test(env!("CARGO_BIN_EXE_credential-provider-check"))
}

/// A binary's file name on the platform under test (`.exe` for Windows).
pub fn exe(name: &str) -> String {
    if kcp_testkit::windows_target() {
        format!("{name}.exe")
    } else {
        name.to_owned()
    }
}

#[cfg(unix)]
/// What a change to one entry would touch: mode, size, mtime (s, ns), inode, content.
pub type Entry = (u32, u64, i64, i64, u64, Vec<u8>);

/// Every entry under `root` (a fake host root), to show that a run changed nothing.
#[cfg(unix)]
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let content = if meta.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            out.insert(
                path.strip_prefix(root).unwrap().to_path_buf(),
                (
                    meta.mode(),
                    meta.len(),
                    meta.mtime(),
                    meta.mtime_nsec(),
                    meta.ino(),
                    content,
                ),
            );
            if meta.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A fake ECR answering every GetAuthorizationToken with `AWS:<password>` for `host`, valid for
/// `life` seconds from now (fleet mode's tests: the controller's and the nodes' registry).
pub fn fake_ecr(host: &str, password: &str, life: u64) -> kcp_testkit::fake::FakeServer {
    use base64::Engine as _;
    kcp_testkit::secrets::register(password);
    let token = base64::engine::general_purpose::STANDARD.encode(format!("AWS:{password}"));
    let body = format!(
        r#"{{"authorizationData":[{{"authorizationToken":"{token}","expiresAt":{},"proxyEndpoint":"https://{host}"}}]}}"#,
        kcp_testkit::unix_now() + life
    );
    kcp_testkit::fake::FakeServer::start(move |_| {
        kcp_testkit::fake::FakeResponse::json(body.clone())
            .header("content-type", "application/x-amz-json-1.1")
    })
}

/// The one entry a token cache directory holds, as (file name, bytes): what the token controller
/// publishes of a provider run.
pub fn only_entry(cache: &Path) -> (String, Vec<u8>) {
    let entry = kcp_testkit::cache::cache_entries(cache, 1).remove(0);
    let name = entry
        .path
        .file_name()
        .expect("an entry file")
        .to_string_lossy()
        .into_owned();
    (name, entry.text.into_bytes())
}
