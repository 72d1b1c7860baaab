//! The V3 request signature (`ACS3-HMAC-SHA256`) of Alibaba Cloud's OpenAPI.
//!
//! Every call this provider makes (Container Registry, STS) is signed this way, or sent with the
//! same headers and no `Authorization` when anonymous (STS `AssumeRoleWithOIDC`). The method,
//! as Alibaba's "Request syntax and signature method V3" describes it:
//!
//! - canonical request = method `\n` canonical URI (each path segment RFC 3986-encoded) `\n`
//!   canonical query (names and values encoded, sorted) `\n` canonical headers (`name:value\n`,
//!   lower-case names sorted) `\n` signed header list (`;`-joined) `\n` hex SHA-256 of the body;
//! - string to sign = `ACS3-HMAC-SHA256\n` + hex SHA-256 of the canonical request;
//! - signature = hex HMAC-SHA256 keyed with the AccessKeySecret.
//!
//! The date and nonce are arguments, so a test can pin them; `api` draws fresh ones for every
//! attempt, because the server refuses a nonce it has seen.

use std::fmt::Write as _;
use std::time::SystemTime;

use ring::hmac;

use crate::credentials::AccessKey;

/// The signature algorithm, first word of `Authorization` and of the string to sign.
pub const ALGORITHM: &str = "ACS3-HMAC-SHA256";

/// A request about to be signed: everything the signature covers.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET` or `POST`.
    pub method: &'a str,
    /// The `Host` header (host, and `:port` when not the scheme's default).
    pub host: &'a str,
    /// The path (`/` for RPC-style APIs, `/tokens` for ROA ones).
    pub path: &'a str,
    /// Query parameters, unencoded, in any order.
    pub query: &'a [(&'a str, &'a str)],
    /// `x-acs-action`.
    pub action: &'a str,
    /// `x-acs-version`.
    pub version: &'a str,
    /// The body: empty, or a form (`application/x-www-form-urlencoded`) for a parameter that
    /// must not ride in the URL (STS's `OIDCToken`).
    pub body: &'a [u8],
    /// The body's `content-type`, signed when present.
    pub content_type: Option<&'a str>,
}

/// The headers to send with a request: every `x-acs-*` header, and `Authorization` when signed.
/// With `key` `None` the request is anonymous (STS `AssumeRoleWithOIDC`): the same `x-acs-*`
/// headers, no `Authorization`.
///
/// Names are lower case and sorted (the order they are signed in), `authorization` last.
pub fn headers(
    request: &Request<'_>,
    key: Option<&AccessKey>,
    date: SystemTime,
    nonce: &str,
) -> Vec<(String, String)> {
    let payload_hash = sha256_hex(request.body);
    let mut headers: Vec<(String, String)> = vec![
        ("host".into(), request.host.trim().into()),
        ("x-acs-action".into(), request.action.trim().into()),
        ("x-acs-version".into(), request.version.trim().into()),
        ("x-acs-date".into(), format_date(date)),
        ("x-acs-signature-nonce".into(), nonce.trim().into()),
        ("x-acs-content-sha256".into(), payload_hash.clone()),
    ];
    if let Some(content_type) = request.content_type {
        headers.push(("content-type".into(), content_type.trim().into()));
    }
    if let Some(token) = key.and_then(|k| k.security_token.as_ref()) {
        headers.push(("x-acs-security-token".into(), token.expose().trim().into()));
    }
    headers.sort();
    let Some(key) = key else {
        return headers;
    };
    let signed_list = headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers = headers
        .iter()
        .fold(String::new(), |mut out, (name, value)| {
            let _ = writeln!(out, "{name}:{value}");
            out
        });
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_list}\n{payload_hash}",
        request.method.to_ascii_uppercase(),
        canonical_uri(request.path),
        canonical_query(request.query),
    );
    let string_to_sign = format!("{ALGORITHM}\n{}", sha256_hex(canonical.as_bytes()));
    let hmac_key = hmac::Key::new(hmac::HMAC_SHA256, key.secret.expose().as_bytes());
    let signature = hmac::sign(&hmac_key, string_to_sign.as_bytes());
    headers.push((
        "authorization".into(),
        format!(
            "{ALGORITHM} Credential={},SignedHeaders={signed_list},Signature={}",
            key.id,
            kcp_plugin::hex::encode(signature.as_ref())
        ),
    ));
    headers
}

/// RFC 3986 percent-encoding as the signature wants it (shared with the X.509 SigV4 of ECR's
/// IAM Roles Anywhere). The URL sent must use the same encoding as the canonical request, so
/// `api` builds its query with it too.
pub use kcp_plugin::signing::percent_encode;

/// The canonical query string: each name and value [`percent_encode`]d, pairs sorted by encoded
/// name then encoded value (repeated names), joined as `k=v` with `&`; an empty value is `k=`.
/// Also the query string `api` sends, so the server sees exactly what was signed.
pub fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(name, value)| (percent_encode(name), percent_encode(value)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The canonical URI: each `/`-separated segment of `path` [`percent_encode`]d, the slashes
/// kept; an empty path is `/`. Also the path `api` sends.
pub fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        return "/".to_owned();
    }
    path.split('/')
        .map(percent_encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// `x-acs-date`: UTC as `YYYY-MM-DDTHH:MM:SSZ`. Dates are turned into days by
/// `kcp_plugin::time::days_from_civil`, the workspace's one calendar, searched here backwards
/// rather than inverted by a second formula. A time before 1970 (a broken clock) is written as
/// the epoch; the server refuses it either way (the date must be within 15 minutes).
pub fn format_date(date: SystemTime) -> String {
    let secs = kcp_plugin::time::unix_secs(date).max(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// (year, month, day) of a day count since 1970-01-01 (not negative).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let start = |year: i64, month: u32| {
        kcp_plugin::time::days_from_civil(year, month, 1).unwrap_or(i64::MAX)
    };
    // An estimate within a year or two, then corrected both ways.
    let mut year = 1970 + days / 366;
    while start(year, 1) > days {
        year -= 1;
    }
    while start(year + 1, 1) <= days {
        year += 1;
    }
    let month = (1..=12u32)
        .rev()
        .find(|&m| start(year, m) <= days)
        .unwrap_or(1);
    let day = u32::try_from(days - start(year, month) + 1).unwrap_or(1);
    (year, month, day)
}

/// A fresh `x-acs-signature-nonce`: 32 hex characters. The server refuses a nonce it has seen
/// within its replay window, so every attempt of a call draws a new one.
pub fn nonce() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// Lower-case hex SHA-256 (`x-acs-content-sha256`, the hashed canonical request).
pub use kcp_plugin::signing::sha256_hex;

#[cfg(test)]
mod tests;
