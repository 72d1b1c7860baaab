// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use kcp_kubelet::secret::Secret;

use super::*;
use crate::api::tests::BASE_HEADERS;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn key(id: &str, secret: &str, token: Option<&str>) -> AccessKey {
    AccessKey {
        id: id.into(),
        secret: Secret::new(secret),
        security_token: token.map(Secret::new),
        expiration: None,
    }
}

fn names(headers: &[(String, String)]) -> Vec<&str> {
    headers.iter().map(|(n, _)| n.as_str()).collect()
}

fn value<'h>(headers: &'h [(String, String)], name: &str) -> &'h str {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
}

/// The RPC-style example of Alibaba Cloud's "Request syntax and signature method V3"
/// (alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature, "Signature
/// example"): RunInstances on ecs.cn-shanghai with the documented fixed key, date and nonce. The
/// document gives the hashed canonical request and the signature.
#[test]
fn the_documented_rpc_example_signs_as_documented() {
    let request = Request {
        method: "POST",
        host: "ecs.cn-shanghai.aliyuncs.com",
        path: "/",
        query: &[
            ("RegionId", "cn-shanghai"),
            (
                "ImageId",
                "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
            ),
        ],
        action: "RunInstances",
        version: "2014-05-26",
        body: b"",
        content_type: None,
    };
    // 2023-10-26T10:22:32Z.
    let date = at(1_698_315_752);
    assert_eq!(format_date(date), "2023-10-26T10:22:32Z");
    let key = key("YourAccessKeyId", "YourAccessKeySecret", None);
    let headers = headers(
        &request,
        Some(&key),
        date,
        "3156853299f313e23d1673dc12e1703d",
    );
    assert_eq!(
        value(&headers, "authorization"),
        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;\
         x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,\
         Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
    );
    // The document's intermediate value: the canonical request, written out here by hand so
    // that a wrong encoding shows which part differs.
    let canonical = "POST\n/\n\
        ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai\n\
        host:ecs.cn-shanghai.aliyuncs.com\n\
        x-acs-action:RunInstances\n\
        x-acs-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
        x-acs-date:2023-10-26T10:22:32Z\n\
        x-acs-signature-nonce:3156853299f313e23d1673dc12e1703d\n\
        x-acs-version:2014-05-26\n\n\
        host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n\
        e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(
        sha256_hex(canonical.as_bytes()),
        "7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259"
    );
    assert_eq!(
        value(&headers, "x-acs-content-sha256"),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn query_encoding_follows_rfc_3986() {
    for (raw, encoded) in [
        ("a b", "a%20b"),
        ("*", "%2A"),
        ("~", "~"),
        ("/", "%2F"),
        ("=", "%3D"),
        ("+", "%2B"),
        ("&", "%26"),
        ("%", "%25"),
        ("-_.", "-_."),
        ("AZaz09", "AZaz09"),
        ("é", "%C3%A9"),
        ("测试", "%E6%B5%8B%E8%AF%95"),
        ("", ""),
    ] {
        assert_eq!(percent_encode(raw), encoded, "{raw:?}");
    }
    assert_eq!(
        canonical_query(&[
            ("b", "x y"),
            ("a", ""),
            ("c*", "1/2=3"),
            ("b", "a~"),
            ("A", "é"),
        ]),
        // Sorted by encoded name (byte order: upper case first), repeated names by value.
        "A=%C3%A9&a=&b=a~&b=x%20y&c%2A=1%2F2%3D3"
    );
    // Order of the input does not matter.
    assert_eq!(
        canonical_query(&[("y", "2"), ("x", "1")]),
        canonical_query(&[("x", "1"), ("y", "2")])
    );
    assert_eq!(canonical_query(&[]), "");
    assert_eq!(canonical_uri("/"), "/");
    assert_eq!(canonical_uri(""), "/");
    assert_eq!(canonical_uri("/tokens"), "/tokens");
    assert_eq!(canonical_uri("/a b/c*~"), "/a%20b/c%2A~");
}

fn roa_request(body: &'static [u8], content_type: Option<&'static str>) -> Request<'static> {
    Request {
        method: "GET",
        host: "cr.cn-hangzhou.aliyuncs.com",
        path: "/tokens",
        query: &[],
        action: "GetAuthorizationToken",
        version: "2016-06-07",
        body,
        content_type,
    }
}

#[test]
fn header_sets_are_exact_anonymous_signed_and_sts() {
    let date = at(1_800_000_000);
    let nonce = "0123456789abcdef0123456789abcdef";
    let base = BASE_HEADERS;

    let anonymous = headers(&roa_request(b"", None), None, date, nonce);
    assert_eq!(names(&anonymous), base);
    assert_eq!(value(&anonymous, "host"), "cr.cn-hangzhou.aliyuncs.com");
    assert_eq!(value(&anonymous, "x-acs-action"), "GetAuthorizationToken");
    assert_eq!(value(&anonymous, "x-acs-version"), "2016-06-07");
    assert_eq!(value(&anonymous, "x-acs-date"), "2027-01-15T08:00:00Z");
    assert_eq!(value(&anonymous, "x-acs-signature-nonce"), nonce);

    let long_lived = key("LTAI5tExampleKeyId", "example-secret-value-1", None);
    let signed = headers(&roa_request(b"", None), Some(&long_lived), date, nonce);
    let mut want = base.to_vec();
    want.push("authorization");
    assert_eq!(names(&signed), want);
    assert_eq!(&signed[..6], &anonymous[..]);
    let authorization = value(&signed, "authorization");
    assert!(
        authorization.starts_with(
            "ACS3-HMAC-SHA256 Credential=LTAI5tExampleKeyId,SignedHeaders=host;x-acs-action;\
             x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature="
        ),
        "{authorization}"
    );
    let signature = authorization.rsplit_once("Signature=").unwrap().1;
    assert_eq!(signature.len(), 64);
    assert!(
        signature
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert!(!authorization.contains("example-secret-value-1"));

    let sts = key(
        "STS.NTexampleId",
        "sts-secret-value-1",
        Some("sts-token-value-1"),
    );
    let form = b"OIDCToken=abc";
    let with_body = headers(
        &roa_request(form, Some("application/x-www-form-urlencoded")),
        Some(&sts),
        date,
        nonce,
    );
    assert_eq!(
        names(&with_body),
        [
            "content-type",
            "host",
            "x-acs-action",
            "x-acs-content-sha256",
            "x-acs-date",
            "x-acs-security-token",
            "x-acs-signature-nonce",
            "x-acs-version",
            "authorization",
        ]
    );
    assert_eq!(
        value(&with_body, "x-acs-security-token"),
        "sts-token-value-1"
    );
    assert_eq!(
        value(&with_body, "content-type"),
        "application/x-www-form-urlencoded"
    );
    assert_eq!(value(&with_body, "x-acs-content-sha256"), sha256_hex(form));
    assert!(value(&with_body, "authorization").contains(
        "SignedHeaders=content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;\
         x-acs-security-token;x-acs-signature-nonce;x-acs-version,"
    ));
}

#[test]
fn the_signature_covers_nonce_date_query_and_body() {
    let key = key("id", "secret-value-for-coverage", None);
    let date = at(1_800_000_000);
    let base = roa_request(b"", None);
    let signature = |request: &Request<'_>, date, nonce| {
        value(&headers(request, Some(&key), date, nonce), "authorization").to_owned()
    };
    let reference = signature(&base, date, "n1");
    assert_eq!(reference, signature(&base, date, "n1"), "deterministic");
    assert_ne!(reference, signature(&base, date, "n2"));
    assert_ne!(reference, signature(&base, at(1_800_000_001), "n1"));
    let mut other = base.clone();
    other.query = &[("PageNo", "1")];
    assert_ne!(reference, signature(&other, date, "n1"));
    let mut other = base.clone();
    other.body = b"x";
    assert_ne!(reference, signature(&other, date, "n1"));
    let mut other = base.clone();
    other.path = "/token";
    assert_ne!(reference, signature(&other, date, "n1"));
}

#[test]
fn dates_are_utc_seconds_on_the_shared_calendar() {
    for (secs, text) in [
        (0, "1970-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (951_868_799, "2000-02-29T23:59:59Z"),
        (1_709_164_800, "2024-02-29T00:00:00Z"),
        (1_735_689_599, "2024-12-31T23:59:59Z"),
        (1_735_689_600, "2025-01-01T00:00:00Z"),
        (4_102_444_800, "2100-01-01T00:00:00Z"),
    ] {
        assert_eq!(format_date(at(secs)), text, "{secs}");
        assert_eq!(kcp_plugin::time::parse_rfc3339(text), Some(at(secs)));
    }
    // Every day of four years (a leap year among them) round-trips through the parser.
    for day in 20_000..21_500u64 {
        let t = at(day * 86_400 + 45_296);
        assert_eq!(kcp_plugin::time::parse_rfc3339(&format_date(t)), Some(t));
    }
    assert_eq!(
        format_date(SystemTime::UNIX_EPOCH - Duration::from_secs(5)),
        "1970-01-01T00:00:00Z"
    );
}

#[test]
fn nonces_are_32_hex_characters_and_fresh() {
    let seen: std::collections::HashSet<String> = (0..100).map(|_| nonce()).collect();
    assert_eq!(seen.len(), 100);
    for n in &seen {
        assert_eq!(n.len(), 32);
        assert!(n.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
