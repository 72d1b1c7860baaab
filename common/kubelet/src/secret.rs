//! A string that must never reach a log line.
//!
//! Registry passwords, cloud tokens, client secrets and service-account tokens are all held as
//! [`Secret`]. Its `Debug` and `Display` print `<redacted>`, so a stray `{:?}` in a log statement or
//! an error message cannot leak it; the value is reached only through [`Secret::expose`], which is
//! easy to grep for. Serialization writes the real value, because the response on stdout is the one
//! place a credential has to appear.

use std::fmt;

/// The text printed in place of a secret.
pub const REDACTED: &str = "<redacted>";

/// A secret string; see the module docs.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value that must not be logged.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
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
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
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
    fn serializes_the_real_value_for_the_response() {
        let s = Secret::new("pa\"ss");
        assert_eq!(serde_json::to_string(&s).unwrap(), r#""pa\"ss""#);
        let back: Secret = serde_json::from_str(r#""x""#).unwrap();
        assert_eq!(back.expose(), "x");
    }
}
