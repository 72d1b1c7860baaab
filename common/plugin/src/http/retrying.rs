//! Retry glue: a [`Call`] sent again under [`RetryRules`] (which statuses are transient, which
//! answers the caller takes, whether `Retry-After` replaces the backoff), on top of
//! [`crate::retry::retry`].

use std::cell::Cell;
use std::time::{Duration, SystemTime};

use reqwest::{Method, Url};

use super::client::HttpClient;
use super::error::{CallError, HttpError, status_error};
use super::proxy::Route;
use super::response::HttpResponse;
use super::statuses::Statuses;
use crate::deadline::Deadline;
use crate::retry::{Retry, RetryPolicy, retry, retry_after};

/// A request to send, possibly more than once.
pub struct Call<'a> {
    /// Proxy routing.
    pub route: Route,
    /// The HTTP method.
    pub method: Method,
    /// Where to.
    pub url: &'a Url,
    /// Headers; may carry secrets, never logged.
    pub headers: &'a [(&'a str, &'a str)],
    /// Body; may carry secrets, never logged.
    pub body: Option<&'a [u8]>,
    /// What the call is for, in log lines ("metadata token", "STS exchange").
    pub what: &'a str,
}

impl<'a> Call<'a> {
    /// A GET without headers or body (a metadata attribute, a public document).
    pub fn get(route: Route, url: &'a Url, what: &'a str) -> Self {
        Call {
            route,
            method: Method::GET,
            url,
            headers: &[],
            body: None,
            what,
        }
    }
}

/// What a retrying call tries again, hands back, and gives up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryRules {
    /// Attempts and backoff.
    pub policy: RetryPolicy,
    /// Statuses worth another try. Checked before `answers`.
    pub transient: Statuses,
    /// Statuses handed back as answers; any other is an [`HttpError::Status`]. A transient status
    /// that outlasts the retries is handed back too when it is in this set.
    pub answers: Statuses,
    /// When set, a transient answer's `Retry-After` (either form, [`retry_after`]) replaces the
    /// backoff, capped at this wait; without the header the backoff applies.
    pub max_retry_after: Option<Duration>,
    /// Whether an answer too large to read ([`HttpError::Body`]) is tried again.
    pub retry_body_errors: bool,
}

impl RetryRules {
    /// [`HttpClient::send_retrying`]'s rules: [`RetryPolicy::DEFAULT`], connection errors,
    /// timeouts, 429 and 5xx retried, 2xx answers only, `Retry-After` not read.
    pub const DEFAULT: RetryRules = RetryRules {
        policy: RetryPolicy::DEFAULT,
        transient: Statuses::THROTTLED_OR_SERVER_ERROR,
        answers: Statuses::SUCCESS,
        max_retry_after: None,
        retry_body_errors: false,
    };

    /// The wait before retrying a transient `answer`: its `Retry-After` when these rules honour
    /// it, else the backoff.
    fn wait_for(&self, answer: &HttpResponse) -> Retry {
        self.max_retry_after
            .and_then(|cap| {
                let asked = retry_after(answer.header("retry-after")?, SystemTime::now())?;
                Some(Retry::After(asked.min(cap)))
            })
            .unwrap_or(Retry::Transient)
    }
}

impl HttpClient {
    /// Sends `call` under [`RetryRules::DEFAULT`]: connection errors, timeouts, 429 and 5xx are
    /// retried with jittered backoff inside `deadline`; 2xx answers only.
    pub async fn send_retrying(
        &self,
        call: Call<'_>,
        deadline: Deadline,
    ) -> Result<HttpResponse, CallError> {
        self.send_retrying_with(call, deadline, &RetryRules::DEFAULT)
            .await
    }

    /// Sends `call` until `rules` say stop: an answer they hand back, an error that another try
    /// cannot fix, the last attempt, or a deadline with no room for another one. Connection
    /// errors and timeouts are always transient; an untrusted certificate, a failed client setup
    /// and a spent deadline never are.
    pub async fn send_retrying_with(
        &self,
        call: Call<'_>,
        deadline: Deadline,
        rules: &RetryRules,
    ) -> Result<HttpResponse, CallError> {
        /// An attempt that is not the final word: a transient answer, or a failure.
        enum Miss {
            Answer(HttpResponse),
            Failed(HttpError),
        }
        let attempts = Cell::new(0);
        let result = retry(
            rules.policy,
            deadline,
            |miss: &Miss| match miss {
                Miss::Answer(answer) => rules.wait_for(answer),
                Miss::Failed(e)
                    if e.is_transient()
                        || (rules.retry_body_errors && matches!(e, HttpError::Body { .. })) =>
                {
                    Retry::Transient
                }
                Miss::Failed(_) => Retry::Permanent,
            },
            |attempt, miss, wait| {
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                // Info, not warn: on success nobody needs it, on failure the final error counts
                // the attempts.
                match miss {
                    Miss::Answer(answer) => {
                        let error = status_error(call.url, answer);
                        tracing::info!(what = call.what, attempt, wait_ms, "{error}; retrying");
                    }
                    Miss::Failed(error) => {
                        tracing::info!(what = call.what, attempt, wait_ms, "{error}; retrying");
                    }
                }
            },
            |attempt| {
                attempts.set(attempt);
                tracing::debug!(what = call.what, attempt, "sending");
                let answer = self.fetch(
                    call.route,
                    call.method.clone(),
                    call.url,
                    call.headers,
                    call.body.map(<[u8]>::to_vec),
                    deadline,
                );
                async move {
                    match answer.await {
                        Ok(answer) if rules.transient.contains(answer.status) => {
                            Err(Miss::Answer(answer))
                        }
                        Ok(answer) => Ok(answer),
                        Err(error) => Err(Miss::Failed(error)),
                    }
                }
            },
        )
        .await;
        let error = match result {
            Ok(answer) | Err(Miss::Answer(answer)) if rules.answers.contains(answer.status) => {
                return Ok(answer);
            }
            Ok(answer) | Err(Miss::Answer(answer)) => status_error(call.url, &answer),
            Err(Miss::Failed(error)) => error,
        };
        Err(CallError {
            error,
            attempts: attempts.get(),
        })
    }
}
