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
    let (s, zone_len) = split_zone(input)?;
    let mut p = Ipv6Parse {
        input,
        s,
        zone_len,
        ellipsis: None,
        filled: 0,
    };
    if let Some(rest) = p.s.strip_prefix(b"::") {
        p.ellipsis = Some(0);
        p.s = rest;
        if p.s.is_empty() {
            return Ok(());
        }
    }
    while p.filled < 16 {
        if p.group()? == Step::Done {
            break;
        }
    }
    p.finish()
}

/// Splits off the `%zone` Go allows after an IPv6 address: the address part and how many bytes
/// the zone takes at the end of `input` (the embedded IPv4 tail is found from the end).
fn split_zone(input: &[u8]) -> Result<(&[u8], usize), String> {
    let (s, zone) = cut(input, b'%');
    if zone.is_some_and(<[u8]>::is_empty) {
        return Err(addr_error(input, "zone must be a non-empty string", None));
    }
    Ok((s, zone.map_or(0, |z| z.len() + 1)))
}

/// Whether `parseIPv6`'s loop goes on to the next group.
#[derive(PartialEq, Eq)]
enum Step {
    /// Another group follows.
    More,
    /// The address ends here (what is left of it is judged by [`Ipv6Parse::finish`]).
    Done,
}

/// The state `parseIPv6`'s loop carries from group to group, so each step is its own function.
struct Ipv6Parse<'a> {
    /// The whole address, as errors quote it.
    input: &'a [u8],
    /// What is left to read.
    s: &'a [u8],
    /// Bytes the `%zone` takes at the end of `input`.
    zone_len: usize,
    /// Where the `::` stands (in address bytes), once seen.
    ellipsis: Option<usize>,
    /// The address bytes the groups seen so far occupy.
    filled: usize,
}

impl Ipv6Parse<'_> {
    /// Go's error for this address, at `at` when given.
    fn error(&self, msg: &str, at: Option<&[u8]>) -> String {
        addr_error(self.input, msg, at)
    }

    /// One group: its hex digits, then an embedded IPv4 tail or the colon(s) after it.
    fn group(&mut self) -> Result<Step, String> {
        let off = self.hex_digits()?;
        if self.s.get(off) == Some(&b'.') {
            self.embedded_ipv4()?;
            return Ok(Step::Done);
        }
        self.filled += 2;
        self.s = self.s.get(off..).unwrap_or_default();
        if self.s.is_empty() {
            return Ok(Step::Done);
        }
        self.separator()
    }

    /// How many hex digits start what is left, refused as Go does when there are none, more than
    /// four, or their value does not fit 16 bits.
    fn hex_digits(&self) -> Result<usize, String> {
        let s = self.s;
        let mut off = 0;
        let mut acc: u32 = 0;
        while let Some(&c) = s.get(off) {
            let Some(digit) = char::from(c).to_digit(16) else {
                break;
            };
            acc = acc * 16 + digit;
            if off > 3 {
                return Err(self.error("each group must have 4 or less digits", Some(s)));
            }
            if acc > 0xffff {
                return Err(self.error("IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(self.error(
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        Ok(off)
    }

    /// The dotted IPv4 tail that ends the address (before the zone), in the last 4 bytes only.
    fn embedded_ipv4(&mut self) -> Result<(), String> {
        if self.ellipsis.is_none() && self.filled != 12 {
            return Err(self.error(
                "embedded IPv4 address must replace the final 2 fields of the address",
                Some(self.s),
            ));
        }
        if self.filled + 4 > 16 {
            return Err(self.error(
                "too many hex fields to fit an embedded IPv4 at the end of the address",
                Some(self.s),
            ));
        }
        let end = self.input.len() - self.zone_len;
        let start = end.saturating_sub(self.s.len());
        parse_ipv4_fields(self.input, self.input.get(start..end).unwrap_or_default())?;
        self.s = b"";
        self.filled += 4;
        Ok(())
    }

    /// The colon after a group, and a second one that makes it the address's only `::`.
    fn separator(&mut self) -> Result<Step, String> {
        match self.s {
            [b':'] => {
                return Err(self.error("colon must be followed by more characters", Some(self.s)));
            }
            [b':', rest @ ..] => self.s = rest,
            _ => {
                return Err(self.error("unexpected character, want colon", Some(self.s)));
            }
        }
        if let Some(rest) = self.s.strip_prefix(b":") {
            if self.ellipsis.is_some() {
                return Err(self.error("multiple :: in address", Some(self.s)));
            }
            self.ellipsis = Some(self.filled);
            self.s = rest;
            if self.s.is_empty() {
                return Ok(Step::Done);
            }
        }
        Ok(Step::More)
    }

    /// Go's checks once the groups are read: nothing left over, and 16 bytes exactly with the
    /// `::` standing for at least one group of zeros.
    fn finish(&self) -> Result<(), String> {
        if !self.s.is_empty() {
            return Err(self.error("trailing garbage after address", Some(self.s)));
        }
        if self.filled < 16 {
            if self.ellipsis.is_none() {
                return Err(self.error("address string too short", None));
            }
        } else if self.ellipsis.is_some() {
            return Err(self.error("the :: must expand to at least one field of zeros", None));
        }
        Ok(())
    }
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
