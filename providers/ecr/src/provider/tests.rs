//! Unit tests of `provider.rs`, beside it to keep the source file short.

use super::*;
use aws_smithy_types::DateTime;

/// 2027-01-15T08:00:00Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The `cacheDuration` (upstream's half the remaining life) for an `expiresAt` of `secs`, as
/// the SDK reads a JSON number (`DateTime::from_secs_f64`), with an optional role session.
fn cache_duration(secs: f64, session_expiry: Option<SystemTime>) -> GoDuration {
    let expires_at = to_system_time(&DateTime::from_secs_f64(secs));
    let expiry = token_expiry(expires_at, session_expiry, now());
    CachePolicy::HalfRemaining.cache_duration(expiry, now())
}

/// Odd `expiresAt` numbers: capped at [`MAX_TOKEN_LIFE`] (half of it as `cacheDuration`) or
/// expired, never a panic. Before, `1e300` and `2^64` gave 292 years and `-1e300` and
/// `i64::MIN` overflowed (a panic in debug builds, a wrapped huge duration in release).
#[test]
fn odd_expires_at_values_are_capped_or_expired_never_a_panic() {
    let half_of_max = GoDuration::from_secs(6 * 60 * 60);
    for (secs, want) in [
        (1e300, half_of_max),
        (18_446_744_073_709_551_616.0, half_of_max),
        (9_223_372_036_854_775_807.0, half_of_max),
        (1_800_000_000.0 + 86_400.0, half_of_max),
        (-1e300, GoDuration::ZERO),
        (-9_223_372_036_854_775_808.0, GoDuration::ZERO),
        (-5.0, GoDuration::ZERO),
        (0.0, GoDuration::ZERO),
        (3.5, GoDuration::ZERO),
        (1_800_000_000.0 + 3600.5, GoDuration::from_secs(1800)),
    ] {
        assert_eq!(cache_duration(secs, None), want, "expiresAt {secs:?}");
    }
    // A role session ending first still ends the answer; a session "ending" before 1970 is
    // an expired one.
    let session = Some(now() + Duration::from_secs(3600));
    assert_eq!(cache_duration(1e300, session), GoDuration::from_secs(1800));
    let ancient = to_system_time(&DateTime::from_secs_f64(-1e300));
    assert_eq!(cache_duration(1e300, ancient), GoDuration::ZERO);
    assert_eq!(token_expiry(None, session, now()), None);
}
