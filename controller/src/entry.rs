//! A token cache entry as a provider wrote it, checked before it is published or taken from the
//! Secret: the Secret's keys and values are exactly the token cache's file names and bytes
//! (`common/plugin/src/token_cache.rs`), so nodes copy them unchanged. The token inside is never
//! shown: [`Entry`]'s `Debug` omits it.

use std::time::{Duration, SystemTime};

use kcp_plugin::time::unix_secs;
use kcp_plugin::token_cache::PublishedEntry;

/// An entry in the Secret is taken over only with at least this much life left.
pub const ADOPT_MARGIN: Duration = Duration::from_secs(30);
/// An entry fetched further than this in the future (by our clock) is not taken over: it would
/// look newer than every entry this replica fetches.
pub const FUTURE_TOLERANCE: Duration = Duration::from_secs(5 * 60);

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

    /// Seconds of life left at `now` (Unix seconds), never negative.
    pub fn life_left(&self, now: i64) -> i64 {
        self.expires_at.saturating_sub(now).max(0)
    }

    /// Checks a file named `name` holding `bytes` with the token cache's own rules for a
    /// published entry ([`PublishedEntry::parse`]: its name, size, layout, times, its issuer's
    /// longest life, its key's hash), and that it has not expired at `now`. The reason for a
    /// refusal quotes nothing from the bytes.
    pub fn check(name: &str, bytes: Vec<u8>, now: SystemTime) -> Result<Entry, String> {
        let entry = Entry::parse(name, bytes)?;
        if entry.expired(unix_secs(now)) {
            return Err("expired".into());
        }
        Ok(entry)
    }

    /// [`Entry::check`] but for expiry.
    pub fn parse(name: &str, bytes: Vec<u8>) -> Result<Entry, String> {
        let published = PublishedEntry::parse(name, &bytes)?;
        Ok(Entry {
            stem: published.stem().to_owned(),
            bytes,
            fetched_at: published.fetched_at(),
            expires_at: published.expires_at(),
        })
    }

    /// Whether an entry found in the Secret may be taken over at `now`: more than
    /// [`ADOPT_MARGIN`] of life left, and not fetched in the future. The reasons hold no number
    /// that changes with time, so a refusal is logged once.
    pub fn adoptable(&self, now: SystemTime) -> Result<(), String> {
        let now = unix_secs(now);
        let margin = i64::try_from(ADOPT_MARGIN.as_secs()).unwrap_or(i64::MAX);
        let future = i64::try_from(FUTURE_TOLERANCE.as_secs()).unwrap_or(i64::MAX);
        if self.expired(now) {
            return Err("expired".into());
        }
        if self.life_left(now) <= margin {
            return Err(format!("it has {margin}s of life left or less"));
        }
        if self.fetched_at > now.saturating_add(future) {
            return Err("it was fetched in the future by this replica's clock".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_plugin::token_cache::{CacheKey, Issuer};

    fn key() -> CacheKey {
        CacheKey::new(Issuer::Ecr).scope("region", "us-east-1")
    }

    fn entry(fetched_at: i64, expires_at: i64) -> Vec<u8> {
        format!(
            r#"{{"version":1,"key":"{}","username":"AWS","password":"tok-value","expiresAt":{expires_at},"fetchedAt":{fetched_at},"refreshAt":{fetched_at}}}"#,
            key().canonical()
        )
        .into_bytes()
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn takes_a_well_formed_live_entry() {
        let name = key().file_name();
        let e = Entry::check(&name, entry(100, 200), at(150)).unwrap();
        assert_eq!((e.fetched_at, e.expires_at), (100, 200));
        assert_eq!(e.file_name(), name);
        assert_eq!(e.bytes, entry(100, 200));
        assert!(!format!("{e:?}").contains("tok-value"));
    }

    #[test]
    fn refuses_the_rest_without_quoting_it() {
        let name = key().file_name();
        assert_eq!(
            Entry::check(&name, entry(100, 200), at(200)).unwrap_err(),
            "expired"
        );
        let other = CacheKey::new(Issuer::Ecr).scope("region", "eu-west-1");
        for bad in [
            "x.json".to_owned(),
            name.to_uppercase(),
            name.replace(".json", ".lock"),
            other.file_name(),
        ] {
            assert!(
                Entry::check(&bad, entry(100, 200), at(150)).is_err(),
                "{bad}"
            );
        }
        let extra = String::from_utf8(entry(100, 200))
            .unwrap()
            .replace("{\"version\"", "{\"x\":\"tok-value\",\"version\"");
        let reason = Entry::check(&name, extra.into_bytes(), at(150)).unwrap_err();
        assert!(!reason.contains("tok-value"), "{reason}");
        // Longer than an ECR token ever lives.
        let forever = entry(100, 100 + 13 * 3600);
        assert!(
            Entry::check(&name, forever, at(150))
                .unwrap_err()
                .contains("12h")
        );
    }

    #[test]
    fn takes_over_only_what_has_life_left_and_was_not_fetched_in_the_future() {
        let name = key().file_name();
        let e = Entry::check(&name, entry(1000, 5000), at(1000)).unwrap();
        assert_eq!(e.adoptable(at(2000)), Ok(()));
        assert!(
            e.adoptable(at(4970))
                .unwrap_err()
                .contains("30s of life left")
        );
        assert!(e.adoptable(at(600)).unwrap_err().contains("in the future"));
    }
}
