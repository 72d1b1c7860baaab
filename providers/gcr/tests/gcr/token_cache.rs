//! The on-disk token cache (`--token-cache-dir`): 64 concurrent execs make one metadata call, a
//! later exec makes none and answers from the cached expiry, Workload Identity entries are per
//! Kubernetes service account and never hold the pod's token.

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_testkit::cache::{cache_entries, herd, herd_warnings, service_account_token};
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::{Plugin, TempDir, unix_now};

use crate::support::*;

const IMAGE: &str = "us-docker.pkg.dev/p/r/app";
const FEDERATED: &str = "ya29.federated-token-for-pods-0123";
const AUDIENCE: &str = "identitynamespace:my-project.svc.id.goog:https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster";

fn cached(p: Plugin, dir: &TempDir) -> Plugin {
    p.args([format!(
        "--token-cache-dir={}",
        dir.path().join("cache").display()
    )])
}

fn secs(d: Option<kcp_kubelet::duration::GoDuration>) -> i64 {
    d.expect("cacheDuration").as_nanos() / 1_000_000_000
}

#[test]
fn sixty_four_concurrent_execs_make_one_metadata_call() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-herd");
    let p = cached(plugin_with_metadata(&md), &dir);
    let started = std::time::Instant::now();
    let outcomes = herd(&p, 64, IMAGE, None, &BTreeMap::new());
    let slack = started.elapsed().as_secs() as i64 + 1;
    for out in &outcomes {
        let ok = out.accepted();
        assert_eq!(
            ok.auth["*.pkg.dev"],
            ("_token".to_owned(), NODE_TOKEN.to_owned())
        );
        // 3599 s minus the 120 s margin, less what the herd took when read back from disk.
        assert!(
            (3479 - slack..=3479).contains(&secs(ok.cache_duration)),
            "{:?}",
            ok.cache_duration
        );
    }
    assert_eq!(
        md.requests().len(),
        1,
        "one metadata call for 64 execs\n{}",
        herd_warnings(&outcomes)
    );
    let entries = cache_entries(&dir.path().join("cache"), 1);
    let key = entries[0].json["key"].as_str().unwrap();
    let host = md.addr().to_string();
    assert_eq!(
        key.split(";identity=").next(),
        Some(format!("provider=gcr;source=metadata;host={host}").as_str())
    );
    assert_eq!(entries[0].json["password"], NODE_TOKEN);
}

#[test]
fn a_restarted_kubelet_is_answered_from_disk_with_the_remaining_life() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-restart");
    let p = cached(plugin_with_metadata(&md), &dir);
    let first = p.request(ApiVersion::V1, IMAGE);
    assert_eq!(
        first.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("57m59s"),
            &google_auth("us-docker.pkg.dev", "_token", NODE_TOKEN)
        ),
        "a fresh token reads exactly as without the cache"
    );
    let entry = &cache_entries(&dir.path().join("cache"), 1)[0];
    entry.set_expires_at(unix_now() + 1800);
    let started = std::time::Instant::now();
    let second = p.request(ApiVersion::V1beta1, "gcr.io/p/app").accepted();
    assert_eq!(md.requests().len(), 1, "zero upstream calls");
    assert_eq!(second.auth["gcr.io"].1, NODE_TOKEN);
    // 1800 s minus the 120 s margin, less what the exec took (seconds under emulation).
    let slack = started.elapsed().as_secs() as i64 + 2;
    assert!(
        (1680 - slack..=1680).contains(&secs(second.cache_duration)),
        "{:?}",
        second.cache_duration
    );
    // Inside the five-minute margin: fetched again.
    entry.set_expires_at(unix_now() + 240);
    p.request(ApiVersion::V1, IMAGE).accepted();
    assert_eq!(md.requests().len(), 2);
}

#[test]
fn the_user_name_flag_applies_to_cached_tokens() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-username");
    cached(plugin_with_metadata(&md), &dir)
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    let ok = cached(plugin_with_metadata(&md), &dir)
        .args(["--username=oauth2accesstoken"])
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(ok.auth["gcr.io"].0, "oauth2accesstoken");
    assert_eq!(md.requests().len(), 1);
}

/// An STS that answers every exchange, counting them.
fn any_sts() -> FakeServer {
    FakeServer::start(|_| {
        FakeResponse::json(format!(
            r#"{{"access_token":"{FEDERATED}","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}}"#
        ))
    })
}

#[test]
fn workload_identity_entries_are_per_service_account_without_the_pod_token() {
    let md = node_metadata(r#","expires_in":3599"#);
    let sts = any_sts();
    let dir = TempDir::new("gcr-wif");
    let p = cached(
        plugin_with_metadata(&md).args([
            "--identity-provider=https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster".to_owned(),
            "--project-id=my-project".to_owned(),
            format!("--sts-endpoint={}/v1/token", sts.url()),
        ]),
        &dir,
    );
    let opted_in = BTreeMap::from([(
        "iam.gke.io/enable-wi-image-pull".to_owned(),
        "true".to_owned(),
    )]);
    let aud = "my-project.svc.id.goog";
    let pod_a = service_account_token(aud, "team", "puller", "uid-1", "pod-a");
    let pod_b = service_account_token(aud, "team", "puller", "uid-1", "pod-b");
    let other = service_account_token(aud, "team", "builder", "uid-2", "pod-c");
    for t in [&pod_a, &pod_b] {
        let ok = p
            .request_with_token(ApiVersion::V1, IMAGE, Some(t), &opted_in)
            .accepted();
        assert_eq!(ok.auth["*.pkg.dev"].1, FEDERATED);
    }
    assert_eq!(sts.requests().len(), 1);
    p.request_with_token(ApiVersion::V1, IMAGE, Some(&other), &opted_in)
        .accepted();
    assert_eq!(sts.requests().len(), 2);
    assert!(md.requests().is_empty());
    let entries = cache_entries(&dir.path().join("cache"), 2);
    for e in &entries {
        assert!(
            e.json["key"]
                .as_str()
                .unwrap()
                .contains(&format!("audience={AUDIENCE}"))
        );
        for token in [&pod_a, &pod_b, &other] {
            let claims = token.split('.').nth(1).unwrap();
            assert!(
                !e.text.contains(token.as_str()) && !e.text.contains(claims),
                "an SA token is on disk"
            );
        }
    }
}

/// A hit is answered before any async runtime starts, but after the same checks as a fetch: a
/// cached node token never reaches a host strict mode refuses.
#[test]
fn a_cache_hit_passes_every_check_a_fetch_does() {
    let md = node_metadata(r#","expires_in":3599"#);
    let dir = TempDir::new("gcr-hit-checks");
    let p = cached(plugin_with_metadata(&md), &dir).args(["--strict-hosts"]);
    p.request(ApiVersion::V1, IMAGE).accepted();
    let hit = p.request(ApiVersion::V1, "gcr.io/p/app").accepted();
    assert_eq!(hit.auth["gcr.io"].1, NODE_TOKEN);
    assert_eq!(md.requests().len(), 1, "the second exec was a hit");

    let refused = p.request(ApiVersion::V1, "harbor.example.com/p/app");
    let line = refused.rejected();
    assert!(
        line.contains("harbor.example.com is not a Google registry"),
        "{line}"
    );
    assert!(!refused.stdout().contains(NODE_TOKEN));
    assert_eq!(md.requests().len(), 1, "nothing fetched for a refused host");
}
