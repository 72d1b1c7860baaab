//! A string that must never reach a log line.
//!
//! Registry passwords, cloud tokens, client secrets and service-account tokens are all held as
//! [`Secret`]. Its `Debug` and `Display` print `<redacted>`, so a stray `{:?}` in a log statement or
//! an error message cannot leak it; the value is reached only through [`Secret::expose`], which is
//! easy to grep for. Serialization writes the real value, because the response on stdout is the one
//! place a credential has to appear.
//!
//! A secret can still reach text by another road: an upstream error body that quotes the key it
//! rejects, a library's message. So every `Secret` made (and every value a provider hands to
//! [`remember`], such as an AWS secret key the SDK holds) is also remembered in a small
//! process-wide list, and [`redact_known`] replaces each of them, exactly, in text on its way to
//! stderr. This backs the shape-based heuristics (runs of token characters), which cannot catch a
//! secret with `/` in it. The list is bounded ([`MAX_KNOWN`] values of [`MIN_KNOWN_LEN`] to
//! [`MAX_KNOWN_LEN`] bytes, oldest forgotten first), and [`redact_known`] costs nothing until a
//! line is printed.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

/// The text printed in place of a secret.
pub const REDACTED: &str = "<redacted>";

/// A secret string; see the module docs.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value that must not be logged, and [`remember`]s it.
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        remember(&value);
        Secret(value)
    }

    /// The real value, for the few places that must send or write it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret::new(value)
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret::new)
    }
}

/// Values shorter than this are not remembered: `p` or `msi` would hide innocent text. Short
/// secrets still never print through `Secret`'s `Display`.
pub const MIN_KNOWN_LEN: usize = 8;

/// Values longer than this are not remembered (a secret is a few KiB at most; the list stays
/// small).
pub const MAX_KNOWN_LEN: usize = 16 * 1024;

/// How many values are remembered; past it the oldest is forgotten. A run holds a handful (the
/// service-account token, a client secret, an access and a refresh token, a session key, the
/// registry password), each in up to three spellings.
pub const MAX_KNOWN: usize = 256;

/// The remembered values, oldest first.
struct Known(VecDeque<Box<str>>);

impl Known {
    fn add(&mut self, spelling: &str) {
        if self.0.iter().any(|k| **k == *spelling) {
            return;
        }
        if self.0.len() >= MAX_KNOWN {
            self.0.pop_front();
        }
        self.0.push_back(spelling.into());
    }

    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut hits: Vec<&str> = self
            .0
            .iter()
            .map(|k| &**k)
            .filter(|k| text.contains(k))
            .collect();
        if hits.is_empty() {
            return Cow::Borrowed(text);
        }
        hits.sort_by_key(|k| std::cmp::Reverse(k.len()));
        let mut out = text.to_owned();
        for hit in hits {
            out = out.replace(hit, REDACTED);
        }
        Cow::Owned(out)
    }
}

static KNOWN: Mutex<Known> = Mutex::new(Known(VecDeque::new()));

fn known() -> MutexGuard<'static, Known> {
    // A thread that panicked while holding the lock left the list intact; keep using it.
    KNOWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Remembers a secret that is not held as a [`Secret`] (one a library keeps, say), for
/// [`redact_known`]: as written, JSON-escaped, and with `/` escaped as `\/` (JSON allows it and
/// AWS secret keys hold `/`). Values outside [`MIN_KNOWN_LEN`]..=[`MAX_KNOWN_LEN`] bytes are
/// ignored; surrounding whitespace is trimmed.
pub fn remember(value: &str) {
    let value = value.trim();
    if !(MIN_KNOWN_LEN..=MAX_KNOWN_LEN).contains(&value.len()) {
        return;
    }
    let escaped = serde_json::to_string(value).unwrap_or_default();
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or(value);
    let slashes = value.replace('/', "\\/");
    let mut list = known();
    for spelling in [value, escaped, slashes.as_str()] {
        list.add(spelling);
    }
}

/// `text` with every remembered secret replaced by [`REDACTED`] (longest first, so one that
/// holds another is hidden whole). Borrowed back unchanged when none occurs.
pub fn redact_known(text: &str) -> Cow<'_, str> {
    if text.len() < MIN_KNOWN_LEN {
        return Cow::Borrowed(text);
    }
    known().redact(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(&s)), "Some(<redacted>)");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn every_secret_made_is_hidden_exactly_in_text() {
        // AWS-style: 40 characters with `/`, which the token-run heuristic lets through.
        let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        let text = format!("HTTP 400: The key {key} is invalid");
        assert_eq!(redact_known(&text), text, "not a secret yet");
        let _held = Secret::new(key);
        assert_eq!(
            redact_known(&text),
            "HTTP 400: The key <redacted> is invalid"
        );
        // JSON spellings of it too.
        let json = r#"{"message":"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY"}"#;
        assert_eq!(redact_known(json), r#"{"message":"<redacted>"}"#);
        // Deserialized and converted secrets are remembered; a longer one that holds a shorter
        // one is hidden whole.
        let _: Secret = serde_json::from_str(r#""deser-secret-1234""#).unwrap();
        let _ = Secret::from("deser-secret-1234-and-more".to_owned());
        assert_eq!(
            redact_known("a deser-secret-1234-and-more b deser-secret-1234 c"),
            "a <redacted> b <redacted> c"
        );
        // Short values are not remembered; text without secrets is borrowed.
        let _ = Secret::new("short");
        assert_eq!(redact_known("short and sweet"), "short and sweet");
        assert!(matches!(
            redact_known("nothing here at all"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_list_is_bounded_oldest_forgotten_first() {
        // A list of its own: the process-wide one is shared with the other tests.
        let mut list = Known(VecDeque::new());
        list.add("bounded-first-secret-0000");
        list.add("bounded-first-secret-0000");
        assert_eq!(list.0.len(), 1);
        for i in 0..MAX_KNOWN {
            list.add(&format!("bounded-filler-{i:08}"));
        }
        assert_eq!(list.0.len(), MAX_KNOWN);
        assert_eq!(
            list.redact("bounded-first-secret-0000"),
            "bounded-first-secret-0000"
        );
        let last = format!("bounded-filler-{:08}", MAX_KNOWN - 1);
        assert_eq!(list.redact(&last), REDACTED);
    }

    #[test]
    fn serializes_the_real_value_for_the_response() {
        let s = Secret::new("pa\"ss");
        assert_eq!(serde_json::to_string(&s).unwrap(), r#""pa\"ss""#);
        let back: Secret = serde_json::from_str(r#""x""#).unwrap();
        assert_eq!(back.expose(), "x");
    }
}
