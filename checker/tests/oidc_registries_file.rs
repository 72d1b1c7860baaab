//! `validate` reads `oidc-credential-provider`'s registries file (the entry's `--config`, or its
//! `OIDC_CREDENTIAL_PROVIDER_CONFIG` env entry) with the provider's own rules: a file it refuses is
//! an argument error (exit 1) in both outputs, a file not on this machine is a note, and an entry
//! without a file is an argument error.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::Path;

use common::{check, messages, v1_config, validate};
use kcp_testkit::TempDir;

const GATE_NOTE: &str = "tokenAttributes needs the KubeletServiceAccountTokenForCredentialProviders gate (beta, on since 1.34); with it off the kubelet fails with \"providers.tokenAttributes: Forbidden: tokenAttributes is not supported when KubeletServiceAccountTokenForCredentialProviders feature gate is disabled\"";

/// An oidc entry whose registries file is named by `setting` (args or env lines).
fn config_with(setting: &str) -> String {
    v1_config(&format!(
        "  - name: oidc-credential-provider\n    matchImages: [\"quay.io\"]\n    defaultCacheDuration: 5m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n{setting}    tokenAttributes:\n      serviceAccountTokenAudience: quay.io\n      cacheType: Token\n      requireServiceAccount: true\n"
    ))
}

/// Writes the config (with `--config=<dir>/registries.yaml`) and, if given, the registries file.
fn setup(dir: &TempDir, registries: Option<&str>) -> (std::path::PathBuf, String) {
    let file = dir.path().join("registries.yaml").display().to_string();
    if let Some(text) = registries {
        std::fs::write(&file, text).unwrap();
    }
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        config_with(&format!("    args: [\"--config={file}\"]\n")),
    )
    .unwrap();
    (config, file)
}

const GOOD: &str =
    "registries:\n  - host: quay.io\n    protocol: quay-robot\n    robotAccount: acme+puller\n";

#[test]
fn a_good_registries_file_validates_clean() {
    let dir = TempDir::new("oidc-good");
    let (config, _) = setup(&dir, Some(GOOD));
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(report["valid"], true);
    assert!(messages(&report, "argumentErrors").is_empty(), "{report}");
    assert_eq!(messages(&report, "notes"), vec![GATE_NOTE.to_owned()]);
}

#[test]
fn a_bad_registries_file_is_an_argument_error_in_both_outputs() {
    let dir = TempDir::new("oidc-bad");
    let (config, file) = setup(
        &dir,
        Some(
            "registries:\n  - host: quay.io\n    protocol: quay-robot\n    robotAcount: acme+puller\n",
        ),
    );
    let want = format!(
        "registries file {file}: registries[0] (host \"quay.io\"): unknown field \"robotAcount\", expected \"robotAccount\" or \"robotAccountAnnotation\"; oidc-credential-provider refuses it and exits 2 on every exec"
    );
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(report["valid"], false);
    assert_eq!(report["kubeletError"], serde_json::Value::Null);
    assert_eq!(
        report["argumentErrors"][0]["provider"],
        "oidc-credential-provider"
    );
    assert_eq!(messages(&report, "argumentErrors"), vec![want.clone()]);

    let human = check(["validate".as_ref(), "--config".as_ref(), config.as_os_str()]);
    assert_eq!(human.code, 1);
    assert_eq!(human.stderr, "");
    assert_eq!(
        human.stdout,
        format!(
            "config: {} (1 provider)\n  ERR \"oidc-credential-provider\" (credentialprovider.kubelet.k8s.io/v1, 1 matchImages, defaultCacheDuration 5m0s), service-account tokens\nerror [oidc-credential-provider]: {want}\nnote [oidc-credential-provider]: {GATE_NOTE}\nresult: INVALID (the kubelet starts, but every exec of a plugin that refuses its args fails)\n",
            config.display()
        )
    );
}

/// Every problem of the file is reported, each naming its entry, in one finding.
#[test]
fn every_problem_of_the_file_is_named() {
    let dir = TempDir::new("oidc-many");
    let (config, file) = setup(
        &dir,
        Some(
            "registries:\n  - host: registry.acme.internal\n    protocol: token-exchange\n    endpoint: http://sso.acme.internal/token\n    username: oauth2\n  - host: harbor.acme.internal\n    protocol: passthrough\n",
        ),
    );
    let report = validate(&config).json();
    let errors = messages(&report, "argumentErrors");
    assert_eq!(errors.len(), 1, "{report}");
    let e = &errors[0];
    assert!(e.starts_with(&format!("registries file {file}: registries[0] (host \"registry.acme.internal\"): endpoint \"http://sso.acme.internal/token\" ")), "{e}");
    assert!(
        e.contains("; registries[1] (host \"harbor.acme.internal\"): missing field \"username\""),
        "{e}"
    );
}

#[test]
fn a_registries_file_not_on_this_machine_is_a_note() {
    let dir = TempDir::new("oidc-missing");
    let (config, file) = setup(&dir, None);
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert_eq!(
        messages(&report, "notes"),
        vec![
            GATE_NOTE.to_owned(),
            format!(
                "registries file {file} is not on this machine, so it was not checked: run validate where the kubelet runs (without it oidc-credential-provider exits 2 on every exec)"
            ),
        ]
    );
    assert!(messages(&report, "argumentErrors").is_empty());
}

/// The provider reads `OIDC_CREDENTIAL_PROVIDER_CONFIG` when args name no file; so does validate.
#[test]
fn the_env_entry_names_the_file_too() {
    let dir = TempDir::new("oidc-env");
    let file = dir.path().join("registries.yaml");
    std::fs::write(
        &file,
        "registries:\n  - host: quay.io\n    protocol: nope\n",
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        config_with(&format!(
            "    env:\n      - name: OIDC_CREDENTIAL_PROVIDER_CONFIG\n        value: {:?}\n",
            file.display().to_string()
        )),
    )
    .unwrap();
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        messages(&report, "argumentErrors"),
        vec![format!(
            "registries file {}: registries[0] (host \"quay.io\"): unknown protocol \"nope\": use one of passthrough, token-exchange, jfrog, quay-robot, cloudsmith, chainguard, ibm-iam; oidc-credential-provider refuses it and exits 2 on every exec",
            file.display()
        )]
    );
}

#[test]
fn an_entry_without_a_registries_file_is_an_argument_error() {
    let dir = TempDir::new("oidc-none");
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, config_with("")).unwrap();
    let run = validate(Path::new(&config));
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        messages(&report, "argumentErrors"),
        vec!["args: no --config: name the registries file (--config=FILE, or env OIDC_CREDENTIAL_PROVIDER_CONFIG); oidc-credential-provider exits 2 on every exec without it".to_owned()]
    );
}

/// An `ibm-iam` entry names its trusted profile once: the docs' file validates clean, one with
/// both `profileId` and `profileName` is the provider's own refusal, as an argument error.
#[test]
fn ibm_iam_entries_are_checked_as_the_provider_checks_them() {
    let dir = TempDir::new("oidc-ibm");
    let (config, _) = setup(
        &dir,
        Some(
            "registries:\n  - host: icr.io\n    protocol: ibm-iam\n    profileId: Profile-6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d\n  - host: \"*.icr.io\"\n    protocol: ibm-iam\n    profileName: k8s-puller\n",
        ),
    );
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    assert!(messages(&report, "argumentErrors").is_empty(), "{report}");

    let dir = TempDir::new("oidc-ibm-both");
    let (config, file) = setup(
        &dir,
        Some(
            "registries:\n  - host: icr.io\n    protocol: ibm-iam\n    profileId: Profile-1\n    profileName: k8s-puller\n",
        ),
    );
    let run = validate(&config);
    let report = run.json();
    assert_eq!(run.code, 1, "{report}");
    assert_eq!(
        messages(&report, "argumentErrors"),
        vec![format!(
            "registries file {file}: registries[0] (host \"icr.io\"): set either \"profileId\" or \"profileName\" (the trusted profile), not both; oidc-credential-provider refuses it and exits 2 on every exec"
        )]
    );
}
