//! The default Google endpoints over real TLS: `HTTPS_PROXY` points at a local `CONNECT` proxy
//! that routes `sts.googleapis.com:443`, `iamcredentials.googleapis.com:443` and
//! `oauth2.googleapis.com:443` to TLS fakes whose certificates come from a test CA trusted through
//! `SSL_CERT_FILE`. No endpoint flag is used: this is exactly what a proxied production node does.

use kcp_kubelet::ApiVersion;
use kcp_testkit::TempDir;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};

use crate::support::*;

const IMAGE: &str = "us-docker.pkg.dev/p/r/app";

#[test]
fn wif_and_impersonation_reach_the_default_endpoints_through_the_proxy() {
    let ca = TestCa::new();
    let sts = TlsFakeServer::start(&ca, &["sts.googleapis.com"], |req| {
        let f = form(req);
        if req.path() == "/v1/token"
            && f.get("subject_token").map(String::as_str) == Some("ksa.jwt.token-for-tls-test")
        {
            FakeResponse::json(
                r#"{"access_token":"federated-over-tls-0123456789","expires_in":3600}"#,
            )
        } else {
            FakeResponse::new(400, "bad exchange")
        }
    });
    let iam = TlsFakeServer::start(&ca, &["iamcredentials.googleapis.com"], |req| {
        if req.header("authorization") == Some("Bearer federated-over-tls-0123456789") {
            FakeResponse::json(
                r#"{"accessToken":"ya29.impersonated-over-tls","expireTime":"2999-01-01T00:00:00Z"}"#,
            )
        } else {
            FakeResponse::new(403, "denied")
        }
    });
    let proxy = ConnectProxy::start(&[
        ("sts.googleapis.com:443", sts.addr()),
        ("iamcredentials.googleapis.com:443", iam.addr()),
    ]);
    let md = node_metadata(r#","expires_in":3599"#);
    let annotations = [
        (
            "iam.gke.io/enable-wi-image-pull".to_owned(),
            "true".to_owned(),
        ),
        (
            "iam.gke.io/gcp-service-account".to_owned(),
            "puller@p.iam.gserviceaccount.com".to_owned(),
        ),
    ]
    .into();
    let p = plugin_with_metadata(&md)
        .args(["--identity-provider=https://container.googleapis.com/v1/projects/p/locations/l/clusters/c", "--project-id=p"])
        .env("HTTPS_PROXY", proxy.url())
        .env("HTTP_PROXY", proxy.url());
    let ok = p
        .clone()
        .env("SSL_CERT_FILE", ca.ca_file().display().to_string())
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some("ksa.jwt.token-for-tls-test"),
            &annotations,
        )
        .accepted();
    assert_eq!(ok.auth["*.pkg.dev"].1, "ya29.impersonated-over-tls");
    assert_eq!(
        proxy.targets(),
        [
            "sts.googleapis.com:443",
            "iamcredentials.googleapis.com:443"
        ],
        "both calls went through the proxy, the metadata server was not involved"
    );
    assert_eq!(sts.requests().len(), 1);
    assert_eq!(
        iam.requests()[0].target,
        "/v1/projects/-/serviceAccounts/puller@p.iam.gserviceaccount.com:generateAccessToken"
    );
    assert!(md.requests().is_empty());

    // Without the test CA the certificate is not trusted: verification is really on.
    let line = p
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some("ksa.jwt.token-for-tls-test"),
            &annotations,
        )
        .rejected();
    assert!(
        line.contains("sts.googleapis.com") && line.to_lowercase().contains("certificate"),
        "{line}"
    );
}

#[test]
fn a_key_file_without_token_uri_uses_googles_endpoint() {
    let ca = TestCa::new();
    let oauth = TlsFakeServer::start(&ca, &["oauth2.googleapis.com"], |req| {
        let (_, claims) = verify_jwt(&form(req)["assertion"]);
        if req.path() == "/token" && claims["aud"] == "https://oauth2.googleapis.com/token" {
            FakeResponse::json(
                r#"{"access_token":"ya29.from-google-default-endpoint","expires_in":3599}"#,
            )
        } else {
            FakeResponse::new(400, "bad grant")
        }
    });
    let proxy = ConnectProxy::start(&[("oauth2.googleapis.com:443", oauth.addr())]);
    let dir = TempDir::new("gcr-key-default-uri");
    let key = dir.path().join("key.json");
    let json = serde_json::json!({
        "type": "service_account",
        "private_key": include_str!("../data/test-sa-key.pem"),
        "client_email": "puller@p.iam.gserviceaccount.com",
    });
    std::fs::write(&key, json.to_string()).unwrap();
    let ok = plugin()
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .env("HTTPS_PROXY", proxy.url())
        .env("SSL_CERT_FILE", ca.ca_file().display().to_string())
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(ok.auth["gcr.io"].1, "ya29.from-google-default-endpoint");
    assert_eq!(proxy.targets(), ["oauth2.googleapis.com:443"]);
}
