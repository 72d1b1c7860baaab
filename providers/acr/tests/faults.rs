//! Refusals and faults: the shared fault table (`kcp_testkit::faults`) with the ACR token
//! exchange as the token endpoint, then what only ACR has: look-alike hosts, a realm pointing
//! elsewhere, the challenge and Entra endpoints failing, bad command lines and config files. Each
//! failure is one stderr line, an empty stdout and a non-zero exit, inside the deadline, with no
//! secret in it.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::faults::{self, Arranged, Fault, FaultTarget, Plan, Step};
use kcp_testkit::http_date;
use support::*;

const SP_CONFIG: &str = r#"{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;
const MI_CONFIG: &str = r#"{"tenantId":"tenant-1","useManagedIdentityExtension":true}"#;

/// The shared table's token endpoint is the registry's `/oauth2/exchange`; a token is a refresh
/// token whose `exp` is read from the fake's (possibly skewed) clock, sent with that clock's
/// `Date`. Refused: the registry host does not answer at all.
struct Acr;

fn exchange_answer(step: Step) -> FakeResponse {
    match step {
        Step::ServerError => FakeResponse::new(500, "internal error"),
        Step::Unavailable => FakeResponse::new(503, "unavailable"),
        Step::Reset => FakeResponse::drop_connection(),
        Step::Throttled => FakeResponse::new(
            429,
            r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
        )
        .header("retry-after", "1"),
        Step::Malformed => FakeResponse::json("<html>not json</html>"),
        Step::Hang => FakeResponse::hang(),
        Step::Token { life, skew } => {
            let server_now = Step::server_now(skew);
            let token = jwt(
                u64::try_from(server_now + life).unwrap(),
                "myreg.azurecr.io",
            );
            FakeResponse::json(format!(r#"{{"refresh_token":"{token}"}}"#))
                .header("date", &http_date(u64::try_from(server_now).unwrap()))
        }
    }
}

impl FaultTarget for Acr {
    fn arrange(&self, plan: &Plan) -> Arranged {
        let world = Arc::new(match plan {
            Plan::Refused => World::with_routes(false),
            Plan::Script(steps) => {
                let world = World::new();
                for step in steps {
                    world.exchange_script.push(exchange_answer(*step));
                }
                // The last step repeats (past it the fake answers with a token): queue it for
                // every attempt the exchange can make.
                if let Some(last) = steps.last() {
                    for _ in 0..self.attempts() {
                        world.exchange_script.push(exchange_answer(*last));
                    }
                }
                world
            }
        });
        let seen = world.clone();
        Arranged {
            plugin: world.plugin(SP_CONFIG),
            image: "myreg.azurecr.io/app".into(),
            token_requests: Box::new(move || {
                seen.registry
                    .requests()
                    .into_iter()
                    .filter(|r| r.path() == "/oauth2/exchange")
                    .collect()
            }),
            keep: Box::new(world),
        }
    }

    /// The refresh token's remaining life minus the 5 min margin, counted from the later of the
    /// node's clock and the registry's `Date`: whichever clock is right, the answer ends before
    /// the token does.
    fn cache_duration(&self, life: i64, skew: i64) -> i64 {
        life.min(life + skew) - 300
    }

    /// The exchange's own retry rules (`src/exchange.rs`): 3 attempts.
    fn attempts(&self) -> usize {
        3
    }
}

#[test]
fn the_shared_fault_table_against_the_token_exchange() {
    for (fault, out) in faults::run_table(&Acr) {
        let want = match fault {
            Fault::Refused => "GET https://myreg.azurecr.io/v2/ (the registry's token challenge)",
            Fault::MalformedBody => {
                "ACR token exchange at https://myreg.azurecr.io/oauth2/exchange: the answer is not the expected JSON"
            }
            Fault::ServerErrorPersists
            | Fault::UnavailablePersists
            | Fault::ThrottledPersists
            | Fault::ResetPersists => {
                "ACR token exchange at https://myreg.azurecr.io/oauth2/exchange"
            }
            _ => continue,
        };
        let line = out.stderr();
        assert!(line.contains(want), "{fault:?}: {line}");
        assert!(!line.contains("<html>"), "bodies are not echoed: {line}");
    }
}

#[test]
fn look_alike_and_non_acr_hosts_are_refused_before_any_request() {
    let world = World::new();
    for (image, registry) in [
        (
            "foo.azurecr.io.example.com/app",
            "foo.azurecr.io.example.com",
        ),
        ("example.com/foo.azurecr.io/app", "example.com"),
        ("myreg.azurecr.io.evil.com/app", "myreg.azurecr.io.evil.com"),
        ("docker.io/library/nginx", "docker.io"),
        (
            "myreg.eastus.data.azurecr.io/app",
            "myreg.eastus.data.azurecr.io",
        ),
        ("mcr.microsoft.com/azure-cli", "mcr.microsoft.com"),
    ] {
        let out = world.mi_plugin(MI_CONFIG).request(ApiVersion::V1, image);
        assert_eq!(out.exec.exit_code, Some(1), "{image}");
        let line = out.rejected();
        assert!(
            line.contains(&format!(
                "{registry} is not an Azure Container Registry login server"
            )),
            "{image}: {line}"
        );
    }
    assert!(
        world.msi.requests().is_empty(),
        "no token was even asked for"
    );
    assert!(world.entra.requests().is_empty());
    assert!(world.registry.requests().is_empty());
    assert!(
        world.proxy.targets().is_empty(),
        "{:?}",
        world.proxy.targets()
    );
    world.assert_nothing_off_cloud();
}

#[test]
fn a_realm_pointing_elsewhere_gets_no_token() {
    for realm in [
        "https://evil.example.com/oauth2/token",
        "https://myreg.azurecr.io.evil.com/oauth2/token",
        "http://myreg.azurecr.io/oauth2/token",
        "https://myreg.azurecr.cn/oauth2/token",
    ] {
        let world = World::new();
        world
            .challenge_script
            .push(FakeResponse::new(401, "{}").header(
                "www-authenticate",
                &format!(r#"Bearer realm="{realm}",service="myreg.azurecr.io""#),
            ));
        let out = world
            .plugin(SP_CONFIG)
            .args(["--v=6"])
            .request(ApiVersion::V1, "myreg.azurecr.io/app");
        assert_ne!(out.exec.exit_code, Some(0));
        assert!(out.stdout().is_empty());
        let stderr = out.stderr();
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("ERROR")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(
            errors[0].contains("refusing to send an Entra token for myreg.azurecr.io")
                && errors[0].contains(realm),
            "{realm}: {}",
            errors[0]
        );
        assert_eq!(
            world.registry_calls(),
            vec![("GET".into(), "/v2/".into())],
            "{realm}: no exchange"
        );
        world.assert_nothing_off_cloud();
        assert_no_secret(&stderr, &[]);
    }
}

#[test]
fn a_challenge_without_bearer_or_a_registry_without_auth_is_an_error() {
    let world = World::new();
    world
        .challenge_script
        .push(FakeResponse::new(401, "").header("www-authenticate", r#"Basic realm="Registry""#));
    let line = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("WWW-Authenticate offers no Bearer challenge (schemes: Basic)"),
        "{line}"
    );
    world.challenge_script.push(FakeResponse::new(200, "{}"));
    let line = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("expected HTTP 401 with a Bearer challenge, got HTTP 200"),
        "{line}"
    );
    assert!(
        !world
            .registry_calls()
            .iter()
            .any(|(_, p)| p == "/oauth2/exchange")
    );
}

#[test]
fn a_refused_registry_fails_after_bounded_retries() {
    let world = World::with_routes(false);
    let started = Instant::now();
    let line = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        line.contains("GET https://myreg.azurecr.io/v2/ (the registry's token challenge)"),
        "{line}"
    );
    assert!(line.contains("after 3 attempts"), "{line}");
    let tries = world
        .proxy
        .targets()
        .iter()
        .filter(|t| *t == "myreg.azurecr.io:443")
        .count();
    assert_eq!(tries, 3, "{:?}", world.proxy.targets());
    assert_no_secret(&line, &[]);
}

#[test]
fn a_hanging_entra_endpoint_is_named_and_bounded() {
    let world = World::new();
    for _ in 0..5 {
        world.entra_script.push(FakeResponse::hang());
    }
    let started = Instant::now();
    let line = world
        .plugin(SP_CONFIG)
        .args(["--deadline=4s"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(line.contains("getting an Entra token for scope https://containerregistry.azure.net/.default as service principal sp-client-id in tenant tenant-1"), "{line}");
    assert!(line.contains("no answer within"), "{line}");
    assert!(
        world
            .registry_calls()
            .iter()
            .all(|(_, p)| p != "/oauth2/exchange")
    );
}

#[test]
fn a_hanging_managed_identity_endpoint_is_bounded() {
    let world = World::new();
    for _ in 0..5 {
        world.msi_script.push(FakeResponse::hang());
    }
    let started = Instant::now();
    let line = world
        .mi_plugin(MI_CONFIG)
        .args(["--deadline=3s"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        line.contains(
            "system-assigned managed identity (App Service endpoint from IDENTITY_ENDPOINT)"
        ),
        "{line}"
    );
    assert_no_secret(&line, &[]);
}

#[test]
fn exchange_429_then_ok_honours_retry_after() {
    let world = World::new();
    world.exchange_script.push(
        FakeResponse::new(
            429,
            r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
        )
        .header("retry-after", "1"),
    );
    let started = Instant::now();
    world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .accepted();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not waited for"
    );
    let posts = world
        .registry_calls()
        .iter()
        .filter(|(_, p)| p == "/oauth2/exchange")
        .count();
    assert_eq!(posts, 2);
}

#[test]
fn challenge_503_then_ok_is_retried() {
    let world = World::new();
    world.challenge_script.push(FakeResponse::new(503, ""));
    world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .accepted();
    assert_eq!(
        world
            .registry_calls()
            .iter()
            .filter(|(_, p)| p == "/v2/")
            .count(),
        2
    );
}

#[test]
fn entra_500_then_ok_and_429_then_ok_are_retried() {
    for status in [500, 429] {
        let world = World::new();
        world.entra_script.push(FakeResponse::new(
            status,
            r#"{"error":"temporarily_unavailable"}"#,
        ));
        world
            .plugin(SP_CONFIG)
            .request(ApiVersion::V1, "myreg.azurecr.io/app")
            .accepted();
        assert_eq!(world.entra.requests().len(), 2, "{status}");
    }
}

#[test]
fn entra_errors_are_shown_without_secrets() {
    let world = World::new();
    world.entra_script.push(FakeResponse::new(
        401,
        r#"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}"#,
    ));
    let line = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("AADSTS7000215: Invalid client secret provided."),
        "{line}"
    );
    assert!(
        line.contains("as service principal sp-client-id in tenant tenant-1"),
        "{line}"
    );
    assert_no_secret(&line, &[]);
}

#[test]
fn managed_identity_not_assigned_is_explained() {
    let world = World::new();
    world.msi_script.push(FakeResponse::new(
        400,
        r#"{"error":"invalid_request","error_description":"Identity not found"}"#,
    ));
    let line = world
        .mi_plugin(r#"{"useManagedIdentityExtension":true,"userAssignedIdentityID":"missing-id"}"#)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("managed identity with client ID missing-id"),
        "{line}"
    );
    assert!(line.contains("has not been assigned"), "{line}");
}

#[test]
fn malformed_and_empty_exchange_answers_are_errors() {
    for (body, want) in [
        ("not json <html>", "the answer is not the expected JSON"),
        ("{}", "the answer has no refresh_token"),
        (r#"{"refresh_token":""}"#, "the answer has no refresh_token"),
        (r#"{"access_token":"x"}"#, "the answer has no refresh_token"),
    ] {
        let world = World::new();
        world
            .exchange_script
            .push(FakeResponse::json(body).header("x-ms-correlation-request-id", "corr-9"));
        let line = world
            .plugin(SP_CONFIG)
            .request(ApiVersion::V1, "myreg.azurecr.io/app")
            .rejected();
        assert!(line.contains(want), "{body}: {line}");
        assert!(
            line.contains("ACR token exchange at https://myreg.azurecr.io/oauth2/exchange"),
            "{line}"
        );
        assert!(line.contains("correlation id corr-9"), "{line}");
        assert!(!line.contains("<html>"), "bodies are not echoed: {line}");
    }
}

#[test]
fn exchange_refusals_show_acr_codes_and_hint_at_acrpull() {
    let world = World::new();
    world.exchange_script.push(
        FakeResponse::new(401, r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required, visit https://aka.ms/acr/authorization"}]}"#)
            .header("x-ms-correlation-request-id", "corr-401"),
    );
    let line = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("answered HTTP 401: UNAUTHORIZED: authentication required"),
        "{line}"
    );
    assert!(line.contains("correlation id corr-401"), "{line}");
    assert!(line.contains("AcrPull"), "{line}");
    assert_eq!(
        world
            .registry_calls()
            .iter()
            .filter(|(_, p)| p == "/oauth2/exchange")
            .count(),
        1,
        "401 is not retried"
    );
}

#[test]
fn config_file_problems_name_the_file() {
    let world = World::new();
    let line = kcp_testkit::Plugin::new(BIN)
        .args(["/nonexistent/azure.json"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("reading the cloud config file /nonexistent/azure.json"),
        "{line}"
    );
    let line = world
        .plugin("{invalid json")
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains("azure.json is not valid JSON or YAML"),
        "{line}"
    );
    let line = world
        .plugin(r#"{"useManagedIdentityExtension":"yes"}"#)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(
        line.contains(r#"field "useManagedIdentityExtension" must be true or false, got a string"#),
        "{line}"
    );
    let line = world
        .plugin("{}")
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(line.contains("configures no identity"), "{line}");
}

#[test]
fn command_line_problems_exit_2_with_one_line() {
    let out = kcp_testkit::Plugin::new(BIN).request(ApiVersion::V1, "myreg.azurecr.io/app");
    assert_eq!(out.exec.exit_code, Some(2));
    assert!(out.rejected().contains("config file is not specified"));
    let out = kcp_testkit::Plugin::new(BIN)
        .args(["a.json", "b.json"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    assert_eq!(out.exec.exit_code, Some(2));
    assert!(out.rejected().contains(
        r#"expected exactly one argument (config file); got arguments: ["a.json", "b.json"]"#
    ));
}

#[test]
fn klog_flags_are_tolerated_and_version_prints() {
    let world = World::new();
    world
        .plugin(SP_CONFIG)
        .args(["--vmodule=x=4", "--log-flush-frequency", "5s", "-v", "2"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .accepted();
    let out = std::process::Command::new(kcp_testkit::binary_under_test(BIN))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("acr-credential-provider {}\n", env!("CARGO_PKG_VERSION"))
    );
}
