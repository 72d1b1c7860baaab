//! The shared fault table (`kcp_testkit::faults`) with `GetAuthorizationToken` as the token
//! endpoint, for private ECR and ECR Public, with static keys from the environment and from a
//! shared credentials file: throttling is ECR's own `ThrottlingException` (HTTP 400), a token's
//! expiry is the absolute `expiresAt` of the answer, and the fake's `Date` header follows its
//! clock. The AWS SDK logs its own events about failed attempts; at the default verbosity none
//! of them may reach stderr, so every failure is our one line.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::{TempDir, http_date};
use support::*;

const PASSWORD: &str = "fault-table-ecr-password";
const PUBLIC_HOST: &str = "public.ecr.aws";

/// Where the keys that sign the call come from.
#[derive(Clone, Copy)]
enum Keys {
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    Environment,
    /// A profile of a shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`).
    File,
}

/// One ECR flavour as a fault target.
struct Ecr {
    public: bool,
    keys: Keys,
}

impl Ecr {
    fn answer(&self, step: Step) -> FakeResponse {
        match step {
            Step::ServerError => aws_error(500, "ServerException"),
            Step::Unavailable => aws_error(503, "ServiceUnavailableException"),
            Step::Throttled => aws_error(400, "ThrottlingException"),
            Step::Reset => FakeResponse::drop_connection(),
            Step::Malformed => FakeResponse::json(r#"{"authorizationData":"#),
            Step::Hang => FakeResponse::hang(),
            Step::Token { life, skew } => {
                let server_now = Step::server_now(skew);
                let expires_at = u64::try_from(server_now + life).unwrap();
                let user_pass = format!("AWS:{PASSWORD}");
                let answer = if self.public {
                    public_token(&user_pass, expires_at)
                } else {
                    ecr_token(&user_pass, Some(expires_at))
                };
                answer.header("date", &http_date(u64::try_from(server_now).unwrap()))
            }
        }
    }

    /// The plugin with this target's keys, and the temporary directory they live in.
    fn plugin(&self, endpoint: String) -> (Plugin, TempDir) {
        let dir = TempDir::new("ecr-faults");
        let variable = if self.public {
            "AWS_ENDPOINT_URL_ECR_PUBLIC"
        } else {
            "AWS_ENDPOINT_URL_ECR"
        };
        let plugin = match self.keys {
            Keys::Environment => plugin(),
            Keys::File => {
                let file = dir.path().join("credentials");
                std::fs::write(
                    &file,
                    "[default]\naws_access_key_id = AKIDFROMFILE\naws_secret_access_key = file-secret-key-value\n",
                )
                .unwrap();
                Plugin::new(BIN)
                    .secret("file-secret-key-value")
                    .env("AWS_SHARED_CREDENTIALS_FILE", file.display().to_string())
                    .env("AWS_EC2_METADATA_DISABLED", "true")
            }
        };
        (plugin.env(variable, endpoint), dir)
    }

    fn host(&self) -> &'static str {
        if self.public {
            PUBLIC_HOST
        } else {
            PRIVATE_HOST
        }
    }

    /// Runs the table and checks what only ECR says about each fault.
    fn run(&self) {
        for (fault, out) in faults::run_table(self) {
            let stderr = out.stderr();
            match fault {
                // The runner's deadline line (checked by the kit) does not name the endpoint.
                Fault::Hang => {}
                Fault::Refused
                | Fault::MalformedBody
                | Fault::ServerErrorPersists
                | Fault::UnavailablePersists
                | Fault::ThrottledPersists
                | Fault::ResetPersists => {
                    let region = if self.public {
                        "us-east-1"
                    } else {
                        "us-west-2"
                    };
                    assert!(
                        stderr.contains(&format!(
                            "getting an ECR authorization token for {}",
                            self.host()
                        )) && stderr.contains(&format!("region {region}")),
                        "{fault:?}: {stderr}"
                    );
                }
                _ => {
                    let ok = out.accepted();
                    assert_eq!(ok.auth[self.host()].1, PASSWORD, "{fault:?}");
                }
            }
        }
    }
}

impl FaultTarget for Ecr {
    fn arrange(&self, plan: &Plan) -> Arranged {
        let image = format!("{}/app", self.host());
        match plan {
            Plan::Refused => {
                let (plugin, dir) = self.plugin(format!("http://127.0.0.1:{}", closed_port()));
                Arranged {
                    plugin,
                    image,
                    token_requests: Box::new(Vec::new),
                    keep: Box::new(dir),
                }
            }
            Plan::Script(steps) => {
                let answers: Vec<FakeResponse> = steps.iter().map(|s| self.answer(*s)).collect();
                let calls = AtomicUsize::new(0);
                let ecr = Arc::new(FakeServer::start(move |_| {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    answers[n.min(answers.len() - 1)].clone()
                }));
                let seen = ecr.clone();
                let (plugin, dir) = self.plugin(ecr.url());
                Arranged {
                    plugin,
                    image,
                    token_requests: Box::new(move || seen.requests()),
                    keep: Box::new((ecr, dir)),
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

    /// The SDK's standard retry mode with 4 attempts (`src/aws.rs`).
    fn attempts(&self) -> usize {
        4
    }
}

#[test]
fn every_fault_of_get_authorization_token() {
    Ecr {
        public: false,
        keys: Keys::Environment,
    }
    .run();
}

#[test]
fn every_fault_of_ecr_public() {
    Ecr {
        public: true,
        keys: Keys::Environment,
    }
    .run();
}

#[test]
fn every_fault_with_keys_from_a_credentials_file() {
    Ecr {
        public: false,
        keys: Keys::File,
    }
    .run();
}

/// An endpoint that answers 500 to every attempt: the SDK logs an event of its own per attempt,
/// and none of them may join our line in the kubelet's log (issue #25: it used to be 5 lines).
#[test]
fn a_500_on_every_attempt_is_our_one_line() {
    for target in [
        Ecr {
            public: false,
            keys: Keys::Environment,
        },
        Ecr {
            public: true,
            keys: Keys::Environment,
        },
        Ecr {
            public: false,
            keys: Keys::File,
        },
    ] {
        let out = faults::run_one(&target, Fault::ServerErrorPersists);
        let line = out.rejected();
        assert!(
            line.contains(&format!(
                "ERROR getting an ECR authorization token for {}",
                target.host()
            )) && line.ends_with("HTTP 500 ServerException: injected ServerException"),
            "{line}"
        );
    }
}
