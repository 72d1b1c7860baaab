//! The vendor protocols against loopback fakes that answer as each vendor documents: `jfrog`
//! (JFrog Platform OIDC token), `quay-robot` (Quay robot federation), `cloudsmith` (Cloudsmith
//! OpenID exchange) and `chainguard` (Chainguard STS). Each fake records the exact request
//! (method, path, query, headers, body); the shared cases (no token, a refusal quoted, a huge
//! `expires_in`, look-alike hosts, v1beta1, a throttled endpoint) run over all four.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use base64::Engine;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Plugin, unix_now};
use serde_json::{Value, json};
use support::*;

const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ISSUED: &str = "vendor-issued-credential-0123456789";
const CHAINGUARD_ID: &str = "720909c9f5279097/a033a6fabe0bfa0d";

/// One vendor protocol as the shared cases use it.
struct Vendor {
    protocol: &'static str,
    /// The entry's host, the answer's `auth` key.
    host: &'static str,
    image: &'static str,
    /// Images that must not match the entry.
    look_alikes: &'static [&'static str],
    /// The exchange's path at the fake.
    path: &'static str,
    /// The answer's credential field.
    field: &'static str,
    /// The registry user name the answer gets.
    user: &'static str,
    /// The entry's protocol fields, each line indented by four.
    fields: &'static str,
    /// A refusal as the vendor writes it, and what the error line must say of it.
    refusal: (u16, &'static str, &'static str),
}

const JFROG: Vendor = Vendor {
    protocol: "jfrog",
    host: "acme.jfrog.test",
    image: "acme.jfrog.test/docker-local/app:1.0",
    look_alikes: &[
        "acme.jfrog.test.evil.test/docker-local/app",
        "evilacme.jfrog.test/app",
        "acme.jfrog.test:8443/app",
    ],
    path: "/access/api/v1/oidc/token",
    field: "access_token",
    user: "k8s-puller",
    fields: "    providerName: k8s-prod\n    username: k8s-puller\n",
    refusal: (
        401,
        r#"{"errors":[{"code":"UNAUTHORIZED","message":"Token failed verification: issuer not trusted"}]}"#,
        r#"127.0.0.1 answered HTTP 401: {"errors":[{"code":"UNAUTHORIZED","message":"Token failed verification: issuer not trusted"}]}; check that the JFrog OIDC integration named by providerName trusts"#,
    ),
};

const QUAY: Vendor = Vendor {
    protocol: "quay-robot",
    host: "quay.io",
    image: "quay.io/acme/app:1.0",
    look_alikes: &[
        "quay.io.evil.test/acme/app",
        "evilquay.io/acme/app",
        "evil.test/quay.io/app",
    ],
    path: "/oauth2/federation/robot/token",
    field: "token",
    user: "acme+puller",
    fields: "    robotAccount: acme+puller\n",
    refusal: (
        401,
        r#"{"error":"Could not verify the token against the robot's federation"}"#,
        r#"127.0.0.1 answered HTTP 401: error "Could not verify the token against the robot's federation"; check the robot account's federation in Quay"#,
    ),
};

const CLOUDSMITH: Vendor = Vendor {
    protocol: "cloudsmith",
    host: "docker.cloudsmith.io",
    image: "docker.cloudsmith.io/acme/prod/app:1.0",
    look_alikes: &[
        "docker.cloudsmith.io.evil.test/acme/prod/app",
        "cloudsmith.io/acme/prod/app",
    ],
    path: "/openid/acme/",
    field: "token",
    user: "k8s-puller-a1b2",
    fields: "    organization: acme\n    serviceSlug: k8s-puller-a1b2\n",
    refusal: (
        401,
        r#"{"detail":"OIDC token cannot be authenticated."}"#,
        r#"127.0.0.1 answered HTTP 401: {"detail":"OIDC token cannot be authenticated."}; check the organization's OpenID Connect provider in Cloudsmith"#,
    ),
};

const CHAINGUARD: Vendor = Vendor {
    protocol: "chainguard",
    host: "cgr.dev",
    image: "cgr.dev/acme.com/python:3.12",
    look_alikes: &[
        "cgr.dev.evil.test/acme.com/python",
        "xcgr.dev/acme.com/python",
    ],
    path: "/sts/exchange",
    field: "token",
    user: "_token",
    fields: "    identity: 720909c9f5279097/a033a6fabe0bfa0d\n",
    refusal: (
        403,
        r#"{"code":7,"message":"no identity matches the token's issuer and subject","details":[]}"#,
        r#"127.0.0.1 answered HTTP 403: {"code":7,"message":"no identity matches the token's issuer and subject","details":[]}; check that the assumable identity's issuer and subject"#,
    ),
};

const ALL: [&Vendor; 4] = [&JFROG, &QUAY, &CLOUDSMITH, &CHAINGUARD];

impl Vendor {
    /// A registries file with this vendor's entry exchanging at `fake`, plus `extra` lines.
    fn config(&self, fake: &FakeServer, extra: &str) -> String {
        format!(
            "registries:\n  - host: {}\n    protocol: {}\n    endpoint: {}\n{}{extra}",
            self.host,
            self.protocol,
            fake.url(),
            self.fields
        )
    }

    /// A fake answering every exchange with `answer`.
    fn fake(&self, answer: FakeResponse) -> FakeServer {
        scripted(vec![(self.path, vec![answer])])
    }

    /// The answer carrying `token` and, when given, `expires_in`.
    fn answer(&self, token: &str, expires_in: Option<u64>) -> FakeResponse {
        let mut body = json!({ self.field: token });
        if let Some(seconds) = expires_in {
            body["expires_in"] = json!(seconds);
        }
        FakeResponse::json(body.to_string())
    }

    /// The answer to a v1 request for this vendor's image with `token`, which must be accepted.
    fn pull(&self, p: &Plugin, token: &str, annotations: &BTreeMap<String, String>) -> String {
        let out = p.request_with_token(ApiVersion::V1, self.image, Some(token), annotations);
        out.accepted();
        out.stdout()
    }

    /// Asserts `stdout` is this vendor's credential, cached `want` seconds (see [`assert_answer`]).
    fn assert_answer(&self, stdout: &str, want: i64, user: &str, password: &str) {
        assert_answer(stdout, ApiVersion::V1, want, self.host, user, password);
    }

    /// The error line of a request with a fresh pod token.
    fn rejected(&self, yaml: &str) -> String {
        let (p, _dir) = plugin(yaml);
        p.request_with_token(
            ApiVersion::V1,
            self.image,
            Some(&sa_token()),
            &BTreeMap::new(),
        )
        .rejected()
    }
}

/// The one request `fake` received.
fn only_request(fake: &FakeServer) -> RecordedRequest {
    let mut requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.remove(0)
}

/// Asserts `r` is a JSON `POST` to `target` carrying exactly `body`, without an
/// `Authorization` header (the token travels in the body).
fn assert_json_post(r: &RecordedRequest, target: &str, body: &Value) {
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", target));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(&serde_json::from_slice::<Value>(&r.body).unwrap(), body);
}

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn jfrog_posts_the_documented_json_and_takes_the_answered_user() {
    let fake = scripted(vec![(
        "/jfrog/access/api/v1/oidc/token",
        vec![FakeResponse::json(format!(
            r#"{{"access_token":"{ISSUED}","expires_in":1800,"token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","username":"k8s-prod-mapped"}}"#
        ))],
    )]);
    // An endpoint with a path (a platform behind a prefix) keeps it.
    let yaml = format!(
        "registries:\n  - host: acme.jfrog.test\n    protocol: jfrog\n    endpoint: {}/jfrog/\n    providerName: k8s-prod\n    providerType: Generic OpenID Connect\n    audience: jfrog-k8s\n    projectKey: team-a\n    identityMappingName: pullers\n    username: fallback-user\n",
        fake.url()
    );
    let (p, _dir) = plugin(&yaml);
    let token = sa_token();
    // At the most verbose level: the run's stderr is scanned for both tokens.
    let stdout = JFROG.pull(&p.args(["--v=10"]), &token, &BTreeMap::new());
    JFROG.assert_answer(&stdout, 1500, "k8s-prod-mapped", ISSUED);
    assert_json_post(
        &only_request(&fake),
        "/jfrog/access/api/v1/oidc/token",
        &json!({
            "grant_type": GRANT,
            "subject_token_type": ID_TOKEN_TYPE,
            "subject_token": token,
            "provider_name": "k8s-prod",
            "provider_type": "Generic OpenID Connect",
            "audience": "jfrog-k8s",
            "project_key": "team-a",
            "identity_mapping_name": "pullers",
        }),
    );
}

#[test]
fn jfrog_sends_only_the_required_fields_and_falls_back_to_the_configured_user() {
    let fake = JFROG.fake(JFROG.answer(ISSUED, Some(600)));
    let (p, _dir) = plugin(&JFROG.config(&fake, ""));
    let token = sa_token();
    let stdout = JFROG.pull(&p, &token, &BTreeMap::new());
    JFROG.assert_answer(&stdout, 300, "k8s-puller", ISSUED);
    assert_json_post(
        &only_request(&fake),
        "/access/api/v1/oidc/token",
        &json!({
            "grant_type": GRANT,
            "subject_token_type": ID_TOKEN_TYPE,
            "subject_token": token,
            "provider_name": "k8s-prod",
        }),
    );
    // An empty `username` in the answer counts as none.
    let fake = JFROG.fake(FakeResponse::json(format!(
        r#"{{"access_token":"{ISSUED}","expires_in":600,"username":""}}"#
    )));
    let (p, _dir) = plugin(&JFROG.config(&fake, ""));
    let stdout = JFROG.pull(&p, &token, &BTreeMap::new());
    assert!(stdout.contains(r#""username":"k8s-puller""#));
}

#[test]
fn jfrog_without_an_answered_or_configured_user_says_to_set_username() {
    let fake = JFROG.fake(JFROG.answer(ISSUED, Some(600)));
    let yaml = format!(
        "registries:\n  - host: acme.jfrog.test\n    protocol: jfrog\n    endpoint: {}\n    providerName: k8s-prod\n",
        fake.url()
    );
    let line = JFROG.rejected(&yaml);
    assert!(
        line.contains("did not say for which user")
            && line.contains("set \"username\" in the entry"),
        "{line}"
    );
    assert!(!line.contains(ISSUED));
}

#[test]
fn quay_gets_a_robot_token_with_basic_auth_for_the_tokens_own_life() {
    let now = unix_now();
    let robot_token = jwt(&json!({"sub": "acme+puller", "exp": now + 2400}));
    let fake = QUAY.fake(QUAY.answer(&robot_token, None));
    let (p, _dir) = plugin(&QUAY.config(&fake, ""));
    let token = sa_token();
    let stdout = QUAY.pull(&p.args(["--v=10"]), &token, &BTreeMap::new());
    QUAY.assert_answer(&stdout, left(now + 2400) - 300, "acme+puller", &robot_token);
    let r = &only_request(&fake);
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("GET", "/oauth2/federation/robot/token")
    );
    assert_eq!(
        r.header("authorization"),
        Some(basic("acme+puller", &token).as_str())
    );
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(r.header("content-type"), None);
    assert!(r.body.is_empty());
}

#[test]
fn quay_reads_the_robot_from_the_service_account_annotation() {
    let token = sa_token();
    for (entry, passed, robot) in [
        // Neither robotAccount nor robotAccountAnnotation: the default annotation.
        (
            "",
            [
                ("quay.io/federated-robot-account", "acme+team_a"),
                ("other.test/key", "x"),
            ],
            "acme+team_a",
        ),
        (
            "    robotAccountAnnotation: acme.test/quay-robot\n",
            [
                ("acme.test/quay-robot", "acme+team_b"),
                ("quay.io/federated-robot-account", "acme+ignored"),
            ],
            "acme+team_b",
        ),
    ] {
        let fake = QUAY.fake(QUAY.answer(ISSUED, Some(600)));
        let yaml = format!(
            "registries:\n  - host: quay.io\n    protocol: quay-robot\n    endpoint: {}\n{entry}",
            fake.url()
        );
        let (p, _dir) = plugin(&yaml);
        let stdout = QUAY.pull(&p, &token, &annotations(&passed));
        QUAY.assert_answer(&stdout, 300, robot, ISSUED);
        assert_eq!(
            only_request(&fake).header("authorization"),
            Some(basic(robot, &token).as_str())
        );
    }
}

#[test]
fn quay_without_the_annotation_or_with_a_bad_robot_sends_nothing() {
    let fake = QUAY.fake(QUAY.answer(ISSUED, Some(600)));
    let yaml = format!(
        "registries:\n  - host: quay.io\n    protocol: quay-robot\n    endpoint: {}\n    robotAccountAnnotation: acme.test/quay-robot\n",
        fake.url()
    );
    let (p, _dir) = plugin(&yaml);
    let token = sa_token();
    let line = p
        .request_with_token(ApiVersion::V1, QUAY.image, Some(&token), &BTreeMap::new())
        .rejected();
    assert!(
        line.contains(
            r#"the pod's service account has no annotation "acme.test/quay-robot", which names the Quay robot account (<org>+<robot>) for this entry"#
        ) && line.contains(
            r#"list "acme.test/quay-robot" in tokenAttributes.requiredServiceAccountAnnotationKeys"#
        ) && line.ends_with("nothing was sent"),
        "{line}"
    );
    for bad in ["acme", "acme+pull:er", "+puller", "acme+ puller", ""] {
        let line = p
            .request_with_token(
                ApiVersion::V1,
                QUAY.image,
                Some(&token),
                &annotations(&[("acme.test/quay-robot", bad)]),
            )
            .rejected();
        assert!(
            line.contains(&format!(
                "the Quay robot account {:?} from the service-account annotation \"acme.test/quay-robot\" is not <org>+<robot>",
                bad.trim()
            )),
            "{bad:?}: {line}"
        );
    }
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
}

#[test]
fn cloudsmith_posts_the_token_and_slug_for_the_organization() {
    let fake = CLOUDSMITH.fake(CLOUDSMITH.answer(ISSUED, None));
    let (p, _dir) = plugin(&CLOUDSMITH.config(&fake, ""));
    let token = sa_token();
    let stdout = CLOUDSMITH.pull(&p.args(["--v=10"]), &token, &BTreeMap::new());
    // An opaque token without a stated life: the short default.
    assert_eq!(
        stdout,
        expected(
            ApiVersion::V1,
            "5m0s",
            "docker.cloudsmith.io",
            "k8s-puller-a1b2",
            ISSUED
        )
    );
    assert_json_post(
        &only_request(&fake),
        "/openid/acme/",
        &json!({"oidc_token": token, "service_slug": "k8s-puller-a1b2"}),
    );
}

#[test]
fn cloudsmith_takes_a_configured_user_and_a_jwt_life() {
    let now = unix_now();
    let api_token = jwt(&json!({"exp": now + 1800}));
    let fake = CLOUDSMITH.fake(CLOUDSMITH.answer(&api_token, None));
    let (p, _dir) = plugin(&CLOUDSMITH.config(&fake, "    username: token\n"));
    let stdout = CLOUDSMITH.pull(&p, &sa_token(), &BTreeMap::new());
    CLOUDSMITH.assert_answer(&stdout, left(now + 1800) - 300, "token", &api_token);
}

#[test]
fn cloudsmith_error_in_a_success_answer_is_quoted() {
    let fake = CLOUDSMITH.fake(FakeResponse::new(
        201,
        r#"{"error":"service account is disabled"}"#,
    ));
    let line = CLOUDSMITH.rejected(&CLOUDSMITH.config(&fake, ""));
    assert!(
        line.contains(
            r#"the answer has no "token" but error "service account is disabled"; check the organization's OpenID Connect provider"#
        ),
        "{line}"
    );
}

#[test]
fn chainguard_posts_to_the_sts_with_a_bearer_token_and_the_query() {
    let now = unix_now();
    let registry_token = jwt(&json!({"aud": "cgr.dev", "exp": now + 3000}));
    let fake = CHAINGUARD.fake(FakeResponse::json(format!(
        r#"{{"token":"{registry_token}"}}"#
    )));
    let (p, _dir) = plugin(&CHAINGUARD.config(&fake, ""));
    let token = sa_token();
    let stdout = CHAINGUARD.pull(&p.args(["--v=10"]), &token, &BTreeMap::new());
    // The token's own exp, bounded by the service-account token's hour.
    CHAINGUARD.assert_answer(&stdout, left(now + 3000) - 300, "_token", &registry_token);
    let r = &only_request(&fake);
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        (
            "POST",
            "/sts/exchange?aud=cgr.dev&identity=720909c9f5279097%2Fa033a6fabe0bfa0d"
        )
    );
    let bearer = format!("Bearer {token}");
    assert_eq!(r.header("authorization"), Some(bearer.as_str()));
    assert_eq!(r.header("accept"), Some("application/json"));
    // Some front ends refuse a POST without a length.
    assert_eq!(r.header("content-length"), Some("0"));
    assert_eq!(
        r.headers
            .iter()
            .filter(|(k, _)| k == "content-length")
            .count(),
        1
    );
    assert!(r.body.is_empty());
}

#[test]
fn chainguard_takes_a_configured_audience_and_user() {
    let fake = CHAINGUARD.fake(CHAINGUARD.answer(ISSUED, Some(900)));
    let (p, _dir) = plugin(&CHAINGUARD.config(
        &fake,
        "    audience: https://console-api.enforce.dev\n    username: puller\n",
    ));
    let stdout = CHAINGUARD.pull(&p, &sa_token(), &BTreeMap::new());
    CHAINGUARD.assert_answer(&stdout, 600, "puller", ISSUED);
    assert_eq!(
        fake.requests()[0].target,
        format!(
            "/sts/exchange?aud=https%3A%2F%2Fconsole-api.enforce.dev&identity={}",
            CHAINGUARD_ID.replace('/', "%2F")
        )
    );
}

#[test]
fn an_answer_without_a_token_names_the_field_for_every_vendor() {
    for v in ALL {
        for (body, says) in [
            (
                r#"{"token_type":"Bearer","expires_in":60}"#.to_owned(),
                format!(
                    r#"the answer has no "{}" (fields: "expires_in", "token_type")"#,
                    v.field
                ),
            ),
            (
                format!(r#"{{"{}":""}}"#, v.field),
                format!(r#"the answer's "{}" is empty"#, v.field),
            ),
            ("<html>".to_owned(), "the answer is not JSON".to_owned()),
        ] {
            let fake = v.fake(FakeResponse::json(body.clone()));
            let line = v.rejected(&v.config(&fake, ""));
            assert!(
                line.contains(&format!(
                    "(registries[0] (host \"{}\", protocol {})) failed: {says}",
                    v.host, v.protocol
                )),
                "{}: {body}: {line}",
                v.protocol
            );
        }
    }
}

#[test]
fn a_refusal_is_quoted_with_what_to_check_and_not_retried() {
    for v in ALL {
        let (status, body, says) = v.refusal;
        let fake = v.fake(FakeResponse::new(status, body));
        let line = v.rejected(&v.config(&fake, ""));
        assert!(
            line.contains(&format!(
                "exchanging the service-account token for the image {} (registries[0] (host \"{}\", protocol {})) failed: {says}",
                v.image, v.host, v.protocol
            )),
            "{}: {line}",
            v.protocol
        );
        assert_eq!(fake.requests().len(), 1, "{}: not retried", v.protocol);
    }
}

#[test]
fn a_huge_expires_in_is_capped_by_the_service_account_token() {
    let now = unix_now();
    // 20 minutes left on the pod's token: cached 15 minutes, whatever the vendor says.
    let short =
        jwt(&json!({"aud": [AUDIENCE], "exp": now + 1200, "sub": "system:serviceaccount:a:b"}));
    for v in ALL {
        let fake = v.fake(FakeResponse::json(format!(
            r#"{{"{}":"{ISSUED}","expires_in":99999999999999}}"#,
            v.field
        )));
        let (p, _dir) = plugin(&v.config(&fake, ""));
        let stdout = v.pull(&p, &short, &BTreeMap::new());
        v.assert_answer(&stdout, left(now + 1200) - 300, v.user, ISSUED);
    }
}

#[test]
fn look_alike_hosts_and_v1beta1_requests_send_nothing() {
    for v in ALL {
        let fake = v.fake(v.answer(ISSUED, Some(600)));
        let (p, _dir) = plugin(&v.config(&fake, ""));
        let token = sa_token();
        for image in v.look_alikes {
            let line = p
                .request_with_token(ApiVersion::V1, image, Some(&token), &BTreeMap::new())
                .rejected();
            assert!(
                line.contains(&format!("matches the image {image} (hosts: {})", v.host))
                    && line.ends_with("nothing was sent"),
                "{image}: {line}"
            );
        }
        let line = p
            .request_with_token(ApiVersion::V1beta1, v.image, Some(&token), &BTreeMap::new())
            .rejected();
        assert!(
            line.contains("is credentialprovider.kubelet.k8s.io/v1beta1, which carries no service-account token")
                && line.ends_with("nothing was sent"),
            "{}: {line}",
            v.protocol
        );
        assert!(
            fake.requests().is_empty(),
            "{}: {:?}",
            v.protocol,
            fake.requests()
        );
        // The real host is answered.
        let stdout = v.pull(&p, &token, &BTreeMap::new());
        v.assert_answer(&stdout, 300, v.user, ISSUED);
        assert_eq!(fake.requests().len(), 1);
    }
}

#[test]
fn a_throttled_or_failing_vendor_is_retried_with_the_same_request() {
    for v in ALL {
        let fake = scripted(vec![(
            v.path,
            vec![
                FakeResponse::new(429, "slow down").header("retry-after", "1"),
                FakeResponse::new(503, "unavailable"),
                v.answer(ISSUED, Some(600)),
            ],
        )]);
        let (p, _dir) = plugin(&v.config(&fake, ""));
        v.pull(&p, &sa_token(), &BTreeMap::new());
        let requests = fake.requests();
        assert_eq!(requests.len(), 3, "{}", v.protocol);
        for r in &requests[1..] {
            assert_eq!(
                (&r.method, &r.target, &r.body, r.header("authorization")),
                (
                    &requests[0].method,
                    &requests[0].target,
                    &requests[0].body,
                    requests[0].header("authorization")
                ),
                "{}: the retry sends the same request",
                v.protocol
            );
        }
    }
}
