//! The shared fault table (`kcp_testkit::faults`) with ECR's `GetAuthorizationToken` as
//! the token endpoint: throttling is ECR's own `ThrottlingException` (HTTP 400), a token's
//! expiry is the absolute `expiresAt` of the answer, and the fake's `Date` header follows its
//! clock.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::http_date;
use support::*;

const PASSWORD: &str = "fault-table-ecr-password";

struct Ecr;

fn answer(step: Step) -> FakeResponse {
    match step {
        Step::ServerError => aws_error(500, "ServerException"),
        Step::Throttled => aws_error(400, "ThrottlingException"),
        Step::Malformed => FakeResponse::json(r#"{"authorizationData":"#),
        Step::Hang => FakeResponse::hang(),
        Step::Token { life, skew } => {
            let server_now = Step::server_now(skew);
            let expires_at = u64::try_from(server_now + life).unwrap();
            ecr_token(&format!("AWS:{PASSWORD}"), Some(expires_at))
                .header("date", &http_date(u64::try_from(server_now).unwrap()))
        }
    }
}

impl FaultTarget for Ecr {
    fn arrange(&self, plan: &Plan) -> Arranged {
        let image = format!("{PRIVATE_HOST}/app");
        match plan {
            Plan::Refused => Arranged {
                plugin: plugin().env(
                    "AWS_ENDPOINT_URL_ECR",
                    format!("http://127.0.0.1:{}", closed_port()),
                ),
                image,
                token_requests: Box::new(Vec::new),
                keep: Box::new(()),
            },
            Plan::Script(steps) => {
                let steps = steps.clone();
                let calls = AtomicUsize::new(0);
                let ecr = Arc::new(FakeServer::start(move |_| {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    answer(steps[n.min(steps.len() - 1)])
                }));
                let seen = ecr.clone();
                Arranged {
                    plugin: plugin().env("AWS_ENDPOINT_URL_ECR", ecr.url()),
                    image,
                    token_requests: Box::new(move || seen.requests()),
                    keep: Box::new(ecr),
                }
            }
        }
    }

    /// Half the remaining life, read from the node's clock as upstream does: a server clock
    /// `skew` ahead makes it `(life + skew) / 2`, still inside the real life while the skew is
    /// under the token's life (12 h for real ECR tokens).
    fn cache_duration(&self, life: i64, skew: i64) -> i64 {
        (life + skew) / 2
    }
}

#[test]
fn every_fault_of_get_authorization_token() {
    for (fault, out) in faults::run_table(&Ecr) {
        let stderr = out.stderr();
        match fault {
            // The runner's deadline line (checked by the kit) does not name the endpoint.
            Fault::Hang => {}
            Fault::Refused | Fault::MalformedBody => {
                assert!(
                    stderr.contains("getting an ECR authorization token")
                        && stderr.contains("region us-west-2"),
                    "{fault:?}: {stderr}"
                );
            }
            _ => {
                let ok = out.accepted();
                assert_eq!(ok.auth[PRIVATE_HOST].1, PASSWORD, "{fault:?}");
            }
        }
    }
}
