//! acr-credential-provider with `--metrics-file`: a fetch and then a token-cache hit, each
//! counted, with the refresh token's expiry for the login server.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::metrics::series;
use support::*;

const MI_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true,"userAssignedIdentityID":"kubelet-client-id"}"#;

#[test]
fn fetched_then_cache_hit_are_counted_with_the_token_expiry() {
    let world = World::new();
    let file = world.dir.path().join("m.prom");
    let p = world.mi_plugin(MI_CONFIG).args([
        format!(
            "--token-cache-dir={}",
            world.dir.path().join("cache").display()
        ),
        format!("--metrics-file={}", file.display()),
    ]);
    p.request(ApiVersion::V1, "myreg.azurecr.io/team/app")
        .accepted();
    p.request(ApiVersion::V1, "myreg.azurecr.io/team/app")
        .accepted();
    let after = series(&file);
    for (key, value) in [
        (
            r#"credential_provider_requests_total{provider="acr",outcome="fetched"}"#,
            "1",
        ),
        (
            r#"credential_provider_requests_total{provider="acr",outcome="cache_hit"}"#,
            "1",
        ),
        (
            r#"credential_provider_fetch_duration_seconds_count{provider="acr"}"#,
            "1",
        ),
        (
            r#"credential_provider_last_success_timestamp_seconds{provider="acr"}"#,
            "T",
        ),
    ] {
        assert_eq!(
            after.get(key).map(String::as_str),
            Some(value),
            "{key}: {after:#?}"
        );
    }
    let expiry: u64 = after
        [r#"credential_provider_token_expiry_timestamp_seconds{provider="acr",registry="myreg.azurecr.io"}"#]
        .parse()
        .unwrap();
    assert!(expiry > now(), "{expiry}");
    assert!(!after.keys().any(|k| k.contains("error")), "{after:#?}");
}
