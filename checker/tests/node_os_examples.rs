//! The node OS examples of docs/install.md (`testdata/node-os/`): the Talos machine config patches
//! and the Flatcar Butane config. Each holds a `CredentialProviderConfig`; it is taken out of the
//! example, must equal what `credential-provider-check init` prints for the options the example
//! names, and must pass `validate` with the bin dir as the extension lays it out: the workspace's
//! binaries put at the extension's path by `install --no-config` into a tree without a shell,
//! as `scripts/extensions` does. The kubelet flags, file paths and the extension's name in the
//! examples are checked against the constants of `scripts/extensions` and Talos's own paths.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use common::{check, provider_names, target_bin_dir, validate_clean};
use kcp_kubelet::yaml11;
use kcp_testkit::TempDir;
use serde_json::Value;

/// Talos's kubelet config file, where machined writes the credential provider config
/// (`KubernetesConfigBaseDir` + `kubelet-credentialproviderconfig.yaml`).
const TALOS_CONFIG: &str = "/etc/kubernetes/kubelet-credentialproviderconfig.yaml";
/// The options of `init` the Talos examples name in their comments.
const TALOS_INIT: [&str; 13] = [
    "--provider",
    "ecr,static",
    "--static-registry",
    "registry.example.com",
    "--static-username",
    "robot-puller",
    "--static-password-file",
    "/var/lib/kubelet/registry.example.com.password",
    "--bin-dir",
    "/usr/local/lib/kubelet/credentialproviders",
    "--config-path",
    TALOS_CONFIG,
    "--format=yaml",
];

fn skip(test: &str) -> bool {
    kcp_testkit::skip_on_windows(
        test,
        "the examples' bin dirs are laid out by install, which writes Linux trees here",
    )
}

fn example(name: &str) -> String {
    let path = common::configs_dir().join("../node-os").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each YAML document of `text` (separated by `---` lines) as JSON.
fn documents(text: &str) -> Vec<Value> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" {
            docs.push(String::new());
        } else {
            let last = docs.last_mut().unwrap();
            last.push_str(line);
            last.push('\n');
        }
    }
    docs.iter()
        .map(|d| {
            let parsed = yaml11::parse(d).unwrap();
            assert_eq!(parsed.strict_error(), None);
            yaml11::to_json(&parsed.root).unwrap()
        })
        .collect()
}

/// `VAR=value` of `scripts/extensions`, the script that builds the extensions.
fn extensions_script(var: &str) -> String {
    let path = common::workspace("scripts/extensions");
    let text = std::fs::read_to_string(&path).unwrap();
    let prefix = format!("{var}=");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {var}= in scripts/extensions"));
    line[prefix.len()..].trim_matches('\'').to_owned()
}

/// `init ARGS`' config, as JSON, and its text.
fn init(args: &[&str]) -> (Value, String) {
    let run = check([&["init"], args].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    (documents(&run.stdout).remove(0), run.stdout)
}

/// A tree without a shell holding the workspace's binaries of `providers` at the node path
/// `bin_dir`, laid out by `install` as `scripts/extensions` lays out an extension; the real
/// directory.
fn extension_tree(name: &str, providers: &str, bin_dir: &str) -> (TempDir, PathBuf) {
    let tree = TempDir::new(name);
    let run = common::install::run(
        tree.path(),
        &target_bin_dir(),
        [
            "--providers",
            providers,
            "--bin-dir",
            bin_dir,
            "--no-config",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let real = tree.path().join(bin_dir.trim_start_matches('/'));
    (tree, real)
}

/// `validate` of `config` (JSON or YAML text) with the kubelet's start-up checks on `bin_dir`:
/// no error, no warning; the providers' names.
fn validate(dir: &Path, config: &str, bin_dir: &Path) -> Vec<String> {
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    provider_names(&validate_clean(&path, bin_dir))
}

/// The parts of a Talos patch's v1alpha1 document every Talos version shares: the installer, the
/// kubelet flags (Talos's own paths and the extension's bin dir), and the password file under
/// /var (the only place `machine.files` writes) that the static provider reads.
fn check_talos_machine(machine: &Value, config: &Value) {
    let bin_dir = extensions_script("TALOS_BIN_DIR");
    assert_eq!(bin_dir, "/usr/local/lib/kubelet/credentialproviders");
    let args = &machine["kubelet"]["extraArgs"];
    assert_eq!(args["image-credential-provider-bin-dir"], bin_dir.as_str());
    assert_eq!(args["image-credential-provider-config"], TALOS_CONFIG);
    assert!(
        machine["install"]["image"]
            .as_str()
            .is_some_and(|i| i.contains("installer")),
        "{machine}"
    );
    let files = machine["files"].as_array().unwrap();
    let static_args = config["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "static-credential-provider")
        .map(|p| p["args"].clone())
        .unwrap();
    for file in files {
        let path = file["path"].as_str().unwrap();
        assert!(
            path.starts_with("/var/"),
            "machine.files writes under /var only: {path}"
        );
        assert!(
            static_args
                .as_array()
                .unwrap()
                .contains(&Value::from(format!("--password-file={path}"))),
            "{path} is the file the static provider reads: {static_args}"
        );
    }
}

/// The example's comment names the `init` command its config comes from.
fn names_init_options(text: &str) {
    let comment: String = text.lines().filter(|l| l.starts_with('#')).collect();
    for option in &TALOS_INIT[..TALOS_INIT.len() - 1] {
        assert!(
            comment.contains(option),
            "the comment does not name {option}"
        );
    }
}

/// A Talos example whose comment names init's options: its `count` YAML documents.
fn talos_example(name: &str, count: usize) -> Vec<Value> {
    let text = example(name);
    names_init_options(&text);
    let docs = documents(&text);
    assert_eq!(docs.len(), count);
    docs
}

/// A Talos example's `config` (`what`: where it stands) is init's for [`TALOS_INIT`], its
/// `machine` settings go with it, and it passes `validate` with the extension's bin dir as
/// `install` lays it out in a tree named `tree`.
fn check_talos_config(what: &str, machine: &Value, config: &Value, tree: &str) {
    let (want, _) = init(&TALOS_INIT);
    assert_eq!(config, &want, "{what} is init's");
    check_talos_machine(machine, config);
    let (tree, bin) = extension_tree(tree, "ecr,static", &extensions_script("TALOS_BIN_DIR"));
    assert_eq!(
        validate(tree.path(), &config.to_string(), &bin),
        ["ecr-credential-provider", "static-credential-provider"]
    );
}

/// Talos v1.11 to v1.13: `machine.kubelet.credentialProviderConfig`.
#[test]
fn talos_patch_config_is_inits_and_valid_with_the_extensions_bin_dir() {
    if skip("talos_patch_config_is_inits_and_valid_with_the_extensions_bin_dir") {
        return;
    }
    let docs = talos_example("talos-machine-patch.yaml", 1);
    let machine = &docs[0]["machine"];
    let config = &machine["kubelet"]["credentialProviderConfig"];
    check_talos_config("the patch's config", machine, config, "talos-example");
}

/// Talos v1.14 and later: the same config in a `KubeCredentialProviderConfig` document.
#[test]
fn talos_1_14_document_config_is_inits_and_valid_with_the_extensions_bin_dir() {
    if skip("talos_1_14_document_config_is_inits_and_valid_with_the_extensions_bin_dir") {
        return;
    }
    let docs = talos_example("talos-1.14-machine-patch.yaml", 2);
    let machine = &docs[0]["machine"];
    assert_eq!(machine["kubelet"].get("credentialProviderConfig"), None);
    let doc = &docs[1];
    assert_eq!(doc["apiVersion"], "v1alpha1");
    assert_eq!(doc["kind"], "KubeCredentialProviderConfig");
    let config = &doc["configuration"];
    check_talos_config(
        "the document's configuration",
        machine,
        config,
        "talos-1-14-example",
    );
}

/// The Butane config: the extension placed under /etc/extensions by its extension-release
/// name, the config file byte for byte what `init --provider ecr,gcr` prints, and the kubelet
/// flags of the drop-in naming that file and the extension's bin dir.
#[test]
fn flatcar_butane_config_is_inits_and_valid_with_the_extensions_bin_dir() {
    if skip("flatcar_butane_config_is_inits_and_valid_with_the_extensions_bin_dir") {
        return;
    }
    let docs = documents(&example("flatcar-butane.yaml"));
    assert_eq!(docs.len(), 1);
    let butane = &docs[0];
    assert_eq!(butane["variant"], "flatcar");
    let name = extensions_script("NAME");
    let bin_dir = extensions_script("FLATCAR_BIN_DIR");

    // The kubelet flags, from the drop-in's KUBELET_EXTRA_ARGS.
    let units = butane["systemd"]["units"].as_array().unwrap();
    let kubelet = units
        .iter()
        .find(|u| u["name"] == "kubelet.service")
        .unwrap();
    let dropin = kubelet["dropins"][0]["contents"].as_str().unwrap();
    let flag = |name: &str| -> String {
        let prefix = format!("--image-credential-provider-{name}=");
        let start = dropin
            .find(&prefix)
            .unwrap_or_else(|| panic!("{prefix} in {dropin}"));
        dropin[start + prefix.len()..]
            .split(['"', ' ', '\n'])
            .next()
            .unwrap()
            .to_owned()
    };
    assert!(
        dropin.starts_with("[Service]\nEnvironment=\"KUBELET_EXTRA_ARGS="),
        "{dropin}"
    );
    assert_eq!(flag("bin-dir"), bin_dir);
    let config_path = flag("config");

    // The files: the extension image and the config the flag names.
    let files = butane["storage"]["files"].as_array().unwrap();
    let file = |path: &str| files.iter().find(|f| f["path"] == path);
    let config_file =
        file(&config_path).unwrap_or_else(|| panic!("no {config_path} in storage.files"));
    let inline = config_file["contents"]["inline"].as_str().unwrap();
    let (_, want) = init(&["--provider", "ecr,gcr"]);
    assert_eq!(
        inline, want,
        "the config file is init's output, byte for byte"
    );
    assert!(
        want.contains(&format!(
            "--image-credential-provider-config={config_path}\n"
        )) && want.contains(&format!("--image-credential-provider-bin-dir={bin_dir}\n")),
        "init's generic paths are the drop-in's: {want}"
    );

    // /etc/extensions/<name>.raw, <name> being the extension-release name systemd-sysext checks,
    // linked to the downloaded image of this architecture.
    let links = butane["storage"]["links"].as_array().unwrap();
    let link = links
        .iter()
        .find(|l| {
            l["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/etc/extensions/"))
        })
        .unwrap();
    assert_eq!(link["path"], format!("/etc/extensions/{name}.raw").as_str());
    let target = link["target"].as_str().unwrap();
    let image = file(target)
        .unwrap_or_else(|| panic!("the link's target {target} is not in storage.files"));
    assert!(target.ends_with("-flatcar-amd64.raw"), "{target}");
    assert!(
        image["contents"]["source"]
            .as_str()
            .is_some_and(|s| s.ends_with(&format!("/{}", target.rsplit('/').next().unwrap()))),
        "{image}"
    );

    let (tree, bin) = extension_tree("flatcar-example", "ecr,gcr", &bin_dir);
    assert_eq!(
        validate(tree.path(), inline, &bin),
        ["ecr-credential-provider", "gcr-credential-provider"]
    );
}
