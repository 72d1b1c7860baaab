//! One Alibaba Cloud OpenAPI call: signed (or anonymous), retried, its error answer read.
//!
//! Every attempt is signed afresh (`sign`): a new `x-acs-signature-nonce` (the server refuses
//! one it has seen) and a new `x-acs-date`, so the loop is [`kcp_plugin::retry::retry`] over
//! [`HttpClient::fetch`] rather than `send_retrying` with fixed headers. Retried: connection
//! errors and timeouts, HTTP 429 and 5xx, and error answers whose `Code` says the same thing
//! with another status (Alibaba throttles with `Throttling.User` and HTTP 400).
//!
//! Error answers come in two spellings: RPC and V3 (`{"RequestId","HostId","Code","Message",
//! "Recommend"}`) and ROA (`{"code","message","requestId"}`); both are read. The `Message` is
//! the server's text and untrusted: it reaches the one stderr line only as one line, cut short,
//! with every known secret and every token-like run redacted. The parsers of answers (`metadata`,
//! `sts`, `cr`) share the helpers at the end, whose errors name fields and never quote values.

use std::cell::Cell;
use std::fmt;
use std::time::SystemTime;

use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{CallError, HttpClient, HttpError, HttpResponse, Route, redact_token_like};
use kcp_plugin::retry::{Retry, RetryPolicy, retry};
use reqwest::Method;
use serde_json::{Map, Value};
use url::Url;

use crate::credentials::AccessKey;
use crate::sign;

/// The `content-type` of a form body.
pub const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// Most characters of a server's `Message` kept in an error line.
pub const MAX_MESSAGE_CHARS: usize = 200;

/// One API call: which endpoint, which action, which parameters.
#[derive(Debug, Clone)]
pub struct ApiCall<'a> {
    /// The service endpoint (`https://cr.cn-hangzhou.aliyuncs.com`, a loopback fake in tests).
    pub endpoint: &'a Url,
    /// `GET` or `POST`.
    pub method: &'a str,
    /// `/` (RPC style) or the ROA path (`/tokens`).
    pub path: &'a str,
    /// `x-acs-action`.
    pub action: &'a str,
    /// `x-acs-version`.
    pub version: &'a str,
    /// Query parameters (RPC style), unencoded. May hold a secret (`OIDCToken`): never logged.
    pub query: &'a [(&'a str, &'a str)],
    /// Form parameters sent as an `application/x-www-form-urlencoded` body (empty: no body).
    /// Secrets (`OIDCToken`) go here, never in the URL.
    pub form: &'a [(&'a str, &'a str)],
    /// What the call is, for messages ("cr GetAuthorizationToken for instance cri-…").
    pub what: &'a str,
}

/// Why a call failed; its `Display` is one line naming the call and what to check, and never
/// holds a secret.
#[derive(Debug)]
pub enum ApiError {
    /// The service answered with an error (or a 2xx saying it failed: Container Registry's
    /// `IsSuccess: false`). The operator needs the code and message to act, and the request ID
    /// to open a ticket; all three are the server's text, checked and redacted on the way in.
    Answer {
        /// The call, as [`ApiCall::what`].
        what: String,
        /// The HTTP status.
        status: u16,
        /// `Code`/`code`, when the server sent one that looks like a code.
        code: Option<String>,
        /// `Message`/`message`: one line, cut to [`MAX_MESSAGE_CHARS`], redacted; may be empty.
        message: String,
        /// `RequestId`/`requestId`, when it looks like one.
        request_id: Option<String>,
        /// Attempts made (a retried throttling answer says how long we tried).
        attempts: u32,
        /// What to check, when the code is one we know.
        hint: Option<&'static str>,
    },
    /// No answer: the connection, TLS, a timeout, the deadline, the body cap.
    Http {
        /// The call, as [`ApiCall::what`].
        what: String,
        /// The last attempt's failure and the number of attempts.
        error: CallError,
    },
    /// A 2xx answer that is not what the API documents: not JSON, or a field missing or of the
    /// wrong type. `why` names the field, never its value.
    Malformed {
        /// The call, as [`ApiCall::what`].
        what: String,
        /// Which field and what is wrong with it.
        why: String,
    },
    /// The call could not be built (an endpoint that cannot carry a path): a configuration
    /// error caught before anything is sent.
    Endpoint {
        /// The call, as [`ApiCall::what`].
        what: String,
        /// What is wrong with the endpoint.
        why: String,
    },
}

impl ApiError {
    /// The API's error code (`Code` of the error answer), when the server sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ApiError::Answer { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status of the answer, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Answer { status, .. } => Some(*status),
            ApiError::Http { error, .. } => error.status(),
            _ => None,
        }
    }

    /// The same error naming the call as `what` (a parser names the answer generically; its
    /// caller knows the instance or name).
    pub fn with_what(mut self, what: &str) -> Self {
        match &mut self {
            ApiError::Answer { what: slot, .. }
            | ApiError::Http { what: slot, .. }
            | ApiError::Malformed { what: slot, .. }
            | ApiError::Endpoint { what: slot, .. } => *slot = what.to_owned(),
        }
        self
    }

    /// Replaces the hint of an error answer by the one `hint` knows for its code, if any: each
    /// service knows what its own codes mean for the operator.
    pub fn with_hint(mut self, hint: impl Fn(&str) -> Option<&'static str>) -> Self {
        if let ApiError::Answer {
            code: Some(code),
            hint: slot,
            ..
        } = &mut self
            && let Some(found) = hint(code)
        {
            *slot = Some(found);
        }
        self
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Answer {
                what,
                status,
                code,
                message,
                request_id,
                attempts,
                hint,
            } => {
                write!(f, "{what} failed: HTTP {status}")?;
                if let Some(code) = code {
                    write!(f, " {code}")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                if let Some(id) = request_id {
                    write!(f, " (request ID {id})")?;
                }
                if *attempts > 1 {
                    write!(f, " (after {attempts} attempts)")?;
                }
                if let Some(hint) = hint {
                    write!(f, "; {hint}")?;
                }
                Ok(())
            }
            ApiError::Http { what, error } => {
                write!(f, "{what} failed: {}", error.error.describe())?;
                if error.attempts > 1 {
                    write!(f, " (after {} attempts)", error.attempts)?;
                }
                Ok(())
            }
            ApiError::Malformed { what, why } => {
                write!(f, "{what} failed: malformed answer: {why}")
            }
            ApiError::Endpoint { what, why } => write!(f, "{what} failed: {why}"),
        }
    }
}

impl std::error::Error for ApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApiError::Http { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Sends `call`, signed with `key` (anonymous with `None`), re-signed on each retry; the 2xx
/// answer (its body, and its `Date`, the issuer's clock for expiries it states).
pub async fn send(
    http: &HttpClient,
    call: &ApiCall<'_>,
    key: Option<&AccessKey>,
    deadline: Deadline,
) -> Result<HttpResponse, ApiError> {
    send_with(http, call, key, deadline, RetryPolicy::DEFAULT).await
}

/// An attempt that is not a 2xx.
enum Miss {
    /// An answer another try may get past.
    Transient(HttpResponse),
    /// An answer that is final.
    Final(HttpResponse),
    /// No answer.
    Failed(HttpError),
}

/// What every attempt of one call sends: built once, signed anew each time.
struct Prepared {
    url: Url,
    host: String,
    method: Method,
    body: Vec<u8>,
    content_type: Option<&'static str>,
}

impl Prepared {
    /// The URL, `Host`, method and body of `call`, or why its endpoint cannot be used.
    fn new(call: &ApiCall<'_>) -> Result<Prepared, ApiError> {
        let endpoint_error = |why: String| ApiError::Endpoint {
            what: call.what.to_owned(),
            why,
        };
        let url = request_url(call).map_err(endpoint_error)?;
        let host = host_header(&url).map_err(endpoint_error)?;
        let method = Method::from_bytes(call.method.as_bytes())
            .map_err(|_| endpoint_error(format!("{:?} is not an HTTP method", call.method)))?;
        Ok(Prepared {
            url,
            host,
            method,
            body: form_body(call.form),
            content_type: (!call.form.is_empty()).then_some(FORM_CONTENT_TYPE),
        })
    }

    /// One attempt, with a fresh date and nonce (a replayed nonce is refused).
    async fn attempt(
        &self,
        http: &HttpClient,
        call: &ApiCall<'_>,
        key: Option<&AccessKey>,
        deadline: Deadline,
    ) -> Result<HttpResponse, Miss> {
        let signed = sign::headers(
            &sign::Request {
                method: self.method.as_str(),
                host: &self.host,
                path: call.path,
                query: call.query,
                action: call.action,
                version: call.version,
                body: &self.body,
                content_type: self.content_type,
            },
            key,
            SystemTime::now(),
            &sign::nonce(),
        );
        let headers: Vec<(&str, &str)> = signed
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let sent = (!self.body.is_empty()).then(|| self.body.clone());
        match http
            .fetch(
                Route::Internet,
                self.method.clone(),
                &self.url,
                &headers,
                sent,
                deadline,
            )
            .await
        {
            Ok(answer) if (200..300).contains(&answer.status) => Ok(answer),
            Ok(answer) if is_transient(answer.status, &answer.body) => Err(Miss::Transient(answer)),
            Ok(answer) => Err(Miss::Final(answer)),
            Err(error) => Err(Miss::Failed(error)),
        }
    }
}

/// [`send`] under `policy` (tests use short waits).
pub(crate) async fn send_with(
    http: &HttpClient,
    call: &ApiCall<'_>,
    key: Option<&AccessKey>,
    deadline: Deadline,
    policy: RetryPolicy,
) -> Result<HttpResponse, ApiError> {
    let prepared = Prepared::new(call)?;
    let attempts = Cell::new(0);
    let result = retry(
        policy,
        deadline,
        |miss: &Miss| match miss {
            Miss::Transient(_) => Retry::Transient,
            Miss::Final(_) => Retry::Permanent,
            Miss::Failed(error) if error.is_transient() => Retry::Transient,
            Miss::Failed(_) => Retry::Permanent,
        },
        |attempt, miss, wait| {
            let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
            let line = match miss {
                Miss::Transient(answer) | Miss::Final(answer) => {
                    error_answer(call.what, answer.status, &answer.body).to_string()
                }
                Miss::Failed(error) => format!("{} failed: {}", call.what, error.describe()),
            };
            // Info, not warn: on success nobody needs it, on failure the final error counts
            // the attempts.
            tracing::info!(attempt, wait_ms, "{line}; retrying");
        },
        |attempt| {
            attempts.set(attempt);
            prepared.attempt(http, call, key, deadline)
        },
    )
    .await;
    match result {
        Ok(answer) => Ok(answer),
        Err(Miss::Transient(answer) | Miss::Final(answer)) => {
            let mut error = error_answer(call.what, answer.status, &answer.body);
            if let ApiError::Answer { attempts: n, .. } = &mut error {
                *n = attempts.get();
            }
            Err(error)
        }
        Err(Miss::Failed(error)) => Err(ApiError::Http {
            what: call.what.to_owned(),
            error: CallError {
                error,
                attempts: attempts.get(),
            },
        }),
    }
}

/// The URL sent: the endpoint's scheme, host and port, `call.path` and the query, both encoded
/// exactly as the signature encodes them.
fn request_url(call: &ApiCall<'_>) -> Result<Url, String> {
    let mut url = call.endpoint.clone();
    if url.cannot_be_a_base() || url.host_str().is_none() {
        return Err("the endpoint is not an http(s) URL with a host".to_owned());
    }
    url.set_path(&sign::canonical_uri(call.path));
    let query = sign::canonical_query(call.query);
    url.set_query((!query.is_empty()).then_some(query.as_str()));
    url.set_fragment(None);
    Ok(url)
}

/// The `host` header: the host, and the port when it is not the scheme's default.
fn host_header(url: &Url) -> Result<String, String> {
    let host = url
        .host_str()
        .ok_or_else(|| "the endpoint has no host".to_owned())?;
    Ok(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// A form body, encoded as the signature encodes a query (RFC 3986, `%20` for a space).
fn form_body(form: &[(&str, &str)]) -> Vec<u8> {
    form.iter()
        .map(|(name, value)| {
            format!(
                "{}={}",
                sign::percent_encode(name),
                sign::percent_encode(value)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
        .into_bytes()
}

/// Whether another attempt may get past this answer: 429 and 5xx, and the codes that mean the
/// same with another status: throttling (`Throttling`, `Throttling.User`, `Throttling.Api`,
/// sent with 400), `ServiceUnavailable*`, `InternalError*`, and `SignatureNonceUsed` (a fresh
/// nonce is drawn for the next attempt).
pub fn is_transient(status: u16, body: &[u8]) -> bool {
    if status == 429 || status >= 500 {
        return true;
    }
    let Some((Some(code), _, _)) = error_fields(body) else {
        return false;
    };
    code.starts_with("Throttling")
        || code.starts_with("ServiceUnavailable")
        || code.starts_with("InternalError")
        || code == "SignatureNonceUsed"
}

/// The error for a non-2xx answer (or a 2xx saying it failed): its code, message and request ID
/// in either spelling, checked and redacted; a body that is not an error document becomes a
/// short redacted excerpt. A hint is attached for the codes every service shares.
pub fn error_answer(what: &str, status: u16, body: &[u8]) -> ApiError {
    let (code, message, request_id) = match error_fields(body) {
        Some((code, message, request_id)) => (
            code,
            message.as_deref().map(clean_message).unwrap_or_default(),
            request_id,
        ),
        // JSON but no object: nothing of it is quoted (a value may be a secret).
        None if serde_json::from_slice::<Value>(body).is_ok() => (None, String::new(), None),
        // Not JSON (a proxy's page, an empty body): a short excerpt. Of a JSON object only the
        // three fields above are ever quoted.
        None => (None, clean_message(&String::from_utf8_lossy(body)), None),
    };
    let hint = code.as_deref().and_then(common_hint);
    ApiError::Answer {
        what: what.to_owned(),
        status,
        code,
        message,
        request_id,
        attempts: 1,
        hint,
    }
}

/// The fields of an error document that are quoted: `Code`, `Message` and `RequestId`, in
/// either spelling. A code or request ID that does not look like one is dropped (it is quoted
/// in the error line, so it must be plain); the message is raw. `None` when the body is not a
/// JSON object.
type ErrorFields = (Option<String>, Option<String>, Option<String>);

/// The [`ErrorFields`] of `body`.
fn error_fields(body: &[u8]) -> Option<ErrorFields> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let text = |names: [&str; 2]| {
        names
            .iter()
            .find_map(|name| map.get(*name).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let code = text(["Code", "code"]).and_then(|c| clean_code(&c));
    let message = text(["Message", "message"]);
    let request_id = text(["RequestId", "requestId"]).and_then(|id| clean_request_id(&id));
    Some((code, message, request_id))
}

/// A code as the error line quotes it: 1 to 64 characters of `A-Z a-z 0-9 . _ : -`, runs that
/// look like tokens redacted; anything else is not a code.
pub(crate) fn clean_code(raw: &str) -> Option<String> {
    let code = raw.trim();
    let shaped = (1..=64).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    shaped.then(|| redact_token_like(code))
}

/// A request ID as the error line quotes it: 1 to 64 characters of `A-Z a-z 0-9 _ -` (a UUID),
/// runs that look like tokens redacted.
fn clean_request_id(raw: &str) -> Option<String> {
    let id = raw.trim();
    let shaped = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    shaped.then(|| redact_token_like(id))
}

/// A server's message as the error line quotes it: every known secret redacted, one line,
/// token-like runs redacted, cut to [`MAX_MESSAGE_CHARS`].
fn clean_message(raw: &str) -> String {
    let known = kcp_kubelet::secret::redact_known(raw);
    let line = redact_token_like(&kcp_plugin::logging::one_line(&known));
    match line.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// What to check for the codes every Alibaba Cloud API shares.
fn common_hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "SignatureDoesNotMatch" | "IncompleteSignature" => {
            "check that the AccessKeySecret belongs to the AccessKeyId"
        }
        "InvalidAccessKeyId.NotFound" | "InvalidAccessKeyId" => {
            "the AccessKeyId does not exist: check ALIBABA_CLOUD_ACCESS_KEY_ID"
        }
        "InvalidAccessKeyId.Inactive" => "the AccessKey is disabled: enable it or use another",
        "InvalidTimeStamp.Expired" => {
            "the node's clock is off by more than 15 minutes: check its time synchronisation"
        }
        c if c.starts_with("InvalidSecurityToken") => {
            "the STS security token is invalid or expired: fresh credentials are needed"
        }
        c if c.starts_with("Throttling") => {
            "the API throttled this account: fewer calls help (--token-cache)"
        }
        _ => return None,
    })
}

// The parsers' shared vocabulary. Errors name the field and one of these problems, and never a
// value: a value may be the secret itself.

/// The field is absent (or `null`).
pub(crate) const MISSING: &str = "is missing";
/// The field is an empty string.
pub(crate) const EMPTY: &str = "is empty";
/// The field is not a string.
pub(crate) const NOT_STRING: &str = "is not a string";
/// The field is not an object.
pub(crate) const NOT_OBJECT: &str = "is not an object";
/// The field is not an array.
pub(crate) const NOT_ARRAY: &str = "is not an array";
/// The field is not a number.
pub(crate) const NOT_NUMBER: &str = "is not a whole number";
/// The field is not an RFC 3339 time.
pub(crate) const NOT_TIME: &str = "is not an RFC 3339 time";
/// The field is not milliseconds since the epoch.
pub(crate) const NOT_MILLIS: &str = "is not a time in milliseconds since the epoch";
/// The time has passed.
pub(crate) const PAST: &str = "is already past";
/// The body is not JSON.
pub(crate) const NOT_JSON: &str = "the body is not a JSON object";

/// Every fixed phrase of [`ApiError`]'s lines and the parsers' `why`s, for the fuzz bodies'
/// "quotes no value" check.
#[cfg(any(fuzzing, test))]
pub(crate) const PHRASES: &[&str] = &[
    MISSING,
    EMPTY,
    NOT_STRING,
    NOT_OBJECT,
    NOT_ARRAY,
    NOT_NUMBER,
    NOT_TIME,
    NOT_MILLIS,
    PAST,
    NOT_JSON,
    " failed: malformed answer: ",
    " failed: HTTP ",
    " (request ID ",
    " bytes)",
];

/// A [`ApiError::Malformed`] naming `field` and its `problem`.
pub(crate) fn malformed(what: &str, field: &str, problem: &str) -> ApiError {
    ApiError::Malformed {
        what: what.to_owned(),
        why: format!("{field} {problem}"),
    }
}

/// The body as a JSON object; otherwise [`ApiError::Malformed`] with its length only.
pub(crate) fn json_object(what: &str, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(ApiError::Malformed {
            what: what.to_owned(),
            why: format!("{NOT_JSON} ({} bytes)", body.len()),
        }),
    }
}

/// The non-empty string `field` of `map`.
pub(crate) fn required_str<'m>(
    map: &'m Map<String, Value>,
    what: &str,
    field: &str,
) -> Result<&'m str, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(malformed(what, field, MISSING)),
        Some(Value::String(s)) if s.trim().is_empty() => Err(malformed(what, field, EMPTY)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(malformed(what, field, NOT_STRING)),
    }
}

/// The object `field` of `map`.
pub(crate) fn required_object<'m>(
    map: &'m Map<String, Value>,
    what: &str,
    field: &str,
) -> Result<&'m Map<String, Value>, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(malformed(what, field, MISSING)),
        Some(Value::Object(inner)) => Ok(inner),
        Some(_) => Err(malformed(what, field, NOT_OBJECT)),
    }
}

/// A whole non-negative number written as a JSON number (integer, or a float without a
/// fraction) or as a string of digits: Alibaba's `Long`s arrive both ways.
pub(crate) fn whole_number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            let f = n.as_f64()?;
            // 2^63: any larger float is no time we can represent anyway.
            (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 9.223_372_036_854_776e18)
                .then_some(f as u64)
        }),
        Value::String(s)
            if !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

/// The time `field` holds in milliseconds since the epoch, past or future: an expiry by the
/// issuer's clock, which only the caller can compare with the node's (`Date` of the answer).
pub(crate) fn millis(
    map: &Map<String, Value>,
    what: &str,
    field: &str,
) -> Result<SystemTime, ApiError> {
    let value = match map.get(field) {
        None | Some(Value::Null) => return Err(malformed(what, field, MISSING)),
        Some(value) => value,
    };
    whole_number(value)
        .and_then(|ms| SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms)))
        .ok_or_else(|| malformed(what, field, NOT_MILLIS))
}

/// The RFC 3339 time `field` holds, which must be after `now`.
pub(crate) fn future_rfc3339(
    map: &Map<String, Value>,
    what: &str,
    field: &str,
    now: SystemTime,
) -> Result<SystemTime, ApiError> {
    let text = required_str(map, what, field)?;
    let at = kcp_plugin::time::parse_rfc3339(text.trim())
        .ok_or_else(|| malformed(what, field, NOT_TIME))?;
    if at <= now {
        return Err(malformed(what, field, PAST));
    }
    Ok(at)
}

#[cfg(test)]
pub(crate) mod tests;
