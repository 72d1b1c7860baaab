//! Proofs about the token cache: many execs at once, what they leave on disk, and
//! service-account tokens with real claims to key entries by.

use std::collections::BTreeMap;
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use super::{Outcome, Plugin};
use kcp_kubelet::protocol::ApiVersion;

/// Runs `n` execs of `plugin` for `image` (with an optional service-account token and
/// annotations), all released at the same instant; returns their outcomes in start order.
pub fn herd(
    plugin: &Plugin,
    n: usize,
    image: &str,
    token: Option<&str>,
    annotations: &BTreeMap<String, String>,
) -> Vec<Outcome> {
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let plugin = plugin.clone();
            let barrier = Arc::clone(&barrier);
            let image = image.to_owned();
            let token = token.map(str::to_owned);
            let annotations = annotations.clone();
            std::thread::spawn(move || {
                barrier.wait();
                plugin.request_with_token(ApiVersion::V1, &image, token.as_deref(), &annotations)
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("exec thread panicked"))
        .collect()
}

/// The warnings a herd's execs logged, one per line, prefixed with the exec's index: why an
/// exec fetched instead of waiting on the lock, for a failing assertion to show.
pub fn herd_warnings(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        for line in outcome.stderr().lines().filter(|l| l.contains(" WARN ")) {
            out.push_str(&format!("exec {i}: {line}\n"));
        }
    }
    out
}

/// One entry of a token cache directory, as the plugin wrote it.
#[derive(Debug)]
pub struct CacheEntry {
    /// Its path.
    pub path: PathBuf,
    /// Its raw text (holds the credential: never print it outside a failing assertion).
    pub text: String,
    /// Its JSON.
    pub json: serde_json::Value,
}

impl CacheEntry {
    /// Rewrites the entry's expiry (Unix seconds) in place, keeping its mode: as if time had
    /// passed since it was written.
    pub fn set_expires_at(&self, unix_secs: u64) {
        let mut json = self.json.clone();
        json["expiresAt"] = serde_json::json!(unix_secs);
        let bytes = serde_json::to_vec(&json).expect("entry JSON");
        std::fs::write(&self.path, bytes).expect("rewriting the entry");
    }
}

/// Asserts that `what` has `mode` and belongs to this user (for Windows binaries: that nothing
/// is open to everyone). The harness runs on Linux (Windows binaries under wine), so elsewhere
/// there is nothing to read the mode from.
fn assert_private(meta: &std::fs::Metadata, what: &str, mode: u32, windows: bool) {
    #[cfg(unix)]
    {
        if windows {
            assert_eq!(meta.mode() & 0o007, 0, "{what} open to everyone");
        } else {
            assert_eq!(meta.mode() & 0o777, mode, "{what} mode");
        }
        // SAFETY: geteuid has no preconditions.
        assert_eq!(meta.uid(), unsafe { libc::geteuid() }, "{what} owner");
    }
    #[cfg(not(unix))]
    let _ = (meta, what, mode, windows);
}

/// Asserts that `dir` is `0700` and holds exactly `n` entries, each a `0600` regular file owned
/// by this user with a well-formed entry (for Windows binaries: closed to everyone else); returns them sorted by path. Lock files and nothing
/// else may sit beside them (no leftover temporary files).
pub fn cache_entries(dir: &Path, n: usize) -> Vec<CacheEntry> {
    let meta = std::fs::symlink_metadata(dir).expect("the cache directory exists");
    assert!(meta.is_dir());
    // Windows binaries under wine: their access lists show through as the Unix mode wine maps
    // them to; what must hold is that "other" (Windows' Everyone) gets nothing.
    let windows = super::windows_target();
    assert_private(&meta, "cache directory", 0o700, windows);
    let mut entries = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("readable cache directory")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    for name in &names {
        let path = dir.join(name);
        let meta = std::fs::symlink_metadata(&path).expect("entry metadata");
        assert!(meta.is_file(), "{name} is not a regular file");
        assert_private(&meta, name, 0o600, windows);
        if name.ends_with(".lock") {
            continue;
        }
        assert!(
            name.ends_with(".json"),
            "unexpected file {name} in the cache directory"
        );
        let text = std::fs::read_to_string(&path).expect("entry text");
        let json: serde_json::Value = serde_json::from_str(&text).expect("entry is JSON");
        for field in [
            "version",
            "key",
            "username",
            "password",
            "expiresAt",
            "fetchedAt",
            "refreshAt",
        ] {
            assert!(json.get(field).is_some(), "{name} has no {field}");
        }
        entries.push(CacheEntry { path, text, json });
    }
    assert_eq!(
        entries.len(),
        n,
        "cache entries in {}: {names:?}",
        dir.display()
    );
    entries
}

/// A projected service-account token as the kubelet sends it: an (unsigned) JWT whose
/// `kubernetes.io` claims name the namespace, account and pod, valid for an hour.
pub fn service_account_token(
    audience: &str,
    namespace: &str,
    name: &str,
    uid: &str,
    pod: &str,
) -> String {
    let claims = serde_json::json!({
        "aud": [audience],
        "exp": super::unix_now() + 3600,
        "iss": "https://kubernetes.default.svc",
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "kubernetes.io": {
            "namespace": namespace,
            "pod": {"name": pod, "uid": format!("{pod}-uid")},
            "serviceaccount": {"name": name, "uid": uid},
        },
    });
    unsigned_jwt(r#"{"alg":"RS256","kid":"test"}"#, &claims)
}

/// A JWT with this header and these claims and a dummy signature, as a client that does not
/// verify it (a plugin reading a token's expiry) sees one.
pub fn unsigned_jwt(header: &str, claims: &serde_json::Value) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!("{}.{}.c2lnbmF0dXJl", b64(header), b64(&claims.to_string()))
}
