//! The shared bad-input table (`kcp_testkit::bad_input`), and what only this binary
//! reads: its positional `azure.json` and its own flags.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_testkit::{Plugin, bad_input};
use support::*;

const SP_CONFIG: &str = r#"{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;
const IMAGE: &str = "myreg.azurecr.io/app";

#[test]
fn refuses_the_shared_bad_input_table() {
    let world = World::new();
    bad_input::assert_rejects_all(&world.plugin(SP_CONFIG), IMAGE);
    // Only the control request got anywhere.
    assert_eq!(world.entra.requests().len(), 1);
    assert_eq!(
        world.registry_calls(),
        vec![
            ("GET".to_owned(), "/v2/".to_owned()),
            ("POST".to_owned(), "/oauth2/exchange".to_owned())
        ]
    );
}

/// A broken `azure.json` is a configuration error found before the request is read: it exits 2
/// like command-line mistakes. A file that parses but names no usable identity can only be judged
/// against the request (service-account mode needs none), so it exits 1.
#[test]
fn refuses_a_broken_cloud_config_and_its_own_bad_flags() {
    let world = World::new();
    let dir = world.dir.path().display().to_string();
    // Each case its own file: they fail before any network call, so no proxy or CA is needed.
    let config = |name: &str, content: &[u8]| {
        let path = world.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        Plugin::new(BIN).args([path.display().to_string()])
    };
    let cases: Vec<(&str, Plugin, i32, String)> = vec![
        (
            "two config files",
            world.plugin(SP_CONFIG).args(["/nonexistent/azure.json"]),
            2,
            "expected exactly one argument (config file)".into(),
        ),
        (
            "a missing file",
            Plugin::new(BIN).args(["/nonexistent/azure.json"]),
            2,
            "reading the cloud config file /nonexistent/azure.json".into(),
        ),
        (
            "no config argument",
            Plugin::new(BIN),
            2,
            "config file is not specified".into(),
        ),
        (
            "a directory",
            Plugin::new(BIN).args([dir.clone()]),
            2,
            format!("reading the cloud config file {dir}: it is a directory"),
        ),
        (
            "not JSON",
            config("bad.json", b"{invalid json"),
            2,
            "bad.json is not valid JSON or YAML".into(),
        ),
        (
            "not UTF-8",
            config("binary.json", b"\xff\xfe{}"),
            2,
            "binary.json is not valid JSON or YAML: not UTF-8".into(),
        ),
        (
            "a YAML list",
            config("list.yaml", b"- a\n- b\n"),
            2,
            "expected a mapping of settings, got a list".into(),
        ),
        (
            "a field of the wrong type",
            config("type.json", br#"{"useManagedIdentityExtension":"yes"}"#),
            2,
            r#"field "useManagedIdentityExtension" must be true or false, got a string"#.into(),
        ),
        (
            "an empty file",
            config("empty.json", b""),
            1,
            "configures no identity".into(),
        ),
        (
            "--service-principal-passthrough=banana",
            world
                .plugin(SP_CONFIG)
                .args(["--service-principal-passthrough=banana"]),
            2,
            "invalid value 'banana' for '--service-principal-passthrough".into(),
        ),
        (
            "ACR_SERVICE_PRINCIPAL_PASSTHROUGH=banana",
            world
                .plugin(SP_CONFIG)
                .env("ACR_SERVICE_PRINCIPAL_PASSTHROUGH", "banana"),
            2,
            "invalid value 'banana' for '--service-principal-passthrough".into(),
        ),
        (
            "--ib-sni-name without --ib-apiserver-ip",
            world
                .plugin(SP_CONFIG)
                .args(["--ib-sni-name=ib.example.com"]),
            2,
            "identity bindings: ib-apiserver-ip must be set".into(),
        ),
        (
            "--ib-apiserver-ip without --ib-sni-name",
            world.plugin(SP_CONFIG).args(["--ib-apiserver-ip=10.0.0.1"]),
            2,
            "identity bindings: ib-sni-name must be set".into(),
        ),
        (
            "--ib-default-client-id without --ib-sni-name",
            world.plugin(SP_CONFIG).args(["--ib-default-client-id=c"]),
            2,
            "identity bindings: ib-sni-name must be set".into(),
        ),
        (
            "--ib-sni-name with a scheme",
            world.plugin(SP_CONFIG).args([
                "--ib-sni-name=https://ib.example.com",
                "--ib-apiserver-ip=10.0.0.1",
            ]),
            2,
            "must not contain protocol prefix".into(),
        ),
        (
            "--ib-sni-name with a path",
            world.plugin(SP_CONFIG).args([
                "--ib-sni-name=ib.example.com/x",
                "--ib-apiserver-ip=10.0.0.1",
            ]),
            2,
            r#"ib-sni-name "ib.example.com/x" is not a host name"#.into(),
        ),
        (
            "--ib-apiserver-ip not an address",
            world.plugin(SP_CONFIG).args([
                "--ib-sni-name=ib.example.com",
                "--ib-apiserver-ip=999.999.999.999",
            ]),
            2,
            "must be a valid IP address or resolvable FQDN".into(),
        ),
        (
            "--ib-apiserver-ip twice",
            world.plugin(SP_CONFIG).args([
                "--ib-sni-name=ib.example.com",
                "--ib-apiserver-ip=10.0.0.1",
                "--ib-apiserver-ip=10.0.0.2",
            ]),
            2,
            "'--ib-apiserver-ip <ADDRESS>' cannot be used multiple times".into(),
        ),
    ];
    for (name, p, code, want) in cases {
        let out = p.request(ApiVersion::V1, IMAGE);
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(code), "{name}: {line}");
        assert!(line.contains(&want), "{name}: {line:?} lacks {want:?}");
    }
    assert!(world.entra.requests().is_empty());
    assert!(world.registry.requests().is_empty());
}
