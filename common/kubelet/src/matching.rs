//! How the kubelet decides that a `matchImages` entry or an `auth` key applies to an image.
//!
//! This module owns the kubelet's matching rules: `URLsMatchStr`/`URLsMatch`/`SplitURL`/
//! `ParseSchemelessURL` and the keyring's key normalisation and lookup order
//! (`pkg/credentialprovider/keyring.go`). The pieces of the Go standard library they lean on
//! (`net/url.Parse`, `net.SplitHostPort`, `path/filepath.Match` and, for bracketed hosts,
//! `net/netip.ParseAddr`) are in `go` (common/kubelet/src/go.rs), one file each.
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
//! colon of a host starts its port (see `go::url`). Strings are handled as bytes, as Go
//! does, because percent-decoding may produce bytes that are not UTF-8.

use std::collections::BTreeSet;
use std::fmt;

use crate::go::filepath;
use crate::go::hostport::split_host_port;
use crate::go::url::{GoUrl, parse_url};

pub use crate::go::filepath::BadPattern;

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

/// Go `path/filepath.Match` on Unix, the glob the kubelet applies to each host label
/// (`go::filepath`).
pub fn glob_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    filepath::match_bytes(pattern.as_bytes(), name.as_bytes())
}

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
        match filepath::match_bytes(glob_label, target_label) {
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

#[cfg(test)]
mod tests;
