//! `run`: exec every matching provider exactly as the kubelet would and judge the answer as the
//! kubelet's strict decoder does (docs/kubelet-contract.md: “Exec”, “Decoding a response”,
//! “Matching”, “Caching”, “Service-account tokens”).
//!
//! The exec itself and the decode are `kcp_kubelet_emulation::exec`'s; this module decides what the
//! kubelet would send (token and annotations only for providers with `tokenAttributes`), names
//! the kubelet's error for a failure, and works out the cache entry it would keep.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::matching::{explain, normalize_auth_key};
use kcp_kubelet::protocol::{ApiVersion, CacheKeyType, encode_request};
use kcp_kubelet_emulation::exec::{
    AcceptedResponse, DecodeContext, DecodeError, ExecOutcome, MAX_STDOUT_BYTES, PluginExec,
    decode_response,
};

use kcp_kubelet_emulation::config::Provider;

pub use kcp_kubelet::secret::REDACTED;

/// What the pod pulling the image looks like, and how to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--image-credential-provider-bin-dir`.
    pub bin_dir: PathBuf,
    /// The pod's service-account token (`--sa-token`), if any.
    pub sa_token: Option<String>,
    /// The service account's annotations (`--sa-annotation`).
    pub sa_annotations: BTreeMap<String, String>,
    /// Kill timeout (the kubelet's is 60 s).
    pub timeout: Duration,
    /// Show passwords and tokens.
    pub show_secrets: bool,
}

/// How one provider's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The kubelet would not exec it (token mode preconditions); `String` says why.
    Skipped(String),
    /// The kubelet would log this error and use nothing from the plugin.
    Failed,
    /// Accepted; credentials may or may not apply to the image.
    Accepted,
}

/// One `auth` entry of an accepted response.
#[derive(Debug, Clone)]
pub struct AuthEntry {
    /// The key as the plugin sent it.
    pub key: String,
    /// Shown as the plugin answered it: a user name is not a secret (`AWS`, `_token`, a robot
    /// name).
    pub username: String,
    /// The password, or [`REDACTED`].
    pub password: String,
    /// Whether the kubelet's keyring would use it for this image.
    pub used: bool,
    /// Why not, when unused.
    pub reason: Option<String>,
}

/// The cache entry the kubelet would keep.
#[derive(Debug, Clone)]
pub struct CacheEntry {
    /// `Image`, `Registry` or `Global`.
    pub key_type: CacheKeyType,
    /// The base key (`<global>` for Global).
    pub key: String,
    /// What else the key holds in token mode.
    pub service_account_part: Option<String>,
    /// The duration applied, `None` when not cached.
    pub duration: Option<GoDuration>,
    /// `"response"` or `"defaultCacheDuration"`.
    pub duration_source: &'static str,
}

/// One provider's run.
#[derive(Debug, Clone)]
pub struct ProviderRun {
    /// The provider's name.
    pub name: String,
    /// How it ended.
    pub verdict: Verdict,
    /// argv as executed.
    pub argv: Vec<String>,
    /// The config's env, as in the config file.
    pub env: Vec<(String, String)>,
    /// The request written to stdin (token redacted unless `--show-secrets`).
    pub request: String,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub elapsed: Duration,
    /// stderr, which the kubelet drops on success.
    pub stderr: String,
    /// stdout; unless `--show-secrets`, every string value shown as its length (see
    /// `kcp_kubelet_emulation::stdout_shape::redacted`).
    pub stdout: String,
    /// Whether `stdout` (and the SA token and passwords in stderr) are hidden.
    pub redacted: bool,
    /// The kubelet's error message on failure.
    pub kubelet_error: Option<String>,
    /// The real cause the kubelet hides.
    pub cause: Option<String>,
    /// Auth entries of an accepted response.
    pub auth: Vec<AuthEntry>,
    /// Keys the keyring would use, in the order the runtime tries them.
    pub keys_used: Vec<String>,
    /// The cache entry of an accepted response.
    pub cache: Option<CacheEntry>,
}

impl ProviderRun {
    /// True when the kubelet ends up with credentials for the image from this provider.
    pub fn usable(&self) -> bool {
        self.verdict == Verdict::Accepted && !self.keys_used.is_empty()
    }

    fn new(name: &str) -> Self {
        ProviderRun {
            name: name.to_owned(),
            verdict: Verdict::Failed,
            argv: Vec::new(),
            env: Vec::new(),
            request: String::new(),
            exit_code: None,
            elapsed: Duration::ZERO,
            stderr: String::new(),
            stdout: String::new(),
            redacted: false,
            kubelet_error: None,
            cause: None,
            auth: Vec::new(),
            keys_used: Vec::new(),
            cache: None,
        }
    }
}

/// What the kubelet sends a provider in token mode: the pod's token, the annotations it
/// forwards, and whether the token is part of the cache key.
struct TokenRequest<'a> {
    token: Option<&'a str>,
    annotations: BTreeMap<String, String>,
    cache_type_token: bool,
}

impl<'a> TokenRequest<'a> {
    /// Token mode (KEP-4412, docs/kubelet-contract.md “Service-account tokens”): what the
    /// kubelet sends, or (`Err`) why it does not run the plugin.
    fn of(p: &Provider, opts: &'a RunOptions) -> Result<Self, String> {
        let mut sent = TokenRequest {
            token: None,
            annotations: BTreeMap::new(),
            cache_type_token: false,
        };
        let Some(ta) = &p.token_attributes else {
            return Ok(sent);
        };
        sent.cache_type_token = ta.cache_type == "Token";
        match opts.sa_token.as_deref() {
            None if ta.require_service_account == Some(true) => Err(
                "requireServiceAccount is true and no --sa-token was given: the kubelet does not run this plugin for a pod without a service account".into(),
            ),
            None => Ok(sent),
            Some(t) => {
                if let Some(missing) = ta
                    .required_keys
                    .iter()
                    .find(|k| !opts.sa_annotations.contains_key(*k))
                {
                    return Err(format!(
                        "the service account lacks the required annotation {missing:?}: the kubelet does not run this plugin"
                    ));
                }
                for key in ta.required_keys.iter().chain(&ta.optional_keys) {
                    if let Some(value) = opts.sa_annotations.get(key) {
                        sent.annotations.insert(key.clone(), value.clone());
                    }
                }
                sent.token = Some(t);
                Ok(sent)
            }
        }
    }
}

/// Runs one provider for the (normalised) `image`.
pub fn run_provider(p: &Provider, image: &str, opts: &RunOptions) -> ProviderRun {
    let mut out = ProviderRun::new(&p.name);
    let Ok(api_version) = p.api_version.parse::<ApiVersion>() else {
        out.kubelet_error = Some(format!("invalid apiVersion: {:?}", p.api_version));
        return out;
    };
    // The kubelet runs `<bin dir>/<name>`, on Windows with `.exe` (PATHEXT) added.
    let path = kcp_kubelet_emulation::validate::plugin_binary(&opts.bin_dir, &p.name);
    out.argv = std::iter::once(path.display().to_string())
        .chain(p.args.iter().cloned())
        .collect();
    out.env = shown_env(&p.env, opts.show_secrets);
    let sent = match TokenRequest::of(p, opts) {
        Ok(sent) => sent,
        Err(why) => {
            out.verdict = Verdict::Skipped(why);
            return out;
        }
    };
    let token = sent.token;
    let request = encode_request(api_version, image, token, &sent.annotations);
    let shown_token = token.map(|t| secret(t, opts.show_secrets));
    out.request = String::from_utf8_lossy(&encode_request(
        api_version,
        image,
        shown_token.as_deref(),
        &sent.annotations,
    ))
    .trim_end()
    .to_owned();

    let mut exec = PluginExec::new(&path);
    exec.args = p.args.clone();
    exec.env = p.env.clone();
    exec.timeout = opts.timeout;
    let outcome = exec.run(&request);
    out.exit_code = outcome.exit_code;
    out.elapsed = outcome.elapsed;
    out.redacted = !opts.show_secrets;
    // What the checker knows to be secret; passwords are added once the answer is decoded.
    let mut known: Vec<&str> = token.into_iter().chain(secret_values(&p.env)).collect();
    out.stderr = hide_known(&outcome.stderr_text(), &known, opts.show_secrets);
    out.stdout = if opts.show_secrets {
        outcome.stdout_text()
    } else {
        kcp_kubelet_emulation::stdout_shape::redacted(&outcome.stdout)
    };
    if let Some((error, cause)) = not_judged(&outcome, &p.name) {
        out.kubelet_error = Some(error);
        out.cause = Some(cause.to_owned());
        return out;
    }
    if let Some(error) = outcome.kubelet_exec_error(&p.name, image) {
        out.kubelet_error = Some(hide_known(&error, &known, opts.show_secrets));
        out.cause = Some(exec_failure_cause(&outcome, opts));
        return out;
    }
    let ctx = DecodeContext {
        expected: api_version,
        image,
        service_account_token: token,
        cache_type_token: sent.cache_type_token,
    };
    match decode_response(&outcome.stdout, ctx) {
        Err(e) => refused_answer(&mut out, &e, opts.show_secrets),
        Ok(accepted) => {
            known.extend(accepted.auth.values().map(|(_, pass)| pass.as_str()));
            out.stderr = hide_known(&outcome.stderr_text(), &known, opts.show_secrets);
            accepted_answer(&mut out, p, image, &accepted, opts.show_secrets);
        }
    }
    out
}

/// Failures the kubelet has no message for: (what happened, what to do).
fn not_judged(outcome: &ExecOutcome, name: &str) -> Option<(String, &'static str)> {
    if outcome.stdout_overflow {
        Some((
            format!(
                "none: not judged: {name} wrote more than {MAX_STDOUT_BYTES} bytes to stdout, where the checker stops reading and ends the plugin (the kubelet has no limit and would hold it all in memory)"
            ),
            "an answer is a few hundred bytes: the plugin writes something else to stdout (logs and dumps belong on stderr)",
        ))
    } else if outcome.pipes_held_open {
        Some((
            format!(
                "none: the kubelet would block on this pull: {name} exited but a process it started still holds its stdout/stderr open, and the kubelet waits for them to close (exec WaitDelay unset), even past its 60s timeout"
            ),
            "a background child inherited the plugin's stdout/stderr; redirect or close them (e.g. `cmd >/dev/null 2>&1 &`)",
        ))
    } else {
        None
    }
}

/// Why an exec the kubelet logs as failed failed: a timeout, a plugin that could not start, or
/// its own exit status.
fn exec_failure_cause(outcome: &ExecOutcome, opts: &RunOptions) -> String {
    if outcome.timed_out {
        format!(
            "no answer within {}; the kubelet kills plugins after 60s",
            GoDuration::from_std(opts.timeout)
        )
    } else if let Some(e) = &outcome.start_error {
        format!("the plugin could not be started: {e}")
    } else {
        "the plugin failed; its stderr is quoted at the end of the kubelet's message".into()
    }
}

/// An answer the kubelet's decoder refuses: its message, and the cause it hides or the fix.
fn refused_answer(out: &mut ProviderRun, e: &DecodeError, show_secrets: bool) {
    out.kubelet_error = Some(if show_secrets {
        e.kubelet_message()
    } else {
        e.redacted_kubelet_message()
    });
    // The decoder's own words may quote a value from stdout (a password where an object
    // belongs): only with --show-secrets.
    let decoder = |c: &kcp_kubelet_emulation::exec::Cause| {
        if show_secrets {
            format!("; the decoder's message: {}", c.decoder_message())
        } else {
            String::new()
        }
    };
    // The kubelet hides only the strict-decoding cause; for the other failures its
    // message already is the cause, so say how to fix it instead.
    out.cause = Some(match e {
        DecodeError::Strict(cause) => format!("{cause}{}", decoder(cause)),
        DecodeError::Gvk(cause) => format!("stdout must hold exactly one JSON document (whitespace around it only); log lines belong on stderr{}", decoder(cause)),
        DecodeError::ApiVersionMismatch { .. } => "the plugin must answer in exactly the apiVersion the config names for it (no negotiation)".into(),
        DecodeError::TokenEcho(_) => "set tokenAttributes.cacheType: Token, or return a credential other than the service-account token".into(),
        DecodeError::InvalidCacheKeyType(_) => "cacheKeyType must be Image, Registry or Global (case-sensitive)".into(),
    });
}

/// An accepted answer: which auth entries the keyring uses for `image` (and why not the
/// others), and the cache entry the kubelet keeps.
fn accepted_answer(
    out: &mut ProviderRun,
    p: &Provider,
    image: &str,
    accepted: &AcceptedResponse,
    show_secrets: bool,
) {
    out.verdict = Verdict::Accepted;
    out.keys_used = accepted
        .keys_for_image(image)
        .into_iter()
        .map(str::to_owned)
        .collect();
    out.auth = accepted
        .auth
        .iter()
        .map(|(key, (user, pass))| {
            let used = out.keys_used.contains(key);
            let reason = (!used).then(|| match normalize_auth_key(key) {
                Err(e) => format!(
                    "the kubelet drops it: Entry {key:?} in dockercfg invalid ({e}), ignoring"
                ),
                Ok(_) => explain(key, image).to_string(),
            });
            AuthEntry {
                key: key.clone(),
                username: user.clone(),
                password: secret(pass, show_secrets),
                used,
                reason,
            }
        })
        .collect();
    out.cache = Some(cache_entry(
        p,
        image,
        accepted.cache_key_type,
        accepted.cache_duration,
    ));
}

/// The kubelet's cache decision (docs/kubelet-contract.md “Caching”): the response's duration
/// wins; absent means the default; zero means not stored.
fn cache_entry(
    p: &Provider,
    image: &str,
    key_type: CacheKeyType,
    from_response: Option<GoDuration>,
) -> CacheEntry {
    let key = match key_type {
        CacheKeyType::Image => image.to_owned(),
        CacheKeyType::Registry => image.split('/').next().unwrap_or(image).to_owned(),
        CacheKeyType::Global => "<global>".to_owned(),
    };
    let (duration, source) = match from_response {
        Some(d) => (d, "response"),
        None => (
            p.default_cache_duration.unwrap_or(GoDuration::ZERO),
            "defaultCacheDuration",
        ),
    };
    let service_account_part = p.token_attributes.as_ref().map(|ta| {
        if ta.cache_type == "Token" {
            "service account namespace/name/UID, annotations and the token's SHA-256 (cacheType: Token)".to_owned()
        } else {
            "service account namespace/name/UID and annotations (cacheType: ServiceAccount)"
                .to_owned()
        }
    });
    CacheEntry {
        key_type,
        key,
        service_account_part,
        duration: (!duration.is_zero()).then_some(duration),
        duration_source: source,
    }
}

/// `text` with each of `secrets` (the SA token sent, the passwords answered) replaced by
/// [`REDACTED`], unless secrets are to be shown.
fn hide_known(text: &str, secrets: &[&str], show: bool) -> String {
    if show {
        return text.to_owned();
    }
    // Short values would hide innocent text; the kubelet's rules keep them out of logs anyway.
    let mut secrets: Vec<&str> = secrets
        .iter()
        .copied()
        .filter(|s| s.len() >= kcp_kubelet::secret::MIN_KNOWN_LEN)
        .collect();
    // Longest first: a secret that contains another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.iter().fold(text.to_owned(), |text, secret| {
        text.replace(secret, REDACTED)
    })
}

/// Whether a config `env` variable holds a secret by its name (`AWS_SECRET_ACCESS_KEY`,
/// `ALIBABA_CLOUD_ACCESS_KEY_SECRET`, `AWS_SESSION_TOKEN`, `AZURE_CLIENT_SECRET`, a password):
/// its value is shown as [`REDACTED`], and hidden wherever the plugin's output repeats it. A
/// variable naming a file (`AZURE_FEDERATED_TOKEN_FILE`) holds a path, shown as is.
pub fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let names_a_path = ["_FILE", "_PATH", "_DIR"]
        .iter()
        .any(|s| upper.ends_with(s));
    !names_a_path
        && ["SECRET", "TOKEN", "PASSWORD", "PASSWD"]
            .iter()
            .any(|word| upper.contains(word))
}

/// The config's `env` as `run` shows it: secret variables' values [`REDACTED`] unless shown.
fn shown_env(env: &[(String, String)], show: bool) -> Vec<(String, String)> {
    env.iter()
        .map(|(name, value)| {
            let shown = if is_secret_variable(name) {
                secret(value, show)
            } else {
                value.clone()
            };
            (name.clone(), shown)
        })
        .collect()
}

/// The values of the config's secret `env` variables, hidden wherever the plugin repeats them.
fn secret_values(env: &[(String, String)]) -> impl Iterator<Item = &str> {
    env.iter()
        .filter(|(name, _)| is_secret_variable(name))
        .map(|(_, value)| value.as_str())
}

fn secret(value: &str, show: bool) -> String {
    if show {
        value.to_owned()
    } else {
        REDACTED.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_entry_follows_the_kubelet_table() {
        let mut p = Provider {
            default_cache_duration: Some(GoDuration::from_secs(600)),
            ..Provider::default()
        };
        let e = cache_entry(&p, "reg.io:5000/a/b", CacheKeyType::Registry, None);
        assert_eq!(e.key, "reg.io:5000");
        assert_eq!(e.duration, Some(GoDuration::from_secs(600)));
        assert_eq!(e.duration_source, "defaultCacheDuration");
        let e = cache_entry(&p, "a.io/b", CacheKeyType::Global, Some(GoDuration::ZERO));
        assert_eq!((e.key.as_str(), e.duration), ("<global>", None));
        p.default_cache_duration = Some(GoDuration::ZERO);
        assert_eq!(
            cache_entry(&p, "a.io/b", CacheKeyType::Image, None).duration,
            None
        );
    }
}
