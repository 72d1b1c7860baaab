//! A token cache entry as a provider wrote it, checked before it is published: the Secret's keys
//! and values are exactly the token cache's file names and bytes (`common/plugin/src/token_cache.rs`),
//! so nodes copy them unchanged. The token inside is never shown: [`Entry`]'s `Debug` omits it.

use std::time::SystemTime;

use kcp_plugin::time::unix_secs;
use kcp_plugin::token_cache::PublishedEntry;

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

impl Entry {
    /// The Secret data key: the cache's file name.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.stem)
    }

    /// Whether it has expired at `now` (Unix seconds).
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at <= now
    }

    /// Checks a file named `name` holding `bytes` with the token cache's own rules for a
    /// published entry ([`PublishedEntry::parse`]: its name, size, layout and times), and that
    /// it has not expired at `now`. The reason for a refusal quotes nothing from the bytes.
    pub fn check(name: &str, bytes: Vec<u8>, now: SystemTime) -> Result<Entry, String> {
        let published = PublishedEntry::parse(name, &bytes)?;
        let entry = Entry {
            stem: published.stem().to_owned(),
            bytes,
            fetched_at: published.fetched_at(),
            expires_at: published.expires_at(),
        };
        if entry.expired(unix_secs(now)) {
            return Err("expired".into());
        }
        Ok(entry)
    }
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
