//! HTTPS for provider tests: a test CA generated at run time, and a TLS front that terminates
//! TLS for a plain [`FakeServer`](super::fake::FakeServer) behind it.
//!
//! The plugin under test trusts the CA through `SSL_CERT_FILE` (a mechanism every user has), so
//! production code keeps full certificate verification. The front forwards the decrypted bytes to
//! the plain fake, which records and answers the requests; a stalled or dropped answer there is a
//! stalled or dropped answer here.
//!
//! By default the CA and server keys are ECDSA P-256, generated in-process. With
//! [`RSA_KEYS_ENV`] pointing at a directory of RSA keys, the CA presents what AWS and Azure API
//! endpoints present instead: an RSA-2048 leaf issued by an RSA intermediate under an RSA root,
//! so a benchmark's handshakes cost what they cost against the real endpoints (ring cannot
//! generate RSA keys; `scripts/bench` makes them with `openssl genpkey`).
//!
//! ```ignore
//! let ca = TestCa::new();
//! let entra = TlsFakeServer::start(&ca, &["127.0.0.1", "localhost"], |req| FakeResponse::json("{}"));
//! let plugin = plugin.env("SSL_CERT_FILE", ca.ca_file().display().to_string())
//!     .env("AZURE_AUTHORITY_HOST", entra.https_url());
//! ```

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::TempDir;
use super::fake::{FakeResponse, FakeServer, RecordedRequest};

/// Names a directory holding `root.pem`, `intermediate.pem` and `leaf.pem` (PKCS#8 RSA private
/// keys); when set, [`TestCa::new`] builds the RSA chain of the real cloud endpoints from them.
pub const RSA_KEYS_ENV: &str = "KCP_TESTKIT_RSA_KEYS";

/// A certificate authority that exists for one test run.
pub struct TestCa {
    /// Signs server certificates: the root itself, or the intermediate of an RSA chain.
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// The RSA chain's server key (reused for every server); `None`: a fresh ECDSA key each.
    leaf_key: Option<KeyPair>,
    file: PathBuf,
    _dir: TempDir,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").field("file", &self.file).finish()
    }
}

impl TestCa {
    /// Generates a CA and writes its certificate (PEM) to a temporary file: ECDSA P-256, or the
    /// RSA chain when [`RSA_KEYS_ENV`] is set.
    pub fn new() -> Self {
        if let Some(dir) = std::env::var_os(RSA_KEYS_ENV).filter(|d| !d.is_empty()) {
            return Self::from_rsa_key_dir(Path::new(&dir));
        }
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
        let issuer = CertifiedIssuer::self_signed(ca_params("kcp test CA"), key)
            .unwrap_or_else(|e| panic!("CA certificate: {e}"));
        Self::with_issuer(issuer, None, None)
    }

    /// Root → intermediate → leaf, all RSA, as the AWS and Azure endpoints present them, from
    /// `root.pem`, `intermediate.pem` and `leaf.pem` (PKCS#8) in `dir`.
    pub fn from_rsa_key_dir(dir: &Path) -> Self {
        let key = |name: &str| {
            let path = dir.join(name);
            let pem = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            KeyPair::from_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256)
                .unwrap_or_else(|e| panic!("RSA key {}: {e}", path.display()))
        };
        let (root, intermediate, leaf) =
            (key("root.pem"), key("intermediate.pem"), key("leaf.pem"));
        let root = CertifiedIssuer::self_signed(ca_params("kcp test RSA root"), root)
            .unwrap_or_else(|e| panic!("root certificate: {e}"));
        let intermediate =
            CertifiedIssuer::signed_by(ca_params("kcp test RSA issuing CA"), intermediate, &root)
                .unwrap_or_else(|e| panic!("intermediate certificate: {e}"));
        Self::with_issuer(intermediate, Some(root.pem()), Some(leaf))
    }

    /// Writes the trust anchor (`root_pem`, else the issuer itself) to a temporary file.
    fn with_issuer(
        issuer: CertifiedIssuer<'static, KeyPair>,
        root_pem: Option<String>,
        leaf_key: Option<KeyPair>,
    ) -> Self {
        let dir = TempDir::new("ca");
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, root_pem.unwrap_or_else(|| issuer.pem()))
            .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
        TestCa {
            issuer,
            leaf_key,
            file,
            _dir: dir,
        }
    }

    /// The CA certificate file, for `SSL_CERT_FILE`.
    pub fn ca_file(&self) -> &Path {
        &self.file
    }

    /// A server certificate for `names` (DNS names, or IP addresses such as `127.0.0.1`).
    pub fn issue(&self, names: &[&str]) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params =
            CertificateParams::new(names).unwrap_or_else(|e| panic!("server parameters: {e}"));
        params
            .distinguished_name
            .push(DnType::CommonName, "kcp test server");
        let fresh;
        let key = match &self.leaf_key {
            Some(key) => key,
            None => {
                fresh = KeyPair::generate().unwrap_or_else(|e| panic!("server key: {e}"));
                &fresh
            }
        };
        let cert = params
            .signed_by(key, &self.issuer)
            .unwrap_or_else(|e| panic!("server certificate: {e}"));
        (
            vec![cert.der().clone(), self.issuer.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// A rustls server configuration presenting a certificate for `names`.
    pub fn server_config(&self, names: &[&str]) -> Arc<rustls::ServerConfig> {
        let (chain, key) = self.issue(names);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap_or_else(|e| panic!("TLS versions: {e}"))
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap_or_else(|e| panic!("TLS server config: {e}"));
        Arc::new(config)
    }
}

/// Parameters of a CA certificate named `name`.
fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new())
        .unwrap_or_else(|e| panic!("CA parameters: {e}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// Terminates TLS on 127.0.0.1 and forwards each connection's plaintext to `backend`.
pub struct TlsFront {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl TlsFront {
    /// Starts a front with a certificate for `names` that forwards to `backend`.
    pub fn start(ca: &TestCa, names: &[&str], backend: SocketAddr) -> Self {
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(names));
        let listener =
            TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("binding a TLS front: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("TLS front address: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            serve_forever(listener, stopping, move |socket| {
                let acceptor = acceptor.clone();
                async move {
                    // Token answers are small writes: no Nagle delay on our side of either hop.
                    let _ = socket.set_nodelay(true);
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let Ok(mut back) = tokio::net::TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = back.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
                }
            });
        });
        TlsFront { addr, stop }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

/// Runs an accept loop on its own single-threaded runtime until `stop` is set (and a connection
/// wakes the loop). Used by the TLS front and the CONNECT proxy.
pub(crate) fn serve_forever<F, Fut>(listener: TcpListener, stop: Arc<AtomicBool>, handle: F)
where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        if listener.set_nonblocking(true).is_err() {
            return;
        }
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                continue;
            };
            if stop.load(Ordering::SeqCst) {
                break;
            }
            tokio::task::spawn_local(handle(socket));
        }
    });
}

/// A [`FakeServer`] reached over HTTPS through a [`TlsFront`].
pub struct TlsFakeServer {
    fake: FakeServer,
    front: TlsFront,
}

impl TlsFakeServer {
    /// Starts a fake answering with `handler`, behind TLS with a certificate for `names`.
    pub fn start(
        ca: &TestCa,
        names: &[&str],
        handler: impl Fn(&RecordedRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> Self {
        let fake = FakeServer::start(handler);
        let front = TlsFront::start(ca, names, fake.addr());
        TlsFakeServer { fake, front }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.front.addr())
    }

    /// The TLS address.
    pub fn addr(&self) -> SocketAddr {
        self.front.addr()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.fake.requests()
    }
}
