//! Azure Arc managed identity: the Connected Machine agent's local token endpoint and its
//! challenge-file handshake (azure_identity does not support Arc).
//!
//! ```text
//! GET $IDENTITY_ENDPOINT?api-version=2020-06-01&resource=<resource>     Metadata: true
//!   -> 401  WWW-Authenticate: Basic realm=<token dir>/<name>.key
//! GET (same)                     Metadata: true, Authorization: Basic <contents of that file>
//!   -> 200 {"access_token":"…","expires_in":"…",…}
//! ```
//!
//! The agent proves the caller may use the machine's identity by writing a secret only root (or
//! Windows administrators) can read. The realm is the agent's word about where that secret is,
//! but a local process could answer on the endpoint's port in its place, so the file is read
//! only when it is a regular `.key` file directly in the agent's token directory (symlinks are
//! refused and the canonical path checked again), at most 4 KiB, and on Unix owned by root.
//! The endpoint must be a loopback address, so the key never leaves the machine. Neither the key
//! nor the token is ever logged.
//!
//! Detected as azure_identity and MSAL do: `IDENTITY_ENDPOINT` and `IMDS_ENDPOINT` set, no
//! `IDENTITY_HEADER` (that is App Service). Arc has no user-assigned identities.

use std::io::Read;
use std::path::{Path, PathBuf};

use kcp_kubelet::Secret;
use kcp_plugin::deadline::Deadline;
use kcp_plugin::http::{Call, HttpClient, HttpResponse, RetryRules, Route, Statuses};
use reqwest::{Method, Url};

use crate::transport::USER_AGENT;

/// The Arc endpoint's API version.
pub const API_VERSION: &str = "2020-06-01";
/// Overrides the agent's token directory (a non-standard agent install, tests).
pub const TOKEN_DIR_ENV: &str = "ACR_ARC_TOKEN_DIR";
/// Largest key file read, as the agent's clients allow.
pub const MAX_KEY_BYTES: u64 = 4096;

/// Whether the environment is the Arc agent's (see the module docs).
pub fn detected(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    set("IDENTITY_ENDPOINT") && set("IMDS_ENDPOINT") && !set("IDENTITY_HEADER")
}

/// The agent's token directory: [`TOKEN_DIR_ENV`], else the agent's fixed place.
pub fn token_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(dir) = env(TOKEN_DIR_ENV).filter(|d| !d.trim().is_empty()) {
        return PathBuf::from(dir);
    }
    default_token_dir(env)
}

#[cfg(not(windows))]
fn default_token_dir(_: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    PathBuf::from("/var/opt/azcmagent/tokens")
}

#[cfg(windows)]
fn default_token_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let data = env("ProgramData")
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| "C:\\ProgramData".to_owned());
    PathBuf::from(data)
        .join("AzureConnectedMachineAgent")
        .join("Tokens")
}

/// Retries of each Arc call: every answer is handed back (the challenge is a 401), 429 and 5xx
/// tried again.
const RULES: RetryRules = RetryRules {
    answers: Statuses::ANY,
    ..RetryRules::DEFAULT
};

/// Gets a token for `resource` (a scope without `/.default`) from the Arc agent at `endpoint`.
pub async fn token(
    http: &HttpClient,
    endpoint: &str,
    resource: &str,
    token_dir: &Path,
    deadline: Deadline,
) -> anyhow::Result<Secret> {
    let mut url = kcp_plugin::endpoint::parse_url(endpoint)
        .map_err(|e| anyhow::anyhow!("Azure Arc: IDENTITY_ENDPOINT is not a usable URL: {e}"))?;
    // The key proves root access to this machine: it goes only to a local agent.
    if !kcp_plugin::endpoint::is_loopback(&url) {
        anyhow::bail!(
            "Azure Arc: IDENTITY_ENDPOINT {} is not a local address; the Connected Machine agent listens on localhost (http://localhost:40342), and the machine's key is sent nowhere else",
            describe(&url)
        );
    }
    url.query_pairs_mut()
        .append_pair("api-version", API_VERSION)
        .append_pair("resource", resource);
    let what = format!("Azure Arc managed identity at {}", describe(&url));
    let first = call(http, &url, None, &what, deadline).await?;
    let answer = match first.status {
        401 => {
            let key = challenge_key(&first, token_dir).map_err(|why| {
                anyhow::anyhow!(
                    "{what}: refusing the challenge: {why} (the agent's token directory is {}; {TOKEN_DIR_ENV} overrides it)",
                    token_dir.display()
                )
            })?;
            let header = format!("Basic {}", key.expose());
            let second = call(http, &url, Some(&header), &what, deadline).await?;
            if second.status == 401 {
                anyhow::bail!(
                    "{what}: the key file was not accepted (HTTP 401); check that the Azure Connected Machine agent (himds) is running"
                );
            }
            second
        }
        _ => first,
    };
    if !(200..300).contains(&answer.status) {
        anyhow::bail!(
            "{what}: HTTP {}; check that the Azure Connected Machine agent (himds) is running and the machine is connected",
            answer.status
        );
    }
    let token = crate::access_token::read(&answer.body)
        .map_err(|why| anyhow::anyhow!("{what}: {why} ({} bytes)", answer.body.len()))?;
    tracing::info!("Azure Arc managed-identity token obtained");
    Ok(token)
}

/// The endpoint without its query, for messages.
fn describe(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.to_string()
}

async fn call(
    http: &HttpClient,
    url: &Url,
    authorization: Option<&str>,
    what: &str,
    deadline: Deadline,
) -> anyhow::Result<HttpResponse> {
    let mut headers = vec![("metadata", "true"), ("user-agent", USER_AGENT)];
    if let Some(value) = authorization {
        headers.push(("authorization", value));
    }
    // The agent is node-local: never proxied (Route::Metadata), plain http only to loopback.
    let call = Call {
        route: Route::Metadata,
        method: Method::GET,
        url,
        headers: &headers,
        body: None,
        what,
    };
    http.send_retrying_with(call, deadline, &RULES)
        .await
        .map_err(|e| anyhow::anyhow!("{what} failed: {e}; check that the Azure Connected Machine agent (himds) is running"))
}

/// The key file the 401 names, read when it passes every check (module docs).
fn challenge_key(answer: &HttpResponse, token_dir: &Path) -> Result<Secret, String> {
    let Some(value) = answer.header("www-authenticate") else {
        return Err("the 401 has no WWW-Authenticate header".into());
    };
    let realm = parse_basic_realm(value)
        .ok_or_else(|| "the WWW-Authenticate header is not `Basic realm=<key file>`".to_owned())?;
    read_key(Path::new(&realm), token_dir)
}

/// `Basic realm=<path>` (quotes allowed) → the path.
fn parse_basic_realm(value: &str) -> Option<String> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let (name, path) = rest.trim().split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("realm") {
        return None;
    }
    let path = path.trim();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    Some(path.to_owned()).filter(|p| !p.is_empty())
}

fn has_key_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("key"))
}

/// Reads the key at `path` if it is a root-owned regular `.key` file of at most
/// [`MAX_KEY_BYTES`] directly in `token_dir`, by its name and by its canonical path.
pub fn read_key(path: &Path, token_dir: &Path) -> Result<Secret, String> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(format!("the key file {shown} is not an absolute path"));
    }
    if !has_key_extension(path) {
        return Err(format!("the key file {shown} does not end in .key"));
    }
    let dir = std::fs::canonicalize(token_dir)
        .map_err(|e| format!("cannot resolve the token directory: {e}"))?;
    let inside = |p: &Path| p.parent().is_some_and(|parent| parent == dir);
    // By name: its directory, resolved, is the token directory.
    let named_parent = path
        .parent()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .ok_or_else(|| format!("the key file {shown} is not in the token directory"))?;
    if named_parent != dir {
        return Err(format!(
            "the key file {shown} is not in the token directory"
        ));
    }
    let link = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read the key file {shown}: {e}"))?;
    if !link.file_type().is_file() {
        return Err(format!(
            "the key file {shown} is not a regular file (a symlink or something else)"
        ));
    }
    // And again by what it is: no link anywhere leads out of the directory.
    let real = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot resolve the key file {shown}: {e}"))?;
    if !inside(&real) || !has_key_extension(&real) {
        return Err(format!(
            "the key file {shown} resolves to {}, outside the token directory",
            real.display()
        ));
    }
    let file =
        std::fs::File::open(&real).map_err(|e| format!("cannot open the key file {shown}: {e}"))?;
    // What was opened, not what the name pointed at a moment ago.
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read the key file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("the key file {shown} is not a regular file"));
    }
    if meta.len() > MAX_KEY_BYTES {
        return Err(format!(
            "the key file {shown} is larger than {MAX_KEY_BYTES} bytes"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != 0 {
            return Err(format!(
                "the key file {shown} is owned by uid {}, not root",
                meta.uid()
            ));
        }
    }
    let mut bytes = Vec::new();
    file.take(MAX_KEY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the key file {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_KEY_BYTES {
        return Err(format!(
            "the key file {shown} is larger than {MAX_KEY_BYTES} bytes"
        ));
    }
    let key = std::str::from_utf8(&bytes)
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.bytes().all(|b| (b'!'..=b'~').contains(&b)))
        .ok_or_else(|| format!("the key file {shown} is empty or not printable ASCII"))?;
    Ok(Secret::new(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_follows_azure_identity() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(detected(&env(&[
            (
                "IDENTITY_ENDPOINT",
                "http://localhost:40342/metadata/identity/oauth2/token"
            ),
            ("IMDS_ENDPOINT", "http://localhost:40342"),
        ])));
        assert!(!detected(&env(&[
            ("IDENTITY_ENDPOINT", "http://localhost:40342"),
            ("IMDS_ENDPOINT", "http://localhost:40342"),
            ("IDENTITY_HEADER", "h"),
        ])));
        assert!(!detected(&env(&[("IDENTITY_ENDPOINT", "http://x")])));
        assert!(!detected(&env(&[("IMDS_ENDPOINT", "http://x")])));
        assert_eq!(
            token_dir(&env(&[(TOKEN_DIR_ENV, "/srv/tokens")])),
            PathBuf::from("/srv/tokens")
        );
    }

    #[test]
    fn realms() {
        assert_eq!(
            parse_basic_realm("Basic realm=/var/opt/azcmagent/tokens/a.key").as_deref(),
            Some("/var/opt/azcmagent/tokens/a.key")
        );
        assert_eq!(
            parse_basic_realm(r#"basic realm="C:\ProgramData\x.key""#).as_deref(),
            Some(r"C:\ProgramData\x.key")
        );
        assert_eq!(parse_basic_realm("Bearer realm=/a.key"), None);
        assert_eq!(parse_basic_realm("Basic realm="), None);
        assert_eq!(parse_basic_realm("Basic"), None);
    }

    #[test]
    fn tokens_are_read_without_quoting_the_body() {
        assert_eq!(
            crate::access_token::read(br#"{"access_token":"t","expires_in":"3599"}"#)
                .unwrap()
                .expose(),
            "t"
        );
        assert_eq!(
            crate::access_token::read(br#"{"token":"x"}"#).unwrap_err(),
            "the answer has no access_token"
        );
    }
}
