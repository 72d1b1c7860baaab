//! Which identity signs the Entra token request, and fetching that token through azure_identity.
//!
//! Selection, first match wins:
//! 1. The request carries a service-account token (KEP-4412) and the image is not mirrored:
//!    client-assertion federation as the client named by the SA annotation
//!    `kubernetes.azure.com/acr-client-id`, in the tenant of `kubernetes.azure.com/acr-tenant-id`
//!    (or the config's `tenantId`). This works whatever `useManagedIdentityExtension` says
//!    (upstream silently ignored SA tokens on service-principal nodes). A service account without
//!    the client-id annotation falls back to the node's identity; an annotation that is present
//!    but empty is an error.
//! 2. `useFederatedWorkloadIdentityExtension: true`: workload identity, with `aadClientId`,
//!    `tenantId` and `aadFederatedTokenFile` (each falling back to `AZURE_CLIENT_ID`,
//!    `AZURE_TENANT_ID`, `AZURE_FEDERATED_TOKEN_FILE`), as upstream did before v1.31.
//! 3. `useManagedIdentityExtension: true`: managed identity, system-assigned or the
//!    `userAssignedIdentityID` (an ARM resource ID when it contains `/subscriptions/`, else a client
//!    ID). The source is the VM's IMDS, App Service's `IDENTITY_ENDPOINT`/`IDENTITY_HEADER`, or
//!    the Azure Arc agent's `IDENTITY_ENDPOINT` with `IMDS_ENDPOINT` (`azure_arc.rs`; system-assigned only).
//! 4. `AZURE_FEDERATED_TOKEN_FILE` in the environment: workload identity.
//! 5. `aadClientId` + `aadClientSecret`: the service principal, through the exchange (or the raw
//!    secret with `--service-principal-passthrough`, decided by the caller). Only the exchange
//!    needs `tenantId`: without one the raw secret is the only answer there is, as upstream
//!    gives it, with a warning ([`lacks_tenant`]).
//!
//! azure_identity retries on its own (8 tries, up to 82 s; a fixed 72 s for IMDS), past the
//! kubelet's 60 s kill. Every credential here gets our transport (the shared client, 15 s per try
//! capped by the run's deadline), at most two retries, and the whole `get_token` runs under a
//! timeout drawn from the run's deadline.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::TokenCredential;
use azure_core::http::{
    ClientMethodOptions, ClientOptions, ExponentialRetryOptions, RetryOptions, Transport,
};
use azure_identity::{
    ClientAssertion, ClientAssertionCredential, ClientAssertionCredentialOptions,
    ClientSecretCredential, ClientSecretCredentialOptions, ManagedIdentityCredential,
    ManagedIdentityCredentialOptions, UserAssignedId, WorkloadIdentityCredential,
    WorkloadIdentityCredentialOptions,
};
use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, HttpError};

use crate::annotations::{CLIENT_ID_ANNOTATION, TENANT_ID_ANNOTATION};
use crate::azure_arc;
use crate::cloud::Cloud;
use crate::config::AzureConfig;
use crate::identity_bindings::{self, IbConfig};
use crate::transport::{AzureTransport, LastAnswer};

/// The identity that asks Entra ID for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The node's managed identity.
    Managed {
        /// A user-assigned identity, or `None` for the system-assigned one.
        user_assigned: Option<UserAssigned>,
    },
    /// Workload identity: a federated token file.
    Workload {
        /// The Entra tenant the federated token is traded in (`tenantId`, else `AZURE_TENANT_ID`).
        tenant: String,
        /// The application (client) ID the token is issued to.
        client_id: String,
        /// The projected token file.
        token_file: PathBuf,
    },
    /// A service principal with a client secret.
    ServicePrincipal {
        /// `tenantId` from azure.json; empty when absent, and then the secret is answered raw.
        tenant: String,
        /// The application (client) ID the token is issued to.
        client_id: String,
        /// `aadClientSecret`; redacted in every log line.
        secret: Secret,
    },
    /// The pod's service-account token traded at AKS's identity-bindings endpoint (`identity_bindings.rs`).
    IdentityBinding {
        /// Client ID, from the annotation or `--ib-default-client-id`.
        client_id: String,
        /// Tenant, from the annotation or `--ib-default-tenant-id` (reserved, never sent).
        tenant: Option<String>,
        /// The pod's token; never logged.
        token: Secret,
        /// Where the endpoint is and whom to trust.
        config: Box<IbConfig>,
    },
    /// The pod's service-account token as a client assertion (KEP-4412).
    ServiceAccount {
        /// Tenant, from the annotation or the config.
        tenant: String,
        /// Client ID, from the annotation.
        client_id: String,
        /// The pod's token; never logged.
        token: Secret,
    },
}

/// A user-assigned managed identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserAssigned {
    /// By client ID.
    ClientId(String),
    /// By ARM resource ID.
    ResourceId(String),
}

impl Identity {
    /// A description for logs and errors, without secrets.
    pub fn describe(&self) -> String {
        match self {
            Identity::Managed {
                user_assigned: None,
            } => {
                format!("system-assigned managed identity ({})", mi_source())
            }
            Identity::Managed {
                user_assigned: Some(UserAssigned::ClientId(id)),
            } => format!("managed identity with client ID {id} ({})", mi_source()),
            Identity::Managed {
                user_assigned: Some(UserAssigned::ResourceId(id)),
            } => format!("managed identity {id} ({})", mi_source()),
            Identity::Workload {
                tenant,
                client_id,
                token_file,
            } => format!(
                "workload identity with client ID {client_id} in tenant {tenant} (token file {})",
                token_file.display()
            ),
            Identity::ServicePrincipal {
                tenant, client_id, ..
            } if tenant.is_empty() => format!("service principal {client_id} (no tenantId)"),
            Identity::ServicePrincipal {
                tenant, client_id, ..
            } => format!("service principal {client_id} in tenant {tenant}"),
            Identity::ServiceAccount {
                tenant, client_id, ..
            } => format!(
                "service-account token federated as client ID {client_id} in tenant {tenant}"
            ),
            Identity::IdentityBinding {
                client_id, config, ..
            } => format!(
                "identity binding for client ID {client_id} via {}",
                config.describe()
            ),
        }
    }

    /// The `tenant` to send with the exchange: the federated tenant on the SA path, else the
    /// config's `tenantId` (empty is left out).
    pub fn exchange_tenant<'a>(&'a self, config: &'a AzureConfig) -> Option<&'a str> {
        let tenant = match self {
            Identity::ServiceAccount { tenant, .. } => tenant.as_str(),
            _ => config.tenant_id.as_str(),
        };
        Some(tenant).filter(|t| !t.is_empty())
    }
}

fn mi_source() -> &'static str {
    if azure_arc::detected(&process_env) {
        "Azure Arc agent endpoint from IDENTITY_ENDPOINT"
    } else if std::env::var_os("IDENTITY_ENDPOINT").is_some()
        && std::env::var_os("IDENTITY_HEADER").is_some()
    {
        "App Service endpoint from IDENTITY_ENDPOINT"
    } else {
        "instance metadata service 169.254.169.254"
    }
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The node's own identity from the config and environment (rules 2–5 of the module docs).
/// Passthrough is decided by the caller: a service principal is returned either way, with an
/// empty tenant when the config has no `tenantId` (see [`lacks_tenant`]).
pub fn node_identity(
    config: &AzureConfig,
    config_path: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Identity> {
    let non_empty = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    let workload = |required: bool| -> anyhow::Result<Option<Identity>> {
        let token_file = non_empty(&config.aad_federated_token_file)
            .or_else(|| env("AZURE_FEDERATED_TOKEN_FILE").and_then(|v| non_empty(&v)));
        let client_id = non_empty(&config.aad_client_id)
            .or_else(|| env("AZURE_CLIENT_ID").and_then(|v| non_empty(&v)));
        let tenant = non_empty(&config.tenant_id)
            .or_else(|| env("AZURE_TENANT_ID").and_then(|v| non_empty(&v)));
        match (token_file, client_id, tenant) {
            (Some(file), Some(client_id), Some(tenant)) => Ok(Some(Identity::Workload {
                tenant,
                client_id,
                token_file: PathBuf::from(file),
            })),
            (file, client, tenant) if required => {
                let mut missing = Vec::new();
                if file.is_none() {
                    missing.push("aadFederatedTokenFile (or AZURE_FEDERATED_TOKEN_FILE)");
                }
                if client.is_none() {
                    missing.push("aadClientId (or AZURE_CLIENT_ID)");
                }
                if tenant.is_none() {
                    missing.push("tenantId (or AZURE_TENANT_ID)");
                }
                anyhow::bail!(
                    "{config_path} sets useFederatedWorkloadIdentityExtension but workload identity lacks {}",
                    missing.join(", ")
                )
            }
            _ => Ok(None),
        }
    };
    if config.use_federated_workload_identity_extension
        && let Some(identity) = workload(true)?
    {
        return Ok(identity);
    }
    if config.use_managed_identity_extension {
        let id = config.user_assigned_identity_id.trim();
        let user_assigned = if id.is_empty() {
            None
        } else if id.to_ascii_lowercase().contains("/subscriptions/") {
            Some(UserAssigned::ResourceId(id.to_owned()))
        } else {
            Some(UserAssigned::ClientId(id.to_owned()))
        };
        if user_assigned.is_some() && azure_arc::detected(env) {
            anyhow::bail!(
                "{config_path} names the user-assigned identity {id}, but this is an Azure Arc machine (IDENTITY_ENDPOINT and IMDS_ENDPOINT are set) and Arc has only the machine's system-assigned identity: remove userAssignedIdentityID"
            );
        }
        return Ok(Identity::Managed { user_assigned });
    }
    if env("AZURE_FEDERATED_TOKEN_FILE").is_some_and(|v| !v.trim().is_empty())
        && let Some(identity) = workload(true)?
    {
        return Ok(identity);
    }
    match (non_empty(&config.aad_client_id), &config.aad_client_secret) {
        // No tenant is fine here: passthrough needs none (as upstream); the exchange does, so the
        // caller answers such a principal raw (`lacks_tenant`).
        (Some(client_id), Some(secret)) => Ok(Identity::ServicePrincipal {
            tenant: non_empty(&config.tenant_id).unwrap_or_default(),
            client_id,
            secret: secret.clone(),
        }),
        _ => anyhow::bail!(
            "{config_path} configures no identity: set useManagedIdentityExtension: true (managed identity), \
             aadClientId + aadClientSecret + tenantId (service principal), or useFederatedWorkloadIdentityExtension: true \
             with aadFederatedTokenFile (workload identity)"
        ),
    }
}

/// Whether `identity` is a service principal without a tenant: no exchange is possible (Entra
/// issues the token in a tenant), so it is answered as upstream answers every service principal,
/// with its client ID and secret, and one warning line says so ([`no_tenant_warning`]).
pub fn lacks_tenant(identity: &Identity) -> bool {
    matches!(identity, Identity::ServicePrincipal { tenant, .. } if tenant.is_empty())
}

/// The warning for a service principal answered raw because it has no tenant (see
/// [`lacks_tenant`]): what happened and the one setting that makes it exchanged instead.
pub fn no_tenant_warning(config_path: &str) -> String {
    format!(
        "{config_path} has aadClientId and aadClientSecret but no tenantId: answering with the client ID and secret as the upstream plugin does; set tenantId in {config_path} to the service principal's tenant to exchange it for a short-lived ACR token instead (the secret then never reaches the container runtime)"
    )
}

/// The service-account identity of a request, if its token and annotations ask for one.
/// `Ok(None)`: no token, or no client-id annotation (the node identity applies).
pub fn service_account_identity(
    token: Option<&Secret>,
    annotations: &BTreeMap<String, String>,
    config_tenant: &str,
) -> anyhow::Result<Option<Identity>> {
    let Some(token) = token else {
        return Ok(None);
    };
    // No annotation: the node's identity (the provider's plan log says so).
    let Some(client_id) = annotations.get(CLIENT_ID_ANNOTATION) else {
        return Ok(None);
    };
    let client_id = client_id.trim();
    if client_id.is_empty() {
        anyhow::bail!(
            "the service account's client id annotation {CLIENT_ID_ANNOTATION} is empty; set it to the client ID of the Entra application or user-assigned identity with a federated credential for this service account"
        );
    }
    let tenant = match annotations.get(TENANT_ID_ANNOTATION).map(|t| t.trim()) {
        Some("") => anyhow::bail!(
            "the service account's tenant id annotation {TENANT_ID_ANNOTATION} is empty; set it to the tenant of client ID {client_id}, or remove it to use the config's tenantId"
        ),
        Some(t) => t.to_owned(),
        None if !config_tenant.trim().is_empty() => config_tenant.trim().to_owned(),
        None => anyhow::bail!(
            "the service account has no tenant id annotation {TENANT_ID_ANNOTATION} and the cloud config has no tenantId; set one of them"
        ),
    };
    Ok(Some(Identity::ServiceAccount {
        tenant,
        client_id: client_id.to_owned(),
        token: token.clone(),
    }))
}

/// The pod's token as a client assertion.
#[derive(Debug)]
struct PodToken(Secret);

#[async_trait::async_trait]
impl ClientAssertion for PodToken {
    async fn secret(&self, _: Option<ClientMethodOptions<'_>>) -> azure_core::Result<String> {
        Ok(self.0.expose().to_owned())
    }
}

/// Gets an Entra access token for `scope` as `identity`, within `budget` (and `deadline`, which
/// bounds each HTTP request).
pub async fn entra_token(
    identity: &Identity,
    cloud: &Cloud,
    scope: &str,
    http: &HttpClient,
    budget: Duration,
    deadline: Deadline,
) -> anyhow::Result<Secret> {
    let context = || {
        format!(
            "getting an Entra token for scope {scope} as {} from {}",
            identity.describe(),
            match identity {
                Identity::Managed { .. } => "the managed identity endpoint".to_owned(),
                _ => format!("{} ({})", cloud.authority_host, cloud.name),
            }
        )
    };
    if let Identity::IdentityBinding {
        client_id,
        token,
        config,
        ..
    } = identity
    {
        return match tokio::time::timeout(
            budget,
            identity_bindings::token(config, client_id, token, scope, deadline),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => anyhow::bail!(
                "identity bindings: no token from {} within {:.1}s (check that the API server address is reachable from this node)",
                config.describe(),
                budget.as_secs_f64()
            ),
        };
    }
    if let Identity::Managed {
        user_assigned: None,
    } = identity
        && azure_arc::detected(&process_env)
    {
        let endpoint = process_env("IDENTITY_ENDPOINT").unwrap_or_default();
        let resource = scope.strip_suffix("/.default").unwrap_or(scope);
        let dir = azure_arc::token_dir(&process_env);
        return match tokio::time::timeout(
            budget,
            azure_arc::token(http, endpoint.trim(), resource, &dir, deadline),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => anyhow::bail!(
                "{}: no answer within {:.1}s (check that the Azure Connected Machine agent (himds) is running)",
                context(),
                budget.as_secs_f64()
            ),
        };
    }
    let transport = AzureTransport::new(http.clone(), deadline);
    let answers = transport.answers();
    let credential = build(identity, cloud, transport, budget)
        .map_err(|e| anyhow::anyhow!("{}: {}", context(), one_line(&e)))?;
    let started = std::time::Instant::now();
    let token = match tokio::time::timeout(budget, credential.get_token(&[scope], None)).await {
        Ok(Ok(token)) => token,
        Ok(Err(e)) => anyhow::bail!(
            "{}: {}",
            context(),
            failure(identity, &e, answers.last().as_ref())
        ),
        Err(_) => anyhow::bail!(
            "{}: no answer within {:.1}s (check that the endpoint is reachable from this node and the proxy settings HTTPS_PROXY/NO_PROXY)",
            context(),
            started.elapsed().as_secs_f64()
        ),
    };
    tracing::info!(identity = %identity.describe(), "Entra token obtained");
    Ok(Secret::new(token.token.secret()))
}

/// The reason of a failed token request. azure_identity words every failure as a bad credential
/// (`ClientSecretCredential authentication failed … #client-secret`), even an outage; when the
/// server answered with an error status, the line says what it answered instead: a 5xx or 429
/// (after the retries) names the status and the host, and only an answer that means the
/// credential was refused (401, or 400 `invalid_client`) points at the credential, quoting
/// Entra's `error` and `error_description`. Managed-identity endpoints keep azure_identity's own
/// 4xx messages (they explain unassigned identities).
fn failure(identity: &Identity, e: &azure_core::Error, last: Option<&LastAnswer>) -> String {
    let Some(last) = last.filter(|a| a.status >= 400) else {
        return one_line(e);
    };
    let managed = matches!(identity, Identity::Managed { .. });
    let request = if managed {
        "managed identity token request"
    } else {
        "Entra ID token request"
    };
    let host = &last.host;
    let status = match reqwest::StatusCode::from_u16(last.status)
        .ok()
        .and_then(|code| code.canonical_reason())
    {
        Some(reason) => format!("HTTP {} {reason}", last.status),
        None => format!("HTTP {}", last.status),
    };
    let tries = match last.times {
        0 | 1 => String::new(),
        n => format!(" (after {n} attempts)"),
    };
    let oauth = [last.error.as_deref(), last.description.as_deref()]
        .into_iter()
        .flatten()
        // A server may echo the request back: every secret held (the client secret, the
        // pod's token) is replaced exactly.
        .map(|text| kcp_kubelet::secret::redact_known(text).into_owned())
        .collect::<Vec<_>>()
        .join(": ");
    let oauth = if oauth.is_empty() {
        oauth
    } else {
        format!(": {oauth}")
    };
    let refused = last.status == 401
        || (last.status == 400 && last.error.as_deref() == Some("invalid_client"));
    match last.status {
        429 | 500..=599 => format!(
            "{request} to {host} failed: {status}{tries}{oauth}; the service is unavailable or throttling: the credentials were not judged, retry later, and check that nothing between this node and {host} (a proxy: HTTPS_PROXY/NO_PROXY) answers in its place"
        ),
        _ if managed => one_line(e),
        _ if refused => format!(
            "{request} to {host} refused the credential: {status}{oauth}; {}",
            match identity {
                Identity::ServicePrincipal { .. } => {
                    "check aadClientId and aadClientSecret in the cloud config (the secret may have expired or been rotated)"
                }
                Identity::Workload { .. } => {
                    "check that the application's federated credential matches the token file's issuer and subject"
                }
                _ => {
                    "check that the application's federated credential matches the service account's issuer and subject"
                }
            }
        ),
        _ => format!(
            "{request} to {host} answered {status}{oauth}; check the tenant, the client ID and the token scope"
        ),
    }
}

fn one_line(e: &azure_core::Error) -> String {
    // azure_identity appends a troubleshooting link on its own line; keep one line.
    let line = kcp_plugin::logging::one_line(&e.to_string());
    // Its retry policy replaces a failed request's reason with "retry policy expired ..." or
    // "non-transport error ..."; the transport's own error, deeper in the chain, says what failed.
    match transport_cause(e) {
        Some(cause) => format!("{line}; {}", cause.describe()),
        None => line,
    }
}

/// The shared client's error somewhere in the source chain of an azure_core error.
fn transport_cause<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a HttpError> {
    let mut next = Some(e);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<HttpError>() {
            return Some(found);
        }
        next = error.source();
    }
    None
}

fn build(
    identity: &Identity,
    cloud: &Cloud,
    transport: AzureTransport,
    budget: Duration,
) -> azure_core::Result<Arc<dyn TokenCredential>> {
    let mut custom = CustomConfiguration::default();
    custom.authority_host = cloud.authority_host.clone();
    let client_options = ClientOptions {
        transport: Some(Transport::new(Arc::new(transport))),
        retry: RetryOptions::exponential(ExponentialRetryOptions {
            initial_delay: azure_core::time::Duration::milliseconds(200),
            max_retries: 2,
            max_delay: azure_core::time::Duration::seconds(2),
            max_total_elapsed: azure_core::time::Duration::milliseconds(
                i64::try_from(budget.as_millis()).unwrap_or(i64::MAX),
            ),
        }),
        cloud: Some(Arc::new(CloudConfiguration::Custom(custom))),
        ..ClientOptions::default()
    };
    Ok(match identity {
        Identity::Managed { user_assigned } => {
            let user_assigned_id = user_assigned.as_ref().map(|u| match u {
                UserAssigned::ClientId(id) => UserAssignedId::ClientId(id.clone()),
                UserAssigned::ResourceId(id) => UserAssignedId::ResourceId(id.clone()),
            });
            ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
                user_assigned_id,
                client_options,
            }))?
        }
        Identity::Workload {
            tenant,
            client_id,
            token_file,
        } => WorkloadIdentityCredential::new(Some(WorkloadIdentityCredentialOptions {
            credential_options: ClientAssertionCredentialOptions { client_options },
            client_id: Some(client_id.clone()),
            tenant_id: Some(tenant.clone()),
            token_file_path: Some(token_file.clone()),
        }))?,
        Identity::ServicePrincipal {
            tenant,
            client_id,
            secret,
        } => ClientSecretCredential::new(
            tenant,
            client_id.clone(),
            azure_core::credentials::Secret::new(secret.expose().to_owned()),
            Some(ClientSecretCredentialOptions { client_options }),
        )?,
        Identity::IdentityBinding { .. } => {
            return Err(azure_core::Error::with_message(
                azure_core::error::ErrorKind::Credential,
                "identity bindings have their own token request (identity_bindings.rs)",
            ));
        }
        Identity::ServiceAccount {
            tenant,
            client_id,
            token,
        } => ClientAssertionCredential::new(
            tenant.clone(),
            client_id.clone(),
            PodToken(token.clone()),
            Some(ClientAssertionCredentialOptions { client_options }),
        )?,
    })
}

#[cfg(test)]
mod tests;
