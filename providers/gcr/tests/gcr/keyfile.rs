//! Service-account key files: the JWT-bearer grant against the key's `token_uri`, with the
//! assertion's RS256 signature verified by the fake.

use std::path::PathBuf;
use std::sync::Arc;

use kcp_kubelet::ApiVersion;
use kcp_testkit::TempDir;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};

use crate::support::*;

const KEY_TOKEN: &str = "ya29.key-file-token-abcdef";
const EMAIL: &str = "puller@my-project.iam.gserviceaccount.com";
const KEY_ID: &str = "0123456789abcdef0123456789abcdef01234567";
const IMAGE: &str = "europe-west1-docker.pkg.dev/my-project/repo/app";

/// Writes a key file whose `token_uri` is `token_uri`.
fn key_file(dir: &TempDir, token_uri: &str) -> PathBuf {
    let key = serde_json::json!({
        "type": "service_account",
        "project_id": "my-project",
        "private_key_id": KEY_ID,
        "private_key": include_str!("../data/test-sa-key.pem"),
        "client_email": EMAIL,
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    });
    // The private key, whole and line by line, for the stderr scan.
    kcp_testkit::secrets::register_json(key.to_string().as_bytes());
    let path = dir.path().join("key.json");
    std::fs::write(&path, key.to_string()).unwrap();
    path
}

/// Checks a token request as Google's token endpoint would, returning why it is wrong.
fn check_grant(req: &RecordedRequest, audience: &str) -> Result<(), String> {
    if req.method != "POST" {
        return Err(format!("method {}", req.method));
    }
    if req.header("content-type") != Some("application/x-www-form-urlencoded") {
        return Err(format!("content-type {:?}", req.header("content-type")));
    }
    if req.header("authorization").is_some() {
        return Err("unexpected Authorization header".into());
    }
    let form = form(req);
    if form.get("grant_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    {
        return Err(format!("grant_type {:?}", form.get("grant_type")));
    }
    if form.len() != 2 {
        return Err(format!("fields {:?}", form.keys()));
    }
    let (header, claims) = verify_jwt(&form["assertion"]);
    if header != serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": KEY_ID}) {
        return Err(format!("header {header}"));
    }
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap_or(0),
        claims["exp"].as_u64().unwrap_or(0),
    );
    let now = now_secs();
    let expected = serde_json::json!({
        "iss": EMAIL,
        "scope": "https://www.googleapis.com/auth/cloud-platform",
        "aud": audience,
        "iat": iat,
        "exp": exp,
    });
    if claims != expected || exp != iat + 3600 || iat > now || now - iat > 60 {
        return Err(format!("claims {claims}"));
    }
    Ok(())
}

/// A token endpoint that answers only correctly signed grants.
fn token_endpoint(audience: Arc<std::sync::OnceLock<String>>) -> FakeServer {
    FakeServer::start(move |req| {
        if req.path() != "/token" {
            return FakeResponse::new(404, "");
        }
        match check_grant(req, audience.get().map_or("", String::as_str)) {
            Ok(()) => FakeResponse::json(format!(
                r#"{{"access_token":"{KEY_TOKEN}","expires_in":3599,"token_type":"Bearer"}}"#
            )),
            Err(why) => FakeResponse::new(
                400,
                format!(r#"{{"error":"invalid_grant","error_description":"test fake: {why}"}}"#),
            ),
        }
    })
}

#[test]
fn a_key_file_is_exchanged_with_a_verified_rs256_assertion() {
    let dir = TempDir::new("gcr-key");
    let audience = Arc::new(std::sync::OnceLock::new());
    let endpoint = token_endpoint(audience.clone());
    let token_uri = format!("{}/token", endpoint.url());
    audience.set(token_uri.clone()).unwrap();
    let key = key_file(&dir, &token_uri);
    // The metadata server must not be asked when a key file is configured.
    let md = node_metadata(r#","expires_in":3599"#);
    let p =
        plugin_with_metadata(&md).env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string());
    for v in ApiVersion::ALL {
        let out = p.request(v, IMAGE);
        assert_eq!(
            out.stdout(),
            expected(
                v,
                "Registry",
                Some("57m59s"),
                &google_auth("europe-west1-docker.pkg.dev", "_token", KEY_TOKEN)
            ),
            "{}",
            out.stderr()
        );
        out.accepted();
    }
    assert_eq!(endpoint.requests().len(), 3);
    assert!(
        md.requests().is_empty(),
        "metadata was called: {:?}",
        md.requests()
    );
}

#[test]
fn the_json_key_flag_and_its_alias_work_too() {
    let dir = TempDir::new("gcr-key-flag");
    let audience = Arc::new(std::sync::OnceLock::new());
    let endpoint = token_endpoint(audience.clone());
    let token_uri = format!("{}/token", endpoint.url());
    audience.set(token_uri.clone()).unwrap();
    let key = key_file(&dir, &token_uri);
    for flag in ["--json-key", "--google-json-key"] {
        let out = plugin()
            .env("GCE_METADATA_HOST", format!("127.0.0.1:{}", closed_port()))
            .args([format!("{flag}={}", key.display())])
            .request(ApiVersion::V1, IMAGE);
        let ok = out.accepted();
        assert_eq!(ok.auth["*.pkg.dev"].1, KEY_TOKEN);
    }
}

#[test]
fn a_tampered_signature_is_refused_by_the_fake() {
    // Proves the fake really verifies: the same grant with one signature byte flipped fails.
    let dir = TempDir::new("gcr-key-tamper");
    let audience = Arc::new(std::sync::OnceLock::new());
    let recorder =
        FakeServer::start(|_| FakeResponse::json(r#"{"access_token":"x","expires_in":3599}"#));
    let token_uri = format!("{}/token", recorder.url());
    audience.set(token_uri.clone()).unwrap();
    let key = key_file(&dir, &token_uri);
    plugin()
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .request(ApiVersion::V1, IMAGE)
        .accepted();
    let mut req = recorder.requests().remove(0);
    assert_eq!(check_grant(&req, &token_uri), Ok(()));
    let mut form = form(&req);
    let jwt = form.get_mut("assertion").unwrap();
    let last = jwt.pop().unwrap();
    jwt.push(if last == 'A' { 'B' } else { 'A' });
    req.body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter())
        .finish()
        .into_bytes();
    let verdict = std::panic::catch_unwind(|| check_grant(&req, &token_uri));
    assert!(verdict.is_err(), "a bad signature must not verify");
}

#[test]
fn token_endpoint_errors_are_one_clear_line() {
    let dir = TempDir::new("gcr-key-err");
    let endpoint = scripted(vec![(
        "/token",
        vec![FakeResponse::new(
            400,
            r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
        )],
    )]);
    let key = key_file(&dir, &format!("{}/token", endpoint.url()));
    let line = plugin()
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains(EMAIL)
            && line.contains("invalid_grant")
            && line.contains("Invalid JWT Signature"),
        "{line}"
    );
    assert!(line.contains(&key.display().to_string()), "{line}");
    assert_eq!(endpoint.requests().len(), 1, "a 400 is not retried");
}

#[test]
fn token_endpoint_500_then_ok_and_missing_expires_in() {
    let dir = TempDir::new("gcr-key-retry");
    let endpoint = scripted(vec![(
        "/token",
        vec![
            FakeResponse::new(500, "oops"),
            FakeResponse::json(format!(r#"{{"access_token":"{KEY_TOKEN}"}}"#)),
        ],
    )]);
    let key = key_file(&dir, &format!("{}/token", endpoint.url()));
    let out = plugin()
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("0s"),
            &google_auth("europe-west1-docker.pkg.dev", "_token", KEY_TOKEN)
        )
    );
    out.accepted();
    assert_eq!(endpoint.requests().len(), 2);
}

#[test]
fn bad_key_files_are_refused_clearly() {
    let dir = TempDir::new("gcr-key-bad");
    let missing = plugin()
        .env("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        missing.contains("reading the key file /nonexistent/key.json")
            && missing.contains("GOOGLE_APPLICATION_CREDENTIALS"),
        "{missing}"
    );

    let plain_http = key_file(&dir, "http://oauth2.example.com/token");
    let line = plugin()
        .env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            plain_http.display().to_string(),
        )
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("token_uri") && line.contains("plain http"),
        "{line}"
    );

    let external = dir.path().join("external.json");
    std::fs::write(
        &external,
        r#"{"type":"external_account","audience":"//iam.googleapis.com/x"}"#,
    )
    .unwrap();
    let line = plugin()
        .env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            external.display().to_string(),
        )
        .request(ApiVersion::V1, IMAGE)
        .rejected();
    assert!(
        line.contains("external_account") && line.contains("--wif-audience"),
        "{line}"
    );
}

/// A loopback `token_uri` (a node-local relay) goes direct whatever the proxy variables say: the
/// signed assertion and the token never reach a proxy. It used to follow `HTTP_PROXY`.
#[test]
fn a_loopback_token_uri_goes_direct_whatever_the_proxy() {
    let dir = TempDir::new("gcr-key-proxy");
    let audience = Arc::new(std::sync::OnceLock::new());
    let endpoint = token_endpoint(audience.clone());
    let token_uri = format!("http://localhost:{}/token", endpoint.addr().port());
    audience.set(token_uri.clone()).unwrap();
    let key = key_file(&dir, &token_uri);
    let proxy = FakeServer::start(|_| FakeResponse::new(502, "the proxy"));
    let md = node_metadata(r#","expires_in":3599"#);
    let out = plugin_with_metadata(&md)
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .env("HTTP_PROXY", proxy.url())
        .env("HTTPS_PROXY", proxy.url())
        .env("ALL_PROXY", proxy.url())
        .request(ApiVersion::V1, IMAGE);
    assert_eq!(
        out.accepted().auth["*.pkg.dev"].1,
        KEY_TOKEN,
        "{}",
        out.stderr()
    );
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
    assert_eq!(endpoint.requests().len(), 1);
    assert!(md.requests().is_empty());
}

#[test]
fn no_secret_reaches_stderr_even_at_v6() {
    let dir = TempDir::new("gcr-key-v6");
    let audience = Arc::new(std::sync::OnceLock::new());
    let endpoint = token_endpoint(audience.clone());
    let token_uri = format!("{}/token", endpoint.url());
    audience.set(token_uri.clone()).unwrap();
    let key = key_file(&dir, &token_uri);
    let out = plugin()
        .args(["--v=6"])
        .env("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())
        .request(ApiVersion::V1, IMAGE);
    out.accepted();
    let stderr = out.stderr();
    assert!(stderr.contains(EMAIL), "the flow is logged: {stderr}");
    let assertion = form(&endpoint.requests()[0])["assertion"].clone();
    let pem_line = include_str!("../data/test-sa-key.pem")
        .lines()
        .nth(1)
        .unwrap();
    for secret in [KEY_TOKEN, assertion.as_str(), pem_line, "ya29"] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }
}
