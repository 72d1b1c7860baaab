//! `passthrough`: the service-account token itself is the password, cached for the token's own
//! life; nothing is sent anywhere. Zot's OIDC workload federation is one such registry: its
//! answer is taken to a loopback fake of Zot's `/zot/auth/token`.

// Test code: a panic is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use base64::Engine;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::unix_now;
use serde_json::{Value, json};
use support::*;

const CONFIG: &str =
    "registries:\n  - host: harbor.acme.test\n    protocol: passthrough\n    username: jwt\n";

#[test]
fn answers_with_the_token_for_its_own_life() {
    let (p, _dir) = plugin(CONFIG);
    // The kubelet takes its own token back only with cacheType: Token (its echo guard).
    let p = p.cache_type_token(true);
    let token = sa_token();
    let out = p.request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(exp_of(&token)) - 300,
        "harbor.acme.test",
        "jwt",
        &token,
    );
    assert_eq!(out.stderr(), "");
    // At --v=10 too, the token never shows on stderr (the test kit scans every run).
    let out = p.clone().args(["--v=10"]).request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/team/app",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert!(
        out.stderr().contains("credential ready"),
        "{}",
        out.stderr()
    );
}

#[test]
fn a_token_about_to_expire_is_answered_but_not_cached() {
    let (p, _dir) = plugin(CONFIG);
    let token = jwt(&json!({"aud": [AUDIENCE], "exp": unix_now() + 120}));
    let out = p.cache_type_token(true).request_with_token(
        ApiVersion::V1,
        "harbor.acme.test/app",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert_eq!(
        out.stdout(),
        expected(ApiVersion::V1, "0s", "harbor.acme.test", "jwt", &token)
    );
}

#[test]
fn older_api_versions_carry_no_token_and_are_told_what_to_set() {
    let (p, _dir) = plugin(CONFIG);
    let line = p
        .request_with_token(
            ApiVersion::V1beta1,
            "harbor.acme.test/app",
            Some(&sa_token()),
            &Default::default(),
        )
        .rejected();
    assert!(
        line.contains("is credentialprovider.kubelet.k8s.io/v1beta1, which carries no service-account token (registries[0] (host \"harbor.acme.test\", protocol passthrough))"),
        "{line}"
    );
}

/// The audience a Zot `http.auth.bearer.oidc` provider lists in `audiences`.
const ZOT_AUDIENCE: &str = "zot";

/// A fake of Zot's token endpoint with OIDC workload federation (`http.auth.bearer.oidc`, per
/// Zot's README-OIDC-WORKLOAD-IDENTITY): `GET /zot/auth/token` with HTTP Basic, any non-empty
/// user name (not read further) and a JWT as the password, whose audience must be one Zot
/// lists and whose `exp` must be ahead; Zot answers the same token as `token` and
/// `access_token`, with `expires_in` from its `exp`. Anything else is a 401 challenge.
fn zot() -> FakeServer {
    FakeServer::start(|req: &RecordedRequest| {
        let challenge = || {
            FakeResponse::new(401, r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#).header(
                "www-authenticate",
                "Bearer realm=\"http://127.0.0.1/zot/auth/token\",service=\"zot.acme.test\"",
            )
        };
        if (req.method.as_str(), req.path()) != ("GET", "/zot/auth/token") {
            return FakeResponse::new(404, "");
        }
        let Some(basic) = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Basic "))
        else {
            return challenge();
        };
        let Some(pair) = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            return challenge();
        };
        let Some((user, jwt)) = pair.split_once(':') else {
            return challenge();
        };
        let Some(claims) = jwt
            .split('.')
            .nth(1)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()
            })
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            return challenge();
        };
        let audience_ok = claims["aud"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == ZOT_AUDIENCE));
        let now = unix_now();
        let exp = claims["exp"].as_u64().unwrap_or(0);
        if user.is_empty() || !audience_ok || exp <= now {
            return challenge();
        }
        FakeResponse::json(
            json!({"token": jwt, "access_token": jwt, "expires_in": exp - now, "issued_at": kcp_testkit::rfc3339(now)})
                .to_string(),
        )
    })
}

/// What a registry client does with the kubelet's credential at Zot's token endpoint: a `GET`
/// with HTTP Basic; the status and the body.
fn zot_login(addr: SocketAddr, user: &str, password: &str) -> (u16, Value) {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /zot/auth/token?service=zot.acme.test&scope=repository:team/app:pull HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Basic {basic}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[test]
fn zot_takes_the_answer_at_its_token_endpoint() {
    let (p, _dir) = plugin(
        "registries:\n  - host: zot.acme.test\n    protocol: passthrough\n    username: zot\n",
    );
    let token = kcp_testkit::cache::service_account_token(
        ZOT_AUDIENCE,
        "team-a",
        "puller",
        "uid-1",
        "pod-1",
    );
    let out = p.cache_type_token(true).request_with_token(
        ApiVersion::V1,
        "zot.acme.test/team/app:1.0",
        Some(&token),
        &Default::default(),
    );
    out.accepted();
    assert_answer(
        &out.stdout(),
        ApiVersion::V1,
        left(exp_of(&token)) - 300,
        "zot.acme.test",
        "zot",
        &token,
    );
    assert_eq!(out.stderr(), "");

    // The kubelet's credential, as containerd sends it to the realm Zot advertises.
    let answer: Value = serde_json::from_str(&out.stdout()).unwrap();
    let auth = &answer["auth"]["zot.acme.test"];
    let (user, password) = (
        auth["username"].as_str().unwrap(),
        auth["password"].as_str().unwrap(),
    );
    let fake = zot();
    let (status, body) = zot_login(fake.addr(), user, password);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token"], token.as_str());
    assert_eq!(body["access_token"], token.as_str());
    // The fake is Zot's judge, not a rubber stamp: the user name is not read, but must be there;
    // a token for another audience is refused.
    assert_eq!(zot_login(fake.addr(), "anything", password).0, 200);
    assert_eq!(zot_login(fake.addr(), "", password).0, 401);
    assert_eq!(zot_login(fake.addr(), user, &sa_token()).0, 401);
}
