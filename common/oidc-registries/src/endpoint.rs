//! Which endpoint URLs may receive a service-account token: `https://`, or plain `http://` to a
//! loopback host only (a local relay, or a test's fake), so a token never crosses the network in
//! clear. The same rule as the providers' other endpoints (kcp-plugin's `endpoint` module); kept
//! here because the checker links this crate and not the plugin runtime.

use std::net::IpAddr;

use url::{Host, Url};

/// Parses and checks an endpoint; the error is a phrase that follows the endpoint's name
/// (`endpoint "http://x" uses plain http: ...`).
pub fn check(text: &str) -> Result<Url, String> {
    // `url` would map a non-ASCII or percent-encoded host through IDNA; no registry or token
    // endpoint is spelt so, and refusing it keeps the host as written.
    // Only `scheme://authority`: `url` also reads `http:/host` and `http:\\host`, whose host the
    // split below would not see.
    let after_scheme = text.split_once(':').and_then(|(scheme, rest)| {
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        rest.strip_prefix("//").filter(|_| scheme_ok)
    });
    let Some(after_scheme) = after_scheme else {
        return Err("is not a valid URL: write it as https://host[:port][/path]".to_owned());
    };
    let authority = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or(after_scheme);
    // An empty authority (`https:///host`) or one with `\\` or controls is read by `url` in ways
    // the host as written does not show.
    if authority.is_empty()
        || !authority.is_ascii()
        || authority.contains(['%', '\\'])
        || authority.chars().any(|c| c.is_ascii_control() || c == ' ')
        || text.trim() != text
    {
        return Err("is not a valid URL: its host must be plain ASCII, without spaces".to_owned());
    }
    let url = Url::parse(text).map_err(|e| format!("is not a valid URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".to_owned());
    }
    if url.fragment().is_some() {
        return Err("must not have a #fragment".to_owned());
    }
    match (url.scheme(), url.host()) {
        (_, None) => Err("has no host".to_owned()),
        ("https", Some(_)) => Ok(url),
        ("http", Some(host)) if is_loopback(&host) => Ok(url),
        ("http", Some(_)) => Err(
            "uses plain http: the service-account token would cross the network unencrypted; use https (http is accepted for loopback hosts only)"
                .to_owned(),
        ),
        (other, Some(_)) => Err(format!("has unsupported scheme {other:?}: use https")),
    }
}

/// Loopback addresses and `localhost` (also `*.localhost`, which resolvers answer with loopback).
fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        Host::Ipv6(ip) => IpAddr::V6(*ip).is_loopback(),
        Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback_http_only() {
        for ok in [
            "https://sso.acme.example/realms/x/protocol/openid-connect/token",
            "https://acme.jfrog.io",
            "http://127.0.0.1:8080/token",
            "http://[::1]:9/x",
            "http://localhost:1/x",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for (bad, want) in [
            ("http://sso.acme.example/token", "uses plain http"),
            ("ftp://sso.acme.example/token", "unsupported scheme \"ftp\""),
            ("https://user:pw@sso.acme.example/", "user name or password"),
            ("https://sso.acme.example/#x", "#fragment"),
            ("https://bücher.example/", "plain ASCII"),
            ("https://a%41.example/", "plain ASCII"),
            (" https://a.example/", "is not a valid URL"),
            ("sso.acme.example/token", "is not a valid URL"),
            // Found by the oidc_registries fuzz target: `url` reads these hosts too, past the
            // ASCII check that looked for `://`.
            ("http:/A\u{fffd}.example/", "write it as https://"),
            ("https:\\\\b\u{fc}cher.example/", "write it as https://"),
            ("https:///TOKEN.example/", "plain ASCII"),
            (
                "https:/Z\u{fffd}.example/x/https://a.example/",
                "write it as https://",
            ),
            ("https://\\Token.example/", "plain ASCII"),
            ("https://a\u{1d}b.example/", "plain ASCII"),
        ] {
            let err = check(bad).unwrap_err();
            assert!(err.contains(want), "{bad}: {err}");
        }
    }
}
