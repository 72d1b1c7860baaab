//! One table of token-endpoint faults, and what every provider must do about each.
//!
//! The token endpoint is where each provider gets its credential: ECR's `GetAuthorizationToken`,
//! ACR's `/oauth2/exchange`, the GCE metadata server's token path. Each provider's tests implement
//! [`FaultTarget`]: turn a [`Plan`] (refuse connections, or answer with a script of [`Step`]s) into
//! its own fakes, and say what its cache policy answers for a token of a given life. [`run_table`]
//! then runs every [`Fault`] and checks the shared contract:
//!
//! | fault | outcome | token requests |
//! |---|---|---|
//! | connection refused | exit 1, one stderr line, inside the deadline | none received |
//! | hang | exit 1, one line naming the time limit, inside deadline + 1 s | 1 |
//! | 5xx, then a token | answer | 2 (one retry) |
//! | throttled (429 or the service's throttling error), then a token | answer | 2 |
//! | 500, 503, throttled or a reset connection on every attempt | exit 1, one line | 2 to [`FaultTarget::attempts`] |
//! | a malformed 200 body | exit 1, one line | 1 (not retried: it would not change) |
//! | a token that expired an hour ago | answer with `cacheDuration: 0s` | 1 |
//! | a server clock hours ahead / behind | answer, `0s <= cacheDuration <= real remaining life` | 1 |
//!
//! An expired credential is still answered, with `0s`: the kubelet then uses it for this pull only
//! and never caches it (a failure would turn the pull anonymous; a duration would cache a dead
//! credential). With a skewed server clock the provider cannot know the true time: the answer
//! must still be non-negative and must never outlive the credential's real remaining life, which
//! is what the server's own expiry minus the server's own `Date` says. Each provider states its
//! exact policy in [`FaultTarget::cache_duration`]; the kit checks the answer against it and
//! against those bounds.
//!
//! Every run is at the default verbosity, as the kubelet runs plugins: a failure is exactly one
//! stderr line, however many attempts it took and whatever the SDK underneath logged about them,
//! and an answer prints nothing at all. A persistent fault is retried (at least one retry) and
//! bounded; the exact count depends on how much of the deadline the backoff and a server's
//! `Retry-After` leave.

use std::time::Duration;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;

use super::Outcome;
use super::Plugin;
use super::fake::RecordedRequest;

/// The overall deadline every fault run gets (`--deadline`).
pub const DEADLINE: Duration = Duration::from_secs(3);
/// How long past [`DEADLINE`] a run may take before the kit kills it and fails the test.
pub const GRACE: Duration = Duration::from_secs(1);
/// The life the fake gives a fresh token, by its own clock.
pub const TOKEN_LIFE: i64 = 3 * 3600;
/// How far a skewed server clock is off.
pub const SKEW: i64 = 2 * 3600;

/// A fault of the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing listens.
    Refused,
    /// The request is read and never answered.
    Hang,
    /// HTTP 5xx, then a token.
    ServerErrorThenOk,
    /// Throttled, then a token.
    ThrottledThenOk,
    /// HTTP 500 on every attempt.
    ServerErrorPersists,
    /// HTTP 503 on every attempt.
    UnavailablePersists,
    /// Throttled on every attempt.
    ThrottledPersists,
    /// The connection is closed without an answer, on every attempt.
    ResetPersists,
    /// HTTP 200 with a body that is not the expected document.
    MalformedBody,
    /// A token that expired an hour ago.
    ExpiredToken,
    /// A token from a server whose clock is [`SKEW`] ahead of the node's.
    ServerClockAhead,
    /// A token from a server whose clock is twice [`SKEW`] behind the node's (more than
    /// [`TOKEN_LIFE`], so by the node's clock the token is already over).
    ServerClockBehind,
}

impl Fault {
    /// Every fault, in table order.
    pub const ALL: [Fault; 12] = [
        Fault::Refused,
        Fault::Hang,
        Fault::ServerErrorThenOk,
        Fault::ThrottledThenOk,
        Fault::ServerErrorPersists,
        Fault::UnavailablePersists,
        Fault::ThrottledPersists,
        Fault::ResetPersists,
        Fault::MalformedBody,
        Fault::ExpiredToken,
        Fault::ServerClockAhead,
        Fault::ServerClockBehind,
    ];

    /// What the adapter must arrange.
    pub fn plan(self) -> Plan {
        let token = Step::Token {
            life: TOKEN_LIFE,
            skew: 0,
        };
        Plan::Script(match self {
            Fault::Refused => return Plan::Refused,
            Fault::Hang => vec![Step::Hang],
            Fault::ServerErrorThenOk => vec![Step::ServerError, token],
            Fault::ThrottledThenOk => vec![Step::Throttled, token],
            Fault::ServerErrorPersists => vec![Step::ServerError],
            Fault::UnavailablePersists => vec![Step::Unavailable],
            Fault::ThrottledPersists => vec![Step::Throttled],
            Fault::ResetPersists => vec![Step::Reset],
            Fault::MalformedBody => vec![Step::Malformed],
            Fault::ExpiredToken => vec![Step::Token {
                life: -3600,
                skew: 0,
            }],
            Fault::ServerClockAhead => vec![Step::Token {
                life: TOKEN_LIFE,
                skew: SKEW,
            }],
            Fault::ServerClockBehind => vec![Step::Token {
                life: TOKEN_LIFE,
                skew: -2 * SKEW,
            }],
        })
    }

    /// What the provider must do.
    pub fn expected(self) -> Expected {
        match self {
            Fault::Refused => Expected::Fails { requests: 0 },
            Fault::Hang | Fault::MalformedBody => Expected::Fails { requests: 1 },
            Fault::ServerErrorThenOk | Fault::ThrottledThenOk => Expected::Answers { requests: 2 },
            Fault::ServerErrorPersists
            | Fault::UnavailablePersists
            | Fault::ThrottledPersists
            | Fault::ResetPersists => Expected::GivesUp,
            Fault::ExpiredToken | Fault::ServerClockAhead | Fault::ServerClockBehind => {
                Expected::Answers { requests: 1 }
            }
        }
    }
}

/// How the token endpoint behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Connections to it are refused (a closed port).
    Refused,
    /// It answers request `n` with step `n`; the last step repeats.
    Script(Vec<Step>),
}

/// One answer of the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// HTTP 500.
    ServerError,
    /// HTTP 503.
    Unavailable,
    /// HTTP 429, or the service's own throttling error.
    Throttled,
    /// The request is read, then the connection is closed without an answer
    /// ([`super::fake::FakeResponse::drop_connection`]).
    Reset,
    /// HTTP 200 with a body that is not the expected JSON.
    Malformed,
    /// Never answers.
    Hang,
    /// A token. `life`: seconds from issue to expiry by the server's clock (negative: already
    /// expired). `skew`: the server's clock minus the real one, in seconds; the fake's `Date`
    /// header and any absolute expiry it sends are read from that clock.
    Token {
        /// Seconds the token lives, by the server's clock.
        life: i64,
        /// Server clock minus real clock, seconds.
        skew: i64,
    },
}

impl Step {
    /// For fakes: the server's idea of now, in Unix seconds, for a step's `skew`.
    pub fn server_now(skew: i64) -> i64 {
        i64::try_from(super::unix_now()).unwrap_or(i64::MAX) + skew
    }
}

/// The contract for one fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Exit 1, empty stdout, one stderr line; the token endpoint received `requests` requests.
    Fails {
        /// Requests the endpoint received.
        requests: usize,
    },
    /// Exit 1, empty stdout, one stderr line, after retrying: the token endpoint received at
    /// least 2 requests and at most [`FaultTarget::attempts`].
    GivesUp,
    /// An answer the kubelet accepts and nothing on stderr; the token endpoint received
    /// `requests` requests.
    Answers {
        /// Requests the endpoint received.
        requests: usize,
    },
}

/// What an adapter hands back for one run.
pub struct Arranged {
    /// The plugin, wired to the fakes (without `--deadline`: the kit adds it).
    pub plugin: Plugin,
    /// The image to ask for.
    pub image: String,
    /// The requests the token endpoint has received so far.
    pub token_requests: Box<dyn Fn() -> Vec<RecordedRequest>>,
    /// Whatever must live until the run is over (fakes, temp dirs).
    pub keep: Box<dyn std::any::Any>,
}

/// A provider's side of the table.
pub trait FaultTarget {
    /// Sets up fakes so that the token endpoint behaves as `plan` says, everything else works.
    fn arrange(&self, plan: &Plan) -> Arranged;

    /// The `cacheDuration` in seconds this provider answers for a token that lives `life`
    /// seconds by the clock of a server `skew` seconds ahead of the node (see [`Step::Token`]),
    /// as its documented policy computes it.
    fn cache_duration(&self, life: i64, skew: i64) -> i64;

    /// How many requests one token call makes at most before it gives up on a fault that
    /// persists: the provider's retry policy.
    fn attempts(&self) -> usize;
}

/// Runs every fault against `target` and checks the contract; returns each fault's outcome for
/// provider-specific checks (what the line names, say).
pub fn run_table(target: &dyn FaultTarget) -> Vec<(Fault, Outcome)> {
    Fault::ALL
        .into_iter()
        .map(|fault| (fault, run_one(target, fault)))
        .collect()
}

/// Runs one fault and checks the contract.
pub fn run_one(target: &dyn FaultTarget, fault: Fault) -> Outcome {
    let plan = fault.plan();
    let arranged = target.arrange(&plan);
    let out = arranged
        .plugin
        .clone()
        .args([format!("--deadline={}s", DEADLINE.as_secs())])
        .timeout(DEADLINE + GRACE)
        .request(ApiVersion::V1, &arranged.image);
    // The deadline contract: a run that outlives deadline + grace was killed by the kit.
    assert!(
        !out.exec.timed_out && out.exec.elapsed < DEADLINE + GRACE,
        "{fault:?}: the run took {:?}, past the {DEADLINE:?} deadline + {GRACE:?}\n{}",
        out.exec.elapsed,
        out.stderr()
    );
    let requests = (arranged.token_requests)();
    let got = requests.len();
    match fault.expected() {
        Expected::Fails { requests: want } => {
            assert_eq!(
                out.exec.exit_code,
                Some(1),
                "{fault:?}: exit code\n{}",
                out.stderr()
            );
            let line = out.rejected();
            if fault == Fault::Hang {
                assert!(
                    ["deadline", "timed out", "timeout", "no answer within"]
                        .iter()
                        .any(|w| line.contains(w)),
                    "{fault:?}: the line should name the time limit: {line}"
                );
            }
            assert_eq!(got, want, "{fault:?}: token requests {requests:#?}");
        }
        Expected::GivesUp => {
            assert_eq!(
                out.exec.exit_code,
                Some(1),
                "{fault:?}: exit code\n{}",
                out.stderr()
            );
            out.rejected();
            let most = target.attempts();
            assert!(
                (2..=most).contains(&got),
                "{fault:?}: {got} token requests, want a retry and at most {most}: {requests:#?}"
            );
        }
        Expected::Answers { requests: want } => {
            let ok = out.accepted();
            assert_eq!(
                out.stderr(),
                "",
                "{fault:?}: an answer prints nothing at the default verbosity"
            );
            assert_eq!(got, want, "{fault:?}: token requests {requests:#?}");
            let Plan::Script(steps) = &plan else {
                unreachable!("answers come from scripts")
            };
            let Some(Step::Token { life, skew }) = steps.last().copied() else {
                unreachable!("scripts that answer end with a token")
            };
            let actual = ok
                .cache_duration
                .unwrap_or_else(|| panic!("{fault:?}: cacheDuration must be set"));
            let secs = actual.as_nanos() / 1_000_000_000;
            assert!(!actual.is_negative(), "{fault:?}: negative {actual}");
            assert!(
                secs <= life.max(0),
                "{fault:?}: cacheDuration {actual} outlives the token's real remaining life of {life}s"
            );
            if fault == Fault::ExpiredToken {
                assert_eq!(
                    actual,
                    GoDuration::ZERO,
                    "{fault:?}: an expired token is never cached"
                );
            }
            let want = target.cache_duration(life, skew).max(0);
            // A second may tick between the fake's clock read and the plugin's.
            assert!(
                (want - 2..=want).contains(&secs),
                "{fault:?}: cacheDuration {actual}, the provider's policy says {want}s"
            );
        }
    }
    // A retry sends the same request again.
    if let Some(first) = requests.first() {
        for r in &requests[1..] {
            assert_eq!(
                (&r.method, &r.target, &r.body),
                (&first.method, &first.target, &first.body),
                "{fault:?}: a retry differs from the first request"
            );
        }
    }
    out
}
