//! Who issues the tokens the cache stores, and the longest life a real token of theirs has: the
//! one bound that every entry written, read or copied from the fleet's Secret is held to, and
//! that caps every answer's `cacheDuration` (`crate::runner`).
//!
//! A token that claims more than its issuer ever grants is broken or forged (an `exp` of
//! 9999-12-31, a Secret edited by hand): believed, it would stay in the kubelet's memory until the
//! kubelet restarts. With the bound, the worst such an entry can do is last as long as a real one.

use std::time::Duration;

/// The registries' token services whose tokens the cache keeps. The name is the first part of
/// every cache key (`provider=<name>;…`), so a stored entry says whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// Amazon ECR's `GetAuthorizationToken` (private and Public): 12 hours.
    Ecr,
    /// Azure Container Registry's refresh tokens from `/oauth2/exchange`: 3 hours.
    Acr,
    /// Google access tokens (metadata server, key file, workload identity federation): at most
    /// 12 hours (`generateAccessToken`'s longest `lifetime`).
    Gcr,
    /// Tokens a registry issues for a service-account token (`oidc-credential-provider`): we
    /// believe at most 12 hours, whatever the registry says.
    Oidc,
    /// Alibaba Cloud Container Registry's temporary passwords (`GetAuthorizationToken`, Enterprise
    /// and Personal Edition): they live as long as the STS credentials that asked for them, and
    /// STS grants at most 12 hours.
    Alibaba,
}

impl Issuer {
    /// Every issuer.
    pub const ALL: [Issuer; 5] = [
        Issuer::Ecr,
        Issuer::Acr,
        Issuer::Gcr,
        Issuer::Oidc,
        Issuer::Alibaba,
    ];

    /// The name in cache keys and the providers' metrics label.
    pub const fn name(self) -> &'static str {
        match self {
            Issuer::Ecr => "ecr",
            Issuer::Acr => "acr",
            Issuer::Gcr => "gcr",
            Issuer::Oidc => "oidc",
            Issuer::Alibaba => "alibaba",
        }
    }

    /// The longest life a real token of this issuer has, from the moment it is received.
    pub const fn longest_life(self) -> Duration {
        match self {
            Issuer::Acr => Duration::from_secs(3 * 3600),
            Issuer::Ecr | Issuer::Gcr | Issuer::Oidc | Issuer::Alibaba => {
                Duration::from_secs(12 * 3600)
            }
        }
    }

    /// The issuer named `name`.
    pub fn named(name: &str) -> Option<Issuer> {
        Issuer::ALL.into_iter().find(|i| i.name() == name)
    }

    /// The issuer a key's canonical text (`provider=<name>;…`) names.
    pub(super) fn of_key(canonical: &str) -> Option<Issuer> {
        let first = canonical.split(';').next()?;
        Issuer::named(first.strip_prefix("provider=")?)
    }

    /// Why an entry of this issuer that claims `life` seconds (`expiresAt − fetchedAt`) is not
    /// believed, if it is not.
    pub(super) fn refuse_life(self, life: i64) -> Result<(), String> {
        let longest = self.longest_life().as_secs();
        if u64::try_from(life).is_ok_and(|life| life <= longest) {
            return Ok(());
        }
        Err(format!(
            "it claims a longer life than the {}h an {} token lives",
            longest / 3600,
            self.name().to_uppercase()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_issuer_is_found_by_its_key_and_bounded() {
        for issuer in Issuer::ALL {
            let key = format!("provider={};region=x;identity=sha256:00", issuer.name());
            assert_eq!(Issuer::of_key(&key), Some(issuer));
            let longest = i64::try_from(issuer.longest_life().as_secs()).unwrap();
            assert_eq!(issuer.refuse_life(longest), Ok(()));
            assert_eq!(issuer.refuse_life(0), Ok(()));
            assert!(issuer.refuse_life(longest + 1).is_err());
        }
        assert_eq!(
            Issuer::Ecr.refuse_life(i64::MAX).unwrap_err(),
            "it claims a longer life than the 12h an ECR token lives"
        );
        assert_eq!(
            Issuer::Acr.refuse_life(3 * 3600 + 1).unwrap_err(),
            "it claims a longer life than the 3h an ACR token lives"
        );
        for key in [
            "provider=quay;x",
            "region=x;provider=ecr",
            "",
            "provider=ecr2",
        ] {
            assert_eq!(Issuer::of_key(key), None, "{key}");
        }
    }
}
