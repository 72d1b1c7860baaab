//! YAML as Kubernetes' Go code reads it: `sigs.k8s.io/yaml`, whose YAML layer is a fork of go-yaml
//! v2, a YAML 1.1 reader (docs/kubelet-contract.md, “YAML 1.1 scalars”).
//!
//! The kubelet reads a `CredentialProviderConfig` through it, and so does the upstream ACR plugin
//! for `azure.json`. Both then decode JSON, so what matters is the JSON a document turns into, and
//! YAML 1.1 differs from the YAML 1.2 core schema of the parser below (yaml-rust2) exactly there:
//! an unquoted `yes`, `on`, `y` or `off` is a boolean, `0755` is the octal number 493, `1_000` is
//! 1000, and `.5` is a number. This module owns that difference. yaml-rust2 only supplies the
//! syntax (events); everything a value becomes is decided here:
//!
//! - [`parse`]: go-yaml v2's decoding into an untyped Go value. Only the first document counts;
//!   plain scalars resolve as go-yaml v2's `resolve()` does ([`resolve_plain`]), quoted ones stay
//!   strings, the core `!!` tags are honoured, anchors and `<<` merge keys are expanded, and a
//!   repeated key is kept (the last one wins) and noted for strict readers ([`Document::strict_error`]).
//! - [`to_json`] / [`check_json`]: `sigs.k8s.io/yaml`'s conversion of that value to JSON: non-string
//!   keys become strings, a null key and a NaN or infinite number are errors.
//!
//! The work is split by stage: `scalar` (what a scalar resolves to), `builder` (events to a value:
//! anchors, merges, repeated keys), `json` (the conversion to JSON and Go's printing of keys).
//!
//! Errors read as the Go code's where it defines them (`yaml: …`, `json: unsupported value: +Inf`);
//! syntax errors come from yaml-rust2 and carry its wording.

use yaml_rust2::parser::{Event, Parser};

mod builder;
mod json;
mod scalar;

use builder::Builder;
pub use json::{check_json, key_string, kind_of, to_json};
pub use scalar::resolve_plain;

/// A value as go-yaml v2 decodes it into a Go `interface{}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `null`, `~`, an empty value.
    Null,
    /// A YAML 1.1 boolean (`true`, `yes`, `on`, `y`, …).
    Bool(bool),
    /// An integer that fits Go's `int` (64 bits).
    Int(i64),
    /// An unsigned integer above `i64::MAX` (Go's `uint64`).
    Uint(u64),
    /// A float, including `.inf` and `.nan` (which JSON cannot carry).
    Float(f64),
    /// A string: every quoted scalar, and plain ones that resolve to nothing else.
    Str(String),
    /// A sequence, in document order.
    Seq(Vec<Node>),
    /// A mapping, in document order; each key appears once.
    Map(Vec<Entry>),
}

/// One key/value pair of a [`Node::Map`].
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, resolved like any scalar (`1: x` has the key `Int(1)`).
    pub key: Node,
    /// What the key maps to, after anchors and merge keys are resolved.
    pub value: Node,
    /// The 1-based line of the value, which go-yaml names in a duplicate-key error.
    pub line: usize,
}

impl Node {
    /// The JSON type name Go's `encoding/json` reports when it cannot store this value
    /// (`json: cannot unmarshal bool into …`).
    #[must_use]
    pub fn json_type(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "bool",
            Node::Int(_) | Node::Uint(_) | Node::Float(_) => "number",
            Node::Str(_) => "string",
            Node::Seq(_) => "array",
            Node::Map(_) => "object",
        }
    }

    /// In a mapping, the value of the entry whose key converts to `key` (see [`key_string`]).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => get(entries, key),
            _ => None,
        }
    }
}

/// Orders every mapping by its keys' JSON text, as the kubelet's YAML-to-JSON conversion leaves
/// them (Go's `encoding/json` writes map keys sorted). The kubelet then decodes that JSON, so
/// unknown fields and the first type error of a YAML file come in key order, not document order.
pub fn sort_keys(node: &mut Node) {
    match node {
        Node::Map(entries) => {
            entries.sort_by_cached_key(|e| key_string(&e.key).unwrap_or_default());
            for entry in entries {
                sort_keys(&mut entry.value);
            }
        }
        Node::Seq(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// The value of the entry whose key converts to `key` (see [`key_string`]).
#[must_use]
pub fn get<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Node> {
    entries
        .iter()
        .find(|e| key_string(&e.key).is_ok_and(|k| k == key))
        .map(|e| &e.value)
}

/// A parsed document: its value and the keys a strict reader refuses.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The first document's value; [`Node::Null`] for an empty input.
    pub root: Node,
    /// go-yaml's strict-mode complaints (`line 7: key "name" already set in map`), in order.
    pub duplicates: Vec<String>,
}

impl Document {
    /// The error go-yaml's strict decoding (`YAMLToJSONStrict`) returns, if any.
    #[must_use]
    pub fn strict_error(&self) -> Option<String> {
        (!self.duplicates.is_empty()).then(|| {
            format!(
                "yaml: unmarshal errors:\n  {}",
                self.duplicates.join("\n  ")
            )
        })
    }
}

/// Parses the first document of `text` as go-yaml v2 decodes it into an untyped value.
///
/// Errors are one line starting `yaml: ` (a syntax error, a bad tagged value, an unknown or
/// self-containing anchor, a bad merge, excessive aliasing); a repeated key is not an error here but
/// shows in [`Document::strict_error`].
pub fn parse(text: &str) -> Result<Document, String> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder::new();
    // go-yaml decodes the first document and reads no further.
    loop {
        let (event, mark) = parser.next_token().map_err(|e| format!("yaml: {e}"))?;
        let done = matches!(event, Event::StreamEnd | Event::DocumentEnd);
        builder.event(event, mark)?;
        if done {
            break;
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests;
