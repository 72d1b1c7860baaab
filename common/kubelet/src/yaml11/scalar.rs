//! What a scalar becomes under go-yaml v2's YAML 1.1 rules: its `resolve()` for plain scalars
//! (`yes` is a boolean, `0755` octal, `1_000` a number, `.5` a float) and for the core `!!` tags.
//!
//! This is the difference between the YAML 1.1 the kubelet reads and the YAML 1.2 core schema
//! yaml-rust2 implements, so it is decided here rather than taken from the parser.

use super::Node;

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
pub(super) fn resolve_tagged(tag: &str, text: &str) -> Result<Node, String> {
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
