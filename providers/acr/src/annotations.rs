//! The service-account annotations that ask for a pod's own identity (read by the credential
//! selection in `identity.rs` and by identity bindings).

/// SA annotation naming the Entra application (client) ID to federate as.
pub const CLIENT_ID_ANNOTATION: &str = "kubernetes.azure.com/acr-client-id";
/// SA annotation naming the tenant of that application.
pub const TENANT_ID_ANNOTATION: &str = "kubernetes.azure.com/acr-tenant-id";
