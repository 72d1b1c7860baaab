//! Fakes and helpers shared by the test modules: a scripted metadata server, a scripted generic
//! endpoint, the exact response JSON the plugin must print, and the kubelet's `URLsMatch` rule.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use kcp_kubelet::ApiVersion;
use kcp_testkit::Plugin;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use serde_json::Value;

/// Path of the node token on the metadata server.
pub const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";
/// The node token every metadata fake hands out by default.
pub const NODE_TOKEN: &str = "ya29.node-sa-token-0123456789";
/// The Google registry globs every token answer carries.
pub const GOOGLE_KEYS: [&str; 4] = [
    "*.gcr.io",
    "*.pkg.dev",
    "container.cloud.google.com",
    "gcr.io",
];

/// The plugin with `get-credentials` and a short deadline, so no test can hang for long.
pub fn plugin() -> Plugin {
    Plugin::new(env!("CARGO_BIN_EXE_gcr-credential-provider"))
        .args(["get-credentials", "--deadline=10s"])
}

/// The plugin pointed at a metadata fake through `GCE_METADATA_HOST`.
pub fn plugin_with_metadata(metadata: &FakeServer) -> Plugin {
    plugin().env("GCE_METADATA_HOST", metadata.addr().to_string())
}

/// A fake that answers each path from a script: one response per call, the last one repeated;
/// unknown paths get 404.
pub fn scripted(routes: Vec<(&str, Vec<FakeResponse>)>) -> FakeServer {
    let routes = routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect();
    scripted_owned(routes, false)
}

fn scripted_owned(routes: Vec<(String, Vec<FakeResponse>)>, metadata: bool) -> FakeServer {
    let script: HashMap<String, VecDeque<FakeResponse>> = routes
        .into_iter()
        .map(|(path, responses)| (path, responses.into()))
        .collect();
    let script = Mutex::new(script);
    FakeServer::start(move |req: &RecordedRequest| {
        // The real metadata server refuses requests without the header, and always sends it back.
        if metadata && req.header("metadata-flavor") != Some("Google") {
            return FakeResponse::new(403, "Missing Metadata-Flavor:Google header.");
        }
        let mut script = script.lock().unwrap();
        let response = match script.get_mut(req.path()) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap(),
            Some(queue) => queue
                .front()
                .cloned()
                .unwrap_or_else(|| FakeResponse::new(404, "")),
            None => FakeResponse::new(404, "Not Found"),
        };
        if metadata {
            response.header("Metadata-Flavor", "Google")
        } else {
            response
        }
    })
}

/// A metadata fake with the given routes (paths relative to `/computeMetadata/v1/`).
pub fn metadata_fake(routes: Vec<(&str, Vec<FakeResponse>)>) -> FakeServer {
    let routes = routes
        .into_iter()
        .map(|(p, r)| (format!("/computeMetadata/v1/{p}"), r))
        .collect();
    scripted_owned(routes, true)
}

/// A metadata fake that serves `NODE_TOKEN` with the given `expires_in` JSON fragment.
pub fn node_metadata(expires_in: &str) -> FakeServer {
    metadata_fake(vec![(
        "instance/service-accounts/default/token",
        vec![FakeResponse::json(format!(
            r#"{{"access_token":"{NODE_TOKEN}"{expires_in},"token_type":"Bearer"}}"#
        ))],
    )])
}

/// A port on 127.0.0.1 with nothing listening.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The exact line the plugin must print: kind, apiVersion, cacheKeyType, cacheDuration, auth
/// with keys sorted bytewise.
pub fn expected(
    version: ApiVersion,
    cache_key_type: &str,
    cache_duration: Option<&str>,
    auth: &[(&str, &str, &str)],
) -> String {
    let entries: BTreeMap<&str, (&str, &str)> =
        auth.iter().map(|(k, u, p)| (*k, (*u, *p))).collect();
    let auth = entries
        .iter()
        .map(|(k, (u, p))| format!(r#""{k}":{{"username":"{u}","password":"{p}"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let duration = cache_duration.map_or(String::new(), |d| format!(r#","cacheDuration":"{d}""#));
    format!(
        r#"{{"kind":"CredentialProviderResponse","apiVersion":"{version}","cacheKeyType":"{cache_key_type}"{duration},"auth":{{{auth}}}}}"#
    ) + "\n"
}

/// The auth entries of a Google token answer: the four globs, plus `registry` when no glob covers
/// it (by the kubelet's rule as [`kubelet_matches`] writes it out), so one key matches an image.
pub fn google_auth<'a>(
    registry: &'a str,
    user: &'a str,
    token: &'a str,
) -> Vec<(&'a str, &'a str, &'a str)> {
    let covered = GOOGLE_KEYS
        .iter()
        .any(|glob| kubelet_matches(glob, registry));
    GOOGLE_KEYS
        .iter()
        .chain((!covered).then_some(&registry))
        .map(|k| (*k, user, token))
        .collect()
}

/// Form fields of a request body.
pub fn form(req: &RecordedRequest) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(&req.body)
        .into_owned()
        .collect()
}

/// The decoded header and claims of a JWT, after checking its RS256 signature against the
/// committed test public key. Panics (failing the test) on a bad signature.
pub fn verify_jwt(jwt: &str) -> (Value, Value) {
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT has three parts");
    let pem = include_str!("../data/test-sa-key.pub.pem");
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let public_key = STANDARD.decode(b64).unwrap();
    let signature = URL_SAFE_NO_PAD
        .decode(parts[2])
        .expect("signature is base64url");
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key,
    )
    .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
    .expect("the RS256 signature verifies with the test public key");
    let decode =
        |p: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap() };
    (decode(parts[0]), decode(parts[1]))
}

/// Seconds since the epoch.
pub use kcp_testkit::unix_now as now_secs;

/// The kubelet's `URLsMatch(glob, image)` (docs/kubelet-contract.md, “Matching”): the same number of host
/// labels, each matched as a glob (`*` within one label), equal ports, and the key's path a
/// prefix of the image's. Written here from the kubelet's rules so that the test does not lean on
/// the code under test.
pub fn kubelet_matches(key: &str, image: &str) -> bool {
    fn split(s: &str) -> (&str, Option<&str>, &str) {
        let s = s
            .strip_prefix("https://")
            .or_else(|| s.strip_prefix("http://"))
            .unwrap_or(s);
        let (hostport, path) = s.split_once('/').map_or((s, ""), |(h, p)| (h, p));
        match hostport.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h, Some(p), path),
            _ => (hostport, None, path),
        }
    }
    fn glob(pattern: &str, text: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == text,
            Some((prefix, rest)) => {
                text.starts_with(prefix)
                    && (prefix.len()..=text.len()).any(|i| glob(rest, &text[i..]))
            }
        }
    }
    let (kh, kp, kpath) = split(key);
    let (ih, ip, ipath) = split(image);
    let (kl, il): (Vec<&str>, Vec<&str>) = (kh.split('.').collect(), ih.split('.').collect());
    kl.len() == il.len()
        && kl.iter().zip(&il).all(|(k, i)| glob(k, i))
        && kp == ip
        && ipath.starts_with(kpath)
}
