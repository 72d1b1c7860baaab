//! AKS identity bindings (`--ib-*`) end to end: the pod's service-account token goes to a local
//! TLS fake of the identity-bindings endpoint, reached by address (`--ib-apiserver-ip
//! 127.0.0.1:PORT`), verified by name (`--ib-sni-name`) against the cluster CA only
//! (`--ib-ca-file`), never through `HTTPS_PROXY`; its access token is exchanged at the registry.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::collections::BTreeMap;

use kcp_kubelet::ApiVersion;
use kcp_testkit::Plugin;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::sni::SniFakeServer;
use kcp_testkit::tls::TestCa;
use support::*;

const MI_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true,"userAssignedIdentityID":"kubelet-client-id"}"#;
const IB_SNI: &str = "ib.cluster.example";
const IB_TOKEN: &str = "ib-access-token-Hh42";
const IMAGE: &str = "myreg.azurecr.io/app";

/// The world plus a cluster CA (not the one in `SSL_CERT_FILE`) and the endpoint it vouches for.
struct Ib {
    world: World,
    cluster_ca: TestCa,
    endpoint: SniFakeServer,
}

impl Ib {
    fn new() -> Ib {
        Self::with_cert_names(&[IB_SNI])
    }

    /// The endpoint's certificate names `names` (not always the SNI asked for).
    fn with_cert_names(names: &[&str]) -> Ib {
        let world = World::new();
        let cluster_ca = TestCa::new();
        let endpoint = SniFakeServer::start(&cluster_ca, names, |req| {
            if req.method == "POST" && req.target == "/" {
                FakeResponse::json(format!(
                    r#"{{"access_token":"{IB_TOKEN}","expires_in":3600}}"#
                ))
            } else {
                FakeResponse::new(404, "{}")
            }
        });
        Ib {
            world,
            cluster_ca,
            endpoint,
        }
    }

    /// The plugin as AKS runs it, with the node's managed identity configured (which identity
    /// bindings must not use) and `HTTPS_PROXY` set (which they must not use either).
    fn plugin(&self, extra: &[&str]) -> Plugin {
        let given = |flag: &str| extra.iter().any(|a| a.starts_with(flag));
        let mut plugin = self
            .world
            .mi_plugin(MI_CONFIG)
            .args([format!("--ib-sni-name={IB_SNI}")]);
        if !given("--ib-apiserver-ip") {
            plugin = plugin.args([format!("--ib-apiserver-ip={}", self.endpoint.addr())]);
        }
        if !given("--ib-ca-file") {
            plugin = plugin.args([format!(
                "--ib-ca-file={}",
                self.cluster_ca.ca_file().display()
            )]);
        }
        plugin.args(extra.iter().copied())
    }

    /// Nothing reached the node's identity, Entra, or the proxy on the way to the endpoint.
    fn assert_only_the_endpoint_gave_a_token(&self) {
        assert!(
            self.world.msi.requests().is_empty(),
            "the node identity is not used"
        );
        assert!(
            self.world.entra.requests().is_empty(),
            "Entra is not called"
        );
        self.assert_endpoint_not_proxied();
    }

    fn assert_endpoint_not_proxied(&self) {
        let port = self.endpoint.addr().port().to_string();
        let targets = self.world.proxy.targets();
        assert!(
            !targets
                .iter()
                .any(|t| t.contains(IB_SNI) || t.ends_with(&format!(":{port}"))),
            "the identity-bindings endpoint went through HTTPS_PROXY: {targets:?}"
        );
    }
}

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    fields(pairs)
}

/// The exact form the endpoint must receive.
fn assert_token_request(ib: &Ib, client_id: &str) {
    let requests = ib.endpoint.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let post = &requests[0];
    assert_eq!(post.method, "POST");
    assert_eq!(post.target, "/");
    assert_eq!(post.header("host"), Some(IB_SNI));
    assert_eq!(
        post.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        form(post),
        fields(&[
            ("client_assertion", SA_TOKEN),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            ),
            ("client_id", client_id),
            ("grant_type", "client_credentials"),
            ("scope", SCOPE),
        ])
    );
    assert_eq!(
        ib.endpoint.server_names(),
        vec![Some(IB_SNI.to_owned())],
        "SNI is --ib-sni-name"
    );
}

#[test]
fn the_pod_token_is_traded_at_the_endpoint_and_exchanged_at_the_registry() {
    let ib = Ib::new();
    let out = ib
        .plugin(&["--ib-default-client-id=default-client", "--v=6"])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        );
    out.accepted();
    let refresh = ib.world.last_refresh();
    let duration = cache_duration_of(&out.stdout());
    assert_eq!(
        out.stdout(),
        token_answer(
            "credentialprovider.kubelet.k8s.io/v1",
            &duration,
            &["myreg.azurecr.io"],
            &refresh
        )
    );
    // The annotation wins over --ib-default-client-id.
    assert_token_request(&ib, "pod-client");
    // The exchange sends the config's tenant, as upstream.
    assert_exchange(&ib.world, "myreg.azurecr.io", IB_TOKEN, Some("tenant-1"));
    ib.assert_only_the_endpoint_gave_a_token();
    ib.world.assert_nothing_off_cloud();
    assert!(!out.stderr().is_empty(), "--v=6 logs");
    assert_no_secret(&out.stderr(), &[IB_TOKEN, &refresh]);
    assert!(!out.stdout().contains(SA_TOKEN) && !out.stdout().contains(IB_TOKEN));
}

#[test]
fn without_the_annotation_the_default_client_id_is_used() {
    let ib = Ib::new();
    let out = ib
        .plugin(&[
            "--ib-default-client-id=default-client",
            "--ib-default-tenant-id=t-9",
        ])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("other.io/key", "x")]),
        );
    out.accepted();
    assert_token_request(&ib, "default-client");
    assert_exchange(&ib.world, "myreg.azurecr.io", IB_TOKEN, Some("tenant-1"));
    ib.assert_only_the_endpoint_gave_a_token();
}

#[test]
fn an_api_server_host_name_is_resolved() {
    let ib = Ib::new();
    let port = ib.endpoint.addr().port();
    let out = ib
        .plugin(&[&format!("--ib-apiserver-ip=localhost:{port}")])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        );
    out.accepted();
    assert_token_request(&ib, "pod-client");
}

#[test]
fn a_certificate_from_another_ca_is_refused_even_if_ssl_cert_file_trusts_it() {
    let ib = Ib::new();
    // The CA of SSL_CERT_FILE (which the registry's certificates chain to) as --ib-ca-file: the
    // endpoint's certificate, from the cluster CA, does not chain to it.
    let out = ib
        .plugin(&[&format!("--ib-ca-file={}", ib.world.ca.ca_file().display())])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        );
    let line = out.rejected();
    assert!(
        line.contains("TLS with ib.cluster.example failed"),
        "{line}"
    );
    assert!(line.contains("--ib-ca-file"), "{line}");
    assert!(ib.endpoint.requests().is_empty(), "no token was sent");
    assert!(
        !ib.world
            .registry_calls()
            .iter()
            .any(|(_, path)| path == "/oauth2/exchange")
    );
    ib.assert_only_the_endpoint_gave_a_token();

    // The system store does not vouch for it either: the cluster CA in SSL_CERT_FILE (with the
    // registry's, so the challenge still passes), a CA file without it.
    let other = TestCa::new();
    let bundle = [ib.world.ca.ca_file(), ib.cluster_ca.ca_file()]
        .map(|f| std::fs::read_to_string(f).unwrap())
        .concat();
    let bundle = ib.world.file("bundle.pem", &bundle);
    let out = ib
        .world
        .mi_plugin(MI_CONFIG)
        .env("SSL_CERT_FILE", bundle)
        .args([
            format!("--ib-sni-name={IB_SNI}"),
            format!("--ib-apiserver-ip={}", ib.endpoint.addr()),
            format!("--ib-ca-file={}", other.ca_file().display()),
        ])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        );
    let line = out.rejected();
    assert!(
        line.contains("TLS with ib.cluster.example failed"),
        "{line}"
    );
    assert!(ib.endpoint.requests().is_empty());
}

#[test]
fn a_certificate_for_another_name_is_refused() {
    let ib = Ib::with_cert_names(&["other.cluster.example", "127.0.0.1"]);
    let line = ib
        .plugin(&[])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        )
        .rejected();
    assert!(
        line.contains("TLS with ib.cluster.example failed"),
        "{line}"
    );
    assert!(ib.endpoint.requests().is_empty());
}

#[test]
fn a_missing_ca_file_names_the_flag() {
    let ib = Ib::new();
    let line = ib
        .plugin(&["--ib-ca-file=/nonexistent/ca.crt"])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        )
        .rejected();
    assert!(
        line.contains(
            "identity bindings: cannot use the cluster CA /nonexistent/ca.crt (--ib-ca-file): "
        ),
        "{line}"
    );
    assert!(ib.endpoint.requests().is_empty());
}

#[test]
fn requests_without_a_token_or_a_client_id_fail_as_upstream() {
    let ib = Ib::new();
    // Static pods: no service-account token. Upstream fails too (no fallback to the node).
    let line = ib.plugin(&[]).request(ApiVersion::V1, IMAGE).rejected();
    assert!(
        line.contains("identity bindings")
            && line.contains("service account token not found in request"),
        "{line}"
    );
    // No annotation and no --ib-default-client-id.
    let line = ib
        .plugin(&[])
        .request_with_token(ApiVersion::V1, IMAGE, Some(SA_TOKEN), &BTreeMap::new())
        .rejected();
    assert!(line.contains("client ID not configured"), "{line}");
    assert!(line.contains("--ib-default-client-id"), "{line}");
    // An empty annotation overrides the default, and fails.
    let line = ib
        .plugin(&["--ib-default-client-id=default-client"])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "")]),
        )
        .rejected();
    assert!(line.contains("client ID not configured"), "{line}");
    assert!(ib.endpoint.requests().is_empty());
    assert!(ib.world.registry.requests().is_empty());
    ib.assert_only_the_endpoint_gave_a_token();
}

#[test]
fn a_refusal_by_the_endpoint_is_one_line_without_the_token() {
    let world = World::new();
    let cluster_ca = TestCa::new();
    let endpoint = SniFakeServer::start(&cluster_ca, &[IB_SNI], |_| {
        FakeResponse::new(
            401,
            r#"{"error":"invalid_client","error_description":"no binding"}"#,
        )
    });
    let line = world
        .mi_plugin(MI_CONFIG)
        .args([
            format!("--ib-sni-name={IB_SNI}"),
            format!("--ib-apiserver-ip={}", endpoint.addr()),
            format!("--ib-ca-file={}", cluster_ca.ca_file().display()),
        ])
        .request_with_token(
            ApiVersion::V1,
            IMAGE,
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        )
        .rejected();
    assert!(
        line.contains("identity-bindings token request to https://ib.cluster.example/ at ")
            && line.contains("answered HTTP 401: ")
            && line.contains("check that client ID pod-client is bound to this service account"),
        "{line}"
    );
    assert_eq!(endpoint.requests().len(), 1, "a 401 is not retried");
    assert_no_secret(&line, &[]);
}

/// docs/providers/acr.md “Identity bindings”: a mirrored image is pulled with the node's identity,
/// as upstream (identity bindings are skipped).
#[test]
fn a_mirrored_image_uses_the_node_identity() {
    let ib = Ib::new();
    let out = ib
        .plugin(&["--registry-mirror=mcr.microsoft.com:myreg.azurecr.io"])
        .request_with_token(
            ApiVersion::V1,
            "mcr.microsoft.com/azure-cli",
            Some(SA_TOKEN),
            &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
        );
    out.accepted();
    assert!(ib.endpoint.requests().is_empty());
    assert_eq!(ib.world.msi.requests().len(), 1);
    assert_exchange(&ib.world, "myreg.azurecr.io", MI_TOKEN, Some("tenant-1"));
}

/// Upstream's flag validation: each mistake exits 2 with one line, before the request is read
/// and before any network call.
#[test]
fn bad_flag_combinations_exit_2_with_upstreams_words() {
    let world = World::new();
    let config = world.config(MI_CONFIG);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--ib-sni-name=api.example.com"],
            "ib-apiserver-ip must be set",
        ),
        (&["--ib-apiserver-ip=10.0.0.1"], "ib-sni-name must be set"),
        (
            &["--ib-default-client-id=client-123"],
            "ib-sni-name must be set",
        ),
        (
            &["--ib-default-tenant-id=tenant-456"],
            "ib-sni-name must be set",
        ),
        (&["--ib-ca-file=/etc/ca.crt"], "ib-sni-name must be set"),
        (
            &[
                "--ib-sni-name=https://api.example.com",
                "--ib-apiserver-ip=10.0.0.1",
            ],
            "must not contain protocol prefix",
        ),
        (
            &[
                "--ib-sni-name=api.example.com",
                "--ib-apiserver-ip=999.999.999.999",
            ],
            "must be a valid IP address or resolvable FQDN",
        ),
        (
            &[
                "--ib-sni-name=api.example.com",
                "--ib-apiserver-ip=10.0.0.1:0",
            ],
            "must be a valid IP address or resolvable FQDN",
        ),
    ];
    for (flags, words) in cases {
        let out = Plugin::new(BIN)
            .args([config.clone()])
            .args(flags.iter().copied())
            .request_with_token(
                ApiVersion::V1,
                IMAGE,
                Some(SA_TOKEN),
                &annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]),
            );
        let line = out.rejected();
        assert_eq!(out.exec.exit_code, Some(2), "{flags:?}: {line}");
        assert!(
            line.contains("identity bindings: ") && line.contains(words),
            "{flags:?}: {line}"
        );
    }
    assert!(world.msi.requests().is_empty() && world.registry.requests().is_empty());
}

/// At the highest verbosity, on success and on failure, stderr carries neither the pod's token,
/// the endpoint's access token nor the refresh token (the kit scans every run for every one of
/// them); stdout carries the refresh token only as the password of the answer.
#[test]
fn no_token_reaches_stderr_at_any_verbosity() {
    let ib = Ib::new();
    let annotated = annotations(&[("kubernetes.azure.com/acr-client-id", "pod-client")]);
    let out = ib.plugin(&["--v=10"]).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(SA_TOKEN),
        &annotated,
    );
    let ok = out.accepted();
    let refresh = ib.world.last_refresh();
    assert!(!out.stderr().is_empty());
    assert_no_secret(&out.stderr(), &[IB_TOKEN, &refresh]);
    assert_eq!(ok.auth["myreg.azurecr.io"].1, refresh);
    assert_eq!(out.stdout().matches(&refresh).count(), 1);
    for secret in [SA_TOKEN, IB_TOKEN] {
        assert!(!out.stdout().contains(secret));
    }
    // A failed exchange after the endpoint answered: the access token is in no line either.
    ib.world.exchange_script.push(FakeResponse::new(
        401,
        r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#,
    ));
    let out = ib.plugin(&["--v=10"]).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(SA_TOKEN),
        &annotated,
    );
    // Many lines at --v=10: the failure is the exit code and an empty stdout.
    assert_eq!(out.exec.exit_code, Some(1), "{}", out.stderr());
    assert_eq!(out.stdout(), "");
    assert_no_secret(&out.stderr(), &[IB_TOKEN]);
}
