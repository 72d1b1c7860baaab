//! Every identity source end to end, run as the kubelet runs the plugin, against local fakes of
//! Entra ID, the managed-identity endpoint and the registry: exact answers, exact requests.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use kcp_kubelet::ApiVersion;
use kcp_kubelet_emulation::exec::{DecodeContext, decode_response};
use kcp_testkit::Outcome;
use support::*;

const MI_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","useManagedIdentityExtension":true,"userAssignedIdentityID":"kubelet-client-id","aadClientId":"msi","aadClientSecret":"msi"}"#;
const SP_CONFIG: &str = r#"{"cloud":"AzurePublicCloud","tenantId":"tenant-1","aadClientId":"sp-client-id","aadClientSecret":"sp-client-secret-Yy93"}"#;

#[test]
fn managed_identity_answers_every_api_version_exactly() {
    for v in ApiVersion::ALL {
        let world = World::new();
        let out = world
            .mi_plugin(MI_CONFIG)
            .request(v, "myreg.azurecr.io/team/app");
        let ok = out.accepted();
        let refresh = world.last_refresh();
        let duration = cache_duration_of(&out.stdout());
        assert_eq!(
            out.stdout(),
            token_answer(v.as_str(), &duration, &["myreg.azurecr.io"], &refresh)
        );
        assert_eq!(
            ok.auth["myreg.azurecr.io"],
            (NULL_GUID.to_owned(), refresh.clone())
        );
        assert_eq!(out.stderr(), "", "nothing on stderr by default on success");

        // The App Service managed-identity request, as azure_identity sends it.
        let msi = world.msi.requests();
        assert_eq!(msi.len(), 1, "{msi:?}");
        assert_eq!(msi[0].method, "GET");
        assert_eq!(msi[0].path(), "/msi/token");
        assert_eq!(
            query(&msi[0]),
            fields(&[
                ("api-version", "2019-08-01"),
                ("resource", "https://containerregistry.azure.net"),
                ("client_id", "kubelet-client-id"),
            ])
        );
        assert_eq!(msi[0].header("metadata"), Some("true"));
        assert_eq!(msi[0].header("x-identity-header"), Some(IDENTITY_HEADER));
        assert!(
            world.entra.requests().is_empty(),
            "managed identity never calls Entra directly"
        );
        assert_exchange(&world, "myreg.azurecr.io", MI_TOKEN, Some("tenant-1"));
        world.assert_nothing_off_cloud();
    }
}

#[test]
fn system_assigned_identity_sends_no_client_id_and_no_empty_tenant() {
    let world = World::new();
    let out = world
        .mi_plugin(r#"{"useManagedIdentityExtension":true}"#)
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    let q = query(&world.msi.requests()[0]);
    assert!(
        !q.contains_key("client_id") && !q.contains_key("msi_res_id"),
        "{q:?}"
    );
    assert_exchange(&world, "myreg.azurecr.io", MI_TOKEN, None);
}

#[test]
fn service_principal_goes_through_the_exchange_by_default() {
    let world = World::new();
    let out = world
        .plugin(SP_CONFIG)
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    let ok = out.accepted();
    let refresh = world.last_refresh();
    assert_eq!(ok.auth["myreg.azurecr.io"], (NULL_GUID.to_owned(), refresh));
    assert!(
        !out.stdout().contains(CLIENT_SECRET),
        "the secret never reaches the runtime"
    );
    let entra = world.entra.requests();
    assert_eq!(entra.len(), 1);
    assert_eq!(entra[0].method, "POST");
    assert_eq!(entra[0].path(), "/tenant-1/oauth2/v2.0/token");
    assert_eq!(
        form(&entra[0]),
        fields(&[
            ("client_id", "sp-client-id"),
            ("client_secret", CLIENT_SECRET),
            ("grant_type", "client_credentials"),
            ("scope", SCOPE),
        ])
    );
    assert_exchange(&world, "myreg.azurecr.io", ENTRA_TOKEN, Some("tenant-1"));
}

#[test]
fn service_principal_passthrough_is_upstreams_exact_answer() {
    let world = World::new();
    for v in ApiVersion::ALL {
        let out = world
            .plugin(SP_CONFIG)
            .args(["--service-principal-passthrough"])
            .request(v, "myreg.azurecr.io/app");
        let sp = format!(r#"{{"username":"sp-client-id","password":"{CLIENT_SECRET}"}}"#);
        assert_eq!(
            out.stdout(),
            format!(
                r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v}","cacheKeyType":"Registry","cacheDuration":"1h0m0s","auth":{{"*.azurecr.*":{{"username":"","password":""}},"*.azurecr.cn":{sp},"*.azurecr.de":{sp},"*.azurecr.io":{sp},"*.azurecr.us":{sp}}}}}"#
            ) + "\n"
        );
        let decoded = decode_response(
            &out.exec.stdout,
            DecodeContext {
                expected: v,
                image: "myreg.azurecr.io/app",
                service_account_token: None,
                cache_type_token: false,
            },
        )
        .unwrap();
        assert_eq!(decoded.auth.len(), 5);
        // As the kubelet's keyring sees it: the SP wildcard first, then the anonymous entry.
        let ok = out.accepted();
        assert_eq!(
            ok.keys_for_image("myreg.azurecr.io/app"),
            vec!["*.azurecr.io", "*.azurecr.*"]
        );
        assert_no_secret(&out.stderr(), &[]);
    }
    // Also by environment, as a kubelet config's `env` would set it.
    let out = world
        .plugin(SP_CONFIG)
        .env("ACR_SERVICE_PRINCIPAL_PASSTHROUGH", "true")
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    assert!(out.stdout().contains(CLIENT_SECRET));
    assert!(
        world.entra.requests().is_empty() && world.registry.requests().is_empty(),
        "passthrough calls nothing"
    );
}

#[test]
fn workload_identity_from_the_config_file() {
    let world = World::new();
    let token_file = world.file("azure-identity-token", FEDERATED_TOKEN);
    let out = world
        .plugin(&format!(
            r#"{{"tenantId":"tenant-wi","aadClientId":"wi-client","useFederatedWorkloadIdentityExtension":true,"aadFederatedTokenFile":"{token_file}"}}"#
        ))
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    let entra = world.entra.requests();
    assert_eq!(entra.len(), 1);
    assert_eq!(entra[0].path(), "/tenant-wi/oauth2/v2.0/token");
    assert_eq!(
        form(&entra[0]),
        fields(&[
            ("client_assertion", FEDERATED_TOKEN),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            ),
            ("client_id", "wi-client"),
            ("grant_type", "client_credentials"),
            ("scope", SCOPE),
        ])
    );
    assert_exchange(&world, "myreg.azurecr.io", ENTRA_TOKEN, Some("tenant-wi"));
}

#[test]
fn workload_identity_from_the_environment() {
    let world = World::new();
    let token_file = world.file("token", FEDERATED_TOKEN);
    let out = world
        .plugin("{}")
        .env("AZURE_FEDERATED_TOKEN_FILE", &token_file)
        .env("AZURE_CLIENT_ID", "env-client")
        .env("AZURE_TENANT_ID", "env-tenant")
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    let entra = world.entra.requests();
    assert_eq!(entra[0].path(), "/env-tenant/oauth2/v2.0/token");
    assert_eq!(form(&entra[0])["client_id"], "env-client");
    assert_eq!(form(&entra[0])["client_assertion"], FEDERATED_TOKEN);
    // No tenantId in the config: the exchange carries none.
    assert_exchange(&world, "myreg.azurecr.io", ENTRA_TOKEN, None);
}

fn sa_annotations() -> std::collections::BTreeMap<String, String> {
    fields(&[
        ("kubernetes.azure.com/acr-client-id", "pod-client"),
        ("kubernetes.azure.com/acr-tenant-id", "pod-tenant"),
    ])
}

#[test]
fn service_account_token_is_federated_even_on_a_service_principal_node() {
    let world = World::new();
    let out = world.plugin(SP_CONFIG).args(["--v=6"]).request_with_token(
        ApiVersion::V1,
        "myreg.azurecr.io/app",
        Some(SA_TOKEN),
        &sa_annotations(),
    );
    let ok = out.accepted();
    assert_eq!(ok.auth["myreg.azurecr.io"].1, world.last_refresh());
    let entra = world.entra.requests();
    assert_eq!(entra.len(), 1);
    assert_eq!(entra[0].path(), "/pod-tenant/oauth2/v2.0/token");
    assert_eq!(
        form(&entra[0]),
        fields(&[
            ("client_assertion", SA_TOKEN),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            ),
            ("client_id", "pod-client"),
            ("grant_type", "client_credentials"),
            ("scope", SCOPE),
        ])
    );
    // The exchange names the federated identity's tenant, not the node's.
    assert_exchange(&world, "myreg.azurecr.io", ENTRA_TOKEN, Some("pod-tenant"));
    assert!(!out.stdout().contains(SA_TOKEN));
    assert!(!out.stderr().is_empty(), "--v=6 logs");
    assert_no_secret(&out.stderr(), &[&world.last_refresh()]);
}

#[test]
fn older_api_versions_drop_the_token_and_use_the_node_identity() {
    let world = World::new();
    let out = world.mi_plugin(MI_CONFIG).request_with_token(
        ApiVersion::V1beta1,
        "myreg.azurecr.io/app",
        Some(SA_TOKEN),
        &sa_annotations(),
    );
    out.accepted();
    assert_eq!(world.msi.requests().len(), 1);
    assert!(world.entra.requests().is_empty());
}

#[test]
fn a_service_account_without_the_client_annotation_uses_the_node_identity() {
    let world = World::new();
    let out = world.mi_plugin(MI_CONFIG).request_with_token(
        ApiVersion::V1,
        "myreg.azurecr.io/app",
        Some(SA_TOKEN),
        &fields(&[("other.io/key", "x")]),
    );
    out.accepted();
    assert_eq!(world.msi.requests().len(), 1);
    assert!(world.entra.requests().is_empty());
}

#[test]
fn an_empty_client_annotation_is_an_error_naming_it() {
    let world = World::new();
    let line = world
        .mi_plugin(MI_CONFIG)
        .request_with_token(
            ApiVersion::V1,
            "myreg.azurecr.io/app",
            Some(SA_TOKEN),
            &fields(&[("kubernetes.azure.com/acr-client-id", "")]),
        )
        .rejected();
    assert!(
        line.contains("client id annotation kubernetes.azure.com/acr-client-id is empty"),
        "{line}"
    );
    assert!(
        world.msi.requests().is_empty()
            && world.entra.requests().is_empty()
            && world.registry.requests().is_empty()
    );
    assert_no_secret(&line, &[]);
}

// Identity bindings (`--ib-*`): tests/identity_bindings.rs.

#[test]
fn mirrors_answer_for_the_login_server_and_the_source_with_the_node_identity() {
    let world = World::new();
    let out = world
        .mi_plugin(MI_CONFIG)
        .args(["--registry-mirror=mcr.microsoft.com:myreg.azurecr.io"])
        .request_with_token(
            ApiVersion::V1,
            "mcr.microsoft.com/azure-cli",
            Some(SA_TOKEN),
            &sa_annotations(),
        );
    let ok = out.accepted();
    let refresh = world.last_refresh();
    let duration = cache_duration_of(&out.stdout());
    assert_eq!(
        out.stdout(),
        token_answer(
            "credentialprovider.kubelet.k8s.io/v1",
            &duration,
            &["mcr.microsoft.com", "myreg.azurecr.io"],
            &refresh
        )
    );
    assert_eq!(
        ok.keys_for_image("mcr.microsoft.com/azure-cli"),
        vec!["mcr.microsoft.com"]
    );
    // Mirrored images use the node's identity (upstream #9841), never the pod's token.
    assert_eq!(world.msi.requests().len(), 1);
    assert!(world.entra.requests().is_empty());
    assert_exchange(&world, "myreg.azurecr.io", MI_TOKEN, Some("tenant-1"));
    assert!(
        !world
            .proxy
            .targets()
            .iter()
            .any(|t| t.starts_with("mcr.microsoft.com")),
        "the mirror source is never called"
    );
}

#[test]
fn geo_replica_hosts_get_their_own_key() {
    let world = World::new();
    let ok = world
        .mi_plugin(MI_CONFIG)
        .request(ApiVersion::V1, "myreg.eastus.geo.azurecr.io/app")
        .accepted();
    assert!(ok.auth.contains_key("myreg.eastus.geo.azurecr.io"));
    assert_exchange(
        &world,
        "myreg.eastus.geo.azurecr.io",
        MI_TOKEN,
        Some("tenant-1"),
    );
}

/// Each named cloud: the ACR scope is the same everywhere; the suffix follows the cloud.
#[test]
fn each_cloud_uses_the_acr_scope() {
    for (cloud, host) in [
        ("AzurePublicCloud", "myreg.azurecr.io"),
        ("AzureChinaCloud", "myreg.azurecr.cn"),
        ("AzureUSGovernmentCloud", "myreg.azurecr.us"),
    ] {
        let world = World::new();
        let out = world
            .plugin(&format!(r#"{{"cloud":"{cloud}","tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#))
            .request(ApiVersion::V1, &format!("{host}/app"));
        out.accepted();
        assert_eq!(form(&world.entra.requests()[0])["scope"], SCOPE, "{cloud}");
        assert_exchange(&world, host, ENTRA_TOKEN, Some("t"));
    }
}

#[test]
fn custom_cloud_from_the_resource_manager_metadata() {
    let world = World::new();
    // An ARM metadata endpoint naming the Entra fake as its authority and a custom ACR suffix.
    let entra_url = world.entra.https_url();
    let metadata = kcp_testkit::tls::TlsFakeServer::start(&world.ca, &["127.0.0.1"], move |req| {
        if req.target == "/metadata/endpoints?api-version=2019-05-01" {
            kcp_testkit::fake::FakeResponse::json(format!(
                r#"[{{"name":"AzureStackUser","authentication":{{"loginEndpoint":"{entra_url}/","audiences":["https://management.stack/x"]}},"resourceManager":"https://management.stack/","suffixes":{{"acrLoginServer":"azurecr.my.cloud"}}}}]"#
            ))
        } else {
            kcp_testkit::fake::FakeResponse::new(404, "{}")
        }
    });
    let config = format!(
        r#"{{"cloud":"AzureStackCloud","resourceManagerEndpoint":"{}/","tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#,
        metadata.https_url()
    );
    // No AZURE_AUTHORITY_HOST: the authority comes from the metadata.
    let plugin = kcp_testkit::Plugin::new(BIN)
        .env("SSL_CERT_FILE", world.ca.ca_file().display().to_string())
        .env("HTTPS_PROXY", world.proxy.url())
        .args([world.config(&config)]);
    let ok = plugin
        .request(ApiVersion::V1, "myreg.azurecr.my.cloud/app")
        .accepted();
    assert!(ok.auth.contains_key("myreg.azurecr.my.cloud"));
    assert_eq!(metadata.requests().len(), 1);
    assert_eq!(world.entra.requests()[0].path(), "/t/oauth2/v2.0/token");
    assert_exchange(&world, "myreg.azurecr.my.cloud", ENTRA_TOKEN, Some("t"));
}

/// A resourceManagerEndpoint that is not https (its answer names where Entra tokens go) is refused
/// before any call; it used to be fetched over plain http from any host.
#[test]
fn a_plain_http_resource_manager_endpoint_is_refused() {
    let world = World::new();
    let arm =
        kcp_testkit::fake::FakeServer::start(|_| kcp_testkit::fake::FakeResponse::new(404, ""));
    for (endpoint, shown) in [
        (
            "http://management.stack.example/",
            "http://management.stack.example/",
        ),
        ("http://10.1.2.3:8080", "http://10.1.2.3:8080/"),
    ] {
        let config = format!(
            r#"{{"cloud":"AzureStackCloud","resourceManagerEndpoint":"{endpoint}","tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#
        );
        let line = world
            .plugin(&config)
            .request(ApiVersion::V1, "myreg.azurecr.io/app")
            .rejected();
        assert_eq!(
            line.split_once(" ERROR ").map(|(_, message)| message),
            Some(format!(
                "resourceManagerEndpoint {shown} uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only); the cloud config's resourceManagerEndpoint names where Entra tokens go, so it must be an https URL"
            ))
            .as_deref()
        );
    }
    // Loopback http is a node-local relay: allowed (this one answers 404, so the run fails
    // later, at the metadata).
    let config = format!(
        r#"{{"cloud":"AzureStackCloud","resourceManagerEndpoint":"{}","tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#,
        arm.url()
    );
    let line = world
        .plugin(&config)
        .request(ApiVersion::V1, "myreg.azurecr.io/app")
        .rejected();
    assert!(line.contains("HTTP 404"), "{line}");
    assert_eq!(arm.requests().len(), 1);
    assert!(world.entra.requests().is_empty());
}

#[test]
fn custom_suffix_from_an_azure_stack_environment_file() {
    let world = World::new();
    let env_file = world.file(
        "env.json",
        r#"{"name":"AzureStackCloud","containerRegistryDNSSuffix":"azurecr.my.cloud"}"#,
    );
    let ok = world
        .plugin(&format!(r#"{{"cloud":"AzureStackCloud","tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#))
        .env("AZURE_ENVIRONMENT_FILEPATH", &env_file)
        .request(ApiVersion::V1, "myreg.azurecr.my.cloud/app")
        .accepted();
    assert!(ok.auth.contains_key("myreg.azurecr.my.cloud"));
    // Without the file that suffix is not ACR.
    let line = world
        .plugin(&format!(
            r#"{{"tenantId":"t","aadClientId":"c","aadClientSecret":"{CLIENT_SECRET}"}}"#
        ))
        .request(ApiVersion::V1, "myreg.azurecr.my.cloud/app")
        .rejected();
    assert!(
        line.contains("is not an Azure Container Registry login server"),
        "{line}"
    );
}

#[test]
fn yaml_config_works_like_json() {
    let world = World::new();
    let out = world
        .mi_plugin("useManagedIdentityExtension: true\nTenantID: tenant-y\nuserAssignedIdentityID: kubelet-client-id\n")
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    assert_exchange(&world, "myreg.azurecr.io", MI_TOKEN, Some("tenant-y"));
}

#[test]
fn nothing_secret_on_stderr_even_at_v6() {
    let world = World::new();
    let out = world
        .plugin(SP_CONFIG)
        .args(["--v=6"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    let stderr = out.stderr();
    assert!(stderr.contains("ACR refresh token ready"), "{stderr}");
    assert_no_secret(&stderr, &[&world.last_refresh()]);
    let world = World::new();
    let out = world
        .mi_plugin(MI_CONFIG)
        .args(["--v=6"])
        .request(ApiVersion::V1, "myreg.azurecr.io/app");
    out.accepted();
    assert_no_secret(&out.stderr(), &[&world.last_refresh()]);
}

/// What one row of upstream's table expects of us.
enum Expect {
    /// Exit 0 with exactly these entries: `(key, username, password)`.
    Entries(&'static [(&'static str, &'static str, &'static str)]),
    /// Exit 2 (a config error, before the request is read) with a line containing this.
    ConfigError(&'static str),
    /// Exit 1 with a line containing this, before any request leaves the node.
    Refused(&'static str),
    /// Exit 0 with exactly these entries, and one warning line on stderr containing this.
    Warned(
        &'static [(&'static str, &'static str, &'static str)],
        &'static str,
    ),
}

/// Upstream's service-principal answer for `aadClientId: foo`, `aadClientSecret: bar`.
const UPSTREAM_SP_ENTRIES: &[(&str, &str, &str)] = &[
    ("*.azurecr.*", "", ""),
    ("*.azurecr.cn", "foo", "bar"),
    ("*.azurecr.de", "foo", "bar"),
    ("*.azurecr.io", "foo", "bar"),
    ("*.azurecr.us", "foo", "bar"),
];
const UPSTREAM_SP_CONFIG: &str = r#"
    {
        "aadClientId": "foo",
        "aadClientSecret": "bar"
    }"#;

/// kubernetes-sigs/cloud-provider-azure `pkg/credentialprovider/azure_credentials_test.go`,
/// `TestGetCredentials` and `TestGetCredentialsConfig`, restated as data: config, flags, image,
/// expected answer. Upstream always answers a service principal with its raw ID and secret, so
/// those rows run with `--service-principal-passthrough`; note that upstream's configs have no
/// `tenantId` (passthrough needs none). Rows where we differ on purpose (docs/providers/acr.md
/// "Differences from upstream") say what upstream answers.
#[test]
fn upstreams_get_credentials_tables() {
    let passthrough: &[&str] = &["--service-principal-passthrough"];
    let rows: &[(&str, &str, &[&str], &str, Expect)] = &[
        (
            "TestGetCredentials: SP without tenantId, five entries",
            UPSTREAM_SP_CONFIG,
            passthrough,
            "foo.azurecr.io/nginx:v1",
            Expect::Entries(UPSTREAM_SP_ENTRIES),
        ),
        (
            "TestGetCredentialsConfig: an incorrect config is an error",
            "random-config",
            passthrough,
            "foo.azurecr.io/nginx:v1",
            Expect::ConfigError("failed to load config"),
        ),
        (
            "TestGetCredentialsConfig: SP gives multiple credentials",
            UPSTREAM_SP_CONFIG,
            passthrough,
            "foo.azurecr.io/bar/image:v1",
            Expect::Entries(UPSTREAM_SP_ENTRIES),
        ),
        (
            // Upstream answers no entries with cacheDuration 0s; we name the fix instead.
            "TestGetCredentialsConfig: non-ACR image with managed identity",
            "\n    {\n\t\t\"useManagedIdentityExtension\": true\n    }",
            &[],
            "busybox",
            Expect::Refused("docker.io is not an Azure Container Registry login server"),
        ),
        (
            // Without passthrough a secret is exchanged, which needs the tenant; upstream's own
            // configs have none, so they are answered as upstream answers them, with a warning.
            "TestGetCredentials: SP without tenantId and without passthrough, five entries",
            UPSTREAM_SP_CONFIG,
            &[],
            "foo.azurecr.io/nginx:v1",
            Expect::Warned(
                UPSTREAM_SP_ENTRIES,
                "has aadClientId and aadClientSecret but no tenantId: answering with the client ID and secret as the upstream plugin does; set tenantId in",
            ),
        ),
    ];
    for (desc, config, args, image, expect) in rows {
        let world = World::new();
        let out = world
            .mi_plugin(config)
            .args(args.iter().copied())
            .request(ApiVersion::V1, image);
        let entries_of = |out: &Outcome| {
            let ok = out.accepted();
            ok.auth
                .iter()
                .map(|(k, (u, p))| (k.to_string(), u.to_string(), p.to_string()))
                .collect::<Vec<_>>()
        };
        let owned = |entries: &[(&str, &str, &str)]| {
            entries
                .iter()
                .map(|(k, u, p)| (k.to_string(), u.to_string(), p.to_string()))
                .collect::<Vec<_>>()
        };
        match expect {
            Expect::Warned(entries, warning) => {
                assert_eq!(entries_of(&out), owned(entries), "{desc}");
                let stderr = out.stderr();
                let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains(" WARN ")).collect();
                assert_eq!(warnings.len(), 1, "{desc}: {stderr}");
                assert!(warnings[0].contains(warning), "{desc}: {}", warnings[0]);
            }
            Expect::Entries(entries) => {
                let ok = out.accepted();
                let got: Vec<(&str, &str, &str)> = ok
                    .auth
                    .iter()
                    .map(|(k, (u, p))| (k.as_str(), u.as_str(), p.as_str()))
                    .collect();
                assert_eq!(got, *entries, "{desc}");
            }
            Expect::ConfigError(want) => {
                assert_eq!(out.exec.exit_code, Some(2), "{desc}");
                let line = out.rejected();
                assert!(line.contains(want), "{desc}: {line}");
            }
            Expect::Refused(want) => {
                assert_eq!(out.exec.exit_code, Some(1), "{desc}");
                let line = out.rejected();
                assert!(line.contains(want), "{desc}: {line}");
                assert!(
                    !line.contains("bar"),
                    "{desc}: the secret never prints: {line}"
                );
            }
        }
        assert!(
            world.msi.requests().is_empty()
                && world.entra.requests().is_empty()
                && world.registry.requests().is_empty(),
            "{desc}: no row calls anything"
        );
    }
}
