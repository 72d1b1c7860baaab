//! The token cache's unit tests (Unix): keys, entries, locking, file checks, herds in one process.

use super::*;
use crate::jwt::ServiceAccountClaims;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!(
            "kcp-token-cache-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn key() -> CacheKey {
    CacheKey::new(Issuer::Ecr)
        .scope("region", "us-east-1")
        .identity("AWS_PROFILE", "nodes")
}

fn token(expires_in: Duration) -> RegistryToken {
    RegistryToken::obtained_now(
        "AWS",
        Secret::new("registry-password-1"),
        Some(SystemTime::now() + expires_in),
    )
}

fn block<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(10))
}

/// Fetches through `cache`, counting upstream calls.
fn fetch_counted(
    cache: &TokenCache,
    key: &CacheKey,
    calls: &AtomicUsize,
    life: Duration,
) -> (RegistryToken, Source) {
    block(cache.get_or_fetch(key, deadline(), async || {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(token(life))
    }))
    .unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o777
}

#[test]
fn keys_show_scope_and_hide_identity() {
    let k = key();
    let text = k.canonical();
    assert!(
        text.starts_with("provider=ecr;region=us-east-1;identity=sha256:"),
        "{text}"
    );
    assert!(!text.contains("nodes"), "{text}");
    assert_ne!(
        k.file_stem(),
        key().identity("AWS_ROLE_ARN", "x").file_stem()
    );
    assert_ne!(
        k.file_stem(),
        CacheKey::new(Issuer::Ecr)
            .scope("region", "us-west-2")
            .identity("AWS_PROFILE", "nodes")
            .file_stem()
    );
    // Parts are length-prefixed and escaped: no two spellings collide.
    assert_ne!(
        CacheKey::new(Issuer::Oidc).identity("ab", "c").canonical(),
        CacheKey::new(Issuer::Oidc).identity("a", "bc").canonical()
    );
    assert_ne!(
        CacheKey::new(Issuer::Oidc).scope("a", "b;c=d").canonical(),
        CacheKey::new(Issuer::Oidc)
            .scope("a", "b")
            .scope("c", "d")
            .canonical()
    );
    let sa = ServiceAccountClaims {
        namespace: "ns".into(),
        name: "puller".into(),
        uid: "u1".into(),
        audiences: vec!["sts.amazonaws.com".into()],
    };
    let other_uid = ServiceAccountClaims {
        uid: "u2".into(),
        ..sa.clone()
    };
    assert_ne!(
        key().with_claims(&sa).canonical(),
        key().with_claims(&other_uid).canonical()
    );
    assert_eq!(
        key().with_claims(&sa).canonical(),
        key().with_claims(&sa.clone()).canonical()
    );
}

#[test]
fn a_second_exec_is_served_from_disk() {
    let dir = Scratch::new();
    let cache = TokenCache::new(dir.0.join("nested/cache"));
    let calls = AtomicUsize::new(0);
    let (first, source) = fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600));
    assert_eq!(
        (source, calls.load(Ordering::SeqCst)),
        (Source::Upstream, 1)
    );
    let (second, source) = fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600));
    assert_eq!((source, calls.load(Ordering::SeqCst)), (Source::Cache, 1));
    // Whole seconds survive the round trip.
    let secs = |t: &RegistryToken| unix_secs(t.expires_at.unwrap());
    assert_eq!(
        (
            second.username.as_str(),
            second.password.expose(),
            secs(&second)
        ),
        ("AWS", "registry-password-1", secs(&first))
    );
    assert_eq!(mode(cache.dir()), 0o700);
    assert_eq!(mode(&cache.entry_path(&key())), 0o600);
    let on_disk = fs::read_to_string(cache.entry_path(&key())).unwrap();
    assert!(
        on_disk.contains(&key().canonical()) && !on_disk.contains("nodes"),
        "{on_disk}"
    );
    // Another identity is another entry.
    let other = key().identity("AWS_ROLE_ARN", "arn:aws:iam::1:role/x");
    assert_eq!(
        fetch_counted(&cache, &other, &calls, Duration::from_secs(3600)).1,
        Source::Upstream
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn entries_inside_the_margin_are_refetched() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let calls = AtomicUsize::new(0);
    fetch_counted(&cache, &key(), &calls, Duration::from_secs(4 * 60));
    assert_eq!(
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
        Source::Upstream
    );
    assert_eq!(
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
        Source::Cache
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let tight = TokenCache::new(&dir.0).with_margin(Duration::from_secs(2 * 3600));
    assert_eq!(
        fetch_counted(&tight, &key(), &calls, Duration::from_secs(3600)).1,
        Source::Upstream
    );
}

#[test]
fn refresh_points_are_spread_by_the_jitter() {
    let dir = Scratch::new();
    let calls = AtomicUsize::new(0);
    let life = Duration::from_secs(12 * 3600);
    let points: Vec<i64> = (0..20)
        .map(|i| {
            let cache = TokenCache::new(dir.0.join(i.to_string())).with_refresh_jitter(10);
            fetch_counted(&cache, &key(), &calls, life);
            let entry: serde_json::Value =
                serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
            let (exp, fetched) = (
                entry["expiresAt"].as_i64().unwrap(),
                entry["fetchedAt"].as_i64().unwrap(),
            );
            let early = exp - 300 - entry["refreshAt"].as_i64().unwrap();
            assert!((0..=(exp - fetched) / 10).contains(&early), "{entry}");
            early
        })
        .collect();
    let distinct: std::collections::BTreeSet<_> = points.iter().collect();
    assert!(distinct.len() > 10, "{points:?}");

    // Past its refresh point, an entry with life left is fetched again.
    let cache = TokenCache::new(&dir.0);
    fetch_counted(&cache, &key(), &calls, life);
    let path = cache.entry_path(&key());
    let mut entry: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    entry["refreshAt"] = serde_json::json!(unix_secs(SystemTime::now()) - 1);
    fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
    let before = calls.load(Ordering::SeqCst);
    assert_eq!(
        fetch_counted(&cache, &key(), &calls, life).1,
        Source::Upstream
    );
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);
    // Without jitter the refresh point is the margin.
    let entry: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        entry["refreshAt"].as_i64().unwrap(),
        entry["expiresAt"].as_i64().unwrap() - 300
    );
}

#[test]
fn unknown_lifetimes_are_not_stored() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let fetch = async || {
        Ok::<_, String>(RegistryToken {
            expires_at: None,
            ..token(Duration::ZERO)
        })
    };
    assert_eq!(
        block(cache.get_or_fetch(&key(), deadline(), fetch))
            .unwrap()
            .1,
        Source::Upstream
    );
    assert!(!cache.entry_path(&key()).exists());
}

#[test]
fn untrustworthy_entries_are_ignored_and_replaced() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let calls = AtomicUsize::new(0);
    let path = cache.entry_path(&key());
    let good = || {
        let c = AtomicUsize::new(0);
        fetch_counted(
            &TokenCache::new(dir.0.join("donor")),
            &key(),
            &c,
            Duration::from_secs(3600),
        );
        fs::read(TokenCache::new(dir.0.join("donor")).entry_path(&key())).unwrap()
    };
    let valid = good();
    // Private files, so each case is refused for its own reason, not for its mode.
    let private = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    };
    // The valid entry with one piece of text replaced.
    let edited = |from: &str, to: &str| {
        String::from_utf8(valid.clone())
            .unwrap()
            .replace(from, to)
            .into_bytes()
    };
    type Plant<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Plant)> = vec![
        ("corrupt", Box::new(|| private(b"{\"version\":1,\"key\":"))),
        ("empty", Box::new(|| private(b""))),
        ("truncated", Box::new(|| private(&valid[..valid.len() / 2]))),
        ("not json", Box::new(|| private(&[0xff, 0x00, 0x13]))),
        (
            "world-readable",
            Box::new(|| {
                fs::write(&path, &valid).unwrap();
                fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
            }),
        ),
        (
            "group-writable",
            Box::new(|| {
                fs::write(&path, &valid).unwrap();
                fs::set_permissions(&path, fs::Permissions::from_mode(0o620)).unwrap();
            }),
        ),
        (
            "another key",
            Box::new(|| private(&edited("region=us-east-1", "region=us-west-2"))),
        ),
        (
            "another layout version",
            Box::new(|| private(&edited("\"version\":1", "\"version\":9"))),
        ),
        ("oversized", Box::new(|| private(&vec![b' '; 70_000]))),
        (
            "symlink",
            Box::new(|| {
                let target = dir.0.join("elsewhere.json");
                fs::write(&target, &valid).unwrap();
                fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
                std::os::unix::fs::symlink(&target, &path).unwrap();
            }),
        ),
        ("directory", Box::new(|| fs::create_dir(&path).unwrap())),
        (
            "a longer life than an ECR token has (an expiry in 9999)",
            Box::new(|| {
                let mut entry: serde_json::Value = serde_json::from_slice(&valid).unwrap();
                entry["expiresAt"] = serde_json::json!(253_402_300_799_i64);
                private(&serde_json::to_vec(&entry).unwrap());
            }),
        ),
        (
            "a key of no provider of ours",
            Box::new(|| private(&edited("provider=ecr", "provider=xyz"))),
        ),
        (
            "written in the future",
            Box::new(|| {
                let mut entry: serde_json::Value = serde_json::from_slice(&valid).unwrap();
                entry["fetchedAt"] = serde_json::json!(unix_secs(SystemTime::now()) + 86_400);
                private(&serde_json::to_vec(&entry).unwrap());
            }),
        ),
    ];
    // The donor entry itself is served when planted as is: the cases above fail for their reason.
    private(&valid);
    assert!(cache.get(&key()).is_some());
    cache.prepare_dir().unwrap();
    for (name, plant) in cases {
        let _ = fs::remove_file(&path);
        let _ = fs::remove_dir(&path);
        plant();
        if name == "directory" {
            // A directory cannot be renamed over: the fetch still answers, nothing is trusted.
            assert_eq!(
                fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
                Source::Upstream,
                "{name}"
            );
            continue;
        }
        assert_eq!(cache.get(&key()), None, "{name} was trusted");
        let before = calls.load(Ordering::SeqCst);
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Upstream,
            "{name}"
        );
        assert_eq!(calls.load(Ordering::SeqCst), before + 1, "{name}");
        // Replaced by a good entry: a regular 0600 file that is served.
        assert!(fs::symlink_metadata(&path).unwrap().is_file(), "{name}");
        assert_eq!(mode(&path), 0o600, "{name}");
        assert_eq!(
            fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
            Source::Cache,
            "{name}"
        );
    }
}

#[test]
fn foreign_owned_files_and_directories_are_not_trusted() {
    let dir = Scratch::new();
    let calls = AtomicUsize::new(0);
    fetch_counted(
        &TokenCache::new(&dir.0),
        &key(),
        &calls,
        Duration::from_secs(3600),
    );
    // The same files seen by a process of another user: owned by someone else.
    let stranger = TokenCache {
        owner: TokenCache::new(&dir.0).owner.wrapping_add(4242),
        ..TokenCache::new(&dir.0)
    };
    assert_eq!(stranger.get(&key()), None);
    assert!(stranger.prepare_dir().unwrap_err().contains("owned by uid"));
    // It still answers, without the cache and without touching the entry.
    let entry = fs::read(stranger.entry_path(&key())).unwrap();
    assert_eq!(
        fetch_counted(&stranger, &key(), &calls, Duration::from_secs(7200)).1,
        Source::Upstream
    );
    assert_eq!(fs::read(stranger.entry_path(&key())).unwrap(), entry);
}

#[test]
fn an_open_directory_is_closed_to_others() {
    let dir = Scratch::new();
    fs::create_dir_all(&dir.0).unwrap();
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
    let calls = AtomicUsize::new(0);
    fetch_counted(
        &TokenCache::new(&dir.0),
        &key(),
        &calls,
        Duration::from_secs(3600),
    );
    assert_eq!(mode(&dir.0), 0o700);
}

/// Runs `f` on its own thread and fails the test when it has not returned within 20 s: a
/// blocking `open()` must fail the test, not hang it.
fn within_watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: the run blocked"))
}

#[test]
fn nothing_at_the_lock_path_can_block_or_be_followed() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    cache.prepare_dir().unwrap();
    let lock = cache.lock_path(&key());
    let outside = dir.0.join("outside");
    type Plant<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Plant)> = vec![
        (
            "fifo",
            Box::new(|| {
                let c = std::ffi::CString::new(lock.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: a valid NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }),
        ),
        (
            "symlink",
            Box::new(|| {
                fs::write(&outside, b"").unwrap();
                fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
                std::os::unix::fs::symlink(&outside, &lock).unwrap();
            }),
        ),
        ("directory", Box::new(|| fs::create_dir(&lock).unwrap())),
        (
            "group-writable",
            Box::new(|| {
                fs::write(&lock, b"").unwrap();
                fs::set_permissions(&lock, fs::Permissions::from_mode(0o620)).unwrap();
            }),
        ),
    ];
    for (name, plant) in cases {
        let _ = fs::remove_file(&lock);
        let _ = fs::remove_dir(&lock);
        let _ = fs::remove_file(cache.entry_path(&key()));
        plant();
        let run = cache.clone();
        let (_, source) = within_watchdog(name, move || {
            let calls = AtomicUsize::new(0);
            let got = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600));
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            got
        });
        assert_eq!(source, Source::Upstream, "{name}");
        // Without its lock the run wrote nothing and left the planted file alone.
        assert!(!cache.entry_path(&key()).exists(), "{name}");
        let planted = fs::symlink_metadata(&lock).unwrap();
        match name {
            "fifo" => assert!(planted.file_type().is_fifo(), "{name}"),
            "symlink" => assert!(planted.file_type().is_symlink(), "{name}"),
            "directory" => assert!(planted.is_dir(), "{name}"),
            _ => assert_eq!(planted.mode() & 0o777, 0o620, "{name}"),
        }
    }
    assert_eq!(fs::read(&outside).unwrap(), b"");
}

#[test]
fn a_fifo_in_place_of_an_entry_never_blocks_and_is_replaced() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    cache.prepare_dir().unwrap();
    let entry = cache.entry_path(&key());
    let c = std::ffi::CString::new(entry.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(fs::symlink_metadata(&entry).unwrap().file_type().is_fifo());
    let run = cache.clone();
    let sources = within_watchdog("fifo entry", move || {
        let calls = AtomicUsize::new(0);
        let first = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600)).1;
        let second = fetch_counted(&run, &key(), &calls, Duration::from_secs(3600)).1;
        (first, second, calls.load(Ordering::SeqCst))
    });
    assert_eq!(sources, (Source::Upstream, Source::Cache, 1));
    assert!(fs::symlink_metadata(&entry).unwrap().is_file());
}

/// Writes an entry for `stem` expiring at `expires_at`, padded to about `size` bytes.
fn plant_entry(dir: &Path, stem: &str, expires_at: i64, size: usize) {
    let entry = Entry {
        version: ENTRY_VERSION,
        key: "provider=test".into(),
        username: "u".repeat(size.saturating_sub(200).max(1)),
        password: Secret::new("p"),
        expires_at,
        fetched_at: expires_at - 3600,
        refresh_at: expires_at - 300,
        fleet: None,
    };
    let path = dir.join(format!("{stem}.json"));
    fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
}

fn stem(n: usize) -> String {
    format!("{n:032x}")
}

fn names(dir: &Path, suffix: &str) -> std::collections::BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(suffix))
        .collect()
}

#[test]
fn writes_prune_expired_entries_and_hold_the_entry_cap() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    cache.prepare_dir().unwrap();
    let now = unix_secs(SystemTime::now());
    // 2,500 expired entries with their locks, 1,200 live ones expiring one second apart.
    for n in 0..2500 {
        plant_entry(&dir.0, &stem(n), now - 10 - n as i64, 300);
        fs::write(dir.0.join(format!("{}.lock", stem(n))), b"").unwrap();
        fs::set_permissions(
            dir.0.join(format!("{}.lock", stem(n))),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    for n in 10_000..11_200 {
        plant_entry(&dir.0, &stem(n), now + 3600 + n as i64, 300);
    }
    // An expired entry whose lock a running exec holds is left to that exec.
    let held = stem(7);
    let guard = File::open(dir.0.join(format!("{held}.lock"))).unwrap();
    guard.lock().unwrap();
    // Not the cache's: other names, an entry name that is a symlink or open to others.
    fs::write(dir.0.join("README"), b"mine").unwrap();
    std::os::unix::fs::symlink(
        "/etc/hostname",
        dir.0.join(format!("{}.json", stem(1 << 40))),
    )
    .unwrap();
    plant_entry(&dir.0, &stem(1 << 41), now - 100, 300);
    fs::set_permissions(
        dir.0.join(format!("{}.json", stem(1 << 41))),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    // Temporary files: one orphaned long ago, one being written right now.
    let old_tmp = dir.0.join(format!(".{}.json.42.0000abcd.tmp", stem(3)));
    let new_tmp = dir.0.join(format!(".{}.json.43.0000abce.tmp", stem(4)));
    fs::write(&old_tmp, b"").unwrap();
    fs::write(&new_tmp, b"").unwrap();
    File::options()
        .write(true)
        .open(&old_tmp)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();

    let calls = AtomicUsize::new(0);
    fetch_counted(&cache, &key(), &calls, Duration::from_secs(600));

    let entries = names(&dir.0, ".json");
    let own = format!("{}.json", key().file_stem());
    assert!(entries.contains(&own), "the entry just written stays");
    assert!(
        entries.contains(&format!("{held}.json")),
        "a locked entry stays"
    );
    assert!(entries.contains(&format!("{}.json", stem(1 << 40))));
    assert!(entries.contains(&format!("{}.json", stem(1 << 41))));
    let expired: Vec<_> = (0..2500)
        .filter(|n| *n != 7 && entries.contains(&format!("{}.json", stem(*n))))
        .collect();
    assert_eq!(expired, Vec::<usize>::new(), "expired entries are pruned");
    // 1,000 of ours in all: the new one and the 999 live ones that expire last.
    let live: Vec<usize> = (10_000..11_200)
        .filter(|n| entries.contains(&format!("{}.json", stem(*n))))
        .collect();
    assert_eq!(live, (10_201..11_200).collect::<Vec<_>>());
    // Locks go with their entries; the held one stays.
    let locks = names(&dir.0, ".lock");
    assert!(locks.contains(&format!("{held}.lock")));
    assert!(locks.contains(&format!("{}.lock", key().file_stem())));
    assert_eq!(
        locks.len(),
        2,
        "{:?}",
        locks.iter().take(5).collect::<Vec<_>>()
    );
    assert!(!old_tmp.exists());
    assert!(new_tmp.exists());
    assert_eq!(fs::read(dir.0.join("README")).unwrap(), b"mine");
    drop(guard);
    // The cache still serves.
    assert_eq!(
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(600)).1,
        Source::Cache
    );
}

/// Copies of the fleet's entries are capped by `wait`, not here: however many there are, a
/// provider's write never removes an entry of the node's own to make room for them, and removes
/// a copy only once it has expired.
#[test]
fn copies_of_the_fleet_never_push_out_the_nodes_own_entries() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    cache.prepare_dir().unwrap();
    let now = unix_secs(SystemTime::now());
    // 999 own entries that expire soon, and 300 live copies that expire late.
    for n in 0..999 {
        plant_entry(&dir.0, &stem(n), now + 600 + n as i64, 300);
    }
    let copy = |n: usize, expires_at: i64| {
        let path = dir.0.join(format!("{}.json", stem(n)));
        let entry = serde_json::json!({
            "version": 1, "key": "provider=ecr;shared-identity=nodes;identity=sha256:00",
            "username": "AWS", "password": "p", "expiresAt": expires_at,
            "fetchedAt": expires_at - 3600, "refreshAt": expires_at - 300,
            "fleet": {"published": "sha256:00", "seenAt": now},
        });
        fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    };
    for n in 5000..5300 {
        copy(n, now + 40_000);
    }
    copy(6000, now - 1);
    let calls = AtomicUsize::new(0);
    fetch_counted(&cache, &key(), &calls, Duration::from_secs(600));
    let entries = names(&dir.0, ".json");
    // The new entry and 999 own ones: exactly the own cap, nothing of ours removed.
    let own: Vec<usize> = (0..999)
        .filter(|n| entries.contains(&format!("{}.json", stem(*n))))
        .collect();
    assert_eq!(own.len(), 999);
    let copies = (5000..5300)
        .filter(|n| entries.contains(&format!("{}.json", stem(*n))))
        .count();
    assert_eq!(copies, 300, "live copies are wait's to cap");
    assert!(
        !entries.contains(&format!("{}.json", stem(6000))),
        "an expired copy goes"
    );
    // One more own entry: now over the own cap, the own entry expiring first goes, no copy.
    let other = CacheKey::new(Issuer::Ecr).scope("region", "eu-west-1");
    fetch_counted(&cache, &other, &calls, Duration::from_secs(7200));
    let entries = names(&dir.0, ".json");
    assert!(!entries.contains(&format!("{}.json", stem(0))));
    assert_eq!(
        (5000..5300)
            .filter(|n| entries.contains(&format!("{}.json", stem(*n))))
            .count(),
        300
    );
}

#[test]
fn writes_hold_the_byte_cap() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    cache.prepare_dir().unwrap();
    let now = unix_secs(SystemTime::now());
    // 100 live entries of 60 KiB: about 6 MiB, over the 4 MiB cap.
    for n in 0..100 {
        plant_entry(&dir.0, &stem(n), now + 3600 + n as i64, 60 * 1024);
    }
    let calls = AtomicUsize::new(0);
    fetch_counted(&cache, &key(), &calls, Duration::from_secs(600));
    let total: u64 = fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total <= MAX_TOTAL_BYTES, "{total}");
    let kept: Vec<usize> = (0..100)
        .filter(|n| dir.0.join(format!("{}.json", stem(*n))).exists())
        .collect();
    // The ones that expire last stay, as many as fit.
    let first = kept[0];
    assert_eq!(kept, (first..100).collect::<Vec<_>>());
    assert!(kept.len() >= 60, "{}", kept.len());
}

#[test]
fn only_the_cache_file_names_are_recognised() {
    let s = stem(0xabc);
    assert_eq!(
        cache_file_name(&format!("{s}.json")),
        Some((s.as_str(), CacheFile::Entry))
    );
    assert_eq!(
        cache_file_name(&format!("{s}.lock")),
        Some((s.as_str(), CacheFile::Lock))
    );
    assert_eq!(
        cache_file_name(&format!(".{s}.json.1234.0a0b0c0d.tmp")),
        Some((s.as_str(), CacheFile::Temporary))
    );
    for other in [
        "README".to_string(),
        format!("{s}.json.bak"),
        format!("{s}.JSON"),
        format!("{}.json", &s[1..]),
        format!("{}.json", s.to_uppercase()),
        format!("x{s}.json"),
        format!(".{s}.json.tmp"),
        format!(".{s}.json.12.zz.tmp"),
        format!(".{s}.lock.12.ab.tmp"),
        ".json".to_string(),
    ] {
        assert_eq!(cache_file_name(&other), None, "{other}");
    }
}

#[test]
fn concurrent_fetches_for_one_key_make_one_call() {
    let dir = Scratch::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let calls = Arc::clone(&calls);
            let path = dir.0.clone();
            std::thread::spawn(move || {
                let cache = TokenCache::new(path);
                block(cache.get_or_fetch(&key(), deadline(), async || {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok::<_, String>(token(Duration::from_secs(3600)))
                }))
                .unwrap()
                .1
            })
        })
        .collect();
    let sources: Vec<Source> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        sources.iter().filter(|s| **s == Source::Upstream).count(),
        1
    );
}

#[test]
fn a_failed_fetch_stores_nothing_and_releases_the_lock() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let err = block(cache.get_or_fetch(&key(), deadline(), async || {
        Err::<RegistryToken, _>("HTTP 503")
    }))
    .unwrap_err();
    assert_eq!(err, "HTTP 503");
    assert!(!cache.entry_path(&key()).exists());
    let calls = AtomicUsize::new(0);
    assert_eq!(
        fetch_counted(&cache, &key(), &calls, Duration::from_secs(3600)).1,
        Source::Upstream
    );
}

#[test]
fn the_issuer_clock_ahead_shortens_the_life_behind_changes_nothing() {
    let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let node = at(784_111_777);
    let issued = |expires_at: Option<SystemTime>, issuer_now: Option<SystemTime>| {
        RegistryToken {
            obtained_at: node,
            ..RegistryToken::obtained_now("u", Secret::new("p"), expires_at)
        }
        .with_issuer_clock(issuer_now)
    };
    let exp = Some(at(784_111_777 + 3 * 3600));
    // Two hours ahead: one hour of the three is left, counted from the node's clock.
    let ahead = issued(exp, Some(at(784_111_777 + 7200)));
    assert_eq!(ahead.expires_at, Some(at(784_111_777 + 3600)));
    assert_eq!(ahead.obtained_at, node);
    // Behind or unknown: the node's clock counts.
    assert_eq!(issued(exp, Some(at(784_111_777 - 7200))).expires_at, exp);
    assert_eq!(issued(exp, None).expires_at, exp);
    // Past by the issuer's clock: no life left. Unknown expiry: still unknown.
    let over = issued(exp, Some(at(784_111_777 + 4 * 3600)));
    assert_eq!(over.expires_at, Some(node));
    assert_eq!(issued(None, Some(at(784_111_777 + 7200))).expires_at, None);
    // Past by the node's own clock: no life left either.
    assert_eq!(
        issued(Some(at(784_111_777 - 60)), None).expires_at,
        Some(node)
    );
}

#[test]
fn the_obtained_at_time_is_stored_and_a_hit_counts_from_its_read() {
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let obtained_at = SystemTime::now() - Duration::from_secs(100);
    let fetched = RegistryToken {
        obtained_at,
        ..token(Duration::from_secs(3600))
    };
    let (fresh, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
        Ok::<_, String>(fetched.clone())
    }))
    .unwrap();
    assert_eq!((fresh, source), (fetched, Source::Upstream));
    let entry: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
    assert_eq!(entry["fetchedAt"].as_i64(), Some(unix_secs(obtained_at)));
    let before = SystemTime::now();
    let hit = cache.get(&key()).unwrap();
    assert!(
        hit.obtained_at >= before && hit.obtained_at <= SystemTime::now(),
        "a hit is obtained when it is read"
    );
}

/// A registry whose `Date` is two hours ahead of the node, a token of three hours by its
/// clock: the fresh answer, the entry and the answer from the entry all count three hours
/// (the node's clock would say five), as when ACR counted from the later clock itself.
#[test]
fn a_token_from_an_issuer_clock_ahead_is_cached_and_answered_as_before() {
    use crate::cache_hint::CachePolicy;
    let dir = Scratch::new();
    let cache = TokenCache::new(&dir.0);
    let policy = CachePolicy::RemainingMinus(Duration::from_secs(300));
    let issuer_now = SystemTime::now() + Duration::from_secs(7200);
    let exp = issuer_now + Duration::from_secs(3 * 3600);
    let (fresh, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
        Ok::<_, String>(
            RegistryToken::obtained_now("u", Secret::new("refresh"), Some(exp))
                .with_issuer_clock(Some(issuer_now)),
        )
    }))
    .unwrap();
    assert_eq!(source, Source::Upstream);
    // What ACR computed before the token carried the time: node now + (exp - later clock).
    let node_now = fresh.obtained_at;
    let before = node_now + exp.duration_since(issuer_now.max(node_now)).unwrap();
    assert_eq!(fresh.expires_at, Some(before));
    assert_eq!(
        policy.cache_duration(fresh.expires_at, fresh.obtained_at),
        kcp_kubelet::duration::GoDuration::from_secs(3 * 3600 - 300)
    );
    let entry: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.entry_path(&key())).unwrap()).unwrap();
    let (exp_s, fetched_s) = (
        entry["expiresAt"].as_i64().unwrap(),
        entry["fetchedAt"].as_i64().unwrap(),
    );
    assert_eq!(fetched_s, unix_secs(node_now));
    assert!((10_799..=10_800).contains(&(exp_s - fetched_s)), "{entry}");
    let (hit, source) = block(cache.get_or_fetch(&key(), deadline(), async || {
        Err::<RegistryToken, _>("not called")
    }))
    .unwrap();
    assert_eq!(source, Source::Cache);
    assert_eq!(hit.expires_at.map(unix_secs), Some(unix_secs(before)));
    let secs = policy
        .cache_duration(hit.expires_at, hit.obtained_at)
        .as_nanos()
        / 1_000_000_000;
    assert!((10_498..=10_500).contains(&secs), "{secs}");
}
