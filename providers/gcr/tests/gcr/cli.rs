//! The command line as kubelet configs write it: upstream's flags, klog flags, bare invocations.

use kcp_kubelet::ApiVersion;
use kcp_testkit::Plugin;

use crate::support::*;

const IMAGE: &str = "gcr.io/my-project/app";

#[test]
fn a_bare_invocation_works_like_get_credentials() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = Plugin::new(env!("CARGO_BIN_EXE_gcr-credential-provider"))
        .env("GCE_METADATA_HOST", md.addr().to_string())
        .request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("57m59s"),
            &google_auth("gcr.io", "_token", NODE_TOKEN)
        )
    );
    out.accepted();
}

#[test]
fn kube_up_and_klog_arguments_are_accepted() {
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin_with_metadata(&md)
        .args([
            "--v=3",
            "--logtostderr",
            "--stderrthreshold=INFO",
            "--authFlow=gcr",
            "-a",
            "gcr",
        ])
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    let stderr = out.stderr();
    // Upstream's klog flags are taken silently (tests/gcr/flags.rs has them all).
    assert!(!stderr.contains("logtostderr"), "{stderr}");
    assert!(!stderr.contains(NODE_TOKEN));
}

#[test]
fn a_bad_auth_flow_is_upstreams_message_on_one_line() {
    for flow in ["bad-flow", "", "Gcrauthflow"] {
        let out = plugin()
            .args([format!("--authFlow={flow}")])
            .request(ApiVersion::V1, IMAGE);
        let line = out.rejected();
        assert!(
            line.contains(&format!(
                "invalid value {flow:?} for authFlow (must be one of \"gcr\", \"dockercfg\", or \"dockercfg-url\")"
            )),
            "{line}"
        );
        assert_eq!(out.exec.exit_code, Some(2));
    }
}

#[test]
fn wif_flags_with_a_dockercfg_flow_warn_but_work() {
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg",
        vec![kcp_testkit::fake::FakeResponse::new(
            200,
            r#"{"gcr.io":{"username":"u","password":"p"}}"#,
        )],
    )]);
    let out = plugin_with_metadata(&md)
        .args([
            "--authFlow=dockercfg",
            "--identity-provider=https://idp",
            "--project-id=p",
        ])
        .request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.stdout(),
        expected(ApiVersion::V1, "Registry", None, &[("gcr.io", "u", "p")])
    );
    assert!(
        out.stderr().contains("only apply to --authFlow=gcr"),
        "{}",
        out.stderr()
    );
}

#[test]
fn other_flag_errors_are_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 3] = [
        (&["--username=admin"], "use _token or oauth2accesstoken"),
        (
            &["--metadata-host=http://169.254.169.254"],
            "must not include a scheme",
        ),
        (&["--deadline=soon"], "soon"),
    ];
    for (args, want) in cases {
        let out = plugin()
            .args(args.iter().copied())
            .request(ApiVersion::V1, IMAGE);
        assert_eq!(out.exec.exit_code, Some(2), "{args:?}: {}", out.stderr());
        assert!(out.stdout().is_empty());
        assert!(out.stderr().contains(want), "{args:?}: {}", out.stderr());
    }
    let line = plugin()
        .env("GCE_METADATA_HOST", "metadata/evil")
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(line.contains("GCE_METADATA_HOST"), "{line}");
}

#[test]
fn version_and_help_are_for_people_only() {
    let out = Plugin::new(env!("CARGO_BIN_EXE_gcr-credential-provider"))
        .args(["--version"])
        .raw(b"");
    assert_eq!(out.exec.exit_code, Some(0));
    assert_eq!(
        out.stdout(),
        format!("gcr-credential-provider {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_requests_are_refused_cleanly() {
    let md = node_metadata(r#","expires_in":3599"#);
    let p = plugin_with_metadata(&md);
    for (input, want) in [
        (&b""[..], "no request on stdin"),
        (b"hello", "not valid JSON"),
        (br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v2","image":"gcr.io/a"}"#, "is not supported"),
        (br#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}"#, "image in plugin request was empty"),
    ] {
        let out = p.raw(input);
        let line = out.rejected();
        assert!(line.contains(want), "{line}");
        assert_eq!(out.exec.exit_code, Some(2));
    }
    assert!(
        md.requests().is_empty(),
        "nothing is fetched for a bad request"
    );
}
