//! The shared fault table (`kcp_testkit::faults`) with a token-exchange endpoint as the token
//! endpoint. Its `expires_in` is relative, so a skewed server clock cannot change the answer:
//! `cacheDuration` is the credential's life capped by the service-account token's (an hour)
//! minus the 5-minute margin. An already-expired credential says `expires_in` below zero.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;

use kcp_testkit::fake::FakeResponse;
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::http_date;
use support::*;

const ACCESS_TOKEN: &str = "fault-table-access-token-0123456789";
const IMAGE: &str = "registry.acme.test/team/app";

struct Oidc;

fn answer(step: Step) -> FakeResponse {
    match step {
        Step::ServerError => FakeResponse::new(500, "internal error"),
        Step::Unavailable => FakeResponse::new(503, "unavailable"),
        Step::Reset => FakeResponse::drop_connection(),
        Step::Throttled => FakeResponse::new(429, r#"{"error":"slow_down"}"#),
        Step::Malformed => FakeResponse::json("<html>not json</html>"),
        Step::Hang => FakeResponse::hang(),
        Step::Token { life, skew } => FakeResponse::json(format!(
            r#"{{"access_token":"{ACCESS_TOKEN}","expires_in":{life},"token_type":"Bearer"}}"#
        ))
        .header(
            "date",
            &http_date(u64::try_from(Step::server_now(skew)).unwrap()),
        ),
    }
}

impl FaultTarget for Oidc {
    fn arrange(&self, plan: &Plan) -> Arranged {
        let token = sa_token();
        match plan {
            Plan::Refused => {
                let yaml = format!(
                    "registries:\n  - host: registry.acme.test\n    protocol: token-exchange\n    endpoint: http://127.0.0.1:{}{TOKEN_PATH}\n    username: oauth2\n",
                    closed_port()
                );
                let (p, dir) = plugin(&yaml);
                Arranged {
                    plugin: p.service_account_token(token),
                    image: IMAGE.into(),
                    token_requests: Box::new(Vec::new),
                    keep: Box::new(dir),
                }
            }
            Plan::Script(steps) => {
                let fake = Arc::new(scripted(vec![(
                    TOKEN_PATH,
                    steps.iter().map(|s| answer(*s)).collect(),
                )]));
                let (p, dir) = plugin(&exchange_config(&fake, ""));
                let seen = fake.clone();
                Arranged {
                    plugin: p.service_account_token(token),
                    image: IMAGE.into(),
                    token_requests: Box::new(move || seen.requests()),
                    keep: Box::new((fake, dir)),
                }
            }
        }
    }

    fn cache_duration(&self, life: i64, _skew: i64) -> i64 {
        // The service-account token of `sa_token` lives an hour.
        life.min(3600) - 300
    }

    /// `RetryPolicy::DEFAULT`: 4 attempts.
    fn attempts(&self) -> usize {
        4
    }
}

#[test]
fn the_shared_fault_table_against_a_token_exchange_endpoint() {
    for (fault, out) in faults::run_table(&Oidc) {
        let stderr = out.stderr();
        match fault {
            Fault::ServerErrorPersists => {
                assert!(stderr.contains("answered HTTP 500"), "{stderr}")
            }
            Fault::ThrottledPersists => assert!(
                stderr.contains(r#"answered HTTP 429: error "slow_down""#),
                "{stderr}"
            ),
            Fault::MalformedBody => {
                assert!(stderr.contains("the answer is not JSON"), "{stderr}")
            }
            Fault::Refused => assert!(
                stderr.contains(
                    "exchanging the service-account token for the image registry.acme.test/team/app"
                ),
                "{stderr}"
            ),
            _ => {}
        }
    }
}
