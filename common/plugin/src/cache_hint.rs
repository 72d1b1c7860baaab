//! `cacheDuration` from a credential's real expiry, and fleet jitter: how our providers choose the
//! value the kubelet's contract carries (`kcp_kubelet::duration::GoDuration`), not part of it.
//!
//! The kubelet never refreshes a cached credential early and never drops one on a 401, so the
//! duration we hand it must end before the credential does. [`CachePolicy`] turns an expiry and the
//! current time into a Go duration: never negative, `0s` (do not cache) when the credential is
//! expired, about to expire, or of unknown lifetime. Whole seconds only, as upstream plugins answer.

use std::time::{Duration, SystemTime};

use kcp_kubelet::duration::GoDuration;

use crate::time::unix_secs;

/// Default time kept between the end of the kubelet's cache entry and the credential's expiry.
pub const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_secs(5 * 60);

/// How a provider turns remaining credential life into `cacheDuration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePolicy {
    /// Remaining life minus a margin (`0s` when less than the margin is left).
    RemainingMinus(Duration),
    /// Half the remaining life, truncated to whole seconds, as the upstream ECR plugin answers.
    HalfRemaining,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy::RemainingMinus(DEFAULT_SAFETY_MARGIN)
    }
}

impl CachePolicy {
    /// The `cacheDuration` for a credential that expires at `expires_at` (unknown: `None`), seen at `now`.
    pub fn cache_duration(self, expires_at: Option<SystemTime>, now: SystemTime) -> GoDuration {
        let Some(expires_at) = expires_at else {
            return GoDuration::ZERO;
        };
        // Whole seconds on both sides, like Go's `expiresAt.Unix() - now.Unix()`, saturating:
        // an expiry at the end of time seen from before the epoch (or the reverse) would
        // overflow i64, and the callers hand in whatever a server wrote.
        let remaining = unix_secs(expires_at).saturating_sub(unix_secs(now));
        let secs = match self {
            CachePolicy::HalfRemaining => remaining / 2,
            CachePolicy::RemainingMinus(margin) => {
                remaining.saturating_sub(i64::try_from(margin.as_secs()).unwrap_or(i64::MAX))
            }
        };
        GoDuration::from_secs(secs.max(0))
    }

    /// [`Self::cache_duration`] further capped by another expiry (e.g. the assumed role's session),
    /// so the answer never outlives whichever ends first.
    pub fn cache_duration_capped(
        self,
        expires_at: Option<SystemTime>,
        also_expires_at: Option<SystemTime>,
        now: SystemTime,
    ) -> GoDuration {
        // An unknown credential expiry stays unknown, whatever the other one says.
        let first = expires_at.map(|a| also_expires_at.map_or(a, |b| a.min(b)));
        self.cache_duration(first, now)
    }
}

/// Default fleet jitter: `cacheDuration` is lowered by a random 0–10 %.
pub const DEFAULT_JITTER_PERCENT: u8 = 10;
/// Environment variable for the jitter percentage (`0` turns it off).
pub const JITTER_ENV: &str = "CREDENTIAL_PROVIDER_CACHE_JITTER";

/// Lowers a positive `duration` by a random fraction between 0 and `percent` %, in whole
/// seconds. Nodes that started together got tokens together; without jitter their kubelet
/// caches expire in the same second and the whole fleet calls the token API at once.
pub fn with_jitter(duration: GoDuration, percent: u8) -> GoDuration {
    jitter_with(duration, percent, fastrand::f64())
}

/// [`with_jitter`] with the random draw `unit` in `[0, 1)` given.
fn jitter_with(duration: GoDuration, percent: u8, unit: f64) -> GoDuration {
    if percent == 0 || duration.as_nanos() <= 0 {
        return duration;
    }
    let secs = duration.as_nanos() / 1_000_000_000;
    let fraction = f64::from(percent.min(100)) / 100.0 * unit.clamp(0.0, 1.0);
    let cut = (secs as f64 * fraction).round() as i64;
    GoDuration::from_secs((secs - cut).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn half_remaining_matches_upstream_ecr() {
        let p = CachePolicy::HalfRemaining;
        assert_eq!(
            p.cache_duration(Some(at(NOW + 12 * 3600)), at(NOW))
                .to_string(),
            "6h0m0s"
        );
        // One second less of life: truncating division gives 5h59m59s, as upstream.
        assert_eq!(
            p.cache_duration(Some(at(NOW + 12 * 3600 - 1)), at(NOW)),
            GoDuration::from_secs(21599)
        );
        assert_eq!(
            p.cache_duration(Some(at(NOW + 1)), at(NOW)),
            GoDuration::ZERO
        );
    }

    #[test]
    fn expired_or_unknown_is_zero_never_negative() {
        for p in [CachePolicy::HalfRemaining, CachePolicy::default()] {
            assert_eq!(p.cache_duration(None, at(NOW)), GoDuration::ZERO);
            assert_eq!(p.cache_duration(Some(at(NOW)), at(NOW)), GoDuration::ZERO);
            // moto's expiresAt lies in 2015.
            assert_eq!(
                p.cache_duration(Some(at(1_420_070_400)), at(NOW)),
                GoDuration::ZERO
            );
            assert_eq!(
                p.cache_duration(
                    Some(SystemTime::UNIX_EPOCH - Duration::from_secs(5)),
                    at(NOW)
                ),
                GoDuration::ZERO
            );
        }
    }

    #[test]
    fn remaining_minus_margin() {
        let p = CachePolicy::RemainingMinus(Duration::from_secs(300));
        assert_eq!(
            p.cache_duration(Some(at(NOW + 3600)), at(NOW)),
            GoDuration::from_secs(3300)
        );
        assert_eq!(
            p.cache_duration(Some(at(NOW + 300)), at(NOW)),
            GoDuration::ZERO
        );
        assert_eq!(
            p.cache_duration(Some(at(NOW + 299)), at(NOW)),
            GoDuration::ZERO
        );
        assert_eq!(CachePolicy::default(), p);
    }

    #[test]
    fn jitter_lowers_by_at_most_the_percentage() {
        let d = GoDuration::from_secs(6 * 3600);
        assert_eq!(jitter_with(d, 10, 0.0), d);
        assert_eq!(
            jitter_with(d, 10, 1.0),
            GoDuration::from_secs(6 * 3600 - 2160)
        );
        assert_eq!(
            jitter_with(d, 10, 0.5),
            GoDuration::from_secs(6 * 3600 - 1080)
        );
        assert_eq!(jitter_with(d, 0, 0.9), d, "0 turns it off");
        assert_eq!(jitter_with(GoDuration::ZERO, 10, 0.9), GoDuration::ZERO);
        assert_eq!(jitter_with(d, 100, 1.0), GoDuration::ZERO);
        // Random draws stay inside [90 %, 100 %] and are not all equal.
        let seen: std::collections::BTreeSet<i64> = (0..200)
            .map(|_| with_jitter(d, 10).as_nanos() / 1_000_000_000)
            .collect();
        assert!(seen.iter().all(|s| (19440..=21600).contains(s)), "{seen:?}");
        assert!(seen.len() > 50, "{} distinct values", seen.len());
    }

    /// The extremes `SystemTime` holds on either side: before, an expiry at the end of time seen
    /// from before the epoch overflowed the subtraction (a panic in debug builds, a wrapped
    /// negative and so `0s` in release), as did the reverse.
    #[test]
    fn extreme_expiries_saturate_never_overflow() {
        let max = i64::MAX.unsigned_abs();
        let (end, start) = (
            SystemTime::UNIX_EPOCH + Duration::from_secs(max),
            SystemTime::UNIX_EPOCH - Duration::from_secs(max),
        );
        let longest = GoDuration::from_secs(i64::MAX);
        for p in [CachePolicy::HalfRemaining, CachePolicy::default()] {
            // Past: zero, however far back.
            assert_eq!(p.cache_duration(Some(start), at(NOW)), GoDuration::ZERO);
            assert_eq!(p.cache_duration(Some(start), end), GoDuration::ZERO);
            assert_eq!(
                p.cache_duration(Some(at(NOW - 1)), at(NOW)),
                GoDuration::ZERO
            );
            // Far future: the longest Go duration, never a wrap.
            assert_eq!(p.cache_duration(Some(end), at(NOW)), longest);
            assert_eq!(p.cache_duration(Some(end), start), longest);
            assert_eq!(p.cache_duration(Some(end), end), GoDuration::ZERO);
            assert_eq!(p.cache_duration(Some(start), start), GoDuration::ZERO);
        }
        // The margin itself at the extreme: nothing is left.
        let p = CachePolicy::RemainingMinus(Duration::from_secs(u64::MAX));
        assert_eq!(p.cache_duration(Some(end), start), GoDuration::ZERO);
        assert_eq!(p.cache_duration(Some(end), at(NOW)), GoDuration::ZERO);
        assert_eq!(
            CachePolicy::HalfRemaining.cache_duration(Some(end), at(0)),
            GoDuration::from_secs(i64::MAX / 2)
        );
    }

    #[test]
    fn capped_by_the_earlier_expiry() {
        let p = CachePolicy::HalfRemaining;
        let token = Some(at(NOW + 12 * 3600));
        let session = Some(at(NOW + 3600));
        assert_eq!(
            p.cache_duration_capped(token, session, at(NOW)),
            GoDuration::from_secs(1800)
        );
        assert_eq!(
            p.cache_duration_capped(token, None, at(NOW)),
            GoDuration::from_secs(6 * 3600)
        );
        // An unknown token expiry stays unknown whatever the session says.
        assert_eq!(
            p.cache_duration_capped(None, session, at(NOW)),
            GoDuration::ZERO
        );
    }
}
