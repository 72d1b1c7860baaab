//! A plugin's stdout described without its values.
//!
//! A malformed answer still holds the plugin's credentials: `"auth":{"r.io":"hunter2"}` puts the
//! password where an object belongs, and serde_json's error text quotes it (`invalid type: string
//! "hunter2"`). The kubelet hides its strict decoder's cause for that reason. This module says what
//! is wrong in words built only from the document's structure (JSON path, the kind of value found,
//! line and column) and never from a decoder's message; and it shows a document with every string
//! value replaced by its length. Keys are shown: they are field names and registry hosts.
//!
//! Everything here runs only after a decode has failed or when a report is printed.

use kcp_kubelet::duration::GoDuration;

/// JSON that keeps every object member, duplicates included and in order (serde_json's `Value`
/// keeps only the last of a duplicated key, which would hide the others).
#[derive(Debug)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
                Ok(serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Json>()? {
                    members.push(member);
                }
                Ok(Json::Object(members))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Protocol words a top-level `kind`, `apiVersion` or `cacheKeyType` may hold. They are public
/// constants, so showing them reveals nothing, and they are what a reader needs to see.
const PUBLIC_WORDS: &[&str] = &[
    "CredentialProviderResponse",
    "CredentialProviderRequest",
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
    "kubelet.config.k8s.io/v1",
    "kubelet.config.k8s.io/v1beta1",
    "kubelet.config.k8s.io/v1alpha1",
    "Image",
    "Registry",
    "Global",
    "ServiceAccount",
    "Token",
];

/// A string value from a plugin's stdout as it may be shown: itself when it is empty or one of the
/// protocol's public words, else only its length.
pub fn hide_value(value: &str) -> String {
    if value.is_empty() || PUBLIC_WORDS.contains(&value) {
        escape_controls(value)
    } else {
        length(value)
    }
}

/// `<N chars>`: what is shown of a hidden string.
fn length(value: &str) -> String {
    match value.chars().count() {
        1 => "<1 char>".to_owned(),
        n => format!("<{n} chars>"),
    }
}

/// A plugin's stdout made safe to show: a JSON document is written back compactly with every
/// string value replaced by `"<N chars>"` (except the protocol's public words under a top-level
/// `kind`, `apiVersion` or `cacheKeyType`, and a valid Go duration under `cacheDuration`), and
/// every other scalar under the top-level `auth` (a number or boolean where a password belongs is
/// a secret too) by its type and length (`"<number: 6 chars>"`); keys and every other value kept,
/// duplicates included. Text that is not exactly one JSON document is
/// shown as its byte length only: any of it could be a secret.
pub fn redacted(stdout: &[u8]) -> String {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return String::from_utf8_lossy(stdout).into_owned();
    }
    match serde_json::from_slice::<Json>(stdout) {
        Ok(json) => {
            let mut out = String::new();
            write_redacted(&json, Depth::Top, &mut out);
            out
        }
        Err(_) => format!(
            "<{} bytes that are not one JSON document: not shown, since any of it could be a secret>",
            stdout.len()
        ),
    }
}

/// Where a value stands, which decides what of it is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// The document itself.
    Top,
    /// Under the top-level `auth`: credentials, whatever their JSON type.
    Auth,
    /// Anywhere else.
    Other,
}

fn write_redacted(json: &Json, depth: Depth, out: &mut String) {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    // What a non-string credential shows: its JSON type and length, as a string shows its length.
    let typed = |kind: &str, text: &str| {
        quoted(&format!(
            "<{kind}: {}>",
            length(text).trim_start_matches('<').trim_end_matches('>')
        ))
    };
    match json {
        Json::Null if depth == Depth::Auth => out.push_str(&typed("null", "null")),
        Json::Bool(b) if depth == Depth::Auth => out.push_str(&typed("boolean", &b.to_string())),
        Json::Number(n) if depth == Depth::Auth => out.push_str(&typed("number", &n.to_string())),
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(&n.to_string()),
        Json::String(s) => out.push_str(&quoted(&length(s))),
        Json::Array(items) => {
            out.push('[');
            let inner = if depth == Depth::Auth {
                Depth::Auth
            } else {
                Depth::Other
            };
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_redacted(item, inner, out);
            }
            out.push(']');
        }
        Json::Object(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quoted(key));
                out.push(':');
                match (depth, value) {
                    (Depth::Top, Json::String(s)) if public_member(key, s) => {
                        out.push_str(&quoted(s))
                    }
                    (Depth::Top, _) if key == "auth" => write_redacted(value, Depth::Auth, out),
                    (Depth::Auth, _) => write_redacted(value, Depth::Auth, out),
                    _ => write_redacted(value, Depth::Other, out),
                }
            }
            out.push('}');
        }
    }
}

/// Whether a top-level member's string value is public: a protocol word under `kind`,
/// `apiVersion` or `cacheKeyType`, or a Go duration under `cacheDuration`.
fn public_member(key: &str, value: &str) -> bool {
    match key {
        "kind" | "apiVersion" | "cacheKeyType" => PUBLIC_WORDS.contains(&value),
        "cacheDuration" => GoDuration::parse(value).is_ok(),
        _ => false,
    }
}

/// Where in the document: the keys from the top (the response has no arrays).
#[derive(Default, Clone)]
struct Path(Vec<String>);

impl Path {
    fn key(&self, key: &str) -> Path {
        let mut p = self.clone();
        p.0.push(key.to_owned());
        p
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the top level");
        }
        for (i, key) in self.0.iter().enumerate() {
            if !is_identifier(key) {
                write!(f, "[\"{}\"]", escape_controls(key).replace('"', "\\\""))?;
            } else if i == 0 {
                f.write_str(key)?;
            } else {
                write!(f, ".{key}")?;
            }
        }
        Ok(())
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What the kubelet's decoders expect at one place, for the walk that explains a failure.
#[derive(Clone, Copy)]
enum Expect {
    /// A string or null.
    String,
    /// A Go duration string or null.
    Duration,
    /// An object with these fields (each a string or null); others refused when `strict`.
    Fields(&'static [(&'static str, Expect)], bool),
    /// An object of registry keys to [`AUTH_ENTRY`], keys unique; or null.
    AuthMap,
}

const AUTH_ENTRY: Expect = Expect::Fields(
    &[("username", Expect::String), ("password", Expect::String)],
    true,
);

const GVK: Expect = Expect::Fields(
    &[("apiVersion", Expect::String), ("kind", Expect::String)],
    false,
);

const RESPONSE: Expect = Expect::Fields(
    &[
        ("kind", Expect::String),
        ("apiVersion", Expect::String),
        ("cacheKeyType", Expect::String),
        ("cacheDuration", Expect::Duration),
        ("auth", Expect::AuthMap),
    ],
    true,
);

/// Why the type header (apiVersion, kind) could not be read, without quoting the document.
pub(crate) fn gvk_cause(stdout: &[u8], error: &serde_json::Error) -> String {
    cause(stdout, error, GVK)
}

/// Why the strict decoder refused the document, without quoting the document.
pub(crate) fn strict_cause(stdout: &[u8], error: &serde_json::Error) -> String {
    cause(stdout, error, RESPONSE)
}

fn cause(stdout: &[u8], error: &serde_json::Error, expect: Expect) -> String {
    use serde_json::error::Category;
    let at = format!("line {}, column {}", error.line(), error.column());
    match error.classify() {
        Category::Io => format!("stdout could not be read as JSON ({at})"),
        Category::Eof if stdout.iter().all(u8::is_ascii_whitespace) => {
            "stdout is empty: no JSON document".to_owned()
        }
        Category::Eof => format!("stdout ends before its JSON document is complete ({at})"),
        Category::Syntax if trailing_text(stdout) => {
            format!("text follows the JSON document ({at}): stdout must hold exactly one document")
        }
        Category::Syntax => format!("stdout is not valid JSON ({at})"),
        Category::Data => match serde_json::from_slice::<Json>(stdout) {
            Ok(doc) => match check(&doc, expect, &Path::default()) {
                Some(problem) => format!("{problem} ({at})"),
                None => format!("the document does not fit the response's fields ({at})"),
            },
            Err(_) => format!("the document does not fit the response's fields ({at})"),
        },
    }
}

/// Whether stdout starts with one complete JSON value and then holds more than whitespace.
fn trailing_text(stdout: &[u8]) -> bool {
    let mut values =
        serde_json::Deserializer::from_slice(stdout).into_iter::<serde::de::IgnoredAny>();
    matches!(values.next(), Some(Ok(_)))
        && stdout[values.byte_offset()..]
            .iter()
            .any(|b| !b.is_ascii_whitespace())
}

/// The first place, in document order (the decoder's order), where `json` breaks `expect`.
fn check(json: &Json, expect: Expect, path: &Path) -> Option<String> {
    match (expect, json) {
        (_, Json::Null) => None,
        (Expect::String, Json::String(_)) => None,
        (Expect::String, other) => Some(format!(
            "{path} must be a string, found {}",
            other.kind()
        )),
        (Expect::Duration, Json::String(s)) => GoDuration::parse(s).err().map(|_| {
            format!(
                "{path} is not a Go duration (such as \"5m0s\" or \"12h\"; units ns, us, ms, s, m, h)"
            )
        }),
        (Expect::Duration, other) => Some(format!(
            "{path} must be a Go duration string (such as \"5m0s\"), found {}",
            other.kind()
        )),
        (Expect::Fields(fields, strict), Json::Object(members)) => {
            let mut seen: Vec<&str> = Vec::new();
            for (key, value) in members {
                let known = fields.iter().find(|(name, _)| name == key);
                if known.is_some() && seen.contains(&key.as_str()) {
                    return Some(format!(
                        "duplicate field `{}` in {path}",
                        escape_controls(key)
                    ));
                }
                seen.push(key);
                match known {
                    Some((_, inner)) => {
                        if let Some(problem) = check(value, *inner, &path.key(key)) {
                            return Some(problem);
                        }
                    }
                    None if strict => {
                        let hint = fields
                            .iter()
                            .find(|(name, _)| name.eq_ignore_ascii_case(key))
                            .map(|(name, _)| format!(" (field names are case-sensitive: `{name}`)"))
                            .unwrap_or_default();
                        return Some(format!(
                            "unknown field `{}` in {path}{hint}",
                            escape_controls(key)
                        ));
                    }
                    None => {}
                }
            }
            None
        }
        (Expect::AuthMap, Json::Object(members)) => {
            let mut seen: Vec<&str> = Vec::new();
            for (key, value) in members {
                if seen.contains(&key.as_str()) {
                    return Some(format!(
                        "duplicate key `{}` in {path}",
                        escape_controls(key)
                    ));
                }
                seen.push(key);
                let entry = path.key(key);
                match value {
                    Json::Object(_) => {
                        if let Some(problem) = check(value, AUTH_ENTRY, &entry) {
                            return Some(problem);
                        }
                    }
                    other => {
                        return Some(format!(
                            "{entry} must be an object with username and password, found {}",
                            other.kind()
                        ));
                    }
                }
            }
            None
        }
        (Expect::Fields(..), Json::Array(_)) if path.0.is_empty() => {
            Some("the document is an array, not an object".to_owned())
        }
        (Expect::Fields(..) | Expect::AuthMap, other) => Some(format!(
            "{path} must be an object, found {}",
            other.kind()
        )),
    }
}

/// serde_json names keys verbatim and a plugin's stdout could hold newlines or terminal escapes:
/// kept out of a one-line message.
pub(crate) fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(doc: &str) -> String {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Never {
            never: u8,
        }
        let err = serde_json::from_str::<Never>(doc)
            .err()
            .or_else(|| serde_json::from_str::<serde_json::Value>("{").err())
            .unwrap();
        strict_cause(doc.as_bytes(), &err)
    }

    #[test]
    fn problems_name_the_path_and_never_a_value() {
        for (doc, want) in [
            (
                r#"{"auth":{"e.example.com":"hunter2-topsecret"}}"#,
                r#"auth["e.example.com"] must be an object with username and password, found a string"#,
            ),
            (
                r#"{"auth":{"a.io":{"username":"u","password":["hunter2-topsecret"]}}}"#,
                r#"auth["a.io"].password must be a string, found an array"#,
            ),
            (
                r#"{"cacheDuration":"hunter2-topsecret"}"#,
                "cacheDuration is not a Go duration",
            ),
            (
                r#"{"cacheDuration":600}"#,
                "cacheDuration must be a Go duration string (such as \"5m0s\"), found a number",
            ),
            (
                r#"{"kind":"x","CacheKeyType":"hunter2-topsecret"}"#,
                "unknown field `CacheKeyType` in the top level (field names are case-sensitive: `cacheKeyType`)",
            ),
            (
                r#"{"cacheKeyType":"Image","cacheKeyType":"hunter2-topsecret"}"#,
                "duplicate field `cacheKeyType` in the top level",
            ),
            (
                r#"{"auth":{"a.io":{},"a.io":{"password":"hunter2-topsecret"}}}"#,
                "duplicate key `a.io` in auth",
            ),
            (
                r#"["hunter2-topsecret"]"#,
                "the document is an array, not an object",
            ),
        ] {
            let got = strict(doc);
            assert!(got.starts_with(want), "{doc}: {got}");
            assert!(!got.contains("hunter2"), "{got}");
        }
    }

    #[test]
    fn syntax_errors_say_where_and_what_kind() {
        let cause = |doc: &str| {
            let err = serde_json::from_str::<serde::de::IgnoredAny>(doc).unwrap_err();
            gvk_cause(doc.as_bytes(), &err)
        };
        assert_eq!(cause(""), "stdout is empty: no JSON document");
        assert_eq!(cause(" \n"), "stdout is empty: no JSON document");
        assert_eq!(
            cause("{\"a\":\"hunter2"),
            "stdout ends before its JSON document is complete (line 1, column 13)"
        );
        assert_eq!(
            cause("{} hunter2"),
            "text follows the JSON document (line 1, column 4): stdout must hold exactly one document"
        );
        assert_eq!(
            cause("hunter2 {}"),
            "stdout is not valid JSON (line 1, column 1)"
        );
    }

    #[test]
    fn redaction_keeps_keys_and_public_words_only() {
        let doc = br#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"hunter2","cacheDuration":"5m0s","auth":{"e.example.com":"hunter2-topsecret","a.io":{"username":"Image","password":"p\u00e4ss","n":[1,true,null]}},"x":{"kind":"Image"}}"#;
        assert_eq!(
            redacted(doc),
            r#"{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"<7 chars>","cacheDuration":"5m0s","auth":{"e.example.com":"<17 chars>","a.io":{"username":"<5 chars>","password":"<4 chars>","n":["<number: 1 char>","<boolean: 4 chars>","<null: 4 chars>"]}},"x":{"kind":"<5 chars>"}}"#
        );
        // A password that is a number or a boolean is as secret as a string one; a number
        // anywhere else (a wrong-typed cacheDuration) is shown, it is what the kubelet refuses.
        assert_eq!(
            redacted(br#"{"cacheDuration":3600,"auth":{"a.io":{"username":-125000,"password":123456}},"n":[7,false]}"#),
            r#"{"cacheDuration":3600,"auth":{"a.io":{"username":"<number: 7 chars>","password":"<number: 6 chars>"}},"n":[7,false]}"#
        );
        assert_eq!(
            redacted(br#"{"password":"a","password":"b"}"#),
            r#"{"password":"<1 char>","password":"<1 char>"}"#
        );
        assert_eq!(
            redacted(b"password: hunter2\n"),
            "<18 bytes that are not one JSON document: not shown, since any of it could be a secret>"
        );
        assert!(redacted(br#"{} {"a":"hunter2"}"#).starts_with("<18 bytes"));
        assert_eq!(redacted(b" \n"), " \n");
        assert_eq!(hide_value("hunter2"), "<7 chars>");
        assert_eq!(hide_value("ServiceAccount"), "ServiceAccount");
    }
}
