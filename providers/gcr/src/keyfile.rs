//! Service-account key files (`GOOGLE_APPLICATION_CREDENTIALS` / `--json-key`): the OAuth 2.0
//! JWT-bearer grant (RFC 7523) against the key's own `token_uri`.
//!
//! Hand-rolled rather than through `gcp_auth` (which also honours `token_uri`) so that this call
//! follows the same rules as every other one: `HTTPS_PROXY`/`NO_PROXY`, per-request timeouts
//! capped by the deadline, retries of 429/5xx/connection errors only (`gcp_auth` has no timeout,
//! ignores proxies and retries 4xx), and no second HTTP stack in the binary. Signing is RS256 with
//! `ring`, already linked for TLS.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, Route};
use kcp_plugin::logging::error_chain;
use reqwest::Method;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::Value;
use url::Url;

use crate::token::{self, AccessToken};
use kcp_plugin::endpoint;
use kcp_plugin::http::Call;

/// Google's token endpoint, used when a key file names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The scope asked for: enough to pull from Container Registry and Artifact Registry.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The JWT-bearer grant type.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Lifetime asked for in the assertion (Google's maximum).
const ASSERTION_LIFETIME_SECS: u64 = 3600;
/// A key file is a few KiB; refuse anything absurd before reading it.
const MAX_KEY_FILE_BYTES: u64 = 256 * 1024;

/// A parsed `"type": "service_account"` key file.
pub struct ServiceAccountKey {
    /// Where it was read from, for messages.
    pub path: PathBuf,
    /// The service account, `iss` of the assertion.
    pub client_email: String,
    /// `kid` of the assertion's header.
    pub private_key_id: Option<String>,
    /// Where the assertion is exchanged.
    pub token_uri: Url,
    key_pair: RsaKeyPair,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("path", &self.path)
            .field("client_email", &self.client_email)
            .field("token_uri", &self.token_uri.as_str())
            .finish_non_exhaustive()
    }
}

impl ServiceAccountKey {
    /// Reads and checks the key file at `path`.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let shown = path.display();
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading the key file {shown}"))?;
        if meta.len() > MAX_KEY_FILE_BYTES {
            bail!(
                "the key file {shown} is {} bytes, more than any service-account key; is it the right file?",
                meta.len()
            );
        }
        let bytes = std::fs::read(path).with_context(|| format!("reading the key file {shown}"))?;
        Self::parse(&bytes, path)
    }

    /// Parses key-file JSON; `path` is for messages only.
    pub fn parse(bytes: &[u8], path: &Path) -> anyhow::Result<Self> {
        let shown = path.display();
        let object = token::json_object(bytes, &format!("the key file {shown}"))?;
        let field = |name: &str| match object.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.as_str())),
            None | Some(Value::Null) | Some(Value::String(_)) => Ok(None),
            Some(_) => Err(anyhow!("the key file {shown}: {name} is not a string")),
        };
        match field("type")? {
            Some("service_account") => {}
            Some("external_account") => bail!(
                "the key file {shown} is an external_account (Workload Identity Federation) configuration, not a service-account key: \
                 use --identity-provider/--project-id or --wif-audience with a kubelet service-account token instead"
            ),
            // Named only when it is a type's name: the field may hold anything.
            Some(other)
                if other.len() <= 40
                    && other
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
            {
                bail!(
                    "the key file {shown} has type {other:?}; only \"service_account\" keys are supported (create one with gcloud iam service-accounts keys create)"
                )
            }
            Some(_) => bail!(
                "the key file {shown} has an unknown type; only \"service_account\" keys are supported (create one with gcloud iam service-accounts keys create)"
            ),
            None => bail!(
                "the key file {shown} has no \"type\"; expected a service-account key (\"type\": \"service_account\")"
            ),
        }
        let client_email = field("client_email")?
            .ok_or_else(|| anyhow!("the key file {shown} has no client_email"))?
            .to_owned();
        let pem = field("private_key")?
            .ok_or_else(|| anyhow!("the key file {shown} has no private_key"))?;
        let key_pair =
            parse_private_key(pem).with_context(|| format!("the key file {shown}: private_key"))?;
        let token_uri = endpoint::secure_url(
            field("token_uri")?.unwrap_or(DEFAULT_TOKEN_URI),
            &format!("the token_uri of the key file {shown}"),
        )?;
        Ok(ServiceAccountKey {
            path: path.to_owned(),
            client_email,
            private_key_id: field("private_key_id")?.map(str::to_owned),
            token_uri,
            key_pair,
        })
    }

    /// The signed JWT assertion (RS256), valid from `now` for an hour.
    pub fn assertion(&self, now: SystemTime) -> anyhow::Result<Secret> {
        let iat = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.private_key_id {
            header["kid"] = Value::String(kid.clone());
        }
        let claims = serde_json::json!({
            "iss": self.client_email,
            "scope": SCOPE,
            "aud": self.token_uri.as_str(),
            "iat": iat,
            "exp": iat + ASSERTION_LIFETIME_SECS,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = ring::rand::SystemRandom::new();
        let mut signature = vec![0; self.key_pair.public().modulus_len()];
        self.key_pair
            .sign(
                &RSA_PKCS1_SHA256,
                &rng,
                signing_input.as_bytes(),
                &mut signature,
            )
            .map_err(|_| anyhow!("signing the JWT assertion failed"))?;
        Ok(Secret::new(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        )))
    }

    /// Exchanges a fresh assertion for an access token at `token_uri`.
    pub async fn token(
        &self,
        http: &HttpClient,
        deadline: Deadline,
    ) -> anyhow::Result<AccessToken> {
        let assertion = self.assertion(SystemTime::now())?;
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", GRANT_TYPE)
            .append_pair("assertion", assertion.expose())
            .finish();
        let call = Call {
            route: Route::Internet,
            method: Method::POST,
            url: &self.token_uri,
            headers: &[("Content-Type", "application/x-www-form-urlencoded")],
            body: Some(body.as_bytes()),
            what: "key-file token exchange",
        };
        let response = http
            .send_retrying(call, deadline)
            .await
            .map_err(|e| anyhow!("{}", error_chain(&e)))?;
        token::parse_oauth_token(&response.body, SystemTime::now(), "the token_uri's answer")
    }
}

/// An RSA private key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`, what Google issues) or PKCS#1
/// (`BEGIN RSA PRIVATE KEY`). Errors never quote the key.
fn parse_private_key(pem: &str) -> anyhow::Result<RsaKeyPair> {
    let (label, der) = pem_body(pem)?;
    let parsed = match label {
        "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
        "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
        other => bail!("PEM block {other:?} is not an RSA private key"),
    };
    parsed.map_err(|e| anyhow!("not a usable RSA private key ({e})"))
}

/// The label and decoded bytes of the first PEM block.
fn pem_body(pem: &str) -> anyhow::Result<(&str, Vec<u8>)> {
    let start = pem
        .find("-----BEGIN ")
        .ok_or_else(|| anyhow!("not PEM (no -----BEGIN line)"))?;
    let rest = &pem[start + "-----BEGIN ".len()..];
    let label_end = rest
        .find("-----")
        .ok_or_else(|| anyhow!("not PEM (malformed BEGIN line)"))?;
    let label = &rest[..label_end];
    // RFC 7468 labels are words such as `PRIVATE KEY`; anything else (a line break, a secret
    // pasted in the wrong place) would end up in the error line.
    if label.len() > 64
        || !label
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
    {
        bail!("not PEM (malformed BEGIN line)");
    }
    let body = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let end = body
        .find(&end_marker)
        .ok_or_else(|| anyhow!("not PEM (no {end_marker} line)"))?;
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|_| anyhow!("the PEM body is not valid base64"))?;
    Ok((label, der))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PEM label is echoed in errors (`no -----END <label>----- line`, `PEM block <label>`);
    /// one holding a line break or key material used to reach the error line as it was.
    #[test]
    fn a_malformed_pem_label_is_a_one_line_error_quoting_nothing() {
        for pem in [
            "-----BEGIN PRIVATE\nKEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n",
            "-----BEGIN c2VjcmV0LWtleS1ieXRlcw-----\nAAAA\n-----END c2VjcmV0LWtleS1ieXRlcw-----\n",
            "-----BEGIN PRIVATE KEY\r-----\n",
        ] {
            let e = format!("{:#}", parse_private_key(pem).unwrap_err());
            assert_eq!(e, "not PEM (malformed BEGIN line)", "{pem:?}");
        }
        let e = format!(
            "{:#}",
            parse_private_key("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----")
                .unwrap_err()
        );
        assert_eq!(e, "PEM block \"EC PRIVATE KEY\" is not an RSA private key");
    }

    /// A non-ASCII `token_uri` used to panic in debug builds (idna_adapter's ASCII-only mapper
    /// asserts on an upper-case letter in a non-ASCII host).
    #[test]
    fn a_non_ascii_token_uri_is_an_error_not_a_panic() {
        for uri in [
            "https://OAUTH\u{e8}.example/token",
            "https://OAUTH%EE.example/token",
            "https:\\\\OAUTH%41%EE.example\\token",
        ] {
            let json = serde_json::json!({
                "type": "service_account",
                "client_email": "puller@p.iam.gserviceaccount.com",
                "private_key": include_str!("../tests/data/test-sa-key.pem"),
                "token_uri": uri,
            });
            let e = ServiceAccountKey::parse(json.to_string().as_bytes(), Path::new("/k.json"))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "the token_uri of the key file /k.json is not a valid URL: its host is not plain ASCII"
            );
        }
    }

    #[test]
    fn refuses_other_credential_types_clearly() {
        let p = Path::new("/k.json");
        let cases = [
            (r#"{"type":"external_account"}"#, "external_account"),
            (r#"{"type":"authorized_user"}"#, "only \"service_account\""),
            (r#"{"client_email":"a@b"}"#, "has no \"type\""),
            // A type that is no type's name is not quoted (it used to be, key bytes and all).
            (
                r#"{"type":"service_accounn+secret-key-bytes/c2VjcmV0"}"#,
                "has an unknown type",
            ),
            (
                r#"{"type":"service_account","private_key":"x"}"#,
                "no client_email",
            ),
            (
                r#"{"type":"service_account","client_email":"a@b"}"#,
                "no private_key",
            ),
            (
                r#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"}"#,
                "not a usable RSA private key",
            ),
            (
                r#"{"type":"service_account","client_email":"a@b","private_key":"secret-key-bytes"}"#,
                "not PEM",
            ),
            ("secret-key-bytes", "not valid JSON"),
        ];
        for (json, want) in cases {
            let e = format!(
                "{:#}",
                ServiceAccountKey::parse(json.as_bytes(), p).unwrap_err()
            );
            assert!(e.contains(want), "{json}: {e}");
            assert!(
                !e.contains("secret-key-bytes") && !e.contains("c2VjcmV0"),
                "{e}"
            );
        }
    }
}
