//! ecr-credential-provider with the on-disk token cache (`--token-cache-dir`): a herd of
//! concurrent execs makes one ECR call, a later exec (a restarted kubelet) makes none and answers
//! from the cached expiry, service accounts get their own entries without their token on disk,
//! and a broken cache never fails a pull.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::cache::{cache_entries, herd, herd_warnings, service_account_token};
use kcp_testkit::fake::FakeServer;
use kcp_testkit::{Plugin, TempDir};
use support::*;

const ROLE: &str = "arn:aws:iam::123456789012:role/team-pull";

/// A service-account token for the STS audience.
fn sa_token(namespace: &str, name: &str, uid: &str, pod: &str) -> String {
    service_account_token("sts.amazonaws.com", namespace, name, uid, pod)
}

/// A fake ECR that answers slowly enough for a herd to pile up behind the first exec.
fn slow_ecr(password: &str, expires_at: u64) -> FakeServer {
    let answer = ecr_token(&format!("AWS:{password}"), Some(expires_at));
    FakeServer::start(move |_| {
        std::thread::sleep(Duration::from_millis(300));
        answer.clone()
    })
}

fn cached(plugin: Plugin, ecr: &FakeServer, dir: &TempDir) -> Plugin {
    plugin.env("AWS_ENDPOINT_URL_ECR", ecr.url()).args([format!(
        "--token-cache-dir={}",
        dir.path().join("cache").display()
    )])
}

fn secs(d: GoDuration) -> i64 {
    d.as_nanos() / 1_000_000_000
}

#[test]
fn sixty_four_concurrent_execs_make_one_ecr_call() {
    let ecr = slow_ecr("herd-password", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-herd");
    let p = cached(plugin(), &ecr, &dir);
    let started = std::time::Instant::now();
    let outcomes = herd(
        &p,
        64,
        &format!("{PRIVATE_HOST}/app"),
        None,
        &BTreeMap::new(),
    );
    for out in &outcomes {
        let ok = out.accepted();
        assert_eq!(
            ok.auth[PRIVATE_HOST],
            ("AWS".to_owned(), "herd-password".to_owned())
        );
        // Six hours, less what the herd itself took (read back from disk later).
        let d = secs(ok.cache_duration.unwrap());
        let slack = started.elapsed().as_secs() as i64 + 1;
        assert!((6 * 3600 - slack..=6 * 3600).contains(&d), "{d}");
    }
    assert_eq!(
        ecr.requests().len(),
        1,
        "one upstream call for 64 execs\n{}",
        herd_warnings(&outcomes)
    );
    let entries = cache_entries(&dir.path().join("cache"), 1);
    let entry = &entries[0].json;
    assert_eq!(entry["username"], "AWS");
    assert_eq!(entry["password"], "herd-password");
    let key = entry["key"].as_str().unwrap();
    assert!(
        key.starts_with("provider=ecr;api=ecr;partition=aws;region=us-west-2;fips=false;dual-stack=false;identity=sha256:"),
        "{key}"
    );
    // The node's access key ID is part of the identity, hashed; the secret key is nowhere.
    assert!(!entries[0].text.contains("AKIDTESTSTATIC"));
    assert!(!entries[0].text.contains("static-secret-key-value"));
}

#[test]
fn a_restarted_kubelet_is_answered_from_disk_with_the_remaining_life() {
    let ecr = slow_ecr("p1", unix_now() + 2 * 3600);
    let dir = TempDir::new("ecr-restart");
    let p = cached(plugin(), &ecr, &dir);
    let first = p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert!((3598..=3600).contains(&secs(first.cache_duration.unwrap())));
    assert_eq!(ecr.requests().len(), 1);

    // An hour later, as far as the entry is concerned: one hour of life is left.
    let entry = &cache_entries(&dir.path().join("cache"), 1)[0];
    entry.set_expires_at(unix_now() + 3600);

    let out = p.request(
        ApiVersion::V1beta1,
        &format!("{PRIVATE_HOST}/other/image:tag"),
    );
    let second = out.accepted();
    assert_eq!(
        ecr.requests().len(),
        1,
        "zero upstream calls on the second exec"
    );
    assert_eq!(second.auth[PRIVATE_HOST].1, "p1");
    // Half of the remaining hour, as without the cache.
    assert!(
        (1798..=1800).contains(&secs(second.cache_duration.unwrap())),
        "{:?}",
        second.cache_duration
    );
    assert!(
        out.stderr().is_empty(),
        "quiet at the default level: {}",
        out.stderr()
    );
    let verbose = p
        .clone()
        .args(["--v=2"])
        .request(ApiVersion::V1, PRIVATE_HOST);
    verbose.accepted();
    assert!(
        verbose.stderr().contains("token cache hit"),
        "{}",
        verbose.stderr()
    );
    assert!(
        verbose.stderr().contains("source=Cache"),
        "{}",
        verbose.stderr()
    );
}

#[test]
fn entries_are_per_region_and_per_identity() {
    let ecr = slow_ecr("p", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-scopes");
    let p = cached(plugin(), &ecr, &dir);
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    // Another account in the same region: the same token (ECR's token covers the region).
    p.request(
        ApiVersion::V1,
        "210987654321.dkr.ecr.us-west-2.amazonaws.com/x",
    )
    .accepted();
    assert_eq!(ecr.requests().len(), 1);
    // Another region, another entry.
    p.request(
        ApiVersion::V1,
        "123456789012.dkr.ecr.eu-west-1.amazonaws.com/x",
    )
    .accepted();
    assert_eq!(ecr.requests().len(), 2);
    // Another principal on the node, another entry.
    p.clone()
        .env("AWS_ACCESS_KEY_ID", "AKIDOTHERPRINCIPAL")
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    assert_eq!(ecr.requests().len(), 3);
    cache_entries(&dir.path().join("cache"), 3);
}

#[test]
fn service_accounts_share_per_account_and_their_token_never_reaches_disk() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAASSUMEDROLE", unix_now() + 3600));
    let ecr = slow_ecr("role-password", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-sa");
    let p = cached(plugin(), &ecr, &dir).env("AWS_ENDPOINT_URL_STS", sts.url());
    let role = BTreeMap::from([("eks.amazonaws.com/ecr-role-arn".to_owned(), ROLE.to_owned())]);
    let pod_a = sa_token("team", "puller", "uid-1", "pod-a");
    let pod_b = sa_token("team", "puller", "uid-1", "pod-b");
    let outcomes = herd(&p, 8, PRIVATE_HOST, Some(&pod_a), &role);
    for out in &outcomes {
        assert_eq!(out.accepted().auth[PRIVATE_HOST].1, "role-password");
    }
    // Another pod of the same service account: served from the entry.
    let ok = p
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&pod_b), &role)
        .accepted();
    // Capped by the one-hour role session, read back from the entry.
    assert!((1790..=1800).contains(&secs(ok.cache_duration.unwrap())));
    assert_eq!((sts.requests().len(), ecr.requests().len()), (1, 1));
    // A recreated account (new UID) and another account are other identities.
    p.request_with_token(
        ApiVersion::V1,
        PRIVATE_HOST,
        Some(&sa_token("team", "puller", "uid-2", "p")),
        &role,
    )
    .accepted();
    p.request_with_token(
        ApiVersion::V1,
        PRIVATE_HOST,
        Some(&sa_token("team", "builder", "uid-3", "p")),
        &role,
    )
    .accepted();
    assert_eq!((sts.requests().len(), ecr.requests().len()), (3, 3));
    for entry in cache_entries(&dir.path().join("cache"), 3) {
        for token in [&pod_a, &pod_b] {
            for part in token.split('.') {
                assert!(
                    !entry.text.contains(part),
                    "a piece of the SA token is on disk"
                );
            }
        }
        assert!(
            !entry.text.contains("team") && !entry.text.contains("puller"),
            "{}",
            entry.text
        );
    }
}

#[test]
fn a_token_without_service_account_claims_is_not_cached() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAASSUMEDROLE", unix_now() + 3600));
    let ecr = slow_ecr("p", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-opaque-sa");
    let p = cached(plugin(), &ecr, &dir).env("AWS_ENDPOINT_URL_STS", sts.url());
    let role = BTreeMap::from([("eks.amazonaws.com/ecr-role-arn".to_owned(), ROLE.to_owned())]);
    let opaque = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
    for _ in 0..2 {
        p.request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(opaque), &role)
            .accepted();
    }
    assert_eq!(ecr.requests().len(), 2);
    assert!(!dir.path().join("cache").exists());
}

#[test]
fn the_cache_is_off_unless_asked_for_and_the_environment_turns_it_on() {
    let ecr = slow_ecr("p", unix_now() + 12 * 3600);
    let p = plugin().env("AWS_ENDPOINT_URL_ECR", ecr.url());
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(ecr.requests().len(), 2, "off by default");

    let dir = TempDir::new("ecr-env");
    let cache = dir.path().join("from-env");
    let on = p.clone().env(
        "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR",
        cache.display().to_string(),
    );
    on.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    on.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(ecr.requests().len(), 3);
    cache_entries(&cache, 1);
    // An explicit off wins over the directory.
    let off = on.clone().args(["--token-cache=false"]);
    off.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(ecr.requests().len(), 4);
    // A bad value is a usage error, one line.
    let bad = p.clone().env("CREDENTIAL_PROVIDER_TOKEN_CACHE", "perhaps");
    let line = bad.request(ApiVersion::V1, PRIVATE_HOST).rejected();
    assert!(line.contains("perhaps"), "{line}");
}

#[test]
fn an_unusable_cache_directory_never_fails_a_pull() {
    let ecr = slow_ecr("p", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-broken-cache");
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let p = plugin()
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .args([format!("--token-cache-dir={}", file.display())]);
    let out = p.request(ApiVersion::V1, PRIVATE_HOST);
    out.accepted();
    assert!(
        out.stderr().contains("token cache unusable"),
        "{}",
        out.stderr()
    );
    assert_eq!(out.stderr().lines().count(), 1, "{}", out.stderr());
}

#[test]
fn jitter_spreads_cache_durations_below_the_computed_one() {
    let ecr = FakeServer::start(|_| ecr_token("AWS:p", Some(unix_now() + 12 * 3600)));
    let p = plugin()
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .env("CREDENTIAL_PROVIDER_CACHE_JITTER", "10");
    let seen: Vec<i64> = (0..8)
        .map(|_| {
            secs(
                p.request(ApiVersion::V1, PRIVATE_HOST)
                    .accepted()
                    .cache_duration
                    .unwrap(),
            )
        })
        .collect();
    assert!(
        seen.iter().all(|d| (19_438..=21_600).contains(d)),
        "{seen:?}"
    );
    let distinct: std::collections::BTreeSet<_> = seen.iter().collect();
    assert!(distinct.len() > 1, "{seen:?}");
    // The flag turns it off again.
    let off = p.clone().args(["--cache-jitter=0"]);
    let d = secs(
        off.request(ApiVersion::V1, PRIVATE_HOST)
            .accepted()
            .cache_duration
            .unwrap(),
    );
    assert!((21_598..=21_600).contains(&d), "{d}");
    // Out of range is a usage error.
    let line = p
        .clone()
        .args(["--cache-jitter=150"])
        .request(ApiVersion::V1, PRIVATE_HOST)
        .rejected();
    assert!(line.contains("150"), "{line}");
}

#[test]
fn an_entry_others_can_read_is_not_served_and_is_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let ecr = slow_ecr("p1", unix_now() + 2 * 3600);
    let dir = TempDir::new("ecr-open-entry");
    let p = cached(plugin(), &ecr, &dir);
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    let entry = &cache_entries(&dir.path().join("cache"), 1)[0];
    // Opened to everyone. For Windows binaries wine shows the mode as an access list that lets
    // Everyone read: the same refusal through the other platform's check.
    std::fs::set_permissions(&entry.path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = p.request(ApiVersion::V1, PRIVATE_HOST);
    out.accepted();
    assert_eq!(ecr.requests().len(), 2, "not served from the open entry");
    assert!(
        out.stderr().contains("token cache: ignoring the entry"),
        "{}",
        out.stderr()
    );
    // Replaced by a private entry, which the next exec is served from.
    cache_entries(&dir.path().join("cache"), 1);
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(ecr.requests().len(), 2);
}

#[test]
fn each_assumed_role_has_its_own_entry_and_a_mirror_shares_its_destinations() {
    let sts = FakeServer::start(|_| sts_assume_role("ASIANODEASSUMED", unix_now() + 3600));
    let ecr = slow_ecr("role-password", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-assume-role");
    let other = "210987654321.dkr.ecr.us-west-2.amazonaws.com";
    let p = cached(plugin(), &ecr, &dir)
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .args([
            format!("--assume-role=123456789012={ROLE}"),
            "--assume-role=210987654321=arn:aws:iam::210987654321:role/other-pull".to_owned(),
            format!("--registry-mirror=docker.io:{other}"),
        ]);
    // Two accounts of one region, two roles: two tokens, two entries.
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    p.request(ApiVersion::V1, other).accepted();
    assert_eq!((sts.requests().len(), ecr.requests().len()), (2, 2));
    // Again, and through the mirror to the second account: all from disk.
    p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    let ok = p
        .request(ApiVersion::V1, "docker.io/library/busybox")
        .accepted();
    assert_eq!(ok.auth["docker.io"].1, "role-password");
    assert_eq!((sts.requests().len(), ecr.requests().len()), (2, 2));
    let entries = cache_entries(&dir.path().join("cache"), 2);
    let keys: std::collections::BTreeSet<&str> = entries
        .iter()
        .map(|e| e.json["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "the role is part of the key: {keys:?}");
    for entry in &entries {
        assert!(
            !entry.text.contains(NODE_ASSUMED_SECRET_KEY)
                && !entry.text.contains(NODE_ASSUMED_SESSION_TOKEN),
            "{}",
            entry.text
        );
    }
    // The same role without the flag is the node itself: a third entry.
    cached(plugin(), &ecr, &dir)
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    assert_eq!(ecr.requests().len(), 3);
    cache_entries(&dir.path().join("cache"), 3);
}

/// A hit is answered before any async runtime starts, but only after the checks a fetch makes: a
/// mirror configuration's strict refusal holds for a host whose token (the default region's
/// node token) is on disk.
#[test]
fn a_cache_hit_passes_every_check_a_fetch_does() {
    let ecr = slow_ecr("strict-password", unix_now() + 12 * 3600);
    let dir = TempDir::new("ecr-hit-checks");
    // Lenient (upstream's default): a custom host gets the default region's token, cached.
    let lenient = cached(plugin().env("AWS_REGION", "us-east-1"), &ecr, &dir);
    lenient
        .request(ApiVersion::V1, "registry.example.com/app")
        .accepted();
    lenient
        .request(ApiVersion::V1, "registry.example.com/app")
        .accepted();
    assert_eq!(ecr.requests().len(), 1, "the second exec was a hit");
    // Strict: the same host and the same entry on disk are refused, nothing fetched.
    for strict in [
        cached(plugin().env("AWS_REGION", "us-east-1"), &ecr, &dir).args(["--strict-hosts"]),
        cached(plugin().env("AWS_REGION", "us-east-1"), &ecr, &dir)
            .args([format!("--registry-mirror=docker.io:{PRIVATE_HOST}")]),
    ] {
        let refused = strict.request(ApiVersion::V1, "registry.example.com/app");
        let line = refused.rejected();
        assert!(
            line.contains("registry.example.com is not an Amazon ECR registry host"),
            "{line}"
        );
        assert!(!refused.stdout().contains("strict-password"));
    }
    assert_eq!(ecr.requests().len(), 1);
}
