//! One overall deadline for a whole run.
//!
//! The kubelet kills a plugin after 60 s and then pulls anonymously. Every network call and retry in
//! a run draws on one [`Deadline`], so no combination of slow answers can outlast it and the failure
//! the operator sees is ours (naming what hung), not the kubelet's `context deadline exceeded`.

use std::time::{Duration, Instant};

/// Default overall deadline: well inside the kubelet's 60 s kill.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(45);

/// Environment variable that overrides the deadline (a Go duration such as `20s`).
pub const DEADLINE_ENV: &str = "CREDENTIAL_PROVIDER_DEADLINE";

/// A point in time after which a run gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Deadline {
            at: Instant::now() + budget,
            budget,
        }
    }

    /// Time left, zero once passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn is_expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// The whole budget this deadline was created with (for error messages).
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// A per-call timeout: `limit`, or less when the deadline is closer.
    pub fn cap(&self, limit: Duration) -> Duration {
        limit.min(self.remaining())
    }

    /// The instant it expires.
    pub fn instant(&self) -> Instant {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_call_timeouts_by_what_is_left() {
        let d = Deadline::after(Duration::from_secs(10));
        assert!(d.remaining() <= Duration::from_secs(10));
        assert!(d.remaining() > Duration::from_secs(9));
        assert_eq!(d.cap(Duration::from_secs(1)), Duration::from_secs(1));
        assert!(d.cap(Duration::from_secs(60)) <= Duration::from_secs(10));
        assert_eq!(d.budget(), Duration::from_secs(10));
        assert!(!d.is_expired());
        let gone = Deadline::after(Duration::ZERO);
        assert!(gone.is_expired());
        assert_eq!(gone.cap(Duration::from_secs(5)), Duration::ZERO);
    }
}
