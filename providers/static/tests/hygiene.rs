//! Process hygiene (`kcp_plugin::hygiene`), checked on a running `static-credential-provider`
//! as the kubelet starts it: while it waits for the request on stdin, it must already be
//! non-dumpable (no core file, no ptrace or `/proc/<pid>/mem` reads by other processes of its
//! user) and have a core-file limit of zero.
//!
//! Dumpability is not shown in `/proc/<pid>/status`; the kernel shows it in the owner of the
//! `/proc/<pid>` files instead: the process's own uid while dumpable, root once it is not. Root
//! owns both cases when the provider runs as root, so a root test runs it as `nobody` (65534).
#![cfg(target_os = "linux")]
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An argument the provider ignores with a warning, logged after hygiene is applied and before
/// stdin is read: seeing it on stderr means the process is waiting for the request.
const READY: &str = "hygiene-test-ready";
/// The uid a root test runs the provider as.
const NOBODY: u32 = 65534;
const PATIENCE: Duration = Duration::from_secs(30);

/// The provider, blocked reading a stdin the test holds open. Dropping it kills and reaps it, so
/// a failed assertion leaves no process behind.
struct Waiting {
    child: Child,
    uid: u32,
    stderr: mpsc::Receiver<String>,
    /// The copy of the binary `nobody` runs, removed with it.
    _copy: Option<kcp_testkit::TempDir>,
}

impl Waiting {
    fn start() -> Waiting {
        let uid = if effective_uid() == 0 {
            NOBODY
        } else {
            effective_uid()
        };
        // The shell raises the soft core-file limit to the hard one (it is often 0 by default,
        // which would make the limit check below pass without the provider doing anything), then
        // becomes the provider (`exec`, same pid).
        let mut binary =
            kcp_testkit::binary_under_test(env!("CARGO_BIN_EXE_static-credential-provider"));
        // `nobody` cannot reach a binary in a checkout under a directory closed to others (a
        // home directory, `mktemp -d`): it runs a copy in a directory open to all.
        let copy = (uid != effective_uid()).then(|| {
            let dir = kcp_testkit::TempDir::new("hygiene");
            let open = |path: &std::path::Path| {
                std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                    .unwrap();
            };
            let copied = dir.path().join("static-credential-provider");
            std::fs::copy(&binary, &copied).unwrap();
            open(dir.path());
            open(&copied);
            binary = copied;
            dir
        });
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(r#"ulimit -S -c "$(ulimit -H -c)" 2>/dev/null; exec "$0" "$@""#)
            .arg(&binary)
            .args([
                "get-credentials",
                "--registry=harbor.example.com",
                "--username=robot",
                "--password-file=/nonexistent/password",
                READY,
            ])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if uid != effective_uid() {
            command.uid(uid).gid(uid);
        }
        let mut child = command.spawn().expect("starting the provider");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let waiting = Waiting {
            child,
            uid,
            stderr: rx,
            _copy: copy,
        };
        let until = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match waiting.stderr.recv_timeout(left) {
                Ok(line) if line.contains(READY) => return waiting,
                Ok(line) => seen.push(line),
                Err(e) => panic!(
                    "the provider (uid {uid}) never reached reading stdin: {e}; its stderr:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin (an empty request) and waits: the refusal with exit 2 proves the process was
    /// blocked reading the request all along.
    fn finish(mut self) {
        drop(self.child.stdin.take());
        let until = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < until, "the provider did not exit on EOF");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(2), "an empty request is a usage error");
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The effective uid of this test process (the second field of `Uid:` in its status).
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn a_waiting_provider_is_not_dumpable() {
    if kcp_testkit::skip_on_windows(
        "a_waiting_provider_is_not_dumpable",
        "PR_SET_DUMPABLE and RLIMIT_CORE are Linux process hygiene, read back from /proc",
    ) {
        return;
    }
    let p = Waiting::start();
    let proc_dir = format!("/proc/{}", p.pid());
    let owner = std::fs::metadata(format!("{proc_dir}/status"))
        .unwrap()
        .uid();
    assert_ne!(
        owner, p.uid,
        "{proc_dir}/status is owned by the provider's own uid {}: the process is dumpable \
         (core dumps on, ptrace and /proc/<pid>/mem open to its user)",
        p.uid
    );
    assert_eq!(
        owner, 0,
        "a non-dumpable process's /proc files belong to root"
    );
    if effective_uid() != 0 {
        // Same uid, no CAP_SYS_PTRACE: the kernel's ptrace check refuses what a dumpable
        // process would allow.
        let err = std::fs::File::open(format!("{proc_dir}/environ"))
            .expect_err("the provider's environment is readable by its own user");
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
    }
    p.finish();
}

#[test]
fn a_waiting_provider_has_a_core_file_limit_of_zero() {
    if kcp_testkit::skip_on_windows(
        "a_waiting_provider_has_a_core_file_limit_of_zero",
        "PR_SET_DUMPABLE and RLIMIT_CORE are Linux process hygiene, read back from /proc",
    ) {
        return;
    }
    let p = Waiting::start();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", p.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap();
    let values: Vec<&str> = line["Max core file size".len()..]
        .split_whitespace()
        .take(2)
        .collect();
    assert_eq!(values, ["0", "0"], "soft and hard core-file limits: {line}");
    p.finish();
}
