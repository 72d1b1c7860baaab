//! The one shape of a credential provider: plan, then the token cache, then the network.
//!
//! Every provider answers a request the same way: decide what the request needs (which registry
//! and endpoint, whose identity, the cache key) and refuse what it must not answer; then answer
//! from the on-disk token cache when it can; else fetch a token. [`Provider`] makes that order a
//! type: [`Provider::plan`] is the only place a request is checked, and both the cache look and
//! the fetch take its [`Provider::Plan`]. A check added to `plan` therefore guards both ways to an
//! answer; a cache hit cannot skip a refusal that a fetch would have made. The runner
//! ([`crate::runner::serve`]) calls the three in that order and owns everything else (stdin,
//! logging, the deadline, jitter, metrics, the one response).

use kcp_kubelet::protocol::{CredentialProviderRequest, Credentials};

use crate::deadline::Deadline;
use crate::token_cache::{CacheKey, Issuer};

/// The error a provider returns: anything that can be shown as a chain of causes. Defined here,
/// beside the trait whose `Error` must convert into it, so the runner names this module and not
/// the other way round.
pub type ProviderError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A credential provider, driven by [`crate::runner::serve`]: every check on a request happens
/// in [`Self::plan`]; [`Self::answer_from_cache`] and [`Self::fetch`] only act on a plan.
///
/// Why `plan` is separate: a cache hit is answered before any async runtime, HTTP client or SDK
/// exists (a few dozen system calls), so the cache look cannot share the fetch's code path. When
/// both decided on their own whether a request may be answered, a check added to one could be
/// missing from the other, and a cache entry written for one request would answer another that
/// the fetch refuses. With one `plan` the decision is made once and carried to whichever path
/// answers.
///
/// The runner calls, per exec:
/// 1. `plan`, synchronously, before any async runtime. An error is the run's failure: its chain
///    of causes is the one stderr line, exit 1, nothing on stdout; neither `answer_from_cache` nor
///    `fetch` is called.
/// 2. `answer_from_cache` with the plan: an answer from the token cache, or `None` (no cache, a
///    miss, or a plan the cache does not serve). It must not touch the network.
/// 3. On `None`, `fetch` with the same plan, on a single-threaded runtime cancelled at the
///    deadline. Only this step is timed in the metrics' fetch duration (and a refusal by `plan`,
///    which stands for the fetch it avoided).
///
/// A plan may still leave choices to the fetch that only the network can settle (ACR: a custom
/// cloud's metadata; ECR: the fallback when EKS Pod Identity has no association); the fetch then
/// runs the same planning code, never a check of its own.
pub trait Provider {
    /// What [`Self::plan`] decided for one request. May borrow the provider and the request.
    type Plan<'a>
    where
        Self: 'a;

    /// The provider's error: any error that can be shown as a chain of causes.
    type Error: Into<ProviderError>;

    /// Whose tokens this provider hands out: the runner caps every answer's `cacheDuration` at
    /// the longest life that issuer's tokens have. `None` for credentials that do not expire
    /// (the static provider's).
    const ISSUER: Option<Issuer>;

    /// Checks `request` and decides, without any network, how it is answered. Runs once per exec,
    /// before any async runtime: a refusal here (a registry the provider must not send its token
    /// to, a missing service-account token, an unreadable key file) fails the run.
    fn plan<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
    ) -> Result<Self::Plan<'a>, Self::Error>;

    /// The answer from the token cache for `plan`, with no network call; `None` on a miss, when
    /// there is no cache, or when the plan is not answered from the cache (the fetch then runs).
    fn answer_from_cache<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: &Self::Plan<'a>,
    ) -> Option<Credentials>;

    /// The token cache key `plan` reads and writes, if its token is cached at all (before fleet
    /// mode's shared identity stands in for the node's): what
    /// `CREDENTIAL_PROVIDER_PRINT_CACHE_KEY` prints.
    fn cache_key<'p>(&self, plan: &'p Self::Plan<'_>) -> Option<&'p CacheKey>;

    /// Fetches credentials for `plan`. Network calls must respect `deadline`; the runner also
    /// cancels the whole future when it passes.
    // The runner drives the future on a current-thread runtime, so it need not be `Send`.
    #[allow(async_fn_in_trait)]
    async fn fetch<'a>(
        &'a self,
        request: &'a CredentialProviderRequest,
        plan: Self::Plan<'a>,
        deadline: Deadline,
    ) -> Result<Credentials, Self::Error>;
}
