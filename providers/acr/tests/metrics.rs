//! acr-credential-provider with `--metrics-file`: a fetch and then a token-cache hit, each
//! counted, with the refresh token's expiry for the login server.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::metrics::assert_fetch_then_cache_hit;
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
    let expiry = assert_fetch_then_cache_hit(&file, "acr", "myreg.azurecr.io");
    assert!(expiry > now(), "{expiry}");
}
