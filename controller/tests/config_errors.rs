//! Config errors are config errors: found at start, before the API client is built, each is one
//! stderr line and exit code 2, with no API call and no upstream call. Targets' provider runs in
//! key-only mode (no network) tell the controller each target's entry file.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::*;

/// Runs `--once` and checks the refusal: exit 2, one line containing each of `expected`, and
/// nothing asked of the API server or of ECR.
fn refused(w: &World, command: std::process::Command, expected: &[&str]) -> String {
    let (code, stderr) = once(command);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    for text in expected {
        assert!(stderr.contains(text), "{text:?} in {stderr}");
    }
    assert!(w.api.requests().is_empty(), "no API call: {stderr}");
    assert_eq!(w.ecr.calls(), 0, "no upstream call: {stderr}");
    stderr
}

#[test]
fn target_args_that_set_what_the_controller_sets_are_refused_at_start() {
    let w = World::new("args", 3600);
    for (args, flag, what) in [
        (
            &["--token-cache-dir=/tmp/elsewhere"][..],
            "--token-cache-dir",
            "the token cache directory",
        ),
        (
            &["get-credentials", "-token-cache-dir", "/tmp/elsewhere"][..],
            "-token-cache-dir",
            "the token cache directory",
        ),
        (
            &["--token-cache=false"][..],
            "--token-cache",
            "the token cache switch",
        ),
        (
            &["--token-cache-shared-identity", "other"][..],
            "--token-cache-shared-identity",
            "the shared identity",
        ),
        (&["-cache-jitter=5"][..], "-cache-jitter", "the jitter"),
    ] {
        let mut target = TargetSpec::ecr(&w.ecr);
        target.args = args.iter().map(|a| (*a).to_owned()).collect();
        let config = target.config(w.dir.path());
        let stderr = refused(
            &w,
            command(&w.api, w.dir.path(), &config),
            &[
                "targets[0] (ecr-prod): ",
                &format!("args set {flag}, {what}"),
                "which the controller sets itself for every provider run",
            ],
        );
        assert!(stderr.contains("ERROR"), "{stderr}");
    }
}

#[test]
fn two_targets_that_publish_one_entry_are_refused() {
    let w = World::new("twice", 3600);
    let target = TargetSpec::ecr(&w.ecr);
    let config = config_of(w.dir.path(), &[("ecr-a", &target), ("ecr-b", &target)]);
    refused(
        &w,
        command(&w.api, w.dir.path(), &config),
        &[
            "targets ecr-a and ecr-b publish the same entry ",
            "(key provider=ecr;",
            "region=us-west-2;",
            "one target per ECR region / ACR login server",
        ],
    );
}

#[test]
fn a_provider_that_cannot_name_its_entry_is_a_config_error() {
    let w = World::new("nokey", 3600);
    let target = TargetSpec {
        provider: "acr",
        command: provider_binary("acr-credential-provider"),
        args: vec!["/nonexistent/azure.json".into()],
        env: Vec::new(),
        image: "myreg.azurecr.io/app".into(),
    };
    refused(
        &w,
        command(&w.api, w.dir.path(), &target.config(w.dir.path())),
        &[
            "target acr-prod: its provider cannot say which token cache entry it writes: the provider ",
            "failed (exit code 2): ",
            "/nonexistent/azure.json",
        ],
    );
}

#[test]
fn an_api_timeout_that_does_not_fit_in_the_lease_is_refused() {
    let w = World::new("timeout", 3600);
    let durations = [
        "--lease-duration=4s",
        "--renew-deadline=3s",
        "--retry-period=200ms",
        "--api-timeout=1s",
    ];
    refused(
        &w,
        command_with(&w.api, w.dir.path(), &w.config, &durations),
        &["--api-timeout (1s) must be shorter than --lease-duration minus --renew-deadline (1s)"],
    );
}
