//! Bounded retries with jittered exponential backoff inside the run's [`Deadline`].
//!
//! Thousands of nodes hitting one token API at once must not retry in lockstep (ECR allows 20
//! GetAuthorizationToken calls per second per account and region), so every wait is "full jitter":
//! a random time between zero and the exponential step. A retry is only started when the deadline
//! leaves room for it; the last error is returned otherwise.
//!
//! A server may name the wait itself: [`retry_after`] reads the `Retry-After` header (both of its
//! forms) for every caller, and [`Retry::After`] replaces the backoff with it.

use std::future::Future;
use std::time::{Duration, SystemTime};

use crate::deadline::Deadline;

/// Whether a failed attempt is worth another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Throttling, 5xx, connection trouble: try again after a backoff.
    Transient,
    /// Try again after the wait the server asked for (`Retry-After`), instead of our backoff.
    After(Duration),
    /// Anything else: give up now.
    Permanent,
}

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first one included.
    pub max_attempts: u32,
    /// Upper bound of the first backoff.
    pub base_delay: Duration,
    /// Upper bound of any single backoff.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::DEFAULT
    }
}

impl RetryPolicy {
    /// Four attempts, waits of at most 200 ms, 400 ms, 800 ms: what most token calls need.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(5),
    };

    /// The jittered wait before attempt number `attempt + 1` (`attempt` counts from 1).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let step = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_delay);
        let millis = u64::try_from(step.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(fastrand::u64(0..=millis))
    }
}

/// Runs `attempt` until it succeeds, fails permanently, runs out of attempts or of deadline.
///
/// `classify` decides for each error whether to try again; `on_retry` is called before each wait
/// (for a log line). The attempt number passed to `attempt` starts at 1.
pub async fn retry<T, E, F, Fut>(
    policy: RetryPolicy,
    deadline: Deadline,
    classify: impl Fn(&E) -> Retry,
    mut on_retry: impl FnMut(u32, &E, Duration),
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut n = 1;
    loop {
        let error = match attempt(n).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let wait = match classify(&error) {
            Retry::Permanent => return Err(error),
            Retry::Transient => policy.backoff(n),
            Retry::After(wait) => wait,
        };
        if n >= policy.max_attempts {
            return Err(error);
        }
        // Keep at least as long again for the next attempt itself, or it cannot finish anyway.
        if wait.saturating_mul(2) >= deadline.remaining() {
            return Err(error);
        }
        on_retry(n, &error, wait);
        tokio::time::sleep(wait).await;
        n += 1;
    }
}

/// The wait a `Retry-After` value asks for, seen at `now`: delta-seconds (`120`) or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, zero once it has passed), RFC 9110 §10.2.3. `None` for
/// anything else, so the caller's own backoff applies. A number too large for a `u64` saturates;
/// callers cap the wait anyway.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let secs = value
            .bytes()
            .try_fold(0u64, |secs, digit| {
                secs.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            })
            .unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs));
    }
    let at = crate::time::parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    const FAST: RetryPolicy = RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
    };

    #[test]
    fn retries_transient_errors_until_success() {
        let calls = Cell::new(0);
        let retried = Cell::new(0);
        let out: Result<u32, &str> = rt().block_on(retry(
            FAST,
            Deadline::after(Duration::from_secs(10)),
            |_| Retry::Transient,
            |_, _, _| retried.set(retried.get() + 1),
            |n| {
                calls.set(calls.get() + 1);
                async move { if n < 3 { Err("503") } else { Ok(n) } }
            },
        ));
        assert_eq!(out, Ok(3));
        assert_eq!(calls.get(), 3);
        assert_eq!(retried.get(), 2);
    }

    #[test]
    fn stops_on_permanent_errors_and_after_max_attempts() {
        let calls = Cell::new(0);
        let out: Result<(), &str> = rt().block_on(retry(
            FAST,
            Deadline::after(Duration::from_secs(10)),
            |e: &&str| {
                if *e == "403" {
                    Retry::Permanent
                } else {
                    Retry::Transient
                }
            },
            |_, _, _| {},
            |_| {
                calls.set(calls.get() + 1);
                async { Err("403") }
            },
        ));
        assert_eq!((out, calls.get()), (Err("403"), 1));

        calls.set(0);
        let out: Result<(), &str> = rt().block_on(retry(
            FAST,
            Deadline::after(Duration::from_secs(10)),
            |_| Retry::Transient,
            |_, _, _| {},
            |_| {
                calls.set(calls.get() + 1);
                async { Err("500") }
            },
        ));
        assert_eq!((out, calls.get()), (Err("500"), 4));
    }

    #[test]
    fn does_not_start_a_retry_the_deadline_cannot_fit() {
        let calls = Cell::new(0);
        let slow = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_secs(60),
            max_delay: Duration::from_secs(60),
        };
        // With a 60 s jitter range the first wait is almost surely longer than half of 100 ms;
        // a zero-length deadline makes it certain.
        let out: Result<(), &str> = rt().block_on(retry(
            slow,
            Deadline::after(Duration::ZERO),
            |_| Retry::Transient,
            |_, _, _| {},
            |_| {
                calls.set(calls.get() + 1);
                async { Err("429") }
            },
        ));
        assert_eq!((out, calls.get()), (Err("429"), 1));
    }

    #[test]
    fn a_server_chosen_wait_replaces_the_backoff() {
        let waits = std::cell::RefCell::new(Vec::new());
        let out: Result<u32, &str> = rt().block_on(retry(
            FAST,
            Deadline::after(Duration::from_secs(10)),
            |_| Retry::After(Duration::from_millis(7)),
            |_, _, wait| waits.borrow_mut().push(wait),
            |n| async move { if n < 3 { Err("429") } else { Ok(n) } },
        ));
        assert_eq!(out, Ok(3));
        assert_eq!(*waits.borrow(), vec![Duration::from_millis(7); 2]);
    }

    #[test]
    fn backoff_is_jittered_and_bounded() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(800),
        };
        for attempt in 1..=20 {
            let bound = Duration::from_millis((100u64 << (attempt - 1).min(16)).min(800));
            for _ in 0..50 {
                assert!(p.backoff(attempt) <= bound, "attempt {attempt}");
            }
        }
        let distinct: std::collections::HashSet<_> = (0..50).map(|_| p.backoff(4)).collect();
        assert!(distinct.len() > 5, "backoff must be jittered");
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        for (value, want) in [
            ("1", Some(Duration::from_secs(1))),
            (" 120 ", Some(Duration::from_secs(120))),
            ("0", Some(Duration::ZERO)),
            ("007", Some(Duration::from_secs(7))),
            // Larger than any u64: the longest wait there is, which the caller caps.
            (
                "99999999999999999999999",
                Some(Duration::from_secs(u64::MAX)),
            ),
            ("18446744073709551615", Some(Duration::from_secs(u64::MAX))),
            // The date form, seen 37 s before the date, at it and after it.
            (
                "Sun, 06 Nov 1994 08:50:14 GMT",
                Some(Duration::from_secs(37)),
            ),
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(Duration::ZERO)),
            ("Sun, 06 Nov 1994 07:00:00 GMT", Some(Duration::ZERO)),
            (
                "Fri, 31 Dec 9999 23:59:59 GMT",
                Some(Duration::from_secs(253_402_300_799 - 784_111_777)),
            ),
            // Neither form.
            ("", None),
            ("-1", None),
            ("+5", None),
            ("1.5", None),
            ("5s", None),
            ("Sunday, 06-Nov-94 08:49:37 GMT", None),
            ("soon", None),
        ] {
            assert_eq!(retry_after(value, now), want, "{value:?}");
        }
    }
}
