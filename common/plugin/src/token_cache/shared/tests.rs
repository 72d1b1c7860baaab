//! Fleet mode's unit tests (Unix): shared keys, and what a node copies from the published Secret.

use super::super::{CacheKey, RegistryToken, TokenCache};
use super::*;
use kcp_kubelet::secret::Secret;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::time::Duration;

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!(
            "kcp-shared-{}-{:016x}",
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

/// A key as ECR builds one for the node's own identity, with `who` as its credentials.
fn node_key(who: &str) -> CacheKey {
    CacheKey::new("ecr")
        .scope("region", "us-east-1")
        .identity("endpoint", "")
        .node_identity("AWS_ROLE_ARN", who)
}

fn cache(dir: &Path, shared: Option<SharedIdentity>) -> TokenCache {
    TokenCache::new(dir).with_shared_identity(shared)
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(cache.get_or_fetch(
        key,
        crate::deadline::Deadline::after(Duration::from_secs(5)),
        async || Ok::<_, String>(token),
    ))
    .unwrap();
    let entries: Vec<_> = fs::read_dir(cache.dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let bytes = fs::read(cache.dir().join(&entries[0])).unwrap();
    (entries[0].clone(), bytes)
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
    assert_eq!(sa.file_stem(), sb.file_stem());
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
    assert_ne!(other.file_stem(), sa.file_stem());
    let role = CacheKey::new("ecr")
        .scope("region", "us-east-1")
        .identity("endpoint", "")
        .identity("assume-role", "arn:aws:iam::2:role/puller")
        .node_identity("AWS_ROLE_ARN", "arn:aws:iam::1:role/node-a");
    assert_ne!(
        role.shared_as(&nodes()).unwrap().file_stem(),
        sa.file_stem()
    );
    // A key without node parts (e.g. a key file's identity) is never shared.
    let own = CacheKey::new("gcr").identity("client_email", "x@y");
    assert!(own.shared_as(&nodes()).is_none());
}

#[test]
fn a_pod_identity_is_never_shared() {
    let claims = serde_json::json!({
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
fn a_published_entry_answers_another_node_of_the_same_identity() {
    let (controller, node) = (Scratch::new(), Scratch::new());
    let published = cache(&controller.0.join("c"), Some(nodes()));
    let (name, bytes) = publish(
        &published,
        &node_key("arn:aws:iam::1:role/controller"),
        "published-password",
        Duration::from_secs(12 * 3600),
    );
    let secret = controller.0.join("secret");
    fs::create_dir(&secret).unwrap();
    fs::write(secret.join(&name), &bytes).unwrap();
    fs::write(secret.join("README"), b"not an entry").unwrap();

    let local = cache(&node.0.join("cache"), Some(nodes()));
    let report = sync_from_dir(&local, &secret, SystemTime::now()).unwrap();
    assert_eq!(
        report,
        SyncReport {
            written: 1,
            kept: 0,
            refused: vec![]
        }
    );
    let copied = node.0.join("cache").join(&name);
    assert_eq!(fs::read(&copied).unwrap(), bytes);
    assert_eq!(fs::metadata(&copied).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        fs::metadata(node.0.join("cache")).unwrap().mode() & 0o777,
        0o700
    );

    // The node's provider, with other credentials, finds it.
    let hit = local.get(&node_key("arn:aws:iam::1:role/node-z")).unwrap();
    assert_eq!(hit.password.expose(), "published-password");
    // Without the shared identity the same node would not.
    assert!(
        cache(&node.0.join("cache"), None)
            .get(&node_key("arn:aws:iam::1:role/node-z"))
            .is_none()
    );

    // A second round finds the same entry already there.
    let again = sync_from_dir(&local, &secret, SystemTime::now()).unwrap();
    assert_eq!(
        again,
        SyncReport {
            written: 0,
            kept: 1,
            refused: vec![]
        }
    );
}

#[test]
fn entries_for_another_identity_or_tampered_ones_are_refused() {
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
    fs::create_dir_all(node.dir()).unwrap();
    fs::set_permissions(node.dir(), fs::Permissions::from_mode(0o700)).unwrap();
    let now = SystemTime::now();

    let refused = |name: &str, bytes: &[u8]| match node.adopt(name, bytes, now) {
        Adopted::Refused(reason) => reason,
        other => panic!("{name}: {other:?}"),
    };
    assert!(refused(&other_name, &other_bytes).contains("not for the shared identity \"nodes\""));
    // Our entry under another entry's name: the key does not hash to it.
    assert!(refused(&other_name, &bytes).contains("does not hash to its file name"));
    assert!(refused("secrets.json", &bytes).contains("not a token cache entry name"));
    let text = String::from_utf8(bytes.clone()).unwrap();
    let corrupt = refused(&name, text.replace("\"password\"", "\"passwd\"").as_bytes());
    assert!(
        corrupt.starts_with("not a token cache entry (line 1"),
        "{corrupt}"
    );
    assert!(!corrupt.contains("our-password"), "{corrupt}");
    let mut entry: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    entry["expiresAt"] = serde_json::json!(unix_secs(now) + 60);
    entry["refreshAt"] = serde_json::json!(unix_secs(now));
    assert!(refused(&name, &serde_json::to_vec(&entry).unwrap()).contains("less than the margin"));
    entry["expiresAt"] = serde_json::json!(unix_secs(now) + 86400);
    entry["fetchedAt"] = serde_json::json!(unix_secs(now) + 3600);
    assert!(refused(&name, &serde_json::to_vec(&entry).unwrap()).contains("in the future"));
    assert!(refused(&name, &vec![b' '; 70 * 1024]).contains("too large"));
    // Nothing was written for any of them.
    let written: Vec<_> = fs::read_dir(node.dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(written.is_empty(), "{written:?}");
    // The good one goes in.
    assert_eq!(node.adopt(&name, &bytes, now), Adopted::Written);
}

#[test]
fn a_fresher_local_entry_is_kept_and_an_older_one_replaced() {
    let dir = Scratch::new();
    let controller = cache(&dir.0.join("controller"), Some(nodes()));
    let (name, short) = publish(
        &controller,
        &node_key("c"),
        "short-lived",
        Duration::from_secs(3600),
    );
    let node = cache(&dir.0.join("node"), Some(nodes()));
    // The node fetched on its own (the Secret was not there yet): a 6-hour token.
    let (local_name, local) = publish(
        &node,
        &node_key("n"),
        "node-own",
        Duration::from_secs(6 * 3600),
    );
    assert_eq!(local_name, name);
    assert_eq!(
        node.adopt(&name, &short, SystemTime::now()),
        Adopted::LocalIsFresher
    );
    assert_eq!(fs::read(node.dir().join(&name)).unwrap(), local);

    let later = cache(&dir.0.join("later"), Some(nodes()));
    let (_, long) = publish(
        &later,
        &node_key("c"),
        "long-lived",
        Duration::from_secs(12 * 3600),
    );
    assert_eq!(
        node.adopt(&name, &long, SystemTime::now()),
        Adopted::Written
    );
    assert_eq!(
        node.get(&node_key("n")).unwrap().password.expose(),
        "long-lived"
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
fn no_secret_volume_is_an_empty_round_and_no_shared_identity_an_error() {
    let dir = Scratch::new();
    let node = cache(&dir.0.join("node"), Some(nodes()));
    assert_eq!(
        sync_from_dir(&node, &dir.0.join("absent"), SystemTime::now()).unwrap(),
        SyncReport::default()
    );
    let plain = cache(&dir.0.join("plain"), None);
    assert!(
        sync_from_dir(&plain, &dir.0, SystemTime::now())
            .unwrap_err()
            .contains("no shared identity")
    );
}

#[test]
fn each_node_gets_its_own_refresh_point_never_later_than_the_published_one() {
    let dir = Scratch::new();
    let controller = cache(&dir.0.join("controller"), Some(nodes()));
    let life = 12 * 3600;
    let (name, bytes) = publish(&controller, &node_key("c"), "p", Duration::from_secs(life));
    let published: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let expires = published["expiresAt"].as_i64().unwrap();
    assert_eq!(published["refreshAt"].as_i64().unwrap(), expires - 300);
    let mut points = std::collections::BTreeSet::new();
    for n in 0..20 {
        let node = cache(&dir.0.join(format!("node-{n}")), Some(nodes())).with_refresh_jitter(10);
        node.prepare_dir().unwrap();
        assert_eq!(
            node.adopt(&name, &bytes, SystemTime::now()),
            Adopted::Written
        );
        let copied: serde_json::Value =
            serde_json::from_slice(&fs::read(node.dir().join(&name)).unwrap()).unwrap();
        let refresh = copied["refreshAt"].as_i64().unwrap();
        let earliest = expires - 300 - i64::try_from(life).unwrap() / 10 - 1;
        assert!((earliest..=expires - 300).contains(&refresh), "{refresh}");
        points.insert(refresh);
    }
    // Spread over an hour and more: twenty nodes do not share one point.
    assert!(points.len() >= 15, "{points:?}");
    // Without jitter the published entry is copied as it is.
    let plain = cache(&dir.0.join("plain"), Some(nodes()));
    plain.prepare_dir().unwrap();
    assert_eq!(
        plain.adopt(&name, &bytes, SystemTime::now()),
        Adopted::Written
    );
    assert_eq!(fs::read(plain.dir().join(&name)).unwrap(), bytes);
}
