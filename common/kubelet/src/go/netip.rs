//! Go's `net/netip.ParseAddr`, validation only.
//!
//! Go's URL parser hands a bracketed host (`[fe80::1%25en0]:5000`) to `netip.ParseAddr` and
//! refuses the URL when the address does not parse or is IPv4. The kubelet shows that refusal
//! with `ParseAddr`'s own message, so the checker has to fail on the same inputs with the same
//! words; `std::net` accepts a different set (no zones, other error texts). Only what
//! `parseHost` asks is kept: does it parse, and is it IPv4.

use super::cut;
use super::quote::quote;

/// Which family an address that parsed belongs to.
pub(crate) enum AddrKind {
    /// Dotted IPv4.
    V4,
    /// IPv6, possibly with a zone or an embedded IPv4 tail.
    V6,
}

/// Go `netip.ParseAddr`, keeping Go's error texts.
pub(crate) fn parse_addr(s: &[u8]) -> Result<AddrKind, String> {
    for &b in s {
        match b {
            b'.' => return parse_ipv4_fields(s, s).map(|()| AddrKind::V4),
            b':' => return parse_ipv6(s).map(|()| AddrKind::V6),
            // Presumably an IPv6 address with a zone but without the address.
            b'%' => return Err(addr_error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", None))
}

fn addr_error(input: &[u8], msg: &str, at: Option<&[u8]>) -> String {
    match at {
        Some(at) if !at.is_empty() => {
            format!("ParseAddr({}): {msg} (at {})", quote(input), quote(at))
        }
        _ => format!("ParseAddr({}): {msg}", quote(input)),
    }
}

/// Go `parseIPv4Fields`: `s` is the dotted part of `input` (errors quote the whole input).
fn parse_ipv4_fields(input: &[u8], s: &[u8]) -> Result<(), String> {
    let mut value: u32 = 0;
    let mut fields = 0;
    let mut digits = 0;
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && value == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    None,
                ));
            }
            value = value * 10 + u32::from(c - b'0');
            digits += 1;
            if value > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", None));
            }
        } else if c == b'.' {
            let rest = s.get(i..);
            if i == 0 || i + 1 == s.len() || s.get(i - 1) == Some(&b'.') {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    rest,
                ));
            }
            if fields == 3 {
                return Err(addr_error(input, "IPv4 address too long", None));
            }
            fields += 1;
            value = 0;
            digits = 0;
        } else {
            return Err(addr_error(input, "unexpected character", s.get(i..)));
        }
    }
    if fields < 3 {
        return Err(addr_error(input, "IPv4 address too short", None));
    }
    Ok(())
}

/// Go `parseIPv6` (validation only).
fn parse_ipv6(input: &[u8]) -> Result<(), String> {
    let (mut s, zone) = cut(input, b'%');
    if zone.is_some_and(<[u8]>::is_empty) {
        return Err(addr_error(input, "zone must be a non-empty string", None));
    }
    let zone_len = zone.map_or(0, |z| z.len() + 1);

    let mut ellipsis: Option<usize> = None;
    if let Some(rest) = s.strip_prefix(b"::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok(());
        }
    }

    // `filled` counts the address bytes the groups seen so far occupy.
    let mut filled = 0;
    while filled < 16 {
        let mut off = 0;
        let mut acc: u32 = 0;
        while let Some(&c) = s.get(off) {
            let Some(digit) = char::from(c).to_digit(16) else {
                break;
            };
            acc = acc * 16 + digit;
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    Some(s),
                ));
            }
            if acc > 0xffff {
                return Err(addr_error(input, "IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }

        if s.get(off) == Some(&b'.') {
            if ellipsis.is_none() && filled != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if filled + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            let end = input.len() - zone_len;
            let start = end.saturating_sub(s.len());
            parse_ipv4_fields(input, input.get(start..end).unwrap_or_default())?;
            s = b"";
            filled += 4;
            break;
        }

        filled += 2;
        s = s.get(off..).unwrap_or_default();
        if s.is_empty() {
            break;
        }
        match s {
            [b':'] => {
                return Err(addr_error(
                    input,
                    "colon must be followed by more characters",
                    Some(s),
                ));
            }
            [b':', rest @ ..] => s = rest,
            _ => {
                return Err(addr_error(
                    input,
                    "unexpected character, want colon",
                    Some(s),
                ));
            }
        }
        if let Some(rest) = s.strip_prefix(b":") {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", Some(s)));
            }
            ellipsis = Some(filled);
            s = rest;
            if s.is_empty() {
                break;
            }
        }
    }

    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", Some(s)));
    }
    if filled < 16 {
        if ellipsis.is_none() {
            return Err(addr_error(input, "address string too short", None));
        }
    } else if ellipsis.is_some() {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            None,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netip_parse_addr_follows_go() {
        let ok: &[(&str, bool)] = &[
            ("::", false),
            ("::1", false),
            ("1:2:3:4:5:6:7:8", false),
            ("::ffff:1.2.3.4", false),
            ("fe80::1%eth0", false),
            ("1.2.3.4", true),
        ];
        for &(addr, is_v4) in ok {
            let kind = parse_addr(addr.as_bytes());
            assert!(
                matches!(
                    (kind, is_v4),
                    (Ok(AddrKind::V4), true) | (Ok(AddrKind::V6), false)
                ),
                "{addr}"
            );
        }
        let bad: &[(&str, &str)] = &[
            ("", r#"ParseAddr(""): unable to parse IP"#),
            ("%eth0", r#"ParseAddr("%eth0"): missing IPv6 address"#),
            (
                "01.2.3.4",
                r#"ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero"#,
            ),
            ("1.2.3", r#"ParseAddr("1.2.3"): IPv4 address too short"#),
            (
                "1.2.3.4.5",
                r#"ParseAddr("1.2.3.4.5"): IPv4 address too long"#,
            ),
            (
                "1.2.3.256",
                r#"ParseAddr("1.2.3.256"): IPv4 field has value >255"#,
            ),
            (
                "1..2.3",
                r#"ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")"#,
            ),
            (
                "fe80::1%",
                r#"ParseAddr("fe80::1%"): zone must be a non-empty string"#,
            ),
            (
                "12345::",
                r#"ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")"#,
            ),
            (
                "1::2::3",
                r#"ParseAddr("1::2::3"): multiple :: in address (at ":3")"#,
            ),
            (
                "1:2:3:4:5:6:7:8:9",
                r#"ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")"#,
            ),
            ("1:2:3", r#"ParseAddr("1:2:3"): address string too short"#),
            (
                "1:2:3:4:5:6:7::8",
                r#"ParseAddr("1:2:3:4:5:6:7::8"): the :: must expand to at least one field of zeros"#,
            ),
            (
                "1:2:",
                r#"ParseAddr("1:2:"): colon must be followed by more characters (at ":")"#,
            ),
            (
                "1.2.3.4:5",
                r#"ParseAddr("1.2.3.4:5"): unexpected character (at ":5")"#,
            ),
            (
                "1:2.3.4.5",
                r#"ParseAddr("1:2.3.4.5"): embedded IPv4 address must replace the final 2 fields of the address (at "2.3.4.5")"#,
            ),
            ("::1.2.3", r#"ParseAddr("::1.2.3"): IPv4 address too short"#),
        ];
        for &(addr, want) in bad {
            match parse_addr(addr.as_bytes()) {
                Err(err) => assert_eq!(err, want),
                Ok(_) => panic!("{addr} should not parse"),
            }
        }
    }
}
