//! An ACR target: the real `acr-credential-provider` with an App Service managed identity
//! (`IDENTITY_ENDPOINT`) against a local Azure like the one `providers/acr/tests` use: the
//! registry over TLS under its real name through a CONNECT proxy, trusted via `SSL_CERT_FILE`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};
use kcp_testkit::{TempDir, unix_now};
use support::*;

const REGISTRY: &str = "myreg.azurecr.io";
const MI_TOKEN: &str = "mi-access-token-Ct41";
const IDENTITY_HEADER: &str = "identity-header-secret-Ct42";

#[test]
fn an_acr_target_publishes_the_refresh_token_entry() {
    kcp_testkit::secrets::register(MI_TOKEN);
    kcp_testkit::secrets::register(IDENTITY_HEADER);
    let dir = TempDir::new("ctl-acr");
    let ca = TestCa::new();
    let msi = FakeServer::start(|req| {
        if req.path() == "/msi/token" && req.header("x-identity-header") == Some(IDENTITY_HEADER) {
            FakeResponse::json(format!(
                r#"{{"access_token":"{MI_TOKEN}","expires_on":"{}","resource":"https://containerregistry.azure.net","token_type":"Bearer"}}"#,
                unix_now() + 86_000
            ))
        } else {
            FakeResponse::new(400, r#"{"error":"invalid_request"}"#)
        }
    });
    let registry = TlsFakeServer::start(&ca, &[REGISTRY], |req| {
        match (req.method.as_str(), req.path()) {
            ("GET", "/v2/") => FakeResponse::new(401, r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#)
                .header(
                    "www-authenticate",
                    &format!(
                        r#"Bearer realm="https://{REGISTRY}/oauth2/token",service="{REGISTRY}""#
                    ),
                ),
            ("POST", "/oauth2/exchange") => {
                let claims = serde_json::json!({"exp": unix_now() + 3 * 3600, "aud": REGISTRY, "grant_type": "refresh_token"});
                let token =
                    kcp_testkit::cache::unsigned_jwt(r#"{"alg":"RS256","typ":"JWT"}"#, &claims);
                kcp_testkit::secrets::register(&token);
                FakeResponse::json(format!(r#"{{"refresh_token":"{token}"}}"#))
            }
            _ => FakeResponse::new(404, "{}"),
        }
    });
    let proxy = ConnectProxy::start(&[(&format!("{REGISTRY}:443"), registry.addr())]);
    let azure_json = dir.path().join("azure.json");
    std::fs::write(
        &azure_json,
        r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true,"userAssignedIdentityID":"kubelet-client-id"}"#,
    )
    .unwrap();
    let target = TargetSpec {
        provider: "acr",
        command: provider_binary("acr-credential-provider"),
        args: vec![azure_json.display().to_string()],
        env: vec![
            ("SSL_CERT_FILE".into(), ca.ca_file().display().to_string()),
            ("HTTPS_PROXY".into(), proxy.url()),
            (
                "IDENTITY_ENDPOINT".into(),
                format!("{}/msi/token", msi.url()),
            ),
            ("IDENTITY_HEADER".into(), IDENTITY_HEADER.into()),
        ],
        image: format!("{REGISTRY}/team/app"),
    };
    let api = FakeApi::start();
    let (code, stderr) = once(command(&api, dir.path(), &target.config(dir.path())));
    assert_eq!(code, 0, "{stderr}");

    let expected_name = target.shared_stem_file(dir.path());
    let data = api.secret_data();
    assert_eq!(data.keys().collect::<Vec<_>>(), [&expected_name]);
    let entry = parse_entry(&data[&expected_name]);
    assert_eq!(entry["username"], "00000000-0000-0000-0000-000000000000");
    let key = entry["key"].as_str().unwrap();
    assert!(
        key.contains("provider=acr;login-server=myreg.azurecr.io"),
        "{key}"
    );
    let life = entry["expiresAt"].as_u64().unwrap() - entry["fetchedAt"].as_u64().unwrap();
    assert!(
        (3 * 3600 - 60..=3 * 3600).contains(&life),
        "the refresh token's own expiry: {life}"
    );
    assert_clean(&stderr);
}
