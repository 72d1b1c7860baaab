//! A token endpoint on a real host name over real TLS, reached as a proxied production node
//! reaches it: `HTTPS_PROXY` points at a local `CONNECT` proxy that routes `sso.acme.test:443` to
//! a TLS fake whose certificate comes from a test CA trusted through `SSL_CERT_FILE`.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};
use support::*;

const IMAGE: &str = "registry.acme.test/team/app";
const ACCESS_TOKEN: &str = "access-token-over-tls-0123456789";

#[test]
fn the_exchange_goes_through_the_proxy_over_tls_and_only_to_the_entry_endpoint() {
    let ca = TestCa::new();
    let sso = TlsFakeServer::start(&ca, &["sso.acme.test"], |req| {
        if req.path() == TOKEN_PATH {
            FakeResponse::json(format!(
                r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":900}}"#
            ))
        } else {
            FakeResponse::new(404, "")
        }
    });
    let proxy = ConnectProxy::start(&[("sso.acme.test:443", sso.addr())]);
    let (p, _dir) = plugin(&format!(
        "registries:\n  - host: registry.acme.test\n    protocol: token-exchange\n    endpoint: https://sso.acme.test{TOKEN_PATH}\n    username: oauth2\n"
    ));
    let p = p
        .env("HTTPS_PROXY", proxy.url())
        .env("SSL_CERT_FILE", ca.ca_file().display().to_string());
    let token = sa_token();
    let out = p.request_with_token(ApiVersion::V1, IMAGE, Some(&token), &Default::default());
    out.accepted();
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "10m0s",
            "registry.acme.test",
            "oauth2",
            ACCESS_TOKEN
        )
    );
    assert_eq!(proxy.targets(), ["sso.acme.test:443"]);
    let requests = sso.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        form(&requests[0]).contains(&("subject_token".to_owned(), token.clone())),
        "the token went to the entry's endpoint"
    );

    // With another CA the certificate is not trusted: one line saying so, nothing answered.
    let other = TestCa::new();
    let line = p
        .env("SSL_CERT_FILE", other.ca_file().display().to_string())
        .request_with_token(ApiVersion::V1, IMAGE, Some(&token), &Default::default())
        .rejected();
    assert!(
        line.contains("TLS with sso.acme.test failed") && line.contains("SSL_CERT_FILE"),
        "{line}"
    );
}
