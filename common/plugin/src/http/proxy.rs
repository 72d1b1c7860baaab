//! Where a request may go, and through which proxy (the rules are in the module docs of `http`):
//! the route a caller names, the proxy variables, the node-local addresses that never leave the
//! node, and so which of the three clients a request takes.

use std::net::IpAddr;

use reqwest::Url;

use super::error::HttpError;
use crate::endpoint::{describe, is_loopback};

/// Where a request goes, which decides whether proxies apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A public or corporate endpoint: proxy variables apply.
    Internet,
    /// A node-local metadata endpoint: never proxied.
    Metadata,
}

/// Proxy settings, normally read from the environment.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// The proxy for https requests (the only ones ever proxied, see the module docs).
    pub https: Option<ProxyUrl>,
    /// Hosts that bypass the proxy, in curl's `NO_PROXY` syntax.
    pub no_proxy: Option<String>,
}

/// A proxy URL and the environment variable it was read from, which errors name.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    /// `HTTPS_PROXY`, `https_proxy`, `ALL_PROXY` or `all_proxy`.
    pub variable: &'static str,
    /// The proxy, e.g. `http://proxy.corp:3128`; may hold a user name and password.
    pub url: String,
}

impl ProxyConfig {
    /// Reads `HTTPS_PROXY`/`https_proxy` (else `ALL_PROXY`/`all_proxy`) and
    /// `NO_PROXY`/`no_proxy`; the lowercase spelling wins, as in curl.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`Self::from_env`], from any lookup function (tests, the checker's merged environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |names: [&'static str; 2]| {
            names.into_iter().find_map(|variable| {
                lookup(variable)
                    .filter(|v| !v.trim().is_empty())
                    .map(|url| ProxyUrl { variable, url })
            })
        };
        ProxyConfig {
            https: get(["https_proxy", "HTTPS_PROXY"]).or_else(|| get(["all_proxy", "ALL_PROXY"])),
            no_proxy: get(["no_proxy", "NO_PROXY"]).map(|v| v.url),
        }
    }

    /// An https proxy as if `HTTPS_PROXY` named it (tests, tools).
    pub fn https(url: impl Into<String>) -> Self {
        ProxyConfig {
            https: Some(ProxyUrl {
                variable: "HTTPS_PROXY",
                url: url.into(),
            }),
            no_proxy: None,
        }
    }
}

/// Proxy URLs may carry a password: Debug output (and so any `{:?}` of a client) shows only
/// which variable set one.
impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("https", &self.https.as_ref().map(|p| p.variable))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyUrl({})", self.variable)
    }
}

/// Which client a request needs. Plain http is never proxied (it only goes to node-local
/// addresses), so there is no proxied plain client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Direct plain `http://`: no trust store is ever loaded for it.
    Plain,
    /// Direct https.
    Tls,
    /// https through the proxy variables.
    ProxiedTls,
}

impl Kind {
    /// The client `url` needs on `route`, by the rules in the module docs; plain http off the
    /// node is refused here, before anything is sent.
    pub(super) fn for_request(url: &Url, route: Route) -> Result<Kind, HttpError> {
        let node_local = is_loopback(url) || is_link_local_url(url);
        Ok(match (url.scheme(), route) {
            ("http", Route::Metadata) => Kind::Plain,
            ("http", Route::Internet) if node_local => Kind::Plain,
            ("http", Route::Internet) => return Err(HttpError::PlainHttp(describe(url))),
            (_, Route::Metadata) => Kind::Tls,
            (_, Route::Internet) if node_local => Kind::Tls,
            (_, Route::Internet) => Kind::ProxiedTls,
        })
    }
}

impl ProxyConfig {
    /// `builder` sending https through the proxy, except to the hosts `NO_PROXY` names. A proxy
    /// URL reqwest cannot use is an error naming its variable (never the URL: it may hold a
    /// password).
    pub(super) fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, String> {
        let Some(proxy) = &self.https else {
            return Ok(builder);
        };
        let no_proxy = self
            .no_proxy
            .as_deref()
            .and_then(reqwest::NoProxy::from_string);
        let parsed = reqwest::Proxy::https(&proxy.url).map_err(|e| {
            // reqwest's error does not quote the URL (which may hold a password).
            format!(
                "{} is not a usable proxy URL ({}): fix or unset it",
                proxy.variable,
                crate::logging::error_chain(&e)
            )
        })?;
        Ok(builder.proxy(parsed.no_proxy(no_proxy)))
    }
}

/// Whether the URL's host is a link-local address (cloud metadata lives there).
pub fn is_link_local_url(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => is_link_local(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_link_local(IpAddr::V6(ip)),
        _ => false,
    }
}

/// 169.254.0.0/16, fe80::/10 and AWS's node-local IPv6 addresses: fd00:ec2::254 (IMDS) and
/// fd00:ec2::23 (the EKS Pod Identity agent).
pub fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
                || v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)
        }
    }
}
