//! The bodies of the Alibaba fuzz target `fuzz/fuzz_targets/alibaba_answers.rs`, kept here so
//! that a stable `cargo test` (`src/fuzz_smoke.rs`) runs the same checks over the seed corpus and
//! mutations of it when no nightly toolchain is around. Built only for cargo-fuzz
//! (`--cfg fuzzing`) and unit tests: no release binary has it.
//!
//! One target drives every parser of outside input: the first byte picks the parser (`M`
//! metadata credentials, `S` STS answer, `E` Enterprise login, `P` Personal Edition login, `L`
//! a `ListInstance` page, `X` an error answer; any other byte by its value modulo 6), the rest
//! is the answer's body. Each body panics when an invariant breaks, not only when the code under
//! test panics.
//!
//! The invariants:
//! - nothing panics;
//! - what parses reads back the input: ids, user names, secrets and tokens are the answer's
//!   own (trimmed), and every expiry is after the moment of receipt;
//! - an error is one non-empty line, holds no run that looks like a token (40+ token
//!   characters) and never a secret this process remembers (a planted one is registered first);
//! - an error quotes no string value of the input of 8 characters or more, with one exception
//!   made on purpose: what the server wrote for the operator, the top-level `Code`/`code`,
//!   `Message`/`message` and `RequestId`/`requestId`. A value is exempt only when it is part of
//!   one of those three (so a secret elsewhere in the answer, say the `AccessKeySecret` next to
//!   a refusing `Code`, is still caught), and a message is quoted only redacted and cut short.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::{api, cr, metadata, sts};

/// A fuzz target body: arbitrary bytes in, a panic when an invariant breaks.
pub type Body = fn(&[u8]);

/// Every Alibaba target: its name (the `fuzz/fuzz_targets/<name>.rs` file and
/// `fuzz/corpus/<name>/` directory) and its body.
pub const TARGETS: &[(&str, Body)] = &[("alibaba_answers", answers)];

/// A secret remembered before every input: no error line may carry it, wherever the input puts
/// it (seeds put it in a `Message`). Slashes keep it out of reach of the token-run heuristic, so
/// only the exact redaction can hide it.
pub const PLANTED: &str = "planted/fuzz/secret/0123";

/// The instance name the `ListInstance` body looks for.
pub const INSTANCE_NAME: &str = "prod-registry";

/// The moment every answer is received at: 2027-01-15T08:00:00Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The target: the first byte picks the parser, the rest is its input.
pub fn answers(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    kcp_kubelet::secret::remember(PLANTED);
    let bodies: [Body; 6] = [
        metadata_credentials,
        sts_answer,
        enterprise_login,
        personal_login,
        instance_page,
        error_answer,
    ];
    let index = match selector {
        b'M' => 0,
        b'S' => 1,
        b'E' => 2,
        b'P' => 3,
        b'L' => 4,
        b'X' => 5,
        other => usize::from(other) % bodies.len(),
    };
    bodies[index](body);
}

/// The metadata server's credentials answer ([`metadata::parse_role_credentials`]).
pub fn metadata_credentials(data: &[u8]) {
    let now = now();
    match metadata::parse_role_credentials(data, now) {
        Ok(key) => {
            let map = object_of(data);
            assert_eq!(text(&map, "Code"), Some("Success"));
            assert_eq!(
                text(&map, "AccessKeyId").map(str::trim),
                Some(key.id.as_str())
            );
            assert!(!key.id.is_empty());
            assert_eq!(text(&map, "AccessKeySecret"), Some(key.secret.expose()));
            let token = key.security_token.as_ref().map(|t| t.expose());
            assert_eq!(text(&map, "SecurityToken"), token);
            assert!(key.expiration.is_some_and(|at| at > now));
        }
        Err(e) => check_error(&e.to_string(), data),
    }
}

/// `AssumeRoleWithOIDC`'s answer ([`sts::parse_answer`]).
pub fn sts_answer(data: &[u8]) {
    let now = now();
    match sts::parse_answer(data, now) {
        Ok(key) => {
            let map = object_of(data);
            let credentials = match map.get("Credentials") {
                Some(Value::Object(c)) => c.clone(),
                other => panic!("parsed without Credentials: {other:?}"),
            };
            assert_eq!(
                text(&credentials, "AccessKeyId").map(str::trim),
                Some(key.id.as_str())
            );
            assert_eq!(
                text(&credentials, "AccessKeySecret"),
                Some(key.secret.expose())
            );
            let token = key.security_token.as_ref().map(|t| t.expose());
            assert_eq!(text(&credentials, "SecurityToken"), token);
            assert!(key.expiration.is_some_and(|at| at > now));
        }
        Err(e) => check_error(&e.to_string(), data),
    }
}

/// The Enterprise `GetAuthorizationToken` answer ([`cr::parse_enterprise_login`]).
pub fn enterprise_login(data: &[u8]) {
    match cr::parse_enterprise_login(data) {
        Ok(login) => {
            let map = object_of(data);
            assert_ne!(map.get("IsSuccess"), Some(&Value::Bool(false)));
            check_login(&login, &map, ("TempUsername", "AuthorizationToken"));
        }
        Err(e) => check_error(&e.to_string(), data),
    }
}

/// The Personal Edition's `GetAuthorizationToken` answer ([`cr::parse_personal_login`]).
pub fn personal_login(data: &[u8]) {
    match cr::parse_personal_login(data) {
        Ok(login) => {
            let map = object_of(data);
            let inner = match map.get("data") {
                Some(Value::Object(inner)) => inner.clone(),
                other => panic!("parsed without data: {other:?}"),
            };
            check_login(&login, &inner, ("tempUserName", "authorizationToken"));
        }
        Err(e) => check_error(&e.to_string(), data),
    }
}

/// A parsed login is the answer's: the user name of `fields` (trimmed, not empty), its password,
/// and no issuer clock: the registry's clock is the caller's to apply (the answer's `Date`).
fn check_login(
    login: &cr::RegistryLogin,
    fields: &Map<String, Value>,
    (user, password): (&str, &str),
) {
    assert_eq!(
        text(fields, user).map(str::trim),
        Some(login.username.as_str())
    );
    assert!(!login.username.is_empty());
    assert_eq!(text(fields, password), Some(login.password.expose()));
    assert_eq!(login.issuer_now, None);
}

/// A `ListInstance` page ([`cr::parse_instance_page`]): the match is the first entry named
/// exactly [`INSTANCE_NAME`], never a loose one, with its own ID and region.
pub fn instance_page(data: &[u8]) {
    match cr::parse_instance_page(data, INSTANCE_NAME) {
        Ok(page) => {
            let map = object_of(data);
            let entries = match map.get("Instances") {
                Some(Value::Array(items)) => items.clone(),
                _ => Vec::new(),
            };
            assert_eq!(page.entries, entries.len());
            let first = entries.iter().find_map(|entry| match entry {
                Value::Object(o) if text(o, "InstanceName") == Some(INSTANCE_NAME) => Some(o),
                _ => None,
            });
            match (&page.found, first) {
                (None, None) => {}
                (Some(found), Some(entry)) => {
                    assert_eq!(found.name, INSTANCE_NAME);
                    assert_eq!(
                        text(entry, "InstanceId").map(str::trim),
                        Some(found.id.as_str())
                    );
                    assert_eq!(
                        text(entry, "RegionId").map(str::trim),
                        Some(found.region.as_str())
                    );
                    assert!(!found.id.is_empty() && !found.region.is_empty());
                }
                (found, entry) => panic!("found {found:?} for entry {entry:?}"),
            }
        }
        Err(e) => check_error(&e.to_string(), data),
    }
}

/// An error answer in either spelling ([`api::error_answer`], [`api::is_transient`]): the code
/// quoted is code-shaped, the message at most [`api::MAX_MESSAGE_CHARS`] characters.
pub fn error_answer(data: &[u8]) {
    for status in [400, 404, 503] {
        let _ = api::is_transient(status, data);
        let error = api::error_answer("cr GetAuthorizationToken", status, data);
        if let Some(code) = error.code() {
            assert!((1..=64).contains(&code.len()), "{code:?}");
        }
        if let api::ApiError::Answer { message, .. } = &error {
            assert!(message.chars().count() <= api::MAX_MESSAGE_CHARS + 1);
        }
        check_error(&error.to_string(), data);
    }
}

/// The input's top-level JSON object (empty when it is none).
fn object_of(data: &[u8]) -> Map<String, Value> {
    match serde_json::from_slice(data) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The string `field` of `map`.
fn text<'m>(map: &'m Map<String, Value>, field: &str) -> Option<&'m str> {
    map.get(field).and_then(Value::as_str)
}

/// Every string value (not keys) in a JSON value.
fn strings_of(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// The fixed words of every error line these parsers give: the calls' names, the fields
/// named, the problems and the phrases around them.
fn phrases() -> Vec<&'static str> {
    let mut words = vec![
        metadata::CREDENTIALS_WHAT,
        metadata::NOT_CODE,
        metadata::NOT_REGION,
        "the ECS metadata server refused the RAM role credentials: Code ",
        "; check the instance's RAM role",
        sts::WHAT,
        cr::ENTERPRISE_WHAT,
        cr::PERSONAL_WHAT,
        cr::LIST_WHAT,
        "an entry of Instances",
        "AccessKeyId",
        "AccessKeySecret",
        "SecurityToken",
        "Expiration",
        "Credentials",
        "AuthorizationToken",
        "TempUsername",
        "ExpireTime",
        "authorizationToken",
        "tempUserName",
        "expireDate",
        "TotalCount",
        "Instances",
        "InstanceId",
        "RegionId",
        " (after ",
        " attempts)",
        kcp_kubelet::secret::REDACTED,
        "…",
    ];
    words.extend_from_slice(api::PHRASES);
    words.extend(hints());
    words
}

/// Every hint an error line may end with.
fn hints() -> Vec<&'static str> {
    let codes = [
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId.NotFound",
        "InvalidAccessKeyId.Inactive",
        "InvalidTimeStamp.Expired",
        "InvalidSecurityToken.Expired",
        "Throttling.User",
        "INSTANCE_NOT_EXIST",
        "Forbidden.RAM",
    ];
    let mut out = Vec::new();
    for code in codes {
        let error = api::error_answer("x", 400, format!("{{\"Code\":\"{code}\"}}").as_bytes());
        if let api::ApiError::Answer { hint: Some(h), .. } = error {
            out.push(h);
        }
        out.extend(cr::hint(code));
    }
    out
}

/// What every error line satisfies (see the module docs).
fn check_error(line: &str, data: &[u8]) {
    assert!(
        !line.is_empty() && !line.contains(['\n', '\r']),
        "{line:?} for input {data:?} is not one line"
    );
    assert!(!line.contains(PLANTED), "{line:?} holds the planted secret");
    assert_eq!(
        kcp_plugin::http::redact_token_like(line),
        line,
        "{line:?} holds a token-like run"
    );
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        // Not JSON: nothing was quoted but an error answer's excerpt, which the redaction
        // checks above cover.
        return;
    };
    // What the server wrote for the operator, quoted on purpose.
    // As written and as folded onto one line.
    let spoken: Vec<String> = match &value {
        Value::Object(map) => [
            "Code",
            "code",
            "Message",
            "message",
            "RequestId",
            "requestId",
        ]
        .iter()
        .filter_map(|k| text(map, k))
        .flat_map(|s| [s.to_owned(), kcp_plugin::logging::one_line(s)])
        .collect(),
        _ => Vec::new(),
    };
    let mut words = phrases();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    let mut rest = line.to_owned();
    for word in words {
        // A NUL where each was, so that the pieces left do not join into new text.
        rest = rest.replace(word, "\0");
    }
    let mut strings = Vec::new();
    strings_of(&value, &mut strings);
    for quoted in strings {
        if quoted.chars().count() < 8 || spoken.iter().any(|s| s.contains(quoted.as_str())) {
            continue;
        }
        assert!(
            !rest.contains(&quoted),
            "{line:?} quotes {quoted:?} from the input"
        );
    }
}
