//! Which URLs the plugin may send credentials to.
//!
//! Tokens travel to the STS and IAM endpoints, a key file's `token_uri` and the dockercfg URL; all
//! must be `https://`. Plain `http://` is accepted only for loopback hosts (127.0.0.0/8, `::1`,
//! `localhost`), which a real node can use for a local relay and tests use for fakes: it never
//! puts a token on the wire. The metadata server is the exception, plain HTTP by design, and is
//! addressed by host only ([`metadata_base`]).

use std::net::IpAddr;

use anyhow::{anyhow, bail};
use url::{Host, Url};

/// Parses `text` as an endpoint URL that may carry credentials: https, or http to loopback.
pub fn secure_url(text: &str, what: &str) -> anyhow::Result<Url> {
    let url = Url::parse(text.trim()).map_err(|e| anyhow!("{what} is not a valid URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        bail!("{what} must not carry a user name or password in the URL");
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => bail!(
            "{what} {} uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only)",
            describe(&url)
        ),
        other => bail!("{what} has unsupported scheme {other:?}: use https"),
    }
    if url.host().is_none() {
        bail!("{what} has no host");
    }
    Ok(url)
}

/// Whether the URL's host is a loopback address or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.');
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        None => false,
    }
}

/// `scheme://host[:port]/path` without the query or fragment, which may hold a signature.
pub fn describe(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// The metadata server's `…/computeMetadata/v1/` base from a `GCE_METADATA_HOST`-style value:
/// `host`, `host:port`, `ip`, `[v6]:port`. No scheme, path or user info, as Google's client
/// libraries read it.
pub fn metadata_base(host: &str) -> anyhow::Result<Url> {
    let host = host.trim();
    let hint = "expected a host or host:port such as metadata.google.internal or 127.0.0.1:8080";
    if host.is_empty() {
        bail!("the metadata host is empty: {hint}");
    }
    if host.contains("://") {
        bail!("the metadata host {host:?} must not include a scheme: {hint}");
    }
    if host
        .chars()
        .any(|c| matches!(c, '/' | '@' | '?' | '#') || c.is_whitespace())
    {
        bail!("the metadata host {host:?} must not include a path or user info: {hint}");
    }
    let url = Url::parse(&format!("http://{host}/computeMetadata/v1/"))
        .map_err(|e| anyhow!("the metadata host {host:?} is invalid ({e}): {hint}"))?;
    if url.host().is_none() {
        bail!("the metadata host {host:?} is invalid: {hint}");
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_carries_credentials() {
        for ok in [
            "https://sts.googleapis.com/v1/token",
            "http://127.0.0.1:8080/token",
            "http://127.3.4.5/token",
            "http://[::1]:9/x",
            "http://localhost:1/x",
            "http://LOCALHOST./x",
        ] {
            assert!(secure_url(ok, "endpoint").is_ok(), "{ok}");
        }
        for (bad, want) in [
            ("http://sts.googleapis.com/v1/token", "plain http"),
            ("http://10.0.0.1/token", "plain http"),
            ("http://localhost.evil.com/x", "plain http"),
            ("ftp://x/y", "unsupported scheme"),
            ("https://user:pw@x/y", "user name or password"),
            ("sts.googleapis.com", "not a valid URL"),
        ] {
            let e = secure_url(bad, "--sts-endpoint").unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn describe_drops_the_query() {
        let url = Url::parse("https://storage.example.com/b/o?X-Goog-Signature=abc#f").unwrap();
        assert_eq!(describe(&url), "https://storage.example.com/b/o");
    }

    #[test]
    fn metadata_host_forms() {
        assert_eq!(
            metadata_base("metadata.google.internal").unwrap().as_str(),
            "http://metadata.google.internal/computeMetadata/v1/"
        );
        assert_eq!(
            metadata_base("127.0.0.1:8080").unwrap().as_str(),
            "http://127.0.0.1:8080/computeMetadata/v1/"
        );
        assert_eq!(
            metadata_base("[::1]:80").unwrap().as_str(),
            "http://[::1]/computeMetadata/v1/"
        );
        for bad in ["", "http://x", "x/y", "a@b", "a b", "x:notaport"] {
            assert!(metadata_base(bad).is_err(), "{bad:?}");
        }
    }
}
