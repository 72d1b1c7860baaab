// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kcp_testkit::fake::{FakeResponse, FakeServer};

use super::*;
use crate::api::tests::{
    assert_acs_headers, assert_sts_key, client, deadline, rt, scripted, with_field,
};

const ANSWER: &str = r#"{"RequestId":"3D57EAD2-8723-1F26-B69C-F8707D8B565D","OIDCTokenInfo":{"Subject":"system:serviceaccount:default:puller","Issuer":"https://oidc.example","ClientIds":"sts.aliyuncs.com"},"AssumedRoleUser":{"AssumedRoleId":"3315:puller","Arn":"acs:ram::1135:role/puller/puller"},"Credentials":{"SecurityToken":"sts-security-token-value-0001","Expiration":"2099-01-15T09:00:00Z","AccessKeySecret":"sts-access-key-secret-0001","AccessKeyId":"STS.PodKeyId"}}"#;

const ROLE: &str = "acs:ram::1135:role/puller";
const PROVIDER: &str = "acs:ram::1135:oidc-provider/ack-rrsa-c4d5";

fn request<'a>(token: &'a Secret, duration: Duration) -> AssumeRoleWithOidc<'a> {
    AssumeRoleWithOidc {
        role_arn: ROLE,
        oidc_provider_arn: PROVIDER,
        oidc_token: token,
        session_name: "kubelet-node-1",
        duration,
    }
}

/// [`assume_role_with_oidc`] at `fake` with `token`, asking for `secs` seconds.
fn assume_at(fake: &FakeServer, token: &Secret, secs: u64) -> Result<AccessKey, ApiError> {
    let endpoint = Url::parse(&fake.url()).unwrap();
    rt().block_on(assume_role_with_oidc(
        &client(),
        &endpoint,
        &request(token, Duration::from_secs(secs)),
        deadline(),
    ))
}

#[test]
fn the_token_rides_in_the_body_and_the_call_is_anonymous() {
    let fake = scripted(vec![FakeResponse::json(ANSWER)]);
    let token = Secret::new("eyJhbGciOiJSUzI1NiJ9.service-account-token.sig");
    let key = assume_at(&fake, &token, 3600).unwrap();
    assert_sts_key(
        &key,
        "STS.PodKeyId",
        "sts-access-key-secret-0001",
        "sts-security-token-value-0001",
        "2099-01-15T09:00:00Z",
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path(), "/");
    assert_eq!(
        sent.query(),
        [
            ("DurationSeconds".to_owned(), "3600".to_owned()),
            ("OIDCProviderArn".to_owned(), PROVIDER.to_owned()),
            ("RoleArn".to_owned(), ROLE.to_owned()),
            ("RoleSessionName".to_owned(), "kubelet-node-1".to_owned()),
        ]
    );
    assert!(!sent.target.contains("service-account-token"));
    assert_eq!(
        sent.form(),
        [("OIDCToken".to_owned(), token.expose().to_owned())]
    );
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("x-acs-security-token"), None);
    assert_eq!(
        sent.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_acs_headers(sent, "AssumeRoleWithOIDC", "2015-04-01");
    assert_eq!(
        kcp_kubelet::secret::redact_known(
            "sts-access-key-secret-0001 sts-security-token-value-0001"
        ),
        "<redacted> <redacted>"
    );
}

#[test]
fn the_duration_stays_within_what_sts_grants() {
    for (asked, sent) in [(60, "900"), (3600, "3600"), (100_000, "43200")] {
        let fake = scripted(vec![FakeResponse::json(ANSWER)]);
        let token = Secret::new("eyJ.token.for-duration");
        assume_at(&fake, &token, asked).unwrap();
        let query = fake.requests()[0].query();
        assert_eq!(query[0], ("DurationSeconds".to_owned(), sent.to_owned()));
    }
}

#[test]
fn known_codes_carry_their_hint_and_are_not_retried() {
    for (code, hint_start) in [
        (
            "AuthenticationFail.OIDCToken.Expired",
            "check the service-account token: its audience",
        ),
        (
            "InvalidParameter.OIDCToken",
            "check the service-account token: its audience",
        ),
        (
            "EntityNotExist.Role",
            "check the RoleArn, and that the role's trust policy",
        ),
        (
            "AuthenticationFail.NoPermission",
            "check the RoleArn, and that the role's trust policy",
        ),
        ("InvalidParameter.RoleArn", "the RoleArn is malformed"),
        (
            "InvalidParameter.OIDCProviderArn",
            "the OIDCProviderArn is malformed",
        ),
    ] {
        let body = format!(r#"{{"RequestId":"R-1","Code":"{code}","Message":"refused"}}"#);
        let fake = scripted(vec![FakeResponse::new(400, body)]);
        let token = Secret::new("eyJ.token.for-hints");
        let error = assume_at(&fake, &token, 3600).unwrap_err();
        assert_eq!(fake.requests().len(), 1, "{code}");
        assert_eq!(error.code(), Some(code));
        assert!(
            error.to_string().starts_with(&format!(
                "STS AssumeRoleWithOIDC for {ROLE} failed: HTTP 400 {code}: refused (request ID R-1); {hint_start}"
            )),
            "{error}"
        );
    }
    let token_hint = hint("InvalidParameter.OIDCToken").unwrap();
    for part in [
        "tokenAttributes.serviceAccountTokenAudience",
        "sts.aliyuncs.com",
        "issuer",
        "not be expired",
    ] {
        assert!(token_hint.contains(part), "{part}");
    }
    assert_eq!(hint("InvalidParameter"), None);
}

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

#[test]
fn answers_are_checked_field_by_field() {
    let good: serde_json::Value = serde_json::from_str(ANSWER).unwrap();
    assert!(parse_answer(ANSWER.as_bytes(), now()).is_ok());
    for (field, replacement, why) in [
        ("AccessKeyId", None, "AccessKeyId is missing"),
        (
            "AccessKeySecret",
            Some(serde_json::json!("")),
            "AccessKeySecret is empty",
        ),
        ("SecurityToken", None, "SecurityToken is missing"),
        (
            "Expiration",
            Some(serde_json::json!(17)),
            "Expiration is not a string",
        ),
        (
            "Expiration",
            Some(serde_json::json!("2026-01-01T00:00:00Z")),
            "Expiration is already past",
        ),
    ] {
        let answer = with_field(&good, "/Credentials", field, replacement);
        let error = parse_answer(answer.as_bytes(), now()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("STS AssumeRoleWithOIDC failed: malformed answer: {why}")
        );
    }
    let error = parse_answer(br#"{"RequestId":"x"}"#, now()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "STS AssumeRoleWithOIDC failed: malformed answer: Credentials is missing"
    );
}
