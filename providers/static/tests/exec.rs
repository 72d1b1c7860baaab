//! `static-credential-provider` run as the kubelet runs it, and the shared bad-input table that
//! every binary must refuse cleanly.

use kcp_common::ApiVersion;
use kcp_common::testkit::{Plugin, TempDir};

const PASSWORD: &str = "s3cr3t-robot-password";

fn plugin(dir: &TempDir) -> Plugin {
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    Plugin::new(env!("CARGO_BIN_EXE_static-credential-provider")).args([
        "get-credentials".to_owned(),
        "--registry=*.example.com,reg.example.org:5000".to_owned(),
        "--username=robot".to_owned(),
        format!("--password-file={}", file.display()),
        "--cache-duration=30m".to_owned(),
    ])
}

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

/// The issue-2 bad-input table: every case exits non-zero with one stderr line and empty stdout.
#[test]
fn refuses_bad_input_cleanly() {
    let dir = TempDir::new("static-bad");
    let p = plugin(&dir);
    let v1 = r#""apiVersion":"credentialprovider.kubelet.k8s.io/v1""#;
    let mut huge = br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"a.example.com/b","pad":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    huge.extend(b"\"}");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty stdin", vec![], "no request on stdin"),
        ("not JSON", b"hello".to_vec(), "not valid JSON"),
        ("array", b"[1,2]".to_vec(), "must be a JSON object, got an array"),
        ("number", b"42".to_vec(), "must be a JSON object, got a number"),
        ("trailing bytes", format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":"a.example.com/b"}} x"#).into_bytes(), "trailing characters"),
        ("wrong kind", format!(r#"{{"kind":"CredentialProviderResponse",{v1},"image":"a.example.com/b"}}"#).into_bytes(), "kind is \"CredentialProviderResponse\""),
        ("missing apiVersion", br#"{"kind":"CredentialProviderRequest","image":"a.example.com/b"}"#.to_vec(), "no \"apiVersion\""),
        ("unknown apiVersion", br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v2","image":"a.example.com/b"}"#.to_vec(), "is not supported"),
        ("other group", br#"{"kind":"CredentialProviderRequest","apiVersion":"client.authentication.k8s.io/v1","image":"a.example.com/b"}"#.to_vec(), "is not in group"),
        ("missing image", format!(r#"{{"kind":"CredentialProviderRequest",{v1}}}"#).into_bytes(), "image in plugin request was empty"),
        ("empty image", format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":""}}"#).into_bytes(), "image in plugin request was empty"),
        ("image with a space", format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":"a.example.com/b c"}}"#).into_bytes(), "invalid image"),
        ("image with a control character", format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":"a.example.com/b\u0007"}}"#).into_bytes(), "invalid image"),
        ("stdin over the cap", huge, "larger than 1048576 bytes"),
        ("invalid UTF-8", b"{\"kind\":\"\xc3\x28\"}".to_vec(), "not valid UTF-8"),
    ];
    for (name, input, want) in cases {
        let line = p.raw(&input).rejected();
        assert!(
            line.contains(want),
            "{name}: stderr line {line:?} lacks {want:?}"
        );
    }
}
