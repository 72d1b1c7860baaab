//! Every failure: exit 1, nothing on stdout, exactly one stderr line that names the call and
//! what to check, and no secret anywhere (the test kit scans stderr for every key secret,
//! security token, password and service-account token the fakes handed out). Refused hosts
//! reach no fake at all.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::Outcome;
use kcp_testkit::fake::FakeResponse;
use support::*;

/// Asserts a clean failure with exit code `code` whose line contains every one of `says`.
fn fails(out: &Outcome, code: i32, says: &[&str]) -> String {
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(code), "{line}");
    for s in says {
        assert!(line.contains(s), "{line:?} lacks {s:?}");
    }
    line
}

/// [`rrsa_plugin`]'s request from a pod whose service account names [`POD_ROLE`].
fn rrsa(fakes: &Fakes) -> Outcome {
    pod_request(
        &rrsa_plugin(fakes),
        ENTERPRISE_HOST,
        &sa_token(),
        Some(POD_ROLE),
    )
}

/// How a refused host is named.
const NOT_A_REGISTRY: &str = "is not an Alibaba Cloud Container Registry host";

#[test]
fn look_alike_hosts_are_refused_before_any_request() {
    let fakes = Fakes::new();
    let p = rrsa_plugin(&fakes).env("ALIBABA_CR_INSTANCES", "images.example.com=cri-abc");
    for host in [
        "registry.cn-hangzhou.aliyuncs.com.evil.test",
        "x-registry.cn-hangzhou.cr.aliyuncs.com.attacker",
        "registry.cn-hangzhou.aliyuncs.com:443",
        "myinst-registry.cn-hangzhou.cr.aliyuncs.com:5000",
        "crpi-k3x9q2.cn-hangzhou.personal.cr.aliyuncs.com.evil.test",
        "127.0.0.1:5000",
        "100.100.100.200",
        "evilregistry.cn-hangzhou.aliyuncs.com",
        "registry.cn-hangzhou.evil.com",
        "images.example.com:5000",
        "images.example.com.evil.test",
        "quay.io",
    ] {
        // With a pod token and a role too: no STS exchange for a refused host.
        for out in [
            p.request(ApiVersion::V1, &image(host)),
            pod_request(&p, host, &sa_token(), Some(POD_ROLE)),
        ] {
            fails(&out, 1, &[host, NOT_A_REGISTRY]);
        }
    }
    // A path that names a registry does not make the image's registry one.
    let out = p.request(
        ApiVersion::V1,
        "evil.test/registry.cn-hangzhou.aliyuncs.com/app",
    );
    fails(&out, 1, &[&format!("evil.test {NOT_A_REGISTRY}")]);
    let out = p.request(ApiVersion::V1, "nginx");
    fails(&out, 1, &[&format!("docker.io {NOT_A_REGISTRY}")]);
    assert_eq!(fakes.total_requests(), 0, "no request of any kind");
}

#[test]
fn metadata_server_down() {
    let fakes = Fakes::new();
    let out = request_enterprise(&plugin(&fakes).args([format!(
        "--metadata-endpoint=http://127.0.0.1:{}",
        closed_port()
    )]));
    fails(&out, 1, &["metadata"]);
    assert!(fakes.cr.requests().is_empty());
}

#[test]
fn metadata_answers_that_are_not_credentials() {
    for (route, answer, says) in [
        (
            format!("GET {}", md_role_path(NODE_ROLE)),
            FakeResponse::json("<html>not json</html>"),
            "the ECS metadata server's RAM role credentials failed",
        ),
        (
            format!("GET {}", md_role_path(NODE_ROLE)),
            FakeResponse::json(r#"{"Code":"Success","AccessKeyId":"x"}"#),
            "AccessKeySecret is missing",
        ),
        (
            format!("GET {MD_ROLES_PATH}"),
            FakeResponse::new(404, "Not Found"),
            "no RAM role is attached to this ECS instance",
        ),
    ] {
        let fakes = Fakes::new().metadata_on(&route, vec![answer]);
        let line = fails(&enterprise(&fakes), 1, &[says]);
        assert!(!line.contains("<html>"), "{line}");
        assert!(fakes.cr.requests().is_empty(), "{route}");
    }
}

#[test]
fn a_metadata_server_without_hardened_mode_is_read_without_a_token() {
    let fakes = Fakes::new().metadata_on(
        &format!("PUT {MD_TOKEN_PATH}"),
        vec![FakeResponse::new(403, "forbidden")],
    );
    assert_enterprise_answer(&enterprise(&fakes), ENTERPRISE_HOST);
    let md = fakes.metadata.requests();
    assert_eq!(md[0].method, "PUT");
    assert!(
        md[1..]
            .iter()
            .all(|r| r.method == "GET" && r.header("x-aliyun-ecs-metadata-token").is_none()),
        "{md:#?}"
    );
}

#[test]
fn sts_refuses_the_token() {
    let fakes = Fakes::new().sts_on(vec![api_error(
        400,
        "InvalidParameter.OIDCToken",
        "The parameter OIDCToken is invalid.",
    )]);
    fails(
        &rrsa(&fakes),
        1,
        &["AssumeRoleWithOIDC", "InvalidParameter.OIDCToken"],
    );
    assert_eq!(fakes.sts.requests().len(), 1, "a 4xx is not retried");
    assert!(fakes.cr.requests().is_empty());
    assert!(fakes.metadata.requests().is_empty());
}

#[test]
fn sts_server_errors_are_retried_then_fail() {
    let fakes = Fakes::new().sts_on(vec![api_error(
        503,
        "ServiceUnavailable",
        "The request has failed due to a temporary failure of the server.",
    )]);
    fails(&rrsa(&fakes), 1, &["AssumeRoleWithOIDC"]);
    assert!(fakes.sts.requests().len() >= 2, "retried");
    assert!(fakes.cr.requests().is_empty());
}

#[test]
fn sts_malformed_answers() {
    for body in [
        "<html>not json</html>",
        r#"{"RequestId":"x"}"#,
        r#"{"Credentials":{"AccessKeyId":"STS.x","AccessKeySecret":"s-Qw1","Expiration":"2026-01-01T00:00:00Z"}}"#,
    ] {
        let fakes = Fakes::new().sts_on(vec![FakeResponse::json(body)]);
        let line = fails(&rrsa(&fakes), 1, &["AssumeRoleWithOIDC"]);
        assert!(!line.contains("<html>"), "{line}");
        assert!(fakes.cr.requests().is_empty());
    }
}

#[test]
fn cr_refusals_and_server_errors() {
    // A permission error: not retried, names the call.
    let fakes = Fakes::new().cr_on(
        "GetAuthorizationToken",
        vec![api_error(
            403,
            "Forbidden.RAM",
            "User not authorized to operate on the specified resource.",
        )],
    );
    fails(
        &enterprise(&fakes),
        1,
        &["GetAuthorizationToken", "Forbidden.RAM"],
    );
    let tokens = fakes.cr.calls("GetAuthorizationToken");
    assert_eq!(tokens, 1, "a 4xx is not retried");

    let fakes = Fakes::new().cr_on(
        "ListInstance",
        vec![api_error(403, "Forbidden.RAM", "not authorized")],
    );
    fails(&enterprise(&fakes), 1, &["ListInstance", "Forbidden.RAM"]);

    // 5xx: retried, then failing.
    let fakes = Fakes::new().cr_on(
        "GetAuthorizationToken",
        vec![api_error(
            500,
            "InternalError",
            "The request processing has failed due to some unknown error.",
        )],
    );
    fails(&enterprise(&fakes), 1, &["GetAuthorizationToken"]);
    let tokens = fakes.cr.calls("GetAuthorizationToken");
    assert!(tokens >= 2, "retried: {tokens}");
}

#[test]
fn throttling_is_retried() {
    let fakes = Fakes::new().cr_on(
        "GetAuthorizationToken",
        vec![
            api_error(
                400,
                "Throttling.User",
                "Request was denied due to user flow control.",
            ),
            enterprise_token(ENTERPRISE_PASSWORD, ms_from_now(3600)),
        ],
    );
    assert_enterprise_answer(&enterprise(&fakes), ENTERPRISE_HOST);
    let cr = fakes.cr.requests();
    assert_eq!(cr.len(), 3, "ListInstance, then the token call twice");
    assert_enterprise_token(&cr[1], INSTANCE_ID, NODE_KEY);
    assert_enterprise_token(&cr[2], INSTANCE_ID, NODE_KEY);
    assert_ne!(
        cr[1].header("x-acs-signature-nonce"),
        cr[2].header("x-acs-signature-nonce"),
        "re-signed"
    );
}

#[test]
fn an_unknown_instance_name() {
    let fakes = Fakes::new().cr_on(
        "ListInstance",
        vec![instances(&[("cri-other000000001", "other")])],
    );
    fails(
        &enterprise(&fakes),
        1,
        &[
            "no Container Registry Enterprise instance named myinst in region cn-hangzhou for this identity",
            "--instance HOST=cri-",
        ],
    );
    let actions: Vec<_> = fakes
        .cr
        .requests()
        .iter()
        .map(|r| r.header("x-acs-action").unwrap_or("").to_owned())
        .collect();
    assert!(actions.iter().all(|a| a == "ListInstance"), "{actions:?}");
}

#[test]
fn cr_malformed_answers() {
    let not_json = "<html>not json</html>";
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            ENTERPRISE_HOST,
            "GetAuthorizationToken",
            &[
                not_json,
                r#"{"TempUsername":"u","ExpireTime":1}"#,
                r#"{"TempUsername":"u","AuthorizationToken":"pw-Zx9","ExpireTime":"soon"}"#,
            ],
        ),
        (
            ENTERPRISE_HOST,
            "ListInstance",
            &[not_json, r#"{"Instances":"none"}"#],
        ),
        (
            PERSONAL_HOST,
            "GetAuthorizationToken",
            &[not_json, r#"{"data":{"tempUserName":"u"}}"#],
        ),
    ];
    for (host, action, bodies) in cases {
        for body in bodies {
            let fakes = if host == PERSONAL_HOST {
                Fakes::new().personal()
            } else {
                Fakes::new()
            };
            let fakes = fakes.cr_on(action, vec![FakeResponse::json(*body)]);
            let out = plugin(&fakes).request(ApiVersion::V1, &image(host));
            let line = fails(&out, 1, &[action]);
            assert!(!line.contains("<html>"), "{line}");
        }
    }
}

#[test]
fn rrsa_misconfiguration() {
    let fakes = Fakes::new();
    // No OIDC provider configured.
    let out = pod_request(
        &plugin(&fakes),
        ENTERPRISE_HOST,
        &sa_token(),
        Some(POD_ROLE),
    );
    fails(&out, 1, &["--oidc-provider-arn", ROLE_KEY]);
    // An annotation that is no role.
    let out = pod_request(
        &rrsa_plugin(&fakes),
        ENTERPRISE_HOST,
        &sa_token(),
        Some("arn:aws:iam::123:role/x"),
    );
    fails(
        &out,
        1,
        &[ROLE_KEY, "neither a RAM role name nor a role ARN"],
    );
    assert_eq!(fakes.total_requests(), 0);
}

#[test]
fn configuration_errors_are_usage_errors() {
    let fakes = Fakes::new();
    let cases: Vec<(kcp_testkit::Plugin, &str)> = vec![
        (
            plugin(&fakes).env("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI-only"),
            "ALIBABA_CLOUD_ACCESS_KEY_ID is set but ALIBABA_CLOUD_ACCESS_KEY_SECRET is not",
        ),
        (
            plugin(&fakes).env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "only-secret-Rt5"),
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET is set but ALIBABA_CLOUD_ACCESS_KEY_ID is not",
        ),
        (
            plugin(&fakes).args(["--metadata-endpoint=http://169.254.169.254"]),
            "--metadata-endpoint",
        ),
        (
            plugin(&fakes)
                .env(
                    "ALIBABA_CLOUD_METADATA_ENDPOINT",
                    "http://metadata.example.com",
                )
                .args(["--metadata-endpoint="]),
            "--metadata-endpoint",
        ),
        (
            plugin(&fakes).args(["--sts-endpoint=http://sts.cn-hangzhou.aliyuncs.com"]),
            "--sts-endpoint",
        ),
        (
            plugin(&fakes).args(["--cr-endpoint=http://cr.cn-hangzhou.aliyuncs.com"]),
            "--cr-endpoint",
        ),
        (
            plugin(&fakes).args(["--instance=images.example.com=abc"]),
            "is not an instance ID",
        ),
        (
            plugin(&fakes).args(["--instance=10.0.0.1=cri-abc"]),
            "is not a DNS name",
        ),
        (
            plugin(&fakes).args([
                "--instance=a.example.com=cri-a",
                "--instance=a.example.com=cri-b",
            ]),
            "names a.example.com twice",
        ),
        (
            plugin(&fakes).env("ALIBABA_CR_INSTANCES", "images.example.com"),
            "expected HOST=cri-",
        ),
        (plugin(&fakes).args(["--region=Hangzhou"]), "--region"),
        (
            plugin(&fakes).args(["--oidc-provider-arn=acs:ram::x:oidc-provider/y"]),
            "--oidc-provider-arn",
        ),
        (plugin(&fakes).args(["--account-id=abc"]), "--account-id"),
        (
            plugin(&fakes).args(["--session-duration=5m"]),
            "--session-duration",
        ),
        (
            plugin(&fakes).args(["--session-duration=13h"]),
            "--session-duration",
        ),
        (
            plugin(&fakes).env("ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED", "maybe"),
            "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED",
        ),
        (
            plugin(&fakes).args(["--role-annotation-key="]),
            "--role-annotation-key",
        ),
    ];
    for (p, says) in cases {
        fails(&request_enterprise(&p), 2, &[says]);
    }
    assert_eq!(fakes.total_requests(), 0);
}
