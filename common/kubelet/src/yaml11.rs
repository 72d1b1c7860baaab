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
//! Errors read as the Go code's where it defines them (`yaml: …`, `json: unsupported value: +Inf`);
//! syntax errors come from yaml-rust2 and carry its wording.

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

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
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order; each key appears once.
    Map(Vec<Entry>),
}

/// One key/value pair of a [`Node::Map`].
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, resolved like any scalar (`1: x` has the key `Int(1)`).
    pub key: Node,
    /// The value.
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

const TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// The scalar tags go-yaml v2 resolves (everything else is taken as a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bool,
    Int,
    Float,
    Null,
    Timestamp,
}

impl Kind {
    fn short(self) -> &'static str {
        match self {
            Kind::Str => "!!str",
            Kind::Bool => "!!bool",
            Kind::Int => "!!int",
            Kind::Float => "!!float",
            Kind::Null => "!!null",
            Kind::Timestamp => "!!timestamp",
        }
    }
}

/// Resolves an unquoted, untagged scalar as go-yaml v2 does (YAML 1.1 with its own choices:
/// no sexagesimal numbers, timestamps kept as strings).
#[must_use]
pub fn resolve_plain(text: &str) -> Node {
    resolve(text, true).1
}

/// go-yaml v2's `resolve()` for an implicit tag; `timestamps` says whether a timestamp may be
/// recognised (only for unquoted or `!!timestamp` scalars). A timestamp stays a string, as go-yaml
/// v2 keeps it when decoding into an untyped value.
fn resolve(text: &str, timestamps: bool) -> (Kind, Node) {
    let string = || (Kind::Str, Node::Str(text.to_owned()));
    let Some(&first) = text.as_bytes().first() else {
        return (Kind::Null, Node::Null);
    };
    if let Some(known) = keyword(text) {
        return known;
    }
    match first {
        // Only the words above start this way.
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => string(),
        b'.' => match go_float(text) {
            Some(f) => (Kind::Float, Node::Float(f)),
            None => string(),
        },
        b'0'..=b'9' | b'+' | b'-' => {
            if timestamps && is_timestamp(text) {
                return (Kind::Timestamp, Node::Str(text.to_owned()));
            }
            let plain = text.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return (Kind::Int, i);
            }
            if is_yaml_float(&plain)
                && let Some(f) = go_float(&plain)
            {
                return (Kind::Float, Node::Float(f));
            }
            string()
        }
        _ => string(),
    }
}

/// go-yaml v2's table of words: booleans, nulls and the special floats.
fn keyword(text: &str) -> Option<(Kind, Node)> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            (Kind::Bool, Node::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            (Kind::Bool, Node::Bool(false))
        }
        "~" | "null" | "Null" | "NULL" => (Kind::Null, Node::Null),
        ".nan" | ".NaN" | ".NAN" => (Kind::Float, Node::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            (Kind::Float, Node::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => (Kind::Float, Node::Float(f64::NEG_INFINITY)),
        _ => return None,
    })
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: an optional sign (ParseInt
/// only), then `0x`, `0o`, `0b` or a leading `0` (octal) prefix, or decimal.
fn go_parse_int(s: &str) -> Option<Node> {
    let (negative, signed, body) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).ok()?;
    if negative {
        let min = u128::from(i64::MIN.unsigned_abs());
        if magnitude <= min {
            return Some(Node::Int(
                (magnitude as i128).wrapping_neg().try_into().ok()?,
            ));
        }
        return None;
    }
    if let Ok(i) = i64::try_from(magnitude) {
        return Some(Node::Int(i));
    }
    // ParseUint takes no sign.
    if signed {
        return None;
    }
    u64::try_from(magnitude).ok().map(Node::Uint)
}

/// go-yaml v2's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms go-yaml hands it: out of range is an
/// error there (the scalar then stays a string).
fn go_float(s: &str) -> Option<f64> {
    if !is_yaml_float(s) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Whether go-yaml v2 reads `s` as a timestamp: the four layouts it tries (`2006-1-2`, with a
/// `T`, `t` or space and `15:4:5`, optional fraction, and a zone after `T`/`t`).
fn is_timestamp(s: &str) -> bool {
    fn number(s: &str, max_digits: usize) -> Option<(u32, &str)> {
        let n = s
            .bytes()
            .take(max_digits)
            .take_while(u8::is_ascii_digit)
            .count();
        if n == 0 {
            return None;
        }
        Some((s[..n].parse().ok()?, &s[n..]))
    }
    fn date(s: &str) -> Option<&str> {
        let year = s
            .get(..4)
            .filter(|y| y.bytes().all(|b| b.is_ascii_digit()))?;
        let year: u32 = year.parse().ok()?;
        let (month, rest) = number(s.get(4..)?.strip_prefix('-')?, 2)?;
        let (day, rest) = number(rest.strip_prefix('-')?, 2)?;
        let leap =
            year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days).contains(&day).then_some(rest)
    }
    fn time(s: &str) -> Option<&str> {
        let (hour, rest) = number(s, 2)?;
        let (minute, rest) = number(rest.strip_prefix(':')?, 2)?;
        let (second, rest) = number(rest.strip_prefix(':')?, 2)?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        match rest.strip_prefix(['.', ',']) {
            Some(frac) if frac.starts_with(|c: char| c.is_ascii_digit()) => {
                Some(frac.trim_start_matches(|c: char| c.is_ascii_digit()))
            }
            _ => Some(rest),
        }
    }
    fn zone(s: &str) -> bool {
        if s == "Z" {
            return true;
        }
        let b = s.as_bytes();
        b.len() == 6
            && matches!(b[0], b'+' | b'-')
            && b[1].is_ascii_digit()
            && b[2].is_ascii_digit()
            && b[3] == b':'
            && b[4].is_ascii_digit()
            && b[5].is_ascii_digit()
    }
    let Some(rest) = date(s) else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    if let Some(t) = rest.strip_prefix(['T', 't']) {
        return time(t).is_some_and(zone);
    }
    rest.strip_prefix(' ')
        .and_then(time)
        .is_some_and(str::is_empty)
}

/// A tagged scalar: go-yaml v2's `resolve(tag, value)` and its `!!binary` handling.
fn resolve_tagged(tag: &str, text: &str) -> Result<Node, String> {
    let wanted = match tag.strip_prefix(TAG_PREFIX) {
        Some("str") => return Ok(Node::Str(text.to_owned())),
        Some("binary") => {
            let bytes = base64_std(text)
                .ok_or_else(|| "yaml: !!binary value contains invalid base64 data".to_owned())?;
            return Ok(Node::Str(String::from_utf8_lossy(&bytes).into_owned()));
        }
        Some("bool") => Kind::Bool,
        Some("int") => Kind::Int,
        Some("float") => Kind::Float,
        Some("null") => Kind::Null,
        Some("timestamp") => Kind::Timestamp,
        // Any other tag (`!`, `!foo`, `!!map` on a scalar): the text as it is.
        _ => return Ok(Node::Str(text.to_owned())),
    };
    match resolve(text, wanted == Kind::Timestamp) {
        (kind, node) if kind == wanted => Ok(node),
        (Kind::Int, Node::Int(i)) if wanted == Kind::Float => Ok(Node::Float(i as f64)),
        // The text is escaped (go-yaml prints it raw) so that the message stays one line.
        (kind, _) => Err(format!(
            "yaml: cannot decode {} `{}` as a {}",
            kind.short(),
            text.escape_debug(),
            wanted.short()
        )),
    }
}

/// Go's `base64.StdEncoding.DecodeString`: padded, newlines ignored.
fn base64_std(text: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let chunks = clean.chunks(4).count();
    for (i, chunk) in clean.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for &b in &chunk[..4 - pad] {
            n = (n << 6) | value(b)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// An open collection while the events are read.
enum Frame {
    Seq {
        items: Vec<Node>,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        key: Option<(Node, bool)>,
        anchor: usize,
    },
}

/// go-yaml's limit on alias expansion (“document contains excessive aliasing”): past 1,000 decoded
/// values, at most 99% of them may come from aliases (less in very large documents).
fn excessive_aliasing(decoded: usize, aliased: usize) -> bool {
    let allowed = match decoded {
        ..=400_000 => 0.99,
        4_000_000.. => 0.10,
        n => 0.99 - 0.89 * ((n - 400_000) as f64 / 3_600_000.0),
    };
    aliased > 100 && decoded > 1000 && aliased as f64 / decoded as f64 > allowed
}

fn size(node: &Node) -> usize {
    match node {
        Node::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        Node::Map(entries) => {
            1 + entries
                .iter()
                .map(|e| size(&e.key) + size(&e.value))
                .sum::<usize>()
        }
        _ => 1,
    }
}

struct Builder {
    stack: Vec<Frame>,
    anchors: std::collections::HashMap<usize, Node>,
    open_anchors: Vec<usize>,
    duplicates: Vec<String>,
    root: Option<Node>,
    decoded: usize,
    aliased: usize,
}

impl Builder {
    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        line: usize,
    ) -> Result<(), String> {
        let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
        let plain = style == TScalarStyle::Plain;
        // A plain `<<` (or one tagged `!!merge`) is the merge key.
        let merge = text == "<<"
            && match tag.as_deref() {
                None => plain,
                Some(t) => t == "tag:yaml.org,2002:merge",
            };
        self.decoded += 1;
        let node = match tag.as_deref() {
            Some(t) => resolve_tagged(t, &text)?,
            None if plain => resolve_plain(&text),
            None => Node::Str(text),
        };
        self.insert(node, anchor, line, merge)
    }

    fn insert(
        &mut self,
        node: Node,
        anchor: usize,
        line: usize,
        merge: bool,
    ) -> Result<(), String> {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { key, entries, .. }) => match key.take() {
                None => {
                    if matches!(node, Node::Seq(_) | Node::Map(_)) {
                        return Err(format!("yaml: invalid map key: {}", go_value(&node)));
                    }
                    *key = Some((node, merge));
                }
                Some((_, true)) => {
                    let sources: Vec<&Node> = match &node {
                        Node::Map(_) => vec![&node],
                        // Earlier maps take precedence: they are merged last.
                        Node::Seq(items) if items.iter().all(|i| matches!(i, Node::Map(_))) => {
                            items.iter().rev().collect()
                        }
                        _ => {
                            return Err(
                                "yaml: map merge requires map or sequence of maps as the value"
                                    .to_owned(),
                            );
                        }
                    };
                    for source in sources {
                        if let Node::Map(merged) = source {
                            for e in merged {
                                set(entries, &mut self.duplicates, e.clone());
                            }
                        }
                    }
                }
                Some((k, false)) => set(
                    entries,
                    &mut self.duplicates,
                    Entry {
                        key: k,
                        value: node,
                        line,
                    },
                ),
            },
        }
        Ok(())
    }

    fn event(&mut self, event: Event, mark: Marker) -> Result<(), String> {
        let line = mark.line();
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.scalar(text, style, anchor, tag.as_ref(), line)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.decoded += 1;
                self.open_anchors.push(anchor);
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
            }
            Event::MappingStart(anchor, _) => {
                self.decoded += 1;
                self.open_anchors.push(anchor);
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    key: None,
                    anchor,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.open_anchors.pop();
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq { items, anchor }) => (Node::Seq(items), anchor),
                    Some(Frame::Map {
                        entries, anchor, ..
                    }) => (Node::Map(entries), anchor),
                    None => return Err("yaml: unbalanced collection".to_owned()),
                };
                self.insert(node, anchor, line, false)?;
            }
            Event::Alias(id) => {
                if id > 0 && self.open_anchors.contains(&id) {
                    return Err("yaml: anchor value contains itself".to_owned());
                }
                let n = self
                    .anchors
                    .get(&id)
                    .map(size)
                    .ok_or_else(|| "yaml: unknown anchor referenced".to_owned())?;
                // Checked before the copy is made: the copy is what the limit guards.
                self.decoded += n;
                self.aliased += n;
                if excessive_aliasing(self.decoded, self.aliased) {
                    return Err("yaml: document contains excessive aliasing".to_owned());
                }
                let node = self.anchors.get(&id).cloned().unwrap_or(Node::Null);
                self.insert(node, 0, line, false)?;
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
        Ok(())
    }
}

/// Stores an entry as go-yaml's map does: a key already present is replaced (the non-strict
/// result) and noted (what strict decoding refuses).
fn set(entries: &mut Vec<Entry>, duplicates: &mut Vec<String>, entry: Entry) {
    match entries.iter_mut().find(|e| same_key(&e.key, &entry.key)) {
        Some(existing) => {
            duplicates.push(format!(
                "line {}: key {} already set in map",
                entry.line,
                go_value(&entry.key)
            ));
            existing.value = entry.value;
        }
        None => entries.push(entry),
    }
}

/// Go's `==` on two `interface{}` keys (NaN is never equal, not even to itself).
fn same_key(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Float(x), Node::Float(y)) => x == y,
        _ => a == b,
    }
}

/// A value as Go's `%#v` prints it, for the messages that quote a key.
fn go_value(node: &Node) -> String {
    match node {
        Node::Null => "<nil>".to_owned(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Uint(u) => format!("0x{u:x}"),
        Node::Float(f) => go_format_g(*f, false),
        Node::Str(s) => format!("{s:?}"),
        Node::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_value).collect::<Vec<_>>().join(", ")
        ),
        Node::Map(entries) => format!(
            "map[interface {{}}]interface {{}}{{{}}}",
            entries
                .iter()
                .map(|e| format!("{}:{}", go_value(&e.key), go_value(&e.value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32 or 64)`, which `%v` also prints: the shortest digits,
/// with an exponent below 1e-4 and from 1e6 up.
fn go_format_g(f: f64, single: bool) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that read back as the same value.
    let sci = if single {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let dot = if tail.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{dot}{tail}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = (exp + 1) as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// Parses the first document of `text` as go-yaml v2 decodes it into an untyped value.
///
/// Errors are one line starting `yaml: ` (a syntax error, a bad tagged value, an unknown or
/// self-containing anchor, a bad merge, excessive aliasing); a repeated key is not an error here but
/// shows in [`Document::strict_error`].
pub fn parse(text: &str) -> Result<Document, String> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        stack: Vec::new(),
        anchors: std::collections::HashMap::new(),
        open_anchors: Vec::new(),
        duplicates: Vec::new(),
        root: None,
        decoded: 0,
        aliased: 0,
    };
    // go-yaml decodes the first document and reads no further.
    loop {
        let (event, mark) = parser.next_token().map_err(|e| format!("yaml: {e}"))?;
        let done = matches!(event, Event::StreamEnd | Event::DocumentEnd);
        builder.event(event, mark)?;
        if done {
            break;
        }
    }
    Ok(Document {
        root: builder.root.unwrap_or(Node::Null),
        duplicates: builder.duplicates,
    })
}

/// The string `sigs.k8s.io/yaml` makes of a mapping key: strings as they are, numbers and booleans
/// printed (floats with 32-bit precision, as it does); a null or unsigned key is an error.
pub fn key_string(key: &Node) -> Result<String, String> {
    match key {
        Node::Str(s) => Ok(s.clone()),
        Node::Int(i) => Ok(i.to_string()),
        Node::Bool(b) => Ok(b.to_string()),
        Node::Float(f) => Ok(match go_format_g(*f, true).as_str() {
            "+Inf" => ".inf".to_owned(),
            "-Inf" => "-.inf".to_owned(),
            "NaN" => ".nan".to_owned(),
            s => s.to_owned(),
        }),
        Node::Null => Err("unsupported map key of type: %!s(<nil>), key: <nil>".to_owned()),
        Node::Uint(u) => Err(format!("unsupported map key of type: uint64, key: 0x{u:x}")),
        // `parse` refuses these already.
        Node::Seq(_) | Node::Map(_) => Err(format!("yaml: invalid map key: {}", go_value(key))),
    }
}

/// Checks what `sigs.k8s.io/yaml` checks when it turns the value into JSON: every key first
/// (its conversion runs before the JSON encoder), then every number (JSON has no NaN or infinity).
pub fn check_json(node: &Node) -> Result<(), String> {
    fn keys(node: &Node) -> Result<(), String> {
        match node {
            Node::Seq(items) => items.iter().try_for_each(keys),
            Node::Map(entries) => entries.iter().try_for_each(|e| {
                key_string(&e.key)?;
                keys(&e.value)
            }),
            _ => Ok(()),
        }
    }
    fn numbers(node: &Node) -> Result<(), String> {
        match node {
            Node::Float(f) if !f.is_finite() => Err(format!(
                "json: unsupported value: {}",
                go_format_g(*f, false)
            )),
            Node::Seq(items) => items.iter().try_for_each(numbers),
            Node::Map(entries) => entries.iter().try_for_each(|e| numbers(&e.value)),
            _ => Ok(()),
        }
    }
    keys(node)?;
    numbers(node)
}

/// The JSON `sigs.k8s.io/yaml` produces for the value (see [`check_json`] for its errors).
pub fn to_json(node: &Node) -> Result<serde_json::Value, String> {
    check_json(node)?;
    fn convert(node: &Node) -> serde_json::Value {
        use serde_json::Value;
        match node {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::from(*i),
            Node::Uint(u) => Value::from(*u),
            Node::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String(s.clone()),
            Node::Seq(items) => Value::Array(items.iter().map(convert).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .filter_map(|e| Some((key_string(&e.key).ok()?, convert(&e.value))))
                    .collect(),
            ),
        }
    }
    Ok(convert(node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `text` → the JSON `sigs.k8s.io/yaml` gives the kubelet, or its error.
    fn json_of(text: &str) -> Result<serde_json::Value, String> {
        to_json(&parse(text)?.root)
    }

    /// issue #25 point 4: measured with kubelet 1.32's vendored `sigs.k8s.io/yaml`
    /// (`YAMLToJSONStrict`).
    #[test]
    fn the_kubelets_measured_table() {
        let table: &[(&str, serde_json::Value)] = &[
            ("a: yes", json!({"a": true})),
            ("a: on", json!({"a": true})),
            ("a: y", json!({"a": true})),
            ("a: No", json!({"a": false})),
            ("a: 0755", json!({"a": 493})),
            ("a: 1_000", json!({"a": 1000})),
            ("a: 0x10", json!({"a": 16})),
            ("a: 1:30", json!({"a": "1:30"})),
            ("a: ~", json!({"a": null})),
            ("a: .5", json!({"a": 0.5})),
        ];
        for (yaml, want) in table {
            assert_eq!(&json_of(yaml).unwrap(), want, "{yaml}");
        }
    }

    /// go-yaml v2's own vectors (`decode_test.go`, `unmarshalTests`) decoding into an untyped map.
    #[test]
    fn go_yaml_v2_decode_vectors() {
        let table: &[(&str, Node)] = &[
            ("v: hi", Node::Str("hi".into())),
            ("v: true", Node::Bool(true)),
            ("v: 10", Node::Int(10)),
            ("v: 0b10", Node::Int(2)),
            ("v: 0xA", Node::Int(10)),
            ("v: 0.1", Node::Float(0.1)),
            ("v: .1", Node::Float(0.1)),
            ("v: .Inf", Node::Float(f64::INFINITY)),
            ("v: -.Inf", Node::Float(f64::NEG_INFINITY)),
            ("v: -10", Node::Int(-10)),
            ("v: -.1", Node::Float(-0.1)),
            ("v: 6.8523e+5", Node::Float(6.8523e+5)),
            ("v: 685.230_15e+03", Node::Float(685.23015e+03)),
            ("v: 685_230.15", Node::Float(685230.15)),
            ("v: -.inf", Node::Float(f64::NEG_INFINITY)),
            ("v: y", Node::Bool(true)),
            ("v: NO", Node::Bool(false)),
            ("v: True", Node::Bool(true)),
            ("v: on", Node::Bool(true)),
            ("v: 685230", Node::Int(685230)),
            ("v: +685_230", Node::Int(685230)),
            ("v: 02472256", Node::Int(685230)),
            ("v: 0x_0A_74_AE", Node::Int(685230)),
            ("v: 0b1010_0111_0100_1010_1110", Node::Int(685230)),
            ("v: -0b101010", Node::Int(-42)),
            (
                "v: -0b1000000000000000000000000000000000000000000000000000000000000000",
                Node::Int(i64::MIN),
            ),
            ("v:", Node::Null),
            ("v: ~", Node::Null),
            ("v: null", Node::Null),
            ("v: !!float '1.1'", Node::Float(1.1)),
            ("v: !!float 0", Node::Float(0.0)),
            ("v: !!float -1", Node::Float(-1.0)),
            ("v: !!null ''", Node::Null),
            (
                "%TAG !y! tag:yaml.org,2002:\n---\nv: !y!int '1'",
                Node::Int(1),
            ),
            ("v: ! test", Node::Str("test".into())),
            ("v: -b_c", Node::Str("-b_c".into())),
            ("v: +b_c", Node::Str("+b_c".into())),
            ("v: 50cent_of_dollar", Node::Str("50cent_of_dollar".into())),
            ("v: !!str 2015-01-01", Node::Str("2015-01-01".into())),
            ("v: \"2015-01-01\"", Node::Str("2015-01-01".into())),
            (
                "v: !!timestamp \"2015-01-01\"",
                Node::Str("2015-01-01".into()),
            ),
            ("v: 2015-01-01", Node::Str("2015-01-01".into())),
            // Sexagesimal numbers are purposely unsupported.
            ("v: 190:20:30", Node::Str("190:20:30".into())),
            ("v: 190:20:30.15", Node::Str("190:20:30.15".into())),
            ("v: !!binary aGVsbG8=", Node::Str("hello".into())),
        ];
        for (yaml, want) in table {
            let doc = parse(yaml).unwrap();
            assert_eq!(doc.root.get("v"), Some(want), "{yaml}");
        }
        let nan = parse("v: .NaN").unwrap();
        assert!(matches!(nan.root.get("v"), Some(Node::Float(f)) if f.is_nan()));
    }

    /// Every word go-yaml v2's table knows, and near misses that stay strings.
    #[test]
    fn booleans_and_nulls_are_yaml_1_1_words() {
        for word in [
            "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        ] {
            assert_eq!(resolve_plain(word), Node::Bool(true), "{word}");
        }
        for word in [
            "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        ] {
            assert_eq!(resolve_plain(word), Node::Bool(false), "{word}");
        }
        for word in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(word), Node::Null, "{word:?}");
        }
        for word in [
            "yEs", "oN", "t", "f", "nULL", "NaN", "Inf", "+inf", "none", "-", ".",
        ] {
            assert_eq!(resolve_plain(word), Node::Str(word.into()), "{word}");
        }
    }

    #[test]
    fn numbers_follow_go_parse_int_and_the_float_pattern() {
        let table: &[(&str, Node)] = &[
            ("0", Node::Int(0)),
            ("-0", Node::Int(0)),
            ("007", Node::Int(7)),
            ("0o17", Node::Int(15)),
            ("0X1F", Node::Int(31)),
            ("+0x10", Node::Int(16)),
            ("1__0", Node::Int(10)),
            ("9223372036854775807", Node::Int(i64::MAX)),
            ("9223372036854775808", Node::Uint(9_223_372_036_854_775_808)),
            ("18446744073709551615", Node::Uint(u64::MAX)),
            (
                "18446744073709551616",
                Node::Float(18_446_744_073_709_551_616.0),
            ),
            (
                "-9223372036854775809",
                Node::Float(-9_223_372_036_854_775_809.0),
            ),
            // Not octal, but a float by the pattern.
            ("08", Node::Float(8.0)),
            ("09.5", Node::Float(9.5)),
            ("1e3", Node::Float(1000.0)),
            ("1.", Node::Float(1.0)),
            ("+.5", Node::Float(0.5)),
            (".5e1", Node::Float(5.0)),
            // Out of range for ParseFloat: a string.
            ("1e400", Node::Str("1e400".into())),
            (".5_0", Node::Str(".5_0".into())),
            ("0x", Node::Str("0x".into())),
            ("0b2", Node::Str("0b2".into())),
            ("1.2.3", Node::Str("1.2.3".into())),
            ("10.0.0.1", Node::Str("10.0.0.1".into())),
            ("1:30", Node::Str("1:30".into())),
            ("12h", Node::Str("12h".into())),
            (
                "2001-12-14t21:59:43.10Z",
                Node::Str("2001-12-14t21:59:43.10Z".into()),
            ),
        ];
        for (text, want) in table {
            assert_eq!(&resolve_plain(text), want, "{text}");
        }
    }

    #[test]
    fn quoted_and_block_scalars_are_always_strings() {
        let doc =
            parse("a: 'yes'\nb: \"0755\"\nc: |\n  on\nd: >-\n  ~\ne: [\"1_000\", '.5']\n").unwrap();
        assert_eq!(
            to_json(&doc.root).unwrap(),
            json!({"a": "yes", "b": "0755", "c": "on\n", "d": "~", "e": ["1_000", ".5"]})
        );
    }

    #[test]
    fn keys_become_strings_as_sigs_yaml_prints_them() {
        assert_eq!(
            json_of("yes: a\n1: b\n0x10: c\n1.5: d\n1e6: e\n0.0001: f\n").unwrap(),
            json!({"true": "a", "1": "b", "16": "c", "1.5": "d", "1e+06": "e", "0.0001": "f"})
        );
        assert_eq!(
            json_of("~: a").unwrap_err(),
            "unsupported map key of type: %!s(<nil>), key: <nil>"
        );
        assert_eq!(
            json_of("a: [1, .inf]").unwrap_err(),
            "json: unsupported value: +Inf"
        );
        assert_eq!(
            json_of("a: -.inf").unwrap_err(),
            "json: unsupported value: -Inf"
        );
        assert_eq!(
            json_of("a: .nan").unwrap_err(),
            "json: unsupported value: NaN"
        );
        // A key problem is found before a value problem.
        assert!(
            json_of("a: .nan\n~: b\n")
                .unwrap_err()
                .starts_with("unsupported map key")
        );
    }

    /// go-yaml v2's `unmarshalErrorTests` that are not about syntax.
    #[test]
    fn go_yaml_v2_error_vectors() {
        let table: &[(&str, &str)] = &[
            (
                "v: !!float 'error'",
                "yaml: cannot decode !!str `error` as a !!float",
            ),
            (
                "v: !!int 1.5",
                "yaml: cannot decode !!float `1.5` as a !!int",
            ),
            (
                "v: !!bool maybe",
                "yaml: cannot decode !!str `maybe` as a !!bool",
            ),
            (
                "v: !!timestamp 2015-02-30",
                "yaml: cannot decode !!str `2015-02-30` as a !!timestamp",
            ),
            ("a: &a\n  b: *a\n", "yaml: anchor value contains itself"),
            (
                "a: &x null\n<<:\n- *x\nb: &x {}\n",
                "yaml: map merge requires map or sequence of maps as the value",
            ),
            (
                "a: !!binary ==",
                "yaml: !!binary value contains invalid base64 data",
            ),
            ("{[.]}", "yaml: invalid map key: []interface {}{\".\"}"),
        ];
        for (yaml, want) in table {
            assert_eq!(parse(yaml).unwrap_err(), *want, "{yaml}");
        }
        let laughs = "a: &a [00,00,00,00,00,00,00,00,00]\n\
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
            c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
            e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
            g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
            h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n\
            i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        assert_eq!(
            parse(laughs).unwrap_err(),
            "yaml: document contains excessive aliasing"
        );
        assert!(parse("v: [A,").unwrap_err().starts_with("yaml: "));
    }

    #[test]
    fn anchors_merges_and_repeated_keys() {
        let doc = parse(
            "First occurrence: &anchor Foo\nSecond occurrence: *anchor\nOverride anchor: &anchor Bar\nReuse anchor: *anchor\n",
        )
        .unwrap();
        assert_eq!(
            to_json(&doc.root).unwrap(),
            json!({"First occurrence": "Foo", "Second occurrence": "Foo", "Override anchor": "Bar", "Reuse anchor": "Bar"})
        );
        // Earlier merged maps take precedence; an explicit key after the merge is a repeat.
        // (`y` would be the key `true`.)
        let doc =
            parse("a: &a {x: 1, v: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n  w: 3\n").unwrap();
        assert_eq!(
            to_json(doc.root.get("c").unwrap()).unwrap(),
            json!({"x": 1, "v": 1, "z": 2, "w": 3})
        );
        // The earlier map was merged last, over the later one: strict decoding refuses that.
        assert_eq!(doc.duplicates, ["line 1: key \"x\" already set in map"]);
        // A repeated key: the last value wins, and strict decoding names the line of the value.
        let doc = parse("name: a\nother: 1\nname: b\n9: x\n9: y\n").unwrap();
        assert_eq!(doc.root.get("name"), Some(&Node::Str("b".into())));
        assert_eq!(
            doc.strict_error().unwrap(),
            "yaml: unmarshal errors:\n  line 3: key \"name\" already set in map\n  line 5: key 9 already set in map"
        );
        // A quoted `<<` is an ordinary key.
        let doc = parse("\"<<\": {a: 1}\n").unwrap();
        assert_eq!(to_json(&doc.root).unwrap(), json!({"<<": {"a": 1}}));
    }

    /// The walks over a document recurse: deep nesting must be an error, not a stack overflow.
    /// (yaml-rust2 stops at a depth of a few hundred; go-yaml at 10,000.)
    #[test]
    fn deep_nesting_is_an_error() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep(100)).is_ok());
        let e = parse(&deep(10_001)).unwrap_err();
        assert!(e.starts_with("yaml: recursion limit exceeded"), "{e}");
    }

    #[test]
    fn only_the_first_document_is_read() {
        let doc = parse("a: 1\n---\nb: [unclosed\n").unwrap();
        assert_eq!(to_json(&doc.root).unwrap(), json!({"a": 1}));
        assert_eq!(parse("").unwrap().root, Node::Null);
        assert_eq!(parse("# only a comment\n").unwrap().root, Node::Null);
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_format_g(1000.0, true), "1000");
        assert_eq!(go_format_g(123456.0, true), "123456");
        assert_eq!(go_format_g(1234567.0, true), "1.234567e+06");
        assert_eq!(go_format_g(1e6, true), "1e+06");
        assert_eq!(go_format_g(123456789.0, true), "1.2345679e+08");
        assert_eq!(go_format_g(0.1, true), "0.1");
        assert_eq!(go_format_g(0.0001, true), "0.0001");
        assert_eq!(go_format_g(0.00001, true), "1e-05");
        assert_eq!(go_format_g(-2.5, false), "-2.5");
        assert_eq!(go_format_g(1e21, false), "1e+21");
    }
}
