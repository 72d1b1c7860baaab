//! The fakes' check of Alibaba Cloud's V3 request signature (`ACS3-HMAC-SHA256`), written from
//! the signature's published description (see `docs/providers/alibaba.md`), not from the crate's
//! `sign` module: a test that checked the signer with itself could not fail.

use kcp_testkit::fake::RecordedRequest;
use ring::{digest, hmac};

/// What a signed request must carry.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    /// The AccessKeyId the fake handed out.
    pub key_id: &'a str,
    /// Its AccessKeySecret.
    pub secret: &'a str,
    /// Its SecurityToken, for STS credentials.
    pub security_token: Option<&'a str>,
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

/// RFC 3986 percent-encoding: unreserved characters kept, everything else `%XX` upper-case.
pub fn rfc3986(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Asserts the `x-acs-*` headers every call carries (action, version, date, nonce, body hash)
/// are present and well-formed; returns the nonce.
pub fn assert_acs_headers(req: &RecordedRequest, action: &str, version: &str) -> String {
    let what = format!("{action} {}", req.target);
    assert_eq!(
        req.header("x-acs-action"),
        Some(action),
        "{what}: x-acs-action"
    );
    assert_eq!(
        req.header("x-acs-version"),
        Some(version),
        "{what}: x-acs-version"
    );
    let date = req
        .header("x-acs-date")
        .unwrap_or_else(|| panic!("{what}: no x-acs-date"));
    let b = date.as_bytes();
    let shape_ok = b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(
        shape_ok,
        "{what}: x-acs-date {date:?} is not ISO 8601 UTC (YYYY-MM-DDTHH:MM:SSZ)"
    );
    let nonce = req
        .header("x-acs-signature-nonce")
        .unwrap_or_else(|| panic!("{what}: no x-acs-signature-nonce"));
    assert!(
        nonce.len() >= 8,
        "{what}: nonce {nonce:?} is too short to be unique"
    );
    assert_eq!(
        req.header("x-acs-content-sha256"),
        Some(sha256_hex(&req.body).as_str()),
        "{what}: x-acs-content-sha256 is the body's SHA-256"
    );
    for (name, value) in &req.headers {
        if name.starts_with("x-acs-") {
            assert!(!value.trim().is_empty(), "{what}: empty {name}");
        }
    }
    nonce.to_owned()
}

/// Asserts `req` is signed with `key`: the Authorization header's form, the signed header list
/// (host, every `x-acs-*` header sent, content-type with a body), the security token, and the
/// signature recomputed here.
pub fn assert_signed(req: &RecordedRequest, key: Signed<'_>) {
    let what = format!("{} {}", req.method, req.target);
    assert_eq!(
        req.header("x-acs-security-token"),
        key.security_token,
        "{what}: x-acs-security-token is the token handed out with the key"
    );
    let auth = req
        .header("authorization")
        .unwrap_or_else(|| panic!("{what}: not signed (no Authorization)"));
    let rest = auth
        .strip_prefix("ACS3-HMAC-SHA256 ")
        .unwrap_or_else(|| panic!("{what}: Authorization {auth:?} is not ACS3-HMAC-SHA256"));
    let mut parts = std::collections::BTreeMap::new();
    for part in rest.split(',') {
        let (k, v) = part
            .trim()
            .split_once('=')
            .unwrap_or_else(|| panic!("{what}: Authorization part {part:?}"));
        parts.insert(k, v);
    }
    assert_eq!(
        parts.len(),
        3,
        "{what}: Credential, SignedHeaders, Signature: {auth}"
    );
    assert_eq!(
        parts.get("Credential"),
        Some(&key.key_id),
        "{what}: Credential"
    );
    let signed_headers = parts["SignedHeaders"];
    let signature = parts["Signature"];
    let names: Vec<&str> = signed_headers.split(';').collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "{what}: SignedHeaders sorted, each once");
    assert!(names.contains(&"host"), "{what}: host is signed");
    for (name, _) in &req.headers {
        if name.starts_with("x-acs-") {
            assert!(
                names.contains(&name.as_str()),
                "{what}: {name} is sent but not signed"
            );
        }
    }
    if !req.body.is_empty() {
        assert!(
            names.contains(&"content-type"),
            "{what}: a body's content-type is signed"
        );
    }
    let canonical_headers: String = names
        .iter()
        .map(|name| {
            let value = req
                .header(name)
                .unwrap_or_else(|| panic!("{what}: signed header {name} is not sent"));
            format!("{name}:{}\n", value.trim())
        })
        .collect();
    let mut query: Vec<(String, String)> = req
        .query()
        .into_iter()
        .map(|(k, v)| (rfc3986(&k), rfc3986(&v)))
        .collect();
    query.sort();
    let canonical_query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        req.path(),
        canonical_query,
        canonical_headers,
        signed_headers,
        sha256_hex(&req.body)
    );
    let string_to_sign = format!(
        "ACS3-HMAC-SHA256\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mac = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, key.secret.as_bytes()),
        string_to_sign.as_bytes(),
    );
    assert_eq!(
        signature,
        hex(mac.as_ref()),
        "{what}: the V3 signature does not verify with the secret handed out\ncanonical request:\n{canonical_request}"
    );
}

/// Asserts `req` is anonymous: no Authorization, no security token.
pub fn assert_anonymous(req: &RecordedRequest) {
    assert_eq!(
        req.header("authorization"),
        None,
        "{}: anonymous call",
        req.target
    );
    assert_eq!(
        req.header("x-acs-security-token"),
        None,
        "{}: anonymous call",
        req.target
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check itself fails on a wrong secret, a changed header and a changed body.
    #[test]
    fn the_check_can_fail() {
        let secret = "test-secret";
        let body = b"a=1".to_vec();
        let date = "2026-11-28T00:00:00Z";
        let mut req = RecordedRequest {
            method: "POST".into(),
            target: "/?B=x%20y&A=1".into(),
            headers: vec![
                ("host".into(), "127.0.0.1:1".into()),
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("x-acs-action".into(), "Act".into()),
                ("x-acs-content-sha256".into(), sha256_hex(&body)),
                ("x-acs-date".into(), date.into()),
                ("x-acs-signature-nonce".into(), "0123456789abcdef".into()),
                ("x-acs-version".into(), "2018-12-01".into()),
            ],
            body,
        };
        let signed = "content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version";
        let headers: String = signed
            .split(';')
            .map(|n| format!("{n}:{}\n", req.header(n).unwrap()))
            .collect();
        let canonical = format!(
            "POST\n/\nA=1&B=x%20y\n{headers}\n{signed}\n{}",
            sha256_hex(&req.body)
        );
        let sts = format!("ACS3-HMAC-SHA256\n{}", sha256_hex(canonical.as_bytes()));
        let sig = hex(hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            sts.as_bytes(),
        )
        .as_ref());
        req.headers.push((
            "authorization".into(),
            format!("ACS3-HMAC-SHA256 Credential=id,SignedHeaders={signed},Signature={sig}"),
        ));
        let key = Signed {
            key_id: "id",
            secret,
            security_token: None,
        };
        assert_signed(&req, key);
        assert_acs_headers(&req, "Act", "2018-12-01");
        let fails = |req: &RecordedRequest, key: Signed<'static>| {
            std::panic::catch_unwind(|| assert_signed(req, key)).is_err()
        };
        assert!(fails(
            &req,
            Signed {
                secret: "other",
                ..key
            }
        ));
        assert!(fails(
            &req,
            Signed {
                key_id: "other",
                ..key
            }
        ));
        let mut header = req.clone();
        header.headers[2].1 = "Other".into();
        let mut query = req.clone();
        query.target = "/?B=x%20y&A=2".into();
        let mut body = req;
        body.body = b"a=2".to_vec();
        for changed in [header, query, body] {
            assert!(fails(&changed, key), "{changed:?}");
        }
    }
}
