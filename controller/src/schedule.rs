//! When to fetch: a token's refresh point on this process's monotonic clock, and the back-off
//! after a failed fetch or API call.

use std::time::{Duration, Instant, SystemTime};

use crate::entry::Entry;
use kcp_plugin::time::unix_secs;

/// The refresh point of a token fetched at `fetched_at` that expires at `expires_at` (Unix
/// seconds): `fetchedAt + life × (0.5 − 0.1 × random)`, `random` in 0..1. Halfway leaves the other
/// half of the life for retries and for nodes to copy the next entry; the jitter keeps several
/// controllers' (or several targets') refreshes from lining up.
pub fn refresh_at(fetched_at: i64, expires_at: i64, random: f64) -> i64 {
    let life = expires_at.saturating_sub(fetched_at).max(0);
    let fraction = 0.5 - 0.1 * random.clamp(0.0, 1.0);
    fetched_at.saturating_add((life as f64 * fraction) as i64)
}

/// The monotonic instant of an entry's (jittered) refresh point.
pub fn refresh_instant(entry: &Entry) -> Instant {
    instant_of(refresh_at(
        entry.fetched_at,
        entry.expires_at,
        fastrand::f64(),
    ))
}

/// The monotonic instant an entry expires.
pub fn expiry_instant(entry: &Entry) -> Instant {
    instant_of(entry.expires_at)
}

/// The monotonic instant of a Unix time (now when it is past).
fn instant_of(unix: i64) -> Instant {
    let left = unix.saturating_sub(unix_secs(SystemTime::now())).max(0);
    Instant::now() + Duration::from_secs(u64::try_from(left).unwrap_or(0))
}

/// Exponential back-off: `first`, doubling, at most `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// A back-off starting at `first` and capped at `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            max,
            next: first.min(max),
        }
    }

    /// The next wait; each call doubles the one after it.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        delay
    }

    /// Back to `first` after a success.
    pub fn reset(&mut self) {
        self.next = self.first.min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_point_is_between_four_and_five_tenths_of_the_life() {
        assert_eq!(refresh_at(1000, 2000, 0.0), 1500);
        assert_eq!(refresh_at(1000, 2000, 1.0), 1400);
        assert_eq!(refresh_at(1000, 2000, 0.5), 1450);
        // An entry that expires before it was fetched refreshes at once.
        assert_eq!(refresh_at(1000, 900, 0.3), 1000);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_secs(10), Duration::from_secs(300));
        let delays: Vec<u64> = (0..7).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300]);
        b.reset();
        assert_eq!(b.next_delay().as_secs(), 10);
    }
}
