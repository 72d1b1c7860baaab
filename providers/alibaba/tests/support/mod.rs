//! Loopback fakes of the three services the provider calls (the ECS metadata server in hardened
//! mode, STS, Container Registry), the exact requests each must receive, and the plugin wired to
//! them through its endpoint flags, as an operator of a private cloud would.
#![allow(dead_code)]

pub mod v3;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use kcp_kubelet::ApiVersion;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::{Outcome, Plugin, rfc3339, unix_now};

pub use v3::Signed;

/// The metadata server's session token (hardened mode).
pub const MD_SESSION: &str = "md-session-token-7f3a9c";
/// The node's RAM role as the metadata server lists it.
pub const NODE_ROLE: &str = "node-puller";
/// The node role's credentials.
pub const NODE_KEY: Signed<'static> = Signed {
    key_id: "STS.node-key-id-1",
    secret: "node-secret-Zq8Lw2",
    security_token: Some("node-security-token-Kp3Vx9"),
};
/// A pod role's credentials, as STS hands them out.
pub const POD_KEY: Signed<'static> = Signed {
    key_id: "STS.pod-key-id-2",
    secret: "pod-secret-Hn5Tr7",
    security_token: Some("pod-security-token-Wm4Qs1"),
};
/// Static keys from the environment.
pub const STATIC_KEY: Signed<'static> = Signed {
    key_id: "LTAI-static-key-id-3",
    secret: "static-secret-Yb6Ud0",
    security_token: None,
};
/// Registry logins.
pub const CR_USER: &str = "cr_temp_user";
pub const ENTERPRISE_PASSWORD: &str = "enterprise-registry-password-Ac1Fv5";
pub const PERSONAL_PASSWORD: &str = "personal-registry-password-Gt8Jk2";

/// Enterprise instance of the tests.
pub const INSTANCE_NAME: &str = "myinst";
pub const INSTANCE_ID: &str = "cri-abc123def456";
pub const REGION: &str = "cn-hangzhou";
pub const ENTERPRISE_HOST: &str = "myinst-registry.cn-hangzhou.cr.aliyuncs.com";
pub const ENTERPRISE_VPC_HOST: &str = "myinst-registry-vpc.cn-hangzhou.cr.aliyuncs.com";
pub const PERSONAL_HOST: &str = "registry.cn-hangzhou.aliyuncs.com";
pub const CRPI_HOST: &str = "crpi-k3x9q2.cn-hangzhou.personal.cr.aliyuncs.com";
pub const CUSTOM_HOST: &str = "images.example.com";

/// The OIDC provider and a pod role.
pub const ACCOUNT: &str = "1234567890123456";
pub const OIDC_PROVIDER_ARN: &str = "acs:ram::1234567890123456:oidc-provider/ack-rrsa-c1";
pub const ROLE_KEY: &str = "pod-identity.alibabacloud.com/role-name";
pub const POD_ROLE: &str = "app-puller";
pub const POD_ROLE_ARN: &str = "acs:ram::1234567890123456:role/app-puller";

/// API versions.
pub const CR_VERSION: &str = "2018-12-01";
pub const CR_PERSONAL_VERSION: &str = "2016-06-07";
pub const STS_VERSION: &str = "2015-04-01";

/// How each API is called.
pub const RPC_METHOD: &str = "POST";

/// Metadata paths.
pub const MD_TOKEN_PATH: &str = "/latest/api/token";
pub const MD_ROLES_PATH: &str = "/latest/meta-data/ram/security-credentials/";
pub const MD_REGION_PATH: &str = "/latest/meta-data/region-id";

/// The path of the node role's credentials.
pub fn md_role_path(role: &str) -> String {
    format!("{MD_ROLES_PATH}{role}")
}

/// A fake answering each route from a script: one response per call, the last one repeated;
/// unknown routes get 404 with an Alibaba error body.
pub struct Scripted {
    pub server: FakeServer,
    script: Arc<Mutex<HashMap<String, VecDeque<FakeResponse>>>>,
}

impl Scripted {
    /// `route` of a request: the `x-acs-action` header for APIs, `METHOD path` for metadata.
    fn start(route: fn(&RecordedRequest) -> String) -> Scripted {
        let script: Arc<Mutex<HashMap<String, VecDeque<FakeResponse>>>> = Arc::default();
        let shared = script.clone();
        let server = FakeServer::start(move |req| {
            let key = route(req);
            let mut script = shared.lock().unwrap();
            match script.get_mut(&key) {
                Some(queue) if queue.len() > 1 => queue.pop_front().unwrap(),
                Some(queue) => queue
                    .front()
                    .cloned()
                    .unwrap_or_else(|| FakeResponse::new(404, "")),
                None => FakeResponse::new(
                    404,
                    format!(r#"{{"Code":"InvalidAction.NotFound","Message":"no route {key}"}}"#),
                ),
            }
        });
        Scripted { server, script }
    }

    /// Sets the answers of `route`.
    pub fn on(&self, route: &str, answers: Vec<FakeResponse>) {
        self.script
            .lock()
            .unwrap()
            .insert(route.to_owned(), answers.into());
    }

    /// Requests so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// How many requests so far were calls of `action` (their `x-acs-action`).
    pub fn calls(&self, action: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.header("x-acs-action") == Some(action))
            .count()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.server.url()
    }
}

fn action_route(req: &RecordedRequest) -> String {
    req.header("x-acs-action").unwrap_or("none").to_owned()
}

fn metadata_route(req: &RecordedRequest) -> String {
    format!("{} {}", req.method, req.path())
}

/// The three fakes.
pub struct Fakes {
    pub metadata: Scripted,
    pub sts: Scripted,
    pub cr: Scripted,
}

/// Milliseconds since the epoch, `secs` from now.
pub fn ms_from_now(secs: i64) -> i64 {
    (i64::try_from(unix_now()).unwrap() + secs) * 1000
}

/// Enterprise `GetAuthorizationToken`'s answer.
pub fn enterprise_token(password: &str, expire_ms: i64) -> FakeResponse {
    FakeResponse::json(format!(
        r#"{{"RequestId":"E069EB86-E6AD-4A98-ADDE-0E993390239A","Code":"success","IsSuccess":true,"TempUsername":"{CR_USER}","AuthorizationToken":"{password}","ExpireTime":{expire_ms}}}"#
    ))
}

/// The Personal Edition's `GetAuthorizationToken` answer.
pub fn personal_token(password: &str, expire_ms: i64) -> FakeResponse {
    FakeResponse::json(format!(
        r#"{{"data":{{"tempUserName":"{CR_USER}","authorizationToken":"{password}","expireDate":{expire_ms}}},"requestId":"0A8A7A4A-1111-2222-3333-444455556666"}}"#
    ))
}

/// `ListInstance`'s answer with these (id, name) instances in [`REGION`].
pub fn instances(list: &[(&str, &str)]) -> FakeResponse {
    let items: Vec<String> = list
        .iter()
        .map(|(id, name)| {
            format!(
                r#"{{"InstanceId":"{id}","InstanceName":"{name}","RegionId":"{REGION}","InstanceSpecification":"Enterprise_Basic","InstanceStatus":"RUNNING","CreateTime":1571926560000,"ModifiedTime":1571926560000}}"#
            )
        })
        .collect();
    FakeResponse::json(format!(
        r#"{{"RequestId":"F1E2D3C4-0000-1111-2222-333344445555","Code":"success","IsSuccess":true,"PageNo":1,"PageSize":30,"TotalCount":{},"Instances":[{}]}}"#,
        list.len(),
        items.join(",")
    ))
}

/// An Alibaba error answer.
pub fn api_error(status: u16, code: &str, message: &str) -> FakeResponse {
    FakeResponse::new(
        status,
        format!(
            r#"{{"RequestId":"9D8C7B6A-0000-1111-2222-333344445555","HostId":"cr.cn-hangzhou.aliyuncs.com","Code":"{code}","Message":"{message}","Recommend":"https://api.aliyun.com/troubleshoot"}}"#
        ),
    )
    .header("content-type", "application/json")
}

/// STS `AssumeRoleWithOIDC`'s answer with `key`, expiring in two hours.
pub fn sts_credentials(key: Signed<'_>) -> FakeResponse {
    FakeResponse::json(format!(
        r#"{{"RequestId":"3D57EAD2-8723-1F26-B69C-F8707D8B565D","OIDCTokenInfo":{{"Subject":"system:serviceaccount:team-a:app","Issuer":"https://oidc-ack.cn-hangzhou.aliyuncs.com/c1","ClientIds":"sts.aliyuncs.com"}},"AssumedRoleUser":{{"AssumedRoleId":"33157794895460****","Arn":"{POD_ROLE_ARN}/team-a.app"}},"Credentials":{{"AccessKeyId":"{}","AccessKeySecret":"{}","SecurityToken":"{}","Expiration":"{}"}}}}"#,
        key.key_id,
        key.secret,
        key.security_token.unwrap_or_default(),
        rfc3339(unix_now() + 7200)
    ))
}

/// The metadata server's role credentials document for `key`, expiring in six hours.
pub fn metadata_credentials(key: Signed<'_>) -> FakeResponse {
    FakeResponse::json(format!(
        r#"{{"AccessKeyId":"{}","AccessKeySecret":"{}","Expiration":"{}","SecurityToken":"{}","LastUpdated":"{}","Code":"Success"}}"#,
        key.key_id,
        key.secret,
        rfc3339(unix_now() + 6 * 3600),
        key.security_token.unwrap_or_default(),
        rfc3339(unix_now())
    ))
}

impl Fakes {
    /// Fakes that answer every call successfully: the node role, STS with [`POD_KEY`], and
    /// Container Registry with one instance [`INSTANCE_NAME`].
    pub fn new() -> Fakes {
        let metadata = Scripted::start(metadata_route);
        metadata.on(
            &format!("PUT {MD_TOKEN_PATH}"),
            vec![FakeResponse::new(200, MD_SESSION)],
        );
        metadata.on(
            &format!("GET {MD_ROLES_PATH}"),
            vec![FakeResponse::new(200, NODE_ROLE)],
        );
        metadata.on(
            &format!("GET {}", md_role_path(NODE_ROLE)),
            vec![metadata_credentials(NODE_KEY)],
        );
        metadata.on(
            &format!("GET {MD_REGION_PATH}"),
            vec![FakeResponse::new(200, REGION)],
        );
        let sts = Scripted::start(action_route);
        sts.on("AssumeRoleWithOIDC", vec![sts_credentials(POD_KEY)]);
        let cr = Scripted::start(action_route);
        cr.on(
            "GetAuthorizationToken",
            vec![enterprise_token(ENTERPRISE_PASSWORD, ms_from_now(3600))],
        );
        cr.on(
            "ListInstance",
            vec![instances(&[(INSTANCE_ID, INSTANCE_NAME)])],
        );
        for secret in [NODE_KEY, POD_KEY, STATIC_KEY] {
            kcp_testkit::secrets::register(secret.secret);
            if let Some(token) = secret.security_token {
                kcp_testkit::secrets::register(token);
            }
        }
        for secret in [MD_SESSION, ENTERPRISE_PASSWORD, PERSONAL_PASSWORD] {
            kcp_testkit::secrets::register(secret);
        }
        Fakes { metadata, sts, cr }
    }

    /// Answers the Personal Edition's token call (routes by path: it is the same action name).
    pub fn personal(self) -> Fakes {
        self.cr_on(
            "GetAuthorizationToken",
            vec![personal_token(PERSONAL_PASSWORD, ms_from_now(3600))],
        )
    }

    /// Container Registry answers `action` with `answers` instead.
    pub fn cr_on(self, action: &str, answers: Vec<FakeResponse>) -> Fakes {
        self.cr.on(action, answers);
        self
    }

    /// STS answers `AssumeRoleWithOIDC` with `answers` instead.
    pub fn sts_on(self, answers: Vec<FakeResponse>) -> Fakes {
        self.sts.on("AssumeRoleWithOIDC", answers);
        self
    }

    /// The metadata server answers `route` (`METHOD path`) with `answers` instead.
    pub fn metadata_on(self, route: &str, answers: Vec<FakeResponse>) -> Fakes {
        self.metadata.on(route, answers);
        self
    }

    /// Requests at all three.
    pub fn total_requests(&self) -> usize {
        self.metadata.requests().len() + self.sts.requests().len() + self.cr.requests().len()
    }
}

/// The plugin with `get-credentials`, a short deadline, and every endpoint at the fakes.
pub fn plugin(fakes: &Fakes) -> Plugin {
    at_fakes(fakes).args(["--deadline=10s"])
}

/// The plugin with `get-credentials` and every endpoint at the fakes (no `--deadline`).
pub fn at_fakes(fakes: &Fakes) -> Plugin {
    base().args(["get-credentials"]).args([
        format!("--metadata-endpoint={}", fakes.metadata.url()),
        format!("--sts-endpoint={}", fakes.sts.url()),
        format!("--cr-endpoint={}", fakes.cr.url()),
    ])
}

/// The binary under test without arguments.
pub fn base() -> Plugin {
    Plugin::new(env!("CARGO_BIN_EXE_alibaba-credential-provider"))
}

/// The plugin configured for RRSA.
pub fn rrsa_plugin(fakes: &Fakes) -> Plugin {
    plugin(fakes).args([format!("--oidc-provider-arn={OIDC_PROVIDER_ARN}")])
}

/// The plugin with static keys (no security token).
pub fn static_plugin(fakes: &Fakes) -> Plugin {
    with_static_key(plugin(fakes))
}

/// `p` with [`STATIC_KEY`] in its environment.
pub fn with_static_key(p: Plugin) -> Plugin {
    p.env("ALIBABA_CLOUD_ACCESS_KEY_ID", STATIC_KEY.key_id)
        .env("ALIBABA_CLOUD_ACCESS_KEY_SECRET", STATIC_KEY.secret)
}

/// `p` keeping its token cache in `dir`.
pub fn with_cache(p: Plugin, dir: &Path) -> Plugin {
    p.args([format!("--token-cache-dir={}", dir.display())])
}

/// `p`'s v1 request for an image on [`ENTERPRISE_HOST`].
pub fn request_enterprise(p: &Plugin) -> Outcome {
    p.request(ApiVersion::V1, &image(ENTERPRISE_HOST))
}

/// [`plugin`]'s v1 request for an image on [`ENTERPRISE_HOST`].
pub fn enterprise(fakes: &Fakes) -> Outcome {
    request_enterprise(&plugin(fakes))
}

/// `p`'s v1 request for an image on `host` from a pod: with its service-account `token`, and
/// the role annotation naming `role` if any.
pub fn pod_request(p: &Plugin, host: &str, token: &str, role: Option<&str>) -> Outcome {
    let annotations = role.map(role_annotation).unwrap_or_default();
    p.request_with_token(ApiVersion::V1, &image(host), Some(token), &annotations)
}

/// A projected service-account token for team-a/app with audience `sts.aliyuncs.com`.
pub fn sa_token() -> String {
    sa_token_of("team-a", "app", "uid-1", "pod-1")
}

/// A projected service-account token of `namespace`/`name` (`uid`) in `pod`, with audience
/// `sts.aliyuncs.com`.
pub fn sa_token_of(namespace: &str, name: &str, uid: &str, pod: &str) -> String {
    kcp_testkit::cache::service_account_token("sts.aliyuncs.com", namespace, name, uid, pod)
}

/// The role annotation.
pub fn role_annotation(value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(ROLE_KEY.to_owned(), value.to_owned())])
}

/// A port on 127.0.0.1 with nothing listening.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Asserts the metadata fake saw exactly the hardened-mode sequence: a session token (PUT with
/// its TTL header), then each of `gets` with that token.
pub fn assert_metadata(reqs: &[RecordedRequest], gets: &[&str]) {
    let summary: Vec<String> = reqs
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    let puts: Vec<&RecordedRequest> = reqs.iter().filter(|r| r.method == "PUT").collect();
    assert!(!puts.is_empty(), "a session token first: {summary:?}");
    for put in &puts {
        assert_eq!(put.target, MD_TOKEN_PATH, "{summary:?}");
        let ttl = put
            .header("x-aliyun-ecs-metadata-token-ttl-seconds")
            .unwrap_or_else(|| panic!("the token PUT names its TTL: {summary:?}"));
        let ttl: u32 = ttl.parse().unwrap_or_else(|_| panic!("TTL {ttl:?}"));
        assert!((1..=21600).contains(&ttl), "TTL {ttl}");
    }
    assert_eq!(
        reqs[0].method, "PUT",
        "the session token comes first: {summary:?}"
    );
    let got: Vec<String> = reqs
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.target.clone())
        .collect();
    assert_eq!(got, gets, "metadata GETs: {summary:?}");
    for get in reqs.iter().filter(|r| r.method == "GET") {
        assert_eq!(
            get.header("x-aliyun-ecs-metadata-token"),
            Some(MD_SESSION),
            "{}: the hardened-mode token on every GET",
            get.target
        );
        assert_eq!(get.header("authorization"), None);
    }
    assert!(
        reqs.iter().all(|r| r.method == "GET" || r.method == "PUT"),
        "{summary:?}"
    );
}

/// Asserts the metadata fake saw the node role's sequence: the role's name, then its
/// credentials ([`assert_metadata`]).
pub fn assert_node_role_metadata(fakes: &Fakes) {
    assert_metadata(
        &fakes.metadata.requests(),
        &[MD_ROLES_PATH, &md_role_path(NODE_ROLE)],
    );
}

/// Asserts a Container Registry call: `method` on `path`, `action` of `version` with every
/// `x-acs-*` header, signed with `key`.
fn assert_cr_request(
    req: &RecordedRequest,
    (method, path): (&str, &str),
    (action, version): (&str, &str),
    key: Signed<'_>,
) {
    assert_eq!(req.method, method, "{}", req.target);
    assert_eq!(req.path(), path);
    v3::assert_acs_headers(req, action, version);
    v3::assert_signed(req, key);
}

/// Asserts the Container Registry fake saw exactly an Enterprise login by instance name:
/// `ListInstance`, then `GetAuthorizationToken` for [`INSTANCE_ID`], each signed with `key` and
/// its own nonce.
pub fn assert_enterprise_login(fakes: &Fakes, key: Signed<'_>) {
    let cr = fakes.cr.requests();
    assert_eq!(cr.len(), 2, "{cr:#?}");
    assert_list_instance(&cr[0], key);
    assert_enterprise_token(&cr[1], INSTANCE_ID, key);
    assert_ne!(
        cr[0].header("x-acs-signature-nonce"),
        cr[1].header("x-acs-signature-nonce")
    );
}

/// Asserts the Container Registry fake saw exactly one call: `GetAuthorizationToken` for
/// [`INSTANCE_ID`] signed with `key`, no `ListInstance` (the instance was known).
pub fn assert_known_instance_login(fakes: &Fakes, key: Signed<'_>) {
    let cr = fakes.cr.requests();
    assert_eq!(cr.len(), 1, "no ListInstance: {cr:#?}");
    assert_enterprise_token(&cr[0], INSTANCE_ID, key);
}

/// Asserts the Container Registry fake saw exactly one call: the Personal Edition's login
/// signed with `key`.
pub fn assert_personal_login(fakes: &Fakes, key: Signed<'_>) {
    let cr = fakes.cr.requests();
    assert_eq!(cr.len(), 1, "{cr:#?}");
    assert_personal_token(&cr[0], key);
}

/// Asserts an Enterprise `GetAuthorizationToken` for `instance`, signed with `key`.
pub fn assert_enterprise_token(req: &RecordedRequest, instance: &str, key: Signed<'_>) {
    assert_cr_request(
        req,
        (RPC_METHOD, "/"),
        ("GetAuthorizationToken", CR_VERSION),
        key,
    );
    assert_eq!(
        params(req).get("InstanceId").map(String::as_str),
        Some(instance),
        "InstanceId of {}",
        req.target
    );
}

/// Asserts a `ListInstance` signed with `key`.
pub fn assert_list_instance(req: &RecordedRequest, key: Signed<'_>) {
    assert_cr_request(req, (RPC_METHOD, "/"), ("ListInstance", CR_VERSION), key);
}

/// Asserts the Personal Edition's token call signed with `key`.
pub fn assert_personal_token(req: &RecordedRequest, key: Signed<'_>) {
    assert_cr_request(
        req,
        ("GET", "/tokens"),
        ("GetAuthorizationToken", CR_PERSONAL_VERSION),
        key,
    );
    assert!(req.body.is_empty());
}

/// Asserts an `AssumeRoleWithOIDC` for `role_arn` with the token in the form body only.
pub fn assert_assume_role(req: &RecordedRequest, role_arn: &str, token: &str, duration: u32) {
    assert_eq!(req.method, "POST", "{}", req.target);
    assert_eq!(req.path(), "/");
    v3::assert_acs_headers(req, "AssumeRoleWithOIDC", STS_VERSION);
    v3::assert_anonymous(req);
    assert!(
        !req.target.contains(token) && !req.target.contains("OIDCToken"),
        "the service-account token never rides in the URL: {}",
        req.target
    );
    assert_eq!(
        req.header("content-type")
            .map(|c| c.split(';').next().unwrap_or("").trim()),
        Some("application/x-www-form-urlencoded")
    );
    let p = params(req);
    assert_eq!(p.get("OIDCToken").map(String::as_str), Some(token));
    assert_eq!(p.get("RoleArn").map(String::as_str), Some(role_arn));
    assert_eq!(
        p.get("OIDCProviderArn").map(String::as_str),
        Some(OIDC_PROVIDER_ARN)
    );
    assert_eq!(p.get("DurationSeconds"), Some(&duration.to_string()));
    let session = p.get("RoleSessionName").expect("RoleSessionName");
    assert_eq!(session, "team-a.app");
}

/// The query and form parameters of a request (API parameters may ride in either).
pub fn params(req: &RecordedRequest) -> BTreeMap<String, String> {
    req.query().into_iter().chain(req.form()).collect()
}

/// Asserts the one-hour Enterprise login for `host` answered in v1 ([`assert_answer`]).
pub fn assert_enterprise_answer(out: &Outcome, host: &str) {
    assert_answer(
        out,
        ApiVersion::V1,
        host,
        ENTERPRISE_PASSWORD,
        ONE_HOUR_ANSWER,
    );
}

/// Asserts the one-hour Personal Edition login for `host` answered in v1 ([`assert_answer`]).
pub fn assert_personal_answer(out: &Outcome, host: &str) {
    assert_answer(
        out,
        ApiVersion::V1,
        host,
        PERSONAL_PASSWORD,
        ONE_HOUR_ANSWER,
    );
}

/// Asserts the answer is exactly this one line, with `cacheDuration` within a few seconds below
/// `secs` (the run takes time), and that exactly one of its auth keys matches the image, by the
/// kubelet's keyring lookup. Returns the answer.
pub fn assert_answer(out: &Outcome, version: ApiVersion, host: &str, password: &str, secs: u64) {
    let ok = out.accepted();
    let stdout = out.stdout();
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let duration = v["cacheDuration"].as_str().unwrap_or_default().to_owned();
    let got = kcp_kubelet::duration::GoDuration::parse(&duration).unwrap();
    let got = got.to_std().unwrap().as_secs();
    assert!(
        got <= secs && got + 5 >= secs,
        "cacheDuration {duration} is not about {secs}s"
    );
    let expected = format!(
        r#"{{"kind":"CredentialProviderResponse","apiVersion":"{version}","cacheKeyType":"Registry","cacheDuration":"{duration}","auth":{{"{host}":{{"username":"{CR_USER}","password":"{password}"}}}}}}"#
    ) + "\n";
    assert_eq!(stdout, expected);
    assert_eq!(ok.keys_for_image(&out_image(host)).len(), 1);
}

/// An image on `host`.
pub fn image(host: &str) -> String {
    format!("{host}/team/app")
}

fn out_image(host: &str) -> String {
    image(host)
}

/// The cache duration of a one-hour login: 60 min minus the 5 min margin.
pub const ONE_HOUR_ANSWER: u64 = 3300;
