//! Go `time.Duration` values as they travel in kubelet JSON.
//!
//! The kubelet decodes `cacheDuration` (and the config's `defaultCacheDuration`) with Go's
//! `time.ParseDuration`, and Go writes durations with `Duration.String()`. This module owns
//! [`GoDuration`], a signed nanosecond count that parses and prints exactly like Go, and its
//! serde form: a JSON string, never a number (a number makes the kubelet drop the whole
//! response).

use std::fmt;
use std::str::FromStr;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Go computes in `uint64` and accepts magnitudes up to 2^63 so that `i64::MIN` parses.
const MAX_MAGNITUDE: u64 = 1 << 63;

/// A Go `time.Duration`: signed nanoseconds, formatted and parsed exactly as Go does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(i64);

impl GoDuration {
    /// The zero duration, written `"0s"`.
    pub const ZERO: GoDuration = GoDuration(0);

    /// A duration of `n` nanoseconds.
    pub const fn from_nanos(n: i64) -> Self {
        GoDuration(n)
    }

    /// A duration of `s` seconds, saturating at the `i64` nanosecond range (about ±292 years).
    pub const fn from_secs(s: i64) -> Self {
        GoDuration(s.saturating_mul(SECOND as i64))
    }

    /// Converts a std duration, saturating at `i64::MAX` nanoseconds.
    pub fn from_std(d: std::time::Duration) -> Self {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// The signed number of nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Converts to a std duration; `None` if negative, since std durations cannot be.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Whether the duration is exactly zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Parses a duration string as Go's `time.ParseDuration` does: an optional sign, then one
    /// or more decimal numbers (fraction allowed) each followed by a unit `ns`, `us`, `µs`,
    /// `μs`, `ms`, `s`, `m` or `h`, e.g. `"300ms"`, `"-1.5h"`, `"2h45m"`. A lone `"0"` needs
    /// no unit. Values outside the `i64` nanosecond range are errors.
    pub fn parse(s: &str) -> Result<GoDuration, DurationError> {
        let invalid = || DurationError::Invalid {
            input: s.to_owned(),
        };
        let mut rest = s.as_bytes();
        let mut neg = false;
        if let Some((&c, tail)) = rest.split_first()
            && (c == b'-' || c == b'+')
        {
            neg = c == b'-';
            rest = tail;
        }
        if rest == b"0" {
            return Ok(GoDuration::ZERO);
        }
        if rest.is_empty() {
            return Err(invalid());
        }

        let mut total: u64 = 0;
        while let Some(&first) = rest.first() {
            if !(first == b'.' || first.is_ascii_digit()) {
                return Err(invalid());
            }

            let before = rest.len();
            let (mut v, tail) = leading_int(rest).ok_or_else(invalid)?;
            rest = tail;
            let pre = before != rest.len();

            let (mut f, mut scale, mut post) = (0u64, 1f64, false);
            if let Some((b'.', tail)) = rest.split_first() {
                let before = tail.len();
                let (frac, frac_scale, tail) = leading_fraction(tail);
                (f, scale, rest) = (frac, frac_scale, tail);
                post = before != rest.len();
            }
            if !pre && !post {
                // No digits at all, e.g. ".s" or "-.s".
                return Err(invalid());
            }

            let unit_len = rest
                .iter()
                .position(|&c| c == b'.' || c.is_ascii_digit())
                .unwrap_or(rest.len());
            if unit_len == 0 {
                return Err(DurationError::MissingUnit {
                    input: s.to_owned(),
                });
            }
            let (unit_text, tail) = rest.split_at(unit_len);
            rest = tail;
            let unit = unit_value(unit_text).ok_or_else(|| DurationError::UnknownUnit {
                // The unit ends at an ASCII byte or at the end, so it is whole UTF-8.
                unit: String::from_utf8_lossy(unit_text).into_owned(),
                input: s.to_owned(),
            })?;

            if v > MAX_MAGNITUDE / unit {
                return Err(invalid());
            }
            v *= unit;
            if f > 0 {
                // Go goes through float64 here so that fractions of an hour stay
                // nanosecond-accurate; copying it keeps results bit-identical to Go.
                v += (f as f64 * (unit as f64 / scale)) as u64;
                if v > MAX_MAGNITUDE {
                    return Err(invalid());
                }
            }
            // Go's `d += v` can wrap to 0 for two 2^63 terms; an overflow is an error here.
            total = match total.checked_add(v) {
                Some(t) if t <= MAX_MAGNITUDE => t,
                _ => return Err(invalid()),
            };
        }

        if neg {
            // 2^63 becomes i64::MIN, which is why magnitudes up to 2^63 were allowed.
            return Ok(GoDuration((total as i64).wrapping_neg()));
        }
        i64::try_from(total).map(GoDuration).map_err(|_| invalid())
    }
}

/// Go's `leadingInt`: the leading `[0-9]*` as a number, `None` on overflow past 2^63.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (number, rest) = s.split_at(digits);
    let mut x: u64 = 0;
    for &c in number {
        if x > MAX_MAGNITUDE / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > MAX_MAGNITUDE {
            return None;
        }
    }
    Some((x, rest))
}

/// Go's `leadingFraction`: the leading `[0-9]*` after a point, as `x / scale`. Digits past
/// `u64` precision are consumed but ignored, as in Go.
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (number, rest) = s.split_at(digits);
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for &c in number {
        if overflow {
            continue;
        }
        if x > (MAX_MAGNITUDE - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > MAX_MAGNITUDE {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, rest)
}

fn unit_value(unit: &[u8]) -> Option<u64> {
    match unit {
        b"ns" => Some(NANOSECOND),
        // "µs" is U+00B5 MICRO SIGN, "μs" U+03BC GREEK SMALL LETTER MU; Go accepts both.
        b"us" | b"\xC2\xB5s" | b"\xCE\xBCs" => Some(MICROSECOND),
        b"ms" => Some(MILLISECOND),
        b"s" => Some(SECOND),
        b"m" => Some(MINUTE),
        b"h" => Some(HOUR),
        _ => None,
    }
}

/// Go's `fmtFrac`: `.digits` of `v / 10^prec` without trailing zeros, or nothing.
fn push_fraction(out: &mut String, v: u64, prec: usize) {
    if v == 0 {
        return;
    }
    let digits = format!("{v:0prec$}");
    out.push('.');
    out.push_str(digits.trim_end_matches('0'));
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String()`: `"72h3m0.5s"`, `"1.5ms"`, `"0s"`; hours are the largest unit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(32);
        if self.0 < 0 {
            out.push('-');
        }
        let u = self.0.unsigned_abs();
        if u == 0 {
            out.push_str("0s");
        } else if u < SECOND {
            // Below a second Go switches to the unit that keeps a non-zero leading digit.
            let (unit, scale, prec) = if u < MICROSECOND {
                ("ns", NANOSECOND, 0)
            } else if u < MILLISECOND {
                ("µs", MICROSECOND, 3)
            } else {
                ("ms", MILLISECOND, 6)
            };
            out.push_str(&(u / scale).to_string());
            push_fraction(&mut out, u % scale, prec);
            out.push_str(unit);
        } else {
            let hours = u / HOUR;
            let minutes = u / MINUTE % 60;
            let seconds = u / SECOND % 60;
            if hours > 0 {
                out.push_str(&format!("{hours}h{minutes}m"));
            } else if minutes > 0 {
                out.push_str(&format!("{minutes}m"));
            }
            out.push_str(&seconds.to_string());
            push_fraction(&mut out, u % SECOND, 9);
            out.push('s');
        }
        f.pad(&out)
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GoDuration::parse(s)
    }
}

impl serde::Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl serde::de::Visitor<'_> for Visitor {
            type Value = GoDuration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration string such as \"1m30s\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GoDuration, E> {
                GoDuration::parse(v).map_err(E::custom)
            }
        }

        // Only strings: the kubelet rejects a numeric cacheDuration, so accepting one here
        // would hide a response the kubelet will drop.
        deserializer.deserialize_str(Visitor)
    }
}

/// Why a duration string is not a Go duration; `Display` uses Go's exact wording.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Malformed or out of range, e.g. `time: invalid duration "abc"`.
    #[error("time: invalid duration {}", go_quote(.input))]
    Invalid {
        /// The whole input.
        input: String,
    },
    /// A number without a unit, e.g. `time: missing unit in duration "1"`.
    #[error("time: missing unit in duration {}", go_quote(.input))]
    MissingUnit {
        /// The whole input.
        input: String,
    },
    /// A unit Go does not know, e.g. `time: unknown unit "d" in duration "1d"`.
    #[error("time: unknown unit {} in duration {}", go_quote(.unit), go_quote(.input))]
    UnknownUnit {
        /// The unrecognised unit.
        unit: String,
        /// The whole input.
        input: String,
    },
}

/// Go's `time.quote`: double quotes, `\"` and `\\` escaped, and every byte of a non-ASCII or
/// control character as `\xNN`, so error text stays printable ASCII.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000 * NS;
    const MS: i64 = 1_000 * US;
    const S: i64 = 1_000 * MS;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `parseDurationTests` (src/time/time_test.go).
    #[test]
    fn parses_go_vectors() {
        let cases: &[(&str, i64)] = &[
            // simple
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            // sign
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            // decimal
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            // different units
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US), // U+00B5
            ("12μs", 12 * US), // U+03BC
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            // composite durations
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            // large value
            ("52763797000ns", 52_763_797_000 * NS),
            // more than 9 digits after decimal point, see https://golang.org/issue/6617
            ("0.3333333333333333333h", 20 * M),
            // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
            ("9007199254740993ns", (1 << 53) + 1),
            // largest duration that can be represented by int64 in nanoseconds
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            // largest negative round trip value, see https://golang.org/issue/48629
            ("-2562047h47m16.854775808s", i64::MIN),
            // huge string; issue 15011.
            ("0.100000000000000000000h", 6 * M),
            // This value tests the first overflow check in leadingFraction.
            (
                "0.830103483285477580700h",
                49 * M + 48 * S + 372_539_827 * NS,
            ),
            // the forms the kubelet contract lists for cacheDuration
            ("1h", H),
            ("90m", 90 * M),
            ("1h30m0s", H + 30 * M),
            ("500ms", 500 * MS),
            ("0s", 0),
        ];
        let mut failures = Vec::new();
        for &(input, want) in cases {
            match GoDuration::parse(input) {
                Ok(d) if d.as_nanos() == want => {}
                other => failures.push(format!("{input:?}: got {other:?}, want {want}")),
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Go's `parseDurationErrorTests`: the error must contain the quoted input. Rows with
    /// invalid UTF-8 (`"\x85\x85"`, `"\xffff"`) cannot be a Rust `&str` and are left out.
    #[test]
    fn rejects_go_error_vectors() {
        let cases: &[(&str, &str)] = &[
            // invalid
            ("", r#""""#),
            ("3", r#""3""#),
            ("-", r#""-""#),
            ("s", r#""s""#),
            (".", r#"".""#),
            ("-.", r#""-.""#),
            (".s", r#"".s""#),
            ("+.s", r#""+.s""#),
            ("1d", r#""1d""#),
            ("\u{FFFD}", r#""\xef\xbf\xbd""#),
            (
                "\u{FFFD} hello \u{FFFD} world",
                r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
            ),
            // overflow
            ("9223372036854775810ns", r#""9223372036854775810ns""#),
            ("9223372036854775808ns", r#""9223372036854775808ns""#),
            ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
            ("9223372036854776us", r#""9223372036854776us""#),
            ("3000000h", r#""3000000h""#),
            ("9223372036854775.808us", r#""9223372036854775.808us""#),
            (
                "9223372036854ms775us808ns",
                r#""9223372036854ms775us808ns""#,
            ),
            // Go wraps this sum to 0 (two 2^63 terms); an overflow must be an error.
            (
                "-9223372036854775808ns9223372036854775808ns",
                r#""-9223372036854775808ns9223372036854775808ns""#,
            ),
            ("99999999999999999999h", r#""99999999999999999999h""#),
        ];
        let mut failures = Vec::new();
        for &(input, expect) in cases {
            match GoDuration::parse(input) {
                Err(e) if e.to_string().contains(expect) => {}
                other => failures.push(format!(
                    "{input:?}: got {other:?}, want error with {expect}"
                )),
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn error_messages_use_go_wording() {
        let cases: &[(&str, &str)] = &[
            ("abc", r#"time: invalid duration "abc""#),
            ("1", r#"time: missing unit in duration "1""#),
            ("00", r#"time: missing unit in duration "00""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            ("1h2x", r#"time: unknown unit "x" in duration "1h2x""#),
            ("5 s", r#"time: unknown unit " s" in duration "5 s""#),
            (
                "1é",
                r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#,
            ),
            ("\"1s\"", r#"time: invalid duration "\"1s\"""#),
            ("a\\b", r#"time: invalid duration "a\\b""#),
            ("1s\n", r#"time: unknown unit "s\x0a" in duration "1s\x0a""#),
            ("", r#"time: invalid duration """#),
            (" 1s", r#"time: invalid duration " 1s""#),
            ("--1s", r#"time: invalid duration "--1s""#),
        ];
        let mut failures = Vec::new();
        for &(input, want) in cases {
            match GoDuration::parse(input) {
                Err(e) if e.to_string() == want => {}
                other => failures.push(format!("{input:?}: got {other:?}, want {want}")),
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn error_variants() {
        assert_eq!(
            GoDuration::parse("1d"),
            Err(DurationError::UnknownUnit {
                unit: "d".into(),
                input: "1d".into()
            })
        );
        assert_eq!(
            GoDuration::parse("1"),
            Err(DurationError::MissingUnit { input: "1".into() })
        );
        assert_eq!(
            GoDuration::parse("x"),
            Err(DurationError::Invalid { input: "x".into() })
        );
    }

    /// Go's `durationTests` (src/time/time_test.go) plus the forms the plugins emit.
    #[test]
    fn formats_like_go() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (NS, "1ns"),
            (1100 * NS, "1.1µs"),
            (2200 * US, "2.2ms"),
            (3300 * MS, "3.3s"),
            (4 * M + 5 * S, "4m5s"),
            (4 * M + 5001 * MS, "4m5.001s"),
            (5 * H + 6 * M + 7001 * MS, "5h6m7.001s"),
            (8 * M + NS, "8m0.000000001s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (6 * H, "6h0m0s"),
            (90 * S, "1m30s"),
            (1500 * MS, "1.5s"),
            (21_600 * NS, "21.6µs"),
            (-M, "-1m0s"),
            (H, "1h0m0s"),
            (S, "1s"),
            (999 * NS, "999ns"),
            (US, "1µs"),
            (999_999_999 * NS, "999.999999ms"),
            (100 * H, "100h0m0s"),
            (-NS, "-1ns"),
        ];
        let mut failures = Vec::new();
        for &(nanos, want) in cases {
            let d = GoDuration::from_nanos(nanos);
            let got = d.to_string();
            if got != want {
                failures.push(format!("{nanos}: got {got:?}, want {want:?}"));
            }
            // Go's TestDurationString also checks the negated form.
            if nanos > 0 {
                let got = GoDuration::from_nanos(-nanos).to_string();
                if got != format!("-{want}") {
                    failures.push(format!("-{nanos}: got {got:?}, want \"-{want}\""));
                }
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn display_honours_width() {
        assert_eq!(format!("{:>6}", GoDuration::from_secs(1)), "    1s");
    }

    /// Every printed value parses back to itself (Go's TestParseDurationRoundTrip, widened).
    #[test]
    fn round_trips_display_and_parse() {
        let mut values = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        // xorshift64*: deterministic, spreads over every magnitude via the shift.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000u32 {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let shifted = (r >> (i % 64)) as i64;
            values.push(if i % 2 == 0 {
                shifted
            } else {
                shifted.wrapping_neg()
            });
        }
        for unit in [NS, US, MS, S, M, H] {
            for k in -1000..=1000 {
                values.push(k * unit);
            }
        }
        let mut failures = Vec::new();
        for nanos in values {
            let d = GoDuration::from_nanos(nanos);
            let text = d.to_string();
            match GoDuration::parse(&text) {
                Ok(back) if back == d => {}
                other => failures.push(format!("{nanos} -> {text:?} -> {other:?}")),
            }
        }
        assert!(
            failures.is_empty(),
            "{} failures: {:#?}",
            failures.len(),
            &failures[..failures.len().min(10)]
        );
    }

    #[test]
    fn from_str_matches_parse() {
        assert_eq!("1m30s".parse::<GoDuration>(), Ok(GoDuration::from_secs(90)));
        assert!("1d".parse::<GoDuration>().is_err());
    }

    #[test]
    fn constructors_and_accessors() {
        assert_eq!(GoDuration::ZERO, GoDuration::default());
        assert!(GoDuration::ZERO.is_zero());
        assert!(!GoDuration::ZERO.is_negative());
        assert!(GoDuration::from_nanos(-1).is_negative());
        assert_eq!(GoDuration::from_secs(2).as_nanos(), 2 * S);
        assert_eq!(GoDuration::from_secs(i64::MAX).as_nanos(), i64::MAX);
        assert_eq!(GoDuration::from_secs(i64::MIN).as_nanos(), i64::MIN);
        assert_eq!(
            GoDuration::from_std(std::time::Duration::from_millis(1500)).as_nanos(),
            1500 * MS
        );
        assert_eq!(
            GoDuration::from_std(std::time::Duration::MAX).as_nanos(),
            i64::MAX
        );
        assert_eq!(
            GoDuration::from_secs(90).to_std(),
            Some(std::time::Duration::from_secs(90))
        );
        assert_eq!(GoDuration::ZERO.to_std(), Some(std::time::Duration::ZERO));
        assert_eq!(GoDuration::from_nanos(-1).to_std(), None);
        assert!(GoDuration::from_nanos(-1) < GoDuration::ZERO);
        assert!(GoDuration::from_secs(60) < GoDuration::from_secs(61));
    }

    #[test]
    fn serializes_as_go_string() {
        let cases: &[(GoDuration, &str)] = &[
            (GoDuration::ZERO, r#""0s""#),
            (GoDuration::from_secs(60), r#""1m0s""#),
            (GoDuration::from_secs(6 * 3600), r#""6h0m0s""#),
            (GoDuration::from_nanos(21_600), "\"21.6\u{b5}s\""),
            (GoDuration::from_secs(-60), r#""-1m0s""#),
        ];
        for &(d, want) in cases {
            assert_eq!(
                serde_json::to_string(&d).ok().as_deref(),
                Some(want),
                "{d:?}"
            );
        }
    }

    #[test]
    fn deserializes_strings_only() {
        let cases: &[(&str, Option<i64>)] = &[
            (r#""1m""#, Some(M)),
            (r#""0s""#, Some(0)),
            (r#""0""#, Some(0)),
            (r#""1h30m0s""#, Some(H + 30 * M)),
            (r#""-1m""#, Some(-M)),
            (r#""12\u00b5s""#, Some(12 * US)),
            ("60", None),
            ("60.5", None),
            ("-1", None),
            ("true", None),
            ("null", None),
            ("{}", None),
            ("[]", None),
            (r#""1d""#, None),
            (r#""""#, None),
            (r#""60""#, None),
        ];
        let mut failures = Vec::new();
        for &(json, want) in cases {
            let got = serde_json::from_str::<GoDuration>(json)
                .ok()
                .map(GoDuration::as_nanos);
            if got != want {
                failures.push(format!("{json}: got {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn deserialize_errors_explain() {
        let message = |json: &str| {
            serde_json::from_str::<GoDuration>(json)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let number = message("60");
        assert!(number.contains("expected a Go duration string"), "{number}");
        let unit = message(r#""1d""#);
        assert!(
            unit.contains(r#"time: unknown unit "d" in duration "1d""#),
            "{unit}"
        );
    }

    /// `null` is the caller's business: an `Option<GoDuration>` field takes it as `None`.
    #[test]
    fn null_through_option() {
        #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
        struct Response {
            #[serde(
                default,
                rename = "cacheDuration",
                skip_serializing_if = "Option::is_none"
            )]
            cache_duration: Option<GoDuration>,
        }
        let cases: &[(&str, Option<Option<i64>>)] = &[
            (r#"{"cacheDuration":null}"#, Some(None)),
            ("{}", Some(None)),
            (r#"{"cacheDuration":"5m"}"#, Some(Some(5 * M))),
            (r#"{"cacheDuration":300}"#, None),
        ];
        for &(json, want) in cases {
            let got = serde_json::from_str::<Response>(json)
                .ok()
                .map(|r| r.cache_duration.map(GoDuration::as_nanos));
            assert_eq!(got, want, "{json}");
        }
        let out = serde_json::to_string(&Response {
            cache_duration: Some(GoDuration::from_secs(300)),
        })
        .ok();
        assert_eq!(out.as_deref(), Some(r#"{"cacheDuration":"5m0s"}"#));
    }
}
