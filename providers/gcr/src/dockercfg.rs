//! The `dockercfg` and `dockercfg-url` flows: registry credentials kept in the instance metadata
//! attribute `google-dockercfg`, or in a document at the URL in `google-dockercfg-url`.
//!
//! Both the legacy `.dockercfg` map (`{"<registry>": {"auth": …}}`, what upstream reads) and a
//! Docker `config.json` (`{"auths": {…}}`, which upstream silently misread) are accepted. Errors
//! name registries and fields, never values: the document is full of passwords.

use std::collections::BTreeMap;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use kcp_kubelet::{AuthConfig, Secret};
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{HttpClient, Route};
use kcp_plugin::logging::error_chain;
use serde_json::{Map, Value};

use crate::metadata::Metadata;
use crate::token;
use kcp_plugin::endpoint;
use kcp_plugin::http::Call;

/// The attribute holding a dockercfg document.
pub const DOCKERCFG_ATTRIBUTE: &str = "google-dockercfg";
/// The attribute holding the URL of a dockercfg document.
pub const DOCKERCFG_URL_ATTRIBUTE: &str = "google-dockercfg-url";

/// Standard base64, padded or not (Docker and upstream accept both).
const AUTH_BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The `dockercfg` flow: credentials from the `google-dockercfg` attribute.
pub async fn from_attribute(
    http: &HttpClient,
    metadata: &Metadata,
    deadline: Deadline,
) -> anyhow::Result<BTreeMap<String, AuthConfig>> {
    let body = metadata
        .attribute(http, DOCKERCFG_ATTRIBUTE, deadline)
        .await?
        .ok_or_else(|| {
            anyhow!(
                "the instance metadata attribute {DOCKERCFG_ATTRIBUTE} is not set (HTTP 404): set it on the instance or template, or use --authFlow=gcr"
            )
        })?;
    parse(&body).with_context(|| format!("the instance metadata attribute {DOCKERCFG_ATTRIBUTE}"))
}

/// The `dockercfg-url` flow: credentials from the document at the URL in `google-dockercfg-url`.
pub async fn from_url_attribute(
    http: &HttpClient,
    metadata: &Metadata,
    deadline: Deadline,
) -> anyhow::Result<BTreeMap<String, AuthConfig>> {
    let body = metadata
        .attribute(http, DOCKERCFG_URL_ATTRIBUTE, deadline)
        .await?
        .ok_or_else(|| {
            anyhow!(
                "the instance metadata attribute {DOCKERCFG_URL_ATTRIBUTE} is not set (HTTP 404): set it on the instance or template, or use --authFlow=gcr"
            )
        })?;
    let text = String::from_utf8(body).map_err(|_| {
        anyhow!("the instance metadata attribute {DOCKERCFG_URL_ATTRIBUTE} is not UTF-8 text")
    })?;
    let what = format!("the URL in the instance metadata attribute {DOCKERCFG_URL_ATTRIBUTE}");
    let url = endpoint::secure_url(&text, &what)?;
    let shown = endpoint::describe(&url);
    tracing::info!(url = %shown, "fetching the dockercfg document");
    // No Metadata-Flavor here: the document lives outside the metadata server.
    let call = Call::get(Route::Internet, &url, "dockercfg document");
    let response = http.send_retrying(call, deadline).await.map_err(|e| {
        anyhow!(
            "fetching the dockercfg document at {shown} failed: {}",
            error_chain(&e)
        )
    })?;
    parse(&response.body).with_context(|| format!("the dockercfg document at {shown}"))
}

/// Parses a legacy `.dockercfg` map or a `config.json` with `auths` into registry → credential.
/// Entries without a user name or password are skipped; a document with none left is an error.
pub fn parse(document: &[u8]) -> anyhow::Result<BTreeMap<String, AuthConfig>> {
    let object = token::json_object(document, "the dockercfg document")?;
    let entries = match object.get("auths") {
        Some(Value::Object(auths)) => auths,
        Some(_) => bail!("\"auths\" is not an object"),
        None => &object,
    };
    let mut out = BTreeMap::new();
    for (registry, entry) in entries {
        let Value::Object(entry) = entry else {
            bail!("the entry for {registry:?} is not an object");
        };
        match parse_entry(entry).with_context(|| format!("the entry for {registry:?}"))? {
            Some(auth) => {
                out.insert(registry.clone(), auth);
            }
            None => tracing::warn!(
                registry,
                "skipping a dockercfg entry with neither auth nor username/password"
            ),
        }
    }
    if out.is_empty() {
        bail!(
            "no registry credentials in it (an empty map, or entries without auth/username/password)"
        );
    }
    Ok(out)
}

fn parse_entry(entry: &Map<String, Value>) -> anyhow::Result<Option<AuthConfig>> {
    let field = |name: &'static str| match entry.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(anyhow!("{name} is not a string")),
    };
    let username = field("username")?;
    let password = field("password")?;
    // Checked for type only, as upstream (`{"email": false}` is an error there too).
    field("email")?;
    // `auth` wins over username/password, as in Docker and upstream.
    if let Some(auth) = field("auth")?.filter(|a| !a.is_empty()) {
        let (user, pass) = decode_auth(auth)?;
        return Ok(Some(AuthConfig::new(user, Secret::new(pass))));
    }
    let (user, pass) = (username.unwrap_or(""), password.unwrap_or(""));
    if user.is_empty() && pass.is_empty() {
        return Ok(None);
    }
    Ok(Some(AuthConfig::new(user, Secret::new(pass))))
}

/// Decodes `auth` = base64(`user:password`); line breaks are ignored as Go's decoder does.
fn decode_auth(auth: &str) -> anyhow::Result<(String, String)> {
    let cleaned: String = auth.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    let bytes = AUTH_BASE64
        .decode(cleaned.as_bytes())
        .map_err(|_| anyhow!("auth is not valid base64"))?;
    let text =
        String::from_utf8(bytes).map_err(|_| anyhow!("auth does not decode to UTF-8 text"))?;
    let (user, pass) = text
        .split_once(':')
        .ok_or_else(|| anyhow!("auth does not decode to user:password (no colon)"))?;
    Ok((user.to_owned(), pass.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(doc: &str) -> anyhow::Result<(String, String, String)> {
        let map = parse(doc.as_bytes())?;
        let (k, v) = map.into_iter().next().unwrap();
        Ok((k, v.username, v.password.expose().to_owned()))
    }

    /// Upstream's CPG-4 and CPG-6 vectors.
    #[test]
    fn upstream_vectors() {
        let foo = |k: &str| Ok::<_, ()>((k.to_owned(), "foo".to_owned(), "bar".to_owned()));
        for auth in [
            "Zm9vOmJhcg==",
            "Zm9vOmJhcg",
            "Zm9vOm\\nJhcg==\\n",
            "Zm9vOm\\r\\nJhcg==",
        ] {
            let doc = format!(
                r#"{{"https://hello.kubernetes.io":{{"email":"foo@bar.baz","auth":"{auth}"}}}}"#
            );
            assert_eq!(
                one(&doc).map_err(|_| ()),
                foo("https://hello.kubernetes.io"),
                "{auth}"
            );
        }
        assert_eq!(
            one(r#"{"r.io":{"username":"foo","password":"bar","auth":"cGluZzpwb25n"}}"#).unwrap(),
            ("r.io".into(), "ping".into(), "pong".into())
        );
        for (doc, want) in [
            (r#"{"r.io":{"auth":"cGFudHM="}}"#, "no colon"),
            (r#"{"r.io":{"auth":"Zm9vOmJhcg== "}}"#, "not valid base64"),
            (r#"{"r.io":{"auth":"pants"}}"#, "not valid base64"),
            (
                r#"{"r.io":{"email":false,"auth":"Zm9vOmJhcg=="}}"#,
                "email is not a string",
            ),
        ] {
            let e = format!("{:#}", one(doc).unwrap_err());
            assert!(e.contains(want) && e.contains("\"r.io\""), "{doc}: {e}");
        }
    }

    #[test]
    fn reads_config_json_auths_and_username_password() {
        let map = parse(
            br#"{"auths":{"us-docker.pkg.dev":{"auth":"X2pzb25fa2V5OnNlY3JldA=="},"r.io":{"username":"u","password":"p"},"empty.io":{}},"credsStore":"x"}"#,
        )
        .unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(map["us-docker.pkg.dev"].username, "_json_key");
        assert_eq!(map["us-docker.pkg.dev"].password.expose(), "secret");
        assert_eq!(map["r.io"].password.expose(), "p");
    }

    #[test]
    fn errors_never_quote_values() {
        for doc in [
            r#"{"r.io":{"auth":"c2VjcmV0LXB3"}}"#,
            r#"{"r.io":"secret-pw"}"#,
            r#"{"r.io":{"password":["secret-pw"]}}"#,
            r#"{"auths":"secret-pw"}"#,
            r#"{}"#,
            r#"{"auths":{}}"#,
            "secret-pw",
        ] {
            let e = format!("{:#}", parse(doc.as_bytes()).unwrap_err());
            assert!(!e.contains("secret-pw") && !e.contains("c2VjcmV0"), "{e}");
        }
    }
}
