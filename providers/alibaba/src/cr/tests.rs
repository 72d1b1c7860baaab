// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kcp_testkit::fake::{FakeResponse, FakeServer};

use super::*;
use crate::api::tests::{
    assert_acs_headers, assert_signed, client, deadline, rt, scripted, test_key, with_field,
};

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

const ENTERPRISE: &str = r#"{"IsSuccess":true,"Code":"success","AuthorizationToken":"enterprise-registry-password-0001","TempUsername":"cr_temp_user","ExpireTime":1800003600000,"RequestId":"C9BA7C03"}"#;
const PERSONAL: &str = r#"{"data":{"authorizationToken":"personal-registry-password-0001","tempUserName":"cr_temp_user_p","expireDate":1800003600000}}"#;

fn why(error: ApiError) -> String {
    match error {
        ApiError::Malformed { why, .. } => why,
        other => panic!("{other:?}"),
    }
}

/// Asserts `login` is `username` with `password`, expiring in an hour of [`now`].
fn assert_login(login: &RegistryLogin, username: &str, password: &str) {
    assert_eq!(login.username, username);
    assert_eq!(login.password.expose(), password);
    assert_eq!(login.expires_at, now() + Duration::from_secs(3600));
}

#[test]
fn enterprise_logins_come_whole_from_the_answer() {
    let login = parse_enterprise_login(ENTERPRISE.as_bytes()).unwrap();
    assert_login(&login, "cr_temp_user", "enterprise-registry-password-0001");
    assert_eq!(
        kcp_kubelet::secret::redact_known("enterprise-registry-password-0001"),
        "<redacted>"
    );
    let good: Value = serde_json::from_str(ENTERPRISE).unwrap();
    for (field, replacement, want) in [
        ("TempUsername", None, "TempUsername is missing"),
        (
            "TempUsername",
            Some(serde_json::json!("")),
            "TempUsername is empty",
        ),
        (
            "AuthorizationToken",
            Some(serde_json::json!("")),
            "AuthorizationToken is empty",
        ),
        ("AuthorizationToken", None, "AuthorizationToken is missing"),
        ("ExpireTime", None, "ExpireTime is missing"),
        (
            "ExpireTime",
            Some(serde_json::json!("soon")),
            "ExpireTime is not a time in milliseconds since the epoch",
        ),
        (
            "ExpireTime",
            Some(serde_json::json!(-1)),
            "ExpireTime is not a time in milliseconds since the epoch",
        ),
    ] {
        let answer = with_field(&good, "", field, replacement);
        let error = parse_enterprise_login(answer.as_bytes()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("cr GetAuthorizationToken failed: malformed answer: {want}")
        );
    }
    // ExpireTime as a numeric string or a float without fraction.
    for expire in [
        serde_json::json!("1800003600000"),
        serde_json::json!(1.8000036e12),
    ] {
        let mut answer = good.clone();
        answer["ExpireTime"] = expire;
        let login = parse_enterprise_login(answer.to_string().as_bytes()).unwrap();
        assert_eq!(login.expires_at, now() + Duration::from_secs(3600));
    }
}

#[test]
fn is_success_false_is_an_error_quoting_the_code() {
    let body = br#"{"IsSuccess":false,"Code":"Forbidden.RAM","Message":"User not authorized.","RequestId":"R-9","AuthorizationToken":"","TempUsername":""}"#;
    let error = parse_enterprise_login(body).unwrap_err();
    assert_eq!(error.code(), Some("Forbidden.RAM"));
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken failed: HTTP 200 Forbidden.RAM: User not authorized. (request ID \
         R-9); the identity needs cr:GetAuthorizationToken (and cr:ListInstance to find instances by name) in a RAM policy"
    );
    let body = br#"{"IsSuccess":"false","Code":"INSTANCE_NOT_EXIST"}"#;
    let error = parse_enterprise_login(body).unwrap_err();
    assert!(
        error.to_string().ends_with(
            "HTTP 200 INSTANCE_NOT_EXIST; no such Enterprise instance in this region: check the instance ID or name and the endpoint's region"
        ),
        "{error}"
    );
    for code in [
        "InstanceNotExist",
        "INSTANCE_NOT_EXIST",
        "Instance.NotExist",
        "InstanceNotFound",
    ] {
        assert!(hint(code).is_some(), "{code}");
    }
    assert_eq!(hint("InvalidParameter"), None);
}

#[test]
fn personal_logins_come_whole_from_the_answer() {
    let login = parse_personal_login(PERSONAL.as_bytes()).unwrap();
    assert_login(&login, "cr_temp_user_p", "personal-registry-password-0001");
    for (body, want) in [
        (r#"{}"#, "data is missing"),
        (r#"{"data":[]}"#, "data is not an object"),
        (
            r#"{"data":{"tempUserName":"u","expireDate":1800003600000}}"#,
            "authorizationToken is missing",
        ),
        (
            r#"{"data":{"authorizationToken":"p","expireDate":1800003600000}}"#,
            "tempUserName is missing",
        ),
        (
            r#"{"data":{"authorizationToken":"p","tempUserName":"u"}}"#,
            "expireDate is missing",
        ),
    ] {
        assert_eq!(
            parse_personal_login(body.as_bytes())
                .unwrap_err()
                .to_string(),
            format!("cr GetAuthorizationToken (Personal Edition) failed: malformed answer: {want}")
        );
    }
}

fn page(total: Value, names: &[&str]) -> String {
    let instances: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            serde_json::json!({
                "InstanceId": format!("cri-{name}-{i}"),
                "InstanceName": name,
                "RegionId": "cn-hangzhou",
                "InstanceStatus": "RUNNING",
            })
        })
        .collect();
    serde_json::json!({
        "IsSuccess": true, "Code": "success", "PageNo": 1, "PageSize": 50,
        "TotalCount": total, "Instances": instances,
    })
    .to_string()
}

#[test]
fn pages_are_matched_exactly_and_totals_read_both_ways() {
    let body = page(
        serde_json::json!("4"),
        &[
            "prod-registry-old",
            "Prod-Registry",
            "prod-registry",
            "prod-registry",
        ],
    );
    let parsed = parse_instance_page(body.as_bytes(), "prod-registry").unwrap();
    assert_eq!(parsed.total, Some(4));
    assert_eq!(parsed.entries, 4);
    assert_eq!(
        parsed.found,
        Some(Instance {
            id: "cri-prod-registry-2".into(),
            name: "prod-registry".into(),
            region: "cn-hangzhou".into(),
        })
    );
    let body = page(
        serde_json::json!(2),
        &["prod-registry-old", "Prod-Registry"],
    );
    let parsed = parse_instance_page(body.as_bytes(), "prod-registry").unwrap();
    assert_eq!(
        (parsed.total, parsed.entries, parsed.found),
        (Some(2), 2, None)
    );
    for (body, want) in [
        (
            r#"{"TotalCount":"many","Instances":[]}"#,
            "TotalCount is not a whole number",
        ),
        (r#"{"Instances":{}}"#, "Instances is not an array"),
        (
            r#"{"Instances":[1]}"#,
            "an entry of Instances is not an object",
        ),
        (
            r#"{"Instances":[{"InstanceName":"prod-registry","RegionId":"cn-hangzhou"}]}"#,
            "InstanceId is missing",
        ),
        (
            r#"{"Instances":[{"InstanceName":"prod-registry","InstanceId":"cri-1"}]}"#,
            "RegionId is missing",
        ),
    ] {
        assert_eq!(
            why(parse_instance_page(body.as_bytes(), "prod-registry").unwrap_err()),
            want,
            "{body}"
        );
    }
    // Entries named otherwise may lack anything.
    let parsed = parse_instance_page(
        br#"{"Instances":[{"InstanceName":"other"}]}"#,
        "prod-registry",
    )
    .unwrap();
    assert_eq!(
        (parsed.total, parsed.entries, parsed.found),
        (None, 1, None)
    );
    let error =
        parse_instance_page(br#"{"IsSuccess":false,"Code":"NoPermission"}"#, "x").unwrap_err();
    assert_eq!(error.code(), Some("NoPermission"));
}

/// [`enterprise_login`] of `instance_id` at `fake`, signed with [`test_key`].
fn login_at(fake: &FakeServer, instance_id: &str) -> Result<RegistryLogin, ApiError> {
    let endpoint = Url::parse(&fake.url()).unwrap();
    rt().block_on(enterprise_login(
        &client(),
        &endpoint,
        &test_key(),
        instance_id,
        deadline(),
    ))
}

#[test]
fn enterprise_login_is_one_signed_rpc_call() {
    let fake = scripted(vec![FakeResponse::json(
        r#"{"IsSuccess":true,"Code":"success","AuthorizationToken":"enterprise-net-password-0001","TempUsername":"cr_temp_user","ExpireTime":4102444800000,"RequestId":"R"}"#,
    )]);
    let login = login_at(&fake, "cri-kmsiwlxxdcva0ca6").unwrap();
    assert_eq!(login.username, "cr_temp_user");
    assert_eq!(login.password.expose(), "enterprise-net-password-0001");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.target, "/?InstanceId=cri-kmsiwlxxdcva0ca6");
    assert!(sent.body.is_empty());
    assert_acs_headers(sent, "GetAuthorizationToken", "2018-12-01");
    assert_signed(sent);

    // An answer without the user name names the call and the field.
    let fake = scripted(vec![FakeResponse::json(
        r#"{"IsSuccess":true,"AuthorizationToken":"enterprise-net-password-0002","ExpireTime":4102444800000}"#,
    )]);
    let error = login_at(&fake, "cri-x").unwrap_err();
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-x failed: malformed answer: TempUsername is missing"
    );
}

#[test]
fn personal_login_is_a_signed_roa_get() {
    let fake = scripted(vec![FakeResponse::json(
        r#"{"data":{"authorizationToken":"personal-net-password-0001","tempUserName":"cr_temp_user","expireDate":4102444800000}}"#,
    )]);
    let endpoint = Url::parse(&fake.url()).unwrap();
    let key = AccessKey {
        security_token: Some(Secret::new("sts-token-for-personal-0001")),
        ..test_key()
    };
    let login = rt()
        .block_on(personal_login(&client(), &endpoint, &key, deadline()))
        .unwrap();
    assert_eq!(login.password.expose(), "personal-net-password-0001");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.target.as_str()),
        ("GET", "/tokens")
    );
    assert_eq!(sent.header("content-type"), None);
    assert_eq!(
        sent.header("x-acs-security-token"),
        Some("sts-token-for-personal-0001")
    );
    assert_acs_headers(sent, "GetAuthorizationToken", "2016-06-07");
    assert_signed(sent);
    assert!(
        sent.header("authorization")
            .unwrap()
            .contains("x-acs-security-token")
    );
}

/// A `ListInstance` fake serving `pages` by `PageNo` (an empty page past them).
fn list_server(pages: Vec<String>) -> FakeServer {
    FakeServer::start(move |request| {
        let no: usize = request
            .query()
            .iter()
            .find(|(k, _)| k == "PageNo")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        match pages.get(no.wrapping_sub(1)) {
            Some(body) => FakeResponse::json(body.clone()),
            None => FakeResponse::json(page(serde_json::json!(0), &[])),
        }
    })
}

fn page_numbers(fake: &FakeServer) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| {
            let q = r.query();
            assert_eq!(
                q[0],
                ("InstanceName".to_owned(), "prod-registry".to_owned())
            );
            assert_eq!(q[2], ("PageSize".to_owned(), "50".to_owned()));
            assert_acs_headers(r, "ListInstance", "2018-12-01");
            q[1].1.clone()
        })
        .collect()
}

/// [`find_instance`] of `prod-registry` at `fake`, signed with [`test_key`].
fn find_at(fake: &FakeServer) -> Result<Option<Instance>, ApiError> {
    let endpoint = Url::parse(&fake.url()).unwrap();
    rt().block_on(find_instance(
        &client(),
        &endpoint,
        &test_key(),
        "prod-registry",
        deadline(),
    ))
}

#[test]
fn find_instance_pages_until_the_exact_name() {
    let fake = list_server(vec![
        page(
            serde_json::json!(3),
            &["prod-registry-old", "Prod-Registry"],
        ),
        page(serde_json::json!("3"), &["prod-registry"]),
    ]);
    let found = find_at(&fake).unwrap();
    assert_eq!(found.map(|i| i.id), Some("cri-prod-registry-0".to_owned()));
    assert_eq!(page_numbers(&fake), ["1", "2"]);
    assert_signed(&fake.requests()[1]);
}

#[test]
fn find_instance_stops_at_the_total_an_empty_page_or_the_cap() {
    // The total is reached: no third request.
    let fake = list_server(vec![
        page(serde_json::json!(3), &["a-prod-registry", "Prod-Registry"]),
        page(serde_json::json!(3), &["prod-registry2"]),
        page(serde_json::json!(3), &["prod-registry"]),
    ]);
    let found = find_at(&fake).unwrap();
    assert_eq!(found, None);
    assert_eq!(page_numbers(&fake), ["1", "2"]);

    // No total: until an empty page.
    let no_total = r#"{"IsSuccess":true,"Instances":[{"InstanceName":"x","InstanceId":"cri-x","RegionId":"cn-hangzhou"}]}"#;
    let fake = list_server(vec![no_total.to_owned()]);
    let found = find_at(&fake).unwrap();
    assert_eq!(found, None);
    assert_eq!(page_numbers(&fake), ["1", "2"]);

    // A server that never ends is not followed past the cap.
    let endless = page(serde_json::json!(1_000_000), &["other"]);
    let fake = FakeServer::start(move |_| FakeResponse::json(endless.clone()));
    let error = find_at(&fake).unwrap_err();
    assert_eq!(fake.requests().len(), MAX_PAGES as usize);
    assert_eq!(
        error.to_string(),
        "cr ListInstance for the instance name prod-registry failed: malformed answer: more than 1000 instances listed for the name: stopped after 20 pages"
    );
}

/// An expiry already past (by the registry's clock, or seconds where milliseconds belong) is
/// not malformed: the login is answered and cached for no time, and the registry's `Date` decides
/// how it reads on the node's clock (`RegistryToken::with_issuer_clock`).
#[test]
fn a_past_expiry_parses_and_leaves_the_clock_to_the_caller() {
    let past = |ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    let enterprise = format!(
        r#"{{"IsSuccess":true,"Code":"success","AuthorizationToken":"p","TempUsername":"u","ExpireTime":{}}}"#,
        1_800_003_600u64
    );
    let login = parse_enterprise_login(enterprise.as_bytes()).unwrap();
    assert_eq!(login.expires_at, past(1_800_003_600));
    assert_eq!(login.issuer_now, None);
    let personal = r#"{"data":{"authorizationToken":"p","tempUserName":"u","expireDate":1}}"#;
    let login = parse_personal_login(personal.as_bytes()).unwrap();
    assert_eq!(login.expires_at, past(1));
    assert_eq!(login.issuer_now, None);
}
