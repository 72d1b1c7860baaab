//! How the kubelet decides that a `matchImages` entry or an `auth` key applies to an image.
//!
//! This module owns the kubelet's matching rules: `URLsMatchStr`/`URLsMatch`/`SplitURL`/
//! `ParseSchemelessURL` and the keyring's key normalisation and lookup order
//! (`pkg/credentialprovider/keyring.go`), together with the pieces of the Go standard library
//! they lean on: `net/url.Parse`, `net.SplitHostPort`, `path/filepath.Match` and, for bracketed
//! hosts, `net/netip.ParseAddr`.
//!
//! It is hand-written on purpose. A WHATWG or RFC 3986 URL crate would lowercase hosts, apply
//! IDNA, reject `*` in hosts and split ports differently, and then tell a user that a pattern
//! matches when the kubelet says it does not (or the other way round). What counts here is the
//! kubelet's behaviour, quirks included:
//!
//! - the kubelet puts `https://` in front of both strings, so a pattern that has a scheme of its
//!   own becomes `https://https://…` and never matches an image;
//! - `?` ends the host (it starts a query), `\` and `^` are not allowed in a host, and a `[`
//!   must open an IPv6 literal, so in practice `*` is the only glob character that works in a
//!   host;
//! - the path is a plain string prefix (`host/*` only matches a literal `/*`);
//! - a pattern without a port never matches an image with one.
//!
//! The Go behaviour reproduced is that of a current, patched toolchain: brackets in a host must
//! enclose a valid IPv6 address and open the host (the `net/url` fixes for CVE-2025-47912 and
//! CVE-2026-25679; older kubelets accepted `[...]` classes inside host labels). Colons follow
//! `urlstrictcolons=0`, the default for a module whose `go` directive is below 1.26: the last
//! colon of a host starts its port. Strings are handled as bytes, as Go does, because
//! percent-decoding may produce bytes that are not UTF-8.

use std::collections::BTreeSet;
use std::fmt;

/// Why a pattern did or did not match a target; used by a diagnostic tool to explain non-matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchOutcome {
    /// The kubelet would consider the pattern to match.
    Match,
    /// Pattern or target could not be parsed as a URL (message in Go's wording where practical).
    Unparsable {
        /// Which of the two strings failed.
        which: Side,
        /// Go's error text, e.g. `parse "https://%in": invalid URL escape "%in"`.
        reason: String,
    },
    /// The ports differ; an empty string means "no port".
    PortMismatch {
        /// Port of the pattern, `""` when it has none.
        pattern_port: String,
        /// Port of the target, `""` when it has none.
        target_port: String,
    },
    /// The hosts have different numbers of dot-separated labels (`*` never spans a dot).
    LabelCountMismatch {
        /// Number of labels in the pattern host.
        pattern_labels: usize,
        /// Number of labels in the target host.
        target_labels: usize,
    },
    /// The target's (percent-decoded) path does not start with the pattern's path.
    PathPrefixMismatch {
        /// Path of the pattern, e.g. `/*`.
        pattern_path: String,
        /// Path of the target, e.g. `/foo`.
        target_path: String,
    },
    /// A host label of the target does not match the glob at the same position.
    LabelMismatch {
        /// Zero-based position of the label in the host.
        index: usize,
        /// The glob label of the pattern.
        pattern_label: String,
        /// The label of the target.
        target_label: String,
    },
    /// A host label of the pattern is a malformed glob (Go's `filepath.ErrBadPattern`).
    BadGlob {
        /// The malformed glob label.
        pattern_label: String,
    },
}

/// Which of the two compared strings an [`MatchOutcome::Unparsable`] refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The glob: a `matchImages` entry or an `auth` key.
    Pattern,
    /// The image being pulled.
    Target,
}

impl MatchOutcome {
    /// True only for [`MatchOutcome::Match`].
    pub fn is_match(&self) -> bool {
        matches!(self, MatchOutcome::Match)
    }
}

impl fmt::Display for MatchOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchOutcome::Match => write!(f, "the pattern matches the image"),
            MatchOutcome::Unparsable { which, reason } => {
                let who = match which {
                    Side::Pattern => "the pattern",
                    Side::Target => "the image",
                };
                write!(f, "{who} is not a valid URL for the kubelet: {reason}")
            }
            MatchOutcome::PortMismatch {
                pattern_port,
                target_port,
            } => match (pattern_port.is_empty(), target_port.is_empty()) {
                (true, _) => write!(
                    f,
                    "the pattern has no port but the image has port {target_port}"
                ),
                (_, true) => write!(
                    f,
                    "the pattern has port {pattern_port} but the image has no port"
                ),
                _ => write!(
                    f,
                    "port {pattern_port} in the pattern differs from port {target_port} in the image"
                ),
            },
            MatchOutcome::LabelCountMismatch {
                pattern_labels,
                target_labels,
            } => write!(
                f,
                "the pattern host has {pattern_labels} dot-separated labels but the image host has \
                 {target_labels} (a `*` never spans a dot)"
            ),
            MatchOutcome::PathPrefixMismatch {
                pattern_path,
                target_path,
            } => write!(
                f,
                "the image path {target_path:?} does not start with the pattern path \
                 {pattern_path:?} (paths are literal prefixes, not globs)"
            ),
            MatchOutcome::LabelMismatch {
                index,
                pattern_label,
                target_label,
            } => write!(
                f,
                "host label {} of the pattern, {pattern_label:?}, does not match {target_label:?} \
                 in the image",
                index + 1
            ),
            MatchOutcome::BadGlob { pattern_label } => write!(
                f,
                "the pattern host label {pattern_label:?} is a malformed glob (syntax error in \
                 pattern), which the kubelet treats as no match"
            ),
        }
    }
}

/// Kubelet `URLsMatchStr(glob, target)` with the full reason.
pub fn explain(pattern: &str, target: &str) -> MatchOutcome {
    explain_bytes(pattern.as_bytes(), target.as_bytes())
}

/// Kubelet `URLsMatchStr`: true only on Match.
pub fn urls_match(pattern: &str, target: &str) -> bool {
    explain(pattern, target).is_match()
}

/// How the kubelet tests a `matchImages` entry against the image it pulls (`isImageAllowed`):
/// same as urls_match; a parse error is no match.
pub fn match_image(pattern: &str, image: &str) -> bool {
    urls_match(pattern, image)
}

/// The kubelet's normalisation of an `auth` key from a plugin response (BasicDockerKeyring.Add):
/// Err(reason) when the kubelet would drop it ("Entry %q in dockercfg invalid (%v), ignoring").
///
/// Bytes that percent-decoding turns into invalid UTF-8 are shown as U+FFFD here;
/// [`keyring_lookup`] works on the exact bytes.
pub fn normalize_auth_key(key: &str) -> Result<String, String> {
    normalize_key_bytes(key.as_bytes()).map(|k| String::from_utf8_lossy(&k).into_owned())
}

/// Which of `keys` the kubelet keyring would use for `image`, in the order the runtime would try
/// them (reverse-lexicographic order of normalised keys, every matching key; Docker Hub fallback
/// to the exact key `index.docker.io` when nothing matched and the image is a default-registry
/// image). Returns the original keys.
///
/// Keys that normalise to the same string share one keyring entry; they are returned in the
/// order given (Go iterates a map there, so its order among them is unspecified).
pub fn keyring_lookup<'a>(keys: &[&'a str], image: &str) -> Vec<&'a str> {
    let normalized: Vec<(&'a str, Vec<u8>)> = keys
        .iter()
        .filter_map(|&key| normalize_key_bytes(key.as_bytes()).ok().map(|n| (key, n)))
        .collect();
    let index: BTreeSet<&[u8]> = normalized.iter().map(|(_, n)| n.as_slice()).collect();
    let originals_of = |entry: &[u8], found: &mut Vec<&'a str>| {
        let same = normalized.iter().filter(|(_, n)| n.as_slice() == entry);
        found.extend(same.map(|(key, _)| *key));
    };

    let mut found = Vec::new();
    for &entry in index.iter().rev() {
        if explain_bytes(entry, image.as_bytes()).is_match() {
            originals_of(entry, &mut found);
        }
    }
    if found.is_empty() && is_default_registry_match(image) {
        originals_of(DEFAULT_REGISTRY_HOST, &mut found);
    }
    found
}

/// Kubelet `isDefaultRegistryMatch`.
pub fn is_default_registry_match(image: &str) -> bool {
    let (first, rest) = match image.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (image, None),
    };
    if first.is_empty() {
        return false;
    }
    if rest.is_none() {
        return true;
    }
    if first == "docker.io" || first == "index.docker.io" {
        return true;
    }
    !first.contains(['.', ':'])
}

/// Go `path/filepath.Match` on Unix.
pub fn glob_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    glob_match_bytes(pattern.as_bytes(), name.as_bytes())
}

/// Go's `filepath.ErrBadPattern`: the glob is malformed.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
#[error("syntax error in pattern")]
pub struct BadPattern;

// ---------------------------------------------------------------------------------------------
// keyring.go

/// `defaultRegistryHost`: the key the keyring falls back to for Docker Hub images.
const DEFAULT_REGISTRY_HOST: &[u8] = b"index.docker.io";

fn explain_bytes(pattern: &[u8], target: &[u8]) -> MatchOutcome {
    let glob = match parse_schemeless_url(pattern) {
        Ok(url) => url,
        Err(reason) => {
            return MatchOutcome::Unparsable {
                which: Side::Pattern,
                reason,
            };
        }
    };
    let target = match parse_schemeless_url(target) {
        Ok(url) => url,
        Err(reason) => {
            return MatchOutcome::Unparsable {
                which: Side::Target,
                reason,
            };
        }
    };

    let (glob_labels, glob_port) = split_url(&glob.host);
    let (target_labels, target_port) = split_url(&target.host);
    if glob_port != target_port {
        return MatchOutcome::PortMismatch {
            pattern_port: lossy(glob_port),
            target_port: lossy(target_port),
        };
    }
    if glob_labels.len() != target_labels.len() {
        return MatchOutcome::LabelCountMismatch {
            pattern_labels: glob_labels.len(),
            target_labels: target_labels.len(),
        };
    }
    if !target.path.starts_with(&glob.path) {
        return MatchOutcome::PathPrefixMismatch {
            pattern_path: lossy(&glob.path),
            target_path: lossy(&target.path),
        };
    }
    // Go stops at the first label that fails, so a malformed glob further right is only
    // reported when every label before it matched.
    for (index, (glob_label, target_label)) in glob_labels.iter().zip(&target_labels).enumerate() {
        match glob_match_bytes(glob_label, target_label) {
            Ok(true) => {}
            Ok(false) => {
                return MatchOutcome::LabelMismatch {
                    index,
                    pattern_label: lossy(glob_label),
                    target_label: lossy(target_label),
                };
            }
            Err(BadPattern) => {
                return MatchOutcome::BadGlob {
                    pattern_label: lossy(glob_label),
                };
            }
        }
    }
    MatchOutcome::Match
}

/// `ParseSchemelessURL`: always prefixes `https://`, even when the string has a scheme.
fn parse_schemeless_url(s: &[u8]) -> Result<GoUrl, String> {
    let mut raw = Vec::with_capacity(s.len() + 8);
    raw.extend_from_slice(b"https://");
    raw.extend_from_slice(s);
    parse_url(&raw)
}

/// `SplitURL`: a host that `net.SplitHostPort` rejects is kept whole with no port.
fn split_url(host: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let (name, port) = split_host_port(host).unwrap_or((host, b""));
    (name.split(|&b| b == b'.').collect(), port)
}

/// `BasicDockerKeyring.Add`: the keyring entry an `auth` key ends up under.
fn normalize_key_bytes(key: &[u8]) -> Result<Vec<u8>, String> {
    let parsed = if key.starts_with(b"https://") || key.starts_with(b"http://") {
        parse_url(key)?
    } else {
        parse_schemeless_url(key)?
    };
    // Docker treats /v1/ and /v2/ as the bare registry; only 3 bytes go, the slash stays.
    let path = match parsed.path.get(..4) {
        Some(b"/v1/" | b"/v2/") => parsed.path.get(3..).unwrap_or_default(),
        _ => parsed.path.as_slice(),
    };
    let mut entry = parsed.host;
    if !path.is_empty() && path != b"/" {
        entry.extend_from_slice(path);
    }
    Ok(entry)
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------
// net/url

/// The two fields of Go's `url.URL` that matching reads; both are percent-decoded.
struct GoUrl {
    host: Vec<u8>,
    path: Vec<u8>,
}

/// Go `url.Parse` for a string that starts with `http://` or `https://`, the only form the
/// kubelet hands it here; the scheme-less and opaque branches of Go's parser are unreachable.
/// The error is the text of Go's `*url.Error`.
fn parse_url(raw: &[u8]) -> Result<GoUrl, String> {
    let (before_fragment, fragment) = cut(raw, b'#');
    let url = parse_without_fragment(before_fragment)
        .map_err(|err| format!("parse {}: {err}", go_quote(before_fragment)))?;
    if let Some(fragment) = fragment {
        // The fragment is dropped, but a bad escape in it still fails the whole parse.
        unescape(fragment, Encoding::Fragment)
            .map_err(|err| format!("parse {}: {err}", go_quote(raw)))?;
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
                    return Err(format!("invalid port {} after host", go_quote(colon_port)));
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
        return Err(format!("invalid port {} after host", go_quote(colon_port)));
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
                return Err(format!("invalid character {} in host name", go_quote(&[c])));
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
                return Err(format!("invalid URL escape {}", go_quote(bad)));
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
            return Err(format!("invalid URL escape {}", go_quote(escape)));
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

/// Go `strings.Cut` on a byte.
fn cut(s: &[u8], sep: u8) -> (&[u8], Option<&[u8]>) {
    match s.iter().position(|&b| b == sep) {
        Some(i) => (
            s.get(..i).unwrap_or_default(),
            Some(s.get(i + 1..).unwrap_or_default()),
        ),
        None => (s, None),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// net/netip (only what parseHost asks: does it parse, and is it IPv4?)

enum AddrKind {
    V4,
    V6,
}

/// Go `netip.ParseAddr`, keeping Go's error texts.
fn parse_addr(s: &[u8]) -> Result<AddrKind, String> {
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
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(input)),
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

// ---------------------------------------------------------------------------------------------
// net.SplitHostPort

/// Go `net.SplitHostPort`; `None` stands for any of its errors (the kubelet ignores which).
fn split_host_port(hostport: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = hostport.iter().rposition(|&b| b == b':')?;
    let (host, scan_open_from, scan_close_from) = if hostport.first() == Some(&b'[') {
        let end = hostport.iter().position(|&b| b == b']')?;
        // The ']' must sit right before the last colon.
        if end + 1 != colon {
            return None;
        }
        (hostport.get(1..end)?, 1, end + 1)
    } else {
        let host = hostport.get(..colon)?;
        if host.contains(&b':') {
            return None;
        }
        (host, 0, 0)
    };
    if hostport.get(scan_open_from..)?.contains(&b'[') {
        return None;
    }
    if hostport.get(scan_close_from..)?.contains(&b']') {
        return None;
    }
    Some((host, hostport.get(colon + 1..)?))
}

// ---------------------------------------------------------------------------------------------
// path/filepath.Match (Unix: '/' is the separator and '\\' escapes)

/// Go `filepath.Match` on bytes. Go walks strings byte by byte and decodes UTF-8 only for `?`
/// and `[...]`, so a `*` may stop inside a multi-byte character; working on bytes keeps that.
fn glob_match_bytes(mut pattern: &[u8], mut name: &[u8]) -> Result<bool, BadPattern> {
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing '*' takes the rest of the name unless a separator is left.
            return Ok(!name.contains(&b'/'));
        }
        match match_chunk(chunk, name)? {
            // The last chunk must consume the whole name; otherwise a star may still help.
            Some(left) if left.is_empty() || !pattern.is_empty() => {
                name = left;
                continue;
            }
            _ => {}
        }
        if star {
            let candidates = name;
            for (i, &b) in candidates.iter().enumerate() {
                if b == b'/' {
                    break;
                }
                let skipped = candidates.get(i + 1..).unwrap_or_default();
                if let Some(left) = match_chunk(chunk, skipped)? {
                    if pattern.is_empty() && !left.is_empty() {
                        continue;
                    }
                    name = left;
                    continue 'pattern;
                }
            }
        }
        // A mismatch is only reported once the rest of the pattern is known to be well formed.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, b"")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Go `scanChunk`: leading stars, then everything up to the next star outside a class.
fn scan_chunk(pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let mut star = false;
    let mut pattern = pattern;
    while let Some((b'*', rest)) = pattern.split_first() {
        pattern = rest;
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while let Some(&c) = pattern.get(i) {
        match c {
            // The byte after a backslash is literal; a lone trailing one is caught later.
            b'\\' if i + 1 < pattern.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    let (chunk, rest) = pattern.split_at(i.min(pattern.len()));
    (star, chunk, rest)
}

/// Go `matchChunk`: whether `chunk` (no stars) matches a prefix of `s`; returns what is left.
/// After a mismatch the rest of the chunk is still parsed so syntax errors are reported.
fn match_chunk<'s>(mut chunk: &[u8], mut s: &'s [u8]) -> Result<Option<&'s [u8]>, BadPattern> {
    let mut failed = false;
    while let Some((&c, after)) = chunk.split_first() {
        failed = failed || s.is_empty();
        match c {
            b'[' => {
                // Go leaves the rune at zero once the match has failed.
                let mut r = 0;
                if !failed {
                    let (rune, n) = decode_rune(s);
                    r = rune;
                    s = s.get(n..).unwrap_or_default();
                }
                chunk = after;
                let negated = chunk.first() == Some(&b'^');
                if negated {
                    chunk = chunk.get(1..).unwrap_or_default();
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if ranges > 0
                        && let Some(rest) = chunk.strip_prefix(b"]")
                    {
                        chunk = rest;
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix(b"-") {
                        let (h, rest) = get_esc(rest)?;
                        hi = h;
                        chunk = rest;
                    }
                    matched = matched || (lo <= r && r <= hi);
                    ranges += 1;
                }
                failed = failed || matched == negated;
            }
            b'?' => {
                if !failed {
                    failed = s.first() == Some(&b'/');
                    let (_, n) = decode_rune(s);
                    s = s.get(n..).unwrap_or_default();
                }
                chunk = after;
            }
            _ => {
                // A backslash makes the next byte literal; a trailing one is malformed.
                let (&literal, rest) = if c == b'\\' {
                    after.split_first().ok_or(BadPattern)?
                } else {
                    (&c, after)
                };
                if !failed {
                    failed = s.first() != Some(&literal);
                    s = s.get(1..).unwrap_or_default();
                }
                chunk = rest;
            }
        }
    }
    Ok(if failed { None } else { Some(s) })
}

/// Go `getEsc`: one possibly escaped character of a class, which must be followed by more.
fn get_esc(chunk: &[u8]) -> Result<(u32, &[u8]), BadPattern> {
    let chunk = match chunk.split_first() {
        None | Some((b'-' | b']', _)) => return Err(BadPattern),
        Some((b'\\', [])) => return Err(BadPattern),
        Some((b'\\', rest)) => rest,
        Some(_) => chunk,
    };
    let (r, n) = decode_rune(chunk);
    if r == RUNE_ERROR && n == 1 {
        return Err(BadPattern);
    }
    match chunk.get(n..) {
        Some(rest) if !rest.is_empty() => Ok((r, rest)),
        _ => Err(BadPattern),
    }
}

const RUNE_ERROR: u32 = 0xFFFD;

/// Go `utf8.DecodeRune`: invalid or truncated input gives (U+FFFD, 1), empty input (U+FFFD, 0).
fn decode_rune(s: &[u8]) -> (u32, usize) {
    let Some(&first) = s.first() else {
        return (RUNE_ERROR, 0);
    };
    let width = match first {
        0x00..=0x7f => return (u32::from(first), 1),
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return (RUNE_ERROR, 1),
    };
    match s
        .get(..width)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| text.chars().next())
    {
        Some(c) => (u32::from(c), width),
        None => (RUNE_ERROR, 1),
    }
}

// ---------------------------------------------------------------------------------------------
// strconv.Quote, so error texts read like the kubelet's logs

/// Go `strconv.Quote`. Printability is approximated (Go uses its own Unicode tables).
fn go_quote(s: &[u8]) -> String {
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

    /// Short name of an outcome's variant, so tables can state the expected reason.
    fn kind(outcome: &MatchOutcome) -> &'static str {
        match outcome {
            MatchOutcome::Match => "match",
            MatchOutcome::Unparsable { .. } => "unparsable",
            MatchOutcome::PortMismatch { .. } => "port",
            MatchOutcome::LabelCountMismatch { .. } => "labels",
            MatchOutcome::PathPrefixMismatch { .. } => "path",
            MatchOutcome::LabelMismatch { .. } => "label",
            MatchOutcome::BadGlob { .. } => "badglob",
        }
    }

    fn unparsable(which: Side, reason: &str) -> MatchOutcome {
        MatchOutcome::Unparsable {
            which,
            reason: reason.to_owned(),
        }
    }

    // docs/kubelet-contract.md “Test vectors”: keyring_test.go TestUrlsMatch.
    #[test]
    fn table_a_urls_match() {
        let rows: &[(u32, &str, &str, &str)] = &[
            (1, "*.kubernetes.io", "prefix.kubernetes.io", "match"),
            (2, "prefix.*.io", "prefix.kubernetes.io", "match"),
            (3, "prefix.kubernetes.*", "prefix.kubernetes.io", "match"),
            (
                4,
                "*-good.kubernetes.io",
                "prefix-good.kubernetes.io",
                "match",
            ),
            (
                5,
                "*.kubernetes.io/blah",
                "prefix.kubernetes.io/blah",
                "match",
            ),
            (
                6,
                "prefix.*.io/foo",
                "prefix.kubernetes.io/foo/bar",
                "match",
            ),
            (
                7,
                "*.kubernetes.io:1111/blah",
                "prefix.kubernetes.io:1111/blah",
                "match",
            ),
            (
                8,
                "prefix.*.io:1111/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                "match",
            ),
            (9, "*.kubernetes.io", "kubernetes.io", "labels"),
            (10, "*.*.kubernetes.io", "prefix.kubernetes.io", "labels"),
            (11, "*.*.kubernetes.io", "kubernetes.io", "labels"),
            (12, "kubernetes.io", "kubernetes.com", "label"),
            (13, "k*.io", "quay.io", "label"),
            (
                14,
                "*.kubernetes.io:1234/blah",
                "prefix.kubernetes.io:1111/blah",
                "port",
            ),
            (
                15,
                "prefix.*.io/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                "port",
            ),
        ];
        for &(row, pattern, target, want) in rows {
            let outcome = explain(pattern, target);
            assert_eq!(kind(&outcome), want, "row {row}: {outcome:?}");
            assert_eq!(urls_match(pattern, target), want == "match", "row {row}");
        }
    }

    // docs/kubelet-contract.md “Test vectors”: plugin_test.go, matchImages entries that all match.
    #[test]
    fn table_b_match_images() {
        let rows: &[(u32, &str, &str)] = &[
            (16, "test.registry.io", "test.registry.io/foo/bar"),
            (17, "test.registry.io/foo/bar", "test.registry.io/foo/bar"),
            (18, "test.registry.io", "test.registry.io"),
            (19, "*.registry.io:8080", "test.registry.io:8080/foo"),
            (20, "*.*.registry.io", "foo.bar.registry.io/foo/bar"),
            (21, "*.registry.io", "test.registry.io"),
            (22, "*.registry.io", "test.registry.io/foo/bar"),
            (23, "test2.registry.io", "test2.registry.io/k3xq9"),
        ];
        for &(row, pattern, image) in rows {
            assert!(
                match_image(pattern, image),
                "row {row}: {:?}",
                explain(pattern, image)
            );
        }
    }

    // docs/kubelet-contract.md “Test vectors”: keyring_test.go TestDockerKeyringForGlob
    // (image = target + /foo/bar).
    #[test]
    fn table_c_keyring_hits() {
        let rows: &[(u32, &str, &str)] = &[
            (24, "https://hello.kubernetes.io", "hello.kubernetes.io"),
            (25, "https://*.docker.io", "prefix.docker.io"),
            (26, "https://prefix.*.io", "prefix.docker.io"),
            (27, "https://prefix.docker.*", "prefix.docker.io"),
            (28, "https://*.docker.io/path", "prefix.docker.io/path"),
            (
                29,
                "https://prefix.*.io/path",
                "prefix.docker.io/path/subpath",
            ),
            (30, "https://prefix.docker.*/path", "prefix.docker.io/path"),
            (31, "https://*.docker.io:8888", "prefix.docker.io:8888"),
            (32, "https://prefix.*.io:8888", "prefix.docker.io:8888"),
            (33, "https://prefix.docker.*:8888", "prefix.docker.io:8888"),
            (
                34,
                "https://*.docker.io/path:1111",
                "prefix.docker.io/path:1111",
            ),
            (35, "https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
            (36, "https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
            (
                37,
                "https://prefix.docker.*/path:1111",
                "prefix.docker.io/path:1111",
            ),
            (38, "prefix.docker.io:1111", "prefix.docker.io:1111/path"),
            (39, "*.docker.io:1111", "prefix.docker.io:1111/path"),
        ];
        for &(row, key, target) in rows {
            let image = format!("{target}/foo/bar");
            assert_eq!(keyring_lookup(&[key], &image), vec![key], "row {row}");
        }
    }

    // docs/kubelet-contract.md “Test vectors”: keyring_test.go TestKeyringMiss
    // (image = target + /foo/bar).
    #[test]
    fn table_d_keyring_misses() {
        let rows: &[(u32, &str, &str)] = &[
            (40, "https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
            (41, "https://*.docker.com", "prefix.docker.io"),
            (42, "https://suffix.*.io", "prefix.docker.io"),
            (43, "https://prefix.docker.c*", "prefix.docker.io"),
            (
                44,
                "https://prefix.*.io/path:1111",
                "prefix.docker.io/path/subpath:1111",
            ),
            (45, "suffix.*.io", "prefix.docker.io"),
        ];
        for &(row, key, target) in rows {
            let image = format!("{target}/foo/bar");
            assert!(keyring_lookup(&[key], &image).is_empty(), "row {row}");
        }
    }

    // docs/kubelet-contract.md “Test vectors”: TestDockerKeyringLookup and TestIssue3797.
    #[test]
    fn table_e_order_and_path_prefixes() {
        let grace = "bar.example.com/pong";
        let ada = "bar.example.com";
        let name = |key: &str| if key == grace { "grace" } else { "ada" };
        let rows: &[(u32, &str, &[&str])] = &[
            (46, "bar.example.com", &["ada"]),
            (47, "bar.example.com/pong", &["grace", "ada"]),
            (48, "bar.example.com/ping", &["ada"]),
            (49, "bar.example.com/pongz", &["grace", "ada"]),
            (50, "bar.example.com/pong/pang", &["grace", "ada"]),
            (51, "example.com", &[]),
            (52, "foo.example.com", &[]),
        ];
        for &(row, image, want) in rows {
            // Given shortest first: the order must come from the keyring's sort.
            let got: Vec<&str> = keyring_lookup(&[ada, grace], image)
                .into_iter()
                .map(name)
                .collect();
            assert_eq!(got, want, "row {row}");
        }
        for image in ["quay.io", "quay.io/foo", "quay.io/foo/bar"] {
            let rex = "https://quay.io/v1/";
            assert_eq!(keyring_lookup(&[rex], image), vec![rex], "row 53: {image}");
        }
    }

    // docs/kubelet-contract.md “Test vectors”: TestIsDefaultRegistryMatch.
    #[test]
    fn is_default_registry_match_vectors() {
        let rows: &[(&str, bool)] = &[
            ("foo/bar", true),
            ("docker.io/foo/bar", true),
            ("index.docker.io/foo/bar", true),
            ("foo", true),
            ("", false),
            ("registry.tld/foo/bar", false),
            ("registry:5000/foo/bar", false),
            ("myhostdocker.io/foo/bar", false),
        ];
        for &(image, want) in rows {
            assert_eq!(is_default_registry_match(image), want, "{image:?}");
        }
    }

    // docs/kubelet-contract.md “Matching”: the traps.
    #[test]
    fn trap_path_glob_is_literal() {
        assert_eq!(
            explain("registry.io/*", "registry.io/foo"),
            MatchOutcome::PathPrefixMismatch {
                pattern_path: "/*".to_owned(),
                target_path: "/foo".to_owned(),
            }
        );
        assert!(!match_image("registry.io/*", "registry.io/foo/bar"));
        assert!(match_image("registry.io/*", "registry.io/*/bar"));
    }

    #[test]
    fn trap_pattern_without_port_never_matches_image_with_port() {
        for pattern in ["registry.io", "*.io", "registry.io/team"] {
            assert_eq!(
                explain(pattern, "registry.io:5000/team/app"),
                MatchOutcome::PortMismatch {
                    pattern_port: String::new(),
                    target_port: "5000".to_owned(),
                },
                "{pattern}"
            );
        }
    }

    #[test]
    fn trap_scheme_in_match_images_never_matches() {
        // matchImages: the kubelet adds https:// regardless, so the scheme ends up in the host.
        assert_eq!(
            explain("https://registry.io", "registry.io/app"),
            MatchOutcome::LabelCountMismatch {
                pattern_labels: 1,
                target_labels: 2,
            }
        );
        assert_eq!(
            explain("https://localhost", "localhost/app"),
            MatchOutcome::PathPrefixMismatch {
                pattern_path: "//localhost".to_owned(),
                target_path: "/app".to_owned(),
            }
        );
        assert!(!match_image("http://registry.io", "registry.io"));
        // auth keys, by contrast, lose their scheme in the keyring.
        let key = "https://registry.io";
        assert_eq!(keyring_lookup(&[key], "registry.io/app"), vec![key]);
    }

    #[test]
    fn trap_question_mark_ends_the_host() {
        assert_eq!(
            explain("k?s.io", "k8s.io"),
            MatchOutcome::LabelCountMismatch {
                pattern_labels: 1,
                target_labels: 2,
            }
        );
    }

    #[test]
    fn explain_reports_each_reason() {
        assert_eq!(
            explain("*.example.com", "a.example.com"),
            MatchOutcome::Match
        );
        assert_eq!(
            explain("%in", "example.com"),
            unparsable(
                Side::Pattern,
                r#"parse "https://%in": invalid URL escape "%in""#
            )
        );
        assert_eq!(
            explain("example.com", "example.com/%"),
            unparsable(
                Side::Target,
                r#"parse "https://example.com/%": invalid URL escape "%""#
            )
        );
        assert_eq!(
            explain("*.example.com:1234", "a.example.com:1111"),
            MatchOutcome::PortMismatch {
                pattern_port: "1234".to_owned(),
                target_port: "1111".to_owned(),
            }
        );
        assert_eq!(
            explain("*.*.example.com", "example.com"),
            MatchOutcome::LabelCountMismatch {
                pattern_labels: 4,
                target_labels: 2,
            }
        );
        assert_eq!(
            explain("a.example.com/team", "a.example.com/other/app"),
            MatchOutcome::PathPrefixMismatch {
                pattern_path: "/team".to_owned(),
                target_path: "/other/app".to_owned(),
            }
        );
        assert_eq!(
            explain("a.*.com", "a.example.org"),
            MatchOutcome::LabelMismatch {
                index: 2,
                pattern_label: "com".to_owned(),
                target_label: "org".to_owned(),
            }
        );
        // Brackets only parse around an IPv6 literal; without a port the literal stays one
        // label, and splitting "[::1.2.3.4]" at dots leaves the unterminated class "[::1".
        assert_eq!(
            explain("[::1.2.3.4]", "[::1.2.3.4]"),
            MatchOutcome::BadGlob {
                pattern_label: "[::1".to_owned(),
            }
        );
    }

    #[test]
    fn explain_checks_in_go_order() {
        // Port before label count, label count before path, path before labels.
        assert_eq!(kind(&explain("a.b:1", "a:2")), "port");
        assert_eq!(kind(&explain("a.b/x", "a/y")), "labels");
        assert_eq!(kind(&explain("x.io/a", "y.io/b")), "path");
        // The pattern is parsed first.
        let both_bad = explain("%zz", "%yy");
        assert_eq!(
            both_bad,
            unparsable(
                Side::Pattern,
                r#"parse "https://%zz": invalid URL escape "%zz""#
            )
        );
    }

    #[test]
    fn display_is_a_short_sentence() {
        let rows: &[(&str, &str, &str)] = &[
            ("*.io", "a.io", "the pattern matches the image"),
            (
                "*.kubernetes.io:1234/blah",
                "prefix.kubernetes.io:1111/blah",
                "port 1234 in the pattern differs from port 1111 in the image",
            ),
            (
                "registry.io",
                "registry.io:5000/app",
                "the pattern has no port but the image has port 5000",
            ),
            (
                "registry.io:5000",
                "registry.io/app",
                "the pattern has port 5000 but the image has no port",
            ),
            (
                "*.io",
                "a.b.io",
                "the pattern host has 2 dot-separated labels but the image host has 3 (a `*` \
                 never spans a dot)",
            ),
            (
                "a.io/*",
                "a.io/x",
                "the image path \"/x\" does not start with the pattern path \"/*\" (paths are \
                 literal prefixes, not globs)",
            ),
            (
                "k*.io",
                "quay.io",
                "host label 1 of the pattern, \"k*\", does not match \"quay\" in the image",
            ),
            (
                "%in",
                "a.io",
                "the pattern is not a valid URL for the kubelet: parse \"https://%in\": invalid \
                 URL escape \"%in\"",
            ),
            (
                "a.io",
                "a b",
                "the image is not a valid URL for the kubelet: parse \"https://a b\": invalid \
                 character \" \" in host name",
            ),
            (
                "[::1.2.3.4]",
                "[::1.2.3.4]",
                "the pattern host label \"[::1\" is a malformed glob (syntax error in pattern), \
                 which the kubelet treats as no match",
            ),
        ];
        for &(pattern, target, want) in rows {
            assert_eq!(explain(pattern, target).to_string(), want);
        }
    }

    #[test]
    fn url_parsing_follows_go() {
        let rows: &[(&str, &str, &str)] = &[
            // Userinfo is dropped, but validated.
            ("user:pw@registry.io", "registry.io/app", "match"),
            ("a@b@registry.io", "registry.io/app", "match"),
            // Paths are compared after percent-decoding, hosts may escape non-ASCII bytes.
            ("registry.io/a%2Fb", "registry.io/a/b/c", "match"),
            ("registry.io/a/b", "registry.io/a%2fb", "match"),
            ("%C3%A9.io", "é.io", "match"),
            // Query and fragment are dropped.
            ("registry.io?x=1", "registry.io/app", "match"),
            ("registry.io#frag", "registry.io/app", "match"),
            // "host:" has an empty port, which equals no port.
            ("registry.io:", "registry.io/app", "match"),
            // Several colons: the last one must start a port, then SplitHostPort gives up
            // and the whole host is one label.
            ("a:1:2", "a:1:2", "match"),
            ("a:1:2", "a:1", "port"),
            // A bracketed IPv6 literal with a port becomes the label "::1".
            ("[::1]:5000", "[::1]:5000/app", "match"),
            ("[fe80::1%25en0]:5000", "[fe80::1%25en0]:5000", "match"),
            // Without a port, the literal "[::1]" is a one-character class.
            ("[::1]", "[::1]", "label"),
            // Matching is case-sensitive.
            ("Registry.io", "registry.io", "label"),
        ];
        for &(pattern, target, want) in rows {
            let outcome = explain(pattern, target);
            assert_eq!(kind(&outcome), want, "{pattern} vs {target}: {outcome:?}");
        }
    }

    #[test]
    fn url_errors_use_go_wording() {
        let rows: &[(&str, &str)] = &[
            ("%", r#"parse "https://%": invalid URL escape "%""#),
            ("%4", r#"parse "https://%4": invalid URL escape "%4""#),
            (
                "%41.io",
                r#"parse "https://%41.io": invalid URL escape "%41""#,
            ),
            (
                "a b.io",
                r#"parse "https://a b.io": invalid character " " in host name"#,
            ),
            (
                "a\\b.io",
                r#"parse "https://a\\b.io": invalid character "\\" in host name"#,
            ),
            (
                "a\tb",
                r#"parse "https://a\tb": net/url: invalid control character in URL"#,
            ),
            (
                "us er@registry.io",
                r#"parse "https://us er@registry.io": net/url: invalid userinfo"#,
            ),
            (
                "u%zz@registry.io",
                r#"parse "https://u%zz@registry.io": invalid URL escape "%zz""#,
            ),
            (
                "registry.io#%zz",
                r#"parse "https://registry.io#%zz": invalid URL escape "%zz""#,
            ),
            (
                "a:b:c",
                r#"parse "https://a:b:c": invalid port ":c" after host"#,
            ),
            (
                "host:x/app",
                r#"parse "https://host:x/app": invalid port ":x" after host"#,
            ),
            ("[::1", r#"parse "https://[::1": missing ']' in host"#),
            (
                "[::1]x",
                r#"parse "https://[::1]x": invalid port "x" after host"#,
            ),
            (
                "[1.2.3.4]",
                r#"parse "https://[1.2.3.4]": invalid IP-literal"#,
            ),
            (
                "a[0-9].io",
                r#"parse "https://a[0-9].io": invalid IP-literal"#,
            ),
            (
                "[::g]",
                r#"parse "https://[::g]": invalid host: ParseAddr("::g"): each colon-separated field must have at least one digit (at "g")"#,
            ),
            (
                "[fe80::1%25%0a]",
                r#"parse "https://[fe80::1%25%0a]": invalid URL escape "%0a""#,
            ),
            (
                "%e9/%ff%",
                r#"parse "https://%e9/%ff%": invalid URL escape "%""#,
            ),
        ];
        for &(pattern, want) in rows {
            assert_eq!(
                explain(pattern, "registry.io"),
                unparsable(Side::Pattern, want),
                "{pattern}"
            );
        }
    }

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

    #[test]
    fn normalize_auth_key_follows_basic_docker_keyring_add() {
        let rows: &[(&str, Result<&str, &str>)] = &[
            ("https://quay.io/v1/", Ok("quay.io")),
            ("quay.io/v2/", Ok("quay.io")),
            ("quay.io/v2/team", Ok("quay.io/team")),
            ("quay.io/v1", Ok("quay.io/v1")),
            ("http://quay.io/", Ok("quay.io")),
            ("quay.io:5000/a%2Fb", Ok("quay.io:5000/a/b")),
            ("user:pw@quay.io", Ok("quay.io")),
            ("quay.io?x=1#frag", Ok("quay.io")),
            // The scheme test is case-sensitive, so this one gets a second scheme.
            ("HTTPS://quay.io", Ok("HTTPS://quay.io")),
            ("", Ok("")),
            (
                "quay.io/%zz",
                Err(r#"parse "https://quay.io/%zz": invalid URL escape "%zz""#),
            ),
            (
                "https://[::1",
                Err(r#"parse "https://[::1": missing ']' in host"#),
            ),
        ];
        for &(key, want) in rows {
            let want = want.map(str::to_owned).map_err(str::to_owned);
            assert_eq!(normalize_auth_key(key), want, "{key:?}");
        }
    }

    #[test]
    fn keyring_lookup_follows_the_kubelet() {
        // Unparsable keys are dropped.
        assert_eq!(
            keyring_lookup(&["quay.io/%zz", "quay.io"], "quay.io/app"),
            vec!["quay.io"]
        );
        // Keys that normalise alike share an entry and come back in the order given.
        let same = ["https://quay.io", "quay.io/v1/", "quay.io"];
        assert_eq!(keyring_lookup(&same, "quay.io/app"), same.to_vec());
        // Reverse-lexicographic: a concrete host sorts above a wildcard.
        assert_eq!(
            keyring_lookup(&["*.example.com", "a.example.com"], "a.example.com/x"),
            vec!["a.example.com", "*.example.com"]
        );
        // The stored key is the decoded path, parsed again at lookup: here that fails.
        assert_eq!(
            normalize_auth_key("quay.io/a%25zz").as_deref(),
            Ok("quay.io/a%zz")
        );
        assert!(keyring_lookup(&["quay.io/a%25zz"], "quay.io/a%25zz/x").is_empty());
    }

    #[test]
    fn keyring_docker_hub_fallback() {
        let hub = "https://index.docker.io/v1/";
        for image in [
            "library/nginx",
            "nginx",
            "docker.io/library/nginx",
            "index.docker.io/library/nginx",
        ] {
            assert_eq!(keyring_lookup(&[hub], image), vec![hub], "{image}");
        }
        assert!(keyring_lookup(&[hub], "registry.tld/nginx").is_empty());
        // Only used when nothing else matched.
        assert_eq!(
            keyring_lookup(&["index.docker.io", "docker.io"], "docker.io/library/nginx"),
            vec!["docker.io"]
        );
        // Only the exact key index.docker.io, not a glob that would cover it.
        assert!(keyring_lookup(&["*.docker.io"], "library/nginx").is_empty());
    }

    // Go src/path/filepath/match_test.go matchTests, in order.
    #[test]
    fn glob_match_go_vectors() {
        let ok = |b: bool| -> Result<bool, BadPattern> { Ok(b) };
        let bad: Result<bool, BadPattern> = Err(BadPattern);
        let rows: &[(&str, &str, Result<bool, BadPattern>)] = &[
            ("abc", "abc", ok(true)),
            ("*", "abc", ok(true)),
            ("*c", "abc", ok(true)),
            ("a*", "a", ok(true)),
            ("a*", "abc", ok(true)),
            ("a*", "ab/c", ok(false)),
            ("a*/b", "abc/b", ok(true)),
            ("a*/b", "a/c/b", ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", ok(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", ok(false)),
            ("ab[c]", "abc", ok(true)),
            ("ab[b-d]", "abc", ok(true)),
            ("ab[e-g]", "abc", ok(false)),
            ("ab[^c]", "abc", ok(false)),
            ("ab[^b-d]", "abc", ok(false)),
            ("ab[^e-g]", "abc", ok(true)),
            ("a\\*b", "a*b", ok(true)),
            ("a\\*b", "ab", ok(false)),
            ("a?b", "a☺b", ok(true)),
            ("a[^a]b", "a☺b", ok(true)),
            ("a???b", "a☺b", ok(false)),
            ("a[^a][^a][^a]b", "a☺b", ok(false)),
            ("[a-ζ]*", "α", ok(true)),
            ("*[a-ζ]", "A", ok(false)),
            ("a?b", "a/b", ok(false)),
            ("a*b", "a/b", ok(false)),
            ("[\\]a]", "]", ok(true)),
            ("[\\-]", "-", ok(true)),
            ("[x\\-]", "x", ok(true)),
            ("[x\\-]", "-", ok(true)),
            ("[x\\-]", "z", ok(false)),
            ("[\\-x]", "x", ok(true)),
            ("[\\-x]", "-", ok(true)),
            ("[\\-x]", "a", ok(false)),
            ("[]a]", "]", bad),
            ("[-]", "-", bad),
            ("[x-]", "x", bad),
            ("[x-]", "-", bad),
            ("[x-]", "z", bad),
            ("[-x]", "x", bad),
            ("[-x]", "-", bad),
            ("[-x]", "a", bad),
            ("\\", "a", bad),
            ("[a-b-c]", "a", bad),
            ("[", "a", bad),
            ("[^", "a", bad),
            ("[^bc", "a", bad),
            ("a[", "a", bad),
            ("a[", "ab", bad),
            ("a[", "x", bad),
            ("a/b[", "x", bad),
            ("*x", "xxx", ok(true)),
        ];
        assert_eq!(rows.len(), 56);
        for (i, &(pattern, name, want)) in rows.iter().enumerate() {
            assert_eq!(
                glob_match(pattern, name),
                want,
                "row {i}: {pattern:?} {name:?}"
            );
        }
    }

    #[test]
    fn glob_match_works_on_bytes_like_go() {
        // Go's star skips single bytes, so "[\u{FFFD}]" can match the tail byte of '☺'.
        assert_eq!(glob_match("*[\u{FFFD}]", "☺"), Ok(true));
        assert_eq!(glob_match("[\u{FFFD}]", "☺"), Ok(false));
        assert_eq!(glob_match("*?", "☺☺"), Ok(true));
        assert_eq!(glob_match("\\☺", "☺"), Ok(true));
        assert_eq!(glob_match("", ""), Ok(true));
        assert_eq!(glob_match("", "a"), Ok(false));
    }

    #[test]
    fn glob_match_checks_the_rest_of_the_pattern_after_a_mismatch() {
        // Current Go reports a malformed tail even when an earlier chunk already failed.
        assert_eq!(glob_match("x*\\", "a-"), Err(BadPattern));
        assert_eq!(glob_match("a*b*[", "x"), Err(BadPattern));
        assert_eq!(glob_match("a*b*[c]", "x"), Ok(false));
    }

    #[test]
    fn go_quote_matches_strconv_quote() {
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
            assert_eq!(go_quote(input), want);
        }
    }

    #[test]
    fn split_host_port_follows_go() {
        let rows: &[(&str, Option<(&str, &str)>)] = &[
            ("host:80", Some(("host", "80"))),
            ("host:", Some(("host", ""))),
            ("host", None),
            ("a:b:c", None),
            ("[::1]:80", Some(("::1", "80"))),
            ("[::1]", None),
            ("[::1]:", Some(("::1", ""))),
            ("[::1]x:80", None),
            ("[a]:b:80", None),
            ("a[b:80", None),
            ("a]b:80", None),
            ("", None),
        ];
        for &(hostport, want) in rows {
            let got = split_host_port(hostport.as_bytes());
            let want = want.map(|(h, p)| (h.as_bytes(), p.as_bytes()));
            assert_eq!(got, want, "{hostport:?}");
        }
    }

    /// Every public function on one pair, checking the answers agree with each other.
    fn exercise(a: &str, b: &str) {
        let outcome = explain(a, b);
        assert_eq!(urls_match(a, b), outcome.is_match(), "{a:?} {b:?}");
        assert_eq!(match_image(a, b), outcome.is_match(), "{a:?} {b:?}");
        assert!(!outcome.to_string().is_empty());
        let found = keyring_lookup(&[a, b], b);
        assert!(found.iter().all(|k| *k == a || *k == b));
        let _ = glob_match(a, b);
    }

    #[test]
    fn odd_inputs_never_panic() {
        let odd = [
            "",
            "[",
            "]",
            "\\",
            "%",
            "%%",
            "%zz",
            "%e9",
            "%25",
            "[%25]",
            "[::%2525]",
            "[::1",
            "[::1]",
            "[::1]:",
            "[::1]:80",
            "[1.2.3.4]",
            "[fe80::1%25en0]:5000",
            "[::1.2.3.4]",
            "a:b:c",
            "a:1:2",
            "host:",
            ":",
            "@",
            "user@",
            "a@b@c",
            "?",
            "#",
            "*",
            "**",
            "/",
            "//",
            "///",
            "https://",
            "http://x",
            "☺",
            "é.ü",
            "\u{0}",
            "\u{7f}",
            "a b",
            "日本.jp/路径",
            "\u{FFFD}",
            "*.*.*",
            "[^a]",
            "a[",
            "\\.io",
            "/v1/",
            "index.docker.io",
        ];
        for a in odd {
            let _ = normalize_auth_key(a);
            let _ = is_default_registry_match(a);
            for b in odd {
                exercise(a, b);
            }
        }
    }

    #[test]
    fn huge_inputs_never_panic() {
        let long_label = "a".repeat(1 << 18);
        let huge = [
            long_label.clone(),
            format!("{}io", "*.".repeat(100_000)),
            "%".repeat(100_000),
            "[".repeat(100_000),
            format!("{}b", "*a".repeat(2_000)),
            format!("x.io/{}", "%41".repeat(100_000)),
        ];
        for a in &huge {
            let _ = normalize_auth_key(a);
            let _ = is_default_registry_match(a);
            for b in ["", "a", "x.io/app"] {
                exercise(a, b);
                exercise(b, a);
            }
        }
        assert!(urls_match(&long_label, &long_label));
        assert_eq!(glob_match(&huge[4], &"a".repeat(10_000)), Ok(false));
        assert_eq!(glob_match(&huge[3], "["), Err(BadPattern));
    }

    #[test]
    fn is_match_only_for_match() {
        assert!(MatchOutcome::Match.is_match());
        assert!(
            !MatchOutcome::BadGlob {
                pattern_label: "[".to_owned()
            }
            .is_match()
        );
        assert!(!unparsable(Side::Target, "x").is_match());
    }
}
