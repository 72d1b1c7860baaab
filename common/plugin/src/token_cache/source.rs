//! Where a run's token came from ([`Source`]) and the note the token cache leaves on the thread
//! for the runner (`crate::runner`): which source answered and when that token expires, read back
//! for the metrics file's outcome and expiry and for the `cacheDuration` ceiling. The token cache
//! leaves the note, so it holds it; `crate::metrics` re-exports it and names this module, never
//! the other way round.

use std::cell::Cell;
use std::time::SystemTime;

/// How a run's credential was obtained, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Read from the cache: an entry this node fetched.
    Cache,
    /// Read from the cache: an entry the fleet's token controller published and
    /// `credential-provider-check wait` copied here (fleet mode).
    FleetCopy,
    /// Fetched from upstream (and written to the cache when it is on).
    Upstream,
}

thread_local! {
    /// Where this run's token came from and when it expires, as the token cache last said. The
    /// provider runs on the runner's thread (a current-thread runtime), so a thread-local reaches
    /// the runner without every provider passing it along.
    static NOTED: Cell<Option<(Source, Option<SystemTime>)>> = const { Cell::new(None) };
}

/// Notes the token a provider is about to hand out (called by the token cache, which every
/// token-fetching provider goes through).
pub fn note_token(source: Source, expires_at: Option<SystemTime>) {
    NOTED.with(|noted| noted.set(Some((source, expires_at))));
}

/// What [`note_token`] noted on this thread so far, left in place.
pub fn noted() -> Option<(Source, Option<SystemTime>)> {
    NOTED.with(Cell::get)
}

/// Takes (and clears) what [`note_token`] noted on this thread.
pub fn take_noted() -> Option<(Source, Option<SystemTime>)> {
    NOTED.with(Cell::take)
}
