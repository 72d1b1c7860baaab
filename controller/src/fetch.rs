//! Running a target's provider as the kubelet would, and taking the token cache entry it wrote.
//!
//! The controller never builds a token itself: the provider binary fetches it with its own code
//! and identity and writes it into a token cache directory of the controller's (`<work-dir>/<target>`),
//! under the shared identity's key, so the entry's name and bytes are exactly what a node's
//! provider would look for. The token passes through this process only as opaque entry bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kcp_kubelet::protocol::{ApiVersion, encode_request};
use kcp_kubelet_emulation::exec::{DecodeContext, PluginExec, decode_response};

use crate::config::Target;
use crate::entry::Entry;
use kcp_plugin::token_cache::PublishedEntry;

/// A provider run's stderr is quoted in a failure at most this long.
const MAX_QUOTED_STDERR: usize = 400;

/// Runs one target's provider.
#[derive(Debug, Clone)]
pub struct Fetcher {
    /// `<work-dir>/<target>`: the provider's token cache directory.
    pub cache_dir: PathBuf,
    exec: PluginExec,
    image: String,
}

impl Fetcher {
    /// The run of `target`'s provider with its cache in `work_dir`, killed after `timeout`.
    pub fn new(target: &Target, shared_identity: &str, work_dir: &Path, timeout: Duration) -> Self {
        let cache_dir = work_dir.join(&target.name);
        let mut exec = PluginExec::new(&target.command);
        exec.args = target.args.clone();
        exec.env = target
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        // Added last, so they win (config checks already refuse a target setting them).
        exec.env.extend([
            (
                "CREDENTIAL_PROVIDER_TOKEN_CACHE_DIR".to_owned(),
                cache_dir.display().to_string(),
            ),
            (
                "CREDENTIAL_PROVIDER_TOKEN_CACHE_SHARED_IDENTITY".to_owned(),
                shared_identity.to_owned(),
            ),
            (
                "CREDENTIAL_PROVIDER_CACHE_JITTER".to_owned(),
                "0".to_owned(),
            ),
        ]);
        exec.timeout = timeout;
        Fetcher {
            cache_dir,
            exec,
            image: target.image.clone(),
        }
    }

    /// Removes every entry from the cache directory, runs the provider once, and returns the
    /// entry it wrote (the newest by `fetchedAt` when there are several). Blocking: the caller
    /// runs it off the async runtime.
    pub fn fetch(&self) -> Result<Entry, String> {
        prepare_dir(&self.cache_dir)?;
        // Without this the provider would answer from its own cache instead of fetching.
        for (name, _) in self.entries_on_disk() {
            let path = self.cache_dir.join(&name);
            if let Err(e) = std::fs::remove_file(&path) {
                return Err(format!("removing the old entry {}: {e}", path.display()));
            }
        }
        let request = encode_request(ApiVersion::V1, &self.image, None, &BTreeMap::new());
        let outcome = self.exec.run(&request);
        let command = self.exec.path.display();
        if let Some(error) = &outcome.start_error {
            return Err(format!("starting the provider {command} failed: {error}"));
        }
        if outcome.timed_out {
            return Err(format!(
                "the provider {command} did not answer within {}s and was stopped",
                self.exec.timeout.as_secs()
            ));
        }
        if outcome.exit_code != Some(0) {
            let code = outcome
                .exit_code
                .map_or("a signal".to_owned(), |c| format!("exit code {c}"));
            return Err(format!(
                "the provider {command} failed ({code}): {}",
                last_line(&outcome.stderr)
            ));
        }
        let ctx = DecodeContext {
            expected: ApiVersion::V1,
            image: &self.image,
            service_account_token: None,
            cache_type_token: false,
        };
        if let Err(e) = decode_response(&outcome.stdout, ctx) {
            return Err(format!(
                "the provider {command} answered what the kubelet would refuse: {}",
                e.redacted_kubelet_message()
            ));
        }
        self.entries_on_disk()
            .into_iter()
            .max_by_key(|(_, e)| e.fetched_at)
            .map(|(_, e)| e)
            .ok_or_else(|| {
                format!(
                    "the provider {command} answered but left no usable token cache entry in {} \
                     (a token of unknown lifetime is not cached; see the provider's log at -v=4)",
                    self.cache_dir.display()
                )
            })
    }

    /// The checked entries in the cache directory, by file name; others are ignored.
    fn entries_on_disk(&self) -> Vec<(String, Entry)> {
        let Ok(dir) = std::fs::read_dir(&self.cache_dir) else {
            return Vec::new();
        };
        let now = SystemTime::now();
        let mut found = Vec::new();
        for item in dir.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if !PublishedEntry::is_entry_name(&name) {
                continue;
            }
            let Ok(bytes) = std::fs::read(item.path()) else {
                continue;
            };
            match Entry::check(&name, bytes, now) {
                Ok(e) => found.push((name, e)),
                Err(reason) => {
                    tracing::debug!(file = %item.path().display(), "ignoring a cache file: {reason}")
                }
            }
        }
        found
    }
}

/// Creates `dir` closed to other users (the token cache refuses a directory that is not).
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// The last non-empty line of a provider's stderr (its one failure line), on one line and cut
/// short. Providers never write a secret to stderr.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(nothing on stderr)");
    let mut line = kcp_plugin::logging::one_line(line);
    if line.len() > MAX_QUOTED_STDERR {
        let mut cut = MAX_QUOTED_STDERR;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_the_last_stderr_line_only() {
        assert_eq!(
            last_line(b"I0101 a\nE0101 failed: x\n\n"),
            "E0101 failed: x"
        );
        assert_eq!(last_line(b""), "(nothing on stderr)");
        let long = "é".repeat(500);
        assert!(last_line(long.as_bytes()).chars().count() <= MAX_QUOTED_STDERR / 2 + 1);
    }
}
