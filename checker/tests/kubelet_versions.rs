//! `validate --kubelet-version X.Y [--feature-gates ...]` and the same on `run`: the config judged
//! as that kubelet does (docs/kubelet-contract.md, “Kubelet versions”).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::Path;

use common::{Run, check, messages, v1_config, write_script};
use kcp_testkit::TempDir;

const GATE: &str = "KubeletServiceAccountTokenForCredentialProviders";

/// A provider with every field 1.26 knows; `extra` lines are appended (4-space indented).
fn provider(extra: &str) -> String {
    format!(
        "  - name: p\n    matchImages: [\"registry.example.com\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 1m\n{extra}"
    )
}

const TA: &str = "    tokenAttributes:\n      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n";
const TA_CACHE: &str = "    tokenAttributes:\n      serviceAccountTokenAudience: aud\n      requireServiceAccount: true\n      cacheType: Token\n";

fn validate_as(path: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "validate".to_owned(),
        "--output".into(),
        "json".into(),
        "--config".into(),
        path.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    check(args)
}

/// Exit code and the kubelet's one line (`kubeletError`) for `yaml` judged with `extra` flags.
fn judge(yaml: &str, extra: &[&str]) -> (i32, Option<String>, serde_json::Value) {
    let dir = TempDir::new("versions");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    let run = validate_as(&path, extra);
    assert_eq!(run.stderr, "", "stderr of a finished validate");
    let report = run.json();
    (
        run.code,
        report["kubeletError"].as_str().map(str::to_owned),
        report,
    )
}

fn version(v: &str) -> [&str; 2] {
    ["--kubelet-version", v]
}

#[test]
fn token_attributes_before_1_33_are_an_unknown_field() {
    let yaml = v1_config(&provider(TA_CACHE));
    for v in ["1.26", "1.32", "v1.32", "1.32.4", "v1.32.4"] {
        let (code, err, report) = judge(&yaml, &version(v));
        assert_eq!(code, 1, "{v}: {report}");
        assert_eq!(
            err.as_deref(),
            Some(r#"strict decoding error: unknown field "providers[0].tokenAttributes""#),
            "{v}"
        );
    }
    let (code, err, report) = judge(&yaml, &version("1.34"));
    assert_eq!((code, err), (0, None), "{report}");
    assert_eq!(
        messages(&report, "notes"),
        vec![format!(
            "judged as kubelet 1.34 with {GATE} on (its default)"
        )]
    );
}

#[test]
fn on_1_33_token_attributes_need_the_alpha_gate_and_cache_type_is_unknown() {
    let forbidden = format!(
        "failed to validate credential provider config: providers.tokenAttributes: Forbidden: tokenAttributes is not supported when {GATE} feature gate is disabled"
    );
    let yaml = v1_config(&provider(TA));
    let (code, err, _) = judge(&yaml, &version("1.33"));
    assert_eq!((code, err.as_deref()), (1, Some(forbidden.as_str())));

    let on = format!("{GATE}=true");
    let (code, err, report) = judge(
        &yaml,
        &["--kubelet-version", "1.33", "--feature-gates", &on],
    );
    assert_eq!((code, err), (0, None), "{report}");
    // What 1.33 accepts without cacheType stops 1.34: the upgrade trap stays a warning.
    assert_eq!(
        messages(&report, "warnings"),
        vec!["tokenAttributes without cacheType was accepted by kubelet 1.33 but stops a 1.34+ kubelet from starting (kubernetes/kubernetes#132617)".to_owned()]
    );
    assert_eq!(
        messages(&report, "notes"),
        vec![format!("judged as kubelet 1.33 with {GATE} on (as given)")]
    );

    let (code, err, _) = judge(
        &v1_config(&provider(TA_CACHE)),
        &["--kubelet-version", "1.33", "--feature-gates", &on],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err.as_deref(),
        Some(r#"strict decoding error: unknown field "providers[0].tokenAttributes.cacheType""#)
    );
}

#[test]
fn cache_type_is_required_from_1_34_and_the_gate_can_be_turned_off() {
    let required = "failed to validate credential provider config: providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token";
    for v in ["1.34", "1.35", "1.37"] {
        let (code, err, _) = judge(&v1_config(&provider(TA)), &version(v));
        assert_eq!((code, err.as_deref()), (1, Some(required)), "{v}");
    }
    let off = format!("{GATE}=false");
    let (code, err, _) = judge(
        &v1_config(&provider(TA_CACHE)),
        &["--kubelet-version", "1.35", "--feature-gates", &off],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err.as_deref(),
        Some(format!("failed to validate credential provider config: providers.tokenAttributes: Forbidden: tokenAttributes is not supported when {GATE} feature gate is disabled").as_str())
    );
    // The gate alone, on the newest kubelet.
    let (code, _, _) = judge(&v1_config(&provider(TA_CACHE)), &["--feature-gates", &off]);
    assert_eq!(code, 1);
}

#[test]
fn a_config_directory_needs_1_34() {
    let dir = TempDir::new("versions-dir");
    std::fs::write(dir.path().join("10-a.yaml"), v1_config(&provider(""))).unwrap();
    let path = dir.path().display().to_string();
    let run = validate_as(dir.path(), &version("1.33"));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.json()["kubeletError"].as_str(),
        Some(format!("unable to read external registry credential provider configuration from {path:?}: read {path}: is a directory").as_str())
    );
    let run = validate_as(dir.path(), &version("1.34"));
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["config"]["directory"], true);
}

#[test]
fn messages_before_1_34_repeat_the_field_name() {
    let yaml = v1_config(
        "  - name: p\n    matchImages: [\"registry.example.com\"]\n  - name: q\n    matchImages: [\"registry.example.com\"]\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: -1m\n",
    );
    let (_, old, _) = judge(&yaml, &version("1.33"));
    assert_eq!(
        old.as_deref(),
        Some(
            "failed to validate credential provider config: [providers.apiVersion: Required value: apiVersion is required, providers.defaultCacheDuration: Required value: defaultCacheDuration is required, providers.defaultCacheDuration: Invalid value: -1m0s: defaultCacheDuration must be greater than or equal to 0]"
        )
    );
    let (_, new, _) = judge(&yaml, &version("1.34"));
    assert_eq!(
        new.as_deref(),
        Some(
            "failed to validate credential provider config: [providers.apiVersion: Required value, providers.defaultCacheDuration: Required value, providers.defaultCacheDuration: Invalid value: \"-1m0s\": must be greater than or equal to 0]"
        )
    );
}

/// Every version from 1.26 to 1.37 against the rows of the table: what it says of each config.
#[test]
fn the_table_over_every_version() {
    let configs = [
        ("plain v1", v1_config(&provider(""))),
        (
            "v1alpha1",
            "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: CredentialProviderConfig\nproviders:\n"
                .to_owned()
                + &provider("").replace("credentialprovider.kubelet.k8s.io/v1\n", "credentialprovider.kubelet.k8s.io/v1alpha1\n"),
        ),
        ("tokens", v1_config(&provider(TA))),
        ("tokens+cacheType", v1_config(&provider(TA_CACHE))),
    ];
    for minor in 26..=37 {
        let v = format!("1.{minor}");
        let codes: Vec<i32> = configs
            .iter()
            .map(|(_, yaml)| judge(yaml, &version(&v)).0)
            .collect();
        let want = match minor {
            // tokenAttributes is an unknown field.
            26..=32 => [0, 0, 1, 1],
            // Known, but the alpha gate is off.
            33 => [0, 0, 1, 1],
            // Beta gate on; cacheType required.
            _ => [0, 0, 1, 0],
        };
        assert_eq!(
            codes,
            want,
            "kubelet {v}: {:?}",
            configs.iter().map(|c| c.0).collect::<Vec<_>>()
        );
    }
}

#[test]
fn versions_and_gates_outside_the_table_are_usage_errors() {
    let dir = TempDir::new("versions-usage");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, v1_config(&provider(""))).unwrap();
    for v in ["1.25", "1.38", "2.0", "latest", "1.32.x"] {
        let run = validate_as(&path, &version(v));
        assert_eq!(run.code, 2, "{v}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!(
                "credential-provider-check: --kubelet-version: expected 1.X or 1.X.Y (optionally with a leading v) with X from 26 to 37, got {v:?}\n"
            )
        );
    }
    let run = validate_as(&path, &["--feature-gates", "oops"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "credential-provider-check: --feature-gates: expected Name=true|false[,Name=true|false...], got \"oops\"\n"
    );
    let on = format!("{GATE}=true");
    let run = validate_as(
        &path,
        &["--kubelet-version", "1.32", "--feature-gates", &on],
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("unrecognized feature gate"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_judges_the_config_as_the_given_kubelet_before_any_exec() {
    if kcp_testkit::skip_on_windows(
        "run_judges_the_config_as_the_given_kubelet_before_any_exec",
        "its fake plugin is a shell script",
    ) {
        return;
    }
    let dir = TempDir::new("versions-run");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let marker = dir.path().join("ran");
    write_script(
        &bin.join("p"),
        &format!(
            "touch {}\necho '{{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\",\"auth\":{{\"registry.example.com\":{{\"username\":\"u\",\"password\":\"p\"}}}}}}'",
            marker.display()
        ),
    );
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, v1_config(&provider(TA_CACHE))).unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "tok").unwrap();
    let args = |v: &str| {
        vec![
            "run".to_owned(),
            "--output".into(),
            "json".into(),
            "--config".into(),
            config.display().to_string(),
            "--bin-dir".into(),
            bin.display().to_string(),
            "--sa-token".into(),
            token.display().to_string(),
            "--kubelet-version".into(),
            v.into(),
            "registry.example.com/app".into(),
        ]
    };
    let old = check(args("1.32"));
    assert_eq!(old.code, 1, "{}", old.stdout);
    assert_eq!(
        old.json()["kubeletError"].as_str(),
        Some(r#"strict decoding error: unknown field "providers[0].tokenAttributes""#)
    );
    assert!(
        !marker.exists(),
        "no plugin runs when the kubelet would not start"
    );
    let new = check(args("1.34"));
    assert_eq!(new.code, 0, "{}", new.stdout);
    assert!(marker.exists());
}

/// Two providers named `p` in one file, each with every field it needs.
fn twice() -> String {
    v1_config(&(provider("") + &provider("")))
}

#[test]
fn a_repeated_name_kills_kubelets_before_1_33_at_registration() {
    for v in ["1.26", "1.32", "v1.32.4"] {
        let (code, err, report) = judge(&twice(), &version(v));
        assert_eq!((code, err), (1, None), "{v}: validation passes: {report}");
        assert_eq!(report["valid"], false, "{v}");
        assert_eq!(report["kubeletExit"], 255, "{v}");
        assert_eq!(
            report["registrationFatal"], "Credential provider \"p\" was registered twice",
            "{v}"
        );
        assert_eq!(report["errors"], serde_json::json!([]), "{v}");
    }
    // For people: the line the kubelet dies with and its exit status.
    let dir = TempDir::new("versions-twice");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, twice()).unwrap();
    let run = check([
        "validate",
        "--config",
        path.to_str().unwrap(),
        "--kubelet-version",
        "1.32",
    ]);
    assert_eq!(run.code, 1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    for want in [
        "error: Credential provider \"p\" was registered twice",
        "kubelet would log: Credential provider \"p\" was registered twice",
        "result: INVALID (the kubelet passes validation, then dies at registration with exit status 255)",
    ] {
        assert!(
            lines.contains(&want),
            "{want:?} missing from:\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_missing_binary_before_the_repeat_stops_a_1_32_kubelet_first() {
    let dir = TempDir::new("versions-twice-bin");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, twice()).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // `kubeletExit` and `registrationFatal` for the config judged as 1.32 with `bin` as bin dir.
    let judge = || {
        let bin = bin.display().to_string();
        let run = validate_as(&path, &["--kubelet-version", "1.32", "--bin-dir", &bin]);
        assert_eq!(run.code, 1);
        let report = run.json();
        (
            report["kubeletExit"].clone(),
            report["registrationFatal"].clone(),
        )
    };
    let fatal = serde_json::json!("Credential provider \"p\" was registered twice");
    assert_eq!(judge(), (serde_json::json!(1), serde_json::Value::Null));
    // With the binary in place, the second `p` is what stops it.
    write_script(&bin.join(common::exe("p")), "exit 0");
    assert_eq!(judge(), (serde_json::json!(255), fatal));
}

#[test]
fn a_repeated_name_fails_1_33_validation_and_the_1_34_reader() {
    let (code, err, report) = judge(&twice(), &version("1.33"));
    assert_eq!(code, 1);
    assert_eq!(
        err.as_deref(),
        Some(
            "failed to validate credential provider config: providers.name: Duplicate value: \"p\""
        )
    );
    assert_eq!(report["kubeletExit"], 1);
    assert_eq!(report["registrationFatal"], serde_json::Value::Null);
    // From 1.34 the reader refuses it, in one file as in a directory, before any validation;
    // without a version the newest kubelet is judged.
    let reader = "duplicate provider name \"p\" found in configuration file(s)";
    for extra in [&version("1.34")[..], &version("1.37"), &[]] {
        let (code, err, report) = judge(&twice(), extra);
        assert_eq!((code, err.as_deref()), (1, Some(reader)), "{extra:?}");
        assert_eq!(report["loadError"]["message"], reader, "{extra:?}");
    }
}
