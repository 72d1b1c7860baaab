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
use kcp_kubelet_emulation::exec::{DecodeContext, ExecOutcome, PluginExec, decode_response};
use kcp_plugin::cache_hint::JITTER_ENV;
use kcp_plugin::safe_file;
use kcp_plugin::token_cache::{
    DIR_ENV, ENABLE_ENV, PRINT_KEY_ENV, PublishedEntry, SHARED_IDENTITY_ENV,
};

use crate::config::Target;
use crate::entry::Entry;

/// A provider run's stderr is quoted in a failure at most this long.
const MAX_QUOTED_STDERR: usize = 400;
/// An entry file is read up to this size (the token cache's own entries are far smaller).
const MAX_ENTRY_FILE: u64 = 64 * 1024;

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
        exec.env.extend(
            [
                (ENABLE_ENV, "true".to_owned()),
                (DIR_ENV, cache_dir.display().to_string()),
                (SHARED_IDENTITY_ENV, shared_identity.to_owned()),
                (JITTER_ENV, "0".to_owned()),
                (PRINT_KEY_ENV, "false".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        exec.timeout = timeout;
        Fetcher {
            cache_dir,
            exec,
            image: target.image.clone(),
        }
    }

    fn request(&self) -> Vec<u8> {
        encode_request(ApiVersion::V1, &self.image, None, &BTreeMap::new())
    }

    /// Runs the provider in key-only mode (`CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`): no network
    /// call, no cache read or write; returns its stdout, the one line naming the entry file it
    /// would write. Blocking.
    pub fn run_key_only(&self) -> Result<Vec<u8>, String> {
        let mut exec = self.exec.clone();
        exec.env.push((PRINT_KEY_ENV.to_owned(), "true".to_owned()));
        let outcome = exec.run(&self.request());
        failure(&exec, &outcome).map_or(Ok(outcome.stdout), Err)
    }

    /// Removes every entry from the cache directory, runs the provider once, and returns the
    /// entry it wrote under `file` (the name its key-only run gave). Blocking: the caller runs
    /// it off the async runtime.
    pub fn fetch(&self, file: &str) -> Result<Entry, String> {
        let owner = safe_file::current_owner();
        safe_file::prepare_dir(&self.cache_dir, &owner)
            .map_err(|e| format!("the cache directory {}: {e}", self.cache_dir.display()))?;
        // Without this the provider would answer from its own cache instead of fetching.
        for name in self.entry_names() {
            let path = self.cache_dir.join(&name);
            if let Err(e) = std::fs::remove_file(&path) {
                return Err(format!("removing the old entry {}: {e}", path.display()));
            }
        }
        let outcome = self.exec.run(&self.request());
        if let Some(why) = failure(&self.exec, &outcome) {
            return Err(why);
        }
        let command = self.exec.path.display();
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
        let path = self.cache_dir.join(file);
        match safe_file::read_owned_file(&path, &owner, MAX_ENTRY_FILE) {
            Ok(Some(bytes)) => Entry::check(file, bytes, SystemTime::now()).map_err(|why| {
                format!(
                    "the entry {} it wrote is not published: {why}",
                    path.display()
                )
            }),
            Ok(None) if !self.entry_names().is_empty() => Err(format!(
                "the provider {command} wrote its entry under another name than {file}, the one its key-only run gave: its key depends on something that differs between the two runs"
            )),
            Ok(None) => Err(format!(
                "the provider {command} answered but left no token cache entry {} \
                 (a token of unknown lifetime is not cached; see the provider's log at -v=4)",
                path.display()
            )),
            Err(why) => Err(format!("reading the entry {}: {why}", path.display())),
        }
    }

    /// The names of the token cache entry files in the cache directory.
    fn entry_names(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.cache_dir) else {
            return Vec::new();
        };
        dir.flatten()
            .map(|item| item.file_name().to_string_lossy().into_owned())
            .filter(|name| PublishedEntry::is_entry_name(name))
            .collect()
    }
}

/// Why a run failed before its answer could be judged: it did not start, timed out, or exited
/// other than 0 (quoting its last stderr line).
fn failure(exec: &PluginExec, outcome: &ExecOutcome) -> Option<String> {
    let command = exec.path.display();
    if let Some(error) = &outcome.start_error {
        return Some(format!("starting the provider {command} failed: {error}"));
    }
    if outcome.timed_out {
        return Some(format!(
            "the provider {command} did not answer within {}s and was stopped",
            exec.timeout.as_secs()
        ));
    }
    if outcome.exit_code != Some(0) {
        let code = outcome
            .exit_code
            .map_or("a signal".to_owned(), |c| format!("exit code {c}"));
        return Some(format!(
            "the provider {command} failed ({code}): {}",
            last_line(&outcome.stderr)
        ));
    }
    None
}

/// Creates the work directory (an `emptyDir` the kubelet may have made root's, open to all: the
/// controller's own files go into directories under it that [`safe_file::prepare_dir`] checks).
pub fn prepare_work_dir(dir: &Path) -> Result<(), String> {
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
