//! IAM Roles Anywhere as the node's AWS identity, with no helper binary: an X.509 certificate
//! and its private key are exchanged at `CreateSession` for a role's credentials, which then
//! sign ECR's GetAuthorizationToken (and `--assume-role`'s and EKS Pod Identity's calls) in
//! place of the default credential chain.
//!
//! Configured by the `--roles-anywhere-*` flags (env twins `ECR_ROLES_ANYWHERE_*`) or, without
//! them, read from the AWS config profile the provider would use when its `credential_process`
//! runs AWS's `aws_signing_helper credential-process` (`dropin`): the same node config then works
//! with the helper absent. Files: `pem` (PEM blocks), `cert` (the certificate), `key` (the
//! private key and the signer), `sign` (the X.509 SigV4), `session` (the call), `dropin`.

mod cert;
mod dropin;
mod key;
mod pem;
mod session;
mod sign;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use kcp_plugin::token_cache::CacheKey;

pub use session::credentials;

/// The endpoint variable's service part (`AWS_ENDPOINT_URL_ROLESANYWHERE`).
pub const SERVICE_ENV: &str = "ROLESANYWHERE";
/// The session length when none is given (the signing helper's default).
pub const DEFAULT_SESSION: Duration = Duration::from_secs(3600);
/// The shortest session `CreateSession` grants.
const MIN_SESSION: Duration = Duration::from_secs(15 * 60);
/// The longest session `CreateSession` grants.
const MAX_SESSION: Duration = Duration::from_secs(12 * 3600);

/// The `--roles-anywhere-*` flags, named as the signing helper names its own.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Flags {
    /// IAM Roles Anywhere: the node's X.509 certificate (PEM). With the key, trust anchor,
    /// profile and role, the node's AWS identity comes from CreateSession, without the
    /// aws_signing_helper binary.
    #[arg(
        long = "roles-anywhere-certificate",
        env = "ECR_ROLES_ANYWHERE_CERTIFICATE",
        value_name = "FILE"
    )]
    pub certificate: Option<PathBuf>,
    /// IAM Roles Anywhere: the certificate's private key (unencrypted PEM: RSA PKCS#1/PKCS#8,
    /// EC P-256/P-384 SEC1/PKCS#8), owned by the running user and readable by nobody else.
    #[arg(
        long = "roles-anywhere-private-key",
        env = "ECR_ROLES_ANYWHERE_PRIVATE_KEY",
        value_name = "FILE"
    )]
    pub private_key: Option<PathBuf>,
    /// IAM Roles Anywhere: intermediate CA certificates (PEM bundle), sent as X-Amz-X509-Chain.
    #[arg(
        long = "roles-anywhere-intermediates",
        env = "ECR_ROLES_ANYWHERE_INTERMEDIATES",
        value_name = "FILE"
    )]
    pub intermediates: Option<PathBuf>,
    /// IAM Roles Anywhere: the trust anchor's ARN (its region is where CreateSession is called).
    #[arg(
        long = "roles-anywhere-trust-anchor-arn",
        env = "ECR_ROLES_ANYWHERE_TRUST_ANCHOR_ARN",
        value_name = "ARN"
    )]
    pub trust_anchor_arn: Option<String>,
    /// IAM Roles Anywhere: the profile's ARN.
    #[arg(
        long = "roles-anywhere-profile-arn",
        env = "ECR_ROLES_ANYWHERE_PROFILE_ARN",
        value_name = "ARN"
    )]
    pub profile_arn: Option<String>,
    /// IAM Roles Anywhere: the role to assume.
    #[arg(
        long = "roles-anywhere-role-arn",
        env = "ECR_ROLES_ANYWHERE_ROLE_ARN",
        value_name = "ARN"
    )]
    pub role_arn: Option<String>,
    /// IAM Roles Anywhere: the session's length, seconds (as the helper takes it) or a Go
    /// duration, 15m to 12h (default 1h).
    #[arg(
        long = "roles-anywhere-session-duration",
        env = "ECR_ROLES_ANYWHERE_SESSION_DURATION",
        value_name = "DURATION"
    )]
    pub session_duration: Option<String>,
}

/// Where the configuration came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The `--roles-anywhere-*` flags (or their environment twins).
    Flags,
    /// The `credential_process` of an AWS config profile.
    Profile {
        /// The AWS config file.
        file: PathBuf,
        /// The profile's name.
        profile: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flags => f.write_str("--roles-anywhere-* flags"),
            Source::Profile { file, profile } => write!(
                f,
                "credential_process of profile {profile} in {}",
                file.display()
            ),
        }
    }
}

/// A Roles Anywhere ARN (`arn:<partition>:rolesanywhere:<region>:<account>:<kind>/<id>`), checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arn {
    /// The whole ARN.
    pub arn: String,
    /// Its partition (`aws`, `aws-cn`, `aws-us-gov`, …).
    pub partition: String,
    /// The region part, where the resource's API is called.
    pub region: String,
}

impl Arn {
    /// Parses a trust anchor (`kind` `trust-anchor`) or profile (`profile`) ARN; `what` names
    /// where it came from.
    fn parse(text: &str, kind: &str, what: &str) -> Result<Arn, String> {
        let text = text.trim();
        let parts: Vec<&str> = text.splitn(6, ':').collect();
        let ok = parts.len() == 6
            && parts[0] == "arn"
            && parts[1].starts_with("aws")
            && parts[2] == "rolesanywhere"
            && crate::host::is_region(parts[3])
            && parts[4].len() == 12
            && parts[4].bytes().all(|b| b.is_ascii_digit())
            && parts[5]
                .strip_prefix(kind)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|id| !id.is_empty());
        if !ok {
            return Err(format!(
                "{what} {text:?} is not an IAM Roles Anywhere {kind} ARN (arn:aws:rolesanywhere:<region>:<account>:{kind}/<id>)"
            ));
        }
        Ok(Arn {
            arn: text.to_owned(),
            partition: parts[1].to_owned(),
            region: parts[3].to_owned(),
        })
    }
}

/// Checks an IAM role ARN (`arn:<partition>:iam::<account>:role/<name>`).
fn check_role_arn(text: &str, what: &str) -> Result<String, String> {
    let text = text.trim();
    let parts: Vec<&str> = text.splitn(6, ':').collect();
    let ok = parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "iam"
        && parts[3].is_empty()
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && parts[5]
            .strip_prefix("role/")
            .is_some_and(|n| !n.is_empty());
    if ok {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{what} {text:?} is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)"
        ))
    }
}

/// Reads a session length: whole seconds, as the signing helper takes them, or a Go duration;
/// 15 minutes to 12 hours.
fn session_duration(text: &str, what: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = match text.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => kcp_kubelet::duration::GoDuration::parse(text)
            .ok()
            .and_then(|d| d.to_std())
            .ok_or_else(|| {
                format!("{what} {text:?} is neither seconds nor a duration such as 1h")
            })?,
    };
    if !(MIN_SESSION..=MAX_SESSION).contains(&duration) || duration.subsec_nanos() != 0 {
        return Err(format!(
            "{what} {text:?} is outside what CreateSession grants: whole seconds from 900 (15m) to 43200 (12h)"
        ));
    }
    Ok(duration)
}

/// IAM Roles Anywhere, configured and checked (no file read yet: files are read per exec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolesAnywhere {
    /// `--roles-anywhere-certificate`: the node's X.509 certificate (PEM), re-read on every exec
    /// so a rotated one is picked up.
    pub certificate: PathBuf,
    /// `--roles-anywhere-private-key`: its key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub private_key: PathBuf,
    /// `--roles-anywhere-intermediates`: CA certificates between it and the trust anchor.
    pub intermediates: Option<PathBuf>,
    /// `--roles-anywhere-trust-anchor-arn`: its region is where `CreateSession` is sent.
    pub trust_anchor: Arn,
    /// `--roles-anywhere-profile-arn`: the roles it may assume and the session policies applied.
    pub profile: Arn,
    /// `--roles-anywhere-role-arn`: the IAM role the session's keys belong to.
    pub role_arn: String,
    /// The session's length.
    pub session_duration: Duration,
    /// `roleSessionName` (the helper's `--role-session-name`; nodeadm sets the node's name).
    pub role_session_name: Option<String>,
    /// The region signed for and called: the helper's `--region`, else the trust anchor's.
    pub region: String,
    /// The helper's `--endpoint`, when the profile gives one.
    pub endpoint: Option<String>,
    /// Where this came from.
    pub source: Source,
}

/// What each value is, to name it in errors: the flag, or the helper's flag in the profile.
struct Names {
    certificate: &'static str,
    private_key: &'static str,
    trust_anchor: &'static str,
    profile: &'static str,
    role: &'static str,
    duration: &'static str,
}

/// The values of either way of configuring, before they are checked.
#[derive(Debug, Default)]
struct Raw {
    certificate: Option<PathBuf>,
    private_key: Option<PathBuf>,
    intermediates: Option<PathBuf>,
    trust_anchor: Option<String>,
    profile: Option<String>,
    role: Option<String>,
    duration: Option<String>,
    role_session_name: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
}

impl RolesAnywhere {
    /// Checks `raw`: every required value present, ARNs well formed and of one region.
    fn check(raw: Raw, names: &Names, source: Source) -> Result<RolesAnywhere, String> {
        let from = match &source {
            Source::Flags => String::new(),
            other => format!(" (in the {other})"),
        };
        let missing: Vec<&str> = [
            (raw.certificate.is_none(), names.certificate),
            (raw.private_key.is_none(), names.private_key),
            (raw.trust_anchor.is_none(), names.trust_anchor),
            (raw.profile.is_none(), names.profile),
            (raw.role.is_none(), names.role),
        ]
        .into_iter()
        .filter_map(|(missing, name)| missing.then_some(name))
        .collect();
        let (Some(certificate), Some(private_key), Some(trust_anchor), Some(profile), Some(role)) = (
            raw.certificate,
            raw.private_key,
            raw.trust_anchor,
            raw.profile,
            raw.role,
        ) else {
            return Err(format!(
                "IAM Roles Anywhere needs {} too{from}",
                missing.join(", ")
            ));
        };
        let trust_anchor = Arn::parse(&trust_anchor, "trust-anchor", names.trust_anchor)?;
        let profile = Arn::parse(&profile, "profile", names.profile)?;
        if profile.region != trust_anchor.region || profile.partition != trust_anchor.partition {
            return Err(format!(
                "{} {} and {} {} are in different regions{from}: both must be of the trust anchor's region",
                names.trust_anchor, trust_anchor.arn, names.profile, profile.arn
            ));
        }
        let role_arn = check_role_arn(&role, names.role)?;
        let session_duration = match raw.duration {
            Some(d) => session_duration(&d, names.duration)?,
            None => DEFAULT_SESSION,
        };
        if let Some(region) = &raw.region
            && !crate::host::is_region(region)
        {
            return Err(format!(
                "--region {region:?} is not an AWS region name{from}"
            ));
        }
        Ok(RolesAnywhere {
            certificate,
            private_key,
            intermediates: raw.intermediates,
            region: raw.region.unwrap_or_else(|| trust_anchor.region.clone()),
            trust_anchor,
            profile,
            role_arn,
            session_duration,
            role_session_name: raw.role_session_name,
            endpoint: raw.endpoint,
            source,
        })
    }

    /// The flags, checked; `None` when none is set (an empty value, as from the environment,
    /// counts as unset).
    pub fn from_flags(flags: &Flags) -> Result<Option<RolesAnywhere>, String> {
        let path = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
        let text = |t: &Option<String>| {
            t.as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
        };
        let raw = Raw {
            certificate: path(&flags.certificate),
            private_key: path(&flags.private_key),
            intermediates: path(&flags.intermediates),
            trust_anchor: text(&flags.trust_anchor_arn),
            profile: text(&flags.profile_arn),
            role: text(&flags.role_arn),
            duration: text(&flags.session_duration),
            ..Raw::default()
        };
        let any = raw.certificate.is_some()
            || raw.private_key.is_some()
            || raw.intermediates.is_some()
            || raw.trust_anchor.is_some()
            || raw.profile.is_some()
            || raw.role.is_some()
            || raw.duration.is_some();
        if !any {
            return Ok(None);
        }
        let names = Names {
            certificate: "--roles-anywhere-certificate",
            private_key: "--roles-anywhere-private-key",
            trust_anchor: "--roles-anywhere-trust-anchor-arn",
            profile: "--roles-anywhere-profile-arn",
            role: "--roles-anywhere-role-arn",
            duration: "--roles-anywhere-session-duration",
        };
        Self::check(raw, &names, Source::Flags).map(Some)
    }

    /// The configuration in force: the flags when any is set, else the drop-in from the AWS
    /// config profile, else none (the default chain, as before).
    pub fn configured(flags: &Flags) -> Result<Option<RolesAnywhere>, String> {
        if let Some(flags) = Self::from_flags(flags)? {
            return Ok(Some(flags));
        }
        dropin::from_aws_config()
    }

    /// Reads the files (certificate, intermediates, key) and checks them against each other and
    /// the clock at `now`: every refusal is one line naming the file.
    pub fn load(&self, now: SystemTime) -> Result<Loaded, String> {
        let mut certs =
            cert::read_pem_file(&self.certificate, "the IAM Roles Anywhere certificate")?;
        let leaf = certs.remove(0);
        let certificate = cert::Certificate::parse(
            leaf,
            &format!(
                "the IAM Roles Anywhere certificate {}",
                self.certificate.display()
            ),
        )?;
        certificate.check_validity(now, &self.certificate)?;
        // Certificates after the first in the certificate file are intermediates too, as the
        // helper's bundle is.
        let mut chain = certs;
        if let Some(bundle) = &self.intermediates {
            chain.extend(cert::read_pem_file(
                bundle,
                "the IAM Roles Anywhere intermediates bundle",
            )?);
        }
        let signer = key::load(
            &self.private_key,
            &certificate.public_key,
            &self.certificate,
        )?;
        Ok(Loaded {
            certificate,
            chain,
            signer,
        })
    }

    /// `key` with who the credentials are for: the trust anchor, profile, role and session
    /// name as identity parts (what the token may do), the certificate's SHA-256 as the node's
    /// own identity (what fleet mode's shared identity stands in for). Never the key.
    pub fn identify(&self, key: CacheKey, loaded: &Loaded) -> CacheKey {
        key.identity("roles-anywhere.trust-anchor", &self.trust_anchor.arn)
            .identity("roles-anywhere.profile", &self.profile.arn)
            .identity("roles-anywhere.role", &self.role_arn)
            .identity(
                "roles-anywhere.session-name",
                self.role_session_name.as_deref().unwrap_or_default(),
            )
            .identity(
                "roles-anywhere.endpoint",
                self.endpoint.as_deref().unwrap_or_default(),
            )
            .identity_env(&["AWS_ENDPOINT_URL_ROLESANYWHERE"])
            .node_identity(
                "roles-anywhere.certificate-sha256",
                &loaded.certificate.sha256,
            )
    }

    /// Who signs, for error messages.
    pub fn describe(&self, loaded: &Loaded) -> String {
        format!(
            "IAM Roles Anywhere role {} (certificate serial {}, from the {})",
            self.role_arn, loaded.certificate.serial, self.source
        )
    }
}

/// The files of one exec, read and checked.
#[derive(Debug)]
pub struct Loaded {
    /// The leaf certificate.
    pub certificate: cert::Certificate,
    /// Intermediates, DER.
    pub chain: Vec<Vec<u8>>,
    /// The key's signer.
    signer: key::Signer,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANCHOR: &str = "arn:aws:rolesanywhere:eu-west-1:123456789012:trust-anchor/0b1c2d3e-aaaa-bbbb-cccc-1234567890ab";
    const PROFILE: &str =
        "arn:aws:rolesanywhere:eu-west-1:123456789012:profile/9f8e7d6c-aaaa-bbbb-cccc-1234567890ab";
    const ROLE: &str = "arn:aws:iam::123456789012:role/hybrid-node";

    fn flags() -> Flags {
        Flags {
            certificate: Some("/etc/pki/node.crt".into()),
            private_key: Some("/etc/pki/node.key".into()),
            intermediates: None,
            trust_anchor_arn: Some(ANCHOR.into()),
            profile_arn: Some(PROFILE.into()),
            role_arn: Some(ROLE.into()),
            session_duration: None,
        }
    }

    #[test]
    fn flags_are_checked_together() {
        assert_eq!(RolesAnywhere::from_flags(&Flags::default()), Ok(None));
        let ra = RolesAnywhere::from_flags(&flags()).unwrap().unwrap();
        assert_eq!(ra.region, "eu-west-1");
        assert_eq!(ra.session_duration, DEFAULT_SESSION);
        let partial = Flags {
            certificate: Some("/x".into()),
            ..Flags::default()
        };
        assert_eq!(
            RolesAnywhere::from_flags(&partial),
            Err("IAM Roles Anywhere needs --roles-anywhere-private-key, --roles-anywhere-trust-anchor-arn, --roles-anywhere-profile-arn, --roles-anywhere-role-arn too".to_owned())
        );
        let mut other_region = flags();
        other_region.profile_arn = Some(PROFILE.replace("eu-west-1", "us-east-1"));
        assert!(
            RolesAnywhere::from_flags(&other_region)
                .unwrap_err()
                .contains("different regions")
        );
        for bad in [
            "arn:aws:iam::123456789012:role/x",
            "arn:aws:rolesanywhere:eu-west-1:1234:trust-anchor/x",
            "trust-anchor/x",
        ] {
            let mut f = flags();
            f.trust_anchor_arn = Some(bad.into());
            assert!(
                RolesAnywhere::from_flags(&f)
                    .unwrap_err()
                    .contains("--roles-anywhere-trust-anchor-arn"),
                "{bad}"
            );
        }
        let mut f = flags();
        f.role_arn = Some("arn:aws:iam::123456789012:user/x".into());
        assert!(
            RolesAnywhere::from_flags(&f)
                .unwrap_err()
                .contains("not an IAM role ARN")
        );
    }

    #[test]
    fn session_durations_are_seconds_or_go_durations_within_bounds() {
        for (text, secs) in [
            ("3600", 3600),
            ("900", 900),
            ("43200", 43200),
            ("1h", 3600),
            ("15m", 900),
            ("12h", 43200),
            ("1h30m", 5400),
        ] {
            assert_eq!(
                session_duration(text, "d"),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        for bad in [
            "899", "43201", "13h", "10m", "0", "-1", "1.5s", "abc", "1h0.5s",
        ] {
            assert!(session_duration(bad, "d").is_err(), "{bad}");
        }
    }
}
