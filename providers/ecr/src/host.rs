//! Which AWS registry an image host names, parsed label by label from one table of partitions.
//!
//! Upstream matches one loose regex; here a host is split into DNS labels and each part is checked
//! on its own: a 12-digit account, the service labels (`dkr.ecr`, `dkr.ecr-fips`, `dkr-ecr`,
//! `dkr-ecr-fips`), a region label, then a suffix that must equal one row of [`SUFFIXES`] exactly.
//! So `…amazonaws.com.evil.example` and `…amazonaws.hacker.com` are not ECR, and a new partition
//! is one line. Like upstream, the service form and the suffix are independent (`dkr.ecr` with a
//! dual-stack suffix is accepted), and the region is not cross-checked against the suffix.

/// One DNS suffix under which ECR registries live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suffix {
    /// The DNS suffix, e.g. `amazonaws.com.cn`.
    pub dns: &'static str,
    /// The AWS partition it belongs to (`aws-us-gov` shares `amazonaws.com` with `aws`).
    pub partition: &'static str,
    /// Whether it is a dual-stack (IPv4 + IPv6) suffix.
    pub dual_stack: bool,
}

/// Every suffix ECR registries use.
pub const SUFFIXES: &[Suffix] = &[
    Suffix {
        dns: "amazonaws.com",
        partition: "aws",
        dual_stack: false,
    },
    Suffix {
        dns: "amazonaws.com.cn",
        partition: "aws-cn",
        dual_stack: false,
    },
    Suffix {
        dns: "amazonaws.eu",
        partition: "aws-eusc",
        dual_stack: false,
    },
    Suffix {
        dns: "on.aws",
        partition: "aws",
        dual_stack: true,
    },
    Suffix {
        dns: "on.amazonwebservices.com.cn",
        partition: "aws-cn",
        dual_stack: true,
    },
    Suffix {
        dns: "c2s.ic.gov",
        partition: "aws-iso",
        dual_stack: false,
    },
    Suffix {
        dns: "sc2s.sgov.gov",
        partition: "aws-iso-b",
        dual_stack: false,
    },
    Suffix {
        dns: "cloud.adc-e.uk",
        partition: "aws-iso-e",
        dual_stack: false,
    },
    Suffix {
        dns: "csp.hci.ic.gov",
        partition: "aws-iso-f",
        dual_stack: false,
    },
];

/// ECR Public registry hosts.
pub const PUBLIC_HOSTS: &[&str] = &["public.ecr.aws", "ecr-public.aws.com"];

/// A private ECR registry host, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateHost {
    /// The 12-digit AWS account ID.
    pub account: String,
    /// The region, e.g. `us-west-2`.
    pub region: String,
    /// `dkr.ecr-fips` / `dkr-ecr-fips`: use the FIPS API endpoint.
    pub fips: bool,
    /// The suffix row it matched.
    pub suffix: Suffix,
}

impl PrivateHost {
    /// The partition, with GovCloud told apart by its region.
    pub fn partition(&self) -> &'static str {
        if self.suffix.partition == "aws" && self.region.starts_with("us-gov-") {
            "aws-us-gov"
        } else {
            self.suffix.partition
        }
    }

    /// Whether the API should be called on its dual-stack endpoint.
    pub fn dual_stack(&self) -> bool {
        self.suffix.dual_stack
    }
}

/// What kind of registry a host is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryKind {
    /// `<account>.dkr.ecr.<region>.<suffix>` and its variants.
    Private(PrivateHost),
    /// ECR Public.
    Public,
    /// Anything else: a mirror, a CNAME, or not AWS at all.
    Other,
}

/// Classifies a registry host (no port; DNS is case-insensitive, so case is ignored).
pub fn classify(host: &str) -> RegistryKind {
    let host = host.to_ascii_lowercase();
    if PUBLIC_HOSTS.contains(&host.as_str()) {
        return RegistryKind::Public;
    }
    parse_private(&host).map_or(RegistryKind::Other, RegistryKind::Private)
}

fn parse_private(host: &str) -> Option<PrivateHost> {
    let (account, rest) = host.split_once('.')?;
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (fips, rest) = if let Some(r) = rest
        .strip_prefix("dkr.ecr.")
        .or_else(|| rest.strip_prefix("dkr-ecr."))
    {
        (false, r)
    } else {
        (
            true,
            rest.strip_prefix("dkr.ecr-fips.")
                .or_else(|| rest.strip_prefix("dkr-ecr-fips."))?,
        )
    };
    let (region, suffix) = rest.split_once('.')?;
    if !is_region(region) {
        return None;
    }
    let suffix = *SUFFIXES.iter().find(|s| s.dns == suffix)?;
    Some(PrivateHost {
        account: account.to_owned(),
        region: region.to_owned(),
        fips,
        suffix,
    })
}

/// A region label: lowercase letters, digits and inner hyphens (`us-west-2`, `eusc-de-east-1`).
pub fn is_region(label: &str) -> bool {
    let bytes = label.as_bytes();
    matches!((bytes.first(), bytes.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(host: &str) -> PrivateHost {
        match classify(host) {
            RegistryKind::Private(p) => p,
            other => panic!("{host}: expected private ECR, got {other:?}"),
        }
    }

    #[test]
    fn upstream_registry_pattern_vectors() {
        // docs/providers/ecr.md “Test vectors”: TestRegistryPatternMatch.
        let cases = [
            ("123456789012.dkr.ecr.lala-land-1.amazonaws.com", true),
            ("123456789012.dkr.ecr-fips.lala-land-1.amazonaws.com", true),
            ("123456789012.dkr.ecr.lala-land-1.amazonaws.com.cn", true),
            ("123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu", true),
            (
                "123456789012.dkr.ecr-fips.eusc-de-east-1.amazonaws.eu",
                true,
            ),
            ("1234567890123.dkr.ecr.lala-land-1.amazonaws.com", false),
            ("12345678901.dkr.ecr.lala-land-1.amazonaws.com", false),
            ("12345678901A.dkr.ecr.lala-land-1.amazonaws.com", false),
            ("123456789012.dkr.ecr.lala-land-1!.amazonaws.com", false),
            ("123456789012.dkr.ecr.#lala-land-1.amazonaws.com", false),
            (
                "123456789012.dkr.ecr.lala-land-1.amazonaws.hacker.com",
                false,
            ),
            ("123456789012.dkr.ecr.lala-land-1.hacker.com", false),
            ("123456789012.dkr.ecr.lala-land-1.amazonaws.lol", false),
            ("123456789012.dog.ecr.lala-land-1.amazonaws.com", false),
            ("123456789012.dkr.cat.lala-land-1.amazonaws.com", false),
            ("123456789012.dkr.cat.lala-land-1.awsamazon.com", false),
            ("123456789012.lala-land-1.amazonaws.com", false),
            ("123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov", true),
            ("123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov", true),
            ("123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk", true),
            ("123456789012.dkr.ecr.us-isof-east-1.csp.hci.ic.gov", true),
            ("123456789012.dkr.ecr.us-iso-east-1.amazonaws.gov", false),
            ("123456789012.dkr-ecr.lala-land-1.on.aws", true),
            ("123456789012.dkr-ecr-fips.lala-land-1.on.aws", true),
            (
                "123456789012.dkr-ecr.lala-land-1.on.amazonwebservices.com.cn",
                true,
            ),
        ];
        for (host, want) in cases {
            assert_eq!(
                matches!(classify(host), RegistryKind::Private(_)),
                want,
                "{host}"
            );
        }
    }

    #[test]
    fn upstream_region_vectors() {
        // docs/providers/ecr.md “Test vectors”: Test_parseRegionFromECRPrivateHost.
        for (rest, region) in [
            ("dkr.ecr.us-west-2.amazonaws.com", "us-west-2"),
            ("dkr.ecr.cn-north-1.amazonaws.com.cn", "cn-north-1"),
            ("dkr.ecr.us-gov-east-1.amazonaws.com", "us-gov-east-1"),
            ("dkr.ecr.us-iso-east-1.c2s.ic.gov", "us-iso-east-1"),
            ("dkr.ecr.eusc-de-east-1.amazonaws.eu", "eusc-de-east-1"),
            ("dkr-ecr.us-west-2.on.aws", "us-west-2"),
            ("dkr-ecr-fips.us-west-2.on.aws", "us-west-2"),
            (
                "dkr-ecr.cn-north-1.on.amazonwebservices.com.cn",
                "cn-north-1",
            ),
            ("dkr-ecr.us-gov-east-1.on.aws", "us-gov-east-1"),
            ("dkr-ecr-fips.us-gov-east-1.on.aws", "us-gov-east-1"),
        ] {
            assert_eq!(
                private(&format!("123456789123.{rest}")).region,
                region,
                "{rest}"
            );
        }
        assert_eq!(classify("foobar"), RegistryKind::Other);
    }

    #[test]
    fn peer_helper_vectors_and_lookalikes() {
        // amazon-ecr-credential-helper ExtractRegistry vectors (docs/providers/ecr.md “Test vectors”), plus our own look-alikes.
        let p = private("123456789012.dkr-ecr-fips.us-west-2.on.aws");
        assert!(p.fips && p.dual_stack());
        let p = private("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com");
        assert!(p.fips && !p.dual_stack());
        assert_eq!(p.partition(), "aws-us-gov");
        // `dkr.ecr` with a dual-stack suffix: the regex accepts it, so do we.
        let p = private("210987654321.dkr.ecr.cn-north-1.on.amazonwebservices.com.cn");
        assert!(p.dual_stack());
        assert_eq!(p.partition(), "aws-cn");
        for host in [
            ".dkr.ecr.not-real.amazonaws.com",
            "123456789012.dkr.ecr.us-west-2.amazonaws.com.fake.example.com",
            "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com.fake.example.com",
            "210987654321.dkr.ecr.cn-north-1.amazonaws.com.cn.fake.example.com.cn",
            "210987654321.dkr.ecr.cn-north-1.on.aws.com.cn",
            "public.ecr.aws.fake.example.com",
            "fake-public.ecr.aws",
            "123456789012.dkr.ecr..amazonaws.com",
            "123456789012.dkr.ecr.-us-west-2.amazonaws.com",
            "123456789012.dkr.ecr.us_west_2.amazonaws.com",
            "123456789012.dkr.ecr.us-west-2.amazonaws.com.",
            "123456789012.dkr.ecr.us-west-2",
            "123456789012.dkr.ecr.us-west-2.amazonaws.com:443",
            "123456789012",
            "",
        ] {
            assert!(
                !matches!(classify(host), RegistryKind::Private(_)),
                "{host:?} must not be ECR"
            );
        }
        assert_eq!(classify("public.ecr.aws"), RegistryKind::Public);
        assert_eq!(classify("ECR-PUBLIC.aws.com"), RegistryKind::Public);
    }

    #[test]
    fn every_partition_and_form() {
        for s in SUFFIXES {
            for (form, fips) in [
                ("dkr.ecr", false),
                ("dkr.ecr-fips", true),
                ("dkr-ecr", false),
                ("dkr-ecr-fips", true),
            ] {
                let p = private(&format!("123456789012.{form}.xx-test-1.{}", s.dns));
                assert_eq!(
                    (p.fips, p.suffix, p.account.as_str()),
                    (fips, *s, "123456789012"),
                    "{form} {}",
                    s.dns
                );
            }
        }
        // Hosts are case-insensitive.
        assert_eq!(
            private("123456789012.DKR.ECR.US-WEST-2.AMAZONAWS.COM").region,
            "us-west-2"
        );
    }
}
