//! `validate` on the `args` of this project's providers (issue #25): an arg the binary would
//! refuse is an error naming it and the closest known flag, and the flag tables the checker reads
//! (`kcp_provider_args::flags`) are exactly what the built binaries take.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::process::Command;

use common::{check, exe, messages, target_bin_dir, v1_config};
use kcp_provider_args::flags::{Kind, PROVIDERS};
use kcp_testkit::TempDir;

/// A config with five of our providers, each with `args` (YAML flow sequences).
fn config(
    dir: &TempDir,
    ecr: &str,
    acr: &str,
    gcr: &str,
    static_args: &str,
    alibaba: &str,
) -> std::path::PathBuf {
    let provider = |name: &str, image: &str, args: &str| {
        format!(
            "  - name: {name}\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    matchImages: [\"{image}\"]\n    defaultCacheDuration: 1h\n    args: {args}\n"
        )
    };
    let text = v1_config(
        &[
            provider("ecr-credential-provider", "*.dkr.ecr.*.amazonaws.com", ecr),
            provider("acr-credential-provider", "*.azurecr.io", acr),
            provider("gcr-credential-provider", "gcr.io", gcr),
            provider(
                "static-credential-provider",
                "registry.example.com",
                static_args,
            ),
            provider(
                "alibaba-credential-provider",
                "registry*.*.aliyuncs.com",
                alibaba,
            ),
        ]
        .concat(),
    );
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn validate(path: &std::path::Path, output: &str) -> common::Run {
    check([
        "validate".as_ref(),
        "--output".as_ref(),
        output.as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
    ])
}

#[test]
fn args_our_providers_refuse_are_errors_naming_the_flag() {
    let dir = TempDir::new("check-args");
    let path = config(
        &dir,
        r#"[get-credentials, --strict-host]"#,
        r#"[/etc/kubernetes/azure.json, "--registy-mirror=mcr.microsoft.com:x.azurecr.io"]"#,
        r#"[get-credentials, --logtostderr, --strict-hosts, "true", --bogus]"#,
        r#"[--registry=registry.example.com, --username=u, --password-file=/p, --usernam=v, get-credentials, extra]"#,
        r#"[get-credentials, --oidc-provider=acs:ram::1:oidc-provider/c, --instance]"#,
    );
    let run = validate(&path, "json");
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    assert_eq!(report["valid"], false);
    assert_eq!(
        report["kubeletError"],
        serde_json::Value::Null,
        "the kubelet itself starts"
    );
    let refuses =
        |binary: &str| format!("; {binary} refuses its arguments and exits 2 on every exec");
    assert_eq!(
        messages(&report, "argumentErrors"),
        vec![
            format!(
                "args: unknown flag --strict-host (did you mean --strict-hosts?){}",
                refuses("ecr-credential-provider")
            ),
            format!(
                "args: unknown flag --registy-mirror (did you mean --registry-mirror?){}",
                refuses("acr-credential-provider")
            ),
            format!(
                "args: unexpected argument \"true\" after --strict-hosts: a boolean flag takes its value as --strict-hosts=true{}",
                refuses("gcr-credential-provider")
            ),
            format!(
                "args: unknown flag --bogus{}",
                refuses("gcr-credential-provider")
            ),
            format!(
                "args: unknown flag --usernam (did you mean --username?){}",
                refuses("static-credential-provider")
            ),
            format!(
                "args: unknown flag --oidc-provider (did you mean --oidc-provider-arn?){}",
                refuses("alibaba-credential-provider")
            ),
            format!(
                "args: a value is required for '--instance' but none was supplied{}",
                refuses("alibaba-credential-provider")
            ),
        ]
    );
    let providers: Vec<&str> = report["argumentErrors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        providers,
        [
            "ecr-credential-provider",
            "acr-credential-provider",
            "gcr-credential-provider",
            "gcr-credential-provider",
            "static-credential-provider",
            "alibaba-credential-provider",
            "alibaba-credential-provider"
        ]
    );
    // Stray words are judged once the flags are right.
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("--usernam=v, ", ""),
    )
    .unwrap();
    let human = validate(&path, "human");
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains(&format!(
            "error [static-credential-provider]: args: unexpected argument \"extra\": this provider takes no arguments but get-credentials{}\n",
            refuses("static-credential-provider")
        )),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("  ERR \"ecr-credential-provider\""),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.ends_with(
            "result: INVALID (the kubelet starts, but every exec of a plugin that refuses its args fails)\n"
        ),
        "{}",
        human.stdout
    );
}

#[test]
fn good_args_of_our_providers_are_valid() {
    let dir = TempDir::new("check-args-ok");
    let path = config(
        &dir,
        r#"[get-credentials, --strict-hosts, -v, "4", "--registry-mirror=docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com"]"#,
        r#"[/etc/kubernetes/azure.json, --vmodule=x=2, --log-flush-frequency, 5s, -v=3, --service-principal-passthrough]"#,
        r#"[get-credentials, --v=3, --logtostderr, -stderrthreshold=INFO, --log_dir, /tmp, -a, gcr, --strict-hosts=false]"#,
        r#"[--registry=registry.example.com, --username=u, --password-file=/p, --logtostderr, --log-flush-frequency=1s, get-credentials]"#,
        r#"[get-credentials, --instance=r.example.com=cri-a, --instance, "r2.example.com=cri-b", --region=cn-hangzhou, --oidc-provider-arn=acs:ram::1:oidc-provider/c, --account-id=1, --role-annotation-key=x/y, --session-duration=1h, --metadata-endpoint=http://127.0.0.1:1, --sts-endpoint=https://sts.example.com, --cr-endpoint=https://cr.example.com, --v=4, --token-cache, --metrics-file=/m]"#,
    );
    let run = validate(&path, "json");
    let report = run.json();
    assert_eq!(messages(&report, "argumentErrors"), Vec::<String>::new());
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(run.code, 0);
    let human = validate(&path, "human");
    assert!(
        human.stdout.ends_with("result: valid\n"),
        "{}",
        human.stdout
    );
}

/// The built binary `name`, run with `args`: exit code and stdout.
fn run_binary(name: &str, args: &[String]) -> (i32, String) {
    let out = Command::new(target_bin_dir().join(exe(name)))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The long flags a `--help` text lists.
fn listed_in_help(help: &str) -> Vec<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            // "-r, --registry-mirror <SRC:DST>  …"
            let l = match l.get(2..4) {
                Some(", ") => &l[4..],
                _ => l,
            };
            let name = l.strip_prefix("--")?;
            Some(
                name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                    .next()?
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_tables_are_what_the_built_binaries_take() {
    for spec in PROVIDERS {
        let binary = spec.binary;
        let known = spec.known();
        let longs: Vec<String> = known
            .iter()
            .chain(spec.klog)
            .filter_map(|f| f.long.as_deref().map(str::to_owned))
            .collect();
        // Every flag its help lists is in the table (a new flag in the parser must be added).
        let (code, help) = run_binary(binary, &["--help".to_owned()]);
        assert_eq!(code, 0, "{binary} --help");
        let listed = listed_in_help(&help);
        assert!(listed.len() >= 8, "{binary}: {listed:?}");
        for name in &listed {
            assert!(
                longs.contains(name),
                "{binary} --help lists --{name}, which kcp_provider_args::flags does not know"
            );
        }
        // Every flag of the table is taken (help first, so no value is judged).
        for flag in known.iter().chain(spec.klog) {
            let spellings: Vec<String> = match (&flag.long, flag.short, flag.kind) {
                (_, _, Kind::Exit) => continue,
                (Some(long), _, Kind::Bool) => vec![format!("--{long}")],
                (Some(long), Some(short), _) => vec![format!("--{long}=x"), format!("-{short}=x")],
                (Some(long), None, _) => vec![format!("--{long}=x")],
                (None, Some(short), _) => vec![format!("-{short}")],
                (None, None, _) => unreachable!("a flag has a name"),
            };
            for spelling in spellings {
                let (code, _) = run_binary(binary, &["--help".to_owned(), spelling.clone()]);
                assert_eq!(code, 0, "{binary} takes {spelling}");
            }
        }
        // And nothing else.
        let (code, _) = run_binary(binary, &["--help".to_owned(), "--not-a-flag".to_owned()]);
        assert_eq!(code, 2, "{binary} refuses --not-a-flag");
    }
}

/// `run` still runs a plugin that refuses its args, and its own line says why; with
/// `--output json`, stdout stays one document.
#[test]
fn run_shows_the_plugins_own_refusal() {
    let dir = TempDir::new("check-args-run");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let name = exe("static-credential-provider");
    std::os::unix::fs::symlink(target_bin_dir().join(&name), bin.join(&name)).unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        v1_config(
            "  - name: static-credential-provider\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    matchImages: [\"registry.example.com\"]\n    defaultCacheDuration: 1h\n    args: [--registry=registry.example.com, --username=u, --password-file=/p, --usernam=v]\n",
        ),
    )
    .unwrap();
    let run = |output: &str| {
        check([
            "run".as_ref(),
            "--output".as_ref(),
            output.as_ref(),
            "--config".as_ref(),
            path.as_os_str(),
            "--bin-dir".as_ref(),
            bin.as_os_str(),
            "registry.example.com/app".as_ref(),
        ])
    };
    let json = run("json");
    assert_eq!(json.code, 1, "{}", json.stdout);
    let report = json.json();
    assert!(
        report
            .to_string()
            .contains("unknown flag --usernam (did you mean --username?) (see --help)"),
        "{report}"
    );
    let human = run("human");
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .contains("unknown flag --usernam (did you mean --username?) (see --help)"),
        "{}",
        human.stdout
    );
}

/// The key-only switch in a kubelet config's `env` makes every exec answer with a key, which
/// the kubelet refuses: an error, with the variable the providers read named as they read it.
#[test]
fn the_key_only_switch_in_a_kubelet_config_is_an_error() {
    let dir = TempDir::new("check-key-only");
    let path = dir.path().join("config.yaml");
    std::fs::write(
        &path,
        v1_config(&format!(
            "  - name: ecr-credential-provider\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n    defaultCacheDuration: 1h\n    env:\n      - name: {}\n        value: \"true\"\n",
            kcp_plugin::token_cache::PRINT_KEY_ENV
        )),
    )
    .unwrap();
    let run = validate(&path, "json");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        messages(&run.json(), "argumentErrors"),
        vec!["env: CREDENTIAL_PROVIDER_PRINT_CACHE_KEY makes ecr-credential-provider print its token cache key instead of an answer, so the kubelet refuses every exec; remove it".to_owned()]
    );
}
