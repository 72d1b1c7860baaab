//! The bodies of the fuzz targets in `fuzz/`, kept here so that a stable `cargo test`
//! (`common/testkit/tests/fuzz_smoke.rs`) runs the same checks over the seed corpus and pseudo-random
//! inputs when no nightly toolchain is around.
//!
//! Each body takes arbitrary bytes and panics when an invariant breaks, not only when the code
//! under test panics: parse → encode → parse round trips, agreement between the public functions
//! of a module, and differential properties against simple models (a glob without
//! metacharacters is string equality, for instance).

use std::collections::BTreeMap;

use kcp_kubelet::duration::GoDuration;
use kcp_kubelet::image::{ImageRef, MAX_IMAGE_LEN};
use kcp_kubelet::matching::{
    MatchOutcome, Side, explain, glob_match, is_default_registry_match, keyring_lookup,
    match_image, normalize_auth_key, urls_match,
};
use kcp_kubelet::protocol::{
    ApiVersion, AuthConfig, CacheKeyType, CredentialProviderRequest, CredentialProviderResponse,
    Credentials, MAX_REQUEST_BYTES, RequestError, encode_request,
};
use kcp_kubelet::secret::Secret;
use kcp_kubelet_emulation::exec::{
    AcceptedResponse, DECODE_ERROR, DecodeContext, DecodeError, decode_response,
};

/// A fuzz target body: arbitrary bytes in, a panic when an invariant breaks.
pub type Body = fn(&[u8]);

/// Every target: its name (the `fuzz/fuzz_targets/<name>.rs` file and `fuzz/corpus/<name>/`
/// directory) and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("request", request),
    ("image", image),
    ("matching", matching),
    ("duration", duration),
    ("kubelet_response", kubelet_response),
    ("oidc_registries", oidc_registries),
];

/// Error texts end up as the single stderr line a plugin prints: never empty, never two lines.
fn assert_one_line(message: &str, input: &[u8]) {
    assert!(
        !message.is_empty() && !message.contains(['\n', '\r']),
        "message {message:?} for input {input:?} is not one line"
    );
}

/// Splits at the first newline: the seed files are readable text, one field per line.
fn fields(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data)
        .split('\n')
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// request

/// `CredentialProviderRequest::from_bytes` on raw stdin bytes, and on requests encoded the way
/// the kubelet encodes them around an image, token and annotation taken from the input.
pub fn request(data: &[u8]) {
    request_from_stdin(data);
    request_from_parts(data);
}

fn request_from_stdin(data: &[u8]) {
    match CredentialProviderRequest::from_bytes(data) {
        Ok(req) => {
            assert!(!req.image.is_empty());
            assert_eq!(ImageRef::parse(&req.image).as_ref(), Ok(&req.image_ref));
            if !req.api_version.has_service_account_fields() {
                assert!(req.service_account_token.is_none());
                assert!(req.service_account_annotations.is_empty());
            }
            assert!(
                req.service_account_token
                    .as_ref()
                    .is_none_or(|t| !t.is_empty())
            );
            // What the kubelet would have written for this request parses to the same request.
            let line = encode_request(
                req.api_version,
                &req.image,
                req.service_account_token.as_ref().map(Secret::expose),
                &req.service_account_annotations,
            );
            assert_eq!(line.last(), Some(&b'\n'));
            let again = CredentialProviderRequest::from_bytes(&line);
            assert_eq!(again.as_ref(), Ok(&req), "re-encoded as {line:?}");
        }
        Err(err) => {
            assert_one_line(&err.to_string(), data);
            if data.len() > MAX_REQUEST_BYTES {
                assert!(matches!(err, RequestError::TooLarge { .. }), "{err:?}");
            } else if let Err(utf8) = std::str::from_utf8(data) {
                assert_eq!(
                    err,
                    RequestError::NotUtf8 {
                        offset: utf8.valid_up_to()
                    }
                );
            }
        }
    }
}

/// Lines of the input: image, token, annotation key, annotation value.
fn request_from_parts(data: &[u8]) {
    let parts = fields(data);
    let part = |i: usize| parts.get(i).map(String::as_str).unwrap_or_default();
    let (image, token) = (part(0), part(1));
    let annotations = match parts.get(2) {
        Some(key) => BTreeMap::from([(key.clone(), part(3).to_owned())]),
        None => BTreeMap::new(),
    };
    for version in ApiVersion::ALL {
        let line = encode_request(version, image, Some(token), &annotations);
        let got = CredentialProviderRequest::from_bytes(&line);
        if line.len() > MAX_REQUEST_BYTES {
            assert!(matches!(got, Err(RequestError::TooLarge { .. })));
            continue;
        }
        if image.is_empty() {
            assert_eq!(got, Err(RequestError::MissingImage));
            continue;
        }
        match ImageRef::parse(image) {
            Err(source) => assert_eq!(
                got,
                Err(RequestError::InvalidImage {
                    image: kcp_kubelet::protocol::clipped(image),
                    source
                })
            ),
            Ok(image_ref) => {
                let v1 = version.has_service_account_fields();
                let want = CredentialProviderRequest {
                    api_version: version,
                    image: image.to_owned(),
                    image_ref,
                    service_account_token: (v1 && !token.is_empty()).then(|| token.into()),
                    service_account_annotations: if v1 {
                        annotations.clone()
                    } else {
                        BTreeMap::new()
                    },
                };
                assert_eq!(got, Ok(want), "request {line:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// image

/// `ImageRef::parse`: accessors agree with each other, `Display` and `normalized` parse back to
/// the same reference, and the kubelet's matcher finds the registry in the image it came from.
pub fn image(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = match ImageRef::parse(&text) {
        Ok(parsed) => parsed,
        Err(err) => {
            assert_one_line(&err.to_string(), data);
            return;
        }
    };
    assert!(text.len() <= MAX_IMAGE_LEN && text.is_ascii(), "{text:?}");
    assert!(!parsed.host().is_empty(), "{text:?}");
    let bracketed = parsed.registry().starts_with('[');
    let host = if bracketed {
        format!("[{}]", parsed.host())
    } else {
        parsed.host().to_owned()
    };
    let registry = match parsed.port() {
        Some(port) => {
            assert!(port.parse::<u16>().is_ok(), "port {port:?} of {text:?}");
            format!("{host}:{port}")
        }
        None => host,
    };
    assert_eq!(parsed.registry(), registry, "{text:?}");
    if parsed.repository().is_empty() {
        assert_eq!(parsed.tag(), None);
        assert_eq!(parsed.digest(), None);
    }

    let shown = parsed.to_string();
    if shown.len() <= MAX_IMAGE_LEN {
        assert_eq!(
            ImageRef::parse(&shown).as_ref(),
            Ok(&parsed),
            "{text:?} shown as {shown:?}"
        );
    }
    let normalized = parsed.normalized();
    if normalized.len() <= MAX_IMAGE_LEN {
        let again = ImageRef::parse(&normalized);
        let again = again
            .as_ref()
            .unwrap_or_else(|e| panic!("{normalized:?}: {e}"));
        assert_eq!(again.registry(), parsed.registry(), "{text:?}");
        assert_eq!(again.repository(), parsed.repository(), "{text:?}");
        assert_eq!((again.tag(), again.digest()), (None, None), "{text:?}");
        assert_eq!(again.normalized(), normalized, "{text:?}");
    }
    // A registry always matches its own images. Bracketed hosts are left out: the image grammar
    // takes `[hex:]` liberally, the kubelet's URL parser wants a valid IPv6 address.
    if !bracketed {
        assert!(
            match_image(parsed.registry(), &normalized),
            "{:?} does not match {normalized:?}: {}",
            parsed.registry(),
            explain(parsed.registry(), &normalized)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// matching

/// Glob characters of Go's `filepath.Match`.
fn has_glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '\\'])
}

/// `pattern\ntarget`: the public matching functions agree, a pattern without `[` or `\` matches
/// itself, and `glob_match` behaves like string equality / prefix tests where it must.
pub fn matching(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (pattern, target) = text.split_once('\n').unwrap_or((&text, &text));

    let outcome = explain(pattern, target);
    assert_eq!(urls_match(pattern, target), outcome.is_match());
    assert_eq!(match_image(pattern, target), outcome.is_match());
    assert_one_line(&outcome.to_string(), data);

    for s in [pattern, target] {
        // Without `[` (character classes, IPv6 literals) and `\` (escapes) every glob character
        // also matches itself, so a pattern matches itself unless it does not parse at all.
        if !s.contains(['[', '\\']) {
            let own = explain(s, s);
            assert!(
                matches!(
                    own,
                    MatchOutcome::Match
                        | MatchOutcome::Unparsable {
                            which: Side::Pattern,
                            ..
                        }
                ),
                "{s:?} vs itself: {own:?}"
            );
        }
        if let Err(reason) = normalize_auth_key(s) {
            assert_one_line(&reason, data);
        }
        let _ = is_default_registry_match(s);
    }

    let found = keyring_lookup(&[pattern, target], target);
    assert!(found.len() <= 2);
    for key in &found {
        assert!(*key == pattern || *key == target);
        assert!(normalize_auth_key(key).is_ok());
    }

    // filepath.Match differentials.
    if !has_glob_meta(pattern) {
        assert_eq!(glob_match(pattern, target), Ok(pattern == target));
        let star = format!("{pattern}*");
        let want = target
            .strip_prefix(pattern)
            .is_some_and(|rest| !rest.contains('/'));
        assert_eq!(glob_match(&star, target), Ok(want), "{star:?} {target:?}");
    }
    assert_eq!(glob_match("*", target), Ok(!target.contains('/')));
    if let Ok(true) = glob_match(pattern, target) {
        // A match consumed the whole pattern, so the pattern is well formed.
        assert!(glob_match(pattern, "").is_ok(), "{pattern:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// duration

/// `GoDuration::parse`: what parses prints back to the same value, signs and concatenation
/// behave as in Go, and every `i64` (from the first 8 bytes) survives print → parse and serde.
pub fn duration(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match GoDuration::parse(&text) {
        Ok(d) => {
            round_trip(d);
            assert_eq!(d.to_std().is_none(), d.is_negative());
            let (sign, magnitude) = match text.as_bytes().first() {
                Some(b'-') => (-1, &text[1..]),
                Some(b'+') => (1, &text[1..]),
                _ => (1, &text[..]),
            };
            if let Ok(unsigned) = GoDuration::parse(magnitude) {
                assert!(!unsigned.is_negative(), "{magnitude:?}");
                assert_eq!(d.as_nanos(), sign * unsigned.as_nanos(), "{text:?}");
            }
            if let Ok(negated) = GoDuration::parse(&format!("-{magnitude}")) {
                assert_eq!(
                    negated.as_nanos(),
                    d.as_nanos().wrapping_abs().wrapping_neg()
                );
            }
        }
        Err(err) => {
            let message = err.to_string();
            assert!(message.starts_with("time: "), "{message}");
            assert_one_line(&message, data);
        }
    }

    // Concatenating two unsigned durations adds them, as Go sums the components.
    if let Some((a, b)) = text.split_once('\n') {
        let unsigned = |s: &str| !s.starts_with(['+', '-']) && s != "0";
        if let (true, true, Ok(x), Ok(y)) = (
            unsigned(a),
            unsigned(b),
            GoDuration::parse(a),
            GoDuration::parse(b),
        ) {
            let joined = GoDuration::parse(&format!("{a}{b}"));
            match x.as_nanos().checked_add(y.as_nanos()) {
                Some(sum) => assert_eq!(joined, Ok(GoDuration::from_nanos(sum)), "{a:?}{b:?}"),
                None => assert!(joined.is_err(), "{a:?}{b:?}"),
            }
        }
    }

    if let Some(bytes) = data.first_chunk::<8>() {
        round_trip(GoDuration::from_nanos(i64::from_le_bytes(*bytes)));
    }
}

fn round_trip(d: GoDuration) {
    let text = d.to_string();
    assert_eq!(GoDuration::parse(&text), Ok(d), "{text:?}");
    let json = serde_json::to_string(&d).unwrap_or_default();
    assert_eq!(json, format!("\"{text}\""));
    assert_eq!(serde_json::from_str::<GoDuration>(&json).ok(), Some(d));
}

// ---------------------------------------------------------------------------------------------
// kubelet response decoder

const SA_TOKEN: &str = "sa-token";

/// `decode_response` on raw plugin stdout under every context, and on responses our own writer
/// produces from fields taken from the input (which the kubelet must always accept).
pub fn kubelet_response(data: &[u8]) {
    for expected in ApiVersion::ALL {
        for (token, cache_type_token) in [
            (None, false),
            (Some(SA_TOKEN), false),
            (Some(SA_TOKEN), true),
        ] {
            let ctx = DecodeContext {
                expected,
                image: "registry.example/app",
                service_account_token: token,
                cache_type_token,
            };
            decode_raw(data, ctx);
        }
    }
    encode_then_decode(data);
}

fn decode_raw(data: &[u8], ctx: DecodeContext<'_>) {
    let accepted = match decode_response(data, ctx) {
        Ok(accepted) => accepted,
        Err(err) => {
            assert_one_line(&err.to_string(), data);
            let message = err.kubelet_message();
            assert_one_line(&message, data);
            if let DecodeError::Strict(_) = err {
                assert_eq!(message, DECODE_ERROR);
            }
            return;
        }
    };
    assert_eq!(accepted.api_version, ctx.expected);
    if ctx.service_account_token.is_some() && !ctx.cache_type_token {
        assert!(accepted.auth.values().all(|(_, p)| p != SA_TOKEN));
    }
    // Only a JSON object of the right kind and version gets here.
    let value: serde_json::Value =
        serde_json::from_slice(data).unwrap_or_else(|e| panic!("accepted non-JSON: {e}"));
    assert_eq!(value["kind"], "CredentialProviderResponse");
    assert_eq!(value["apiVersion"], ctx.expected.as_str());
    // Written again by our own encoder, the kubelet reads the same thing.
    let line = encode(ctx.expected, &accepted);
    assert_eq!(
        decode_response(&line, ctx).as_ref(),
        Ok(&accepted),
        "{line:?}"
    );
}

fn encode(version: ApiVersion, accepted: &AcceptedResponse) -> Vec<u8> {
    let credentials = Credentials {
        cache_key_type: accepted.cache_key_type,
        cache_duration: accepted.cache_duration,
        auth: accepted
            .auth
            .iter()
            .map(|(k, (u, p))| (k.clone(), AuthConfig::new(u.clone(), p.clone())))
            .collect(),
    };
    CredentialProviderResponse::with_version(version, credentials).to_json_line()
}

/// Lines of the input: auth key, username, password; the length picks the key type and
/// version, the first 8 bytes the cache duration.
fn encode_then_decode(data: &[u8]) {
    let parts = fields(data);
    let part = |i: usize| parts.get(i).cloned().unwrap_or_default();
    let auth = if parts.len() > 1 {
        BTreeMap::from([(part(0), (part(1), part(2)))])
    } else {
        BTreeMap::new()
    };
    let version = ApiVersion::ALL[data.len() % 3];
    let accepted = AcceptedResponse {
        api_version: version,
        cache_key_type: [
            CacheKeyType::Image,
            CacheKeyType::Registry,
            CacheKeyType::Global,
        ][data.len() / 3 % 3],
        cache_duration: data
            .first_chunk::<8>()
            .map(|b| GoDuration::from_nanos(i64::from_le_bytes(*b))),
        auth,
    };
    let line = encode(version, &accepted);
    let ctx = DecodeContext {
        expected: version,
        image: "registry.example/app",
        service_account_token: None,
        cache_type_token: false,
    };
    assert_eq!(
        decode_response(&line, ctx).as_ref(),
        Ok(&accepted),
        "{line:?}"
    );
}

/// The oidc provider's registries file (`kcp_oidc_registries::Registries::parse`), which the
/// provider reads at start-up and the checker's `validate` reads too.
///
/// Invariants: an error is one line naming the file; a file that parses has at least one entry,
/// every entry but `passthrough` has an endpoint (its own or its protocol's default) and
/// `passthrough` none, every endpoint it names or implies is `https://` or loopback `http://` (a
/// service-account token never crosses the network in clear), an `ibm-iam` entry names its
/// trusted profile with a non-blank value, and each entry's host, taken as an image, is answered
/// by an entry (the first match wins) without panicking.
pub fn oidc_registries(data: &[u8]) {
    const FILE: &str = "/etc/kubernetes/oidc-registries.yaml";
    let text = String::from_utf8_lossy(data);
    match kcp_oidc_registries::Registries::parse(&text, FILE) {
        Err(e) => {
            let message = e.to_string();
            assert_one_line(&message, data);
            assert!(
                message.starts_with(&format!("registries file {FILE}: ")),
                "{message}"
            );
        }
        Ok(registries) => {
            assert!(!registries.registries.is_empty());
            for registry in &registries.registries {
                let host = registry.host.as_str();
                let passthrough = matches!(
                    registry.protocol,
                    kcp_oidc_registries::Protocol::Passthrough(_)
                );
                assert_eq!(
                    registry.endpoint_for(host).is_none(),
                    passthrough,
                    "{registry:?}"
                );
                if let kcp_oidc_registries::Protocol::IbmIam(ibm) = &registry.protocol {
                    assert!(!ibm.profile.parameter().2.trim().is_empty(), "{ibm:?}");
                }
                if let Some(Ok(url)) = registry.endpoint_for(host) {
                    let loopback = match url.host() {
                        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                        None => false,
                    };
                    assert!(
                        url.scheme() == "https" || (url.scheme() == "http" && loopback),
                        "{url} for {host:?}"
                    );
                }
                if !host.contains(['*', '?', '[']) {
                    let image = format!("{host}/team/app:1");
                    assert!(
                        registries.find(&image).is_some(),
                        "no entry answers {image:?}"
                    );
                }
            }
        }
    }
}
