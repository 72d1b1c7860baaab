//! Which URLs a provider may send credentials to, and how URLs from outside input are parsed.
//!
//! Tokens travel to token endpoints named by flags, config files, key files and metadata
//! (GCP's STS, IAM and `token_uri`, a dockercfg URL, an Azure cloud's ARM and Entra endpoints).
//! All must be `https://`. Plain `http://` is accepted only for loopback hosts (127.0.0.0/8,
//! `::1`, `localhost`), which a node can use for a local relay and tests use for fakes: it never
//! puts a token on the wire. Metadata servers are the exception, plain HTTP by design, and are
//! addressed by their providers without this module (docs/security.md, "Threat model").
//!
//! Every URL read from outside goes through [`parse_url`] first: no endpoint has a non-ASCII or
//! percent-encoded host name, and `url` built with the ASCII-only IDNA adapter (see
//! `common/plugin/Cargo.toml`) trips a debug assertion on some (`https://A\u{e8}.example`,
//! `https://A%EE.example`), so those are refused before `url` sees them.

use std::net::IpAddr;

use url::{Host, Url};

/// Why a URL from outside input was refused. Displayed after the name of what held it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not a URL at all.
    #[error("is not a valid URL: {0}")]
    Invalid(#[from] url::ParseError),
    /// A host with non-ASCII characters or percent escapes.
    #[error("is not a valid URL: its host is not plain ASCII")]
    NotAscii,
    /// `https://user:pass@host`: credentials of its own in the URL.
    #[error("must not carry a user name or password in the URL")]
    UserInfo,
    /// `http://` to a host that is not loopback.
    #[error(
        "{0} uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only)"
    )]
    PlainHttp(String),
    /// Neither https nor http.
    #[error("has unsupported scheme {0:?}: use https")]
    Scheme(String),
    /// `https:///path` and the like.
    #[error("has no host")]
    NoHost,
}

/// An endpoint that was refused, with what held it (`--sts-endpoint`, `the token_uri of …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {error}")]
pub struct EndpointError {
    /// What held the URL, as the error line names it.
    pub what: String,
    /// Why it was refused.
    pub error: UrlError,
}

/// Parses a URL from outside input, refusing a host that is not plain ASCII.
pub fn parse_url(text: &str) -> Result<Url, UrlError> {
    // `url` drops ASCII tabs and line breaks anywhere and trims control characters and spaces at
    // both ends (WHATWG URL), so the host is looked at as it will read it.
    let cleaned: String = text
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let authority = authority(&cleaned);
    if !authority.is_ascii() || authority.contains('%') {
        return Err(UrlError::NotAscii);
    }
    Ok(Url::parse(&cleaned)?)
}

/// The `[user@]host[:port]` part of a URL as `url` reads it: after the scheme and its slashes (or
/// backslashes), up to the path, query or fragment.
fn authority(url: &str) -> &str {
    let rest = url.split_once(':').map_or(url, |(_, rest)| rest);
    let rest = rest.trim_start_matches(['/', '\\']);
    rest.split(['/', '\\', '?', '#']).next().unwrap_or(rest)
}

/// Parses `text` as an endpoint URL that may carry credentials: https, or http to loopback.
/// `what` names where it came from in the error.
pub fn secure_url(text: &str, what: &str) -> Result<Url, EndpointError> {
    let refuse = |error| EndpointError {
        what: what.to_owned(),
        error,
    };
    let url = parse_url(text).map_err(refuse)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(UrlError::UserInfo));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => return Err(refuse(UrlError::PlainHttp(describe(&url)))),
        other => return Err(refuse(UrlError::Scheme(other.to_owned()))),
    }
    if url.host().is_none() {
        return Err(refuse(UrlError::NoHost));
    }
    Ok(url)
}

/// Whether the URL's host is a loopback address or `localhost` (also `*.localhost`, which
/// resolvers answer with loopback).
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
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

/// Whether `label` is one lower-case DNS label: 1 to 63 letters, digits and inner hyphens.
pub fn is_dns_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `name` is a lower-case DNS name: at most 253 characters of [`is_dns_label`] labels.
pub fn is_dns_name(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
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
            " https://padded.example/x ",
        ] {
            assert!(secure_url(ok, "endpoint").is_ok(), "{ok}");
        }
        for (bad, want) in [
            (
                "http://sts.googleapis.com/v1/token?sig=x",
                "--sts-endpoint http://sts.googleapis.com/v1/token uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only)",
            ),
            (
                "http://10.0.0.1/token",
                "--sts-endpoint http://10.0.0.1/token uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only)",
            ),
            (
                "http://localhost.evil.com/x",
                "--sts-endpoint http://localhost.evil.com/x uses plain http: credentials would cross the network unencrypted; use https (http is accepted for loopback hosts only)",
            ),
            (
                "ftp://x/y",
                "--sts-endpoint has unsupported scheme \"ftp\": use https",
            ),
            (
                "https://user:pw@x/y",
                "--sts-endpoint must not carry a user name or password in the URL",
            ),
            (
                "sts.googleapis.com",
                "--sts-endpoint is not a valid URL: relative URL without a base",
            ),
        ] {
            let e = secure_url(bad, "--sts-endpoint").unwrap_err().to_string();
            assert_eq!(e, want, "{bad}");
        }
    }

    /// Hosts `url` would hand to the ASCII-only IDNA adapter with an upper-case letter: in debug
    /// builds that is an assertion failure (found by the `acr_challenge` and `gcr_key_file`
    /// fuzz targets), so they are refused first, tabs and line breaks taken out as `url` does.
    #[test]
    fn hosts_that_are_not_plain_ascii_are_refused_before_parsing() {
        for text in [
            "https://OAUTH\u{e8}.example/token",
            "https://OAUTH%EE.example/token",
            "https:\\\\OAUTH%41%EE.example\\token",
            "https:/\t/a\tL\t%\t\te25",
            "\u{1}https://A%e2%82%ac.example/",
        ] {
            assert_eq!(parse_url(text), Err(UrlError::NotAscii), "{text:?}");
        }
        // Escapes in the path and query are fine (signed URLs hold `%2F`).
        let url = parse_url("https://storage.example/b/o%2Fx?X-Goog-Signature=a%2Fb").unwrap();
        assert_eq!(url.host_str(), Some("storage.example"));
        assert_eq!(
            parse_url("https://EXAMPLE.com\t/x").unwrap().as_str(),
            "https://example.com/x"
        );
    }

    #[test]
    fn describe_drops_the_query() {
        let url = Url::parse("https://storage.example.com/b/o?X-Goog-Signature=abc#f").unwrap();
        assert_eq!(describe(&url), "https://storage.example.com/b/o");
    }
}
