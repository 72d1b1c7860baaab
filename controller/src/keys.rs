//! Which entry file each target's provider writes, learned once at start before any API call:
//! each provider runs in key-only mode (`CREDENTIAL_PROVIDER_PRINT_CACHE_KEY`, no network call,
//! no cache read or write) with exactly the environment of its fetches, and prints the file name
//! and key a node with the same shared identity computes. A provider that cannot say, or two
//! targets that would publish the same entry, are config errors: they would fail every fetch,
//! or overwrite each other in the Secret.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::Target;
use crate::fetch::Fetcher;
use kcp_plugin::token_cache::PublishedEntry;

/// A target's entry: its file name (the Secret's key) and the key's canonical text (scope in
/// clear, identity hashed: no secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetKey {
    /// `<32 hex>.json`.
    pub file: String,
    /// The cache key's canonical text.
    pub key: String,
}

/// The one line a provider prints in key-only mode.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyLine {
    kind: String,
    file: String,
    key: String,
}

/// Runs every target's provider in key-only mode (all at once) and returns each target's
/// entry, in the targets' order; the first problem is the error, naming the target.
pub fn learn(targets: &[Target], fetchers: &[Fetcher]) -> Result<Vec<TargetKey>, String> {
    let runs: Vec<Result<Vec<u8>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = fetchers
            .iter()
            .map(|f| scope.spawn(move || f.run_key_only()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the key-only run panicked".into()))
            })
            .collect()
    });
    let mut keys = Vec::with_capacity(targets.len());
    let mut by_file: BTreeMap<String, &str> = BTreeMap::new();
    for (target, run) in targets.iter().zip(runs) {
        let key = run.and_then(|stdout| parse(&stdout)).map_err(|why| {
            format!(
                "target {}: its provider cannot say which token cache entry it writes: {why}",
                target.name
            )
        })?;
        if let Some(first) = by_file.insert(key.file.clone(), &target.name) {
            return Err(format!(
                "targets {first} and {} publish the same entry {} (key {}): one target per ECR region / ACR login server",
                target.name, key.file, key.key
            ));
        }
        tracing::debug!(
            "target {}: entry {} (key {})",
            target.name,
            key.file,
            key.key
        );
        keys.push(key);
    }
    Ok(keys)
}

/// Reads a key-only run's stdout: exactly one `TokenCacheKey` line naming an entry file.
fn parse(stdout: &[u8]) -> Result<TargetKey, String> {
    let text = std::str::from_utf8(stdout)
        .map_err(|_| "it printed something that is not text in key-only mode".to_owned())?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(line), None) = (lines.next(), lines.next()) else {
        return Err("it did not print exactly one line in key-only mode (a provider of this project's release that knows CREDENTIAL_PROVIDER_PRINT_CACHE_KEY is needed)".into());
    };
    let parsed: KeyLine = serde_json::from_str(line).map_err(|_| {
        "it did not print a TokenCacheKey line in key-only mode (a provider of this project's release that knows CREDENTIAL_PROVIDER_PRINT_CACHE_KEY is needed)".to_owned()
    })?;
    if parsed.kind != "TokenCacheKey"
        || !PublishedEntry::is_entry_name(&parsed.file)
        || parsed.key.is_empty()
    {
        return Err("its key-only line does not name a token cache entry file".into());
    }
    Ok(TargetKey {
        file: parsed.file,
        key: parsed.key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "0123456789abcdef0123456789abcdef.json";

    #[test]
    fn reads_exactly_one_key_line() {
        let line =
            format!(r#"{{"file":"{FILE}","key":"provider=ecr;region=x","kind":"TokenCacheKey"}}"#);
        assert_eq!(
            parse(format!("{line}\n").as_bytes()),
            Ok(TargetKey {
                file: FILE.into(),
                key: "provider=ecr;region=x".into()
            })
        );
        for bad in [
            String::new(),
            format!("{line}\n{line}\n"),
            line.replace("TokenCacheKey", "CredentialProviderResponse"),
            line.replace(FILE, "x.json"),
            r#"{"kind":"CredentialProviderResponse","auth":{}}"#.to_owned(),
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
