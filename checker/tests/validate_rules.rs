//! Every validation rule of docs/kubelet-contract.md “Config validation” with the kubelet's exact message, and the
//! kubelet's aggregation of several.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{messages, v1_config, validate};
use kcp_testkit::TempDir;

const V1: &str = "credentialprovider.kubelet.k8s.io/v1";

/// One provider with every required field; `extra` lines are appended (4-space indented).
fn provider(name: &str, api: &str, extra: &str) -> String {
    let mut p = format!("  - name: {name:?}\n    matchImages: [\"registry.example.com\"]\n");
    if !api.is_empty() {
        p.push_str(&format!("    apiVersion: {api}\n"));
    }
    p.push_str(extra);
    if !extra.contains("defaultCacheDuration") {
        p.push_str("    defaultCacheDuration: 1m\n");
    }
    p
}

fn errors_of(yaml: &str) -> (i32, Vec<String>, serde_json::Value) {
    let dir = TempDir::new("rules");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    let run = validate(&path);
    let report = run.json();
    (run.code, messages(&report, "errors"), report)
}

fn assert_only_error(yaml: &str, want: &str) {
    let (code, errors, report) = errors_of(yaml);
    assert_eq!(errors, vec![want.to_owned()], "report: {report}");
    assert_eq!(code, 1);
    assert_eq!(
        report["kubeletError"].as_str(),
        Some(format!("failed to validate credential provider config: {want}").as_str())
    );
}

fn token_attrs(body: &str) -> String {
    format!("    tokenAttributes:\n{body}")
}

const TA_OK: &str = "      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n      cacheType: Token\n";

#[test]
fn rule_01_providers_required() {
    assert_only_error(
        &v1_config("  []\n").replace("providers:\n  []", "providers: []"),
        "providers: Required value: at least 1 item in plugins is required",
    );
}

#[test]
fn rules_02_to_05_provider_names() {
    for (name, detail) in [
        ("foo/../bar", "provider name cannot contain '/'"),
        ("foo bar", "provider name cannot contain spaces"),
        (".", "provider name cannot be '.'"),
        ("..", "provider name cannot be '..'"),
    ] {
        assert_only_error(
            &v1_config(&provider(name, V1, "")),
            &format!("providers.name: Invalid value: {name:?}: {detail}"),
        );
    }
}

#[test]
fn rule_06_duplicate_names() {
    // Only 1.33 reaches this rule: 1.34+ refuses the name while reading the config, older
    // kubelets at registration (tests/kubelet_versions.rs).
    let providers = provider("foobar", V1, "") + &provider("foobar", V1, "");
    let dir = TempDir::new("rules");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, v1_config(&providers)).unwrap();
    let report =
        common::validate_with(&path, &["--kubelet-version".as_ref(), "1.33".as_ref()]).json();
    assert_eq!(
        report["kubeletError"],
        "failed to validate credential provider config: providers.name: Duplicate value: \"foobar\""
    );
    let (code, _, report) = errors_of(&v1_config(&providers));
    assert_eq!(code, 1);
    assert_eq!(
        report["kubeletError"],
        "duplicate provider name \"foobar\" found in configuration file(s)"
    );
}

#[test]
fn rules_07_08_api_version() {
    assert_only_error(
        &v1_config(&provider("p", "", "")),
        "providers.apiVersion: Required value",
    );
    assert_only_error(
        &v1_config(&provider(
            "p",
            "credentialprovider.kubelet.k8s.io/v1alpha0",
            "",
        )),
        "providers.apiVersion: Unsupported value: \"credentialprovider.kubelet.k8s.io/v1alpha0\": supported values: \"credentialprovider.kubelet.k8s.io/v1\", \"credentialprovider.kubelet.k8s.io/v1alpha1\", \"credentialprovider.kubelet.k8s.io/v1beta1\"",
    );
}

#[test]
fn rules_09_10_match_images() {
    let empty = provider("p", V1, "").replace(
        "    matchImages: [\"registry.example.com\"]\n",
        "    matchImages: []\n",
    );
    assert_only_error(
        &v1_config(&empty),
        "providers.matchImages: Required value: at least 1 item in matchImages is required",
    );
    let invalid = provider("p", V1, "").replace("registry.example.com", "%invalid%");
    assert_only_error(
        &v1_config(&invalid),
        "providers.matchImages: Invalid value: \"%invalid%\": match image is invalid: parse \"https://%invalid%\": invalid URL escape \"%in\"",
    );
}

#[test]
fn rules_11_12_default_cache_duration() {
    let none = provider("p", V1, "    defaultCacheDuration: null\n");
    assert_only_error(
        &v1_config(&none),
        "providers.defaultCacheDuration: Required value",
    );
    let negative = provider("p", V1, "    defaultCacheDuration: -1m\n");
    assert_only_error(
        &v1_config(&negative),
        "providers.defaultCacheDuration: Invalid value: \"-1m0s\": must be greater than or equal to 0",
    );
}

#[test]
fn rule_13_gate_is_reported_as_a_note() {
    // The gate cannot be read from a config; the checker assumes it on (1.34+ default) and
    // says what the kubelet would print with it off.
    let (code, errors, report) = errors_of(&v1_config(&provider("p", V1, &token_attrs(TA_OK))));
    assert!(errors.is_empty(), "{report}");
    assert_eq!(code, 0);
    assert!(messages(&report, "notes").iter().any(|n| n.contains(
        "providers.tokenAttributes: Forbidden: tokenAttributes is not supported when KubeletServiceAccountTokenForCredentialProviders feature gate is disabled"
    )));
}

#[test]
fn rules_14_15_audience_and_require_service_account() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs("      requireServiceAccount: true\n      cacheType: Token\n"),
        )),
        "providers.tokenAttributes.serviceAccountTokenAudience: Required value",
    );
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs("      serviceAccountTokenAudience: aud\n      cacheType: Token\n"),
        )),
        "providers.tokenAttributes.requireServiceAccount: Required value",
    );
}

#[test]
fn rule_16_token_attributes_need_a_v1_provider() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            "credentialprovider.kubelet.k8s.io/v1beta1",
            &token_attrs(TA_OK),
        )),
        "providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version",
    );
}

#[test]
fn rule_17_required_keys_need_require_service_account() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs(
                "      serviceAccountTokenAudience: aud\n      requireServiceAccount: false\n      cacheType: Token\n      requiredServiceAccountAnnotationKeys: [domain.io/id]\n",
            ),
        )),
        "providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set",
    );
}

#[test]
fn rule_18_keys_are_qualified_names() {
    for list in [
        "requiredServiceAccountAnnotationKeys",
        "optionalServiceAccountAnnotationKeys",
    ] {
        assert_only_error(
            &v1_config(&provider(
                "p",
                V1,
                &token_attrs(&format!("{TA_OK}      {list}: [cantendwithadash-]\n")),
            )),
            &format!(
                "providers.tokenAttributes.{list}: Invalid value: \"cantendwithadash-\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ),
        );
    }
    // Checked lower-cased: an upper-case prefix is fine.
    let (_, errors, _) = errors_of(&v1_config(&provider(
        "p",
        V1,
        &token_attrs(&format!(
            "{TA_OK}      optionalServiceAccountAnnotationKeys: [Domain.IO/Id]\n"
        )),
    )));
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn rule_19_no_duplicate_keys() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs(&format!(
                "{TA_OK}      requiredServiceAccountAnnotationKeys: [now-with-dashes/simple, now-with-dashes/simple]\n"
            )),
        )),
        "providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: \"now-with-dashes/simple\"",
    );
}

#[test]
fn rule_20_required_and_optional_are_disjoint() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs(&format!(
                "{TA_OK}      requiredServiceAccountAnnotationKeys: [now-with-dashes/simple-1, now-with-dashes/simple-2]\n      optionalServiceAccountAnnotationKeys: [now-with-dashes/simple-2]\n"
            )),
        )),
        "providers.tokenAttributes: Invalid value: []string{\"now-with-dashes/simple-2\"}: annotation keys cannot be both required and optional",
    );
}

#[test]
fn rules_21_22_cache_type() {
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs(
                "      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n",
            ),
        )),
        "providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token",
    );
    assert_only_error(
        &v1_config(&provider(
            "p",
            V1,
            &token_attrs(
                "      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n      cacheType: invalid-cache-type\n",
            ),
        )),
        "providers.tokenAttributes.cacheType: Unsupported value: \"invalid-cache-type\": supported values: \"ServiceAccount\", \"Token\"",
    );
    // Case-sensitive.
    let (_, errors, _) = errors_of(&v1_config(&provider(
        "p",
        V1,
        &token_attrs(
            "      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n      cacheType: token\n",
        ),
    )));
    assert_eq!(errors.len(), 1);
}

#[test]
fn several_errors_are_aggregated_in_order_and_deduplicated() {
    let providers =
        provider("a b", "", "    defaultCacheDuration: null\n") + &provider("c d", "", "");
    let (code, _, report) = errors_of(&v1_config(&providers));
    assert_eq!(code, 1);
    assert_eq!(
        report["kubeletError"].as_str().unwrap(),
        "failed to validate credential provider config: [providers.name: Invalid value: \"a b\": provider name cannot contain spaces, providers.apiVersion: Required value, providers.defaultCacheDuration: Required value, providers.name: Invalid value: \"c d\": provider name cannot contain spaces]"
    );
}

#[test]
fn bin_dir_checks_follow_kubelet_registration() {
    if kcp_testkit::skip_on_windows(
        "bin_dir_checks_follow_kubelet_registration",
        "it plants shell scripts and non-executable files; Windows has no executable bit",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("bindir");
    let cfg = dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        v1_config(
            &(provider("present", V1, "")
                + &provider("missing", V1, "")
                + &provider("noexec", V1, "")),
        ),
    )
    .unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    common::write_script(&bin.join("present"), "exit 0");
    std::fs::write(bin.join("noexec"), "x").unwrap();
    std::fs::set_permissions(bin.join("noexec"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = common::check([
        "validate".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "--bin-dir".as_ref(),
        bin.as_os_str(),
    ]);
    assert_eq!(run.code, 1);
    let reg = messages(&run.json(), "registrationErrors");
    assert_eq!(reg.len(), 2, "{reg:?}");
    assert_eq!(
        reg[0],
        format!(
            "plugin binary executable {} did not exist",
            bin.join("missing").display()
        )
    );
    assert!(
        reg[1].starts_with("error inspecting binary executable")
            && reg[1].contains("permission denied")
    );
    let gone = dir.path().join("nope");
    let run = common::check([
        "validate".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "--bin-dir".as_ref(),
        gone.as_os_str(),
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains(&format!(
        "plugin binary directory {} did not exist",
        gone.display()
    )));
}

/// Not a kubelet rule: a `--registry-mirror` source the provider's `matchImages` does not let
/// through is never answered, so `validate` warns (the config stays valid).
#[test]
fn mirror_sources_outside_match_images_are_warned_about() {
    let yaml = v1_config(&provider(
        "ecr-credential-provider",
        V1,
        "    args:\n      - get-credentials\n      - --registry-mirror=docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com,registry.example.com:123456789012.dkr.ecr.us-west-2.amazonaws.com\n      - -r\n      - quay.io:123456789012.dkr.ecr.us-west-2.amazonaws.com\n",
    ));
    let (code, errors, report) = errors_of(&yaml);
    assert_eq!((code, errors), (0, vec![]), "{report}");
    assert_eq!(
        messages(&report, "warnings"),
        vec![
            "--registry-mirror source \"docker.io\" is not covered by matchImages, so the kubelet never runs the plugin for its images; add \"docker.io\" to matchImages".to_owned(),
            "--registry-mirror source \"quay.io\" is not covered by matchImages, so the kubelet never runs the plugin for its images; add \"quay.io\" to matchImages".to_owned(),
        ],
        "{report}"
    );
}
