//! `ibm-iam` against a loopback fake that answers as IBM Cloud IAM's `POST /identity/token` does
//! for the compute-resource token grant: the exact form it is sent (every field, the content
//! type, nothing in the URL), the answer (`iambearer` and the access token for `expires_in`),
//! IAM's `BXNIM…` refusals quoted on one line without a token, 5xx retried, malformed answers,
//! and entries refused at load. Built as `vendors.rs` builds the other vendors' cases.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Outcome, unix_now};
use serde_json::json;
use support::*;

const GRANT: &str = "urn:ibm:params:oauth:grant-type:cr-token";
const PATH: &str = "/identity/token";
const PROFILE_ID: &str = "Profile-6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d";
const ACCESS_TOKEN: &str = "ibm-iam-access-token-0123456789abcdef";
const IMAGE: &str = "icr.io/acme/app:1.0";
/// What the error line says after IAM's quoted refusal.
const HINT: &str = "; check that the trusted profile (profileId or profileName) trusts this compute resource (a link or a Profile-CR rule for the cluster with cr_type IKS_SA or ROKS_SA, the pod's namespace and service account), that IAM can verify the cluster's service-account tokens (IKS and ROKS clusters only), the token's audience, and that the profile may read the registry namespace";

/// The docs' registries file: `icr.io` and its regional hosts, one profile, IAM at `fake`.
fn config(fake: &FakeServer, profile: &str) -> String {
    format!(
        "registries:\n  - host: icr.io\n    protocol: ibm-iam\n    endpoint: {url}\n{profile}  - host: \"*.icr.io\"\n    protocol: ibm-iam\n    endpoint: {url}\n{profile}",
        url = fake.url()
    )
}

fn by_id() -> String {
    format!("    profileId: {PROFILE_ID}\n")
}

/// IAM's answer as it sends it: the token, its type, its life relative and absolute.
fn iam_answer(token: &str, expires_in: i64) -> FakeResponse {
    FakeResponse::json(
        json!({
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": expires_in,
            "expiration": i64::try_from(unix_now()).unwrap() + expires_in,
            "scope": "ibm openid",
        })
        .to_string(),
    )
}

/// IAM at a loopback port answering every exchange with `answer`.
fn iam(answer: FakeResponse) -> FakeServer {
    scripted(vec![(PATH, vec![answer])])
}

/// One v1 request for `image` with `token`.
fn pull(yaml: &str, image: &str, token: &str) -> Outcome {
    let (p, _dir) = plugin(yaml);
    p.request_with_token(ApiVersion::V1, image, Some(token), &BTreeMap::new())
}

/// The one error line of a pull of [`IMAGE`] with a fresh token, which must exit 1, without its
/// timestamp and level.
fn refused(yaml: &str) -> String {
    let out = pull(yaml, IMAGE, &sa_token());
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(1), "{line}");
    message(&line)
}

/// A stderr line's message, after its timestamp and ` ERROR `.
fn message(line: &str) -> String {
    match line.split_once(" ERROR ") {
        Some((_, message)) => message.to_owned(),
        None => panic!("not an error line: {line}"),
    }
}

/// The start of every exchange error line for [`IMAGE`].
fn failed() -> String {
    format!(
        "exchanging the service-account token for the image {IMAGE} (registries[0] (host \"icr.io\", protocol ibm-iam)) failed: "
    )
}

fn only_request(fake: &FakeServer) -> RecordedRequest {
    let mut requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.remove(0)
}

/// Asserts `r` is IAM's form POST carrying exactly `fields`, the token nowhere but the body.
fn assert_form(r: &RecordedRequest, token: &str, fields: &[(&str, &str)]) {
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", PATH));
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(r.header("authorization"), None);
    let want: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(form(r), want);
    assert!(!r.target.contains(token));
    for (name, value) in &r.headers {
        assert!(!value.contains(token), "the token in header {name}");
    }
}

#[test]
fn posts_the_exact_cr_token_form_and_answers_iambearer_for_expires_in() {
    let fake = iam(iam_answer(ACCESS_TOKEN, 1800));
    let (p, _dir) = plugin(&config(&fake, &by_id()));
    let token = sa_token();
    // At the most verbose level: the run's stderr is scanned for both tokens.
    let out = p.args(["--v=10"]).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&token),
        &BTreeMap::new(),
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        1500,
        "icr.io",
        "iambearer",
        ACCESS_TOKEN,
    );
    assert_form(
        &only_request(&fake),
        &token,
        &[
            ("grant_type", GRANT),
            ("cr_token", &token),
            ("profile_id", PROFILE_ID),
        ],
    );
}

#[test]
fn a_profile_name_is_sent_as_profile_name_and_regional_hosts_answer_under_their_own_key() {
    let fake = iam(iam_answer(ACCESS_TOKEN, 3600));
    let token = sa_token();
    let out = pull(
        &config(&fake, "    profileName: k8s-puller\n"),
        "us.icr.io/acme/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        &token,
    );
    out.accepted();
    // IAM's hour, bounded by the pod token's own hour: cached until 5 minutes before either.
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(exp_of(&token)) - 300,
        "us.icr.io",
        "iambearer",
        ACCESS_TOKEN,
    );
    assert_form(
        &only_request(&fake),
        &token,
        &[
            ("grant_type", GRANT),
            ("cr_token", &token),
            ("profile_name", "k8s-puller"),
        ],
    );
}

#[test]
fn an_endpoint_with_a_path_keeps_it() {
    let fake = scripted(vec![(
        "/iam/identity/token",
        vec![iam_answer(ACCESS_TOKEN, 1200)],
    )]);
    let yaml = format!(
        "registries:\n  - host: icr.io\n    protocol: ibm-iam\n    endpoint: {}/iam/\n    profileId: {PROFILE_ID}\n",
        fake.url()
    );
    let out = pull(&yaml, IMAGE, &sa_token());
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        900,
        "icr.io",
        "iambearer",
        ACCESS_TOKEN,
    );
    assert_eq!(only_request(&fake).target, "/iam/identity/token");
}

#[test]
fn a_bxnim_refusal_is_quoted_on_one_line_without_the_token_and_not_retried() {
    let token = sa_token();
    // IAM does not echo the token; if a server ever did, the line still must not carry it.
    let body = json!({
        "errorCode": "BXNIM0415E",
        "errorMessage": format!("Provided cr_token {token} is expired or invalid.\nsecond line"),
        "context": {"requestId": "5a4b3c2d1e", "requestType": "incoming.Identity_Token"},
    })
    .to_string();
    let fake = iam(FakeResponse::new(400, body));
    let out = pull(&config(&fake, &by_id()), IMAGE, &token);
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(1), "{line}");
    assert!(!line.contains(&token), "{line}");
    let line = message(&line);
    assert_eq!(
        line,
        format!(
            "{}127.0.0.1 answered HTTP 400: error \"BXNIM0415E\" (\"Provided cr_token <redacted> is expired or invalid. second line\"), request id \"5a4b3c2d1e\"{HINT}",
            failed()
        )
    );
    assert_eq!(fake.requests().len(), 1, "a refusal is not retried");
}

#[test]
fn unauthorized_and_forbidden_are_quoted_with_what_to_check() {
    for (status, code, message) in [
        (401, "BXNIM0109E", "Property missing or empty."),
        (
            403,
            "BXNIM0513E",
            "Compute resource not authorized for the trusted profile.",
        ),
    ] {
        let fake = iam(FakeResponse::new(
            status,
            json!({"errorCode": code, "errorMessage": message, "context": {"requestId": "r-1"}})
                .to_string(),
        ));
        assert_eq!(
            refused(&config(&fake, &by_id())),
            format!(
                "{}127.0.0.1 answered HTTP {status}: error \"{code}\" (\"{message}\"), request id \"r-1\"{HINT}",
                failed()
            )
        );
        assert_eq!(fake.requests().len(), 1, "{status}: not retried");
    }
}

#[test]
fn server_errors_are_retried_with_the_same_form_then_fail() {
    let fake = scripted(vec![(
        PATH,
        vec![
            FakeResponse::new(503, "unavailable"),
            FakeResponse::new(
                429,
                r#"{"errorCode":"BXNIM0429E","errorMessage":"slow down"}"#,
            )
            .header("retry-after", "1"),
            iam_answer(ACCESS_TOKEN, 1800),
        ],
    )]);
    let token = sa_token();
    let out = pull(&config(&fake, &by_id()), IMAGE, &token);
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        1500,
        "icr.io",
        "iambearer",
        ACCESS_TOKEN,
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_form(
            r,
            &token,
            &[
                ("grant_type", GRANT),
                ("cr_token", &token),
                ("profile_id", PROFILE_ID),
            ],
        );
    }

    // IAM down for good: every attempt spent, then one line.
    let fake = iam(FakeResponse::new(
        500,
        r#"{"errorCode":"BXNIM0500E","errorMessage":"Internal error."}"#,
    ));
    let line = refused(&config(&fake, &by_id()));
    assert_eq!(
        line,
        format!(
            "{}127.0.0.1 answered HTTP 500: error \"BXNIM0500E\" (\"Internal error.\")",
            failed()
        )
    );
    assert_eq!(fake.requests().len(), 4, "four attempts");
}

#[test]
fn malformed_answers_name_the_field_never_a_value() {
    let token = sa_token();
    for (body, says) in [
        (
            json!({"token_type": "Bearer", "expires_in": 3600}).to_string(),
            r#"the answer has no "access_token" (fields: "expires_in", "token_type")"#.to_owned(),
        ),
        (
            json!({"access_token": "", "expires_in": 3600}).to_string(),
            r#"the answer's "access_token" is empty"#.to_owned(),
        ),
        (
            json!({"access_token": 42}).to_string(),
            r#"the answer's "access_token" is not a string"#.to_owned(),
        ),
        (
            json!({"access_token": ACCESS_TOKEN, "expires_in": "an hour"}).to_string(),
            r#"the answer's "expires_in" is not a number of seconds"#.to_owned(),
        ),
        (
            "<html>IAM</html>".to_owned(),
            "the answer is not JSON".to_owned(),
        ),
        (
            "[]".to_owned(),
            "the answer is not a JSON object".to_owned(),
        ),
        (
            json!({"access_token": token, "expires_in": 3600}).to_string(),
            "the endpoint answered with the service-account token itself; refusing to use it as a registry password".to_owned(),
        ),
    ] {
        let fake = iam(FakeResponse::json(body.clone()));
        let out = pull(&config(&fake, &by_id()), IMAGE, &token);
        let line = message(&out.rejected());
        assert_eq!(out.exec.exit_code, Some(1), "{body}: {line}");
        assert!(
            line.starts_with(&format!("{}{says}", failed())),
            "{body}: {line}"
        );
        assert!(!line.contains(ACCESS_TOKEN) && !line.contains(&token), "{line}");
    }
}

#[test]
fn a_huge_expires_in_is_capped_by_the_service_account_token() {
    let now = unix_now();
    let short =
        jwt(&json!({"aud": [AUDIENCE], "exp": now + 1200, "sub": "system:serviceaccount:a:b"}));
    let fake = iam(iam_answer(ACCESS_TOKEN, 99_999_999));
    let out = pull(&config(&fake, &by_id()), IMAGE, &short);
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(now + 1200) - 300,
        "icr.io",
        "iambearer",
        ACCESS_TOKEN,
    );
}

#[test]
fn look_alike_hosts_and_v1beta1_requests_send_nothing() {
    let fake = iam(iam_answer(ACCESS_TOKEN, 1800));
    let (p, _dir) = plugin(&config(&fake, &by_id()));
    let token = sa_token();
    for image in [
        "icr.io.evil.test/acme/app",
        "evilicr.io/acme/app",
        "a.b.icr.io/acme/app",
        "evil.test/icr.io/app",
    ] {
        let line = p
            .request_with_token(ApiVersion::V1, image, Some(&token), &BTreeMap::new())
            .rejected();
        assert!(
            line.contains(&format!(
                "matches the image {image} (hosts: icr.io, *.icr.io)"
            )) && line.ends_with("nothing was sent"),
            "{image}: {line}"
        );
    }
    let line = p
        .request_with_token(ApiVersion::V1beta1, IMAGE, Some(&token), &BTreeMap::new())
        .rejected();
    assert!(
        line.contains("is credentialprovider.kubelet.k8s.io/v1beta1, which carries no service-account token (registries[0] (host \"icr.io\", protocol ibm-iam))")
            && line.ends_with("nothing was sent"),
        "{line}"
    );
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
}

#[test]
fn an_entry_with_both_or_neither_profile_is_refused_at_load() {
    for (fields, says) in [
        (
            format!("    profileId: {PROFILE_ID}\n    profileName: k8s-puller\n"),
            r#"set either "profileId" or "profileName" (the trusted profile), not both"#,
        ),
        (
            String::new(),
            r#"missing field "profileId" or "profileName": ibm-iam needs the IAM trusted profile the pods' tokens are traded for (its id, Profile-..., or its name)"#,
        ),
        (
            "    profileName: \"\"\n".to_owned(),
            r#"field "profileName" is empty"#,
        ),
    ] {
        let fake = iam(iam_answer(ACCESS_TOKEN, 1800));
        let yaml = format!(
            "registries:\n  - host: icr.io\n    protocol: ibm-iam\n    endpoint: {}\n{fields}",
            fake.url()
        );
        let (p, dir) = plugin(&yaml);
        let out = p.request_with_token(ApiVersion::V1, IMAGE, Some(&sa_token()), &BTreeMap::new());
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(2), "{line}");
        assert_eq!(
            message(&line),
            format!(
                "registries file {}: registries[0] (host \"icr.io\"): {says} (--config)",
                dir.path().join("registries.yaml").display()
            )
        );
        assert!(fake.requests().is_empty());
    }
}
