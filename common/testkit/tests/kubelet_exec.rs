//! The kubelet simulator run against tiny shell-script plugins: argv, environment merge, stdin
//! bytes, the kill timeout (with the plugin's whole process group), a grandchild holding stdout
//! open, and the kit's own assertions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use kcp_kubelet::ApiVersion;
use kcp_kubelet_emulation::exec::PluginExec;
use kcp_testkit::{Plugin, TempDir};

fn script(dir: &TempDir, name: &str, body: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn passes_args_env_and_stdin_like_the_kubelet() {
    let dir = TempDir::new("exec");
    let out = dir.path().join("seen");
    let path = script(
        &dir,
        "p",
        &format!(
            "echo \"$@\" > {o}.args; echo \"$FOO\" > {o}.env; cat > {o}.stdin",
            o = out.display()
        ),
    );
    let mut exec = PluginExec::new(&path);
    exec.args = vec!["get-credentials".into(), "--v=2".into()];
    exec.env = vec![
        ("FOO".into(), "from-kubelet".into()),
        ("FOO".into(), "from-config".into()),
    ];
    let o = exec.run(b"{\"x\":1}\n");
    assert_eq!(o.exit_code, Some(0));
    let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap();
    assert_eq!(read("args"), "get-credentials --v=2\n");
    // The config's env is appended to the kubelet's and wins.
    assert_eq!(read("env"), "from-config\n");
    assert_eq!(read("stdin"), "{\"x\":1}\n");
}

#[test]
fn kills_a_hanging_plugin_at_the_timeout() {
    let dir = TempDir::new("hang");
    let mut exec = PluginExec::new(script(&dir, "p", "exec sleep 30"));
    exec.timeout = Duration::from_millis(300);
    let o = exec.run(b"");
    assert!(o.timed_out);
    assert_eq!(o.exit_code, None);
    let msg = o.kubelet_exec_error("p", "a.io/b").unwrap();
    assert!(
        msg.starts_with(
            "error execing credential provider plugin p for image a.io/b: context deadline exceeded"
        ),
        "{msg}"
    );
}

/// Runs `exec` on another thread and fails the test (instead of hanging CI) when no outcome
/// comes back within 30 s.
fn run_watched(exec: PluginExec) -> kcp_kubelet_emulation::exec::ExecOutcome {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(exec.run(b""));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the run did not return within 30 s")
}

/// Whether `pid` is gone (or a zombie waiting for init to reap it), after up to 10 s.
fn ends(pid: &str) -> bool {
    let stat = format!("/proc/{}/stat", pid.trim());
    for _ in 0..200 {
        match std::fs::read_to_string(&stat) {
            Err(_) => return true,
            Ok(text)
                if text
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

#[test]
fn reports_a_grandchild_holding_stdout_open_and_ends_it() {
    let dir = TempDir::new("grandchild");
    let pid = dir.path().join("pid");
    let o = run_watched(PluginExec::new(script(
        &dir,
        "p",
        &format!(
            "sleep 300 & echo $! > {}; echo '{{}}'; exit 0",
            pid.display()
        ),
    )));
    assert_eq!(o.exit_code, Some(0));
    assert!(
        o.pipes_held_open,
        "stdout was held open by the backgrounded sleep"
    );
    // It used to be left running, holding the pipe, for its 300 s.
    let pid = std::fs::read_to_string(&pid).unwrap();
    assert!(ends(&pid), "the grandchild {pid} still runs");
}

/// A timed-out plugin is killed with its whole process group: a forked child holding stdout
/// neither keeps the run waiting nor outlives it. Only the plugin itself used to be killed.
#[test]
fn a_timeout_kills_the_plugins_whole_process_group() {
    let dir = TempDir::new("group");
    let pid = dir.path().join("pid");
    let mut exec = PluginExec::new(script(
        &dir,
        "p",
        &format!("sleep 300 & echo $! > {}; exec sleep 300", pid.display()),
    ));
    exec.timeout = Duration::from_millis(500);
    let o = run_watched(exec);
    assert!(o.timed_out);
    assert_eq!(o.exit_code, None);
    let pid = std::fs::read_to_string(&pid).unwrap();
    assert!(ends(&pid), "the plugin's child {pid} outlived the timeout");
}

#[test]
fn a_missing_binary_is_a_start_error() {
    let o = PluginExec::new("/nonexistent/plugin").run(b"");
    assert!(o.start_error.is_some());
    assert!(
        o.kubelet_exec_error("plugin", "a.io/b")
            .unwrap()
            .contains("/nonexistent/plugin")
    );
}

#[test]
fn the_kit_accepts_a_good_answer_and_runs_in_an_empty_environment() {
    let dir = TempDir::new("good");
    let body = r#"test -z "$AWS_REGION" || exit 7
read -r line
case "$line" in *v1beta1*) v=v1beta1;; *) v=v1;; esac
printf '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/%s","cacheKeyType":"Registry","cacheDuration":"1m0s","auth":{"*.registry.io":{"username":"u","password":"p"}}}\n' "$v""#;
    let plugin = Plugin::new(script(&dir, "p", body));
    for v in [ApiVersion::V1, ApiVersion::V1beta1] {
        let ok = plugin.request(v, "test.registry.io/foo").accepted();
        assert_eq!(ok.auth["*.registry.io"], ("u".to_owned(), "p".to_owned()));
    }
}

#[test]
#[should_panic(expected = "apiVersion from credential plugin response did not match")]
fn the_kit_fails_a_plugin_that_answers_in_another_version() {
    let dir = TempDir::new("v1only");
    let body = r#"cat >/dev/null; echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"a.io":{"username":"u","password":"p"}}}'"#;
    Plugin::new(script(&dir, "p", body))
        .request(ApiVersion::V1alpha1, "a.io/b")
        .accepted();
}

#[test]
#[should_panic(expected = "no auth key matches image")]
fn the_kit_fails_an_answer_whose_keys_miss_the_image() {
    let dir = TempDir::new("portless");
    // Upstream ECR's bug: the key drops the port, so the kubelet never uses it.
    let body = r#"cat >/dev/null; echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"reg.io":{"username":"u","password":"p"}}}'"#;
    Plugin::new(script(&dir, "p", body))
        .request(ApiVersion::V1, "reg.io:5000/app")
        .accepted();
}

#[test]
#[should_panic(expected = "stdout must be empty on failure")]
fn the_kit_fails_a_plugin_that_writes_stdout_and_exits_non_zero() {
    let dir = TempDir::new("noisy");
    Plugin::new(script(
        &dir,
        "p",
        "echo partial; echo 'bad thing' >&2; exit 1",
    ))
    .raw(b"")
    .rejected();
}

#[test]
#[should_panic(expected = "expected exactly one stderr line")]
fn the_kit_fails_a_multi_line_error() {
    let dir = TempDir::new("chatty");
    Plugin::new(script(&dir, "p", "echo one >&2; echo two >&2; exit 1"))
        .raw(b"")
        .rejected();
}

#[test]
fn the_kit_returns_the_one_error_line() {
    let dir = TempDir::new("clean");
    let line = Plugin::new(script(
        &dir,
        "p",
        "echo 'error: token endpoint refused' >&2; exit 1",
    ))
    .raw(b"")
    .rejected();
    assert_eq!(line, "error: token endpoint refused");
}
