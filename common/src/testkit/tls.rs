//! HTTPS for provider tests: a test CA generated at run time, and a TLS front that terminates
//! TLS for a plain [`FakeServer`](super::fake::FakeServer) behind it.
//!
//! The plugin under test trusts the CA through `SSL_CERT_FILE` (a mechanism every user has), so
//! production code keeps full certificate verification. The front forwards the decrypted bytes to
//! the plain fake, which records and answers the requests; a stalled or dropped answer there is a
//! stalled or dropped answer here.
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

/// A certificate authority that exists for one test run.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    file: PathBuf,
    _dir: TempDir,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").field("file", &self.file).finish()
    }
}

impl TestCa {
    /// Generates a CA and writes its certificate (PEM) to a temporary file.
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new())
            .unwrap_or_else(|e| panic!("CA parameters: {e}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "kcp test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
        let issuer = CertifiedIssuer::self_signed(params, key)
            .unwrap_or_else(|e| panic!("CA certificate: {e}"));
        let dir = TempDir::new("ca");
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, issuer.pem())
            .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
        TestCa {
            issuer,
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
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("server key: {e}"));
        let cert = params
            .signed_by(&key, &self.issuer)
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
    Fut: std::future::Future<Output = ()> + 'static,
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
