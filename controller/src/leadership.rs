//! Whether this replica leads, shared by the Lease task (which renews it) and the worker (which
//! asks before every provider run and every Secret write): leadership holds while the last
//! successful renewal is younger than the renew deadline, counted from when that renewal was
//! *sent*, so a slow answer never stretches it. Each gain starts a new term, so the worker can
//! tell a regained Lease from one it kept.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// This replica's leadership.
pub struct Leadership {
    /// When the last successful renewal was sent.
    renewed: Mutex<Option<Instant>>,
    renew_deadline: Duration,
    /// Counts the gains: a new value is a new term.
    term: AtomicU64,
    /// Wakes the worker when we become leader.
    pub gained: Notify,
    /// The other holder last seen, for `--once`'s message.
    holder: Mutex<Option<String>>,
    /// The last failure of a Lease call, for `--once`'s message.
    last_error: Mutex<Option<String>>,
}

impl Leadership {
    /// Not leading yet; a renewal holds for `renew_deadline`.
    pub fn new(renew_deadline: Duration) -> Leadership {
        Leadership {
            renewed: Mutex::new(None),
            renew_deadline,
            term: AtomicU64::new(0),
            gained: Notify::new(),
            holder: Mutex::new(None),
            last_error: Mutex::new(None),
        }
    }

    /// Whether we lead now.
    pub fn is_leader(&self) -> bool {
        self.renewed
            .lock()
            .map(|r| r.is_some_and(|at| at.elapsed() < self.renew_deadline))
            .unwrap_or(false)
    }

    /// The current term (changes each time leadership is gained).
    pub fn term(&self) -> u64 {
        self.term.load(Ordering::SeqCst)
    }

    /// Notes a renewal sent at `sent` that succeeded; true when it starts a new term.
    pub fn renew(&self, sent: Instant) -> bool {
        let fresh = !self.is_leader();
        if let Ok(mut r) = self.renewed.lock() {
            *r = Some(sent);
        }
        if fresh && self.is_leader() {
            self.term.fetch_add(1, Ordering::SeqCst);
            self.gained.notify_one();
            return true;
        }
        false
    }

    /// Ends leadership; true when we had it (even if it had already run out).
    pub fn clear(&self) -> bool {
        self.renewed
            .lock()
            .map(|mut r| r.take().is_some())
            .unwrap_or(false)
    }

    /// Notes the other holder seen (or none).
    pub fn note_holder(&self, holder: Option<String>) {
        if let Ok(mut h) = self.holder.lock() {
            *h = holder;
        }
    }

    /// Notes the last Lease call's failure (or none).
    pub fn note_error(&self, error: Option<String>) {
        if let Ok(mut e) = self.last_error.lock() {
            *e = error;
        }
    }

    /// The other holder last seen.
    pub fn holder(&self) -> Option<String> {
        self.holder.lock().ok().and_then(|h| h.clone())
    }

    /// The last Lease call's failure.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_counts_from_when_it_was_sent() {
        let leadership = Leadership::new(Duration::from_secs(10));
        assert!(!leadership.is_leader());
        // Sent 11 s ago, answered only now: already past the deadline, no term.
        let long_ago = Instant::now().checked_sub(Duration::from_secs(11));
        if let Some(sent) = long_ago {
            assert!(!leadership.renew(sent));
            assert!(!leadership.is_leader());
            assert_eq!(leadership.term(), 0);
        }
        assert!(leadership.renew(Instant::now()));
        assert!(leadership.is_leader());
        assert_eq!(leadership.term(), 1);
        assert!(
            !leadership.renew(Instant::now()),
            "a renewal, not a new term"
        );
        assert!(leadership.clear());
        assert!(leadership.renew(Instant::now()));
        assert_eq!(leadership.term(), 2);
    }
}
