//! `validate` on alibaba-credential-provider's service-account mode (RRSA): the kubelet and the
//! provider accept these entries, but annotated pods would never pull as their role, so each gap
//! is a warning naming it: a token audience other than sts.aliyuncs.com, no RAM OIDC provider to
//! trade the token through, and a role annotation the kubelet does not forward.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{check, messages, v1_config};
use kcp_testkit::TempDir;

/// `validate --output json` of a config holding one alibaba entry with `args`, `env` and
/// `tokenAttributes` (YAML, already indented for the entry).
fn validate(dir: &TempDir, args: &str, rest: &str) -> serde_json::Value {
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        v1_config(&format!(
            "  - name: alibaba-credential-provider\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    matchImages: [\"registry*.*.aliyuncs.com\"]\n    defaultCacheDuration: 30m\n    args: {args}\n{rest}"
        )),
    )
    .unwrap();
    let run = check([
        "validate".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
    ]);
    let report = run.json();
    // Warnings never make a config invalid: the kubelet starts and the provider runs.
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["valid"], true, "{report}");
    report
}

fn tokens(audience: &str, keys: &str) -> String {
    format!(
        "    tokenAttributes:\n      serviceAccountTokenAudience: {audience}\n      cacheType: ServiceAccount\n      requireServiceAccount: false\n{keys}"
    )
}

const ROLE_KEY: &str =
    "      optionalServiceAccountAnnotationKeys: [\"pod-identity.alibabacloud.com/role-name\"]\n";
const ARN: &str = "--oidc-provider-arn=acs:ram::1234567890123456:oidc-provider/c";

#[test]
fn what_init_prints_has_no_warning() {
    let dir = TempDir::new("alibaba-entry-init");
    let init = check([
        "init",
        "--provider",
        "alibaba",
        "--service-account",
        "--alibaba-oidc-provider-arn",
        "acs:ram::1234567890123456:oidc-provider/c",
    ]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let path = dir.path().join("init.yaml");
    std::fs::write(&path, &init.stdout).unwrap();
    let report = common::validate(&path).json();
    assert_eq!(messages(&report, "warnings"), Vec::<String>::new());
    // Node mode: nothing to say either.
    let report = validate(&dir, "[get-credentials]", "");
    assert_eq!(messages(&report, "warnings"), Vec::<String>::new());
}

#[test]
fn each_rrsa_gap_is_one_warning() {
    let dir = TempDir::new("alibaba-entry-gaps");
    let report = validate(
        &dir,
        "[get-credentials]",
        &tokens("api://AzureADTokenExchange", ""),
    );
    assert_eq!(
        messages(&report, "warnings"),
        [
            "tokenAttributes.serviceAccountTokenAudience \"api://AzureADTokenExchange\": STS AssumeRoleWithOIDC accepts only audiences the RAM OIDC provider lists as client IDs, and RRSA's is sts.aliyuncs.com; unless you added \"api://AzureADTokenExchange\" there, every annotated pod fails to pull",
            "tokenAttributes without --oidc-provider-arn (or env ALIBABA_CLOUD_OIDC_PROVIDER_ARN): the provider has no RAM OIDC provider to trade a pod's token through, so annotated pods cannot pull as their role",
            "tokenAttributes does not forward the annotation \"pod-identity.alibabacloud.com/role-name\" (add it to optionalServiceAccountAnnotationKeys): the kubelet sends only listed annotations, so the provider never sees a pod's role and every pod pulls as the node",
        ]
    );
    let providers: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["alibaba-credential-provider"; 3]);
}

#[test]
fn the_arn_from_env_and_a_custom_role_annotation_count() {
    let dir = TempDir::new("alibaba-entry-custom");
    // The ARN from env, the role from another annotation that is forwarded (required keys count).
    let report = validate(
        &dir,
        "[get-credentials, --role-annotation-key=example.com/ram-role]",
        &format!(
            "    env:\n      - {{name: ALIBABA_CLOUD_OIDC_PROVIDER_ARN, value: \"acs:ram::1:oidc-provider/c\"}}\n{}",
            tokens(
                "sts.aliyuncs.com",
                "      requireServiceAccount: true\n      requiredServiceAccountAnnotationKeys: [\"example.com/ram-role\"]\n"
            )
            .replace("      requireServiceAccount: false\n", "")
        ),
    );
    assert_eq!(messages(&report, "warnings"), Vec::<String>::new());
    // The default key forwarded while the provider reads another: the role is never seen.
    let report = validate(
        &dir,
        &format!("[get-credentials, {ARN}, --role-annotation-key, example.com/ram-role]"),
        &tokens("sts.aliyuncs.com", ROLE_KEY),
    );
    assert_eq!(
        messages(&report, "warnings"),
        [
            "tokenAttributes does not forward the annotation \"example.com/ram-role\" (add it to optionalServiceAccountAnnotationKeys): the kubelet sends only listed annotations, so the provider never sees a pod's role and every pod pulls as the node"
        ]
    );
}
