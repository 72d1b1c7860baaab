//! `run` against shell-script plugins written into a temp dir: good answers (stderr shown, keys,
//! cache entry, redaction, the exact request bytes, argv and env) and deliberately broken
//! plugins, each diagnosed with the kubelet's message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)] // Test code: a panic is a failed assertion.

mod common;

use std::path::PathBuf;

use common::{Run, check, v1_config, write_script};
use kcp_testkit::TempDir;
use serde_json::Value;

const V1: &str = "credentialprovider.kubelet.k8s.io/v1";
const IMAGE: &str = "registry.example.com/team/app:v2";
const NORMALIZED: &str = "registry.example.com/team/app";

struct Setup {
    dir: TempDir,
    cfg: PathBuf,
    bin: PathBuf,
}

impl Setup {
    /// One provider `p` (plus `extra` YAML lines) running `script`.
    fn new(script: &str, extra: &str) -> Self {
        let dir = TempDir::new("run");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        write_script(&bin.join("p"), script);
        let cfg = dir.path().join("config.yaml");
        std::fs::write(
            &cfg,
            v1_config(&format!(
                "  - name: p\n    matchImages: [\"*.example.com\"]\n    defaultCacheDuration: 10m\n    apiVersion: {V1}\n{extra}"
            )),
        )
        .unwrap();
        Setup { dir, cfg, bin }
    }

    fn run(&self, extra_args: &[&str]) -> Run {
        let mut args: Vec<std::ffi::OsString> = vec![
            "run".into(),
            "--output".into(),
            "json".into(),
            "--config".into(),
            self.cfg.clone().into(),
            "--bin-dir".into(),
            self.bin.clone().into(),
        ];
        args.extend(extra_args.iter().map(Into::into));
        args.push(IMAGE.into());
        check(args)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A plugin that reads stdin and prints `answer`.
fn answering(answer: &str) -> String {
    format!("cat >/dev/null\ncat <<'JSON'\n{answer}\nJSON")
}

fn response(fields: &str) -> String {
    format!(r#"{{"kind":"CredentialProviderResponse","apiVersion":"{V1}",{fields}}}"#)
}

const GOOD_AUTH: &str = r#""auth":{"*.example.com":{"username":"AWS","password":"s3cret"},"other.io":{"username":"x","password":"y"}}"#;

fn first(run: &Run) -> Value {
    run.json()["providers"][0].clone()
}

fn assert_fails_with(run: &Run, kubelet: &str) -> Value {
    assert_eq!(run.code, 1, "{}", run.stdout);
    let p = first(run);
    assert_eq!(p["verdict"], "failed", "{p}");
    let got = p["kubeletError"].as_str().unwrap_or_default();
    assert!(got.starts_with(kubelet), "want {kubelet:?}\ngot {got:?}");
    p
}

#[test]
fn a_good_answer_shows_stderr_keys_cache_and_redacts_passwords() {
    if kcp_testkit::skip_on_windows(
        "a_good_answer_shows_stderr_keys_cache_and_redacts_passwords",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &format!(
            "echo 'fetching token' >&2\n{}",
            answering(&response(&format!(
                r#""cacheKeyType":"Registry","cacheDuration":"6h",{GOOD_AUTH}"#
            )))
        ),
        "",
    );
    let run = s.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let report = run.json();
    assert_eq!(report["usable"], true);
    let p = first(&run);
    assert_eq!(p["verdict"], "accepted");
    assert_eq!(p["stderr"], "fetching token\n");
    assert_eq!(p["keysUsed"], serde_json::json!(["*.example.com"]));
    assert_eq!(p["cache"]["keyType"], "Registry");
    assert_eq!(p["cache"]["key"], "registry.example.com");
    assert_eq!(p["cache"]["duration"], "6h0m0s");
    assert_eq!(p["cache"]["durationSource"], "response");
    let auth = p["auth"].as_array().unwrap();
    assert!(auth.iter().all(|a| a["password"] == "<redacted>"));
    assert!(!run.stdout.contains("s3cret"));
    let unused = auth.iter().find(|a| a["key"] == "other.io").unwrap();
    assert_eq!(unused["used"], false);
    assert!(
        unused["reason"]
            .as_str()
            .unwrap()
            .contains("dot-separated labels")
    );

    let shown = s.run(&["--show-secrets"]);
    assert!(shown.stdout.contains("s3cret"));

    // Human output says the same.
    let human = check([
        "run".as_ref(),
        "--config".as_ref(),
        s.cfg.as_os_str(),
        "--bin-dir".as_ref(),
        s.bin.as_os_str(),
        IMAGE.as_ref(),
    ]);
    assert_eq!(human.code, 0);
    assert!(
        human.stdout.contains("  | fetching token"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("auth USED   \"*.example.com\": username \"AWS\", password <redacted>")
    );
    assert!(
        human.stdout.contains(
            "cache:   Registry key \"registry.example.com\", kept 6h0m0s (from response)"
        )
    );
    assert!(!human.stdout.contains("s3cret"));
}

#[test]
fn the_default_cache_duration_applies_and_zero_means_not_cached() {
    if kcp_testkit::skip_on_windows(
        "the_default_cache_duration_applies_and_zero_means_not_cached",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#))),
        "",
    );
    let p = first(&s.run(&[]));
    assert_eq!(p["cache"]["key"], NORMALIZED);
    assert_eq!(p["cache"]["duration"], "10m0s");
    assert_eq!(p["cache"]["durationSource"], "defaultCacheDuration");
    let s = Setup::new(
        &answering(&response(&format!(
            r#""cacheKeyType":"Global","cacheDuration":"0s",{GOOD_AUTH}"#
        ))),
        "",
    );
    let p = first(&s.run(&[]));
    assert_eq!(p["cache"]["key"], "<global>");
    assert_eq!(p["cache"]["cached"], false);
    assert!(p["cache"]["duration"].is_null());
}

#[test]
fn plugins_get_the_kubelets_argv_env_and_request_bytes() {
    if kcp_testkit::skip_on_windows(
        "plugins_get_the_kubelets_argv_env_and_request_bytes",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &("cat > \"$OUT/stdin\"\nprintf '%s\\n' \"$0\" \"$@\" > \"$OUT/argv\"\nprintf '%s|%s' \"$FOO\" \"$INHERITED\" > \"$OUT/foo\"\n".to_owned()
            + &answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#)))),
        "    args: [get-credentials, --v=3]\n    env:\n      - {name: FOO, value: from-config}\n",
    );
    // OUT tells the script where to write; FOO is set in the checker's environment too, and
    // the config's value must win, as in the kubelet's merge.
    let out = s.dir.path().display().to_string();
    let config_text = std::fs::read_to_string(&s.cfg).unwrap();
    std::fs::write(
        &s.cfg,
        config_text.replace(
            "      - {name: FOO, value: from-config}\n",
            &format!(
                "      - {{name: FOO, value: from-config}}\n      - {{name: OUT, value: {out:?}}}\n"
            ),
        ),
    )
    .unwrap();
    let run = common::check_env(
        [
            "run".as_ref(),
            "--config".as_ref(),
            s.cfg.as_os_str(),
            "--bin-dir".as_ref(),
            s.bin.as_os_str(),
            IMAGE.as_ref(),
        ],
        &[("FOO", "inherited"), ("INHERITED", "yes")],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(s.file("stdin")).unwrap(),
        format!(
            "{{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":\"{V1}\",\"image\":\"{NORMALIZED}\"}}\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(s.file("argv")).unwrap(),
        format!("{}\nget-credentials\n--v=3\n", s.bin.join("p").display())
    );
    assert_eq!(
        std::fs::read_to_string(s.file("foo")).unwrap(),
        "from-config|yes"
    );
}

#[test]
fn junk_on_stdout_is_a_gvk_error() {
    if kcp_testkit::skip_on_windows(
        "junk_on_stdout_is_a_gvk_error",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &format!(
            "cat >/dev/null\necho 'Getting credentials...'\n{}",
            answering(&response(r#""cacheKeyType":"Image""#))
        ),
        "",
    );
    assert_fails_with(
        &s.run(&[]),
        "error reading GVK from response: couldn't get version/kind; json parse error:",
    );
}

#[test]
fn a_wrong_api_version_is_named() {
    if kcp_testkit::skip_on_windows(
        "a_wrong_api_version_is_named",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(r#""cacheKeyType":"Image""#).replace(
            &format!("\"{V1}\""),
            "\"credentialprovider.kubelet.k8s.io/v1beta1\"",
        )),
        "",
    );
    assert_fails_with(
        &s.run(&[]),
        "apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1",
    );
}

#[test]
fn a_numeric_cache_duration_fails_strict_decoding_with_the_hidden_cause() {
    if kcp_testkit::skip_on_windows(
        "a_numeric_cache_duration_fails_strict_decoding_with_the_hidden_cause",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(r#""cacheKeyType":"Image","cacheDuration":600"#)),
        "",
    );
    let p = assert_fails_with(
        &s.run(&[]),
        "error decoding credential provider plugin response from stdout",
    );
    assert_eq!(
        p["kubeletError"],
        "error decoding credential provider plugin response from stdout"
    );
    assert!(p["cause"].as_str().unwrap().contains("Go duration"), "{p}");
}

#[test]
fn an_extra_field_fails_strict_decoding() {
    if kcp_testkit::skip_on_windows(
        "an_extra_field_fails_strict_decoding",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(
            r#""cacheKeyType":"Image","auth":{"*.example.com":{"username":"u","password":"p","email":"me@example.com"}}"#,
        )),
        "",
    );
    let p = assert_fails_with(
        &s.run(&[]),
        "error decoding credential provider plugin response from stdout",
    );
    assert!(p["cause"].as_str().unwrap().contains("email"), "{p}");
}

#[test]
fn a_missing_cache_key_type_is_named() {
    if kcp_testkit::skip_on_windows(
        "a_missing_cache_key_type_is_named",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(&answering(&response(GOOD_AUTH)), "");
    assert_fails_with(
        &s.run(&[]),
        "credential provider plugin did not return a valid cacheKeyType: \"\"",
    );
}

#[test]
fn a_hang_is_killed_after_the_timeout() {
    if kcp_testkit::skip_on_windows(
        "a_hang_is_killed_after_the_timeout",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new("exec sleep 30", "");
    let run = s.run(&["--timeout", "1s"]);
    let p = assert_fails_with(
        &run,
        &format!(
            "error execing credential provider plugin p for image {NORMALIZED}: context deadline exceeded"
        ),
    );
    assert!(p["elapsedMs"].as_u64().unwrap() < 10_000);
}

#[test]
fn exit_1_quotes_stderr_as_the_kubelet_does() {
    if kcp_testkit::skip_on_windows(
        "exit_1_quotes_stderr_as_the_kubelet_does",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        "cat >/dev/null\necho 'no credentials in ~/.aws' >&2\nexit 1",
        "",
    );
    let p = assert_fails_with(&s.run(&[]), "");
    assert_eq!(
        p["kubeletError"],
        format!(
            "error execing credential provider plugin p for image {NORMALIZED}: exit status 1: no credentials in ~/.aws\n"
        )
    );
}

#[test]
fn a_grandchild_holding_stdout_is_diagnosed() {
    if kcp_testkit::skip_on_windows(
        "a_grandchild_holding_stdout_is_diagnosed",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &format!(
            "sleep 5 &\n{}",
            answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#)))
        ),
        "",
    );
    let p = assert_fails_with(&s.run(&[]), "none: the kubelet would block on this pull");
    assert!(p["cause"].as_str().unwrap().contains("background child"));
}

#[test]
fn a_missing_binary_stops_the_kubelet_at_start() {
    let s = Setup::new("exit 0", "");
    std::fs::remove_file(s.bin.join("p")).unwrap();
    let run = s.run(&[]);
    assert_eq!(run.code, 1);
    let report = run.json();
    assert!(
        common::messages(&report, "registrationErrors")[0].starts_with("plugin binary executable")
    );
}

#[test]
fn keys_that_do_not_match_the_image_give_no_credentials() {
    if kcp_testkit::skip_on_windows(
        "keys_that_do_not_match_the_image_give_no_credentials",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(
            r#""cacheKeyType":"Image","auth":{"registry.example.com:5000":{"username":"u","password":"p"}}"#,
        )),
        "",
    );
    let run = s.run(&[]);
    assert_eq!(run.code, 1);
    let p = first(&run);
    assert_eq!(p["verdict"], "accepted");
    assert_eq!(p["usable"], false);
    assert!(
        p["auth"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("port 5000")
    );
}

#[test]
fn no_matching_provider_means_no_credentials() {
    let s = Setup::new("exit 1", "");
    let run = check([
        "run".as_ref(),
        "--output".as_ref(),
        "json".as_ref(),
        "--config".as_ref(),
        s.cfg.as_os_str(),
        "--bin-dir".as_ref(),
        s.bin.as_os_str(),
        "nginx".as_ref(),
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["providers"], serde_json::json!([]));
}

const TOKEN_ATTRS: &str = "    tokenAttributes:\n      serviceAccountTokenAudience: aud\n      cacheType: ServiceAccount\n      requireServiceAccount: true\n      requiredServiceAccountAnnotationKeys: [example.com/role]\n      optionalServiceAccountAnnotationKeys: [example.com/opt]\n";

#[test]
fn token_mode_sends_the_token_and_selected_annotations() {
    if kcp_testkit::skip_on_windows(
        "token_mode_sends_the_token_and_selected_annotations",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &format!(
            "cat > \"{}\"\n{}",
            "STDIN_PATH",
            answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#)))
        ),
        TOKEN_ATTRS,
    );
    let stdin_path = s.file("stdin");
    let script = std::fs::read_to_string(s.bin.join("p"))
        .unwrap()
        .replace("STDIN_PATH", &stdin_path.display().to_string());
    write_script(&s.bin.join("p"), script.trim_start_matches("#!/bin/sh\n"));
    let token = s.file("token");
    std::fs::write(&token, "jwt-abc\n").unwrap();
    let token_arg = token.display().to_string();

    // Without a token and requireServiceAccount: true, the kubelet does not run the plugin.
    let run = s.run(&[]);
    assert_eq!(run.code, 1);
    assert_eq!(first(&run)["verdict"], "skipped");
    // A missing required annotation also skips it.
    let run = s.run(&[
        "--sa-token",
        &token_arg,
        "--sa-annotation",
        "example.com/opt=o",
    ]);
    assert!(
        first(&run)["skipped"]
            .as_str()
            .unwrap()
            .contains("example.com/role")
    );
    // With both: token and only the configured annotations are sent.
    let run = s.run(&[
        "--sa-token",
        &token_arg,
        "--sa-annotation",
        "example.com/role=r",
        "--sa-annotation",
        "example.com/opt=o",
        "--sa-annotation",
        "example.com/other=x",
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(&stdin_path).unwrap(),
        format!(
            "{{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":\"{V1}\",\"image\":\"{NORMALIZED}\",\"serviceAccountToken\":\"jwt-abc\",\"serviceAccountAnnotations\":{{\"example.com/opt\":\"o\",\"example.com/role\":\"r\"}}}}\n"
        )
    );
    let p = first(&run);
    assert!(
        p["request"]
            .as_str()
            .unwrap()
            .contains("\"serviceAccountToken\":\"<redacted>\"")
    );
    assert!(
        p["cache"]["serviceAccountPart"]
            .as_str()
            .unwrap()
            .contains("ServiceAccount")
    );
}

#[test]
fn providers_without_token_attributes_never_get_the_token() {
    if kcp_testkit::skip_on_windows(
        "providers_without_token_attributes_never_get_the_token",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &format!(
            "cat > \"$0.stdin\"\n{}",
            answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#)))
        ),
        "",
    );
    let token = s.file("token");
    std::fs::write(&token, "jwt-abc").unwrap();
    let run = s.run(&["--sa-token", &token.display().to_string()]);
    assert_eq!(run.code, 0);
    let sent = std::fs::read_to_string(s.bin.join("p.stdin")).unwrap();
    assert!(!sent.contains("serviceAccountToken"), "{sent}");
}

#[test]
fn echoing_the_token_is_rejected_unless_cache_type_is_token() {
    if kcp_testkit::skip_on_windows(
        "echoing_the_token_is_rejected_unless_cache_type_is_token",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let attrs = TOKEN_ATTRS.replace(
        "      requiredServiceAccountAnnotationKeys: [example.com/role]\n",
        "",
    );
    let s = Setup::new(
        &answering(&response(
            r#""cacheKeyType":"Image","auth":{"*.example.com":{"username":"jwt","password":"jwt-abc"}}"#,
        )),
        &attrs,
    );
    let token = s.file("token");
    std::fs::write(&token, "jwt-abc").unwrap();
    let token_arg = token.display().to_string();
    assert_fails_with(
        &s.run(&["--sa-token", &token_arg]),
        &format!(
            "Credential provider plugin returned the service account token as the password for image \"{NORMALIZED}\""
        ),
    );
    let config = std::fs::read_to_string(&s.cfg)
        .unwrap()
        .replace("cacheType: ServiceAccount", "cacheType: Token");
    std::fs::write(&s.cfg, config).unwrap();
    assert_eq!(s.run(&["--sa-token", &token_arg]).code, 0);
}

#[test]
fn an_invalid_config_stops_run_before_any_exec() {
    let s = Setup::new("touch \"$0.ran\"\nexit 0", "    unknownField: 1\n");
    let run = s.run(&[]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.json()["loadError"]["message"],
        "strict decoding error: unknown field \"providers[0].unknownField\""
    );
    assert!(!s.bin.join("p.ran").exists());
}

/// `run` in human form (the default output).
fn human(s: &Setup, extra_args: &[&str]) -> Run {
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--config".into(),
        s.cfg.clone().into(),
        "--bin-dir".into(),
        s.bin.clone().into(),
    ];
    args.extend(extra_args.iter().map(Into::into));
    args.push(IMAGE.into());
    check(args)
}

/// Issue #25: a password where an auth object belongs. serde's message quotes it (`invalid type:
/// string "hunter2-topsecret"`); neither the cause nor the raw stdout may show it unless asked.
#[test]
fn a_malformed_answer_shows_no_secret_without_show_secrets() {
    if kcp_testkit::skip_on_windows(
        "a_malformed_answer_shows_no_secret_without_show_secrets",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(
            r#""cacheKeyType":"Image","auth":{"e.example.com":"hunter2-topsecret"}"#,
        )),
        "",
    );
    let run = s.run(&[]);
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    let p = assert_fails_with(
        &run,
        "error decoding credential provider plugin response from stdout",
    );
    // The cause names the place (JSON path, line and column) and what is wrong, not the value.
    assert_eq!(
        p["cause"],
        r#"auth["e.example.com"] must be an object with username and password, found a string (line 1, column 155)"#
    );
    // The raw answer: keys and protocol words kept, every other string as its length.
    assert_eq!(
        p["stdout"],
        format!(
            r#"{{"kind":"CredentialProviderResponse","apiVersion":"{V1}","cacheKeyType":"Image","auth":{{"e.example.com":"<17 chars>"}}}}"#
        )
    );
    assert_eq!(p["stdoutRedacted"], true);

    let text = human(&s, &[]);
    assert_eq!(text.code, 1);
    assert!(!text.stdout.contains("hunter2"), "{}", text.stdout);
    assert!(
        text.stdout.contains(
            "stdout (string values, and every value under auth, shown as their length; --show-secrets shows them):\n  | {\"kind\""
        ),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(r#"cause:   auth["e.example.com"] must be an object"#),
        "{}",
        text.stdout
    );

    // Asked for, everything is shown, the decoder's own message included.
    let shown = s.run(&["--show-secrets"]);
    let p = first(&shown);
    assert!(
        p["stdout"].as_str().unwrap().contains("hunter2-topsecret"),
        "{p}"
    );
    assert!(
        p["cause"]
            .as_str()
            .unwrap()
            .contains(r#"the decoder's message: invalid type: string "hunter2-topsecret""#),
        "{p}"
    );
    assert_eq!(p["stdoutRedacted"], false);
    assert!(
        human(&s, &["--show-secrets"])
            .stdout
            .contains("hunter2-topsecret")
    );
}

/// Values the kubelet's own messages quote (cacheKeyType, apiVersion) are shown when they are
/// protocol words and as their length otherwise.
#[test]
fn values_in_the_kubelets_messages_are_hidden_unless_protocol_words() {
    if kcp_testkit::skip_on_windows(
        "values_in_the_kubelets_messages_are_hidden_unless_protocol_words",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(r#""cacheKeyType":"hunter2-topsecret""#)),
        "",
    );
    let run = s.run(&[]);
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    assert_fails_with(
        &run,
        "credential provider plugin did not return a valid cacheKeyType: \"<17 chars>\"",
    );
    assert_fails_with(
        &s.run(&["--show-secrets"]),
        "credential provider plugin did not return a valid cacheKeyType: \"hunter2-topsecret\"",
    );
    let s = Setup::new(
        &answering(&response(r#""cacheKeyType":"ServiceAccount""#)),
        "",
    );
    assert_fails_with(
        &s.run(&[]),
        "credential provider plugin did not return a valid cacheKeyType: \"ServiceAccount\"",
    );
}

/// Output that is not JSON at all is shown as its size only.
#[test]
fn non_json_output_shows_only_its_length() {
    if kcp_testkit::skip_on_windows(
        "non_json_output_shows_only_its_length",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new("cat >/dev/null\necho 'password=hunter2-topsecret'", "");
    let run = s.run(&[]);
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    let p = assert_fails_with(
        &run,
        "error reading GVK from response: couldn't get version/kind; json parse error: stdout is not valid JSON (line 1, column 1)",
    );
    assert_eq!(
        p["stdout"],
        "<27 bytes that are not one JSON document: not shown, since any of it could be a secret>"
    );
    let text = human(&s, &[]);
    assert!(!text.stdout.contains("hunter2"), "{}", text.stdout);
    assert!(text.stdout.contains("<27 bytes"), "{}", text.stdout);
    let shown = first(&s.run(&["--show-secrets"]));
    assert_eq!(shown["stdout"], "password=hunter2-topsecret\n");
}

/// A plugin that floods stdout is ended at the cap and reported, not waited for.
#[test]
fn stdout_past_the_cap_is_reported_and_the_plugin_ended() {
    if kcp_testkit::skip_on_windows(
        "stdout_past_the_cap_is_reported_and_the_plugin_ended",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    // 3 MB, then a long sleep: only the cap ends it early (without the cap, the timeout would,
    // and the test fails on its message).
    let s = Setup::new(
        "cat >/dev/null\nhead -c 3000000 /dev/zero | tr '\\0' x\nexec sleep 600",
        "",
    );
    let run = s.run(&["--timeout", "30s"]);
    let p = assert_fails_with(
        &run,
        "none: not judged: p wrote more than 1048576 bytes to stdout, where the checker stops reading and ends the plugin",
    );
    assert!(p["cause"].as_str().unwrap().contains("stderr"), "{p}");
    assert!(
        p["stdout"]
            .as_str()
            .unwrap()
            .starts_with("<1048576 bytes that are not one JSON document"),
        "{p}"
    );
}

/// The SA token sent and the passwords answered are hidden in the plugin's stderr too.
#[test]
fn known_secrets_are_hidden_in_the_plugins_stderr() {
    if kcp_testkit::skip_on_windows(
        "known_secrets_are_hidden_in_the_plugins_stderr",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let attrs = TOKEN_ATTRS.replace(
        "      requiredServiceAccountAnnotationKeys: [example.com/role]\n",
        "",
    );
    let s = Setup::new(
        &format!(
            "cat >&2\necho ' password hunter2-topsecret' >&2\n{}",
            answering(&response(
                r#""cacheKeyType":"Image","auth":{"*.example.com":{"username":"u","password":"hunter2-topsecret"}}"#,
            ))
        ),
        &attrs,
    );
    let token = s.file("token");
    std::fs::write(&token, "jwt-abc-sa-token").unwrap();
    let token_arg = token.display().to_string();
    let run = s.run(&["--sa-token", &token_arg]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    assert!(!run.stdout.contains("jwt-abc-sa-token"), "{}", run.stdout);
    let stderr = first(&run)["stderr"].as_str().unwrap().to_owned();
    assert!(
        stderr.contains("\"serviceAccountToken\":\"<redacted>\"")
            && stderr.contains(" password <redacted>"),
        "{stderr}"
    );
    let shown = s.run(&["--sa-token", &token_arg, "--show-secrets"]);
    assert!(shown.stdout.contains("jwt-abc-sa-token"));
}

/// A config's `env` may carry keys (`ALIBABA_CLOUD_ACCESS_KEY_SECRET`, `AWS_SESSION_TOKEN`):
/// `run` shows such a variable's value as `<redacted>`, hides it where the plugin's stderr
/// repeats it, and still hands the plugin the real value; a variable naming a file, and any
/// other, is shown as is. `--show-secrets` shows them all.
#[test]
fn secret_env_values_are_hidden_but_reach_the_plugin() {
    if kcp_testkit::skip_on_windows(
        "secret_env_values_are_hidden_but_reach_the_plugin",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &("echo \"got $ALIBABA_CLOUD_ACCESS_KEY_SECRET\" >&2\n".to_owned()
            + &answering(&response(&format!(r#""cacheKeyType":"Image",{GOOD_AUTH}"#)))),
        "    env:\n      - {name: ALIBABA_CLOUD_ACCESS_KEY_ID, value: LTAI-key-id}\n      - {name: ALIBABA_CLOUD_ACCESS_KEY_SECRET, value: s3cr3t-value-Xy7}\n      - {name: AWS_SESSION_TOKEN, value: session-token-Q9}\n      - {name: AZURE_FEDERATED_TOKEN_FILE, value: /var/run/token}\n",
    );
    let run = s.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let result = first(&run);
    assert_eq!(
        result["env"],
        serde_json::json!([
            {"name": "ALIBABA_CLOUD_ACCESS_KEY_ID", "value": "LTAI-key-id"},
            {"name": "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "value": "<redacted>"},
            {"name": "AWS_SESSION_TOKEN", "value": "<redacted>"},
            {"name": "AZURE_FEDERATED_TOKEN_FILE", "value": "/var/run/token"},
        ])
    );
    assert_eq!(result["stderr"].as_str().unwrap().trim(), "got <redacted>");
    assert!(!run.stdout.contains("s3cr3t-value-Xy7"), "{}", run.stdout);
    assert!(!run.stdout.contains("session-token-Q9"), "{}", run.stdout);
    let shown = s.run(&["--show-secrets"]);
    assert!(
        shown.stdout.contains("got s3cr3t-value-Xy7"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("session-token-Q9"),
        "{}",
        shown.stdout
    );
}

/// A password that is a number (or a boolean) is as secret as a string: under `auth` every
/// scalar is shown as its type and length unless `--show-secrets`; elsewhere numbers stay (a
/// numeric `cacheDuration` is what the kubelet refuses, and worth seeing).
#[test]
fn non_string_credentials_are_shown_as_their_type_and_length() {
    if kcp_testkit::skip_on_windows(
        "non_string_credentials_are_shown_as_their_type_and_length",
        "its fake plugins are shell scripts",
    ) {
        return;
    }
    let s = Setup::new(
        &answering(&response(
            r#""cacheKeyType":"Image","auth":{"e.example.com":{"username":true,"password":987654321}}"#,
        )),
        "",
    );
    let run = s.run(&[]);
    assert!(!run.stdout.contains("987654321"), "{}", run.stdout);
    let p = assert_fails_with(
        &run,
        "error decoding credential provider plugin response from stdout",
    );
    assert_eq!(
        p["stdout"],
        format!(
            r#"{{"kind":"CredentialProviderResponse","apiVersion":"{V1}","cacheKeyType":"Image","auth":{{"e.example.com":{{"username":"<boolean: 4 chars>","password":"<number: 9 chars>"}}}}}}"#
        )
    );
    let shown = s.run(&["--show-secrets"]);
    assert!(
        first(&shown)["stdout"]
            .as_str()
            .unwrap()
            .contains(r#""password":987654321"#),
        "{}",
        shown.stdout
    );
}
