//! The pieces of Go's standard library the kubelet's matching rules lean on, copied by hand.
//!
//! The kubelet is written in Go, and whether a `matchImages` entry or an `auth` key applies to an
//! image comes down to what Go's `net/url`, `net`, `net/netip` and `path/filepath` do with the
//! string, quirks and error texts included. Rust's own parsers (the `url` crate, `std::net`, glob
//! crates) answer differently on exactly the inputs users get wrong, and a checker that disagrees
//! with the kubelet is worse than none. So [`crate::matching`] keeps the kubelet's rules and this
//! module keeps the Go functions they call, one file per function, each saying which it mirrors:
//!
//! - [`url`]: `net/url.Parse` (host and path of `https://` + pattern);
//! - [`hostport`]: `net.SplitHostPort` (the kubelet's `SplitURL`);
//! - [`netip`]: `net/netip.ParseAddr` (bracketed IPv6 hosts);
//! - [`filepath`]: `path/filepath.Match` (each host label's glob);
//! - [`quote`]: `strconv.Quote` (error texts as the kubelet logs them);
//! - [`utf8`]: `unicode/utf8.DecodeRune` (Go strings are bytes).
//!
//! Everything works on bytes, as Go does: percent-decoding may produce bytes that are not UTF-8.

pub(crate) mod filepath;
pub(crate) mod hostport;
pub(crate) mod netip;
pub(crate) mod quote;
pub(crate) mod url;
pub(crate) mod utf8;

/// Go `strings.Cut` on a byte: what comes before the first `sep`, and what comes after it.
pub(crate) fn cut(s: &[u8], sep: u8) -> (&[u8], Option<&[u8]>) {
    match s.iter().position(|&b| b == sep) {
        Some(i) => (
            s.get(..i).unwrap_or_default(),
            Some(s.get(i + 1..).unwrap_or_default()),
        ),
        None => (s, None),
    }
}
