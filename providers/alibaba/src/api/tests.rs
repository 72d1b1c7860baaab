// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kcp_kubelet::secret::Secret;
use kcp_plugin::http::ProxyConfig;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use ring::{digest, hmac};

use super::*;

// Shared with the other modules' tests.

/// A current-thread runtime with I/O and time.
pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A client with short timeouts and no proxy.
pub(crate) fn client() -> HttpClient {
    HttpClient::new(
        &ProxyConfig::default(),
        Duration::from_secs(2),
        Duration::from_secs(5),
    )
}

/// A deadline no test reaches.
pub(crate) fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(30))
}

/// Retries without waiting long.
pub(crate) const FAST: RetryPolicy = RetryPolicy {
    max_attempts: 4,
    base_delay: Duration::from_millis(1),
    max_delay: Duration::from_millis(2),
};

/// `http://127.0.0.1:<port>` of a port nothing listens on.
pub(crate) fn closed_port() -> Url {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    Url::parse(&format!("http://{addr}")).unwrap()
}

/// A fake answering with `answers` in turn (the last one repeated).
pub(crate) fn scripted(answers: Vec<FakeResponse>) -> FakeServer {
    let next = Arc::new(AtomicUsize::new(0));
    FakeServer::start(move |_| {
        let n = next.fetch_add(1, Ordering::SeqCst);
        answers[n.min(answers.len() - 1)].clone()
    })
}

/// The AccessKeyId and AccessKeySecret of [`test_key`].
const TEST_KEY_ID: &str = "LTAI5tTestKeyId";
const TEST_KEY_SECRET: &str = "test-access-key-secret-0001";

/// A long-lived test key.
pub(crate) fn test_key() -> AccessKey {
    AccessKey::long_lived(TEST_KEY_ID, TEST_KEY_SECRET)
}

/// `host` and the `x-acs-*` headers every request carries (and signs, when signed), sorted.
pub(crate) const BASE_HEADERS: [&str; 6] = [
    "host",
    "x-acs-action",
    "x-acs-content-sha256",
    "x-acs-date",
    "x-acs-signature-nonce",
    "x-acs-version",
];

/// Asserts `key` is the STS credentials `id`, `secret` and `token`, expiring at `expiration`
/// (RFC 3339).
pub(crate) fn assert_sts_key(
    key: &AccessKey,
    id: &str,
    secret: &str,
    token: &str,
    expiration: &str,
) {
    assert_eq!(key.id, id);
    assert_eq!(key.secret.expose(), secret);
    assert_eq!(key.security_token.as_ref().map(Secret::expose), Some(token));
    assert_eq!(key.expiration, kcp_plugin::time::parse_rfc3339(expiration));
}

/// `good` with `field` of the object at `pointer` (a JSON pointer, `""` for the top) set to
/// `replacement`, or removed with `None`; as text.
pub(crate) fn with_field(
    good: &Value,
    pointer: &str,
    field: &str,
    replacement: Option<Value>,
) -> String {
    let mut answer = good.clone();
    let map = answer
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap();
    match replacement {
        Some(value) => map.insert(field.to_owned(), value),
        None => map.remove(field),
    };
    answer.to_string()
}

/// RFC 3986 encoding written again for the verifier, so that it shares no code with `sign`.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hex_sha256(bytes: &[u8]) -> String {
    kcp_plugin::hex::encode(digest::digest(&digest::SHA256, bytes).as_ref())
}

/// Checks the V3 signature of a request as the server received it, from its own method, path,
/// query, headers and body, made with [`test_key`]: the server's side, written independently of
/// `sign`.
pub(crate) fn assert_signed(request: &RecordedRequest) {
    let authorization = request.header("authorization").expect("no authorization");
    let rest = authorization
        .strip_prefix("ACS3-HMAC-SHA256 Credential=")
        .unwrap_or_else(|| panic!("{authorization}"));
    let (credential, rest) = rest.split_once(",SignedHeaders=").unwrap();
    let (signed, signature) = rest.split_once(",Signature=").unwrap();
    assert_eq!(credential, TEST_KEY_ID);
    let names: Vec<&str> = signed.split(';').collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "signed headers are sorted");
    for required in BASE_HEADERS {
        assert!(names.contains(&required), "{required} is not signed");
    }
    let payload = hex_sha256(&request.body);
    assert_eq!(
        request.header("x-acs-content-sha256"),
        Some(payload.as_str())
    );
    let mut query: Vec<(String, String)> = request
        .query()
        .iter()
        .map(|(k, v)| (encode(k), encode(v)))
        .collect();
    query.sort();
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let headers: String = names
        .iter()
        .map(|name| format!("{name}:{}\n", request.header(name).unwrap().trim()))
        .collect();
    let canonical = format!(
        "{}\n{}\n{}\n{headers}\n{signed}\n{payload}",
        request.method,
        request.path(),
        query.join("&")
    );
    let to_sign = format!("ACS3-HMAC-SHA256\n{}", hex_sha256(canonical.as_bytes()));
    let key = hmac::Key::new(hmac::HMAC_SHA256, TEST_KEY_SECRET.as_bytes());
    let want = kcp_plugin::hex::encode(hmac::sign(&key, to_sign.as_bytes()).as_ref());
    assert_eq!(signature, want, "signature of {request:?}");
}

/// The `x-acs-*` headers every request carries, with their values.
pub(crate) fn assert_acs_headers(request: &RecordedRequest, action: &str, version: &str) {
    assert_eq!(request.header("x-acs-action"), Some(action));
    assert_eq!(request.header("x-acs-version"), Some(version));
    let date = request.header("x-acs-date").unwrap();
    assert!(kcp_plugin::time::parse_rfc3339(date).is_some(), "{date}");
    assert!(date.ends_with('Z') && date.len() == 20, "{date}");
    let nonce = request.header("x-acs-signature-nonce").unwrap();
    assert_eq!(nonce.len(), 32, "{nonce}");
    assert_eq!(
        request.header("x-acs-content-sha256"),
        Some(hex_sha256(&request.body).as_str())
    );
}

// The tests of this module.

const WHAT: &str = "cr GetAuthorizationToken for instance cri-test";

#[test]
fn error_answers_are_read_in_both_spellings() {
    let rpc = br#"{"RequestId":"7E0D5A50-1E2B-4C86-8A3F-4D0B3E0F6A11","HostId":"cr.cn-hangzhou.aliyuncs.com","Code":"Forbidden.RAM","Message":"User not authorized to operate on the specified resource.","Recommend":"https://api.aliyun.com/troubleshoot?q=Forbidden.RAM"}"#;
    let error = error_answer(WHAT, 403, rpc);
    assert_eq!(error.code(), Some("Forbidden.RAM"));
    assert_eq!(error.status(), Some(403));
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 403 Forbidden.RAM: User not \
         authorized to operate on the specified resource. (request ID \
         7E0D5A50-1E2B-4C86-8A3F-4D0B3E0F6A11)"
    );
    let roa = br#"{"code":"INSTANCE_NOT_EXIST","message":"The instance does not exist.","requestId":"0A1B2C3D-4E5F-4061-8A9B-CCDDEEFF0011"}"#;
    let error = error_answer(WHAT, 404, roa);
    assert_eq!(error.code(), Some("INSTANCE_NOT_EXIST"));
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 404 INSTANCE_NOT_EXIST: The \
         instance does not exist. (request ID 0A1B2C3D-4E5F-4061-8A9B-CCDDEEFF0011)"
    );
    // A shared code gets its hint; a service's own hint replaces it.
    let error = error_answer(WHAT, 400, br#"{"Code":"SignatureDoesNotMatch"}"#);
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 400 SignatureDoesNotMatch; \
         check that the AccessKeySecret belongs to the AccessKeyId"
    );
    let error = error.with_hint(|code| (code == "SignatureDoesNotMatch").then_some("ours"));
    assert!(error.to_string().ends_with("SignatureDoesNotMatch; ours"));
    // A code or request ID that does not look like one is not quoted.
    let error = error_answer(
        WHAT,
        400,
        br#"{"Code":"not a code","Message":"m","RequestId":"id with spaces"}"#,
    );
    assert_eq!(error.code(), None);
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 400: m"
    );
}

#[test]
fn messages_are_one_line_cut_short_and_redacted() {
    let remembered = "known/secret/with/slashes-0042";
    let _held = Secret::new(remembered);
    let token_run = "A".repeat(48);
    let long = "word ".repeat(80);
    let body = serde_json::json!({
        "Code": "InvalidParameter",
        "Message": format!("bad value {remembered}\nsecond line {token_run} {long}"),
        "RequestId": "ABC-123",
    })
    .to_string();
    let line = error_answer(WHAT, 400, body.as_bytes()).to_string();
    assert!(!line.contains(['\n', '\r']), "{line}");
    assert!(!line.contains(remembered), "{line}");
    assert!(!line.contains(&token_run), "{line}");
    assert!(
        line.starts_with(
            "cr GetAuthorizationToken for instance cri-test failed: HTTP 400 InvalidParameter: \
             bad value <redacted> second line <redacted> word word"
        ),
        "{line}"
    );
    assert!(line.ends_with("… (request ID ABC-123)"), "{line}");
    let ApiError::Answer { message, .. } = error_answer(WHAT, 400, body.as_bytes()) else {
        panic!()
    };
    assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 1);
}

#[test]
fn bodies_that_are_not_error_documents() {
    // Not JSON: a short redacted excerpt.
    let error = error_answer(WHAT, 502, b"<html>Bad Gateway</html>");
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 502: <html>Bad Gateway</html>"
    );
    assert_eq!(error.code(), None);
    // JSON without the error fields: no value of it is quoted.
    let error = error_answer(WHAT, 400, br#"{"Password":"hunter2hunter2"}"#);
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 400"
    );
    let error = error_answer(WHAT, 400, br#""a bare JSON string value""#);
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 400"
    );
    let error = error_answer(WHAT, 500, b"");
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 500"
    );
}

#[test]
fn throttling_and_server_trouble_are_transient_the_rest_is_not() {
    for (status, body, transient) in [
        (429, &b""[..], true),
        (500, b"", true),
        (503, b"{}", true),
        (400, br#"{"Code":"Throttling.User"}"#, true),
        (400, br#"{"Code":"Throttling"}"#, true),
        (400, br#"{"code":"Throttling.Api"}"#, true),
        (400, br#"{"Code":"ServiceUnavailable"}"#, true),
        (403, br#"{"Code":"InternalError"}"#, true),
        (400, br#"{"Code":"SignatureNonceUsed"}"#, true),
        (400, br#"{"Code":"InvalidParameter"}"#, false),
        (403, br#"{"Code":"Forbidden.RAM"}"#, false),
        (404, br#"{"code":"INSTANCE_NOT_EXIST"}"#, false),
        (400, b"Throttling", false),
        (401, b"", false),
    ] {
        assert_eq!(
            is_transient(status, body),
            transient,
            "{status} {}",
            String::from_utf8_lossy(body)
        );
    }
}

/// Sends an RPC-style `GetAuthorizationToken` to `endpoint`, signed with [`test_key`], under
/// [`FAST`] retries.
fn send_rpc(endpoint: &Url) -> Result<HttpResponse, ApiError> {
    let call = ApiCall {
        endpoint,
        method: "POST",
        path: "/",
        action: "GetAuthorizationToken",
        version: "2018-12-01",
        query: &[("InstanceId", "cri-test"), ("Note", "a b*~/")],
        form: &[],
        what: WHAT,
    };
    rt().block_on(send_with(
        &client(),
        &call,
        Some(&test_key()),
        deadline(),
        FAST,
    ))
}

#[test]
fn retries_are_signed_again_with_a_fresh_nonce() {
    let fake = scripted(vec![
        FakeResponse::new(
            400,
            r#"{"Code":"Throttling.User","Message":"Request was denied due to user flow control.","RequestId":"R1"}"#,
        ),
        FakeResponse::new(503, "busy"),
        FakeResponse::json(r#"{"ok":true}"#),
    ]);
    let body = send_rpc(&Url::parse(&fake.url()).unwrap()).unwrap();
    assert_eq!(body.body, br#"{"ok":true}"#);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path(), "/");
        assert_eq!(request.target, "/?InstanceId=cri-test&Note=a%20b%2A~%2F");
        assert_eq!(
            request.header("host"),
            Some(fake.addr().to_string().as_str())
        );
        assert_eq!(request.header("content-type"), None);
        assert!(request.body.is_empty());
        assert_acs_headers(request, "GetAuthorizationToken", "2018-12-01");
        assert_signed(request);
    }
    let nonces: std::collections::HashSet<&str> = requests
        .iter()
        .map(|r| r.header("x-acs-signature-nonce").unwrap())
        .collect();
    assert_eq!(nonces.len(), 3, "a nonce was sent twice");
}

#[test]
fn permanent_errors_fail_at_once() {
    let fake = scripted(vec![FakeResponse::new(
        403,
        r#"{"Code":"Forbidden.RAM","Message":"User not authorized.","RequestId":"R-403"}"#,
    )]);
    let error = send_rpc(&Url::parse(&fake.url()).unwrap()).unwrap_err();
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(error.code(), Some("Forbidden.RAM"));
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 403 Forbidden.RAM: User not \
         authorized. (request ID R-403)"
    );
}

#[test]
fn throttling_that_outlasts_the_retries_counts_the_attempts() {
    let fake = scripted(vec![FakeResponse::new(429, r#"{"Code":"Throttling"}"#)]);
    let error = send_rpc(&Url::parse(&fake.url()).unwrap()).unwrap_err();
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(
        error.to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 429 Throttling (after 4 \
         attempts); the API throttled this account: fewer calls help (--token-cache)"
    );
}

#[test]
fn anonymous_calls_carry_a_form_body_and_no_authorization() {
    let fake = scripted(vec![FakeResponse::json("{}")]);
    let endpoint = Url::parse(&fake.url()).unwrap();
    let call = ApiCall {
        endpoint: &endpoint,
        method: "POST",
        path: "/",
        action: "AssumeRoleWithOIDC",
        version: "2015-04-01",
        query: &[("RoleArn", "acs:ram::1:role/r")],
        form: &[("OIDCToken", "eyJ.a b+c/d")],
        what: "STS AssumeRoleWithOIDC",
    };
    rt().block_on(send_with(&client(), &call, None, deadline(), FAST))
        .unwrap();
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.target, "/?RoleArn=acs%3Aram%3A%3A1%3Arole%2Fr");
    assert_eq!(request.body_text(), "OIDCToken=eyJ.a%20b%2Bc%2Fd");
    assert_eq!(
        request.form(),
        [("OIDCToken".to_owned(), "eyJ.a b+c/d".to_owned())]
    );
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_acs_headers(request, "AssumeRoleWithOIDC", "2015-04-01");
}

#[test]
fn no_answer_is_an_http_error_after_the_retries() {
    let error = send_rpc(&closed_port()).unwrap_err();
    let ApiError::Http { error: call, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(call.attempts, 4);
    let line = error.to_string();
    assert!(
        line.starts_with(
            "cr GetAuthorizationToken for instance cri-test failed: request to 127.0.0.1 failed"
        ),
        "{line}"
    );
    assert!(line.ends_with("(after 4 attempts)"), "{line}");
    assert_eq!(error.code(), None);
}

#[test]
fn with_what_renames_the_call_of_every_variant_and_keeps_the_rest() {
    let answer = error_answer(
        "cr GetAuthorizationToken",
        403,
        br#"{"Code":"Forbidden.RAM"}"#,
    );
    assert_eq!(
        answer.with_what(WHAT).to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: HTTP 403 Forbidden.RAM"
    );
    let malformed = malformed("cr GetAuthorizationToken", "TempUsername", MISSING);
    assert_eq!(
        malformed.with_what(WHAT).to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: malformed answer: TempUsername is missing"
    );
    let endpoint = ApiError::Endpoint {
        what: "before".to_owned(),
        why: "no host".to_owned(),
    };
    assert_eq!(
        endpoint.with_what(WHAT).to_string(),
        "cr GetAuthorizationToken for instance cri-test failed: no host"
    );
    let http = send_rpc(&closed_port()).unwrap_err().with_what("renamed");
    assert!(
        matches!(&http, ApiError::Http { what, .. } if what == "renamed"),
        "{http:?}"
    );
}

#[test]
fn parser_helpers_name_fields_and_never_values() {
    let map = json_object("w", br#"{"a":"","b":5,"c":"x","t":"2027-01-01T00:00:00Z","m":"1800000000001","f":1.8e12,"n":null}"#).unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let why = |e: ApiError| match e {
        ApiError::Malformed { why, .. } => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(why(required_str(&map, "w", "a").unwrap_err()), "a is empty");
    assert_eq!(
        why(required_str(&map, "w", "b").unwrap_err()),
        "b is not a string"
    );
    assert_eq!(
        why(required_str(&map, "w", "z").unwrap_err()),
        "z is missing"
    );
    assert_eq!(
        why(required_str(&map, "w", "n").unwrap_err()),
        "n is missing"
    );
    assert_eq!(required_str(&map, "w", "c").unwrap(), "x");
    assert_eq!(
        why(required_object(&map, "w", "c").unwrap_err()),
        "c is not an object"
    );
    assert_eq!(
        why(future_rfc3339(&map, "w", "t", now).unwrap_err()),
        "t is already past"
    );
    assert_eq!(
        why(future_rfc3339(&map, "w", "c", now).unwrap_err()),
        "c is not an RFC 3339 time"
    );
    assert_eq!(
        millis(&map, "w", "m").unwrap(),
        now + Duration::from_millis(1)
    );
    assert!(millis(&map, "w", "f").unwrap() <= now);
    assert_eq!(
        why(millis(&map, "w", "c").unwrap_err()),
        "c is not a time in milliseconds since the epoch"
    );
    let error = json_object("the answer", b"not json").unwrap_err();
    assert_eq!(
        error.to_string(),
        "the answer failed: malformed answer: the body is not a JSON object (8 bytes)"
    );
    assert_eq!(whole_number(&serde_json::json!(-1)), None);
    assert_eq!(whole_number(&serde_json::json!(1.5)), None);
    assert_eq!(whole_number(&serde_json::json!("12")), Some(12));
    assert_eq!(whole_number(&serde_json::json!("-12")), None);
    assert_eq!(whole_number(&serde_json::json!(1e300)), None);
}
