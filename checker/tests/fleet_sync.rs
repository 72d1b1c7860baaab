//! Fleet mode end to end on one machine: a "controller" run of the real ecr-credential-provider
//! with `--token-cache-shared-identity` publishes an entry; `credential-provider-check wait`
//! copies it from a Secret volume laid out as the kubelet writes one (`..data` swapped
//! atomically) into a node's token cache; the node's provider, with other AWS credentials, then
//! answers from it without any ECR call. What the controller down or wrong leaves (no Secret, an
//! entry for another identity, an expired or corrupt one, the Secret emptied) never stops a node
//! from fetching on its own.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeServer;
use kcp_testkit::{Plugin, TempDir, unix_now};

const HOST: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
const IMAGE: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com/app:1";

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(test, "wait runs in the Linux DaemonSet only")
}

/// A fake ECR answering every GetAuthorizationToken with `AWS:<password>`.
fn ecr(password: &str, life: u64) -> FakeServer {
    common::fake_ecr(HOST, password, life)
}

/// The ECR provider with its own static AWS credentials (`who`), its cache in `cache`, in
/// fleet mode for `identity`.
fn provider(ecr: &FakeServer, who: &str, cache: &Path, identity: &str) -> Plugin {
    // target_bin_dir is already the directory of the binaries under test (cross-built too).
    Plugin::program(common::target_bin_dir().join(common::exe("ecr-credential-provider")))
        .env("AWS_ACCESS_KEY_ID", who)
        .env("AWS_SECRET_ACCESS_KEY", "static-secret-key-value")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .env("CREDENTIAL_PROVIDER_CACHE_JITTER", "0")
        .args([
            format!("--token-cache-dir={}", cache.display()),
            format!("--token-cache-shared-identity={identity}"),
        ])
}

/// What the controller publishes: the one entry a provider run for `identity` against `fake`
/// (answering `password`) left in a fresh cache, as (file name, bytes).
fn published(fake: &FakeServer, password: &str, identity: &str, dir: &Path) -> (String, Vec<u8>) {
    let cache = dir.join(format!("controller-{identity}-{password}"));
    let out = provider(fake, "AKIDCONTROLLER", &cache, identity).request(ApiVersion::V1, IMAGE);
    assert_eq!(out.accepted().auth[HOST].1, password);
    common::only_entry(&cache)
}

/// A Secret volume as the kubelet's atomic writer lays it out: the files in a timestamped
/// directory, `..data` a link to it, each key a link through `..data`. `publish` swaps in a new
/// directory and relinks `..data` with a rename, as the kubelet does on an update.
struct Volume {
    dir: PathBuf,
    generation: u32,
}

impl Volume {
    fn new(dir: PathBuf) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        Volume { dir, generation: 0 }
    }

    fn publish(&mut self, files: &[(&str, &[u8])]) {
        self.generation += 1;
        let data = format!(
            "..2026_11_26_00_00_0{}.{}",
            self.generation,
            std::process::id()
        );
        std::fs::create_dir(self.dir.join(&data)).unwrap();
        for (name, bytes) in files {
            std::fs::write(self.dir.join(&data).join(name), bytes).unwrap();
        }
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(&data, &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
        // Top-level links for every key; stale ones of the last generation are removed.
        for entry in std::fs::read_dir(&self.dir).unwrap().filter_map(Result::ok) {
            let name = entry.file_name().into_string().unwrap();
            if !name.starts_with("..") {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        for (name, _) in files {
            std::os::unix::fs::symlink(format!("..data/{name}"), self.dir.join(name)).unwrap();
        }
    }
}

/// `credential-provider-check wait` in fleet mode, started and past its handlers.
struct Wait {
    child: Child,
}

impl Wait {
    /// `wait` in fleet mode, copying `volume` into `cache` for `identity`.
    fn start(volume: &Path, cache: &Path, identity: &str, interval: &str) -> Self {
        Self::spawn(&[
            "--sync-interval".to_owned(),
            interval.to_owned(),
            format!("--fleet-tokens={}", volume.display()),
            format!("--token-cache-dir={}", cache.display()),
            format!("--token-cache-shared-identity={identity}"),
        ])
    }

    /// `wait ARGS`, returned once it says its signal handlers are in place.
    fn spawn(args: &[String]) -> Self {
        let (child, line) = common::start_wait(args, Stdio::inherit(), Stdio::piped());
        assert_eq!(line, "waiting for SIGTERM\n");
        Wait { child }
    }

    /// SIGTERM, then the exit code and everything it wrote on stderr.
    fn stop(mut self) -> (Option<i32>, String) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        // Taken already when [`Lines`] reads it as it comes.
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        (status.code(), stderr)
    }
}

/// Waits (up to a minute: a test machine may be slow) until `cond` holds.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < give_up, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_published_token_reaches_the_node_and_answers_without_an_ecr_call() {
    if skip("a_published_token_reaches_the_node_and_answers_without_an_ecr_call") {
        return;
    }
    let dir = TempDir::new("fleet-sync");
    // The controller and the nodes reach ECR at one endpoint (part of the entry's key).
    let fleet_ecr = ecr("fleet-published-password", 12 * 3600);
    let (name, bytes) = published(&fleet_ecr, "fleet-published-password", "nodes", dir.path());
    let other_ecr = ecr("other-identity-password", 12 * 3600);
    let (other_name, other_bytes) =
        published(&other_ecr, "other-identity-password", "other", dir.path());
    assert_eq!(fleet_ecr.requests().len(), 1);
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    let cache = dir.path().join("host-cache");
    // The controller has not written the Secret yet: the volume is empty.
    volume.publish(&[]);
    let wait = Wait::start(&volume.dir, &cache, "nodes", "1h");

    // The Secret changes: copied at once (the interval is an hour), the other identity's not.
    volume.publish(&[(&name, &bytes), (&other_name, &other_bytes)]);
    eventually("the published entry is in the node's cache", || {
        cache.join(&name).is_file()
    });
    // The entry as published, but for a refresh point of this node's own (0..10 % of its life
    // early, never later than the published one) and the mark of a copy.
    let copied: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.join(&name)).unwrap()).unwrap();
    let original: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(
        copied["fleet"]["published"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    for field in [
        "version",
        "key",
        "username",
        "password",
        "expiresAt",
        "fetchedAt",
    ] {
        assert_eq!(copied[field], original[field], "{field}");
    }
    let (expires, published_refresh) = (
        original["expiresAt"].as_i64().unwrap(),
        original["refreshAt"].as_i64().unwrap(),
    );
    assert_eq!(published_refresh, expires - 300);
    let life = expires - original["fetchedAt"].as_i64().unwrap();
    let refresh = copied["refreshAt"].as_i64().unwrap();
    assert!(
        (expires - 300 - life / 10 - 1..=published_refresh).contains(&refresh),
        "{refresh}"
    );
    assert!(!cache.join(&other_name).exists());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(cache.join(&name)).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    // The node's provider, with its own (other) credentials, answers from it: no ECR call, and
    // its metrics count an answer from a copy, not a cache hit of its own.
    let metrics = dir.path().join("metrics.prom");
    let out = provider(&fleet_ecr, "AKIDNODE", &cache, "nodes")
        .args([format!("--metrics-file={}", metrics.display())])
        .request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.accepted().auth[HOST],
        ("AWS".to_owned(), "fleet-published-password".to_owned())
    );
    assert_eq!(fleet_ecr.requests().len(), 1, "the controller's call only");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains(
            "credential_provider_requests_total{provider=\"ecr\",outcome=\"fleet_copy\"} 1\n"
        ),
        "{text}"
    );
    assert!(!text.contains("outcome=\"cache_hit\""), "{text}");
    // A node of another shared identity (or none) does not use it: it fetches on its own.
    let elsewhere = dir.path().join("other-node-cache");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::set_permissions(
        &elsewhere,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    std::fs::copy(cache.join(&name), elsewhere.join(&name)).unwrap();
    let out = provider(&fleet_ecr, "AKIDNODE", &elsewhere, "team-b").request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(
        fleet_ecr.requests().len(),
        2,
        "team-b's node fetched on its own"
    );

    // The Secret emptied (the controller's entries withdrawn): the copy leaves the node within
    // one sync, and its provider fetches on its own again.
    volume.publish(&[]);
    eventually("the withdrawn entry leaves the node's cache", || {
        !cache.join(&name).exists()
    });
    let out = provider(&fleet_ecr, "AKIDNODE", &cache, "nodes").request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_eq!(fleet_ecr.requests().len(), 3, "the node fetched on its own");
    let (code, stderr) = wait.stop();
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains(&format!(
            "credential-provider-check: wait: fleet token {name} removed from {}: the Secret no longer publishes it\n",
            cache.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "credential-provider-check: wait: warning: fleet token {other_name} not copied: it is not for the shared identity \"nodes\"\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("credential-provider-check: wait: fleet tokens: 1 entry written into "),
        "{stderr}"
    );
    for secret in ["fleet-published-password", "other-identity-password"] {
        assert!(!stderr.contains(secret), "{stderr}");
    }
    assert_eq!(stderr.lines().count(), stderr.matches('\n').count());
}

/// A valid published entry for `identity` that no provider here reads (region `region`): a
/// round marker, or one of many.
fn filler(identity: &str, region: &str) -> (String, Vec<u8>) {
    use kcp_plugin::token_cache::{CacheKey, Issuer, SharedIdentity};
    let key = CacheKey::new(Issuer::Ecr)
        .scope("region", region)
        .node_identity("node", "controller")
        .shared_as(&SharedIdentity::parse(identity).unwrap())
        .unwrap();
    let now = unix_now() as i64;
    let entry = serde_json::json!({
        "version": 1, "key": key.canonical(), "username": "AWS", "password": format!("filler-{region}"),
        "expiresAt": now + 3600, "fetchedAt": now, "refreshAt": now + 3300,
    });
    (key.file_name(), serde_json::to_vec(&entry).unwrap())
}

/// `bytes` (an entry) with some fields replaced.
fn edited(bytes: &[u8], changes: &[(&str, serde_json::Value)]) -> Vec<u8> {
    let mut entry: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    for (field, value) in changes {
        entry[*field] = value.clone();
    }
    serde_json::to_vec(&entry).unwrap()
}

/// The `cacheDuration` of an answer, in seconds.
fn cache_seconds(out: &kcp_testkit::Outcome) -> i64 {
    let d = out.accepted().cache_duration.expect("a cacheDuration");
    d.as_nanos() / 1_000_000_000
}

/// Reads `wait`'s stderr as it comes (it only ends at SIGTERM otherwise).
struct Lines {
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Lines {
    fn of(child: &mut Child) -> Lines {
        let stderr = child.stderr.take().unwrap();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Lines { lines }
    }

    fn count(&self, text: &str) -> usize {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(text))
            .count()
    }

    fn all(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

#[test]
fn a_corrupt_or_expired_entry_is_refused_once_and_the_node_fetches_on_its_own() {
    if skip("a_corrupt_or_expired_entry_is_refused_once_and_the_node_fetches_on_its_own") {
        return;
    }
    let dir = TempDir::new("fleet-sync-bad");
    let node_ecr = ecr("node-fetched-password", 12 * 3600);
    let (name, bytes) = published(&node_ecr, "node-fetched-password", "nodes", dir.path());
    let now = unix_now() as i64;
    let expired = edited(
        &bytes,
        &[
            ("expiresAt", (now + 30).into()),
            ("refreshAt", (now - 10).into()),
        ],
    );
    let corrupt = "0123456789abcdef0123456789abcdef.json";
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    let bad: [(&str, &[u8]); 2] = [(&name, &expired), (corrupt, b"{not json")];
    volume.publish(&bad);
    let cache = dir.path().join("host-cache");
    let mut wait = Wait::start(&volume.dir, &cache, "nodes", "1s");
    let lines = Lines::of(&mut wait.child);
    // Rounds go on (each new marker entry is one more round at least); the refusals, which do
    // not change, are said once.
    for round in 0..4 {
        let marker = filler("nodes", &format!("marker-{round}"));
        let mut files = bad.to_vec();
        files.push((&marker.0, &marker.1));
        volume.publish(&files);
        eventually("the round's marker is copied", || {
            cache.join(&marker.0).is_file()
        });
    }
    let refusal = format!("fleet token {name} not copied: ");
    assert_eq!(lines.count(&refusal), 1, "{}", lines.all());
    assert_eq!(
        lines.count(&format!(
            "fleet token {corrupt} not copied: not a token cache entry (line 1, column 2)"
        )),
        1,
        "{}",
        lines.all()
    );
    assert_eq!(
        lines.count(&format!(
            "fleet token {name} not copied: less than the 5-minute margin of its life is left"
        )),
        1
    );
    let (code, _) = wait.stop();
    assert_eq!(code, Some(0));
    assert!(!cache.join(&name).exists());
    // The node fetches on its own, as without fleet mode.
    let out = provider(&node_ecr, "AKIDNODE", &cache, "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(out.accepted().auth[HOST].1, "node-fetched-password");
    assert_eq!(
        node_ecr.requests().len(),
        2,
        "the controller's call and the node's own"
    );
}

/// An entry whose expiry lies in 9999 (a future controller's bug, or anyone who can update the
/// Secret) is refused by `wait`; one left in a node's cache by an older version is not served by
/// the provider either; every answer's cacheDuration stays within the token's real life.
#[test]
fn an_entry_claiming_to_live_until_9999_is_never_believed() {
    if skip("an_entry_claiming_to_live_until_9999_is_never_believed") {
        return;
    }
    let dir = TempDir::new("fleet-sync-9999");
    let fake = ecr("real-node-password", 12 * 3600);
    let (name, bytes) = published(&fake, "real-node-password", "nodes", dir.path());
    let forever = edited(
        &bytes,
        &[
            ("expiresAt", 253_402_300_799_i64.into()),
            ("refreshAt", 253_402_300_000_i64.into()),
        ],
    );
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    let marker = filler("nodes", "marker");
    volume.publish(&[(&name, &forever), (&marker.0, &marker.1)]);
    let cache = dir.path().join("host-cache");
    let wait = Wait::start(&volume.dir, &cache, "nodes", "1h");
    eventually("the marker is copied", || cache.join(&marker.0).is_file());
    assert!(!cache.join(&name).exists());
    let out = provider(&fake, "AKIDNODE", &cache, "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(out.accepted().auth[HOST].1, "real-node-password");
    assert_eq!(fake.requests().len(), 2, "the node fetched its own");
    assert!(cache_seconds(&out) <= 6 * 3600, "{}", cache_seconds(&out));
    let (_, stderr) = wait.stop();
    assert!(
        stderr.contains(&format!(
            "warning: fleet token {name} not copied: it claims a longer life than the 12h an ECR token lives\n"
        )),
        "{stderr}"
    );

    // What an older version copied into the cache, unmarked: not served, fetched again.
    let planted = dir.path().join("planted");
    provider(&fake, "AKIDNODE", &planted, "nodes").request(ApiVersion::V1, IMAGE);
    let entry = kcp_testkit::cache::cache_entries(&planted, 1).remove(0);
    entry.set_expires_at(253_402_300_799);
    let out = provider(&fake, "AKIDNODE", &planted, "nodes").request(ApiVersion::V1, IMAGE);
    assert!(cache_seconds(&out) <= 6 * 3600, "{}", cache_seconds(&out));
    assert_eq!(fake.requests().len(), 4, "the planted entry was not served");
}

/// A bad publication that passes every bound (a wrong token, fetched "4 minutes from now", 12 h)
/// is corrected on every node within one sync once the Secret is: the Secret says what a copy is.
#[test]
fn a_corrected_secret_corrects_every_copy_within_one_sync() {
    if skip("a_corrected_secret_corrects_every_copy_within_one_sync") {
        return;
    }
    let dir = TempDir::new("fleet-sync-fix");
    let fake = ecr("good-fleet-password", 12 * 3600);
    let (name, good) = published(&fake, "good-fleet-password", "nodes", dir.path());
    let now = unix_now() as i64;
    kcp_testkit::secrets::register("wrong-fleet-password");
    let wrong = edited(
        &good,
        &[
            ("password", "wrong-fleet-password".into()),
            ("fetchedAt", (now + 240).into()),
            ("expiresAt", (now + 240 + 12 * 3600).into()),
            ("refreshAt", (now + 240 + 12 * 3600 - 300).into()),
        ],
    );
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    volume.publish(&[(&name, &wrong)]);
    let cache = dir.path().join("host-cache");
    let wait = Wait::start(&volume.dir, &cache, "nodes", "1h");
    let answer = || {
        provider(&fake, "AKIDNODE", &cache, "nodes")
            .request(ApiVersion::V1, IMAGE)
            .accepted()
            .auth[HOST]
            .1
            .clone()
    };
    eventually("the wrong entry is copied", || cache.join(&name).is_file());
    assert_eq!(answer(), "wrong-fleet-password");
    // The correction was fetched earlier and lives shorter: it replaces the copy all the same.
    volume.publish(&[(&name, &good)]);
    eventually("the correction is copied", || {
        std::fs::read_to_string(cache.join(&name)).is_ok_and(|t| t.contains("good-fleet-password"))
    });
    assert_eq!(answer(), "good-fleet-password");
    assert_eq!(fake.requests().len(), 1, "the controller's call only");
    let (code, _) = wait.stop();
    assert_eq!(code, Some(0));
}

/// A Secret that publishes 1,200 valid entries: the node keeps 100 copies, says so in one line,
/// and its own entries stay.
#[test]
fn a_secret_with_1200_entries_fills_at_most_100_copies_and_never_the_nodes_own() {
    if skip("a_secret_with_1200_entries_fills_at_most_100_copies_and_never_the_nodes_own") {
        return;
    }
    let dir = TempDir::new("fleet-sync-cap");
    let fake = ecr("own-node-password", 3600);
    let cache = dir.path().join("host-cache");
    // The node's own entry, fetched before any sync.
    provider(&fake, "AKIDNODE", &cache, "nodes")
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    let own = kcp_testkit::cache::cache_entries(&cache, 1).remove(0);
    let many: Vec<(String, Vec<u8>)> = (0..1200)
        .map(|i| filler("nodes", &format!("r-{i}")))
        .collect();
    let files: Vec<(&str, &[u8])> = many
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    volume.publish(&files);
    let mut wait = Wait::start(&volume.dir, &cache, "nodes", "1s");
    let lines = Lines::of(&mut wait.child);
    eventually("the copies are written", || {
        lines.count("100 entries written") == 1
    });
    // More rounds: the cap is said once.
    let marker = filler("other", "marker");
    let mut more = files.clone();
    more.push((&marker.0, &marker.1));
    volume.publish(&more);
    eventually("another round", || {
        lines.count(&format!("fleet token {} not copied", marker.0)) == 1
    });
    let (code, _) = wait.stop();
    assert_eq!(code, Some(0));
    let entries = kcp_testkit::cache::cache_entries(&cache, 101);
    assert!(
        entries
            .iter()
            .any(|e| e.path == own.path && e.text == own.text)
    );
    assert_eq!(
        lines.count("1100 fleet tokens not copied: the Secret publishes more than the 100 entries (1024 KiB) a node keeps"),
        1,
        "{}",
        lines.all()
    );
    // The node's provider still answers from its own entry.
    provider(&fake, "AKIDNODE", &cache, "nodes")
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    assert_eq!(fake.requests().len(), 1);
}

/// A controller pod with IRSA gets `AWS_STS_REGIONAL_ENDPOINTS=regional` (and may have an STS
/// endpoint) that the nodes do not have: neither is part of the shared key, so the nodes read
/// what it publishes; the key-only mode shows both sides compute the same entry.
#[test]
fn a_controller_with_irsas_sts_settings_publishes_what_nodes_read() {
    if skip("a_controller_with_irsas_sts_settings_publishes_what_nodes_read") {
        return;
    }
    let dir = TempDir::new("fleet-sync-irsa");
    let fake = ecr("irsa-fleet-password", 12 * 3600);
    let controller_cache = dir.path().join("controller");
    let irsa = |plugin: Plugin| {
        plugin
            .env("AWS_STS_REGIONAL_ENDPOINTS", "regional")
            .env("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9")
    };
    let out = irsa(provider(
        &fake,
        "AKIDCONTROLLER",
        &controller_cache,
        "nodes",
    ))
    .request(ApiVersion::V1, IMAGE);
    out.accepted();
    let entry = kcp_testkit::cache::cache_entries(&controller_cache, 1).remove(0);
    let name = entry
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // Key-only mode on both sides: the same file name, with no ECR call.
    let key_of = |plugin: Plugin| -> serde_json::Value {
        let out = plugin
            .env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true")
            .raw(&kcp_kubelet::protocol::encode_request(
                ApiVersion::V1,
                IMAGE,
                None,
                &Default::default(),
            ));
        assert_eq!(out.exec.exit_code, Some(0), "{}", out.stderr());
        serde_json::from_str(out.stdout().trim_end()).unwrap()
    };
    let node_cache = dir.path().join("node");
    let controller_key = key_of(irsa(provider(
        &fake,
        "AKIDCONTROLLER",
        &controller_cache,
        "nodes",
    )));
    let node_key = key_of(provider(&fake, "AKIDNODE", &node_cache, "nodes"));
    assert_eq!(controller_key["file"], serde_json::json!(name));
    assert_eq!(node_key, controller_key);
    assert_eq!(controller_key["kind"], "TokenCacheKey");
    assert_eq!(fake.requests().len(), 1);

    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    volume.publish(&[(&name, entry.text.as_bytes())]);
    let wait = Wait::start(&volume.dir, &node_cache, "nodes", "1h");
    eventually("the entry is copied", || node_cache.join(&name).is_file());
    let out = provider(&fake, "AKIDNODE", &node_cache, "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(out.accepted().auth[HOST].1, "irsa-fleet-password");
    assert_eq!(fake.requests().len(), 1, "the node answered from the copy");
    wait.stop();
}

/// Without fleet flags, `wait` only waits: the DaemonSet's main container as PID 1, which must
/// leave at once on SIGTERM (the image has no shell to sleep in).
#[test]
fn wait_exits_zero_on_sigterm() {
    if skip("wait_exits_zero_on_sigterm") {
        return;
    }
    let (code, stderr) = Wait::spawn(&[]).stop();
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
}

#[test]
fn fleet_flags_go_together_and_are_checked() {
    if skip("fleet_flags_go_together_and_are_checked") {
        return;
    }
    let run = |args: &[&str]| {
        let out = Command::new(common::checker())
            .arg("wait")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stderr).unwrap(),
            out.stdout,
        )
    };
    let (code, stderr, stdout) = run(&["--fleet-tokens=/x"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--token-cache-dir"), "{stderr}");
    assert!(stdout.is_empty());
    let (code, stderr, _) = run(&[
        "--fleet-tokens=/x",
        "--token-cache-dir=/y",
        "--token-cache-shared-identity=Bad Name",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("\"Bad Name\" is not a name"), "{stderr}");
    let (code, stderr, _) = run(&["--sync-interval=0s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--sync-interval must be at least 1s"),
        "{stderr}"
    );
}
