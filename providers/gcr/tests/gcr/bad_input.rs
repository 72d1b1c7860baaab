//! The shared bad-input table (`kcp_testkit::bad_input`), and what only this binary
//! reads: its key file and its own flags and variables.

use kcp_kubelet::ApiVersion;
use kcp_testkit::{Plugin, TempDir, bad_input};

use crate::support::*;

const IMAGE: &str = "gcr.io/my-project/app";

fn base() -> Plugin {
    Plugin::new(env!("CARGO_BIN_EXE_gcr-credential-provider")).args(["get-credentials"])
}

#[test]
fn refuses_the_shared_bad_input_table() {
    let md = node_metadata(r#","expires_in":3599"#);
    bad_input::assert_rejects_all(
        &base().env("GCE_METADATA_HOST", md.addr().to_string()),
        IMAGE,
    );
    assert_eq!(
        md.requests().len(),
        1,
        "only the control request got a token"
    );
}

/// A broken key file is found when a request arrives, so it exits 1 like any failure to get
/// credentials; flag and variable mistakes exit 2.
#[test]
fn refuses_a_broken_key_file_and_its_own_bad_flags() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-bad-key");
    let key = |name: &str, content: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        base()
            .env("GCE_METADATA_HOST", md.addr().to_string())
            .env("GOOGLE_APPLICATION_CREDENTIALS", path.display().to_string())
    };
    let with_md = || base().env("GCE_METADATA_HOST", md.addr().to_string());
    let dir_text = dir.path().display().to_string();
    let cases: Vec<(&str, Plugin, i32, &str)> = vec![
        ("a key file that is not JSON", key("k1.json", b"{not json"), 1, "k1.json"),
        ("a key file that is not UTF-8", key("k2.json", b"\xff\xfe"), 1, "k2.json"),
        ("an empty key file", key("k3.json", b""), 1, "k3.json"),
        ("a key file that is a list", key("k4.json", b"[]"), 1, "k4.json"),
        (
            "a service-account key without private_key",
            key(
                "k5.json",
                br#"{"type":"service_account","client_email":"a@b.iam.gserviceaccount.com","token_uri":"https://oauth2.googleapis.com/token"}"#,
            ),
            1,
            "private_key",
        ),
        (
            "a private key that is not PEM",
            key(
                "k6.json",
                br#"{"type":"service_account","client_email":"a@b.iam.gserviceaccount.com","private_key":"not-a-pem-private-key-material","token_uri":"https://oauth2.googleapis.com/token"}"#,
            ),
            1,
            "private_key",
        ),
        (
            "a key file that is a directory",
            with_md().env("GOOGLE_APPLICATION_CREDENTIALS", dir_text.clone()),
            1,
            "GOOGLE_APPLICATION_CREDENTIALS",
        ),
        ("--authFlow=banana", with_md().args(["--authFlow=banana"]), 2, "invalid value \"banana\" for authFlow"),
        ("--username=admin", with_md().args(["--username=admin"]), 2, "use _token or oauth2accesstoken"),
        ("--strict-hosts=banana", with_md().args(["--strict-hosts=banana"]), 2, "invalid value 'banana' for '--strict-hosts"),
        ("GCR_STRICT_HOSTS=banana", with_md().env("GCR_STRICT_HOSTS", "banana"), 2, "invalid value 'banana' for '--strict-hosts"),
        ("KUBE_SIDECAR_CACHE_TYPE=pod", with_md().env("KUBE_SIDECAR_CACHE_TYPE", "pod"), 2, "KUBE_SIDECAR_CACHE_TYPE"),
        ("KUBE_SIDECAR_CACHE_DURATION=soon", with_md().env("KUBE_SIDECAR_CACHE_DURATION", "soon"), 2, "KUBE_SIDECAR_CACHE_DURATION"),
        ("GCE_METADATA_HOST with a path", base().env("GCE_METADATA_HOST", "metadata/evil"), 2, "GCE_METADATA_HOST"),
        ("--sts-endpoint over plain http", with_md().args(["--wif-audience=aud", "--sts-endpoint=http://sts.example.com"]), 2, "--sts-endpoint"),
    ];
    for (name, p, code, want) in cases {
        let out = p.request(ApiVersion::V1, IMAGE);
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(code), "{name}: {line}");
        assert!(line.contains(want), "{name}: {line:?} lacks {want:?}");
    }
    assert!(md.requests().is_empty(), "{:?}", md.requests());
}
