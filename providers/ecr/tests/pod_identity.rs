//! EKS Pod Identity (`--eks-pod-identity-cluster`) against scripted fakes of EKS Auth, STS and
//! ECR: the exact AssumeRoleForPodIdentity request and its signature, GetAuthorizationToken
//! signed with the returned key, `cacheDuration` capped by the returned expiration, the fallback
//! when a ServiceAccount has no association, one line per other EKS Auth exception, nothing sent
//! without a service-account token, the precedence of every role source, the token cache's key,
//! and no secret on stderr at the highest verbosity.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::duration::GoDuration;
use kcp_testkit::cache::{cache_entries, service_account_token};
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::{Plugin, TempDir};
use support::*;

const CLUSTER: &str = "prod-cluster_1";
const ANNOTATED_ROLE: &str = "arn:aws:iam::123456789012:role/team-pull";
const ENV_ROLE: &str = "arn:aws:iam::123456789012:role/env-pull";
const ACCOUNT_ROLE: &str = "arn:aws:iam::123456789012:role/account-pull";
const ANNOTATION: &str = "eks.amazonaws.com/ecr-role-arn";

/// A service-account token for the Pod Identity audience, of `team/<name>`.
fn pod_token(name: &str, uid: &str) -> String {
    service_account_token("pods.eks.amazonaws.com", "team", name, uid, "pod-a")
}

/// EKS Auth, STS and ECR fakes, wired through the endpoint variables.
struct Aws {
    eks: FakeServer,
    sts: FakeServer,
    ecr: FakeServer,
}

impl Aws {
    /// EKS Auth answers with `eks_answer`; its session and STS's end at `session_expires_at`.
    fn start(eks_answer: FakeResponse, session_expires_at: u64) -> Aws {
        let eks = FakeServer::start(move |_| eks_answer.clone());
        let sts = sts_fake(session_expires_at);
        let answer = ecr_token("AWS:pod-identity-pull", Some(unix_now() + 12 * 3600));
        let ecr = FakeServer::start(move |_| answer.clone());
        Aws { eks, sts, ecr }
    }

    fn ok() -> Aws {
        Aws::start(
            eks_auth_credentials("ASIAPODIDENTITY", unix_now() + 3600),
            unix_now() + 3600,
        )
    }

    /// EKS Auth finds no association for any service account.
    fn no_association() -> Aws {
        Aws::start(
            eks_auth_error(404, "ResourceNotFoundException"),
            unix_now() + 3600,
        )
    }

    fn plugin(&self) -> Plugin {
        plugin()
            .env("AWS_ENDPOINT_URL_EKS_AUTH", self.eks.url())
            .env("AWS_ENDPOINT_URL_STS", self.sts.url())
            .env("AWS_ENDPOINT_URL_ECR", self.ecr.url())
    }

    /// The access key ECR's last call was signed with.
    fn ecr_key(&self) -> String {
        let requests = self.ecr.requests();
        sigv4_scope(requests.last().expect("an ECR call"))
            .unwrap()
            .0
    }
}

fn flag() -> String {
    format!("--eks-pod-identity-cluster={CLUSTER}")
}

#[test]
fn sends_the_exact_eks_auth_request_then_pulls_with_the_returned_key() {
    let token = pod_token("puller", "uid-1");
    let none = BTreeMap::new();
    for how in ["flag", "env"] {
        let aws = Aws::ok();
        let p = if how == "flag" {
            aws.plugin().args([flag()])
        } else {
            aws.plugin().env("ECR_EKS_POD_IDENTITY_CLUSTER", CLUSTER)
        };
        let ok = p
            .request_with_token(
                ApiVersion::V1,
                &format!("{PRIVATE_HOST}/app"),
                Some(&token),
                &none,
            )
            .accepted();
        assert_eq!(ok.auth[PRIVATE_HOST].1, "pod-identity-pull", "{how}");
        // Half the returned credentials' hour, not half the ECR token's twelve.
        let d = ok.cache_duration.unwrap();
        assert!(
            d <= GoDuration::from_secs(1800) && d >= GoDuration::from_secs(1790),
            "{how}: {d}"
        );

        let requests = aws.eks.requests();
        assert_eq!(requests.len(), 1, "{how}");
        let r = &requests[0];
        assert_eq!(
            (r.method.as_str(), r.path()),
            (
                "POST",
                format!("/clusters/{CLUSTER}/assume-role-for-pod-identity").as_str()
            ),
            "{how}"
        );
        let body: serde_json::Value = serde_json::from_str(&r.body_text()).unwrap();
        assert_eq!(body, serde_json::json!({ "token": token }), "{how}");
        // Signed with the node's key, for eks-auth in the registry's region.
        assert_eq!(
            sigv4_scope(r),
            Some((
                "AKIDTESTSTATIC".into(),
                "us-west-2".into(),
                "eks-auth".into()
            )),
            "{how}"
        );
        // ECR with the returned key, in the registry's region.
        let ecr = aws.ecr.requests();
        assert_eq!(ecr.len(), 1, "{how}");
        assert_eq!(
            sigv4_scope(&ecr[0]),
            Some(("ASIAPODIDENTITY".into(), "us-west-2".into(), "ecr".into())),
            "{how}"
        );
        assert!(aws.sts.requests().is_empty(), "{how}");
    }
}

#[test]
fn an_ecr_token_outliving_the_credentials_is_capped_by_their_expiration() {
    // Credentials for ten minutes: half of them, though the ECR token lives twelve hours.
    let aws = Aws::start(
        eks_auth_credentials("ASIAPODIDENTITY", unix_now() + 600),
        unix_now() + 3600,
    );
    let ok = aws
        .plugin()
        .args([flag()])
        .request_with_token(
            ApiVersion::V1,
            PRIVATE_HOST,
            Some(&pod_token("puller", "uid-1")),
            &BTreeMap::new(),
        )
        .accepted();
    let d = ok.cache_duration.unwrap();
    assert!(
        d <= GoDuration::from_secs(300) && d >= GoDuration::from_secs(290),
        "{d}"
    );
}

#[test]
fn without_a_service_account_token_the_flag_changes_nothing() {
    let aws = Aws::ok();
    let p = aws.plugin().args([flag()]);
    let ok = p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert_eq!(ok.auth[PRIVATE_HOST].1, "pod-identity-pull");
    // A v1beta1 request carries no token (the kubelet drops it).
    p.request_with_token(
        ApiVersion::V1beta1,
        PRIVATE_HOST,
        Some(&pod_token("puller", "uid-1")),
        &BTreeMap::new(),
    )
    .accepted();
    assert!(aws.eks.requests().is_empty(), "{:?}", aws.eks.requests());
    assert!(aws.sts.requests().is_empty());
    assert_eq!(aws.ecr.requests().len(), 2);
    assert_eq!(aws.ecr_key(), "AKIDTESTSTATIC");
}

/// The longest `cacheDuration` after a ResourceNotFoundException (docs/providers/ecr.md "EKS Pod
/// Identity").
const FALLBACK_CACHE: GoDuration = GoDuration::from_secs(10 * 60);

/// No association (ResourceNotFoundException): the pull goes on as the node, with a short
/// `cacheDuration` so an association made later is seen soon; one info line at `--v=2` names the
/// ServiceAccount, nothing at the default level. Before, this was an error (exit 1).
#[test]
fn without_an_association_the_node_pulls_for_ten_minutes_at_most() {
    let token = pod_token("puller", "uid-1");
    for verbosity in ["--v=0", "--v=2"] {
        let aws = Aws::no_association();
        let out = aws
            .plugin()
            .args([flag(), verbosity.to_owned()])
            .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&token), &BTreeMap::new());
        let ok = out.accepted();
        assert_eq!(ok.auth[PRIVATE_HOST].1, "pod-identity-pull", "{verbosity}");
        let d = ok.cache_duration.unwrap();
        assert!(
            d > GoDuration::ZERO && d <= FALLBACK_CACHE,
            "{verbosity}: {d}"
        );
        assert_eq!(
            aws.eks.requests().len(),
            1,
            "{verbosity}: one EKS Auth call"
        );
        assert!(aws.sts.requests().is_empty(), "{verbosity}");
        assert_eq!(aws.ecr.requests().len(), 1, "{verbosity}");
        assert_eq!(
            aws.ecr_key(),
            "AKIDTESTSTATIC",
            "{verbosity}: the node's key"
        );

        let stderr = out.stderr();
        if verbosity == "--v=0" {
            assert_eq!(stderr, "", "nothing at the default level");
            continue;
        }
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("no association"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        let line = lines[0];
        assert!(
            line.contains(" INFO ")
                && line.contains("service account team/puller")
                && line.contains(&format!("cluster {CLUSTER}"))
                && line.contains("pulling with the node's credentials")
                && line.contains("at most 10m0s"),
            "{line}"
        );
        assert!(!stderr.contains(&token), "the token is on stderr");
    }
}

/// The fallback's token is the node's, so it comes from and goes to the node's cache entry; its
/// `cacheDuration` is capped even when it comes from the disk cache.
#[test]
fn the_fallback_shares_the_nodes_token_cache_entry() {
    let aws = Aws::no_association();
    let dir = TempDir::new("ecr-pod-identity-fallback");
    let cache = format!("--token-cache-dir={}", dir.path().join("cache").display());
    let p = aws.plugin().args([flag(), cache]);
    let none = BTreeMap::new();
    let token = pod_token("coredns", "uid-3");
    // A static pod (no token) fills the node's entry; the fallback then reads it, twice.
    let node = p.request(ApiVersion::V1, PRIVATE_HOST).accepted();
    assert!(node.cache_duration.unwrap() > FALLBACK_CACHE);
    for _ in 0..2 {
        let ok = p
            .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&token), &none)
            .accepted();
        let d = ok.cache_duration.unwrap();
        assert!(d > GoDuration::ZERO && d <= FALLBACK_CACHE, "{d}");
    }
    // EKS Auth is asked each time (an association may have been made since), ECR once.
    assert_eq!((aws.eks.requests().len(), aws.ecr.requests().len()), (2, 1));
    cache_entries(&dir.path().join("cache"), 1);
}

#[test]
fn each_eks_auth_exception_is_one_line_naming_pod_identity() {
    let cases: [(u16, &str, &str); 3] = [
        (
            401,
            "InvalidTokenException",
            "serviceAccountTokenAudience must be pods.eks.amazonaws.com",
        ),
        (
            400,
            "ExpiredTokenException",
            "serviceAccountTokenAudience must be pods.eks.amazonaws.com",
        ),
        (
            403,
            "AccessDeniedException",
            "the node role needs eks-auth:AssumeRoleForPodIdentity",
        ),
    ];
    let token = pod_token("puller", "uid-1");
    for (status, code, hint) in cases {
        let aws = Aws::start(eks_auth_error(status, code), unix_now() + 3600);
        let out = aws.plugin().args([flag()]).request_with_token(
            ApiVersion::V1,
            PRIVATE_HOST,
            Some(&token),
            &BTreeMap::new(),
        );
        assert_eq!(out.exec.exit_code, Some(1), "{code}");
        let line = out.rejected();
        assert!(
            line.contains(&format!(
                "EKS Pod Identity: AssumeRoleForPodIdentity for cluster {CLUSTER}"
            )) && line.contains(code)
                && line.contains(hint),
            "{code}: {line}"
        );
        assert!(!line.contains(&token), "{code}: the token is in {line}");
        assert!(aws.ecr.requests().is_empty(), "{code}: no ECR call");
        assert_eq!(aws.eks.requests().len(), 1, "{code}: not retried");
    }
}

/// Which credentials sign the ECR call for each combination of role sources, and which exchange
/// ran first (docs/providers/ecr.md "Which identity pulls").
#[test]
fn precedence_of_the_role_sources() {
    let token = pod_token("puller", "uid-1");
    let annotated = BTreeMap::from([(ANNOTATION.to_owned(), ANNOTATED_ROLE.to_owned())]);
    let plain = BTreeMap::new();
    let assume = format!("--assume-role=123456789012={ACCOUNT_ROLE}");
    struct Row<'a> {
        what: &'a str,
        token: bool,
        annotations: &'a BTreeMap<String, String>,
        pod_identity: bool,
        /// EKS Auth knows an association for the ServiceAccount (else ResourceNotFoundException).
        associated: bool,
        assume_role: bool,
        env_role: bool,
        /// (EKS Auth calls, STS action, ECR signing key)
        want: (usize, Option<&'a str>, &'a str),
    }
    let rows = [
        Row {
            what: "an annotation wins over everything",
            token: true,
            annotations: &annotated,
            pod_identity: true,
            associated: true,
            assume_role: true,
            env_role: true,
            want: (0, Some("AssumeRoleWithWebIdentity"), "ASIAWEBIDENTITY"),
        },
        Row {
            what: "Pod Identity before --assume-role and AWS_ECR_ROLE_ARN",
            token: true,
            annotations: &plain,
            pod_identity: true,
            associated: true,
            assume_role: true,
            env_role: true,
            want: (1, None, "ASIAPODIDENTITY"),
        },
        Row {
            what: "no association: --assume-role",
            token: true,
            annotations: &plain,
            pod_identity: true,
            associated: false,
            assume_role: true,
            env_role: true,
            want: (1, Some("AssumeRole"), "ASIANODEASSUMED"),
        },
        Row {
            what: "no association, no --assume-role: AWS_ECR_ROLE_ARN",
            token: true,
            annotations: &plain,
            pod_identity: true,
            associated: false,
            assume_role: false,
            env_role: true,
            want: (1, Some("AssumeRoleWithWebIdentity"), "ASIAWEBIDENTITY"),
        },
        Row {
            what: "no association and no role: the node",
            token: true,
            annotations: &plain,
            pod_identity: true,
            associated: false,
            assume_role: false,
            env_role: false,
            want: (1, None, "AKIDTESTSTATIC"),
        },
        Row {
            what: "without Pod Identity, --assume-role",
            token: true,
            annotations: &plain,
            pod_identity: false,
            associated: true,
            assume_role: true,
            env_role: true,
            want: (0, Some("AssumeRole"), "ASIANODEASSUMED"),
        },
        Row {
            what: "then AWS_ECR_ROLE_ARN",
            token: true,
            annotations: &plain,
            pod_identity: false,
            associated: true,
            assume_role: false,
            env_role: true,
            want: (0, Some("AssumeRoleWithWebIdentity"), "ASIAWEBIDENTITY"),
        },
        Row {
            what: "a token and no role: the node",
            token: true,
            annotations: &plain,
            pod_identity: false,
            associated: true,
            assume_role: false,
            env_role: false,
            want: (0, None, "AKIDTESTSTATIC"),
        },
        Row {
            what: "no token: --assume-role despite the flag",
            token: false,
            annotations: &plain,
            pod_identity: true,
            associated: true,
            assume_role: true,
            env_role: true,
            want: (0, Some("AssumeRole"), "ASIANODEASSUMED"),
        },
        Row {
            what: "no token, no --assume-role: the node despite the flag",
            token: false,
            annotations: &plain,
            pod_identity: true,
            associated: true,
            assume_role: false,
            env_role: true,
            want: (0, None, "AKIDTESTSTATIC"),
        },
    ];
    for row in rows {
        let aws = if row.associated {
            Aws::ok()
        } else {
            Aws::no_association()
        };
        let mut p = aws.plugin();
        if row.pod_identity {
            p = p.args([flag()]);
        }
        if row.assume_role {
            p = p.args([assume.clone()]);
        }
        if row.env_role {
            p = p.env("AWS_ECR_ROLE_ARN", ENV_ROLE);
        }
        let token = row.token.then_some(token.as_str());
        p.request_with_token(ApiVersion::V1, PRIVATE_HOST, token, row.annotations)
            .accepted();
        let sts = aws.sts.requests();
        let action = sts.first().map(|r| {
            form(r)
                .into_iter()
                .find(|(k, _)| k == "Action")
                .map(|(_, v)| v)
                .unwrap()
        });
        assert_eq!(
            (
                aws.eks.requests().len(),
                action.as_deref(),
                aws.ecr_key().as_str()
            ),
            row.want,
            "{}",
            row.what
        );
        assert!(sts.len() <= 1, "{}", row.what);
    }
}

#[test]
fn the_cache_key_is_the_cluster_and_service_account_never_a_secret() {
    let aws = Aws::ok();
    let dir = TempDir::new("ecr-pod-identity");
    let cache = format!("--token-cache-dir={}", dir.path().join("cache").display());
    let p = aws.plugin().args([flag(), cache.clone()]);
    let none = BTreeMap::new();
    let first = pod_token("puller", "uid-1");
    // Another pod of the same account: its token differs, its entry does not.
    let same_account =
        service_account_token("pods.eks.amazonaws.com", "team", "puller", "uid-1", "pod-b");
    for token in [&first, &same_account] {
        p.request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(token), &none)
            .accepted();
    }
    assert_eq!((aws.eks.requests().len(), aws.ecr.requests().len()), (1, 1));
    // Another account, and the same account in another cluster, are other identities.
    p.request_with_token(
        ApiVersion::V1,
        PRIVATE_HOST,
        Some(&pod_token("builder", "uid-2")),
        &none,
    )
    .accepted();
    aws.plugin()
        .args(["--eks-pod-identity-cluster=staging".to_owned(), cache])
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&first), &none)
        .accepted();
    assert_eq!((aws.eks.requests().len(), aws.ecr.requests().len()), (3, 3));
    for entry in cache_entries(&dir.path().join("cache"), 3) {
        for secret in [POD_IDENTITY_SECRET_KEY, POD_IDENTITY_SESSION_TOKEN, CLUSTER] {
            assert!(!entry.text.contains(secret), "{secret} in {}", entry.text);
        }
        for part in first.split('.') {
            assert!(
                !entry.text.contains(part),
                "a piece of the SA token is on disk"
            );
        }
    }
}

#[test]
fn no_secret_reaches_stderr_at_the_highest_verbosity() {
    let aws = Aws::ok();
    let token = pod_token("puller", "uid-1");
    let out = aws
        .plugin()
        .args([flag(), "--v=10".to_owned()])
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&token), &BTreeMap::new());
    out.accepted();
    let stderr = out.stderr();
    assert!(stderr.lines().count() > 20, "trace logging is on");
    assert!(stderr.contains("EKS Pod Identity"), "{stderr}");
    for secret in [
        token.as_str(),
        POD_IDENTITY_SECRET_KEY,
        POD_IDENTITY_SESSION_TOKEN,
        "static-secret-key-value",
        "pod-identity-pull",
    ] {
        assert!(!stderr.contains(secret), "{secret:?} leaked to stderr");
    }
    kcp_testkit::secrets::assert_no_leak(&stderr, "stderr at --v=10");
}

#[test]
fn a_bad_cluster_name_stops_the_provider_at_start() {
    for bad in [
        "--eks-pod-identity-cluster=a/b",
        "--eks-pod-identity-cluster=arn:aws:eks:us-west-2:123456789012:cluster/prod",
    ] {
        let out = plugin().args([bad]).request(ApiVersion::V1, PRIVATE_HOST);
        assert_eq!(out.exec.exit_code, Some(2), "{bad}");
        let line = out.rejected();
        assert!(line.contains("is not an EKS cluster name"), "{line}");
    }
}

/// EKS Auth is called in the cluster's region when `--eks-pod-identity-region` names it (a
/// registry in another region, ECR Public), in the registry's region otherwise.
#[test]
fn eks_auth_follows_the_clusters_region_when_given() {
    let token = pod_token("puller", "uid-1");
    let none = BTreeMap::new();
    let aws = Aws::ok();
    aws.plugin()
        .args([flag(), "--eks-pod-identity-region=eu-central-1".to_owned()])
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&token), &none)
        .accepted();
    aws.plugin()
        .args([flag()])
        .env("ECR_EKS_POD_IDENTITY_REGION", "ap-south-1")
        .request_with_token(ApiVersion::V1, PRIVATE_HOST, Some(&token), &none)
        .accepted();
    let regions: Vec<String> = aws
        .eks
        .requests()
        .iter()
        .map(|r| sigv4_scope(r).unwrap().1)
        .collect();
    assert_eq!(regions, ["eu-central-1", "ap-south-1"]);
    for r in aws.ecr.requests() {
        assert_eq!(
            sigv4_scope(&r),
            Some(("ASIAPODIDENTITY".into(), "us-west-2".into(), "ecr".into()))
        );
    }

    // ECR Public: its API in us-east-1, the exchange in the cluster's region.
    let public = FakeServer::start(|_| public_token("AWS:public-pod", unix_now() + 12 * 3600));
    let aws = Aws::ok();
    let ok = aws
        .plugin()
        .env("AWS_ENDPOINT_URL_ECR_PUBLIC", public.url())
        .args([flag(), "--eks-pod-identity-region=eu-west-1".to_owned()])
        .request_with_token(
            ApiVersion::V1,
            "public.ecr.aws/team/app",
            Some(&token),
            &none,
        )
        .accepted();
    assert_eq!(ok.auth["public.ecr.aws"].1, "public-pod");
    assert_eq!(sigv4_scope(&aws.eks.requests()[0]).unwrap().1, "eu-west-1");
    assert_eq!(
        sigv4_scope(&public.requests()[0]),
        Some((
            "ASIAPODIDENTITY".into(),
            "us-east-1".into(),
            "ecr-public".into()
        ))
    );

    let out = plugin()
        .args(["--eks-pod-identity-region=eu-west-1"])
        .request(ApiVersion::V1, PRIVATE_HOST);
    assert_eq!(out.exec.exit_code, Some(2));
    assert!(
        out.rejected()
            .contains("--eks-pod-identity-region needs --eks-pod-identity-cluster")
    );
}
