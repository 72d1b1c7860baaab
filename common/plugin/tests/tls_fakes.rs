//! The test kit's TLS fakes (the default ECDSA CA, and the RSA chain root → intermediate → leaf
//! that `scripts/bench` uses to present what the AWS and Azure endpoints present), verified by the
//! providers' own client configuration: the trust store that parses only the anchors a chain names.
// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use kcp_plugin::tls::TrustStore;
use kcp_testkit::TempDir;
use kcp_testkit::fake::FakeResponse;
use kcp_testkit::tls::{TestCa, TlsFakeServer};

/// DER of the rsaEncryption and id-ecPublicKey algorithm OIDs, as they appear in an SPKI.
const RSA_OID: &[u8] = &[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
];
const EC_OID: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// One HTTPS request to `server` with the providers' TLS configuration, trusting only `ca`;
/// returns the status line and the certificates the server presented, or the handshake error.
fn handshake(ca: &TestCa, server: &TlsFakeServer) -> Result<(String, Vec<Vec<u8>>), String> {
    let (store, report) = TrustStore::load_from(Some(ca.ca_file().into()), None);
    assert_eq!((report.loaded, report.skipped), (1, 0));
    let config = kcp_plugin::tls::client_config_for(Arc::new(store)).unwrap();
    let name = "127.0.0.1".try_into().unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut socket = TcpStream::connect(server.addr()).unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut socket);
    tls.write_all(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !contains(&answer, b"\r\n\r\n") {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if answer.is_empty() => return Err(e.to_string()),
            Err(_) => break,
        }
    }
    let status = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let chain = conn
        .peer_certificates()
        .unwrap_or_default()
        .iter()
        .map(|c| c.to_vec())
        .collect();
    Ok((status, chain))
}

/// Three RSA-2048 keys made by `openssl genpkey`; `None` where openssl is not installed.
fn rsa_keys(dir: &Path) -> Option<()> {
    for name in ["root.pem", "intermediate.pem", "leaf.pem"] {
        let status = Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(dir.join(name))
            .stderr(Stdio::null())
            .status()
            .ok()?;
        assert!(status.success(), "openssl genpkey failed");
    }
    Some(())
}

#[test]
fn default_ca_serves_an_ecdsa_leaf_under_the_trusted_root() {
    let ca = TestCa::new();
    let server = TlsFakeServer::start(&ca, &["127.0.0.1"], |_| FakeResponse::json("{}"));
    let (status, chain) = handshake(&ca, &server).unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(chain.len(), 2);
    assert!(contains(&chain[0], EC_OID) && !contains(&chain[0], RSA_OID));
}

/// Another CA with the trusted one's name: the anchor is picked by name, and its key refuses
/// the signature.
#[test]
fn a_server_from_a_namesake_ca_is_refused() {
    let (trusted, other) = (TestCa::new(), TestCa::new());
    let server = TlsFakeServer::start(&other, &["127.0.0.1"], |_| FakeResponse::json("{}"));
    let error = handshake(&trusted, &server).unwrap_err();
    assert!(error.contains("BadSignature"), "{error}");
    assert!(server.requests().is_empty());
}

#[test]
fn rsa_key_dir_gives_the_cloud_endpoints_chain() {
    let dir = TempDir::new("rsa-keys");
    if rsa_keys(dir.path()).is_none() {
        return kcp_testkit::skip::missing("openssl", "makes the RSA keys of the chain");
    }
    let ca = TestCa::from_rsa_key_dir(dir.path());
    let server = TlsFakeServer::start(&ca, &["127.0.0.1"], |_| FakeResponse::json("{}"));
    let (status, chain) = handshake(&ca, &server).unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    // Leaf and intermediate are sent; the root is the only trust anchor (the loader read one
    // certificate), so the intermediate's signature was checked too.
    assert_eq!(chain.len(), 2);
    assert!(
        chain
            .iter()
            .all(|c| contains(c, RSA_OID) && !contains(c, EC_OID))
    );
    assert_ne!(chain[0], chain[1]);
}
