//! Test kit for provider binaries (a dev-dependency, never in a release): run a built plugin
//! exactly as the kubelet does and assert on the result the way the kubelet would judge it.
//!
//! ```ignore
//! let plugin = Plugin::new(env!("CARGO_BIN_EXE_ecr-credential-provider")).env("AWS_REGION", "us-east-1");
//! let ok = plugin.request(ApiVersion::V1, "123456789012.dkr.ecr.us-east-1.amazonaws.com/app").accepted();
//! assert_eq!(ok.auth["123456789012.dkr.ecr.us-east-1.amazonaws.com"].0, "AWS");
//! ```
//!
//! Every run starts from an empty environment with only `PATH`, a fresh empty `HOME` and
//! `CREDENTIAL_PROVIDER_CACHE_JITTER=0` (exact `cacheDuration`s), so a developer's `~/.aws` or
//! cloud variables never leak into a test. Every run's stderr is scanned for every secret
//! registered in [`secrets`] (see there), so no test can let one through.
// A test kit: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kcp_kubelet::protocol::{ApiVersion, encode_request};
use kcp_kubelet_emulation::exec::{
    AcceptedResponse, DecodeContext, ExecOutcome, PluginExec, decode_response,
};

/// Names the target whose release binaries the process-boundary tests run instead of the ones
/// cargo built for the host, e.g. `aarch64-unknown-linux-gnu` (under qemu) or
/// `x86_64-pc-windows-gnu` (under wine). Set by `scripts/cross-test`.
pub const TARGET_ENV: &str = "KCP_TEST_TARGET";

/// The target set by [`TARGET_ENV`], when the tests run cross-built binaries.
pub fn cross_target() -> Option<String> {
    std::env::var(TARGET_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
}

/// Whether the binaries under test are Windows executables.
pub fn windows_target() -> bool {
    cross_target().is_some_and(|t| t.contains("windows"))
}

/// `true` (skip the test) when the binaries under test are Windows executables and `test` does
/// not apply to them; `why` says why. Recorded as a [`skip::not_applicable`] (the real stderr
/// and the platform's skip log, which `scripts/cross-test` counts), never a failure.
/// (The skip log names the test from its thread; `_test` stays for the callers.)
pub fn skip_on_windows(_test: &str, why: &str) -> bool {
    if !windows_target() {
        return false;
    }
    skip::not_applicable(why);
    true
}

/// The binary to run for one cargo built for the host (`env!("CARGO_BIN_EXE_<name>")`): that
/// binary itself, or with [`TARGET_ENV`] set, the same binary from
/// `<target dir>/<triple>/release/` as `scripts/release --target` builds it (`.exe` for Windows).
///
/// The cross binaries run through the kernel's binfmt_misc (qemu-user for arm64, wine for
/// Windows), so a test spawns them exactly as a host binary.
///
/// # Panics
/// When the cross-built binary is missing.
pub fn binary_under_test(host_built: impl AsRef<Path>) -> PathBuf {
    let host_built = host_built.as_ref();
    let Some(triple) = cross_target() else {
        return host_built.to_path_buf();
    };
    let name = host_built
        .file_name()
        .unwrap_or_else(|| panic!("{} has no file name", host_built.display()));
    // <target dir>/debug/<name> → <target dir>/<triple>/release/<name>
    let target_dir = host_built
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} is not in a target dir", host_built.display()));
    let mut file = name.to_os_string();
    if triple.contains("windows") {
        file.push(".exe");
    }
    let path = target_dir.join(&triple).join("release").join(file);
    assert!(
        path.is_file(),
        "{} is missing: build it with scripts/release --target {triple} (scripts/cross-test does)",
        path.display()
    );
    path
}

/// A plugin binary under test.
#[derive(Debug, Clone)]
pub struct Plugin {
    exec: PluginExec,
    cache_type_token: bool,
    /// The service-account token [`Plugin::request`] sends (v1 only).
    token: Option<String>,
    _home: std::sync::Arc<TempDir>,
}

impl Plugin {
    /// The binary at `path` ([`binary_under_test`]), with `PATH` and an empty temporary `HOME`
    /// as its only environment (plus wine's own variables for Windows binaries).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::program(binary_under_test(path.into()))
    }

    /// As [`Plugin::new`], for a program run as it is: a wrapper such as `chroot` whose arguments
    /// name the binary under test.
    pub fn program(path: impl Into<PathBuf>) -> Self {
        let home = TempDir::new("home");
        let mut exec = PluginExec::new(path);
        exec.clear_env = true;
        exec.env.push((
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        ));
        exec.env
            .push(("HOME".into(), home.path().display().to_string()));
        // wine keeps its prefix under $HOME unless told otherwise, and creating one takes
        // seconds: every run shares the one scripts/cross-test prepared.
        for name in ["WINEPREFIX", "WINEDEBUG", "WINEDLLOVERRIDES"] {
            if let Ok(value) = std::env::var(name) {
                exec.env.push((name.into(), value));
            }
        }
        // Exact cacheDuration assertions need answers without fleet jitter; tests of jitter
        // set the variable again (later values win).
        exec.env
            .push((kcp_plugin::cache_hint::JITTER_ENV.into(), "0".into()));
        Plugin {
            exec,
            cache_type_token: false,
            token: None,
            _home: std::sync::Arc::new(home),
        }
    }

    /// Adds an environment variable (later values win, as in the kubelet's merge). A value whose
    /// name looks secret ([`secrets::is_secret_env_name`]) is registered for the stderr scan.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        if secrets::is_secret_env_name(&name) {
            secrets::register(&value);
        }
        self.exec.env.push((name, value));
        self
    }

    /// Registers a secret this plugin is given some other way (a file's content, say), so that
    /// every run's stderr is checked for it.
    pub fn secret(self, secret: impl AsRef<str>) -> Self {
        secrets::register(secret);
        self
    }

    /// Adds command-line arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.exec.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the kill timeout (the kubelet's is 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.exec.timeout = timeout;
        self
    }

    /// Judge answers as for a provider configured with `cacheType: Token`.
    pub fn cache_type_token(mut self, yes: bool) -> Self {
        self.cache_type_token = yes;
        self
    }

    /// Makes every [`Plugin::request`] carry this service-account token (v1 requests only, as
    /// the kubelet sends it), for providers that need one to answer at all: the shared tables
    /// (`bad_input`, `faults`, `flags`) then run with it.
    pub fn service_account_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The temporary `HOME` of this plugin's runs.
    pub fn home(&self) -> &Path {
        self._home.path()
    }

    /// Sends a request for `image`, encoded as the kubelet encodes it, with the token of
    /// [`Plugin::service_account_token`] if one was set.
    pub fn request(&self, api_version: ApiVersion, image: &str) -> Outcome {
        self.request_with_token(api_version, image, self.token.as_deref(), &BTreeMap::new())
    }

    /// Sends a request carrying a service-account token and annotations (v1 only; older versions
    /// drop them, as the kubelet does).
    pub fn request_with_token(
        &self,
        api_version: ApiVersion,
        image: &str,
        token: Option<&str>,
        annotations: &BTreeMap<String, String>,
    ) -> Outcome {
        if let Some(token) = token {
            secrets::register(token);
        }
        let bytes = encode_request(api_version, image, token, annotations);
        Outcome::new(Outcome {
            exec: self.exec.run(&bytes),
            api_version: Some(api_version),
            image: image.to_owned(),
            token: token.map(str::to_owned),
            cache_type_token: self.cache_type_token,
        })
    }

    /// Sends arbitrary bytes on stdin.
    pub fn raw(&self, stdin: &[u8]) -> Outcome {
        Outcome::new(Outcome {
            exec: self.exec.run(stdin),
            api_version: None,
            image: String::new(),
            token: None,
            cache_type_token: self.cache_type_token,
        })
    }
}

/// The result of one run, with kubelet-style assertions.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the process did.
    pub exec: ExecOutcome,
    api_version: Option<ApiVersion>,
    image: String,
    token: Option<String>,
    cache_type_token: bool,
}

impl Outcome {
    /// The one way an outcome comes to be: after the stderr scan for registered secrets.
    fn new(outcome: Outcome) -> Outcome {
        secrets::assert_no_leak(&outcome.stderr(), "stderr");
        outcome
    }

    /// stderr as text.
    pub fn stderr(&self) -> String {
        self.exec.stderr_text()
    }

    /// stdout as text.
    pub fn stdout(&self) -> String {
        self.exec.stdout_text()
    }

    /// Asserts that the kubelet would accept the answer and find a credential for the image:
    /// exit 0, strict decode in the request's version, valid cacheKeyType, and at least one auth
    /// key matching the image. Panics with the full picture otherwise.
    pub fn accepted(&self) -> AcceptedResponse {
        let context = || {
            format!(
                "\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.stdout(),
                self.stderr()
            )
        };
        if let Some(error) = self.exec.kubelet_exec_error("plugin", &self.image) {
            panic!("the kubelet would fail the exec: {error}{}", context());
        }
        let Some(expected) = self.api_version else {
            panic!("accepted() needs a request sent with request()/request_with_token()");
        };
        let decoded = decode_response(
            &self.exec.stdout,
            DecodeContext {
                expected,
                image: &self.image,
                service_account_token: self.token.as_deref(),
                cache_type_token: self.cache_type_token,
            },
        )
        .unwrap_or_else(|e| panic!("the kubelet would reject the answer: {e}{}", context()));
        if decoded.keys_for_image(&self.image).is_empty() {
            panic!(
                "no auth key matches image {:?}: keys {:?}{}",
                self.image,
                decoded.auth.keys().collect::<Vec<_>>(),
                context()
            );
        }
        decoded
    }

    /// Asserts a clean failure: exit non-zero (not by a signal), nothing on stdout, exactly one
    /// non-empty line on stderr that is not a panic. Returns that line.
    pub fn rejected(&self) -> String {
        let stderr = self.stderr();
        let context = format!(
            "\n--- exit code ---\n{:?}\n--- stdout ---\n{}\n--- stderr ---\n{stderr}",
            self.exec.exit_code,
            self.stdout()
        );
        assert!(!self.exec.timed_out, "timed out{context}");
        // What was read before then is all there is: say so rather than "no stderr line".
        assert!(
            !self.exec.pipes_held_open,
            "stdout or stderr stayed open after the plugin exited: a process it started holds \
             them (under wine: the system processes a fresh wineserver starts){context}"
        );
        match self.exec.exit_code {
            Some(code) if code != 0 => {}
            other => panic!("expected a non-zero exit, got {other:?}{context}"),
        }
        assert!(
            self.exec.stdout.is_empty(),
            "stdout must be empty on failure{context}"
        );
        assert!(!stderr.contains("panicked"), "the plugin panicked{context}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "expected exactly one stderr line{context}");
        lines[0].to_owned()
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time, for fakes that answer with timestamps.
pub fn rfc3339(secs: u64) -> String {
    let (y, m, d, _) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An HTTP `Date` header value (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) for a Unix time,
/// for fakes whose clock is meant to be off.
pub fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, m, d, weekday) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[weekday],
        MONTHS[usize::try_from(m - 1).unwrap_or(0)],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// (year, month, day, weekday with 0 = Thursday) of a Unix time: civil from days, proleptic
/// Gregorian calendar.
fn civil(secs: u64) -> (i64, i64, i64, usize) {
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, usize::try_from(days.rem_euclid(7)).unwrap_or(0))
}

#[cfg(test)]
mod time_tests {
    #[test]
    fn formats_timestamps() {
        assert_eq!(super::rfc3339(784_111_777), "1994-11-06T08:49:37Z");
        assert_eq!(
            super::http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(super::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::http_date(951_782_400),
            "Tue, 29 Feb 2000 00:00:00 GMT"
        );
    }
}

/// A temporary directory removed on drop (no extra dependency for the few the kit needs).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates a fresh directory under the system temp dir.
    pub fn new(label: &str) -> Self {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("kcp-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        if let Err(e) = std::fs::create_dir_all(&path) {
            panic!("creating {}: {e}", path.display());
        }
        TempDir(path)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub mod bad_input;
pub mod cache;
pub mod configs;
pub mod fake;
pub mod faults;
pub mod flags;
pub mod fuzz_bodies;
pub mod fuzz_smoke;
pub mod metrics;
pub mod proxy;
pub mod secrets;
pub mod skip;
pub mod sni;
pub mod tls;
