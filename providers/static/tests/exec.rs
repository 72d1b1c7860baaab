//! `static-credential-provider` run as the kubelet runs it, and the shared bad-input table that
//! every binary must refuse cleanly (`kcp_testkit::bad_input`).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::{Plugin, TempDir, bad_input};
use support::{PASSWORD, plugin};

#[test]
fn answers_every_api_version_in_that_version() {
    let dir = TempDir::new("static");
    let p = plugin(&dir);
    for v in ApiVersion::ALL {
        let out = p.request(v, "harbor.example.com/team/app");
        assert_eq!(
            out.stdout(),
            format!(
                r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v}","cacheKeyType":"Registry","cacheDuration":"30m0s","auth":{{"harbor.example.com":{{"username":"robot","password":"{PASSWORD}"}}}}}}"#
            ) + "\n"
        );
        let ok = out.accepted();
        assert_eq!(ok.api_version, v);
        assert_eq!(out.stderr(), "", "nothing on stderr by default on success");
    }
}

#[test]
fn keeps_the_port_in_the_auth_key() {
    let dir = TempDir::new("static-port");
    let ok = plugin(&dir)
        .request(ApiVersion::V1, "reg.example.org:5000/app")
        .accepted();
    assert!(ok.auth.contains_key("reg.example.org:5000"));
}

#[test]
fn refuses_registries_it_was_not_configured_for() {
    let dir = TempDir::new("static-strict");
    let line = plugin(&dir)
        .request(ApiVersion::V1, "evil.example.net/app")
        .rejected();
    assert!(
        line.contains("registry evil.example.net is not one of --registry"),
        "{line}"
    );
    assert!(!line.contains(PASSWORD));
}

#[test]
fn never_echoes_a_service_account_token() {
    let dir = TempDir::new("static-sa");
    let token = "eyJhbGciOiJSUzI1NiJ9.payload.signature";
    let ann = [("domain.io/identity".to_owned(), "x".to_owned())].into();
    for v in ApiVersion::ALL {
        let out = plugin(&dir).request_with_token(v, "harbor.example.com/app", Some(token), &ann);
        out.accepted();
        assert!(!out.stdout().contains(token) && !out.stderr().contains(token));
    }
    let verbose = plugin(&dir).args(["--v=6"]).request_with_token(
        ApiVersion::V1,
        "harbor.example.com/app",
        Some(token),
        &ann,
    );
    assert!(!verbose.stderr().is_empty(), "--v=6 logs on stderr");
    assert!(
        !verbose.stderr().contains(token) && !verbose.stderr().contains(PASSWORD),
        "{}",
        verbose.stderr()
    );
}

#[test]
fn a_missing_password_file_is_one_clear_line() {
    let p = Plugin::new(env!("CARGO_BIN_EXE_static-credential-provider")).args([
        "--registry=a.io",
        "--username=u",
        "--password-file=/nonexistent/pw",
    ]);
    let line = p.request(ApiVersion::V1, "a.io/b").rejected();
    assert!(
        line.contains("reading the password file /nonexistent/pw"),
        "{line}"
    );
}

/// The shared bad-input table (every binary runs it), then what only this binary has: its own
/// flags and its password file.
#[test]
fn refuses_bad_input_cleanly() {
    let dir = TempDir::new("static-bad");
    bad_input::assert_rejects_all(&plugin(&dir), "harbor.example.com/team/app");

    let bin = env!("CARGO_BIN_EXE_static-credential-provider");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let cases: Vec<(Plugin, i32, String)> = vec![
        (
            Plugin::new(bin).args([
                "--registry=harbor.example.com",
                "--username=u",
                "--password-file=/x",
                "--cache-duration=banana",
            ]),
            2,
            "invalid value 'banana' for '--cache-duration".into(),
        ),
        (
            Plugin::new(bin).args(["--username=u", "--password-file=/x"]),
            2,
            "the following required arguments were not provided: --registry <REGISTRY>".into(),
        ),
        (
            Plugin::new(bin).args(["--registry=a.io", "--username=u"]),
            2,
            "--password-file <PASSWORD_FILE>".into(),
        ),
        (
            Plugin::new(bin).args([
                "--registry=harbor.example.com".to_owned(),
                "--username=u".to_owned(),
                format!("--password-file={}", empty.display()),
            ]),
            1,
            format!("the password file {} is empty", empty.display()),
        ),
        (
            Plugin::new(bin).args([
                "--registry=harbor.example.com".to_owned(),
                "--username=u".to_owned(),
                format!("--password-file={}", dir.path().display()),
            ]),
            1,
            format!(
                "reading the password file {} (--password-file)",
                dir.path().display()
            ),
        ),
    ];
    for (p, code, want) in cases {
        let out = p.request(ApiVersion::V1, "harbor.example.com/app");
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(code), "{line}");
        assert!(line.contains(&want), "{line:?} lacks {want:?}");
    }
}
