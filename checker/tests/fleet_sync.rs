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

use base64::Engine as _;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::{Plugin, TempDir, unix_now};

const HOST: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
const IMAGE: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com/app:1";

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(test, "wait runs in the Linux DaemonSet only")
}

/// A fake ECR answering every GetAuthorizationToken with `AWS:<password>`.
fn ecr(password: &str, life: u64) -> FakeServer {
    kcp_testkit::secrets::register(password);
    let token = base64::engine::general_purpose::STANDARD.encode(format!("AWS:{password}"));
    let body = format!(
        r#"{{"authorizationData":[{{"authorizationToken":"{token}","expiresAt":{},"proxyEndpoint":"https://{HOST}"}}]}}"#,
        unix_now() + life
    );
    FakeServer::start(move |_| {
        FakeResponse::json(body.clone()).header("content-type", "application/x-amz-json-1.1")
    })
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
    let entry = kcp_testkit::cache::cache_entries(&cache, 1).remove(0);
    let name = entry
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    (name, entry.text.into_bytes())
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
        let mut child = Command::new(common::checker())
            .arg("wait")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
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
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
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
    // early, never later than the published one).
    let copied: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.join(&name)).unwrap()).unwrap();
    let original: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
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

    // The node's provider, with its own (other) credentials, answers from it: no ECR call.
    let out = provider(&fleet_ecr, "AKIDNODE", &cache, "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.accepted().auth[HOST],
        ("AWS".to_owned(), "fleet-published-password".to_owned())
    );
    assert_eq!(fleet_ecr.requests().len(), 1, "the controller's call only");
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

    // The Secret emptied (the controller's entries dropped): the node keeps what it has.
    volume.publish(&[]);
    let (code, stderr) = wait.stop();
    assert_eq!(code, Some(0));
    assert!(cache.join(&name).is_file());
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

#[test]
fn a_corrupt_or_expired_entry_is_refused_and_the_node_fetches_on_its_own() {
    if skip("a_corrupt_or_expired_entry_is_refused_and_the_node_fetches_on_its_own") {
        return;
    }
    let dir = TempDir::new("fleet-sync-bad");
    let node_ecr = ecr("node-fetched-password", 12 * 3600);
    let (name, bytes) = published(&node_ecr, "node-fetched-password", "nodes", dir.path());
    let mut expired: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let now = unix_now() as i64;
    expired["expiresAt"] = (now + 30).into();
    expired["refreshAt"] = (now - 10).into();
    let mut volume = Volume::new(dir.path().join("fleet-tokens"));
    volume.publish(&[
        (&name, &serde_json::to_vec(&expired).unwrap()),
        ("0123456789abcdef0123456789abcdef.json", b"{not json"),
    ]);
    let cache = dir.path().join("host-cache");
    let wait = Wait::start(&volume.dir, &cache, "nodes", "1s");
    eventually("the cache directory exists", || cache.is_dir());
    // Two rounds at least (the interval is a second), so the refusals are final.
    std::thread::sleep(Duration::from_millis(2500));
    let (code, stderr) = wait.stop();
    assert_eq!(code, Some(0));
    assert!(!cache.join(&name).exists());
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("fleet token {name} not copied: ")))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.ends_with("s of life left, less than the margin"),
        "{line}"
    );
    assert!(
        stderr.contains("fleet token 0123456789abcdef0123456789abcdef.json not copied: not a token cache entry (line 1, column 2)"),
        "{stderr}"
    );
    // The node fetches on its own, as without fleet mode.
    let out = provider(&node_ecr, "AKIDNODE", &cache, "nodes").request(ApiVersion::V1, IMAGE);
    assert_eq!(out.accepted().auth[HOST].1, "node-fetched-password");
    assert_eq!(
        node_ecr.requests().len(),
        2,
        "the controller's call and the node's own"
    );
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
