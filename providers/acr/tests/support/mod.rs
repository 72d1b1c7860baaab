//! A local Azure for the ACR tests: Entra ID over TLS (`AZURE_AUTHORITY_HOST`), an App Service
//! managed-identity endpoint (`IDENTITY_ENDPOINT`), registries over TLS reached by their real
//! names through a CONNECT proxy (`HTTPS_PROXY`), and an off-cloud host that must never see a
//! request. The plugin trusts the test CA through `SSL_CERT_FILE`. Each fake can be scripted to
//! fail, stall or answer oddly.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine;
use kcp_testkit::fake::{FakeResponse, FakeServer, RecordedRequest};
use kcp_testkit::proxy::ConnectProxy;
use kcp_testkit::tls::{TestCa, TlsFakeServer};
use kcp_testkit::{Plugin, TempDir};

/// The plugin binary: Cargo's path in tests; in the demo example, the binary next to it.
pub const BIN: &str = match option_env!("CARGO_BIN_EXE_acr-credential-provider") {
    Some(path) => path,
    None => "acr-credential-provider",
};
pub const ENTRA_TOKEN: &str = "entra-access-token-Zq81";
pub const MI_TOKEN: &str = "mi-access-token-Lk27";
pub const CLIENT_SECRET: &str = "sp-client-secret-Yy93";
pub const IDENTITY_HEADER: &str = "identity-header-secret-Pp11";
pub const SA_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.sa-token-payload.sa-token-signature";
pub const FEDERATED_TOKEN: &str = "federated-token-file-content-Wq55";
/// Every secret the tests hand out besides the fakes' JSON bodies.
pub const SECRETS: [&str; 6] = [
    ENTRA_TOKEN,
    MI_TOKEN,
    CLIENT_SECRET,
    IDENTITY_HEADER,
    SA_TOKEN,
    FEDERATED_TOKEN,
];
pub const NULL_GUID: &str = "00000000-0000-0000-0000-000000000000";
pub const SCOPE: &str = "https://containerregistry.azure.net/.default";

/// Hosts the registry fake answers for (all through the proxy).
pub const REGISTRY_HOSTS: [&str; 6] = [
    "myreg.azurecr.io",
    "myreg.azurecr.cn",
    "myreg.azurecr.us",
    "myreg.azurecr.my.cloud",
    "myreg.eastus.geo.azurecr.io",
    "other.azurecr.io",
];
/// Hosts of the off-cloud fake.
pub const EVIL_HOSTS: [&str; 2] = ["evil.example.com", "myreg.azurecr.io.evil.com"];

/// A queue of scripted answers; when empty, the fake's default answer applies.
#[derive(Clone, Default)]
pub struct Script(Arc<Mutex<VecDeque<FakeResponse>>>);

impl Script {
    pub fn push(&self, response: FakeResponse) {
        self.0.lock().unwrap().push_back(response);
    }
    fn next(&self) -> Option<FakeResponse> {
        self.0.lock().unwrap().pop_front()
    }
}

/// An unsigned JWT with `exp` and `aud`, as ACR's refresh tokens look to a client.
pub fn jwt(exp: u64, aud: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(r#"{"alg":"RS256","typ":"JWT"}"#),
        b64(&format!(
            r#"{{"exp":{exp},"aud":"{aud}","grant_type":"refresh_token"}}"#
        ))
    )
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Form fields of a recorded request body.
pub fn form(request: &RecordedRequest) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(&request.body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Query parameters of a recorded request.
pub fn query(request: &RecordedRequest) -> BTreeMap<String, String> {
    let q = request.target.split_once('?').map(|(_, q)| q).unwrap_or("");
    url::form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub struct World {
    pub ca: TestCa,
    pub entra: TlsFakeServer,
    pub entra_script: Script,
    pub msi: FakeServer,
    pub msi_script: Script,
    pub registry: TlsFakeServer,
    pub challenge_script: Script,
    pub exchange_script: Script,
    /// The refresh tokens the registry handed out, in order.
    pub issued: Arc<Mutex<Vec<String>>>,
    pub evil: TlsFakeServer,
    pub proxy: ConnectProxy,
    pub dir: TempDir,
}

impl World {
    pub fn new() -> World {
        Self::with_routes(true)
    }

    /// `registry_reachable: false` routes the registry hosts to a closed port.
    pub fn with_routes(registry_reachable: bool) -> World {
        // Secrets the tests hand out other than in a fake's JSON body (which registers itself).
        for secret in SECRETS {
            kcp_testkit::secrets::register(secret);
        }
        let ca = TestCa::new();
        let entra_script = Script::default();
        let s = entra_script.clone();
        let entra = TlsFakeServer::start(&ca, &["127.0.0.1", "localhost"], move |req| {
            if let Some(r) = s.next() {
                return r;
            }
            if req.method == "POST" && req.path().ends_with("/oauth2/v2.0/token") {
                FakeResponse::json(format!(
                    r#"{{"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,"access_token":"{ENTRA_TOKEN}"}}"#
                ))
            } else {
                FakeResponse::new(404, r#"{"error":"not_found"}"#)
            }
        });
        let msi_script = Script::default();
        let s = msi_script.clone();
        let msi = FakeServer::start(move |req| {
            if let Some(r) = s.next() {
                return r;
            }
            if req.path() == "/msi/token"
                && req.header("x-identity-header") == Some(IDENTITY_HEADER)
            {
                FakeResponse::json(format!(
                    r#"{{"access_token":"{MI_TOKEN}","expires_on":"{}","resource":"https://containerregistry.azure.net","token_type":"Bearer"}}"#,
                    now() + 86_000
                ))
            } else {
                FakeResponse::new(400, r#"{"error":"invalid_request"}"#)
            }
        });
        let challenge_script = Script::default();
        let exchange_script = Script::default();
        let issued = Arc::new(Mutex::new(Vec::new()));
        let (c, e, i) = (
            challenge_script.clone(),
            exchange_script.clone(),
            issued.clone(),
        );
        let registry = TlsFakeServer::start(&ca, &REGISTRY_HOSTS, move |req| {
            let host = req.header("host").unwrap_or("").to_owned();
            match (req.method.as_str(), req.path()) {
                ("GET", "/v2/") => c.next().unwrap_or_else(|| {
                    FakeResponse::new(401, r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#)
                        .header(
                            "www-authenticate",
                            &format!(r#"Bearer realm="https://{host}/oauth2/token",service="{host}""#),
                        )
                }),
                ("POST", "/oauth2/exchange") => e.next().unwrap_or_else(|| {
                    let token = jwt(now() + 3 * 3600, &host);
                    i.lock().unwrap().push(token.clone());
                    FakeResponse::json(format!(r#"{{"refresh_token":"{token}"}}"#))
                        .header("x-ms-correlation-request-id", "corr-1234")
                }),
                _ => FakeResponse::new(404, "{}"),
            }
        });
        let evil = TlsFakeServer::start(&ca, &EVIL_HOSTS, |_| {
            FakeResponse::json(r#"{"refresh_token":"stolen"}"#)
        });
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let registry_addr = if registry_reachable {
            registry.addr()
        } else {
            closed
        };
        let mut routes: Vec<(String, std::net::SocketAddr)> = REGISTRY_HOSTS
            .iter()
            .map(|h| (format!("{h}:443"), registry_addr))
            .collect();
        routes.extend(EVIL_HOSTS.iter().map(|h| (format!("{h}:443"), evil.addr())));
        let route_refs: Vec<(&str, std::net::SocketAddr)> =
            routes.iter().map(|(t, a)| (t.as_str(), *a)).collect();
        let proxy = ConnectProxy::start(&route_refs);
        World {
            ca,
            entra,
            entra_script,
            msi,
            msi_script,
            registry,
            challenge_script,
            exchange_script,
            issued,
            evil,
            proxy,
            dir: TempDir::new("acr"),
        }
    }

    /// Writes `azure.json` and returns its path.
    pub fn config(&self, json: &str) -> String {
        kcp_testkit::secrets::register_json(json.as_bytes());
        let path = self.dir.path().join("azure.json");
        std::fs::write(&path, json).unwrap();
        path.display().to_string()
    }

    /// Writes a file in the world's directory and returns its path.
    pub fn file(&self, name: &str, content: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }

    /// The plugin with the network of this world: CA, proxy, Entra authority.
    pub fn plugin(&self, config_json: &str) -> Plugin {
        let config = self.config(config_json);
        Plugin::new(BIN)
            .env("SSL_CERT_FILE", self.ca.ca_file().display().to_string())
            .env("HTTPS_PROXY", self.proxy.url())
            .env("AZURE_AUTHORITY_HOST", self.entra.https_url())
            .args([config])
            .timeout(Duration::from_secs(30))
    }

    /// The plugin with the App Service managed-identity endpoint configured.
    pub fn mi_plugin(&self, config_json: &str) -> Plugin {
        self.plugin(config_json)
            .env("IDENTITY_ENDPOINT", format!("{}/msi/token", self.msi.url()))
            .env("IDENTITY_HEADER", IDENTITY_HEADER)
    }

    /// The refresh token issued last.
    pub fn last_refresh(&self) -> String {
        self.issued
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }

    /// Asserts no request of any kind reached the off-cloud fake or was tunnelled to it.
    pub fn assert_nothing_off_cloud(&self) {
        assert!(
            self.evil.requests().is_empty(),
            "off-cloud fake got {:?}",
            self.evil.requests()
        );
        let targets = self.proxy.targets();
        for host in EVIL_HOSTS {
            assert!(
                !targets.iter().any(|t| t.contains(host)),
                "the plugin tried to reach {host}: {targets:?}"
            );
        }
    }

    /// `(method, path)` of every registry request, in order.
    pub fn registry_calls(&self) -> Vec<(String, String)> {
        self.registry
            .requests()
            .iter()
            .map(|r| (r.method.clone(), r.path().to_owned()))
            .collect()
    }
}

/// What the registry must have received for one successful exchange.
pub fn assert_exchange(world: &World, host: &str, access_token: &str, tenant: Option<&str>) {
    let requests = world.registry.requests();
    let calls: Vec<(String, String)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.path().to_owned()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("GET".into(), "/v2/".into()),
            ("POST".into(), "/oauth2/exchange".into())
        ],
        "registry calls"
    );
    assert_eq!(requests[0].header("host"), Some(host));
    assert!(
        requests[0].header("authorization").is_none(),
        "the challenge carries no credential"
    );
    let post = &requests[1];
    assert_eq!(post.header("host"), Some(host));
    assert_eq!(
        post.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let mut want = fields(&[
        ("grant_type", "access_token"),
        ("service", host),
        ("access_token", access_token),
    ]);
    if let Some(t) = tenant {
        want.insert("tenant".into(), t.into());
    }
    assert_eq!(form(post), want, "exchange form");
    assert!(
        world.proxy.targets().contains(&format!("{host}:443")),
        "the registry is reached through HTTPS_PROXY: {:?}",
        world.proxy.targets()
    );
}

pub fn assert_no_secret(text: &str, extra: &[&str]) {
    for secret in SECRETS.iter().chain(extra) {
        assert!(!secret.is_empty());
        assert!(!text.contains(secret), "secret {secret:?} leaked:\n{text}");
    }
}

/// The exact stdout the plugin must print for a token answer (`cacheDuration` read back, checked
/// for range by the caller).
pub fn token_answer(version: &str, duration: &str, keys: &[&str], refresh: &str) -> String {
    let mut auth: BTreeMap<String, (String, String)> = keys
        .iter()
        .map(|k| ((*k).to_owned(), (NULL_GUID.to_owned(), refresh.to_owned())))
        .collect();
    auth.insert("*.azurecr.*".into(), (String::new(), String::new()));
    let entries: Vec<String> = auth
        .iter()
        .map(|(k, (u, p))| format!(r#""{k}":{{"username":"{u}","password":"{p}"}}"#))
        .collect();
    format!(
        r#"{{"kind":"CredentialProviderResponse","apiVersion":"{version}","cacheKeyType":"Registry","cacheDuration":"{duration}","auth":{{{}}}}}"#,
        entries.join(",")
    ) + "\n"
}

/// Reads `cacheDuration` out of stdout and checks it is the 3 h token minus the 5 min margin,
/// less the seconds the test itself has taken (a minute at most: 64 execs under qemu take a while).
pub fn cache_duration_of(stdout: &str) -> String {
    let v: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let d = v["cacheDuration"].as_str().unwrap_or_default().to_owned();
    let parsed = kcp_kubelet::duration::GoDuration::parse(&d)
        .unwrap_or_else(|e| panic!("cacheDuration {d:?}: {e}"));
    let full = kcp_kubelet::duration::GoDuration::from_secs(2 * 3600 + 55 * 60);
    let elapsed = full.as_nanos() - parsed.as_nanos();
    assert!(
        (0..=60_000_000_000).contains(&elapsed) && parsed.as_nanos() % 1_000_000_000 == 0,
        "cacheDuration {d} is not the refresh token's 3h minus 5m, in whole seconds"
    );
    d
}
