//! Every secret a test run has seen, and the scan that keeps them all off stderr.
//!
//! The kubelet appends a failing plugin's stderr verbatim to its own log, and a successful
//! plugin's stderr goes to journald when someone runs it by hand: no token, password or client
//! secret may ever appear there. Rather than each test listing what it hopes is absent, every
//! secret is registered once where it is made, in one process-wide set:
//! - [`super::Plugin::secret`] and [`register`] for what tests supply (files, constants);
//! - [`super::Plugin::env`] for values of variables whose names look secret (see
//!   [`is_secret_env_name`]);
//! - [`super::Plugin::request_with_token`] for the request's `serviceAccountToken`;
//! - [`super::fake::FakeResponse`] for JSON string values under secret-looking keys
//!   (`access_token`, `refresh_token`, `SecretAccessKey`, `password`, …) of every canned body, and
//!   the lines of a PEM private key (see [`register_json`]).
//!
//! Every run of a [`super::Plugin`] then scans its stderr for every registered secret and panics
//! on a hit, whatever the test asserts. stdout is not scanned: it is where credentials belong.
//! The set is shared by every test of the binary, so a secret one test issued is also caught in
//! another test's stderr.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

/// Secrets shorter than this are not registered: a short value such as `p` or `msi` would match
/// innocent text, so tests that care use longer ones.
pub const MIN_SECRET_LEN: usize = 8;

static SECRETS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn secrets() -> MutexGuard<'static, BTreeSet<String>> {
    // A test that panicked while holding the lock leaves the set intact; keep using it.
    SECRETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers a secret that must never appear on any plugin's stderr (ignored when shorter than
/// [`MIN_SECRET_LEN`]; surrounding whitespace is trimmed).
pub fn register(secret: impl AsRef<str>) {
    let secret = secret.as_ref().trim();
    if secret.len() >= MIN_SECRET_LEN {
        secrets().insert(secret.to_owned());
    }
}

/// Registers the secrets found in a JSON text (a fake's body, a config or key file): every string
/// value under a key that names a secret, at any depth, and each line of a PEM private key. Text
/// that is not JSON registers nothing.
pub fn register_json(text: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(text) else {
        return;
    };
    register_value(None, &value);
}

fn register_value(key: Option<&str>, value: &serde_json::Value) {
    match value {
        serde_json::Value::String(s) if key.is_some_and(is_secret_json_key) => {
            register(s);
            // A PEM key leaks line by line as easily as whole: register each base64 line too.
            for line in s.lines().filter(|l| !l.starts_with("-----")) {
                register(line);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                register_value(Some(k), v);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                register_value(key, v);
            }
        }
        _ => {}
    }
}

/// JSON keys whose string values are secrets: `access_token`, `refresh_token`, `id_token`,
/// `authorizationToken`, `SecretAccessKey`, `Token`, `SessionToken`, `password`,
/// `client_secret`, `aadClientSecret`, `private_key`, a Docker config's `auth`, … but not `token_type`, `expires_in`,
/// `token_uri` or `AccessKeyId`, which describe a secret without being one.
pub fn is_secret_json_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let names_secret = ["token", "secret", "password", "private_key", "privatekey"]
        .iter()
        .any(|w| k.contains(w));
    let describes_one = ["type", "expir", "file", "endpoint", "lifetime"]
        .iter()
        .any(|w| k.contains(w))
        || ["uri", "url", "id"].iter().any(|w| k.ends_with(w));
    // A Docker config's `auth` is base64 `user:password`.
    (names_secret && !describes_one) || k == "auth"
}

/// Environment variable names whose values are secrets: they contain `SECRET`, `TOKEN`,
/// `PASSWORD` or `KEY`, and do not name a file, directory, URL, endpoint or identifier
/// (`AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` are; `AWS_WEB_IDENTITY_TOKEN_FILE`,
/// `AWS_ACCESS_KEY_ID` and `CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR` are not).
pub fn is_secret_env_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    let names_secret = ["SECRET", "TOKEN", "PASSWORD", "KEY"]
        .iter()
        .any(|w| n.contains(w));
    let describes_one = [
        "_FILE",
        "_PATH",
        "_DIR",
        "_URL",
        "_URI",
        "_ENDPOINT",
        "_ID",
        "_TTL",
        "_CACHE",
    ]
    .iter()
    .any(|w| n.ends_with(w));
    names_secret && !describes_one
}

/// The registered secrets that occur in `text`.
pub fn leaked_in(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    secrets()
        .iter()
        .filter(|s| text.contains(s.as_str()))
        .cloned()
        .collect()
}

/// Panics when `text` (a plugin's stderr, say) holds any registered secret.
pub fn assert_no_leak(text: &str, what: &str) {
    let leaked = leaked_in(text);
    assert!(
        leaked.is_empty(),
        "secret(s) {leaked:?} leaked to {what}:\n{text}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Plugin;
    use kcp_kubelet::ApiVersion;

    #[test]
    fn names_and_keys() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AZURE_CLIENT_SECRET",
            "REGISTRY_PASSWORD",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "AWS_ACCESS_KEY_ID",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AZURE_FEDERATED_TOKEN_FILE",
            "CREDENTIAL_PROVIDER_TOKEN_CACHE",
            "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR",
            "AWS_REGION",
            "PATH",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
        for key in [
            "access_token",
            "refresh_token",
            "authorizationToken",
            "SecretAccessKey",
            "Token",
            "aadClientSecret",
            "private_key",
            "client_secret",
            "auth",
        ] {
            assert!(is_secret_json_key(key), "{key}");
        }
        for key in [
            "token_type",
            "expires_in",
            "token_uri",
            "AccessKeyId",
            "private_key_id",
            "ext_expires_in",
        ] {
            assert!(!is_secret_json_key(key), "{key}");
        }
    }

    #[test]
    fn json_bodies_register_their_secrets() {
        register_json(
            br#"{"token_type":"Bearer","access_token":"json-registered-access-1","nested":{"items":[{"SecretAccessKey":"json-registered-secret-2"}]},"private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n","expires_in":"json-not-registered-3"}"#,
        );
        let text =
            "x json-registered-access-1 json-registered-secret-2 json-not-registered-3 Bearer";
        let mut leaked = leaked_in(text);
        leaked.sort();
        assert_eq!(
            leaked,
            vec!["json-registered-access-1", "json-registered-secret-2"]
        );
        assert_eq!(
            leaked_in("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
            vec!["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]
        );
        assert!(leaked_in("not json at all").is_empty());
        register("short");
        assert!(leaked_in("short").is_empty(), "too short to scan");
    }

    /// The scan can fail: a run whose stderr carries a registered secret panics, one that carries
    /// an unregistered string does not.
    #[test]
    fn a_planted_secret_on_stderr_fails_the_run() {
        let leaky = |value: &str| {
            Plugin::new("/bin/sh")
                .args(["-c", "cat >/dev/null; echo \"oops: $LEAK\" >&2; exit 1"])
                .env("LEAK", value)
        };
        let clean = leaky("harmless-value-not-registered").raw(b"{}");
        assert_eq!(clean.exec.exit_code, Some(1));
        assert!(clean.stderr().contains("harmless-value-not-registered"));

        let planted = "planted-secret-Vb42xx";
        let caught = std::panic::catch_unwind(|| {
            leaky(planted).secret(planted).raw(b"{}");
        });
        let message = caught
            .expect_err("the scan missed a planted secret")
            .downcast::<String>()
            .map(|s| *s)
            .unwrap_or_default();
        assert!(
            message.contains(planted) && message.contains("leaked to stderr"),
            "{message}"
        );

        // Registered through a secret-looking variable name, and through the request's token.
        let via_env = std::panic::catch_unwind(|| {
            Plugin::new("/bin/sh")
                .args(["-c", "cat >/dev/null; echo \"$REGISTRY_PASSWORD\" >&2"])
                .env("REGISTRY_PASSWORD", "env-registered-Qw19")
                .raw(b"{}");
        });
        assert!(
            via_env.is_err(),
            "an env secret on stderr must fail the run"
        );
        let via_token = std::panic::catch_unwind(|| {
            Plugin::new("/bin/sh")
                .args(["-c", "cat >&2"])
                .request_with_token(
                    ApiVersion::V1,
                    "reg.example.com/app",
                    Some("sa-token-registered-Zt07"),
                    &Default::default(),
                );
        });
        assert!(
            via_token.is_err(),
            "the request's token echoed to stderr must fail the run"
        );
        // Stdout is where credentials belong: not scanned.
        let on_stdout = Plugin::new("/bin/sh")
            .args(["-c", "cat >/dev/null; echo planted-secret-Vb42xx"])
            .raw(b"{}");
        assert_eq!(on_stdout.stdout(), "planted-secret-Vb42xx\n");
    }
}
