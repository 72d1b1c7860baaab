//! `cacheDuration` from a credential's real expiry.
//!
//! The kubelet never refreshes a cached credential early and never drops one on a 401, so the
//! duration we hand it must end before the credential does. [`CachePolicy`] turns an expiry and the
//! current time into a Go duration: never negative, `0s` (do not cache) when the credential is
//! expired, about to expire, or of unknown lifetime. Whole seconds only, as upstream plugins answer.

use std::time::{Duration, SystemTime};

use crate::duration::GoDuration;

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
        // Whole seconds on both sides, like Go's `expiresAt.Unix() - now.Unix()`.
        let remaining = unix_secs(expires_at) - unix_secs(now);
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

/// The "now" to count an absolute expiry from: the later of the node's clock and the issuing
/// server's `Date` header. An expiry is written by the server's clock; when the node's clock lags
/// the server's, `expiry - node now` overstates the life left and the kubelet would cache a dead
/// credential. Taking the later clock can only shorten the answer, so whichever clock is right,
/// the cache entry ends before the credential does. An unreadable `Date` changes nothing.
pub fn expiry_clock(node_now: SystemTime, server_date: Option<&str>) -> SystemTime {
    server_date
        .and_then(parse_http_date)
        .map_or(node_now, |server| server.max(node_now))
}

/// Parses an HTTP `Date` in the IMF-fixdate form every current server sends
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7). Other forms give `None`.
pub fn parse_http_date(value: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let rest = value.trim().split_once(", ")?.1;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let number = |s: &str, len: usize| -> Option<i64> {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (d, y) = (number(day, 2)?, number(year, 4)?);
    let m = i64::try_from(MONTHS.iter().position(|n| n == month)? + 1).ok()?;
    let hms: Vec<&str> = time.split(':').collect();
    let [hh, mm, ss] = hms.as_slice() else {
        return None;
    };
    let (hh, mm, ss) = (number(hh, 2)?, number(mm, 2)?, number(ss, 2)?);
    if !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (proleptic Gregorian), then seconds.
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Seconds since the Unix epoch, negative before it.
pub fn unix_secs(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
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

    #[test]
    fn reads_http_dates_and_counts_from_the_later_clock() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at(784_111_777))
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(at(951_782_400))
        );
        for bad in [
            "",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
        let node = at(784_111_777);
        // The server is two hours ahead: count from its clock.
        assert_eq!(
            expiry_clock(node, Some("Sun, 06 Nov 1994 10:49:37 GMT")),
            at(784_111_777 + 7200)
        );
        // Behind, absent or unreadable: the node's clock.
        assert_eq!(
            expiry_clock(node, Some("Sun, 06 Nov 1994 06:49:37 GMT")),
            node
        );
        assert_eq!(expiry_clock(node, None), node);
        assert_eq!(expiry_clock(node, Some("yesterday")), node);
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
