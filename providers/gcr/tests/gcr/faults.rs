//! The shared fault table (`kcp_testkit::faults`) with the metadata server's token path
//! as the token endpoint. Its `expires_in` is relative, so a skewed server clock (its `Date`
//! header) cannot change the answer: `cacheDuration` is `expires_in` minus the 2 min margin.
//! An already-expired token is `expires_in: 0` (the metadata server has no way to say less).

use kcp_testkit::fake::FakeResponse;
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::{Plugin, http_date};

use crate::support::*;

const TOKEN: &str = "ya29.fault-table-token-0123456789";
const IMAGE: &str = "us-docker.pkg.dev/my-project/repo/app";

struct Gcr;

fn answer(step: Step) -> FakeResponse {
    match step {
        Step::ServerError => FakeResponse::new(500, "internal error"),
        Step::Unavailable => FakeResponse::new(503, "unavailable"),
        Step::Reset => FakeResponse::drop_connection(),
        Step::Throttled => FakeResponse::new(429, "slow down"),
        Step::Malformed => FakeResponse::json("<html>not json</html>"),
        Step::Hang => FakeResponse::hang(),
        Step::Token { life, skew } => FakeResponse::json(format!(
            r#"{{"access_token":"{TOKEN}","expires_in":{},"token_type":"Bearer"}}"#,
            life.max(0)
        ))
        .header(
            "date",
            &http_date(u64::try_from(Step::server_now(skew)).unwrap()),
        ),
    }
}

fn base() -> Plugin {
    Plugin::new(env!("CARGO_BIN_EXE_gcr-credential-provider")).args(["get-credentials"])
}

impl FaultTarget for Gcr {
    fn arrange(&self, plan: &Plan) -> Arranged {
        match plan {
            Plan::Refused => Arranged {
                plugin: base().env("GCE_METADATA_HOST", format!("127.0.0.1:{}", closed_port())),
                image: IMAGE.into(),
                token_requests: Box::new(Vec::new),
                keep: Box::new(()),
            },
            Plan::Script(steps) => {
                let md = std::sync::Arc::new(metadata_fake(vec![(
                    "instance/service-accounts/default/token",
                    steps.iter().map(|s| answer(*s)).collect(),
                )]));
                let seen = md.clone();
                Arranged {
                    plugin: base().env("GCE_METADATA_HOST", md.addr().to_string()),
                    image: IMAGE.into(),
                    token_requests: Box::new(move || seen.requests()),
                    keep: Box::new(md),
                }
            }
        }
    }

    fn cache_duration(&self, life: i64, _skew: i64) -> i64 {
        life.max(0) - 120
    }

    /// The shared client's default retry rules (`RetryPolicy::DEFAULT`): 4 attempts.
    fn attempts(&self) -> usize {
        4
    }
}

#[test]
fn the_shared_fault_table_against_the_metadata_token() {
    for (fault, out) in faults::run_table(&Gcr) {
        let stderr = out.stderr();
        match fault {
            Fault::Refused
            | Fault::Hang
            | Fault::MalformedBody
            | Fault::ServerErrorPersists
            | Fault::UnavailablePersists
            | Fault::ThrottledPersists
            | Fault::ResetPersists => {
                assert!(stderr.contains("metadata server at"), "{fault:?}: {stderr}");
                assert!(
                    !stderr.contains("<html>"),
                    "bodies are not echoed: {stderr}"
                );
            }
            _ => {
                let ok = out.accepted();
                assert!(
                    ok.auth.values().all(|(u, p)| u == "_token" && p == TOKEN),
                    "{fault:?}"
                );
            }
        }
    }
}
