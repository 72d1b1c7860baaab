//! Unit tests of `identity.rs`, beside it to keep the source file short.

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    move |k| map.get(k).cloned()
}

fn config(json: &str) -> AzureConfig {
    AzureConfig::parse(json, "azure.json").unwrap()
}

#[test]
fn managed_identity_by_client_or_resource_id() {
    let none = env_of(&[]);
    let id = node_identity(
        &config(r#"{"useManagedIdentityExtension":true}"#),
        "azure.json",
        &none,
    )
    .unwrap();
    assert_eq!(
        id,
        Identity::Managed {
            user_assigned: None
        }
    );
    let id = node_identity(
        &config(
            r#"{"useManagedIdentityExtension":true,"userAssignedIdentityID":"test-client-id"}"#,
        ),
        "azure.json",
        &none,
    )
    .unwrap();
    assert_eq!(
        id,
        Identity::Managed {
            user_assigned: Some(UserAssigned::ClientId("test-client-id".into()))
        }
    );
    let arm = "/SUBSCRIPTIONS/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/kubelet";
    let id = node_identity(
        &config(&format!(
            r#"{{"useManagedIdentityExtension":true,"userAssignedIdentityID":"{arm}"}}"#
        )),
        "azure.json",
        &none,
    )
    .unwrap();
    assert_eq!(
        id,
        Identity::Managed {
            user_assigned: Some(UserAssigned::ResourceId(arm.into()))
        }
    );
}

#[test]
fn workload_identity_from_config_or_environment() {
    let id = node_identity(
        &config(r#"{"useFederatedWorkloadIdentityExtension":true,"useManagedIdentityExtension":true,"aadClientId":"c","tenantId":"t","aadFederatedTokenFile":"/f"}"#),
        "azure.json",
        &env_of(&[]),
    )
    .unwrap();
    assert_eq!(
        id,
        Identity::Workload {
            tenant: "t".into(),
            client_id: "c".into(),
            token_file: "/f".into()
        }
    );
    let id = node_identity(
        &config("{}"),
        "azure.json",
        &env_of(&[
            ("AZURE_FEDERATED_TOKEN_FILE", "/g"),
            ("AZURE_CLIENT_ID", "c2"),
            ("AZURE_TENANT_ID", "t2"),
        ]),
    )
    .unwrap();
    assert_eq!(
        id,
        Identity::Workload {
            tenant: "t2".into(),
            client_id: "c2".into(),
            token_file: "/g".into()
        }
    );
    let e = node_identity(
        &config(r#"{"useFederatedWorkloadIdentityExtension":true,"tenantId":"t"}"#),
        "azure.json",
        &env_of(&[]),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "azure.json sets useFederatedWorkloadIdentityExtension but workload identity lacks aadFederatedTokenFile (or AZURE_FEDERATED_TOKEN_FILE), aadClientId (or AZURE_CLIENT_ID)"
    );
}

#[test]
fn service_principal_and_nothing() {
    let id = node_identity(
        &config(r#"{"aadClientId":"foo","aadClientSecret":"bar","tenantId":"t"}"#),
        "azure.json",
        &env_of(&[]),
    )
    .unwrap();
    assert_eq!(id.describe(), "service principal foo in tenant t");
    assert!(
        !format!("{id:?}").contains("bar"),
        "the secret never prints"
    );
    // No tenant: still the service principal, answered raw (no exchange is possible), with a
    // warning naming tenantId.
    let id = node_identity(
        &config(r#"{"aadClientId":"foo","aadClientSecret":"bar"}"#),
        "azure.json",
        &env_of(&[]),
    )
    .unwrap();
    assert_eq!(id.describe(), "service principal foo (no tenantId)");
    assert!(lacks_tenant(&id));
    let w = no_tenant_warning("azure.json");
    assert!(
        w.starts_with("azure.json has aadClientId and aadClientSecret but no tenantId: answering with the client ID and secret"),
        "{w}"
    );
    let with_tenant = node_identity(
        &config(r#"{"aadClientId":"foo","aadClientSecret":"bar","tenantId":"t"}"#),
        "azure.json",
        &env_of(&[]),
    )
    .unwrap();
    assert!(!lacks_tenant(&with_tenant));
    let e = node_identity(&config("{}"), "/etc/kubernetes/azure.json", &env_of(&[])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/etc/kubernetes/azure.json configures no identity"),
        "{e}"
    );
}

#[test]
fn error_lines_name_the_transport_failure_under_azure_identitys_wrapping() {
    use azure_core::error::ErrorKind;
    let tls = HttpError::Tls {
        host: "login.example".into(),
        reason: "invalid peer certificate: UnknownIssuer".into(),
    };
    let wrapped = azure_core::Error::with_error(
        ErrorKind::Credential,
        azure_core::Error::new(ErrorKind::Other, tls)
            .with_context("non-transport error occurred which will not be retried"),
        "ClientSecretCredential authentication failed. non-transport error occurred which will not be retried\nTo troubleshoot, visit https://aka.ms/x",
    );
    let line = one_line(&wrapped);
    assert!(
        line.starts_with("ClientSecretCredential authentication failed. non-transport error"),
        "{line}"
    );
    assert!(
        line.ends_with("; TLS with login.example failed: invalid peer certificate: UnknownIssuer; check the CA bundle (SSL_CERT_FILE) and any TLS-intercepting proxy"),
        "{line}"
    );
    assert!(!line.contains('\n'));
    // An answer from Entra (no transport error) reads as azure_identity wrote it.
    let refused =
        azure_core::Error::with_message(ErrorKind::Credential, "AADSTS7000215: bad secret");
    assert_eq!(one_line(&refused), "AADSTS7000215: bad secret");
}

/// docs/providers/acr.md “Test vectors”: `TestNewAcrProvider_CredentialSelection`, SA rows.
#[test]
fn service_account_annotations() {
    let token = Secret::new("sa-token");
    let ann = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    };
    let both = ann(&[(CLIENT_ID_ANNOTATION, "c"), (TENANT_ID_ANNOTATION, "t")]);
    assert_eq!(
        service_account_identity(Some(&token), &both, "").unwrap(),
        Some(Identity::ServiceAccount {
            tenant: "t".into(),
            client_id: "c".into(),
            token: token.clone()
        })
    );
    assert_eq!(service_account_identity(None, &both, "").unwrap(), None);
    // No client annotation: the node identity applies (upstream fails the pull).
    assert_eq!(
        service_account_identity(Some(&token), &ann(&[(TENANT_ID_ANNOTATION, "t")]), "").unwrap(),
        None
    );
    let e = service_account_identity(
        Some(&token),
        &ann(&[(CLIENT_ID_ANNOTATION, ""), (TENANT_ID_ANNOTATION, "t")]),
        "",
    )
    .unwrap_err();
    assert!(e.to_string().contains("client id annotation"), "{e}");
    let e = service_account_identity(
        Some(&token),
        &ann(&[(CLIENT_ID_ANNOTATION, "c"), (TENANT_ID_ANNOTATION, "")]),
        "t0",
    )
    .unwrap_err();
    assert!(e.to_string().contains("tenant id annotation"), "{e}");
    let e = service_account_identity(Some(&token), &ann(&[(CLIENT_ID_ANNOTATION, "c")]), "")
        .unwrap_err();
    assert!(e.to_string().contains("tenant id annotation"), "{e}");
    // The config's tenant fills in a missing tenant annotation.
    let id = service_account_identity(Some(&token), &ann(&[(CLIENT_ID_ANNOTATION, "c")]), "t0")
        .unwrap()
        .unwrap();
    assert_eq!(id.exchange_tenant(&AzureConfig::default()), Some("t0"));
    assert!(!format!("{id:?}").contains("sa-token"));
}
