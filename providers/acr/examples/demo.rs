//! A standalone demo of `acr-credential-provider` against local fakes: Entra ID and a registry
//! over TLS (test CA via `SSL_CERT_FILE`), `myreg.azurecr.io` reached through a local CONNECT
//! proxy (`HTTPS_PROXY`), an App Service managed-identity endpoint (`IDENTITY_ENDPOINT`), and an
//! AKS identity-bindings endpoint reached by address under its own cluster CA (`--ib-*`).
//!
//! ```text
//! cargo build -p acr-credential-provider --examples --bins
//! cargo run -p acr-credential-provider --example demo                # runs the scenarios, prints everything
//! cargo run -p acr-credential-provider --example demo -- --serve 120 # keeps the fakes up and prints the env to try by hand
//! ```
//!
//! Nothing leaves the machine: the proxy refuses every host it has no fake for.
// A development tool, not a plugin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use kcp_kubelet::ApiVersion;
use kcp_kubelet::protocol::encode_request;
use support::*;

fn plugin_path() -> PathBuf {
    // target/<profile>/examples/demo → target/<profile>/acr-credential-provider
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("acr-credential-provider"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("acr-credential-provider"))
}

fn run(
    world: &World,
    title: &str,
    config: &str,
    args: &[&str],
    env: &[(&str, String)],
    request: &[u8],
) {
    println!("\n=== {title}");
    let config_path = world.file("azure.json", config);
    println!("azure.json: {config}");
    let mut cmd = Command::new(plugin_path());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SSL_CERT_FILE", world.ca.ca_file())
        .env("HTTPS_PROXY", world.proxy.url())
        .env("AZURE_AUTHORITY_HOST", world.entra.https_url())
        .arg(&config_path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    println!("$ acr-credential-provider {config_path} {}", args.join(" "));
    println!("stdin:  {}", String::from_utf8_lossy(request).trim());
    let Ok(mut child) = cmd.spawn() else {
        println!(
            "cannot run {}: build it first (cargo build -p acr-credential-provider)",
            plugin_path().display()
        );
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(request);
    }
    let Ok(out) = child.wait_with_output() else {
        return;
    };
    println!("exit:   {}", out.status.code().unwrap_or(-1));
    println!("stdout: {}", String::from_utf8_lossy(&out.stdout).trim());
    println!("stderr: {}", String::from_utf8_lossy(&out.stderr).trim());
}

fn main() {
    let world = World::new();
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let secs: u64 = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(120);
        let config = world.file(
            "azure.json",
            &format!(r#"{{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"{CLIENT_SECRET}"}}"#),
        );
        println!("export SSL_CERT_FILE={}", world.ca.ca_file().display());
        println!("export HTTPS_PROXY={}", world.proxy.url());
        println!("export AZURE_AUTHORITY_HOST={}", world.entra.https_url());
        println!(
            "export IDENTITY_ENDPOINT={}/msi/token IDENTITY_HEADER={IDENTITY_HEADER}",
            world.msi.url()
        );
        println!(
            "echo '{}' | {} {config} --v=4",
            String::from_utf8_lossy(&encode_request(
                ApiVersion::V1,
                "myreg.azurecr.io/app",
                None,
                &Default::default()
            ))
            .trim(),
            plugin_path().display()
        );
        println!("(fakes up for {secs}s)");
        std::thread::sleep(Duration::from_secs(secs));
        return;
    }
    let request = |image: &str| encode_request(ApiVersion::V1, image, None, &Default::default());
    let sp = format!(
        r#"{{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"{CLIENT_SECRET}"}}"#
    );
    run(
        &world,
        "service principal, exchanged for an ACR refresh token",
        &sp,
        &[],
        &[],
        &request("myreg.azurecr.io/team/app"),
    );
    run(
        &world,
        "service principal, upstream passthrough (compatibility flag)",
        &sp,
        &["--service-principal-passthrough"],
        &[],
        &request("myreg.azurecr.io/team/app"),
    );
    let mi_env = [
        (
            "IDENTITY_ENDPOINT",
            format!("{}/msi/token", world.msi.url()),
        ),
        ("IDENTITY_HEADER", IDENTITY_HEADER.to_owned()),
    ];
    run(
        &world,
        "managed identity, mirror mcr.microsoft.com -> myreg.azurecr.io",
        r#"{"tenantId":"tenant-1","useManagedIdentityExtension":true}"#,
        &["--registry-mirror=mcr.microsoft.com:myreg.azurecr.io"],
        &mi_env,
        &request("mcr.microsoft.com/azure-cli"),
    );
    let annotations = fields(&[
        ("kubernetes.azure.com/acr-client-id", "pod-client"),
        ("kubernetes.azure.com/acr-tenant-id", "pod-tenant"),
    ]);
    run(
        &world,
        "service-account token (KEP-4412) federated with Entra ID",
        &sp,
        &[],
        &[],
        &encode_request(
            ApiVersion::V1,
            "myreg.azurecr.io/app",
            Some(SA_TOKEN),
            &annotations,
        ),
    );
    // AKS identity bindings: the endpoint sits behind an address, with a certificate from its own
    // cluster CA (not the one in SSL_CERT_FILE), and is never reached through HTTPS_PROXY.
    let cluster_ca = kcp_testkit::tls::TestCa::new();
    let ib = kcp_testkit::sni::SniFakeServer::start(&cluster_ca, &["ib.cluster.example"], |_| {
        kcp_testkit::fake::FakeResponse::json(
            r#"{"access_token":"ib-access-token-demo","expires_in":3600}"#,
        )
    });
    let ib_args = [
        "--ib-sni-name=ib.cluster.example".to_owned(),
        format!("--ib-apiserver-ip={}", ib.addr()),
        format!("--ib-ca-file={}", cluster_ca.ca_file().display()),
    ];
    let ib_args: Vec<&str> = ib_args.iter().map(String::as_str).collect();
    run(
        &world,
        "identity bindings: the pod token traded at the cluster's endpoint, then exchanged",
        r#"{"tenantId":"tenant-1","useManagedIdentityExtension":true}"#,
        &ib_args,
        &mi_env,
        &encode_request(
            ApiVersion::V1,
            "myreg.azurecr.io/app",
            Some(SA_TOKEN),
            &fields(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        ),
    );
    for r in ib.requests() {
        println!(
            "ib       {} {} (host {}, SNI {:?})",
            r.method,
            r.target,
            r.header("host").unwrap_or(""),
            ib.server_names()
        );
    }
    run(
        &world,
        "look-alike host: refused, nothing sent",
        &sp,
        &[],
        &[],
        &request("myreg.azurecr.io.evil.com/app"),
    );
    world
        .challenge_script
        .push(kcp_testkit::fake::FakeResponse::new(401, "{}").header(
            "www-authenticate",
            r#"Bearer realm="https://evil.example.com/oauth2/token",service="myreg.azurecr.io""#,
        ));
    run(
        &world,
        "registry challenge naming an off-cloud realm: refused, no token sent",
        &sp,
        &[],
        &[],
        &request("myreg.azurecr.io/app"),
    );
    println!("\n=== what the fakes saw");
    for r in world.entra.requests() {
        println!("entra    {} {}", r.method, r.target);
    }
    for r in world.msi.requests() {
        println!("msi      {} {}", r.method, r.target);
    }
    for r in world.registry.requests() {
        println!(
            "registry {} {} (host {})",
            r.method,
            r.target,
            r.header("host").unwrap_or("")
        );
    }
    println!("proxy CONNECTs: {:?}", world.proxy.targets());
    println!("off-cloud fake requests: {}", world.evil.requests().len());
}
