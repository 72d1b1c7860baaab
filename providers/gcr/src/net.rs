//! One HTTP call with the plugin's retry rules: bounded, jittered retries of connection errors,
//! timeouts, 429 and 5xx, all inside the run's deadline. Everything else fails at once.

use std::cell::Cell;

use kcp_common::deadline::Deadline;
use kcp_common::http::{HttpClient, HttpError, HttpResponse, Route};
use kcp_common::retry::{Retry, RetryPolicy, retry};
use reqwest::Method;
use url::Url;

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

/// The last error of a call and how many attempts it took.
#[derive(Debug, thiserror::Error)]
#[error("{error}{}", if *.attempts > 1 { format!(" (after {} attempts)", .attempts) } else { String::new() })]
pub struct CallError {
    /// The last attempt's error.
    #[source]
    pub error: HttpError,
    /// Attempts made.
    pub attempts: u32,
}

impl CallError {
    /// The HTTP status of the last answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        self.error.status()
    }
}

/// Sends `call`, retrying transient failures under [`RetryPolicy::default`].
pub async fn send(
    http: &HttpClient,
    call: Call<'_>,
    deadline: Deadline,
) -> Result<HttpResponse, CallError> {
    let attempts = Cell::new(0);
    retry(
        RetryPolicy::default(),
        deadline,
        |e: &HttpError| {
            if e.is_transient() {
                Retry::Transient
            } else {
                Retry::Permanent
            }
        },
        |attempt, error, wait| {
            // Info, not warn: on success nobody needs it, on failure the final error counts them.
            tracing::info!(
                what = call.what,
                attempt,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "{error}; retrying"
            );
        },
        |attempt| {
            attempts.set(attempt);
            tracing::debug!(what = call.what, attempt, "sending");
            http.send(
                call.route,
                call.method.clone(),
                call.url,
                call.headers,
                call.body.map(<[u8]>::to_vec),
                deadline,
            )
        },
    )
    .await
    .map_err(|error| CallError {
        error,
        attempts: attempts.get(),
    })
}
