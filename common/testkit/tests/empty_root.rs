//! The release tarballs (`scripts/release`) run in an empty root: a directory holding only the
//! binary, a CA bundle, /etc/hosts and a hostile /etc/nsswitch.conf, entered with chroot. No
//! libc, no loader, no NSS modules, no locale files: what a static binary has to live without on
//! a node whose userland differs from the build machine's.
//!
//! Each provider answers a real request end to end against loopback fakes, resolving a name
//! from /etc/hosts and, for the HTTPS fakes, loading the trust store found inside the root.
//! The nsswitch.conf lists no `files` or `dns` service at all, so these lookups only work because
//! the static build pins host lookups to glibc's built-in services (`common/plugin/src/http.rs`).
//!
//! Ignored by default, because it needs the static release build:
//!
//! ```text
//! scripts/release --out target/dist
//! KCP_RELEASE_DIST=target/dist cargo test -p kcp-testkit --test empty_root -- --ignored
//! ```
//!
//! Needs root (chroot) or unprivileged user namespaces (`unshare --user --map-root-user chroot`);
//! with neither it records a skip ([`kcp_testkit::skip::missing`]; a failure under
//! `KCP_REQUIRE_ALL=1`, as CI runs it).
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer};
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};
use kcp_testkit::{Plugin, TempDir, unix_now};

const BINARIES: [&str; 8] = [
    "ecr-credential-provider",
    "acr-credential-provider",
    "gcr-credential-provider",
    "static-credential-provider",
    "oidc-credential-provider",
    "alibaba-credential-provider",
    "credential-provider-check",
    "credential-provider-token-controller",
];
const ECR_IMAGE: &str = "123456789012.dkr.ecr.us-east-1.amazonaws.com/app";
const ECR_REGISTRY: &str = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
const HOSTS: &str = "127.0.0.1 localhost\n127.0.0.1 ecr.fake.test login.fake.test cr.fake.test\n";
/// A node whose hosts line names only modules that are not there (and that glibc would dlopen).
const NSSWITCH: &str = "hosts: mymachines resolve [!UNAVAIL=return] myhostname\n";

/// The tarballs in `KCP_RELEASE_DIST`, checked against SHA256SUMS and unpacked: (the temporary
/// directory, the directory holding the binaries).
fn unpack_release() -> (TempDir, PathBuf) {
    let dist = std::env::var_os("KCP_RELEASE_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("set KCP_RELEASE_DIST to the directory scripts/release wrote (e.g. dist)")
        });
    // Relative to the workspace root, where scripts/release runs (tests run in common/testkit/).
    let dist = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dist);
    let sums = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&dist)
        .output()
        .unwrap_or_else(|e| panic!("running sha256sum in {}: {e}", dist.display()));
    assert!(
        sums.status.success(),
        "SHA256SUMS does not match the tarballs:\n{}{}",
        String::from_utf8_lossy(&sums.stdout),
        String::from_utf8_lossy(&sums.stderr)
    );
    let unpacked = TempDir::new("release");
    // The arm64 tarballs when the suite runs against them (scripts/cross-test); their binaries
    // run in the chroot through qemu-user-static, registered with binfmt_misc's F flag.
    let platform = match kcp_testkit::cross_target().as_deref() {
        None => "linux-amd64",
        Some("aarch64-unknown-linux-gnu") => "linux-arm64",
        Some(other) => panic!("no empty-root test for {other}"),
    };
    for name in BINARIES {
        let tarball = std::fs::read_dir(&dist)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dist.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with(&format!("{name}-"))
                        && n.ends_with(&format!("-{platform}.tar.gz"))
                })
            })
            .unwrap_or_else(|| panic!("no {name}-*-{platform}.tar.gz in {}", dist.display()));
        let listing = Command::new("tar")
            .arg("-tzf")
            .arg(&tarball)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&listing.stdout),
            format!("LICENSE\nREADME.txt\nTHIRD-PARTY-NOTICES.txt\n{name}\n"),
            "{} holds exactly the binary, LICENSE, README.txt and THIRD-PARTY-NOTICES.txt",
            tarball.display()
        );
        // The notices name the crates every binary is built from, with licence texts.
        let notices = Command::new("tar")
            .arg("-xzOf")
            .arg(&tarball)
            .arg("THIRD-PARTY-NOTICES.txt")
            .output()
            .unwrap();
        let notices = String::from_utf8_lossy(&notices.stdout);
        // Every binary but the checker carries rustls, ring and tokio (the checker links the
        // token cache for `wait`, so the notices name them too; its binary holds no HTTP stack,
        // checked below).
        let mut needles = vec![
            "  serde 1.",
            "Permission is hereby granted",
            "Apache License",
        ];
        if name != "credential-provider-check" {
            needles.extend(["  rustls 0.23", "  ring 0.17", "  tokio 1."]);
        }
        for needle in needles {
            assert!(
                notices.contains(needle),
                "{}: THIRD-PARTY-NOTICES.txt lacks {needle:?}",
                tarball.display()
            );
        }
        assert!(
            !notices.contains("rcgen"),
            "test-only crates are not listed"
        );
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(unpacked.path())
            .arg(name)
            .status()
            .unwrap();
        assert!(status.success(), "unpacking {}", tarball.display());
        // The checker makes no network call: link-time optimisation leaves no TLS or HTTP code
        // in it, whatever its dependency graph holds (the controller, for contrast, has them).
        let binary = std::fs::read(unpacked.path().join(name)).unwrap();
        let has = |needle: &[u8]| binary.windows(needle.len()).any(|w| w == needle);
        match name {
            "credential-provider-check" => assert!(
                !has(b"rustls") && !has(b"hyper"),
                "the checker is built without an HTTP stack"
            ),
            "credential-provider-token-controller" => assert!(has(b"rustls")),
            _ => {}
        }
    }
    let dir = unpacked.path().to_owned();
    (unpacked, dir)
}

/// How to enter a root: `chroot` as root, through a user namespace otherwise.
#[derive(Debug, Clone)]
struct Jail {
    prefix: Vec<String>,
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
}

impl Jail {
    /// `None` (after saying why) when this machine cannot chroot.
    fn find(probe_root: &Path, probe: &str) -> Option<Jail> {
        let chroot = find_tool("chroot")?.display().to_string();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let prefix = if root {
            vec![chroot]
        } else {
            let unshare = find_tool("unshare")?.display().to_string();
            vec![unshare, "--user".into(), "--map-root-user".into(), chroot]
        };
        let jail = Jail { prefix };
        let out = jail
            .command(probe_root, probe, &["--version"])
            .output()
            .ok()?;
        if out.status.success() {
            return Some(jail);
        }
        eprintln!(
            "cannot enter an empty root as {} ({}): {}",
            if root { "root" } else { "a user" },
            jail.prefix.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        None
    }

    fn command(&self, root: &Path, binary: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.prefix[0]);
        cmd.args(&self.prefix[1..])
            .arg(root)
            .arg(format!("/{binary}"))
            .args(args)
            .env_clear();
        cmd
    }

    /// A testkit plugin (kubelet-like exec, empty environment) running `/binary` inside `root`.
    fn plugin(&self, root: &Path, binary: &str) -> Plugin {
        Plugin::program(&self.prefix[0])
            .args(self.prefix[1..].iter().cloned())
            .args([root.display().to_string(), format!("/{binary}")])
            // The host's HOME does not exist in there.
            .env("HOME", "/")
    }
}

/// A root holding `binary` and the given files (path inside the root → content).
fn empty_root(bin_dir: &Path, binary: &str, files: &[(&str, &[u8])]) -> TempDir {
    let root = TempDir::new("root");
    let target = root.path().join(binary);
    std::fs::copy(bin_dir.join(binary), &target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (path, content) in files {
        let path = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
    }
    // Readable by the mapped user of `unshare --map-root-user` too.
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

fn base_files<'a>() -> Vec<(&'a str, &'a [u8])> {
    vec![
        ("/etc/hosts", HOSTS.as_bytes()),
        ("/etc/nsswitch.conf", NSSWITCH.as_bytes()),
    ]
}

fn ecr_answer(expires: u64) -> FakeResponse {
    let token = base64::engine::general_purpose::STANDARD.encode("AWS:ecr-password-from-the-fake");
    FakeResponse::new(200, format!(
        r#"{{"authorizationData":[{{"authorizationToken":"{token}","expiresAt":{expires},"proxyEndpoint":"https://{ECR_REGISTRY}"}}]}}"#
    ))
    .header("content-type", "application/x-amz-json-1.1")
}

/// ECR over HTTPS to a name from /etc/hosts, trusting the CA through the default bundle path.
fn ecr(jail: &Jail, bin_dir: &Path) {
    let ca = TestCa::new();
    let expires = unix_now() + 12 * 3600;
    let fake = TlsFakeServer::start(&ca, &["ecr.fake.test"], move |_| ecr_answer(expires));
    let pem = std::fs::read(ca.ca_file()).unwrap();
    let mut files = base_files();
    files.push(("/etc/ssl/certs/ca-certificates.crt", &pem));
    let root = empty_root(bin_dir, "ecr-credential-provider", &files);
    let out = jail
        .plugin(root.path(), "ecr-credential-provider")
        .env("AWS_ACCESS_KEY_ID", "AKIDEMPTYROOT")
        .env("AWS_SECRET_ACCESS_KEY", "empty-root-secret")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env(
            "AWS_ENDPOINT_URL",
            format!("https://ecr.fake.test:{}", fake.addr().port()),
        )
        .request(ApiVersion::V1, ECR_IMAGE);
    let ok = out.accepted();
    assert_eq!(
        ok.auth,
        BTreeMap::from([(
            ECR_REGISTRY.to_owned(),
            ("AWS".to_owned(), "ecr-password-from-the-fake".to_owned())
        )]),
        "stderr: {}",
        out.stderr()
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].header("x-amz-target"),
        Some("AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken")
    );
    assert!(
        requests[0]
            .header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEMPTYROOT/")),
        "{:?}",
        requests[0].header("authorization")
    );
}

/// ECR with the endpoint unreachable: one clean stderr line, an exit code, nothing on stdout.
fn ecr_unreachable(jail: &Jail, bin_dir: &Path) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = empty_root(bin_dir, "ecr-credential-provider", &base_files());
    let out = jail
        .plugin(root.path(), "ecr-credential-provider")
        .env("AWS_ACCESS_KEY_ID", "AKIDEMPTYROOT")
        .env("AWS_SECRET_ACCESS_KEY", "empty-root-secret")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ENDPOINT_URL", format!("http://localhost:{closed}"))
        .request(ApiVersion::V1, ECR_IMAGE);
    let reason = out.rejected();
    assert!(reason.contains("localhost"), "names the endpoint: {reason}");
}

/// GCR from the metadata server at `localhost` (resolved through /etc/hosts), plain HTTP.
fn gcr(jail: &Jail, bin_dir: &Path) {
    let metadata = FakeServer::start(|req| {
        if req.path() == "/computeMetadata/v1/instance/service-accounts/default/token"
            && req.header("metadata-flavor") == Some("Google")
        {
            FakeResponse::json(
                r#"{"access_token":"ya29.empty-root","expires_in":3599,"token_type":"Bearer"}"#,
            )
            .header("metadata-flavor", "Google")
        } else {
            FakeResponse::new(404, "Not Found").header("metadata-flavor", "Google")
        }
    });
    let root = empty_root(bin_dir, "gcr-credential-provider", &base_files());
    let out = jail
        .plugin(root.path(), "gcr-credential-provider")
        .args(["get-credentials"])
        .env(
            "GCE_METADATA_HOST",
            format!("localhost:{}", metadata.addr().port()),
        )
        .request(ApiVersion::V1, "us-docker.pkg.dev/p/r/app");
    let ok = out.accepted();
    assert_eq!(
        ok.auth.get("*.pkg.dev"),
        Some(&("_token".to_owned(), "ya29.empty-root".to_owned())),
        "stderr: {}",
        out.stderr()
    );
    assert_eq!(metadata.requests().len(), 1);
}

/// ACR with a service principal: Entra ID over HTTPS at a name from /etc/hosts, then the
/// registry's exchange through a CONNECT proxy, trusting the CA through `SSL_CERT_FILE`.
fn acr(jail: &Jail, bin_dir: &Path) {
    let ca = TestCa::new();
    let entra = TlsFakeServer::start(&ca, &["login.fake.test"], |req| {
        if req.method == "POST" && req.path() == "/tenant-1/oauth2/v2.0/token" {
            FakeResponse::json(
                r#"{"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,"access_token":"entra-token-empty-root"}"#,
            )
        } else {
            FakeResponse::new(404, "{}")
        }
    });
    let refresh = {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!(
            "{}.{}.sig",
            b64(r#"{"alg":"none"}"#),
            b64(&format!(
                r#"{{"exp":{},"aud":"myreg.azurecr.io","grant_type":"refresh_token"}}"#,
                unix_now() + 3 * 3600
            ))
        )
    };
    let answer = refresh.clone();
    let registry = TlsFakeServer::start(&ca, &["myreg.azurecr.io"], move |req| {
        match (req.method.as_str(), req.path()) {
            ("GET", "/v2/") => FakeResponse::new(401, "{}").header(
                "www-authenticate",
                r#"Bearer realm="https://myreg.azurecr.io/oauth2/token",service="myreg.azurecr.io""#,
            ),
            ("POST", "/oauth2/exchange")
                if req.body_text().contains("access_token=entra-token-empty-root") =>
            {
                FakeResponse::json(format!(r#"{{"refresh_token":"{answer}"}}"#))
            }
            _ => FakeResponse::new(400, "{}"),
        }
    });
    let proxy = ConnectProxy::start(&[("myreg.azurecr.io:443", registry.addr())]);
    let pem = std::fs::read(ca.ca_file()).unwrap();
    let config = br#"{"tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-secret-empty-root"}"#;
    let mut files = base_files();
    files.push(("/ca.pem", &pem));
    files.push(("/azure.json", config));
    let root = empty_root(bin_dir, "acr-credential-provider", &files);
    let out = jail
        .plugin(root.path(), "acr-credential-provider")
        .args(["/azure.json"])
        .env("SSL_CERT_FILE", "/ca.pem")
        .env(
            "AZURE_AUTHORITY_HOST",
            format!("https://login.fake.test:{}", entra.addr().port()),
        )
        .env("HTTPS_PROXY", proxy.url())
        .env("NO_PROXY", "login.fake.test")
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    let ok = out.accepted();
    assert_eq!(
        ok.auth.get("myreg.azurecr.io"),
        Some(&("00000000-0000-0000-0000-000000000000".to_owned(), refresh)),
        "stderr: {}",
        out.stderr()
    );
    assert_eq!(entra.requests().len(), 1);
    let targets = proxy.targets();
    assert!(
        !targets.is_empty() && targets.iter().all(|t| t == "myreg.azurecr.io:443"),
        "{targets:?}"
    );
}

/// The static provider directly, and through the checker (fork and exec inside the root).
fn static_and_checker(jail: &Jail, bin_dir: &Path) {
    let config = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: static-credential-provider\n    matchImages: [\"*.example.com\"]\n    defaultCacheDuration: 10m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    args: [\"--registry=*.example.com\", \"--username=robot\", \"--password-file=/password\"]\n";
    let mut files = base_files();
    files.push(("/password", b"robot-password\n"));
    files.push(("/config.yaml", config.as_bytes()));
    let root = empty_root(bin_dir, "static-credential-provider", &files);
    std::fs::copy(
        bin_dir.join("credential-provider-check"),
        root.path().join("credential-provider-check"),
    )
    .unwrap();

    let out = jail
        .plugin(root.path(), "static-credential-provider")
        .args([
            "--registry=*.example.com",
            "--username=robot",
            "--password-file=/password",
        ])
        .request(ApiVersion::V1, "harbor.example.com/app");
    assert_eq!(
        out.accepted().auth,
        BTreeMap::from([(
            "harbor.example.com".to_owned(),
            ("robot".to_owned(), "robot-password".to_owned())
        )]),
        "stderr: {}",
        out.stderr()
    );

    let run = jail
        .command(
            root.path(),
            "credential-provider-check",
            &[
                "run",
                "--output",
                "json",
                "--config",
                "/config.yaml",
                "--bin-dir",
                "/",
                "harbor.example.com/app",
            ],
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let provider = &json["providers"][0];
    assert_eq!(provider["verdict"], "accepted", "{provider}");
    assert_eq!(
        provider["keysUsed"],
        serde_json::json!(["harbor.example.com"])
    );
    assert!(
        !stdout.contains("robot-password"),
        "the checker redacts: {stdout}"
    );
}

#[test]
#[ignore = "needs scripts/release output: KCP_RELEASE_DIST=dist cargo test -p kcp-testkit --test empty_root -- --ignored"]
fn release_binaries_work_in_an_empty_root() {
    let (_unpacked, bin_dir) = unpack_release();
    let probe = empty_root(&bin_dir, "static-credential-provider", &[]);
    let Some(jail) = Jail::find(probe.path(), "static-credential-provider") else {
        return kcp_testkit::skip::missing(
            "chroot (root or unprivileged user namespaces)",
            "enters the empty root (see above why it failed); the tarballs and SHA256SUMS were checked",
        );
    };
    static_and_checker(&jail, &bin_dir);
    gcr(&jail, &bin_dir);
    ecr(&jail, &bin_dir);
    ecr_unreachable(&jail, &bin_dir);
    acr(&jail, &bin_dir);
    oidc_passthrough(&jail, &bin_dir);
    alibaba(&jail, &bin_dir);
    controller(&jail, &bin_dir);
}

/// The fleet token controller starts in an empty root: its version, and a config it refuses in
/// one line (exit 2) before it looks for an API server.
fn controller(jail: &Jail, bin_dir: &Path) {
    let name = "credential-provider-token-controller";
    let bad = b"sharedIdentity: Nodes\ntargets: []\n";
    let root = empty_root(bin_dir, name, &[("/config.yaml", bad.as_slice())]);
    let version = jail
        .command(root.path(), name, &["--version"])
        .output()
        .unwrap();
    assert_eq!(version.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with(&format!("{name} ")),
        "{}",
        String::from_utf8_lossy(&version.stdout)
    );
    let refused = jail
        .command(root.path(), name, &["--config=/config.yaml", "--once"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("sharedIdentity"), "{stderr}");
    assert!(refused.stdout.is_empty());
}

/// The oidc provider reading its registries file and the pod's token, no network: passthrough.
fn oidc_passthrough(jail: &Jail, bin_dir: &Path) {
    use base64::Engine as _;
    let registries = "registries:\n  - host: harbor.acme.internal\n    protocol: passthrough\n    username: jwt\n";
    let mut files = base_files();
    files.push(("/registries.yaml", registries.as_bytes()));
    let root = empty_root(bin_dir, "oidc-credential-provider", &files);
    let b64 = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
    let exp = unix_now() + 3600;
    let token = format!(
        "{}.{}.c2ln",
        b64(r#"{"alg":"RS256"}"#),
        b64(&format!(
            r#"{{"aud":["harbor.acme.internal"],"exp":{exp}}}"#
        ))
    );
    let out = jail
        .plugin(root.path(), "oidc-credential-provider")
        .args(["--config=/registries.yaml"])
        .service_account_token(token.clone())
        // As the kubelet allows an answer whose password is its own token: cacheType Token.
        .cache_type_token(true)
        .request(ApiVersion::V1, "harbor.acme.internal/team/app");
    assert_eq!(
        out.accepted().auth,
        BTreeMap::from([("harbor.acme.internal".to_owned(), ("jwt".to_owned(), token))]),
        "stderr: {}",
        out.stderr()
    );
}

/// Alibaba Cloud Container Registry with static keys: a Personal Edition host answered by
/// Container Registry's token call over HTTPS to a name from /etc/hosts (the CA through the
/// default bundle path), signed with the key (V3); the same request in key-only mode (a cache
/// key, no call); and a look-alike host refused before any call.
fn alibaba(jail: &Jail, bin_dir: &Path) {
    const IMAGE: &str = "registry.cn-hangzhou.aliyuncs.com/ns/app:1.0";
    let ca = TestCa::new();
    let expire_ms = (unix_now() + 3600) * 1000;
    let fake = TlsFakeServer::start(&ca, &["cr.fake.test"], move |_| {
        FakeResponse::json(format!(
            r#"{{"data":{{"authorizationToken":"alibaba-password-from-the-fake","tempUserName":"cr_temp_user","expireDate":{expire_ms}}}}}"#
        ))
    });
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pem = std::fs::read(ca.ca_file()).unwrap();
    let mut files = base_files();
    files.push(("/etc/ssl/certs/ca-certificates.crt", &pem));
    let root = empty_root(bin_dir, "alibaba-credential-provider", &files);
    let plugin = || {
        jail.plugin(root.path(), "alibaba-credential-provider")
            .args([
                format!("--cr-endpoint=https://cr.fake.test:{}", fake.addr().port()),
                format!("--metadata-endpoint=http://127.0.0.1:{closed}"),
            ])
            .env("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAIEMPTYROOT")
            .env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "empty-root-secret")
            .secret("empty-root-secret")
            .secret("alibaba-password-from-the-fake")
    };

    let key = plugin()
        .env("CREDENTIAL_PROVIDER_PRINT_CACHE_KEY", "true")
        .raw(&kcp_kubelet::protocol::encode_request(
            ApiVersion::V1,
            IMAGE,
            None,
            &Default::default(),
        ));
    assert_eq!(key.exec.exit_code, Some(0), "{}", key.stderr());
    let line: serde_json::Value = serde_json::from_str(key.stdout().trim_end()).unwrap();
    assert_eq!(line["kind"], "TokenCacheKey", "{line}");
    assert!(
        line["file"].as_str().is_some_and(|f| !f.is_empty()),
        "{line}"
    );
    assert!(fake.requests().is_empty(), "key-only mode called out");

    let refused = plugin().request(
        ApiVersion::V1,
        "registry.cn-hangzhou.aliyuncs.com.evil.test/ns/app",
    );
    let reason = refused.rejected();
    assert!(
        reason.contains("registry.cn-hangzhou.aliyuncs.com.evil.test"),
        "{reason}"
    );
    assert!(fake.requests().is_empty(), "a look-alike host called out");

    let out = plugin().request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.accepted().auth,
        BTreeMap::from([(
            "registry.cn-hangzhou.aliyuncs.com".to_owned(),
            (
                "cr_temp_user".to_owned(),
                "alibaba-password-from-the-fake".to_owned()
            )
        )]),
        "stderr: {}",
        out.stderr()
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path()),
        ("GET", "/tokens")
    );
    assert_eq!(
        requests[0].header("x-acs-action"),
        Some("GetAuthorizationToken")
    );
    assert!(
        requests[0]
            .header("authorization")
            .is_some_and(|a| a.starts_with("ACS3-HMAC-SHA256 Credential=LTAIEMPTYROOT,")),
        "{:?}",
        requests[0].header("authorization")
    );
}
