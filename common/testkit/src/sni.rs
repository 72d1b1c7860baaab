//! A TLS fake that records the server name (SNI) each client asked for, for endpoints reached by
//! address but verified by name (AKS identity bindings behind the API server's address).
//!
//! Like [`super::tls::TlsFakeServer`], TLS ends here and the plaintext goes to a plain
//! [`FakeServer`] that records and answers the requests; handshakes the client broke off (an
//! untrusted certificate) are counted.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::fake::{FakeResponse, FakeServer, RecordedRequest};
use super::tls::{TestCa, serve_forever};

/// A [`FakeServer`] behind TLS, recording each handshake's server name.
pub struct SniFakeServer {
    fake: FakeServer,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    names: Arc<Mutex<Vec<Option<String>>>>,
    failed: Arc<AtomicUsize>,
}

impl SniFakeServer {
    /// Starts a fake answering with `handler`, behind TLS with a certificate for `names` issued
    /// by `ca`.
    pub fn start(
        ca: &TestCa,
        names: &[&str],
        handler: impl Fn(&RecordedRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> Self {
        let fake = FakeServer::start(handler);
        let backend = fake.addr();
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(names));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let failed = Arc::new(AtomicUsize::new(0));
        let (stopping, recording, failing) = (stop.clone(), seen.clone(), failed.clone());
        std::thread::spawn(move || {
            serve_forever(listener, stopping, move |socket| {
                let acceptor = acceptor.clone();
                let (recording, failing) = (recording.clone(), failing.clone());
                async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        failing.fetch_add(1, Ordering::SeqCst);
                        return;
                    };
                    let name = tls.get_ref().1.server_name().map(str::to_owned);
                    recording.lock().unwrap().push(name);
                    let Ok(mut back) = tokio::net::TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
                }
            });
        });
        SniFakeServer {
            fake,
            addr,
            stop,
            names: seen,
            failed,
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server name of every completed handshake, in order (`None`: no SNI sent).
    pub fn server_names(&self) -> Vec<Option<String>> {
        self.names.lock().unwrap().clone()
    }

    /// Handshakes that did not complete (the client refused the certificate, or hung up).
    pub fn failed_handshakes(&self) -> usize {
        self.failed.load(Ordering::SeqCst)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.fake.requests()
    }
}

impl Drop for SniFakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}
