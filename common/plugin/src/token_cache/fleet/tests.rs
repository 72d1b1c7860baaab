//! Fleet mode's unit tests (Unix): shared keys, and how a node's copies follow the published
//! Secret (bounds, authority, withdrawal, caps, clocks).

use super::super::{CacheKey, Issuer, RegistryToken, SharedIdentity, Source, TokenCache};
use super::*;
use kcp_kubelet::secret::Secret;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!(
            "kcp-fleet-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn nodes() -> SharedIdentity {
    SharedIdentity::parse("nodes").unwrap()
}

/// A key as ECR builds one for the node's own identity in `region`, with `who` as its credentials.
fn key_in(region: &str, who: &str) -> CacheKey {
    CacheKey::new(Issuer::Ecr)
        .scope("region", region)
        .identity("endpoint", "")
        .node_identity("AWS_ROLE_ARN", who)
}

fn node_key(who: &str) -> CacheKey {
    key_in("us-east-1", who)
}

fn cache(dir: &Path, shared: Option<SharedIdentity>) -> TokenCache {
    TokenCache::new(dir).with_shared_identity(shared)
}

fn block<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Stores a token for `key` through `cache` (as a provider's fetch would) and returns the entry
/// file's name and bytes, as the controller publishes them.
fn publish(
    cache: &TokenCache,
    key: &CacheKey,
    password: &str,
    life: Duration,
) -> (String, Vec<u8>) {
    let token =
        RegistryToken::obtained_now("AWS", Secret::new(password), Some(SystemTime::now() + life));
    block(cache.get_or_fetch(
        key,
        crate::deadline::Deadline::after(Duration::from_secs(5)),
        async || Ok::<_, String>(token),
    ))
    .unwrap();
    let name = format!("{}.json", cache.effective(key).file_stem());
    let bytes = fs::read(cache.dir().join(&name)).unwrap();
    (name, bytes)
}

/// A published entry with its times set by hand (as a writer of the Secret could), for `key`
/// under the shared identity `nodes`: (name, bytes).
fn forged(key: &CacheKey, password: &str, fetched_at: i64, expires_at: i64) -> (String, Vec<u8>) {
    let shared = key.shared_as(&nodes()).unwrap();
    let entry = json!({
        "version": 1, "key": shared.canonical(), "username": "AWS", "password": password,
        "expiresAt": expires_at, "fetchedAt": fetched_at, "refreshAt": expires_at - 300,
    });
    (shared.file_name(), serde_json::to_vec(&entry).unwrap())
}

/// A Secret volume directory holding `files`.
fn volume(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
    dir.to_path_buf()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn now_s() -> i64 {
    unix_secs(SystemTime::now())
}

fn refused_reason(node: &TokenCache, name: &str, bytes: &[u8], now: SystemTime) -> String {
    match node.adopt(name, bytes, now) {
        Adopted::Refused(reason) => reason,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn shared_identity_names_are_checked() {
    for ok in ["nodes", "a", "prod-nodes.eu-west-1", "0"] {
        assert_eq!(SharedIdentity::parse(ok).unwrap().name(), ok);
    }
    let long = "a".repeat(64);
    for bad in [
        "",
        "Nodes",
        "-nodes",
        "nodes-",
        "no des",
        "nodes/x",
        "nodes;identity=x",
        long.as_str(),
    ] {
        let err = SharedIdentity::parse(bad).unwrap_err();
        assert!(err.contains("lowercase letters"), "{bad}: {err}");
    }
}

#[test]
fn a_shared_key_replaces_only_the_node_identity() {
    let a = node_key("arn:aws:iam::1:role/node-a");
    let b = node_key("arn:aws:iam::1:role/node-b");
    assert_ne!(a.canonical(), b.canonical());
    let (sa, sb) = (
        a.shared_as(&nodes()).unwrap(),
        b.shared_as(&nodes()).unwrap(),
    );
    // Nodes with different credentials but one shared identity compute one entry.
    assert_eq!(sa.canonical(), sb.canonical());
    assert_eq!(sa.file_name(), sb.file_name());
    assert!(
        sa.canonical()
            .starts_with("provider=ecr;region=us-east-1;shared-identity=nodes;identity=sha256:"),
        "{}",
        sa.canonical()
    );
    // Another shared identity, scope or non-node part is another entry.
    let other = a
        .shared_as(&SharedIdentity::parse("other").unwrap())
        .unwrap();
    assert_ne!(other.file_name(), sa.file_name());
    let role =
        node_key("arn:aws:iam::1:role/node-a").identity("assume-role", "arn:aws:iam::2:role/p");
    assert_ne!(
        role.shared_as(&nodes()).unwrap().file_name(),
        sa.file_name()
    );
    // A key without node parts (e.g. a key file's identity) is never shared.
    let own = CacheKey::new(Issuer::Gcr).identity("client_email", "x@y");
    assert!(own.shared_as(&nodes()).is_none());
}

#[test]
fn a_pod_identity_is_never_shared() {
    let claims = json!({
        "kubernetes.io": {"namespace": "a", "serviceaccount": {"name": "b", "uid": "c"}},
        "aud": ["x"],
    });
    let payload = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&claims).unwrap(),
    );
    let token = Secret::new(format!("e30.{payload}.sig"));
    let key = node_key("arn:aws:iam::1:role/node-a")
        .service_account(&token)
        .unwrap();
    assert!(key.shared_as(&nodes()).is_none());
    // So a fleet-mode cache stores it under its own key.
    let dir = Scratch::new();
    let c = cache(&dir.0.join("c"), Some(nodes()));
    assert_eq!(c.effective(&key).file_stem(), key.file_stem());
}

#[test]
fn a_published_entry_answers_another_node_of_the_same_identity_as_a_copy() {
    let (controller, node) = (Scratch::new(), Scratch::new());
    let published = cache(&controller.0.join("c"), Some(nodes()));
    let (name, bytes) = publish(
        &published,
        &node_key("arn:aws:iam::1:role/controller"),
        "published-password",
        Duration::from_secs(12 * 3600),
    );
    let secret = volume(
        &controller.0.join("secret"),
        &[(&name, &bytes), ("README", b"not an entry")],
    );
    let local = cache(&node.0.join("cache"), Some(nodes()));
    let report = sync_from_dir(&local, &secret, SystemTime::now()).unwrap();
    assert_eq!(
        report,
        SyncReport {
            written: 1,
            ..SyncReport::default()
        }
    );
    let copied = node.0.join("cache").join(&name);
    assert_eq!(fs::metadata(&copied).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        fs::metadata(node.0.join("cache")).unwrap().mode() & 0o777,
        0o700
    );
    // The published entry, marked as a copy of exactly those bytes.
    let (copy, original) = (
        read_json(&copied),
        serde_json::from_slice::<Value>(&bytes).unwrap(),
    );
    for field in [
        "version",
        "key",
        "username",
        "password",
        "expiresAt",
        "fetchedAt",
        "refreshAt",
    ] {
        assert_eq!(copy[field], original[field], "{field}");
    }
    assert_eq!(copy["fleet"]["published"], json!(digest(&bytes)));
    assert!((now_s() - copy["fleet"]["seenAt"].as_i64().unwrap()).abs() <= 2);

    // The node's provider, with other credentials, finds it, and knows it is a copy.
    let hit = local.get(&node_key("arn:aws:iam::1:role/node-z")).unwrap();
    assert_eq!(hit.password.expose(), "published-password");
    let (_, source) = block(local.get_or_fetch(
        &node_key("arn:aws:iam::1:role/node-z"),
        crate::deadline::Deadline::after(Duration::from_secs(5)),
        async || Err::<RegistryToken, _>("no fetch expected"),
    ))
    .unwrap();
    assert_eq!(source, Source::FleetCopy);
    // Without the shared identity the same node would not.
    assert!(
        cache(&node.0.join("cache"), None)
            .get(&node_key("arn:aws:iam::1:role/node-z"))
            .is_none()
    );
    // A second round finds the same publication already copied.
    let again = sync_from_dir(&local, &secret, SystemTime::now()).unwrap();
    assert_eq!(
        again,
        SyncReport {
            kept: 1,
            ..SyncReport::default()
        }
    );
}

#[test]
fn entries_for_another_identity_forged_or_tampered_ones_are_refused() {
    let dir = Scratch::new();
    let other = cache(
        &dir.0.join("other"),
        Some(SharedIdentity::parse("other").unwrap()),
    );
    let (other_name, other_bytes) = publish(
        &other,
        &node_key("r"),
        "other-password",
        Duration::from_secs(3600),
    );
    let ours = cache(&dir.0.join("ours"), Some(nodes()));
    let (name, bytes) = publish(
        &ours,
        &node_key("r"),
        "our-password",
        Duration::from_secs(3600),
    );
    let node = cache(&dir.0.join("node"), Some(nodes()));
    node.prepare_dir().unwrap();
    let now = SystemTime::now();
    let refused = |name: &str, bytes: &[u8]| refused_reason(&node, name, bytes, now);

    assert_eq!(
        refused(&other_name, &other_bytes),
        "it is not for the shared identity \"nodes\""
    );
    // Our entry under another entry's name: the key does not hash to it.
    assert_eq!(
        refused(&other_name, &bytes),
        "its key does not hash to its file name"
    );
    assert_eq!(
        refused("secrets.json", &bytes),
        "not a token cache entry name"
    );
    let text = String::from_utf8(bytes.clone()).unwrap();
    let corrupt = refused(&name, text.replace("\"password\"", "\"passwd\"").as_bytes());
    assert!(
        corrupt.starts_with("not a token cache entry (line 1"),
        "{corrupt}"
    );
    let mut entry: Value = serde_json::from_slice(&bytes).unwrap();
    let n = now_s();
    let with = |changes: &[(&str, i64)]| {
        let mut e = entry.clone();
        for (field, value) in changes {
            e[*field] = json!(value);
        }
        serde_json::to_vec(&e).unwrap()
    };
    // Each reason is in fixed words: a value from the entry is never quoted, and the same
    // refusal reads the same every round.
    for (changes, reason) in [
        (
            vec![("expiresAt", n + 60), ("refreshAt", n)],
            "less than the 5-minute margin of its life is left",
        ),
        (
            vec![("expiresAt", 253_402_300_799)],
            "it claims a longer life than the 12h an ECR token lives",
        ),
        (
            vec![("fetchedAt", n - 3600), ("expiresAt", n + 12 * 3600)],
            "it claims a longer life than the 12h an ECR token lives",
        ),
        (
            vec![("expiresAt", n + 5 * 3600), ("fetchedAt", n + 3600)],
            "it was written more than 5 minutes in the future (a clock is wrong)",
        ),
        (
            vec![("fetchedAt", n + 200), ("expiresAt", n + 100)],
            "its times are out of order",
        ),
        (vec![("version", 2)], "layout version 2 is not 1"),
    ] {
        assert_eq!(refused(&name, &with(&changes)), reason, "{changes:?}");
    }
    entry["fleet"] = json!({"published": "sha256:00", "seenAt": n});
    assert_eq!(
        refused(&name, &serde_json::to_vec(&entry).unwrap()),
        "it is a node's copy, not an entry a provider wrote"
    );
    assert_eq!(
        refused(&name, &vec![b' '; 70 * 1024]),
        "too large for an entry"
    );
    // Nothing was written for any of them.
    assert!(names(node.dir(), ".json").is_empty());
    // The good one goes in; no refusal quoted the password.
    assert_eq!(node.adopt(&name, &bytes, now), Adopted::Written);
}

fn names(dir: &Path, suffix: &str) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.ends_with(suffix) && !n.starts_with('.'))
        .collect()
}

#[test]
fn a_new_publication_replaces_a_copy_even_a_shorter_one_and_own_entries_only_when_longer() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    let secret = dir.0.join("secret");
    let n = now_s();
    // A poisoned entry that passes every bound (12 h, fetched "4 minutes from now").
    let (name, poisoned) = forged(&node_key("c"), "poisoned", n + 240, n + 240 + 12 * 3600);
    let report = sync_from_dir(
        &node,
        &volume(&secret, &[(&name, &poisoned)]),
        SystemTime::now(),
    );
    assert_eq!(report.unwrap().written, 1);
    // Corrected: an earlier fetch, a shorter life. The Secret says what the copy is.
    let (_, corrected) = forged(&node_key("c"), "corrected", n - 60, n + 3600);
    let report = sync_from_dir(
        &node,
        &volume(&secret, &[(&name, &corrected)]),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.written, 1, "{report:?}");
    assert_eq!(
        node.get(&node_key("n")).unwrap().password.expose(),
        "corrected"
    );

    // An entry the node fetched itself that lives longer stays, and is not a copy.
    let own_node = cache(&dir.0.join("own"), Some(nodes()));
    let (own_name, own) = publish(
        &own_node,
        &node_key("n"),
        "node-own",
        Duration::from_secs(6 * 3600),
    );
    assert_eq!(own_name, name);
    let report = sync_from_dir(&own_node, &secret, SystemTime::now()).unwrap();
    assert_eq!((report.written, report.kept), (0, 1));
    assert_eq!(fs::read(own_node.dir().join(&name)).unwrap(), own);
    // One that lives shorter is replaced, and the copy then follows the Secret.
    let (_, longer) = forged(&node_key("c"), "longer", n, n + 12 * 3600);
    sync_from_dir(
        &own_node,
        &volume(&secret, &[(&name, &longer)]),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(
        own_node.get(&node_key("n")).unwrap().password.expose(),
        "longer"
    );
    assert!(read_json(&own_node.dir().join(&name))["fleet"].is_object());
}

#[test]
fn a_withdrawn_entry_is_removed_and_the_nodes_own_entries_never_are() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    let secret = dir.0.join("secret");
    let n = now_s();
    let (east, east_bytes) = forged(&key_in("us-east-1", "c"), "east", n, n + 3600);
    let (west, west_bytes) = forged(&key_in("us-west-2", "c"), "west", n, n + 3600);
    sync_from_dir(
        &node,
        &volume(&secret, &[(&east, &east_bytes), (&west, &west_bytes)]),
        SystemTime::now(),
    )
    .unwrap();
    // The node's own entry (another region) and a file that is not the cache's.
    let (own, _) = publish(
        &node,
        &key_in("eu-west-1", "n"),
        "own",
        Duration::from_secs(3600),
    );
    fs::write(node.dir().join("README"), b"mine").unwrap();
    assert_eq!(
        names(node.dir(), ".json"),
        BTreeSet::from([east.clone(), west.clone(), own.clone()])
    );

    // The volume is missing altogether (not mounted yet): nothing is withdrawn.
    let report = sync_from_dir(&node, &dir.0.join("absent"), SystemTime::now()).unwrap();
    assert!(report.no_volume);
    assert_eq!(names(node.dir(), ".json").len(), 3);

    // West withdrawn, while an exec holds its lock: it stays until the lock is free.
    let stem = west.trim_end_matches(".json");
    let lock = files::open_lock(&node.stem_path(stem, "lock"), &node.owner, true)
        .unwrap()
        .unwrap();
    lock.lock().unwrap();
    let only_east = volume(&secret, &[(&east, &east_bytes)]);
    let report = sync_from_dir(&node, &only_east, SystemTime::now()).unwrap();
    assert!(report.withdrawn.is_empty());
    drop(lock);
    let report = sync_from_dir(&node, &only_east, SystemTime::now()).unwrap();
    assert_eq!(report.withdrawn, vec![west.clone()]);
    assert_eq!(
        names(node.dir(), ".json"),
        BTreeSet::from([east.clone(), own.clone()])
    );

    // The Secret emptied: every copy goes, the node's own entry stays.
    let report = sync_from_dir(&node, &volume(&secret, &[]), SystemTime::now()).unwrap();
    assert_eq!(report.withdrawn, vec![east.clone()]);
    assert_eq!(names(node.dir(), ".json"), BTreeSet::from([own.clone()]));
    assert_eq!(fs::read(node.dir().join("README")).unwrap(), b"mine");
    // A publication replaced by one that is refused: the old copy goes too.
    sync_from_dir(
        &node,
        &volume(&secret, &[(&east, &east_bytes)]),
        SystemTime::now(),
    )
    .unwrap();
    let (_, forever) = forged(&key_in("us-east-1", "c"), "forever", n, 253_402_300_799);
    let report = sync_from_dir(
        &node,
        &volume(&secret, &[(&east, &forever)]),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.withdrawn, vec![east.clone()]);
    assert_eq!(report.refused.len(), 1);
}

#[test]
fn copies_are_capped_in_count_and_the_rest_refused_by_name_order() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    let n = now_s();
    let published: Vec<(String, Vec<u8>)> = (0..MAX_ADOPTED_ENTRIES + 20)
        .map(|i| forged(&key_in(&format!("r-{i}"), "c"), "p", n, n + 3600))
        .collect();
    let files: Vec<(&str, &[u8])> = published
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
        .collect();
    let report = sync_from_dir(
        &node,
        &volume(&dir.0.join("secret"), &files),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.written, MAX_ADOPTED_ENTRIES);
    assert!(report.refused.is_empty());
    let mut sorted: Vec<String> = published.iter().map(|(name, _)| name.clone()).collect();
    sorted.sort();
    assert_eq!(report.over_cap, sorted[MAX_ADOPTED_ENTRIES..].to_vec());
    assert_eq!(
        names(node.dir(), ".json"),
        sorted[..MAX_ADOPTED_ENTRIES].iter().cloned().collect()
    );
    // The byte cap: entries of 40 KiB, so fewer than 30 fit into 1 MiB.
    let big = cache(&dir.0.join("big"), Some(nodes()));
    let padded: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            let key = key_in(&format!("r-{i}"), "c");
            let shared = key.shared_as(&nodes()).unwrap();
            let entry = json!({
                "version": 1, "key": shared.canonical(), "username": "x".repeat(40 * 1024),
                "password": "p", "expiresAt": n + 3600, "fetchedAt": n, "refreshAt": n + 3300,
            });
            (shared.file_name(), serde_json::to_vec(&entry).unwrap())
        })
        .collect();
    let files: Vec<(&str, &[u8])> = padded
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
        .collect();
    let report = sync_from_dir(
        &big,
        &volume(&dir.0.join("secret"), &files),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.written, 25, "{} over the cap", report.over_cap.len());
    assert_eq!(report.over_cap.len(), 15);
}

#[test]
fn a_node_clock_behind_the_controllers_never_lengthens_a_copy() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    node.prepare_dir().unwrap();
    let controller_now = now_s();
    let life = 3600;
    let (name, bytes) = forged(&node_key("c"), "p", controller_now, controller_now + life);
    // The node's clock reads 4 minutes (inside the future tolerance) behind the controller's.
    let node_now = SystemTime::now() - Duration::from_secs(240);
    assert_eq!(node.adopt(&name, &bytes, node_now), Adopted::Written);
    let copy = read_json(&node.dir().join(&name));
    let seen = unix_secs(node_now);
    // Its life counts from when this node saw it, on its own clock: it ends when the token
    // does, not 4 minutes later.
    assert_eq!(copy["expiresAt"], json!(seen + life));
    assert_eq!(copy["fetchedAt"], json!(seen));
    assert!(copy["refreshAt"].as_i64().unwrap() <= seen + life - 300);
    // A node ahead of the controller keeps the published times (they can only be earlier).
    let ahead = cache(&dir.0.join("ahead"), Some(nodes()));
    ahead.prepare_dir().unwrap();
    let ahead_now = SystemTime::now() + Duration::from_secs(600);
    assert_eq!(ahead.adopt(&name, &bytes, ahead_now), Adopted::Written);
    let copy = read_json(&ahead.dir().join(&name));
    assert_eq!(copy["expiresAt"], json!(controller_now + life));
    assert_eq!(copy["fetchedAt"], json!(controller_now));
}

#[test]
fn the_kubelets_data_snapshot_is_read_when_there_is_one() {
    let dir = Scratch::new();
    let n = now_s();
    let (name, bytes) = forged(&node_key("c"), "snap", n, n + 3600);
    let (stale, stale_bytes) = forged(&key_in("us-west-2", "c"), "stale", n, n + 3600);
    // Mid-update: the top level still links a key the new snapshot no longer has.
    let secret = dir.0.join("secret");
    fs::create_dir_all(secret.join("..2026_01_01_00_00_00.1")).unwrap();
    fs::write(secret.join("..2026_01_01_00_00_00.1").join(&name), &bytes).unwrap();
    std::os::unix::fs::symlink("..2026_01_01_00_00_00.1", secret.join("..data")).unwrap();
    fs::write(secret.join(&stale), &stale_bytes).unwrap();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    let report = sync_from_dir(&node, &secret, SystemTime::now()).unwrap();
    assert_eq!(report.written, 1);
    assert_eq!(names(node.dir(), ".json"), BTreeSet::from([name]));
}

#[test]
fn no_secret_volume_is_an_empty_round_and_no_shared_identity_an_error() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    assert_eq!(
        sync_from_dir(&node, &dir.0.join("absent"), SystemTime::now()).unwrap(),
        SyncReport {
            no_volume: true,
            ..SyncReport::default()
        }
    );
    let plain = cache(&dir.0.join("plain"), None);
    assert!(
        sync_from_dir(&plain, &dir.0, SystemTime::now())
            .unwrap_err()
            .contains("no shared identity")
    );
}

#[test]
fn an_entry_whose_lock_is_held_waits_for_the_next_round() {
    let dir = Scratch::new();
    let controller = cache(&dir.0.join("controller"), Some(nodes()));
    let (name, bytes) = publish(&controller, &node_key("c"), "p", Duration::from_secs(3600));
    let node = cache(&dir.0.join("node"), Some(nodes()));
    node.prepare_dir().unwrap();
    let stem = name.trim_end_matches(".json");
    let lock = files::open_lock(&node.stem_path(stem, "lock"), &node.owner, true)
        .unwrap()
        .unwrap();
    lock.lock().unwrap();
    assert_eq!(node.adopt(&name, &bytes, SystemTime::now()), Adopted::Busy);
    drop(lock);
    assert_eq!(
        node.adopt(&name, &bytes, SystemTime::now()),
        Adopted::Written
    );
}

#[test]
fn each_node_gets_its_own_refresh_point_never_later_than_the_published_one() {
    let dir = Scratch::new();
    let controller = cache(&dir.0.join("controller"), Some(nodes()));
    let life = 12 * 3600;
    let (name, bytes) = publish(&controller, &node_key("c"), "p", Duration::from_secs(life));
    let published: Value = serde_json::from_slice(&bytes).unwrap();
    let expires = published["expiresAt"].as_i64().unwrap();
    assert_eq!(published["refreshAt"].as_i64().unwrap(), expires - 300);
    let mut points = BTreeSet::new();
    for n in 0..20 {
        let node = cache(&dir.0.join(format!("node-{n}")), Some(nodes())).with_refresh_jitter(10);
        node.prepare_dir().unwrap();
        assert_eq!(
            node.adopt(&name, &bytes, SystemTime::now()),
            Adopted::Written
        );
        let refresh = read_json(&node.dir().join(&name))["refreshAt"]
            .as_i64()
            .unwrap();
        let earliest = expires - 300 - i64::try_from(life).unwrap() / 10 - 1;
        assert!((earliest..=expires - 300).contains(&refresh), "{refresh}");
        points.insert(refresh);
    }
    // Spread over an hour and more: twenty nodes do not share one point.
    assert!(points.len() >= 15, "{points:?}");
    // Without jitter the published refresh point is kept.
    let plain = cache(&dir.0.join("plain"), Some(nodes()));
    plain.prepare_dir().unwrap();
    assert_eq!(
        plain.adopt(&name, &bytes, SystemTime::now()),
        Adopted::Written
    );
    assert_eq!(
        read_json(&plain.dir().join(&name))["refreshAt"],
        published["refreshAt"]
    );
}
