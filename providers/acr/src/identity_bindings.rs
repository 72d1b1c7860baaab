//! AKS identity bindings: the pod's service-account token traded for an Entra access token at
//! an endpoint the cluster serves behind the API server's address.
//!
//! ```text
//! TCP <--ib-apiserver-ip>:443, TLS SNI and certificate name <--ib-sni-name>, trust = --ib-ca-file only
//! POST https://<--ib-sni-name>/
//!   client_assertion=<SA token>&client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer
//!   &client_id=<acr-client-id annotation | --ib-default-client-id>&grant_type=client_credentials&scope=<scope>
//! -> 200 {"access_token":"…","expires_in":3600}
//! ```
//!
//! The access token then goes through the registry's exchange like any Entra token
//! (`exchange.rs`). The endpoint is in-cluster, so the call never goes through a proxy, and only
//! the cluster CA may vouch for it (the system store and `SSL_CERT_FILE` are not trusted).
//!
//! `--ib-apiserver-ip` also takes `HOST:PORT` (`[IPv6]:PORT`) for an API server on another port;
//! the URL stays `https://<sni>/`. A host name is resolved when the token is needed, within the
//! run's deadline, rather than at start: a run answered from the cache or for a mirror never
//! waits on DNS.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{
    CONNECT_TIMEOUT, Call, HttpClient, HttpError, Pin, REQUEST_TIMEOUT, RetryRules, Route,
};
use kcp_plugin::tls::TrustStore;
use reqwest::{Method, Url};

use crate::access_token;
use crate::annotations::CLIENT_ID_ANNOTATION;
use crate::transport::USER_AGENT;

/// The cluster CA AKS writes on Linux nodes.
#[cfg(not(windows))]
pub const DEFAULT_CA_FILE: &str = "/etc/kubernetes/certs/ca.crt";
/// The cluster CA AKS writes on Windows nodes (next to `azure.json` in `C:\k`).
#[cfg(windows)]
pub const DEFAULT_CA_FILE: &str = "C:\\k\\ca.crt";
/// The API server's port when `--ib-apiserver-ip` names none.
pub const DEFAULT_PORT: u16 = 443;
/// Largest CA file read; a cluster CA bundle is a few KiB.
const MAX_CA_BYTES: u64 = 1024 * 1024;
/// Longest wait for a host name lookup of `--ib-apiserver-ip`.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The `--ib-*` flags as given (empty values count as absent, as upstream).
#[derive(Debug, Clone, Default)]
pub struct IbFlags<'a> {
    /// `--ib-sni-name`.
    pub sni_name: Option<&'a str>,
    /// `--ib-apiserver-ip`.
    pub apiserver: Option<&'a str>,
    /// `--ib-default-client-id`.
    pub default_client_id: Option<&'a str>,
    /// `--ib-default-tenant-id`.
    pub default_tenant_id: Option<&'a str>,
    /// `--ib-ca-file`.
    pub ca_file: Option<&'a Path>,
}

/// Validated identity-bindings settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbConfig {
    /// The endpoint's TLS name: SNI, certificate name and URL host.
    pub sni_name: String,
    /// Where to connect.
    pub apiserver: ApiServer,
    /// The client ID when the service account has no `acr-client-id` annotation.
    pub default_client_id: Option<String>,
    /// The tenant when the service account has no `acr-tenant-id` annotation (reserved, as
    /// upstream: the endpoint does not take one).
    pub default_tenant_id: Option<String>,
    /// The only CA trusted for the endpoint.
    pub ca_file: PathBuf,
}

/// `--ib-apiserver-ip`: an address or a host name, and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiServer {
    /// The address or name.
    pub host: ApiHost,
    /// The port ([`DEFAULT_PORT`] unless given).
    pub port: u16,
}

/// The host part of [`ApiServer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiHost {
    /// An IP address, used as is.
    Ip(IpAddr),
    /// A host name, resolved when the token is needed.
    Name(String),
}

impl std::fmt::Display for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            ApiHost::Ip(ip) => write!(f, "{}", SocketAddr::new(*ip, self.port)),
            ApiHost::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

impl IbConfig {
    /// Validates the flags: `Ok(None)` when none is given. Errors are one line and contain
    /// upstream's words (`ib-sni-name must be set`, `ib-apiserver-ip must be set`, `must not
    /// contain protocol prefix`, `must be a valid IP address or resolvable FQDN`).
    pub fn from_flags(flags: &IbFlags<'_>) -> Result<Option<IbConfig>, String> {
        let sni = given(flags.sni_name);
        let apiserver = given(flags.apiserver);
        let client = given(flags.default_client_id);
        let tenant = given(flags.default_tenant_id);
        let Some(sni) = sni else {
            if apiserver.is_some()
                || client.is_some()
                || tenant.is_some()
                || flags.ca_file.is_some()
            {
                return Err("identity bindings: ib-sni-name must be set when other --ib-* flags are given (the TLS name of the cluster's identity-bindings endpoint)".into());
            }
            return Ok(None);
        };
        if sni.contains("://") {
            return Err(format!(
                "identity bindings: ib-sni-name {sni:?} must not contain protocol prefix: give the host name only"
            ));
        }
        if !is_host_name(sni) {
            return Err(format!(
                "identity bindings: ib-sni-name {sni:?} is not a host name"
            ));
        }
        let Some(apiserver) = apiserver else {
            return Err("identity bindings: ib-apiserver-ip must be set with --ib-sni-name (the API server's address, as AKS passes it)".into());
        };
        let apiserver = parse_apiserver(apiserver).ok_or_else(|| {
            format!(
                "identity bindings: ib-apiserver-ip {apiserver:?} must be a valid IP address or resolvable FQDN (optionally with :PORT)"
            )
        })?;
        Ok(Some(IbConfig {
            sni_name: sni.trim_end_matches('.').to_ascii_lowercase(),
            apiserver,
            default_client_id: client.map(str::to_owned),
            default_tenant_id: tenant.map(str::to_owned),
            ca_file: flags
                .ca_file
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from(DEFAULT_CA_FILE), Path::to_path_buf),
        }))
    }

    /// Where the endpoint is, for logs and errors.
    pub fn describe(&self) -> String {
        format!("https://{}/ at {}", self.sni_name, self.apiserver)
    }
}

/// `IP`, `IP:PORT`, `[IPv6]:PORT`, `NAME` or `NAME:PORT`.
fn parse_apiserver(text: &str) -> Option<ApiServer> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ApiServer {
            host: ApiHost::Ip(ip),
            port: DEFAULT_PORT,
        });
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return (addr.port() != 0).then(|| ApiServer {
            host: ApiHost::Ip(addr.ip()),
            port: addr.port(),
        });
    }
    let (name, port) = match text.rsplit_once(':') {
        Some((name, port)) => (name, port.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => (text, DEFAULT_PORT),
    };
    is_host_name(name).then(|| ApiServer {
        host: ApiHost::Name(name.trim_end_matches('.').to_owned()),
        port,
    })
}

/// An RFC 1123 host name whose last label is not all digits (so `999.999.999.999`, a broken
/// address, is not taken for a name).
fn is_host_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    labels.iter().all(label_ok)
        && labels
            .last()
            .is_some_and(|l| !l.bytes().all(|b| b.is_ascii_digit()))
}

/// The client ID to ask for: the service account's annotation when present (an empty one is an
/// error, as upstream: it overrides the default), else `--ib-default-client-id`.
pub fn client_id(annotation: Option<&str>, config: &IbConfig) -> anyhow::Result<String> {
    match annotation.map(str::trim) {
        Some("") => anyhow::bail!(
            "identity bindings: client ID not configured: the service account's {} annotation is empty; set it to the client ID of the identity bound to this service account",
            CLIENT_ID_ANNOTATION
        ),
        Some(id) => Ok(id.to_owned()),
        None => config.default_client_id.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "identity bindings: client ID not configured: annotate the service account with {} or pass --ib-default-client-id",
                CLIENT_ID_ANNOTATION
            )
        }),
    }
}

/// The tenant: annotation, else `--ib-default-tenant-id` (reserved: not sent anywhere).
pub fn tenant_id(annotation: Option<&str>, config: &IbConfig) -> Option<String> {
    annotation
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| config.default_tenant_id.clone())
}

/// Reads the cluster CA; at least one certificate or an error naming the file.
fn trust(ca_file: &Path) -> anyhow::Result<Arc<TrustStore>> {
    let what = || {
        format!(
            "identity bindings: cannot use the cluster CA {} (--ib-ca-file)",
            ca_file.display()
        )
    };
    let size = std::fs::metadata(ca_file)
        .map_err(|e| anyhow::anyhow!("{}: {e}", what()))?
        .len();
    if size > MAX_CA_BYTES {
        anyhow::bail!("{}: larger than {MAX_CA_BYTES} bytes", what());
    }
    let (store, report) = TrustStore::load_from(Some(ca_file.to_path_buf()), None);
    if store.is_empty() {
        anyhow::bail!(
            "{}: no PEM certificate in it ({} invalid blocks)",
            what(),
            report.skipped
        );
    }
    Ok(Arc::new(store))
}

/// Where to connect: the address, or those a lookup of the name gives (tried in order; `localhost`
/// may give `::1` before `127.0.0.1`).
async fn resolve(apiserver: &ApiServer, deadline: Deadline) -> anyhow::Result<Vec<SocketAddr>> {
    let name = match &apiserver.host {
        ApiHost::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, apiserver.port)]),
        ApiHost::Name(name) => name,
    };
    let failed = |why: String| {
        anyhow::anyhow!(
            "identity bindings: ib-apiserver-ip {name} must be a valid IP address or resolvable FQDN: {why}"
        )
    };
    match tokio::time::timeout(
        deadline.cap(LOOKUP_TIMEOUT),
        tokio::net::lookup_host((name.as_str(), apiserver.port)),
    )
    .await
    {
        Ok(Ok(addrs)) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                return Err(failed("the lookup found no address".into()));
            }
            Ok(addrs)
        }
        Ok(Err(e)) => Err(failed(format!("lookup failed: {e}"))),
        Err(_) => Err(failed("the lookup did not finish in time".into())),
    }
}

/// Gets an Entra access token for `scope` from the identity-bindings endpoint, trading the
/// service-account `token` as `client_id`.
pub async fn token(
    config: &IbConfig,
    client_id: &str,
    token: &Secret,
    scope: &str,
    deadline: Deadline,
) -> anyhow::Result<Secret> {
    let trust = trust(&config.ca_file)?;
    let addrs = resolve(&config.apiserver, deadline).await?;
    let shown = addrs
        .iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let http = HttpClient::pinned(
        Pin {
            host: config.sni_name.clone(),
            addrs,
            trust,
        },
        CONNECT_TIMEOUT,
        REQUEST_TIMEOUT,
    );
    let url = Url::parse(&format!("https://{}/", config.sni_name))
        .map_err(|e| anyhow::anyhow!("identity bindings: bad URL for {}: {e}", config.sni_name))?;
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("client_assertion", token.expose());
    form.append_pair(
        "client_assertion_type",
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
    );
    form.append_pair("client_id", client_id);
    form.append_pair("grant_type", "client_credentials");
    form.append_pair("scope", scope);
    let body = form.finish();
    let headers = [
        ("user-agent", USER_AGENT),
        ("content-type", "application/x-www-form-urlencoded"),
        ("accept", "application/json"),
    ];
    let endpoint = format!("https://{}/ at {shown}", config.sni_name);
    let what = format!("identity-bindings token request to {endpoint}");
    // The body holds the service-account token; the client never logs bodies.
    let call = Call {
        route: Route::Internet,
        method: Method::POST,
        url: &url,
        headers: &headers,
        body: Some(body.as_bytes()),
        what: &what,
    };
    tracing::info!(endpoint = %endpoint, client_id, "getting a token from identity bindings");
    let answer = http
        .send_retrying_with(call, deadline, &RetryRules::DEFAULT)
        .await
        .map_err(|e| {
            let hint = match &e.error {
                HttpError::Tls { .. } => format!(
                    "; the endpoint must present a certificate for {} issued by the cluster CA {} (--ib-ca-file)",
                    config.sni_name,
                    config.ca_file.display()
                ),
                HttpError::Status { .. } => format!(
                    "; check that client ID {client_id} is bound to this service account"
                ),
                _ => "; check that the API server address (--ib-apiserver-ip) is reachable from this node".to_owned(),
            };
            anyhow::anyhow!("{what} failed: {}{hint}", e)
        })?;
    let access = access_token::read(&answer.body)
        .map_err(|why| anyhow::anyhow!("{what}: {why} ({} bytes)", answer.body.len()))?;
    tracing::info!(endpoint = %endpoint, client_id, "identity-bindings token obtained");
    Ok(access)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags<'a>(sni: &'a str, client: &'a str, tenant: &'a str, ip: &'a str) -> IbFlags<'a> {
        let opt = |s: &'a str| Some(s).filter(|s| !s.is_empty());
        IbFlags {
            sni_name: opt(sni),
            apiserver: opt(ip),
            default_client_id: opt(client),
            default_tenant_id: opt(tenant),
            ca_file: None,
        }
    }

    /// docs/providers/acr.md “Identity bindings”: upstream's flag-validation vectors.
    #[test]
    fn flag_validation_matches_upstream() {
        let ok = |sni, client, tenant, ip| {
            IbConfig::from_flags(&flags(sni, client, tenant, ip))
                .unwrap_or_else(|e| panic!("{sni} {ip}: {e}"))
        };
        let err = |sni, client, tenant, ip| {
            IbConfig::from_flags(&flags(sni, client, tenant, ip)).unwrap_err()
        };
        assert_eq!(ok("", "", "", ""), None);
        let full = ok("api.example.com", "client-123", "tenant-456", "10.0.0.1").unwrap();
        assert_eq!(full.default_client_id.as_deref(), Some("client-123"));
        assert_eq!(full.default_tenant_id.as_deref(), Some("tenant-456"));
        assert_eq!(full.ca_file, PathBuf::from(DEFAULT_CA_FILE));
        assert_eq!(full.describe(), "https://api.example.com/ at 10.0.0.1:443");
        assert!(ok("api.example.com", "", "", "10.0.0.1").is_some());
        for sni in ["https://api.example.com", "http://api.example.com"] {
            assert!(
                err(sni, "", "", "10.0.0.1").contains("must not contain protocol prefix"),
                "{sni}"
            );
        }
        assert!(err("api.example.com", "", "", "").contains("ib-apiserver-ip must be set"));
        assert!(err("", "", "", "10.0.0.1").contains("ib-sni-name must be set"));
        assert!(err("", "client-123", "", "").contains("ib-sni-name must be set"));
        assert!(err("", "", "tenant-456", "").contains("ib-sni-name must be set"));
        for ip in [
            "999.999.999.999",
            "bad name",
            "10.0.0.1:0",
            "host:port",
            "a..b",
        ] {
            assert!(
                err("api.example.com", "", "", ip)
                    .contains("must be a valid IP address or resolvable FQDN"),
                "{ip}"
            );
        }
        let v6 = ok("api.example.com", "", "", "2001:db8::1").unwrap();
        assert_eq!(v6.apiserver.to_string(), "[2001:db8::1]:443");
        let name = ok("api.example.com", "", "", "localhost").unwrap();
        assert_eq!(name.apiserver.host, ApiHost::Name("localhost".into()));
        let port = ok("api.example.com", "", "", "127.0.0.1:8443").unwrap();
        assert_eq!(port.apiserver.to_string(), "127.0.0.1:8443");
        let port = ok("api.example.com", "", "", "[::1]:8443").unwrap();
        assert_eq!(port.apiserver.to_string(), "[::1]:8443");
        let port = ok("api.example.com", "", "", "api.internal:6443").unwrap();
        assert_eq!(port.apiserver.to_string(), "api.internal:6443");
        for e in [
            err("", "", "", "10.0.0.1"),
            err("https://x", "", "", "1.1.1.1"),
        ] {
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn client_id_from_annotation_then_default() {
        let mut config = IbConfig::from_flags(&flags("api.example.com", "", "", "10.0.0.1"))
            .unwrap()
            .unwrap();
        assert!(
            client_id(None, &config)
                .unwrap_err()
                .to_string()
                .contains("client ID not configured")
        );
        config.default_client_id = Some("default".into());
        assert_eq!(client_id(None, &config).unwrap(), "default");
        assert_eq!(client_id(Some("pod"), &config).unwrap(), "pod");
        assert!(
            client_id(Some(" "), &config)
                .unwrap_err()
                .to_string()
                .contains("client ID not configured")
        );
        assert_eq!(tenant_id(None, &config), None);
        config.default_tenant_id = Some("t".into());
        assert_eq!(tenant_id(None, &config).as_deref(), Some("t"));
        assert_eq!(tenant_id(Some("u"), &config).as_deref(), Some("u"));
    }
}
