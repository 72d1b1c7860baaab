// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};

use super::*;
use crate::api::tests::{assert_sts_key, client, closed_port, deadline, rt, with_field};

const CREDENTIALS: &str = r#"{"AccessKeyId":"STS.NodeRoleKeyId","AccessKeySecret":"node-role-secret-value-0001","SecurityToken":"node-role-security-token-0001","Expiration":"2099-11-28T08:00:00Z","LastUpdated":"2099-11-28T02:00:00Z","Code":"Success"}"#;

/// A metadata server: hardened mode or not, the role list and the credentials of `node-role`.
fn server(hardened: bool, roles: FakeResponse) -> FakeServer {
    FakeServer::start(
        move |request| match (request.method.as_str(), request.path()) {
            ("PUT", "/latest/api/token") if hardened => {
                FakeResponse::new(200, "session-token-0001")
            }
            ("PUT", "/latest/api/token") => FakeResponse::new(404, "Not Found"),
            ("GET", "/latest/meta-data/ram/security-credentials/") => roles.clone(),
            ("GET", "/latest/meta-data/ram/security-credentials/node-role") => {
                FakeResponse::json(CREDENTIALS)
            }
            ("GET", "/latest/meta-data/region-id") => FakeResponse::new(200, "cn-hangzhou"),
            _ => FakeResponse::new(404, "Not Found"),
        },
    )
}

fn metadata(fake: &FakeServer) -> Metadata {
    Metadata::new(Url::parse(&fake.url()).unwrap())
}

/// The credentials of `role` (or of the role the server lists) from `fake`.
fn credentials_of(fake: &FakeServer, role: Option<&str>) -> Result<AccessKey, MetadataError> {
    rt().block_on(metadata(fake).role_credentials(&client(), role, deadline()))
}

fn lines(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

#[test]
fn hardened_mode_reads_the_role_and_its_credentials_with_the_session_token() {
    let fake = server(true, FakeResponse::new(200, "node-role\n"));
    let key = credentials_of(&fake, None).unwrap();
    assert_sts_key(
        &key,
        "STS.NodeRoleKeyId",
        "node-role-secret-value-0001",
        "node-role-security-token-0001",
        "2099-11-28T08:00:00Z",
    );
    let requests = fake.requests();
    assert_eq!(
        lines(&requests),
        [
            "PUT /latest/api/token",
            "GET /latest/meta-data/ram/security-credentials/",
            "GET /latest/meta-data/ram/security-credentials/node-role",
        ]
    );
    assert_eq!(
        requests[0].header("x-aliyun-ecs-metadata-token-ttl-seconds"),
        Some("300")
    );
    assert_eq!(requests[0].header("x-aliyun-ecs-metadata-token"), None);
    for get in &requests[1..] {
        assert_eq!(
            get.header("x-aliyun-ecs-metadata-token"),
            Some("session-token-0001")
        );
    }
    // Every secret met is remembered for redaction.
    for secret in [
        "session-token-0001",
        "node-role-secret-value-0001",
        "node-role-security-token-0001",
    ] {
        assert_eq!(
            kcp_kubelet::secret::redact_known(&format!("x {secret} y")),
            "x <redacted> y"
        );
    }
}

#[test]
fn without_hardened_mode_the_reads_go_without_a_token() {
    let fake = server(false, FakeResponse::new(200, "node-role"));
    let key = credentials_of(&fake, None).unwrap();
    assert_eq!(key.id, "STS.NodeRoleKeyId");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-aliyun-ecs-metadata-token").is_none())
    );
}

#[test]
fn a_given_role_is_read_directly_and_checked_first() {
    let fake = server(true, FakeResponse::new(500, "must not be asked"));
    let key = credentials_of(&fake, Some("node-role")).unwrap();
    assert_eq!(key.id, "STS.NodeRoleKeyId");
    assert_eq!(
        lines(&fake.requests()),
        [
            "PUT /latest/api/token",
            "GET /latest/meta-data/ram/security-credentials/node-role"
        ]
    );

    let fake = server(true, FakeResponse::new(200, "node-role"));
    let error = credentials_of(&fake, Some("../region-id")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "ALIBABA_CLOUD_ECS_METADATA is not a RAM role name (letters, digits, '.', '-', '_', '@', up to 64 characters)"
    );
    assert!(fake.requests().is_empty());

    let error = credentials_of(&fake, Some("other-role")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the RAM role other-role is not attached to this ECS instance (HTTP 404): check ALIBABA_CLOUD_ECS_METADATA or attach the role"
    );
}

#[test]
fn no_role_attached_is_said_plainly() {
    let want = "no RAM role is attached to this ECS instance: attach one with cr:GetAuthorizationToken (and cr:ListInstance)";
    for roles in [
        FakeResponse::new(404, "Not Found"),
        FakeResponse::new(200, ""),
        FakeResponse::new(200, "\n  \n"),
    ] {
        let fake = server(true, roles);
        let error = credentials_of(&fake, None).unwrap_err();
        assert!(matches!(error, MetadataError::NoRole), "{error:?}");
        assert_eq!(error.to_string(), want);
    }
    let fake = server(true, FakeResponse::new(200, "bad role name"));
    let error = credentials_of(&fake, None).unwrap_err();
    assert!(
        matches!(
            error,
            MetadataError::BadRole {
                source_name: "the metadata server's role list"
            }
        ),
        "{error:?}"
    );
}

#[test]
fn an_unreachable_server_names_the_other_identities() {
    let endpoint = closed_port();
    let error = rt()
        .block_on(Metadata::new(endpoint.clone()).role_credentials(&client(), None, deadline()))
        .unwrap_err();
    let line = error.to_string();
    assert!(
        line.starts_with(&format!(
            "the ECS metadata server at {} is unreachable (request to 127.0.0.1 failed",
            endpoint.as_str().trim_end_matches('/')
        )),
        "{line}"
    );
    assert!(
        line.ends_with(
            "): this node is not on Alibaba Cloud ECS, or set ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET, or --metadata-endpoint"
        ),
        "{line}"
    );
    assert!(!line.contains('\n'));
    let MetadataError::Unreachable { error: call, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(call.attempts, 2);
}

#[test]
fn the_region_is_read_and_checked() {
    let fake = server(true, FakeResponse::new(200, "node-role"));
    let region = rt()
        .block_on(metadata(&fake).region(&client(), deadline()))
        .unwrap();
    assert_eq!(region, "cn-hangzhou");
    let requests = fake.requests();
    assert_eq!(
        lines(&requests),
        ["PUT /latest/api/token", "GET /latest/meta-data/region-id"]
    );
    assert_eq!(
        requests[1].header("x-aliyun-ecs-metadata-token"),
        Some("session-token-0001")
    );

    let bad = FakeServer::start(|request| match request.method.as_str() {
        "PUT" => FakeResponse::new(403, "no"),
        _ => FakeResponse::new(200, "<html>captive portal</html>"),
    });
    let error = rt()
        .block_on(metadata(&bad).region(&client(), deadline()))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "reading the region from the ECS metadata server failed: malformed answer: region-id is not a region ID (such as cn-hangzhou)"
    );

    for (text, ok) in [
        ("cn-hangzhou", true),
        ("ap-southeast-1", true),
        ("cn-shanghai-finance-1", true),
        ("us-east-1", true),
        ("cnhangzhou", false),
        ("cn-", false),
        ("-cn", false),
        ("CN-hangzhou", false),
        ("cn-hang zhou", false),
        ("1cn-x", false),
        ("", false),
    ] {
        assert_eq!(is_region(text), ok, "{text:?}");
    }
}

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

#[test]
fn credentials_answers_are_checked_field_by_field() {
    let good: serde_json::Value = serde_json::from_str(CREDENTIALS).unwrap();
    let key = parse_role_credentials(CREDENTIALS.as_bytes(), now()).unwrap();
    assert_eq!(key.id, "STS.NodeRoleKeyId");

    let refused = r#"{"Code":"Failed","AccessKeySecret":"refused-secret-value-0001"}"#;
    let error = parse_role_credentials(refused.as_bytes(), now()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the ECS metadata server refused the RAM role credentials: Code Failed; check the instance's RAM role"
    );
    assert_eq!(
        kcp_kubelet::secret::redact_known("refused-secret-value-0001"),
        "<redacted>",
        "remembered even when refused"
    );

    for (field, replacement, why) in [
        ("AccessKeyId", None, "AccessKeyId is missing"),
        ("AccessKeySecret", None, "AccessKeySecret is missing"),
        (
            "SecurityToken",
            Some(serde_json::json!("")),
            "SecurityToken is empty",
        ),
        ("Expiration", None, "Expiration is missing"),
        (
            "Expiration",
            Some(serde_json::json!("tomorrow")),
            "Expiration is not an RFC 3339 time",
        ),
        (
            "Expiration",
            Some(serde_json::json!("2027-01-15T08:00:00Z")),
            "Expiration is already past",
        ),
        (
            "AccessKeyId",
            Some(serde_json::json!(5)),
            "AccessKeyId is not a string",
        ),
        ("Code", None, "Code is missing"),
        (
            "Code",
            Some(serde_json::json!("not a code!")),
            "Code is not a code",
        ),
    ] {
        let answer = with_field(&good, "", field, replacement);
        let error = parse_role_credentials(answer.as_bytes(), now()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the ECS metadata server's RAM role credentials failed: malformed answer: {why}"
            ),
            "{field}"
        );
    }
    let error = parse_role_credentials(b"<html>", now()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the ECS metadata server's RAM role credentials failed: malformed answer: the body is not a JSON object (6 bytes)"
    );
}
