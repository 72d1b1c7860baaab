//! Workload Identity Federation with the pod's service-account token (KEP-4412): STS exchange,
//! optional impersonation, opt-in by annotation, upstream's test vectors (CPG-2, CPG-3).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Plugin, rfc3339};

use crate::support::*;

const IMAGE: &str = "us-central1-docker.pkg.dev/my-project/my-repo/my-image";
const IDP: &str = "https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster";
const AUDIENCE: &str = "identitynamespace:my-project.svc.id.goog:https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster";
const FEDERATED: &str = "federated-token-xyz-0123456789";
const IMPERSONATED: &str = "ya29.impersonated-token-0123456789";
const GSA: &str = "puller@my-project.iam.gserviceaccount.com";

/// A KSA token whose (unverified) `exp` is `exp`.
fn ksa(exp: u64) -> String {
    let claims = serde_json::json!({
        "iss": "https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/my-cluster",
        "aud": ["my-project.svc.id.goog"],
        "exp": exp,
        "sub": "system:serviceaccount:team:puller",
    });
    format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.c2lnbmF0dXJlLW5vdC1jaGVja2Vk",
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

fn opted_in() -> BTreeMap<String, String> {
    [(
        "iam.gke.io/enable-wi-image-pull".to_owned(),
        "true".to_owned(),
    )]
    .into()
}

/// Checks an STS request as Google's STS would, returning why it is wrong.
fn check_sts(req: &RecordedRequest, audience: &str, subject: &str) -> Result<(), String> {
    if (req.method.as_str(), req.path()) != ("POST", "/v1/token") {
        return Err(format!("{} {}", req.method, req.target));
    }
    if req.header("authorization").is_some() {
        return Err("STS takes no Authorization header".into());
    }
    if req.header("content-type") != Some("application/x-www-form-urlencoded") {
        return Err(format!("content-type {:?}", req.header("content-type")));
    }
    let want: BTreeMap<String, String> = [
        ("audience", audience),
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("scope", "https://www.googleapis.com/auth/cloud-platform"),
        ("subject_token", subject),
        ("subject_token_type", "urn:ietf:params:oauth:token-type:jwt"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let got = form(req);
    if got != want {
        return Err(format!("fields {:?}", got.keys()));
    }
    Ok(())
}

/// A fake STS answering `FEDERATED` to correct exchanges of `subject` for `audience`.
fn sts(audience: &'static str, subject: String) -> FakeServer {
    FakeServer::start(move |req| match check_sts(req, audience, &subject) {
        Ok(()) => FakeResponse::json(format!(
            r#"{{"access_token":"{FEDERATED}","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}}"#
        )),
        Err(why) => FakeResponse::new(
            400,
            format!(r#"{{"error":"invalid_request","error_description":"fake: {why}"}}"#),
        ),
    })
}

/// A fake IAM Credentials answering `IMPERSONATED` for `GSA`, expiring at `expire_time`.
fn iam(expire_time: String) -> FakeServer {
    FakeServer::start(move |req| {
        let path = format!("/v1/projects/-/serviceAccounts/{GSA}:generateAccessToken");
        let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
        let ok = req.method == "POST"
            && req.target == path
            && req.header("authorization") == Some(&format!("Bearer {FEDERATED}"))
            && req.header("content-type") == Some("application/json")
            && body
                == serde_json::json!({"scope": ["https://www.googleapis.com/auth/cloud-platform"], "lifetime": "3600s"});
        if ok {
            FakeResponse::json(format!(
                r#"{{"accessToken":"{IMPERSONATED}","expireTime":"{expire_time}"}}"#
            ))
        } else {
            FakeResponse::new(
                403,
                r#"{"error":{"code":403,"message":"Permission 'iam.serviceAccounts.getAccessToken' denied","status":"PERMISSION_DENIED"}}"#,
            )
        }
    })
}

fn gke_plugin(md: &FakeServer, sts: &FakeServer) -> Plugin {
    plugin_with_metadata(md).args([
        format!("--identity-provider={IDP}"),
        "--project-id=my-project".to_owned(),
        format!("--sts-endpoint={}/v1/token", sts.url()),
    ])
}

#[test]
fn opted_in_service_accounts_get_the_federated_token() {
    let subject = ksa(now_secs() + 86_400);
    let sts = sts(AUDIENCE, subject.clone());
    let md = node_metadata(r#","expires_in":3599"#);
    let out = gke_plugin(&md, &sts).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&subject),
        &opted_in(),
    );
    assert_eq!(
        out.stdout(),
        expected(
            ApiVersion::V1,
            "Registry",
            Some("58m0s"),
            &google_auth("us-central1-docker.pkg.dev", "_token", FEDERATED)
        ),
        "{}",
        out.stderr()
    );
    out.accepted();
    assert_eq!(sts.requests().len(), 1);
    assert!(
        md.requests().is_empty(),
        "no node call in the WI flow (CPG-2)"
    );
}

#[test]
fn not_opted_in_means_the_node_token_and_no_sts_call() {
    let subject = ksa(now_secs() + 86_400);
    let sts = sts(AUDIENCE, subject.clone());
    let md = node_metadata(r#","expires_in":3599"#);
    let cases: [BTreeMap<String, String>; 3] = [
        BTreeMap::new(),
        [(
            "iam.gke.io/enable-wi-image-pull".to_owned(),
            "True".to_owned(),
        )]
        .into(),
        [(
            "iam.gke.io/enable-wi-image-pull".to_owned(),
            "false".to_owned(),
        )]
        .into(),
    ];
    for annotations in cases {
        let ok = gke_plugin(&md, &sts)
            .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &annotations)
            .accepted();
        assert_eq!(ok.auth["*.pkg.dev"].1, NODE_TOKEN);
    }
    // Without --identity-provider the annotation means nothing (CPG-3 "feature off").
    let ok = plugin_with_metadata(&md)
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in())
        .accepted();
    assert_eq!(ok.auth["*.pkg.dev"].1, NODE_TOKEN);
    // Older API versions carry no token or annotations (the kubelet drops them): node token.
    for v in [ApiVersion::V1beta1, ApiVersion::V1alpha1] {
        let out = gke_plugin(&md, &sts).request_with_token(v, IMAGE, Some(&subject), &opted_in());
        assert_eq!(
            out.stdout(),
            expected(
                v,
                "Registry",
                Some("57m59s"),
                &google_auth("us-central1-docker.pkg.dev", "_token", NODE_TOKEN)
            )
        );
        out.accepted();
    }
    assert!(sts.requests().is_empty());
    assert_eq!(md.requests().len(), 6);
}

#[test]
fn opted_in_without_a_token_fails_closed() {
    let sts = sts(AUDIENCE, String::new());
    let md = node_metadata(r#","expires_in":3599"#);
    let line = gke_plugin(&md, &sts)
        .request_with_token(ApiVersion::V1, IMAGE, None, &opted_in())
        .rejected();
    assert!(
        line.contains("sent no service-account token") && line.contains("tokenAttributes"),
        "{line}"
    );
    assert!(
        sts.requests().is_empty() && md.requests().is_empty(),
        "no fallback to the node"
    );
}

#[test]
fn sts_errors_fail_loudly_without_the_token() {
    let subject = ksa(now_secs() + 86_400);
    let sts = scripted(vec![(
        "/v1/token",
        vec![FakeResponse::new(
            400,
            r#"{"error":"invalid_grant","error_description":"The audience in ID Token does not match the expected audience."}"#,
        )],
    )]);
    let md = node_metadata(r#","expires_in":3599"#);
    let out = gke_plugin(&md, &sts).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&subject),
        &opted_in(),
    );
    let line = out.rejected();
    assert!(
        line.contains("invalid_grant") && line.contains(AUDIENCE) && line.contains("HTTP 400"),
        "{line}"
    );
    assert!(!line.contains(&subject));
    assert_eq!(sts.requests().len(), 1, "400 is not retried");
    assert!(md.requests().is_empty(), "no fallback to the node");

    // Even an STS that quotes the subject token back never gets it onto stderr.
    let echo = subject.clone();
    let quoting = FakeServer::start(move |_| {
        FakeResponse::new(
            400,
            format!(r#"{{"error":"invalid_grant","error_description":"bad token {echo}"}}"#),
        )
    });
    let out = gke_plugin(&md, &quoting)
        .args(["--v=6"])
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in());
    assert_eq!(out.exec.exit_code, Some(1));
    assert!(!out.stderr().contains(&subject), "{}", out.stderr());
    assert!(out.stderr().contains("<redacted>"), "{}", out.stderr());
}

#[test]
fn sts_transient_errors_are_retried() {
    let subject = ksa(now_secs() + 86_400);
    let sts = scripted(vec![(
        "/v1/token",
        vec![
            FakeResponse::new(503, "unavailable"),
            FakeResponse::new(429, "quota"),
            FakeResponse::json(format!(
                r#"{{"access_token":"{FEDERATED}","expires_in":3600}}"#
            )),
        ],
    )]);
    let md = node_metadata(r#","expires_in":3599"#);
    let ok = gke_plugin(&md, &sts)
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in())
        .accepted();
    assert_eq!(ok.auth["gcr.io"].1, FEDERATED);
    let seen = sts.requests();
    assert_eq!(seen.len(), 3);
    for r in &seen {
        assert_eq!(
            check_sts(r, AUDIENCE, &subject),
            Ok(()),
            "every attempt is the same exchange"
        );
    }
}

#[test]
fn impersonation_by_annotation_or_flag() {
    let now = now_secs();
    let subject = ksa(now + 86_400);
    let sts = sts(AUDIENCE, subject.clone());
    let iam = iam(rfc3339(now + 1800));
    let md = node_metadata(r#","expires_in":3599"#);
    let by_annotation = {
        let mut a = opted_in();
        a.insert("iam.gke.io/gcp-service-account".to_owned(), GSA.to_owned());
        gke_plugin(&md, &sts)
            .args([format!("--iam-endpoint={}", iam.url())])
            .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &a)
    };
    let by_flag = gke_plugin(&md, &sts)
        .args([
            format!("--iam-endpoint={}", iam.url()),
            format!("--impersonate-service-account={GSA}"),
        ])
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in());
    for out in [by_annotation, by_flag] {
        let ok = out.accepted();
        assert!(
            ok.auth
                .values()
                .all(|(u, p)| u == "_token" && p == IMPERSONATED),
            "{}",
            out.stderr()
        );
        // 1800 s of life minus the 120 s margin, give or take the second the run took.
        let secs = ok.cache_duration.unwrap().as_nanos() / 1_000_000_000;
        assert!((1678..=1680).contains(&secs), "{secs}");
    }
    assert_eq!(sts.requests().len(), 2);
    assert_eq!(iam.requests().len(), 2);
    assert!(md.requests().is_empty());
}

#[test]
fn impersonation_denied_names_the_fix() {
    let subject = ksa(now_secs() + 86_400);
    let sts = sts(AUDIENCE, subject.clone());
    let iam = iam(rfc3339(now_secs() + 1800));
    let md = node_metadata(r#","expires_in":3599"#);
    let line = gke_plugin(&md, &sts)
        .args([
            format!("--iam-endpoint={}", iam.url()),
            "--impersonate-service-account=other@my-project.iam.gserviceaccount.com".to_owned(),
        ])
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in())
        .rejected();
    assert!(
        line.contains("HTTP 403")
            && line.contains("roles/iam.workloadIdentityUser")
            && line.contains("other@my-project"),
        "{line}"
    );
    assert!(
        !line.contains(FEDERATED) && !line.contains(&subject),
        "{line}"
    );

    let mut bad = opted_in();
    bad.insert(
        "iam.gke.io/gcp-service-account".to_owned(),
        "x/../../evil@a.b".to_owned(),
    );
    let line = gke_plugin(&md, &sts)
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &bad)
        .rejected();
    assert!(
        line.contains("iam.gke.io/gcp-service-account")
            && line.contains("is not a service account e-mail"),
        "{line}"
    );
}

#[test]
fn generic_wif_audience_outside_gke() {
    const POOL: &str = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/k8s/providers/cluster-a";
    let subject = ksa(now_secs() + 86_400);
    let sts = sts(POOL, subject.clone());
    let md = node_metadata(r#","expires_in":3599"#);
    let ok = plugin_with_metadata(&md)
        .args([
            format!("--wif-audience={POOL}"),
            format!("--sts-endpoint={}/v1/token", sts.url()),
        ])
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in())
        .accepted();
    assert_eq!(ok.auth["*.pkg.dev"].1, FEDERATED);
    assert_eq!(sts.requests().len(), 1);
}

#[test]
fn the_pod_token_expiry_caps_the_cache() {
    let subject = ksa(now_secs() + 600);
    let sts = sts(AUDIENCE, subject.clone());
    let md = node_metadata(r#","expires_in":3599"#);
    let ok = gke_plugin(&md, &sts)
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &opted_in())
        .accepted();
    let secs = ok.cache_duration.unwrap().as_nanos() / 1_000_000_000;
    assert!(
        (478..=480).contains(&secs),
        "600 s of pod token life minus 120 s, got {secs}"
    );
}

#[test]
fn an_sts_echoing_the_subject_token_is_refused() {
    let subject = ksa(now_secs() + 86_400);
    let echo = subject.clone();
    let sts = FakeServer::start(move |_| {
        FakeResponse::json(format!(r#"{{"access_token":"{echo}","expires_in":3600}}"#))
    });
    let md = node_metadata(r#","expires_in":3599"#);
    let out = gke_plugin(&md, &sts).request_with_token(
        ApiVersion::V1,
        IMAGE,
        Some(&subject),
        &opted_in(),
    );
    let line = out.rejected();
    assert!(line.contains("service-account token itself"), "{line}");
    assert!(!line.contains(&subject));
}

#[test]
fn flag_errors_exit_2_with_upstreams_messages() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--identity-provider=https://x"],
            "--project-id is required when --identity-provider is set",
        ),
        (
            &[
                "--sts-endpoint=http://sts.example.com/v1/token",
                "--wif-audience=//iam/x",
            ],
            "--sts-endpoint http://sts.example.com/v1/token uses plain http",
        ),
        (
            &["--impersonate-service-account=a@b.c"],
            "--impersonate-service-account needs Workload Identity",
        ),
        (
            &[
                "--wif-audience=//x",
                "--identity-provider=https://y",
                "--project-id=p",
            ],
            "not both",
        ),
        (
            &["--wif-audience=//x", "--impersonate-service-account=nope"],
            "is not a service account e-mail",
        ),
    ];
    for (args, want) in cases {
        let out = plugin()
            .args(args.iter().copied())
            .request(ApiVersion::V1, IMAGE);
        let line = out.rejected();
        assert!(line.contains(want), "{args:?}: {line}");
        assert_eq!(out.exec.exit_code, Some(2));
    }
}

#[test]
fn no_token_of_any_kind_reaches_stderr_at_v6() {
    let now = now_secs();
    let subject = ksa(now + 86_400);
    let sts = sts(AUDIENCE, subject.clone());
    let iam = iam(rfc3339(now + 1800));
    let md = node_metadata(r#","expires_in":3599"#);
    let mut a = opted_in();
    a.insert("iam.gke.io/gcp-service-account".to_owned(), GSA.to_owned());
    let out = gke_plugin(&md, &sts)
        .args(["--v=6".to_owned(), format!("--iam-endpoint={}", iam.url())])
        .request_with_token(ApiVersion::V1, IMAGE, Some(&subject), &a);
    out.accepted();
    let stderr = out.stderr();
    assert!(stderr.contains("Workload Identity Federation"), "{stderr}");
    for secret in [subject.as_str(), FEDERATED, IMPERSONATED] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }
}
