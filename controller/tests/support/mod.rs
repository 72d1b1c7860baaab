//! The controller's test harness: a recording fake of the API server endpoints it uses, a fake
//! ECR, and the controller binary run as a process with a kubeconfig pointing at the fake.
//!
//! The fake API server follows kube-apiserver where the controller depends on it:
//! - Secrets at `/api/v1/namespaces/NS/secrets/NAME`, Leases at
//!   `/apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME`; GET answers the object, PUT
//!   replaces it whole (the name in the body must match the path: 400 otherwise);
//! - every write bumps one store-wide `resourceVersion` (as etcd's revision does), and a PUT
//!   whose `metadata.resourceVersion` is not the current one is answered 409 with a `Status`
//!   whose reason is `Conflict` and whose message is kube-apiserver's ("the object has been
//!   modified; please apply your changes to the latest version and try again"); a PUT without
//!   one is an unconditional update, which kube-apiserver allows for both kinds;
//! - anything else is 404 with a `NotFound` `Status` (other methods on the two paths: 405);
//! - scripted faults answer the Nth call of a kind and method with 401, 403, 409 or 500 and the
//!   `Status` kube-apiserver sends for it, without touching the stored object.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use kcp_testkit::TempDir;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use serde_json::{Value, json};

pub const NS: &str = "kube-credential-providers";
pub const SECRET: &str = "kubelet-credential-provider-tokens";
pub const LEASE: &str = "kubelet-credential-provider-token-controller";
pub const BIN: &str = env!("CARGO_BIN_EXE_credential-provider-token-controller");
pub const ECR_HOST: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
pub const ME: &str = "controller-a";
/// How long any wait for the controller may take before the test fails (a hang, not a timing).
pub const PATIENCE: Duration = Duration::from_secs(90);

pub fn secret_path() -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{SECRET}")
}

pub fn lease_path() -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{LEASE}")
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// Which object a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Secret,
    Lease,
}

#[derive(Default)]
struct State {
    objects: BTreeMap<Kind, Value>,
    revision: u64,
    counts: BTreeMap<(Kind, String), u32>,
    faults: Vec<(Kind, String, u32, u16)>,
    /// Another holder renewing the Lease: every GET finds it renewed just now.
    live_holder: Option<String>,
}

/// The recording fake API server.
pub struct FakeApi {
    server: FakeServer,
    state: Arc<Mutex<State>>,
}

fn status(code: u16, reason: &str, message: &str) -> FakeResponse {
    FakeResponse::new(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code})
        .to_string(),
    )
    .header("content-type", "application/json")
}

fn fault(code: u16, kind: Kind) -> FakeResponse {
    let resource = if kind == Kind::Secret {
        "secrets"
    } else {
        "leases"
    };
    match code {
        401 => status(401, "Unauthorized", "Unauthorized"),
        403 => status(
            403,
            "Forbidden",
            &format!(
                "{resource} is forbidden: User \"system:serviceaccount:{NS}:token-controller\" cannot update resource \"{resource}\" in API group \"\" in the namespace \"{NS}\""
            ),
        ),
        404 => status(
            404,
            "NotFound",
            &format!(
                "{resource} \"{}\" not found",
                if kind == Kind::Secret { SECRET } else { LEASE }
            ),
        ),
        409 => conflict(resource, if kind == Kind::Secret { SECRET } else { LEASE }),
        c => status(c, "InternalError", "Internal error occurred: injected"),
    }
}

fn conflict(resource: &str, name: &str) -> FakeResponse {
    status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
        ),
    )
}

/// RFC 3339 with microseconds, as a Lease's MicroTime.
pub fn micro_time(unix: u64) -> String {
    let t = kcp_testkit::rfc3339(unix);
    t.replace('Z', ".000000Z")
}

impl FakeApi {
    /// The fake with the objects the manifests create: an empty Secret and a Lease without holder.
    pub fn start() -> FakeApi {
        let state = Arc::new(Mutex::new(State::default()));
        {
            let mut s = state.lock().unwrap();
            s.revision = 100;
            s.objects.insert(
                Kind::Secret,
                json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                       "metadata": {"name": SECRET, "namespace": NS, "uid": "uid-secret", "resourceVersion": "100"}}),
            );
            s.objects.insert(
                Kind::Lease,
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": LEASE, "namespace": NS, "uid": "uid-lease", "resourceVersion": "100"},
                       "spec": {}}),
            );
        }
        let shared = state.clone();
        let server = FakeServer::start(move |r| handle(&shared, r));
        FakeApi { server, state }
    }

    /// Every request so far (method, path, body).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The requests for one object and method.
    pub fn calls(&self, kind: Kind, method: &str) -> Vec<RecordedRequest> {
        let path = if kind == Kind::Secret {
            secret_path()
        } else {
            lease_path()
        };
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path() == path)
            .collect()
    }

    /// Answers the `nth` (1-based) `method` call on `kind` with `code`.
    pub fn fault(&self, kind: Kind, method: &str, nth: u32, code: u16) {
        self.state
            .lock()
            .unwrap()
            .faults
            .push((kind, method.to_owned(), nth, code));
    }

    /// The stored object.
    pub fn object(&self, kind: Kind) -> Value {
        self.state.lock().unwrap().objects[&kind].clone()
    }

    /// Replaces part of a stored object, as another writer would (bumping its resourceVersion).
    pub fn edit(&self, kind: Kind, change: impl FnOnce(&mut Value)) {
        let mut s = self.state.lock().unwrap();
        s.revision += 1;
        let revision = s.revision.to_string();
        let object = s.objects.get_mut(&kind).unwrap();
        change(object);
        object["metadata"]["resourceVersion"] = json!(revision);
    }

    /// The Secret's data, decoded.
    pub fn secret_data(&self) -> BTreeMap<String, Vec<u8>> {
        let secret = self.object(Kind::Secret);
        secret["data"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        // The published bytes, base64 as the Secret carries them: never in a log.
                        kcp_testkit::secrets::register(v.as_str().unwrap());
                        (k.clone(), unb64(v.as_str().unwrap()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Puts entries into the Secret as another writer would.
    pub fn set_secret_data(&self, data: &BTreeMap<String, Vec<u8>>) {
        let encoded: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.clone(), json!(b64(v))))
            .collect();
        self.edit(Kind::Secret, |s| s["data"] = Value::Object(encoded));
    }

    /// The Lease's spec.
    pub fn lease_spec(&self) -> Value {
        self.object(Kind::Lease)["spec"].clone()
    }

    /// Another holder that renews the Lease (every GET finds it renewed just now), or none.
    pub fn live_holder(&self, holder: Option<&str>) {
        self.state.lock().unwrap().live_holder = holder.map(str::to_owned);
    }

    /// The kubeconfig a client uses to reach this fake.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\nusers:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {NS}\ncurrent-context: fake\n",
                self.server.url()
            ),
        )
        .unwrap();
        path
    }
}

fn handle(state: &Mutex<State>, request: &RecordedRequest) -> FakeResponse {
    let kind = if request.path() == secret_path() {
        Kind::Secret
    } else if request.path() == lease_path() {
        Kind::Lease
    } else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let mut s = state.lock().unwrap();
    let count = {
        let c = s.counts.entry((kind, request.method.clone())).or_insert(0);
        *c += 1;
        *c
    };
    if let Some(&(_, _, _, code)) = s
        .faults
        .iter()
        .find(|(k, m, n, _)| *k == kind && *m == request.method && *n == count)
    {
        return fault(code, kind);
    }
    let (resource, name) = if kind == Kind::Secret {
        ("secrets", SECRET)
    } else {
        ("leases", LEASE)
    };
    match request.method.as_str() {
        "GET" => {
            if kind == Kind::Lease
                && let Some(holder) = s.live_holder.clone()
            {
                s.revision += 1;
                let revision = s.revision.to_string();
                let now = micro_time(kcp_testkit::unix_now());
                let lease = s.objects.get_mut(&Kind::Lease).unwrap();
                lease["spec"]["holderIdentity"] = json!(holder);
                lease["spec"]["leaseDurationSeconds"] = json!(15);
                lease["spec"]["renewTime"] = json!(now);
                lease["metadata"]["resourceVersion"] = json!(revision);
            }
            FakeResponse::json(s.objects[&kind].to_string())
        }
        "PUT" => {
            let Ok(mut body) = serde_json::from_slice::<Value>(&request.body) else {
                return status(400, "BadRequest", "the body is not JSON");
            };
            if body["metadata"]["name"] != json!(name) {
                return status(
                    400,
                    "BadRequest",
                    "the name of the object does not match the name on the URL",
                );
            }
            let current = s.objects[&kind]["metadata"]["resourceVersion"].clone();
            let sent = &body["metadata"]["resourceVersion"];
            if !sent.is_null() && *sent != current {
                return conflict(resource, name);
            }
            s.revision += 1;
            body["metadata"]["resourceVersion"] = json!(s.revision.to_string());
            body["metadata"]["uid"] = s.objects[&kind]["metadata"]["uid"].clone();
            s.objects.insert(kind, body.clone());
            FakeResponse::json(body.to_string())
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
    }
}

/// A fake ECR answering GetAuthorizationToken with `AWS:<prefix>-<n>` (n counts calls), valid
/// for `life` seconds from now; with `fail` set it answers 500 instead.
pub struct FakeEcr {
    pub server: FakeServer,
    fail: Arc<Mutex<bool>>,
}

impl FakeEcr {
    pub fn start(prefix: &str, life: u64) -> FakeEcr {
        let fail = Arc::new(Mutex::new(false));
        let counter = Arc::new(Mutex::new(0u32));
        let (failing, prefix) = (fail.clone(), prefix.to_owned());
        let server = FakeServer::start(move |_| {
            if *failing.lock().unwrap() {
                return FakeResponse::new(
                    500,
                    r#"{"__type":"ServerException","message":"injected"}"#,
                )
                .header("content-type", "application/x-amz-json-1.1");
            }
            let n = {
                let mut c = counter.lock().unwrap();
                *c += 1;
                *c
            };
            let password = format!("{prefix}-{n}-ecr-token-value");
            kcp_testkit::secrets::register(&password);
            let token = b64(format!("AWS:{password}").as_bytes());
            kcp_testkit::secrets::register(&token);
            FakeResponse::json(format!(
                r#"{{"authorizationData":[{{"authorizationToken":"{token}","expiresAt":{},"proxyEndpoint":"https://{ECR_HOST}"}}]}}"#,
                kcp_testkit::unix_now() + life
            ))
            .header("content-type", "application/x-amz-json-1.1")
        });
        FakeEcr { server, fail }
    }

    pub fn set_failing(&self, failing: bool) {
        *self.fail.lock().unwrap() = failing;
    }

    pub fn calls(&self) -> usize {
        self.server.requests().len()
    }
}

/// A provider binary of the workspace, the controller's sibling in the target directory (the
/// cross-built one under scripts/cross-test).
pub fn provider_binary(name: &str) -> PathBuf {
    let path = Path::new(BIN).parent().unwrap().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build it first (cargo build -p {name}; cargo test --workspace does)",
        path.display()
    );
    kcp_testkit::binary_under_test(path)
}

/// The workspace's ECR provider.
pub fn ecr_binary() -> PathBuf {
    provider_binary("ecr-credential-provider")
}

/// The environment the ECR provider needs to reach `ecr`, as a config's `env` list.
pub fn ecr_env(ecr: &FakeEcr) -> Vec<(String, String)> {
    vec![
        ("AWS_ACCESS_KEY_ID".into(), "AKIDTESTSTATIC".into()),
        (
            "AWS_SECRET_ACCESS_KEY".into(),
            "static-secret-key-value".into(),
        ),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
        ("AWS_ENDPOINT_URL_ECR".into(), ecr.server.url()),
    ]
}

/// One target of a config file.
pub struct TargetSpec {
    pub provider: &'static str,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub image: String,
}

impl TargetSpec {
    /// The ECR provider against `ecr`, for an image of [`ECR_HOST`].
    pub fn ecr(ecr: &FakeEcr) -> TargetSpec {
        kcp_testkit::secrets::register("static-secret-key-value");
        TargetSpec {
            provider: "ecr",
            command: ecr_binary(),
            args: Vec::new(),
            env: ecr_env(ecr),
            image: format!("{ECR_HOST}/app"),
        }
    }

    /// A config file with this one target, named `<provider>-prod`, for the shared identity `nodes`.
    pub fn config(&self, dir: &Path) -> PathBuf {
        let quote = |s: &str| serde_json::to_string(s).unwrap();
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{{name: {k}, value: {}}}", quote(v)))
            .collect();
        let args: Vec<String> = self.args.iter().map(|a| quote(a)).collect();
        let path = dir.join("config.yaml");
        std::fs::write(
            &path,
            format!(
                "sharedIdentity: nodes\ntargets:\n  - name: {}-prod\n    provider: {}\n    command: {}\n    args: [{}]\n    env: [{}]\n    image: {}\n",
                self.provider,
                self.provider,
                quote(&self.command.display().to_string()),
                args.join(", "),
                env.join(", "),
                self.image
            ),
        )
        .unwrap();
        path
    }

    /// The entry file name a node computes for this target: the provider run with the shared
    /// identity and a cache directory of its own, and the one entry it wrote listed. `home` is
    /// the controller's `HOME`: until providers know the shared identity, the node identity they
    /// use instead depends on the environment, so it is kept equal.
    pub fn shared_stem_file(&self, home: &Path) -> String {
        let dir = TempDir::new("ctl-stem");
        let mut exec = kcp_kubelet_emulation::exec::PluginExec::new(&self.command);
        exec.clear_env = true;
        exec.args = self.args.clone();
        exec.env = self.env.clone();
        exec.env.extend([
            (
                "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR".into(),
                dir.path().display().to_string(),
            ),
            (
                "CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY".into(),
                "nodes".into(),
            ),
            ("HOME".into(), home.display().to_string()),
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ]);
        let request = kcp_kubelet::protocol::encode_request(
            kcp_kubelet::protocol::ApiVersion::V1,
            &self.image,
            None,
            &BTreeMap::new(),
        );
        let outcome = exec.run(&request);
        assert_eq!(
            outcome.exit_code,
            Some(0),
            "{}",
            String::from_utf8_lossy(&outcome.stderr)
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        names[0].clone()
    }
}

/// A config file with one ECR target named `ecr-prod`.
pub fn ecr_config(dir: &Path, ecr: &FakeEcr) -> PathBuf {
    TargetSpec::ecr(ecr).config(dir)
}

/// An entry in the token cache's layout.
pub fn entry_bytes(password: &str, fetched_at: u64, expires_at: u64) -> Vec<u8> {
    kcp_testkit::secrets::register(password);
    format!(
        r#"{{"version":1,"key":"v1;provider=ecr","username":"AWS","password":"{password}","expiresAt":{expires_at},"fetchedAt":{fetched_at},"refreshAt":{}}}"#,
        expires_at.saturating_sub(300)
    )
    .into_bytes()
}

/// The fields of a published entry.
pub fn parse_entry(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "expiresAt",
            "fetchedAt",
            "key",
            "password",
            "refreshAt",
            "username",
            "version"
        ],
        "an entry in the token cache's layout"
    );
    assert_eq!(v["version"], 1);
    v
}

/// What most tests start from: a directory, the fake API server, a fake ECR whose tokens (named
/// after `prefix`) live `life` seconds, and a config with one ECR target for it.
pub struct World {
    pub dir: TempDir,
    pub api: FakeApi,
    pub ecr: FakeEcr,
    pub config: PathBuf,
}

impl World {
    pub fn new(prefix: &str, life: u64) -> World {
        let dir = TempDir::new(&format!("ctl-{prefix}"));
        let api = FakeApi::start();
        let ecr = FakeEcr::start(prefix, life);
        let config = ecr_config(dir.path(), &ecr);
        World {
            dir,
            api,
            ecr,
            config,
        }
    }

    /// [`command`] for this world.
    pub fn command(&self) -> Command {
        command(&self.api, self.dir.path(), &self.config)
    }
}

/// The controller as a process: hermetic environment, short durations, stderr collected live.
pub struct Controller {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// The command line every test starts from: short Lease durations so takeovers happen fast.
pub fn command(api: &FakeApi, dir: &Path, config: &Path) -> Command {
    let mut command = Command::new(kcp_testkit::binary_under_test(BIN));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("KUBECONFIG", api.kubeconfig(dir))
        .args([
            "--config",
            &config.display().to_string(),
            "--identity",
            ME,
            "--work-dir",
            &dir.join("work").display().to_string(),
            "--lease-duration=4s",
            "--renew-deadline=3s",
            "--retry-period=200ms",
            "--failure-backoff=200ms",
            "--api-timeout=5s",
        ]);
    command
}

/// Runs `--once` to the end: (exit code, stderr).
pub fn once(mut command: Command) -> (i32, String) {
    let output = command.arg("--once").stdin(Stdio::null()).output().unwrap();
    assert!(
        output.stdout.is_empty(),
        "nothing on stdout: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_clean(&stderr);
    (output.status.code().expect("exited, not killed"), stderr)
}

/// Fails when `stderr` holds a secret a fake issued, or a line that is not one log entry.
pub fn assert_clean(stderr: &str) {
    let leaked = kcp_testkit::secrets::leaked_in(stderr);
    assert!(leaked.is_empty(), "secrets in stderr: {leaked:?}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

impl Controller {
    pub fn start(mut command: Command) -> Controller {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Controller {
            child,
            lines,
            reader: Some(reader),
        }
    }

    /// Everything on stderr so far.
    pub fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits until `done` holds (checked every 50 ms); fails the test after [`PATIENCE`] or if
    /// the controller exits.
    pub fn wait_until(&mut self, what: &str, mut done: impl FnMut(&Controller) -> bool) {
        let start = Instant::now();
        while !done(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the controller exited ({status}) while waiting for {what}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                start.elapsed() < PATIENCE,
                "never saw {what}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for a stderr line containing `text`.
    pub fn wait_for_line(&mut self, text: &str) {
        let text = text.to_owned();
        self.wait_until(&format!("a line with {text:?}"), |c| {
            c.stderr().contains(&text)
        });
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then waits for the exit: (status, stderr).
    pub fn terminate(mut self) -> (ExitStatus, String) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let status = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let stderr = self.stderr();
        assert_clean(&stderr);
        (status, stderr)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
