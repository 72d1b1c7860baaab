//! A recording fake of the kube-apiserver endpoints the controller uses, on 127.0.0.1 over plain
//! HTTP/1.1 (keep-alive, and chunked streaming for watches).
//!
//! It follows kube-apiserver where the controller depends on it:
//! - Secrets at `/api/v1/namespaces/NS/secrets/NAME`, Leases at
//!   `/apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME`; GET answers the object, PUT
//!   replaces it whole (the name in the body must match the path: 400 otherwise); a missing
//!   object is 404 `NotFound` for both (a PUT does not create a Secret or a Lease:
//!   `AllowCreateOnUpdate` is false for both kinds);
//! - every write bumps one store-wide `resourceVersion` (as etcd's revision does), and a PUT
//!   whose `metadata.resourceVersion` is not the current one is answered 409 with a `Status`
//!   whose reason is `Conflict` and whose message is kube-apiserver's ("the object has been
//!   modified; please apply your changes to the latest version and try again"); a PUT without
//!   one is an unconditional update, which kube-apiserver allows for both kinds;
//! - a Secret whose data values add up to more than 1 MiB is refused with 422 `Invalid`, as
//!   `ValidateSecret` does (`data: Too long: must have at most 1048576 bytes`);
//! - a watch of Secrets, `GET /api/v1/namespaces/NS/secrets?watch=true&fieldSelector=...`, is
//!   allowed only with `fieldSelector=metadata.name=<the Secret>`: that is what RBAC's `watch`
//!   with `resourceNames` permits; anything else is 403 `Forbidden`, and so is every watch after
//!   [`FakeApi::refuse_watch`] (a Role without `watch`). It streams one JSON event per line,
//!   chunked: with `resourceVersion` empty or `0` an `ADDED` of the Secret as it is now, then
//!   `MODIFIED`, `DELETED` and `ADDED` as it changes; it ends after `timeoutSeconds`;
//! - anything else is 404 with a `NotFound` `Status` (other methods on the two paths: 405);
//! - scripted faults answer the Nth call of a kind and method with 401, 403, 404, 409, 422 or
//!   500 and the `Status` kube-apiserver sends for it, without touching the stored object.
//!
//! Every request is recorded as received (method, path and query, headers, body).

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcp_testkit::fake::{RecordedRequest, read_request, reason};
use serde_json::{Value, json};

use super::{LEASE, NS, SECRET, b64, unb64};

/// kube-apiserver's `MaxSecretSize`: the sum of a Secret's data values.
pub const MAX_SECRET_DATA: usize = 1024 * 1024;

pub fn secret_path() -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{SECRET}")
}

pub fn secrets_path() -> String {
    format!("/api/v1/namespaces/{NS}/secrets")
}

pub fn lease_path() -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{LEASE}")
}

/// Which object a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Secret,
    Lease,
}

#[derive(Default)]
struct State {
    objects: BTreeMap<Kind, Value>,
    revision: u64,
    counts: BTreeMap<(Kind, String), u32>,
    faults: Vec<(Kind, String, u32, u16)>,
    /// Another holder renewing the Lease: every GET finds it renewed just now.
    live_holder: Option<String>,
    /// Open watches of the Secret: each gets every event line.
    watchers: Vec<mpsc::Sender<String>>,
    /// Every watch is refused (403), as with a Role without `watch`.
    refuse_watch: bool,
    /// How many times the Secret was (re)created, for fresh uids.
    generation: u32,
}

impl State {
    /// Sends a watch event for the Secret to every open watch.
    fn broadcast(&mut self, kind: &str, object: &Value) {
        let line = json!({"type": kind, "object": object}).to_string();
        self.watchers.retain(|w| w.send(line.clone()).is_ok());
    }

    fn bump(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }
}

struct Shared {
    state: Mutex<State>,
    requests: Mutex<Vec<RecordedRequest>>,
    stop: AtomicBool,
}

/// The recording fake API server; stops when dropped.
pub struct FakeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

/// One answer: a status and a JSON body.
struct Answer {
    code: u16,
    body: String,
}

impl Answer {
    fn json(body: &Value) -> Answer {
        Answer {
            code: 200,
            body: body.to_string(),
        }
    }
}

fn status(code: u16, reason: &str, message: &str) -> Answer {
    Answer {
        code,
        body: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": message, "reason": reason, "code": code})
        .to_string(),
    }
}

fn names(kind: Kind) -> (&'static str, &'static str) {
    if kind == Kind::Secret {
        ("secrets", SECRET)
    } else {
        ("leases", LEASE)
    }
}

fn not_found(kind: Kind) -> Answer {
    let (resource, name) = names(kind);
    status(404, "NotFound", &format!("{resource} \"{name}\" not found"))
}

fn forbidden(resource: &str, verb: &str) -> Answer {
    status(
        403,
        "Forbidden",
        &format!(
            "{resource} is forbidden: User \"system:serviceaccount:{NS}:token-controller\" cannot {verb} resource \"{resource}\" in API group \"\" in the namespace \"{NS}\""
        ),
    )
}

fn too_long() -> Answer {
    status(
        422,
        "Invalid",
        &format!(
            "Secret \"{SECRET}\" is invalid: data: Too long: must have at most {MAX_SECRET_DATA} bytes"
        ),
    )
}

fn fault(code: u16, kind: Kind) -> Answer {
    let (resource, name) = names(kind);
    match code {
        401 => status(401, "Unauthorized", "Unauthorized"),
        403 => forbidden(resource, "update"),
        404 => not_found(kind),
        409 => conflict(resource, name),
        422 => too_long(),
        c => status(c, "InternalError", "Internal error occurred: injected"),
    }
}

fn conflict(resource: &str, name: &str) -> Answer {
    status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
        ),
    )
}

/// RFC 3339 with microseconds, as a Lease's MicroTime.
pub fn micro_time(unix: u64) -> String {
    let t = kcp_testkit::rfc3339(unix);
    t.replace('Z', ".000000Z")
}

/// A query string's parameters, decoded (`+` and `%XX`).
pub fn query(request: &RecordedRequest) -> BTreeMap<String, String> {
    request.query().into_iter().collect()
}

fn empty_secret(generation: u32, revision: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": SECRET, "namespace": NS, "uid": format!("uid-secret-{generation}"),
                        "resourceVersion": revision}})
}

impl FakeApi {
    /// The fake with the objects the manifests create: an empty Secret and a Lease without holder.
    pub fn start() -> FakeApi {
        let mut state = State {
            revision: 100,
            ..State::default()
        };
        state.objects.insert(Kind::Secret, empty_secret(0, "100"));
        state.objects.insert(
            Kind::Lease,
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": LEASE, "namespace": NS, "uid": "uid-lease", "resourceVersion": "100"},
                   "spec": {}}),
        );
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accepting.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        FakeApi { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap()
    }

    /// Every request so far (method, path and query, headers, body).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests for one object and method.
    pub fn calls(&self, kind: Kind, method: &str) -> Vec<RecordedRequest> {
        let path = if kind == Kind::Secret {
            secret_path()
        } else {
            lease_path()
        };
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path() == path)
            .collect()
    }

    /// The watches of Secrets asked for.
    pub fn watches(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.path() == secrets_path()
                    && query(r).get("watch").map(String::as_str) == Some("true")
            })
            .collect()
    }

    /// How many watches of the Secret are open now.
    pub fn open_watches(&self) -> usize {
        let mut s = self.state();
        s.watchers.retain(|w| w.send(String::new()).is_ok());
        s.watchers.len()
    }

    /// Answers the `nth` (1-based) `method` call on `kind` with `code`.
    pub fn fault(&self, kind: Kind, method: &str, nth: u32, code: u16) {
        self.state()
            .faults
            .push((kind, method.to_owned(), nth, code));
    }

    /// Refuses every watch (403), as a Role without `watch` does.
    pub fn refuse_watch(&self) {
        self.state().refuse_watch = true;
    }

    /// The stored object.
    pub fn object(&self, kind: Kind) -> Value {
        self.state().objects[&kind].clone()
    }

    /// Replaces part of a stored object, as another writer would (bumping its resourceVersion).
    pub fn edit(&self, kind: Kind, change: impl FnOnce(&mut Value)) {
        let mut s = self.state();
        let revision = s.bump();
        let object = s.objects.get_mut(&kind).unwrap();
        change(object);
        object["metadata"]["resourceVersion"] = json!(revision);
        let object = object.clone();
        if kind == Kind::Secret {
            s.broadcast("MODIFIED", &object);
        }
    }

    /// Deletes the Secret, as `kubectl delete` would.
    pub fn delete_secret(&self) {
        let mut s = self.state();
        let revision = s.bump();
        let mut object = s.objects.remove(&Kind::Secret).unwrap();
        object["metadata"]["resourceVersion"] = json!(revision);
        s.broadcast("DELETED", &object);
    }

    /// Creates the Secret again, empty, as re-applying the manifests would.
    pub fn recreate_secret(&self) {
        let mut s = self.state();
        let revision = s.bump();
        s.generation += 1;
        let object = empty_secret(s.generation, &revision);
        s.objects.insert(Kind::Secret, object.clone());
        s.broadcast("ADDED", &object);
    }

    /// Whether the Secret exists.
    pub fn secret_exists(&self) -> bool {
        self.state().objects.contains_key(&Kind::Secret)
    }

    /// The Secret's data, decoded (empty when it has none or does not exist).
    pub fn secret_data(&self) -> BTreeMap<String, Vec<u8>> {
        let Some(secret) = self.state().objects.get(&Kind::Secret).cloned() else {
            return BTreeMap::new();
        };
        secret["data"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        // The published bytes, base64 as the Secret carries them: never in a log.
                        kcp_testkit::secrets::register(v.as_str().unwrap());
                        (k.clone(), unb64(v.as_str().unwrap()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Puts entries into the Secret as another writer would.
    pub fn set_secret_data(&self, data: &BTreeMap<String, Vec<u8>>) {
        let encoded: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.clone(), json!(b64(v))))
            .collect();
        self.edit(Kind::Secret, |s| s["data"] = Value::Object(encoded));
    }

    /// The Lease's spec.
    pub fn lease_spec(&self) -> Value {
        self.object(Kind::Lease)["spec"].clone()
    }

    /// Another holder that renews the Lease (every GET finds it renewed just now), or none.
    pub fn live_holder(&self, holder: Option<&str>) {
        self.state().live_holder = holder.map(str::to_owned);
    }

    /// The kubeconfig a client uses to reach this fake.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\nusers:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {NS}\ncurrent-context: fake\n",
                self.url()
            ),
        )
        .unwrap();
        path
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        shared.requests.lock().unwrap().push(request.clone());
        if request.path() == secrets_path()
            && query(&request).get("watch").map(String::as_str) == Some("true")
        {
            watch(&mut writer, shared, &request);
            return;
        }
        let answer = handle(&shared.state, &request);
        if write_answer(&mut writer, &answer).is_err() {
            return;
        }
    }
}

fn write_answer(writer: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    // One write: head and body in separate small writes meet Nagle's algorithm and the client's
    // delayed ACK.
    let text = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        answer.code,
        reason(answer.code),
        answer.body.len(),
        answer.body
    );
    writer.write_all(text.as_bytes())
}

fn chunk(writer: &mut TcpStream, line: &str) -> std::io::Result<()> {
    let data = format!("{line}\n");
    writer.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
}

/// A watch of the Secret: checked as RBAC would, then one event per change until it times out,
/// the client goes away or the fake stops.
fn watch(writer: &mut TcpStream, shared: &Shared, request: &RecordedRequest) {
    let q = query(request);
    let allowed = q.get("fieldSelector") == Some(&format!("metadata.name={SECRET}"));
    let (tx, rx) = mpsc::channel();
    let initial = {
        let mut s = shared.state.lock().unwrap();
        if s.refuse_watch || !allowed {
            drop(s);
            let _ = write_answer(writer, &forbidden("secrets", "watch"));
            return;
        }
        s.watchers.push(tx);
        let rv = q.get("resourceVersion").map(String::as_str).unwrap_or("");
        let current = s.objects.get(&Kind::Secret).cloned();
        match current {
            Some(object) if rv.is_empty() || rv == "0" => Some(("ADDED", object)),
            Some(object)
                if rv.parse::<u64>().ok()
                    < object["metadata"]["resourceVersion"]
                        .as_str()
                        .and_then(|v| v.parse().ok()) =>
            {
                Some(("MODIFIED", object))
            }
            _ => None,
        }
    };
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    if writer.write_all(head.as_bytes()).is_err() {
        return;
    }
    if let Some((kind, object)) = initial {
        let line = json!({"type": kind, "object": object}).to_string();
        if chunk(writer, &line).is_err() {
            return;
        }
    }
    let seconds = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(290);
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end && !shared.stop.load(Ordering::SeqCst) {
        match rx.recv_timeout(Duration::from_millis(50)) {
            // The empty line is open_watches' probe, not an event.
            Ok(line) if line.is_empty() => {}
            Ok(line) => {
                if chunk(writer, &line).is_err() {
                    return;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
    let _ = writer.write_all(b"0\r\n\r\n");
}

fn handle(state: &Mutex<State>, request: &RecordedRequest) -> Answer {
    let kind = if request.path() == secret_path() {
        Kind::Secret
    } else if request.path() == lease_path() {
        Kind::Lease
    } else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let mut s = state.lock().unwrap();
    let count = {
        let c = s.counts.entry((kind, request.method.clone())).or_insert(0);
        *c += 1;
        *c
    };
    if let Some(&(_, _, _, code)) = s
        .faults
        .iter()
        .find(|(k, m, n, _)| *k == kind && *m == request.method && *n == count)
    {
        return fault(code, kind);
    }
    if !s.objects.contains_key(&kind) && ["GET", "PUT"].contains(&request.method.as_str()) {
        return not_found(kind);
    }
    match request.method.as_str() {
        "GET" => {
            if kind == Kind::Lease
                && let Some(holder) = s.live_holder.clone()
            {
                let revision = s.bump();
                let now = micro_time(kcp_testkit::unix_now());
                let lease = s.objects.get_mut(&Kind::Lease).unwrap();
                lease["spec"]["holderIdentity"] = json!(holder);
                lease["spec"]["leaseDurationSeconds"] = json!(15);
                lease["spec"]["renewTime"] = json!(now);
                lease["metadata"]["resourceVersion"] = json!(revision);
            }
            Answer::json(&s.objects[&kind])
        }
        "PUT" => put(&mut s, kind, request),
        _ => status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ),
    }
}

fn put(s: &mut State, kind: Kind, request: &RecordedRequest) -> Answer {
    let (resource, name) = names(kind);
    let Ok(mut body) = serde_json::from_slice::<Value>(&request.body) else {
        return status(400, "BadRequest", "the body is not JSON");
    };
    if body["metadata"]["name"] != json!(name) {
        return status(
            400,
            "BadRequest",
            "the name of the object does not match the name on the URL",
        );
    }
    let current = s.objects[&kind]["metadata"]["resourceVersion"].clone();
    let sent = &body["metadata"]["resourceVersion"];
    if !sent.is_null() && *sent != current {
        return conflict(resource, name);
    }
    if kind == Kind::Secret {
        let size: usize = body["data"]
            .as_object()
            .map(|m| {
                m.values()
                    .filter_map(Value::as_str)
                    .map(|v| unb64(v).len())
                    .sum()
            })
            .unwrap_or(0);
        if size > MAX_SECRET_DATA {
            return too_long();
        }
    }
    body["metadata"]["resourceVersion"] = json!(s.bump());
    body["metadata"]["uid"] = s.objects[&kind]["metadata"]["uid"].clone();
    s.objects.insert(kind, body.clone());
    if kind == Kind::Secret {
        s.broadcast("MODIFIED", &body);
    }
    Answer::json(&body)
}
