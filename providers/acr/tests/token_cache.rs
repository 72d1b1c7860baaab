//! acr-credential-provider with the on-disk token cache: 64 concurrent execs make one managed
//! identity call and one exchange, a later exec makes none and answers from the cached refresh
//! token's expiry, pods of one service account share an entry that never holds their token.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::Plugin;
use kcp_testkit::cache::{cache_entries, herd, herd_warnings, service_account_token};
use kcp_testkit::fake::FakeResponse;
use support::*;

const MI_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true,"userAssignedIdentityID":"kubelet-client-id"}"#;
const SP_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;
const IMAGE: &str = "myreg.azurecr.io/team/app";

fn cached(world: &World, plugin: Plugin) -> Plugin {
    plugin.args([format!(
        "--token-cache-dir={}",
        world.dir.path().join("cache").display()
    )])
}

fn secs(d: Option<GoDuration>) -> i64 {
    d.expect("cacheDuration").as_nanos() / 1_000_000_000
}

/// (managed identity calls, challenges, exchanges) so far.
fn upstream_calls(world: &World) -> (usize, usize, usize) {
    let calls = world.registry_calls();
    let count = |path: &str| calls.iter().filter(|(_, p)| p == path).count();
    (
        world.msi.requests().len(),
        count("/v2/"),
        count("/oauth2/exchange"),
    )
}

#[test]
fn sixty_four_concurrent_execs_make_one_identity_call_and_one_exchange() {
    let world = World::new();
    let p = cached(&world, world.mi_plugin(MI_CONFIG));
    let outcomes = herd(&p, 64, IMAGE, None, &BTreeMap::new());
    let refresh = world.last_refresh();
    for out in &outcomes {
        let ok = out.accepted();
        assert_eq!(
            ok.auth["myreg.azurecr.io"],
            (NULL_GUID.to_owned(), refresh.clone())
        );
        cache_duration_of(&out.stdout());
    }
    assert_eq!(
        upstream_calls(&world),
        (1, 1, 1),
        "{}",
        herd_warnings(&outcomes)
    );
    let entries = cache_entries(&world.dir.path().join("cache"), 1);
    assert_eq!(entries[0].json["password"], refresh.as_str());
    assert_eq!(entries[0].json["username"], NULL_GUID);
    let key = entries[0].json["key"].as_str().unwrap();
    assert!(
        key.starts_with("provider=acr;login-server=myreg.azurecr.io;cloud=AzurePublicCloud;scope=https://containerregistry.azure.net/.default;identity=sha256:"),
        "{key}"
    );
    assert!(!entries[0].text.contains(MI_TOKEN) && !entries[0].text.contains(IDENTITY_HEADER));
    world.assert_nothing_off_cloud();
}

#[test]
fn a_restarted_kubelet_is_answered_from_disk_with_the_remaining_life() {
    let world = World::new();
    let p = cached(&world, world.mi_plugin(MI_CONFIG));
    let first = p.request(ApiVersion::V1, IMAGE);
    first.accepted();
    cache_duration_of(&first.stdout());
    assert_eq!(upstream_calls(&world), (1, 1, 1));

    let entry = &cache_entries(&world.dir.path().join("cache"), 1)[0];
    entry.set_expires_at(kcp_testkit::unix_now() + 3600);
    // The answer's duration follows the cached expiry: an hour left, minus the 5-minute margin.
    let second = p.request(ApiVersion::V1alpha1, "myreg.azurecr.io/other:tag");
    let ok = second.accepted();
    assert_eq!(upstream_calls(&world), (1, 1, 1), "zero upstream calls");
    assert_eq!(ok.auth["myreg.azurecr.io"].1, world.last_refresh());
    assert!(
        (3300 - 2..=3300).contains(&secs(ok.cache_duration)),
        "{:?}",
        ok.cache_duration
    );

    // Once the entry is inside the five-minute margin, the next exec fetches again.
    entry.set_expires_at(kcp_testkit::unix_now() + 200);
    p.request(ApiVersion::V1, IMAGE).accepted();
    assert_eq!(upstream_calls(&world), (2, 2, 2));
}

#[test]
fn login_servers_and_identities_get_their_own_entries() {
    let world = World::new();
    let p = cached(&world, world.mi_plugin(MI_CONFIG));
    p.request(ApiVersion::V1, IMAGE).accepted();
    p.request(ApiVersion::V1, "myreg.azurecr.io/again")
        .accepted();
    p.request(ApiVersion::V1, "other.azurecr.io/app").accepted();
    assert_eq!(upstream_calls(&world).2, 2, "one exchange per login server");
    // The service principal is another identity.
    cached(&world, world.plugin(SP_CONFIG))
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(upstream_calls(&world).2, 3);
    let entries = cache_entries(&world.dir.path().join("cache"), 3);
    for e in &entries {
        assert!(!e.text.contains("sp-client-secret-Yy93") && !e.text.contains(ENTRA_TOKEN));
    }
}

/// Fleet mode: nodes that name one shared identity share the entry whatever their own identity
/// (here a managed identity and a service principal); another shared identity does not.
#[test]
fn nodes_of_one_shared_identity_share_an_entry() {
    let world = World::new();
    let shared = |p: Plugin, name: &str| {
        cached(&world, p).args([format!("--token-cache-shared-identity={name}")])
    };
    shared(world.mi_plugin(MI_CONFIG), "nodes")
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(upstream_calls(&world).2, 1);
    let out = shared(world.plugin(SP_CONFIG), "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.accepted().auth["myreg.azurecr.io"],
        (NULL_GUID.to_owned(), world.last_refresh())
    );
    assert_eq!(
        upstream_calls(&world).2,
        1,
        "answered from the shared entry"
    );
    shared(world.plugin(SP_CONFIG), "team-b")
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(
        upstream_calls(&world).2,
        2,
        "another shared identity fetches"
    );
    let entries = cache_entries(&world.dir.path().join("cache"), 2);
    assert!(
        entries.iter().any(|e| e.json["key"]
            .as_str()
            .unwrap()
            .contains(";shared-identity=nodes;identity=sha256:")),
        "{:?}",
        entries.iter().map(|e| &e.json["key"]).collect::<Vec<_>>()
    );
}

#[test]
fn pods_of_one_service_account_share_an_entry_without_their_token() {
    let world = World::new();
    let p = cached(&world, world.plugin(SP_CONFIG));
    let annotations = fields(&[
        ("kubernetes.azure.com/acr-client-id", "pod-client"),
        ("kubernetes.azure.com/acr-tenant-id", "pod-tenant"),
    ]);
    let aud = "api://AzureADTokenExchange";
    let pod_a = service_account_token(aud, "team", "puller", "uid-1", "pod-a");
    let pod_b = service_account_token(aud, "team", "puller", "uid-1", "pod-b");
    let other = service_account_token(aud, "team", "builder", "uid-2", "pod-c");
    for token in [&pod_a, &pod_b, &pod_a] {
        p.request_with_token(ApiVersion::V1, IMAGE, Some(token), &annotations)
            .accepted();
    }
    assert_eq!(world.entra.requests().len(), 1);
    p.request_with_token(ApiVersion::V1, IMAGE, Some(&other), &annotations)
        .accepted();
    assert_eq!(world.entra.requests().len(), 2);
    let entries = cache_entries(&world.dir.path().join("cache"), 2);
    for e in &entries {
        for token in [&pod_a, &pod_b, &other] {
            // Neither the token nor its claims (the part unique to it).
            let claims = token.split('.').nth(1).unwrap();
            assert!(
                !e.text.contains(token.as_str()) && !e.text.contains(claims),
                "an SA token is on disk"
            );
        }
    }
}

#[test]
fn passthrough_answers_touch_no_cache() {
    let world = World::new();
    let p = cached(&world, world.plugin(SP_CONFIG)).args(["--service-principal-passthrough"]);
    p.request(ApiVersion::V1, IMAGE).accepted();
    assert!(!world.dir.path().join("cache").exists());
}

/// A registry clock `skew` seconds off the node's issues a refresh token of three hours by its
/// clock. The exec that fetches it and the exec answered from the entry both say what the later
/// clock leaves (minus the 5-minute margin), and the entry holds that life on the node's clock.
fn skewed_registry_is_cached_with_the_life_it_leaves(skew: i64, life_left: i64) {
    let world = World::new();
    let registry_now = u64::try_from(i64::try_from(now()).unwrap() + skew).unwrap();
    let refresh = jwt(registry_now + 3 * 3600, "myreg.azurecr.io");
    world.exchange_script.push(
        FakeResponse::json(format!(r#"{{"refresh_token":"{refresh}"}}"#))
            .header("date", &kcp_testkit::http_date(registry_now)),
    );
    let p = cached(&world, world.plugin(SP_CONFIG));
    let want = life_left - 300;
    let started = std::time::Instant::now();
    let first = p.request(ApiVersion::V1, IMAGE).accepted();
    // The life counts down from the moment the token was minted: execs that start slowly
    // (emulated binaries on a busy machine) take seconds of it.
    let slack = |base: i64| base + i64::try_from(started.elapsed().as_secs()).unwrap();
    assert_eq!(first.auth["myreg.azurecr.io"].1, refresh);
    assert!(
        (want - slack(2)..=want).contains(&secs(first.cache_duration)),
        "fetched: {:?}, want {want}s",
        first.cache_duration
    );
    let entry = &cache_entries(&world.dir.path().join("cache"), 1)[0];
    let stored =
        entry.json["expiresAt"].as_i64().unwrap() - entry.json["fetchedAt"].as_i64().unwrap();
    assert!(
        (life_left - slack(1)..=life_left).contains(&stored),
        "{stored}"
    );

    let second = p.request(ApiVersion::V1, IMAGE).accepted();
    assert_eq!(upstream_calls(&world).2, 1, "answered from the entry");
    assert_eq!(second.auth["myreg.azurecr.io"].1, refresh);
    assert!(
        (want - slack(2)..=want).contains(&secs(second.cache_duration)),
        "cached: {:?}, want {want}s",
        second.cache_duration
    );
}

#[test]
fn a_registry_clock_ahead_is_cached_with_the_life_it_counts() {
    // By the node's clock five hours would be left; the registry's says three.
    skewed_registry_is_cached_with_the_life_it_leaves(2 * 3600, 3 * 3600);
}

#[test]
fn a_registry_clock_behind_is_cached_with_the_life_the_node_counts() {
    // By the registry's clock three hours would be left; the node's says one.
    skewed_registry_is_cached_with_the_life_it_leaves(-2 * 3600, 3600);
}

/// A hit is answered before any async runtime starts, but only after the checks a fetch makes: a
/// pod whose service account has an empty client-id annotation is refused, never handed the
/// node's refresh token that is on disk.
#[test]
fn a_cache_hit_passes_every_check_a_fetch_does() {
    let world = World::new();
    let p = cached(&world, world.mi_plugin(MI_CONFIG));
    p.request(ApiVersion::V1, IMAGE).accepted();
    let refresh = world.last_refresh();
    let hit = p.request(ApiVersion::V1, IMAGE).accepted();
    assert_eq!(hit.auth["myreg.azurecr.io"].1, refresh);
    assert_eq!(
        upstream_calls(&world),
        (1, 1, 1),
        "the second exec was a hit"
    );

    let token = service_account_token(
        "api://AzureADTokenExchange",
        "team",
        "puller",
        "uid-1",
        "pod-a",
    );
    let annotations = fields(&[("kubernetes.azure.com/acr-client-id", " ")]);
    let refused = p.request_with_token(ApiVersion::V1, IMAGE, Some(&token), &annotations);
    let line = refused.rejected();
    assert!(line.contains("client id annotation"), "{line}");
    assert!(!refused.stdout().contains(refresh.as_str()));
    assert_eq!(upstream_calls(&world), (1, 1, 1));
}
