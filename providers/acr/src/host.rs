//! Which hosts are ACR login servers, and how `--registry-mirror` maps other hosts onto them.
//!
//! A login server is matched by whole DNS labels, never by substring (upstream's
//! `strings.Index(target, suffix)` fallback re-accepted `foo.azurecr.io.example.com`):
//!
//! - `<name>.<suffix>`: the login server, e.g. `myreg.azurecr.io`;
//! - `<name>-<hash>.<suffix>`: a registry with a domain-name-label scope hash;
//! - `<name>.<region>.geo.<suffix>`: a regional (geo-replica) endpoint.
//!
//! `<suffix>` is one of `azurecr.io`, `azurecr.cn`, `azurecr.de`, `azurecr.us`, or the custom
//! cloud's suffix from the cloud configuration. Names and regions are `[a-z0-9]+` (hosts are
//! compared lower-cased, as DNS does). `<name>.<region>.data.<suffix>` is a data endpoint: it serves
//! blobs behind a login server and never issues tokens, so it is not accepted. A host with a port
//! is not a login server either.
//!
//! Mirrors (`src:dst` or `src=dst`, comma-separated) map an exact source host (the image's
//! registry, port included) to a login server, so `mcr.microsoft.com/app` pulled through a
//! containerd `hosts.toml` redirect to `myreg.azurecr.io` gets a token for `myreg.azurecr.io`.

use std::fmt;

use kcp_plugin::endpoint::is_dns_name;

/// The standard ACR DNS suffixes, accepted in every cloud as upstream does.
pub const STANDARD_SUFFIXES: [&str; 4] = ["azurecr.io", "azurecr.cn", "azurecr.de", "azurecr.us"];

/// A host recognised as an ACR login server (or regional endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginServer {
    /// The host, lower-cased: what we connect to.
    pub host: String,
    /// The registry name label (with its DNL hash, if any).
    pub name: String,
    /// The DNS suffix it matched, without a leading dot.
    pub suffix: String,
}

/// The login server to ask for a token and the auth keys to answer under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where the token comes from.
    pub login: LoginServer,
    /// The image's registry as the kubelet wrote it, when a mirror mapped it to `login`.
    pub mirrored_from: Option<String>,
    /// The auth keys of the answer: the login server, then the mirror source.
    pub auth_keys: Vec<String>,
}

/// Why a host is not something we hand an ACR token to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// Not an ACR host at all.
    NotAcr {
        /// The registry as written in the image.
        registry: String,
        /// The suffixes that were accepted.
        suffixes: Vec<String>,
        /// Why, when more precise than "no suffix matched".
        detail: Option<&'static str>,
    },
    /// A mirror whose destination is not a login server.
    BadMirrorTarget {
        /// The mirror source.
        source: String,
        /// The mirror destination.
        target: String,
    },
}

impl std::error::Error for HostError {}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::NotAcr {
                registry,
                suffixes,
                detail,
            } => {
                let list = suffixes
                    .iter()
                    .map(|s| format!("<name>.{s}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    f,
                    "{registry} is not an Azure Container Registry login server ({list})"
                )?;
                if let Some(detail) = detail {
                    write!(f, ": {detail}")?;
                }
                write!(
                    f,
                    "; narrow matchImages to ACR hosts, or if it mirrors a registry map it with --registry-mirror={registry}:<name>.azurecr.io"
                )
            }
            HostError::BadMirrorTarget { source, target } => write!(
                f,
                "--registry-mirror {source}:{target}: {target} is not an Azure Container Registry login server; the destination must be <name>.azurecr.io (or the cloud's suffix)"
            ),
        }
    }
}

/// The suffixes a run accepts: the four standard ones plus custom ones, longest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suffixes(Vec<String>);

impl Suffixes {
    /// The standard suffixes plus `custom` (lower-cased, leading dots removed, duplicates dropped).
    pub fn new<'a>(custom: impl IntoIterator<Item = &'a str>) -> Self {
        let mut all: Vec<String> = STANDARD_SUFFIXES.iter().map(|s| (*s).to_owned()).collect();
        for s in custom {
            let s = s.trim().trim_start_matches('.').to_ascii_lowercase();
            if is_dns_name(&s) && s.contains('.') && !all.contains(&s) {
                all.push(s);
            }
        }
        // Longest first, so `azurecr.my.cloud` is tried before a shorter suffix it might end with.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Suffixes(all)
    }

    /// Every accepted suffix.
    pub fn all(&self) -> &[String] {
        &self.0
    }

    /// Classifies `host` (no port): a login server, or why not.
    pub fn classify(&self, host: &str) -> Result<LoginServer, Option<&'static str>> {
        let host = host.to_ascii_lowercase();
        for suffix in &self.0 {
            let Some(prefix) = host
                .strip_suffix(suffix.as_str())
                .and_then(|p| p.strip_suffix('.'))
            else {
                continue;
            };
            let labels: Vec<&str> = prefix.split('.').collect();
            return match labels.as_slice() {
                [name] if is_registry_name(name) => Ok(LoginServer {
                    host: host.clone(),
                    name: (*name).to_owned(),
                    suffix: suffix.clone(),
                }),
                [name, region, "geo"] if is_registry_name(name) && is_alnum(region) => {
                    Ok(LoginServer {
                        host: host.clone(),
                        name: (*name).to_owned(),
                        suffix: suffix.clone(),
                    })
                }
                [_, _, "data"] => Err(Some(
                    "it is a data endpoint (blobs only), not a login server",
                )),
                _ => Err(Some(
                    "the labels before the suffix must be <name>, <name>-<hash> or <name>.<region>.geo",
                )),
            };
        }
        Err(None)
    }

    /// Whether a token for `login` may be sent to `host`: the same login server, or another ACR
    /// host under the same suffix (a regional endpoint of the same cloud).
    pub fn same_cloud_acr_host(&self, login: &LoginServer, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if host == login.host {
            return true;
        }
        matches!(self.classify(&host), Ok(other) if other.suffix == login.suffix)
    }
}

pub use kcp_provider_args::mirror::{Mirror, parse_mirrors};

/// Maps an image's registry (`host[:port]` as written) and host to the login server to use.
pub fn resolve(
    registry: &str,
    host: &str,
    has_port: bool,
    mirrors: &[Mirror],
    suffixes: &Suffixes,
) -> Result<Target, HostError> {
    if let Some(mirror) = mirrors
        .iter()
        .find(|m| m.source.eq_ignore_ascii_case(registry))
    {
        let login = suffixes
            .classify(&mirror.target)
            .map_err(|_| HostError::BadMirrorTarget {
                source: mirror.source.clone(),
                target: mirror.target.clone(),
            })?;
        let mut auth_keys = vec![login.host.clone()];
        if registry != login.host {
            auth_keys.push(registry.to_owned());
        }
        return Ok(Target {
            login,
            mirrored_from: Some(registry.to_owned()),
            auth_keys,
        });
    }
    let not_acr = |detail| HostError::NotAcr {
        registry: registry.to_owned(),
        suffixes: suffixes.all().to_vec(),
        detail,
    };
    if has_port {
        return Err(not_acr(Some(
            "login servers are reached on port 443 and are written without a port",
        )));
    }
    let login = suffixes.classify(host).map_err(not_acr)?;
    Ok(Target {
        login,
        mirrored_from: None,
        // The key is the registry exactly as the image has it, so the kubelet's case-sensitive
        // match finds it.
        auth_keys: vec![registry.to_owned()],
    })
}

fn is_alnum(label: &str) -> bool {
    !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `<name>` or `<name>-<hash>`, both alphanumeric.
fn is_registry_name(label: &str) -> bool {
    match label.split_once('-') {
        Some((name, hash)) => is_alnum(name) && is_alnum(hash),
        None => is_alnum(label),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_kubelet::image::ImageRef;

    fn login_of(image: &str, custom: &[&str], mirrors: &[Mirror]) -> Result<Target, HostError> {
        // An image the parser refuses never reaches host matching: count it as not ACR.
        let Ok(r) = ImageRef::parse(image) else {
            return Err(HostError::NotAcr {
                registry: image.into(),
                suffixes: vec![],
                detail: None,
            });
        };
        resolve(
            r.registry(),
            r.host(),
            r.port().is_some(),
            mirrors,
            &Suffixes::new(custom.iter().copied()),
        )
    }

    fn host_of(image: &str, custom: &[&str]) -> String {
        login_of(image, custom, &[])
            .map(|t| t.login.host)
            .unwrap_or_default()
    }

    /// docs/providers/acr.md “Test vectors”: `TestParseACRLoginServerFromImage`, with the custom
    /// suffix `azurecr.my.cloud`.
    #[test]
    fn upstream_login_server_vectors() {
        let custom = ["azurecr.my.cloud"];
        for (image, want) in [
            ("invalidImage", ""),
            ("docker.io/library/busybox:latest", ""),
            ("foo.azurecr.io/bar/image:version", "foo.azurecr.io"),
            ("foo.azurecr.cn/bar/image:version", "foo.azurecr.cn"),
            ("foo.azurecr.de/bar/image:version", "foo.azurecr.de"),
            ("foo.azurecr.us/bar/image:version", "foo.azurecr.us"),
            (
                "foo.azurecr.my.cloud/bar/image:version",
                "foo.azurecr.my.cloud",
            ),
            (
                "foo.azurecr.us/foo.azurecr.io/bar/image:version",
                "foo.azurecr.us",
            ),
            ("foo.azurecr.io.example/bar/image:version", ""),
            ("docker/foo.azurecr.io/bar/image:version", ""),
            ("foo.azurecr.io", "foo.azurecr.io"),
            ("foo.azurecr.io.azurecr.cn", ""),
            ("foo-azurecr-io.azurecr.cn", ""),
        ] {
            assert_eq!(host_of(image, &custom), want, "image {image}");
        }
    }

    #[test]
    fn look_alikes_are_not_acr_even_on_public_cloud() {
        // Upstream's substring fallback accepts these in production (suffix `azurecr.io`).
        for image in [
            "foo.azurecr.io.example.com/app",
            "example.com/foo.azurecr.io/app",
            "evilazurecr.io/app",
            "foo.notazurecr.io/app",
            "azurecr.io/app",
            "foo.bar.azurecr.io/app",
            "foo.eastus.data.azurecr.io/app",
            "foo.eastus.geo.azurecr.io.evil.com/app",
            "foo-.azurecr.io/app",
            "foo.azurecr.io:8443/app",
        ] {
            assert!(
                login_of(image, &[], &[]).is_err(),
                "{image} must not be ACR"
            );
        }
    }

    #[test]
    fn geo_dnl_and_case_forms_are_acr() {
        assert_eq!(
            host_of("myreg.eastus.geo.azurecr.io/app", &[]),
            "myreg.eastus.geo.azurecr.io"
        );
        assert_eq!(
            host_of("myreg-abc123.azurecr.io/app", &[]),
            "myreg-abc123.azurecr.io"
        );
        assert_eq!(
            host_of("myreg-abc123.westeurope.geo.azurecr.cn/app", &[]),
            "myreg-abc123.westeurope.geo.azurecr.cn"
        );
        // DNS is case-insensitive: we connect lower-cased but answer under the key as written.
        let t = login_of("MyReg.AzureCR.io/app", &[], &[]).unwrap();
        assert_eq!(t.login.host, "myreg.azurecr.io");
        assert_eq!(t.auth_keys, vec!["MyReg.AzureCR.io".to_owned()]);
    }

    #[test]
    fn data_endpoints_and_ports_say_why() {
        let e = login_of("myreg.eastus.data.azurecr.io/app", &[], &[]).unwrap_err();
        assert!(e.to_string().contains("data endpoint"), "{e}");
        let e = login_of("myreg.azurecr.io:5000/app", &[], &[]).unwrap_err();
        assert!(e.to_string().contains("without a port"), "{e}");
        let e = login_of("docker.io/library/nginx", &[], &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("docker.io is not an Azure Container Registry login server (<name>.azurecr.io, <name>.azurecr.cn, <name>.azurecr.de, <name>.azurecr.us)"),
            "{e}"
        );
    }

    /// docs/providers/acr.md “Test vectors”: `TestProcessMirrorMapping`.
    #[test]
    fn mirrors_map_exact_hosts_only() {
        let mirrors = parse_mirrors(&["mcr.microsoft.com:abc.azurecr.io".into()]).0;
        let t = login_of("mcr.microsoft.com/bar/image:version", &[], &mirrors).unwrap();
        assert_eq!(t.login.host, "abc.azurecr.io");
        assert_eq!(t.mirrored_from.as_deref(), Some("mcr.microsoft.com"));
        assert_eq!(t.auth_keys, vec!["abc.azurecr.io", "mcr.microsoft.com"]);
        let t = login_of("foo.azurecr.io/bar/image:version", &[], &mirrors).unwrap();
        assert_eq!(
            (t.login.host.as_str(), t.mirrored_from),
            ("foo.azurecr.io", None)
        );
        // Upstream's raw prefix match would map these; an exact host match does not.
        assert!(login_of("mcr.microsoft.com.evil.io/x", &[], &mirrors).is_err());
        assert!(login_of("mcr.microsoft.company/x", &[], &mirrors).is_err());
        // A mirror to a non-ACR host is refused, naming the flag.
        let bad = parse_mirrors(&["mcr.microsoft.com:evil.example.com".into()]).0;
        let e = login_of("mcr.microsoft.com/x", &[], &bad).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--registry-mirror mcr.microsoft.com:evil.example.com"),
            "{e}"
        );
        // A port in the source, through `=`.
        let ported = parse_mirrors(&["reg.local:5000=abc.azurecr.io".into()]).0;
        let t = login_of("reg.local:5000/x", &[], &ported).unwrap();
        assert_eq!(t.auth_keys, vec!["abc.azurecr.io", "reg.local:5000"]);
    }

    #[test]
    fn realm_hosts_must_be_the_login_server_or_an_acr_host_of_the_same_cloud() {
        let s = Suffixes::new(["azurecr.my.cloud"]);
        let login = s.classify("myreg.azurecr.io").unwrap();
        assert!(s.same_cloud_acr_host(&login, "myreg.azurecr.io"));
        assert!(s.same_cloud_acr_host(&login, "MYREG.azurecr.io"));
        assert!(s.same_cloud_acr_host(&login, "myreg.westus.geo.azurecr.io"));
        for other in [
            "myreg.azurecr.cn",
            "myreg.azurecr.my.cloud",
            "myreg.azurecr.io.evil.com",
            "evil.com",
            "myreg.eastus.data.azurecr.io",
            "127.0.0.1",
        ] {
            assert!(!s.same_cloud_acr_host(&login, other), "{other}");
        }
    }

    #[test]
    fn custom_suffixes_are_normalised_and_validated() {
        let s = Suffixes::new([".AzureCR.My.Cloud", "bad suffix", "single", "azurecr.io"]);
        assert_eq!(
            s.all(),
            &[
                "azurecr.my.cloud",
                "azurecr.io",
                "azurecr.cn",
                "azurecr.de",
                "azurecr.us"
            ]
        );
    }
}
