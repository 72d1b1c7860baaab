//! A token cache entry as a provider wrote it, checked before it is published: the Secret's keys
//! and values are exactly the token cache's file names and bytes (`common/plugin/src/token_cache.rs`),
//! so nodes copy them unchanged. The token inside is never shown: [`Entry`]'s `Debug` omits it.

use std::time::SystemTime;

use serde::Deserialize;

/// The layout version the token cache writes.
const ENTRY_VERSION: u32 = 1;
/// Entries are a few hundred bytes; the token cache refuses more than this too.
const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// A checked entry: its file name's stem, its bytes exactly as written, and its times.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    /// `<32 lowercase hex>`: the cache key's hash.
    pub stem: String,
    /// The file's bytes, published unchanged.
    pub bytes: Vec<u8>,
    /// Unix seconds.
    pub fetched_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("stem", &self.stem)
            .field("fetched_at", &self.fetched_at)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// The fields of an entry; the token fields are read only to check they are there.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct Fields {
    version: u32,
    key: String,
    username: String,
    password: kcp_kubelet::secret::Secret,
    expires_at: i64,
    fetched_at: i64,
    refresh_at: i64,
}

impl Entry {
    /// The Secret data key: the cache's file name.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.stem)
    }

    /// Whether it has expired at `now` (Unix seconds).
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at <= now
    }

    /// Checks a file named `name` holding `bytes`: a cache entry's name, a well-formed entry of
    /// the cache's layout, not expired at `now`. The reason for a refusal quotes nothing from
    /// the bytes.
    pub fn check(name: &str, bytes: Vec<u8>, now: SystemTime) -> Result<Entry, String> {
        let stem = stem_of(name).ok_or("not a token cache entry's file name")?;
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(format!("{} bytes, too large for an entry", bytes.len()));
        }
        let fields: Fields = serde_json::from_slice(&bytes).map_err(|e| {
            // Line and column only: serde's message may quote a value (the token).
            format!(
                "not a token cache entry (line {}, column {})",
                e.line(),
                e.column()
            )
        })?;
        if fields.version != ENTRY_VERSION {
            return Err(format!(
                "layout version {} is not {ENTRY_VERSION}",
                fields.version
            ));
        }
        if fields.fetched_at > fields.expires_at {
            return Err("fetched after it expires".into());
        }
        let entry = Entry {
            stem: stem.to_owned(),
            bytes,
            fetched_at: fields.fetched_at,
            expires_at: fields.expires_at,
        };
        if entry.expired(unix(now)) {
            return Err("expired".into());
        }
        Ok(entry)
    }
}

/// The stem of a cache entry's file name (`<32 lowercase hex>.json`), else `None`.
pub fn stem_of(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".json")?;
    (stem.len() == 32 && stem.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then_some(stem)
}

/// Unix seconds of `time` (0 before 1970).
pub fn unix(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEM: &str = "0123456789abcdef0123456789abcdef";

    fn entry(expires_at: i64) -> Vec<u8> {
        format!(
            r#"{{"version":1,"key":"k","username":"AWS","password":"tok-value","expiresAt":{expires_at},"fetchedAt":100,"refreshAt":150}}"#
        )
        .into_bytes()
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
    }

    #[test]
    fn takes_a_well_formed_live_entry() {
        let name = format!("{STEM}.json");
        let e = Entry::check(&name, entry(200), at(150)).unwrap();
        assert_eq!(
            (e.stem.as_str(), e.fetched_at, e.expires_at),
            (STEM, 100, 200)
        );
        assert_eq!(e.file_name(), name);
        assert_eq!(e.bytes, entry(200));
        assert!(!format!("{e:?}").contains("tok-value"));
    }

    #[test]
    fn refuses_the_rest_without_quoting_it() {
        let name = format!("{STEM}.json");
        assert_eq!(
            Entry::check(&name, entry(200), at(200)).unwrap_err(),
            "expired"
        );
        for bad in [
            "x.json",
            "0123.json",
            &format!("{}.json", STEM.to_uppercase()),
            &format!("{STEM}.lock"),
        ] {
            assert!(Entry::check(bad, entry(200), at(150)).is_err(), "{bad}");
        }
        let extra = String::from_utf8(entry(200))
            .unwrap()
            .replace("{\"version\"", "{\"x\":\"tok-value\",\"version\"");
        let reason = Entry::check(&name, extra.into_bytes(), at(150)).unwrap_err();
        assert!(!reason.contains("tok-value"), "{reason}");
        let v2 = String::from_utf8(entry(200))
            .unwrap()
            .replace("\"version\":1", "\"version\":2");
        assert!(
            Entry::check(&name, v2.into_bytes(), at(150))
                .unwrap_err()
                .contains("version 2")
        );
    }
}
