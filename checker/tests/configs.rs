//! Fixtures: the workspace's example configs and the real ones under testdata/configs/real/
//! validate clean; every broken one fails with the message its `# expect-…` header names;
//! directory mode follows kubelet 1.34 (sorted, merged, duplicate names rejected).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use common::{configs_dir, messages, v1_config, validate};
use kcp_testkit::TempDir;

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn assert_clean(dir: &Path, at_least: usize) {
    let files = files_in(dir);
    assert!(
        files.len() >= at_least,
        "{} has {} files",
        dir.display(),
        files.len()
    );
    for file in files {
        let run = validate(&file);
        let report = run.json();
        assert_eq!(run.code, 0, "{}: {report}", file.display());
        assert_eq!(report["valid"], true);
        assert!(messages(&report, "errors").is_empty());
        assert!(
            messages(&report, "warnings").is_empty(),
            "{}: {report}",
            file.display()
        );
    }
}

#[test]
fn workspace_examples_validate_clean() {
    assert_clean(&configs_dir(), 6);
}

#[test]
fn real_configs_from_the_ecosystem_validate_clean() {
    assert_clean(&configs_dir().join("real"), 15);
}

#[test]
fn broken_configs_fail_with_the_expected_message() {
    let files = files_in(&configs_dir().join("broken"));
    assert!(files.len() >= 10);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let run = validate(&file);
        let report = run.json();
        let name = file.display();
        let mut checked = 0;
        for line in text.lines() {
            if let Some(want) = line.strip_prefix("# expect-kubelet: ") {
                assert_eq!(report["kubeletError"].as_str(), Some(want), "{name}");
                assert_eq!(run.code, 1, "{name}");
                checked += 1;
            } else if let Some(want) = line.strip_prefix("# expect-load: ") {
                assert_eq!(
                    report["loadError"]["message"].as_str(),
                    Some(want),
                    "{name}"
                );
                assert_eq!(run.code, 1, "{name}");
                checked += 1;
            } else if let Some(want) = line.strip_prefix("# expect-warning: ") {
                assert!(
                    messages(&report, "warnings")
                        .iter()
                        .any(|w| w.contains(want)),
                    "{name}: {report}"
                );
                checked += 1;
            } else if line == "# expect-valid" {
                assert_eq!(run.code, 0, "{name}: {report}");
                checked += 1;
            }
        }
        assert!(checked > 0, "{name} has no # expect- header");
    }
}

#[test]
fn directory_mode_merges_sorted_files_of_the_three_extensions() {
    let dir = TempDir::new("dirmode");
    let one = |name: &str| {
        v1_config(&format!(
            "  - name: {name}\n    matchImages: [\"{name}.example.com\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        ))
    };
    std::fs::write(dir.path().join("20-b.yml"), one("b")).unwrap();
    std::fs::write(dir.path().join("10-a.yaml"), one("a")).unwrap();
    std::fs::write(
        dir.path().join("30-c.json"),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"CredentialProviderConfig","providers":[{"name":"c","matchImages":["c.example.com"],"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1"}]}"#,
    )
    .unwrap();
    // Ignored: other extensions and subdirectories.
    std::fs::write(dir.path().join("00-ignored.txt"), "not yaml: [").unwrap();
    std::fs::write(dir.path().join("40-backup.yaml.bak"), "not yaml: [").unwrap();
    std::fs::create_dir(dir.path().join("50-sub.yaml")).unwrap();
    let run = validate(dir.path());
    let report = run.json();
    assert_eq!(run.code, 0, "{report}");
    let names: Vec<&str> = report["config"]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(report["config"]["files"].as_array().unwrap().len(), 3);

    // A name repeated across files is rejected before validation.
    std::fs::write(dir.path().join("60-a-again.yaml"), one("a")).unwrap();
    let run = validate(dir.path());
    assert_eq!(run.code, 1);
    assert_eq!(
        run.json()["loadError"]["message"].as_str(),
        Some("duplicate provider name \"a\" found in configuration file(s)")
    );
}

#[test]
fn directory_mode_needs_a_config_file() {
    let dir = TempDir::new("emptydir");
    std::fs::write(dir.path().join("README.md"), "x").unwrap();
    let run = validate(dir.path());
    assert_eq!(run.code, 1);
    assert_eq!(
        run.json()["loadError"]["message"].as_str().unwrap(),
        format!(
            "no configuration files found in directory {:?}",
            dir.path().display().to_string()
        )
    );
}

#[test]
fn a_missing_path_is_reported() {
    let run = validate(Path::new("/nonexistent/credential-provider-config.yaml"));
    assert_eq!(run.code, 1);
    assert!(
        run.json()["loadError"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unable to access path \"/nonexistent/credential-provider-config.yaml\"")
    );
}

#[test]
fn the_whole_examples_directory_has_duplicate_names() {
    // testdata/configs holds several configs for the same plugin: as one directory the kubelet
    // would refuse it, and so must the checker.
    let run = validate(&configs_dir());
    assert_eq!(run.code, 1);
    assert!(
        run.json()["loadError"]["message"]
            .as_str()
            .unwrap()
            .starts_with("duplicate provider name \"acr-credential-provider\"")
    );
}

#[test]
fn human_output_names_errors_and_the_kubelet_line() {
    let run = common::check([
        "validate".as_ref(),
        "--config".as_ref(),
        configs_dir()
            .join("broken/k3s-three-errors.yaml")
            .as_os_str(),
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("error: providers.apiVersion: Required value\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("kubelet would log: failed to validate credential provider config: [")
    );
    assert!(run.stdout.contains("result: INVALID"));
}

/// issue #25 point 4: the kubelet reads YAML 1.1 scalars (sigs.k8s.io/yaml on go-yaml v2), so
/// `validate` judges unquoted `yes`, `on`, `0755` as it does: booleans and numbers.
#[test]
fn yaml_1_1_scalars_are_judged_as_the_kubelet_reads_them() {
    let dir = TempDir::new("yaml11");
    let provider = |attrs: &str, extra: &str| {
        v1_config(&format!(
            "  - name: p\n    matchImages: [\"registry.example.com\"]\n    defaultCacheDuration: 10m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n{extra}    tokenAttributes:\n      serviceAccountTokenAudience: aud\n      cacheType: Token\n      requireServiceAccount: {attrs}\n"
        ))
    };
    let check = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let run = validate(&path);
        let report = run.json();
        (run.code, report)
    };
    // Every YAML 1.1 spelling of a boolean is a boolean.
    for word in [
        "yes", "Yes", "YES", "y", "Y", "on", "On", "ON", "true", "True",
    ] {
        let (code, report) = check("bool.yaml", provider(word, ""));
        assert_eq!(code, 0, "{word}: {report}");
        assert_eq!(report["valid"], true, "{word}");
    }
    for word in ["no", "No", "n", "N", "off", "OFF", "false"] {
        let (code, report) = check("bool.yaml", provider(word, ""));
        assert_eq!(code, 0, "{word}: {report}");
    }
    // What the kubelet refuses, with its message.
    let refused = |name: &str, text: String| {
        let (code, report) = check(name, text);
        assert_eq!(code, 1, "{report}");
        report["loadError"]["message"].as_str().unwrap().to_owned()
    };
    let table = [
        // Quoted, it is a string, which the kubelet cannot store in a bool.
        (
            provider("\"yes\"", ""),
            "json: cannot unmarshal string into Go struct field ServiceAccountTokenAttributes.providers.tokenAttributes.requireServiceAccount of type bool",
        ),
        // A plain `1_000` is the number 1000 to the kubelet, not a string.
        (
            provider("true", "    args: [1_000]\n"),
            "json: cannot unmarshal number into Go struct field CredentialProvider.providers.args of type string",
        ),
        // `.inf` cannot become JSON at all: the conversion fails before any field is looked at.
        (
            provider("true", "    args: [.inf]\n"),
            "json: unsupported value: +Inf",
        ),
    ];
    for (text, want) in table {
        assert_eq!(refused("refused.yaml", text), want);
    }
    // A repeated key is kept (the last one wins) and refused by the strict pass, before the
    // unknown fields.
    assert_eq!(
        refused(
            "repeated.yaml",
            v1_config(
                "  - name: p\n    matchImages: [\"registry.example.com\"]\n    defaultCacheDuration: 10m\n    defaultCacheDuration: 1h\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    extra: 1\n",
            ),
        ),
        "strict decoding error: yaml: unmarshal errors:\n  line 7: key \"defaultCacheDuration\" already set in map, unknown field \"providers[0].extra\""
    );
}
