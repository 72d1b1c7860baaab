//! The registries file of `oidc-credential-provider` (`--config FILE`): which registry host
//! trades the pod's service-account token with which protocol, and where.
//!
//! ```yaml
//! registries:
//!   - host: registry.acme.internal   # a matchImages-style host glob, with an optional port
//!     protocol: token-exchange
//!     endpoint: https://sso.acme.internal/realms/x/protocol/openid-connect/token
//!     username: oauth2
//! ```
//!
//! The file is YAML or JSON, read as the kubelet reads its own config (`kcp_kubelet::yaml11`);
//! an unknown field, a repeated key, a missing or empty required field, an endpoint that is not
//! `https://` (or `http://` to loopback) and a host the kubelet could not match are refused with
//! the file, the entry (index and host) and the field named. [`Registries::find`] picks the entry
//! for an image as the kubelet matches `matchImages`. No HTTP and no process here: the provider
//! and the checker's `validate` both read the file through this crate.
//!
//! Modules: [`protocol`] (each protocol's settings), [`endpoint`] (which URLs may receive a
//! token), `check` (the rules beyond the types).

use std::fmt;
use std::path::Path;

use kcp_kubelet::{matching, yaml11};
use serde_json::{Map, Value};
use url::Url;

mod check;
pub mod endpoint;
pub mod protocol;

pub use protocol::{
    Chainguard, Cloudsmith, IbmIam, IbmProfile, Jfrog, Passthrough, Protocol, QuayRobot,
    RobotSource, TokenExchange,
};

/// Largest registries file read: far above any real one, small enough to refuse a wrong path.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// One registry entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// The registry host glob (`quay.io`, `*.jfrog.io`, `registry.local:5000`), matched against
    /// an image as the kubelet matches `matchImages`.
    pub host: String,
    /// The `endpoint` as written and checked; see [`Registry::endpoint_for`] for the defaults.
    pub endpoint: Option<Url>,
    /// The protocol and its settings.
    pub protocol: Protocol,
}

impl Registry {
    /// Where the exchange for an image on `image_host` (the image's registry, `host[:port]`)
    /// goes: the entry's `endpoint`, else the protocol's default (`https://<image host>` for
    /// `jfrog` and `quay-robot`, the vendor's API for `cloudsmith`, `chainguard` and `ibm-iam`). `None` for
    /// `passthrough`, which sends nothing, and for `token-exchange` without an endpoint (which
    /// the checks refuse).
    pub fn endpoint_for(&self, image_host: &str) -> Option<Result<Url, String>> {
        if let Some(url) = &self.endpoint {
            return Some(Ok(url.clone()));
        }
        let default = match &self.protocol {
            Protocol::Passthrough(_) | Protocol::TokenExchange(_) => return None,
            Protocol::Jfrog(_) | Protocol::QuayRobot(_) => format!("https://{image_host}"),
            Protocol::Cloudsmith(_) => protocol::CLOUDSMITH_ENDPOINT.to_owned(),
            Protocol::Chainguard(_) => protocol::CHAINGUARD_ENDPOINT.to_owned(),
            Protocol::IbmIam(_) => protocol::IBM_IAM_ENDPOINT.to_owned(),
        };
        Some(endpoint::check(&default).map_err(|e| format!("the endpoint {default:?} {e}")))
    }
}

/// Every entry of a registries file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registries {
    /// The entries; the first whose host matches an image answers it.
    pub registries: Vec<Registry>,
}

/// Why a registries file was refused: the file and every problem found, each naming the entry
/// and field. Displayed as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The file as named on the command line (or `<input>`).
    pub file: String,
    /// One line per problem, in file order.
    pub problems: Vec<String>,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "registries file {}: {}",
            self.file,
            self.problems.join("; ")
        )
    }
}

impl std::error::Error for FileError {}

impl Registries {
    /// Reads and checks the registries file at `path`.
    pub fn load(path: &Path) -> Result<Registries, FileError> {
        let file = path.display().to_string();
        let fail = |problem: String| FileError {
            file: file.clone(),
            problems: vec![problem],
        };
        let too_big = std::fs::metadata(path)
            .map_err(|e| fail(format!("cannot be read: {e}")))?
            .len()
            > MAX_FILE_BYTES;
        if too_big {
            return Err(fail(format!(
                "is larger than {MAX_FILE_BYTES} bytes: is this the right file?"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("cannot be read as UTF-8 text: {e}")))?;
        Registries::parse(&text, &file)
    }

    /// Parses and checks a registries file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Registries, FileError> {
        let problems = |problems: Vec<String>| FileError {
            file: file.to_owned(),
            problems,
        };
        let root = document(text).map_err(|p| problems(vec![p]))?;
        let entries = top_level(root).map_err(|p| problems(vec![p]))?;
        let mut registries = Vec::new();
        let mut found = Vec::new();
        for (index, entry) in entries.into_iter().enumerate() {
            match read_entry(index, entry) {
                Ok(registry) => registries.push(registry),
                Err(mut p) => found.append(&mut p),
            }
        }
        if found.is_empty() {
            // Indexes are file positions only when every entry was read.
            found = check::across_entries(&registries);
        }
        if found.is_empty() {
            Ok(Registries { registries })
        } else {
            Err(problems(found))
        }
    }

    /// The entry that answers `image` (as the kubelet sends it) and its index: the first whose
    /// host matches the image as the kubelet matches a `matchImages` entry. A look-alike host
    /// (`quay.io.evil.test` for `quay.io`) matches nothing.
    pub fn find(&self, image: &str) -> Option<(usize, &Registry)> {
        self.registries
            .iter()
            .enumerate()
            .find(|(_, r)| matching::match_image(&r.host, image))
    }

    /// The hosts of every entry, comma-separated, for error messages.
    pub fn hosts(&self) -> String {
        let hosts: Vec<&str> = self.registries.iter().map(|r| r.host.as_str()).collect();
        hosts.join(", ")
    }
}

/// The document as JSON: YAML 1.1 as the kubelet reads it; a file meant as JSON gets the JSON
/// parser's message, which says more.
fn document(text: &str) -> Result<Value, String> {
    let doc =
        yaml11::parse(text).map_err(|yaml_error| match serde_json::from_str::<Value>(text) {
            Err(json_error) if text.trim_start().starts_with('{') => json_error.to_string(),
            _ => yaml_error,
        })?;
    if let Some(e) = doc.strict_error() {
        return Err(e.replace('\n', " "));
    }
    yaml11::to_json(&doc.root)
}

/// The `registries` list; any other top-level key is refused.
fn top_level(root: Value) -> Result<Vec<Value>, String> {
    if root.is_null() {
        return Err("is empty: list at least one registry under registries".to_owned());
    }
    let Value::Object(mut map) = root else {
        return Err(format!(
            "expected a mapping with a registries list, got {}",
            yaml11::kind_of(&root)
        ));
    };
    if let Some(unknown) = map.keys().find(|k| *k != "registries") {
        return Err(format!(
            "unknown field {unknown:?} at the top level (the file holds only registries)"
        ));
    }
    match map.remove("registries") {
        Some(Value::Array(entries)) if !entries.is_empty() => Ok(entries),
        None | Some(Value::Null) | Some(Value::Array(_)) => {
            Err("registries is empty: list at least one registry".to_owned())
        }
        Some(other) => Err(format!(
            "registries must be a list, got {}",
            yaml11::kind_of(&other)
        )),
    }
}

/// One entry: its own fields (`host`, `endpoint`) taken out, the rest read as its protocol's
/// settings. Errors name the entry by index (from 0) and host.
fn read_entry(index: usize, entry: Value) -> Result<Registry, Vec<String>> {
    let Value::Object(mut map) = entry else {
        return Err(vec![format!(
            "registries[{index}]: expected a mapping, got {}",
            yaml11::kind_of(&entry)
        )]);
    };
    let host = match map.remove("host") {
        Some(Value::String(host)) => host,
        _ => String::new(),
    };
    let at = if host.is_empty() {
        format!("registries[{index}]")
    } else {
        format!("registries[{index}] (host {host:?})")
    };
    let mut problems = Vec::new();
    let wrong_types = check::string_fields(&map);
    problems.extend(wrong_types.iter().map(|p| format!("{at}: {p}")));
    if !wrong_types.is_empty() {
        return Err(problems);
    }
    if let Some(p) = check::host(&host) {
        problems.push(format!("{at}: {p}"));
    }
    let endpoint = match map.remove("endpoint") {
        Some(Value::String(text)) => match endpoint::check(&text) {
            Ok(url) => Some(url),
            Err(e) => {
                problems.push(format!("{at}: endpoint {text:?} {e}"));
                None
            }
        },
        _ => None,
    };
    let protocol = match protocol_of(map) {
        Ok(protocol) => protocol,
        Err(e) => {
            problems.push(format!("{at}: {e}"));
            return Err(problems);
        }
    };
    let registry = Registry {
        host,
        endpoint,
        protocol,
    };
    problems.extend(
        check::entry(&registry)
            .into_iter()
            .map(|p| format!("{at}: {p}")),
    );
    if problems.is_empty() {
        Ok(registry)
    } else {
        Err(problems)
    }
}

/// The protocol settings; serde's messages name the field (`unknown field "robotAcount",
/// expected one of ...`, `missing field "providerName"`).
fn protocol_of(map: Map<String, Value>) -> Result<Protocol, String> {
    match map.get("protocol") {
        None => {
            return Err(format!(
                "missing field \"protocol\": use one of {}",
                Protocol::NAMES.join(", ")
            ));
        }
        Some(Value::String(name)) if !Protocol::NAMES.contains(&name.as_str()) => {
            return Err(format!(
                "unknown protocol {name:?}: use one of {}",
                Protocol::NAMES.join(", ")
            ));
        }
        Some(_) => {}
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| {
        // serde quotes a field name raw, line breaks included; the message stays one line.
        let mut message = String::new();
        for c in e.to_string().replace('`', "\"").chars() {
            if c.is_control() {
                message.extend(c.escape_default());
            } else {
                message.push(c);
            }
        }
        message
    })
}

#[cfg(test)]
mod tests;
