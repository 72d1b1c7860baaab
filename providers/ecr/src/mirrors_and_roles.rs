//! `--registry-mirror` and `--assume-role`: which ECR registry answers an image whose host is a
//! mirror, and which IAM role a registry's account is pulled as. Both are checked once, before
//! stdin is read, so a typo fails every run the same way (exit 2) instead of one pull at a time.

use std::collections::BTreeMap;

use kcp_provider_args::mirror;

use crate::host::{self, PrivateHost, RegistryKind};

/// The partitions a role ARN may name: those of [`host::SUFFIXES`] plus GovCloud, which shares
/// `amazonaws.com` with `aws` and is told apart by its region.
const PARTITIONS: &[&str] = &[
    "aws",
    "aws-cn",
    "aws-us-gov",
    "aws-eusc",
    "aws-iso",
    "aws-iso-b",
    "aws-iso-e",
    "aws-iso-f",
];

/// A mirror source answered with a token of an ECR private registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcrMirror {
    /// The source registry (`host[:port]`, lower-cased), compared with the image's registry.
    pub source: String,
    /// The destination host as given (lower-cased): the answer's second auth key.
    pub target_host: String,
    /// The destination taken apart: region, partition and endpoint flavour of the token.
    pub target: PrivateHost,
}

/// Parses `--registry-mirror` values: every destination must be an ECR private registry host.
/// Unlike ACR (which skips malformed entries as upstream does) every problem is an error: the
/// flag is new here, and a silently skipped mirror would turn into a refused pull later.
pub fn mirrors(values: &[String]) -> Result<Vec<EcrMirror>, String> {
    let (parsed, problems) = mirror::parse_mirrors(values);
    if let Some(problem) = problems.first() {
        let problem = problem.strip_prefix("ignoring ").unwrap_or(problem);
        return Err(problem.to_owned());
    }
    parsed
        .into_iter()
        .map(|m| match host::classify(&m.target) {
            RegistryKind::Private(target) => Ok(EcrMirror {
                source: m.source,
                target_host: m.target,
                target,
            }),
            _ => Err(format!(
                "--registry-mirror {}:{}: {} is not an Amazon ECR private registry host; the destination must be <account>.dkr.ecr.<region>.amazonaws.com (or the FIPS, dual-stack or another partition's form), without a port",
                m.source, m.target, m.target
            )),
        })
        .collect()
}

/// An IAM role ARN, checked: `arn:<partition>:iam::<account>:role/<path/name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleArn {
    /// The ARN as the user wrote it, sent to STS unchanged.
    pub arn: String,
    /// Its partition, e.g. `aws-cn`.
    pub partition: String,
}

impl RoleArn {
    /// Parses and checks a role ARN; the error says what is wrong.
    pub fn parse(arn: &str) -> Result<RoleArn, String> {
        let bad = |why: &str| {
            Err(format!(
                "{arn:?} is not an IAM role ARN ({why}); expected arn:<partition>:iam::<12-digit account>:role/<name>"
            ))
        };
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        let [prefix, partition, service, region, account, resource] = parts.as_slice() else {
            return bad("too few ':'-separated parts");
        };
        if *prefix != "arn" || *service != "iam" || !region.is_empty() {
            return bad("it must start with arn:<partition>:iam::");
        }
        if !PARTITIONS.contains(partition) {
            return bad(&format!(
                "unknown partition {partition:?}; known: {}",
                PARTITIONS.join(", ")
            ));
        }
        if !is_account(account) {
            return bad("the account must be 12 digits");
        }
        let name = resource.strip_prefix("role/").unwrap_or_default();
        let name_ok = !name.is_empty()
            && name.len() <= 512
            && name.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(b, b'+' | b'=' | b',' | b'.' | b'@' | b'_' | b'-' | b'/')
            })
            && !name.ends_with('/');
        if !name_ok {
            return bad("the resource must be role/<name> of letters, digits and +=,.@_-/");
        }
        Ok(RoleArn {
            arn: arn.to_owned(),
            partition: (*partition).to_owned(),
        })
    }
}

/// The `--assume-role` table and the external ID sent with every such call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roles {
    /// Registry account → the role to assume for it.
    pub by_account: BTreeMap<String, RoleArn>,
    /// `--assume-role-external-id`.
    pub external_id: Option<String>,
}

impl Roles {
    /// Parses `--assume-role ACCOUNT=ROLE_ARN` values and the external ID.
    pub fn parse(values: &[String], external_id: Option<&str>) -> Result<Roles, String> {
        let mut by_account = BTreeMap::new();
        for value in values {
            let Some((account, arn)) = value.split_once('=') else {
                return Err(format!(
                    "--assume-role {value:?}: expected ACCOUNT=ROLE_ARN, e.g. 123456789012=arn:aws:iam::123456789012:role/ecr-pull"
                ));
            };
            let (account, arn) = (account.trim(), arn.trim());
            if !is_account(account) {
                return Err(format!(
                    "--assume-role {value:?}: the account {account:?} must be 12 digits (the account in the registry host)"
                ));
            }
            let role = RoleArn::parse(arn).map_err(|e| format!("--assume-role {value:?}: {e}"))?;
            if let Some(previous) = by_account.insert(account.to_owned(), role)
                && previous.arn != arn
            {
                return Err(format!(
                    "--assume-role: account {account} is given two roles ({} and {arn}); give one",
                    previous.arn
                ));
            }
        }
        let external_id = match external_id {
            None => None,
            Some(id) => {
                // STS's own rule: 2 to 1224 characters of [\w+=,.@:/-].
                let ok = (2..=1224).contains(&id.len())
                    && id.bytes().all(|b| {
                        b.is_ascii_alphanumeric()
                            || matches!(
                                b,
                                b'_' | b'+' | b'=' | b',' | b'.' | b'@' | b':' | b'/' | b'-'
                            )
                    });
                if !ok {
                    return Err(
                        "--assume-role-external-id must be 2 to 1224 characters of letters, digits and _+=,.@:/-"
                            .to_owned(),
                    );
                }
                if by_account.is_empty() {
                    return Err(
                        "--assume-role-external-id is sent with --assume-role calls, but no --assume-role is given".to_owned(),
                    );
                }
                Some(id.to_owned())
            }
        };
        Ok(Roles {
            by_account,
            external_id,
        })
    }

    /// The role to assume for a private registry, refused when its partition is not the
    /// registry's: STS in one partition cannot hand out another partition's role.
    pub fn for_registry(&self, registry: &PrivateHost) -> Result<Option<&RoleArn>, String> {
        let Some(role) = self.by_account.get(&registry.account) else {
            return Ok(None);
        };
        if role.partition != registry.partition() {
            return Err(format!(
                "--assume-role {}={}: the role is in partition {} but the registry of account {} (region {}) is in partition {}; give a role ARN of partition {}",
                registry.account,
                role.arn,
                role.partition,
                registry.account,
                registry.region,
                registry.partition(),
                registry.partition()
            ));
        }
        Ok(Some(role))
    }
}

/// Checks what can be checked before any request: each mirror destination against its account's
/// role.
pub fn check(mirrors: &[EcrMirror], roles: &Roles) -> Result<(), String> {
    for m in mirrors {
        roles
            .for_registry(&m.target)
            .map_err(|e| format!("--registry-mirror {}:{}: {e}", m.source, m.target_host))?;
    }
    Ok(())
}

fn is_account(text: &str) -> bool {
    text.len() == 12 && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn mirror_destinations_must_be_private_ecr_hosts() {
        let m = mirrors(&strings(&[
            "docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com",
            "Reg.Local:5000=210987654321.dkr-ecr-fips.us-gov-west-1.on.aws",
        ]))
        .unwrap();
        assert_eq!(m[0].source, "docker.io");
        assert_eq!(m[0].target.region, "us-west-2");
        assert_eq!(m[1].source, "reg.local:5000");
        assert_eq!(m[1].target.partition(), "aws-us-gov");
        assert!(m[1].target.fips && m[1].target.dual_stack());
        for bad in [
            "docker.io:public.ecr.aws",
            "docker.io:registry.example.com",
            "docker.io=123456789012.dkr.ecr.us-west-2.amazonaws.com:443",
            "docker.io:123456789012.dkr.ecr.us-west-2.amazonaws.com.evil.example",
            "a:b:c",
            "docker.io:",
        ] {
            let e = mirrors(&strings(&[bad])).unwrap_err();
            assert!(e.starts_with("--registry-mirror"), "{bad}: {e}");
        }
    }

    #[test]
    fn role_arns_and_accounts_are_checked() {
        let roles = Roles::parse(
            &strings(&[
                "123456789012=arn:aws:iam::123456789012:role/ecr-pull",
                "210987654321 = arn:aws-cn:iam::210987654321:role/path/to/pull",
            ]),
            Some("tenant-42"),
        )
        .unwrap();
        assert_eq!(roles.by_account.len(), 2);
        assert_eq!(roles.by_account["210987654321"].partition, "aws-cn");
        assert_eq!(roles.external_id.as_deref(), Some("tenant-42"));
        for bad in [
            "12345678901=arn:aws:iam::123456789012:role/x",
            "1234567890123=arn:aws:iam::123456789012:role/x",
            "123456789012",
            "123456789012=arn:aws:iam::12345:role/x",
            "123456789012=arn:aws:s3:::bucket",
            "123456789012=arn:aws:iam::123456789012:user/x",
            "123456789012=arn:aws:iam::123456789012:role/",
            "123456789012=arn:aws-moon:iam::123456789012:role/x",
            "123456789012=arn:aws:iam:us-east-1:123456789012:role/x",
        ] {
            assert!(Roles::parse(&strings(&[bad]), None).is_err(), "{bad}");
        }
        assert!(
            Roles::parse(
                &strings(&[
                    "123456789012=arn:aws:iam::123456789012:role/a",
                    "123456789012=arn:aws:iam::123456789012:role/b"
                ]),
                None
            )
            .is_err()
        );
        let one = strings(&["123456789012=arn:aws:iam::123456789012:role/a"]);
        assert!(Roles::parse(&one, Some("x")).is_err(), "too short");
        assert!(Roles::parse(&one, Some("has space")).is_err());
        assert!(Roles::parse(&[], Some("tenant-42")).is_err(), "no role");
    }

    #[test]
    fn a_role_of_another_partition_is_refused() {
        let roles = Roles::parse(
            &strings(&["123456789012=arn:aws:iam::123456789012:role/pull"]),
            None,
        )
        .unwrap();
        let gov = mirrors(&strings(&[
            "docker.io:123456789012.dkr.ecr.us-gov-west-1.amazonaws.com",
        ]))
        .unwrap();
        let e = check(&gov, &roles).unwrap_err();
        assert!(
            e.contains("the role is in partition aws but the registry of account 123456789012 (region us-gov-west-1) is in partition aws-us-gov"),
            "{e}"
        );
        let same = mirrors(&strings(&[
            "docker.io:123456789012.dkr.ecr.eu-west-1.amazonaws.com",
        ]))
        .unwrap();
        assert_eq!(check(&same, &roles), Ok(()));
        assert_eq!(
            roles
                .for_registry(&same[0].target)
                .unwrap()
                .map(|r| r.arn.as_str()),
            Some("arn:aws:iam::123456789012:role/pull")
        );
    }
}
