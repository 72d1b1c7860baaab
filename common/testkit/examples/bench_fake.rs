//! A fast local fake of the cloud endpoints the providers call, for `scripts/bench`: static answers
//! from a compiled server, so that the benchmark's wall times are the plugin's, not an
//! interpreter's. Serves, on 127.0.0.1, over plain HTTP and over HTTPS (a test CA written to a
//! file, certificate for `127.0.0.1` and `localhost`):
//!
//! - ECR `GetAuthorizationToken` (private, with a real future `expiresAt`) and ECR Public;
//! - STS `AssumeRoleWithWebIdentity` (IRSA) and IMDSv2 (token with TTL header, region, role
//!   credentials), for `AWS_ENDPOINT_URL` / `AWS_EC2_METADATA_SERVICE_ENDPOINT`;
//! - the GCE metadata server's default service-account token (`GCE_METADATA_HOST`), with the
//!   `Metadata-Flavor: Google` check, and a key file's `token_uri` (`/token`);
//! - Alibaba Cloud: the ECS metadata server in hardened mode (token, RAM role, its credentials,
//!   region) and Container Registry's `ListInstance` and `GetAuthorizationToken` (Enterprise,
//!   2018-12-01, and Personal Edition, `GET /tokens`), told apart from AWS's by their headers
//!   (`x-aliyun-ecs-metadata-token*`, `x-acs-action`); signatures are not checked here
//!   (`scripts/fakes/alibaba_fake.py` does).
//!
//! Prints `http=URL`, `https=URL` and `ca=FILE` lines, then serves until its stdin closes (so it
//! ends with the benchmark that started it). Not part of any release binary.
//!
//! ```text
//! cargo run --release -p kcp-testkit --example bench_fake
//! ```
// A development tool, not a plugin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::tls::{TestCa, TlsFakeServer};

/// The password inside every ECR token this fake hands out (`AWS:<password>`).
const ECR_PASSWORD: &str = "bench-ecr-password";
const IMDS_TOKEN: &str = "bench-imds-session-token";
/// The ECS metadata server's session token, and the Container Registry password it leads to.
const ECS_TOKEN: &str = "bench-ecs-metadata-token";
const ALIBABA_PASSWORD: &str = "bench-alibaba-password";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// RFC 3339 in UTC, as AWS writes expirations.
fn iso(secs: u64) -> String {
    kcp_testkit::rfc3339(secs)
}

/// Alibaba Cloud's answers, when the request is for one of its endpoints.
fn alibaba(req: &RecordedRequest) -> Option<FakeResponse> {
    let expire_ms = (now() + 3600) * 1000;
    if let Some(action) = req.header("x-acs-action") {
        let version = req.header("x-acs-version").unwrap_or("");
        return Some(match (action, version) {
            ("GetAuthorizationToken", "2018-12-01") => FakeResponse::json(format!(
                r#"{{"IsSuccess":true,"Code":"success","RequestId":"bench","AuthorizationToken":"{ALIBABA_PASSWORD}","TempUsername":"cr_temp_user","ExpireTime":{expire_ms}}}"#
            )),
            ("GetAuthorizationToken", _) => FakeResponse::json(format!(
                r#"{{"data":{{"authorizationToken":"{ALIBABA_PASSWORD}","tempUserName":"cr_temp_user","expireDate":{expire_ms}}}}}"#
            )),
            ("ListInstance", _) => FakeResponse::json(
                r#"{"IsSuccess":true,"Code":"success","RequestId":"bench","PageNo":1,"PageSize":30,"TotalCount":1,"Instances":[{"InstanceId":"cri-bench","InstanceName":"bench","RegionId":"cn-hangzhou","InstanceStatus":"RUNNING"}]}"#,
            ),
            _ => FakeResponse::new(
                400,
                format!(r#"{{"Code":"InvalidAction.NotFound","Message":"{action}"}}"#),
            ),
        });
    }
    if req.method == "PUT" && req.path() == "/latest/api/token" {
        return req
            .header("x-aliyun-ecs-metadata-token-ttl-seconds")
            .map(|_| FakeResponse::new(200, ECS_TOKEN));
    }
    let token = req.header("x-aliyun-ecs-metadata-token")?;
    if token != ECS_TOKEN {
        return Some(FakeResponse::new(401, "Unauthorized"));
    }
    Some(match req.path() {
        "/latest/meta-data/region-id" => FakeResponse::new(200, "cn-hangzhou"),
        "/latest/meta-data/ram/security-credentials/" => FakeResponse::new(200, "bench-node-role"),
        "/latest/meta-data/ram/security-credentials/bench-node-role" => {
            FakeResponse::json(format!(
                r#"{{"Code":"Success","AccessKeyId":"STS.benchnode","AccessKeySecret":"bench-node-secret","SecurityToken":"bench-node-security-token","Expiration":"{}","LastUpdated":"{}"}}"#,
                iso(now() + 6 * 3600),
                iso(now())
            ))
        }
        _ => FakeResponse::new(404, "Not Found"),
    })
}

fn answer(req: &RecordedRequest) -> FakeResponse {
    if let Some(response) = alibaba(req) {
        return response;
    }
    let target = req.header("x-amz-target").unwrap_or("");
    let token = base64::engine::general_purpose::STANDARD.encode(format!("AWS:{ECR_PASSWORD}"));
    let expires = now() + 12 * 3600;
    let amz_json = |body: String| {
        FakeResponse::new(200, body).header("content-type", "application/x-amz-json-1.1")
    };
    match (req.method.as_str(), req.path()) {
        ("POST", _) if target.ends_with("AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken") => {
            amz_json(format!(
                r#"{{"authorizationData":[{{"authorizationToken":"{token}","expiresAt":{expires},"proxyEndpoint":"https://123456789012.dkr.ecr.us-east-1.amazonaws.com"}}]}}"#
            ))
        }
        ("POST", _) if target.ends_with("SpencerFrontendService.GetAuthorizationToken") => amz_json(
            format!(r#"{{"authorizationData":{{"authorizationToken":"{token}","expiresAt":{expires}}}}}"#),
        ),
        ("POST", "/") if req.body_text().contains("Action=AssumeRoleWithWebIdentity") => {
            FakeResponse::new(
                200,
                format!(
                    r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIABENCHROLE</AccessKeyId><SecretAccessKey>bench-role-secret</SecretAccessKey><SessionToken>bench-role-session</SessionToken><Expiration>{}</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/bench/ecr-credential-provider</Arn><AssumedRoleId>AROABENCH:ecr-credential-provider</AssumedRoleId></AssumedRoleUser></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>bench</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>"#,
                    iso(now() + 3600)
                ),
            )
            .header("content-type", "text/xml")
        }
        ("POST", "/token") => FakeResponse::json(
            r#"{"access_token":"ya29.bench-key-file-token","expires_in":3599,"token_type":"Bearer"}"#,
        ),
        ("PUT", "/latest/api/token") => match req.header("x-aws-ec2-metadata-token-ttl-seconds") {
            Some(ttl) => FakeResponse::new(200, IMDS_TOKEN)
                .header("content-type", "text/plain")
                .header("x-aws-ec2-metadata-token-ttl-seconds", ttl),
            None => FakeResponse::new(400, "missing TTL"),
        },
        ("GET", path) if path.starts_with("/latest/") => {
            if req.header("x-aws-ec2-metadata-token") != Some(IMDS_TOKEN) {
                return FakeResponse::new(401, "IMDSv2 token required");
            }
            match path {
                "/latest/meta-data/placement/region" => FakeResponse::new(200, "us-east-1"),
                "/latest/meta-data/iam/security-credentials/" => {
                    FakeResponse::new(200, "bench-node-role")
                }
                "/latest/meta-data/iam/security-credentials/bench-node-role" => {
                    FakeResponse::json(format!(
                        r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIABENCHNODE","SecretAccessKey":"bench-node-secret","Token":"bench-node-session","Expiration":"{}","LastUpdated":"{}"}}"#,
                        iso(now() + 6 * 3600),
                        iso(now())
                    ))
                }
                _ => FakeResponse::new(404, "not found"),
            }
        }
        ("GET", "/computeMetadata/v1/instance/service-accounts/default/token") => {
            if req.header("metadata-flavor") != Some("Google") {
                return FakeResponse::new(403, "Missing Metadata-Flavor:Google header.")
                    .header("metadata-flavor", "Google");
            }
            FakeResponse::json(
                r#"{"access_token":"ya29.bench-node-token","expires_in":3599,"token_type":"Bearer"}"#,
            )
            .header("metadata-flavor", "Google")
        }
        ("GET", path) if path.starts_with("/computeMetadata/v1/") => {
            FakeResponse::new(404, "Not Found").header("metadata-flavor", "Google")
        }
        _ => FakeResponse::new(
            400,
            format!(r#"{{"__type":"UnknownOperationException","message":"{target}"}}"#),
        ),
    }
}

fn main() {
    let ca = TestCa::new();
    let http = FakeServer::start(answer);
    let https = TlsFakeServer::start(&ca, &["127.0.0.1", "localhost"], answer);
    // The CA file lives in a temporary directory that goes away with `ca`; copy it where the
    // benchmark can keep using it.
    let ca_file = std::env::temp_dir().join(format!("bench-fake-ca-{}.pem", std::process::id()));
    if let Err(e) = std::fs::copy(ca.ca_file(), &ca_file) {
        eprintln!("bench_fake: writing {}: {e}", ca_file.display());
        std::process::exit(1);
    }
    println!("http={}", http.url());
    println!("https={}", https.https_url());
    println!("ca={}", ca_file.display());
    // Serve until the parent closes our stdin (or exits).
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let _ = std::fs::remove_file(&ca_file);
}
