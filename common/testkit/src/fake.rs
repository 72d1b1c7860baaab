//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: it records every request exactly
//! as received and answers from a closure, which can fail, stall or hang on demand.
//!
//! Plain HTTP only, one thread per connection, keep-alive supported (SDK clients reuse
//! connections). Good enough for token endpoints; not a general web server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path with query, as on the request line.
    pub target: String,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The query's parameters, in order, decoded (`+` and `%XX`).
    pub fn query(&self) -> Vec<(String, String)> {
        let query = self.target.split_once('?').map_or("", |(_, q)| q);
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }

    /// A URL-encoded body's fields, in order, decoded.
    pub fn form(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(&self.body)
            .into_owned()
            .collect()
    }
}

/// What the fake answers.
#[derive(Debug, Clone)]
pub struct FakeResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    hang: bool,
    close: bool,
}

impl FakeResponse {
    /// A response with a status and body. Secrets in a JSON body (tokens, passwords, keys) are
    /// registered for the stderr scan (see [`super::secrets`]).
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        super::secrets::register_json(&body);
        FakeResponse {
            status,
            headers: Vec::new(),
            body,
            hang: false,
            close: false,
        }
    }

    /// 200 with a JSON body and `content-type: application/json`.
    pub fn json(body: impl Into<String>) -> Self {
        FakeResponse::new(200, body.into()).header("content-type", "application/json")
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Never answers (until the server is dropped).
    pub fn hang() -> Self {
        let mut r = FakeResponse::new(0, Vec::new());
        r.hang = true;
        r
    }

    /// Closes the connection without answering.
    pub fn drop_connection() -> Self {
        let mut r = FakeResponse::new(0, Vec::new());
        r.close = true;
        r
    }
}

type Handler = dyn Fn(&RecordedRequest) -> FakeResponse + Send + Sync;

/// The running fake; stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    /// Starts a fake on a free port of 127.0.0.1 that answers with `handler`.
    pub fn start(
        handler: impl Fn(&RecordedRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("binding a fake server: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake server address: {e}"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, stopping) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, reqs, stopping) = (handler.clone(), reqs.clone(), stopping.clone());
                std::thread::spawn(move || serve(stream, &*handler, &reqs, &stopping));
            }
        });
        FakeServer {
            addr,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    stream: TcpStream,
    handler: &Handler,
    requests: &Mutex<Vec<RecordedRequest>>,
    stop: &AtomicBool,
) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        if let Ok(mut r) = requests.lock() {
            r.push(request.clone());
        }
        let response = handler(&request);
        if response.hang {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        if response.close {
            return;
        }
        let mut answer = format!(
            "HTTP/1.1 {} {}\r\ncontent-length: {}\r\n",
            response.status,
            reason(response.status),
            response.body.len()
        )
        .into_bytes();
        for (k, v) in &response.headers {
            answer.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        answer.extend_from_slice(b"\r\n");
        answer.extend_from_slice(&response.body);
        // One write: head and body in separate small writes meet Nagle's algorithm and the
        // client's delayed ACK, adding ~40 ms to every answer on loopback.
        if writer.write_all(&answer).is_err() {
            return;
        }
    }
}

/// Reads one HTTP/1.1 request (request line, headers, a `Content-Length` body) off a
/// connection; `None` when it closes or is not HTTP. Fakes that answer on their own terms (the
/// token controller's streaming API server) read requests with it too.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<RecordedRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(RecordedRequest {
        method,
        target,
        headers,
        body,
    })
}

/// The reason phrase of an HTTP status the fakes answer with.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
