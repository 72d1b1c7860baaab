//! The on-disk token cache (`--token-cache-dir`) for exchanged credentials: 64 concurrent execs
//! with one pod's token make one exchange; a later exec makes none; another pod's token, or other
//! annotations, never share an entry; passthrough answers need no cache at all.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_testkit::cache::{cache_entries, herd, herd_warnings};
use kcp_testkit::fake::FakeResponse;
use support::*;

const IMAGE: &str = "registry.acme.test/team/app";
const ACCESS_TOKEN: &str = "cached-access-token-0123456789";

fn secs(d: Option<kcp_kubelet::duration::GoDuration>) -> i64 {
    d.expect("cacheDuration").as_nanos() / 1_000_000_000
}

#[test]
fn sixty_four_execs_with_one_token_make_one_exchange_and_later_execs_none() {
    let fake = token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":1800}}"#
    )));
    let (p, dir) = plugin(&exchange_config(&fake, "    audience: harbor\n"));
    let cache = dir.path().join("cache");
    let p = p.args([format!("--token-cache-dir={}", cache.display())]);
    let token = sa_token();
    let started = std::time::Instant::now();
    let outcomes = herd(&p, 64, IMAGE, Some(&token), &BTreeMap::new());
    let slack = started.elapsed().as_secs() as i64 + 1;
    for out in &outcomes {
        let ok = out.accepted();
        assert_eq!(
            ok.auth["registry.acme.test"],
            ("oauth2".to_owned(), ACCESS_TOKEN.to_owned())
        );
        // 1800 s minus the 300 s margin, less what the herd took when read back from disk.
        assert!(
            (1500 - slack..=1500).contains(&secs(ok.cache_duration)),
            "{:?}",
            ok.cache_duration
        );
    }
    assert_eq!(
        fake.requests().len(),
        1,
        "one exchange for 64 execs\n{}",
        herd_warnings(&outcomes)
    );
    let entries = cache_entries(&cache, 1);
    let key = entries[0].json["key"].as_str().unwrap();
    assert!(
        key.starts_with(&format!(
            "provider=oidc;registry=registry.acme.test;host=registry.acme.test;endpoint={}{TOKEN_PATH};protocol=TokenExchange(",
            fake.url()
        )),
        "{key}"
    );
    assert!(
        !entries[0].text.contains(&token),
        "the pod's token is never stored"
    );
    // A restarted kubelet: answered from disk, nothing sent.
    let again = p.request_with_token(ApiVersion::V1, IMAGE, Some(&token), &BTreeMap::new());
    again.accepted();
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn other_tokens_and_other_annotations_never_share_an_entry() {
    let fake = token_endpoint(FakeResponse::json(format!(
        r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":1800}}"#
    )));
    let (p, dir) = plugin(&exchange_config(&fake, ""));
    let cache = dir.path().join("cache");
    let p = p.args([format!("--token-cache-dir={}", cache.display())]);
    let annotations = BTreeMap::from([("acme.test/team".to_owned(), "blue".to_owned())]);
    let runs = [
        (sa_token(), BTreeMap::new()),
        (sa_token(), BTreeMap::new()),
        (other_pod_token(), BTreeMap::new()),
        (sa_token(), annotations),
    ];
    for (token, annotations) in &runs {
        p.request_with_token(ApiVersion::V1, IMAGE, Some(token), annotations)
            .accepted();
    }
    assert_eq!(
        fake.requests().len(),
        3,
        "the repeat alone was answered from disk"
    );
    cache_entries(&cache, 3);
}

#[test]
fn a_passthrough_answer_writes_no_entry() {
    let (p, dir) = plugin(
        "registries:\n  - host: harbor.acme.test\n    protocol: passthrough\n    username: jwt\n",
    );
    let cache = dir.path().join("cache");
    p.args([format!("--token-cache-dir={}", cache.display())])
        .cache_type_token(true)
        .request_with_token(
            ApiVersion::V1,
            "harbor.acme.test/app",
            Some(&sa_token()),
            &BTreeMap::new(),
        )
        .accepted();
    let written = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
    assert_eq!(written, 0, "nothing in {}", cache.display());
}
