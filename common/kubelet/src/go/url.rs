//! Go's `net/url.Parse`, as far as the kubelet's matching reaches into it.
//!
//! The kubelet parses every `matchImages` entry, `auth` key and image as `https://` + the string
//! and reads the host and the path of the result. Whether a pattern matches, and the error a
//! user sees when it cannot, depend on Go's exact rules: which escapes a host may hold, where the
//! port starts, when a `[` must open an IPv6 literal. A WHATWG or RFC 3986 URL crate lowercases
//! hosts, applies IDNA and splits ports differently, so it would answer differently from the
//! kubelet; hence this hand-written copy of the branches those strings reach, with Go's error
//! texts. The behaviour is that of a current, patched Go (the `net/url` fixes for CVE-2025-47912
//! and CVE-2026-25679) with `urlstrictcolons=0`.

use super::cut;
use super::netip::{AddrKind, parse_addr};
use super::quote::quote;

/// The two fields of Go's `url.URL` that matching reads; both are percent-decoded.
pub(crate) struct GoUrl {
    /// The host, with its port when it has one (`[addr]:port` for IPv6 literals).
    pub(crate) host: Vec<u8>,
    /// The path, percent-decoded.
    pub(crate) path: Vec<u8>,
}

/// Go `url.Parse` for a string that starts with `http://` or `https://`, the only form the
/// kubelet hands it here; the scheme-less and opaque branches of Go's parser are unreachable.
/// The error is the text of Go's `*url.Error`.
pub(crate) fn parse_url(raw: &[u8]) -> Result<GoUrl, String> {
    let (before_fragment, fragment) = cut(raw, b'#');
    let url = parse_without_fragment(before_fragment)
        .map_err(|err| format!("parse {}: {err}", quote(before_fragment)))?;
    if let Some(fragment) = fragment {
        // The fragment is dropped, but a bad escape in it still fails the whole parse.
        unescape(fragment, Encoding::Fragment)
            .map_err(|err| format!("parse {}: {err}", quote(raw)))?;
    }
    Ok(url)
}

fn parse_without_fragment(raw: &[u8]) -> Result<GoUrl, String> {
    if raw.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    // The scheme is known to be http or https, so what follows its colon starts with "//".
    let (_scheme, rest) = cut(raw, b':');
    let rest = rest.unwrap_or_default();
    // Go's ForceQuery special case strips a lone trailing '?', which is the same as this cut.
    let (rest, _query) = cut(rest, b'?');
    let after_slashes = rest.get(2..).unwrap_or_default();
    let (authority, path) = match after_slashes.iter().position(|&b| b == b'/') {
        Some(i) => after_slashes.split_at(i),
        None => (after_slashes, &b""[..]),
    };
    let host = parse_authority(authority)?;
    let path = unescape(path, Encoding::Path)?;
    Ok(GoUrl { host, path })
}

/// Go `parseAuthority`: the userinfo is validated and then thrown away.
fn parse_authority(authority: &[u8]) -> Result<Vec<u8>, String> {
    let at = authority.iter().rposition(|&b| b == b'@');
    let host_part = match at {
        Some(i) => authority.get(i + 1..).unwrap_or_default(),
        None => authority,
    };
    let host = parse_host(host_part)?;
    if let Some(i) = at {
        let userinfo = authority.get(..i).unwrap_or_default();
        if !valid_userinfo(userinfo) {
            return Err("net/url: invalid userinfo".to_owned());
        }
        let (username, password) = cut(userinfo, b':');
        unescape(username, Encoding::UserPassword)?;
        if let Some(password) = password {
            unescape(password, Encoding::UserPassword)?;
        }
    }
    Ok(host)
}

/// Go `parseHost` (host and optional `:port`, no userinfo).
fn parse_host(host: &[u8]) -> Result<Vec<u8>, String> {
    match host.iter().rposition(|&b| b == b'[') {
        // A '[' that does not open the host cannot start an IP literal (CVE-2026-25679).
        Some(open) if open > 0 => Err("invalid IP-literal".to_owned()),
        Some(_) => parse_ip_literal(host),
        None => {
            // urlstrictcolons=0: the port starts at the last colon.
            if let Some(colon) = host.iter().rposition(|&b| b == b':') {
                let colon_port = host.get(colon..).unwrap_or_default();
                if !valid_optional_port(colon_port) {
                    return Err(format!("invalid port {} after host", quote(colon_port)));
                }
            }
            unescape(host, Encoding::Host)
        }
    }
}

/// The `[addr]:port` branch of Go `parseHost`; `host` starts with '['.
fn parse_ip_literal(host: &[u8]) -> Result<Vec<u8>, String> {
    let Some(close) = host.iter().rposition(|&b| b == b']') else {
        return Err("missing ']' in host".to_owned());
    };
    let colon_port = host.get(close + 1..).unwrap_or_default();
    if !valid_optional_port(colon_port) {
        return Err(format!("invalid port {} after host", quote(colon_port)));
    }
    let colon_port = unescape(colon_port, Encoding::Host)?;
    let hostname = host.get(1..close).unwrap_or_default();
    // RFC 6874: "%25" starts the zone, which may use escapes the address itself may not.
    let mut unescaped = match find(hostname, b"%25") {
        Some(zone) => {
            let (addr, zone) = hostname.split_at(zone);
            let mut joined = unescape(addr, Encoding::Host)?;
            joined.extend(unescape(zone, Encoding::Zone)?);
            joined
        }
        None => unescape(hostname, Encoding::Host)?,
    };
    match parse_addr(&unescaped) {
        Err(err) => return Err(format!("invalid host: {err}")),
        Ok(AddrKind::V4) => return Err("invalid IP-literal".to_owned()),
        Ok(AddrKind::V6) => {}
    }
    unescaped.insert(0, b'[');
    unescaped.push(b']');
    unescaped.extend(colon_port);
    Ok(unescaped)
}

/// Go `validOptionalPort`: empty, or a colon followed by digits only (possibly none).
fn valid_optional_port(port: &[u8]) -> bool {
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

/// Go `validUserinfo` (RFC 3986 §3.2.1 plus '@', which Go tolerates).
fn valid_userinfo(userinfo: &[u8]) -> bool {
    userinfo
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b))
}

/// The `encoding` modes of Go's `unescape` that parsing uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Path,
    Host,
    Zone,
    UserPassword,
    Fragment,
}

/// Go `shouldEscape(c, encodeHost)`: whether `c` may not appear literally in a host.
fn should_escape_in_host(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c))
}

/// Go `unescape`: decodes `%XX`, failing like Go on malformed escapes and, for hosts, on ASCII
/// escapes (other than `%25`) and on characters a host may not contain.
fn unescape(s: &[u8], mode: Encoding) -> Result<Vec<u8>, String> {
    let is_host = matches!(mode, Encoding::Host | Encoding::Zone);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        if c != b'%' {
            if is_host && c < 0x80 && should_escape_in_host(c) {
                return Err(format!("invalid character {} in host name", quote(&[c])));
            }
            out.push(c);
            i += 1;
            continue;
        }
        let escape = s.get(i..i + 3);
        let (hi, lo) = match escape {
            Some(&[_, hi, lo]) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => (hi, lo),
            _ => {
                let end = s.len().min(i + 3);
                let bad = s.get(i..end).unwrap_or_default();
                return Err(format!("invalid URL escape {}", quote(bad)));
            }
        };
        let escape = escape.unwrap_or_default();
        let value = (unhex(hi) << 4) | unhex(lo);
        let is_percent = escape == b"%25";
        // RFC 3986 only lets hosts escape non-ASCII bytes; RFC 6874 adds %25 for zones.
        let bad_host_escape = mode == Encoding::Host && unhex(hi) < 8 && !is_percent;
        // Go lets a zone escape only bytes it could have written directly, plus space.
        let bad_zone_escape =
            mode == Encoding::Zone && !is_percent && value != b' ' && should_escape_in_host(value);
        if bad_host_escape || bad_zone_escape {
            return Err(format!("invalid URL escape {}", quote(escape)));
        }
        out.push(value);
        i += 3;
    }
    Ok(out)
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
