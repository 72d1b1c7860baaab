//! Go's `strconv.Quote`.
//!
//! Go's URL and address errors quote the offending text with `%q`, and the kubelet logs them as
//! they are; the checker repeats them, so a user can search for the kubelet's own line. Quoting
//! with Rust's `{:?}` would escape differently (`\u{200b}` against Go's `\u200b`, bytes that are
//! not UTF-8 against `\xc3`).

use super::utf8::{RUNE_ERROR, decode_rune};

/// Go `strconv.Quote`. Printability is approximated (Go uses its own Unicode tables).
pub(crate) fn quote(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut rest = s;
    while let Some(&first) = rest.first() {
        let (rune, n) = decode_rune(rest);
        rest = rest.get(n.max(1)..).unwrap_or_default();
        let c = match char::from_u32(rune) {
            Some(c) if !(rune == RUNE_ERROR && n == 1) => c,
            _ => {
                out.push_str(&format!("\\x{first:02x}"));
                continue;
            }
        };
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Approximation of Go `strconv.IsPrint`: ASCII space counts, other spaces, controls, format
/// characters and private-use characters do not.
fn is_go_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let cp = u32::from(c);
    let format_or_private = matches!(
        cp,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x180e
            | 0x200b..=0x200f
            | 0x2028..=0x202e
            | 0x2060..=0x206f
            | 0xe000..=0xf8ff
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0xfffe..=0xffff
            | 0xf0000..
    );
    !(c.is_control() || c.is_whitespace() || format_or_private)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_matches_strconv_quote() {
        let rows: &[(&[u8], &str)] = &[
            (b"plain", r#""plain""#),
            (b"a\"b\\c", r#""a\"b\\c""#),
            (b"\x07\x08\x0c\n\r\t\x0b", r#""\a\b\f\n\r\t\v""#),
            (b"\x01\x7f", r#""\x01\x7f""#),
            (b"%\xc3", r#""%\xc3""#),
            ("☺é".as_bytes(), "\"☺é\""),
            ("\u{200b}\u{a0}".as_bytes(), r#""\u200b\u00a0""#),
            ("\u{f0000}".as_bytes(), r#""\U000f0000""#),
        ];
        for &(input, want) in rows {
            assert_eq!(quote(input), want);
        }
    }
}
