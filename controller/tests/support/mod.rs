//! The controller's test harness: a recording fake of the API server endpoints it uses
//! (`fake_api`, which says which kube-apiserver behaviour it follows), a fake ECR, script
//! providers, and the controller binary run as a process with a kubeconfig pointing at the fake.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

mod fake_api;

pub use fake_api::*;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use kcp_testkit::TempDir;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use serde_json::Value;

pub const NS: &str = "kube-credential-providers";
pub const SECRET: &str = "kubelet-credential-provider-tokens";
pub const LEASE: &str = "kubelet-credential-provider-token-controller";
pub const BIN: &str = env!("CARGO_BIN_EXE_credential-provider-token-controller");
pub const ECR_HOST: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
pub const ME: &str = "controller-a";
/// How long any wait for the controller may take before the test fails (a hang, not a timing).
pub const PATIENCE: Duration = Duration::from_secs(90);

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
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
        config_of(dir, &[(&format!("{}-prod", self.provider), self)])
    }

    /// This target's item in a config's `targets`, named `name`.
    fn item(&self, name: &str) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap();
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{{name: {k}, value: {}}}", quote(v)))
            .collect();
        let args: Vec<String> = self.args.iter().map(|a| quote(a)).collect();
        format!(
            "  - name: {name}\n    provider: {}\n    command: {}\n    args: [{}]\n    env: [{}]\n    image: {}\n",
            self.provider,
            quote(&self.command.display().to_string()),
            args.join(", "),
            env.join(", "),
            self.image
        )
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

/// A config file with these targets (name, target) for the shared identity `nodes`.
pub fn config_of(dir: &Path, targets: &[(&str, &TargetSpec)]) -> PathBuf {
    let items: String = targets.iter().map(|(name, t)| t.item(name)).collect();
    let path = dir.join("config.yaml");
    std::fs::write(&path, format!("sharedIdentity: nodes\ntargets:\n{items}")).unwrap();
    path
}

/// A provider written as a shell script, for entries the real ones do not make: in key-only
/// mode it prints the line for `FAKE_KEY`/`FAKE_FILE` (from its `env`); otherwise it writes an
/// entry for that key with a password of `FAKE_SIZE` bytes, valid for an hour, and answers for
/// the host `FAKE_HOST`.
pub fn script_provider(dir: &Path) -> PathBuf {
    let path = dir.join("script-provider");
    std::fs::write(
        &path,
        r#"#!/bin/sh
cat > /dev/null
if [ "$CREDENTIAL_PROVIDER_PRINT_CACHE_KEY" = true ]; then
  printf '{"kind":"TokenCacheKey","file":"%s","key":"%s"}\n' "$FAKE_FILE" "$FAKE_KEY"
  exit 0
fi
now=$(date +%s)
umask 077
password=$(head -c "$FAKE_SIZE" /dev/zero | tr '\0' p)
printf '{"version":1,"key":"%s","username":"AWS","password":"%s","expiresAt":%d,"fetchedAt":%d,"refreshAt":%d}' \
  "$FAKE_KEY" "$password" $((now + 3600)) "$now" $((now + 1800)) > "$CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR/$FAKE_FILE"
printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"30m","auth":{"%s":{"username":"AWS","password":"x"}}}\n' "$FAKE_HOST"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

impl TargetSpec {
    /// [`script_provider`] for the ECR key of `region`, with `size`-byte passwords.
    pub fn script(command: &Path, region: &str, size: usize) -> TargetSpec {
        use kcp_plugin::token_cache::{CacheKey, Issuer};
        let key = CacheKey::new(Issuer::Ecr).scope("region", region);
        let host = format!("123456789012.dkr.ecr.{region}.amazonaws.com");
        TargetSpec {
            provider: "ecr",
            command: command.to_owned(),
            args: Vec::new(),
            env: vec![
                ("FAKE_KEY".into(), key.canonical()),
                ("FAKE_FILE".into(), key.file_name()),
                ("FAKE_SIZE".into(), size.to_string()),
                ("FAKE_HOST".into(), host.clone()),
            ],
            image: format!("{host}/app"),
        }
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

/// The durations every test runs with: short, so takeovers happen fast; the API timeout shorter
/// than the lease duration minus the renew deadline, as the controller requires.
pub const DURATIONS: [&str; 5] = [
    "--lease-duration=6s",
    "--renew-deadline=3s",
    "--retry-period=200ms",
    "--failure-backoff=200ms",
    "--api-timeout=2s",
];

/// The command line every test starts from: [`command_with`] the [`DURATIONS`].
pub fn command(api: &FakeApi, dir: &Path, config: &Path) -> Command {
    command_with(api, dir, config, &DURATIONS)
}

/// The controller with a hermetic environment, its work directory in `dir`, and `durations`.
pub fn command_with(api: &FakeApi, dir: &Path, config: &Path, durations: &[&str]) -> Command {
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
        ])
        .args(durations);
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
