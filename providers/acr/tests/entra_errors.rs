//! What the error line says when Entra ID answers a token request with an error status: an
//! outage (5xx) or throttling (429) names the status and the host and never blames the secret;
//! only an answer that means the credential was refused (401, 400 `invalid_client`) points at it,
//! quoting Entra's `error` and `error_description`. azure_identity's own wording
//! (`ClientSecretCredential authentication failed … #client-secret`) blamed the secret for all.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::Outcome;
use kcp_testkit::fake::FakeResponse;
use support::*;

const SP_CONFIG: &str = r#"{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;

/// Runs the SP plugin with Entra answering `answers` in turn (then its default token answer);
/// returns the run and the world. Every failed run must be one stderr line, exit 1, nothing on
/// stdout, no exchange.
fn run(answers: Vec<FakeResponse>) -> (Outcome, World) {
    let world = World::new();
    for answer in answers {
        world.entra_script.push(answer);
    }
    let out = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    (out, world)
}

/// The one error line of a failed run, its message after the level.
fn failed(out: &Outcome, world: &World) -> String {
    assert_eq!(out.exec.exit_code, Some(1));
    assert!(out.stdout().is_empty());
    let stderr = out.stderr();
    assert_eq!(stderr.lines().count(), 1, "exactly one line: {stderr}");
    assert!(
        world
            .registry_calls()
            .iter()
            .all(|(_, path)| path != "/oauth2/exchange"),
        "no exchange without a token"
    );
    assert_no_secret(&stderr, &[]);
    stderr.trim_end().to_owned()
}

const CONTEXT: &str = "getting an Entra token for scope https://containerregistry.azure.net/.default as service principal sp-client-id in tenant tenant-1";

#[test]
fn an_entra_outage_names_the_status_and_the_host_not_the_secret() {
    for (status, body, want) in [
        (
            503,
            "<html><body>Service Unavailable</body></html>",
            "Entra ID token request to 127.0.0.1 failed: HTTP 503 Service Unavailable (after 3 attempts); the service is unavailable or throttling",
        ),
        (
            503,
            r#"{"error":"temporarily_unavailable","error_description":"AADSTS90033: A transient error has occurred.\r\nTrace ID: t-1"}"#,
            "Entra ID token request to 127.0.0.1 failed: HTTP 503 Service Unavailable (after 3 attempts): temporarily_unavailable: AADSTS90033: A transient error has occurred. Trace ID: t-1; the service is unavailable",
        ),
        (
            500,
            "",
            "Entra ID token request to 127.0.0.1 failed: HTTP 500 Internal Server Error (after 3 attempts)",
        ),
        (
            429,
            r#"{"error":"temporarily_unavailable"}"#,
            "Entra ID token request to 127.0.0.1 failed: HTTP 429 Too Many Requests (after 3 attempts): temporarily_unavailable;",
        ),
    ] {
        let (out, world) = run(vec![FakeResponse::new(status, body); 3]);
        let line = failed(&out, &world);
        assert!(line.contains(CONTEXT), "{status}: {line}");
        assert!(line.contains(want), "{status}: {line}");
        for blame in [
            "#client-secret",
            "authentication failed",
            "aadClientSecret",
            "<html>",
        ] {
            assert!(!line.contains(blame), "{status}: {blame:?} in {line}");
        }
        assert_eq!(world.entra.requests().len(), 3, "{status}: retried twice");
    }
}

#[test]
fn only_a_refused_credential_blames_the_secret() {
    for (status, body, want) in [
        (
            401,
            r#"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}"#,
            "Entra ID token request to 127.0.0.1 refused the credential: HTTP 401 Unauthorized: invalid_client: AADSTS7000215: Invalid client secret provided.; check aadClientId and aadClientSecret in the cloud config",
        ),
        (
            400,
            r#"{"error":"invalid_client","error_description":"AADSTS7000222: The provided client secret keys are expired.","error_codes":[7000222]}"#,
            "Entra ID token request to 127.0.0.1 refused the credential: HTTP 400 Bad Request: invalid_client: AADSTS7000222: The provided client secret keys are expired.; check aadClientId and aadClientSecret",
        ),
        (
            401,
            "",
            "Entra ID token request to 127.0.0.1 refused the credential: HTTP 401 Unauthorized; check aadClientId and aadClientSecret",
        ),
    ] {
        let (out, world) = run(vec![FakeResponse::new(status, body)]);
        let line = failed(&out, &world);
        assert!(line.contains(CONTEXT), "{status}: {line}");
        assert!(line.contains(want), "{status}: {line}");
        assert!(!line.contains("#client-secret"), "{line}");
        assert_eq!(world.entra.requests().len(), 1, "a refusal is not retried");
    }
}

#[test]
fn other_client_errors_name_the_answer_without_blaming_the_secret() {
    let (out, world) = run(vec![FakeResponse::new(
        400,
        r#"{"error":"invalid_request","error_description":"AADSTS90002: Tenant 'tenant-1' not found.","error_codes":[90002]}"#,
    )]);
    let line = failed(&out, &world);
    assert!(
        line.contains("Entra ID token request to 127.0.0.1 answered HTTP 400 Bad Request: invalid_request: AADSTS90002: Tenant 'tenant-1' not found.; check the tenant, the client ID and the token scope"),
        "{line}"
    );
    assert!(!line.contains("aadClientSecret"), "{line}");
}

#[test]
fn an_answer_echoing_the_secret_is_redacted() {
    let (out, world) = run(vec![FakeResponse::new(
        400,
        format!(
            r#"{{"error":"invalid_client","error_description":"bad client_secret={CLIENT_SECRET}"}}"#
        ),
    )]);
    // `failed` (and the test kit's scan of every run) finds no secret on stderr.
    let line = failed(&out, &world);
    assert!(
        line.contains("invalid_client: bad client_secret=<redacted>"),
        "{line}"
    );
}

#[test]
fn an_outage_then_a_token_still_answers() {
    let (out, world) = run(vec![FakeResponse::new(503, "")]);
    out.accepted();
    assert_eq!(world.entra.requests().len(), 2);
}

#[test]
fn a_managed_identity_endpoint_outage_is_named_the_same_way() {
    let world = World::new();
    for _ in 0..3 {
        world
            .msi_script
            .push(FakeResponse::new(503, "<html>busy</html>"));
    }
    let out = world
        .mi_plugin(r#"{"tenantId":"tenant-1","useManagedIdentityExtension":true}"#)
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    let line = failed(&out, &world);
    assert!(
        line.contains(
            "system-assigned managed identity (App Service endpoint from IDENTITY_ENDPOINT)"
        ),
        "{line}"
    );
    assert!(
        line.contains(
            "managed identity token request to 127.0.0.1 failed: HTTP 503 Service Unavailable (after 3 attempts)"
        ),
        "{line}"
    );
    assert!(
        !line.contains("#managed-id") && !line.contains("<html>"),
        "{line}"
    );
}

#[test]
fn a_refused_federated_token_points_at_the_federated_credential() {
    let world = World::new();
    let token_file = world.file("azure-identity-token", FEDERATED_TOKEN);
    world.entra_script.push(FakeResponse::new(
        400,
        r#"{"error":"invalid_client","error_description":"AADSTS700213: No matching federated identity record found for presented assertion subject."}"#,
    ));
    let out = world
        .plugin(&format!(
            r#"{{"tenantId":"tenant-wi","aadClientId":"wi-client","useFederatedWorkloadIdentityExtension":true,"aadFederatedTokenFile":"{token_file}"}}"#
        ))
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    let line = failed(&out, &world);
    assert!(
        line.contains("Entra ID token request to 127.0.0.1 refused the credential: HTTP 400 Bad Request: invalid_client: AADSTS700213: No matching federated identity record found for presented assertion subject.; check that the application's federated credential matches the token file's issuer and subject"),
        "{line}"
    );
    assert!(!line.contains("aadClientSecret"), "{line}");
}
