//! ecr-credential-provider with `--metrics-file`: a fetch, then a token-cache hit, then an ECR
//! refusal, each counted under its outcome, with the token's expiry per registry.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::TempDir;
use kcp_testkit::fake::FakeServer;
use kcp_testkit::metrics::{series, without_durations};
use support::*;

#[test]
fn fetched_then_cache_hit_then_error_are_counted_with_the_token_expiry() {
    let expires_at = unix_now() + 12 * 3600;
    let answer = ecr_token("AWS:metrics-password", Some(expires_at));
    let ecr = FakeServer::start(move |_| answer.clone());
    let dir = TempDir::new("ecr-metrics");
    let file = dir.path().join("m.prom");
    let p = plugin().env("AWS_ENDPOINT_URL_ECR", ecr.url()).args([
        format!("--token-cache-dir={}", dir.path().join("cache").display()),
        format!("--metrics-file={}", file.display()),
    ]);
    let image = format!("{PRIVATE_HOST}/app");
    p.request(ApiVersion::V1, &image).accepted();
    p.request(ApiVersion::V1, &image).accepted();
    let after = series(&file);
    assert_eq!(
        without_durations(&after),
        [
            (
                r#"credential_provider_last_success_timestamp_seconds{provider="ecr"}"#.to_owned(),
                "T".to_owned()
            ),
            (
                r#"credential_provider_requests_total{provider="ecr",outcome="cache_hit"}"#.to_owned(),
                "1".to_owned()
            ),
            (
                r#"credential_provider_requests_total{provider="ecr",outcome="fetched"}"#.to_owned(),
                "1".to_owned()
            ),
            (
                format!(
                    r#"credential_provider_token_expiry_timestamp_seconds{{provider="ecr",registry="{PRIVATE_HOST}"}}"#
                ),
                expires_at.to_string()
            ),
        ]
        .into_iter()
        .collect()
    );
    // The cache hit was answered before any fetch: one timed fetch.
    assert_eq!(
        after[r#"credential_provider_fetch_duration_seconds_count{provider="ecr"}"#],
        "1"
    );

    let refusing = FakeServer::start(|_| aws_error(400, "InvalidSignatureException"));
    plugin()
        .env("AWS_ENDPOINT_URL_ECR", refusing.url())
        .args([format!("--metrics-file={}", file.display())])
        .request(ApiVersion::V1, &image)
        .rejected();
    let after = series(&file);
    assert_eq!(
        after[r#"credential_provider_requests_total{provider="ecr",outcome="error",class="upstream_4xx"}"#],
        "1",
        "{after:#?}"
    );
}
