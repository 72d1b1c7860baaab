//! Azure Arc managed identity end to end, against a fake of the Connected Machine agent's
//! endpoint and its challenge-file handshake: exact requests, the key file checks, exact answers.
//! The agent's token directory is a temporary one through `ACR_ARC_TOKEN_DIR`.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Plugin, TempDir};
use support::*;

const CONFIG: &str =
    r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true}"#;
const ARC_KEY: &str = "arc-challenge-key-Xk5c0ffee";
const ARC_TOKEN: &str = "arc-access-token-Rr88";
const IMAGE: &str = "myreg.azurecr.io/app";

/// A fake agent: the first request gets a 401 naming `realm`; one with `Basic <ARC_KEY>` a token.
struct Agent {
    world: World,
    server: FakeServer,
    realm: Arc<Mutex<String>>,
    dir: TempDir,
}

impl Agent {
    fn new() -> Agent {
        kcp_testkit::secrets::register(ARC_KEY);
        let realm = Arc::new(Mutex::new(String::new()));
        let r = realm.clone();
        let server = FakeServer::start(move |req| {
            if req.path() != "/metadata/identity/oauth2/token" {
                return FakeResponse::new(404, "{}");
            }
            match req.header("authorization") {
                None => FakeResponse::new(401, r#"{"error":"unauthorized"}"#).header(
                    "www-authenticate",
                    &format!("Basic realm={}", r.lock().unwrap()),
                ),
                Some(auth) if auth == format!("Basic {ARC_KEY}") => FakeResponse::json(format!(
                    r#"{{"access_token":"{ARC_TOKEN}","expires_in":"3599","expires_on":"{}","resource":"https://containerregistry.azure.net","token_type":"Bearer"}}"#,
                    now() + 3599
                )),
                Some(_) => FakeResponse::new(401, r#"{"error":"bad key"}"#),
            }
        });
        let dir = TempDir::new("arc-tokens");
        Agent {
            world: World::new(),
            server,
            realm,
            dir,
        }
    }

    /// The agent's token directory.
    fn tokens(&self) -> PathBuf {
        let tokens = self.dir.path().join("tokens");
        std::fs::create_dir_all(&tokens).unwrap();
        tokens
    }

    /// Writes a key file and points the challenge at `path`.
    fn challenge(&self, path: &Path, content: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self.point_at(path);
    }

    fn point_at(&self, path: &Path) {
        *self.realm.lock().unwrap() = plugin_path(path);
    }

    fn plugin(&self) -> Plugin {
        self.world
            .plugin(CONFIG)
            .env(
                "IDENTITY_ENDPOINT",
                format!("{}/metadata/identity/oauth2/token", self.server.url()),
            )
            .env("IMDS_ENDPOINT", self.server.url())
            .env("ACR_ARC_TOKEN_DIR", self.tokens().display().to_string())
    }

    /// Runs the plugin and returns its one error line; asserts the key was never sent.
    fn refused(&self, words: &str) -> String {
        let line = self.plugin().request(ApiVersion::V1, IMAGE).rejected();
        assert!(
            line.contains("Azure Arc managed identity at http://127.0.0.1:")
                && line.contains("refusing the challenge: ")
                && line.contains(words),
            "{line}"
        );
        let requests = self.server.requests();
        assert_eq!(requests.len(), 1, "no second request: {requests:?}");
        assert!(requests[0].header("authorization").is_none());
        assert!(
            !self
                .world
                .registry_calls()
                .iter()
                .any(|(_, p)| p == "/oauth2/exchange")
        );
        line
    }
}

/// A path as the plugin under test spells it: a Windows binary under wine sees the host's `/` as
/// drive `Z:`, and only a path with a drive is absolute there.
fn plugin_path(path: &Path) -> String {
    let text = path.display().to_string();
    if kcp_testkit::windows_target() && text.starts_with('/') {
        format!("Z:{}", text.replace('/', "\\"))
    } else {
        text
    }
}

/// Whether files this process writes are root-owned, as the agent's key files are.
fn running_as_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// `true` (skip the test) when not root: the agent's key file must be root-owned. A failure
/// under `KCP_REQUIRE_ALL=1` (CI, which runs as root).
fn skip_unless_root() -> bool {
    if running_as_root() {
        return false;
    }
    kcp_testkit::skip::missing("root", "the agent's key file must be root-owned");
    true
}

fn assert_agent_request(request: &RecordedRequest, authorization: Option<&str>) {
    assert_eq!(request.method, "GET");
    assert_eq!(request.path(), "/metadata/identity/oauth2/token");
    assert_eq!(
        query(request),
        fields(&[
            ("api-version", "2020-06-01"),
            ("resource", "https://containerregistry.azure.net"),
        ])
    );
    assert_eq!(request.header("metadata"), Some("true"));
    assert_eq!(request.header("authorization"), authorization);
}

#[test]
fn the_handshake_reads_the_key_and_retries_once_with_it() {
    if skip_unless_root() {
        return;
    }
    let agent = Agent::new();
    // A trailing newline, as files written by hand have, is not part of the key.
    agent.challenge(
        &agent.tokens().join("a1b2.key"),
        format!("{ARC_KEY}\n").as_bytes(),
    );
    let out = agent
        .plugin()
        .args(["--v=6"])
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    let refresh = agent.world.last_refresh();
    let duration = cache_duration_of(&out.stdout());
    assert_eq!(
        out.stdout(),
        token_answer(
            "credentialprovider.kubelet.k8s.io/v1",
            &duration,
            &["myreg.azurecr.io"],
            &refresh
        )
    );
    let requests = agent.server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_agent_request(&requests[0], None);
    let basic = format!("Basic {ARC_KEY}");
    assert_agent_request(&requests[1], Some(&basic));
    assert_exchange(
        &agent.world,
        "myreg.azurecr.io",
        ARC_TOKEN,
        Some("tenant-1"),
    );
    assert!(agent.world.entra.requests().is_empty());
    assert!(
        !agent
            .world
            .proxy
            .targets()
            .iter()
            .any(|t| t.contains(&agent.server.addr().port().to_string())),
        "the agent is never reached through the proxy"
    );
    assert!(out.stderr().contains("Azure Arc"), "--v=6 logs the source");
    assert_no_secret(&out.stderr(), &[ARC_KEY, ARC_TOKEN, &refresh]);
    assert!(!out.stdout().contains(ARC_KEY) && !out.stdout().contains(ARC_TOKEN));
}

#[test]
fn a_challenge_outside_the_token_directory_is_refused() {
    let agent = Agent::new();
    let outside = agent.dir.path().join("elsewhere").join("a.key");
    agent.challenge(&outside, ARC_KEY.as_bytes());
    agent.refused("is not in the token directory");
    // A `..` that climbs out is the same thing.
    let agent = Agent::new();
    let outside = agent.dir.path().join("a.key");
    std::fs::write(&outside, ARC_KEY).unwrap();
    agent.point_at(&agent.tokens().join("..").join("a.key"));
    agent.refused("is not in the token directory");
    // And a relative path.
    let agent = Agent::new();
    agent.tokens();
    *agent.realm.lock().unwrap() = "tokens/a.key".into();
    agent.refused("is not an absolute path");
}

#[test]
fn a_symlink_out_of_the_token_directory_is_refused() {
    if kcp_testkit::skip_on_windows(
        "a_symlink_out_of_the_token_directory_is_refused",
        "creating symlinks needs a privilege Windows test runs do not have",
    ) {
        return;
    }
    #[cfg(unix)]
    {
        let agent = Agent::new();
        let target = agent.dir.path().join("secret.key");
        std::fs::write(&target, ARC_KEY).unwrap();
        let link = agent.tokens().join("link.key");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        agent.point_at(&link);
        agent.refused("is not a regular file");
        // A symlinked directory inside the token directory leads out just the same.
        let agent = Agent::new();
        let elsewhere = agent.dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("b.key"), ARC_KEY).unwrap();
        std::os::unix::fs::symlink(&elsewhere, agent.tokens().join("sub")).unwrap();
        agent.point_at(&agent.tokens().join("sub").join("b.key"));
        agent.refused("is not in the token directory");
    }
}

#[test]
fn an_oversized_or_misnamed_or_missing_key_file_is_refused() {
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("big.key"), &[b'k'; 4097]);
    agent.refused("is larger than 4096 bytes");
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("a.txt"), ARC_KEY.as_bytes());
    agent.refused("does not end in .key");
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("a.key.bak"), ARC_KEY.as_bytes());
    agent.refused("does not end in .key");
    let agent = Agent::new();
    std::fs::create_dir_all(agent.tokens().join("dir.key")).unwrap();
    agent.point_at(&agent.tokens().join("dir.key"));
    agent.refused("is not a regular file");
    let agent = Agent::new();
    agent.point_at(&agent.tokens().join("gone.key"));
    agent.refused("cannot read the key file");
}

#[test]
fn a_key_file_not_owned_by_root_is_refused() {
    if kcp_testkit::skip_on_windows(
        "a_key_file_not_owned_by_root_is_refused",
        "Windows key files are protected by their directory's ACL, not an owner uid",
    ) {
        return;
    }
    #[cfg(unix)]
    {
        if !running_as_root() {
            return kcp_testkit::skip::missing("root", "chown to another uid");
        }
        let agent = Agent::new();
        let key = agent.tokens().join("a.key");
        agent.challenge(&key, ARC_KEY.as_bytes());
        std::os::unix::fs::chown(&key, Some(65534), Some(65534)).unwrap();
        agent.refused("is owned by uid 65534, not root");
    }
}

#[test]
fn a_user_assigned_identity_is_refused_on_arc() {
    let agent = Agent::new();
    let line = agent
        .world
        .plugin(r#"{"useManagedIdentityExtension":true,"userAssignedIdentityID":"uami-client"}"#)
        .env(
            "IDENTITY_ENDPOINT",
            format!("{}/metadata/identity/oauth2/token", agent.server.url()),
        )
        .env("IMDS_ENDPOINT", agent.server.url())
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains(
            "names the user-assigned identity uami-client, but this is an Azure Arc machine"
        ) && line.contains("remove userAssignedIdentityID"),
        "{line}"
    );
    assert!(agent.server.requests().is_empty());
}

#[test]
fn a_rejected_key_is_one_line_naming_the_agent() {
    if skip_unless_root() {
        return;
    }
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("a.key"), b"not-the-key-Qw19");
    kcp_testkit::secrets::register("not-the-key-Qw19");
    let line = agent.plugin().request(ApiVersion::V1, IMAGE).rejected();
    assert!(
        line.contains("the key file was not accepted (HTTP 401)"),
        "{line}"
    );
    assert_eq!(
        agent.server.requests().len(),
        2,
        "one retry with the key, no more"
    );
}

/// At the highest verbosity, success or refusal, the key and the agent's token never reach
/// stderr (the kit also scans every run for them), nor stdout.
#[test]
fn neither_key_nor_token_reaches_the_logs() {
    if skip_unless_root() {
        return;
    }
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("a.key"), ARC_KEY.as_bytes());
    let out = agent
        .plugin()
        .args(["--v=10"])
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    assert_no_secret(
        &out.stderr(),
        &[ARC_KEY, ARC_TOKEN, &agent.world.last_refresh()],
    );
    assert!(!out.stdout().contains(ARC_KEY) && !out.stdout().contains(ARC_TOKEN));
    // Refused (not a .key file): the contents of the file named are not quoted.
    let agent = Agent::new();
    agent.challenge(&agent.tokens().join("a.pem"), ARC_KEY.as_bytes());
    let out = agent
        .plugin()
        .args(["--v=10"])
        .request(ApiVersion::V1, IMAGE);
    // Many lines at --v=10: the failure is the exit code and an empty stdout.
    assert_eq!(out.exec.exit_code, Some(1), "{}", out.stderr());
    assert_eq!(out.stdout(), "");
    assert_no_secret(&out.stderr(), &[ARC_KEY]);
}

/// The key is only ever sent to a local agent: an `IDENTITY_ENDPOINT` elsewhere is refused
/// before any request.
#[test]
fn a_non_local_endpoint_is_refused() {
    let agent = Agent::new();
    let line = agent
        .plugin()
        .env(
            "IDENTITY_ENDPOINT",
            "http://agent.example.com:40342/metadata/identity/oauth2/token",
        )
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("Azure Arc: IDENTITY_ENDPOINT http://agent.example.com:40342/metadata/identity/oauth2/token is not a local address"),
        "{line}"
    );
    assert!(agent.server.requests().is_empty());
    assert!(
        agent
            .world
            .proxy
            .targets()
            .iter()
            .all(|t| !t.contains("agent.example.com"))
    );
}
