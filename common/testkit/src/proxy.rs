//! A local HTTP `CONNECT` proxy for provider tests: `HTTPS_PROXY=http://127.0.0.1:<port>` lets a
//! plugin reach a real-looking host such as `myreg.azurecr.io:443` at a local fake, with no DNS
//! change and no test-only code in the plugin.
//!
//! Every `CONNECT` target is recorded, routed or not, so a test can assert where a plugin tried to
//! go. Routed targets tunnel to their configured address; unrouted loopback targets
//! (`127.0.0.1`, `localhost`) tunnel to themselves; anything else is refused with `502`, so no
//! traffic ever leaves the machine.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::tls::serve_forever;

/// The running proxy; stops when dropped.
pub struct ConnectProxy {
    addr: SocketAddr,
    targets: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl ConnectProxy {
    /// Starts a proxy that tunnels each `host:port` in `routes` to its address.
    pub fn start(routes: &[(&str, SocketAddr)]) -> Self {
        let routes: Arc<Vec<(String, SocketAddr)>> = Arc::new(
            routes
                .iter()
                .map(|(t, a)| (t.to_ascii_lowercase(), *a))
                .collect(),
        );
        let listener =
            TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("binding a proxy: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("proxy address: {e}"));
        let targets = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (recorded, stopping) = (targets.clone(), stop.clone());
        std::thread::spawn(move || {
            serve_forever(listener, stopping, move |socket| {
                tunnel(socket, routes.clone(), recorded.clone())
            });
        });
        ConnectProxy {
            addr,
            targets,
            stop,
        }
    }

    /// `http://127.0.0.1:<port>`, for `HTTPS_PROXY`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every `CONNECT` target (`host:port`) asked for, in order; other methods appear as
    /// `"<METHOD> <target>"`.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

async fn tunnel(
    socket: tokio::net::TcpStream,
    routes: Arc<Vec<(String, SocketAddr)>>,
    recorded: Arc<Mutex<Vec<String>>>,
) {
    let _ = socket.set_nodelay(true);
    let mut client = BufReader::new(socket);
    let mut line = String::new();
    if client.read_line(&mut line).await.unwrap_or(0) == 0 {
        return;
    }
    // Skip the rest of the request head.
    loop {
        let mut header = String::new();
        match client.read_line(&mut header).await {
            Ok(0) | Err(_) => return,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_ascii_lowercase();
    if method != "CONNECT" {
        if let Ok(mut r) = recorded.lock() {
            r.push(format!("{method} {target}"));
        }
        let _ = client
            .get_mut()
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    if let Ok(mut r) = recorded.lock() {
        r.push(target.clone());
    }
    let host = target
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(&target)
        .trim_matches(['[', ']']);
    let destination = match routes.iter().find(|(t, _)| *t == target) {
        Some((_, addr)) => Some(addr.to_string()),
        None if host == "127.0.0.1" || host == "localhost" || host == "::1" => Some(target.clone()),
        None => None,
    };
    let backend = match destination {
        Some(d) => tokio::net::TcpStream::connect(d).await.ok(),
        None => None,
    };
    if let Some(b) = &backend {
        let _ = b.set_nodelay(true);
    }
    let Some(mut backend) = backend else {
        let _ = client
            .get_mut()
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    if client
        .get_mut()
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    // Anything the client sent early is still in the reader's buffer: pass it on first.
    let early = client.buffer().to_vec();
    if !early.is_empty() && backend.write_all(&early).await.is_err() {
        return;
    }
    let mut client = client.into_inner();
    let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
}
