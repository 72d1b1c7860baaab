//! The kubelet's side of the exec protocol, reproduced: run a plugin as the kubelet does and judge
//! its output as the kubelet's strict decoder would.
//!
//! The kubelet hides why it rejected an answer (every decode failure reads "error decoding
//! credential provider plugin response from stdout"). This module returns both the kubelet's exact
//! message and the real cause, so tests and the config checker can say what the kubelet would do and
//! why. Facts: docs/kubelet-contract.md, “Exec”, “Decoding a response” and “Matching”.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use crate::stdout_shape::{self, escape_controls};
use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::matching;
use kcp_kubelet::protocol::{ApiVersion, CacheKeyType, GROUP, RESPONSE_KIND};

/// The kubelet's fixed plugin timeout.
pub const KUBELET_EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// How long to wait for stdout/stderr to close after the plugin exited. Go's kubelet waits forever
/// (`WaitDelay` unset); we stop and report the grandchild that holds them open.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// How much of a plugin's stdout is read. The kubelet reads without limit, but an answer is a few
/// hundred bytes (a few KiB with many `auth` entries): more is a plugin writing something else to
/// stdout. Past this the plugin and its process group are killed and the outcome says
/// [`ExecOutcome::stdout_overflow`], so nothing hangs and memory stays bounded.
pub const MAX_STDOUT_BYTES: usize = 1024 * 1024;

/// How much of a plugin's stderr is kept; the rest is read and dropped (the plugin is not
/// stopped for logging too much), with a note saying how much.
pub const MAX_STDERR_BYTES: usize = 1024 * 1024;

/// The kubelet's message for every strict-decoding failure.
pub const DECODE_ERROR: &str = "error decoding credential provider plugin response from stdout";

/// A response the kubelet would accept, as it sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedResponse {
    /// The response's apiVersion (equal to the request's).
    pub api_version: ApiVersion,
    /// `cacheKeyType`: which images the kubelet reuses this answer for (one image, its registry, or
    /// every match).
    pub cache_key_type: CacheKeyType,
    /// `None` means the config's `defaultCacheDuration` applies.
    pub cache_duration: Option<GoDuration>,
    /// Auth key → (username, password).
    pub auth: BTreeMap<String, (String, String)>,
}

impl AcceptedResponse {
    /// The auth keys the kubelet's keyring would use for `image`, in the order it tries them.
    pub fn keys_for_image(&self, image: &str) -> Vec<&str> {
        let keys: Vec<&str> = self.auth.keys().map(String::as_str).collect();
        matching::keyring_lookup(&keys, image)
    }
}

/// Why the kubelet would reject a plugin's stdout.
///
/// No variant's `Display` or `Debug` quotes a value from stdout the kubelet's own message would
/// not: a malformed answer still holds credentials. The kubelet's messages quote only the
/// `apiVersion` and `cacheKeyType` sent; [`DecodeError::redacted_kubelet_message`] hides those
/// too unless they are protocol words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not one JSON object with readable `apiVersion`/`kind`.
    #[error("error reading GVK from response: couldn't get version/kind; json parse error: {0}")]
    Gvk(Cause),
    /// Another apiVersion than the configured one.
    #[error(
        "apiVersion from credential plugin response did not match expected apiVersion:{expected}, actual apiVersion:{}",
        escape_controls(.actual)
    )]
    ApiVersionMismatch {
        /// The configured version.
        expected: String,
        /// What the plugin answered.
        actual: String,
    },
    /// Strict decoding failed; the kubelet prints only [`DECODE_ERROR`].
    #[error("{DECODE_ERROR} (cause, hidden by the kubelet: {0})")]
    Strict(Cause),
    /// The plugin returned the service-account token as a password without `cacheType: Token`.
    #[error(
        "Credential provider plugin returned the service account token as the password for image {0:?}, which is not allowed when service account cache type is not set to 'Token'"
    )]
    TokenEcho(String),
    /// `cacheKeyType` missing or not one of the three values.
    #[error("credential provider plugin did not return a valid cacheKeyType: {0:?}")]
    InvalidCacheKeyType(String),
}

impl DecodeError {
    /// Exactly what the kubelet logs (without the hidden cause).
    pub fn kubelet_message(&self) -> String {
        match self {
            DecodeError::Strict(_) => DECODE_ERROR.to_owned(),
            other => other.to_string(),
        }
    }

    /// [`Self::kubelet_message`] with the values it quotes from stdout (the `apiVersion` and
    /// `cacheKeyType` sent) shown only when they are protocol words, else as their length.
    pub fn redacted_kubelet_message(&self) -> String {
        match self {
            DecodeError::ApiVersionMismatch { expected, actual } => format!(
                "apiVersion from credential plugin response did not match expected apiVersion:{expected}, actual apiVersion:{}",
                stdout_shape::hide_value(actual)
            ),
            DecodeError::InvalidCacheKeyType(value) => format!(
                "credential provider plugin did not return a valid cacheKeyType: \"{}\"",
                stdout_shape::hide_value(value)
            ),
            other => other.kubelet_message(),
        }
    }
}

/// Why a document could not be decoded, in words that quote no value from it (the JSON path, the
/// kind of value found, line and column; see [`stdout_shape`]). The decoder's own message, which
/// may quote a value (serde_json's `invalid type: string "…"`), is kept apart for a reader who
/// asked to see secrets; neither `Display` nor `Debug` shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Cause {
    text: String,
    decoder_message: String,
}

impl Cause {
    fn new(text: String, decoder_message: String) -> Self {
        Cause {
            text,
            decoder_message: escape_controls(&decoder_message),
        }
    }

    /// The decoder's own message, which may quote values from stdout (secrets included).
    pub fn decoder_message(&self) -> &str {
        &self.decoder_message
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cause({:?})", self.text)
    }
}

/// What the kubelet knows when it decodes: the configured version, the image, and in token mode
/// the token it sent and whether `cacheType` is `Token`.
#[derive(Debug, Clone, Copy)]
pub struct DecodeContext<'a> {
    /// The provider's configured apiVersion.
    pub expected: ApiVersion,
    /// The image the plugin was asked about.
    pub image: &'a str,
    /// The service-account token sent, if any.
    pub service_account_token: Option<&'a str>,
    /// Whether `tokenAttributes.cacheType` is `Token`.
    pub cache_type_token: bool,
}

/// Judges a plugin's stdout as the kubelet does, in the kubelet's order of checks.
pub fn decode_response(
    stdout: &[u8],
    ctx: DecodeContext<'_>,
) -> Result<AcceptedResponse, DecodeError> {
    // 1. GVK from the whole buffer: one JSON document, surrounding whitespace only.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Gvk {
        #[serde(default)]
        api_version: Option<String>,
        #[serde(default)]
        #[allow(dead_code)]
        kind: Option<String>,
    }
    let gvk: Gvk = serde_json::from_slice(stdout).map_err(|e| {
        DecodeError::Gvk(Cause::new(
            stdout_shape::gvk_cause(stdout, &e),
            e.to_string(),
        ))
    })?;
    let actual = gvk.api_version.unwrap_or_default();
    // 2. apiVersion must equal the configured one.
    if actual != ctx.expected.as_str() {
        return Err(DecodeError::ApiVersionMismatch {
            expected: ctx.expected.as_str().to_owned(),
            actual,
        });
    }
    // 3. Strict decode: unknown, duplicate and wrong-case fields fail; kind and group checked.
    let strict: StrictResponse = serde_json::from_slice(stdout).map_err(|e| {
        DecodeError::Strict(Cause::new(
            stdout_shape::strict_cause(stdout, &e),
            e.to_string(),
        ))
    })?;
    let kind = strict.kind.unwrap_or_default();
    if kind != RESPONSE_KIND {
        return Err(DecodeError::Strict(Cause::new(
            format!(
                "kind is {}, expected {RESPONSE_KIND:?}",
                stdout_shape::hide_value(&kind)
            ),
            format!("kind is {kind:?}, expected {RESPONSE_KIND:?}"),
        )));
    }
    if !actual.starts_with(&format!("{GROUP}/")) {
        return Err(DecodeError::Strict(Cause::new(
            format!("the apiVersion's group is not {GROUP}"),
            format!("group of {actual:?} is not {GROUP}"),
        )));
    }
    let auth: BTreeMap<String, (String, String)> = strict
        .auth
        .map(|m| m.0)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            (
                k,
                (
                    v.username.unwrap_or_default(),
                    v.password.unwrap_or_default(),
                ),
            )
        })
        .collect();
    // 4. The token-echo guard (kubelet 1.34+).
    if let Some(token) = ctx.service_account_token.filter(|t| !t.is_empty())
        && !ctx.cache_type_token
        && auth.values().any(|(_, password)| password == token)
    {
        return Err(DecodeError::TokenEcho(ctx.image.to_owned()));
    }
    // 5. cacheKeyType, case-sensitive.
    let raw_key_type = strict.cache_key_type.unwrap_or_default();
    let cache_key_type = raw_key_type
        .parse::<CacheKeyType>()
        .map_err(|_| DecodeError::InvalidCacheKeyType(raw_key_type.clone()))?;
    Ok(AcceptedResponse {
        api_version: ctx.expected,
        cache_key_type,
        cache_duration: strict.cache_duration,
        auth,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StrictResponse {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    api_version: Option<String>,
    #[serde(default)]
    cache_key_type: Option<String>,
    #[serde(default)]
    cache_duration: Option<GoDuration>,
    #[serde(default)]
    auth: Option<UniqueMap<StrictAuth>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictAuth {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// A JSON object whose keys must be unique, as the kubelet's strict decoder demands.
struct UniqueMap<V>(BTreeMap<String, V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for UniqueMap<V> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UniqueVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueVisitor<V> {
            type Value = UniqueMap<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of registry patterns to credentials")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = BTreeMap::new();
                while let Some((key, value)) = access.next_entry::<String, V>()? {
                    if map.contains_key(&key) {
                        return Err(serde::de::Error::custom(format!("duplicate field {key:?}")));
                    }
                    map.insert(key, value);
                }
                Ok(UniqueMap(map))
            }
        }
        deserializer.deserialize_map(UniqueVisitor(std::marker::PhantomData))
    }
}

/// How to run a plugin binary, as the kubelet does.
#[derive(Debug, Clone)]
pub struct PluginExec {
    /// `<bin-dir>/<name>`.
    pub path: PathBuf,
    /// The provider's `args`.
    pub args: Vec<String>,
    /// The provider's `env`, appended to the inherited environment; later entries win.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment instead of this process's (tests use it to stay hermetic).
    pub clear_env: bool,
    /// The kill timeout.
    pub timeout: Duration,
}

impl PluginExec {
    /// A plugin at `path` with the kubelet's defaults.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        PluginExec {
            path: path.into(),
            args: Vec::new(),
            env: Vec::new(),
            clear_env: false,
            timeout: KUBELET_EXEC_TIMEOUT,
        }
    }

    /// Runs the plugin once with `stdin` as its input.
    pub fn run(&self, stdin: &[u8]) -> ExecOutcome {
        let started = Instant::now();
        let mut command = Command::new(&self.path);
        command.args(&self.args);
        if self.clear_env {
            command.env_clear();
        }
        command.envs(
            self.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A group of its own, so that a timeout or a stray child can be ended with everything
        // the plugin started (a forked child holding stdout would otherwise outlive the run).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return ExecOutcome::not_started(format!("{}: {e}", self.path.display()), started);
            }
        };
        let stdin_pipe = child.stdin.take();
        let input = stdin.to_vec();
        std::thread::spawn(move || {
            if let Some(mut pipe) = stdin_pipe {
                // A plugin that exits without reading gives EPIPE; the kubelet ignores that too.
                let _ = pipe.write_all(&input);
            }
        });
        let stdout_rx = drain(child.stdout.take(), MAX_STDOUT_BYTES, true);
        let stderr_rx = drain(child.stderr.take(), MAX_STDERR_BYTES, false);

        let mut timed_out = false;
        let mut stdout: Option<Drained> = None;
        let mut stdout_overflow = false;
        let status = loop {
            // Too much stdout ends the run at once: the plugin may be blocked on a full pipe
            // that nobody reads any more.
            if stdout.is_none()
                && let Ok(drained) = stdout_rx.try_recv()
            {
                if drained.overflow {
                    stdout_overflow = true;
                    kill_group(&mut child);
                    stdout = Some(drained);
                    break child.wait().ok();
                }
                stdout = Some(drained);
            }
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() >= self.timeout => {
                    timed_out = true;
                    kill_group(&mut child);
                    break child.wait().ok();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break None,
            }
        };
        let stdout = stdout.or_else(|| stdout_rx.recv_timeout(PIPE_GRACE).ok());
        let stderr = stderr_rx.recv_timeout(PIPE_GRACE).ok();
        if stdout.is_none() || stderr.is_none() {
            // Reported below as the kubelet would see it; the processes holding the pipes are
            // not left running behind us.
            kill_group(&mut child);
        }
        let stdout_overflow = stdout_overflow || stdout.as_ref().is_some_and(|d| d.overflow);
        ExecOutcome {
            exit_code: status.and_then(|s| s.code()),
            start_error: None,
            timed_out,
            pipes_held_open: !stdout_overflow && (stdout.is_none() || stderr.is_none()),
            stdout_overflow,
            stdout: stdout.map(|d| d.bytes).unwrap_or_default(),
            stderr: stderr.map(Drained::with_note).unwrap_or_default(),
            elapsed: started.elapsed(),
        }
    }
}

/// Ends the plugin and every process of its group (it was started as the leader of one). The
/// group may be gone already; only the plugin itself is killed where there are no groups.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

/// What was read from one pipe.
struct Drained {
    /// At most the cap.
    bytes: Vec<u8>,
    /// More than the cap was written.
    overflow: bool,
    /// Bytes read past the cap and dropped (when reading went on).
    dropped: u64,
}

impl Drained {
    /// The bytes, with a last line saying how much was dropped.
    fn with_note(self) -> Vec<u8> {
        let mut bytes = self.bytes;
        if self.dropped > 0 {
            bytes
                .extend_from_slice(format!("\n[{} more bytes dropped]\n", self.dropped).as_bytes());
        }
        bytes
    }
}

/// Reads a pipe on its own thread, keeping at most `cap` bytes. Past the cap it stops at once
/// (`stop_at_cap`, and the caller ends the plugin) or reads on and drops the rest.
fn drain(
    pipe: Option<impl Read + Send + 'static>,
    cap: usize,
    stop_at_cap: bool,
) -> mpsc::Receiver<Drained> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut drained = Drained {
            bytes: Vec::new(),
            overflow: false,
            dropped: 0,
        };
        if let Some(mut pipe) = pipe {
            let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
            let _ = (&mut pipe).take(limit).read_to_end(&mut drained.bytes);
            if drained.bytes.len() > cap {
                drained.overflow = true;
                drained.bytes.truncate(cap);
                if !stop_at_cap {
                    drained.dropped = std::io::copy(&mut pipe, &mut std::io::sink())
                        .unwrap_or(0)
                        .saturating_add(1);
                }
            }
        }
        let _ = tx.send(drained);
    });
    rx
}

/// What happened when a plugin ran.
#[derive(Debug, Clone)]
pub struct ExecOutcome {
    /// The exit code; `None` when killed by a signal or never started.
    pub exit_code: Option<i32>,
    /// Why it could not be started.
    pub start_error: Option<String>,
    /// Killed after the timeout.
    pub timed_out: bool,
    /// stdout or stderr stayed open after exit (a grandchild holds them; the kubelet would hang).
    pub pipes_held_open: bool,
    /// The plugin wrote more than [`MAX_STDOUT_BYTES`] to stdout; it was killed and `stdout`
    /// holds the first [`MAX_STDOUT_BYTES`].
    pub stdout_overflow: bool,
    /// Everything written to stdout.
    pub stdout: Vec<u8>,
    /// Everything written to stderr.
    pub stderr: Vec<u8>,
    /// Wall time.
    pub elapsed: Duration,
}

impl ExecOutcome {
    fn not_started(reason: String, started: Instant) -> Self {
        ExecOutcome {
            exit_code: None,
            start_error: Some(reason),
            timed_out: false,
            pipes_held_open: false,
            stdout_overflow: false,
            stdout: Vec::new(),
            stderr: Vec::new(),
            elapsed: started.elapsed(),
        }
    }

    /// stderr as text.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// stdout as text.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The error the kubelet would log for this exec, or `None` when it would go on to decode stdout.
    pub fn kubelet_exec_error(&self, plugin_name: &str, image: &str) -> Option<String> {
        let cause = if let Some(e) = &self.start_error {
            format!("fork/exec {e}")
        } else if self.timed_out {
            "context deadline exceeded".to_owned()
        } else {
            match self.exit_code {
                Some(0) => return None,
                Some(code) => format!("exit status {code}"),
                None => "signal: killed".to_owned(),
            }
        };
        Some(format!(
            "error execing credential provider plugin {plugin_name} for image {image}: {cause}: {}",
            self.stderr_text()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(expected: ApiVersion) -> DecodeContext<'static> {
        DecodeContext {
            expected,
            image: "test.registry.io/foo",
            service_account_token: None,
            cache_type_token: false,
        }
    }

    #[test]
    fn accepts_the_upstream_decode_vectors() {
        // docs/kubelet-contract.md “Test vectors”: Test_decodeResponse and the e2e-gcp answer.
        for v in ApiVersion::ALL {
            let doc = format!(
                r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v}","cacheKeyType":"Registry","cacheDuration":"1m","auth":{{"*.registry.io":{{"username":"user","password":"password"}}}}}}"#
            );
            let r = decode_response(doc.as_bytes(), ctx(v)).unwrap();
            assert_eq!(r.cache_key_type, CacheKeyType::Registry);
            assert_eq!(r.cache_duration, Some(GoDuration::from_secs(60)));
            assert_eq!(
                r.auth["*.registry.io"],
                ("user".to_owned(), "password".to_owned())
            );
            assert_eq!(
                r.keys_for_image("test.registry.io/foo"),
                vec!["*.registry.io"]
            );
        }
        let gcp = br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry","auth":{"*.gcr.io":{"username":"_token","password":"abc123"},"*.pkg.dev":{"username":"_token","password":"abc123"},"container.cloud.google.com":{"username":"_token","password":"abc123"},"gcr.io":{"username":"_token","password":"abc123"}}}"#;
        let r = decode_response(gcp, ctx(ApiVersion::V1)).unwrap();
        assert_eq!(r.cache_duration, None);
        assert_eq!(r.auth.len(), 4);
        // Whitespace around the document is fine; null fields are fine.
        let spaced = b"\n {\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\",\"cacheDuration\":null,\"auth\":null}\n\n";
        assert!(decode_response(spaced, ctx(ApiVersion::V1)).is_ok());
    }

    #[test]
    fn rejects_what_the_kubelet_rejects_with_its_message() {
        let v1 = "credentialprovider.kubelet.k8s.io/v1";
        let ok_tail =
            r#""cacheKeyType":"Registry","auth":{"a.io":{"username":"u","password":"p"}}"#;
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "error reading GVK from response"),
            (
                "Getting creds...\n{}".into(),
                "error reading GVK from response",
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}",{ok_tail}}}{{}}"#
                ),
                "error reading GVK from response",
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1",{ok_tail}}}"#
                ),
                "apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1",
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheDuration":600,{ok_tail}}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheDuration":"1d",{ok_tail}}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","extra":1,{ok_tail}}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","CacheKeyType":"Registry"}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"Registry","cacheKeyType":"Image"}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"Registry","auth":{{"a.io":{{"username":"u","password":"p","email":"e"}}}}}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"Registry","auth":{{"a.io":{{}},"a.io":{{}}}}}}"#
                ),
                DECODE_ERROR,
            ),
            (
                format!(r#"{{"kind":"CredentialProviderFoo","apiVersion":"{v1}",{ok_tail}}}"#),
                DECODE_ERROR,
            ),
            (
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"ServiceAccount"}}"#
                ),
                r#"credential provider plugin did not return a valid cacheKeyType: "ServiceAccount""#,
            ),
            (
                format!(r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}"}}"#),
                r#"credential provider plugin did not return a valid cacheKeyType: """#,
            ),
        ];
        for (stdout, want) in cases {
            let err = decode_response(stdout.as_bytes(), ctx(ApiVersion::V1)).unwrap_err();
            assert!(
                err.kubelet_message().starts_with(want),
                "stdout {stdout:?}: got {err}"
            );
        }
        // A wrong group never gets past the apiVersion comparison.
        let other_group = br#"{"kind":"CredentialProviderResponse","apiVersion":"foo.k8s.io/v1","cacheKeyType":"Image"}"#;
        assert!(matches!(
            decode_response(other_group, ctx(ApiVersion::V1)),
            Err(DecodeError::ApiVersionMismatch { .. })
        ));
    }

    /// Found by the `kubelet_response` fuzz target: field names and apiVersion came back raw.
    #[test]
    fn messages_escape_control_characters_from_stdout() {
        let v1 = ApiVersion::V1.as_str();
        let unknown = format!(
            "{{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"{v1}\",\"user\\rname\\u001b[2J\":1}}"
        );
        let err = decode_response(unknown.as_bytes(), ctx(ApiVersion::V1)).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Strict(cause) if cause.to_string().starts_with(r"unknown field `user\rname\u{1b}[2J`")),
            "{err}"
        );
        let version = br#"{"kind":"CredentialProviderResponse","apiVersion":"v1\nINFO fake"}"#;
        let err = decode_response(version, ctx(ApiVersion::V1)).unwrap_err();
        assert!(
            err.to_string()
                .ends_with(r"actual apiVersion:v1\nINFO fake"),
            "{err}"
        );
        assert!(
            matches!(err, DecodeError::ApiVersionMismatch { actual, .. } if actual == "v1\nINFO fake")
        );
    }

    /// Issue #25: serde's message quotes a password put where an object belongs; the error's
    /// `Display` and `Debug` must not.
    #[test]
    fn decode_errors_quote_no_value_from_stdout() {
        let v1 = ApiVersion::V1.as_str();
        let doc = format!(
            r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"Image","auth":{{"e.example.com":"hunter2-topsecret"}}}}"#
        );
        let err = decode_response(doc.as_bytes(), ctx(ApiVersion::V1)).unwrap_err();
        let DecodeError::Strict(cause) = &err else {
            panic!("{err}");
        };
        assert_eq!(
            cause.to_string(),
            r#"auth["e.example.com"] must be an object with username and password, found a string (line 1, column 155)"#
        );
        for shown in [err.to_string(), format!("{err:?}"), err.kubelet_message()] {
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        assert!(
            cause.decoder_message().contains("hunter2-topsecret"),
            "kept for --show-secrets"
        );
        // Not JSON: neither the GVK cause.
        let err = decode_response(b"\"hunter2-topsecret\"", ctx(ApiVersion::V1)).unwrap_err();
        assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
        // The kubelet's own messages quote apiVersion and cacheKeyType; the redacted form only
        // protocol words.
        let other = br#"{"apiVersion":"hunter2-topsecret"}"#;
        let err = decode_response(other, ctx(ApiVersion::V1)).unwrap_err();
        assert!(
            err.redacted_kubelet_message()
                .ends_with("actual apiVersion:<17 chars>")
        );
        let key_type = format!(
            r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v1}","cacheKeyType":"hunter2-topsecret"}}"#
        );
        let err = decode_response(key_type.as_bytes(), ctx(ApiVersion::V1)).unwrap_err();
        assert_eq!(
            err.redacted_kubelet_message(),
            r#"credential provider plugin did not return a valid cacheKeyType: "<17 chars>""#
        );
    }

    #[test]
    fn token_echo_guard_applies_unless_cache_type_is_token() {
        let doc = br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image","auth":{"a.io":{"username":"u","password":"sa-jwt"}}}"#;
        let mut c = ctx(ApiVersion::V1);
        c.service_account_token = Some("sa-jwt");
        assert!(matches!(
            decode_response(doc, c),
            Err(DecodeError::TokenEcho(_))
        ));
        c.cache_type_token = true;
        assert!(decode_response(doc, c).is_ok());
    }

    #[test]
    fn exec_error_messages_follow_the_kubelet() {
        let mut o = ExecOutcome::not_started("x".into(), Instant::now());
        o.start_error = None;
        o.exit_code = Some(1);
        o.stderr = b"boom\n".to_vec();
        assert_eq!(
            o.kubelet_exec_error("ecr-credential-provider", "a.io/b")
                .unwrap(),
            "error execing credential provider plugin ecr-credential-provider for image a.io/b: exit status 1: boom\n"
        );
        o.exit_code = Some(0);
        assert_eq!(o.kubelet_exec_error("p", "i"), None);
        o.timed_out = true;
        assert!(
            o.kubelet_exec_error("p", "i")
                .unwrap()
                .contains("context deadline exceeded")
        );
    }
}
