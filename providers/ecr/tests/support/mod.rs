//! Shared pieces of the ECR integration tests: a moto server per test, canned AWS answers for
//! the scripted fake, and small helpers (base64, RFC 3339 timestamps).

#![allow(dead_code, unused_imports)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
pub use kcp_testkit::{Plugin, rfc3339, unix_now};

pub const BIN: &str = env!("CARGO_BIN_EXE_ecr-credential-provider");
pub const PRIVATE_HOST: &str = "123456789012.dkr.ecr.us-west-2.amazonaws.com";
pub const ECR_TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";
pub const PUBLIC_TARGET: &str = "SpencerFrontendService.GetAuthorizationToken";

/// The plugin with static test credentials and nothing else from the environment.
pub fn plugin() -> Plugin {
    Plugin::new(BIN)
        .env("AWS_ACCESS_KEY_ID", "AKIDTESTSTATIC")
        .env("AWS_SECRET_ACCESS_KEY", "static-secret-key-value")
        .env("AWS_EC2_METADATA_DISABLED", "true")
}

/// A port nothing listens on.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// moto_server on a free loopback port, killed on drop.
pub struct Moto {
    child: Child,
    pub url: String,
}

/// Set to make a missing `moto_server` a failure instead of a skip (as `KCP_REQUIRE_ALL=1`,
/// which `scripts/test` sets under CI, does for every prerequisite).
pub const REQUIRE_FAKES_ENV: &str = "KCP_REQUIRE_PYTHON_FAKES";

impl Moto {
    /// Starts moto_server, or, when it is not installed, records the skip
    /// ([`kcp_testkit::skip::missing`]) and returns `None` (the caller returns). With
    /// [`REQUIRE_FAKES_ENV`] or `KCP_REQUIRE_ALL=1` set, a missing moto_server fails the test.
    pub fn start(_test: &str) -> Option<Moto> {
        const HOW: &str =
            "run scripts/setup-venv and put .venv/bin on PATH (scripts/test does both)";
        let port = closed_port();
        let child = match Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::env::var_os(REQUIRE_FAKES_ENV).is_none() =>
            {
                kcp_testkit::skip::missing("moto_server", HOW);
                return None;
            }
            Err(e) => panic!("starting moto_server failed ({e}): {HOW}"),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "moto_server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Moto {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }
}

impl Moto {
    /// moto's state as JSON text (`/moto-api/data.json`: every model, the STS sessions it handed
    /// out included), with all whitespace removed so that searches do not depend on its layout.
    pub fn state(&self) -> String {
        use std::io::Read;
        let addr = self.url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(addr).expect("connecting to moto");
        // HTTP/1.0: the body comes whole, not chunked, and ends with the connection.
        write!(
            stream,
            "GET /moto-api/data.json HTTP/1.0\r\nHost: {addr}\r\n\r\n"
        )
        .expect("asking moto");
        let mut text = String::new();
        stream
            .read_to_string(&mut text)
            .expect("reading moto's answer");
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        body.chars().filter(|c| !c.is_whitespace()).collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Registers the password of a `user:password` token for the stderr scan (the base64 form is
/// registered by the fake's JSON body itself).
fn register_token(user_pass: &str) {
    if let Some((_, password)) = user_pass.split_once(':') {
        kcp_testkit::secrets::register(password);
    }
}

/// A private-ECR GetAuthorizationToken answer (awsJson1.1; timestamps are epoch seconds).
pub fn ecr_token(user_pass: &str, expires_at: Option<u64>) -> FakeResponse {
    register_token(user_pass);
    let expiry = expires_at
        .map(|t| format!(r#","expiresAt":{t}"#))
        .unwrap_or_default();
    FakeResponse::json(format!(
        r#"{{"authorizationData":[{{"authorizationToken":"{}"{expiry},"proxyEndpoint":"https://{PRIVATE_HOST}"}}]}}"#,
        b64(user_pass)
    ))
    .header("content-type", "application/x-amz-json-1.1")
}

/// An ECR Public answer: `authorizationData` is one object.
pub fn public_token(user_pass: &str, expires_at: u64) -> FakeResponse {
    register_token(user_pass);
    FakeResponse::json(format!(
        r#"{{"authorizationData":{{"authorizationToken":"{}","expiresAt":{expires_at}}}}}"#,
        b64(user_pass)
    ))
    .header("content-type", "application/x-amz-json-1.1")
}

/// An awsJson1.1 error.
pub fn aws_error(status: u16, code: &str) -> FakeResponse {
    FakeResponse::new(
        status,
        format!(r#"{{"__type":"{code}","message":"injected {code}"}}"#),
    )
    .header("content-type", "application/x-amz-json-1.1")
}

pub const STS_SECRET_KEY: &str = "assumed-secret-key-value";
pub const STS_SESSION_TOKEN: &str = "assumed-session-token-value";

/// An STS AssumeRoleWithWebIdentity answer.
pub fn sts_credentials(access_key: &str, expires_at: u64) -> FakeResponse {
    // XML: the JSON scan of the fake does not see these.
    kcp_testkit::secrets::register(STS_SECRET_KEY);
    kcp_testkit::secrets::register(STS_SESSION_TOKEN);
    FakeResponse::new(
        200,
        format!(
            r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{access_key}</AccessKeyId>
      <SecretAccessKey>{STS_SECRET_KEY}</SecretAccessKey>
      <SessionToken>{STS_SESSION_TOKEN}</SessionToken>
      <Expiration>{}</Expiration>
    </Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/pull/ecr-credential-provider</Arn><AssumedRoleId>AROATEST:ecr-credential-provider</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#,
            rfc3339(expires_at)
        ),
    )
    .header("content-type", "text/xml")
}

/// An STS fake for both role flows: AssumeRoleWithWebIdentity answers with key
/// `ASIAWEBIDENTITY`, AssumeRole (`--assume-role`) with `ASIANODEASSUMED`; both sessions end at
/// `session_expires_at`.
pub fn sts_fake(session_expires_at: u64) -> FakeServer {
    let node = sts_assume_role("ASIANODEASSUMED", session_expires_at);
    let web = sts_credentials("ASIAWEBIDENTITY", session_expires_at);
    FakeServer::start(move |r| {
        if r.body_text().contains("Action=AssumeRoleWithWebIdentity") {
            web.clone()
        } else {
            node.clone()
        }
    })
}

/// The SigV4 credential scope of a request: (access key, region, service).
pub fn sigv4_scope(request: &RecordedRequest) -> Option<(String, String, String)> {
    let auth = request.header("authorization")?;
    let credential = auth.split("Credential=").nth(1)?.split(',').next()?;
    let mut parts = credential.split('/');
    let key = parts.next()?.to_owned();
    let _date = parts.next()?;
    Some((key, parts.next()?.to_owned(), parts.next()?.to_owned()))
}

/// Form fields of a URL-encoded body.
pub fn form(request: &RecordedRequest) -> Vec<(String, String)> {
    request.form()
}

pub const NODE_ASSUMED_SECRET_KEY: &str = "node-assumed-secret-key-value";
pub const NODE_ASSUMED_SESSION_TOKEN: &str = "node-assumed-session-token-value";

/// An STS AssumeRole answer (`--assume-role`), its secrets distinct from the web-identity ones
/// so a leak names the flow.
pub fn sts_assume_role(access_key: &str, expires_at: u64) -> FakeResponse {
    // XML: the JSON scan of the fake does not see these.
    kcp_testkit::secrets::register(NODE_ASSUMED_SECRET_KEY);
    kcp_testkit::secrets::register(NODE_ASSUMED_SESSION_TOKEN);
    FakeResponse::new(
        200,
        format!(
            r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>{access_key}</AccessKeyId>
      <SecretAccessKey>{NODE_ASSUMED_SECRET_KEY}</SecretAccessKey>
      <SessionToken>{NODE_ASSUMED_SESSION_TOKEN}</SessionToken>
      <Expiration>{}</Expiration>
    </Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/pull/ecr-credential-provider</Arn><AssumedRoleId>AROANODE:ecr-credential-provider</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>req-2</RequestId></ResponseMetadata>
</AssumeRoleResponse>"#,
            rfc3339(expires_at)
        ),
    )
    .header("content-type", "text/xml")
}

pub const POD_IDENTITY_SECRET_KEY: &str = "pod-identity-secret-key-value";
pub const POD_IDENTITY_SESSION_TOKEN: &str = "pod-identity-session-token-value";

/// An EKS Auth AssumeRoleForPodIdentity answer (restJson1; `expiration` in epoch seconds), with
/// its own secrets so a leak names the flow.
pub fn eks_auth_credentials(access_key: &str, expires_at: u64) -> FakeResponse {
    kcp_testkit::secrets::register(POD_IDENTITY_SECRET_KEY);
    kcp_testkit::secrets::register(POD_IDENTITY_SESSION_TOKEN);
    FakeResponse::json(format!(
        r#"{{"subject":{{"namespace":"team","serviceAccount":"puller"}},"audience":"pods.eks.amazonaws.com","podIdentityAssociation":{{"associationArn":"arn:aws:eks:us-west-2:123456789012:podidentityassociation/prod/a-abcdefghijklmnop1","associationId":"a-abcdefghijklmnop1"}},"assumedRoleUser":{{"arn":"arn:aws:sts::123456789012:assumed-role/pod-pull/eks-prod-puller","assumeRoleId":"AROAPOD:eks-prod-puller"}},"credentials":{{"sessionToken":"{POD_IDENTITY_SESSION_TOKEN}","secretAccessKey":"{POD_IDENTITY_SECRET_KEY}","accessKeyId":"{access_key}","expiration":{expires_at}}}}}"#
    ))
}

/// An EKS Auth (restJson1) error: the code in `x-amzn-errortype` and in the body, as AWS sends it.
pub fn eks_auth_error(status: u16, code: &str) -> FakeResponse {
    FakeResponse::new(
        status,
        format!(r#"{{"__type":"{code}","message":"injected {code}"}}"#),
    )
    .header("content-type", "application/json")
    .header("x-amzn-errortype", code)
}
