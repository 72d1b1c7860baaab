//! The metadata server's address.
//!
//! Tokens travel to the STS and IAM endpoints, a key file's `token_uri` and the dockercfg URL,
//! all checked by [`kcp_plugin::endpoint::secure_url`] (https, or http to loopback). The metadata
//! server is the exception, plain HTTP by design, and is addressed by host only
//! ([`metadata_base`]).

use anyhow::{anyhow, bail};
use url::Url;

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
