//! The library behind `gcr-credential-provider`, the kubelet image credential provider for Google
//! Container Registry and Artifact Registry (the binary, `src/main.rs`, is its command line).
//!
//! One module per token source and concern: [`metadata`] (the GCE metadata server), [`keyfile`]
//! (service-account key files), [`wif`] (Workload Identity Federation and impersonation),
//! [`dockercfg`] (the `dockercfg` flows), [`token`] (OAuth 2.0 token answers), [`endpoint`]
//! (which URLs may carry credentials) and [`provider`] (which source answers a request, and how).
//! `fuzz` holds the bodies of the cargo-fuzz targets in `fuzz/` for the parsers of outside input;
//! it is built for cargo-fuzz and unit tests only.

pub mod dockercfg;
pub mod endpoint;
pub mod keyfile;
pub mod metadata;
pub mod provider;
pub mod token;
pub mod wif;

#[cfg(test)]
mod fuzz_smoke;

/// The bodies of the GCR fuzz targets in `fuzz/fuzz_targets/gcr_*.rs`, kept here so that a stable
/// `cargo test` (`providers/gcr/src/fuzz_smoke.rs`) runs the same checks over the seed corpus
/// and mutations of it when no nightly toolchain is around. Built only for cargo-fuzz
/// (`--cfg fuzzing`) and unit tests: no release binary has it.
///
/// Each body takes arbitrary bytes and panics when an invariant breaks, not only when the code
/// under test panics: errors are one line and quote no secret, expiries stay within
/// [`crate::token::MAX_TOKEN_LIFE`], what parses reads back the same.
#[cfg(any(fuzzing, test))]
pub mod fuzz {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use base64::Engine;
    use serde_json::{Map, Value};

    use crate::keyfile::ServiceAccountKey;
    use crate::token::{AccessToken, MAX_TOKEN_LIFE};

    /// A fuzz target body: arbitrary bytes in, a panic when an invariant breaks.
    pub type Body = fn(&[u8]);

    /// Every GCR target: its name (the `fuzz/fuzz_targets/<name>.rs` file and `fuzz/corpus/<name>/`
    /// directory, `gcr_` and the body's name) and its body.
    pub const TARGETS: &[(&str, Body)] = &[
        ("gcr_token_answer", token_answer),
        ("gcr_iam_answer", iam_answer),
        ("gcr_key_file", key_file),
        ("gcr_dockercfg", dockercfg),
    ];

    /// The moment every answer is received at: 2027-01-15T08:00:00Z.
    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    /// A private key that says nothing: what `key_file` puts in a document's place to tell the
    /// words of an error from the key's text.
    const NEUTRAL_KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

    /// Error texts end up as the single stderr line a plugin prints: never empty, never two lines.
    fn assert_one_line(message: &str, input: &[u8]) {
        assert!(
            !message.is_empty() && !message.contains(['\n', '\r']),
            "message {message:?} for input {input:?} is not one line"
        );
    }

    /// The input's top-level JSON object, when it is one.
    fn object_of(data: &[u8]) -> Option<Map<String, Value>> {
        match serde_json::from_slice(data) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
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

    /// No string value of the input's JSON (8 characters or more) is in `message` once the
    /// message's own words are taken out: the fixed `phrases`, and the input's keys as errors
    /// name them (quoted).
    fn assert_quotes_no_value(message: &str, data: &[u8], phrases: &[&str]) {
        let Ok(value) = serde_json::from_slice::<Value>(data) else {
            // serde_json's syntax errors carry a position, never content.
            return;
        };
        let mut keys = Vec::new();
        let mut stack = vec![&value];
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(map) => {
                    for (k, v) in map {
                        keys.push(format!("{k:?}"));
                        stack.push(v);
                    }
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        // Keys and phrases together, longest first, so that one holding another (a key holding
        // a phrase, `"auths" is not an object` holding the key `"auths"`) is taken out whole.
        let mut words: Vec<&str> = keys
            .iter()
            .map(String::as_str)
            .chain(phrases.iter().copied())
            .collect();
        words.sort_by_key(|w| std::cmp::Reverse(w.len()));
        let mut rest = message.to_owned();
        for word in words {
            // A NUL where each was, so that the pieces left do not join into new text.
            rest = rest.replace(word, "\0");
        }
        let mut strings = Vec::new();
        strings_of(&value, &mut strings);
        for quoted in strings {
            assert!(
                quoted.chars().count() < 8 || !rest.contains(&quoted),
                "{message:?} quotes {quoted:?} from the input"
            );
        }
    }

    /// The fixed words of the token parsers' errors.
    const TOKEN_ERRORS: &[&str] = &[
        "the metadata server's token answer",
        "the generateAccessToken answer",
        "has an empty access_token",
        "has an access_token that is not a string",
        "has no access_token (fields present: ",
        "bad expires_in: ",
        "expected a non-negative number of seconds",
        "expected a number of seconds",
        "too far in the future to be a time",
        "has no accessToken (fields present: ",
        "has an expireTime that is not an RFC 3339 time",
        "has an expireTime that is not a string (an RFC 3339 time)",
        "is not a JSON object (",
        " bytes)",
    ];

    /// The fixed words of the dockercfg parser's errors.
    const DOCKERCFG_ERRORS: &[&str] = &[
        "the dockercfg document is not a JSON object (",
        " bytes)",
        "\"auths\" is not an object",
        "the entry for ",
        " is not an object",
        "username is not a string",
        "password is not a string",
        "email is not a string",
        "auth is not a string",
        "auth is not valid base64",
        "auth does not decode to UTF-8 text",
        "auth does not decode to user:password (no colon)",
        "no registry credentials in it (an empty map, or entries without auth/username/password)",
    ];

    /// What every parsed token satisfies: a token, received at `now`, an expiry within
    /// [`MAX_TOKEN_LIFE`] of it when known.
    fn check_token(token: &AccessToken, now: SystemTime) {
        assert!(!token.token.expose().is_empty());
        assert_eq!(token.received_at, now);
        if let Some(expires_at) = token.expires_at {
            let latest = now + MAX_TOKEN_LIFE;
            assert!(expires_at <= latest, "{expires_at:?} is past {latest:?}");
        }
    }

    /// An OAuth 2.0 token answer, as the metadata server, STS and a key file's `token_uri` send
    /// it ([`crate::token::parse_oauth_token`]).
    ///
    /// Invariants: the token is the answer's `access_token`; a known expiry lies between the
    /// moment of receipt and [`MAX_TOKEN_LIFE`] after it, exactly `expires_in` later when that
    /// is a whole number within it; errors are one line naming the answer and quote no value.
    pub fn token_answer(data: &[u8]) {
        let now = now();
        let what = "the metadata server's token answer";
        match crate::token::parse_oauth_token(data, now, what) {
            Ok(token) => {
                check_token(&token, now);
                let object = object_of(data).unwrap_or_default();
                assert_eq!(
                    object.get("access_token").and_then(Value::as_str),
                    Some(token.token.expose())
                );
                let expires_in = object.get("expires_in").filter(|v| !v.is_null());
                assert_eq!(expires_in.is_some(), token.expires_at.is_some());
                if let Some(expires_at) = token.expires_at {
                    assert!(expires_at >= now);
                    let whole = expires_in
                        .and_then(Value::as_u64)
                        .filter(|s| *s <= MAX_TOKEN_LIFE.as_secs());
                    if let Some(secs) = whole {
                        assert_eq!(expires_at, now + Duration::from_secs(secs));
                    }
                }
            }
            Err(e) => {
                let message = format!("{e:#}");
                assert_one_line(&message, data);
                assert!(message.starts_with(what), "{message}");
                assert_quotes_no_value(&message, data, TOKEN_ERRORS);
            }
        }
    }

    /// IAM Credentials' `generateAccessToken` answer
    /// ([`crate::wif::parse_generate_access_token`]).
    ///
    /// Invariants: the token is the answer's `accessToken`; an expiry is known exactly when
    /// `expireTime` is a string, and lies within [`MAX_TOKEN_LIFE`]; errors are one line and
    /// quote no value.
    pub fn iam_answer(data: &[u8]) {
        let now = now();
        match crate::wif::parse_generate_access_token(data, now) {
            Ok(token) => {
                check_token(&token, now);
                let object = object_of(data).unwrap_or_default();
                assert_eq!(
                    object.get("accessToken").and_then(Value::as_str),
                    Some(token.token.expose())
                );
                assert_eq!(
                    object.get("expireTime").is_some_and(Value::is_string),
                    token.expires_at.is_some()
                );
            }
            Err(e) => {
                let message = format!("{e:#}");
                assert_one_line(&message, data);
                assert!(
                    message.starts_with("the generateAccessToken answer"),
                    "{message}"
                );
                assert_quotes_no_value(&message, data, TOKEN_ERRORS);
            }
        }
    }

    /// A service-account key file ([`ServiceAccountKey::parse`]) and, when it parses, the JWT
    /// assertion signed with it.
    ///
    /// Invariants: a key has a client e-mail and an https (or loopback http) `token_uri`; its
    /// assertion (when the key can sign) has claims naming them, with an hour between `iat` and
    /// `exp`; errors are one line naming the file and never quote the private key.
    pub fn key_file(data: &[u8]) {
        let path = Path::new("/etc/gcr/key.json");
        match ServiceAccountKey::parse(data, path) {
            Ok(key) => {
                assert!(!key.client_email.trim().is_empty());
                let uri = &key.token_uri;
                assert!(
                    uri.scheme() == "https"
                        || (uri.scheme() == "http" && kcp_plugin::endpoint::is_loopback(uri)),
                    "{uri}"
                );
                let assertion = match key.assertion(now()) {
                    Ok(assertion) => assertion,
                    // ring accepts some damaged keys (a CRT parameter off) and then refuses to
                    // sign with them: an error, as the signing step reports it.
                    Err(e) => {
                        return assert_eq!(format!("{e:#}"), "signing the JWT assertion failed");
                    }
                };
                assert_eq!(assertion.expose().split('.').count(), 3);
                let Some(claims) = kcp_plugin::jwt::claims(assertion.expose()) else {
                    panic!("unreadable assertion claims");
                };
                assert_eq!(claims["iss"].as_str(), Some(key.client_email.as_str()));
                assert_eq!(claims["aud"].as_str(), Some(uri.as_str()));
                let (iat, exp) = (claims["iat"].as_u64(), claims["exp"].as_u64());
                assert_eq!(iat.zip(exp).and_then(|(i, e)| e.checked_sub(i)), Some(3600));
            }
            Err(e) => {
                let message = format!("{e:#}");
                assert_one_line(&message, data);
                assert!(message.contains("/etc/gcr/key.json"), "{message}");
                let private_key = object_of(data)
                    .and_then(|o| {
                        o.get("private_key")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                // Other fields are quoted (a refused token_uri is named); a run of the key that
                // also stands in one of them is that field's text, not the key's.
                let mut others = Vec::new();
                if let Some(mut object) = object_of(data) {
                    object.remove("private_key");
                    strings_of(&Value::Object(object), &mut others);
                }
                // A refused URL is quoted as the URL parser read it: tabs and line breaks dropped
                // and the host lowercased, which can join two lines of key text pasted into it.
                let parsed: Vec<String> = others
                    .iter()
                    .map(|o| {
                        o.chars()
                            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                            .collect()
                    })
                    .collect();
                others.extend(parsed.iter().map(|o| o.to_lowercase()));
                others.extend(parsed);
                // The PEM armour is named in errors (`no -----END … line`, built from the BEGIN
                // line): a run of key text that is also armour text is the label's, not the key's.
                let armour: Vec<String> = private_key
                    .lines()
                    .filter(|line| line.contains("-----"))
                    .flat_map(|line| [line.to_owned(), line.replace("BEGIN", "END")])
                    .collect();
                // The same document with another key: text its message holds too is the
                // message's own words (a key line that reads like the error itself), not the key's.
                let neutral = object_of(data)
                    .map(|mut object| {
                        object.insert(
                            "private_key".to_owned(),
                            Value::String(NEUTRAL_KEY.to_owned()),
                        );
                        serde_json::to_vec(&Value::Object(object)).unwrap_or_default()
                    })
                    .and_then(|bytes| ServiceAccountKey::parse(&bytes, path).err())
                    .map(|e| format!("{e:#}"))
                    .unwrap_or_default();
                let secret_parts = std::iter::once(private_key.trim())
                    .chain(private_key.lines().map(str::trim))
                    .filter(|part| part.len() >= 16 && !part.contains("-----"))
                    .filter(|part| !others.iter().any(|o| o.contains(part)))
                    .filter(|part| !armour.iter().any(|a| a.contains(part)))
                    .filter(|part| !neutral.contains(part));
                for part in secret_parts {
                    assert!(
                        !message.contains(part),
                        "{message:?} quotes the private key's {part:?}"
                    );
                }
            }
        }
    }

    /// A dockercfg document: a legacy `.dockercfg` map or a `config.json` with `auths`
    /// ([`crate::dockercfg::parse`]).
    ///
    /// Invariants: a parse holds at least one registry; the credentials written back as a
    /// `config.json` parse to the same; errors are one line and quote no value.
    pub fn dockercfg(data: &[u8]) {
        match crate::dockercfg::parse(data) {
            Ok(auth) => {
                assert!(!auth.is_empty());
                let mut auths = Map::new();
                for (registry, entry) in &auth {
                    let password = entry.password.expose();
                    let written = if entry.username.is_empty() && password.is_empty() {
                        let encoded = base64::engine::general_purpose::STANDARD.encode(":");
                        serde_json::json!({ "auth": encoded })
                    } else {
                        serde_json::json!({ "username": entry.username, "password": password })
                    };
                    auths.insert(registry.clone(), written);
                }
                let document = serde_json::json!({ "auths": auths }).to_string();
                let again = match crate::dockercfg::parse(document.as_bytes()) {
                    Ok(again) => again,
                    Err(e) => panic!("the credentials written back do not parse: {e:#}"),
                };
                let pairs = |m: &BTreeMap<String, kcp_kubelet::AuthConfig>| {
                    m.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.username.clone(),
                                v.password.expose().to_owned(),
                            )
                        })
                        .collect::<Vec<_>>()
                };
                assert_eq!(pairs(&again), pairs(&auth));
            }
            Err(e) => {
                let message = format!("{e:#}");
                assert_one_line(&message, data);
                assert_quotes_no_value(&message, data, DOCKERCFG_ERRORS);
            }
        }
    }
}
