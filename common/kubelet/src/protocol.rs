//! The kubelet exec protocol: `CredentialProviderRequest` in, `CredentialProviderResponse` out.
//!
//! Mirrors `credentialprovider.kubelet.k8s.io` `v1`, `v1beta1` and `v1alpha1`, which share one shape
//! (the service-account fields exist only in `v1`). Requests are read leniently, as the kubelet's own
//! reference plugins do (unknown fields ignored), but everything a provider relies on is checked:
//! kind, group, version and image. Responses are written with exactly the fields the kubelet's strict
//! decoder accepts, in the request's apiVersion: [`CredentialProviderResponse::answer`] takes the
//! version from the request, so a provider cannot answer in another one.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::duration::GoDuration;
use crate::image::{ImageError, ImageRef};
use crate::secret::Secret;

/// The API group of every request and response.
pub const GROUP: &str = "credentialprovider.kubelet.k8s.io";
/// `kind` of a request.
pub const REQUEST_KIND: &str = "CredentialProviderRequest";
/// `kind` of a response.
pub const RESPONSE_KIND: &str = "CredentialProviderResponse";

/// A version of the `credentialprovider.kubelet.k8s.io` API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiVersion {
    /// `credentialprovider.kubelet.k8s.io/v1alpha1` (kubelet 1.20+).
    V1alpha1,
    /// `credentialprovider.kubelet.k8s.io/v1beta1` (kubelet 1.24+).
    V1beta1,
    /// `credentialprovider.kubelet.k8s.io/v1` (kubelet 1.26+); the only one with service-account tokens.
    V1,
}

impl ApiVersion {
    /// Every version, newest first.
    pub const ALL: [ApiVersion; 3] = [ApiVersion::V1, ApiVersion::V1beta1, ApiVersion::V1alpha1];

    /// The full `group/version` string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1alpha1 => "credentialprovider.kubelet.k8s.io/v1alpha1",
            ApiVersion::V1beta1 => "credentialprovider.kubelet.k8s.io/v1beta1",
            ApiVersion::V1 => "credentialprovider.kubelet.k8s.io/v1",
        }
    }

    /// Whether requests of this version may carry `serviceAccountToken` (KEP-4412).
    pub const fn has_service_account_fields(self) -> bool {
        matches!(self, ApiVersion::V1)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApiVersion {
    type Err = RequestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApiVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| match s.split_once('/') {
                Some((group, _)) if group == GROUP => RequestError::UnsupportedVersion(clipped(s)),
                _ => RequestError::WrongGroup(clipped(s)),
            })
    }
}

impl Serialize for ApiVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Which key the kubelet caches a response under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CacheKeyType {
    /// The whole image repository (`registry/path`).
    Image,
    /// The registry host with port: every image of that registry shares the answer.
    Registry,
    /// Every image the provider matches shares the answer.
    Global,
}

impl CacheKeyType {
    /// The wire value.
    pub const fn as_str(self) -> &'static str {
        match self {
            CacheKeyType::Image => "Image",
            CacheKeyType::Registry => "Registry",
            CacheKeyType::Global => "Global",
        }
    }
}

impl FromStr for CacheKeyType {
    type Err = String;

    /// Case-sensitive, as the kubelet compares it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Image" => Ok(CacheKeyType::Image),
            "Registry" => Ok(CacheKeyType::Registry),
            "Global" => Ok(CacheKeyType::Global),
            other => Err(format!(
                "invalid cacheKeyType {other:?}: expected Image, Registry or Global"
            )),
        }
    }
}

/// Why a request was refused. Each message is one line that says what to fix.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// Nothing on stdin.
    #[error(
        "no request on stdin: expected one CredentialProviderRequest JSON object (the kubelet writes it; by hand: echo '{{...}}' | plugin)"
    )]
    Empty,
    /// More bytes than [`MAX_REQUEST_BYTES`].
    #[error(
        "request on stdin is larger than {limit} bytes; a CredentialProviderRequest is a few hundred bytes"
    )]
    TooLarge {
        /// The cap that was exceeded.
        limit: usize,
    },
    /// Bytes that are not UTF-8.
    #[error("request is not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// Not one JSON document.
    #[error("request is not valid JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("request must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// A field of the wrong JSON type.
    #[error("request field {field:?} must be {expected}")]
    WrongType {
        /// The request field as the kubelet spells it (`image`, `kind`, `serviceAccountAnnotations`).
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// `kind` absent.
    #[error("request has no \"kind\": expected \"CredentialProviderRequest\"")]
    MissingKind,
    /// Another kind.
    #[error("request kind is {0:?}, expected \"CredentialProviderRequest\"")]
    WrongKind(String),
    /// `apiVersion` absent.
    #[error(
        "request has no \"apiVersion\": expected credentialprovider.kubelet.k8s.io/v1, v1beta1 or v1alpha1"
    )]
    MissingApiVersion,
    /// An apiVersion outside `credentialprovider.kubelet.k8s.io`.
    #[error("request apiVersion {0:?} is not in group credentialprovider.kubelet.k8s.io")]
    WrongGroup(String),
    /// The right group, an unknown version.
    #[error(
        "request apiVersion {0:?} is not supported: expected credentialprovider.kubelet.k8s.io/v1, v1beta1 or v1alpha1"
    )]
    UnsupportedVersion(String),
    /// `image` absent or empty.
    #[error("image in plugin request was empty")]
    MissingImage,
    /// `image` unparsable.
    #[error("invalid image {image:?}: {source}")]
    InvalidImage {
        /// The image as sent (its first 256 characters), with unprintable characters escaped
        /// by `{:?}`.
        image: String,
        /// What is wrong with it.
        source: ImageError,
    },
}

/// The most stdin a plugin reads; a real request is a few hundred bytes (a few KiB with a token).
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// A validated `CredentialProviderRequest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialProviderRequest {
    /// The version the kubelet spoke, and so the version of the answer.
    pub api_version: ApiVersion,
    /// The image exactly as sent (the kubelet sends a repository without tag or digest).
    pub image: String,
    /// The parsed image.
    pub image_ref: ImageRef,
    /// The pod's service-account token (v1 only; dropped for older versions).
    pub service_account_token: Option<Secret>,
    /// The service-account annotations the kubelet config asked for (v1 only).
    pub service_account_annotations: BTreeMap<String, String>,
}

impl CredentialProviderRequest {
    /// Parses and validates the bytes the kubelet wrote on stdin.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RequestError> {
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(RequestError::TooLarge {
                limit: MAX_REQUEST_BYTES,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|e| RequestError::NotUtf8 {
            offset: e.valid_up_to(),
        })?;
        if text.trim().is_empty() {
            return Err(RequestError::Empty);
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| RequestError::NotJson(e.to_string()))?;
        let object = match value {
            Value::Object(object) => object,
            other => return Err(RequestError::NotAnObject(json_type_name(&other))),
        };
        Self::from_object(&object)
    }

    fn from_object(object: &Map<String, Value>) -> Result<Self, RequestError> {
        match string_field(object, "kind")? {
            None => return Err(RequestError::MissingKind),
            Some(REQUEST_KIND) => {}
            Some(other) => return Err(RequestError::WrongKind(clipped(other))),
        }
        let api_version: ApiVersion = match string_field(object, "apiVersion")? {
            None | Some("") => return Err(RequestError::MissingApiVersion),
            Some(v) => v.parse()?,
        };
        let image = match string_field(object, "image")? {
            None | Some("") => return Err(RequestError::MissingImage),
            Some(image) => image.to_owned(),
        };
        let image_ref = ImageRef::parse(&image).map_err(|source| RequestError::InvalidImage {
            image: clipped(&image),
            source,
        })?;

        let (mut service_account_token, mut service_account_annotations) = (None, BTreeMap::new());
        if api_version.has_service_account_fields() {
            service_account_token = string_field(object, "serviceAccountToken")?
                .filter(|t| !t.is_empty())
                .map(Secret::from);
            service_account_annotations = annotations_field(object)?;
        } else if object.contains_key("serviceAccountToken") {
            // Older versions have no such field; the kubelet's conversion drops it, and so do we.
            tracing::debug!(%api_version, "ignoring serviceAccountToken: only v1 requests carry one");
        }
        Ok(CredentialProviderRequest {
            api_version,
            image,
            image_ref,
            service_account_token,
            service_account_annotations,
        })
    }
}

/// At most this many characters of a request value are echoed in an error.
const MAX_ECHO_CHARS: usize = 256;

/// `text` cut to [`MAX_ECHO_CHARS`] with a trailing `…`: an error line quotes what was sent, and
/// the kubelet copies that line into its log, so a megabyte of input must not come back out.
pub fn clipped(text: &str) -> String {
    match text.char_indices().nth(MAX_ECHO_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string field; absent and `null` are both `None`, as Go's decoder treats them.
fn string_field<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, RequestError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RequestError::WrongType {
            field,
            expected: "a string",
        }),
    }
}

fn annotations_field(
    object: &Map<String, Value>,
) -> Result<BTreeMap<String, String>, RequestError> {
    const FIELD: &str = "serviceAccountAnnotations";
    const EXPECTED: &str = "an object of string values";
    match object.get(FIELD) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(RequestError::WrongType {
                    field: FIELD,
                    expected: EXPECTED,
                }),
            })
            .collect(),
        Some(_) => Err(RequestError::WrongType {
            field: FIELD,
            expected: EXPECTED,
        }),
    }
}

/// Encodes a request exactly as the kubelet does: compact, `kind` first, empty token fields
/// omitted, a trailing newline. Token fields are dropped for versions before v1, as the kubelet's
/// conversion does.
pub fn encode_request(
    api_version: ApiVersion,
    image: &str,
    service_account_token: Option<&str>,
    service_account_annotations: &BTreeMap<String, String>,
) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        kind: &'static str,
        api_version: ApiVersion,
        image: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        service_account_token: Option<&'a str>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        service_account_annotations: &'a BTreeMap<String, String>,
    }
    let empty = BTreeMap::new();
    let v1 = api_version.has_service_account_fields();
    let wire = Wire {
        kind: REQUEST_KIND,
        api_version,
        image,
        service_account_token: service_account_token.filter(|t| v1 && !t.is_empty()),
        service_account_annotations: if v1 {
            service_account_annotations
        } else {
            &empty
        },
    };
    // Serializing strings and maps of strings cannot fail.
    let mut bytes = serde_json::to_vec(&wire).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// One registry credential in a response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthConfig {
    /// Registry user name.
    pub username: String,
    /// Registry password or token.
    pub password: Secret,
}

impl AuthConfig {
    /// A username and password pair.
    pub fn new(username: impl Into<String>, password: impl Into<Secret>) -> Self {
        AuthConfig {
            username: username.into(),
            password: password.into(),
        }
    }
}

/// What a provider answers, before the runner stamps the request's apiVersion on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The kubelet cache key for this answer.
    pub cache_key_type: CacheKeyType,
    /// How long the kubelet may cache it; `None` lets the config's `defaultCacheDuration` apply.
    pub cache_duration: Option<GoDuration>,
    /// Registry glob (matched like `matchImages`) → credential.
    pub auth: BTreeMap<String, AuthConfig>,
}

impl Credentials {
    /// An answer with one credential under one auth key.
    pub fn single(
        cache_key_type: CacheKeyType,
        cache_duration: GoDuration,
        key: impl Into<String>,
        auth: AuthConfig,
    ) -> Self {
        Credentials {
            cache_key_type,
            cache_duration: Some(cache_duration),
            auth: BTreeMap::from([(key.into(), auth)]),
        }
    }
}

/// A `CredentialProviderResponse` as written to stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialProviderResponse {
    kind: &'static str,
    api_version: ApiVersion,
    cache_key_type: CacheKeyType,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_duration: Option<GoDuration>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    auth: BTreeMap<String, AuthConfig>,
}

impl CredentialProviderResponse {
    /// The answer to `request`: always in the request's apiVersion.
    pub fn answer(request: &CredentialProviderRequest, credentials: Credentials) -> Self {
        Self::with_version(request.api_version, credentials)
    }

    /// A response in a given version (for tests and tools that have no request at hand).
    pub fn with_version(api_version: ApiVersion, credentials: Credentials) -> Self {
        CredentialProviderResponse {
            kind: RESPONSE_KIND,
            api_version,
            cache_key_type: credentials.cache_key_type,
            cache_duration: credentials.cache_duration,
            auth: credentials.auth,
        }
    }

    /// The apiVersion this response carries.
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }

    /// Compact JSON followed by a newline, as the kubelet's own serializer writes it.
    pub fn to_json_line(&self) -> Vec<u8> {
        // Strings, maps and durations only: serialization cannot fail.
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMG: &str = "test.registry.io/foobar";

    fn req(json: &str) -> Result<CredentialProviderRequest, RequestError> {
        CredentialProviderRequest::from_bytes(json.as_bytes())
    }

    #[test]
    fn parses_the_kubelet_encoded_vectors() {
        // docs/kubelet-contract.md “Test vectors”: Test_encodeRequest.
        for (line, version) in [
            (
                r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1","image":"test.registry.io/foobar"}"#,
                ApiVersion::V1alpha1,
            ),
            (
                r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","image":"test.registry.io/foobar"}"#,
                ApiVersion::V1beta1,
            ),
            (
                r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"test.registry.io/foobar"}"#,
                ApiVersion::V1,
            ),
        ] {
            let r = req(&format!("{line}\n")).unwrap();
            assert_eq!(r.api_version, version);
            assert_eq!(r.image, IMG);
            assert_eq!(r.image_ref.registry(), "test.registry.io");
            assert!(r.service_account_token.is_none());
        }
        let r = req(r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"test.registry.io/foobar","serviceAccountToken":"service-account-token","serviceAccountAnnotations":{"domain.io/annotation1":"value1"}}"#).unwrap();
        assert_eq!(
            r.service_account_token.as_ref().map(Secret::expose),
            Some("service-account-token")
        );
        assert_eq!(
            r.service_account_annotations
                .get("domain.io/annotation1")
                .map(String::as_str),
            Some("value1")
        );
    }

    #[test]
    fn encodes_requests_byte_for_byte_like_the_kubelet() {
        let none = BTreeMap::new();
        for v in ApiVersion::ALL {
            assert_eq!(
                String::from_utf8(encode_request(v, IMG, None, &none)).unwrap(),
                format!(
                    r#"{{"kind":"CredentialProviderRequest","apiVersion":"{v}","image":"test.registry.io/foobar"}}"#
                ) + "\n"
            );
        }
        let ann = BTreeMap::from([("domain.io/annotation1".to_owned(), "value1".to_owned())]);
        assert_eq!(
            String::from_utf8(encode_request(
                ApiVersion::V1,
                IMG,
                Some("service-account-token"),
                &ann
            ))
            .unwrap(),
            "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"test.registry.io/foobar\",\"serviceAccountToken\":\"service-account-token\",\"serviceAccountAnnotations\":{\"domain.io/annotation1\":\"value1\"}}\n"
        );
        // Older versions drop the token fields, as the kubelet's conversion does.
        let old =
            String::from_utf8(encode_request(ApiVersion::V1beta1, IMG, Some("t"), &ann)).unwrap();
        assert!(!old.contains("serviceAccount"), "{old}");
    }

    #[test]
    fn ignores_unknown_fields_and_tolerates_nulls() {
        let r = req(r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"a.io/b","future":{"x":1},"serviceAccountToken":null,"serviceAccountAnnotations":null}"#).unwrap();
        assert!(r.service_account_token.is_none());
        assert!(r.service_account_annotations.is_empty());
    }

    #[test]
    fn drops_a_service_account_token_sent_to_an_older_version() {
        for v in ["v1alpha1", "v1beta1"] {
            let r = req(&format!(r#"{{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/{v}","image":"a.io/b","serviceAccountToken":"tok","serviceAccountAnnotations":{{"a":"b"}}}}"#)).unwrap();
            assert!(r.service_account_token.is_none());
            assert!(r.service_account_annotations.is_empty());
        }
    }

    #[test]
    fn refuses_bad_requests_with_the_right_reason() {
        let v1 = r#""apiVersion":"credentialprovider.kubelet.k8s.io/v1""#;
        let cases: Vec<(String, RequestError)> = vec![
            ("".into(), RequestError::Empty),
            ("  \n".into(), RequestError::Empty),
            ("[]".into(), RequestError::NotAnObject("an array")),
            ("42".into(), RequestError::NotAnObject("a number")),
            (r#""x""#.into(), RequestError::NotAnObject("a string")),
            (format!(r#"{{"kind":"CredentialProviderFoo",{v1},"image":"a.io/b"}}"#), RequestError::WrongKind("CredentialProviderFoo".into())),
            (format!(r#"{{{v1},"image":"a.io/b"}}"#), RequestError::MissingKind),
            (r#"{"kind":"CredentialProviderRequest","image":"a.io/b"}"#.into(), RequestError::MissingApiVersion),
            (r#"{"kind":"CredentialProviderRequest","apiVersion":"foo.k8s.io/v1","image":"a.io/b"}"#.into(), RequestError::WrongGroup("foo.k8s.io/v1".into())),
            (r#"{"kind":"CredentialProviderRequest","apiVersion":"v1","image":"a.io/b"}"#.into(), RequestError::WrongGroup("v1".into())),
            (r#"{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v2","image":"a.io/b"}"#.into(), RequestError::UnsupportedVersion("credentialprovider.kubelet.k8s.io/v2".into())),
            (format!(r#"{{"kind":"CredentialProviderRequest",{v1}}}"#), RequestError::MissingImage),
            (format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":""}}"#), RequestError::MissingImage),
            (format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":7}}"#), RequestError::WrongType { field: "image", expected: "a string" }),
            (format!(r#"{{"kind":1,{v1},"image":"a"}}"#), RequestError::WrongType { field: "kind", expected: "a string" }),
            (format!(r#"{{"kind":"CredentialProviderRequest",{v1},"image":"a.io/b","serviceAccountAnnotations":{{"k":1}}}}"#), RequestError::WrongType { field: "serviceAccountAnnotations", expected: "an object of string values" }),
        ];
        for (input, want) in cases {
            assert_eq!(req(&input).unwrap_err(), want, "input {input:?}");
        }
        assert!(matches!(req(r#"{"kind":"#), Err(RequestError::NotJson(_))));
        assert!(matches!(req(r#"{} {}"#), Err(RequestError::NotJson(m)) if m.contains("trailing")));
        assert!(matches!(
            req(&format!(
                r#"{{"kind":"CredentialProviderRequest",{v1},"image":"a b"}}"#
            )),
            Err(RequestError::InvalidImage { .. })
        ));
        assert_eq!(
            CredentialProviderRequest::from_bytes(b"{\"kind\":\"\xff\"}").unwrap_err(),
            RequestError::NotUtf8 { offset: 9 }
        );
        assert_eq!(
            CredentialProviderRequest::from_bytes(&vec![b' '; MAX_REQUEST_BYTES + 1]).unwrap_err(),
            RequestError::TooLarge {
                limit: MAX_REQUEST_BYTES
            }
        );
    }

    #[test]
    fn response_is_the_exact_kubelet_shape_in_the_request_version() {
        // docs/kubelet-contract.md “Request and response”; docs/providers/ecr.md “Response and cacheDuration”.
        let creds = Credentials::single(
            CacheKeyType::Registry,
            GoDuration::from_secs(600),
            "*.registry.io",
            AuthConfig::new("user", "password"),
        );
        for v in ApiVersion::ALL {
            let r = req(&format!(
                r#"{{"kind":"CredentialProviderRequest","apiVersion":"{v}","image":"a.io/b"}}"#
            ))
            .unwrap();
            let out = CredentialProviderResponse::answer(&r, creds.clone()).to_json_line();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!(
                    r#"{{"kind":"CredentialProviderResponse","apiVersion":"{v}","cacheKeyType":"Registry","cacheDuration":"10m0s","auth":{{"*.registry.io":{{"username":"user","password":"password"}}}}}}"#
                ) + "\n"
            );
        }
    }

    #[test]
    fn omits_absent_duration_and_empty_auth_like_go_omitempty() {
        let creds = Credentials {
            cache_key_type: CacheKeyType::Image,
            cache_duration: None,
            auth: BTreeMap::new(),
        };
        let out = CredentialProviderResponse::with_version(ApiVersion::V1, creds).to_json_line();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\"}\n"
        );
    }

    #[test]
    fn cache_key_type_parses_case_sensitively() {
        assert_eq!(
            "Registry".parse::<CacheKeyType>(),
            Ok(CacheKeyType::Registry)
        );
        assert!("registry".parse::<CacheKeyType>().is_err());
        assert!("ServiceAccount".parse::<CacheKeyType>().is_err());
    }
}
