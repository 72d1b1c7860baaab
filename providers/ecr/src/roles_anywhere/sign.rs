//! The X.509 variant of SigV4 that `CreateSession` takes: SigV4's canonical request and string
//! to sign, with `AWS4-X509-RSA-SHA256` or `AWS4-X509-ECDSA-SHA256` as the algorithm, the
//! certificate's serial number in place of an access key, and the private key's signature over
//! the string to sign in place of the HMAC chain (no key derivation). Signed headers:
//! `content-type`, `host`, `x-amz-date`, `x-amz-x509` and, with intermediates,
//! `x-amz-x509-chain` (docs/providers/ecr.md, "Hybrid and on-prem nodes").

use std::time::SystemTime;

use base64::Engine;

use super::cert::{Certificate, amz_date};
use super::key::Signer;

/// The service name in the credential scope.
pub const SERVICE: &str = "rolesanywhere";

/// What one signed `CreateSession` request carries, apart from its URL.
pub struct SignedRequest {
    /// Every header to send, `Authorization` last, names lower-case.
    pub headers: Vec<(String, String)>,
}

/// What goes into a signature.
pub struct Signing<'a> {
    /// `host[:port]`, exactly as the `Host` header is sent.
    pub host: &'a str,
    /// The request path, e.g. `/sessions`.
    pub path: &'a str,
    /// Query parameters, unencoded.
    pub query: &'a [(&'a str, &'a str)],
    /// The JSON body.
    pub body: &'a [u8],
    /// The region of the credential scope (the trust anchor's).
    pub region: &'a str,
    /// When the request is signed.
    pub now: SystemTime,
    /// The leaf certificate.
    pub certificate: &'a Certificate,
    /// Intermediate CA certificates, DER, in the bundle's order.
    pub chain: &'a [Vec<u8>],
}

/// Signs a `CreateSession` POST.
pub fn sign(s: &Signing<'_>, signer: &Signer) -> Result<SignedRequest, String> {
    let b64 = |der: &[u8]| base64::engine::general_purpose::STANDARD.encode(der);
    let date = amz_date(s.now);
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("host".into(), s.host.to_owned()),
        ("x-amz-date".into(), date.clone()),
        ("x-amz-x509".into(), b64(&s.certificate.der)),
    ];
    if !s.chain.is_empty() {
        let chain: Vec<String> = s.chain.iter().map(|der| b64(der)).collect();
        headers.push(("x-amz-x509-chain".into(), chain.join(",")));
    }
    headers.sort();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical = canonical_request("POST", s.path, s.query, &headers, &signed_headers, s.body);
    let scope = format!("{}/{}/{SERVICE}/aws4_request", &date[..8], s.region);
    let string_to_sign = format!(
        "{}\n{date}\n{scope}\n{}",
        signer.algorithm(),
        sha256_hex(canonical.as_bytes())
    );
    let signature = signer.sign(string_to_sign.as_bytes())?;
    headers.push((
        "authorization".into(),
        format!(
            "{} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={}",
            signer.algorithm(),
            s.certificate.serial,
            kcp_plugin::hex::encode(&signature)
        ),
    ));
    Ok(SignedRequest { headers })
}

/// SigV4's canonical request: method, path, sorted encoded query, `name:value` lines of the
/// signed headers (sorted, lower-case, values trimmed), the signed header list, and the body's
/// SHA-256.
pub fn canonical_request(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(String, String)],
    signed_headers: &str,
    body: &[u8],
) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k), uri_encode(v)))
        .collect();
    pairs.sort();
    let query = pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let header_lines: String = headers
        .iter()
        .map(|(k, v)| format!("{k}:{}\n", v.trim()))
        .collect();
    format!(
        "{method}\n{path}\n{query}\n{header_lines}\n{signed_headers}\n{}",
        sha256_hex(body)
    )
}

/// RFC 3986 percent-encoding of everything but the unreserved characters, as SigV4 wants.
pub use kcp_plugin::signing::percent_encode as uri_encode;
/// Lower-case hex SHA-256.
pub use kcp_plugin::signing::sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical request of SigV4's documentation layout, for a CreateSession POST.
    #[test]
    fn canonical_request_layout() {
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "host".to_owned(),
                "rolesanywhere.us-east-1.amazonaws.com".to_owned(),
            ),
            ("x-amz-date".to_owned(), "20261128T000000Z".to_owned()),
        ];
        let c = canonical_request(
            "POST",
            "/sessions",
            &[("roleArn", "arn:aws:iam::1:role/a b"), ("profileArn", "p")],
            &headers,
            "content-type;host;x-amz-date",
            b"",
        );
        assert_eq!(
            c,
            "POST\n/sessions\nprofileArn=p&roleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fa%20b\ncontent-type:application/json\nhost:rolesanywhere.us-east-1.amazonaws.com\nx-amz-date:20261128T000000Z\n\ncontent-type;host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
