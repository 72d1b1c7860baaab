//! `--metrics-file`: a metadata fetch and then a token-cache hit, each counted, with the
//! token's expiry under every auth key answered.

use kcp_kubelet::ApiVersion;
use kcp_testkit::metrics::assert_fetch_then_cache_hit;
use kcp_testkit::{TempDir, unix_now};

use crate::support::*;

#[test]
fn fetched_then_cache_hit_are_counted_with_the_token_expiry() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-metrics");
    let file = dir.path().join("m.prom");
    let p = plugin_with_metadata(&md).args([
        format!("--token-cache-dir={}", dir.path().join("cache").display()),
        format!("--metrics-file={}", file.display()),
    ]);
    let before = unix_now();
    p.request(ApiVersion::V1, "us-docker.pkg.dev/p/r/app")
        .accepted();
    p.request(ApiVersion::V1, "us-docker.pkg.dev/p/r/app")
        .accepted();
    let expiry = assert_fetch_then_cache_hit(&file, "gcr", "*.pkg.dev");
    assert!(
        (before + 3599..=unix_now() + 3599).contains(&expiry),
        "{expiry}"
    );
}
