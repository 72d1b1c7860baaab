//! What the oidc provider's integration tests share: the plugin with a registries file, pods'
//! service-account tokens, a scripted token endpoint and the exact answer the plugin must print.

// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use base64::Engine;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Plugin, TempDir, unix_now};

/// The audience every test token is minted for.
pub const AUDIENCE: &str = "registry.acme.test";

/// The plugin with `get-credentials` and the registries file `yaml` (kept in the returned
/// directory, which must outlive the runs).
pub fn plugin(yaml: &str) -> (Plugin, TempDir) {
    let dir = TempDir::new("oidc-registries");
    let file = dir.path().join("registries.yaml");
    std::fs::write(&file, yaml).unwrap();
    let plugin = base().args([format!("--config={}", file.display())]);
    (plugin, dir)
}

/// The binary with `get-credentials` and nothing else.
pub fn base() -> Plugin {
    Plugin::new(env!("CARGO_BIN_EXE_oidc-credential-provider")).args(["get-credentials"])
}

/// A pod's projected service-account token as the kubelet sends it, valid for an hour.
pub fn sa_token() -> String {
    kcp_testkit::cache::service_account_token(AUDIENCE, "team-a", "puller", "uid-1", "pod-1")
}

/// Another pod's token for the same service account.
pub fn other_pod_token() -> String {
    kcp_testkit::cache::service_account_token(AUDIENCE, "team-a", "puller", "uid-1", "pod-2")
}

/// An unsigned JWT with these claims (tokens the kubelet would not send: expired, no `exp`).
pub fn jwt(claims: &serde_json::Value) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(r#"{"alg":"RS256","kid":"test"}"#),
        b64(&claims.to_string())
    )
}

/// The `exp` of a token made by [`jwt`] or [`sa_token`], in Unix seconds.
pub fn exp_of(token: &str) -> u64 {
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    claims["exp"].as_u64().unwrap()
}

/// Seconds left until `exp`, now.
pub fn left(exp: u64) -> i64 {
    i64::try_from(exp).unwrap() - i64::try_from(unix_now()).unwrap()
}

/// A fake that answers each path from a script: one response per call, the last one repeated;
/// other paths get 404.
pub fn scripted(routes: Vec<(&str, Vec<FakeResponse>)>) -> FakeServer {
    let script: HashMap<String, VecDeque<FakeResponse>> = routes
        .into_iter()
        .map(|(path, responses)| (path.to_owned(), responses.into()))
        .collect();
    let script = Arc::new(Mutex::new(script));
    FakeServer::start(move |req: &RecordedRequest| {
        let mut script = script.lock().unwrap();
        match script.get_mut(req.path()) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap(),
            Some(queue) => queue
                .front()
                .cloned()
                .unwrap_or_else(|| FakeResponse::new(404, "")),
            None => FakeResponse::new(404, "Not Found"),
        }
    })
}

/// A port on 127.0.0.1 with nothing listening.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The exact line the plugin must print for one credential under `key`.
pub fn expected(
    version: ApiVersion,
    cache_duration: &str,
    key: &str,
    username: &str,
    password: &str,
) -> String {
    format!(
        r#"{{"kind":"CredentialProviderResponse","apiVersion":"{version}","cacheKeyType":"Registry","cacheDuration":"{cache_duration}","auth":{{"{key}":{{"username":"{username}","password":"{password}"}}}}}}"#
    ) + "\n"
}

/// `cacheDuration` as the plugin writes whole seconds (`1h2m3s`, `59m0s`, `0s`).
pub fn go_duration(secs: i64) -> String {
    kcp_kubelet::duration::GoDuration::from_secs(secs.max(0)).to_string()
}

/// Asserts `stdout` is [`expected`] with a `cacheDuration` within a few seconds of `want`.
/// Tests compute `want` with [`left`] after the run, so the plugin, which read its clock
/// earlier, may answer a second or more above it; rounding may put it a second below.
pub fn assert_answer(
    stdout: &str,
    version: ApiVersion,
    want: i64,
    key: &str,
    username: &str,
    password: &str,
) {
    let options: Vec<String> = (-2..=3)
        .map(|d| expected(version, &go_duration(want + d), key, username, password))
        .collect();
    assert!(
        options.iter().any(|o| o == stdout),
        "stdout {stdout:?} is none of {options:#?}"
    );
}

/// Form fields of a request body, in order.
pub fn form(req: &RecordedRequest) -> Vec<(String, String)> {
    url::form_urlencoded::parse(&req.body)
        .into_owned()
        .collect()
}

/// The path of a Keycloak-style token endpoint.
pub const TOKEN_PATH: &str = "/realms/acme/protocol/openid-connect/token";

/// A registries file with one token-exchange entry for `registry.acme.test` against `fake`,
/// plus the entry's extra fields (`"  audience: x\n"` lines, indented by four).
pub fn exchange_config(fake: &FakeServer, extra: &str) -> String {
    format!(
        "registries:\n  - host: registry.acme.test\n    protocol: token-exchange\n    endpoint: {}{TOKEN_PATH}\n    username: oauth2\n{extra}",
        fake.url()
    )
}

/// A token endpoint that answers every exchange with `answer`.
pub fn token_endpoint(answer: FakeResponse) -> FakeServer {
    scripted(vec![(TOKEN_PATH, vec![answer])])
}

/// One v1 exchange for `image` with `token` against a token endpoint answering `answer`, the
/// entry having the `extra` fields of [`exchange_config`]; the endpoint is returned for its
/// requests.
pub fn exchange_once(
    answer: FakeResponse,
    extra: &str,
    image: &str,
    token: &str,
) -> (kcp_testkit::Outcome, FakeServer) {
    let fake = token_endpoint(answer);
    let (p, _dir) = plugin(&exchange_config(&fake, extra));
    let out = p.request_with_token(ApiVersion::V1, image, Some(token), &Default::default());
    (out, fake)
}
