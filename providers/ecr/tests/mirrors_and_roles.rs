//! `--registry-mirror` and `--assume-role` against scripted fakes: the exact answer for a mirrored
//! image, the region and credentials ECR was called with, the exact STS AssumeRole request, the
//! strict refusal of unlisted hosts and of a role in another partition (nothing sent), the
//! precedence of a service-account annotation, and no assumed secret on stdout or stderr.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::Plugin;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use support::*;

/// The mirror's destination: another account, another region than the environment's.
const DST: &str = "210987654321.dkr.ecr.eu-west-1.amazonaws.com";
const MIRROR: &str = "docker.io:210987654321.dkr.ecr.eu-west-1.amazonaws.com";
const DST_ROLE: &str = "arn:aws:iam::210987654321:role/ecr-pull";
const PRIVATE_ROLE: &str = "arn:aws:iam::123456789012:role/team-pull";
const SA_TOKEN: &str =
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTpwdWxsZXIifQ.c2lnbmF0dXJl";

/// ECR and STS fakes, wired through the endpoint variables.
struct Aws {
    ecr: FakeServer,
    sts: FakeServer,
}

impl Aws {
    fn start(ecr_password: &str, ecr_expires_at: Option<u64>, session_expires_at: u64) -> Aws {
        let answer = ecr_token(&format!("AWS:{ecr_password}"), ecr_expires_at);
        let ecr = FakeServer::start(move |_| answer.clone());
        Aws {
            ecr,
            sts: sts_fake(session_expires_at),
        }
    }

    fn plugin(&self) -> Plugin {
        plugin()
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL_ECR", self.ecr.url())
            .env("AWS_ENDPOINT_URL_STS", self.sts.url())
    }

    fn nothing_sent(&self) {
        assert!(self.ecr.requests().is_empty(), "{:?}", self.ecr.requests());
        assert!(self.sts.requests().is_empty(), "{:?}", self.sts.requests());
    }
}

/// The message of a refusal line, after the timestamp and level.
fn message(line: &str) -> &str {
    line.split_once(" ERROR ").map_or(line, |(_, m)| m)
}

fn fields(request: &RecordedRequest) -> BTreeMap<String, String> {
    form(request).into_iter().collect()
}

#[test]
fn a_docker_io_image_through_a_mirror_gets_the_destinations_token_under_both_hosts() {
    let aws = Aws::start("mirror-password", None, unix_now() + 3600);
    for args in [
        vec![format!("--registry-mirror={MIRROR}")],
        vec!["-r".to_owned(), MIRROR.to_owned()],
        vec![format!(
            "--registry-mirror=quay.io:{DST}, docker.io : {DST}"
        )],
    ] {
        let out = aws
            .plugin()
            .args(args.clone())
            .request(ApiVersion::V1, "docker.io/library/nginx");
        out.accepted();
        assert_eq!(
            out.stdout(),
            format!(
                "{{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"0s\",\"auth\":{{\"{DST}\":{{\"username\":\"AWS\",\"password\":\"mirror-password\"}},\"docker.io\":{{\"username\":\"AWS\",\"password\":\"mirror-password\"}}}}}}\n"
            ),
            "{args:?}"
        );
        assert_eq!(out.stderr(), "", "quiet at the default level");
    }
    let requests = aws.ecr.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.header("x-amz-target"), Some(ECR_TARGET));
        // The destination's region, not the environment's, with the node's own key.
        assert_eq!(
            sigv4_scope(r),
            Some(("AKIDTESTSTATIC".into(), "eu-west-1".into(), "ecr".into()))
        );
    }
    assert!(aws.sts.requests().is_empty(), "no role configured, no STS");
}

#[test]
fn a_mirror_keeps_the_sources_port_and_case_in_its_key() {
    let aws = Aws::start("ported-password", None, unix_now() + 3600);
    let ok = aws
        .plugin()
        .args([format!("--registry-mirror=Reg.Local:5000={DST}")])
        .request(ApiVersion::V1, "reg.local:5000/team/app")
        .accepted();
    assert_eq!(
        ok.auth.keys().collect::<Vec<_>>(),
        vec![DST, "reg.local:5000"]
    );
    // The port is part of the source: the bare host is not mapped, and strict mode refuses it.
    let line = aws
        .plugin()
        .args([format!("--registry-mirror=reg.local:5000={DST}")])
        .request(ApiVersion::V1, "reg.local/team/app")
        .rejected();
    assert!(
        message(&line).starts_with(
            "reg.local is not an Amazon ECR registry host nor a --registry-mirror source"
        ),
        "{line}"
    );
    assert_eq!(aws.ecr.requests().len(), 1);
}

#[test]
fn with_a_mirror_an_unlisted_host_is_refused_before_any_call() {
    let aws = Aws::start("never-sent-password", None, unix_now() + 3600);
    let p = aws.plugin().args([
        format!("--registry-mirror={MIRROR}"),
        format!("--assume-role=210987654321={DST_ROLE}"),
    ]);
    for image in [
        "quay.io/prometheus/prometheus",
        "docker.io.evil.example/library/nginx",
        "registry.mirror.example:5000/app",
    ] {
        let out = p.request(ApiVersion::V1, image);
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(1), "{line}");
        let registry = image.split('/').next().unwrap();
        let separator = if registry.contains(':') { '=' } else { ':' };
        assert_eq!(
            message(&line),
            format!(
                "{registry} is not an Amazon ECR registry host nor a --registry-mirror source, and strict host checking is on (implied by --registry-mirror): refusing to send an ECR token to it; map it with --registry-mirror={registry}{separator}<account>.dkr.ecr.<region>.amazonaws.com or narrow matchImages"
            )
        );
    }
    // The suggested mapping for a source with a port is one the parser accepts.
    let line = p
        .request(ApiVersion::V1, "registry.mirror.example:5000/app")
        .rejected();
    assert!(
        line.contains("--registry-mirror=registry.mirror.example:5000=<account>.dkr.ecr."),
        "{line}"
    );
    aws.nothing_sent();
    // ECR hosts themselves still work.
    let ok = p
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"))
        .accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "never-sent-password");
    assert!(aws.sts.requests().is_empty(), "no role for 123456789012");
}

#[test]
fn assume_role_sends_the_exact_sts_request_and_pulls_as_the_role() {
    let aws = Aws::start(
        "role-password",
        Some(unix_now() + 12 * 3600),
        unix_now() + 3600,
    );
    let out = aws
        .plugin()
        .args([
            format!("--registry-mirror={MIRROR}"),
            format!("--assume-role=210987654321={DST_ROLE}"),
            "--assume-role-external-id=tenant-42".to_owned(),
        ])
        .request(ApiVersion::V1, "docker.io/library/nginx");
    let ok = out.accepted();
    assert_eq!(ok.auth["docker.io"].1, "role-password");
    // Half of the one hour the role session lives, not half of the token's twelve.
    let d = ok.cache_duration.unwrap();
    assert!(
        d <= GoDuration::from_secs(1800) && d >= GoDuration::from_secs(1790),
        "{d}"
    );

    let sts = aws.sts.requests();
    assert_eq!(sts.len(), 1);
    assert_eq!(
        fields(&sts[0]),
        BTreeMap::from([
            ("Action".to_owned(), "AssumeRole".to_owned()),
            ("Version".to_owned(), "2011-06-15".to_owned()),
            ("RoleArn".to_owned(), DST_ROLE.to_owned()),
            (
                "RoleSessionName".to_owned(),
                "ecr-credential-provider".to_owned()
            ),
            ("ExternalId".to_owned(), "tenant-42".to_owned()),
        ])
    );
    // AssumeRole is signed by the node, in the registry's region.
    assert_eq!(
        sigv4_scope(&sts[0]),
        Some(("AKIDTESTSTATIC".into(), "eu-west-1".into(), "sts".into()))
    );
    // GetAuthorizationToken with the role's key, the role's session token attached.
    let ecr = aws.ecr.requests();
    assert_eq!(ecr.len(), 1);
    assert_eq!(
        sigv4_scope(&ecr[0]),
        Some(("ASIANODEASSUMED".into(), "eu-west-1".into(), "ecr".into()))
    );
    assert_eq!(
        ecr[0].header("x-amz-security-token"),
        Some(NODE_ASSUMED_SESSION_TOKEN)
    );
    for secret in [NODE_ASSUMED_SECRET_KEY, NODE_ASSUMED_SESSION_TOKEN] {
        assert!(!out.stdout().contains(secret), "{secret} on stdout");
    }
}

#[test]
fn assume_role_applies_to_the_accounts_own_hosts_and_no_others() {
    let aws = Aws::start("p-account", None, unix_now() + 3600);
    let p = aws
        .plugin()
        .args([format!("--assume-role=123456789012={PRIVATE_ROLE}")]);
    // Without an external ID, none is sent.
    p.request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"))
        .accepted();
    let sts = aws.sts.requests();
    assert_eq!(sts.len(), 1);
    let f = fields(&sts[0]);
    assert_eq!(f["RoleArn"], PRIVATE_ROLE);
    assert!(!f.contains_key("ExternalId"), "{f:?}");
    assert_eq!(
        sigv4_scope(&aws.ecr.requests()[0]).unwrap().0,
        "ASIANODEASSUMED"
    );
    // Another account: the node's own credentials. Without a mirror, other hosts still get a
    // default-region token (drop-in parity), as the node.
    p.request(ApiVersion::V1, &format!("{DST}/app")).accepted();
    p.request(ApiVersion::V1, "registry.mirror.example/app")
        .accepted();
    assert_eq!(aws.sts.requests().len(), 1);
    let ecr = aws.ecr.requests();
    assert_eq!(
        sigv4_scope(&ecr[1]),
        Some(("AKIDTESTSTATIC".into(), "eu-west-1".into(), "ecr".into()))
    );
    assert_eq!(
        sigv4_scope(&ecr[2]),
        Some(("AKIDTESTSTATIC".into(), "us-east-1".into(), "ecr".into()))
    );
}

#[test]
fn a_role_of_another_partition_is_refused_at_start_or_before_any_call() {
    let aws = Aws::start("never-sent-password", None, unix_now() + 3600);
    // Known at start through the mirror: a usage error.
    let out = aws
        .plugin()
        .args([
            "--registry-mirror=docker.io:123456789012.dkr.ecr.us-gov-west-1.amazonaws.com",
            "--assume-role=123456789012=arn:aws:iam::123456789012:role/pull",
        ])
        .request(ApiVersion::V1, "docker.io/library/nginx");
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(2), "{line}");
    assert_eq!(
        message(&line),
        "--registry-mirror docker.io:123456789012.dkr.ecr.us-gov-west-1.amazonaws.com: --assume-role 123456789012=arn:aws:iam::123456789012:role/pull: the role is in partition aws but the registry of account 123456789012 (region us-gov-west-1) is in partition aws-us-gov; give a role ARN of partition aws-us-gov"
    );
    // Known at request: the image's host names the partition.
    let out = aws
        .plugin()
        .args(["--assume-role=123456789012=arn:aws-cn:iam::123456789012:role/pull"])
        .request(ApiVersion::V1, &format!("{PRIVATE_HOST}/app"));
    let line = out.rejected();
    assert_eq!(out.exec.exit_code, Some(1), "{line}");
    assert!(
        line.contains("the role is in partition aws-cn but the registry of account 123456789012 (region us-west-2) is in partition aws"),
        "{line}"
    );
    aws.nothing_sent();
}

#[test]
fn a_service_account_annotation_wins_over_assume_role() {
    let aws = Aws::start("sa-password", None, unix_now() + 3600);
    let p = aws
        .plugin()
        .args([format!("--assume-role=123456789012={PRIVATE_ROLE}")]);
    let annotated = BTreeMap::from([(
        "eks.amazonaws.com/ecr-role-arn".to_owned(),
        "arn:aws:iam::123456789012:role/from-annotation".to_owned(),
    )]);
    p.request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(SA_TOKEN), &annotated)
        .accepted();
    // Without the annotation, --assume-role applies (before AWS_ECR_ROLE_ARN).
    p.clone()
        .env(
            "AWS_ECR_ROLE_ARN",
            "arn:aws:iam::123456789012:role/from-env",
        )
        .request_with_token(
            ApiVersion::V1,
            PRIVATE_HOST,
            Some(SA_TOKEN),
            &BTreeMap::new(),
        )
        .accepted();
    let sts = aws.sts.requests();
    assert_eq!(sts.len(), 2);
    let first = fields(&sts[0]);
    assert_eq!(
        (first["Action"].as_str(), first["RoleArn"].as_str()),
        (
            "AssumeRoleWithWebIdentity",
            "arn:aws:iam::123456789012:role/from-annotation"
        )
    );
    let second = fields(&sts[1]);
    assert_eq!(
        (second["Action"].as_str(), second["RoleArn"].as_str()),
        ("AssumeRole", PRIVATE_ROLE)
    );
    let ecr = aws.ecr.requests();
    assert_eq!(sigv4_scope(&ecr[0]).unwrap().0, "ASIAWEBIDENTITY");
    assert_eq!(sigv4_scope(&ecr[1]).unwrap().0, "ASIANODEASSUMED");
}

#[test]
fn a_refused_assume_role_is_one_clear_line() {
    let ecr = FakeServer::start(|_| ecr_token("AWS:never-sent-password", None));
    let sts = FakeServer::start(|_| {
        FakeResponse::new(
            403,
            r#"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error></ErrorResponse>"#,
        )
        .header("content-type", "text/xml")
    });
    let line = plugin()
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .args([
            format!("--assume-role=123456789012={PRIVATE_ROLE}"),
            "--assume-role-external-id=tenant-42".to_owned(),
        ])
        .request(ApiVersion::V1, PRIVATE_HOST)
        .rejected();
    assert!(
        message(&line).starts_with(&format!(
            "failed to assume role {PRIVATE_ROLE} (--assume-role) with the node's credentials (environment variables (AWS_ACCESS_KEY_ID); STS in region us-west-2, endpoint 127.0.0.1 (from AWS_ENDPOINT_URL_STS)); check the role's trust policy and its sts:ExternalId condition"
        )) && line.contains("HTTP 403 AccessDenied: not authorized to perform sts:AssumeRole"),
        "{line}"
    );
    assert!(ecr.requests().is_empty(), "no ECR call without the role");
}

#[test]
fn no_assumed_secret_reaches_stdout_or_stderr_even_at_trace_level() {
    let aws = Aws::start("registry-password-value", None, unix_now() + 3600);
    let out = aws
        .plugin()
        .args([
            format!("--registry-mirror={MIRROR}"),
            format!("--assume-role=210987654321={DST_ROLE}"),
            "--assume-role-external-id=tenant-42".to_owned(),
            "--v=9".to_owned(),
        ])
        .request(ApiVersion::V1, "docker.io/library/nginx");
    out.accepted();
    assert!(out.stderr().lines().count() > 20, "trace logging is on");
    for secret in [
        NODE_ASSUMED_SECRET_KEY,
        NODE_ASSUMED_SESSION_TOKEN,
        "static-secret-key-value",
    ] {
        assert!(!out.stderr().contains(secret), "{secret} on stderr");
        assert!(!out.stdout().contains(secret), "{secret} on stdout");
    }
}

/// testdata/configs/ecr-mirror-roles.yaml as the kubelet would run it: its args, its matchImages.
#[test]
fn the_example_config_pulls_docker_hub_through_the_cache_as_the_role() {
    let [p] = kcp_testkit::configs::example_config("ecr-mirror-roles.yaml")
        .try_into()
        .unwrap_or_else(|_| panic!("one provider"));
    let image = "docker.io/library/nginx";
    assert!(
        p.match_images
            .iter()
            .any(|m| kcp_kubelet::matching::match_image(m, image))
    );
    let aws = Aws::start("cache-password", None, unix_now() + 3600);
    let run = aws.plugin().args(p.args.clone());
    let ok = run.request(ApiVersion::V1, image).accepted();
    assert_eq!(ok.auth["docker.io"].1, "cache-password");
    assert_eq!(
        fields(&aws.sts.requests()[0])["RoleArn"],
        "arn:aws:iam::123456789012:role/ecr-pull"
    );
    assert_eq!(
        sigv4_scope(&aws.ecr.requests()[0]),
        Some(("ASIANODEASSUMED".into(), "us-west-2".into(), "ecr".into()))
    );
    // The second account's registries as its own role.
    run.request(
        ApiVersion::V1,
        "210987654321.dkr.ecr.eu-west-1.amazonaws.com/app",
    )
    .accepted();
    assert_eq!(
        fields(&aws.sts.requests()[1])["RoleArn"],
        "arn:aws:iam::210987654321:role/ecr-pull-from-nodes"
    );
    run.request(ApiVersion::V1, "quay.io/org/app").rejected();
    assert_eq!(aws.ecr.requests().len(), 2);
}
