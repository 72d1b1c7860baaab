//! Which registry hosts are Alibaba Cloud Container Registry's, and what each names: an
//! Enterprise instance (by name and region), the Personal Edition of a region, or an Enterprise
//! instance named by `--instance HOST=cri-…`.
//!
//! Matching is exact and case-insensitive, label by label: a host that merely contains or starts
//! with a Container Registry name (`registry.cn-hangzhou.aliyuncs.com.evil.test`), carries a port
//! on a built-in form, or is an IP literal is no registry of Alibaba's, and the provider refuses
//! it before any request (the ECR provider does the same with its hosts, `providers/ecr/src/host.rs`).

use std::collections::BTreeMap;
use std::fmt;

use kcp_plugin::endpoint::{is_dns_label, is_dns_name};

/// A region ID as Alibaba writes it (`cn-hangzhou`, `ap-southeast-1`): `[a-z]{2,}(-[a-z0-9]+)+`.
/// Only ever built by [`Region::parse`], so every region in a URL or cache key is one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region(String);

impl Region {
    /// The region `text` names, or `None` when it is not a region label.
    pub fn parse(text: &str) -> Option<Region> {
        let mut parts = text.split('-');
        let first = parts.next()?;
        if first.len() < 2 || !first.bytes().all(|b| b.is_ascii_lowercase()) {
            return None;
        }
        let mut rest = 0;
        for part in parts {
            if part.is_empty()
                || !part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                return None;
            }
            rest += 1;
        }
        (rest > 0 && text.len() <= 63).then(|| Region(text.to_owned()))
    }

    /// The region ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An Enterprise instance ID (`cri-…`, `cri-[a-z0-9]+`). Only built by [`InstanceId::parse`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceId(String);

impl InstanceId {
    /// The instance ID `text` is, or `None`.
    pub fn parse(text: &str) -> Option<InstanceId> {
        let rest = text.strip_prefix("cri-")?;
        (!rest.is_empty()
            && rest.len() <= 60
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
        .then(|| InstanceId(text.to_owned()))
    }

    /// The ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a registry host names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registry {
    /// `<name>-registry[-vpc].<region>.cr.aliyuncs.com`: an Enterprise instance by name.
    Enterprise {
        /// The instance's name (`InstanceName`), resolved to its ID by `ListInstance`.
        name: String,
        /// The instance's region.
        region: Region,
    },
    /// `registry[-intl][-vpc].<region>.aliyuncs.com`: the Personal Edition of a region.
    Personal {
        /// From the host name; the token call goes to this region's `cr` endpoint.
        region: Region,
    },
    /// `crpi-<id>[-vpc].<region>.personal.cr.aliyuncs.com`: a Personal Edition instance created
    /// since 2024-09; its login is the Personal Edition's token call of the region.
    PersonalInstance {
        /// The `crpi-…` label's ID part.
        id: String,
        /// From the host name; the token call goes to this region's `cr` endpoint.
        region: Region,
    },
    /// A host named by `--instance HOST=cri-…`: an Enterprise instance by ID, in `--region` or
    /// the node's region.
    Configured {
        /// The instance ID.
        id: InstanceId,
    },
}

impl Registry {
    /// The region the host names, if it names one (a `--instance` host does not).
    pub fn region(&self) -> Option<&Region> {
        match self {
            Registry::Enterprise { region, .. }
            | Registry::Personal { region }
            | Registry::PersonalInstance { region, .. } => Some(region),
            Registry::Configured { .. } => None,
        }
    }

    /// Whether the Enterprise token call answers it (else the Personal Edition's).
    pub fn is_enterprise(&self) -> bool {
        matches!(
            self,
            Registry::Enterprise { .. } | Registry::Configured { .. }
        )
    }
}

/// `--instance` hosts: lower-case `host[:port]` → instance ID.
pub type ConfiguredInstances = BTreeMap<String, InstanceId>;

/// Parses one `--instance HOST=ID` value (or one comma-separated item of `ALIBABA_CR_INSTANCES`)
/// into the lower-cased host and the ID; the error is one line for the usage error.
pub fn parse_instance_flag(text: &str) -> Result<(String, InstanceId), String> {
    let Some((host, id)) = text.trim().split_once('=') else {
        return Err(format!(
            "--instance {text:?}: expected HOST=cri-… (a registry host and its Enterprise instance ID)"
        ));
    };
    let host = host.trim().to_ascii_lowercase();
    if !is_host_port(&host) {
        return Err(format!(
            "--instance {text:?}: {host:?} is not a DNS name with an optional :port"
        ));
    }
    let id = id.trim();
    let Some(id) = InstanceId::parse(id) else {
        return Err(format!(
            "--instance {text:?}: {id:?} is not an instance ID (cri- followed by lower-case letters and digits)"
        ));
    };
    Ok((host, id))
}

/// Whether `text` is a DNS name (letters, digits, hyphens; at least two labels; not all digits,
/// so no IP literal) with an optional all-digit port.
fn is_host_port(text: &str) -> bool {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    if let Some(port) = port
        && (port.is_empty()
            || port.len() > 5
            || !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u32>().map_or(true, |p| p == 0 || p > 65535))
    {
        return false;
    }
    let top_is_numeric = host
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    host.contains('.') && is_dns_name(host) && !top_is_numeric
}

/// Why a host is refused: one line that says which hosts are answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} is not an Alibaba Cloud Container Registry host (<instance>-registry[-vpc].<region>.cr.aliyuncs.com, \
     registry[-intl][-vpc].<region>.aliyuncs.com, crpi-<id>[-vpc].<region>.personal.cr.aliyuncs.com) \
     nor one named with --instance HOST=cri-…: refusing to send Alibaba Cloud credentials to it; \
     check the image or name the host with --instance"
)]
pub struct NotARegistry {
    /// The host as the image names it.
    pub host: String,
}

/// What `registry` (an image's registry, `host[:port]` as written) names: a `--instance` host
/// exactly as listed, else one of the built-in forms (no port). Anything else is refused.
pub fn classify(
    registry: &str,
    configured: &ConfiguredInstances,
) -> Result<Registry, NotARegistry> {
    let lower = registry.to_ascii_lowercase();
    if let Some(id) = configured.get(&lower) {
        return Ok(Registry::Configured { id: id.clone() });
    }
    builtin(&lower).ok_or_else(|| NotARegistry {
        host: registry.to_owned(),
    })
}

/// One of the built-in forms, for a lower-cased host without port.
fn builtin(host: &str) -> Option<Registry> {
    let labels: Vec<&str> = host.split('.').collect();
    match labels.as_slice() {
        [first, region, "aliyuncs", "com"] => {
            let region = Region::parse(region)?;
            matches!(
                *first,
                "registry" | "registry-vpc" | "registry-intl" | "registry-intl-vpc"
            )
            .then_some(Registry::Personal { region })
        }
        [first, region, "cr", "aliyuncs", "com"] => {
            let region = Region::parse(region)?;
            let name = first
                .strip_suffix("-registry-vpc")
                .or_else(|| first.strip_suffix("-registry"))?;
            is_instance_name(name).then(|| Registry::Enterprise {
                name: name.to_owned(),
                region,
            })
        }
        [first, region, "personal", "cr", "aliyuncs", "com"] => {
            let region = Region::parse(region)?;
            let id = first.strip_prefix("crpi-")?;
            let id = id.strip_suffix("-vpc").unwrap_or(id);
            (!id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
            .then(|| Registry::PersonalInstance {
                id: id.to_owned(),
                region,
            })
        }
        _ => None,
    }
}

/// An Enterprise instance name as it appears in its hosts: a DNS label's characters.
fn is_instance_name(name: &str) -> bool {
    is_dns_label(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(r: &str) -> Region {
        Region::parse(r).unwrap()
    }

    fn configured() -> ConfiguredInstances {
        BTreeMap::from([
            (
                "images.example.com".to_owned(),
                InstanceId::parse("cri-abc123").unwrap(),
            ),
            (
                "mirror.example.com:5000".to_owned(),
                InstanceId::parse("cri-def456").unwrap(),
            ),
        ])
    }

    /// Every host form answered, and what it names.
    #[test]
    fn answered_hosts() {
        let enterprise = |name: &str, r: &str| Registry::Enterprise {
            name: name.to_owned(),
            region: region(r),
        };
        let personal = |r: &str| Registry::Personal { region: region(r) };
        let crpi = |id: &str, r: &str| Registry::PersonalInstance {
            id: id.to_owned(),
            region: region(r),
        };
        let conf = |id: &str| Registry::Configured {
            id: InstanceId::parse(id).unwrap(),
        };
        let table: &[(&str, Registry)] = &[
            (
                "myinst-registry.cn-hangzhou.cr.aliyuncs.com",
                enterprise("myinst", "cn-hangzhou"),
            ),
            (
                "myinst-registry-vpc.cn-hangzhou.cr.aliyuncs.com",
                enterprise("myinst", "cn-hangzhou"),
            ),
            (
                "MyInst-Registry.CN-Hangzhou.CR.aliyuncs.COM",
                enterprise("myinst", "cn-hangzhou"),
            ),
            (
                "a-b-1-registry.ap-southeast-1.cr.aliyuncs.com",
                enterprise("a-b-1", "ap-southeast-1"),
            ),
            (
                "x-registry-registry.cn-beijing.cr.aliyuncs.com",
                enterprise("x-registry", "cn-beijing"),
            ),
            (
                "x-registry-vpc-registry.cn-beijing.cr.aliyuncs.com",
                enterprise("x-registry-vpc", "cn-beijing"),
            ),
            ("registry.cn-hangzhou.aliyuncs.com", personal("cn-hangzhou")),
            (
                "registry-vpc.cn-shanghai.aliyuncs.com",
                personal("cn-shanghai"),
            ),
            (
                "registry-intl.ap-southeast-1.aliyuncs.com",
                personal("ap-southeast-1"),
            ),
            (
                "registry-intl-vpc.eu-central-1.aliyuncs.com",
                personal("eu-central-1"),
            ),
            (
                "crpi-abc123.cn-hangzhou.personal.cr.aliyuncs.com",
                crpi("abc123", "cn-hangzhou"),
            ),
            (
                "crpi-abc123-vpc.cn-hangzhou.personal.cr.aliyuncs.com",
                crpi("abc123", "cn-hangzhou"),
            ),
            ("images.example.com", conf("cri-abc123")),
            ("IMAGES.example.com", conf("cri-abc123")),
            ("mirror.example.com:5000", conf("cri-def456")),
        ];
        for (host, want) in table {
            assert_eq!(classify(host, &configured()).as_ref(), Ok(want), "{host}");
        }
    }

    /// Look-alikes and everything else: refused.
    #[test]
    fn refused_hosts() {
        let table = [
            "registry.cn-hangzhou.aliyuncs.com.evil.test",
            "x-registry.cn-hangzhou.cr.aliyuncs.com.attacker",
            "evil.test",
            "registry.cn-hangzhou.aliyuncs.com:443",
            "registry.cn-hangzhou.aliyuncs.com.",
            "myinst-registry.cn-hangzhou.cr.aliyuncs.com:5000",
            "crpi-abc.cn-hangzhou.personal.cr.aliyuncs.com:443",
            "user@registry.cn-hangzhou.aliyuncs.com",
            "100.100.100.200",
            "[::1]:5000",
            "127.0.0.1:8080",
            "registry.cn.aliyuncs.com",
            "registry.cn-.aliyuncs.com",
            "registry.c-hangzhou.aliyuncs.com",
            "registry.cn_hangzhou.aliyuncs.com",
            "registry2.cn-hangzhou.aliyuncs.com",
            "evilregistry.cn-hangzhou.aliyuncs.com",
            "cr.cn-hangzhou.aliyuncs.com",
            "aliyuncs.com",
            "x.registry.cn-hangzhou.aliyuncs.com",
            "-registry.cn-hangzhou.cr.aliyuncs.com",
            "registry.cn-hangzhou.cr.aliyuncs.com",
            "myinst-registry.cn-hangzhou.cr.aliyuncs.com.cn",
            "myinst.cn-hangzhou.cr.aliyuncs.com",
            "a.myinst-registry.cn-hangzhou.cr.aliyuncs.com",
            "myinst_x-registry.cn-hangzhou.cr.aliyuncs.com",
            "crpi-.cn-hangzhou.personal.cr.aliyuncs.com",
            "crpi-a_b.cn-hangzhou.personal.cr.aliyuncs.com",
            "crpx-abc.cn-hangzhou.personal.cr.aliyuncs.com",
            "crpi-abc.cn-hangzhou.personal.aliyuncs.com",
            "crpi-abc.cn-hangzhou.evil.cr.aliyuncs.com",
            "images.example.com:5000",
            "mirror.example.com",
            "images.example.com.evil.test",
            "registry.cn-hangzhou.aliyuncs.com.cn-hangzhou.cr.aliyuncs.com",
        ];
        for host in table {
            let err = classify(host, &configured()).unwrap_err();
            assert_eq!(err.host, host);
            assert!(err.to_string().starts_with(&format!(
                "{host} is not an Alibaba Cloud Container Registry host"
            )));
        }
    }

    #[test]
    fn regions() {
        for good in [
            "cn-hangzhou",
            "ap-southeast-1",
            "us-west-1",
            "cn-north-2-gov-1",
            "eu-central-1",
        ] {
            assert_eq!(
                Region::parse(good).map(|r| r.to_string()),
                Some(good.to_owned())
            );
        }
        for bad in [
            "",
            "cn",
            "c-hangzhou",
            "cn-",
            "-cn",
            "cn--x",
            "CN-hangzhou",
            "cn-hang_zhou",
            "1n-x",
            "cn-hangzhou.evil",
            "cn-hangzhou/x",
        ] {
            assert_eq!(Region::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn instance_flags() {
        assert_eq!(
            parse_instance_flag("Images.Example.com=cri-abc123"),
            Ok((
                "images.example.com".to_owned(),
                InstanceId::parse("cri-abc123").unwrap()
            ))
        );
        assert_eq!(
            parse_instance_flag(" mirror.example.com:5000 = cri-x1 ")
                .map(|(h, i)| (h, i.to_string())),
            Ok(("mirror.example.com:5000".to_owned(), "cri-x1".to_owned()))
        );
        let table = [
            ("images.example.com", "expected HOST=cri-…"),
            ("images.example.com=", "is not an instance ID"),
            ("images.example.com=cri-", "is not an instance ID"),
            ("images.example.com=cri-ABC", "is not an instance ID"),
            ("images.example.com=crx-abc", "is not an instance ID"),
            ("=cri-abc", "is not a DNS name"),
            ("localhost=cri-abc", "is not a DNS name"),
            ("10.0.0.1=cri-abc", "is not a DNS name"),
            ("[::1]:5000=cri-abc", "is not a DNS name"),
            ("user@images.example.com=cri-abc", "is not a DNS name"),
            ("images.example.com:0=cri-abc", "is not a DNS name"),
            ("images.example.com:99999=cri-abc", "is not a DNS name"),
            ("images.example.com:=cri-abc", "is not a DNS name"),
            ("https://images.example.com=cri-abc", "is not a DNS name"),
            ("images.example.com/x=cri-abc", "is not a DNS name"),
            ("-a.example.com=cri-abc", "is not a DNS name"),
        ];
        for (text, want) in table {
            let err = parse_instance_flag(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn ids() {
        assert!(InstanceId::parse("cri-0a1b2c").is_some());
        for bad in [
            "", "cri-", "cri", "cri-a-b", "CRI-abc", "cri-ABC", " cri-abc",
        ] {
            assert_eq!(InstanceId::parse(bad), None, "{bad:?}");
        }
    }
}
