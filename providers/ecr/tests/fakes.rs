//! ecr-credential-provider against scripted fakes: the exact requests sent (SigV4 scope, targets,
//! STS form fields), ECR Public, instance metadata (IMDSv2), cacheDuration arithmetic, host
//! policy, faults with retries and the deadline, and no secret on stderr.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::Plugin;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use support::*;

const SA_TOKEN: &str =
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTpwdWxsZXIifQ.c2lnbmF0dXJl";
const ROLE: &str = "arn:aws:iam::123456789012:role/team-pull";

/// A fake ECR that answers with `answers` in turn (the last one repeats).
fn ecr_sequence(answers: Vec<FakeResponse>) -> FakeServer {
    let calls = AtomicUsize::new(0);
    FakeServer::start(move |_| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        answers[n.min(answers.len() - 1)].clone()
    })
}

fn private(plugin: Plugin, ecr: &FakeServer) -> Plugin {
    plugin.env("AWS_ENDPOINT_URL_ECR", ecr.url())
}

#[test]
fn sends_get_authorization_token_signed_for_the_hosts_region() {
    let ecr = ecr_sequence(vec![ecr_token(
        "AWS:private-password",
        Some(unix_now() + 12 * 3600),
    )]);
    // The environment says us-east-1; the host says us-west-2, and the host wins.
    let out = private(plugin().env("AWS_REGION", "us-east-1"), &ecr)
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"));
    let ok = out.accepted();
    assert_eq!(
        ok.auth[PRIVATE_HOST],
        ("AWS".to_owned(), "private-password".to_owned())
    );
    let requests = ecr.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!((r.method.as_str(), r.path()), ("POST", "/"));
    assert_eq!(r.header("x-amz-target"), Some(ECR_TARGET));
    assert_eq!(r.header("content-type"), Some("application/x-amz-json-1.1"));
    assert_eq!(
        r.body_text(),
        "{}",
        "no registryIds: the token covers every registry of the region"
    );
    assert_eq!(
        sigv4_scope(r),
        Some(("AKIDTESTSTATIC".into(), "us-west-2".into(), "ecr".into()))
    );
}

#[test]
fn cache_duration_is_half_the_remaining_life() {
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", Some(unix_now() + 12 * 3600))]);
    let ok = private(plugin(), &ecr)
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    let d = ok.cache_duration.expect("cacheDuration is never omitted");
    // 6h0m0s, or 5h59m59s when a second ticked between the fake and the plugin.
    assert!(
        d == GoDuration::from_secs(6 * 3600) || d == GoDuration::from_secs(6 * 3600 - 1),
        "{d}"
    );
}

#[test]
fn an_expired_or_undated_token_is_not_cached() {
    for answer in [
        ecr_token("AWS:p", Some(unix_now() - 60)),
        ecr_token("AWS:p", None),
    ] {
        let ecr = ecr_sequence(vec![answer]);
        let ok = private(plugin(), &ecr)
            .request(ApiVersion::V1, PRIVATE_HOST)
            .accepted();
        assert_eq!(ok.cache_duration, Some(GoDuration::ZERO));
    }
}

#[test]
fn a_colon_in_the_password_survives() {
    let ecr = ecr_sequence(vec![ecr_token("AWS:pass:with:colons", None)]);
    let ok = private(plugin(), &ecr)
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "pass:with:colons");
}

#[test]
fn ecr_public_uses_the_public_api_in_us_east_1() {
    let fake = FakeServer::start(|_| public_token("AWS:public-password", unix_now() + 12 * 3600));
    let p = plugin()
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_ENDPOINT_URL_ECR_PUBLIC", fake.url());
    for host in ["public.ecr.aws", "ecr-public.aws.com"] {
        for v in ApiVersion::ALL {
            let ok = p
                .request(v, &format!("{host}/amazonlinux/amazonlinux"))
                .accepted();
            assert_eq!(ok.api_version, v);
            assert_eq!(
                ok.auth[host],
                ("AWS".to_owned(), "public-password".to_owned())
            );
        }
    }
    for r in fake.requests() {
        assert_eq!(r.header("x-amz-target"), Some(PUBLIC_TARGET));
        assert_eq!(
            sigv4_scope(&r),
            Some((
                "AKIDTESTSTATIC".into(),
                "us-east-1".into(),
                "ecr-public".into()
            ))
        );
    }
    assert_eq!(fake.requests().len(), 6);
}

/// IMDSv2: token PUT with a TTL, then region and role credentials with the token.
fn imds_and_ecr() -> FakeServer {
    // Plain text, so the fake's JSON scan does not register it.
    kcp_testkit::secrets::register("imds-session-token");
    FakeServer::start(|r| match (r.method.as_str(), r.path()) {
        ("PUT", "/latest/api/token") => match r.header("x-aws-ec2-metadata-token-ttl-seconds") {
            Some(ttl) => FakeResponse::new(200, "imds-session-token")
                .header("x-aws-ec2-metadata-token-ttl-seconds", ttl),
            None => FakeResponse::new(400, "missing TTL"),
        },
        (_, path)
            if path.starts_with("/latest/")
                && r.header("x-aws-ec2-metadata-token") != Some("imds-session-token") =>
        {
            FakeResponse::new(401, "IMDSv2 token required")
        }
        ("GET", "/latest/meta-data/placement/region") => FakeResponse::new(200, "ap-south-1"),
        ("GET", "/latest/meta-data/iam/security-credentials/") => {
            FakeResponse::new(200, "node-role")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/node-role") => {
            FakeResponse::json(format!(
                r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIAIMDSNODE","SecretAccessKey":"imds-secret","Token":"imds-session","Expiration":"{}","LastUpdated":"{}"}}"#,
                rfc3339(unix_now() + 6 * 3600),
                rfc3339(unix_now())
            ))
        }
        ("POST", "/") => ecr_token("AWS:imds-node-password", Some(unix_now() + 12 * 3600)),
        _ => FakeResponse::new(404, "not found"),
    })
}

#[test]
fn node_credentials_and_region_from_instance_metadata() {
    let fake = imds_and_ecr();
    let p = Plugin::new(BIN)
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake.url())
        .env("AWS_ENDPOINT_URL_ECR", fake.url());
    // A mirror host names no region: the region comes from IMDS.
    let ok = p
        .request(ApiVersion::V1, "mirror.internal.example/app")
        .accepted();
    assert_eq!(ok.auth["mirror.internal.example"].1, "imds-node-password");
    let requests = fake.requests();
    let ecr = requests
        .iter()
        .find(|r| r.method == "POST")
        .expect("an ECR call");
    assert_eq!(
        sigv4_scope(ecr),
        Some(("ASIAIMDSNODE".into(), "ap-south-1".into(), "ecr".into()))
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path() == "/latest/meta-data/placement/region")
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.path().starts_with("/latest/meta-data"))
            .all(|r| r.header("x-aws-ec2-metadata-token").is_some()),
        "every metadata read carries the IMDSv2 token"
    );
}

/// Container credentials (EKS Pod Identity, ECS) from a loopback `AWS_CONTAINER_CREDENTIALS_FULL_URI`
/// go direct whatever the proxy variables say: the node-local credentials never reach a proxy.
/// They used to follow `HTTP_PROXY`.
#[test]
fn loopback_container_credentials_go_direct_whatever_the_proxy() {
    let fake = FakeServer::start(|r| match (r.method.as_str(), r.path()) {
        ("GET", "/creds") if r.header("authorization") == Some("pod-identity-auth") => {
            FakeResponse::json(format!(
                r#"{{"AccessKeyId":"ASIACONTAINER","SecretAccessKey":"container-secret","Token":"container-session","Expiration":"{}"}}"#,
                rfc3339(unix_now() + 6 * 3600)
            ))
        }
        ("POST", "/") => ecr_token("AWS:container-password", Some(unix_now() + 12 * 3600)),
        _ => FakeResponse::new(404, "not found"),
    });
    let proxy = FakeServer::start(|_| FakeResponse::new(502, "the proxy"));
    let ok = Plugin::new(BIN)
        .env(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            format!("http://localhost:{}/creds", fake.addr().port()),
        )
        .env("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-auth")
        .env("AWS_ENDPOINT_URL_ECR", fake.url())
        .env("HTTP_PROXY", proxy.url())
        .env("HTTPS_PROXY", proxy.url())
        .request(
            ApiVersion::V1,
            "123456789012.dkr.ecr.us-west-2.amazonaws.com/app",
        )
        .accepted();
    assert_eq!(
        ok.auth["123456789012.dkr.ecr.us-west-2.amazonaws.com"].1,
        "container-password"
    );
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
    let ecr = fake.requests().into_iter().find(|r| r.method == "POST");
    assert_eq!(
        ecr.as_ref().and_then(sigv4_scope),
        Some(("ASIACONTAINER".into(), "us-west-2".into(), "ecr".into()))
    );
}

#[test]
fn service_account_mode_sends_the_exact_sts_request_and_caps_the_cache() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAASSUMEDROLE", unix_now() + 3600));
    let ecr = ecr_sequence(vec![ecr_token(
        "AWS:role-password",
        Some(unix_now() + 12 * 3600),
    )]);
    let annotations =
        BTreeMap::from([("eks.amazonaws.com/ecr-role-arn".to_owned(), ROLE.to_owned())]);
    let out = private(plugin(), &ecr)
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .request_with_token(
            ApiVersion::V1,
            &format!("{PRIVATE_HOST}/app"),
            Some(SA_TOKEN),
            &annotations,
        );
    let ok = out.accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "role-password");
    // Half of the one hour the assumed role lives, not half of the token's twelve.
    let d = ok.cache_duration.unwrap();
    assert!(
        d <= GoDuration::from_secs(1800) && d >= GoDuration::from_secs(1790),
        "{d}"
    );

    let sts_requests = sts.requests();
    assert_eq!(sts_requests.len(), 1);
    let fields: BTreeMap<_, _> = form(&sts_requests[0]).into_iter().collect();
    assert_eq!(
        fields.get("Action").map(String::as_str),
        Some("AssumeRoleWithWebIdentity")
    );
    assert_eq!(fields.get("RoleArn").map(String::as_str), Some(ROLE));
    assert_eq!(
        fields.get("RoleSessionName").map(String::as_str),
        Some("ecr-credential-provider")
    );
    assert_eq!(
        fields.get("WebIdentityToken").map(String::as_str),
        Some(SA_TOKEN)
    );
    assert_eq!(
        sts_requests[0].header("authorization"),
        None,
        "AssumeRoleWithWebIdentity is unsigned"
    );
    // ECR was called with the assumed role's key, in the image's region.
    assert_eq!(
        sigv4_scope(&ecr.requests()[0]),
        Some(("ASIAASSUMEDROLE".into(), "us-west-2".into(), "ecr".into()))
    );
}

#[test]
fn service_account_mode_role_sources_and_fallback() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAFROMENV", unix_now() + 3600));
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", Some(unix_now() + 12 * 3600))]);
    let p = private(plugin(), &ecr).env("AWS_ENDPOINT_URL_STS", sts.url());
    let none = BTreeMap::new();
    // No annotation, no AWS_ECR_ROLE_ARN: the node's credentials, no STS call.
    p.request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &none)
        .accepted();
    assert_eq!(sts.requests().len(), 0);
    assert_eq!(sigv4_scope(&ecr.requests()[0]).unwrap().0, "AKIDTESTSTATIC");
    // AWS_ECR_ROLE_ARN is the fallback role.
    let p = p.env("AWS_ECR_ROLE_ARN", ROLE);
    p.request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &none)
        .accepted();
    assert_eq!(sts.requests().len(), 1);
    assert_eq!(sigv4_scope(&ecr.requests()[1]).unwrap().0, "ASIAFROMENV");
    // A custom annotation key, set by flag.
    let custom = BTreeMap::from([(
        "example.com/pull-role".to_owned(),
        "arn:aws:iam::123456789012:role/custom".to_owned(),
    )]);
    p.clone()
        .args(["--role-arn-annotation=example.com/pull-role"])
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &custom)
        .accepted();
    let fields: BTreeMap<_, _> = form(&sts.requests()[1]).into_iter().collect();
    assert_eq!(fields["RoleArn"], "arn:aws:iam::123456789012:role/custom");
    // A v1beta1 request carries no token (the kubelet drops it): node credentials.
    p.request_with_token(ApiVersion::V1beta1, PRIVATE_HOST, Some(SA_TOKEN), &custom)
        .accepted();
    assert_eq!(sts.requests().len(), 2);
}

/// `--role-annotation-key` (upstream's key is fixed) replaces the default key: a cluster whose
/// policy reserves `eks.amazonaws.com/ecr-role-arn` names its own, and the reserved one is then
/// not read. Repeated keys are tried in order; `--role-arn-annotation` is the same flag.
#[test]
fn the_role_annotation_key_replaces_the_default() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAFROMKEY", unix_now() + 3600));
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", Some(unix_now() + 12 * 3600))]);
    let p = private(plugin(), &ecr).env("AWS_ENDPOINT_URL_STS", sts.url());
    let role = |name: &str| format!("arn:aws:iam::123456789012:role/{name}");
    let annotations = BTreeMap::from([
        (
            "eks.amazonaws.com/ecr-role-arn".to_owned(),
            role("reserved"),
        ),
        ("example.com/pull-role".to_owned(), role("custom")),
        ("example.com/other-role".to_owned(), role("other")),
    ]);
    let role_asked = |args: &[&str], annotations: &BTreeMap<String, String>| {
        let before = sts.requests().len();
        p.clone()
            .args(args.iter().copied())
            .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), annotations)
            .accepted();
        let requests = sts.requests();
        (requests.len() > before).then(|| {
            form(&requests[before])
                .into_iter()
                .find(|(k, _)| k == "RoleArn")
                .unwrap()
                .1
        })
    };
    assert_eq!(role_asked(&[], &annotations), Some(role("reserved")));
    for flag in ["--role-annotation-key", "--role-arn-annotation"] {
        assert_eq!(
            role_asked(&[&format!("{flag}=example.com/pull-role")], &annotations),
            Some(role("custom")),
            "{flag}"
        );
    }
    // First present wins, in the order given, whether repeated or comma-separated.
    for args in [
        vec![
            "--role-annotation-key=example.com/missing",
            "--role-annotation-key=example.com/other-role",
            "--role-annotation-key=example.com/pull-role",
        ],
        vec![
            "--role-annotation-key=example.com/missing,example.com/other-role,example.com/pull-role",
        ],
    ] {
        assert_eq!(
            role_asked(&args, &annotations),
            Some(role("other")),
            "{args:?}"
        );
    }
    // Only the reserved key set: not read once another key is configured, so the node pulls.
    let reserved_only = BTreeMap::from([(
        "eks.amazonaws.com/ecr-role-arn".to_owned(),
        role("reserved"),
    )]);
    assert_eq!(
        role_asked(
            &["--role-annotation-key=example.com/pull-role"],
            &reserved_only
        ),
        None
    );
    assert_eq!(
        sigv4_scope(ecr.requests().last().unwrap()).unwrap().0,
        "AKIDTESTSTATIC"
    );
}

#[test]
fn a_failed_role_assumption_is_one_clear_line() {
    let sts = FakeServer::start(|_| {
        FakeResponse::new(
            403,
            r#"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>"#,
        )
    });
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", None)]);
    let annotations =
        BTreeMap::from([("eks.amazonaws.com/ecr-role-arn".to_owned(), ROLE.to_owned())]);
    let line = private(plugin(), &ecr)
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &annotations)
        .rejected();
    assert!(
        line.contains(&format!("failed to assume role {ROLE}")) && line.contains("AccessDenied"),
        "{line}"
    );
    assert!(!line.contains(SA_TOKEN));
    assert_eq!(ecr.requests().len(), 0, "no ECR call without credentials");
}

#[test]
fn mirrors_get_a_default_region_token_unless_hosts_are_strict() {
    let ecr = ecr_sequence(vec![ecr_token("AWS:mirror-password", None)]);
    let p = private(plugin().env("AWS_REGION", "eu-central-1"), &ecr);
    let out = p.request(ApiVersion::V1, "registry.mirror.example:5000/app");
    let ok = out.accepted();
    assert_eq!(ok.auth["registry.mirror.example:5000"].1, "mirror-password");
    assert_eq!(sigv4_scope(&ecr.requests()[0]).unwrap().1, "eu-central-1");
    assert!(
        out.stderr()
            .contains("No region found in the image reference"),
        "{}",
        out.stderr()
    );

    for strict in [
        p.clone().args(["--strict-hosts"]),
        p.clone().env("ECR_STRICT_HOSTS", "true"),
    ] {
        let line = strict
            .request(ApiVersion::V1, "registry.mirror.example:5000/app")
            .rejected();
        assert!(
            line.contains("registry.mirror.example:5000 is not an Amazon ECR registry host"),
            "{line}"
        );
    }
    // Look-alikes are not ECR either.
    let line = p
        .clone()
        .args(["--strict-hosts"])
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}.evil.example/app"))
        .rejected();
    assert!(
        line.contains("is not an Amazon ECR registry host"),
        "{line}"
    );
    assert_eq!(ecr.requests().len(), 1, "strict mode sends nothing");
}

#[test]
fn no_region_anywhere_is_a_clear_error() {
    let line = plugin()
        .request(ApiVersion::V1, "registry.mirror.example/app")
        .rejected();
    assert!(
        line.contains("no AWS region for registry.mirror.example"),
        "{line}"
    );
}

#[test]
fn transient_failures_are_retried() {
    for first in [
        aws_error(500, "ServerException"),
        aws_error(400, "ThrottlingException"),
        FakeResponse::new(429, "slow down"),
        FakeResponse::drop_connection(),
    ] {
        let ecr = ecr_sequence(vec![first, ecr_token("AWS:after-retry", None)]);
        let ok = private(plugin(), &ecr)
            .request(ApiVersion::V1, PRIVATE_HOST)
            .accepted();
        assert_eq!(ok.auth[PRIVATE_HOST].1, "after-retry");
        assert_eq!(ecr.requests().len(), 2);
    }
}

#[test]
fn permanent_failures_name_region_endpoint_and_credentials() {
    let cases: Vec<(FakeResponse, &str)> = vec![
        (
            aws_error(400, "AccessDeniedException"),
            "AccessDeniedException",
        ),
        (
            FakeResponse::json("{not json"),
            "getting an ECR authorization token",
        ),
        (
            FakeResponse::json(r#"{"authorizationData":[]}"#),
            "authorization data was empty",
        ),
        (
            FakeResponse::json(r#"{"authorizationData":[{}]}"#),
            "authorization token in response was nil",
        ),
        (
            ecr_token("no-colon-here", None),
            "error parsing username and password from authorization token",
        ),
        (
            FakeResponse::json(r#"{"authorizationData":[{"authorizationToken":"%%%"}]}"#),
            "not base64",
        ),
    ];
    for (answer, want) in cases {
        let ecr = ecr_sequence(vec![answer]);
        let line = private(plugin(), &ecr)
            .request(ApiVersion::V1, PRIVATE_HOST)
            .rejected();
        assert!(line.contains(want), "want {want:?} in {line:?}");
        assert!(
            line.contains("region us-west-2")
                && line.contains("credentials: environment variables"),
            "{line}"
        );
        assert!(
            line.contains("endpoint 127.0.0.1 (from AWS_ENDPOINT_URL_ECR)"),
            "{line}"
        );
    }
}

#[test]
fn refused_connections_fail_after_retries() {
    let port = closed_port();
    let line = plugin()
        .env("AWS_ENDPOINT_URL_ECR", format!("http://127.0.0.1:{port}"))
        .request(ApiVersion::V1, PRIVATE_HOST)
        .rejected();
    assert!(
        line.contains("getting an ECR authorization token") && line.contains("region us-west-2"),
        "{line}"
    );
}

#[test]
fn a_hanging_endpoint_ends_at_the_deadline() {
    let ecr = FakeServer::start(|_| FakeResponse::hang());
    // The kit kills at deadline + 1 s, so a run that outlives it fails `rejected()`.
    let line = private(plugin(), &ecr)
        .args(["--deadline=2s"])
        .timeout(Duration::from_secs(3))
        .request(ApiVersion::V1, PRIVATE_HOST)
        .rejected();
    assert!(
        line.contains("timeout") || line.contains("deadline"),
        "{line}"
    );
}

#[test]
fn no_secret_reaches_stderr_even_at_trace_level() {
    let sts = FakeServer::start(|_| sts_credentials("ASIAASSUMEDROLE", unix_now() + 3600));
    let ecr = ecr_sequence(vec![ecr_token(
        "AWS:registry-password-value",
        Some(unix_now() + 3600),
    )]);
    let annotations =
        BTreeMap::from([("eks.amazonaws.com/ecr-role-arn".to_owned(), ROLE.to_owned())]);
    let out = private(plugin(), &ecr)
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .args(["--v=9"])
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &annotations);
    out.accepted();
    let stderr = out.stderr();
    assert!(stderr.lines().count() > 20, "trace logging is on");
    for secret in [
        SA_TOKEN,
        "registry-password-value",
        &b64("AWS:registry-password-value"),
        "static-secret-key-value",
        "assumed-secret-key-value",
        "assumed-session-token-value",
    ] {
        assert!(!stderr.contains(secret), "{secret:?} leaked to stderr");
    }
}

#[test]
fn flags_are_upstream_compatible() {
    let version = Plugin::new(BIN).args(["--version"]).raw(b"");
    assert_eq!(version.exec.exit_code, Some(0));
    assert!(
        version.stdout().starts_with("ecr-credential-provider "),
        "{}",
        version.stdout()
    );
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", None)]);
    let out = private(plugin(), &ecr)
        .args(["get-credentials", "-v=0"])
        .request(ApiVersion::V1, PRIVATE_HOST);
    out.accepted();
    assert_eq!(
        out.stderr(),
        "",
        "get-credentials is expected, not warned about"
    );
    // Upstream registers no klog flags and refuses them; so do we (tests/flags.rs has them all).
    let line = private(plugin(), &ecr)
        .args(["get-credentials", "--logtostderr"])
        .request(ApiVersion::V1, PRIVATE_HOST)
        .rejected();
    assert!(
        line.ends_with("unknown flag --logtostderr (upstream's ecr-credential-provider does not take this klog flag either) (see --help)"),
        "{line}"
    );
}

#[test]
fn concurrent_runs_are_independent() {
    let ecr = Arc::new(ecr_sequence(vec![ecr_token("AWS:p", None)]));
    let p = private(plugin(), &ecr);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || p.request(ApiVersion::V1, PRIVATE_HOST).accepted())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().auth[PRIVATE_HOST].1, "p");
    }
    assert_eq!(ecr.requests().len(), 8);
}

#[test]
fn a_profile_with_credential_process_supplies_credentials() {
    if kcp_testkit::skip_on_windows(
        "a_profile_with_credential_process_supplies_credentials",
        "the profile's credential_process is a shell script",
    ) {
        return;
    }
    let ecr = ecr_sequence(vec![ecr_token("AWS:p", None)]);
    let p = Plugin::new(BIN)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .secret("process-secret");
    let home = p.home().to_path_buf();
    let script = home.join("creds.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"Version\":1,\"AccessKeyId\":\"AKIDFROMPROCESS\",\"SecretAccessKey\":\"process-secret\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &script,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/config"),
        format!(
            "[profile puller]\ncredential_process = {}\n",
            script.display()
        ),
    )
    .unwrap();
    let ok = private(p.env("AWS_PROFILE", "puller"), &ecr)
        .request(ApiVersion::V1, PRIVATE_HOST)
        .accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "p");
    assert_eq!(
        sigv4_scope(&ecr.requests()[0]).unwrap().0,
        "AKIDFROMPROCESS"
    );
}
