//! `run` against this workspace's own providers, each pointed at a local fake the way a user would
//! point it (endpoint and metadata variables in the config's `env`), as the kubelet would run them.
//!
//! The provider binaries are the siblings of the checker in the target directory: `cargo test
//! --workspace` (what `scripts/test` runs) builds every binary of the workspace before any test.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use common::check;
use kcp_testkit::TempDir;
use kcp_testkit::fake::{FakeResponse, FakeServer};

/// A bin dir holding links to the workspace's provider binaries.
fn bin_dir(dir: &TempDir) -> PathBuf {
    let target = common::target_bin_dir();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in [
        "static-credential-provider",
        "ecr-credential-provider",
        "gcr-credential-provider",
        "acr-credential-provider",
        "oidc-credential-provider",
        "alibaba-credential-provider",
    ] {
        let name = common::exe(name);
        symlink(target.join(&name), bin.join(&name)).unwrap();
    }
    bin
}

fn usable(run: &common::Run) {
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stdout
            .contains("the kubelet would have credentials for this image"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("<redacted>"),
        "passwords are redacted: {}",
        run.stdout
    );
}

#[test]
fn runs_each_of_our_providers_as_the_kubelet_would() {
    let dir = TempDir::new("check-providers");
    let bin = bin_dir(&dir);
    let ecr = FakeServer::start(|_| {
        FakeResponse::json(
            r#"{"authorizationData":[{"authorizationToken":"QVdTOmVjci1zZWNyZXQtcGFzc3dvcmQ="}]}"#,
        )
        .header("content-type", "application/x-amz-json-1.1")
    });
    let metadata = FakeServer::start(|r| match r.header("metadata-flavor") {
        Some("Google") => FakeResponse::json(
            r#"{"access_token":"ya29.gcr-secret-token","expires_in":3599,"token_type":"Bearer"}"#,
        )
        .header("metadata-flavor", "Google"),
        _ => FakeResponse::new(403, "Missing Metadata-Flavor:Google header."),
    });
    let password = dir.path().join("password");
    std::fs::write(&password, "static-secret-password\n").unwrap();
    let azure = dir.path().join("azure.json");
    std::fs::write(
        &azure,
        r#"{"tenantId":"t","aadClientId":"sp-client","aadClientSecret":"acr-secret-value"}"#,
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            r#"apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: static-credential-provider
    matchImages: ["harbor.example.com"]
    defaultCacheDuration: "1h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1beta1
    args: ["--registry=harbor.example.com", "--username=robot", "--password-file={password}"]
  - name: ecr-credential-provider
    matchImages: ["*.dkr.ecr.*.amazonaws.com"]
    defaultCacheDuration: "12h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: [get-credentials]
    env:
      - {{name: AWS_ACCESS_KEY_ID, value: AKIDCHECK}}
      - {{name: AWS_SECRET_ACCESS_KEY, value: check-secret-key}}
      - {{name: AWS_EC2_METADATA_DISABLED, value: "true"}}
      - {{name: AWS_ENDPOINT_URL_ECR, value: "{ecr}"}}
  - name: gcr-credential-provider
    matchImages: ["*.pkg.dev"]
    defaultCacheDuration: "1m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1
    args: [get-credentials]
    env:
      - {{name: GCE_METADATA_HOST, value: "{metadata}"}}
  - name: acr-credential-provider
    matchImages: ["*.azurecr.io"]
    defaultCacheDuration: "10m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: ["{azure}", "--service-principal-passthrough"]
"#,
            password = password.display(),
            ecr = ecr.url(),
            metadata = metadata.addr(),
            azure = azure.display(),
        ),
    )
    .unwrap();
    for image in [
        "harbor.example.com/team/app:1.0",
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/app",
        "us-docker.pkg.dev/project/repo/app",
        "myreg.azurecr.io/app",
    ] {
        let run = check([
            "run",
            "--config",
            &config.display().to_string(),
            "--bin-dir",
            &bin.display().to_string(),
            image,
        ]);
        usable(&run);
        for secret in [
            "static-secret-password",
            "ecr-secret-password",
            "ya29.gcr-secret-token",
            "acr-secret-value",
        ] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{secret} shown for {image}"
            );
        }
    }
    assert_eq!(ecr.requests().len(), 1);
    assert_eq!(metadata.requests().len(), 1);
    // A registry no provider answers for: the kubelet runs nothing, the checker says so.
    let run = check([
        "run",
        "--config",
        &config.display().to_string(),
        "--bin-dir",
        &bin.display().to_string(),
        "quay.io/org/app",
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
}

/// oidc end to end: the entry `init` prints, a passthrough registries file, and the pod's token
/// (the only thing passthrough sends, so no fake is needed): the kubelet would get the token as
/// the password, shown redacted.
#[test]
fn runs_oidc_from_inits_entry_with_the_pods_token() {
    let dir = TempDir::new("check-oidc");
    let bin = bin_dir(&dir);
    let registries = dir.path().join("registries.yaml");
    std::fs::write(
        &registries,
        "registries:\n  - host: harbor.acme.internal\n    protocol: passthrough\n    username: jwt\n",
    )
    .unwrap();
    let entry = check([
        "init",
        "--provider",
        "oidc",
        "--match-images",
        "oidc=harbor.acme.internal",
        "--oidc-audience",
        "harbor.acme.internal",
        "--oidc-config",
        &registries.display().to_string(),
    ]);
    assert_eq!(entry.code, 0, "{}", entry.stderr);
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, &entry.stdout).unwrap();
    let token = kcp_testkit::cache::service_account_token(
        "harbor.acme.internal",
        "team-a",
        "puller",
        "uid-1",
        "pod-1",
    );
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, &token).unwrap();
    let run = check([
        "run",
        "--config",
        &config.display().to_string(),
        "--bin-dir",
        &bin.display().to_string(),
        "--sa-token",
        &token_file.display().to_string(),
        "harbor.acme.internal/library/app:1.0",
    ]);
    usable(&run);
    assert!(run.stdout.contains("username \"jwt\""), "{}", run.stdout);
    assert!(
        !run.stdout.contains(&token) && !run.stderr.contains(&token),
        "the token is never shown"
    );
    // Without a token the kubelet does not run it at all (requireServiceAccount: true).
    let run = check([
        "run",
        "--config",
        &config.display().to_string(),
        "--bin-dir",
        &bin.display().to_string(),
        "harbor.acme.internal/library/app:1.0",
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("not run: requireServiceAccount is true"),
        "{}",
        run.stdout
    );
}

/// alibaba end to end: the entry `init` prints, with static keys in its `env` and Container
/// Registry's endpoint pointed at a local fake: a Personal Edition host is answered with the
/// user name and password the fake's GetAuthorizationToken (2016-06-07, `GET /tokens`) hands
/// out, the call signed with the static key (V3), and the password shown redacted.
#[test]
fn runs_alibaba_from_inits_entry_with_static_keys() {
    let dir = TempDir::new("check-alibaba");
    let bin = bin_dir(&dir);
    let expire_ms = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        * 1000;
    let cr = FakeServer::start(move |r| {
        if r.method == "GET" && r.path() == "/tokens" {
            FakeResponse::json(format!(
                r#"{{"data":{{"authorizationToken":"alibaba-secret-password","tempUserName":"cr_temp_user","expireDate":{expire_ms}}}}}"#
            ))
        } else {
            FakeResponse::new(404, "{}")
        }
    });
    let entry = check([
        "init",
        "--provider",
        "alibaba",
        "--env",
        "alibaba=ALIBABA_CLOUD_ACCESS_KEY_ID=LTAIcheckkey",
        "--env",
        "alibaba=ALIBABA_CLOUD_ACCESS_KEY_SECRET=alibaba-check-secret",
        "--arg",
        &format!("alibaba=--cr-endpoint={}", cr.url()),
        "--arg",
        "alibaba=--metadata-endpoint=http://127.0.0.1:9",
    ]);
    assert_eq!(entry.code, 0, "{}", entry.stderr);
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, &entry.stdout).unwrap();
    let run = check([
        "run",
        "--config",
        &config.display().to_string(),
        "--bin-dir",
        &bin.display().to_string(),
        "registry.cn-hangzhou.aliyuncs.com/ns/app:1.0",
    ]);
    usable(&run);
    assert!(
        run.stdout.contains("username \"cr_temp_user\""),
        "{}",
        run.stdout
    );
    // (The config's own env, the key secret included, is shown as written: it is the
    // operator's file. The provider's stderr never has it.)
    assert!(
        !run.stdout.contains("alibaba-secret-password")
            && !run.stderr.contains("alibaba-secret-password"),
        "the registry password is shown"
    );
    assert!(
        !run.stderr.contains("alibaba-check-secret"),
        "the key secret is logged"
    );
    let requests = cr.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].header("x-acs-action"),
        Some("GetAuthorizationToken")
    );
    assert_eq!(requests[0].header("x-acs-version"), Some("2016-06-07"));
    assert!(
        requests[0].header("authorization").is_some_and(
            |a| a.starts_with("ACS3-HMAC-SHA256 Credential=LTAIcheckkey,SignedHeaders=")
        ),
        "{:?}",
        requests[0].header("authorization")
    );
}
