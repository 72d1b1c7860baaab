//! Container image references as plugins receive them.
//!
//! This module owns [`ImageRef`]: it splits an image string into registry, repository, tag
//! and digest, and rebuilds the fully-qualified repository the kubelet sends. It accepts both
//! the kubelet's form (`docker.io/library/nginx`, `reg.io:5000/a/b`; already normalised by
//! `distribution/reference`, no tag or digest) and what a person types when piping a request
//! into a plugin by hand (`nginx:1.27`, `ghcr.io/org/app:v1@sha256:…`, or a bare registry host
//! such as `test.registry.io`, which upstream plugin tests send).
//!
//! Rules follow `distribution/reference` (`ParseNormalizedNamed`): the first of several
//! components is the registry when it has a `.` or `:`, is `localhost`, starts with `[` or
//! has upper case; otherwise the registry is `docker.io`, where a one-component path gets
//! `library/`. `index.docker.io` (without a port) becomes `docker.io` everywhere, because
//! that is what the kubelet sends and caches under. Differences from upstream:
//! - A string without `/` or `@` that looks like a registry is a bare registry host with an
//!   empty repository: a dotted name ending in a letters-only (or `xn--`) label, a dotted IPv4
//!   address, `localhost`, or `[IPv6]`, each with an optional all-digit `:port`. Upstream reads
//!   `test.registry.io` as `docker.io/library/test.registry.io`; names like
//!   `ubuntu-12.04-base` or `nginx:1.27` still go to Docker Hub as upstream has it.
//! - Upper case is accepted in repository paths: the kubelet validated the name before sending
//!   it, and refusing here would only turn a pull into an anonymous one.
//! - The 255-character repository limit is not enforced; [`MAX_IMAGE_LEN`] bounds the input.
//! - Digests follow the OCI grammar (`algorithm:encoded`), checked strictly for `sha256`,
//!   `sha384` and `sha512`.

use std::fmt;

/// The longest image string accepted, in bytes; far above any real reference.
pub const MAX_IMAGE_LEN: usize = 4096;

/// Docker Hub as `distribution/reference` names it after normalisation.
const DOCKER_HUB: &str = "docker.io";
/// The legacy Docker Hub name that upstream rewrites to [`DOCKER_HUB`].
const LEGACY_DOCKER_HUB: &str = "index.docker.io";
/// Namespace of Docker Hub's official images: `nginx` is `docker.io/library/nginx`.
const OFFICIAL_PREFIX: &str = "library/";
const MAX_TAG_LEN: usize = 128;
const MIN_DIGEST_ENCODED_LEN: usize = 32;

/// A parsed image reference. `registry` is the host exactly as written, port included (the
/// kubelet's Registry cache key and the auth key providers answer with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    registry: String,
    host: String,
    port: Option<String>,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageRef {
    /// Parses an image as the kubelet sends it or as a person writes it; see the module docs
    /// for the rules. Never panics.
    pub fn parse(image: &str) -> Result<ImageRef, ImageError> {
        if image.is_empty() {
            return Err(ImageError::Empty);
        }
        if image.len() > MAX_IMAGE_LEN {
            return Err(ImageError::TooLong {
                len: image.len(),
                max: MAX_IMAGE_LEN,
            });
        }
        // Before the character scan, so `https://…` gets the message that names the mistake.
        if image.contains("://") {
            return Err(ImageError::HasScheme);
        }
        if let Some((position, ch)) = image.char_indices().find(|&(_, c)| !is_reference_char(c)) {
            return Err(ImageError::InvalidCharacter { ch, position });
        }
        // From here on the input is ASCII, so error payloads print as typed.
        if is_image_id(image) {
            // Upstream refuses these so that an image ID is never mistaken for a name.
            return Err(ImageError::InvalidPath(image.to_owned()));
        }

        let (name_and_tag, digest) = match image.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (image, None),
        };

        if digest.is_none() && !name_and_tag.contains('/') && is_bare_host(name_and_tag) {
            let (host, port) = split_host_port(name_and_tag)?;
            return Ok(ImageRef::new(
                name_and_tag,
                host,
                port,
                String::new(),
                None,
                None,
            ));
        }

        let (registry, path_and_tag) = match name_and_tag.split_once('/') {
            Some((first, rest)) if is_registry_component(first) => (first, rest),
            _ => (DOCKER_HUB, name_and_tag),
        };
        let (path, tag) = split_tag(path_and_tag);

        let (host, port) = split_host_port(registry)?;
        validate_path(path)?;
        if let Some(tag) = tag {
            validate_tag(tag)?;
        }
        if let Some(digest) = digest {
            validate_digest(digest)?;
        }

        let repository = if is_docker_hub(registry) && !path.contains('/') {
            format!("{OFFICIAL_PREFIX}{path}")
        } else {
            path.to_owned()
        };
        Ok(ImageRef::new(registry, host, port, repository, tag, digest))
    }

    fn new(
        registry: &str,
        host: &str,
        port: Option<&str>,
        repository: String,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> ImageRef {
        // The kubelet's key for `index.docker.io/x` is `docker.io`, so report that.
        let (registry, host) = if registry == LEGACY_DOCKER_HUB {
            (DOCKER_HUB, DOCKER_HUB)
        } else {
            (registry, host)
        };
        ImageRef {
            registry: registry.to_owned(),
            host: host.to_owned(),
            port: port.map(str::to_owned),
            repository,
            tag: tag.map(str::to_owned),
            digest: digest.map(str::to_owned),
        }
    }

    /// The registry as written, port included: `"docker.io"`, `"reg.io:5000"`,
    /// `"[fe80::1]:5000"`. `index.docker.io` is reported as `docker.io`, as the kubelet does.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The registry without its port, IPv6 brackets removed: `"reg.io"`, `"fe80::1"`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The registry port as written, if any: `Some("5000")`.
    pub fn port(&self) -> Option<&str> {
        self.port.as_deref()
    }

    /// The repository path without registry, tag or digest: `"library/nginx"`; empty for a
    /// bare registry host.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag without its `:`, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest (`algorithm:encoded`) without its `@`, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// What the kubelet would send for this image: registry + "/" + repository (just the
    /// registry for a bare host).
    pub fn normalized(&self) -> String {
        if self.repository.is_empty() {
            self.registry.clone()
        } else {
            format!("{}/{}", self.registry, self.repository)
        }
    }
}

impl fmt::Display for ImageRef {
    /// [`ImageRef::normalized`] plus `:tag` and `@digest` when present.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Why an image string was refused. Each message is one line an operator can act on.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// The image is the empty string.
    #[error("image is empty")]
    Empty,
    /// The image is longer than [`MAX_IMAGE_LEN`] bytes.
    #[error("image is {len} bytes long, more than the limit of {max} bytes")]
    TooLong {
        /// Length of the input in bytes.
        len: usize,
        /// The limit, [`MAX_IMAGE_LEN`].
        max: usize,
    },
    /// A character no image reference contains: whitespace, a control character, non-ASCII
    /// or punctuation outside the reference grammar.
    #[error("{}", describe_character(*.ch, *.position))]
    InvalidCharacter {
        /// The offending character.
        ch: char,
        /// Its byte offset in the input.
        position: usize,
    },
    /// The image contains `://`, as in `https://registry.example.com/app`.
    #[error("image must not start with a scheme such as https://; write registry/repository[:tag]")]
    HasScheme,
    /// The registry host is not a DNS name, an IPv4 address or a bracketed IPv6 address.
    #[error(
        "invalid registry host {0:?}: expected a DNS name such as registry.example.com, \
         an IPv4 address, or an IPv6 address in brackets such as [fe80::1]"
    )]
    InvalidHost(String),
    /// The registry port is empty, not decimal, or above 65535.
    #[error("invalid registry port {0:?}: expected a number from 0 to 65535")]
    InvalidPort(String),
    /// The tag breaks `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
    #[error(
        "invalid tag {0:?}: expected 1 to 128 letters, digits, '_', '.' or '-', \
         not starting with '.' or '-'"
    )]
    InvalidTag(String),
    /// The digest is not `algorithm:encoded` (`sha256:` + 64 lowercase hex digits, say).
    #[error(
        "invalid digest {0:?}: expected algorithm:hex such as sha256: followed by \
         64 lowercase hex digits"
    )]
    InvalidDigest(String),
    /// The repository path has an empty part, a misplaced separator, or is a bare image ID.
    #[error(
        "invalid repository path {0:?}: expected '/'-separated names of letters and digits \
         joined by '.', '_', '__' or '-', such as library/nginx (no empty parts, \
         not a 64-hex image ID)"
    )]
    InvalidPath(String),
}

fn describe_character(ch: char, position: usize) -> String {
    if ch.is_whitespace() || ch.is_control() {
        format!(
            "image contains a space or control character at byte {position} (U+{:04X})",
            u32::from(ch)
        )
    } else if !ch.is_ascii() {
        format!(
            "image contains the non-ASCII character {ch:?} at byte {position}; \
             image references are ASCII"
        )
    } else {
        format!("image contains {ch:?} at byte {position}, which no image reference allows")
    }
}

/// Every character that can appear somewhere in a reference: names, port, IPv6 brackets,
/// tag, and digest (`+` in algorithms, `=` in encodings).
fn is_reference_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '.' | '_' | '-' | '/' | ':' | '@' | '[' | ']' | '+' | '=')
}

fn is_image_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Docker's `splitDockerDomain` test for the first of several components: a `.` or `:`,
/// `localhost`, or upper case (repository names are lower case, so it must be a host). A
/// leading `[` is an IPv6 host even when malformed, so the error names the host.
fn is_registry_component(first: &str) -> bool {
    first.contains(['.', ':'])
        || first == "localhost"
        || first.starts_with('[')
        || first.bytes().any(|b| b.is_ascii_uppercase())
}

/// A slash-free, digest-free input that names a registry rather than a Docker Hub image:
/// `test.registry.io`, `registry.io:5000`, `192.168.0.1`, `localhost:5000`, `[::1]:5000`.
/// A dotted name counts only if it ends in a real top-level label (letters, or `xn--`) or is
/// a dotted IPv4 address, and any `:` suffix is all digits: `nginx:1.27`,
/// `ubuntu-12.04-base` and `app.v2:1.0` stay Docker Hub images, as upstream reads them.
fn is_bare_host(s: &str) -> bool {
    if s.starts_with('[') {
        return true;
    }
    let (host, port) = match s.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (s, None),
    };
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    if host == "localhost" {
        return true;
    }
    let Some((_, last)) = host.rsplit_once('.') else {
        return false;
    };
    let is_tld = (last.len() >= 2 && last.bytes().all(|b| b.is_ascii_alphabetic()))
        || last
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("xn--"));
    let is_ipv4 = host.split('.').count() == 4
        && host
            .split('.')
            .all(|o| !o.is_empty() && o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit()));
    is_tld || is_ipv4
}

fn is_docker_hub(registry: &str) -> bool {
    registry == DOCKER_HUB || registry == LEGACY_DOCKER_HUB
}

/// Splits `path[:tag]`; the tag is whatever follows the first `:` of the last component.
fn split_tag(s: &str) -> (&str, Option<&str>) {
    let last_start = s.rfind('/').map_or(0, |i| i + 1);
    let colon = s
        .get(last_start..)
        .and_then(|last| last.find(':'))
        .map(|i| last_start + i);
    match colon.and_then(|i| s.split_at_checked(i)) {
        Some((path, tag)) => (path, tag.strip_prefix(':')),
        None => (s, None),
    }
}

/// Validates `host[:port]` and returns the host (brackets removed) and the port.
fn split_host_port(registry: &str) -> Result<(&str, Option<&str>), ImageError> {
    let invalid_host = || ImageError::InvalidHost(registry.to_owned());
    let (host, after_host) = if let Some(bracketed) = registry.strip_prefix('[') {
        // distribution/reference: `\[[a-fA-F0-9:]+\]`; zones and embedded IPv4 are refused.
        let (inside, after) = bracketed.split_once(']').ok_or_else(invalid_host)?;
        if inside.is_empty() || !inside.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return Err(invalid_host());
        }
        (inside, after)
    } else {
        let host_end = registry.find(':').unwrap_or(registry.len());
        let (host, after) = registry
            .split_at_checked(host_end)
            .ok_or_else(invalid_host)?;
        if !is_domain_name(host) {
            return Err(ImageError::InvalidHost(host.to_owned()));
        }
        (host, after)
    };
    let port = match after_host.strip_prefix(':') {
        Some(port) => {
            // `u16::from_str` alone would also take a leading `+`.
            if port.is_empty()
                || !port.bytes().all(|b| b.is_ascii_digit())
                || port.parse::<u16>().is_err()
            {
                return Err(ImageError::InvalidPort(port.to_owned()));
            }
            Some(port)
        }
        None if after_host.is_empty() => None,
        None => return Err(invalid_host()),
    };
    Ok((host, port))
}

/// `domain-component ('.' domain-component)*` with components
/// `[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?`; covers DNS names and dotted IPv4.
fn is_domain_name(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|label| {
            let b = label.as_bytes();
            b.first().is_some_and(u8::is_ascii_alphanumeric)
                && b.last().is_some_and(u8::is_ascii_alphanumeric)
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
        })
}

fn validate_path(path: &str) -> Result<(), ImageError> {
    if path.is_empty() || !path.split('/').all(is_path_component) {
        return Err(ImageError::InvalidPath(path.to_owned()));
    }
    Ok(())
}

/// Upstream's `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`, with upper case allowed too.
fn is_path_component(component: &str) -> bool {
    let b = component.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.split(u8::is_ascii_alphanumeric)
            .all(|sep| matches!(sep, b"." | b"_" | b"__") || sep.iter().all(|&c| c == b'-'))
}

fn validate_tag(tag: &str) -> Result<(), ImageError> {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    let b = tag.as_bytes();
    let ok = b.len() <= MAX_TAG_LEN
        && b.first().is_some_and(word)
        && b.iter().all(|c| word(c) || matches!(c, b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ImageError::InvalidTag(tag.to_owned()))
    }
}

/// OCI `algorithm:encoded`: algorithm `[a-z0-9]+([+._-][a-z0-9]+)*`, encoded
/// `[a-zA-Z0-9=_-]+` of at least 32 characters; registered algorithms must be exact.
fn validate_digest(digest: &str) -> Result<(), ImageError> {
    let ok = digest.split_once(':').is_some_and(|(algorithm, encoded)| {
        let algorithm_ok = !algorithm.is_empty()
            && algorithm.split(['+', '.', '_', '-']).all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        let encoded_ok = encoded.len() >= MIN_DIGEST_ENCODED_LEN
            && encoded
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'));
        let lower_hex = |len: usize| {
            encoded.len() == len
                && encoded
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let registered_ok = match algorithm {
            "sha256" => lower_hex(64),
            "sha384" => lower_hex(96),
            "sha512" => lower_hex(128),
            _ => true,
        };
        algorithm_ok && encoded_ok && registered_ok
    });
    if ok {
        Ok(())
    } else {
        Err(ImageError::InvalidDigest(digest.to_owned()))
    }
}

#[cfg(test)]
mod tests;
