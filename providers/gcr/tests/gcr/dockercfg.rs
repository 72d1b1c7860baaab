//! `--authFlow=dockercfg` and `--authFlow=dockercfg-url` (upstream's CPG-4), in both document
//! formats.

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};

use crate::support::*;

const LEGACY: &str =
    r#"{"https://hello.kubernetes.io":{"email":"foo@bar.baz","auth":"Zm9vOmJhcg=="}}"#;
const IMAGE: &str = "hello.kubernetes.io/team/app";

#[test]
fn dockercfg_attribute_in_every_api_version() {
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg",
        vec![FakeResponse::new(200, LEGACY)],
    )]);
    let p = plugin_with_metadata(&md).args(["--authFlow=dockercfg"]);
    for v in ApiVersion::ALL {
        let out = p.request(v, IMAGE);
        // No cacheDuration: static credentials, so the config's defaultCacheDuration applies.
        assert_eq!(
            out.stdout(),
            expected(
                v,
                "Registry",
                None,
                &[("https://hello.kubernetes.io", "foo", "bar")]
            )
        );
        out.accepted();
        assert_eq!(out.stderr(), "");
    }
    let requests = md.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.target
        == "/computeMetadata/v1/instance/attributes/google-dockercfg"
        && r.header("metadata-flavor") == Some("Google")));
}

#[test]
fn config_json_auths_format_and_short_flag() {
    let doc = r#"{"auths":{"us-docker.pkg.dev":{"auth":"X2pzb25fa2V5OnMzY3IzdA=="},"harbor.example.com":{"username":"robot","password":"pw1"}}}"#;
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg",
        vec![FakeResponse::new(200, doc)],
    )]);
    let out = plugin_with_metadata(&md)
        .args(["-a", "dockercfg"])
        .env("KUBE_SIDECAR_CACHE_DURATION", "5m")
        .request(ApiVersion::V1, "us-docker.pkg.dev/p/r/app");
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("5m0s"),
            &[
                ("harbor.example.com", "robot", "pw1"),
                ("us-docker.pkg.dev", "_json_key", "s3cr3t")
            ]
        )
    );
    out.accepted();
}

#[test]
fn a_missing_attribute_is_a_clear_error() {
    let md = metadata_fake(vec![]);
    for (flow, attribute) in [
        ("dockercfg", "google-dockercfg"),
        ("dockercfg-url", "google-dockercfg-url"),
    ] {
        let out = plugin_with_metadata(&md)
            .args([format!("--authFlow={flow}")])
            .request(ApiVersion::V1, IMAGE);
        let line = out.rejected();
        assert!(
            line.contains(&format!("attribute {attribute} is not set (HTTP 404)")),
            "{line}"
        );
        assert_eq!(out.exec.exit_code, Some(1));
    }
}

#[test]
fn bad_documents_fail_without_quoting_passwords() {
    for (doc, want) in [
        (r#"{"r.io":{"auth":"c2VjcmV0LXB3ZA=="}}"#, "no colon"),
        (
            r#"{"r.io":{"username":"u","password":7}}"#,
            "password is not a string",
        ),
        ("{}", "no registry credentials"),
        ("secret-pwd", "not valid JSON"),
    ] {
        let md = metadata_fake(vec![(
            "instance/attributes/google-dockercfg",
            vec![FakeResponse::new(200, doc)],
        )]);
        let line = plugin_with_metadata(&md)
            .args(["--authFlow=dockercfg"])
            .request(ApiVersion::V1, IMAGE)
            .rejected();
        assert!(
            line.contains(want) && line.contains("google-dockercfg"),
            "{line}"
        );
        assert!(
            !line.contains("secret-pw") && !line.contains("c2VjcmV0"),
            "{line}"
        );
    }
}

#[test]
fn dockercfg_url_fetches_without_the_metadata_header() {
    let doc_server = scripted(vec![("/my/value", vec![FakeResponse::new(200, LEGACY)])]);
    // Trailing newline and spaces, as an attribute set by hand often has.
    let url = format!("{}/my/value?sig=abc\n", doc_server.url());
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg-url",
        vec![FakeResponse::new(200, url)],
    )]);
    let out = plugin_with_metadata(&md)
        .args(["--authFlow=dockercfg-url"])
        .request(ApiVersion::V1beta1, IMAGE);
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1beta1,
            "Registry",
            None,
            &[("https://hello.kubernetes.io", "foo", "bar")]
        )
    );
    out.accepted();
    let fetched = doc_server.requests();
    assert_eq!(fetched.len(), 1);
    assert_eq!(fetched[0].target, "/my/value?sig=abc");
    assert_eq!(
        fetched[0].header("metadata-flavor"),
        None,
        "the metadata header stays on the metadata server"
    );
    assert_eq!(md.requests()[0].header("metadata-flavor"), Some("Google"));
}

#[test]
fn dockercfg_url_errors_hide_the_query_and_refuse_plain_http() {
    let doc_server = scripted(vec![]);
    let url = format!("{}/gone?X-Goog-Signature=SECRETSIG", doc_server.url());
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg-url",
        vec![FakeResponse::new(200, url)],
    )]);
    let line = plugin_with_metadata(&md)
        .args(["--authFlow=dockercfg-url"])
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("HTTP 404") && line.contains(&format!("{}/gone", doc_server.url())),
        "{line}"
    );
    assert!(!line.contains("SECRETSIG"), "{line}");

    for (value, want) in [
        ("http://dockercfg.example.com/cfg", "uses plain http"),
        ("gs://bucket/cfg", "unsupported scheme"),
    ] {
        let md = metadata_fake(vec![(
            "instance/attributes/google-dockercfg-url",
            vec![FakeResponse::new(200, value)],
        )]);
        let line = plugin_with_metadata(&md)
            .args(["--authFlow=dockercfg-url"])
            .request(ApiVersion::V1, IMAGE)
            .rejected();
        assert!(line.contains(want), "{line}");
    }
}

/// A loopback dockercfg URL (a node-local relay) and the metadata server go direct whatever the
/// proxy variables say. The document used to follow `HTTP_PROXY`.
#[test]
fn a_loopback_dockercfg_url_and_metadata_go_direct_whatever_the_proxy() {
    let document = FakeServer::start(|req| {
        if req.target == "/cfg" {
            FakeResponse::new(200, LEGACY)
        } else {
            FakeResponse::new(404, "")
        }
    });
    let doc_url = format!("http://localhost:{}/cfg", document.addr().port());
    let proxy = FakeServer::start(|_| FakeResponse::new(502, "the proxy"));
    let md = metadata_fake(vec![(
        "instance/attributes/google-dockercfg-url",
        vec![FakeResponse::new(200, doc_url)],
    )]);
    let out = plugin_with_metadata(&md)
        .args(["--authFlow=dockercfg-url"])
        .env("HTTP_PROXY", proxy.url())
        .env("HTTPS_PROXY", proxy.url())
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
    assert_eq!(document.requests().len(), 1);
    assert_eq!(md.requests().len(), 1);
}
